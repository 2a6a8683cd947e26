# GufoExt.cmake: build settings and the helpers extension.cmake files use.
#
# The same file serves the Gufo source tree and an installed SDK
# (find_package(GufoExt)), so an extension builds the same way in both.
#
# The includer sets, before calling any function here:
#   GUFO_EXT_API_VERSION         "0.MINOR.REVISION" (GufoExtVersion.cmake or the package config)
#   GUFO_PUBLIC_INCLUDE_DIR      the directory holding gufo/ext/*.h
#   GUFO_GENERATED_INCLUDE_DIR   ${CMAKE_BINARY_DIR}/gufo_generated/include
#   GUFO_RUNTIME_TARGET          gufo_ext_runtime (in the tree) or GufoExt::runtime (installed)
#
# Project-wide:
#   gufo_apply_project_warnings(<target>)
#   gufo_apply_project_sanitizers()            once, in the top directory, before any target
#   gufo_enable_gpu_languages()                once, in the top directory (a macro: enable_language()
#                                              must run at directory scope)
#   gufo_extensions_process([SEARCH_DIRS <dir>...] [LOCK <file>])
#   gufo_add_registry(<executable>)            after gufo_extensions_process()
# gufo_extensions_process() also builds the conformance driver and registers the
# conformance tests (GUFO_CONFORMANCE, default ON; see docs/conformance.md).
#
# In extension.cmake (included by gufo_extensions_process()):
#   gufo_extension_library(<target> SOURCES <src>... [CUDA_SOURCES <src>...] [LINK <item>...])
#   gufo_extension_executable(<target> SOURCES <src>... [LINK <item>...])
#   gufo_extension_test(<target> SOURCES <src>... [LINK <item>...] [ARGS <arg>...] [LABELS <label>...])
# with these variables set: GUFO_EXTENSION_NAME, GUFO_EXTENSION_DIR,
# GUFO_EXTENSION_BINARY_DIR, GUFO_EXTENSION_ORIGIN ("official" or "community").
# Relative source paths are taken relative to GUFO_EXTENSION_DIR.
include_guard(GLOBAL)
include(${CMAKE_CURRENT_LIST_DIR}/GufoExtPython.cmake)

cmake_path(ABSOLUTE_PATH CMAKE_CURRENT_LIST_DIR NORMALIZE OUTPUT_VARIABLE _gufo_cmake_dir)
cmake_path(GET _gufo_cmake_dir PARENT_PATH GUFO_SDK_DIR)
cmake_path(GET GUFO_SDK_DIR PARENT_PATH _gufo_sdk_parent)
set(GUFO_SDK_TOOL ${GUFO_SDK_DIR}/tools/gufo_sdk.py)
set(GUFO_SDK_ALLOWLIST ${GUFO_SDK_DIR}/allowlist.json)
set(GUFO_SDK_SCHEMA_DIR ${_gufo_sdk_parent}/schema)
# An installed SDK (share/gufo-ext) also carries the release lock and the
# official extensions' manifests (GufoExtInstall.cmake), so that an extension
# built against it is checked against them as in Gufo's tree.
set(GUFO_SDK_RELEASE_LOCK ${_gufo_sdk_parent}/extensions.lock)
set(GUFO_SDK_OFFICIAL_DIR ${_gufo_sdk_parent}/official)
if(NOT DEFINED GUFO_RUNTIME_TARGET)
    set(GUFO_RUNTIME_TARGET gufo_ext_runtime)
endif()

# ---- Build settings (cache variables) ---------------------------------------
if(DEFINED ENV{CI})
    set(_gufo_werror_default ON)
else()
    set(_gufo_werror_default OFF)
endif()
option(GUFO_WERROR "Treat compiler warnings as errors (default ON when the CI environment variable is set)"
       ${_gufo_werror_default})
set(GUFO_SANITIZE "" CACHE STRING "Sanitizers for every C target, comma separated, e.g. address,undefined")
option(GUFO_FUZZ "Build the libFuzzer targets (clang): adds -fsanitize=fuzzer-no-link,address,undefined everywhere"
       OFF)
option(GUFO_CONFORMANCE "Build the conformance driver gufo_conformance and, with BUILD_TESTING, register the \
conformance tests of every extension (ctest -L conformance)" ON)
option(GUFO_RELEASE "Build only the official extensions named in extensions.lock (and what they depend on)" OFF)
set(GUFO_EXTENSIONS "" CACHE STRING
    "Build only these extensions (and what they depend on); ';' separated. Empty: all")
set(GUFO_EXTENSION_DIRS "" CACHE STRING
    "Extra extension directories, or directories of them, ';' or ':' separated (also read from the environment)")
set(GUFO_ENABLE_CUDA AUTO CACHE STRING "Build CUDA targets: AUTO (when a CUDA compiler is found), ON or OFF")
set_property(CACHE GUFO_ENABLE_CUDA PROPERTY STRINGS AUTO ON OFF)
set(GUFO_CUDA_ARCHITECTURES 90 CACHE STRING "CUDA architectures of GPU targets (90 = H200)")
set(GUFO_ENABLE_HIP AUTO CACHE STRING "Build HIP targets: AUTO (when a HIP compiler is found), ON or OFF")
set_property(CACHE GUFO_ENABLE_HIP PROPERTY STRINGS AUTO ON OFF)
set(GUFO_HIP_ARCHITECTURES "gfx1030;gfx906;gfx90a" CACHE STRING "AMD GPU architectures of HIP targets")

# ---- Reporting ----------------------------------------------------------------

# Appends one problem, the arguments concatenated, to the list `var`.
macro(_gufo_problem var)
    string(CONCAT _gufo_problem_text ${ARGN})
    list(APPEND ${var} "${_gufo_problem_text}")
endmacro()

# Stops the configure with `headline` and the details (the remaining
# arguments, concatenated), one problem per line. The details are indented:
# CMake re-wraps unindented error text, which would split the file names and
# messages users search for.
function(_gufo_fail headline)
    string(CONCAT details ${ARGN})
    string(STRIP "${details}" details)
    string(REPLACE "\n" "\n  " details "${details}")
    message(FATAL_ERROR "${headline}\n  ${details}\n")
endfunction()

# ---- Project-wide compiler settings -----------------------------------------

# Every C target of the project gets the same warnings and language level, so
# an extension compiles the same in-tree, out of tree and in CI.
function(gufo_apply_project_warnings target)
    if(CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
        set(warnings -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Werror=implicit-function-declaration)
        target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:C>:${warnings}>")
        if(GUFO_WERROR)
            target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:C>:-Werror>")
        endif()
    endif()
    set_target_properties(${target} PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
endfunction()

# GUFO_SANITIZE (and GUFO_FUZZ) for every C target created after the call in
# this directory and below: directory-level options, so no target can miss them.
function(gufo_apply_project_sanitizers)
    string(REPLACE "," ";" sanitizers "${GUFO_SANITIZE}")
    if(GUFO_FUZZ)
        list(APPEND sanitizers address undefined)
        add_compile_options("$<$<COMPILE_LANGUAGE:C>:-fsanitize=fuzzer-no-link>")
    endif()
    list(REMOVE_DUPLICATES sanitizers)
    list(REMOVE_ITEM sanitizers "")
    if(NOT sanitizers)
        return()
    endif()
    list(JOIN sanitizers "," joined)
    set(flags -fsanitize=${joined} -fno-omit-frame-pointer -fno-sanitize-recover=all)
    add_compile_options("$<$<COMPILE_LANGUAGE:C>:${flags}>")
    add_link_options(-fsanitize=${joined})
    message(STATUS "gufo: sanitizers ${joined}")
endfunction()

# Enables CUDA and HIP per GUFO_ENABLE_CUDA / GUFO_ENABLE_HIP and sets
# GUFO_HAVE_CUDA / GUFO_HAVE_HIP. A macro because enable_language() must be
# called at directory scope, in the directory above every target using it.
macro(gufo_enable_gpu_languages)
    include(CheckLanguage)
    foreach(_gufo_language CUDA HIP)
        set(GUFO_HAVE_${_gufo_language} OFF)
        if(GUFO_ENABLE_${_gufo_language} STREQUAL "AUTO")
            check_language(${_gufo_language})
            set(_gufo_wanted "${CMAKE_${_gufo_language}_COMPILER}")
        else()
            set(_gufo_wanted ${GUFO_ENABLE_${_gufo_language}})
        endif()
        if(_gufo_wanted)
            if(NOT DEFINED CMAKE_${_gufo_language}_ARCHITECTURES)
                set(CMAKE_${_gufo_language}_ARCHITECTURES ${GUFO_${_gufo_language}_ARCHITECTURES})
            endif()
            enable_language(${_gufo_language})
            set(GUFO_HAVE_${_gufo_language} ON)
            message(STATUS "gufo: ${_gufo_language} enabled (${CMAKE_${_gufo_language}_COMPILER}, "
                           "architectures ${CMAKE_${_gufo_language}_ARCHITECTURES})")
        endif()
    endforeach()
    if(GUFO_HAVE_CUDA)
        find_package(CUDAToolkit REQUIRED)  # CUDA::cudart and the library directory the audit reads
    endif()
endmacro()

# ---- Helpers for extension.cmake --------------------------------------------

function(gufo_extension_library target)
    _gufo_extension_target(library ${target} ${ARGN})
endfunction()

function(gufo_extension_executable target)
    _gufo_extension_target(executable ${target} ${ARGN})
endfunction()

function(gufo_extension_test target)
    _gufo_extension_target(test ${target} ${ARGN})
endfunction()

function(_gufo_extension_target kind target)
    if(NOT DEFINED GUFO_EXTENSION_NAME)
        _gufo_fail("gufo: misplaced call:" "gufo_extension_${kind}(${target}) must be called from an "
                   "extension.cmake, which gufo_extensions_process() includes")
    endif()
    set(where "extension '${GUFO_EXTENSION_NAME}' (${GUFO_EXT_${GUFO_EXTENSION_NAME}_SHOWN_CMAKE})")
    set(multi SOURCES LINK)
    if(kind STREQUAL "library")
        list(APPEND multi CUDA_SOURCES)
    elseif(kind STREQUAL "test")
        list(APPEND multi ARGS LABELS)
    endif()
    cmake_parse_arguments(PARSE_ARGV 2 ARG "" "" "${multi}")
    if(ARG_UNPARSED_ARGUMENTS)
        _gufo_fail("gufo: extension build file error:"
                   "${where}: gufo_extension_${kind}(${target}) got unexpected arguments "
                   "'${ARG_UNPARSED_ARGUMENTS}' (it takes: ${multi})")
    endif()
    if(NOT GUFO_EXT_TARGET_${target}_EXTENSION STREQUAL GUFO_EXTENSION_NAME)
        _gufo_fail("gufo: extension build file error:"
                   "${where}: target '${target}' is not declared in the \"targets\" of "
                   "${GUFO_EXT_${GUFO_EXTENSION_NAME}_SHOWN_DIR}/extension.json")
    endif()
    set(declared_kind ${GUFO_EXT_TARGET_${target}_KIND})
    if(NOT declared_kind STREQUAL kind)
        _gufo_fail("gufo: extension build file error:"
                   "${where}: target '${target}' is declared with kind '${declared_kind}', so create it "
                   "with gufo_extension_${declared_kind}(), not gufo_extension_${kind}()")
    endif()
    if(NOT ARG_SOURCES AND NOT ARG_CUDA_SOURCES)
        _gufo_fail("gufo: extension build file error:" "${where}: gufo_extension_${kind}(${target}) needs SOURCES")
    endif()
    # Skipped targets first: a GPU target has no GPU language when no GPU
    # compiler was found, which is exactly when it is not built.
    if(NOT GUFO_EXT_TARGET_${target}_AVAILABLE)
        message(STATUS "gufo: ${target} not built: ${GUFO_EXT_TARGET_${target}_REASON}")
        return()
    endif()
    set(language ${GUFO_EXT_TARGET_${target}_GPU_LANGUAGE})
    if(ARG_CUDA_SOURCES AND NOT language)
        _gufo_fail("gufo: extension build file error:"
                   "${where}: target '${target}' has CUDA_SOURCES, but its entry in extension.json does "
                   "not require gpu, cuda or hip")
    endif()

    # Relative paths are the extension's, not the top directory's (which is
    # where extension.cmake is included).
    set(sources "")
    set(gpu_sources "")
    foreach(list_name sources gpu_sources)
        if(list_name STREQUAL "sources")
            set(given ${ARG_SOURCES})
        else()
            set(given ${ARG_CUDA_SOURCES})
        endif()
        foreach(source IN LISTS given)
            cmake_path(ABSOLUTE_PATH source BASE_DIRECTORY ${GUFO_EXTENSION_DIR} NORMALIZE)
            list(APPEND ${list_name} ${source})
        endforeach()
    endforeach()
    if(kind STREQUAL "library")
        add_library(${target} STATIC ${sources} ${gpu_sources})
        set_target_properties(${target} PROPERTIES ARCHIVE_OUTPUT_DIRECTORY ${GUFO_EXTENSION_BINARY_DIR})
    else()
        add_executable(${target} ${sources})
        set_target_properties(${target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${GUFO_EXTENSION_BINARY_DIR})
    endif()
    if(gpu_sources)
        # One kernel source in the CUDA dialect serves both vendors: nvcc for
        # NVIDIA, hipcc for AMD (through gufo/ext/experimental/gpu.h). A file
        # used by both a CUDA and a HIP target needs a thin .hip wrapper,
        # since a source file has one LANGUAGE per directory.
        set_source_files_properties(${gpu_sources} PROPERTIES LANGUAGE ${language})
        if(language STREQUAL "CUDA")
            # The static CUDA runtime, as gufo_ext_runtime uses: no libcudart.so
            # version requirement. CMake adds it to every executable linking this.
            set_target_properties(${target} PROPERTIES CUDA_ARCHITECTURES "${GUFO_CUDA_ARCHITECTURES}"
                                                       CUDA_SEPARABLE_COMPILATION OFF
                                                       CUDA_RUNTIME_LIBRARY Static)
        else()
            set_target_properties(${target} PROPERTIES HIP_ARCHITECTURES "${GUFO_HIP_ARCHITECTURES}")
        endif()
        set_property(GLOBAL APPEND PROPERTY GUFO_EXTENSION_${GUFO_EXTENSION_NAME}_GPU_LANGUAGES ${language})
    endif()
    # PRIVATE throughout: the extension's own directory must not leak into the
    # include path of whoever links the library (the host, through the registry).
    target_include_directories(${target} PRIVATE ${GUFO_EXTENSION_DIR} ${GUFO_EXTENSION_BINARY_DIR}
                                                 ${GUFO_GENERATED_INCLUDE_DIR})
    target_link_libraries(${target} PRIVATE ${GUFO_RUNTIME_TARGET} ${ARG_LINK})
    gufo_apply_project_warnings(${target})
    # Every translation unit is compiled through gufo_sdk.py check-includes,
    # which then holds each header it actually included (the compiler's
    # dependency file) against the extension's include rules: an absolute or
    # "../../" path reaches past the include directories checked below, and a
    # library may not include the host's side of the API (gufo/host/), which
    # its tests and tools, playing the host, may. A launcher already set
    # (ccache) runs after it.
    foreach(language C CUDA HIP)
        get_target_property(launcher ${target} ${language}_COMPILER_LAUNCHER)
        if(NOT launcher)
            set(launcher "")
        endif()
        set_property(TARGET ${target} PROPERTY ${language}_COMPILER_LAUNCHER
                     ${_GUFO_INCLUDE_CHECK_${GUFO_EXTENSION_NAME}} --target ${target} --target-kind ${kind}
                     -- ${launcher})
    endforeach()
    set_property(TARGET ${target} PROPERTY GUFO_EXTENSION ${GUFO_EXTENSION_NAME})
    set_property(GLOBAL APPEND PROPERTY GUFO_EXTENSION_${GUFO_EXTENSION_NAME}_BUILT ${target})

    if(kind STREQUAL "test")
        add_test(NAME ${GUFO_EXTENSION_NAME}.${target} COMMAND ${target} ${ARG_ARGS}
                 WORKING_DIRECTORY ${GUFO_EXTENSION_BINARY_DIR})
        set(labels extension extension:${GUFO_EXTENSION_NAME} ${ARG_LABELS})
        set_tests_properties(${GUFO_EXTENSION_NAME}.${target} PROPERTIES LABELS "${labels}" SKIP_RETURN_CODE 77)
    endif()
endfunction()

# ---- Discovery, selection and the checks around extension.cmake -------------

# GUFO_EXTENSION_DIRS from the cache, or from the environment when set there
# (`GUFO_EXTENSION_DIRS=../my_model cmake ...`): the environment value is kept
# in the cache, so a re-run of cmake by the build tool still sees it. Relative
# entries are taken from the directory cmake was started in.
function(_gufo_extension_dirs out)
    if(DEFINED ENV{PWD})
        set(base "$ENV{PWD}")
    else()
        set(base "${CMAKE_BINARY_DIR}")
    endif()
    set(value "${GUFO_EXTENSION_DIRS}")
    if(NOT "$ENV{GUFO_EXTENSION_DIRS}" STREQUAL "")
        set(value "$ENV{GUFO_EXTENSION_DIRS}")
    endif()
    if(NOT WIN32)
        string(REPLACE ":" ";" value "${value}")
    endif()
    set(dirs "")
    foreach(dir IN LISTS value)
        if(NOT dir STREQUAL "")
            cmake_path(ABSOLUTE_PATH dir BASE_DIRECTORY "${base}" NORMALIZE)
            string(REGEX REPLACE "(.)/$" "\\1" dir "${dir}")
            list(APPEND dirs "${dir}")
        endif()
    endforeach()
    if(NOT dirs STREQUAL GUFO_EXTENSION_DIRS)
        get_property(help CACHE GUFO_EXTENSION_DIRS PROPERTY HELPSTRING)
        set(GUFO_EXTENSION_DIRS "${dirs}" CACHE STRING "${help}" FORCE)
    endif()
    set(${out} "${dirs}" PARENT_SCOPE)
endfunction()

# Discovers, validates and selects the extensions (gufo_sdk.py configure),
# includes each selected extension's extension.cmake, then checks what those
# files did: declared targets exist, nothing undeclared was created, and every
# extension target includes and links only what the allowlist permits.
#
#   SEARCH_DIRS  directories of extension directories (in the tree: extensions/ and examples/)
#   LOCK         the release lock; extensions named there are official. Without
#                it, an installed SDK uses the lock and official manifests it
#                carries: every extension built is community, and may not claim
#                what an official one owns (nor an official name).
# GUFO_EXTENSION_DIRS adds more. Sets GUFO_SELECTED_EXTENSIONS in the caller.
function(gufo_extensions_process)
    cmake_parse_arguments(PARSE_ARGV 0 ARG "" "LOCK" "SEARCH_DIRS")
    get_property(processed GLOBAL PROPERTY GUFO_EXTENSIONS_PROCESSED)
    if(processed)
        message(FATAL_ERROR "gufo_extensions_process() may run only once per build tree")
    endif()
    _gufo_extension_dirs(extension_dirs)
    string(TOLOWER "${CMAKE_SYSTEM_NAME}" platform)
    set(args --source-dir ${CMAKE_SOURCE_DIR} --binary-dir ${CMAKE_BINARY_DIR}
             --api-version ${GUFO_EXT_API_VERSION} --schema-dir ${GUFO_SDK_SCHEMA_DIR}
             --allowlist ${GUFO_SDK_ALLOWLIST} --platform ${platform})
    foreach(dir IN LISTS ARG_SEARCH_DIRS)
        list(APPEND args --search ${dir})
    endforeach()
    foreach(dir IN LISTS extension_dirs)
        list(APPEND args --extension-dir ${dir})
    endforeach()
    foreach(name IN LISTS GUFO_EXTENSIONS)
        list(APPEND args --extension ${name})
    endforeach()
    if(ARG_LOCK)
        list(APPEND args --lock ${ARG_LOCK})
    elseif(IS_DIRECTORY ${GUFO_SDK_OFFICIAL_DIR} AND EXISTS ${GUFO_SDK_RELEASE_LOCK})
        list(APPEND args --lock ${GUFO_SDK_RELEASE_LOCK} --official-manifests ${GUFO_SDK_OFFICIAL_DIR})
    endif()
    if(GUFO_RELEASE)
        list(APPEND args --release)
    endif()
    if(GUFO_HAVE_CUDA)
        list(APPEND args --have-cuda)
    elseif(NOT GUFO_ENABLE_CUDA STREQUAL "AUTO" AND NOT GUFO_ENABLE_CUDA)
        list(APPEND args --cuda-disabled)
    endif()
    if(GUFO_HAVE_HIP)
        list(APPEND args --have-hip)
    elseif(NOT GUFO_ENABLE_HIP STREQUAL "AUTO" AND NOT GUFO_ENABLE_HIP)
        list(APPEND args --hip-disabled)
    endif()
    if(BUILD_TESTING)
        list(APPEND args --testing)
    endif()
    execute_process(COMMAND ${GUFO_PYTHON} ${GUFO_SDK_TOOL} configure ${args}
                    RESULT_VARIABLE result ERROR_VARIABLE error)
    if(NOT result EQUAL 0)
        _gufo_fail("gufo: the extensions cannot be configured:" "${error}")
    endif()
    include(${CMAKE_BINARY_DIR}/gufo_generated/extensions.cmake)

    # Re-configure when a manifest or the lock changes, or an extension directory appears.
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${GUFO_EXT_CONFIGURE_DEPENDS})
    set(globs "")
    foreach(dir IN LISTS ARG_SEARCH_DIRS extension_dirs)
        list(APPEND globs ${dir}/*/extension.json)
    endforeach()
    foreach(dir IN LISTS extension_dirs)
        list(APPEND globs ${dir}/extension.json)
    endforeach()
    if(globs)
        file(GLOB _ CONFIGURE_DEPENDS ${globs})
    endif()

    foreach(name IN LISTS GUFO_EXT_SELECTED)
        message(STATUS "${GUFO_EXT_${name}_SUMMARY}")
        _gufo_include_extension(${name})
    endforeach()

    set(problems "")
    set(all_libraries "")
    set(registry_libraries "")
    foreach(name IN LISTS GUFO_EXT_SELECTED)
        _gufo_check_extension(${name} problems)
        get_property(built GLOBAL PROPERTY GUFO_EXTENSION_${name}_BUILT)
        foreach(target IN LISTS built)
            if(GUFO_EXT_TARGET_${target}_KIND STREQUAL "library")
                list(APPEND all_libraries ${target})
            endif()
        endforeach()
        foreach(target IN LISTS GUFO_EXT_${name}_REGISTRY_TARGETS)
            if(TARGET ${target})
                list(APPEND registry_libraries ${target})
            endif()
        endforeach()
    endforeach()
    if(problems)
        list(JOIN problems "\n" problems)
        _gufo_fail("gufo: extension build files break the SDK's rules:" "${problems}")
    endif()
    _gufo_add_api_ledger()
    foreach(name IN LISTS GUFO_EXT_SELECTED)
        _gufo_add_symbol_audit(${name})
    endforeach()

    set_property(GLOBAL PROPERTY GUFO_EXTENSION_LIBRARIES ${all_libraries})
    set_property(GLOBAL PROPERTY GUFO_REGISTRY_LIBRARIES ${registry_libraries})
    set_property(GLOBAL PROPERTY GUFO_EXTENSIONS_PROCESSED ON)
    set(GUFO_SELECTED_EXTENSIONS ${GUFO_EXT_SELECTED} PARENT_SCOPE)
    _gufo_add_conformance()
endfunction()

# ---- The conformance kit ------------------------------------------------------

# The kit's sources: conformance/ next to sdk/ in Gufo's tree, and
# share/gufo-ext/conformance/ in an installed SDK (same layout).
set(GUFO_CONFORMANCE_DIR ${_gufo_sdk_parent}/conformance)
if(NOT DEFINED GUFO_VERSION)
    set(GUFO_VERSION "${CMAKE_PROJECT_VERSION}")  # Gufo's own tree; an installed SDK's config sets it
endif()

# Suites per capability (docs/conformance.md). Capabilities whose first
# provider has not landed run the capability-independent suites only.
set(_GUFO_CONFORMANCE_SUITES_text_generation configuration tokenizer numerics isolation streaming cache memory
    bad_artifacts)
set(_GUFO_CONFORMANCE_SUITES_decisions configuration numerics isolation streaming memory bad_artifacts)
set(_GUFO_CONFORMANCE_SUITES_other configuration memory bad_artifacts)

# The driver gufo_conformance, linked against the generated registry (so it
# runs every provider compiled in), and with BUILD_TESTING one CTest test per
# provider and suite, `conformance.<extension>.<provider>.<suite>`, labelled
# `conformance` and `conformance:<extension>`. A provider whose library is
# not built here gets one test that skips with the reason. Each test writes
# its JSON report and summary to ${CMAKE_BINARY_DIR}/conformance/.
function(_gufo_add_conformance)
    if(NOT GUFO_CONFORMANCE OR NOT EXISTS ${GUFO_CONFORMANCE_DIR}/conformance.cmake)
        return()
    endif()
    include(${GUFO_CONFORMANCE_DIR}/conformance.cmake)
    find_package(Threads REQUIRED)
    set(out_dir ${CMAKE_BINARY_DIR}/conformance)
    add_executable(gufo_conformance ${GUFO_CONFORMANCE_SOURCES})
    set_target_properties(gufo_conformance PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
    target_include_directories(gufo_conformance PRIVATE ${GUFO_CONFORMANCE_DIR})
    target_compile_definitions(gufo_conformance PRIVATE
        "GUFO_CONFORMANCE_GUFO_VERSION=\"${GUFO_VERSION}\""
        "GUFO_CONFORMANCE_EXTENSIONS_BUILD_DIR=\"${CMAKE_BINARY_DIR}/gufo_extensions\""
        "GUFO_CONFORMANCE_WORK_DIR=\"${out_dir}/work\"")
    target_link_libraries(gufo_conformance PRIVATE cjson Threads::Threads m)
    gufo_apply_project_warnings(gufo_conformance)
    gufo_add_registry(gufo_conformance)
    if(NOT BUILD_TESTING)
        return()
    endif()
    file(MAKE_DIRECTORY ${out_dir})
    foreach(name IN LISTS GUFO_EXT_SELECTED)
        foreach(id IN LISTS GUFO_EXT_${name}_PROVIDERS)
            set(capability ${GUFO_EXT_PROVIDER_${id}_CAPABILITY})
            set(suites ${_GUFO_CONFORMANCE_SUITES_${capability}})
            if(NOT suites)
                set(suites ${_GUFO_CONFORMANCE_SUITES_other})
            endif()
            set(target ${GUFO_EXT_PROVIDER_${id}_TARGET})
            set(available ON)
            if(NOT GUFO_EXT_TARGET_${target}_AVAILABLE OR NOT GUFO_EXT_TARGET_${GUFO_EXT_${name}_TARGET}_AVAILABLE)
                set(available OFF)
                set(suites configuration)  # one test, which skips with the reason
            endif()
            foreach(suite IN LISTS suites)
                set(test conformance.${name}.${id}.${suite})
                if(NOT available)
                    set(test conformance.${name}.${id})
                endif()
                add_test(NAME ${test}
                         COMMAND gufo_conformance --extension ${name} --provider ${id} --suite ${suite}
                                 --report ${out_dir}/${name}.${id}.${suite}.json
                                 --summary ${out_dir}/${name}.${id}.${suite}.txt
                                 --work-dir ${out_dir}/work/${name}.${suite}
                         WORKING_DIRECTORY ${out_dir})
                set_tests_properties(${test} PROPERTIES LABELS "conformance;conformance:${name}"
                                     SKIP_RETURN_CODE 77 TIMEOUT 600)
            endforeach()
        endforeach()
    endforeach()
endfunction()

# Builds the one extension in the calling directory on its own, against an
# installed SDK: what an extension's own CMakeLists.txt calls after
# find_package(GufoExt). The settings, checks, generated headers and tests are
# those of a Gufo build that has this directory in GUFO_EXTENSION_DIRS (a
# GUFO_EXTENSION_DIRS in the environment still takes precedence). A macro,
# because enabling the GPU languages must happen at directory scope.
macro(gufo_extension_standalone)
    gufo_apply_project_sanitizers()
    gufo_enable_gpu_languages()
    set(GUFO_EXTENSION_DIRS "${CMAKE_CURRENT_SOURCE_DIR}")
    gufo_extensions_process()
endmacro()

# Directory-level settings an extension.cmake could change for everyone after
# it (include_directories(), add_compile_options(), link_libraries(), ...).
set(_GUFO_DIRECTORY_PROPERTIES INCLUDE_DIRECTORIES COMPILE_OPTIONS COMPILE_DEFINITIONS LINK_OPTIONS
    LINK_DIRECTORIES LINK_LIBRARIES BUILDSYSTEM_TARGETS)

# Includes one extension.cmake in its own function scope (its variables do not
# leak into the next one) and rejects changes to directory-level settings.
function(_gufo_include_extension name)
    set(_GUFO_INCLUDE_CHECK_${name} ${GUFO_PYTHON} ${GUFO_SDK_TOOL} check-includes --rules
        ${CMAKE_BINARY_DIR}/gufo_generated/include_rules/${name}.json)
    set(GUFO_EXTENSION_NAME ${name})
    set(GUFO_EXTENSION_DIR ${GUFO_EXT_${name}_DIR})
    set(GUFO_EXTENSION_BINARY_DIR ${CMAKE_BINARY_DIR}/gufo_extensions/${name})
    set(GUFO_EXTENSION_ORIGIN ${GUFO_EXT_${name}_ORIGIN})
    file(MAKE_DIRECTORY ${GUFO_EXTENSION_BINARY_DIR})
    foreach(property IN LISTS _GUFO_DIRECTORY_PROPERTIES)
        get_directory_property(before_${property} ${property})
    endforeach()

    include(${GUFO_EXT_${name}_CMAKE})

    set(where "extension '${name}' (${GUFO_EXT_${name}_SHOWN_CMAKE})")
    get_directory_property(after BUILDSYSTEM_TARGETS)
    if(before_BUILDSYSTEM_TARGETS)
        list(REMOVE_ITEM after ${before_BUILDSYSTEM_TARGETS})
    endif()
    foreach(target IN LISTS after)
        if(NOT GUFO_EXT_TARGET_${target}_EXTENSION STREQUAL name)
            _gufo_fail("gufo: extension build file error:"
                       "${where}: creates target '${target}', which its extension.json does not declare "
                       "in \"targets\"")
        endif()
    endforeach()
    foreach(property IN LISTS _GUFO_DIRECTORY_PROPERTIES)
        if(NOT property STREQUAL "BUILDSYSTEM_TARGETS")
            get_directory_property(after ${property})
            if(NOT "${after}" STREQUAL "${before_${property}}")
                _gufo_fail("gufo: extension build file error:"
                           "${where}: changes the directory property ${property}, which would apply to "
                           "every target after it: use target_* commands on the extension's own targets")
            endif()
        endif()
    endforeach()
endfunction()

# Appends to `problems_var` what is wrong with extension `name`'s targets.
# "Checked, not trusted": the properties are read back after extension.cmake
# ran, so raw target_include_directories()/target_link_libraries() calls are
# caught as well as helper arguments.
function(_gufo_check_extension name problems_var)
    set(problems ${${problems_var}})
    set(where "extension '${name}' (${GUFO_EXT_${name}_SHOWN_CMAKE})")

    set(allowed_targets ${GUFO_EXT_${name}_TARGETS})
    foreach(dep IN LISTS GUFO_EXT_${name}_DEPENDS)
        list(APPEND allowed_targets ${GUFO_EXT_${dep}_TARGETS})
    endforeach()
    set(allowed_links ${GUFO_RUNTIME_TARGET} ${GUFO_EXT_LINK_ALLOWLIST} ${allowed_targets})
    set(allowlist_text ${GUFO_EXT_LINK_ALLOWLIST})
    list(REMOVE_ITEM allowlist_text gufo_ext_runtime GufoExt::runtime)
    list(JOIN allowlist_text ", " allowlist_text)
    set(GUFO_EXTENSION_DIR ${GUFO_EXT_${name}_DIR})
    set(GUFO_EXTENSION_BINARY_DIR ${CMAKE_BINARY_DIR}/gufo_extensions/${name})
    string(CONFIGURE "${GUFO_EXT_INCLUDE_ROOTS_TEMPLATE}" include_roots)
    set(source_roots ${GUFO_EXTENSION_DIR} ${GUFO_EXTENSION_BINARY_DIR})

    set(link_items "")
    foreach(target IN LISTS GUFO_EXT_${name}_TARGETS)
        set(kind ${GUFO_EXT_TARGET_${target}_KIND})
        if(NOT GUFO_EXT_TARGET_${target}_AVAILABLE)
            if(TARGET ${target})
                _gufo_problem(problems "${where}: creates target '${target}', which cannot be built here "
                                       "(${GUFO_EXT_TARGET_${target}_REASON})")
            endif()
            continue()
        endif()
        if(NOT TARGET ${target})
            _gufo_problem(problems "${where}: target '${target}' is declared in extension.json and can be built "
                                   "here, but extension.cmake does not create it (use gufo_extension_${kind}())")
            continue()
        endif()
        get_target_property(owner ${target} GUFO_EXTENSION)
        if(NOT owner STREQUAL name)
            _gufo_problem(problems "${where}: target '${target}' was not created with gufo_extension_${kind}(), "
                                   "which applies the SDK's settings and checks")
            continue()
        endif()
        foreach(language C CUDA HIP)
            get_target_property(launcher ${target} ${language}_COMPILER_LAUNCHER)
            list(FIND launcher check-includes at)
            if(NOT at EQUAL 2)
                _gufo_problem(problems "${where}: target '${target}' replaces its ${language}_COMPILER_LAUNCHER, "
                                       "through which the SDK checks what each file includes (set "
                                       "CMAKE_${language}_COMPILER_LAUNCHER before configuring to add your own)")
            endif()
        endforeach()

        set(include_dirs "")
        foreach(property INCLUDE_DIRECTORIES INTERFACE_INCLUDE_DIRECTORIES INTERFACE_SYSTEM_INCLUDE_DIRECTORIES)
            get_target_property(values ${target} ${property})
            if(values)
                list(APPEND include_dirs ${values})
            endif()
        endforeach()
        foreach(property COMPILE_OPTIONS INTERFACE_COMPILE_OPTIONS)
            get_target_property(values ${target} ${property})
            if(NOT values)
                continue()
            endif()
            foreach(value IN LISTS values)
                if(value MATCHES "^(-I|-isystem|-iquote|-idirafter)(.+)$")
                    list(APPEND include_dirs "${CMAKE_MATCH_2}")
                endif()
            endforeach()
        endforeach()
        # A directory or link item can appear in several properties (a static
        # library's PRIVATE links reappear in INTERFACE_LINK_LIBRARIES as
        # $<LINK_ONLY:...>): each is judged, and refused, once.
        list(REMOVE_DUPLICATES include_dirs)
        foreach(dir IN LISTS include_dirs)
            if(dir MATCHES "^\\$<INSTALL_INTERFACE:")
                continue()  # not used by this build
            endif()
            string(REGEX REPLACE "^\\$<BUILD_INTERFACE:(.*)>$" "\\1" dir "${dir}")
            if(dir MATCHES "\\$<")
                _gufo_problem(problems "${where}: target '${target}' adds include directory '${dir}' through a "
                                       "generator expression, which the SDK cannot check")
                continue()
            endif()
            cmake_path(ABSOLUTE_PATH dir NORMALIZE)
            set(inside FALSE)
            foreach(root IN LISTS include_roots)
                cmake_path(IS_PREFIX root "${dir}" NORMALIZE is_inside)
                if(is_inside)
                    set(inside TRUE)
                    break()
                endif()
            endforeach()
            if(NOT inside)
                _gufo_problem(problems "${where}: target '${target}' adds include directory '${dir}', outside the "
                                       "extension and the public include directory")
            endif()
        endforeach()

        set(links "")
        foreach(property LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
            get_target_property(values ${target} ${property})
            if(values)
                list(APPEND links ${values})
            endif()
        endforeach()
        foreach(property LINK_OPTIONS INTERFACE_LINK_OPTIONS)
            get_target_property(values ${target} ${property})
            if(NOT values)
                continue()
            endif()
            foreach(value IN LISTS values)
                if(value MATCHES "^-l(.+)$")
                    list(APPEND links "${CMAKE_MATCH_1}")
                elseif(NOT value MATCHES "^[-$]")
                    list(APPEND links "${value}")  # a library file passed as a link option
                endif()
            endforeach()
        endforeach()
        list(TRANSFORM links REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1")
        list(REMOVE_DUPLICATES links)
        foreach(item IN LISTS links)
            if(item MATCHES "\\$<")
                _gufo_problem(problems "${where}: target '${target}' links '${item}' through a generator expression, "
                                       "which the SDK cannot check")
            elseif(NOT item IN_LIST allowed_links)
                _gufo_problem(problems "${where}: target '${target}' links '${item}', which is not on the link "
                                       "allowlist (sdk/allowlist.json): extensions may link ${GUFO_RUNTIME_TARGET}, "
                                       "their own targets, targets of extensions they depend on, and: "
                                       "${allowlist_text}")
            elseif(NOT item IN_LIST allowed_targets AND NOT item STREQUAL GUFO_RUNTIME_TARGET)
                list(APPEND link_items ${item})
            endif()
        endforeach()

        get_target_property(sources ${target} SOURCES)
        foreach(source IN LISTS sources)
            if(source MATCHES "\\$<")
                _gufo_problem(problems "${where}: target '${target}' adds source '${source}' through a generator "
                                       "expression, which the SDK cannot check")
                continue()
            endif()
            cmake_path(ABSOLUTE_PATH source NORMALIZE)
            set(inside FALSE)
            foreach(root IN LISTS source_roots)
                cmake_path(IS_PREFIX root "${source}" NORMALIZE is_inside)
                if(is_inside)
                    set(inside TRUE)
                    break()
                endif()
            endforeach()
            if(NOT inside)
                _gufo_problem(problems "${where}: target '${target}' compiles '${source}', outside the extension's "
                                       "directory")
            endif()
        endforeach()
    endforeach()
    list(REMOVE_DUPLICATES link_items)
    set_property(GLOBAL PROPERTY GUFO_EXTENSION_${name}_LINK_ITEMS ${link_items})
    _gufo_write_include_rules(${name} "${include_roots}" "${link_items}")
    set(${problems_var} ${problems} PARENT_SCOPE)
endfunction()

# A JSON string literal for `text` (paths: backslashes and quotes escaped).
function(_gufo_json_string out text)
    string(REPLACE "\\" "\\\\" text "${text}")
    string(REPLACE "\"" "\\\"" text "${text}")
    set(${out} "\"${text}\"" PARENT_SCOPE)
endfunction()

# The include directories an imported link item (and what it links in turn)
# brings: an allowlisted library's headers may be included.
function(_gufo_link_include_dirs out)
    set(pending ${ARGN})
    set(seen "")
    set(dirs "")
    while(pending)
        list(POP_FRONT pending item)
        string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" item "${item}")
        if(item IN_LIST seen OR NOT TARGET ${item})
            continue()
        endif()
        list(APPEND seen ${item})
        foreach(property INTERFACE_INCLUDE_DIRECTORIES INTERFACE_SYSTEM_INCLUDE_DIRECTORIES INTERFACE_LINK_LIBRARIES)
            get_target_property(values ${item} ${property})
            if(NOT values)
                continue()
            endif()
            foreach(value IN LISTS values)
                if(property STREQUAL "INTERFACE_LINK_LIBRARIES")
                    list(APPEND pending ${value})
                elseif(NOT value MATCHES "\\$<")
                    list(APPEND dirs ${value})
                endif()
            endforeach()
        endforeach()
    endwhile()
    set(${out} ${dirs} PARENT_SCOPE)
endfunction()

# Writes gufo_generated/include_rules/<name>.json, what `gufo_sdk.py
# check-includes` holds every included header against: the include roots of
# sdk/allowlist.json (public API, generated headers, the extension's own
# directories), the directories of the extensions it depends on, the
# compilers' own and the system's include directories, the headers of the
# allowlisted libraries it links, and its targets' object directories
# (precompiled headers, unity sources).
function(_gufo_write_include_rules name include_roots link_items)
    set(roots ${include_roots})
    foreach(dep IN LISTS GUFO_EXT_${name}_DEPENDS)
        list(APPEND roots ${GUFO_EXT_${dep}_DIR} ${CMAKE_BINARY_DIR}/gufo_extensions/${dep})
    endforeach()
    foreach(language C CXX CUDA HIP)
        list(APPEND roots ${CMAKE_${language}_IMPLICIT_INCLUDE_DIRECTORIES})
    endforeach()
    list(APPEND roots ${CMAKE_CUDA_TOOLKIT_INCLUDE_DIRECTORIES} ${CUDAToolkit_INCLUDE_DIRS})
    _gufo_link_include_dirs(link_dirs ${link_items})
    list(APPEND roots ${link_dirs})
    foreach(target IN LISTS GUFO_EXT_${name}_TARGETS)
        list(APPEND roots ${CMAKE_BINARY_DIR}/CMakeFiles/${target}.dir)
    endforeach()
    list(REMOVE_DUPLICATES roots)
    set(items "")
    foreach(root IN LISTS roots)
        _gufo_json_string(quoted "${root}")
        list(APPEND items "{\"path\": ${quoted}}")
    endforeach()
    list(JOIN items ",\n    " items)
    # In Gufo's tree, say whose code a forbidden header is.
    set(labels "")
    foreach(area host runtime)
        if(IS_DIRECTORY ${_gufo_sdk_parent}/${area})
            _gufo_json_string(quoted "${_gufo_sdk_parent}/${area}")
            if(area STREQUAL "host")
                list(APPEND labels "{\"path\": ${quoted}, \"what\": \"Gufo's host code\"}")
            else()
                list(APPEND labels "{\"path\": ${quoted}, \"what\": \"the runtime's private code\"}")
            endif()
        endif()
    endforeach()
    list(JOIN labels ", " labels)
    # The host's side of the API: inside the public include directory, but not
    # for an extension's libraries (check-includes --target-kind).
    _gufo_json_string(host_only "${GUFO_PUBLIC_INCLUDE_DIR}/gufo/host")
    set(host_only "{\"path\": ${host_only}}")
    # Paths are shown relative to the source tree, except where the tree is the
    # extension itself (a standalone build), as in the configure's messages.
    set(show_base null)
    if(NOT EXISTS ${CMAKE_SOURCE_DIR}/extension.json)
        _gufo_json_string(show_base "${CMAKE_SOURCE_DIR}")
    endif()
    string(CONCAT text
        "{\n  \"extension\": \"${name}\",\n"
        "  \"allowed\": \"the public API (<gufo/ext/...>), the generated headers, the extension's own directory "
        "and build directory, the extensions it depends on, and the headers of the compilers, the system and the "
        "allowlisted libraries it links\",\n"
        "  \"show_base\": ${show_base},\n"
        "  \"host_only\": [${host_only}],\n"
        "  \"labels\": [${labels}],\n"
        "  \"roots\": [\n    ${items}\n  ]\n}\n")
    set(file ${CMAKE_BINARY_DIR}/gufo_generated/include_rules/${name}.json)
    set(old "")
    if(EXISTS ${file})
        file(READ ${file} old)
    endif()
    if(NOT old STREQUAL text)
        file(WRITE ${file} "${text}")
    endif()
endfunction()

# The API ledger, ${CMAKE_BINARY_DIR}/gufo_generated/api_ledger.json: every
# function of the public headers with the revision that added it (its @since),
# generated from the headers this build compiles against (Gufo's tree or the
# installed SDK), so no list is kept by hand. The symbol audits read it.
function(_gufo_add_api_ledger)
    set(ledger ${CMAKE_BINARY_DIR}/gufo_generated/api_ledger.json)
    file(GLOB_RECURSE headers CONFIGURE_DEPENDS ${GUFO_PUBLIC_INCLUDE_DIR}/gufo/ext/*.h
                                                ${GUFO_PUBLIC_INCLUDE_DIR}/gufo/ext/*.h.in
                                                ${GUFO_PUBLIC_INCLUDE_DIR}/gufo/host/*.h)
    add_custom_command(OUTPUT ${ledger}
        COMMAND ${GUFO_PYTHON} ${GUFO_SDK_TOOL} api-ledger --include-dir ${GUFO_PUBLIC_INCLUDE_DIR} --out ${ledger}
        DEPENDS ${headers} ${GUFO_SDK_TOOL}
        COMMENT "gufo: the API ledger (the revision of every public function)"
        VERBATIM)
    add_custom_target(gufo_api_ledger DEPENDS ${ledger})
    set_property(GLOBAL PROPERTY GUFO_API_LEDGER ${ledger})
endfunction()

# The symbol audit of one extension: a custom target, part of ALL and a
# dependency of every executable with a registry and of the extension's own
# executables and tests, that fails the build when a
# library imports a symbol from outside the extension, the runtime's exports
# and the allowlisted system libraries, or calls a runtime function newer than
# the manifest's api_version (gufo_sdk.py audit-symbols).
function(_gufo_add_symbol_audit name)
    get_property(built GLOBAL PROPERTY GUFO_EXTENSION_${name}_BUILT)
    get_property(ledger GLOBAL PROPERTY GUFO_API_LEDGER)
    set(args --extension ${name} --manifest ${GUFO_EXT_${name}_SHOWN} --runtime $<TARGET_FILE:${GUFO_RUNTIME_TARGET}>
             --cc ${CMAKE_C_COMPILER} --nm ${CMAKE_NM} --allowlist ${GUFO_SDK_ALLOWLIST}
             --api-requirement ${GUFO_EXT_${name}_API_REQUIREMENT} --api-ledger ${ledger})
    if(GUFO_EXT_${name}_DYNAMIC_LOADING)
        list(APPEND args --dynamic-loading)  # the manifest says why it uses dlopen/dlsym
    endif()
    # An installed runtime (imported target) is a file to depend on; the in-tree one a target to build first.
    get_target_property(runtime_imported ${GUFO_RUNTIME_TARGET} IMPORTED)
    if(runtime_imported)
        set(depends $<TARGET_FILE:${GUFO_RUNTIME_TARGET}> ${GUFO_SDK_TOOL} ${GUFO_SDK_ALLOWLIST} ${ledger})
    else()
        set(depends ${GUFO_RUNTIME_TARGET} ${GUFO_SDK_TOOL} ${GUFO_SDK_ALLOWLIST} ${ledger})
    endif()
    set(have_library FALSE)
    foreach(target IN LISTS built)
        if(GUFO_EXT_TARGET_${target}_KIND STREQUAL "library")
            list(APPEND args --library ${target}=$<TARGET_FILE:${target}>)
            list(APPEND depends ${target})
            set(have_library TRUE)
        endif()
    endforeach()
    if(NOT have_library)
        return()
    endif()
    foreach(dep IN LISTS GUFO_EXT_${name}_DEPENDS)
        get_property(dep_built GLOBAL PROPERTY GUFO_EXTENSION_${dep}_BUILT)
        foreach(target IN LISTS dep_built)
            if(GUFO_EXT_TARGET_${target}_KIND STREQUAL "library")
                list(APPEND args --dependency-library $<TARGET_FILE:${target}>)
                list(APPEND depends ${target})
            endif()
        endforeach()
    endforeach()
    get_property(link_items GLOBAL PROPERTY GUFO_EXTENSION_${name}_LINK_ITEMS)
    foreach(item IN LISTS link_items)
        list(APPEND args --link ${item})
    endforeach()
    get_property(languages GLOBAL PROPERTY GUFO_EXTENSION_${name}_GPU_LANGUAGES)
    list(REMOVE_DUPLICATES languages)
    foreach(language IN LISTS languages)
        list(APPEND args --gpu-language ${language})
    endforeach()
    if(CUDAToolkit_LIBRARY_DIR)
        list(APPEND args --lib-dir ${CUDAToolkit_LIBRARY_DIR} --lib-dir ${CUDAToolkit_LIBRARY_DIR}/stubs)
    endif()
    if(GUFO_HAVE_HIP AND CMAKE_HIP_COMPILER_ROCM_ROOT)
        list(APPEND args --lib-dir ${CMAKE_HIP_COMPILER_ROCM_ROOT}/lib)
    endif()
    set(stamp ${CMAKE_BINARY_DIR}/gufo_generated/audit/${name}.stamp)
    add_custom_command(OUTPUT ${stamp}
        COMMAND ${GUFO_PYTHON} ${GUFO_SDK_TOOL} audit-symbols ${args} --stamp ${stamp}
        DEPENDS ${depends}
        COMMENT "gufo: auditing the symbols extension ${name} imports"
        VERBATIM)
    add_custom_target(gufo_audit_${name} ALL DEPENDS ${stamp})
    add_dependencies(gufo_audit_${name} gufo_api_ledger)
    set_property(GLOBAL APPEND PROPERTY GUFO_AUDIT_TARGETS gufo_audit_${name})
    # The extension's own tools and tests link its libraries too: audit first,
    # so a forbidden import is reported as such, not as a bare linker error.
    foreach(target IN LISTS built)
        if(NOT GUFO_EXT_TARGET_${target}_KIND STREQUAL "library")
            add_dependencies(${target} gufo_audit_${name})
        endif()
    endforeach()
endfunction()

# ---- The registry ---------------------------------------------------------

# Generates the registry C file of `executable` (every selected extension, in
# registry order), adds it to the executable with the generated include
# directory, links the libraries holding entries that were built, and makes
# the executable depend on the symbol audits. Hosts then call
# gufo_registry_populate() from <gufo_registry_populate.h>.
function(gufo_add_registry executable)
    get_property(processed GLOBAL PROPERTY GUFO_EXTENSIONS_PROCESSED)
    if(NOT processed)
        message(FATAL_ERROR "gufo_add_registry(${executable}) must come after gufo_extensions_process(), which "
                            "defines the extension targets")
    endif()
    if(NOT TARGET ${executable})
        message(FATAL_ERROR "gufo_add_registry(${executable}): no such target")
    endif()
    get_property(built GLOBAL PROPERTY GUFO_EXTENSION_LIBRARIES)
    get_property(libraries GLOBAL PROPERTY GUFO_REGISTRY_LIBRARIES)
    get_property(audits GLOBAL PROPERTY GUFO_AUDIT_TARGETS)
    set(out ${CMAKE_CURRENT_BINARY_DIR}/gufo_registry_${executable}.c)
    set(args --data ${CMAKE_BINARY_DIR}/gufo_generated/extensions.json --out ${out} --executable ${executable})
    foreach(target IN LISTS built)
        list(APPEND args --built-target ${target})
    endforeach()
    execute_process(COMMAND ${GUFO_PYTHON} ${GUFO_SDK_TOOL} registry ${args}
                    RESULT_VARIABLE result ERROR_VARIABLE error)
    if(NOT result EQUAL 0)
        _gufo_fail("gufo: cannot generate the registry of ${executable}:" "${error}")
    endif()
    target_sources(${executable} PRIVATE ${out})
    target_include_directories(${executable} PRIVATE ${GUFO_GENERATED_INCLUDE_DIR})
    target_link_libraries(${executable} PRIVATE ${libraries} ${GUFO_RUNTIME_TARGET})
    if(audits)
        add_dependencies(${executable} ${audits})
    endif()
endfunction()
