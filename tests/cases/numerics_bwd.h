/* The backward's NaN/inf contract (numerics_bwd.c), run by test_numerics after the forward's. */
#ifndef PORTATTN_TEST_NUMERICS_BWD_H
#define PORTATTN_TEST_NUMERICS_BWD_H

#include <stdint.h>
#include "portattn.h"

/* Runs every backward scenario on `be` (nothing where it has no backward pass); returns the
 * failures and sets *checks to the scenarios run. */
int numerics_bwd(portattn_backend_t be, uint64_t *rng, int *checks);

#endif
