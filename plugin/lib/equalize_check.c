// SPDX-License-Identifier: MIT
/*
 * equalize_check.c: the parameter checks equalize.c and equalize_device.c share
 * (equalize_check.h).
 */
#include "equalize_check.h"

#include <math.h>

#include "clahe_cpu.h"
#include "context.h"

/* The scikit-image mode's fields: only what equalize_adapthist has a parameter for. */
static dh_status check_skimage(dh_ctx *ctx, const dh_equalize_params *p)
{
    if (p->operation != DH_EQ_EQUALIZE)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "the scikit-image mode is a method of "
                                                         "equalization, not of window/level");
    if (p->window != DH_WINDOW_NONE && p->window != DH_WINDOW_MINMAX)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "the scikit-image mode rescales each image's min..max: its window is "
                           "min-max (or none), not source %d",
                           (int)p->window);
    if (p->tiles[0] || p->tiles[1] || p->tiles[2])
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "the scikit-image mode takes kernel sizes (tile_size), not tile counts");
    if (p->bins > 65536)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "scikit-image's nbins must be 1..65536 (0: 256), not %u", p->bins);
    if (p->per_slice && p->tile_size[2])
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "a kernel across slices needs per-volume mode");
    return DH_OK;
}

dh_status dh_eq_check_fields(dh_ctx *ctx, const dh_equalize_params *p)
{
    if (p->struct_size != sizeof *p)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "dh_equalize_params.struct_size is %u, expected %zu",
                           p->struct_size, sizeof *p);
    if (p->operation != DH_EQ_EQUALIZE && p->operation != DH_EQ_WINDOW_LEVEL)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "unknown operation %d",
                           (int)p->operation);
    if (p->voi != DH_VOI_LINEAR && p->voi != DH_VOI_LINEAR_EXACT && p->voi != DH_VOI_SIGMOID)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "unknown VOI function %d", (int)p->voi);
    if (p->output_bits != 0 && p->output_bits != 8 && p->output_bits != 12 &&
        p->output_bits != 16)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "output bits must be 8, 12 or 16, not %u",
                           p->output_bits);
    if (!(p->clip_limit >= 0) || isinf(p->clip_limit))
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "clip limit must be a finite number >= 0, not %g", p->clip_limit);
    if (p->operation == DH_EQ_WINDOW_LEVEL && p->clip_limit > 0)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "a clip limit needs equalization");
    if (p->device != DH_DEVICE_AUTO && p->device != DH_DEVICE_CPU && p->device != DH_DEVICE_CUDA)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "unknown device %d", (int)p->device);
    if (p->method != DH_EQ_METHOD_GLOBAL && p->method != DH_EQ_METHOD_CLAHE &&
        p->method != DH_EQ_METHOD_CLAHE_SKIMAGE)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "unknown equalization method %d",
                           (int)p->method);
    if (p->method == DH_EQ_METHOD_CLAHE_SKIMAGE)
        return check_skimage(ctx, p);
    if (p->method != DH_EQ_METHOD_CLAHE)
        return DH_OK;
    if (p->operation != DH_EQ_EQUALIZE)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "CLAHE is a method of equalization, "
                                                         "not of window/level");
    if (p->bins > 65536)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "CLAHE bins must be 1..65536 (0: one per value), not %u", p->bins);
    if (p->per_slice && (p->tiles[2] > 1 || p->tile_size[2]))
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "CLAHE tiles across slices need per-volume mode");
    return DH_OK;
}

dh_status dh_eq_check_clahe_extent(dh_ctx *ctx, const dh_equalize_params *p, const uint32_t n[3],
                                   const char *what)
{
    if (p->method != DH_EQ_METHOD_CLAHE)
        return DH_OK;
    static const char *const axis[3] = {"columns", "rows", "slices"};
    for (int a = 0; a < 3; a++)
        if (p->tiles[a] > n[a])
            return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                               "%s: %u CLAHE tiles along the %s, which number only %u", what,
                               p->tiles[a], axis[a], n[a]);
    if (n[0] > 65535 || n[1] > 65535 || n[2] > 65535)
        return dh_ctx_fail(ctx, DH_ERR_UNSUPPORTED,
                           "%s: CLAHE takes at most 65535 columns, rows and slices", what);
    return DH_OK;
}

dh_status dh_eq_check_window(dh_ctx *ctx, const dh_equalize_params *p)
{
    switch (p->window) {
    case DH_WINDOW_NONE:
        if (p->operation == DH_EQ_WINDOW_LEVEL)
            return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "window/level needs a window");
        return DH_OK;
    case DH_WINDOW_CENTER_WIDTH:
        if (!isfinite(p->center) || !isfinite(p->width) || p->width < 1)
            return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                               "window center must be finite and width >= 1 (%g, %g)",
                               p->center, p->width);
        return DH_OK;
    case DH_WINDOW_RANGE:
        if (!isfinite(p->lo) || !isfinite(p->hi) || p->lo > p->hi)
            return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                               "window range needs finite lo <= hi (%g, %g)", p->lo, p->hi);
        return DH_OK;
    case DH_WINDOW_FILE:
    case DH_WINDOW_MINMAX:
        return DH_OK;
    case DH_WINDOW_PERCENTILE:
        if (!(p->percentile >= 0 && p->percentile < 50))
            return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                               "percentile must be in [0, 50), not %g", p->percentile);
        return DH_OK;
    default:
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "unknown window source %d",
                           (int)p->window);
    }
}

uint32_t dh_eq_clahe_tiles_along(uint32_t n, uint32_t tiles, uint32_t size)
{
    if (tiles)
        return tiles;
    if (size)
        return dh_clahe_tiles_for_size(n, size);
    return n < 8 ? n : 8;
}
