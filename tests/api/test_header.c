/* portattn.h compiles as strict C11 (this file) and C++ (test_header_cxx.cpp) with no CUDA/HIP
 * header, and the version macros agree with the library that is loaded. */
#include "portattn.h"

#include <stdio.h>

int header_cxx_version(void);

int main(void)
{
    int ok = portattn_version() == PORTATTN_VERSION && header_cxx_version() == PORTATTN_VERSION;
    printf("header version %d.%d.%d, library %d: %s\n", PORTATTN_VERSION_MAJOR, PORTATTN_VERSION_MINOR,
           PORTATTN_VERSION_PATCH, portattn_version(), ok ? "match" : "MISMATCH");
    printf("%d passed, %d failed\n", ok, !ok);
    return ok ? 0 : 1;
}
