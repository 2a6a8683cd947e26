# conformance.cmake — the conformance kit's sources, for GufoExt.cmake, which
# builds the driver gufo_conformance against the generated registry in a Gufo
# tree and in an extension's standalone build against an installed SDK.
set(GUFO_CONFORMANCE_SOURCES
    main.c
    harness.c
    report_write.c
    artifact_edit.c
    text_harness.c
    decisions_harness.c
    suite_configuration.c
    suite_tokenizer.c
    suite_numerics.c
    suite_isolation.c
    suite_streaming.c
    suite_cache.c
    suite_memory.c
    suite_bad_artifacts.c
)
list(TRANSFORM GUFO_CONFORMANCE_SOURCES PREPEND "${CMAKE_CURRENT_LIST_DIR}/")
