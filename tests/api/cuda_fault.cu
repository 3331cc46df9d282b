// A kernel that traps, for test_cuda_errors: it leaves the CUDA context in the sticky error state
// that a real fault (an illegal address inside a kernel, an ECC error, a lost device) leaves.
#include <cuda_runtime.h>

__global__ void pa_test_trap_kernel(void) { __trap(); }

extern "C" int pa_test_trap(char *name, int len)
{
    pa_test_trap_kernel<<<1, 1>>>();
    cudaError_t e = cudaDeviceSynchronize();
    if (name && len > 0) {
        const char *s = cudaGetErrorName(e);
        int i = 0;
        for (; s[i] && i < len - 1; i++) name[i] = s[i];
        name[i] = 0;
    }
    return (int)e;
}
