# qwen35.cmake — Qwen3.5/3.8 (GGUF arch qwen35): the CPU model core, its tool and its tests.
# Included at the end of extensions/qwen/extension.cmake. Paths are the extension's.
#
# Each target is created only when extensions/qwen/extension.json declares it
# (the SDK refuses undeclared targets); until then configure says which
# entries are missing and builds nothing of this part.

set(qwen35_core_sources
    src/qwen35/hparams.c
    src/qwen35/weights.c
    src/qwen35/conv.c
    src/qwen35/delta_rule.c
    src/qwen35/attention.c
    src/qwen35/state.c
    src/qwen35/forward.c
    src/qwen35/verify.c
)
# The qwen35-cpu provider on the core; its text side (tokenizer, chat) and
# model base are qwen_cpu's.
set(qwen35_provider_sources
    src/qwen35/provider.c
    src/qwen35/session.c
    src/qwen35/mtp_history.c
    src/qwen35/speculative.c
)

set(qwen35_missing "")
foreach(qwen35_target qwen_qwen35_cpu qwen_qwen35_random_model qwen_qwen35_math_tests qwen_qwen35_model_tests
                      qwen_qwen35_provider_tests qwen_qwen35_speculative_tests)
    if(NOT GUFO_EXT_TARGET_${qwen35_target}_EXTENSION STREQUAL "qwen")
        list(APPEND qwen35_missing ${qwen35_target})
    endif()
endforeach()

if(qwen35_missing)
    string(REPLACE ";" ", " qwen35_missing "${qwen35_missing}")
    message(STATUS "qwen: the qwen35 part is not built: extension.json does not declare ${qwen35_missing} "
                   "(qwen_qwen35_cpu: library; qwen_qwen35_random_model: executable; qwen_qwen35_*_tests: test, requires testing)")
else()
    gufo_extension_library(qwen_qwen35_cpu SOURCES ${qwen35_core_sources} ${qwen35_provider_sources}
        LINK qwen_cpu Threads::Threads m)
    gufo_extension_executable(qwen_qwen35_random_model SOURCES tools/qwen35_random_model.c LINK m)

    set(qwen35_models "${GUFO_EXTENSION_BINARY_DIR}/qwen35")
    # The conformance kit's artifact for qwen35-cpu (extension.json "conformance",
    # generated): the tiny random model with its 320-token vocabulary and the Qwen3.5
    # chat template, written as soon as the tool is linked.
    add_custom_command(TARGET qwen_qwen35_random_model POST_BUILD
        COMMAND ${CMAKE_COMMAND} -E make_directory "${qwen35_models}"
        COMMAND qwen_qwen35_random_model --type f32 --out "${qwen35_models}/conformance-f32.gguf"
        BYPRODUCTS "${qwen35_models}/conformance-f32.gguf"
        COMMENT "Writing qwen35/conformance-f32.gguf for the conformance kit"
        VERBATIM)
    # The pieces against double-precision references and against each other:
    # chunked == recurrent delta rule, conv state continuation, gated attention.
    gufo_extension_test(qwen_qwen35_math_tests SOURCES tests/qwen35/test_math.c LINK qwen_qwen35_cpu m)
    # The whole tiny model from qwen_qwen35_random_model's files (F32, BF16, Q8_0):
    # inventory errors, prefill == decode, snapshot/restore, MTP, and the references in
    # tests/golden/qwen35 (tools/qwen35/make_golden.py).
    gufo_extension_test(qwen_qwen35_model_tests SOURCES tests/qwen35/test_model.c LINK qwen_qwen35_cpu cjson m
        ARGS "$<TARGET_FILE:qwen_qwen35_random_model>" "${qwen35_models}"
             "${GUFO_EXTENSION_DIR}/../../tests/golden/qwen35")
    # The qwen35-cpu provider end to end on the random model with its vocabulary: loaded
    # through the probe like `gufo prompt`, greedy output == the core's own decode loop,
    # batched == solo, a two-turn conversation the way the host's caches run it,
    # truncate/snapshot limits; the Qwen3.5 pre-tokenizer regex and chat template.
    gufo_extension_test(qwen_qwen35_provider_tests SOURCES tests/qwen35/test_provider.c LINK qwen_qwen35_cpu qwen_cpu m
        ARGS "$<TARGET_FILE:qwen_qwen35_random_model>" "${qwen35_models}")
    # make_golden.py's GGUF -> transformers mapping, offline (no torch): names, shapes and
    # the converter's transforms round-tripping the tiny file's values.
    # MTP speculation (speculative.c): greedy draft + verify == plain decoding over prompts and
    # draft lengths, the accept path with accepted drafts, a file without MTP refusing "mtp".
    gufo_extension_test(qwen_qwen35_speculative_tests SOURCES tests/qwen35/test_speculative.c LINK qwen_qwen35_cpu qwen_cpu m
        ARGS "$<TARGET_FILE:qwen_qwen35_random_model>" "${qwen35_models}")
    # The same end to end: `gufo prompt --speculative mtp` prints the text `gufo prompt` prints.
    # The gufo target is defined after the extensions, hence the generator expression; without it, skip (77).
    add_test(NAME qwen.qwen35_prompt_speculative_mtp
             COMMAND sh "${GUFO_EXTENSION_DIR}/tests/qwen35/prompt_speculative.sh"
                     "$<$<TARGET_EXISTS:gufo>:$<TARGET_FILE:gufo>>"
                     "$<TARGET_FILE:qwen_qwen35_random_model>" "${qwen35_models}")
    set_tests_properties(qwen.qwen35_prompt_speculative_mtp PROPERTIES LABELS "extension;extension:qwen"
                         SKIP_RETURN_CODE 77)
    # Issue 14, the core's conversation cache on a model that cannot rewind: greedy chats over HTTP
    # (next turn, branch, regenerate, multi-turn, raw completion) against `gufo serve` with the cache
    # and with --cache-sessions 0 give the same answers; the cached one reuses prompt tokens from
    # checkpoints. Without the gufo target, skip (77).
    add_test(NAME qwen.qwen35_serve_cache
             COMMAND "${GUFO_PYTHON}" "${GUFO_EXTENSION_DIR}/tests/qwen35/serve_cache.py"
                     "$<$<TARGET_EXISTS:gufo>:$<TARGET_FILE:gufo>>"
                     "$<TARGET_FILE:qwen_qwen35_random_model>" "${qwen35_models}")
    set_tests_properties(qwen.qwen35_serve_cache PROPERTIES LABELS "extension;extension:qwen"
                         SKIP_RETURN_CODE 77 TIMEOUT 120)
    add_test(NAME qwen.qwen35_make_golden_selftest
             COMMAND sh -c "mkdir -p '${qwen35_models}' && '$<TARGET_FILE:qwen_qwen35_random_model>' --type bf16 --out '${qwen35_models}/selftest-bf16.gguf' && '${GUFO_PYTHON}' '${GUFO_EXTENSION_DIR}/../../tools/qwen35/make_golden.py' --selftest '${qwen35_models}/selftest-bf16.gguf'")
    set_tests_properties(qwen.qwen35_make_golden_selftest PROPERTIES LABELS "extension;extension:qwen")
endif()
