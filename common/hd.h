/* PA_HD: an inline function for the host and for CUDA/HIP device code alike, so that one definition
 * serves the kernels, their CPU simulations and the host tests. */
#ifndef PORTATTN_HD_H
#define PORTATTN_HD_H

#if defined(__CUDACC__) || defined(__HIPCC__)
#define PA_HD __host__ __device__ __forceinline__
#else
#define PA_HD static inline
#endif

#endif
