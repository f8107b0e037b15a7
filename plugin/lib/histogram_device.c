// SPDX-License-Identifier: MIT
/*
 * histogram_device.c: histograms of samples that already live on the GPU
 * (dh_hist_compute_device), on the context's GPU resources (context_cuda.c). In builds without
 * CUDA the entry point answers DH_ERR_NO_DEVICE.
 */
#include "context.h"

#include <stdlib.h>

#include "hist.h"
#ifdef DH_HAVE_CUDA
#include "hist_cuda.h"
#endif

/* The map for stored units: the defaults of section 4, or an integer range. */
static dh_status device_map(dh_ctx *ctx, int is_signed, uint32_t bits_stored,
                            const dh_hist_params *p, dh_bin_map *map)
{
    if (!p || p->struct_size != sizeof(dh_hist_params))
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "device histogram: parameters missing or not initialized with "
                           "dh_hist_params_init");
    if (bits_stored < 1 || bits_stored > 16)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "device histogram: bits_stored must be 1..16, not %u", bits_stored);
    if (p->bins > DH_HIST_MAX_BINS)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "device histogram: bins must be 1..65536 (0 for the default), not %u",
                           p->bins);
    if (p->units != DH_UNITS_STORED)
        return dh_ctx_fail(ctx, DH_ERR_UNSUPPORTED,
                           "device histogram: only stored units are supported for device "
                           "samples (no rescale is known here)");
    const int64_t span = (int64_t)1 << bits_stored;
    int64_t lo = is_signed ? -span / 2 : 0, hi = lo + span;
    if (p->has_range) {
        if (!(p->lo < p->hi))
            return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                               "device histogram: range [%g, %g) is empty or not finite", p->lo,
                               p->hi);
        if (p->lo != (double)(int64_t)p->lo || p->hi != (double)(int64_t)p->hi ||
            p->lo < INT32_MIN || p->hi > INT32_MAX)
            return dh_ctx_fail(ctx, DH_ERR_UNSUPPORTED,
                               "device histogram: range ends must be integers within int32 in "
                               "stored units, not [%g, %g)",
                               p->lo, p->hi);
        lo = (int64_t)p->lo;
        hi = (int64_t)p->hi;
    }
    const uint32_t bins = p->bins ? p->bins : (uint32_t)span;
    if (dh_bin_map_init_affine(map, bins, lo, hi) != 0)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "device histogram: %u bins over [%lld, %lld) is not a valid map", bins,
                           (long long)lo, (long long)hi);
    return DH_OK;
}

dh_status dh_hist_compute_device(dh_ctx *ctx, const void *d_samples, int is_signed,
                                 uint32_t bits_stored, size_t slice_len, size_t slices,
                                 const dh_hist_params *params, uint64_t *d_counts,
                                 void *cuda_stream)
{
    dh_bin_map map;
    dh_status st = device_map(ctx, is_signed, bits_stored, params, &map);
    if (st != DH_OK)
        return st;
    if (!d_counts || (slice_len && slices && !d_samples))
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "device histogram: samples or counts pointer is NULL");
#ifdef DH_HAVE_CUDA
    if (!dh_cuda_usable())
        return dh_ctx_fail(ctx, DH_ERR_NO_DEVICE,
                           "device histogram: no usable CUDA device is present");
    char msg[512] = "";
    int rc;
    if (params->per_slice)
        rc = dh_hist_cuda_device_with_total(d_samples, is_signed ? 1 : 0, slice_len, slices,
                                            &map, d_counts, d_counts + map.bins + 2, cuda_stream,
                                            msg, sizeof msg);
    else
        rc = dh_hist_cuda_device(d_samples, is_signed ? 1 : 0, slice_len, slices, 0, &map,
                                 d_counts, cuda_stream, msg, sizeof msg);
    if (rc != 0)
        return dh_ctx_fail(ctx, DH_ERR_CUDA, "device histogram of %zu x %zu samples: %s", slices,
                           slice_len, msg);
    dh_ctx_clear(ctx);
    return DH_OK;
#else
    (void)cuda_stream;
    return dh_ctx_fail(ctx, DH_ERR_NO_DEVICE,
                       "device histogram: this build of dicomhist has no CUDA support");
#endif
}
