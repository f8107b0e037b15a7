// SPDX-License-Identifier: MIT
/*
 * mi_parzen_cpu.c: the CPU twin of mi_parzen.h: Parzen-window (Mattes) MI, NMI and the gradient
 * with respect to every moving pixel, one fixed image against a batch of moving images. Integer
 * joint histograms (any order gives the same counts), mi_scores.h's fixed-order entropy sums, and
 * a per-pixel gradient: the same bits on every run, as the GPU twin must give.
 */
#define _POSIX_C_SOURCE 200809L /* sysconf */
#include "mi_parzen.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int dh_parzen_axis_init(dh_parzen_axis *axis, uint32_t bins, double lo, double hi)
{
    if (bins < DH_PARZEN_MIN_BINS || bins > DH_PARZEN_MAX_BINS || !isfinite(lo) ||
        !isfinite(hi) || lo > hi)
        return -1;
    dh_parzen_axis_set(axis, bins, lo, hi);
    return 0;
}

/* Pixel k of an image (element offset `base`) as a double, or 0 when it is not valid. */
static inline int read_pixel(const dh_parzen_image *image, size_t base, size_t k,
                             double *value)
{
    if (image->mask && !image->mask[base + k])
        return 0;
    switch (image->sample) {
    case DH_PARZEN_FLOAT32: {
        float v = ((const float *)image->data)[base + k];
        *value = (double)v;
        return isfinite(v) != 0;
    }
    case DH_PARZEN_UINT16:
        *value = (double)((const uint16_t *)image->data)[base + k];
        return 1;
    default:
        *value = (double)((const int16_t *)image->data)[base + k];
        return 1;
    }
}

/* The axis of one image: the given range, or its min..max over its own valid pixels (0..0 when
 * none is valid: nothing will count then anyway). */
static int image_axis(const dh_parzen_image *image, size_t base, size_t pixels, uint32_t bins,
                      int given, double lo, double hi, dh_parzen_axis *axis)
{
    if (!given) {
        lo = INFINITY;
        hi = -INFINITY;
        const uint8_t *mask = image->mask ? image->mask + base : NULL;
/* One loop per sample type (no switch per pixel); min and max are exact in any order. */
#define MIN_MAX(type, valid)                                                                      \
    do {                                                                                         \
        const type *d = (const type *)image->data + base;                                        \
        for (size_t k = 0; k < pixels; k++) {                                                    \
            const double v = (double)d[k];                                                       \
            if ((!mask || mask[k]) && (valid)) {                                                 \
                lo = v < lo ? v : lo;                                                            \
                hi = v > hi ? v : hi;                                                            \
            }                                                                                    \
        }                                                                                        \
    } while (0)
        if (image->sample == DH_PARZEN_FLOAT32)
            MIN_MAX(float, isfinite(v));
        else if (image->sample == DH_PARZEN_UINT16)
            MIN_MAX(uint16_t, 1);
        else
            MIN_MAX(int16_t, 1);
#undef MIN_MAX
        if (lo > hi)
            lo = hi = 0.0;
    }
    return dh_parzen_axis_init(axis, bins, lo, hi);
}

/* A pixel that does not count (fixed row) or has no gradient (moving index): bins are <= 253. */
#define NO_BIN 0xFFu

/* Scratch of one call: per pixel the fixed index (NO_BIN where not valid) and, for the cubic
 * window, position; with a gradient, per item the moving index and fraction of each pixel, kept
 * from the histogram pass for the gradient pass (NO_BIN where the pixel gets no gradient); one
 * joint histogram, its column sums, the gradient's cell factors. O(pixels + bins^2). */
typedef struct parzen_scratch {
    double *fixed_t;
    uint8_t *fixed_row;
    uint8_t *moving_im;
    double *moving_f;
    uint64_t *joint;
    uint64_t rows[DH_PARZEN_MAX_BINS], cols[DH_PARZEN_MAX_BINS];
    double *cell;
} parzen_scratch;

/* The fixed window of a pixel at t: its first row and its weights, exact in w and, when q is not
 * NULL, quantized at `one`; a box window is one row of weight 1. Returns the number of rows. */
static uint32_t fixed_window(uint32_t window, uint32_t bins, double t, uint64_t one,
                             uint32_t *first, uint64_t q[4], double w[4])
{
    double f;
    uint32_t i = dh_parzen_index(bins, t, &f);
    if (window == DH_PARZEN_FIXED_BOX) {
        *first = i;
        if (q)
            q[0] = one;
        w[0] = 1.0;
        return 1;
    }
    *first = i - 1;
    dh_parzen_bspline(f, w);
    if (q)
        dh_parzen_quantize(w, one, q);
    return 4;
}

/* Adds every pixel valid in both images to the joint histogram; returns how many counted.
 * Keeps each pixel's moving index and fraction for pixel_gradients (NO_BIN for a pixel outside a
 * given moving range: it counts, clamped, but moves nothing). */
static uint64_t accumulate(const dh_parzen_params *p, size_t pixels, parzen_scratch *s,
                           const dh_parzen_image *moving, size_t base, const dh_parzen_axis *axis)
{
    const uint32_t bins = p->bins;
    const int box = p->fixed_window == DH_PARZEN_FIXED_BOX;
    /* Box: moving weights at 2^32. Cubic: both at 2^16, their product at 2^32. */
    const uint64_t one_m = box ? DH_PARZEN_UNIT : (uint64_t)1 << 16;
    const uint64_t one_f = DH_PARZEN_UNIT / one_m;
    uint64_t *joint = s->joint;
    const int keep = s->moving_im != NULL; /* the gradient is asked for */
    uint64_t n = 0;
    memset(joint, 0, (size_t)bins * bins * sizeof *joint);
    for (size_t k = 0; k < pixels; k++) {
        double v, f, wm[4], wf[4];
        const uint32_t row0 = s->fixed_row[k];
        if (keep)
            s->moving_im[k] = NO_BIN;
        if (row0 == NO_BIN || !read_pixel(moving, base, k, &v))
            continue;
        const uint32_t im = dh_parzen_index(bins, dh_parzen_position(axis, v), &f) - 1;
        if (keep && !(v < axis->lo) && !(v > axis->hi)) {
            s->moving_im[k] = (uint8_t)im;
            s->moving_f[k] = f;
        }
        uint64_t qm[4], qf[4] = {0, 0, 0, 0};
        dh_parzen_bspline(f, wm);
        dh_parzen_quantize(wm, one_m, qm);
        if (box) { /* one row, weight 1 */
            uint64_t *cells = joint + (size_t)row0 * bins + im;
            cells[0] += qm[0];
            cells[1] += qm[1];
            cells[2] += qm[2];
            cells[3] += qm[3];
        } else {
            uint32_t row;
            fixed_window(p->fixed_window, bins, s->fixed_t[k], one_f, &row, qf, wf);
            for (uint32_t a = 0; a < 4; a++) {
                uint64_t *cells = joint + (size_t)(row + a) * bins + im;
                for (int j = 0; j < 4; j++)
                    cells[j] += qf[a] * qm[j];
            }
        }
        n++;
    }
    return n;
}

/* The gradient's factor of each cell (mi_parzen.h's dh_parzen_cell_factor). */
static void cell_factors(const dh_parzen_params *p, parzen_scratch *s, uint64_t total,
                         const dh_mi_values *scores)
{
    const uint32_t bins = p->bins;
    double ln_col[DH_PARZEN_MAX_BINS];
    const double ln_t = dh_mi_log((double)total);
    for (uint32_t j = 0; j < bins; j++)
        ln_col[j] = s->cols[j] ? dh_mi_log((double)s->cols[j]) : 0.0;
    double sum_h, hj, hj2;
    dh_parzen_nmi_constants(p->gradient_of, p->log2, scores, &sum_h, &hj, &hj2);
    for (uint32_t i = 0; i < bins; i++)
        for (uint32_t j = 0; j < bins; j++)
            s->cell[(size_t)i * bins + j] =
                dh_parzen_cell_factor(p->gradient_of, s->joint[(size_t)i * bins + j], ln_col[j],
                                      ln_t, sum_h, hj, hj2);
}

/* Each pixel's gradient: scale * sum_a wf_a sum_j cell[row + a][im + j] slope_j, in that order,
 * from the index and fraction accumulate kept. */
static void pixel_gradients(const dh_parzen_params *p, size_t pixels, const parzen_scratch *s,
                            double scale, float *gradient)
{
    const uint32_t bins = p->bins;
    const int box = p->fixed_window == DH_PARZEN_FIXED_BOX;
    for (size_t k = 0; k < pixels; k++) {
        double slope[4], wf[4] = {1.0, 0.0, 0.0, 0.0};
        const uint32_t im = s->moving_im[k];
        gradient[k] = 0.0f;
        if (im == NO_BIN)
            continue;
        dh_parzen_bspline_slope(s->moving_f[k], slope);
        uint32_t row = s->fixed_row[k], rows = 1;
        if (!box)
            rows = fixed_window(p->fixed_window, bins, s->fixed_t[k], 0, &row, NULL, wf);
#define CELL(r, c) s->cell[(size_t)(r) * bins + (c)]
        double sum;
        DH_PARZEN_PIXEL_SUM(sum, rows, wf, slope, CELL, row, im);
#undef CELL
        gradient[k] = (float)DH_MI_MUL(sum, scale);
    }
}

/* One moving image: joint histogram, marginals, scores, then the gradient if asked. */
static void score_one(const dh_parzen_params *p, size_t pixels, const dh_parzen_image *moving,
                      size_t base, parzen_scratch *s, dh_mi_values *out, float *gradient)
{
    const uint32_t bins = p->bins;
    dh_parzen_axis axis = {bins, 0.0, 0.0, 1.0, 1};
    if (image_axis(moving, base, pixels, bins, p->moving_range_given, p->moving_lo,
                   p->moving_hi, &axis) != 0)
        dh_parzen_axis_init(&axis, bins, 0.0, 0.0); /* unreachable: ranges were checked */
    const uint64_t n = accumulate(p, pixels, s, moving, base, &axis);
    const uint64_t total = n * DH_PARZEN_UNIT;
    memset(s->rows, 0, sizeof s->rows);
    memset(s->cols, 0, sizeof s->cols);
    for (uint32_t i = 0; i < bins; i++)
        for (uint32_t j = 0; j < bins; j++) {
            s->rows[i] += s->joint[(size_t)i * bins + j];
            s->cols[j] += s->joint[(size_t)i * bins + j];
        }
    const double ln_t = n ? dh_mi_log((double)total) : 0.0;
    dh_mi_finish(total, dh_mi_sum_terms_u64(s->rows, bins, total, ln_t),
                 dh_mi_sum_terms_u64(s->cols, bins, total, ln_t),
                 dh_mi_sum_terms_u64(s->joint, (size_t)bins * bins, total, ln_t), p->log2, out);
    out->n = n;
    out->moving_lo = out->moving_hi = 0;
    out->reserved = 0;
    if (!gradient)
        return;
    const int nmi_undefined = p->gradient_of == DH_PARZEN_GRAD_NMI && out->h_joint == 0.0;
    if (n == 0 || axis.degenerate || nmi_undefined) {
        memset(gradient, 0, pixels * sizeof *gradient);
        return;
    }
    cell_factors(p, s, total, out);
    const double scale = dh_parzen_gradient_scale(n, axis.width, p->log2, p->gradient_of);
    pixel_gradients(p, pixels, s, scale, gradient);
}

static int params_valid(const dh_parzen_params *p)
{
    dh_parzen_axis a;
    if (p->bins < DH_PARZEN_MIN_BINS || p->bins > DH_PARZEN_MAX_BINS ||
        p->fixed_window > DH_PARZEN_FIXED_CUBIC || p->gradient_of > DH_PARZEN_GRAD_NMI)
        return 0;
    if (p->fixed_range_given && dh_parzen_axis_init(&a, p->bins, p->fixed_lo, p->fixed_hi))
        return 0;
    if (p->moving_range_given && dh_parzen_axis_init(&a, p->bins, p->moving_lo, p->moving_hi))
        return 0;
    return 1;
}

static int image_valid(const dh_parzen_image *image)
{
    return image && image->data && image->sample >= DH_PARZEN_FLOAT32 &&
           image->sample <= DH_PARZEN_INT16;
}

int dh_parzen_arguments_valid(const dh_parzen_params *params, size_t pixels,
                              const dh_parzen_image *fixed, const dh_parzen_image *moving,
                              uint32_t count, const void *out)
{
    return params && image_valid(fixed) && image_valid(moving) && (!count || out) &&
           pixels != 0 && pixels <= DH_PARZEN_MAX_PIXELS && params_valid(params);
}

/* One thread's share of a batch: items first, first + step, ... with its own scratch (the fixed
 * index and positions are shared, read only). Items are independent, so the bits do not depend
 * on the number of threads. */
typedef struct parzen_share {
    const dh_parzen_params *params;
    size_t pixels;
    const dh_parzen_image *moving;
    uint32_t first, step, count;
    dh_mi_values *out;
    float *gradient;
    parzen_scratch s;
    pthread_t thread;
} parzen_share;

static void *share_main(void *arg)
{
    parzen_share *w = arg;
    for (uint32_t b = w->first; b < w->count; b += w->step)
        score_one(w->params, w->pixels, w->moving, (size_t)b * w->pixels, &w->s, &w->out[b],
                  w->gradient ? w->gradient + (size_t)b * w->pixels : NULL);
    return NULL;
}

/* A share's own buffers (the shared ones are set by the caller); 0, or -1 when out of memory. */
static int share_alloc(parzen_share *w, uint32_t bins, int gradient)
{
    w->s.moving_im = gradient ? malloc(w->pixels) : NULL;
    w->s.moving_f = gradient ? malloc(w->pixels * sizeof *w->s.moving_f) : NULL;
    w->s.joint = malloc((size_t)bins * bins * sizeof *w->s.joint);
    w->s.cell = malloc((size_t)bins * bins * sizeof *w->s.cell);
    return ((w->s.moving_im && w->s.moving_f) || !gradient) && w->s.joint && w->s.cell ? 0 : -1;
}

static void share_free(parzen_share *w)
{
    free(w->s.moving_im);
    free(w->s.moving_f);
    free(w->s.joint);
    free(w->s.cell);
}

int dh_parzen_mi_cpu(const dh_parzen_params *params, size_t pixels, const dh_parzen_image *fixed,
                     const dh_parzen_image *moving, uint32_t count, dh_mi_values *out,
                     float *gradient)
{
    return dh_parzen_mi_cpu_threads(params, pixels, fixed, moving, count, out, gradient, 1);
}

int dh_parzen_mi_cpu_threads(const dh_parzen_params *params, size_t pixels,
                             const dh_parzen_image *fixed, const dh_parzen_image *moving,
                             uint32_t count, dh_mi_values *out, float *gradient, int threads)
{
    if (!dh_parzen_arguments_valid(params, pixels, fixed, moving, count, out))
        return DH_PARZEN_ERR_ARGUMENT;
    const uint32_t bins = params->bins;
    dh_parzen_axis faxis;
    if (image_axis(fixed, 0, pixels, bins, params->fixed_range_given, params->fixed_lo,
                   params->fixed_hi, &faxis) != 0)
        return DH_PARZEN_ERR_ARGUMENT;
    long t = threads > 0 ? threads : sysconf(_SC_NPROCESSORS_ONLN);
    t = t < 1 ? 1 : (t > (long)count ? (long)count : t);
    t = t < 1 ? 1 : t;
    parzen_share *shares = calloc((size_t)t, sizeof *shares);
    /* only what this call needs: positions for the cubic window, the kept moving indices and
     * fractions for the gradient (each buffer touched costs its page faults on every call) */
    const int cubic = params->fixed_window == DH_PARZEN_FIXED_CUBIC;
    double *fixed_t = cubic ? malloc(pixels * sizeof *fixed_t) : NULL;
    uint8_t *fixed_row = malloc(pixels);
    int status = DH_PARZEN_ERR_NO_MEMORY;
    long ready = 0;
    if (shares && (fixed_t || !cubic) && fixed_row) {
        for (; ready < t; ready++) {
            parzen_share *w = &shares[ready];
            w->params = params;
            w->pixels = pixels;
            w->moving = moving;
            w->first = (uint32_t)ready;
            w->step = (uint32_t)t;
            w->count = count;
            w->out = out;
            w->gradient = gradient;
            w->s.fixed_t = fixed_t;
            w->s.fixed_row = fixed_row;
            if (share_alloc(w, bins, gradient != NULL) != 0) {
                share_free(w);
                break;
            }
        }
    }
    if (ready == t) {
        for (size_t k = 0; k < pixels; k++) {
            double v, f;
            fixed_row[k] = NO_BIN;
            if (read_pixel(fixed, 0, k, &v)) {
                const double pos = dh_parzen_position(&faxis, v);
                fixed_row[k] = (uint8_t)dh_parzen_index(bins, pos, &f);
                if (cubic)
                    fixed_t[k] = pos;
            }
        }
        /* the calling thread takes share 0; a share whose thread cannot start runs here too */
        for (long i = 1; i < t; i++)
            if (pthread_create(&shares[i].thread, NULL, share_main, &shares[i]) != 0)
                shares[i].step = 0; /* marks it for the calling thread */
        share_main(&shares[0]);
        for (long i = 1; i < t; i++) {
            if (shares[i].step == 0) {
                shares[i].step = (uint32_t)t;
                share_main(&shares[i]);
            } else {
                pthread_join(shares[i].thread, NULL);
            }
        }
        status = DH_PARZEN_OK;
    }
    for (long i = 0; i < ready; i++)
        share_free(&shares[i]);
    free(shares);
    free(fixed_t);
    free(fixed_row);
    return status;
}
