# GufoExtVersion.cmake: the extension API version, derived from changes/.
#
# Included once by the top-level CMakeLists.txt (in the source tree only; an
# installed SDK carries the version it was built with). Sets, in the caller's
# scope:
#   GUFO_EXT_API_MINOR, GUFO_EXT_API_REVISION   numbers
#   GUFO_EXT_API_VERSION                        "0.MINOR.REVISION"
#   GUFO_GENERATED_INCLUDE_DIR                  ${CMAKE_BINARY_DIR}/gufo_generated/include
# and writes ${GUFO_GENERATED_INCLUDE_DIR}/gufo/ext/version.h from
# include/gufo/ext/version.h.in.
#
# MINOR is the newest changes/0.MINOR directory and REVISION the number of
# records in it (gufo_sdk.py api-version); nobody edits the number by hand.
# Adding a record re-runs the configure, so version.h follows at the next build.
include_guard(GLOBAL)
include(${CMAKE_CURRENT_LIST_DIR}/GufoExtPython.cmake)

set(GUFO_GENERATED_INCLUDE_DIR ${CMAKE_BINARY_DIR}/gufo_generated/include)

execute_process(
    COMMAND ${GUFO_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/../tools/gufo_sdk.py api-version
            --changes ${PROJECT_SOURCE_DIR}/changes
    OUTPUT_VARIABLE GUFO_EXT_API_VERSION OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_VARIABLE _gufo_version_error
    RESULT_VARIABLE _gufo_version_result)
if(NOT _gufo_version_result EQUAL 0)
    message(FATAL_ERROR "gufo: cannot derive the extension API version from changes/:\n${_gufo_version_error}")
endif()
string(REPLACE "." ";" _gufo_version_parts "${GUFO_EXT_API_VERSION}")
list(GET _gufo_version_parts 1 GUFO_EXT_API_MINOR)
list(GET _gufo_version_parts 2 GUFO_EXT_API_REVISION)

# A new record (or minor directory) must change the version without anyone
# remembering to re-run cmake: the globs are re-checked at every build.
file(GLOB _gufo_change_records CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/changes/*/*)
file(GLOB _gufo_change_minors LIST_DIRECTORIES true CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/changes/*)

configure_file(${PROJECT_SOURCE_DIR}/include/gufo/ext/version.h.in
               ${GUFO_GENERATED_INCLUDE_DIR}/gufo/ext/version.h @ONLY)
message(STATUS "gufo: extension API ${GUFO_EXT_API_VERSION} (from changes/)")
