// SPDX-License-Identifier: MIT
/*
 * mi_parzen_cuda_score.cuh: the per-item pass of the Parzen MI GPU twin (mi_parzen_cuda.cu): one
 * block per batch item turns its joint histogram (uint64, exact) into the score record and, when
 * the gradient is asked for, the item's table of cell factors and its scale. The entropy sums
 * follow mi_scores.h's order exactly (lane t = cell mod 256; each lane's rows as a pairwise tree,
 * then the 256 lanes as a tree), so the record is dh_parzen_mi_cpu's bits.
 *
 * Two forms, the same bits (pz_launch_score picks): up to 64 bins (4096 cells, 32 KiB) and one
 * item per SM, the staged kernel loads the histogram into shared memory at once, computes every
 * cell's term with four threads per lane and only then sums the lanes' trees from shared memory;
 * otherwise the lane kernel, one thread per lane, computes and sums its cells in the tree's
 * order. One block is the whole pass of a one-item call (the 512^3 pair, an optimizer's single
 * pair), where the lane kernel's chain of 16 dependent loads and logarithms per thread took 25.6
 * us (session 22, S22-2a) and the staged one takes 17.0-19.7 (session 24, bench_mi_parzen
 * --gap3d). Batches of more items than SMs keep the lane kernel (pz_launch_score says why).
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

constexpr int PZ_SCORE_THREADS = DH_MI_LANES;            /* the lane kernel: a thread per lane */
constexpr int PZ_SCORE_STAGED_THREADS = 4 * DH_MI_LANES; /* the staged kernel: four per lane */
constexpr uint32_t PZ_SCORE_STAGED_CELLS = 64 * 64;      /* the staged kernel's largest table */

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

/* mi_scores.h's tree over the 256 lanes (lane t += lane t + s, s = 128 .. 1) of `arrays` arrays
 * at once, array i by threads 256 i .. 256 i + 255; every thread of the block calls it, after the
 * arrays are filled, and the sums are lane[i][0] when it returns. */
__device__ __forceinline__ void pz_lanes_trees(double (*lane)[DH_MI_LANES], uint32_t arrays)
{
    const uint32_t t = threadIdx.x % DH_MI_LANES, i = threadIdx.x / DH_MI_LANES;
    __syncthreads();
    for (uint32_t s = DH_MI_LANES / 2; s >= 1; s >>= 1) {
        if (i < arrays && t < s)
            lane[i][t] = DH_MI_ADD(lane[i][t], lane[i][t + s]);
        __syncthreads();
    }
}

/* One array's tree (the lane kernel): threads 0 .. 255 give their lane's value, every thread of
 * the block gets the sum. */
__device__ __forceinline__ double pz_lanes_tree(double mine, double (*lane)[DH_MI_LANES])
{
    if (threadIdx.x < DH_MI_LANES)
        lane[0][threadIdx.x] = mine;
    pz_lanes_trees(lane, 1);
    const double sum = lane[0][0];
    __syncthreads(); /* lane[] is reused by the next tree */
    return sum;
}

/* What both forms know of an item before its cells: its histogram, T and ln T. */
struct pz_score_item {
    const unsigned long long *joint;
    double *cell; /* the item's factor table, or null without a gradient */
    uint64_t n, total;
    double ln_t;
    bool mi_factors; /* MI's factor written with the term (it needs no entropy) */
};

__device__ __forceinline__ pz_score_item pz_score_item_of(const pz_args &a, uint32_t b,
                                                          int gradient)
{
    const uint32_t cells = a.bins * a.bins;
    pz_score_item it;
    it.joint = a.joint + (size_t)b * cells;
    it.cell = gradient ? a.cell + (size_t)b * cells : nullptr;
    it.n = a.n[b];
    it.total = it.n * DH_PARZEN_UNIT;
    it.ln_t = it.n ? dh_mi_log((double)it.total) : 0.0;
    it.mi_factors = gradient && a.gradient_of == DH_PARZEN_GRAD_MI;
    return it;
}

/* Cell c's term of the joint entropy sum (dh_mi_term(w, T, ln T)) and, with a gradient, its entry
 * of the factor table. The MI gradient's factor of a cell, ln W_ij - ln C_j, needs nothing the
 * entropies give, so with the column logarithms first (ln_col) the table is written in the same
 * pass as the terms; NMI's factor needs H(f, m): there the cell's logarithm is kept in the table
 * and finished by pz_score_finish. The cell's dh_mi_log(w) that dh_mi_term computes (w <= T - w)
 * serves the factor too, so each cell takes one logarithm instead of two; the term is
 * dh_mi_term's arithmetic on that branch, step for step. */
__device__ __forceinline__ double pz_cell_term(const pz_score_item &it, uint32_t c, uint64_t w,
                                               const double *ln_col, uint32_t bins)
{
    if (it.cell && w != 0 && w <= it.total - w) {
        const double dw = (double)w, ln_w = dh_mi_log(dw);
        it.cell[c] = it.mi_factors
                         ? dh_parzen_cell_factor_of_log(DH_PARZEN_GRAD_MI, ln_w, ln_col[c % bins],
                                                        it.ln_t, 0.0, 1.0, 1.0)
                         : ln_w;
        return DH_MI_MUL(dw, DH_MI_SUB(it.ln_t, ln_w));
    }
    if (it.mi_factors)
        it.cell[c] = dh_parzen_cell_factor(DH_PARZEN_GRAD_MI, w, ln_col[c % bins], it.ln_t, 0.0,
                                           1.0, 1.0);
    return dh_mi_term(w, it.total, it.ln_t);
}

/* The column logarithms of the MI factors (threads 0 .. B - 1; col is the thread's column sum). */
__device__ __forceinline__ void pz_ln_columns(const pz_args &a, uint64_t col, double *ln_col)
{
    if (threadIdx.x < a.bins)
        ln_col[threadIdx.x] = col ? dh_mi_log((double)col) : 0.0;
    __syncthreads();
}

/* Both forms' end, from the three entropy sums: the record into a.out; with a gradient, whether
 * the item's gradient is all 0, its scale, and NMI's cell factors (cell_factors of
 * mi_parzen_cpu.c) from the logarithms the term pass kept. col: the thread's column sum (threads
 * 0 .. B - 1). */
__device__ __forceinline__ void pz_score_finish(const pz_args &a, const pz_score_item &it,
                                                uint32_t b, double sf, double sm, double sj,
                                                uint64_t col, dh_mi_values *s_rec,
                                                double *s_ln_col)
{
    const uint32_t t = threadIdx.x, B = a.bins, cells = B * B;
    if (t == 0) {
        dh_mi_values rec;
        dh_mi_finish(it.total, sf, sm, sj, a.log2, &rec);
        rec.n = it.n;
        rec.moving_lo = rec.moving_hi = 0;
        rec.reserved = 0;
        a.out[b] = rec;
        *s_rec = rec;
    }
    if (!it.cell)
        return;
    __syncthreads();
    const dh_parzen_axis ax = a.axes[b];
    const bool nmi_undefined = a.gradient_of == DH_PARZEN_GRAD_NMI && s_rec->h_joint == 0.0;
    const bool zero = it.n == 0 || ax.degenerate || nmi_undefined;
    if (t == 0) {
        a.grad_zero[b] = zero;
        a.scale[b] = zero ? 0.0 : dh_parzen_gradient_scale(it.n, ax.width, a.log2, a.gradient_of);
    }
    if (zero || it.mi_factors)
        return;
    pz_ln_columns(a, col, s_ln_col);
    double sum_h, hj, hj2;
    dh_parzen_nmi_constants(a.gradient_of, a.log2, s_rec, &sum_h, &hj, &hj2);
    for (uint32_t c = t; c < cells; c += blockDim.x) {
        const uint64_t w = it.joint[c];
        it.cell[c] = w == 0 ? 0.0
                            : dh_parzen_cell_factor_of_log(
                                  a.gradient_of, w <= it.total - w ? it.cell[c] : dh_mi_log((double)w),
                                  s_ln_col[c % B], it.ln_t, sum_h, hj, hj2);
    }
}

/* The lane kernel (above 64 bins): item x's marginals, entropy sums and record; each thread
 * computes its lane's cells in its tree's order. */
__global__ void __launch_bounds__(PZ_SCORE_THREADS) pz_score_kernel(pz_args a, int gradient)
{
    __shared__ double s_lane[1][DH_MI_LANES], s_ln_col[DH_MI_LANES];
    __shared__ dh_mi_values s_rec;
    const uint32_t b = blockIdx.x, t = threadIdx.x, B = a.bins, cells = B * B;
    const pz_score_item it = pz_score_item_of(a, b, gradient);

    uint64_t row = 0, col = 0;
    if (t < B)
#pragma unroll 8 /* loads in flight: the histogram is in L2, not in registers */
        for (uint32_t j = 0; j < B; j++) {
            row += it.joint[(size_t)t * B + j];
            col += it.joint[(size_t)j * B + t];
        }
    const double sf = pz_lanes_tree(t < B ? dh_mi_term(row, it.total, it.ln_t) : 0.0, s_lane);
    const double sm = pz_lanes_tree(t < B ? dh_mi_term(col, it.total, it.ln_t) : 0.0, s_lane);
    if (it.mi_factors)
        pz_ln_columns(a, col, s_ln_col);
    const double lane = pz_lane_rows_tree(
        [&](uint32_t j) -> double {
            const uint32_t c = j * DH_MI_LANES + t;
            return c < cells ? pz_cell_term(it, c, it.joint[c], s_ln_col, B) : 0.0;
        },
        (cells + DH_MI_LANES - 1) / DH_MI_LANES);
    const double sj = pz_lanes_tree(lane, s_lane);
    pz_score_finish(a, it, b, sf, sm, sj, col, &s_rec, s_ln_col);
}

/* The staged kernel (up to 64 bins, a batch of at most one item per SM): the histogram into
 * shared memory in one coalesced load; the marginals from there by eight threads per row and per
 * column (integer sums: any order); the two marginal entropy terms and the column logarithms by
 * three groups of threads at once, the two marginal trees together; every cell's term by the
 * 1024 threads in parallel, written over its own count; then the lanes' trees over the terms in
 * shared memory. The same terms summed in the same order as the lane kernel. */
__global__ void __launch_bounds__(PZ_SCORE_STAGED_THREADS)
    pz_score_staged_kernel(pz_args a, int gradient)
{
    __shared__ union {
        unsigned long long w[PZ_SCORE_STAGED_CELLS]; /* the counts, then each cell's term */
        double term[PZ_SCORE_STAGED_CELLS];
    } s;
    __shared__ unsigned long long s_row[64], s_col[64];
    __shared__ double s_lanes[3][DH_MI_LANES], s_ln_col[DH_MI_LANES]; /* rows, columns, cells */
    __shared__ dh_mi_values s_rec;
    const uint32_t b = blockIdx.x, t = threadIdx.x, B = a.bins, cells = B * B;
    const uint32_t lane_t = t % DH_MI_LANES, group = t / DH_MI_LANES;
    const pz_score_item it = pz_score_item_of(a, b, gradient);

    for (uint32_t c = t; c < cells; c += blockDim.x)
        s.w[c] = it.joint[c];
    __syncthreads();
    {
        /* rows by threads 0 .. 511, columns by 512 .. 1023: eight threads each, eight lanes of a
         * warp summed by shuffles (every thread of the warp takes part) */
        const uint32_t m = (t % 512) / 8, p = t % 8;
        uint64_t sum = 0;
        if (m < B)
            for (uint32_t x = p; x < B; x += 8)
                sum += t < 512 ? s.w[m * B + x] : s.w[x * B + m];
        for (int o = 4; o > 0; o >>= 1)
            sum += __shfl_xor_sync(0xFFFFFFFFu, sum, o);
        if (m < B && p == 0)
            (t < 512 ? s_row : s_col)[m] = sum;
    }
    __syncthreads();
    const uint64_t col = t < B ? s_col[t] : 0;
    if (lane_t < B && group < 2) /* row terms, column terms */
        s_lanes[group][lane_t] =
            dh_mi_term(group == 0 ? s_row[lane_t] : s_col[lane_t], it.total, it.ln_t);
    else if (group < 2)
        s_lanes[group][lane_t] = 0.0;
    else if (group == 2 && lane_t < B && it.mi_factors)
        s_ln_col[lane_t] = s_col[lane_t] ? dh_mi_log((double)s_col[lane_t]) : 0.0;
    pz_lanes_trees(s_lanes, 2);
    const double sf = s_lanes[0][0], sm = s_lanes[1][0];
    for (uint32_t c = t; c < cells; c += blockDim.x) {
        const uint64_t w = s.w[c];
        s.term[c] = pz_cell_term(it, c, w, s_ln_col, B); /* the same thread's own cell */
    }
    __syncthreads();
    if (t < DH_MI_LANES)
        s_lanes[2][t] = pz_lane_rows_tree(
            [&](uint32_t j) -> double {
                const uint32_t c = j * DH_MI_LANES + t;
                return c < cells ? s.term[c] : 0.0;
            },
            (cells + DH_MI_LANES - 1) / DH_MI_LANES);
    pz_lanes_trees(s_lanes + 2, 1);
    const double sj = s_lanes[2][0];
    pz_score_finish(a, it, b, sf, sm, sj, col, &s_rec, s_ln_col);
}

/* The score pass of a call: the staged kernel where the item's table fits it and the batch has at
 * most one item per SM (`sms`); else the lane kernel, whose blocks of 256 threads fill the SMs
 * better (on 1024 items of 64 bins, 75 us against the staged kernel's 138: session 24, ncu). */
inline void pz_launch_score(const pz_args &a, int gradient, int sms, cudaStream_t stream)
{
    if ((size_t)a.bins * a.bins <= PZ_SCORE_STAGED_CELLS && a.count <= (uint32_t)sms)
        pz_score_staged_kernel<<<a.count, PZ_SCORE_STAGED_THREADS, 0, stream>>>(a, gradient);
    else
        pz_score_kernel<<<a.count, PZ_SCORE_THREADS, 0, stream>>>(a, gradient);
}

} // namespace

#endif /* DH_KERNELS_MI_PARZEN_CUDA_SCORE_CUH */
