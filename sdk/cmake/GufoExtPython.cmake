# GufoExtPython.cmake: finds the Python interpreter the SDK tool runs with.
#
# Sets the cache variable GUFO_PYTHON to an interpreter that can import
# jsonschema with JSON Schema draft 2020-12 support (jsonschema >= 4).
#
# Why not find_package(Python3): it takes the first python3 on PATH, which is
# often a pyenv or virtualenv interpreter without jsonschema, while Debian's
# python3-jsonschema lives under /usr/bin/python3. So /usr/bin/python3 is tried
# first, then what PATH offers; the one that works is cached and not probed
# again. Set -DGUFO_PYTHON=... to choose one yourself.
include_guard(GLOBAL)

set(GUFO_PYTHON "" CACHE FILEPATH "Python 3 interpreter with the jsonschema module, used by the extension SDK")

if(NOT GUFO_PYTHON OR NOT GUFO_PYTHON STREQUAL GUFO_PYTHON_VERIFIED)
    if(GUFO_PYTHON)
        set(_gufo_candidates "${GUFO_PYTHON}")
    else()
        find_program(_gufo_path_python3 NAMES python3 NO_CACHE)
        set(_gufo_candidates /usr/bin/python3 /usr/local/bin/python3 ${_gufo_path_python3})
        list(REMOVE_DUPLICATES _gufo_candidates)
    endif()
    set(_gufo_tried "")
    set(_gufo_found "")
    foreach(_gufo_candidate IN LISTS _gufo_candidates)
        if(NOT EXISTS "${_gufo_candidate}")
            continue()
        endif()
        list(APPEND _gufo_tried "${_gufo_candidate}")
        execute_process(
            COMMAND "${_gufo_candidate}" -c
                    "import sys, jsonschema; sys.exit(0 if hasattr(jsonschema, 'Draft202012Validator') else 1)"
            RESULT_VARIABLE _gufo_result OUTPUT_QUIET ERROR_QUIET)
        if(_gufo_result EQUAL 0)
            set(_gufo_found "${_gufo_candidate}")
            break()
        endif()
    endforeach()
    if(NOT _gufo_found)
        list(JOIN _gufo_tried ", " _gufo_tried)
        if(NOT _gufo_tried)
            set(_gufo_tried "no python3 found")
        endif()
        # Indented lines: CMake prints them as they are instead of re-wrapping.
        message(FATAL_ERROR
            "gufo: no Python 3 interpreter with the jsonschema module was found.\n"
            "  tried: ${_gufo_tried}\n"
            "  The extension SDK validates every manifest with jsonschema (draft 2020-12, jsonschema >= 4).\n"
            "  On Debian or Ubuntu install the package python3-jsonschema (apt-get install python3-jsonschema),\n"
            "  or point -DGUFO_PYTHON=... at an interpreter that has jsonschema.\n")
    endif()
    set(GUFO_PYTHON "${_gufo_found}" CACHE FILEPATH
        "Python 3 interpreter with the jsonschema module, used by the extension SDK" FORCE)
    set(GUFO_PYTHON_VERIFIED "${_gufo_found}" CACHE INTERNAL "GUFO_PYTHON checked to import jsonschema")
endif()
