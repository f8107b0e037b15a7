// SPDX-License-Identifier: MIT
/*
 * equalize_skimage.c: the scikit-image-compatible mode of dh_equalize and
 * dh_equalize_skimage_float (dicomhist.h section 6): the volume's stored values handed to
 * kernels/clahe_skimage.h as the NumPy array a scikit-image user would have had, slices on the
 * context's threads, or one image's tiles and rows on them, and the result described like
 * every equalization. It runs on the CPU whatever the device setting: its blend is float32
 * accumulated in scikit-image's order, which the GPU CLAHE (integer, clahe.h) does not compute.
 */
#include "equalize_skimage.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "clahe_skimage.h"
#include "context.h"
#include "equalize_check.h"
#include "modality.h"
#include "parallel.h"
#include "volume.h"

/* The dtype pydicom's pixel_array has for these stored values. */
static dh_skimage_dtype dtype_of(const dh_volume *v)
{
    if (v->format.bits_allocated == 8)
        return v->format.is_signed ? DH_SKIMAGE_INT8 : DH_SKIMAGE_UINT8;
    return v->format.is_signed ? DH_SKIMAGE_INT16 : DH_SKIMAGE_UINT16;
}

static dh_clahe_skimage_job job_of(const dh_volume *v, const dh_equalize_params *p)
{
    dh_clahe_skimage_job job = {v->format.columns, v->format.rows, v->slices, !p->per_slice,
                                {p->tile_size[0], p->tile_size[1], p->tile_size[2]},
                                p->clip_limit, p->bins ? p->bins : 256, dtype_of(v),
                                dh_parallel_for, 1};
    return job;
}

/* One slice per iteration in slice mode: slices are independent images there. */
typedef struct slice_work {
    const dh_volume *v;
    dh_clahe_skimage_job job; /* one slice */
    uint32_t levels;
    uint16_t *out;
    double *out_float;
    int failed;
} slice_work;

static void run_slice(void *arg, size_t z)
{
    slice_work *w = arg;
    const size_t n = (size_t)w->job.nx * w->job.ny;
    if (dh_clahe_skimage_cpu((const uint16_t *)w->v->data + z * n, &w->job, w->levels,
                             w->out ? w->out + z * n : NULL,
                             w->out_float ? w->out_float + z * n : NULL) != 0)
        w->failed = 1; /* only ever set to 1, so threads racing on it agree */
}

/* The most the tables of one image may take: a tiny kernel over a large image asks for one
 * table per few pixels (kernel 1 on a 512x512 slice with 65536 bins: 32 GiB). */
#define SKIMAGE_MAX_BYTES (4ull << 30)

static dh_status run(dh_ctx *ctx, const dh_volume *v, const dh_equalize_params *p,
                     uint32_t levels, uint16_t *out, double *out_float)
{
    dh_clahe_skimage_job job = job_of(v, p);
    dh_clahe_skimage_job one = job;
    one.nz = job.volume ? job.nz : 1;
    const uint64_t bytes = dh_clahe_skimage_bytes(&one);
    if (bytes > SKIMAGE_MAX_BYTES)
        return dh_ctx_fail(ctx, DH_ERR_UNSUPPORTED,
                           "%s: scikit-image's CLAHE with these kernel sizes and %u bins needs "
                           "%.1f GiB of tables per image, above the 4 GiB this mode allows: "
                           "give a larger kernel or fewer bins",
                           v->path, job.nbins, (double)bytes / (1u << 30));
    int failed;
    if (job.volume || v->slices == 1) { /* one image: its tiles and rows on the threads */
        job.threads = ctx->threads;
        failed = dh_clahe_skimage_cpu(v->data, &job, levels, out, out_float) != 0;
    } else { /* slices on the threads, each on one */
        slice_work w = {v, job, levels, out, out_float, 0};
        w.job.nz = 1;
        dh_parallel_for(ctx->threads, v->slices, run_slice, &w);
        failed = w.failed;
    }
    if (failed)
        return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY,
                           "%s: out of memory for scikit-image's CLAHE tables (%u bins per tile)",
                           v->path, job.nbins);
    return DH_OK;
}

static dh_status check(dh_ctx *ctx, const dh_volume *v, const dh_equalize_params *p)
{
    if (p->method != DH_EQ_METHOD_CLAHE_SKIMAGE)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "%s: the scikit-image result needs method DH_EQ_METHOD_CLAHE_SKIMAGE",
                           v->path);
    return dh_eq_check_fields(ctx, p);
}

/* The windows as scikit-image's rescale sees them: each image's stored min..max, in modality
 * units. */
static void fill_windows(const dh_volume *v, dh_equalized *r)
{
    const size_t n = (size_t)v->format.rows * v->format.columns * v->slices / r->table_count;
    for (uint32_t t = 0; t < r->table_count; t++) {
        int32_t lo = INT32_MAX, hi = INT32_MIN;
        for (size_t i = t * n; i < (t + 1) * n; i++) {
            int32_t s = v->format.is_signed ? ((const int16_t *)v->data)[i]
                                            : ((const uint16_t *)v->data)[i];
            lo = s < lo ? s : lo;
            hi = s > hi ? s : hi;
        }
        double a = dh_modality_of(v, lo), b = dh_modality_of(v, hi);
        r->window_lo[t] = a < b ? a : b;
        r->window_hi[t] = a < b ? b : a;
        r->center[t] = r->width[t] = NAN;
    }
}

static void describe(const dh_volume *v, const dh_equalize_params *p, dh_equalized *r)
{
    char kernel[64];
    uint32_t kx = dh_clahe_skimage_kernel(v->format.columns, p->tile_size[0]);
    uint32_t ky = dh_clahe_skimage_kernel(v->format.rows, p->tile_size[1]);
    if (p->per_slice)
        snprintf(kernel, sizeof kernel, "kernel_size %ux%u per slice", ky, kx);
    else
        snprintf(kernel, sizeof kernel, "kernel_size %ux%ux%u per volume",
                 dh_clahe_skimage_kernel(v->slices, p->tile_size[2]), ky, kx);
    snprintf(r->description, sizeof r->description,
             "dicomhist %s CLAHE as scikit-image equalize_adapthist, %s, clip_limit %g, nbins "
             "%u, %u-bit output",
             DH_VERSION_STRING, kernel, p->clip_limit, p->bins ? p->bins : 256, r->output_bits);
}

/* What dh_eq_skimage allocated (no tables), freed here rather than through dh_equalized_free:
 * equalize.c calls this file, so this file calls nothing of it. */
static void free_result(dh_equalized *r)
{
    free(r->data);
    free(r->window_lo);
    free(r->window_hi);
    free(r->center);
    free(r->width);
    free(r);
}

dh_status dh_eq_skimage(dh_ctx *ctx, const dh_volume *v, const dh_equalize_params *p,
                        dh_equalized **out)
{
    dh_status st = check(ctx, v, p);
    if (st != DH_OK)
        return st;
    const uint32_t bits = p->output_bits ? p->output_bits : v->format.bits_stored;
    const uint32_t tables = p->per_slice ? v->slices : 1;
    const size_t n = (size_t)v->format.rows * v->format.columns * v->slices;
    dh_equalized *r = calloc(1, sizeof *r);
    if (!r)
        return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "out of memory");
    *r = (dh_equalized){.rows = v->format.rows, .columns = v->format.columns,
                        .slices = v->slices, .output_bits = bits, .table_count = tables,
                        .device_used = DH_DEVICE_CPU};
    r->data = malloc(n * sizeof *r->data);
    r->window_lo = malloc(tables * sizeof(double));
    r->window_hi = malloc(tables * sizeof(double));
    r->center = malloc(tables * sizeof(double));
    r->width = malloc(tables * sizeof(double));
    if (!r->data || !r->window_lo || !r->window_hi || !r->center || !r->width) {
        free_result(r);
        return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "%s: out of memory for %zu samples", v->path,
                           n);
    }
    if ((st = run(ctx, v, p, bits >= 16 ? 65536u : 1u << bits, r->data, NULL)) != DH_OK) {
        free_result(r);
        return st;
    }
    fill_windows(v, r);
    describe(v, p, r);
    *out = r;
    dh_ctx_clear(ctx);
    return DH_OK;
}

dh_status dh_equalize_skimage_float(dh_ctx *ctx, const dh_volume *v,
                                    const dh_equalize_params *p, double *out)
{
    if (!ctx || !v || !p || !out)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "dh_equalize_skimage_float: NULL argument");
    if (!v->data) /* a dh_device_volume's: its samples are on the GPU */
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "dh_equalize_skimage_float: %s has its samples on the GPU "
                           "(dh_device_volume_download)", v->path);
    dh_status st = check(ctx, v, p);
    if (st == DH_OK && (st = run(ctx, v, p, 2, NULL, out)) == DH_OK)
        dh_ctx_clear(ctx);
    return st;
}
