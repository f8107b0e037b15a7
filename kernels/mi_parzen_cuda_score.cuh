// SPDX-License-Identifier: MIT
/*
 * mi_parzen_cuda_score.cuh: the per-item kernel of the Parzen MI GPU twin (mi_parzen_cuda.cu):
 * one block of 256 threads per batch item turns its joint histogram (uint64, exact) into the
 * score record and, when the gradient is asked for, the item's table of cell factors and its
 * scale. The entropy sums follow mi_scores.h's order exactly (lane t = cell mod 256; each lane's
 * rows as a pairwise tree, then the 256 lanes as a tree), so the record is dh_parzen_mi_cpu's
 * bits.
 *
 * Private to mi_parzen_cuda.cu, its one translation unit.
 */
#ifndef DH_KERNELS_MI_PARZEN_CUDA_SCORE_CUH
#define DH_KERNELS_MI_PARZEN_CUDA_SCORE_CUH

#include <cuda_runtime.h>

#include <cstdint>

#include "mi_parzen.h"
#include "mi_parzen_cuda_pixels.cuh"

namespace {

constexpr int PZ_SCORE_THREADS = DH_MI_LANES; /* one thread per lane */

/* One lane's tree over its rows (mi_scores.h: row[j] += row[j + s] for s = P/2 .. 1, P the power
 * of two at or above `rows`, where j + s < rows), computed depth first: the leaves in
 * bit-reversed order, each finished pair merged on a small stack. A row at or past `rows` is
 * +0.0, which changes no bit (every term is +0.0 or positive). */
template <class Leaf>
__device__ __forceinline__ double pz_lane_rows_tree(const Leaf &leaf, uint32_t rows)
{
    if (rows <= 1)
        return rows ? leaf(0) : 0.0;
    uint32_t levels = 0;
    while ((1u << levels) < rows)
        levels++;
    double stack[9]; /* at most 256 rows: 8 levels, 9 partial sums */
    int top = 0;
    for (uint32_t r = 0; r < (1u << levels); r++) {
        const uint32_t j = __brev(r) >> (32 - levels);
        double v = j < rows ? leaf(j) : 0.0;
        for (uint32_t x = r; x & 1u; x >>= 1)
            v = DH_MI_ADD(stack[--top], v);
        stack[top++] = v;
    }
    return stack[0];
}

/* mi_scores.h's tree over the 256 lanes (lane t += lane t + s, s = 128 .. 1); every thread of
 * the block calls it with its lane's value and gets the sum. */
__device__ __forceinline__ double pz_lanes_tree(double mine, double *lane)
{
    const uint32_t t = threadIdx.x;
    lane[t] = mine;
    __syncthreads();
    for (uint32_t s = DH_MI_LANES / 2; s >= 1; s >>= 1) {
        if (t < s)
            lane[t] = DH_MI_ADD(lane[t], lane[t + s]);
        __syncthreads();
    }
    const double sum = lane[0];
    __syncthreads(); /* lane[] is reused by the next tree */
    return sum;
}

/* Item x: marginals, entropy sums, the record into a.out; with `gradient`, whether the item's
 * gradient is all 0, its scale and its cell factors (cell_factors of mi_parzen_cpu.c). */
__global__ void __launch_bounds__(PZ_SCORE_THREADS) pz_score_kernel(pz_args a, int gradient)
{
    __shared__ double s_lane[DH_MI_LANES], s_ln_col[DH_MI_LANES];
    __shared__ dh_mi_values s_rec;
    const uint32_t b = blockIdx.x, t = threadIdx.x, B = a.bins, cells = B * B;
    const unsigned long long *joint = a.joint + (size_t)b * cells;
    const uint64_t n = a.n[b], total = n * DH_PARZEN_UNIT;
    const double ln_t = n ? dh_mi_log((double)total) : 0.0;

    uint64_t row = 0, col = 0;
    if (t < B)
#pragma unroll 8 /* loads in flight: the histogram is in L2, not in registers */
        for (uint32_t j = 0; j < B; j++) {
            row += joint[(size_t)t * B + j];
            col += joint[(size_t)j * B + t];
        }
    const double sf = pz_lanes_tree(t < B ? dh_mi_term(row, total, ln_t) : 0.0, s_lane);
    const double sm = pz_lanes_tree(t < B ? dh_mi_term(col, total, ln_t) : 0.0, s_lane);
    const uint32_t rows = (cells + DH_MI_LANES - 1) / DH_MI_LANES;
    /* The MI gradient's factor of a cell, ln W_ij - ln C_j, needs nothing the entropies give, so
     * with the column logarithms first the factor table is written in the same pass as the joint
     * entropy's terms (one pass over the histogram and one write of the table). NMI's factor
     * needs H(f, m): there the pass keeps each cell's logarithm in the table, finished below. */
    const bool mi_factors = gradient && a.gradient_of == DH_PARZEN_GRAD_MI;
    if (mi_factors) {
        s_ln_col[t] = t < B && col ? dh_mi_log((double)col) : 0.0;
        __syncthreads();
    }
    /* With a gradient, the cell's dh_mi_log(w) that dh_mi_term computes (w <= T - w) serves the
     * factor too (for NMI the same thread reads it back below: cell c is lane c mod 256 in both
     * loops), so each cell takes one logarithm instead of two. The term is dh_mi_term's
     * arithmetic on that branch, step for step. */
    double *cell = gradient ? a.cell + (size_t)b * cells : nullptr;
    const double lane = pz_lane_rows_tree(
        [&](uint32_t j) -> double {
            const uint32_t c = j * DH_MI_LANES + t;
            if (c >= cells)
                return 0.0;
            const uint64_t w = joint[c];
            if (gradient && w != 0 && w <= total - w) {
                const double dw = (double)w, ln_w = dh_mi_log(dw);
                cell[c] = mi_factors ? dh_parzen_cell_factor_of_log(DH_PARZEN_GRAD_MI, ln_w,
                                                                    s_ln_col[c % B], ln_t, 0.0,
                                                                    1.0, 1.0)
                                     : ln_w;
                return DH_MI_MUL(dw, DH_MI_SUB(ln_t, ln_w));
            }
            if (mi_factors)
                cell[c] = dh_parzen_cell_factor(DH_PARZEN_GRAD_MI, w, s_ln_col[c % B], ln_t, 0.0,
                                                1.0, 1.0);
            return dh_mi_term(w, total, ln_t);
        },
        rows);
    const double sj = pz_lanes_tree(lane, s_lane);
    if (t == 0) {
        dh_mi_values rec;
        dh_mi_finish(total, sf, sm, sj, a.log2, &rec);
        rec.n = n;
        rec.moving_lo = rec.moving_hi = 0;
        rec.reserved = 0;
        a.out[b] = rec;
        s_rec = rec;
    }
    if (!gradient)
        return;
    __syncthreads();
    const dh_parzen_axis ax = a.axes[b];
    const bool nmi_undefined = a.gradient_of == DH_PARZEN_GRAD_NMI && s_rec.h_joint == 0.0;
    const bool zero = n == 0 || ax.degenerate || nmi_undefined;
    if (t == 0) {
        a.grad_zero[b] = zero;
        a.scale[b] = zero ? 0.0 : dh_parzen_gradient_scale(n, ax.width, a.log2, a.gradient_of);
    }
    if (zero || mi_factors)
        return;
    s_ln_col[t] = t < B && col ? dh_mi_log((double)col) : 0.0;
    __syncthreads();
    double sum_h, hj, hj2;
    dh_parzen_nmi_constants(a.gradient_of, a.log2, &s_rec, &sum_h, &hj, &hj2);
    for (uint32_t c = t; c < cells; c += blockDim.x) {
        const uint64_t w = joint[c];
        cell[c] = w == 0 ? 0.0
                         : dh_parzen_cell_factor_of_log(
                               a.gradient_of, w <= total - w ? cell[c] : dh_mi_log((double)w),
                               s_ln_col[c % B], ln_t, sum_h, hj, hj2);
    }
}

} // namespace

#endif /* DH_KERNELS_MI_PARZEN_CUDA_SCORE_CUH */
