/* Prints the version the header declares and the one the linked library reports, for version_agree.cmake,
 * and fails when the library is not the version of the header it was built with. */
#include <portattn.h>
#include <stdio.h>

int main(void)
{
    int runtime = portattn_version();
    int composite = PORTATTN_VERSION_MAJOR * 10000 + PORTATTN_VERSION_MINOR * 100 + PORTATTN_VERSION_PATCH;
    printf("header %d.%d.%d runtime %d.%d.%d\n", PORTATTN_VERSION_MAJOR, PORTATTN_VERSION_MINOR,
           PORTATTN_VERSION_PATCH, runtime / 10000, runtime / 100 % 100, runtime % 100);
    if (PORTATTN_VERSION != composite || runtime != PORTATTN_VERSION) {
        fprintf(stderr, "PORTATTN_VERSION %d, from its parts %d, library %d: they differ\n", PORTATTN_VERSION,
                composite, runtime);
        return 1;
    }
    return 0;
}
