# Install rules: the header, the library (shared or static), a find_package(portattn) config and
# pkg-config. Components: `runtime` (the shared library, licence) and `dev` (headers, static
# library, the .so link, CMake and pkg-config files) become the Debian packages libportattn0 and
# libportattn-dev (cmake/portattn_package.cmake); `tools` holds portattn-bench.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
set(_cmakedir ${CMAKE_INSTALL_LIBDIR}/cmake/portattn)

install(TARGETS portattn EXPORT portattnTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
install(FILES ${PROJECT_SOURCE_DIR}/include/portattn.h ${PROJECT_SOURCE_DIR}/include/portattn_version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
install(EXPORT portattnTargets NAMESPACE portattn:: DESTINATION ${_cmakedir} COMPONENT dev)

# A static libportattn brings its private link dependencies along: the config finds them for the
# consumer. The licence goes with the library's package (the -dev one when there is no .so).
get_target_property(_pa_type portattn TYPE)
if(_pa_type STREQUAL "STATIC_LIBRARY")
  set(PORTATTN_STATIC 1)
  set(_doc_component dev)
else()
  set(PORTATTN_STATIC 0)
  set(_doc_component runtime)
endif()
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/CHANGELOG.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT ${_doc_component})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/portattnConfig.cmake.in
  ${PROJECT_BINARY_DIR}/portattnConfig.cmake INSTALL_DESTINATION ${_cmakedir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/portattnConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/portattnConfig.cmake ${PROJECT_BINARY_DIR}/portattnConfigVersion.cmake
        DESTINATION ${_cmakedir} COMPONENT dev)

include(portattn_pkgconfig)
install(FILES ${PROJECT_BINARY_DIR}/portattn.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

if(TARGET portattn-bench)
  install(TARGETS portattn-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
  install(FILES ${PROJECT_SOURCE_DIR}/tools/devices.json DESTINATION ${CMAKE_INSTALL_DATADIR}/portattn COMPONENT tools)
endif()
