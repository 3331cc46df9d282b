# portattn.pc. For the system prefix /usr (the Debian packages) the paths are absolute, as
# distributions write them: pkg-config then drops its default dirs from the flags, and
# PKG_CONFIG_SYSROOT_DIR relocates them. For any other prefix they are computed from the .pc
# file's own folder (${pcfiledir}), so they stay right for any depth of CMAKE_INSTALL_LIBDIR
# (lib, lib64, lib/x86_64-linux-gnu) and after `cmake --install --prefix` or a move.
# Absolute install dirs are written as they are.
set(_pcdir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr" OR IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}"
   OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(PC_LIBDIR "${CMAKE_INSTALL_FULL_LIBDIR}")
  set(PC_INCLUDEDIR "${CMAKE_INSTALL_FULL_INCLUDEDIR}")
else()
  file(RELATIVE_PATH _up "/root/${_pcdir}" "/root")  # lib/x86_64-linux-gnu/pkgconfig -> ../../..
  string(REGEX REPLACE "/$" "" _up "${_up}")
  set(PC_PREFIX "\${pcfiledir}/${_up}")
  set(PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  set(PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()

# What a static libportattn needs at link time (pkg-config --static).
set(PC_LIBS_PRIVATE "-lpthread -lm")
if(PORTATTN_HAVE_HIP)
  string(APPEND PC_LIBS_PRIVATE " -ldl")
endif()
if(PORTATTN_HAVE_CUDA AND CUDAToolkit_LIBRARY_DIR)
  string(APPEND PC_LIBS_PRIVATE " -L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -ldl -lrt")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/portattn.pc.in ${PROJECT_BINARY_DIR}/portattn.pc @ONLY)
