/* test_hip_code_objects: the AMD code objects embedded in libportattn (backends/hip, written by
 * cmake/portattn_embed.cmake) are what hip-cdna, hip-rdna3 and their hip-generic fallback will load: for each configured target an
 * AMDGPU ELF for that gfx target whose dynamic symbols hold every entry point hip_backend.c asks for, each with
 * a kernel descriptor that needs no scratch (private segment 0), at most 64 KiB of LDS and the
 * kernel-argument size of pa_fwd_args, which every forward kernel takes (hip-generic's objects cover every
 * target of both families). Runs on the CPU: it checks the bytes the library ships.
 * Exit 0 pass, 1 fail. */
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cdna_decode_entries.h"
#include "cdna_entries.h"
#include "hipgen_entries.h"
#include "rdna3_entries.h"
#include "fwd_args.h"
#include "hip_code_objects.h"

#ifndef EM_AMDGPU
#define EM_AMDGPU 224
#endif

#define NAME5(name, bf16, dqk, dv, c0) #name,
static const char *const cdna_names[] = {PA_CDNA_ENTRIES(NAME5)};
static const char *const rdna3_names[] = {PA_RDNA3_ENTRIES(NAME5)};
#define NAME6(name, kind, bf16, dqk, dv, c0) #name,
static const char *const cdnadec_names[] = {PA_CDNA_DEC_ENTRIES(NAME6)};
#define NAME2(name, kind) #name,
static const char *const hipgen_names[] = {PA_HIPGEN_ENTRIES(NAME2)};
#define MAX_ENTRIES 24

/* EF_AMDGPU_MACH values of the targets portattn builds (LLVM's AMDGPUUsage). */
static int mach_of(const char *target)
{
    static const struct { const char *t; int m; } tab[] = {
        {"gfx90a", 0x3f}, {"gfx940", 0x40}, {"gfx1100", 0x41}, {"gfx941", 0x4b}, {"gfx942", 0x4c}};
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (!strcmp(tab[i].t, target)) return tab[i].m;
    return -1;
}

static int fails;
#define CHECK(c, ...) ((c) ? 1 : (printf("FAIL %s: ", co->target), printf(__VA_ARGS__), printf("\n"), fails++, 0))

static void check_object(const pa_hip_code_object *co, const char *const *entries, int count, size_t args)
{
    const unsigned char *b = co->data;
    if (!CHECK(co->size > sizeof(Elf64_Ehdr) && !memcmp(b, ELFMAG, SELFMAG), "not an ELF file")) return;
    Elf64_Ehdr eh;
    memcpy(&eh, b, sizeof eh);
    CHECK(eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_machine == EM_AMDGPU, "not a 64-bit AMDGPU ELF (machine %d)",
          eh.e_machine);
    const int mach = mach_of(co->target);
    CHECK(mach < 0 || (int)(eh.e_flags & 0xff) == mach, "EF_AMDGPU_MACH 0x%x, %s is 0x%x", eh.e_flags & 0xff,
          co->target, mach);
    if (!CHECK(eh.e_shoff && eh.e_shoff + (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) <= co->size, "section table"))
        return;
    Elf64_Shdr sh[64];
    const int ns = eh.e_shnum < 64 ? eh.e_shnum : 64;
    memcpy(sh, b + eh.e_shoff, (size_t)ns * sizeof(Elf64_Shdr));
    int found[MAX_ENTRIES] = {0}, kds = 0;
    for (int s = 0; s < ns; s++) {
        if (sh[s].sh_type != SHT_DYNSYM || sh[s].sh_link >= (unsigned)ns) continue;
        const char *strtab = (const char *)b + sh[sh[s].sh_link].sh_offset;
        for (uint64_t off = 0; off + sizeof(Elf64_Sym) <= sh[s].sh_size; off += sizeof(Elf64_Sym)) {
            Elf64_Sym sym;
            memcpy(&sym, b + sh[s].sh_offset + off, sizeof sym);
            const char *name = strtab + sym.st_name;
            for (int e = 0; e < count; e++) {
                const size_t n = strlen(entries[e]);
                if (!strcmp(name, entries[e]) && ELF64_ST_TYPE(sym.st_info) == STT_FUNC) found[e] |= 1;
                if (strncmp(name, entries[e], n) || strcmp(name + n, ".kd")) continue;
                found[e] |= 2;
                /* the kernel descriptor: group (LDS) and private (scratch) segment sizes, kernarg size */
                for (int t = 0; t < ns; t++) {
                    if (sym.st_shndx != t || sym.st_value < sh[t].sh_addr || sym.st_value + 64 > sh[t].sh_addr + sh[t].sh_size)
                        continue;
                    uint32_t kd[3];
                    memcpy(kd, b + sh[t].sh_offset + (sym.st_value - sh[t].sh_addr), sizeof kd);
                    printf("  %-8s %-24s LDS %6u scratch %u kernarg %u\n", co->target, entries[e], kd[0], kd[1], kd[2]);
                    CHECK(kd[1] == 0, "%s uses %u bytes of scratch", entries[e], kd[1]);
                    CHECK(kd[0] <= 65536, "%s uses %u bytes of LDS", entries[e], kd[0]);
                    CHECK(kd[2] >= args, "%s takes %u bytes of arguments, its struct is %zu", entries[e], kd[2], args);
                    kds++;
                }
            }
        }
    }
    for (int e = 0; e < count; e++) CHECK(found[e] == 3, "%s: symbol %s, descriptor %s", entries[e], found[e] & 1 ? "ok" : "missing",
                                      found[e] & 2 ? "ok" : "missing");
    CHECK(kds == count, "%d kernel descriptors read, expected %d", kds, count);
}

int main(void)
{
    const struct { const char *family; const pa_hip_code_object *objs; int n; const char *const *names; int count; size_t args; } fam[] = {
        {"hip-cdna", pa_cdna_code_objects, pa_cdna_code_object_count, cdna_names, PA_CDNA_ENTRY_COUNT, sizeof(pa_fwd_args)},
        {"hip-cdna decode", pa_cdnadec_code_objects, pa_cdnadec_code_object_count, cdnadec_names, PA_CDNA_DEC_ENTRY_COUNT,
         sizeof(pa_fwd_args)},
        {"hip-rdna3", pa_rdna3_code_objects, pa_rdna3_code_object_count, rdna3_names, PA_RDNA3_ENTRY_COUNT, sizeof(pa_fwd_args)},
        {"hip-generic", pa_hipgen_code_objects, pa_hipgen_code_object_count, hipgen_names, PA_HIPGEN_ENTRY_COUNT,
         sizeof(pa_fwd_args)},
    };
    for (size_t f = 0; f < sizeof fam / sizeof fam[0]; f++) {
        printf("%s: %d embedded code object(s)\n", fam[f].family, fam[f].n);
        if (fam[f].count > MAX_ENTRIES) return printf("FAIL: raise MAX_ENTRIES\n"), 1;
        for (int i = 0; i < fam[f].n; i++) {
            printf("%s: %zu bytes\n", fam[f].objs[i].target, fam[f].objs[i].size);
            check_object(&fam[f].objs[i], fam[f].names, fam[f].count, fam[f].args);
        }
    }
    if (pa_cdna_code_object_count < 1) printf("FAIL: no hip-cdna code object\n"), fails++;
    if (pa_cdnadec_code_object_count != pa_cdna_code_object_count)
        printf("FAIL: %d hip-cdna decode code objects for %d prefill ones\n", pa_cdnadec_code_object_count,
               pa_cdna_code_object_count), fails++;
    if (pa_hipgen_code_object_count != pa_cdna_code_object_count + pa_rdna3_code_object_count)
        printf("FAIL: %d hip-generic code objects for %d hip-cdna and %d hip-rdna3 ones\n", pa_hipgen_code_object_count,
               pa_cdna_code_object_count, pa_rdna3_code_object_count), fails++;
    printf("%s\n", fails ? "FAIL" : "PASS");
    return fails ? 1 : 0;
}
