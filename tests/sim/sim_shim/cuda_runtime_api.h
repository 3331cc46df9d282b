/* The simulations' <cuda_runtime_api.h> (cuda_host.h's include): the shim's runtime names. */
#pragma once
#include "cuda_runtime.h"
