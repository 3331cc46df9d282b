/* hip-cdna under the nvcc wave emulation (builds with -DPORTATTN_HIP_EMULATION=ON only): the
 * CDNA kernel source (cdna_fwd_kernel.h) compiled by nvcc against hip_wave.h's emulation, run on an
 * NVIDIA GPU so that the case table can check it against the CPU reference. It takes a call only
 * when forced by params->backend, so the selector never picks an emulation for real work. */
#include "backend.h"
#include "cdna_entries.h"
#include "cdna_grid.h"
#include "cuda_host.h"
#include "fwd_resolve.h"
#include "hip_shape.h"

portattn_status_t pa_hip_cdna_emu_run(const pa_problem *pb, void *stream, char *err, size_t err_len); /* cdna_fwd_emu.cu */

static int emu_probe(char *detail, size_t detail_len)
{
    if (!pa_cuda_probe(detail, detail_len)) return 0;
    pa_fmt(detail, detail_len, PORTATTN_SUCCESS, "emulated on a CUDA device (hip_wave.h), forced calls only");
    return 1;
}

static const int dims[] = {PA_CDNA_DIMS};
#define NDIMS ((int)(sizeof dims / sizeof *dims))

static int emu_head_dims(const pa_problem *pb, char *why, size_t why_len)
{
    return pa_fwd_dims_ok(dims, NDIMS, pb, "hip-cdna-emu", why, why_len);
}

static int emu_supports(const pa_problem *pb, pa_choice *ch, char *kernel, size_t kernel_len, char *why, size_t why_len)
{
    (void)ch; /* one kernel */
    const portattn_fwd_params_t *p = &pb->p;
    if (p->backend != PORTATTN_BACKEND_HIP_CDNA)
        return PA_REFUSE("the hip-cdna emulation runs only when forced by params->backend");
    static const pa_hip_inst insts[] = {PA_CDNA_ENTRIES(PA_HIP_INST)};
    static const pa_family limits = PA_HIP_FAST_FAMILY(emu_head_dims);
    if (!pa_hip_shape_ok(pb, &limits, "cdna-emu", PA_CDNA_BM, PA_CDNA_BN, insts, PA_CDNA_ENTRY_COUNT, dims, NDIMS,
                         kernel, kernel_len, why, why_len))
        return 0;
    return pa_hip_nothing_to_do(pb) || pa_cuda_fwd_ptrs_ok(pb, why, why_len);
}

static portattn_status_t emu_run(const pa_problem *pb, const pa_choice *ch, void *stream, char *err, size_t err_len)
{
    (void)ch;
    return pa_hip_cdna_emu_run(pb, stream, err, err_len);
}

static const pa_backend pa_backend_hip_cdna_emu = {
    PORTATTN_BACKEND_HIP_CDNA, "hip-cdna", emu_probe, emu_supports, emu_run, NULL,
};

/* Registered as hip-cdna when the library loads (the registry's test hook): the registry itself has
 * no emulation switch. A static libportattn keeps this object through the linker option that
 * backends/cuda/CMakeLists.txt adds in emulation builds (nothing else refers to it). */
__attribute__((constructor)) void pa_hip_cdna_emu_register(void) { pa_backend_register_test(&pa_backend_hip_cdna_emu); }
