# Install rules: headers, the shared library, a find_package(portattn) config and pkg-config.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS portattn EXPORT portattnTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/portattn.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT portattnTargets NAMESPACE portattn:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/portattn)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/portattnConfig.cmake.in
  ${PROJECT_BINARY_DIR}/portattnConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/portattn)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/portattnConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/portattnConfig.cmake ${PROJECT_BINARY_DIR}/portattnConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/portattn)

configure_file(${PROJECT_SOURCE_DIR}/cmake/portattn.pc.in ${PROJECT_BINARY_DIR}/portattn.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/portattn.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(TARGET portattn-bench)
  install(TARGETS portattn-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(FILES ${PROJECT_SOURCE_DIR}/tools/devices.json DESTINATION ${CMAKE_INSTALL_DATADIR}/portattn)
endif()
