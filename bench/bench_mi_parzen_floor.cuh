// SPDX-License-Identifier: MIT
/*
 * bench_mi_parzen_floor.cuh: bench_mi_parzen --floor's kernels (issue 22: can a batch of 1024
 * pairs of 256x256 at 64 bins reach 2M evaluations/s, 512 us per call?), and --floor3d's (the
 * same kernels on one 512^3 pair: can it come within 4x of reading both volumes and writing the
 * gradient once?). Each floor kernel does
 * only the irreducible part of one of the batch's passes, with the real kernel's launch shape,
 * block size, memory layout and loop:
 *   - floor_hist_kernel: the histogram pass's loads (fixed row byte, moving float) and its
 *     shared-memory fixed-point atomics (4 cells per pixel, the carries, the warp's sums where
 *     its pixels share at most PZ_WARP_GROUPS first cells; GROUP = false: every pixel's own four
 *     atomics) into the same private table, then the same merge into the item's histogram, but
 *     with constant weights and a float32 cell (no B-spline, no FP64 position);
 *   - floor_weight_kernel: the same loads and the real per-pixel weight arithmetic (position,
 *     index and fraction, the B-spline, the fixed-point quantization), no atomics: the weights
 *     and cells folded into one word per thread;
 *   - floor_gradient_kernel: the gradient pass's loads and stores with the factor-table reads
 *     (TABLE) but a float32 cell and a plain sum, or its arithmetic (ARITH: position, fraction,
 *     slopes, the cell sum and scale in FP64) with a register in place of the table;
 *   - floor_copy_kernel: read the batch once and write a gradient's worth once;
 *   - floor_fixed_kernel (session 19): the fixed pass's reads and writes alone: the fixed image
 *     read once by 16-byte loads and a byte written per pixel, with pz_fixed_vec_kernel's grid
 *     and loop (two groups of four pixels per thread and trip), no arithmetic;
 *   - floor_fixed_f32_kernel (session 19, parzen2; --gap3d): the same loop with the row computed
 *     in float32 (not the definition's rows near a bin's edge): what a float32 pre-test costs.
 * The real kernels themselves come from kernels/mi_parzen_cuda_pixels.cuh and _score.cuh,
 * included here (they are private to mi_parzen_cuda.cu, whose launch code floor_batch mirrors),
 * so that each pass can be timed on its own and the floors reuse the real arithmetic exactly.
 * Every floor's result is checked on the host (bench_mi_parzen.cu's floors()).
 */
#ifndef DH_BENCH_MI_PARZEN_FLOOR_CUH
#define DH_BENCH_MI_PARZEN_FLOOR_CUH

#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "mi_parzen.h"
#include "mi_parzen_cuda_pixels.cuh"
#include "mi_parzen_cuda_score.cuh"

/* An item's moving axis in float32, for the floors' cheap cell. */
struct floor_axis {
    float lo, hi, rcp; /* rcp: RN(1 / width) */
};

/* The first of the four moving cells that a value's window touches, in float32: the real pass's
 * cell up to rounding at a bin's edge (the same distribution of cells, so the same conflicts).
 * (c - lo) * rcp is a subtraction then a product: no contraction to an FMA, so the host gives
 * the device's bits (the gradient floor's check). */
__host__ __device__ static inline uint32_t floor_first_cell(float v, const floor_axis &ax,
                                                            uint32_t bins)
{
    const float c = fminf(fmaxf(v, ax.lo), ax.hi);
    uint32_t i = (uint32_t)((c - ax.lo) * ax.rcp) + DH_PARZEN_PADDING;
    i = i < bins - 3u ? i : bins - 3u;
    return i - 1u;
}

/* The histogram floor's constant quantized weights: the B-spline's at f = 1/2 (1/48, 23/48,
 * 23/48, 1/48 of 2^32, the third the remainder), every one non-zero as the real weights are
 * almost always, summing to DH_PARZEN_UNIT (so about one carry per pixel, as in the real pass). */
constexpr uint32_t FLOOR_W0 = 89478485u, FLOOR_W1 = 2058001749u, FLOOR_W3 = 89478485u;
constexpr uint32_t FLOOR_W2 = (uint32_t)(DH_PARZEN_UNIT - FLOOR_W0 - FLOOR_W1 - FLOOR_W3);

__device__ __forceinline__ uint32_t floor_weight(int j)
{
    return j == 0 ? FLOOR_W0 : j == 1 ? FLOOR_W1 : j == 2 ? FLOOR_W2 : FLOOR_W3;
}

template <bool GROUP>
__global__ void __launch_bounds__(PZ_HIST_THREADS)
    floor_hist_kernel(pz_args a, const floor_axis *axes)
{
    extern __shared__ uint32_t s_words[];
    __shared__ unsigned long long s_n;
    const uint32_t b = blockIdx.x, B = a.bins, cells = B * B;
    unsigned long long *joint = a.joint + (size_t)b * cells;
    uint32_t *lo = s_words, *hi = s_words + cells;
    for (uint32_t c = threadIdx.x; c < 2 * cells; c += blockDim.x)
        s_words[c] = 0;
    if (threadIdx.x == 0)
        s_n = 0;
    __syncthreads();
    const floor_axis ax = axes[b];
    const float *moving = (const float *)a.moving + (size_t)b * a.pixels;
    const uint32_t lane = threadIdx.x & 31u;
    uint32_t counted = 0;
    for (size_t k0 = (size_t)blockIdx.y * blockDim.x + (threadIdx.x & ~31u); k0 < a.pixels;
         k0 += (size_t)gridDim.y * blockDim.x) {
        const size_t k = k0 + lane;
        uint8_t row = PZ_NO_ROW;
        float v = 0.0f;
        if (k < a.pixels) {
            row = a.fixed_row[k];
            v = moving[k];
        }
        uint32_t c = 0xFFFFFFFFu;
        if (row != PZ_NO_ROW && isfinite(v)) {
            c = row * B + floor_first_cell(v, ax, B);
            counted++;
        }
        const uint32_t prev = __shfl_up_sync(0xFFFFFFFFu, c, 1);
        const uint32_t starts =
            __ballot_sync(0xFFFFFFFFu, c != 0xFFFFFFFFu && (lane == 0 || c != prev));
        if (GROUP && __popc(starts) <= PZ_WARP_GROUPS) { /* the real pass's warp sums */
            uint32_t pending = __ballot_sync(0xFFFFFFFFu, c != 0xFFFFFFFFu);
            while (pending) {
                const int l = __ffs(pending) - 1;
                const uint32_t cl = __shfl_sync(0xFFFFFFFFu, c, l);
                const bool mine = c == cl;
                pending &= ~__ballot_sync(0xFFFFFFFFu, mine);
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const uint32_t w = mine ? floor_weight(j) : 0u;
                    const uint64_t sum =
                        (uint64_t)__reduce_add_sync(0xFFFFFFFFu, w & 0xFFFFu) +
                        ((uint64_t)__reduce_add_sync(0xFFFFFFFFu, w >> 16) << 16);
                    if (lane == (uint32_t)l)
                        pz_add_private_wide(lo, hi, cl + j, sum);
                }
            }
        } else if (c != 0xFFFFFFFFu) {
#pragma unroll
            for (int j = 0; j < 4; j++)
                pz_add_private(lo, hi, c + j, floor_weight(j));
        }
    }
    for (int o = 16; o > 0; o >>= 1)
        counted += __shfl_xor_sync(0xFFFFFFFFu, counted, o);
    if (lane == 0 && counted)
        atomicAdd(&s_n, (unsigned long long)counted);
    __syncthreads();
    for (uint32_t c = threadIdx.x; c < cells; c += blockDim.x)
        pz_add_global(joint + c, ((uint64_t)hi[c] << 32) + lo[c]);
    if (threadIdx.x == 0 && s_n)
        atomicAdd(&a.n[b], s_n);
}

/* One counted pixel's share of the weight floor's fold: its quantized weights and first cell,
 * mixed so that none of them is dead code (the host check recomputes it with mi_parzen.h). */
__host__ __device__ static inline uint64_t floor_fold(const uint64_t q[4], uint32_t cell)
{
    return (q[0] ^ (q[1] << 1)) + (q[2] ^ (q[3] << 2)) + ((uint64_t)cell << 40);
}

/* The histogram pass's per-pixel arithmetic alone; fold[thread of the grid] = its pixels' sum of
 * floor_fold. */
__global__ void __launch_bounds__(PZ_HIST_THREADS)
    floor_weight_kernel(pz_args a, unsigned long long *fold)
{
    const uint32_t b = blockIdx.x, B = a.bins;
    const dh_parzen_axis ax = a.axes[b];
    const double rcp = a.rcp[b];
    const void *moving = pz_item<DH_PARZEN_FLOAT32>(a.moving, b, a.pixels);
    uint64_t acc = 0;
    for (size_t k = (size_t)blockIdx.y * blockDim.x + threadIdx.x; k < a.pixels;
         k += (size_t)gridDim.y * blockDim.x) {
        const uint8_t row = a.fixed_row[k];
        double v, f, w[4];
        const bool valid = pz_read_eager<DH_PARZEN_FLOAT32>(moving, nullptr, k, &v);
        if (row != PZ_NO_ROW && valid) {
            const uint32_t im = pz_index(B, pz_position(ax, rcp, v), &f) - 1;
            uint64_t q[4];
            dh_parzen_bspline(f, w);
            pz_quantize(w, DH_PARZEN_UNIT, q);
            acc += floor_fold(q, row * B + im);
        }
    }
    fold[((size_t)b * gridDim.y + blockIdx.y) * blockDim.x + threadIdx.x] = acc;
}

/* The gradient pass's FP64 arithmetic for one pixel (pz_pixel_gradient, box window) with `cst`
 * in place of every factor-table read. */
__device__ __forceinline__ float floor_pixel_arith(uint32_t bins, const dh_parzen_axis &ax,
                                                   double rcp, double scale, double cst,
                                                   uint8_t row, bool valid, double v)
{
    if (row == PZ_NO_ROW || !valid || v < ax.lo || v > ax.hi)
        return 0.0f;
    double f, slope[4];
    const double wf[1] = {1.0};
    const uint32_t im = pz_index(bins, pz_position(ax, rcp, v), &f) - 1;
    dh_parzen_bspline_slope(f, slope);
    (void)im; /* its integer part is computed all the same: the fraction needs it */
#define FLOOR_CELL(r, c) cst
    double sum;
    DH_PARZEN_PIXEL_SUM(sum, 1u, wf, slope, FLOOR_CELL, (uint32_t)row, im);
#undef FLOOR_CELL
    return (float)DH_MI_MUL(sum, scale);
}

/* The gradient pass (pz_gradient_kernel's run path: 8 pixels per thread, 16-byte loads and
 * stores) split: TABLE reads the item's factor table into shared memory and each pixel's four
 * cells (a float32 cell, a plain sum: no FP64 arithmetic); !TABLE computes the real arithmetic
 * with the item's scale as every cell's factor. */
template <bool TABLE>
__global__ void __launch_bounds__(PZ_PIXEL_THREADS)
    floor_gradient_kernel(pz_args a, const floor_axis *axes)
{
    extern __shared__ double s_cell[];
    const uint32_t b = blockIdx.x, B = a.bins, cells = B * B;
    float *g = a.gradient + (size_t)b * a.pixels;
    if (TABLE) {
        const double *table = a.cell + (size_t)b * cells;
        for (uint32_t c = threadIdx.x; c < cells; c += blockDim.x)
            s_cell[c] = table[c];
        __syncthreads();
    }
    const dh_parzen_axis ax = a.axes[b];
    const floor_axis fax = axes[b];
    const double rcp = a.rcp[b], scale = a.scale[b];
    const void *moving = pz_item<DH_PARZEN_FLOAT32>(a.moving, b, a.pixels);
    const size_t groups = a.pixels / PZ_RUN; /* the caller checked pixels % PZ_RUN == 0 */
    for (size_t gi = (size_t)blockIdx.y * blockDim.x + threadIdx.x; gi < groups;
         gi += (size_t)gridDim.y * blockDim.x) {
        const size_t k0 = gi * PZ_RUN;
        uint32_t raw[PZ_RUN], on;
        uint64_t rows;
        pz_load_run<DH_PARZEN_FLOAT32>(a, moving, nullptr, k0, true, raw, &on, &rows);
        float out[PZ_RUN];
#pragma unroll
        for (int u = 0; u < PZ_RUN; u++) {
            const uint8_t row = (uint8_t)(rows >> (8 * u));
            const float x = __uint_as_float(raw[u]);
            const bool valid = isfinite(x) && ((on >> u) & 1u);
            if (TABLE) {
                out[u] = 0.0f;
                if (row != PZ_NO_ROW && valid) {
                    const double *t = s_cell + row * B + floor_first_cell(x, fax, B);
                    out[u] = (float)(((t[0] + t[1]) + t[2]) + t[3]);
                }
            } else {
                out[u] = floor_pixel_arith(B, ax, rcp, scale, scale, row, valid, (double)x);
            }
        }
        *(float4 *)(g + k0) = make_float4(out[0], out[1], out[2], out[3]);
        *(float4 *)(g + k0 + 4) = make_float4(out[4], out[5], out[6], out[7]);
    }
}

/* Read the batch once, write a gradient's worth once (half of each value: the host checks). */
__global__ static void floor_copy_kernel(const float4 *m, float4 *g, size_t n4)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4;
         i += (size_t)gridDim.x * blockDim.x) {
        const float4 x = __ldcs(m + i);
        __stcs(g + i, make_float4(0.5f * x.x, 0.5f * x.y, 0.5f * x.z, 0.5f * x.w));
    }
}

/* Four floats' top bytes in one word (byte u: float u's bits >> 24): what floor_fixed_kernel
 * writes, a byte of each sample that the host can check. */
__host__ __device__ static inline uint32_t floor_top_bytes(float x, float y, float z, float w)
{
    uint32_t b[4];
    const float v[4] = {x, y, z, w};
    for (int u = 0; u < 4; u++) {
        uint32_t bits;
        memcpy(&bits, &v[u], 4);
        b[u] = bits >> 24;
    }
    return b[0] | b[1] << 8 | b[2] << 16 | b[3] << 24;
}

/* The fixed pass's floor (its unavoidable reads and writes): read n4 groups of four fixed floats,
 * write a byte per pixel (floor_top_bytes), with pz_fixed_vec_kernel's loop and grid. */
__global__ static void floor_fixed_kernel(const float4 *f, uint32_t *rows, size_t n4)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t g = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (; g + stride < n4; g += 2 * stride) {
        const float4 x = f[g], y = f[g + stride];
        rows[g] = floor_top_bytes(x.x, x.y, x.z, x.w);
        rows[g + stride] = floor_top_bytes(y.x, y.y, y.z, y.w);
    }
    for (; g < n4; g += stride) {
        const float4 x = f[g];
        rows[g] = floor_top_bytes(x.x, x.y, x.z, x.w);
    }
}

/* Session 19 (parzen2): the fixed pass's loop with float32 arithmetic in place of the exact FP64
 * position: row = clamp((int)((clamp(x) - lo) * rcp + 2), 2, B - 3), PZ_NO_ROW for a value that
 * is not finite. Not the definition's rows (they differ near a bin's edge; the bench counts how
 * often): the cost of a float32 pre-test where no voxel falls back to the exact path, between
 * the pass (pz_fixed_vec_kernel) and its read + write floor (floor_fixed_kernel). */
__device__ static inline uint32_t floor_row_f32(float x, float lo, float hi, float rcp, int bins)
{
    if (!isfinite(x))
        return PZ_NO_ROW;
    const float c = fminf(fmaxf(x, lo), hi);
    int i = (int)__fadd_rn(__fmul_rn(__fsub_rn(c, lo), rcp), 2.0f);
    i = i < 2 ? 2 : i > bins - 3 ? bins - 3 : i;
    return (uint32_t)i;
}

__device__ static inline uint32_t floor_rows_f32(float4 x, float lo, float hi, float rcp, int bins)
{
    return floor_row_f32(x.x, lo, hi, rcp, bins) | floor_row_f32(x.y, lo, hi, rcp, bins) << 8 |
           floor_row_f32(x.z, lo, hi, rcp, bins) << 16 |
           floor_row_f32(x.w, lo, hi, rcp, bins) << 24;
}

__global__ static void floor_fixed_f32_kernel(const float4 *f, uint32_t *rows, size_t n4, float lo,
                                              float hi, float rcp, int bins)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t g = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (; g + stride < n4; g += 2 * stride) {
        const float4 x = f[g], y = f[g + stride];
        rows[g] = floor_rows_f32(x, lo, hi, rcp, bins);
        rows[g + stride] = floor_rows_f32(y, lo, hi, rcp, bins);
    }
    for (; g < n4; g += stride)
        rows[g] = floor_rows_f32(f[g], lo, hi, rcp, bins);
}

#endif /* DH_BENCH_MI_PARZEN_FLOOR_CUH */
