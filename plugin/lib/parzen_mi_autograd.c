// SPDX-License-Identifier: MIT
/*
 * parzen_mi_autograd.c: the two device calls an autograd host makes around Parzen MI
 * (dicomhist.h section 5b, dh_parzen_mi_evaluate_device_signed and
 * dh_parzen_mi_scale_gradient_device): the evaluation writing signed scores instead of records,
 * and the backward's product, each as launches of our own on the caller's stream, so that the
 * host (dicomhist.torch) makes no framework operation per call beyond its outputs
 * (kernels/parzen_autograd.h). Builds without CUDA answer DH_ERR_NO_DEVICE.
 */
#include "parzen_mi_internal.h"

#include <math.h>
#include <stdint.h>

#include "context.h"
#ifdef DH_HAVE_CUDA
#include "parzen_autograd.h"
#endif

dh_status dh_parzen_mi_evaluate_device_signed(dh_ctx *ctx, dh_parzen_mi *parzen, size_t pixels,
                                              const void *d_fixed, int fixed_type,
                                              const uint8_t *d_fixed_mask, const void *d_moving,
                                              int moving_type, const uint8_t *d_moving_masks,
                                              uint32_t count, void *stream, double sign,
                                              double *d_values, float *d_gradient)
{
    if (!parzen || !d_values || !isfinite(sign))
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "parzen mi (signed): parzen and "
                           "d_values are required and sign must be finite (%g)", sign);
    if (count < 1)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "parzen mi: no moving image (count 0)");
#ifdef DH_HAVE_CUDA
    if (count > parzen->records_capacity) { /* the first call, or a larger batch */
        int use_cuda;
        dh_status st = dh_ctx_use_cuda(ctx, DH_DEVICE_CUDA, "parzen mi", &use_cuda);
        if (st != DH_OK)
            return st;
        int rc = dh_parzen_gpu_records_reserve(parzen, count);
        if (rc != DH_PARZEN_OK)
            return dh_ctx_fail(ctx, rc == DH_PARZEN_ERR_NO_MEMORY ? DH_ERR_NO_MEMORY : DH_ERR_CUDA,
                               "parzen mi: %s", parzen->msg);
    }
    dh_status st = dh_parzen_mi_evaluate_device(ctx, parzen, pixels, d_fixed, fixed_type,
                                                d_fixed_mask, d_moving, moving_type,
                                                d_moving_masks, count, stream, parzen->d_records,
                                                d_gradient);
    if (st != DH_OK)
        return st;
    if (dh_parzen_signed_scores_cuda((const dh_mi_values *)parzen->d_records, count,
                                     parzen->kernel.gradient_of == DH_PARZEN_GRAD_NMI, sign,
                                     d_values, stream, parzen->msg, sizeof parzen->msg) != 0)
        return dh_ctx_fail(ctx, DH_ERR_CUDA, "parzen mi: on the GPU: %s", parzen->msg);
    return DH_OK;
#else
    (void)pixels, (void)d_fixed, (void)fixed_type, (void)d_fixed_mask, (void)d_moving;
    (void)moving_type, (void)d_moving_masks, (void)count, (void)stream, (void)d_gradient;
    return dh_ctx_fail(ctx, DH_ERR_NO_DEVICE, "parzen mi: device pointers need CUDA; this build "
                       "of dicomhist has no CUDA support");
#endif
}

dh_status dh_parzen_mi_scale_gradient_device(dh_ctx *ctx, const float *d_gradient, size_t pixels,
                                             uint32_t count, const double *d_factors,
                                             size_t factor_stride, double sign, float *d_out,
                                             void *stream)
{
    if (pixels && count && (!d_gradient || !d_factors || !d_out))
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "parzen mi (scale gradient): "
                           "d_gradient, d_factors and d_out are required");
    if (!isfinite(sign))
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "parzen mi (scale gradient): sign %g is "
                           "not finite", sign);
    if (count && pixels > SIZE_MAX / count)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "parzen mi (scale gradient): %u images "
                           "of %zu pixels overflow", count, pixels);
#ifdef DH_HAVE_CUDA
    char msg[256];
    if (dh_parzen_scale_gradient_cuda(d_gradient, pixels, count, d_factors, factor_stride, sign,
                                      d_out, stream, msg, sizeof msg) != 0)
        return dh_ctx_fail(ctx, DH_ERR_CUDA, "parzen mi: on the GPU: %s", msg);
    dh_ctx_clear(ctx);
    return DH_OK;
#else
    (void)factor_stride, (void)stream;
    return dh_ctx_fail(ctx, DH_ERR_NO_DEVICE, "parzen mi: device pointers need CUDA; this build "
                       "of dicomhist has no CUDA support");
#endif
}
