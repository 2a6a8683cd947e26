# extension.cmake — build logic of the langid extension.
#
# Gufo includes this file with GUFO_EXTENSION_NAME, GUFO_EXTENSION_DIR and
# GUFO_EXTENSION_BINARY_DIR set; every target below is declared in
# extension.json's "targets".

# The shared backbone: featurizer, file format and probe rules, loader, and
# the extension entry that publishes the shared state to both providers.
gufo_extension_library(langid_backbone
    SOURCES src/langid_features.c src/langid_backbone.c src/langid_extension.c
    LINK m)

# The training tool, and the model it writes at build time: `cmake --build`
# leaves ${GUFO_EXTENSION_BINARY_DIR}/langid.gguf ready to use. Edit the
# sentences under data/ and rebuild to retrain.
gufo_extension_executable(langid_train
    SOURCES src/langid_train.c
    LINK langid_backbone m)

# The model is made right after the tool is linked (POST_BUILD), and the data
# files are link dependencies of the tool, so editing a sentence relinks it
# and retrains; BYPRODUCTS makes a deleted model come back on the next build.
# (A custom command with its own custom target would be the usual way, but the
# SDK accepts only the targets extension.json declares, and its target kinds
# are library, executable and test.)
set(langid_data_dir "${GUFO_EXTENSION_DIR}/data")
file(GLOB langid_data CONFIGURE_DEPENDS "${langid_data_dir}/labels.txt" "${langid_data_dir}/train/*.txt"
     "${langid_data_dir}/test/*.txt")
set(langid_model "${GUFO_EXTENSION_BINARY_DIR}/langid.gguf")
if(TARGET langid_train)
    set_property(TARGET langid_train APPEND PROPERTY LINK_DEPENDS ${langid_data})
    add_custom_command(TARGET langid_train POST_BUILD
        COMMAND langid_train --data "${langid_data_dir}" --out "${langid_model}" --quiet
        BYPRODUCTS "${langid_model}"
        COMMENT "Training the langid classifier on examples/langid/data"
        VERBATIM)
endif()

# One provider per capability, each in its own library, both on the backbone.
gufo_extension_library(langid_embed
    SOURCES src/langid_embed.c
    LINK langid_backbone m)
gufo_extension_library(langid_decide
    SOURCES src/langid_decide.c
    LINK langid_backbone m)

# Tests: `ctest -L extension:langid --output-on-failure`. The held-out
# accuracy line is printed with -V.
gufo_extension_test(langid_tests
    SOURCES tests/test_langid.c tests/langid_test_support.c
    LINK langid_embed langid_decide langid_backbone m
    ARGS "${langid_model}" "${langid_data_dir}" "${GUFO_EXTENSION_BINARY_DIR}")

# Same data, same bytes: retrain twice and compare with the built model.
if(TARGET langid_tests)
    add_test(NAME langid.deterministic
             COMMAND "${CMAKE_COMMAND}" "-DTOOL=$<TARGET_FILE:langid_train>" "-DDATA=${langid_data_dir}"
                     "-DMODEL=${langid_model}" "-DSCRATCH=${GUFO_EXTENSION_BINARY_DIR}"
                     -P "${GUFO_EXTENSION_DIR}/tests/check_deterministic.cmake")
    set_tests_properties(langid.deterministic PROPERTIES LABELS "extension;extension:langid")
endif()
