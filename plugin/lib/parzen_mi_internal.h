// SPDX-License-Identifier: MIT
/*
 * parzen_mi_internal.h: what a dh_parzen_mi holds, and the bridge to the CUDA twin that
 * parzen_mi_cuda.c (built only with DH_WITH_CUDA) gives parzen_mi.c.
 */
#ifndef DH_PLUGIN_PARZEN_MI_INTERNAL_H
#define DH_PLUGIN_PARZEN_MI_INTERNAL_H

#include <stddef.h>

#include "dicomhist.h"
#include "mi_parzen.h"

struct dh_parzen_mi {
    dh_parzen_params kernel;       /* the checked parameters as the twins take them */
    struct dh_parzen_gpu *gpu;     /* device scratch, made on the first device call */
    char msg[512];                 /* the GPU layer's message, copied into the context */
    dh_mi_scores *d_records;       /* dh_parzen_mi_evaluate_device_signed's records (device) */
    uint32_t records_capacity;     /* how many d_records holds */
};

#ifdef DH_HAVE_CUDA
/* The device scratch of one dh_parzen_mi (opaque; kernels/mi_parzen_cuda.h's workspace). */
struct dh_parzen_gpu;
struct dh_parzen_gpu *dh_parzen_gpu_new(void);
void dh_parzen_gpu_free(struct dh_parzen_gpu *gpu);
/* dh_parzen_mi_cuda on device pointers; returns a DH_PARZEN_* code, with msg set on a CUDA
 * failure. */
int dh_parzen_gpu_evaluate(struct dh_parzen_gpu *gpu, const dh_parzen_params *params,
                           size_t pixels, const dh_parzen_image *fixed,
                           const dh_parzen_image *moving, uint32_t count, dh_mi_scores *d_out,
                           float *d_gradient, void *stream, char *msg, size_t msg_len);
/* pm->d_records grown to hold `count` records (cudaFree of the smaller one first: it waits for
 * the device); 0, or a DH_PARZEN_* code with pm->msg set. */
int dh_parzen_gpu_records_reserve(struct dh_parzen_mi *pm, uint32_t count);
void dh_parzen_gpu_records_free(dh_mi_scores *d_records);
#endif

#endif /* DH_PLUGIN_PARZEN_MI_INTERNAL_H */
