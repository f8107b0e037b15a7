// SPDX-License-Identifier: MIT
/*
 * clahe_cuda.h: the CUDA twin of kernels/clahe_cpu.h, only with DH_HAVE_CUDA. Same arguments and
 * the same output bits as dh_clahe_cpu, on device pointers and a stream (void*, a cudaStream_t):
 * all tile histograms in one launch through the large-bin machinery of hist_cuda.h (never a block
 * per tile with global counters), all tile tables in a few launches (dh_eq_lut_build's formula,
 * each table spread over several blocks), the interpolated mapping of every pixel in one pass. The raw launcher does not
 * synchronize; its scratch (histograms, tables) comes from a workspace the caller keeps across
 * calls, so a loop over slices or volumes allocates once.
 * Every function returns 0, or -1 with a message (CUDA's own text included) in msg.
 */
#ifndef DH_KERNELS_CLAHE_CUDA_H
#define DH_KERNELS_CLAHE_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "clahe_cpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Device scratch for dh_clahe_cuda: grows on demand, freed by dh_clahe_cuda_workspace_free. */
typedef struct dh_clahe_cuda_workspace dh_clahe_cuda_workspace;

dh_clahe_cuda_workspace *dh_clahe_cuda_workspace_new(void);
void dh_clahe_cuda_workspace_free(dh_clahe_cuda_workspace *ws);

/* CLAHE on the GPU: d_data (uint16_t or int16_t by is_signed) and d_out in device memory,
 * nx * ny * nz samples each; windows in host memory (one per slice with shape->volume 0, else
 * one), the other arguments as dh_clahe_cpu's. Enqueued on `stream`; d_out is ready when the
 * stream is. Returns 0, or -1 on bad arguments (as dh_clahe_cpu) or a CUDA error. */
int dh_clahe_cuda(dh_clahe_cuda_workspace *ws, const void *d_data, int is_signed, int32_t base,
                  uint32_t len, const dh_clahe_shape *shape, const dh_eq_window *windows,
                  uint32_t bins, uint32_t levels, double clip_limit, uint16_t *d_out,
                  void *stream, char *msg, size_t msg_len);

#ifdef __cplusplus
}
#endif
#endif /* DH_KERNELS_CLAHE_CUDA_H */
