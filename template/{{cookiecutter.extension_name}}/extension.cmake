# extension.cmake — build logic of the {{ cookiecutter.extension_name }} extension.
#
# Gufo includes this file with GUFO_EXTENSION_NAME, GUFO_EXTENSION_DIR and
# GUFO_EXTENSION_BINARY_DIR set. Every target declared in extension.json's
# "targets" is created here with the SDK helpers, which add the warnings,
# sanitizer flags, include paths (public API, generated headers, this
# directory) and the link to gufo_ext_runtime, and skip a target whose
# "requires" are not met.

# The model, tokenizer and chat format, plus the extension entry.
gufo_extension_library({{ cookiecutter.extension_name }}_model
    SOURCES entry.c model.c tokenizer.c chat.c tool_parser.c
    LINK cjson m)

# The text-generation provider: its entry, probe, factory and step functions.
gufo_extension_library({{ cookiecutter.extension_name }}_text
    SOURCES provider.c session.c
    LINK {{ cookiecutter.extension_name }}_model)

# The training tool, and the model it writes at build time: `cmake --build`
# leaves ${GUFO_EXTENSION_BINARY_DIR}/{{ cookiecutter.extension_name }}.gguf ready to use. Edit
# data/corpus.txt and rebuild to retrain on your own text.
gufo_extension_executable({{ cookiecutter.extension_name }}_train
    SOURCES train.c
    LINK m)

# Training runs right after the tool is linked (POST_BUILD), and the corpus
# is a link dependency of the tool, so editing it relinks and retrains;
# BYPRODUCTS brings a deleted model back on the next build. (The SDK accepts
# only the targets extension.json declares, whose kinds are library,
# executable and test, so there is no separate custom target for the file.)
set(corpus "${GUFO_EXTENSION_DIR}/data/corpus.txt")
set(model_file "${GUFO_EXTENSION_BINARY_DIR}/{{ cookiecutter.extension_name }}.gguf")
if(TARGET {{ cookiecutter.extension_name }}_train)
    set_property(TARGET {{ cookiecutter.extension_name }}_train APPEND PROPERTY LINK_DEPENDS "${corpus}")
    add_custom_command(TARGET {{ cookiecutter.extension_name }}_train POST_BUILD
        COMMAND {{ cookiecutter.extension_name }}_train "${corpus}" "${model_file}"
        BYPRODUCTS "${model_file}"
        COMMENT "Training {{ cookiecutter.extension_name }} on data/corpus.txt"
        VERBATIM)
endif()

# Unit tests: `ctest -L extension:{{ cookiecutter.extension_name }}`.
gufo_extension_test({{ cookiecutter.extension_name }}_tests
    SOURCES tests/test_{{ cookiecutter.extension_name }}.c
    LINK {{ cookiecutter.extension_name }}_text {{ cookiecutter.extension_name }}_model m
    ARGS "${corpus}" "${model_file}" "${GUFO_EXTENSION_BINARY_DIR}")
