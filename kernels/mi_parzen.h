// SPDX-License-Identifier: MIT
/*
 * mi_parzen.h: Parzen-window (Mattes) mutual information and its gradient with respect to every
 * moving pixel, for one fixed image against a batch of moving images. The CPU twin is
 * mi_parzen_cpu.c; a GPU twin must give the same bits, so every step that could round
 * differently is defined here (docs/registration.md, "Parzen-window MI", has the formulas).
 *
 * Definition (Mattes et al. 2003, ITK's MattesMutualInformationImageToImageMetricv4):
 *   - each image's range [lo, hi] (given, or its min..max over the valid pixels) spans the
 *     B - 4 middle bins: width = (hi - lo) / (B - 4), position t = (v - lo) / width + 2
 *     (ITK's padding of two bins at each end), so t lies in [2, B - 2];
 *   - the moving image's window is the cubic B-spline: a pixel at t with i = clamp(floor(t), 2,
 *     B - 3) and f = t - i adds beta3(j - t) to the bins j = i - 1 .. i + 2; the fixed image's
 *     window is zero-order (the pixel's bin i) or, selectable, the same cubic B-spline;
 *   - the joint histogram W[fixed bin][moving bin] holds the products of the two windows; the
 *     marginals are its row and column sums; MI = H(f) + H(m) - H(f, m), NMI = (H(f) + H(m)) /
 *     H(f, m) (mi_scores.h's entropies and fixed summation order);
 *   - dMI/dv_k = (1 / (N width_m)) sum_{i,j} a_i(k) ln(W_ij T / (R_i C_j)) b'_j(f_k), a_i the
 *     fixed window's weights of pixel k, b'_j = d beta3(j - t)/df; a cell with W_ij = 0 adds 0.
 *
 * Determinism: the windows' weights are quantized to integers and the joint histogram is a
 * uint64 sum of integer products, exact in any order, with the unit DH_PARZEN_UNIT (2^-32 of one
 * pixel): a zero-order fixed window takes the moving weights at 2^32, a cubic one takes both
 * windows' weights at 2^16 and multiplies them (exact in 32 bits). The four weights of a pixel
 * sum to exactly one pixel (the last middle one takes the remainder), so T = N 2^32 exactly.
 * Every floating-point step goes through mi_scores.h's DH_MI_ADD/SUB/MUL/DIV (never fused) and
 * its logarithm dh_mi_log; the gradient of a pixel is a fixed-order sum over its own cells, so it
 * needs no reduction across pixels.
 */
#ifndef DH_KERNELS_MI_PARZEN_H
#define DH_KERNELS_MI_PARZEN_H

#include <stddef.h>
#include <stdint.h>

#include "mi_scores.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DH_PARZEN_MIN_BINS 5u   /* two padding bins at each end and at least one inside */
#define DH_PARZEN_MAX_BINS 256u
#define DH_PARZEN_PADDING 2     /* ITK's padding: bins 0, 1 and B - 2, B - 1 take only tails */
/* One pixel's total weight in the joint histogram: cells count in units of 2^-32 pixel. */
#define DH_PARZEN_ONE_SHIFT 32
#define DH_PARZEN_UNIT ((uint64_t)1 << DH_PARZEN_ONE_SHIFT)
/* T = N 2^32 must fit in uint64. */
#define DH_PARZEN_MAX_PIXELS ((size_t)UINT32_MAX)

/* The pixel types the twin reads (values converted to double exactly). */
typedef enum dh_parzen_sample {
    DH_PARZEN_FLOAT32 = 0,
    DH_PARZEN_UINT16 = 1,
    DH_PARZEN_INT16 = 2
} dh_parzen_sample;

/* The fixed image's window. */
typedef enum dh_parzen_fixed_window {
    DH_PARZEN_FIXED_BOX = 0,  /* zero order (ITK's default): the pixel's bin */
    DH_PARZEN_FIXED_CUBIC = 1 /* the cubic B-spline, as on the moving image */
} dh_parzen_fixed_window;

/* What the gradient is of. */
typedef enum dh_parzen_gradient_of {
    DH_PARZEN_GRAD_MI = 0,
    DH_PARZEN_GRAD_NMI = 1
} dh_parzen_gradient_of;

/* One axis: the range and the position of a value on the bins. */
typedef struct dh_parzen_axis {
    uint32_t bins;
    double lo, hi;
    double width; /* (hi - lo) / (B - 4); 1.0 when hi == lo (every valid pixel at t = 2) */
    int degenerate; /* hi == lo: no scale, so the gradient is 0 */
} dh_parzen_axis;

/* Sets the axis; returns 0, or -1 for bins outside 5..256 or a range that is not finite with
 * lo <= hi. */
int dh_parzen_axis_init(dh_parzen_axis *axis, uint32_t bins, double lo, double hi);

/* dh_parzen_axis_init's arithmetic without its checks, for arguments already checked: the GPU
 * twin sets its axes on the device with it, so both twins share one width computation. */
DH_MI_HD void dh_parzen_axis_set(dh_parzen_axis *axis, uint32_t bins, double lo, double hi)
{
    axis->bins = bins;
    axis->lo = lo;
    axis->hi = hi;
    axis->degenerate = hi == lo;
    axis->width = axis->degenerate
                      ? 1.0
                      : DH_MI_DIV(DH_MI_SUB(hi, lo), (double)(bins - 2 * DH_PARZEN_PADDING));
}

/* Position of a value: t = (v - lo) / width + 2, v clamped to [lo, hi] first (a value outside a
 * given range sits at the end and moves nothing: its gradient is 0). */
DH_MI_HD double dh_parzen_position(const dh_parzen_axis *axis, double v)
{
    double c = v < axis->lo ? axis->lo : (v > axis->hi ? axis->hi : v);
    return DH_MI_ADD(DH_MI_DIV(DH_MI_SUB(c, axis->lo), axis->width), (double)DH_PARZEN_PADDING);
}

/* The first affected bin minus one (i in i - 1 .. i + 2) and the fraction f = t - i in [0, 1]. */
DH_MI_HD uint32_t dh_parzen_index(uint32_t bins, double t, double *frac)
{
    /* floor(t): positions are >= 2 (dh_parzen_position) and at most B - 2 up to rounding, so
     * 32 bits hold them (fewer instructions than 64-bit integers on the GPU) */
    int32_t i = (int32_t)t;
    if (i < DH_PARZEN_PADDING)
        i = DH_PARZEN_PADDING;
    if (i > (int32_t)bins - 3)
        i = (int32_t)bins - 3;
    *frac = DH_MI_SUB(t, (double)i);
    return (uint32_t)i;
}

/* The cubic B-spline's weights of bins i - 1 .. i + 2 at fraction f (beta3(j - t)). */
DH_MI_HD void dh_parzen_bspline(double f, double w[4])
{
    const double g = DH_MI_SUB(1.0, f);
    const double f2 = DH_MI_MUL(f, f), g2 = DH_MI_MUL(g, g);
    const double sixth = 1.0 / 6.0;
    w[0] = DH_MI_MUL(DH_MI_MUL(g2, g), sixth);
    /* (4 - 6 f^2 + 3 f^3) / 6 = 2/3 - f^2 + f^3 / 2 */
    w[1] = DH_MI_ADD(DH_MI_SUB(2.0 / 3.0, f2), DH_MI_MUL(DH_MI_MUL(f2, f), 0.5));
    w[2] = DH_MI_ADD(DH_MI_SUB(2.0 / 3.0, g2), DH_MI_MUL(DH_MI_MUL(g2, g), 0.5));
    w[3] = DH_MI_MUL(DH_MI_MUL(f2, f), sixth);
}

/* Their derivatives with respect to f (they sum to 0). */
DH_MI_HD void dh_parzen_bspline_slope(double f, double d[4])
{
    const double g = DH_MI_SUB(1.0, f);
    const double f2 = DH_MI_MUL(f, f), g2 = DH_MI_MUL(g, g);
    d[0] = DH_MI_MUL(-0.5, g2);
    d[1] = DH_MI_SUB(DH_MI_MUL(1.5, f2), DH_MI_MUL(2.0, f));
    d[2] = DH_MI_SUB(DH_MI_MUL(2.0, g), DH_MI_MUL(1.5, g2));
    d[3] = DH_MI_MUL(0.5, f2);
}

/* The weights quantized to integers summing to exactly `one` (a power of two up to 2^32):
 * q = floor(w one + 1/2) for the outer three, the remainder for w[2] (at least 1/6). w one + 1/2
 * is positive (a weight is >= 0 up to a rounding error far below 2^-17), so the conversion's
 * truncation is that floor (one instruction fewer on the GPU); through int64_t, as the values
 * are below 2^33 (x86-64 converts to int64 in one instruction, to uint64 in several). */
DH_MI_HD void dh_parzen_quantize(const double w[4], uint64_t one, uint64_t q[4])
{
    const double scale = (double)one;
    q[0] = (uint64_t)(int64_t)DH_MI_ADD(DH_MI_MUL(w[0], scale), 0.5);
    q[1] = (uint64_t)(int64_t)DH_MI_ADD(DH_MI_MUL(w[1], scale), 0.5);
    q[3] = (uint64_t)(int64_t)DH_MI_ADD(DH_MI_MUL(w[3], scale), 0.5);
    q[2] = one - q[0] - q[1] - q[3];
}

/* The gradient's constants of one item from its scores: NMI's S = H(f) + H(m), H_j and H_j^2 in
 * nats (MI needs none: 0, 1, 1). */
DH_MI_HD void dh_parzen_nmi_constants(uint32_t gradient_of, int log2, const dh_mi_values *scores,
                                      double *sum_h, double *hj, double *hj2)
{
    *sum_h = 0.0;
    *hj = 1.0;
    *hj2 = 1.0;
    if (gradient_of == 1u /* DH_PARZEN_GRAD_NMI */) {
        const double ln2 = 0.69314718055994530942; /* back to nats when the record is in bits */
        double unit = log2 ? ln2 : 1.0;
        *sum_h = DH_MI_MUL(DH_MI_ADD(scores->h_fixed, scores->h_moving), unit);
        *hj = DH_MI_MUL(scores->h_joint, unit);
        *hj2 = DH_MI_MUL(*hj, *hj);
    }
}

/* The gradient's factor of one cell holding w (0 for w = 0): d score / d p_ij up to terms that
 * vanish because a pixel's window slopes sum to zero. MI: ln(W_ij / C_j); NMI: (S ln p_ij - H_j
 * ln pm_j) / H_j^2. ln_col = ln C_j (0 for an empty column), ln_t = ln T. The _of_log form takes
 * ln_w = dh_mi_log(w) already computed (the GPU twin keeps it from the entropy term). */
DH_MI_HD double dh_parzen_cell_factor_of_log(uint32_t gradient_of, double ln_w, double ln_col,
                                             double ln_t, double sum_h, double hj, double hj2)
{
    if (gradient_of == 0u /* DH_PARZEN_GRAD_MI */)
        return DH_MI_SUB(ln_w, ln_col);
    double ln_p = DH_MI_SUB(ln_w, ln_t);
    double ln_pm = DH_MI_SUB(ln_col, ln_t);
    return DH_MI_DIV(DH_MI_SUB(DH_MI_MUL(sum_h, ln_p), DH_MI_MUL(hj, ln_pm)), hj2);
}

DH_MI_HD double dh_parzen_cell_factor(uint32_t gradient_of, uint64_t w, double ln_col,
                                      double ln_t, double sum_h, double hj, double hj2)
{
    if (w == 0)
        return 0.0;
    return dh_parzen_cell_factor_of_log(gradient_of, dh_mi_log((double)w), ln_col, ln_t, sum_h,
                                        hj, hj2);
}

/* The factor every pixel's sum is multiplied by: 1 / (N width_m), in bits for MI with log2. */
DH_MI_HD double dh_parzen_gradient_scale(uint64_t n, double width, int log2, uint32_t gradient_of)
{
    double scale = DH_MI_DIV(1.0, DH_MI_MUL((double)n, width));
    if (log2 && gradient_of == 0u /* DH_PARZEN_GRAD_MI */)
        scale = DH_MI_MUL(scale, 1.44269504088896340736);
    return scale;
}

/* One pixel's gradient before the scale: sum_a wf_a sum_j cell(row + a, im + j) slope_j over
 * `rows` fixed rows (1: box, weight 1.0; 4: cubic), in that order; cell(r, c) reads the item's
 * factor table wherever the twin keeps it (a function or macro of the twin's). A macro, not a
 * function: the GPU twin's table sits in shared memory or global memory. */
#define DH_PARZEN_PIXEL_SUM(sum, rows, wf, slope, cell, row, im)                                  \
    do {                                                                                         \
        (sum) = 0.0;                                                                             \
        for (uint32_t a_ = 0; a_ < (rows); a_++) {                                               \
            double inner_ = 0.0;                                                                 \
            for (int j_ = 0; j_ < 4; j_++)                                                       \
                inner_ = DH_MI_ADD(inner_, DH_MI_MUL(cell((row) + a_, (im) + j_), (slope)[j_])); \
            (sum) = DH_MI_ADD((sum), DH_MI_MUL((wf)[a_], inner_));                               \
        }                                                                                        \
    } while (0)

/* The parameters of one call. */
typedef struct dh_parzen_params {
    uint32_t bins;         /* B, 5..256, the same on both axes */
    uint32_t fixed_window; /* dh_parzen_fixed_window */
    uint32_t gradient_of;  /* dh_parzen_gradient_of */
    int log2;              /* scores and gradient in bits instead of nats */
    /* Given ranges (used when *_given is non-zero), else each image's min..max over its valid
     * pixels (ITK's choice; the gradient then treats the range as constant, as ITK does). */
    int fixed_range_given, moving_range_given;
    double fixed_lo, fixed_hi, moving_lo, moving_hi;
} dh_parzen_params;

/* One image in host memory: `pixels` values of `sample` type; `mask` NULL or one byte per
 * pixel (non-zero: valid). A float32 value that is NaN or infinite is not valid either. */
typedef struct dh_parzen_image {
    const void *data;
    dh_parzen_sample sample;
    const uint8_t *mask;
} dh_parzen_image;

/* Return values of dh_parzen_mi_cpu. */
#define DH_PARZEN_OK 0
#define DH_PARZEN_ERR_ARGUMENT (-1) /* see dh_parzen_mi_cpu */
#define DH_PARZEN_ERR_NO_MEMORY (-2)

/* Scores `count` moving images against one fixed image, all of `pixels` pixels. Moving image
 * b is moving->data advanced by b * pixels elements (its mask, if any, likewise). A pixel counts
 * when it is valid in both images. For each b, out[b] gets the scores (mi_scores.h's record; n
 * is the number of pixels counted; moving_lo/hi are 0) and, when gradient is not NULL,
 * gradient[b * pixels + k] = d(MI or NMI)/d(moving pixel k) as float32 (computed in double,
 * rounded once); 0 for a pixel not counted, for every pixel where the moving range is a single
 * value, and everywhere when NMI's joint entropy is 0 or nothing counted.
 * Returns DH_PARZEN_OK, DH_PARZEN_ERR_ARGUMENT (a NULL pointer, bins, window or gradient kind
 * out of range, a bad given range, pixels 0 or above DH_PARZEN_MAX_PIXELS) or
 * DH_PARZEN_ERR_NO_MEMORY. */
int dh_parzen_mi_cpu(const dh_parzen_params *params, size_t pixels, const dh_parzen_image *fixed,
                     const dh_parzen_image *moving, uint32_t count, dh_mi_values *out,
                     float *gradient);

/* dh_parzen_mi_cpu on `threads` threads (<= 0: one per online processor), each scoring whole
 * batch items (items b = i mod threads), so at most `count` threads; the same bits whatever the
 * number. Scratch per thread: 9 bytes per pixel with a gradient, two bins x bins tables.
 * dh_parzen_mi_cpu is this with one thread. A thread that cannot start leaves its items to the
 * calling thread. */
int dh_parzen_mi_cpu_threads(const dh_parzen_params *params, size_t pixels,
                             const dh_parzen_image *fixed, const dh_parzen_image *moving,
                             uint32_t count, dh_mi_values *out, float *gradient, int threads);

/* dh_parzen_mi_cpu's argument checks alone (pointers only tested against NULL, never read), so
 * that the GPU twin (device pointers) refuses exactly what the CPU twin refuses: 1 when valid. */
int dh_parzen_arguments_valid(const dh_parzen_params *params, size_t pixels,
                              const dh_parzen_image *fixed, const dh_parzen_image *moving,
                              uint32_t count, const void *out);

#ifdef __cplusplus
}
#endif
#endif /* DH_KERNELS_MI_PARZEN_H */
