# HIP detection. Debian 12 ships hipcc 5.2.3 (package hipcc) with clang-15, libamdhip64-dev and
# rocm-device-libs: hipcc is /usr/bin/hipcc and the runtime is found without a ROCm prefix.
# The hip-cdna kernel is compiled and ISA-gated by the isa_gate_hip test (tests/isa_gate_hip.sh); it is
# not linked into the library until it has run (under the nvcc emulation, T3).
set(PORTATTN_HAVE_HIP OFF)
if(NOT PORTATTN_ENABLE_HIP STREQUAL "OFF")
  find_program(PORTATTN_HIPCC hipcc HINTS /opt/rocm/bin ENV ROCM_PATH PATH_SUFFIXES bin)
  find_library(PORTATTN_AMDHIP64 amdhip64 HINTS /opt/rocm/lib ENV ROCM_PATH PATH_SUFFIXES lib)
  if(PORTATTN_HIPCC AND PORTATTN_AMDHIP64)
    message(STATUS "portattn: HIP toolchain found (${PORTATTN_HIPCC}); hip-cdna is compiled by isa_gate_hip, not linked yet")
  elseif(PORTATTN_ENABLE_HIP STREQUAL "ON")
    message(FATAL_ERROR "PORTATTN_ENABLE_HIP=ON but hipcc/libamdhip64 were not found "
                        "(Debian: apt-get install hipcc libamdhip64-dev rocm-device-libs)")
  endif()
endif()
