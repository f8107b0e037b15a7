// SPDX-License-Identifier: MIT
/*
 * parzen_mi_cuda.c: the library's side of the Parzen MI CUDA twin (kernels/mi_parzen_cuda.h),
 * built only with DH_WITH_CUDA: the workspace an optimizer loop keeps, and the call on device
 * pointers. The score records are the kernels' dh_mi_values, which mi.c checks have
 * dh_mi_scores's layout.
 */
#include "parzen_mi_internal.h"

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
