# GufoExtInstall.cmake: what `cmake --install` puts in place, so extensions can
# be developed against an installed SDK (find_package(GufoExt) or pkg-config):
#
#   include/gufo/ext/*.h (+ the generated version.h)   the public API for extensions
#   include/gufo/host/*.h                              the host's side (tests and tools of extensions)
#   lib/libgufo_ext_runtime.so                         the runtime
#   lib/cmake/GufoExt/                                 the package: GufoExt::runtime, GufoExtConfig.cmake
#   lib/pkgconfig/gufo-ext.pc                          Cflags/Libs for the runtime
#   share/gufo-ext/sdk/{cmake,tools,allowlist.json}    helpers, gufo_sdk.py (+ its catalogue modules), the allowlist
#   share/gufo-ext/{schema,changes,template}           manifest schemas, change records, the template
#   share/gufo-ext/extensions.lock, official/<name>/extension.json
#                                                      the release lock and the official manifests, so
#                                                      builds against the SDK get the collision checks
#   share/gufo-ext/conformance                         the conformance kit's sources (gufo_conformance)
#
# The share/gufo-ext layout mirrors the source tree (sdk/, schema/), so
# GufoExt.cmake finds the tool, allowlist and schemas the same way in both.
include_guard(GLOBAL)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(GUFO_INSTALL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/GufoExt)
set(GUFO_INSTALL_DATA_DIR ${CMAKE_INSTALL_DATADIR}/gufo-ext)
set(GUFO_INSTALL_SDK_DIR ${GUFO_INSTALL_DATA_DIR}/sdk)

install(TARGETS gufo_ext_runtime EXPORT GufoExtTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/gufo/ext ${PROJECT_SOURCE_DIR}/include/gufo/host
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/gufo FILES_MATCHING PATTERN "*.h")
install(FILES ${GUFO_GENERATED_INCLUDE_DIR}/gufo/ext/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/gufo/ext)

install(EXPORT GufoExtTargets NAMESPACE GufoExt:: DESTINATION ${GUFO_INSTALL_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/GufoExtConfig.cmake.in
    ${CMAKE_BINARY_DIR}/gufo_generated/GufoExtConfig.cmake
    INSTALL_DESTINATION ${GUFO_INSTALL_CMAKE_DIR}
    PATH_VARS CMAKE_INSTALL_INCLUDEDIR GUFO_INSTALL_SDK_DIR)
# The API version is the package version; its minor is the breaking number.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/gufo_generated/GufoExtConfigVersion.cmake
    VERSION ${GUFO_EXT_API_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/gufo_generated/GufoExtConfig.cmake
              ${CMAKE_BINARY_DIR}/gufo_generated/GufoExtConfigVersion.cmake
        DESTINATION ${GUFO_INSTALL_CMAKE_DIR})

# Relocatable: paths relative to the .pc file, so `cmake --install --prefix` anywhere works.
file(RELATIVE_PATH GUFO_PC_PREFIX_FROM_PCFILEDIR ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" GUFO_PC_PREFIX_FROM_PCFILEDIR "${GUFO_PC_PREFIX_FROM_PCFILEDIR}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/gufo-ext.pc.in ${CMAKE_BINARY_DIR}/gufo_generated/gufo-ext.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/gufo_generated/gufo-ext.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

install(FILES ${CMAKE_CURRENT_LIST_DIR}/GufoExt.cmake ${CMAKE_CURRENT_LIST_DIR}/GufoExtPython.cmake
        DESTINATION ${GUFO_INSTALL_SDK_DIR}/cmake)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/sdk/tools/gufo_sdk.py DESTINATION ${GUFO_INSTALL_SDK_DIR}/tools)
# The catalogue's commands (publish, catalogue-*), which gufo_sdk.py imports from beside itself.
install(FILES ${PROJECT_SOURCE_DIR}/sdk/tools/gufo_catalogue.py ${PROJECT_SOURCE_DIR}/sdk/tools/gufo_publish.py
              ${PROJECT_SOURCE_DIR}/sdk/tools/gufo_catalogue_site.py
        DESTINATION ${GUFO_INSTALL_SDK_DIR}/tools)
install(FILES ${PROJECT_SOURCE_DIR}/sdk/allowlist.json DESTINATION ${GUFO_INSTALL_SDK_DIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/schema/ DESTINATION ${GUFO_INSTALL_DATA_DIR}/schema)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/changes/ DESTINATION ${GUFO_INSTALL_DATA_DIR}/changes)
# The official extensions' manifests only (gufo_sdk.py configure copies those
# the lock names into gufo_generated/official/): what they own, none of their code.
install(FILES ${PROJECT_SOURCE_DIR}/extensions.lock DESTINATION ${GUFO_INSTALL_DATA_DIR})
install(DIRECTORY ${CMAKE_BINARY_DIR}/gufo_generated/official/ DESTINATION ${GUFO_INSTALL_DATA_DIR}/official)
if(EXISTS ${PROJECT_SOURCE_DIR}/conformance)
    # The conformance kit: its driver is built in each extension's standalone build.
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/conformance/ DESTINATION ${GUFO_INSTALL_DATA_DIR}/conformance)
endif()
if(EXISTS ${PROJECT_SOURCE_DIR}/template)
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/template/ DESTINATION ${GUFO_INSTALL_DATA_DIR}/template)
endif()
