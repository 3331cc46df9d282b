# CPack: Debian packages from the install components (cmake/portattn_install.cmake).
#   libportattn<SOVERSION>  the shared library (and the licence)
#   libportattn-dev         the headers, the .so link or the static library, CMake and pkg-config files
# Configure with -DCMAKE_INSTALL_PREFIX=/usr (GNUInstallDirs then picks lib/<multiarch>), build, and
# run `cpack -G DEB` in the build folder; `apt-get install ./*.deb` installs both.
set(CPACK_PACKAGE_NAME portattn)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VENDOR "portattn")
set(PORTATTN_PACKAGE_MAINTAINER "portattn developers" CACHE STRING "Maintainer field of the Debian packages")
set(CPACK_PACKAGE_CONTACT "${PORTATTN_PACKAGE_MAINTAINER}")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})  # the prefix GNUInstallDirs planned for
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)

set(_runtime libportattn${PROJECT_VERSION_MAJOR})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME ${_runtime})
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libportattn-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "libportattn: a FlashAttention-style attention forward behind one C11 API, \
on a CPU reference backend and the CUDA/HIP backends built in. Apache-2.0.")
set(CPACK_DEBIAN_DEV_DESCRIPTION "Development files of libportattn: the header portattn.h, the CMake \
package (find_package(portattn)) and portattn.pc.")
if(BUILD_SHARED_LIBS)
  set(CPACK_COMPONENTS_ALL runtime dev)
  set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${_runtime} (= ${PROJECT_VERSION})")
  set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)  # shlibs file and the ldconfig trigger
  find_program(PORTATTN_DPKG_SHLIBDEPS dpkg-shlibdeps)
  if(PORTATTN_DPKG_SHLIBDEPS)
    set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)  # Depends: libc6 (>= the glibc it needs)
  else()
    set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "libc6")
  endif()
else()  # a static build has no runtime package: the -dev package carries libportattn.a
  set(CPACK_COMPONENTS_ALL dev)
endif()
include(CPack)
