// SPDX-License-Identifier: MIT
/*
 * parzen_autograd_cpu.c: the CPU twin of parzen_autograd.h (the reference the CUDA twin equals).
 */
#include "parzen_autograd.h"

void dh_parzen_signed_scores_cpu(const dh_mi_values *records, uint32_t count, int column,
                                 double sign, double *values)
{
    for (uint32_t i = 0; i < count; i++)
        values[i] = sign * (column ? records[i].nmi : records[i].mi);
}

void dh_parzen_scale_gradient_cpu(const float *gradient, size_t pixels, uint32_t count,
                                  const double *factors, size_t factor_stride, double sign,
                                  float *out)
{
    for (uint32_t b = 0; b < count; b++) {
        const float f = (float)(sign * factors[(size_t)b * factor_stride]);
        const float *g = gradient + (size_t)b * pixels;
        float *o = out + (size_t)b * pixels;
        for (size_t k = 0; k < pixels; k++)
            o[k] = g[k] * f;
    }
}
