// SPDX-License-Identifier: MIT
/*
 * parzen_mi_cuda.c: the library's side of the Parzen MI CUDA twin (kernels/mi_parzen_cuda.h),
 * built only with DH_WITH_CUDA: the workspace an optimizer loop keeps, and the call on device
 * pointers. The score records are the kernels' dh_mi_values, which mi.c checks have
 * dh_mi_scores's layout; dh_parzen_mi_evaluate_device_signed keeps its own on the device.
 */
#include "parzen_mi_internal.h"

#include <cuda_runtime_api.h>
#include <stdio.h>

#include "mi_parzen_cuda.h"

struct dh_parzen_gpu *dh_parzen_gpu_new(void)
{
    return (struct dh_parzen_gpu *)dh_parzen_cuda_workspace_new();
}

void dh_parzen_gpu_free(struct dh_parzen_gpu *gpu)
{
    dh_parzen_cuda_workspace_free((dh_parzen_cuda_workspace *)gpu);
}

int dh_parzen_gpu_evaluate(struct dh_parzen_gpu *gpu, const dh_parzen_params *params,
                           size_t pixels, const dh_parzen_image *fixed,
                           const dh_parzen_image *moving, uint32_t count, dh_mi_scores *d_out,
                           float *d_gradient, void *stream, char *msg, size_t msg_len)
{
    return dh_parzen_mi_cuda((dh_parzen_cuda_workspace *)gpu, params, pixels, fixed, moving,
                             count, (dh_mi_values *)d_out, d_gradient, stream, msg, msg_len);
}

int dh_parzen_gpu_records_reserve(struct dh_parzen_mi *pm, uint32_t count)
{
    if (count <= pm->records_capacity)
        return DH_PARZEN_OK;
    dh_parzen_gpu_records_free(pm->d_records);
    pm->d_records = NULL;
    pm->records_capacity = 0;
    void *d = NULL;
    cudaError_t e = cudaMalloc(&d, (size_t)count * sizeof(dh_mi_scores));
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* not sticky: a later launch must not report it */
        snprintf(pm->msg, sizeof pm->msg, "cudaMalloc of %u score records: %s", count,
                 cudaGetErrorString(e));
        return e == cudaErrorMemoryAllocation ? DH_PARZEN_ERR_NO_MEMORY : DH_PARZEN_ERR_CUDA;
    }
    pm->d_records = d;
    pm->records_capacity = count;
    return DH_PARZEN_OK;
}

void dh_parzen_gpu_records_free(dh_mi_scores *d_records)
{
    if (d_records)
        cudaFree(d_records);
}
