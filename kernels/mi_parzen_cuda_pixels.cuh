// SPDX-License-Identifier: MIT
/*
 * mi_parzen_cuda_pixels.cuh: the per-pixel kernels of the Parzen MI GPU twin (mi_parzen_cuda.cu):
 * the ranges (min..max over the valid pixels), the axes, the fixed image's bins, the joint
 * histograms and the gradient. Every double step is mi_parzen.h's (DH_MI_* are __dadd_rn and kin
 * on the device, never fused), so each pixel's window, quantized weights and gradient are the
 * CPU twin's bits; the histograms are uint64 sums of those integers, exact in any order, so
 * atomics keep the bits.
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

#include "mi_parzen.h"

namespace {

constexpr uint8_t PZ_NO_ROW = 0xFF; /* a fixed pixel that does not count (bins are <= 253) */
constexpr int PZ_HIST_THREADS = 512;
constexpr int PZ_PIXEL_THREADS = 256;
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
    unsigned long long *n;     /* count: the pixels counted (zeroed with joint) */
    unsigned long long *joint; /* count x bins x bins */
    double *cell;              /* count x bins x bins: the gradient's factors */
    double *scale;             /* count: the gradient's scale */
    uint32_t *grad_zero;       /* count: 1 where the whole gradient is 0 */
    dh_mi_values *out;
    float *gradient;
};

/* Element k of an image as a double (exact), or false when it does not count: masked, or a
 * float32 NaN or infinity (mi_parzen_cpu.c's read_pixel). */
template <dh_parzen_sample S>
__device__ __forceinline__ bool pz_read(const void *data, const uint8_t *mask, size_t k, double *v)
{
    if (mask && !mask[k])
        return false;
    if (S == DH_PARZEN_FLOAT32) {
        const float x = ((const float *)data)[k];
        *v = (double)x;
        return isfinite(x);
    }
    if (S == DH_PARZEN_UINT16) {
        *v = (double)((const uint16_t *)data)[k];
        return true;
    }
    *v = (double)((const int16_t *)data)[k];
    return true;
}

/* Item b's first pixel of a batch of images of `pixels` samples each. */
template <dh_parzen_sample S>
__device__ __forceinline__ const void *pz_item(const void *data, uint32_t b, size_t pixels)
{
    const size_t bytes = S == DH_PARZEN_FLOAT32 ? 4 : 2;
    return (const char *)data + (size_t)b * pixels * bytes;
}

__device__ __forceinline__ bool pz_read_any(dh_parzen_sample s, const void *data,
                                            const uint8_t *mask, size_t k, double *v)
{
    switch (s) {
    case DH_PARZEN_FLOAT32:
        return pz_read<DH_PARZEN_FLOAT32>(data, mask, k, v);
    case DH_PARZEN_UINT16:
        return pz_read<DH_PARZEN_UINT16>(data, mask, k, v);
    default:
        return pz_read<DH_PARZEN_INT16>(data, mask, k, v);
    }
}

/* An order-preserving key of a value (every sample converts to float exactly); -0 counts as +0,
 * which changes no result (the range only enters through differences and comparisons). */
__device__ __forceinline__ uint32_t pz_key(double v)
{
    float x = (float)v;
    if (x == 0.0f)
        x = 0.0f;
    const uint32_t u = __float_as_uint(x);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

__device__ __forceinline__ double pz_unkey(uint32_t key)
{
    const uint32_t u = (key & 0x80000000u) ? (key & 0x7FFFFFFFu) : ~key;
    return (double)__uint_as_float(u);
}

/* Min and max keys of image x (x = count: the fixed image) over its valid pixels: a share per
 * block, merged by atomicMin on the min key and on the inverted max key (both start at all ones:
 * one memset; min and max are exact, so any order). */
__global__ void __launch_bounds__(PZ_PIXEL_THREADS)
    pz_range_kernel(pz_args a, dh_parzen_sample moving_sample)
{
    const uint32_t y = blockIdx.x;
    const bool is_fixed = y == a.count;
    if (is_fixed ? a.fixed_given : a.moving_given)
        return;
    const void *data = is_fixed ? a.fixed : a.moving;
    const uint8_t *mask = is_fixed ? a.fixed_mask : a.moving_mask;
    const dh_parzen_sample s = is_fixed ? a.fixed_sample : moving_sample;
    const size_t base = is_fixed ? 0 : (size_t)y * a.pixels;
    uint32_t lo = 0xFFFFFFFFu, hi_inv = 0xFFFFFFFFu;
    for (size_t k = (size_t)blockIdx.y * blockDim.x + threadIdx.x; k < a.pixels;
         k += (size_t)gridDim.y * blockDim.x) {
        double v;
        if (pz_read_any(s, data, mask, base + k, &v)) {
            const uint32_t key = pz_key(v);
            lo = min(lo, key);
            hi_inv = min(hi_inv, ~key);
        }
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

/* The axes: the given range, or the keys' min..max (0..0 when no pixel was valid), set as
 * dh_parzen_axis_init sets them. */
__global__ void pz_axes_kernel(pz_args a)
{
    for (uint32_t y = blockIdx.x * blockDim.x + threadIdx.x; y <= a.count;
         y += gridDim.x * blockDim.x) {
        const bool is_fixed = y == a.count;
        double lo = is_fixed ? a.fixed_lo : a.moving_lo, hi = is_fixed ? a.fixed_hi : a.moving_hi;
        if (!(is_fixed ? a.fixed_given : a.moving_given)) {
            const uint32_t kl = a.keys[2 * y], kh = ~a.keys[2 * y + 1];
            const bool empty = kl == 0xFFFFFFFFu;
            lo = empty ? 0.0 : pz_unkey(kl);
            hi = empty ? 0.0 : pz_unkey(kh);
        }
        dh_parzen_axis_set(&a.axes[y], a.bins, lo, hi);
    }
}

/* Each fixed pixel's index i on its axis (PZ_NO_ROW where it does not count) and, for the cubic
 * window, its position t: computed once per call, read by every batch item. */
__global__ void __launch_bounds__(PZ_PIXEL_THREADS) pz_fixed_kernel(pz_args a)
{
    const dh_parzen_axis ax = a.axes[a.count];
    for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < a.pixels;
         k += (size_t)gridDim.x * blockDim.x) {
        double v, f;
        uint8_t row = PZ_NO_ROW;
        if (pz_read_any(a.fixed_sample, a.fixed, a.fixed_mask, k, &v)) {
            const double t = dh_parzen_position(&ax, v);
            row = (uint8_t)dh_parzen_index(a.bins, t, &f);
            if (a.fixed_window == DH_PARZEN_FIXED_CUBIC)
                a.fixed_t[k] = t;
        }
        a.fixed_row[k] = row;
    }
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
 * is 2/3 2^32 (box) or (2/3 2^16)^2 (cubic). */
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
 * fixed pixel's row; cubic: both at 2^16 and their products (accumulate of mi_parzen_cpu.c). */
template <dh_parzen_sample S, bool CUBIC, bool PRIVATE>
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
        uint8_t row = k < a.pixels ? a.fixed_row[k] : PZ_NO_ROW;
        double v = 0.0, f, wm[4];
        const bool in = row != PZ_NO_ROW && pz_read<S>(moving, mask, k, &v);
        uint32_t c = 0xFFFFFFFFu; /* the first cell: fixed row (first of four: cubic), moving im */
        uint64_t qm[4] = {0, 0, 0, 0}, qf[4] = {1, 0, 0, 0};
        if (in) {
            const uint32_t im = dh_parzen_index(B, dh_parzen_position(&ax, v), &f) - 1;
            dh_parzen_bspline(f, wm);
            dh_parzen_quantize(wm, one_m, qm);
            uint32_t first = row;
            if (CUBIC) {
                double ff, wf[4];
                first = dh_parzen_index(B, a.fixed_t[k], &ff) - 1;
                dh_parzen_bspline(ff, wf);
                dh_parzen_quantize(wf, one_f, qf);
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
                        /* each weight (< 2^32) in two 16-bit halves: 32 x 2^16 fits in 32 bits */
                        const uint32_t w = mine ? (uint32_t)(qf[r] * qm[j]) : 0u;
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
                    const uint64_t w = qf[r] * qm[j];
                    if (PRIVATE)
                        pz_add_private(lo, hi, c + r * B + j, (uint32_t)w);
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

/* Item x's gradient over its y-th share of the pixels: each pixel from its own cells of the
 * item's factor table (copied to shared memory when SHARED), mi_parzen_cpu.c's pixel_gradients.
 * Writes every pixel: 0 where it does not count and everywhere when the item's gradient is 0. */
template <dh_parzen_sample S, bool CUBIC, bool SHARED>
__global__ void __launch_bounds__(PZ_PIXEL_THREADS) pz_gradient_kernel(pz_args a)
{
    extern __shared__ double s_cell[];
    const uint32_t b = blockIdx.x, B = a.bins, cells = B * B;
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
    const double scale = a.scale[b];
    const void *moving = pz_item<S>(a.moving, b, a.pixels);
    const uint8_t *mask = a.moving_mask ? a.moving_mask + (size_t)b * a.pixels : nullptr;
    for (size_t k = first_k; k < a.pixels; k += stride) {
        const uint8_t row = a.fixed_row[k];
        double v, f, slope[4], wf[4];
        float out = 0.0f;
        if (row != PZ_NO_ROW && pz_read<S>(moving, mask, k, &v) &&
            !(v < ax.lo) && !(v > ax.hi)) {
            const uint32_t im = dh_parzen_index(B, dh_parzen_position(&ax, v), &f) - 1;
            dh_parzen_bspline_slope(f, slope);
            uint32_t first = row, rows = 1;
            wf[0] = 1.0;
            if (CUBIC) {
                double ff;
                first = dh_parzen_index(B, a.fixed_t[k], &ff) - 1;
                dh_parzen_bspline(ff, wf);
                rows = 4;
            }
#define PZ_CELL(r, c) table[(r) * B + (c)] /* 32-bit: at most 256 x 256 cells */
            double sum;
            DH_PARZEN_PIXEL_SUM(sum, rows, wf, slope, PZ_CELL, first, im);
#undef PZ_CELL
            out = (float)DH_MI_MUL(sum, scale);
        }
        g[k] = out;
    }
}

} // namespace

#endif /* DH_KERNELS_MI_PARZEN_CUDA_PIXELS_CUH */
