# HIP detection. The AMD kernels are compiled into code objects that are embedded in the library
# (backends/hip); the HIP runtime (libamdhip64) is not linked: it is loaded at run time
# (backends/hip/hip_rt.c), so the same library runs with or without ROCm, and building needs only a
# compiler with the HIP headers and the device libraries. Each target is built by hipcc (Debian 12:
# hipcc 5.2.3 with clang-15) when it can, else by a newer clang (PORTATTN_HIP_CLANG; Debian 12:
# clang-19, which knows gfx942) with the same headers and device libraries; gfx11 (hip-rdna3) needs
# clang 17+ either way; a target no compiler here builds is left out with a message. A device library a target lacks (Debian's stop at gfx940) is made by
# cmake/hip_devlibs.sh.
set(PORTATTN_HAVE_HIP OFF)
set(PORTATTN_HIP_CDNA_ARCHS "gfx90a;gfx942" CACHE STRING
    "gfx targets of the hip-cdna code objects (gfx90a: MI200; gfx942: MI300X/MI300A/MI325X, needs clang 17+)")
set(PORTATTN_HIP_RDNA3_ARCHS "gfx1100" CACHE STRING "gfx targets of the hip-rdna3 code objects (empty: none)")
if(PORTATTN_HIP_CDNA_ARCHS STREQUAL "gfx90a;gfx940") # the former default, kept in older build folders' caches
  message(STATUS "portattn: PORTATTN_HIP_CDNA_ARCHS gfx90a;gfx940 (the former default) becomes gfx90a;gfx942")
  set_property(CACHE PORTATTN_HIP_CDNA_ARCHS PROPERTY VALUE "gfx90a;gfx942")
endif()

# portattn_hip_probe(<out-var> <arch> <compiler and flags...>): can this command build <arch> device
# code with the HIP headers and device libraries?
function(portattn_hip_probe out arch)
  set(dir ${CMAKE_BINARY_DIR}/CMakeFiles/portattn_hip_probe)
  file(MAKE_DIRECTORY ${dir})
  file(WRITE ${dir}/probe.hip "#include <hip/hip_runtime.h>\nextern \"C\" __global__ void probe(float *x) { x[threadIdx.x] = exp2f(x[0]); }\n")
  execute_process(COMMAND ${ARGN} --cuda-device-only --no-gpu-bundle-output --offload-arch=${arch} -O1 -c probe.hip
                          -o probe-${arch}.co
                  WORKING_DIRECTORY ${dir} RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  if(rc EQUAL 0)
    set(${out} ON PARENT_SCOPE)
  else()
    list(GET ARGN 0 exe)
    get_filename_component(exe ${exe} NAME)
    if(err MATCHES "error: ([^\n]*)")
      set(err "${CMAKE_MATCH_1}")
    elseif(NOT rc MATCHES "^[0-9]+$")
      set(err "${rc}") # the command did not run
    else()
      string(SUBSTRING "${err}" 0 160 err)
    endif()
    set(${out} OFF PARENT_SCOPE)
    set(PORTATTN_HIP_PROBE_ERROR "${PORTATTN_HIP_PROBE_ERROR}${exe}: ${err}; " PARENT_SCOPE)
  endif()
endfunction()

# portattn_hip_clang_major(<out-var> <arch> <compiler and flags...>): the clang major version behind a
# HIP compiler command (0 if it cannot tell).
function(portattn_hip_clang_major out arch)
  set(dir ${CMAKE_BINARY_DIR}/CMakeFiles/portattn_hip_probe)
  file(MAKE_DIRECTORY ${dir})
  file(WRITE ${dir}/version.hip "\n")
  execute_process(COMMAND ${ARGN} --cuda-device-only --offload-arch=${arch} -E -dM version.hip
                  WORKING_DIRECTORY ${dir} RESULT_VARIABLE rc OUTPUT_VARIABLE macros ERROR_QUIET)
  set(major 0)
  if(rc EQUAL 0 AND macros MATCHES "#define __clang_major__ ([0-9]+)")
    set(major ${CMAKE_MATCH_1})
  endif()
  set(${out} ${major} PARENT_SCOPE)
endfunction()

if(NOT PORTATTN_ENABLE_HIP STREQUAL "OFF")
  find_program(PORTATTN_HIPCC hipcc HINTS /opt/rocm/bin ENV ROCM_PATH PATH_SUFFIXES bin)
  find_program(PORTATTN_HIP_CLANG NAMES clang++-19 clang++-18 clang++-17
               HINTS /usr/lib/llvm-19/bin /usr/lib/llvm-18/bin /usr/lib/llvm-17/bin
               DOC "a clang 17+ for the gfx targets hipcc's clang does not know (gfx942)")
  find_path(PORTATTN_HIP_INCLUDE hip/hip_runtime.h HINTS /opt/rocm/include ENV ROCM_PATH PATH_SUFFIXES include)
  set(_clang_cmd "")
  if(PORTATTN_HIP_CLANG AND PORTATTN_HIP_INCLUDE)
    get_filename_component(_rocm ${PORTATTN_HIP_INCLUDE} DIRECTORY) # /usr for Debian's /usr/include/hip
    set(_clang_cmd ${PORTATTN_HIP_CLANG} -x hip --rocm-path=${_rocm})
  endif()
  set(_built "")
  foreach(_family CDNA RDNA3)
    set(_kept "")
    foreach(_arch IN LISTS PORTATTN_HIP_${_family}_ARCHS)
      set(_flag "")
      if(PORTATTN_HIPCC OR _clang_cmd)
        execute_process(COMMAND bash ${PROJECT_SOURCE_DIR}/cmake/hip_devlibs.sh ${CMAKE_BINARY_DIR}/hip-devlib-${_arch} ${_arch}
                        RESULT_VARIABLE _rc OUTPUT_VARIABLE _flag ERROR_VARIABLE _err OUTPUT_STRIP_TRAILING_WHITESPACE)
        if(NOT _rc EQUAL 0)
          message(STATUS "portattn: no device libraries for ${_arch} (${_err})")
        endif()
      endif()
      set(_cmd "")
      set(_ok OFF)
      set(PORTATTN_HIP_PROBE_ERROR "")
      set(_use_hipcc ${PORTATTN_HIPCC})
      if(_arch MATCHES "^gfx11" AND PORTATTN_HIPCC)
        # hip-rdna3 needs clang 17+: clang-15 caps a gfx11 wave at 128 VGPRs, and the d256 halves spill
        portattn_hip_clang_major(_major ${_arch} ${PORTATTN_HIPCC} ${_flag})
        if(_major LESS 17)
          set(_use_hipcc "")
          set(PORTATTN_HIP_PROBE_ERROR "hipcc: hip-rdna3 needs clang 17+, its clang is ${_major}; ")
        endif()
      endif()
      if(_use_hipcc)
        portattn_hip_probe(_ok ${_arch} ${PORTATTN_HIPCC} ${_flag})
        set(_cmd ${PORTATTN_HIPCC} ${_flag})
      endif()
      if(NOT _ok AND _clang_cmd)
        portattn_hip_probe(_ok ${_arch} ${_clang_cmd} ${_flag})
        set(_cmd ${_clang_cmd} ${_flag})
      endif()
      if(_ok)
        list(APPEND _kept ${_arch})
        list(GET _cmd 0 _exe)
        get_filename_component(_exe ${_exe} NAME)
        list(APPEND _built "${_arch} (${_exe})")
        set(PORTATTN_HIP_CMD_${_arch} ${_cmd}) # the compiler command (and flags) that builds this target
      else()
        string(TOLOWER ${_family} _f)
        string(REGEX REPLACE "; $" "" PORTATTN_HIP_PROBE_ERROR "${PORTATTN_HIP_PROBE_ERROR}")
        message(STATUS "portattn: hip-${_f} is built without ${_arch}: no compiler here builds it "
                       "(${PORTATTN_HIP_PROBE_ERROR})")
      endif()
    endforeach()
    set(PORTATTN_HIP_${_family}_BUILT ${_kept}) # the targets of this family that get code objects
  endforeach()
  if(PORTATTN_HIP_CDNA_BUILT OR PORTATTN_HIP_RDNA3_BUILT)
    set(PORTATTN_HAVE_HIP ON)
    string(REPLACE ";" ", " _built "${_built}")
    message(STATUS "portattn: HIP code objects: ${_built}")
  elseif(PORTATTN_ENABLE_HIP STREQUAL "ON")
    message(FATAL_ERROR "PORTATTN_ENABLE_HIP=ON but no hipcc or clang here can build AMD device code "
                        "(Debian: apt-get install hipcc libamdhip64-dev rocm-device-libs clang-19)")
  endif()
endif()
