# HIP detection. Debian 12 ships hipcc 5.2.3 (package hipcc) with clang-15 and rocm-device-libs; hipcc
# compiles the AMD kernels into code objects that are embedded in the library (backends/hip). The HIP
# runtime (libamdhip64) is not linked: it is loaded at run time (backends/hip/hip_rt.c), so the same
# library runs with or without ROCm, and building needs only hipcc and the device libraries.
set(PORTATTN_HAVE_HIP OFF)
set(PORTATTN_HIP_CDNA_ARCHS "gfx90a;gfx940" CACHE STRING
    "gfx targets of the hip-cdna code objects (add gfx942 with a ROCm 6 / clang 17+ hipcc)")
set(PORTATTN_HIP_RDNA3_ARCHS "gfx1100" CACHE STRING "gfx targets of the hip-rdna3 code objects (empty: none)")
if(NOT PORTATTN_ENABLE_HIP STREQUAL "OFF")
  find_program(PORTATTN_HIPCC hipcc HINTS /opt/rocm/bin ENV ROCM_PATH PATH_SUFFIXES bin)
  set(_hip_ok OFF)
  if(PORTATTN_HIPCC)
    # hipcc is there; can it build device code (device libraries installed)?
    set(_probe ${CMAKE_BINARY_DIR}/CMakeFiles/portattn_hip_probe)
    file(MAKE_DIRECTORY ${_probe})
    file(WRITE ${_probe}/probe.hip "#include <hip/hip_runtime.h>\nextern \"C\" __global__ void probe(float *x) { x[threadIdx.x] = 1.f; }\n")
    list(GET PORTATTN_HIP_CDNA_ARCHS 0 _arch0)
    execute_process(COMMAND ${PORTATTN_HIPCC} --cuda-device-only --no-gpu-bundle-output --offload-arch=${_arch0}
                            -O1 -c probe.hip -o probe.co
                    WORKING_DIRECTORY ${_probe} RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_VARIABLE _err)
    if(_rc EQUAL 0)
      set(_hip_ok ON)
    else()
      message(STATUS "portattn: hipcc cannot build ${_arch0} device code: ${_err}")
    endif()
  endif()
  if(_hip_ok AND PORTATTN_HIP_RDNA3_ARCHS MATCHES "gfx11")
    # Debian's device libraries lack gfx1100's ISA-version file: made at configure time
    execute_process(COMMAND bash ${PROJECT_SOURCE_DIR}/cmake/hip_gfx11_devlibs.sh ${CMAKE_BINARY_DIR}/hip-devlib-gfx11
                    RESULT_VARIABLE _rc OUTPUT_VARIABLE PORTATTN_HIP_GFX11_FLAG ERROR_VARIABLE _err
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT _rc EQUAL 0)
      message(STATUS "portattn: no gfx11 device libraries (${_err}): hip-rdna3 is built without code objects")
      set(PORTATTN_HIP_RDNA3_ARCHS "" CACHE STRING "" FORCE)
    endif()
  endif()
  if(_hip_ok)
    set(PORTATTN_HAVE_HIP ON)
    message(STATUS "portattn: HIP toolchain found (${PORTATTN_HIPCC}); code objects: hip-cdna ${PORTATTN_HIP_CDNA_ARCHS}, "
                   "hip-rdna3 ${PORTATTN_HIP_RDNA3_ARCHS}")
  elseif(PORTATTN_ENABLE_HIP STREQUAL "ON")
    message(FATAL_ERROR "PORTATTN_ENABLE_HIP=ON but hipcc cannot build AMD device code "
                        "(Debian: apt-get install hipcc libamdhip64-dev rocm-device-libs)")
  endif()
endif()
