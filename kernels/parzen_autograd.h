// SPDX-License-Identifier: MIT
/*
 * parzen_autograd.h: the two element-wise steps an autograd host (dicomhist.torch.MattesMI)
 * wraps around a Parzen MI evaluation, so that neither costs it a framework operation per call:
 *   - signed scores: values[i] = sign * (column 0 ? records[i].mi : records[i].nmi), float64
 *     (the forward's output, e.g. -MI for a loss, from the records the twins write);
 *   - the gradient scaled per item: out[b * pixels + k] = gradient[b * pixels + k] *
 *     (float)(sign * factors[b * factor_stride]), float32 (the backward: the kept d score / d
 *     moving times the incoming gradient of item b; factor_stride 0 for one factor shared by
 *     every item, e.g. an expanded or 0-d incoming gradient).
 * Both are exact in the sense that they round as PyTorch's own operations on the same tensors do:
 * one float64 product rounded to float32, then one float32 product (never fused). The CPU twin
 * and the CUDA twin (parzen_autograd_cuda.cu) give the same bits.
 */
#ifndef DH_KERNELS_PARZEN_AUTOGRAD_H
#define DH_KERNELS_PARZEN_AUTOGRAD_H

#include <stddef.h>
#include <stdint.h>

#include "mi_scores.h"

#ifdef __cplusplus
extern "C" {
#endif

void dh_parzen_signed_scores_cpu(const dh_mi_values *records, uint32_t count, int column,
                                 double sign, double *values);
void dh_parzen_scale_gradient_cpu(const float *gradient, size_t pixels, uint32_t count,
                                  const double *factors, size_t factor_stride, double sign,
                                  float *out);

/* The CUDA twins, enqueued on `stream` (a cudaStream_t) with one launch each, nothing
 * synchronized or allocated (so a CUDA graph can capture them). 0, or -1 with msg set when the
 * launch fails. count == 0 or pixels == 0 enqueues nothing. */
int dh_parzen_signed_scores_cuda(const dh_mi_values *d_records, uint32_t count, int column,
                                 double sign, double *d_values, void *stream, char *msg,
                                 size_t msg_len);
int dh_parzen_scale_gradient_cuda(const float *d_gradient, size_t pixels, uint32_t count,
                                  const double *d_factors, size_t factor_stride, double sign,
                                  float *d_out, void *stream, char *msg, size_t msg_len);

#ifdef __cplusplus
}
#endif

#endif /* DH_KERNELS_PARZEN_AUTOGRAD_H */
