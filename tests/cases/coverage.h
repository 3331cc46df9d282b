/* Each backend's pinned coverage of the case table: which (case, dtype) runs it must decline. A
 * backend that starts declining more, or fewer, fails test_cases, with the cases named. */
#ifndef PORTATTN_TEST_COVERAGE_H
#define PORTATTN_TEST_COVERAGE_H

#include "portattn.h"

/* 1 if `backend` is expected to decline case `name` in `dtype` (its backward when `backward`); -1
 * when the backend has no list. */
int coverage_expects_decline(portattn_backend_t backend, const char *name, portattn_dtype_t dtype, int backward);

#endif
