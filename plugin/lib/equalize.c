// SPDX-License-Identifier: MIT
/*
 * equalize.c: dh_equalize, section 6 of the public header. Checks the parameters, resolves the
 * window of every table (given, from the file, or a rank statistic of its histogram), builds the
 * tables and applies them, on the CPU twin or through the CUDA session of equalize_cuda.h; both
 * paths use the same integer histograms, the same windows and the same formulas, so they give
 * the same values. CLAHE (method DH_EQ_METHOD_CLAHE) resolves the same windows, then hands the
 * tiling to kernels/clahe_cpu.h or, on the GPU, clahe_device.c. The writers of its result are
 * derived_dicom.c and png_preview.c.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clahe_cpu.h"
#include "context.h"
#include "equalize_check.h"
#include "equalize_cpu.h"
#include "equalize_skimage.h"
#include "modality.h"
#include "volume.h"
#ifdef DH_HAVE_CUDA
#include "equalize_cuda.h"
#include "hist_cuda.h"
#endif
#ifdef DH_HAVE_CLAHE_CUDA
#include "clahe_device.h"
#endif

void dh_equalize_params_init(dh_equalize_params *params)
{
    if (!params)
        return;
    memset(params, 0, sizeof *params);
    params->struct_size = sizeof *params;
    params->operation = DH_EQ_EQUALIZE;
    params->window = DH_WINDOW_NONE;
    params->voi = DH_VOI_LINEAR;
    params->device = DH_DEVICE_AUTO;
}

void dh_equalize_params_skimage(dh_equalize_params *p, uint32_t kernel_size, double clip_limit,
                                uint32_t nbins)
{
    if (!p)
        return;
    p->operation = DH_EQ_EQUALIZE;
    p->method = DH_EQ_METHOD_CLAHE_SKIMAGE;
    p->window = DH_WINDOW_MINMAX;
    p->bins = nbins ? nbins : 256;
    memset(p->tiles, 0, sizeof p->tiles);
    p->tile_size[0] = p->tile_size[1] = kernel_size;
    p->tile_size[2] = p->per_slice ? 0 : kernel_size;
    p->clip_limit = clip_limit;
    p->output_bits = 16;
}

void dh_equalized_free(dh_equalized *r)
{
    if (!r)
        return;
    free(r->data);
    free(r->tables);
    free(r->window_lo);
    free(r->window_hi);
    free(r->center);
    free(r->width);
    free(r);
}

static const char *voi_name(dh_voi_function f)
{
    return f == DH_VOI_LINEAR ? "LINEAR" : f == DH_VOI_LINEAR_EXACT ? "LINEAR_EXACT" : "SIGMOID";
}

static int is_clahe(const dh_equalize_params *p)
{
    return p->method == DH_EQ_METHOD_CLAHE;
}

/* MINMAX and PERCENTILE windows come from the ranks of each table's histogram. */
static int window_from_ranks(const dh_equalize_params *p)
{
    return p->window == DH_WINDOW_MINMAX || p->window == DH_WINDOW_PERCENTILE;
}

static dh_status check_params(dh_ctx *ctx, const dh_volume *v, const dh_equalize_params *p)
{
    const uint32_t n[3] = {v->format.columns, v->format.rows, v->slices};
    dh_status st;
    if ((st = dh_eq_check_fields(ctx, p)) != DH_OK ||
        (st = dh_eq_check_clahe_extent(ctx, p, n, v->path)) != DH_OK ||
        (st = dh_eq_check_window(ctx, p)) != DH_OK)
        return st;
    if (p->window == DH_WINDOW_FILE && !v->voi_lut_count) { /* a VOI LUT is the file's window */
        if (!v->has_window)
            return dh_ctx_fail(ctx, DH_ERR_UNSUPPORTED,
                               "%s: the file has no VOI LUT Sequence and no WindowCenter/Width",
                               v->path);
        if (!(v->window_width >= 1))
            return dh_ctx_fail(ctx, DH_ERR_UNSUPPORTED, "%s: the file's WindowWidth %g is below 1",
                               v->path, v->window_width);
    }
    int needs_stored_window = p->operation == DH_EQ_EQUALIZE &&
                              (p->window == DH_WINDOW_CENTER_WIDTH ||
                               p->window == DH_WINDOW_RANGE || p->window == DH_WINDOW_FILE);
    if (needs_stored_window && v->has_modality_lut && dh_modality_order(v) != 1)
        return dh_ctx_fail(ctx, DH_ERR_UNSUPPORTED,
                           "%s: a modality window needs a non-decreasing Modality LUT", v->path);
    if (needs_stored_window && !v->has_modality_lut && !(v->format.rescale_slope > 0))
        return dh_ctx_fail(ctx, DH_ERR_UNSUPPORTED,
                           "%s: a modality window needs a positive RescaleSlope, not %g", v->path,
                           v->format.rescale_slope);
    /* Equalization works in stored order: a window from ranks is one there only when the
     * modality values follow the stored values one way or the other. */
    if (p->operation == DH_EQ_EQUALIZE && window_from_ranks(p) && dh_modality_order(v) == 0)
        return dh_ctx_fail(ctx, DH_ERR_UNSUPPORTED,
                           "%s: a min-max or percentile window for equalization needs a "
                           "monotone Modality LUT",
                           v->path);
    return DH_OK;
}

/* A center/width window as the closed interval of LINEAR's edges. */
static void center_width_to_range(double c, double w, double *lo, double *hi)
{
    *lo = c - 0.5 - (w - 1) / 2;
    *hi = c - 0.5 + (w - 1) / 2;
}

/* A closed range as the VOI window of a function (see the header's section 6). */
static void range_to_center_width(double lo, double hi, dh_voi_function f, double *c, double *w)
{
    if (f == DH_VOI_LINEAR) {
        *c = (lo + hi + 1) / 2;
        *w = hi - lo + 1;
    } else {
        *c = (lo + hi) / 2;
        *w = hi - lo > 1 ? hi - lo : 1;
    }
}

static double volume_modality(const void *v, int32_t s)
{
    return dh_modality_of(v, s);
}

/* The stored values whose modality value lies in [lo, hi], for a rescale of positive slope or
 * a non-decreasing Modality LUT (check_params ensures one or the other). */
static int window_to_stored(const dh_volume *v, double lo, double hi, int32_t base, uint32_t len,
                            dh_eq_window *w)
{
    if (!v->has_modality_lut)
        return dh_window_to_stored(lo, hi, v->format.rescale_slope, v->format.rescale_intercept,
                                   base, len, w);
    return dh_window_to_stored_by(lo, hi, volume_modality, v, base, len, w);
}

/* Rank window of a Modality LUT that folds back: the pixels ordered by modality value rather
 * than by stored value, k = floor(N * p / 100) cut at each end as dh_window_percentile does. */
typedef struct ranked {
    double m;
    uint32_t i;
} ranked;

static int compare_ranked(const void *pa, const void *pb)
{
    const ranked *a = pa, *b = pb;
    return (a->m > b->m) - (a->m < b->m);
}

static int window_by_modality_rank(const dh_volume *v, const uint64_t *h, uint32_t len,
                                   int32_t base, double p, double *lo, double *hi)
{
    ranked *order = malloc(len * sizeof *order);
    if (!order)
        return -1;
    uint64_t n = 0;
    uint32_t used = 0;
    for (uint32_t i = 0; i < len; i++) {
        n += h[i];
        if (h[i])
            order[used++] = (ranked){dh_modality_of(v, base + (int32_t)i), i};
    }
    qsort(order, used, sizeof *order, compare_ranked);
    uint64_t k = (uint64_t)floor((double)n * p / 100.0);
    if (n > 0 && k > (n - 1) / 2)
        k = (n - 1) / 2;
    uint64_t cdf = 0;
    int have_lo = 0, rc = -1;
    for (uint32_t j = 0; j < used; j++) {
        cdf += h[order[j].i];
        if (!have_lo && cdf > k) {
            *lo = order[j].m;
            have_lo = 1;
        }
        if (cdf > n - 1 - k) {
            *hi = order[j].m;
            rc = 0;
            break;
        }
    }
    free(order);
    return rc;
}

/* The work of one call, shared by the CPU and GPU paths. */
typedef struct eq_job {
    const dh_volume *v;
    const dh_equalize_params *p;
    dh_equalized *r;
    int32_t base;
    uint32_t len, levels, tables;
    size_t slice_len;
    uint64_t *hist;          /* tables * (len + 2), or NULL when no window needs it */
    dh_eq_window *windows;   /* tables, stored values (equalization) */
    dh_clahe_shape clahe;    /* CLAHE's tiling (method DH_EQ_METHOD_CLAHE) */
} eq_job;

/* Window/level through the file's own VOI LUT rather than a VOI function. */
static int uses_voi_lut(const eq_job *j)
{
    return j->p->window == DH_WINDOW_FILE && j->v->voi_lut_count > 0;
}

/* Resolves the window of table t into r's per-table fields and job->windows. */
static dh_status resolve_window(dh_ctx *ctx, eq_job *j, uint32_t t)
{
    const dh_volume *v = j->v;
    const dh_equalize_params *p = j->p;
    dh_equalized *r = j->r;
    double lo = NAN, hi = NAN;
    dh_eq_window w = {j->base, j->base + (int32_t)j->len - 1};
    if (window_from_ranks(p)) {
        const uint64_t *h = j->hist + (size_t)t * (j->len + 2);
        double pct = p->window == DH_WINDOW_PERCENTILE ? p->percentile : 0;
        if (dh_window_percentile(h, j->len, j->base, pct, &w) != 0)
            return dh_ctx_fail(ctx, DH_ERR_INTERNAL, "%s: slice %u has no pixels", v->path, t);
        /* Monotone modality values keep the stored ranks (reversed ones mirror them, and the
         * cut is symmetric); a folding LUT needs its own order (window/level only). */
        lo = dh_modality_of(v, w.lo);
        hi = dh_modality_of(v, w.hi);
        if (dh_modality_order(v) == 0 &&
            window_by_modality_rank(v, h, j->len, j->base, pct, &lo, &hi) != 0)
            return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "%s: out of memory", v->path);
        if (lo > hi) { /* negative slope or decreasing LUT */
            double tmp = lo;
            lo = hi;
            hi = tmp;
        }
    } else if (p->window == DH_WINDOW_CENTER_WIDTH) {
        center_width_to_range(p->center, p->width, &lo, &hi);
    } else if (p->window == DH_WINDOW_FILE && v->voi_lut_count) {
        /* A VOI LUT's window is its input range: outside it the table is constant. */
        lo = v->voi_lut_first;
        hi = (double)v->voi_lut_first + v->voi_lut_entries - 1;
    } else if (p->window == DH_WINDOW_FILE) {
        center_width_to_range(v->window_center, v->window_width, &lo, &hi);
    } else if (p->window == DH_WINDOW_RANGE) {
        lo = p->lo;
        hi = p->hi;
    }
    r->window_lo[t] = lo;
    r->window_hi[t] = hi;
    if (p->operation == DH_EQ_WINDOW_LEVEL) {
        if (p->window == DH_WINDOW_CENTER_WIDTH) {
            r->center[t] = p->center;
            r->width[t] = p->width;
        } else if (p->window == DH_WINDOW_FILE && v->voi_lut_count) {
            r->center[t] = r->width[t] = NAN; /* a table, not a center and width */
        } else if (p->window == DH_WINDOW_FILE) {
            r->center[t] = v->window_center;
            r->width[t] = v->window_width;
        } else {
            range_to_center_width(lo, hi, p->voi, &r->center[t], &r->width[t]);
        }
        return DH_OK;
    }
    r->center[t] = r->width[t] = NAN;
    if (!window_from_ranks(p) && p->window != DH_WINDOW_NONE &&
        window_to_stored(v, lo, hi, j->base, j->len, &w) != 0)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "%s: window [%g, %g] cannot be mapped",
                           v->path, lo, hi);
    j->windows[t] = w;
    return DH_OK;
}

/* Which of the file's windows was used: the first VOI LUT, else the first center and width,
 * with its number among several and its explanation. */
static void describe_file_window(const dh_volume *v, char *out, size_t len)
{
    char which[128] = "", named[80] = "";
    const uint32_t count = v->voi_lut_count ? v->voi_lut_count : v->window_count;
    const char *explanation = v->voi_lut_count ? v->voi_lut_explanation : v->window_explanation;
    if (*explanation)
        snprintf(named, sizeof named, " '%.64s'", explanation);
    if (count > 1)
        snprintf(which, sizeof which, " 1 of %u%s", count, named);
    else
        snprintf(which, sizeof which, "%s", named);
    if (v->voi_lut_count)
        snprintf(out, len, "file VOI LUT%s, %u entries of %u bits from %d", which,
                 v->voi_lut_entries, v->voi_lut_bits, v->voi_lut_first);
    else
        snprintf(out, len, "file window%s, center %g width %g", which, v->window_center,
                 v->window_width);
}

static void describe(eq_job *j)
{
    const dh_equalize_params *p = j->p;
    dh_equalized *r = j->r;
    char window[200] = "";
    switch (p->window) {
    case DH_WINDOW_NONE: snprintf(window, sizeof window, "full range"); break;
    case DH_WINDOW_CENTER_WIDTH:
        snprintf(window, sizeof window, "window center %g width %g", p->center, p->width);
        break;
    case DH_WINDOW_RANGE: snprintf(window, sizeof window, "window %g to %g", p->lo, p->hi); break;
    case DH_WINDOW_FILE:
        describe_file_window(j->v, window, sizeof window);
        break;
    case DH_WINDOW_MINMAX: snprintf(window, sizeof window, "min-max window"); break;
    default:
        snprintf(window, sizeof window, "percentile window %g%% cut at each end", p->percentile);
        break;
    }
    if (j->tables == 1 && p->window != DH_WINDOW_NONE && p->window != DH_WINDOW_CENTER_WIDTH &&
        p->window != DH_WINDOW_RANGE) {
        size_t n = strlen(window);
        snprintf(window + n, sizeof window - n, " (%g to %g)", r->window_lo[0],
                 r->window_hi[0]);
    }
    char clip[48] = "";
    if (p->clip_limit > 0)
        snprintf(clip, sizeof clip, ", clip limit %g", p->clip_limit);
    if (is_clahe(p)) {
        char tiles[64], bins[32] = "one bin per value";
        if (j->clahe.volume)
            snprintf(tiles, sizeof tiles, "%ux%ux%u tiles per volume", j->clahe.tx, j->clahe.ty,
                     j->clahe.tz);
        else
            snprintf(tiles, sizeof tiles, "%ux%u tiles per slice", j->clahe.tx, j->clahe.ty);
        if (p->bins)
            snprintf(bins, sizeof bins, "%u bins", p->bins);
        snprintf(r->description, sizeof r->description,
                 "dicomhist %s adaptive histogram equalization (CLAHE), %s, %s, %s%s, %u-bit "
                 "output",
                 DH_VERSION_STRING, tiles, bins, window, clip, r->output_bits);
    } else if (p->operation == DH_EQ_EQUALIZE)
        snprintf(r->description, sizeof r->description,
                 "dicomhist %s histogram equalization, per %s, %s%s, %u-bit output",
                 DH_VERSION_STRING, p->per_slice ? "slice" : "volume", window, clip,
                 r->output_bits);
    else
        snprintf(r->description, sizeof r->description,
                 "dicomhist %s window/level %s, per %s, %s, %u-bit output", DH_VERSION_STRING,
                 uses_voi_lut(j) ? "by the VOI LUT" : voi_name(p->voi),
                 p->per_slice ? "slice" : "volume", window, r->output_bits);
}

/* The tables, one per histogram: equalization on the CPU (the GPU builds its own from its
 * histograms), window/level on either path. */
static dh_status table_failed(dh_ctx *ctx, eq_job *j, uint32_t t)
{
    return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                       "%s: cannot build the table (center %g, width %g)", j->v->path,
                       j->r->center[t], j->r->width[t]);
}

static dh_status build_eq_tables_cpu(dh_ctx *ctx, eq_job *j)
{
    for (uint32_t t = 0; t < j->tables; t++)
        if (dh_eq_lut_build(j->hist + (size_t)t * (j->len + 2), j->base, j->len, j->windows[t],
                            j->levels, j->p->clip_limit, j->r->tables + (size_t)t * j->len) != 0)
            return table_failed(ctx, j, t);
    return DH_OK;
}

/* The file's VOI LUT as the window/level table: modality value x takes entry
 * clamp(floor(x) - first, 0, entries - 1), scaled from 0 .. 2^bits - 1 to 0 .. levels - 1 by
 * floor(entry * (levels - 1) / (2^bits - 1)) (the entry itself when the bits agree). */
static void build_voi_lut_table(const eq_job *j, uint16_t *table)
{
    const dh_volume *v = j->v;
    const uint64_t top = ((uint64_t)1 << v->voi_lut_bits) - 1;
    for (uint32_t i = 0; i < j->len; i++) {
        double x = floor(dh_modality_of(v, j->base + (int32_t)i));
        double k = x - v->voi_lut_first;
        size_t at = k < 0 ? 0 : k > v->voi_lut_entries - 1 ? v->voi_lut_entries - 1 : (size_t)k;
        table[i] = (uint16_t)((uint64_t)v->voi_lut[at] * (j->levels - 1) / top);
    }
}

static dh_status build_voi_tables(dh_ctx *ctx, eq_job *j)
{
    const dh_volume *v = j->v;
    dh_equalized *r = j->r;
    for (uint32_t t = 0; t < j->tables; t++) {
        if (uses_voi_lut(j)) {
            build_voi_lut_table(j, r->tables + (size_t)t * j->len);
            continue;
        }
        uint16_t *table = r->tables + (size_t)t * j->len;
        /* With a Modality LUT the first entry is built (which checks the window) and the
         * others follow from each stored value's LUT output, on the host for both devices. */
        if (dh_voi_lut_build(j->base, v->has_modality_lut ? 1 : j->len, v->format.rescale_slope,
                             v->format.rescale_intercept, r->center[t], r->width[t],
                             (dh_eq_voi)j->p->voi, j->levels, table) != 0)
            return table_failed(ctx, j, t);
        if (v->has_modality_lut)
            for (uint32_t i = 0; i < j->len; i++)
                table[i] = dh_voi_value(dh_modality_of(v, j->base + (int32_t)i), r->center[t],
                                        r->width[t], (dh_eq_voi)j->p->voi, j->levels);
    }
    return DH_OK;
}

static dh_status run_cpu(dh_ctx *ctx, eq_job *j)
{
    const dh_volume *v = j->v;
    dh_equalized *r = j->r;
    dh_status st = j->p->operation == DH_EQ_EQUALIZE ? build_eq_tables_cpu(ctx, j)
                                                     : build_voi_tables(ctx, j);
    if (st != DH_OK)
        return st;
    if (dh_lut_apply_cpu(v->data, v->format.is_signed, j->slice_len, v->slices, r->tables,
                         j->tables > 1, j->base, j->len, ctx->threads, r->data) != 0)
        return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "cannot start the worker threads");
    r->device_used = DH_DEVICE_CPU;
    return DH_OK;
}

static int needs_histograms(const dh_equalize_params *p)
{
    return p->operation == DH_EQ_EQUALIZE || window_from_ranks(p);
}

/* CLAHE over the resolved windows: the CPU twin, or the GPU where it is to be used. */
static dh_status run_clahe(dh_ctx *ctx, eq_job *j, int use_cuda)
{
    const dh_volume *v = j->v;
    const dh_equalize_params *p = j->p;
    dh_equalized *r = j->r;
    if (use_cuda) {
#ifdef DH_HAVE_CLAHE_CUDA
        char msg[512];
        if (dh_clahe_device(v->data, v->format.is_signed, j->base, j->len, &j->clahe, j->windows,
                            p->bins, j->levels, p->clip_limit, r->data, msg, sizeof msg) != 0)
            return dh_ctx_fail(ctx, DH_ERR_CUDA, "%s: %s", v->path, msg);
        r->device_used = DH_DEVICE_CUDA;
        return DH_OK;
#else
        if (p->device == DH_DEVICE_CUDA)
            return dh_ctx_fail(ctx, DH_ERR_NO_DEVICE,
                               "%s: this build has no CLAHE on the GPU", v->path);
#endif
    }
    if (dh_clahe_cpu(v->data, v->format.is_signed, j->base, j->len, &j->clahe, j->windows,
                     p->bins, j->levels, p->clip_limit, ctx->threads, r->data) != 0)
        return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY,
                           "%s: out of memory for the CLAHE tables or threads", v->path);
    r->device_used = DH_DEVICE_CPU;
    return DH_OK;
}

#ifdef DH_HAVE_CUDA
static dh_status run_cuda(dh_ctx *ctx, eq_job *j)
{
    const dh_volume *v = j->v;
    dh_equalized *r = j->r;
    char msg[512];
    dh_eq_cuda *s = NULL;
    dh_status st = DH_OK;
    int per_slice = j->tables > 1;
    /* The context's stream and staging: workers with a context each share the GPU unserialized. */
    int begun = v->data ? dh_eq_cuda_begin_pooled(dh_ctx_eq_cuda(ctx), v->data,
                                                  v->format.is_signed, j->slice_len, v->slices,
                                                  per_slice, j->base, j->len, &s, msg, sizeof msg)
                        : dh_eq_cuda_begin_pooled_device(dh_ctx_eq_cuda(ctx), v->device_samples,
                                                         v->device_stream, v->format.is_signed,
                                                         j->slice_len, v->slices, per_slice,
                                                         j->base, j->len, &s, msg, sizeof msg);
    if (begun != 0)
        return dh_ctx_fail(ctx, DH_ERR_CUDA, "%s: %s", v->path, msg);
    int ranks = window_from_ranks(j->p);
    if (ranks && dh_eq_cuda_histograms(s, j->hist, msg, sizeof msg) != 0) {
        st = dh_ctx_fail(ctx, DH_ERR_CUDA, "%s: %s", v->path, msg);
        goto done;
    }
    for (uint32_t t = 0; t < j->tables; t++)
        if ((st = resolve_window(ctx, j, t)) != DH_OK)
            goto done;
    if (j->p->operation == DH_EQ_EQUALIZE) {
        if (dh_eq_cuda_equalize(s, j->windows, j->levels, j->p->clip_limit, msg, sizeof msg) !=
            0) {
            st = dh_ctx_fail(ctx, DH_ERR_CUDA, "%s: %s", v->path, msg);
            goto done;
        }
    } else {
        if ((st = build_voi_tables(ctx, j)) != DH_OK)
            goto done;
        if (dh_eq_cuda_set_tables(s, r->tables, msg, sizeof msg) != 0) {
            st = dh_ctx_fail(ctx, DH_ERR_CUDA, "%s: %s", v->path, msg);
            goto done;
        }
    }
    if (dh_eq_cuda_finish(s, r->data, r->tables, msg, sizeof msg) != 0) {
        st = dh_ctx_fail(ctx, DH_ERR_CUDA, "%s: %s", v->path, msg);
        goto done;
    }
    r->device_used = DH_DEVICE_CUDA;
done:
    dh_eq_cuda_free(s);
    return st;
}
#endif

dh_status dh_equalize(dh_ctx *ctx, const dh_volume *v, const dh_equalize_params *params,
                      dh_equalized **out)
{
    if (!ctx || !v || !out)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "dh_equalize: NULL argument");
    *out = NULL;
    dh_equalize_params defaults;
    if (!params) {
        dh_equalize_params_init(&defaults);
        params = &defaults;
    }
    /* A dh_device_volume's: its samples are on the GPU, where its equalization runs as on the
     * uploaded samples of its download (the same kernels), CLAHE and the CPU aside. */
    if (!v->data && !(v->device_samples && params->device == DH_DEVICE_CUDA &&
                      params->method == DH_EQ_METHOD_GLOBAL))
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "dh_equalize: %s has its samples on the GPU: --device cuda and global "
                           "equalization compute there, else dh_device_volume_download first "
                           "(or dh_equalize_device)", v->path);
    if (params->method == DH_EQ_METHOD_CLAHE_SKIMAGE)
        return dh_eq_skimage(ctx, v, params, out);
    dh_status st = check_params(ctx, v, params);
    if (st != DH_OK)
        return st;
    int use_cuda;
    if ((st = dh_ctx_use_cuda(ctx, params->device, "equalize", &use_cuda)) != DH_OK)
        return st;

    eq_job j = {0};
    j.v = v;
    j.p = params;
    if (dh_eq_table_range(v->format.bits_stored, v->format.is_signed, &j.base, &j.len) != 0)
        return dh_ctx_fail(ctx, DH_ERR_UNSUPPORTED, "%s: BitsStored %u", v->path,
                           v->format.bits_stored);
    uint32_t bits = params->output_bits ? params->output_bits : v->format.bits_stored;
    j.levels = bits >= 16 ? 65536u : 1u << bits;
    j.tables = params->per_slice ? v->slices : 1;
    j.slice_len = (size_t)v->format.rows * v->format.columns;
    size_t n = j.slice_len * v->slices;

    dh_equalized *r = calloc(1, sizeof *r);
    if (!r)
        return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "out of memory");
    j.r = r;
    r->rows = v->format.rows;
    r->columns = v->format.columns;
    r->slices = v->slices;
    r->output_bits = bits;
    r->table_count = j.tables;
    r->table_base = j.base;
    r->table_len = is_clahe(params) ? 0 : j.len; /* CLAHE's tables are per tile, not kept */
    r->data = malloc(n * sizeof *r->data);
    if (!is_clahe(params))
        r->tables = malloc((size_t)j.tables * j.len * sizeof *r->tables);
    r->window_lo = malloc(j.tables * sizeof(double));
    r->window_hi = malloc(j.tables * sizeof(double));
    r->center = malloc(j.tables * sizeof(double));
    r->width = malloc(j.tables * sizeof(double));
    j.windows = malloc(j.tables * sizeof *j.windows);
    /* The GPU builds equalization tables from its own histograms; it needs them here only to
     * find a window from ranks. */
    int want_hist = use_cuda || is_clahe(params) ? window_from_ranks(params)
                                                 : needs_histograms(params);
    if (want_hist)
        j.hist = malloc((size_t)j.tables * (j.len + 2) * sizeof *j.hist);
    if (!r->data || (!r->tables && !is_clahe(params)) || !r->window_lo || !r->window_hi || !r->center || !r->width ||
        !j.windows || (want_hist && !j.hist)) {
        st = dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "%s: out of memory for %zu samples", v->path, n);
        goto fail;
    }

    if (is_clahe(params)) {
        j.clahe = (dh_clahe_shape){v->format.columns, v->format.rows, v->slices, 0, 0, 1,
                                   !params->per_slice};
        j.clahe.tx = dh_eq_clahe_tiles_along(j.clahe.nx, params->tiles[0], params->tile_size[0]);
        j.clahe.ty = dh_eq_clahe_tiles_along(j.clahe.ny, params->tiles[1], params->tile_size[1]);
        if (j.clahe.volume)
            j.clahe.tz = dh_eq_clahe_tiles_along(j.clahe.nz, params->tiles[2], params->tile_size[2]);
    }
    if (use_cuda && !is_clahe(params)) {
#ifdef DH_HAVE_CUDA
        st = run_cuda(ctx, &j);
#endif
    } else {
        if (want_hist) {
            dh_bin_map map;
            dh_eq_bin_map_init(&map, j.base, j.len);
            if (dh_hist_cpu(v->data, v->format.is_signed, j.slice_len, v->slices, j.tables > 1,
                            &map, ctx->threads, j.hist) != 0) {
                st = dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "cannot compute the histograms");
                goto fail;
            }
        }
        for (uint32_t t = 0; t < j.tables && st == DH_OK; t++)
            st = resolve_window(ctx, &j, t);
        if (st == DH_OK)
            st = is_clahe(params) ? run_clahe(ctx, &j, use_cuda) : run_cpu(ctx, &j);
    }
    if (st != DH_OK)
        goto fail;
    describe(&j);
    free(j.hist);
    free(j.windows);
    *out = r;
    dh_ctx_clear(ctx);
    return DH_OK;
fail:
    free(j.hist);
    free(j.windows);
    dh_equalized_free(r);
    return st;
}
