/* AMD GPU code objects embedded in the library at build time (cmake/portattn_embed.cmake writes the
 * tables from hipcc's per-target ELF files); the HIP backends load them with hipModuleLoadData. */
#ifndef PORTATTN_HIP_CODE_OBJECTS_H
#define PORTATTN_HIP_CODE_OBJECTS_H

#include <stddef.h>

typedef struct pa_hip_code_object {
    const char *target; /* "gfx90a", ... */
    const unsigned char *data;
    size_t size;
} pa_hip_code_object;

/* hip-cdna: cdna_fwd.hip for each of PORTATTN_HIP_CDNA_ARCHS. */
extern const pa_hip_code_object pa_cdna_code_objects[];
extern const int pa_cdna_code_object_count;
/* hip-cdna's decode kernels: cdna_decode.hip for the same targets. */
extern const pa_hip_code_object pa_cdnadec_code_objects[];
extern const int pa_cdnadec_code_object_count;
/* hip-rdna3: rdna3_fwd.hip for each of PORTATTN_HIP_RDNA3_ARCHS. */
extern const pa_hip_code_object pa_rdna3_code_objects[];
extern const int pa_rdna3_code_object_count;
/* hip-generic: hipgen.hip for every target of both families. */
extern const pa_hip_code_object pa_hipgen_code_objects[];
extern const int pa_hipgen_code_object_count;

#endif
