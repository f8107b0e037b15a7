// SPDX-License-Identifier: MIT
/*
 * clahe_skimage_cpu.c: scikit-image's equalize_adapthist on the CPU (clahe_skimage.h), one image
 * (a slice, or the volume) at a time. Each step names the line of skimage/exposure/_adapthist.py
 * it reproduces; the padded image is never built: a padded coordinate is reflected back into
 * the image (numpy.pad's 'reflect', periodic with period 2 (n - 1), edge for n == 1).
 */
#include "clahe_skimage.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { NR_OF_GRAY = 1 << 14 };

uint32_t dh_clahe_skimage_kernel(uint32_t n, uint32_t k)
{
    if (k)
        return k;
    return n / 8 > 1 ? n / 8 : 1;
}

uint64_t dh_clahe_skimage_bytes(const dh_clahe_skimage_job *job)
{
    const uint32_t n[3] = {job->nx, job->ny, job->volume ? job->nz : 1};
    uint64_t tiles = 1, samples = 1, axes = 0;
    for (int a = 0; a < 3; a++) {
        uint64_t k = a < (job->volume ? 3 : 2) ? dh_clahe_skimage_kernel(n[a], job->kernel[a]) : 1;
        tiles *= (n[a] + k - 1) / k;
        samples *= n[a];
        axes += (uint64_t)n[a] * 24 + ((n[a] + k - 1) / k) * k * 4;
    }
    return samples * 2 + tiles * job->nbins * 2 + (uint64_t)job->nbins * 8 + axes + 2 * 65536;
}

/* img_as_uint of one sample of the given dtype (skimage.util.dtype._convert and _scale). */
static uint32_t as_uint16(const void *data, size_t i, dh_skimage_dtype dtype)
{
    if (dtype == DH_SKIMAGE_INT8 || dtype == DH_SKIMAGE_INT16) {
        int32_t v = ((const int16_t *)data)[i];
        if (v <= 0)
            return 0; /* floor-divided, then np.maximum(image, 0) */
        /* _scale(a, n, 16) for n = 7 or 15: times (2^o - 1) // (2^n - 1), o = 21 or 30, then
         * floor-divided by 2^(o - 16). */
        return dtype == DH_SKIMAGE_INT8 ? (uint32_t)(v * 16513) >> 5
                                        : (uint32_t)(v * 32769) >> 14;
    }
    uint32_t v = ((const uint16_t *)data)[i];
    return dtype == DH_SKIMAGE_UINT8 ? v * 257u : v;
}

/* numpy.pad(..., mode='reflect') as an index: padded position p (relative to the image's
 * first sample, so negative before it) to the sample it copies. */
static uint32_t reflect(int64_t p, uint32_t n)
{
    if (n == 1)
        return 0;
    int64_t period = 2 * (int64_t)(n - 1);
    int64_t i = p % period;
    if (i < 0)
        i += period;
    return (uint32_t)(i > (int64_t)n - 1 ? period - i : i);
}

/* clip_histogram: the same steps in the same order, on int64 counts, so every bin ends where
 * scikit-image's does (including its over-spend when a strided pass passes the excess). */
static void clip_histogram(int64_t *h, uint32_t nb, int64_t clim)
{
    int64_t n_excess = 0;
    for (uint32_t i = 0; i < nb; i++)
        if (h[i] > clim) {
            n_excess += h[i] - clim;
            h[i] = clim;
        }
    int64_t incr = n_excess / nb;
    int64_t upper = clim - incr;
    for (uint32_t i = 0; i < nb; i++)
        if (h[i] < upper) {
            h[i] += incr;
            n_excess -= incr;
        }
    for (uint32_t i = 0; i < nb; i++) /* the mid mask sees the bins just raised */
        if (h[i] >= upper && h[i] < clim) {
            n_excess += h[i] - clim;
            h[i] = clim;
        }
    int64_t under = 0;
    for (uint32_t i = 0; i < nb; i++)
        under += h[i] < clim;
    while (n_excess > 0) {
        int64_t prev = n_excess;
        /* With no bin under the limit no pass changes anything: scikit-image's loop runs to
         * its end and stops on prev == n_excess, as this break does at once. */
        for (uint32_t index = 0; index < nb && under > 0; index++) {
            int64_t step = under / n_excess;
            if (step < 1)
                step = 1;
            int64_t added = 0;
            for (int64_t j = index; j < nb; j += step)
                if (h[j] < clim) {
                    if (++h[j] == clim)
                        under--;
                    added++;
                }
            n_excess -= added;
            if (n_excess <= 0)
                break;
        }
        if (prev == n_excess)
            break;
    }
}

/* map_histogram(hist, 0, NR_OF_GRAY - 1, n_pixels): float64 cumsum times the scale, clipped,
 * truncated. */
static void map_histogram(const int64_t *h, uint32_t nb, int64_t n_pixels, uint16_t *map)
{
    const double scale = (double)(NR_OF_GRAY - 1) / (double)n_pixels;
    int64_t cum = 0;
    for (uint32_t i = 0; i < nb; i++) {
        cum += h[i];
        double o = (double)cum * scale;
        if (o > NR_OF_GRAY - 1)
            o = NR_OF_GRAY - 1;
        map[i] = (uint16_t)(int64_t)o;
    }
}

/* One axis of the blend: for each sample its two tiles (map_array's edge padding folded in)
 * and its two weights, arange(k) / k and 1 - that, as float64. */
typedef struct axis_blend {
    uint32_t *t0, *t1;
    double *w0, *w1;
} axis_blend;

static int axis_blend_init(axis_blend *a, uint32_t n, uint32_t k, uint32_t tiles)
{
    a->t0 = malloc(n * sizeof *a->t0);
    a->t1 = malloc(n * sizeof *a->t1);
    a->w0 = malloc(n * sizeof *a->w0);
    a->w1 = malloc(n * sizeof *a->w1);
    if (!a->t0 || !a->t1 || !a->w0 || !a->w1)
        return -1;
    for (uint32_t x = 0; x < n; x++) {
        uint64_t p = (uint64_t)x + k / 2; /* the padded position: half a kernel before */
        int64_t b = (int64_t)(p / k);
        double c = (double)(p % k) / (double)k;
        int64_t lo = b - 1 < 0 ? 0 : b - 1, hi = b > (int64_t)tiles - 1 ? tiles - 1 : b;
        if (lo > (int64_t)tiles - 1)
            lo = tiles - 1;
        a->t0[x] = (uint32_t)lo;
        a->t1[x] = (uint32_t)hi;
        a->w0[x] = 1 - c;
        a->w1[x] = c;
    }
    return 0;
}

static void axis_blend_free(axis_blend *a)
{
    free(a->t0);
    free(a->t1);
    free(a->w0);
    free(a->w1);
}

/* One image's state, shared by the loop bodies below (each iteration writes only its own
 * tile's table or its own row). */
typedef struct image_state {
    const dh_clahe_skimage_job *job;
    uint32_t n[3], k[3], tiles[3];
    int ndim;
    uint32_t levels;
    int64_t clim, kernel_elements;
    uint16_t *work, *maps, *row_min, *row_max;
    uint32_t *rx, *ry;
    axis_blend ax[3];
    uint32_t vmin, vmax;
    uint16_t *out;
    double *out_float;
    int failed;
} image_state;

/* Tile t's histogram over its reflected kernel box, clipped and mapped into its table. */
static void tile_body(void *arg, size_t t)
{
    image_state *s = arg;
    const uint32_t nb = s->job->nbins;
    const uint32_t tx = (uint32_t)(t % s->tiles[0]), ty = (uint32_t)(t / s->tiles[0] % s->tiles[1]),
                   tz = (uint32_t)(t / s->tiles[0] / s->tiles[1]);
    int64_t *hist = calloc(nb, sizeof *hist);
    if (!hist) {
        s->failed = 1; /* only ever set to 1: threads racing on it agree */
        return;
    }
    for (uint32_t dz = 0; dz < s->k[2]; dz++) {
        size_t z = reflect((int64_t)tz * s->k[2] + dz, s->n[2]);
        for (uint32_t dy = 0; dy < s->k[1]; dy++) {
            const uint16_t *row =
                s->work + (z * s->n[1] + s->ry[(size_t)ty * s->k[1] + dy]) * s->n[0];
            const uint32_t *cx = s->rx + (size_t)tx * s->k[0];
            for (uint32_t dx = 0; dx < s->k[0]; dx++)
                hist[row[cx[dx]]]++;
        }
    }
    clip_histogram(hist, nb, s->clim);
    map_histogram(hist, nb, s->kernel_elements, s->maps + t * nb);
    free(hist);
}

/* The blend of row r (slice r / ny, row r % ny), in place over its bins: edges in
 * numpy.ndindex order (slices slowest, columns fastest), weights (w_column * w_row) * w_slice in
 * float64, each product (table value * weight) rounded to float32 and accumulated in float32,
 * then truncated as result.astype(dtype) does. An edge whose weight is 0 adds +0.0f, which
 * changes nothing, and is skipped. */
static void blend_body(void *arg, size_t r)
{
    image_state *s = arg;
    const uint32_t nb = s->job->nbins, y = (uint32_t)(r % s->n[1]), z = (uint32_t)(r / s->n[1]);
    const axis_blend *ax = s->ax;
    uint16_t *row = s->work + r * s->n[0];
    uint32_t vmin = UINT32_MAX, vmax = 0;
    for (uint32_t x = 0; x < s->n[0]; x++) {
        const uint32_t bin = row[x];
        float acc = 0.0f;
        for (int ez = 0; ez < 2; ez++) {
            double wz = ez ? ax[2].w1[z] : ax[2].w0[z];
            if (wz == 0)
                continue;
            size_t tzi = ez ? ax[2].t1[z] : ax[2].t0[z];
            for (int ey = 0; ey < 2; ey++) {
                double wy = ey ? ax[1].w1[y] : ax[1].w0[y];
                if (wy == 0)
                    continue;
                size_t tyi = tzi * s->tiles[1] + (ey ? ax[1].t1[y] : ax[1].t0[y]);
                for (int ex = 0; ex < 2; ex++) {
                    double wx = ex ? ax[0].w1[x] : ax[0].w0[x];
                    if (wx == 0)
                        continue;
                    size_t t = tyi * s->tiles[0] + (ex ? ax[0].t1[x] : ax[0].t0[x]);
                    double w = wx * wy;
                    if (s->ndim == 3)
                        w *= wz;
                    acc += (float)((double)s->maps[t * nb + bin] * w);
                }
            }
        }
        uint32_t v = (uint32_t)acc;
        row[x] = (uint16_t)v;
        vmin = v < vmin ? v : vmin;
        vmax = v > vmax ? v : vmax;
    }
    s->row_min[r] = (uint16_t)vmin;
    s->row_max[r] = (uint16_t)vmax;
}

/* Row r of the final rescale_intensity to [0, 1] (a constant result is clipped to it
 * instead), then our levels. */
static void output_body(void *arg, size_t r)
{
    image_state *s = arg;
    for (size_t i = r * s->n[0]; i < (r + 1) * s->n[0]; i++) {
        uint32_t v = s->work[i];
        double f = s->vmin == s->vmax ? (v >= 1 ? 1.0 : 0.0)
                                      : (double)(v - s->vmin) / (double)(s->vmax - s->vmin);
        if (s->out_float)
            s->out_float[i] = f;
        if (s->out)
            s->out[i] = (uint16_t)nearbyint(f * (double)(s->levels - 1));
    }
}

static void loop(const dh_clahe_skimage_job *job, size_t count, void (*body)(void *, size_t),
                 void *arg)
{
    if (job->parallel_for && job->threads != 1)
        job->parallel_for(job->threads, count, body, arg);
    else
        for (size_t i = 0; i < count; i++)
            body(arg, i);
}

/* img_as_uint, then rescale_intensity to 0 .. 2^14 - 1 with np.round, then the bin lookup, into
 * work. */
static int bins_of(const void *data, const dh_clahe_skimage_job *job, size_t count,
                   uint16_t *work)
{
    uint32_t umin = as_uint16(data, 0, job->dtype), umax = umin;
    for (size_t i = 1; i < count; i++) {
        uint32_t u = as_uint16(data, i, job->dtype);
        umin = u < umin ? u : umin;
        umax = u > umax ? u : umax;
    }
    const uint32_t bin_size = 1 + NR_OF_GRAY / job->nbins;
    uint16_t *lut = malloc(((size_t)umax - umin + 1) * sizeof *lut);
    if (!lut)
        return -1;
    for (uint32_t u = umin; u <= umax; u++) {
        double v14 = umin == umax ? (u < NR_OF_GRAY - 1 ? u : NR_OF_GRAY - 1)
                                  : nearbyint((double)(u - umin) / (double)(umax - umin) *
                                                  (double)(NR_OF_GRAY - 1) + 0.0);
        lut[u - umin] = (uint16_t)((uint32_t)v14 / bin_size);
    }
    for (size_t i = 0; i < count; i++)
        work[i] = lut[as_uint16(data, i, job->dtype) - umin];
    free(lut);
    return 0;
}

/* One image of n[0] x n[1] x n[2] samples (ndim 2 when n[2] is its only slice and the job is per
 * slice): bins in `work` (reused in place for the 14-bit result), then out / out_float. */
static int run_image(const void *data, const dh_clahe_skimage_job *job, const uint32_t n[3],
                     int ndim, uint32_t levels, uint16_t *work, uint16_t *out,
                     double *out_float)
{
    image_state s = {.job = job, .ndim = ndim, .levels = levels, .work = work, .out = out,
                     .out_float = out_float};
    const size_t count = (size_t)n[0] * n[1] * n[2], rows = (size_t)n[1] * n[2];
    for (int a = 0; a < 3; a++) {
        s.n[a] = n[a];
        s.k[a] = a < ndim ? dh_clahe_skimage_kernel(n[a], job->kernel[a]) : 1;
        s.tiles[a] = (uint32_t)(((uint64_t)n[a] + s.k[a] - 1) / s.k[a]); /* ns_hist */
    }
    if (bins_of(data, job, count, work) != 0)
        return -1;
    /* The integer clip limit: int(clip_limit * kernel_elements), at least 1; none at 0. */
    s.kernel_elements = (int64_t)s.k[0] * s.k[1] * s.k[2];
    s.clim = s.kernel_elements;
    if (job->clip_limit > 0) {
        double c = job->clip_limit * (double)s.kernel_elements;
        /* Any limit at or above the tile's pixels clips nothing, as kernel_elements does. */
        s.clim = c < 1 ? 1 : c >= (double)s.kernel_elements ? s.kernel_elements : (int64_t)c;
    }
    const size_t ntiles = (size_t)s.tiles[0] * s.tiles[1] * s.tiles[2];
    s.maps = malloc(ntiles * job->nbins * sizeof *s.maps);
    s.rx = malloc((size_t)s.tiles[0] * s.k[0] * sizeof *s.rx);
    s.ry = malloc((size_t)s.tiles[1] * s.k[1] * sizeof *s.ry);
    s.row_min = malloc(rows * sizeof *s.row_min);
    s.row_max = malloc(rows * sizeof *s.row_max);
    int rc = -1;
    if (!s.maps || !s.rx || !s.ry || !s.row_min || !s.row_max)
        goto done;
    for (size_t p = 0; p < (size_t)s.tiles[0] * s.k[0]; p++)
        s.rx[p] = reflect((int64_t)p, n[0]);
    for (size_t p = 0; p < (size_t)s.tiles[1] * s.k[1]; p++)
        s.ry[p] = reflect((int64_t)p, n[1]);
    loop(job, ntiles, tile_body, &s);
    if (s.failed)
        goto done;
    for (int a = 0; a < 3; a++)
        if (axis_blend_init(&s.ax[a], n[a], s.k[a], s.tiles[a]) != 0)
            goto done;
    loop(job, rows, blend_body, &s);
    s.vmin = UINT32_MAX;
    for (size_t r = 0; r < rows; r++) {
        s.vmin = s.row_min[r] < s.vmin ? s.row_min[r] : s.vmin;
        s.vmax = s.row_max[r] > s.vmax ? s.row_max[r] : s.vmax;
    }
    loop(job, rows, output_body, &s);
    rc = 0;
done:
    for (int a = 0; a < 3; a++)
        axis_blend_free(&s.ax[a]);
    free(s.maps);
    free(s.rx);
    free(s.ry);
    free(s.row_min);
    free(s.row_max);
    return rc;
}

int dh_clahe_skimage_cpu(const void *data, const dh_clahe_skimage_job *job, uint32_t levels,
                         uint16_t *out, double *out_float)
{
    if (!data || !job || !job->nx || !job->ny || !job->nz || !job->nbins || levels < 2 ||
        levels > 65536 || !(job->clip_limit == job->clip_limit) ||
        job->dtype < DH_SKIMAGE_UINT8 || job->dtype > DH_SKIMAGE_INT16)
        return -1;
    const size_t slice = (size_t)job->nx * job->ny;
    const size_t image = job->volume ? slice * job->nz : slice;
    uint16_t *work = malloc(image * sizeof *work);
    if (!work)
        return -1;
    int rc = 0;
    if (job->volume) {
        const uint32_t n[3] = {job->nx, job->ny, job->nz};
        rc = run_image(data, job, n, 3, levels, work, out, out_float);
    } else {
        const uint32_t n[3] = {job->nx, job->ny, 1};
        for (uint32_t z = 0; z < job->nz && rc == 0; z++)
            rc = run_image((const uint16_t *)data + z * slice, job, n, 2, levels, work,
                           out ? out + z * slice : NULL, out_float ? out_float + z * slice : NULL);
    }
    free(work);
    return rc;
}
