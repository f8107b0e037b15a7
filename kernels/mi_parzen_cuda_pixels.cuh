// SPDX-License-Identifier: MIT
/*
 * mi_parzen_cuda_pixels.cuh: the per-pixel kernels of the Parzen MI GPU twin (mi_parzen_cuda.cu):
 * the ranges (min..max over the valid pixels), the axes, the fixed image's bins, the joint
 * histograms and the gradient. Every double step is mi_parzen.h's (DH_MI_* are __dadd_rn and kin
 * on the device, never fused) or gives its value exactly in fewer instructions (the position's
 * division through the reciprocal with two exact corrections, truncations and integer
 * conversions by adding 2^52: pz_divide and its neighbours below), so each pixel's window,
 * quantized weights and gradient are the CPU twin's bits; the histograms are uint64 sums of
 * those integers, exact in any order, so atomics keep the bits.
 *
 * Grids put the batch item on x (no limit on the batch) and a block's share of the pixels on y.
 * Private to mi_parzen_cuda.cu, its one translation unit (the unnamed namespace keeps internal
 * linkage).
 */
#ifndef DH_KERNELS_MI_PARZEN_CUDA_PIXELS_CUH
#define DH_KERNELS_MI_PARZEN_CUDA_PIXELS_CUH

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "mi_parzen.h"

namespace {

constexpr uint8_t PZ_NO_ROW = 0xFF; /* a fixed pixel that does not count (bins are <= 253) */
constexpr int PZ_HIST_THREADS = 512;
constexpr int PZ_PIXEL_THREADS = 256;
constexpr int PZ_RUN = 8; /* contiguous pixels per thread and trip of the gradient's run path */
/* A warp whose pixels fall in at most this many runs of one cell adds sums, one per cell: at 3
 * runs, 3 x 8 warp reductions cost about what 4 atomics of ~11-way address conflicts do. */
constexpr int PZ_WARP_GROUPS = 3;

/* What the kernels share. Item b's moving pixels (and mask bytes) start at b * pixels. */
struct pz_args {
    size_t pixels;
    uint32_t count, bins;
    uint32_t fixed_window, gradient_of;
    int log2;
    int fixed_given, moving_given;
    double fixed_lo, fixed_hi, moving_lo, moving_hi;
    const void *fixed;
    const uint8_t *fixed_mask;
    dh_parzen_sample fixed_sample;
    const void *moving;
    const uint8_t *moving_mask;
    uint8_t *fixed_row;        /* pixels: the fixed pixel's index i (mi_parzen.h), or PZ_NO_ROW */
    double *fixed_t;           /* pixels, cubic window only: the fixed position t */
    uint32_t *keys;            /* (count + 1) x 2: min key, inverted max key; fixed last */
    dh_parzen_axis *axes;      /* count + 1; the fixed image last */
    double *rcp;               /* count + 1: RN(1 / width) for pz_divide, 0 where it may not */
    float *thr;                /* DH_PARZEN_MAX_BINS, box window: thr[k] for k = 3 .. bins - 3,
                                  the smallest float whose fixed row is >= k (pz_threshold) */
    unsigned long long *n;     /* count: the pixels counted (zeroed with joint) */
    unsigned long long *joint; /* count x bins x bins */
    double *cell;              /* count x bins x bins: the gradient's factors */
    double *scale;             /* count: the gradient's scale */
    uint32_t *grad_zero;       /* count: 1 where the whole gradient is 0 */
    int vec_gradient;          /* pixels % 8 = 0, moving and gradient rows 16-byte aligned, mask
                                  rows 8-byte: the gradient's run path */
    dh_mi_values *out;
    float *gradient;
};

/* ---- mi_parzen.h's per-pixel steps, the same bits in fewer instructions ------------------
 * The shared helpers (dh_parzen_position, _index, _quantize) convert between double and integer
 * types and divide; on the GPU a conversion from or to a 64-bit type issues at a quarter of the
 * FP64 rate and an IEEE division is a dozen FP64 instructions with a slow-path test. These give
 * the same values by exact FP64 arithmetic instead (proofs in the comments; the bit-for-bit tests
 * against the CPU twin check them, tests/test_mi_parzen_cuda.c). */

constexpr double PZ_TWO52 = 4503599627370496.0; /* 2^52: doubles in [2^52, 2^53) are integers */

/* (double)u for an integer 0 <= u < 2^32: the double whose bits are 2^52's with u in the low
 * word is exactly 2^52 + u, and subtracting 2^52 is exact. */
__device__ __forceinline__ double pz_u32_to_double(uint32_t u)
{
    return __dsub_rn(__hiloint2double(0x43300000, (int)u), PZ_TWO52);
}

/* trunc(x) for 0 <= x < 2^52 as its 64-bit integer: x + 2^52 rounded toward zero is 2^52 +
 * trunc(x) exactly (the sum lies in [2^52, 2^53), where the doubles are the integers), and its
 * bits minus 2^52's are that integer. */
__device__ __forceinline__ uint64_t pz_trunc_u64(double x)
{
    return (uint64_t)__double_as_longlong(__dadd_rz(x, PZ_TWO52)) - 0x4330000000000000ull;
}

/* RN(a / b) for the position's quotient, b = the axis width, y = RN(1 / b) (0: not usable).
 * q0 = RN(a y) is within 1.5 ulp of a / b; one correction q1 = RN(q0 + RN(a - b q0) y) brings it
 * within 1/2 ulp plus a term of order 2^-52 ulp, so q1 is a faithful rounding; then Markstein's
 * theorem (y within 1/2 ulp of 1 / b, q1 within 1 ulp of a / b, no underflow or overflow): r =
 * a - b q1 is exact in one FMA and RN(q1 + r y) = RN(a / b). The axis kernel sets y only for
 * 2^-500 <= b <= 2^500, and a quotient below 2^-400 (a tiny, not 0) goes to the IEEE division,
 * so no step underflows; a = 0 gives 0 on both paths. */
__device__ __forceinline__ double pz_divide(double a, double b, double y)
{
    const double q0 = __dmul_rn(a, y);
    if (y == 0.0 || (q0 < 0x1p-400 && a != 0.0))
        return __ddiv_rn(a, b);
    const double q1 = __fma_rn(__fma_rn(-b, q0, a), y, q0);
    return __fma_rn(__fma_rn(-b, q1, a), y, q1);
}

/* dh_parzen_position with pz_divide: t = RN(RN(clamp(v) - lo) / width) + 2 (the clamp as two
 * selects: v is never NaN here). */
__device__ __forceinline__ double pz_position(const dh_parzen_axis &ax, double rcp, double v)
{
    double c = v < ax.lo ? ax.lo : v;
    c = c > ax.hi ? ax.hi : c;
    return __dadd_rn(pz_divide(__dsub_rn(c, ax.lo), ax.width, rcp), (double)DH_PARZEN_PADDING);
}

/* dh_parzen_index: i = clamp((int32_t)t, 2, B - 3), f = t - i. t >= 2 and below 2^31, so the
 * truncation is pz_trunc_u64's low word. */
__device__ __forceinline__ uint32_t pz_index(uint32_t bins, double t, double *frac)
{
    uint32_t i = (uint32_t)pz_trunc_u64(t);
    i = max(i, (uint32_t)DH_PARZEN_PADDING);
    i = min(i, bins - 3u);
    *frac = __dsub_rn(t, pz_u32_to_double(i));
    return i;
}

/* dh_parzen_quantize: q = (int64_t)RN(RN(w one) + 1/2) for the outer three, the remainder for
 * w[2]. RN(w one) + 1/2 is positive and below 2^33 (mi_parzen.h), so the truncation is
 * pz_trunc_u64's. */
__device__ __forceinline__ void pz_quantize(const double w[4], uint64_t one, uint64_t q[4])
{
    const double scale = (double)one;
    q[0] = pz_trunc_u64(__dadd_rn(__dmul_rn(w[0], scale), 0.5));
    q[1] = pz_trunc_u64(__dadd_rn(__dmul_rn(w[1], scale), 0.5));
    q[3] = pz_trunc_u64(__dadd_rn(__dmul_rn(w[3], scale), 0.5));
    q[2] = one - q[0] - q[1] - q[3];
}

/* Element k of an image as a double (exact), and whether it counts: not masked, and not a
 * float32 NaN or infinity (mi_parzen_cpu.c's read_pixel). The sample (and mask byte) are loaded
 * whatever the validity, so that a loop can put several pixels' loads in flight before the first
 * use; k must be in range. 16-bit samples go through pz_u32_to_double (int16 shifted by 2^15 and
 * back, both exact) instead of a quarter-rate conversion. */
template <dh_parzen_sample S>
__device__ __forceinline__ bool pz_read_eager(const void *data, const uint8_t *mask, size_t k,
                                              double *v)
{
    const bool on = !mask || mask[k];
    if (S == DH_PARZEN_FLOAT32) {
        const float x = ((const float *)data)[k];
        *v = (double)x;
        return on && isfinite(x);
    }
    if (S == DH_PARZEN_UINT16)
        *v = pz_u32_to_double(((const uint16_t *)data)[k]);
    else
        *v = __dsub_rn(pz_u32_to_double((uint32_t)(((const int16_t *)data)[k] + 32768)),
                       32768.0);
    return on;
}

/* Item b's first pixel of a batch of images of `pixels` samples each. */
template <dh_parzen_sample S>
__device__ __forceinline__ const void *pz_item(const void *data, uint32_t b, size_t pixels)
{
    const size_t bytes = S == DH_PARZEN_FLOAT32 ? 4 : 2;
    return (const char *)data + (size_t)b * pixels * bytes;
}

/* A float's bits and back, on either side (the host's threshold search shares the device's). */
__host__ __device__ __forceinline__ uint32_t pz_bits_of(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

__host__ __device__ __forceinline__ float pz_float_of(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* An order-preserving key of a value (every sample converts to float exactly); -0 counts as +0,
 * which changes no result (the range only enters through differences and comparisons). */
__host__ __device__ __forceinline__ uint32_t pz_key_of_float(float x)
{
    if (x == 0.0f)
        x = 0.0f;
    const uint32_t u = pz_bits_of(x);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

__host__ __device__ __forceinline__ double pz_unkey(uint32_t key)
{
    const uint32_t u = (key & 0x80000000u) ? (key & 0x7FFFFFFFu) : ~key;
    return (double)pz_float_of(u);
}

/* Element k's key, or false when it does not count (pz_read_eager's validity), straight from the
 * sample: no double on the way (a float32 is its own float; a 16-bit integer converts exactly). */
template <dh_parzen_sample S>
__device__ __forceinline__ bool pz_raw_key(const void *data, const uint8_t *mask, size_t k,
                                           uint32_t *key)
{
    float x;
    if (S == DH_PARZEN_FLOAT32)
        x = ((const float *)data)[k];
    else if (S == DH_PARZEN_UINT16)
        x = (float)((const uint16_t *)data)[k];
    else
        x = (float)((const int16_t *)data)[k];
    *key = pz_key_of_float(x);
    return (!mask || mask[k]) && (S != DH_PARZEN_FLOAT32 || isfinite(x));
}

/* Min key and inverted max key of one image's y-th share of its pixels, four independent loads
 * in flight per thread (the pass is bound by memory). */
template <dh_parzen_sample S>
__device__ __forceinline__ void pz_minmax(const void *data, const uint8_t *mask, size_t pixels,
                                          uint32_t *lo, uint32_t *hi_inv)
{
    const size_t step = (size_t)gridDim.y * blockDim.x;
    size_t k = (size_t)blockIdx.y * blockDim.x + threadIdx.x;
    for (; k + 3 * step < pixels; k += 4 * step) {
        uint32_t key[4];
        bool in[4];
#pragma unroll
        for (int u = 0; u < 4; u++)
            in[u] = pz_raw_key<S>(data, mask, k + u * step, &key[u]);
#pragma unroll
        for (int u = 0; u < 4; u++)
            if (in[u]) {
                *lo = min(*lo, key[u]);
                *hi_inv = min(*hi_inv, ~key[u]);
            }
    }
    for (; k < pixels; k += step) {
        uint32_t key;
        if (pz_raw_key<S>(data, mask, k, &key)) {
            *lo = min(*lo, key);
            *hi_inv = min(*hi_inv, ~key);
        }
    }
}

/* Min and max keys of image x (x = count: the fixed image) over its valid pixels: a share per
 * block, merged by atomicMin on the min key and on the inverted max key (both start at all ones:
 * one memset; min and max are exact, so any order). The sample type is a template for the moving
 * images; the fixed image's (one row of blocks) is chosen once per block, not per pixel. */
template <dh_parzen_sample S>
__global__ void __launch_bounds__(PZ_PIXEL_THREADS) pz_range_kernel(pz_args a)
{
    const uint32_t y = blockIdx.x;
    const bool is_fixed = y == a.count;
    if (is_fixed ? a.fixed_given : a.moving_given)
        return;
    uint32_t lo = 0xFFFFFFFFu, hi_inv = 0xFFFFFFFFu;
    if (!is_fixed) {
        pz_minmax<S>(pz_item<S>(a.moving, y, a.pixels),
                     a.moving_mask ? a.moving_mask + (size_t)y * a.pixels : nullptr, a.pixels,
                     &lo, &hi_inv);
    } else if (a.fixed_sample == DH_PARZEN_FLOAT32) {
        pz_minmax<DH_PARZEN_FLOAT32>(a.fixed, a.fixed_mask, a.pixels, &lo, &hi_inv);
    } else if (a.fixed_sample == DH_PARZEN_UINT16) {
        pz_minmax<DH_PARZEN_UINT16>(a.fixed, a.fixed_mask, a.pixels, &lo, &hi_inv);
    } else {
        pz_minmax<DH_PARZEN_INT16>(a.fixed, a.fixed_mask, a.pixels, &lo, &hi_inv);
    }
    for (int o = 16; o > 0; o >>= 1) {
        lo = min(lo, __shfl_xor_sync(0xFFFFFFFFu, lo, o));
        hi_inv = min(hi_inv, __shfl_xor_sync(0xFFFFFFFFu, hi_inv, o));
    }
    if ((threadIdx.x & 31) == 0 && lo != 0xFFFFFFFFu) {
        atomicMin(&a.keys[2 * y], lo);
        atomicMin(&a.keys[2 * y + 1], hi_inv);
    }
}

/* The axis set from lo..hi with dh_parzen_axis_set; returns RN(1 / width) for pz_divide where
 * the width lies in [2^-500, 2^500] (0 elsewhere: the IEEE division then). The same on the host
 * (given ranges, pz_given_axes_set): 1.0 / w is RN(1 / w) there. */
__host__ __device__ __forceinline__ double pz_axis_set(dh_parzen_axis *ax, uint32_t bins,
                                                       double lo, double hi)
{
    dh_parzen_axis_set(ax, bins, lo, hi);
    const double w = ax->width;
    if (!(w >= 0x1p-500 && w <= 0x1p500))
        return 0.0;
#ifdef __CUDA_ARCH__
    return __drcp_rn(w);
#else
    return 1.0 / w;
#endif
}

/* Axis y (y = count: the fixed image) as dh_parzen_axis_init sets it: the given range, or the
 * keys' min..max (0..0 when no pixel was valid); returns pz_axis_set's reciprocal. */
__device__ __forceinline__ double pz_axis_of(const pz_args &a, uint32_t y, dh_parzen_axis *ax)
{
    const bool is_fixed = y == a.count;
    double lo = is_fixed ? a.fixed_lo : a.moving_lo, hi = is_fixed ? a.fixed_hi : a.moving_hi;
    if (!(is_fixed ? a.fixed_given : a.moving_given)) {
        const uint32_t kl = a.keys[2 * y], kh = ~a.keys[2 * y + 1];
        const bool empty = kl == 0xFFFFFFFFu;
        lo = empty ? 0.0 : pz_unkey(kl);
        hi = empty ? 0.0 : pz_unkey(kh);
    }
    return pz_axis_set(ax, a.bins, lo, hi);
}

/* The fixed row of a valid value v: dh_parzen_index(dh_parzen_position(v)), the definition. */
__device__ __forceinline__ uint32_t pz_row_exact(const dh_parzen_axis &ax, double rcp,
                                                 uint32_t bins, double v)
{
    double f;
    return pz_index(bins, pz_position(ax, rcp, v), &f);
}

/* ---- The box window's fixed rows by thresholds ---------------------------------------------
 * Why this is exact. The row of a valid sample v is
 *   row(v) = clamp(trunc(RN(RN(RN(clamp(v, lo, hi) - lo) / width) + 2)), 2, B - 3)
 * (dh_parzen_position, dh_parzen_index; the GPU's pz_divide gives RN(a / width)'s bits). Each
 * step is a non-decreasing function of its argument: clamping to [lo, hi]; subtracting the
 * constant lo and rounding to nearest (rounding is monotone: x <= y gives RN(x) <= RN(y));
 * dividing by the positive constant width and rounding; adding 2 and rounding; truncating a
 * number >= 2 (c >= lo gives RN(c - lo) >= 0, so t >= 2) toward zero; clamping to [2, B - 3].
 * A composition of non-decreasing functions is non-decreasing, so over the float32 values (every
 * sample type converts to float32 exactly; -0 and +0 give the same row, as c - lo is then -lo
 * or +0 - lo, equal values, or both 0 with lo = 0) row is a non-decreasing step function taking
 * values in 2 .. B - 3. Let thr[k] be the smallest finite float32 whose row is >= k (+inf where
 * none is), k = 3 .. B - 3. Then for every finite float32 v, row(v) >= k exactly when v >=
 * thr[k] (if v >= thr[k], row(v) >= row(thr[k]) >= k by monotonicity; if v < thr[k], row(v) < k
 * by thr[k]'s minimality), so
 *   row(v) = 2 + #{k in 3 .. B - 3 : v >= thr[k]},
 * and thr is non-decreasing in k. pz_threshold finds each thr[k] with the exact function itself
 * (no error analysis of any float arithmetic), once per call; pz_box_row takes any estimate e of
 * the row and moves it until thr[e] <= v < thr[e + 1] (the ends 2 and B - 3 need only one side),
 * which by the formula above is the row. A degenerate axis (hi = lo, width 1) puts every value at
 * t = 2: every thr[k] is +inf and every row 2, as the definition says. */

/* The smallest finite float32 whose row is >= k, or +inf (when even FLT_MAX's row is below k):
 * a search over the ordered keys of the finite floats (pz_key_of_float's order), from the float
 * nearest the row's nominal edge lo + (k - 2) width, galloping outward until the edge is
 * bracketed, then halving. Only the number of evaluations depends on that start (about 3 for an
 * ordinary axis; a host emulation of this search and of pz_box_row matched the definition on
 * 130M samples over 112 axes); each evaluation is the exact row, row(v) for a double v: the
 * device's pz_row_exact, or on the host (given ranges, dh_parzen_mi_cuda) the definition's own
 * dh_parzen_position and dh_parzen_index, the same rows. */
template <class Row>
__host__ __device__ float pz_threshold_by(const Row &row, const dh_parzen_axis &ax, uint32_t k)
{
    const int64_t kmin = 0x00800000, kmax = 0xFF7FFFFF; /* -FLT_MAX, +FLT_MAX */
    const double edge = DH_MI_ADD(ax.lo, DH_MI_MUL((double)(k - 2), ax.width));
    const float guess = edge == edge ? (float)edge : 0.0f; /* inf outside float's range */
    int64_t g = (int64_t)pz_key_of_float(guess);
    g = g < kmin ? kmin : (g > kmax ? kmax : g);
    /* at(K): row(K's float) >= k; false below kmin, true above kmax (virtual ends) */
    auto at = [&](int64_t key) { return row(pz_unkey((uint32_t)key)) >= k; };
    if (!at(kmax)) /* no float reaches row k (a degenerate axis: no row above 2) */
        return pz_float_of(0x7F800000u);
    int64_t lo, hi, step = 1; /* at(lo) false (or lo = kmin - 1), at(hi) true (or kmax + 1) */
    if (at(g)) {
        hi = g;
        for (lo = g - 1; lo >= kmin && at(lo); lo = hi - step > kmin - 1 ? hi - step : kmin - 1) {
            hi = lo;
            step *= 2;
        }
    } else {
        lo = g;
        for (hi = g + 1; hi <= kmax && !at(hi); hi = lo + step < kmax + 1 ? lo + step : kmax + 1) {
            lo = hi;
            step *= 2;
        }
    }
    while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (at(mid))
            hi = mid;
        else
            lo = mid;
    }
    return hi > kmax ? pz_float_of(0x7F800000u) : (float)pz_unkey((uint32_t)hi);
}

/* The device's threshold k of the fixed axis, by pz_row_exact. */
__device__ __forceinline__ float pz_threshold(const dh_parzen_axis &ax, double rcp, uint32_t bins,
                                              uint32_t k)
{
    return pz_threshold_by([&](double v) { return pz_row_exact(ax, rcp, bins, v); }, ax, k);
}

/* The axes (pz_axis_of) and their reciprocals after the range pass (a range found from the
 * pixels), one thread an axis; with the box window, thread k = 3 .. B - 3 of the first block also
 * sets the fixed rows' threshold thr[k] (pz_threshold, on the fixed axis it computes itself with
 * the same arithmetic: no wait on another thread). */
__global__ void pz_axes_kernel(pz_args a)
{
    for (uint32_t y = blockIdx.x * blockDim.x + threadIdx.x; y <= a.count;
         y += gridDim.x * blockDim.x)
        a.rcp[y] = pz_axis_of(a, y, &a.axes[y]);
    const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    if (a.fixed_window == DH_PARZEN_FIXED_BOX && k >= 3 && k + 3 <= a.bins) {
        dh_parzen_axis ax;
        const double rcp = pz_axis_of(a, a.count, &ax);
        a.thr[k] = pz_threshold(ax, rcp, a.bins, k);
    }
}

/* With both ranges given the axes depend on the parameters alone: the host computes them, the
 * reciprocals and the box window's thresholds once (dh_parzen_mi_cuda keeps them while the
 * parameters stay) with the definition's own functions, and pz_prepare_kernel stores them. */
struct pz_given_axes {
    dh_parzen_axis fixed, moving;
    double fixed_rcp, moving_rcp;
    float thr[DH_PARZEN_MAX_BINS];
};

/* The definition's row of a value, dh_parzen_index(dh_parzen_position(v)) (a functor, so that
 * pz_threshold_by's host and device forms both compile it). */
struct pz_definition_row {
    const dh_parzen_axis *ax;
    __host__ __device__ uint32_t operator()(double v) const
    {
        double f;
        return dh_parzen_index(ax->bins, dh_parzen_position(ax, v), &f);
    }
};

/* pz_axis_of's arithmetic on the host for a call with both ranges given (pz_axis_set), and the
 * box window's thresholds by the definition's own row (dh_parzen_position, dh_parzen_index): the
 * bits the device computes. */
inline void pz_given_axes_set(const pz_args &a, pz_given_axes *g)
{
    g->fixed_rcp = pz_axis_set(&g->fixed, a.bins, a.fixed_lo, a.fixed_hi);
    g->moving_rcp = pz_axis_set(&g->moving, a.bins, a.moving_lo, a.moving_hi);
    memset(g->thr, 0, sizeof g->thr);
    if (a.fixed_window != DH_PARZEN_FIXED_BOX)
        return;
    for (uint32_t k = 3; k + 3 <= a.bins; k++)
        g->thr[k] = pz_threshold_by(pz_definition_row{&g->fixed}, g->fixed, k);
}

/* A call's first step, one launch where two memsets and, with both ranges given, the axes kernel
 * were: the counts and joint histograms zeroed (`zero`, 16-byte words: the histogram pass adds
 * into them), the range keys set to all ones where a range is found (`ones`: the range pass
 * keeps minima of keys and of inverted maxima), and with both ranges given the axes and
 * thresholds of `g` stored. Session 22 timed the memsets at 6.0 us and the axes kernel at about
 * 9 us of the 512^3 pair's call (S22-2a). */
__global__ void __launch_bounds__(256) pz_prepare_kernel(pz_args a, uint4 *zero, size_t zero16,
                                                         uint4 *ones, size_t ones16,
                                                         pz_given_axes g)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (size_t i = first; i < zero16; i += stride)
        zero[i] = make_uint4(0u, 0u, 0u, 0u);
    for (size_t i = first; i < ones16; i += stride)
        ones[i] = make_uint4(~0u, ~0u, ~0u, ~0u);
    if (!a.fixed_given || !a.moving_given)
        return;
    for (size_t y = first; y <= a.count; y += stride) {
        const bool fixed = y == a.count;
        a.axes[y] = fixed ? g.fixed : g.moving;
        a.rcp[y] = fixed ? g.fixed_rcp : g.moving_rcp;
    }
    if (a.fixed_window == DH_PARZEN_FIXED_BOX && first >= 3 && first + 3 <= a.bins)
        a.thr[first] = g.thr[first];
}

/* Launches pz_prepare_kernel: about four 16-byte words a thread, at most `most_blocks` blocks;
 * `ones16` 0 with both ranges given (no range pass), whose axes `g` holds. */
inline void pz_launch_prepare(const pz_args &a, uint4 *zero, size_t zero16, uint4 *ones,
                              size_t ones16, const pz_given_axes &g, size_t most_blocks,
                              cudaStream_t stream)
{
    constexpr size_t threads = 256;
    size_t blocks = (zero16 + ones16 + 4 * threads - 1) / (4 * threads);
    blocks = blocks < 1 ? 1 : (blocks > most_blocks ? most_blocks : blocks);
    pz_prepare_kernel<<<(unsigned)blocks, (unsigned)threads, 0, stream>>>(a, zero, zero16, ones,
                                                                          ones16, g);
}

/* What a fixed pass by thresholds keeps per block: thr[3 .. B - 3] in shared memory, and a float32
 * estimate of the row from the axis (any estimate would do; a close one makes pz_box_row's
 * corrections rare). */
struct pz_box {
    const float *thr;
    float lo, rcp, top; /* float32 lo and 1 / width (0 or inf give a poor estimate, not a wrong
                           row), B - 3 */
    uint32_t last;      /* B - 3 */
};

/* The box window's row of a valid sample x (pz_threshold's comment says why it is exact):
 * e = the estimate clamped to 2 .. B - 3 (fminf and fmaxf drop a NaN), moved up while x >=
 * thr[e + 1] and down while x < thr[e]. */
__device__ __forceinline__ uint32_t pz_box_row(const pz_box &b, float x)
{
    const float est = fminf(fmaxf(__fmaf_rn(__fsub_rn(x, b.lo), b.rcp, 2.0f), 2.0f), b.top);
    uint32_t e = (uint32_t)__float2int_rz(est);
    while (e < b.last && x >= b.thr[e + 1])
        e++;
    while (e > 2u && x < b.thr[e])
        e--;
    return e;
}

/* Loads thr[3 .. B - 3] into the block's shared copy and sets the estimate's constants. */
__device__ __forceinline__ pz_box pz_box_setup(const pz_args &a, float *s_thr)
{
    for (uint32_t k = 3 + threadIdx.x; k + 3 <= a.bins; k += blockDim.x)
        s_thr[k] = a.thr[k];
    __syncthreads();
    pz_box b;
    b.thr = s_thr;
    b.lo = (float)a.axes[a.count].lo;
    b.rcp = (float)a.rcp[a.count];
    b.last = a.bins - 3u;
    b.top = (float)b.last;
    return b;
}

/* Each fixed pixel's index i on its axis (PZ_NO_ROW where it does not count) and, for the cubic
 * window, its position t (also returned), by the exact FP64 path: computed once per call, read
 * by every batch item. pz_fixed_row computes, pz_fixed_pixel also stores the row. The box window
 * takes its rows by thresholds instead (pz_box_row; the same rows). */
__device__ __forceinline__ uint8_t pz_fixed_row(const pz_args &a, const dh_parzen_axis &ax,
                                                double rcp, size_t k, bool valid, double v,
                                                double *t)
{
    double f;
    uint8_t row = PZ_NO_ROW;
    if (valid) {
        *t = pz_position(ax, rcp, v);
        row = (uint8_t)pz_index(a.bins, *t, &f);
        if (a.fixed_window == DH_PARZEN_FIXED_CUBIC)
            a.fixed_t[k] = *t;
    }
    return row;
}

/* The same, the row stored. */
__device__ __forceinline__ uint8_t pz_fixed_pixel(const pz_args &a, const dh_parzen_axis &ax,
                                                  double rcp, size_t k, bool valid, double v,
                                                  double *t)
{
    const uint8_t row = pz_fixed_row(a, ax, rcp, k, valid, v, t);
    a.fixed_row[k] = row;
    return row;
}

/* Fixed element k as a double and whether it counts, its sample type chosen at run time (uniform
 * over the grid): for the histogram pass of a one-item call, which computes the fixed rows
 * itself (pz_hist_kernel's FUSED). */
__device__ __forceinline__ bool pz_read_fixed(const pz_args &a, size_t k, double *v)
{
    if (a.fixed_sample == DH_PARZEN_FLOAT32)
        return pz_read_eager<DH_PARZEN_FLOAT32>(a.fixed, a.fixed_mask, k, v);
    if (a.fixed_sample == DH_PARZEN_UINT16)
        return pz_read_eager<DH_PARZEN_UINT16>(a.fixed, a.fixed_mask, k, v);
    return pz_read_eager<DH_PARZEN_INT16>(a.fixed, a.fixed_mask, k, v);
}

/* What one fixed pass needs per block: the fixed axis and its reciprocal (the exact path) or
 * the thresholds and the estimate (BOX: pz_box). */
struct pz_fixed_ctx {
    dh_parzen_axis ax;
    double rcp;
    pz_box box;
};

template <bool BOX>
__device__ __forceinline__ pz_fixed_ctx pz_fixed_setup(const pz_args &a, float *s_thr)
{
    pz_fixed_ctx c;
    c.ax = a.axes[a.count];
    c.rcp = a.rcp[a.count];
    if (BOX)
        c.box = pz_box_setup(a, s_thr);
    return c;
}

/* The value type of a fixed pass's samples: float32 for the box window's thresholds (every
 * sample type is exact in it), double for the exact path. */
template <bool BOX> using pz_fixed_value = typename std::conditional<BOX, float, double>::type;

/* A fixed pixel's row (PZ_NO_ROW where it does not count): BOX by the thresholds (pz_box_row),
 * else the exact FP64 path (pz_fixed_row, which also stores the cubic window's position). */
template <bool BOX>
__device__ __forceinline__ uint8_t pz_fixed_row_of(const pz_args &a, const pz_fixed_ctx &c,
                                                   size_t k, bool valid, pz_fixed_value<BOX> v)
{
    if (BOX)
        return valid ? (uint8_t)pz_box_row(c.box, (float)v) : PZ_NO_ROW;
    double t;
    return pz_fixed_row(a, c.ax, c.rcp, k, valid, (double)v, &t);
}

/* The fixed pass, one pixel per load (the scalar path, for a fixed image or mask not aligned for
 * pz_fixed_vec_kernel): four pixels' loads in flight per thread. BOX: the box window's rows by
 * thresholds; else the exact path (the cubic window; also the box window's rows as sessions
 * 18-19 computed them, kept for bench_mi_parzen's comparison). */
template <dh_parzen_sample S, bool BOX>
__global__ void __launch_bounds__(PZ_PIXEL_THREADS) pz_fixed_kernel(pz_args a)
{
    __shared__ float s_thr[BOX ? DH_PARZEN_MAX_BINS : 1];
    const pz_fixed_ctx c = pz_fixed_setup<BOX>(a, s_thr);
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; k + 3 * stride < a.pixels; k += 4 * stride) {
        double v[4];
        bool valid[4];
#pragma unroll
        for (int u = 0; u < 4; u++)
            valid[u] = pz_read_eager<S>(a.fixed, a.fixed_mask, k + u * stride, &v[u]);
#pragma unroll
        for (int u = 0; u < 4; u++)
            a.fixed_row[k + u * stride] =
                pz_fixed_row_of<BOX>(a, c, k + u * stride, valid[u], (pz_fixed_value<BOX>)v[u]);
    }
    for (; k < a.pixels; k += stride) {
        double v;
        const bool valid = pz_read_eager<S>(a.fixed, a.fixed_mask, k, &v);
        a.fixed_row[k] = pz_fixed_row_of<BOX>(a, c, k, valid, (pz_fixed_value<BOX>)v);
    }
}

/* A 16-bit sample's value (u: the uint16, or the int16 plus 2^15 with `shifted`), exactly, as a
 * double (pz_u32_to_double) or a float (the float whose bits are 2^23's with u in the low bits is
 * 2^23 + u; subtracting 2^23, then 2^15, is exact). */
__device__ __forceinline__ void pz_u16_value(uint32_t u, bool shifted, double *v)
{
    const double d = pz_u32_to_double(u);
    *v = shifted ? __dsub_rn(d, 32768.0) : d;
}

__device__ __forceinline__ void pz_u16_value(uint32_t u, bool shifted, float *v)
{
    const float f = __fsub_rn(__uint_as_float(0x4B000000u | u), 8388608.0f);
    *v = shifted ? __fsub_rn(f, 32768.0f) : f;
}

/* Fixed pixels 4g..4g+3 as values of type T (exact) and whether each counts (pz_read_eager's
 * rules), by one vector load of the samples (16 bytes for float32, 8 for 16-bit) and one 4-byte
 * load of the mask: pz_fixed_vec_kernel's, whose caller checked the alignments. */
template <dh_parzen_sample S, typename T>
__device__ __forceinline__ void pz_read_fixed4(const pz_args &a, size_t g, T v[4], bool valid[4])
{
    const uint32_t m = a.fixed_mask ? ((const uint32_t *)a.fixed_mask)[g] : 0xFFFFFFFFu;
    if (S == DH_PARZEN_FLOAT32) {
        const float4 x4 = ((const float4 *)a.fixed)[g];
        const float x[4] = {x4.x, x4.y, x4.z, x4.w};
#pragma unroll
        for (int u = 0; u < 4; u++) {
            v[u] = (T)x[u];
            valid[u] = ((m >> (8 * u)) & 0xFFu) && isfinite(x[u]);
        }
        return;
    }
    uint32_t x[4];
    if (S == DH_PARZEN_UINT16) {
        const ushort4 h = ((const ushort4 *)a.fixed)[g];
        x[0] = h.x, x[1] = h.y, x[2] = h.z, x[3] = h.w;
    } else {
        const short4 h = ((const short4 *)a.fixed)[g];
        x[0] = (uint32_t)(h.x + 32768), x[1] = (uint32_t)(h.y + 32768);
        x[2] = (uint32_t)(h.z + 32768), x[3] = (uint32_t)(h.w + 32768);
    }
#pragma unroll
    for (int u = 0; u < 4; u++) {
        pz_u16_value(x[u], S == DH_PARZEN_INT16, &v[u]);
        valid[u] = (m >> (8 * u)) & 0xFFu;
    }
}

/* pz_fixed_kernel's rows by groups of four pixels: one vector load of the samples (and one of the
 * mask bytes) and one 4-byte store of the four rows per group, two groups in flight per thread,
 * 32-bit group arithmetic where the scalar kernel spends 64-bit index arithmetic and a byte store
 * per pixel. The same per-pixel function (pz_fixed_row_of), so the same bits. Needs the fixed
 * samples 16-byte (float32) or 8-byte (16-bit) aligned and the mask 4-byte aligned (the launch
 * checks); the pixels % 4 left over go through the scalar path. Session 19 (docs/performance.md)
 * measured the exact form against the scalar kernel and against the pass's read + write floor;
 * session 20 the box window's form by thresholds (BOX). */
template <dh_parzen_sample S, bool BOX>
__global__ void __launch_bounds__(PZ_PIXEL_THREADS) pz_fixed_vec_kernel(pz_args a)
{
    __shared__ float s_thr[BOX ? DH_PARZEN_MAX_BINS : 1];
    const pz_fixed_ctx c = pz_fixed_setup<BOX>(a, s_thr);
    const size_t groups = a.pixels / 4, stride = (size_t)gridDim.x * blockDim.x;
    const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    uint32_t *rows4 = (uint32_t *)a.fixed_row;
    size_t g = first;
    for (; g + stride < groups; g += 2 * stride) {
        pz_fixed_value<BOX> v[8];
        bool valid[8];
        pz_read_fixed4<S>(a, g, v, valid);
        pz_read_fixed4<S>(a, g + stride, v + 4, valid + 4);
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const size_t gh = g + h * stride;
            uint32_t word = 0;
#pragma unroll
            for (int u = 0; u < 4; u++)
                word |= (uint32_t)pz_fixed_row_of<BOX>(a, c, 4 * gh + u, valid[4 * h + u],
                                                       v[4 * h + u])
                        << (8 * u);
            rows4[gh] = word;
        }
    }
    for (; g < groups; g += stride) {
        pz_fixed_value<BOX> v[4];
        bool valid[4];
        pz_read_fixed4<S>(a, g, v, valid);
        uint32_t word = 0;
#pragma unroll
        for (int u = 0; u < 4; u++)
            word |= (uint32_t)pz_fixed_row_of<BOX>(a, c, 4 * g + u, valid[u], v[u]) << (8 * u);
        rows4[g] = word;
    }
    for (size_t k = 4 * groups + first; k < a.pixels; k += stride) {
        double v;
        const bool valid = pz_read_eager<S>(a.fixed, a.fixed_mask, k, &v);
        a.fixed_row[k] = pz_fixed_row_of<BOX>(a, c, k, valid, (pz_fixed_value<BOX>)v);
    }
}

/* The fixed pass's blocks per SM (`per_sm[0]` the scalar kernel's, `per_sm[1]` the vector
 * kernel's), as many as fit at once. */
template <dh_parzen_sample S, bool BOX>
inline cudaError_t pz_fixed_occupancy(int per_sm[2])
{
    cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &per_sm[0], pz_fixed_kernel<S, BOX>, PZ_PIXEL_THREADS, 0);
    if (e == cudaSuccess)
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm[1], pz_fixed_vec_kernel<S, BOX>,
                                                          PZ_PIXEL_THREADS, 0);
    return e;
}

/* The fixed pass's grid: the blocks its pixels fill (four a thread on the scalar path, eight on
 * the vector one), at most one wave of what fits (`per_sm` blocks on each of `sms` SMs). Both
 * kernels stride over the pixels, so the grid changes no bit. One wave because the last blocks
 * of a second, partial wave start only as earlier ones end: on the 512^3 pair (an H100, five
 * vector blocks an SM) one wave took 265 us where eight blocks an SM (1.6 waves) took 290
 * (bench_mi_parzen --waves3d, session 19). */
inline size_t pz_fixed_blocks(size_t pixels, bool vec, int sms, int per_sm)
{
    const size_t per_block = (size_t)PZ_PIXEL_THREADS * (vec ? 8 : 4);
    const size_t blocks = (pixels + per_block - 1) / per_block;
    const size_t wave = (size_t)sms * (size_t)(per_sm > 0 ? per_sm : 1);
    return blocks < wave ? blocks : wave;
}

/* Adds w (skipping zero weights: they add nothing) to a cell of an item's histogram in global
 * memory (a native 64-bit atomic). */
__device__ __forceinline__ void pz_add_global(unsigned long long *cell, uint64_t w)
{
    if (w)
        atomicAdd(cell, (unsigned long long)w);
}

/* Adds w < 2^32 to a private cell kept as two 32-bit words in shared memory: the low word with
 * the native 32-bit shared atomic, and its carry into the high word when the addition wrapped
 * (the old value tells, exactly). A 64-bit shared atomicAdd would be a compare-and-swap loop,
 * slow where many pixels share a cell. Every weight is below 2^32: the largest, 2/3 of a pixel,
 * is 2/3 2^32 (box) or (2/3 2^16)^2 (cubic). Session 15 measured the alternative without carries
 * (sums of the weights' 16-bit halves in two words, two atomics per weight, no returned value):
 * 1.15 ms against 0.71 ms for the histograms of 1024 pairs: 8 atomics per pixel against 5 on
 * average (one carry per pixel, the weights summing to 2^32), the shared atomics being the bound
 * (docs/performance.md). */
__device__ __forceinline__ void pz_add_private(uint32_t *lo, uint32_t *hi, uint32_t c, uint32_t w)
{
    if (w) {
        const uint32_t old = atomicAdd(&lo[c], w);
        if (old + w < old)
            atomicAdd(&hi[c], 1u);
    }
}

/* The same for a sum w of up to 32 weights (below 2^37): low word, carry, high word. */
__device__ __forceinline__ void pz_add_private_wide(uint32_t *lo, uint32_t *hi, uint32_t c,
                                                    uint64_t w)
{
    const uint32_t wl = (uint32_t)w, wh = (uint32_t)(w >> 32);
    const uint32_t old = wl ? atomicAdd(&lo[c], wl) : 0u;
    const uint32_t carry = wl && old + wl < old ? 1u : 0u;
    if (wh + carry)
        atomicAdd(&hi[c], wh + carry);
}

/* The joint histogram of item x: its y-th share of the pixels, into a private histogram in
 * shared memory (PRIVATE: low words then high words, cells x 8 bytes; then one merge of the
 * non-zero cells) or straight into the item's histogram. Box window: moving weights at 2^32, the
 * fixed pixel's row; cubic: both at 2^16 and their products (accumulate of mi_parzen_cpu.c).
 * FUSED (a one-item call with the cubic window): the fixed rows and positions are computed here
 * from the fixed image and written for the gradient pass, instead of by pz_fixed_kernel in a pass
 * of its own: one item visits each fixed pixel once, so the batch's reason for that pass (compute
 * once, read by every item) does not hold, and the 8-byte positions are written once and not
 * read back. Session 17 measured it (docs/performance.md): the 512^3 pair's cubic call 7.81 ->
 * 6.62 ms; for the box window it lost (2.70-2.83 -> 2.87 ms: the fused kernel's 58 registers
 * against 38 cost more occupancy than the 0.36 ms pass saved), so the box window keeps the pass. */
template <dh_parzen_sample S, bool CUBIC, bool PRIVATE, bool FUSED>
__global__ void __launch_bounds__(PZ_HIST_THREADS) pz_hist_kernel(pz_args a)
{
    extern __shared__ uint32_t s_words[];
    __shared__ unsigned long long s_n;
    const uint32_t b = blockIdx.x, B = a.bins, cells = B * B;
    unsigned long long *joint = a.joint + (size_t)b * cells;
    uint32_t *lo = s_words, *hi = s_words + cells;
    if (PRIVATE)
        for (uint32_t c = threadIdx.x; c < 2 * cells; c += blockDim.x)
            s_words[c] = 0;
    if (threadIdx.x == 0)
        s_n = 0;
    __syncthreads();
    const dh_parzen_axis ax = a.axes[b];
    const double rcp = a.rcp[b];
    const dh_parzen_axis fax = a.axes[a.count]; /* FUSED: the fixed image's axis */
    const double frcp = a.rcp[a.count];
    const void *moving = pz_item<S>(a.moving, b, a.pixels);
    const uint8_t *mask = a.moving_mask ? a.moving_mask + (size_t)b * a.pixels : nullptr;
    const uint64_t one_m = CUBIC ? (uint64_t)1 << 16 : DH_PARZEN_UNIT;
    const uint64_t one_f = DH_PARZEN_UNIT / one_m;
    uint32_t counted = 0;
    /* warp-uniform trips (every lane runs each one, `in` says whether it holds a pixel), so that
     * the warp can sum the weights of pixels that share cells */
    const uint32_t lane = threadIdx.x & 31u;
    for (size_t k0 = (size_t)blockIdx.y * blockDim.x + (threadIdx.x & ~31u); k0 < a.pixels;
         k0 += (size_t)gridDim.y * blockDim.x) {
        const size_t k = k0 + lane;
        uint8_t row = PZ_NO_ROW;
        double v = 0.0, f, wm[4], ft = 0.0;
        bool valid = false;
        if (k < a.pixels) { /* both loads in flight at once */
            if (FUSED) {
                double fv;
                const bool fixed_valid = pz_read_fixed(a, k, &fv);
                valid = pz_read_eager<S>(moving, mask, k, &v);
                row = pz_fixed_pixel(a, fax, frcp, k, fixed_valid, fv, &ft);
            } else {
                row = a.fixed_row[k];
                valid = pz_read_eager<S>(moving, mask, k, &v);
            }
        }
        const bool in = row != PZ_NO_ROW && valid;
        uint32_t c = 0xFFFFFFFFu; /* the first cell: fixed row (first of four: cubic), moving im */
        uint64_t qm[4] = {0, 0, 0, 0}, qf[4] = {1, 0, 0, 0};
        if (in) {
            const uint32_t im = pz_index(B, pz_position(ax, rcp, v), &f) - 1;
            dh_parzen_bspline(f, wm);
            pz_quantize(wm, one_m, qm);
            uint32_t first = row;
            if (CUBIC) {
                double ff, wf[4];
                first = pz_index(B, FUSED ? ft : a.fixed_t[k], &ff) - 1;
                dh_parzen_bspline(ff, wf);
                pz_quantize(wf, one_f, qf);
            }
            c = first * B + im;
            counted++;
        }
        constexpr int ROWS = CUBIC ? 4 : 1;
        /* the warp's pixels in runs of one first cell; at most PZ_WARP_GROUPS runs (smooth
         * images, a DRR's background): each distinct cell's weights summed by the warp and
         * added once by one lane, instead of up to 32 same-address atomics in a row */
        const uint32_t prev = __shfl_up_sync(0xFFFFFFFFu, c, 1);
        const uint32_t starts =
            __ballot_sync(0xFFFFFFFFu, c != 0xFFFFFFFFu && (lane == 0 || c != prev));
        if (__popc(starts) <= PZ_WARP_GROUPS) {
            uint32_t pending = __ballot_sync(0xFFFFFFFFu, c != 0xFFFFFFFFu);
            while (pending) { /* warp-uniform: every lane runs every turn */
                const int l = __ffs(pending) - 1;
                const uint32_t cl = __shfl_sync(0xFFFFFFFFu, c, l);
                const bool mine = c == cl;
                pending &= ~__ballot_sync(0xFFFFFFFFu, mine);
#pragma unroll
                for (int r = 0; r < ROWS; r++)
#pragma unroll
                    for (int j = 0; j < 4; j++) {
                        /* each weight (< 2^32; a cubic one is a product of two below 2^16) in
                         * two 16-bit halves: 32 x 2^16 fits in 32 bits */
                        const uint32_t w = mine ? (uint32_t)qf[r] * (uint32_t)qm[j] : 0u;
                        const uint64_t sum =
                            (uint64_t)__reduce_add_sync(0xFFFFFFFFu, w & 0xFFFFu) +
                            ((uint64_t)__reduce_add_sync(0xFFFFFFFFu, w >> 16) << 16);
                        if (lane == (uint32_t)l) {
                            if (PRIVATE)
                                pz_add_private_wide(lo, hi, cl + r * B + j, sum);
                            else
                                pz_add_global(joint + cl + r * B + j, sum);
                        }
                    }
            }
        } else if (in) {
#pragma unroll
            for (int r = 0; r < ROWS; r++)
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const uint32_t w = (uint32_t)qf[r] * (uint32_t)qm[j];
                    if (PRIVATE)
                        pz_add_private(lo, hi, c + r * B + j, w);
                    else
                        pz_add_global(joint + c + r * B + j, w);
                }
        }
    }
    for (int o = 16; o > 0; o >>= 1)
        counted += __shfl_xor_sync(0xFFFFFFFFu, counted, o);
    if ((threadIdx.x & 31) == 0 && counted)
        atomicAdd(&s_n, (unsigned long long)counted);
    __syncthreads();
    if (PRIVATE)
        for (uint32_t c = threadIdx.x; c < cells; c += blockDim.x)
            pz_add_global(joint + c, ((uint64_t)hi[c] << 32) + lo[c]);
    if (threadIdx.x == 0 && s_n)
        atomicAdd(&a.n[b], s_n);
}

/* The raw bits of PZ_RUN samples from k (32-bit words: a float32's bits or a 16-bit integer),
 * their validity bits (mask byte non-zero) and the fixed rows (a byte each, pixel u in bits
 * 8u..8u+7); `vec`: 16-byte loads for the samples and 8-byte ones for the mask bytes and rows (the
 * caller checked the alignment), else one load per pixel, PZ_NO_ROW past the end. */
template <dh_parzen_sample S>
__device__ __forceinline__ void pz_load_run(const pz_args &a, const void *moving,
                                            const uint8_t *mask, size_t k, bool vec,
                                            uint32_t (&raw)[PZ_RUN], uint32_t *on,
                                            uint64_t *rows)
{
    if (vec && k + PZ_RUN <= a.pixels) {
        if (S == DH_PARZEN_FLOAT32) {
            const uint4 x = *(const uint4 *)((const uint32_t *)moving + k);
            const uint4 y = *(const uint4 *)((const uint32_t *)moving + k + 4);
            raw[0] = x.x, raw[1] = x.y, raw[2] = x.z, raw[3] = x.w;
            raw[4] = y.x, raw[5] = y.y, raw[6] = y.z, raw[7] = y.w;
        } else {
            const uint4 x = *(const uint4 *)((const uint16_t *)moving + k);
            const uint32_t w[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
            for (int u = 0; u < 4; u++) {
                raw[2 * u] = w[u] & 0xFFFFu;
                raw[2 * u + 1] = w[u] >> 16;
            }
        }
        *rows = *(const unsigned long long *)(a.fixed_row + k);
        *on = 0xFFu;
        if (mask) {
            const uint64_t m = *(const unsigned long long *)(mask + k);
            uint32_t bits = 0;
#pragma unroll
            for (int u = 0; u < PZ_RUN; u++)
                bits |= ((m >> (8 * u)) & 0xFFu) ? 1u << u : 0u;
            *on = bits;
        }
        return;
    }
    *rows = 0;
    *on = 0;
#pragma unroll
    for (int u = 0; u < PZ_RUN; u++) {
        uint64_t row = PZ_NO_ROW;
        raw[u] = 0;
        if (k + u < a.pixels) {
            row = a.fixed_row[k + u];
            raw[u] = S == DH_PARZEN_FLOAT32 ? ((const uint32_t *)moving)[k + u]
                                            : ((const uint16_t *)moving)[k + u];
            *on |= !mask || mask[k + u] ? 1u << u : 0u;
        }
        *rows |= row << (8 * u);
    }
}

/* A sample's raw bits as a double (exact) and whether it is a finite value (pz_read_eager's
 * arithmetic). */
template <dh_parzen_sample S>
__device__ __forceinline__ bool pz_raw_value(uint32_t raw, double *v)
{
    if (S == DH_PARZEN_FLOAT32) {
        const float x = __uint_as_float(raw);
        *v = (double)x;
        return isfinite(x);
    }
    if (S == DH_PARZEN_UINT16)
        *v = pz_u32_to_double(raw);
    else
        *v = __dsub_rn(pz_u32_to_double((uint32_t)((int32_t)(int16_t)raw + 32768)), 32768.0);
    return true;
}

/* One pixel's gradient (mi_parzen_cpu.c's pixel_gradients): 0 unless it counts and lies inside
 * the moving range, else scale sum_a wf_a sum_j cell[row + a][im + j] slope_j. */
template <bool CUBIC>
__device__ __forceinline__ float pz_pixel_gradient(const pz_args &a, const dh_parzen_axis &ax,
                                                   double rcp, double scale,
                                                   const double *table, size_t k, uint8_t row,
                                                   bool valid, double v)
{
    const uint32_t B = a.bins;
    if (row == PZ_NO_ROW || !valid || v < ax.lo || v > ax.hi)
        return 0.0f;
    double f, slope[4], wf[4];
    const uint32_t im = pz_index(B, pz_position(ax, rcp, v), &f) - 1;
    dh_parzen_bspline_slope(f, slope);
    uint32_t first = row, rows = 1;
    wf[0] = 1.0;
    if (CUBIC) {
        double ff;
        first = pz_index(B, a.fixed_t[k], &ff) - 1;
        dh_parzen_bspline(ff, wf);
        rows = 4;
    }
#define PZ_CELL(r, c) table[(r) * B + (c)] /* 32-bit: at most 256 x 256 cells */
    double sum;
    DH_PARZEN_PIXEL_SUM(sum, rows, wf, slope, PZ_CELL, first, im);
#undef PZ_CELL
    return (float)DH_MI_MUL(sum, scale);
}

/* Item x's gradient over its y-th share of the pixels: each pixel from its own cells of the
 * item's factor table (copied to shared memory when SHARED), four pixels' loads in flight per
 * thread. Writes every pixel: 0 where it does not count and everywhere when the item's gradient
 * is 0. */
template <dh_parzen_sample S, bool CUBIC, bool SHARED>
__global__ void __launch_bounds__(PZ_PIXEL_THREADS) pz_gradient_kernel(pz_args a)
{
    extern __shared__ double s_cell[];
    const uint32_t b = blockIdx.x, cells = a.bins * a.bins;
    float *g = a.gradient + (size_t)b * a.pixels;
    const size_t first_k = (size_t)blockIdx.y * blockDim.x + threadIdx.x;
    const size_t stride = (size_t)gridDim.y * blockDim.x;
    if (a.grad_zero[b]) { /* uniform over the block */
        for (size_t k = first_k; k < a.pixels; k += stride)
            g[k] = 0.0f;
        return;
    }
    const double *table = a.cell + (size_t)b * cells;
    if (SHARED) {
        for (uint32_t c = threadIdx.x; c < cells; c += blockDim.x)
            s_cell[c] = table[c];
        __syncthreads();
        table = s_cell;
    }
    const dh_parzen_axis ax = a.axes[b];
    const double rcp = a.rcp[b];
    const double scale = a.scale[b];
    const void *moving = pz_item<S>(a.moving, b, a.pixels);
    const uint8_t *mask = a.moving_mask ? a.moving_mask + (size_t)b * a.pixels : nullptr;
    if (!CUBIC && a.vec_gradient) {
        /* PZ_RUN contiguous pixels per thread: 16-byte loads and stores, fewer memory
         * instructions than one pixel per load. Box window only: the cubic window's eight
         * unrolled pixels take more registers, and session 16 measured it slower that way
         * (bench/NOTES.md) */
        const size_t groups = (a.pixels + PZ_RUN - 1) / PZ_RUN;
        for (size_t gi = first_k; gi < groups; gi += stride) {
            const size_t k0 = gi * PZ_RUN;
            uint32_t raw[PZ_RUN], on;
            uint64_t rows;
            pz_load_run<S>(a, moving, mask, k0, true, raw, &on, &rows);
            float out[PZ_RUN];
#pragma unroll
            for (int u = 0; u < PZ_RUN; u++) {
                double v;
                const bool valid = pz_raw_value<S>(raw[u], &v) && ((on >> u) & 1u);
                out[u] = pz_pixel_gradient<CUBIC>(a, ax, rcp, scale, table, k0 + u,
                                                  (uint8_t)(rows >> (8 * u)), valid, v);
            }
            if (k0 + PZ_RUN <= a.pixels) {
                *(float4 *)(g + k0) = make_float4(out[0], out[1], out[2], out[3]);
                *(float4 *)(g + k0 + 4) = make_float4(out[4], out[5], out[6], out[7]);
            } else {
#pragma unroll
                for (int u = 0; u < PZ_RUN; u++)
                    if (k0 + u < a.pixels)
                        g[k0 + u] = out[u];
            }
        }
        return;
    }
    size_t k = first_k;
    for (; k + 3 * stride < a.pixels; k += 4 * stride) {
        uint8_t row[4];
        double v[4];
        bool valid[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            row[u] = a.fixed_row[k + u * stride];
            valid[u] = pz_read_eager<S>(moving, mask, k + u * stride, &v[u]);
        }
#pragma unroll
        for (int u = 0; u < 4; u++)
            g[k + u * stride] = pz_pixel_gradient<CUBIC>(a, ax, rcp, scale, table, k + u * stride,
                                                         row[u], valid[u], v[u]);
    }
    for (; k < a.pixels; k += stride) {
        double v;
        const bool valid = pz_read_eager<S>(moving, mask, k, &v);
        g[k] = pz_pixel_gradient<CUBIC>(a, ax, rcp, scale, table, k, a.fixed_row[k], valid, v);
    }
}

} // namespace

#endif /* DH_KERNELS_MI_PARZEN_CUDA_PIXELS_CUH */
