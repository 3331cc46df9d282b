/* A HIP runtime that is a CPU: libpa_fakehip.so exports the libamdhip64 entry points portattn loads
 * (backends/hip/hip_rt.h), so that PORTATTN_HIP_LIBRARY=libpa_fakehip.so runs the real HIP backends
 * (probe, supports, code-object loading, argument resolution, launch) against one simulated device:
 * a gfx90a (hip-cdna, MFMA flushing 16-bit subnormals as MI200's does), with PA_FAKEHIP_ARCH=gfx942 an
 * MI300 (hip-cdna, no flush) or with PA_FAKEHIP_ARCH=gfx1100 an RDNA3 GPU (hip-rdna3). Device memory is host
 * memory tracked by the runtime (so pointer checks work); a kernel launch runs the same kernel source
 * (cdna_fwd_kernel.h, cdna_decode_kernel.h, rdna3_fwd_kernel.h, hipgen_kernel.h) compiled for the CPU with hip_wave.h's exact MFMA/WMMA and
 * cross-lane emulation, every GPU thread a fiber (sim_fiber.h). hipModuleLoadData accepts only code
 * objects whose ELF header names the simulated target, so the backends' choice among the embedded
 * objects is exercised too. This is T3 on the CPU (docs/design.md section 5), not AMD hardware. */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <map>
#include <mutex>
#include <string>

#include "cdna_decode_entries.h"
#include "cdna_decode_kernel.h"
#include "cdna_entries.h"
#include "cdna_fwd_kernel.h"
#include "hipgen_entries.h"
#include "hipgen_kernel.h"
#include "rdna3_entries.h"
#include "rdna3_fwd_kernel.h"

namespace {
enum { OK = 0, ERR_INVALID_VALUE = 1, ERR_OOM = 2, ERR_INVALID_IMAGE = 200, ERR_NO_BINARY = 209, ERR_NOT_FOUND = 500,
       ERR_LAUNCH = 719 };
/* The simulated target: its name, EF_AMDGPU_MACH, whether its MFMA flushes 16-bit subnormals, and
 * its wave (the width hip-generic's code for it is compiled with). */
struct target { const char *name; unsigned mach; int mfma_ftz; unsigned wave; };
target sim_target()
{
    static const target known[] = {{"gfx90a", 0x3f, 1, 64}, {"gfx942", 0x4c, 0, 64}, {"gfx1100", 0x41, 0, 32}};
    const char *e = getenv("PA_FAKEHIP_ARCH");
    for (const target &t : known)
        if (e && !strcmp(e, t.name)) return t;
    return known[0];
}

std::mutex g_mu;
std::map<const char *, size_t, std::less<>> g_alloc; /* device allocations: base -> bytes */
/* The last error as ROCm 7 keeps it (and CUDA): one slot per thread, set by a failed call, left alone
 * by a successful one, cleared only by hipGetLastError. */
thread_local int g_last;
int g_module_tag; /* the one module handle */

int fail(int e) { return g_last = e; }

/* The instances of cdna_entries.h, cdna_decode_entries.h, rdna3_entries.h and hipgen_entries.h,
 * compiled for the CPU; a function handle is the address of its entry. The argument is the kernel's
 * argument struct. wave 0: the simulated target's (hip-generic, built for both wave widths). */
typedef void (*body_fn)(const void *);
struct entry { const char *name; body_fn body; unsigned threads, wave; };
const entry g_entries[] = {
#define ENTRY5(n, bf16, dqk, dv, c0)                                                                          \
    {#n, [](const void *a) { pa_cdna_fwd_body<bf16 != 0, dqk, dv, c0>(*(const pa_fwd_args *)a); }, PA_CDNA_THREADS, 64},
#define ENTRY5R(n, bf16, dqk, dv, c0)                                                                         \
    {#n, [](const void *a) { pa_rdna3_fwd_body<bf16 != 0, dqk, dv, c0>(*(const pa_fwd_args *)a); }, PA_RDNA3_THREADS, 32},
#define ENTRY6D(n, kind, bf16, dqk, dv, c0)                                                                   \
    {#n, [](const void *p) {                                                                                 \
         const pa_fwd_args &a = *(const pa_fwd_args *)p;                                                     \
         if constexpr (kind == PA_CDNA_DEC_ATTN) pa_cdna_dec_body<bf16 != 0, dqk, dv, c0>(a);                \
         else if constexpr (kind == PA_CDNA_DEC_COMBINE) pa_cdna_dec_combine_body<bf16 != 0>(a);             \
         else pa_cdna_dec_append_body(a);                                                                    \
     }, PA_CDNA_DEC_THREADS, 64},
#define ENTRY2G(n, kind)                                                                                      \
    {#n, [](const void *p) {                                                                                 \
         const pa_fwd_args &a = *(const pa_fwd_args *)p;                                                     \
         if (sim_target().wave == 32) pa_hipgen_run<kind, 32>(a);                                            \
         else pa_hipgen_run<kind, 64>(a);                                                                    \
     }, PA_HIPGEN_THREADS, 0},
    PA_CDNA_ENTRIES(ENTRY5) PA_CDNA_DEC_ENTRIES(ENTRY6D) PA_RDNA3_ENTRIES(ENTRY5R) PA_HIPGEN_ENTRIES(ENTRY2G)
#undef ENTRY2G
#undef ENTRY5
#undef ENTRY5R
#undef ENTRY6D
};
const int g_entry_count = (int)(sizeof g_entries / sizeof g_entries[0]);

/* One launch: every fiber runs the instance's body. */
struct launch { const void *a; body_fn body; };
void run_thread(void *p)
{
    const launch *l = (const launch *)p;
    l->body(l->a);
}
} // namespace

int pa_sim_mfma_ftz = 1; /* PA_EMU_MFMA_FTZ of the kernels compiled into this runtime (shim/pre.h) */

extern "C" {
int hipRuntimeGetVersion(int *v) { *v = 50200000; return OK; } /* ROCm 5.2's numbering (pointer attributes) */
int hipGetDeviceCount(int *n) { *n = 1; return OK; }
int hipGetDevice(int *d) { *d = 0; return OK; }
int hipDeviceGetName(char *name, int len, int dev)
{
    if (dev != 0) return fail(101);
    snprintf(name, (size_t)len, "simulated %s (CPU fibers, hip_wave.h emulation)", sim_target().name);
    return OK;
}
int hipGetLastError(void) { const int e = g_last; g_last = OK; return e; }
int hipPeekAtLastError(void) { return g_last; }
const char *hipGetErrorName(int e) { return e == OK ? "hipSuccess" : e == ERR_NO_BINARY ? "hipErrorNoBinaryForGpu" : "hipErrorFake"; }
const char *hipGetErrorString(int e) { return e == OK ? "no error" : "simulated runtime error"; }

int hipMalloc(void **p, size_t n)
{
    *p = aligned_alloc(256, (n + 255) / 256 * 256 ? (n + 255) / 256 * 256 : 256);
    if (!*p) return fail(ERR_OOM);
    std::lock_guard<std::mutex> g(g_mu);
    g_alloc[(const char *)*p] = n;
    return OK;
}
int hipFree(void *p)
{
    if (!p) return OK;
    std::lock_guard<std::mutex> g(g_mu);
    if (!g_alloc.erase((const char *)p)) return fail(ERR_INVALID_VALUE);
    free(p);
    return OK;
}
int hipMemcpy(void *dst, const void *src, size_t n, int kind) { (void)kind; memmove(dst, src, n); return OK; }
int hipMemsetAsync(void *p, int v, size_t n, void *stream) { (void)stream; memset(p, v, n); return OK; }
int hipDeviceSynchronize(void) { return OK; } /* launches run to completion */
int hipEventCreate(void **e) { *e = malloc(1); return OK; }
int hipEventRecord(void *e, void *s) { (void)e, (void)s; return OK; }
/* no device clock: timing reports an error rather than a time that means nothing */
int hipEventElapsedTime(float *ms, void *a, void *b) { (void)a, (void)b; *ms = 0.f; return fail(801); }
int hipEventDestroy(void *e) { free(e); return OK; }

/* hipPointerAttribute_t of ROCm 5: memoryType (1 = device), device, pointers, isManaged, flags. */
struct attr { int type, device; void *dptr, *hptr; int managed; unsigned flags; };
int hipPointerGetAttributes(attr *a, const void *p)
{
    std::lock_guard<std::mutex> g(g_mu);
    auto it = g_alloc.upper_bound((const char *)p);
    if (it == g_alloc.begin()) return fail(ERR_INVALID_VALUE);
    --it;
    if ((const char *)p >= it->first + (it->second ? it->second : 1)) return fail(ERR_INVALID_VALUE);
    memset(a, 0, sizeof *a);
    a->type = 1, a->device = 0, a->dptr = (void *)p;
    return OK;
}

int hipModuleLoadData(void **mod, const void *image)
{
    Elf64_Ehdr eh;
    memcpy(&eh, image, sizeof eh);
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_machine != 224) return fail(ERR_INVALID_IMAGE);
    if ((eh.e_flags & 0xff) != sim_target().mach) return fail(ERR_NO_BINARY); /* another target's code */
    *mod = &g_module_tag;
    return OK;
}
int hipModuleGetFunction(void **fn, void *mod, const char *name)
{
    if (mod != &g_module_tag) return fail(ERR_INVALID_VALUE);
    for (int i = 0; i < g_entry_count; ++i)
        if (!strcmp(g_entries[i].name, name)) { *fn = (void *)&g_entries[i]; return OK; }
    return fail(ERR_NOT_FOUND);
}
int hipModuleLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                          unsigned shmem, void *stream, void **params, void **extra)
{
    (void)stream;
    const entry *e = (const entry *)fn;
    if (e < g_entries || e >= g_entries + g_entry_count || !params || extra || shmem || by != 1 || bz != 1 ||
        bx != e->threads || !gx || !gy || !gz || (uint64_t)gx * bx > UINT32_MAX || (uint64_t)gy * by > UINT32_MAX ||
        (uint64_t)gz * bz > UINT32_MAX)
        return fail(ERR_INVALID_VALUE); /* what the backend must pass for this kernel */
    launch l = {params[0], e->body};
    std::lock_guard<std::mutex> g(g_mu); /* one simulated device: launches run one at a time */
    pa_sim_mfma_ftz = sim_target().mfma_ftz;
    return sim_launch({gx, gy, gz}, bx, e->wave ? e->wave : sim_target().wave, run_thread, &l) ? fail(ERR_LAUNCH) : OK;
}
}
