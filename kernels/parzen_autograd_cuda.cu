// SPDX-License-Identifier: MIT
/*
 * parzen_autograd_cuda.cu: the CUDA twin of parzen_autograd.h. One launch each on the caller's
 * stream; the gradient kernel is a grid-stride loop over count x pixels floats (a read and a
 * write of each: bandwidth-bound, as PyTorch's multiply it replaces), the item's factor rounded
 * to float32 once per element as the CPU twin does once per item (the same value).
 */
#include <cuda_runtime.h>

#include "cuda_check.h"
#include "parzen_autograd.h"

#define DH_CUDA_PREFIX "dh_parzen_autograd_cuda: "

namespace {

constexpr unsigned PA_THREADS = 256;
constexpr unsigned PA_MAX_BLOCKS = 4096; /* enough to fill any GPU; the loop covers the rest */

__global__ void pa_scores_kernel(const dh_mi_values *rec, uint32_t count, int column,
                                 double sign, double *values)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count)
        values[i] = __dmul_rn(sign, column ? rec[i].nmi : rec[i].mi);
}

__global__ void pa_scale_kernel(const float *gradient, size_t pixels, size_t total,
                                const double *factors, size_t factor_stride, double sign,
                                float *out)
{
    for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < total;
         k += (size_t)gridDim.x * blockDim.x) {
        const float f = (float)__dmul_rn(sign, factors[(k / pixels) * factor_stride]);
        out[k] = __fmul_rn(gradient[k], f);
    }
}

} // namespace

extern "C" int dh_parzen_signed_scores_cuda(const dh_mi_values *d_records, uint32_t count,
                                            int column, double sign, double *d_values,
                                            void *stream, char *msg, size_t msg_len)
{
    if (count == 0)
        return 0;
    pa_scores_kernel<<<(count + PA_THREADS - 1) / PA_THREADS, PA_THREADS, 0,
                       (cudaStream_t)stream>>>(d_records, count, column, sign, d_values);
    DH_CUDA_CK(cudaGetLastError(), "the signed scores kernel's launch");
    return 0;
}

extern "C" int dh_parzen_scale_gradient_cuda(const float *d_gradient, size_t pixels,
                                             uint32_t count, const double *d_factors,
                                             size_t factor_stride, double sign, float *d_out,
                                             void *stream, char *msg, size_t msg_len)
{
    const size_t total = pixels * count;
    if (total == 0)
        return 0;
    size_t blocks = (total + PA_THREADS - 1) / PA_THREADS;
    if (blocks > PA_MAX_BLOCKS)
        blocks = PA_MAX_BLOCKS;
    pa_scale_kernel<<<(unsigned)blocks, PA_THREADS, 0, (cudaStream_t)stream>>>(
        d_gradient, pixels, total, d_factors, factor_stride, sign, d_out);
    DH_CUDA_CK(cudaGetLastError(), "the gradient scaling kernel's launch");
    return 0;
}
