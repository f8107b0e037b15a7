// SPDX-License-Identifier: MIT
/*
 * mi_parzen_cuda.h: the CUDA twin of kernels/mi_parzen.h, only with DH_HAVE_CUDA. Same
 * definition and the same bits as dh_parzen_mi_cpu (scores and float32 gradient) on device
 * pointers and a stream (void*, a cudaStream_t): the joint histograms of all batch items as
 * uint64 sums of the quantized weights (exact in any order, so atomics keep the bits), the
 * entropies and the log-ratio table per item in one launch, the gradient of every pixel from its
 * own cells in one pass. Scratch comes from a workspace the caller keeps across calls (an
 * optimizer loop allocates once and may capture the calls in a CUDA graph).
 * Every function returns 0, or -1 with a message (CUDA's own text included) in msg.
 */
#ifndef DH_KERNELS_MI_PARZEN_CUDA_H
#define DH_KERNELS_MI_PARZEN_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "mi_parzen.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Device scratch for dh_parzen_mi_cuda: grows on demand, freed by the _free function. */
typedef struct dh_parzen_cuda_workspace dh_parzen_cuda_workspace;

dh_parzen_cuda_workspace *dh_parzen_cuda_workspace_new(void);
void dh_parzen_cuda_workspace_free(dh_parzen_cuda_workspace *ws);

/* dh_parzen_mi_cpu's contract with device pointers: fixed->data, fixed->mask, moving->data,
 * moving->mask (dh_parzen_image's pointers) and d_out (count records) and d_gradient (count *
 * pixels float32, or NULL) all in device memory; params in host memory. Enqueued on `stream`;
 * results are ready when the stream is. Returns DH_PARZEN_OK, DH_PARZEN_ERR_ARGUMENT (as the CPU
 * twin), DH_PARZEN_ERR_NO_MEMORY, or -3 (DH_PARZEN_ERR_CUDA) with msg set. */
#define DH_PARZEN_ERR_CUDA (-3)
int dh_parzen_mi_cuda(dh_parzen_cuda_workspace *ws, const dh_parzen_params *params,
                      size_t pixels, const dh_parzen_image *fixed, const dh_parzen_image *moving,
                      uint32_t count, dh_mi_values *d_out, float *d_gradient, void *stream,
                      char *msg, size_t msg_len);

#ifdef __cplusplus
}
#endif
#endif /* DH_KERNELS_MI_PARZEN_CUDA_H */
