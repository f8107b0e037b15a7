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
    int64_t i = (int64_t)floor(t);
    if (i < DH_PARZEN_PADDING)
        i = DH_PARZEN_PADDING;
    if (i > (int64_t)bins - 3)
        i = (int64_t)bins - 3;
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
 * q = floor(w one + 1/2) for the outer three, the remainder for w[2] (at least 1/6). */
DH_MI_HD void dh_parzen_quantize(const double w[4], uint64_t one, uint64_t q[4])
{
    const double scale = (double)one;
    q[0] = (uint64_t)floor(DH_MI_ADD(DH_MI_MUL(w[0], scale), 0.5));
    q[1] = (uint64_t)floor(DH_MI_ADD(DH_MI_MUL(w[1], scale), 0.5));
    q[3] = (uint64_t)floor(DH_MI_ADD(DH_MI_MUL(w[3], scale), 0.5));
    q[2] = one - q[0] - q[1] - q[3];
}

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

#ifdef __cplusplus
}
#endif
#endif /* DH_KERNELS_MI_PARZEN_H */
