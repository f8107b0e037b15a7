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
 * order. A one-item call (the 512^3 pair, an optimizer's single pair) took 25.6 us in the lane
 * kernel's one block, each thread chaining 16 loads and logarithms (session 22, S22-2a); staged,
 * 17.0-19.7, and as a cluster of eight staged blocks sharing its cells, 13.9-15.1 (session 24,
 * bench_mi_parzen --gap3d). pz_launch_score says which batches take which form.
 *
 * Private to mi_parzen_cuda.cu, its one translation unit.
 */
#ifndef DH_KERNELS_MI_PARZEN_CUDA_SCORE_CUH
#define DH_KERNELS_MI_PARZEN_CUDA_SCORE_CUH

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_check.h"
#include "mi_parzen.h"
#include "mi_parzen_cuda_pixels.cuh"

namespace {

constexpr int PZ_SCORE_THREADS = DH_MI_LANES;            /* the lane kernel: a thread per lane */
constexpr int PZ_SCORE_STAGED_THREADS = 4 * DH_MI_LANES; /* the staged kernel: four per lane */
constexpr uint32_t PZ_SCORE_STAGED_CELLS = 64 * 64;      /* the staged kernel's largest table */
constexpr uint32_t PZ_SCORE_SPLIT = 8; /* blocks of a cluster sharing one item's cells */

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

/* ln T computed by every thread (`ln_t`), or left to the caller (the staged kernel: one warp). */
__device__ __forceinline__ pz_score_item pz_score_item_of(const pz_args &a, uint32_t b,
                                                          int gradient, bool ln_t)
{
    const uint32_t cells = a.bins * a.bins;
    pz_score_item it;
    it.joint = a.joint + (size_t)b * cells;
    it.cell = gradient ? a.cell + (size_t)b * cells : nullptr;
    it.n = a.n[b];
    it.total = it.n * DH_PARZEN_UNIT;
    it.ln_t = ln_t && it.n ? dh_mi_log((double)it.total) : 0.0;
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

/* A column's logarithm for the factors: ln C_j, 0 for an empty column. */
__device__ __forceinline__ double pz_ln_column(uint64_t col)
{
    return col ? dh_mi_log((double)col) : 0.0;
}

/* The column logarithms of the MI factors (threads 0 .. B - 1; col is the thread's column sum). */
__device__ __forceinline__ void pz_ln_columns(const pz_args &a, uint64_t col, double *ln_col)
{
    if (threadIdx.x < a.bins)
        ln_col[threadIdx.x] = pz_ln_column(col);
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
    const pz_score_item it = pz_score_item_of(a, b, gradient, true);

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
 * 1024 threads in parallel; then the lanes' trees over the terms in shared memory. The same terms
 * summed in the same order as the lane kernel.
 *
 * SPLIT > 1 (a cluster of SPLIT blocks per item, launched by pz_launch_score for one item):
 * block r of the cluster computes the terms of the r-th SPLIT-th of the cells
 * (and their factors) into the first block's shared memory, so the 4096 logarithms of a 64-bin
 * table run on SPLIT SMs; after the cluster's barrier the first block sums them and writes the
 * record. Session 24's ncu of the one-block form: 42-50 thousand warp instructions on its one SM,
 * a third of them the cells' terms, a tenth ln T computed by every thread (now one warp). */
template <uint32_t SPLIT>
__global__ void __launch_bounds__(PZ_SCORE_STAGED_THREADS)
    pz_score_staged_kernel(pz_args a, int gradient)
{
    /* dynamic: the counts (cells uint64), then the terms (cells doubles) */
    extern __shared__ unsigned long long s_dyn[];
    __shared__ unsigned long long s_row[64], s_col[64];
    __shared__ double s_lanes[3][DH_MI_LANES], s_ln_col[DH_MI_LANES]; /* rows, columns, cells */
    __shared__ dh_mi_values s_rec;
    __shared__ double s_ln_t;
    const uint32_t t = threadIdx.x, B = a.bins, cells = B * B;
    const uint32_t b = blockIdx.x / SPLIT, rank = blockIdx.x % SPLIT; /* rank in the cluster */
    const uint32_t lane_t = t % DH_MI_LANES, group = t / DH_MI_LANES;
    unsigned long long *s_w = s_dyn;
    double *s_term = (double *)(s_dyn + cells);
    pz_score_item it = pz_score_item_of(a, b, gradient, false);
    /* another block's shared memory may be written only once every block of the cluster runs:
     * arrive now, wait before the first such write (the histogram's load overlaps the wait) */
    if (SPLIT > 1)
        cooperative_groups::this_cluster().barrier_arrive();

    for (uint32_t c = t; c < cells; c += blockDim.x)
        s_w[c] = it.joint[c];
    if (t < 32) { /* ln T once, by one warp (the lane kernel has every thread compute it) */
        const double ln_t = it.n ? dh_mi_log((double)it.total) : 0.0;
        if (t == 0)
            s_ln_t = ln_t;
    }
    __syncthreads();
    it.ln_t = s_ln_t;
    {
        /* rows by threads 0 .. 511, columns by 512 .. 1023: eight threads each, eight lanes of a
         * warp summed by shuffles (every thread of the warp takes part) */
        const uint32_t m = (t % 512) / 8, p = t % 8;
        uint64_t sum = 0;
        if (m < B)
            for (uint32_t x = p; x < B; x += 8)
                sum += t < 512 ? s_w[m * B + x] : s_w[x * B + m];
        for (int o = 4; o > 0; o >>= 1)
            sum += __shfl_xor_sync(0xFFFFFFFFu, sum, o);
        if (m < B && p == 0)
            (t < 512 ? s_row : s_col)[m] = sum;
    }
    __syncthreads();
    const uint64_t col = t < B ? s_col[t] : 0;
    if (rank == 0 && group < 2) /* row terms, column terms: the first block's */
        s_lanes[group][lane_t] =
            lane_t < B ? dh_mi_term(group == 0 ? s_row[lane_t] : s_col[lane_t], it.total, it.ln_t)
                       : 0.0;
    else if (group == 2 && lane_t < B && it.mi_factors)
        s_ln_col[lane_t] = pz_ln_column(s_col[lane_t]);
    if (rank == 0)
        pz_lanes_trees(s_lanes, 2);
    else
        __syncthreads();
    /* this block's share of the cells, their terms into the first block's table */
    const uint32_t per = (cells + SPLIT - 1) / SPLIT, first = rank * per;
    const uint32_t last = first + per < cells ? first + per : cells;
    double *terms = s_term;
    if (SPLIT > 1) {
        cooperative_groups::this_cluster().barrier_wait();
        terms = cooperative_groups::this_cluster().map_shared_rank(s_term, 0);
    }
    for (uint32_t c = first + t; c < last; c += blockDim.x)
        terms[c] = pz_cell_term(it, c, s_w[c], s_ln_col, B);
    if (SPLIT > 1)
        cooperative_groups::this_cluster().sync(); /* the terms and factors, seen by block 0 */
    else
        __syncthreads();
    if (rank != 0)
        return;
    const double sf = s_lanes[0][0], sm = s_lanes[1][0];
    if (t < DH_MI_LANES)
        s_lanes[2][t] = pz_lane_rows_tree(
            [&](uint32_t j) -> double {
                const uint32_t c = j * DH_MI_LANES + t;
                return c < cells ? s_term[c] : 0.0;
            },
            (cells + DH_MI_LANES - 1) / DH_MI_LANES);
    pz_lanes_trees(s_lanes + 2, 1);
    const double sj = s_lanes[2][0];
    pz_score_finish(a, it, b, sf, sm, sj, col, &s_rec, s_ln_col);
}

/* The staged kernel's dynamic shared memory at most (64 bins: counts and terms). */
constexpr size_t PZ_SCORE_STAGED_SMEM = 2 * PZ_SCORE_STAGED_CELLS * sizeof(double);

/* Once per device (pz_device): the staged kernels may take their shared memory, and whether a
 * cluster of PZ_SCORE_SPLIT of them fits the device at all (`split`). */
inline cudaError_t pz_score_setup(bool *split)
{
    cudaError_t e = cudaGetLastError(); /* a pending error is the caller's, not swallowed below */
    if (e == cudaSuccess)
        e = dh_cuda_allow_smem((const void *)pz_score_staged_kernel<1>, PZ_SCORE_STAGED_SMEM);
    if (e == cudaSuccess)
        e = dh_cuda_allow_smem((const void *)pz_score_staged_kernel<PZ_SCORE_SPLIT>,
                               PZ_SCORE_STAGED_SMEM);
    if (e != cudaSuccess)
        return e;
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = PZ_SCORE_SPLIT, attr.val.clusterDim.y = 1, attr.val.clusterDim.z = 1;
    cfg.gridDim = dim3(PZ_SCORE_SPLIT);
    cfg.blockDim = dim3(PZ_SCORE_STAGED_THREADS);
    cfg.dynamicSmemBytes = PZ_SCORE_STAGED_SMEM;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    int clusters = 0;
    e = cudaOccupancyMaxActiveClusters(&clusters, pz_score_staged_kernel<PZ_SCORE_SPLIT>, &cfg);
    *split = e == cudaSuccess && clusters > 0;
    if (e != cudaSuccess)
        (void)cudaGetLastError(); /* no clusters on this device: the one-block form */
    return cudaSuccess;
}

/* The score pass of a call, up to 64 bins: a one-item call (an optimizer's single pair, a volume
 * pair) as a cluster of PZ_SCORE_SPLIT staged blocks where the device runs clusters (`split` from
 * pz_score_setup); a batch of at most one item per SM as one staged block per item; else the lane
 * kernel, whose blocks of 256 threads fill the SMs better. Session 24 (H100, same calls): the
 * one-item pass 18.6-20.5 us as one block, 15.3-16.6 as a cluster (one 256x256 pair 43.6 -> 41.0
 * us a call); 16 items as clusters (128 SMs) 3.5 us a call slower than one block each, so only a
 * single item takes them (2 to 15 items not measured); 1024 items 75 us on the lane kernel
 * against 138 as staged blocks (ncu). */
inline cudaError_t pz_launch_score(const pz_args &a, int gradient, int sms, bool split,
                                   cudaStream_t stream)
{
    const size_t cells = (size_t)a.bins * a.bins;
    if (cells > PZ_SCORE_STAGED_CELLS || a.count > (uint32_t)sms) {
        pz_score_kernel<<<a.count, PZ_SCORE_THREADS, 0, stream>>>(a, gradient);
        return cudaGetLastError();
    }
    const size_t smem = 2 * cells * sizeof(double);
    if (!split || a.count != 1 || PZ_SCORE_SPLIT > (uint32_t)sms) {
        pz_score_staged_kernel<1><<<a.count, PZ_SCORE_STAGED_THREADS, smem, stream>>>(a, gradient);
        return cudaGetLastError();
    }
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = PZ_SCORE_SPLIT, attr.val.clusterDim.y = 1, attr.val.clusterDim.z = 1;
    cfg.gridDim = dim3(a.count * PZ_SCORE_SPLIT);
    cfg.blockDim = dim3(PZ_SCORE_STAGED_THREADS);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    if (cudaLaunchKernelEx(&cfg, pz_score_staged_kernel<PZ_SCORE_SPLIT>, a, gradient) ==
        cudaSuccess)
        return cudaSuccess;
    /* no cluster now (a shared or partitioned GPU can refuse what setup allowed): one block */
    (void)cudaGetLastError();
    pz_score_staged_kernel<1><<<a.count, PZ_SCORE_STAGED_THREADS, smem, stream>>>(a, gradient);
    return cudaGetLastError();
}

} // namespace

#endif /* DH_KERNELS_MI_PARZEN_CUDA_SCORE_CUH */
