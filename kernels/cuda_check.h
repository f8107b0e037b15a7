// SPDX-License-Identifier: MIT
/*
 * cuda_check.h: how the CUDA host code (hist_cuda.cu, mi_cuda.cu, equalize_cuda.cu) reports a
 * failed runtime call. The message names what failed and CUDA's error; CUDA's last error is
 * cleared (when it is not sticky), so that a later cudaGetLastError() after some other launch,
 * in this engine or another, does not report the same failure again as its own.
 */
#ifndef DH_CUDA_CHECK_H
#define DH_CUDA_CHECK_H

#include <cuda_runtime.h>
#include <stdio.h>

/* Writes "<prefix><what> failed: <error> (<error name>)" into msg and returns -1. */
static inline int dh_cuda_fail(char *msg, size_t msg_len, const char *prefix, const char *what,
                               cudaError_t err)
{
    (void)cudaGetLastError();
    if (msg && msg_len)
        snprintf(msg, msg_len, "%s%s failed: %s (%s)", prefix, what, cudaGetErrorString(err),
                 cudaGetErrorName(err));
    return -1;
}

/* Returns dh_cuda_fail's -1 from the enclosing function, which has `char *msg, size_t msg_len`
 * parameters, when `call` fails; the file defines DH_CUDA_PREFIX. */
#define DH_CUDA_CK(call, what)                                                                     \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            return dh_cuda_fail(msg, msg_len, DH_CUDA_PREFIX, what, e_);                           \
    } while (0)

/* Lets `kernel` (a __global__ function's address) launch with up to `smem` bytes of dynamic
 * shared memory beyond the default 48 KB: cudaErrorInvalidValue where the device cannot give
 * that much. The attribute is the function's, shared by every thread of the process, so it is
 * always set to one value, the most the device allows the kernel, never to a launch's own size:
 * two threads launching the kernel with different sizes would otherwise lower it under each
 * other, and the larger launch fail with cudaErrorLaunchOutOfResources (session 23: a batch's
 * 15-bit and 16-bit signed tables, one series in 24 runs). */
static inline cudaError_t dh_cuda_allow_smem(const void *kernel, size_t smem)
{
    if (smem <= 48 * 1024)
        return cudaSuccess;
    int device = 0, optin = 0;
    struct cudaFuncAttributes fa;
    cudaError_t e = cudaGetDevice(&device);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    if (e == cudaSuccess)
        e = cudaFuncGetAttributes(&fa, kernel);
    if (e != cudaSuccess)
        return e;
    const int most = optin - (int)fa.sharedSizeBytes;
    if (smem > (size_t)most)
        return cudaErrorInvalidValue;
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, most);
}

#endif /* DH_CUDA_CHECK_H */
