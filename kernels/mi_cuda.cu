// SPDX-License-Identifier: MIT
/*
 * mi_cuda.cu: joint histograms and mutual-information scores on the GPU (mi_cuda.h), the
 * twin of mi_joint_cpu.c + mi_scores.c. One evaluation of K moving images is ONE launch: no zeroing
 * pass, no host synchronization, nothing allocated. dh_mi_gpu_layout picks, per call, one of:
 *  - one block per image for calls of at least one image per SM (mi_kernel with one-block
 *    clusters; mi_cuda_solo.cuh above 16384 cells);
 *  - P plain blocks per image for calls of fewer (mi_cuda_spread.cuh: global atomics into a
 *    per-image accumulator, the last block scores), except for large images at more than 64 x
 *    64 bins, which keep the clusters below;
 *  - a thread-block cluster per image, described here.
 *
 * The kernels' shared arguments and scoring arithmetic are in mi_cuda_common.cuh, the count loops
 * in mi_cuda_count.cuh. dh_mi_gpu_create's steps (init_state, choose_block_shape, fit_cluster,
 * choose_batch_layouts, clusters_per_image, choose_spread, allocate_and_upload) fix the layouts
 * once per fixed image; dh_mi_gpu_evaluate launches one of them per call.
 *
 * Each image is scored by one thread-block cluster (Hopper; C = 1, 2, 4, 8 or 16 blocks), in
 * mi_kernel's stages (zero_block, merged_range, count_block, flush, gather_clusters, write_owned,
 * sums_to_block0, owned_terms, lane_sums, then block 0's trees):
 *   1. every block zeroes a private joint histogram in shared memory: 32-bit counters up to
 *      16384 cells, above that 16-bit counters packed two per word (256 x 256 = 128 KB); a
 *      one-block cluster with 32-bit counters has none and counts straight into its share (4);
 *   2. (no explicit moving range) the cluster finds the image's min..max over its valid pixels,
 *      exchanged through distributed shared memory (DSMEM);
 *   3. each block counts its share of pixels (16-byte loads of 8 samples, scalar tail; runs of
 *      one cell inside the 8 are merged into one shared atomic, which tames the background bin);
 *      packed counters are flushed before any can reach 65536; the pixels counted, added into
 *      every block's N, give N without a pass over the cells;
 *   4. flush: the non-zero private counters are added into the cluster's 32-bit histogram, which
 *      is split over the blocks: block r owns the cells whose index mod 256 lies in its lane
 *      range [r 256/C, (r + 1) 256/C) (remote shared atomics, integers: order-free);
 *   5. scores: each block writes its owned cells of the joint histogram back (always, so it can
 *      be read back), adds their row and column sums into block 0's (integers), turns them into
 *      entropy terms (up to 32 rows inside the tree, above that in parallel into a padded
 *      region first) and adds each owned lane's rows as mi_scores.h's tree with warp
 *      shuffles (no barrier per level; a lane's entries all live in one block, so the sums are
 *      the CPU's bits), storing the lane sum into block 0. After one cluster barrier block 0
 *      turns the row and column sums into terms, one warp runs the three 256-lane trees the
 *      same way, and its lane 0 calls dh_mi_finish and writes the record. Three cluster
 *      barriers in all (after zeroing, after the flush, before block 0 finishes).
 * Large images (volumes) use G clusters per image: each writes its cluster histogram into a
 * preallocated partial slot, and the last cluster to finish (a threadfence and a per-image counter
 * that it resets) adds the G partials, integers again, and scores as above. Without an explicit
 * range such an image needs its min..max before counting: a small range kernel writes per-block
 * partial min/max first.
 *
 * All float work is __dadd_rn/__dmul_rn/__ddiv_rn through mi_scores.h (never contracted into
 * FMAs) with the project's own logarithm, so records are bit-identical to the CPU's.
 */
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "cuda_check.h"
#include "mi_cuda.h"
#include "mi_cuda_common.cuh"
#include "mi_cuda_count.cuh"
#include "mi_cuda_score.cuh"
#include "mi_cuda_solo.cuh"
#include "mi_cuda_spread.cuh"

namespace {

constexpr uint32_t PACKED_ABOVE_CELLS = 16384; /* 32-bit counters up to 64 KB */
constexpr uint32_t LN_TABLE_MAX = 65536; /* logarithms of counts 0 .. 65535 (cell_term) */
constexpr int RANGE_THREADS = 512;
constexpr uint32_t RANGE_BLOCKS = 128; /* per image, for multi-cluster images */
/* Blocks per SM for one-block images of 512 threads (dh_mi_gpu_tuning): 4, registers capped
 * at 32 (a few spill, outside the counting loop), is full occupancy; batch of 1024 256x256 pairs
 * at 64 bins on an H100: 177 us at 2 blocks, 159 at 3, 156 at 4. */
constexpr uint32_t AUTO_BLOCKS_PER_SM = 4;

/* Multi-cluster images without a range: RANGE_BLOCKS partial min/max per image. */
__global__ void __launch_bounds__(RANGE_THREADS) range_kernel(eval_args a, int2 *parts)
{
    const uint32_t k = blockIdx.x / RANGE_BLOCKS, part = blockIdx.x % RANGE_BLOCKS;
    const uint16_t *img = a.moving + (size_t)k * a.stride;
    const uint8_t *val = a.valid ? a.valid + (size_t)k * a.valid_stride : nullptr;
    int2 r = share_minmax(img, val, a.n, a.is_signed, a.vec, part, RANGE_BLOCKS);
    if (threadIdx.x == 0)
        parts[blockIdx.x] = r;
}

/* ln_tab[x] = dh_mi_log(x) for x < len (0 for x = 0), once per prepared fixed image. */
__global__ void ln_table_kernel(double *tab, uint32_t len)
{
    for (uint32_t x = blockIdx.x * blockDim.x + threadIdx.x; x < len; x += gridDim.x * blockDim.x)
        tab[x] = x ? dh_mi_log((double)x) : 0.0;
}

/* Warp 0: the three 256-lane trees (marginal terms, lane sums) and image k's record. */
__device__ __forceinline__ void lane_trees_record(const eval_args &a, uint32_t k,
                                                  const unsigned long long *tot_f,
                                                  const unsigned long long *tot_m,
                                                  const double *lanes, bool need_f, uint64_t n,
                                                  int32_t lo, int32_t hi, bool trees, bool finish)
{
    double sf = a.fixed_sum, sm = 0.0, sj = 0.0;
    if (trees) {
        if (need_f)
            sf = warp_tree256([&](uint32_t t) { return __longlong_as_double(tot_f[t]); });
        sm = warp_tree256([&](uint32_t t) { return __longlong_as_double(tot_m[t]); });
        sj = warp_tree256([&](uint32_t t) { return lanes[t]; });
    }
    if (threadIdx.x == 0 && finish)
        write_record(a, k, n, sf, sm, sj, lo, hi);
}

/* Where a block of mi_kernel stands: its image and its place among the image's blocks, and the
 * share of the cluster histogram it owns. */
struct block_place {
    uint32_t C, rank;  /* blocks per cluster, this block's rank in its cluster */
    uint32_t P;        /* blocks per image: G clusters of C */
    uint32_t k, b, g;  /* the image, this block among its P, this block's cluster among its G */
    uint32_t tid, T;
    uint32_t cells, lb_shift, LB, owned; /* LB = 1 << lb_shift lanes per block, owned words */
    uint32_t skip;                       /* DH_MI_STAGE_* bits left out */
};

/* The sums every block of mi_kernel keeps in shared memory. rowp, colp: this block's row and
 * column sums of its owned cells; tot_f, tot_m: in block 0 also the cluster's totals (every
 * block adds its sums into block 0's), later overwritten by their terms; lane_j: in block 0 every
 * lane's row sum, stored by its owner. Pointers to the kernel's own __shared__ arrays. */
struct block_sums {
    unsigned long long *rowp, *colp, *tot_f, *tot_m;
    double *lane_j;
};

/* 1. Zeroes the private histogram (none when `direct`), this block's share of the cluster
 * histogram (16-byte stores; both regions are whole multiples of 16 bytes), the sums, the pixel
 * counts and count_plain's sink (smem_layout leaves the room). */
template <bool PACKED>
__device__ __forceinline__ void zero_block(const block_place &p, uint32_t *hist, uint32_t *red,
                                           bool direct, bool zero_counts, const block_sums &s,
                                           unsigned long long &s_count, unsigned long long &s_n)
{
    if (zero_counts) {
        const uint32_t hist_quads = ((PACKED ? (p.cells + 1) / 2 : p.cells) + 3) / 4;
        const uint4 zero = make_uint4(0, 0, 0, 0);
        if (!direct)
            for (uint32_t w = p.tid; w < hist_quads; w += p.T)
                ((uint4 *)hist)[w] = zero;
        for (uint32_t w = p.tid; w < p.owned / 4; w += p.T)
            ((uint4 *)red)[w] = zero;
    }
    for (uint32_t t = p.tid; t < DH_MI_LANES; t += p.T)
        s.rowp[t] = s.colp[t] = s.tot_f[t] = s.tot_m[t] = 0;
    if (p.tid == 0) {
        s_count = s_n = 0;
        red[p.owned] = 0;
    }
}

/* 2, after the cluster barrier that publishes every block's s_share: the image's moving range
 * lo..hi, merged by one warp from the cluster's shares (one cluster per image) or from
 * range_kernel's parts (several), through s_range for the block. No valid pixel: 0:0, as on
 * the CPU (nothing counts anyway). */
__device__ __forceinline__ void merged_range(cg::cluster_group &cluster, const eval_args &a,
                                             const block_place &p, int2 &s_share, int2 &s_range,
                                             int32_t &lo, int32_t &hi)
{
    if (p.tid < 32) {
        int2 r = make_int2(INT_MAX, INT_MIN);
        if (a.clusters == 1) {
            if (p.tid < p.C)
                r = *cluster.map_shared_rank(&s_share, p.tid);
        } else {
            for (uint32_t i = p.tid; i < RANGE_BLOCKS; i += 32)
                r = minmax_merge(r, a.range_parts[(size_t)p.k * RANGE_BLOCKS + i]);
        }
        for (int o = 16; o > 0; o >>= 1) {
            r.x = min(r.x, __shfl_xor_sync(0xFFFFFFFFu, r.x, o));
            r.y = max(r.y, __shfl_xor_sync(0xFFFFFFFFu, r.y, o));
        }
        if (p.tid == 0)
            s_range = r.x > r.y ? make_int2(0, 0) : r;
    }
    __syncthreads();
    lo = s_range.x;
    hi = s_range.y;
}

/* Multi-cluster images, after the flush: every cluster publishes its counts into its partial
 * slot; the last cluster to finish adds them all into its shares (integers again), resets the
 * image's counter and adds N into every block's s_n. Returns false to the clusters that are not
 * the last, which then leave. */
__device__ __forceinline__ bool gather_clusters(cg::cluster_group &cluster, const eval_args &a,
                                                const block_place &p, uint32_t *red,
                                                int &s_last, unsigned long long &s_n)
{
    const uint32_t cells = p.cells;
    uint32_t *mine = a.partials + ((size_t)p.k * a.clusters + p.g) * cells;
    for (uint32_t l = p.tid; l < p.owned; l += p.T) {
        uint32_t c = owned_cell(l, p.rank, p.lb_shift);
        if (c < cells)
            mine[c] = red[l];
    }
    __threadfence();
    cluster.sync();
    if (p.rank == 0 && p.tid == 0)
        s_last = atomicAdd(&a.counters[p.k], 1u) == a.clusters - 1;
    cluster.sync();
    const int last = *cluster.map_shared_rank(&s_last, 0);
    cluster.sync(); /* block 0 stays until everyone has read its flag */
    if (!last)
        return false;
    __threadfence();
    const uint32_t *all = a.partials + (size_t)p.k * a.clusters * cells;
    unsigned long long total = 0;
    for (uint32_t l = p.tid; l < p.owned; l += p.T) {
        uint32_t c = owned_cell(l, p.rank, p.lb_shift), sum = 0;
        if (c < cells)
            for (uint32_t q = 0; q < a.clusters; q++)
                sum += __ldcg(all + (size_t)q * cells + c);
        red[l] = sum;
        total += sum;
    }
    if (p.rank == 0 && p.tid == 0)
        a.counters[p.k] = 0; /* ready for the next evaluation, in stream order */
    /* N is the sum of the totals: every block adds its cells into every block's s_n */
    for (int o = 16; o > 0; o >>= 1)
        total += __shfl_xor_sync(0xFFFFFFFFu, total, o);
    if ((p.tid & 31) == 0 && total)
        for (uint32_t q = 0; q < p.C; q++)
            atomicAdd(cluster.map_shared_rank(&s_n, q), total);
    cluster.sync();
    return true;
}

/* 5a. The owned cells of the joint histogram written back, and their row and column sums
 * (integers: any order). */
__device__ __forceinline__ void write_owned(const eval_args &a, const block_place &p,
                                            const uint32_t *red, const block_sums &s)
{
    const uint32_t skip = p.skip, cells = p.cells, bm = a.bins_moving;
    uint32_t *joint = a.joint + (size_t)p.k * cells;
    for (uint32_t l = p.tid; l < p.owned; l += p.T) {
        uint32_t c = owned_cell(l, p.rank, p.lb_shift);
        if (c >= cells)
            continue;
        uint32_t x = red[l];
        if (!(skip & DH_MI_STAGE_WRITE))
            joint[c] = x;
        if (x && !(skip & DH_MI_STAGE_MARGINALS)) {
            const uint32_t r = row_of(a, c);
            atomicAdd(&s.rowp[r], (unsigned long long)x);
            atomicAdd(&s.colp[c - r * bm], (unsigned long long)x);
        }
    }
}

/* 5b. This block's row and column sums added into block 0's totals. */
__device__ __forceinline__ void sums_to_block0(cg::cluster_group &cluster, const eval_args &a,
                                               const block_place &p, const block_sums &s)
{
    if (!(p.skip & DH_MI_STAGE_MARGINALS))
        for (uint32_t t = p.tid; t < DH_MI_LANES; t += p.T) {
            if (s.rowp[t])
                atomicAdd(cluster.map_shared_rank(s.tot_f, 0) + t, s.rowp[t]);
            if (s.colp[t])
                atomicAdd(cluster.map_shared_rank(s.tot_m, 0) + t, s.colp[t]);
        }
}

/* 5b. More than 32 rows (one warp per lane in lane_sums): the terms of the owned cells first, in
 * parallel, into a region padded by one double per row so that the threads of a warp that walk
 * one lane's rows hit different banks (computed inside the tree, the loads of one lane's counts,
 * LB words apart, hit one bank: 256 bins measured 13% slower that way). */
__device__ __forceinline__ void owned_terms(const eval_args &a, const block_place &p,
                                            const uint32_t *red, double *terms, uint64_t n,
                                            double ln_n)
{
    for (uint32_t l = p.tid; l < p.owned; l += p.T) {
        uint32_t c = owned_cell(l, p.rank, p.lb_shift);
        terms[(l >> p.lb_shift) * (p.LB + 1) + (l & (p.LB - 1))] =
            c < p.cells ? cell_term(a, red[l], n, ln_n) : 0.0;
    }
}

/* 5c. Each owned lane's rows as mi_scores.h's tree; the lane sum goes straight into block 0's
 * lane_j. Up to 16 rows (64 x 64 bins) of a one-block image: one thread per lane (thread_tree);
 * up to 32 rows: a segment of W threads per lane (W = rows rounded up to a power of two; the
 * CPU's levels exactly), 32 / W lanes per warp; more rows: one warp per lane. */
template <bool PACKED>
__device__ __forceinline__ void lane_sums(cg::cluster_group &cluster, const eval_args &a,
                                          const block_place &p, const uint32_t *red,
                                          const double *terms, uint32_t rows, bool with_terms,
                                          double *lane_j, uint64_t n, double ln_n)
{
    const uint32_t cells = p.cells, lb_shift = p.lb_shift, LB = p.LB, tid = p.tid, T = p.T;
    /* The entropy term of owned row j, lane L: up to 32 rows computed where the tree needs it
     * (no terms region, no pass for it); the same values in the same order either way. */
    auto term = [&](uint32_t j, uint32_t L) -> double {
        const uint32_t l = (j << lb_shift) | L;
        if (!with_terms)
            return 0.0;
        if (PACKED || rows > 32) /* packed counters always have 256+ rows */
            return terms[j * (LB + 1) + L];
        return owned_cell(l, p.rank, lb_shift) < cells ? cell_term(a, red[l], n, ln_n) : 0.0;
    };
    double *lanes0 = cluster.map_shared_rank(lane_j, 0) + (p.rank << lb_shift);
    if (rows <= 16 && LB == 256) {
        /* One-block images: one thread per lane, its rows' tree in registers; each warp loads
         * 32 consecutive lanes of a row (no bank conflicts: the segments below load one lane's
         * rows, all in one bank) and needs no shuffles. 64 bins, batch of 1024 256x256 pairs:
         * 101.9 us against 106.2 (two threads per lane, halves joined through shared memory:
         * 104.4). */
        for (uint32_t L = tid; L < LB; L += T) {
            auto get = [&](uint32_t j) -> double {
                const uint32_t l = (j << 8) | L;
                return j < rows && with_terms && l < cells ? cell_term(a, red[l], n, ln_n) : 0.0;
            };
            lanes0[L] = rows <= 1   ? get(0)
                        : rows <= 2 ? thread_tree<1, 2>(get, 0)
                        : rows <= 4 ? thread_tree<1, 4>(get, 0)
                        : rows <= 8 ? thread_tree<1, 8>(get, 0)
                                    : thread_tree<1, 16>(get, 0);
        }
    } else if (rows <= 32) {
        uint32_t W = 1;
        while (W < rows)
            W <<= 1;
        const uint32_t i = tid & (W - 1), per_warp = 32 / W;
        for (uint32_t L0 = (tid >> 5) * per_warp; L0 < LB; L0 += (T >> 5) * per_warp) {
            const uint32_t L = L0 + ((tid & 31) / W);
            double v = L < LB && i < rows ? term(i, L) : 0.0;
            for (uint32_t s = W >> 1; s >= 1; s >>= 1)
                v = __dadd_rn(v, __shfl_down_sync(0xFFFFFFFFu, v, s, W));
            if (i == 0 && L < LB)
                lanes0[L] = v;
        }
    } else {
        for (uint32_t L = tid >> 5; L < LB; L += T >> 5) {
            const double v = warp_tree256([&](uint32_t j) { return j < rows ? term(j, L) : 0.0; });
            if ((tid & 31) == 0)
                lanes0[L] = v;
        }
    }
}

/* PACKED: 16-bit counters; THR, MINB: the launch bounds (512 threads and 3 or 4 blocks per SM
 * cap the registers so more one-block images run on an SM at once). The stages are the numbered
 * steps of this file's top comment. */
template <bool PACKED, int THR, int MINB>
__global__ void __launch_bounds__(THR, MINB) mi_kernel(eval_args a)
{
    if (a.skip & DH_MI_STAGE_ALL)
        return;
    cg::cluster_group cluster = cg::this_cluster();
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ unsigned long long rowp[DH_MI_LANES], colp[DH_MI_LANES];
    __shared__ unsigned long long tot_f[DH_MI_LANES], tot_m[DH_MI_LANES];
    __shared__ double lane_j[DH_MI_LANES];
    __shared__ unsigned long long s_count, s_n;
    __shared__ int2 s_share, s_range;
    __shared__ int s_last;
    __shared__ double s_ln_n;
    const block_sums sums = {rowp, colp, tot_f, tot_m, lane_j};

    block_place p;
    p.C = cluster.num_blocks();
    p.rank = cluster.block_rank();
    p.P = a.clusters * p.C;
    p.k = blockIdx.x / p.P;
    p.b = blockIdx.x % p.P;
    p.g = p.b / p.C;
    p.tid = threadIdx.x;
    p.T = blockDim.x;
    p.cells = a.cells;
    p.lb_shift = a.lb_shift;
    p.LB = 1u << p.lb_shift;
    p.owned = owned_words(p.cells, p.lb_shift);
    p.skip = a.skip;
    const uint32_t skip = p.skip, k = p.k, tid = p.tid;
    uint32_t *red = (uint32_t *)(smem + a.region_bytes);
    /* A one-block cluster with 32-bit counters counts straight into its share of the cluster
     * histogram (the same cells in the same order: owned_cell is the identity for C = 1), so it
     * has no private histogram to zero or flush (smem_layout gives it no region). */
    const bool direct = !PACKED && p.C == 1;
    uint32_t *hist = direct ? red : (uint32_t *)smem;
    const uint16_t *img = a.moving + (size_t)k * a.stride;
    const uint8_t *val = a.valid ? a.valid + (size_t)k * a.valid_stride : nullptr;

    /* 1. zero */
    zero_block<PACKED>(p, hist, red, direct, !(skip & DH_MI_STAGE_ZERO), sums, s_count, s_n);

    /* 2. the moving range: this block's share, merged after the barrier */
    int32_t lo = a.lo, hi = a.hi;
    if (!a.has_range && a.clusters == 1) {
        int2 r = share_minmax(img, val, a.n, a.is_signed, a.vec, p.b, p.P);
        if (tid == 0)
            s_share = r;
    }
    cluster.sync(); /* zeroed shares and the partial ranges are visible cluster-wide */
    if (!a.has_range)
        merged_range(cluster, a, p, s_share, s_range, lo, hi);
    const uint32_t width = (uint32_t)(hi - lo + 1);
    const uint32_t magic = width == 1 ? 0u : (uint32_t)((1ull << 32) / width);

    /* 3. count; N of a one-cluster image is the pixels its blocks counted (no pass over the
     * cells for it) */
    const unsigned long long block_n =
        count_block<PACKED>(cluster, a, k, img, val, hist, red, p.b, p.P, lo, width, magic,
                            !(skip & DH_MI_STAGE_COUNT), &s_count);
    if (a.clusters == 1 && tid < p.C && block_n)
        atomicAdd(cluster.map_shared_rank(&s_n, tid), block_n);
    /* 4. flush into the owners' shares */
    if (!direct && !(skip & DH_MI_STAGE_REDUCE))
        flush<PACKED>(cluster, hist, red, p.cells, p.lb_shift, false);
    cluster.sync(); /* every share and s_n complete; private histograms dead */
    if (a.clusters > 1 && !gather_clusters(cluster, a, p, red, s_last, s_n))
        return;

    /* 5a. the joint histogram written back, the sums of the owned cells; ln N, once per block */
    const uint64_t n = s_n;
    if (tid == 0)
        s_ln_n = n ? dh_mi_log((double)n) : 0.0;
    write_owned(a, p, red, sums);
    __syncthreads();
    const double ln_n = s_ln_n;

    /* 5b. the sums into block 0's totals; the entropy terms of the owned cells, in parallel */
    sums_to_block0(cluster, a, p, sums);
    const uint32_t rows = (p.cells + 255) >> 8;
    const bool with_terms = !(skip & DH_MI_STAGE_TERMS);
    double *terms = (double *)smem; /* the private histogram, dead after the flush */
    if (rows > 32 && with_terms)
        owned_terms(a, p, red, terms, n, ln_n);
    __syncthreads();

    /* 5c. the lanes' trees */
    if (!(skip & DH_MI_STAGE_TREES))
        lane_sums<PACKED>(cluster, a, p, red, terms, rows, with_terms, lane_j, n, ln_n);
    cluster.sync(); /* lane sums and marginal totals are in block 0: the others may leave */
    if (p.rank != 0)
        return;

    /* 6. block 0: the marginals' terms (the fixed one only when the cached sum does not apply),
     * the three lane trees, the record */
    const bool need_f = n != a.fixed_valid;
    if (!(skip & DH_MI_STAGE_MARGINALS))
        marginal_terms(a, tot_f, tot_m, need_f, n, ln_n);
    __syncthreads();
    if (tid < 32)
        lane_trees_record(a, k, tot_f, tot_m, lane_j, need_f, n, lo, hi,
                          !(skip & DH_MI_STAGE_TREES), !(skip & DH_MI_STAGE_FINISH));
}

uint32_t log2u(uint32_t x)
{
    uint32_t s = 0;
    while ((1u << s) < x)
        s++;
    return s;
}

/* Private region (histogram, later the terms) and owned-share bytes for C blocks per cluster. */
void smem_layout(uint32_t cells, uint32_t cluster, uint32_t *region, uint32_t *total)
{
    const uint32_t owned = owned_words(cells, log2u(256 / cluster));
    /* The private histogram; none for one-block clusters with 32-bit counters (they count into
     * their share directly). Above 32 rows the region later holds the entropy terms: one row of
     * LB lanes per histogram row, padded by one double (see the kernel); up to 32 rows they are
     * computed in the trees and need no room. */
    const bool packed = cells > PACKED_ABOVE_CELLS;
    const uint32_t hist = packed ? (cells + 1) / 2 * 4 : cluster == 1 ? 0 : cells * 4;
    const uint32_t rows = (cells + 255) / 256;
    const uint32_t terms = rows > 32 ? (owned + rows) * 8 : 0;
    *region = ((hist > terms ? hist : terms) + 15) / 16 * 16;
    *total = *region + owned * 4 + 16; /* + count_plain's sink word */
}

} // namespace

struct dh_mi_gpu {
    size_t n;
    uint32_t bins_fixed, bins_moving, cells, max_batch;
    uint64_t fixed_valid;
    double fixed_sum;
    uint32_t cluster, clusters; /* C, G */
    uint32_t threads;           /* per block */
    uint32_t blocks_per_sm;     /* tuning's, resolved (kernel_for) */
    uint32_t no_merge;          /* tuning's no_run_merge */
    uint32_t classic_count;     /* tuning's classic_count */
    uint32_t skip;              /* tuning's stage_skip */
    uint32_t region_bytes, smem_bytes;
    /* Calls of at least batch_from images (0: never) run one block of 512 threads per image
     * instead (batch_region, batch_smem): a cluster per image suits few images, one block each
     * many (bench_mi, batches of 256x256 pairs: 2-16 times the rate). */
    uint32_t batch_from, batch_region, batch_smem;
    /* Calls of at least solo_from images (0: never) without masks, of stored values, with
     * packed counters and at most SOLO_MAX_PIXELS: one block per image (mi_cuda_solo.cuh). */
    uint32_t solo_from, solo_smem;
    /* Calls of at most spread_slots images (0: never) with 32-bit counters and no layout fixed
     * by the tuning, below batch_from: the spread kernel (mi_cuda_spread.cuh), P blocks per
     * image, at most spread_resident blocks in all (co-resident, one launch). */
    uint32_t spread_slots, spread_smem, spread_resident, spread_blocks;
    uint32_t sms; /* the device's multiprocessors */
    bool packed;
    uint16_t *d_fixed_bins;
    uint32_t *d_joint;
    uint32_t *d_partials; /* G > 1 */
    unsigned *d_counters;
    int2 *d_range_parts; /* G > 1 */
    spread_slot *d_spread_slots; /* spread_slots of them, zero between evaluations */
    uint32_t *d_spread_acc;      /* spread_slots x spread_acc_words(cells), likewise */
    double *d_ln_tab;            /* ln_len logarithms (cell_term); none with direct_terms */
    uint32_t ln_len;
    /* host path staging, grown on demand */
    void *d_stage;
    size_t stage_bytes;
};

namespace {

/* Lets the kernel launch with up to smem bytes of dynamic shared memory (dh_cuda_allow_smem:
 * the most the device allows, the same value from any thread, never this layout's size, which
 * would refuse a larger layout made earlier) and in clusters of any size. */
cudaError_t configure(void (*kernel)(eval_args), uint32_t smem)
{
    cudaError_t err = dh_cuda_allow_smem((const void *)kernel, smem);
    if (err == cudaSuccess)
        err = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    return err;
}

/* The kernel for a layout: blocks_per_sm 3 or 4 only for one-block clusters of 512 threads
 * with 32-bit counters, 8 for 256 threads (their launch bounds refuse more threads). */
void (*kernel_for(bool packed, uint32_t cluster, uint32_t threads,
                  uint32_t blocks_per_sm))(eval_args)
{
    if (packed)
        return mi_kernel<true, THREADS, 1>;
    if (cluster == 1 && threads == 512 && blocks_per_sm == 3)
        return mi_kernel<false, 512, 3>;
    if (cluster == 1 && threads == 512 && blocks_per_sm == 4)
        return mi_kernel<false, 512, 4>;
    if (cluster == 1 && threads == 256 && blocks_per_sm == 8)
        return mi_kernel<false, 256, 8>;
    return mi_kernel<false, THREADS, 1>;
}

/* The solo kernel for signed or unsigned samples, counting runs of one cell (merge) or pixels,
 * images of one round of 65536 pixels or more (multi). */
void (*solo_kernel_for(bool is_signed, bool merge, bool multi))(eval_args)
{
    static void (*const kernels[8])(eval_args) = {
        mi_solo_kernel<false, false, false>, mi_solo_kernel<true, false, false>,
        mi_solo_kernel<false, true, false>,  mi_solo_kernel<true, true, false>,
        mi_solo_kernel<false, false, true>,  mi_solo_kernel<true, false, true>,
        mi_solo_kernel<false, true, true>,   mi_solo_kernel<true, true, true>};
    return kernels[is_signed | merge << 1 | multi << 2];
}

/* The most dynamic shared memory one block may have on this device (0 if unknown). */
int smem_limit()
{
    int dev = 0, v = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return v - 16 * 1024; /* room for the kernel's static shared memory */
}

/* How many clusters of C blocks can be resident at once (0: this size cannot launch). */
int active_clusters(bool packed, uint32_t cluster, uint32_t threads, uint32_t blocks_per_sm,
                    uint32_t smem)
{
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = cluster;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cfg.gridDim = dim3(cluster * 64, 1, 1);
    cfg.blockDim = dim3(threads, 1, 1);
    cfg.dynamicSmemBytes = smem;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    int num = 0;
    if (cudaOccupancyMaxActiveClusters(&num, kernel_for(packed, cluster, threads, blocks_per_sm),
                                       &cfg) != cudaSuccess) {
        cudaGetLastError(); /* clear it: a refused size is an answer here */
        return 0;
    }
    return num;
}


/* dh_mi_gpu_create's first step: the sizes, the tuning's switches and the logarithm table's
 * length, nothing on the device yet. */
void init_state(dh_mi_gpu *g, size_t n, uint32_t bins_fixed, uint32_t bins_moving,
                uint32_t max_batch, uint64_t fixed_valid, double fixed_sum,
                const dh_mi_gpu_tuning *tuning)
{
    g->n = n;
    g->bins_fixed = bins_fixed;
    g->bins_moving = bins_moving;
    g->cells = bins_fixed * bins_moving;
    g->max_batch = max_batch;
    g->fixed_valid = fixed_valid;
    g->fixed_sum = fixed_sum;
    g->packed = g->cells > PACKED_ABOVE_CELLS;
    g->skip = tuning ? tuning->stage_skip : 0;
    g->no_merge = tuning ? tuning->no_run_merge : 0;
    g->classic_count = tuning ? tuning->classic_count : 0;
    /* a cell counts at most n pixels, and most counts are small: 65536 logarithms (512 KB, read
     * through L1 and L2) cover every count of an image up to 256x256 */
    g->ln_len = tuning && tuning->direct_terms ? 0
                : n < LN_TABLE_MAX                 ? (uint32_t)n + 1
                                                   : LN_TABLE_MAX;
}

/* The cluster kernel's wished cluster size, threads per block and blocks per SM (the tuning's
 * or the defaults), checked. Cluster size: a batch of small images wants the smallest cluster
 * that fits (the fixed cost of scoring is paid once per image instead of once per block of it,
 * and more images run at once); one small image a cluster of 4 (latency), one large slice 16,
 * volumes 8. */
int choose_block_shape(dh_mi_gpu *g, const dh_mi_gpu_tuning *tuning, uint32_t *want, char *msg,
                       size_t msg_len)
{
    const size_t n = g->n;
    *want = tuning && tuning->cluster ? tuning->cluster
            : n <= (1u << 17)         ? (g->max_batch >= 16 ? 1u : 4u)
            : n <= (1u << 20)         ? 16u
                                      : 8u;
    if (*want != 1 && *want != 2 && *want != 4 && *want != 8 && *want != 16) {
        snprintf(msg, msg_len, "cluster size %u is not 1, 2, 4, 8 or 16", *want);
        return -1;
    }
    /* A batch of small images, one block each, runs best with 512 threads per block (more blocks
     * per SM); an image split over a cluster, or packed counters, with 1024 (bench_mi --stages,
     * threads table). */
    g->threads = tuning && tuning->threads      ? tuning->threads
                 : *want == 1 && !g->packed     ? 512u
                                                : (uint32_t)THREADS;
    if (g->threads != 256 && g->threads != 512 && g->threads != 1024) {
        snprintf(msg, msg_len, "%u threads per block is not 256, 512 or 1024", g->threads);
        return -1;
    }
    g->blocks_per_sm = tuning && tuning->blocks_per_sm ? tuning->blocks_per_sm
                                                       : AUTO_BLOCKS_PER_SM;
    if ((g->blocks_per_sm < 2 || g->blocks_per_sm > 4) && g->blocks_per_sm != 8) {
        snprintf(msg, msg_len, "%u blocks per SM is not 2, 3, 4 or 8", g->blocks_per_sm);
        return -1;
    }
    return 0;
}

/* The cluster size: the largest at or below the wish that launches (256 x 256 bins need 4 at
 * least), tried as the wish, then larger sizes (a large histogram needs more blocks to hold it),
 * then smaller ones (a device that refuses 16-block clusters). Sets g->cluster (0: none fits)
 * and *resident, the clusters of that size the device holds at once. */
cudaError_t fit_cluster(dh_mi_gpu *g, uint32_t want, int *resident)
{
    cudaError_t err = cudaSuccess;
    *resident = 0;
    const uint32_t sizes[] = {want, want * 2, want * 4, want * 8, want * 16,
                              want / 2, want / 4, want / 8, want / 16};
    for (uint32_t c : sizes) {
        if (c < 1 || c > 16)
            continue;
        smem_layout(g->cells, c, &g->region_bytes, &g->smem_bytes);
        const int limit = smem_limit();
        if (limit > 0 && g->smem_bytes > (uint32_t)limit)
            continue;
        if ((err = configure(kernel_for(g->packed, c, g->threads, g->blocks_per_sm),
                             g->smem_bytes)) != cudaSuccess)
            break;
        if ((*resident = active_clusters(g->packed, c, g->threads, g->blocks_per_sm,
                                         g->smem_bytes)) > 0) {
            g->cluster = c;
            break;
        }
    }
    return err;
}

/* Calls of one image per SM or more run one block per image where nothing in the tuning fixes
 * the layout: slices up to a megapixel with 32-bit counters in mi_kernel's one-block layout
 * (batch_from), images up to 512x512 with packed counters in the solo kernel (solo_from). */
void choose_batch_layouts(dh_mi_gpu *g, const dh_mi_gpu_tuning *tuning)
{
    int sms = 0, dev = 0;
    const size_t n = g->n;
    const bool fixed = tuning && (tuning->cluster || tuning->threads || tuning->blocks_per_sm);
    const bool per_call =
        g->max_batch > 1 && !fixed && cudaGetDevice(&dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) == cudaSuccess;
    if (per_call && !g->packed && g->cluster != 1 && n <= (1u << 20)) {
        smem_layout(g->cells, 1, &g->batch_region, &g->batch_smem);
        if (configure(kernel_for(false, 1, 512, AUTO_BLOCKS_PER_SM), g->batch_smem) ==
                cudaSuccess &&
            active_clusters(false, 1, 512, AUTO_BLOCKS_PER_SM, g->batch_smem) > 0)
            g->batch_from = (uint32_t)sms;
    }
    if (per_call && g->packed && n <= SOLO_MAX_PIXELS) { /* honours stage_skip */
        g->solo_smem = solo_smem_bytes(g->cells);
        int fit = 0;
        bool ok = true;
        for (int v = 0; v < 8; v++)
            ok = ok && configure(solo_kernel_for(v & 1, v & 2, v & 4), g->solo_smem) == cudaSuccess;
        if (ok &&
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, solo_kernel_for(false, false, true),
                                                          SOLO_THREADS, g->solo_smem) ==
                cudaSuccess &&
            fit > 0)
            g->solo_from = (uint32_t)sms;
    }
    (void)cudaGetLastError(); /* a refused batch layout is an answer, not an error */
}

/* Clusters per image: one up to about a megapixel; beyond, enough to fill the GPU once. */
uint32_t clusters_per_image(const dh_mi_gpu *g, const dh_mi_gpu_tuning *tuning, int resident)
{
    uint32_t clusters = 1;
    if (tuning && tuning->clusters_per_image)
        clusters = tuning->clusters_per_image;
    else if (g->n > (1u << 20)) {
        size_t by_size = (g->n + (1u << 20) - 1) >> 20;
        clusters = (uint32_t)(by_size < (size_t)resident ? by_size : (size_t)resident);
        if (clusters < 1)
            clusters = 1;
    }
    return clusters;
}

/* Few images of up to a megapixel with 32-bit counters: the spread kernel, unless the tuning
 * fixes a layout or asks for the cluster one. */
void choose_spread(dh_mi_gpu *g, const dh_mi_gpu_tuning *tuning)
{
    int sms = 0, dev = 0;
    const bool fixed = tuning && (tuning->cluster || tuning->threads || tuning->blocks_per_sm);
    const bool spread_fixed =
        fixed || (tuning && (tuning->clusters_per_image || tuning->no_spread));
    if (!spread_fixed && !g->packed && !g->skip && g->n <= (1u << 20) &&
        cudaGetDevice(&dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) == cudaSuccess) {
        g->spread_smem = spread_smem_bytes(g->cells);
        int fit = 0;
        if (configure(mi_spread_kernel, g->spread_smem) == cudaSuccess &&
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, mi_spread_kernel, SPREAD_THREADS,
                                                          g->spread_smem) == cudaSuccess &&
            fit > 0) {
            g->spread_resident = (uint32_t)(sms * fit);
            g->sms = (uint32_t)sms;
            g->spread_slots =
                g->max_batch < g->spread_resident ? g->max_batch : g->spread_resident;
            g->spread_blocks = tuning ? tuning->spread_blocks : 0;
        }
    }
    (void)cudaGetLastError();
}

/* dh_mi_gpu_create's last step: every buffer the chosen layouts need, the fixed image uploaded,
 * the logarithm table made. On failure the message says which and g is left to the caller. */
int allocate_and_upload(dh_mi_gpu *g, const uint16_t *fixed_bins, char *msg, size_t msg_len)
{
    const size_t n = g->n, cells = g->cells, max_batch = g->max_batch;
    const uint32_t clusters = g->clusters;
    cudaError_t err;
    if ((err = cudaMalloc(&g->d_fixed_bins, n * sizeof(uint16_t))) != cudaSuccess ||
        (err = cudaMalloc(&g->d_joint, max_batch * cells * sizeof(uint32_t))) != cudaSuccess ||
        (err = cudaMalloc(&g->d_counters, max_batch * sizeof(unsigned))) != cudaSuccess ||
        (err = cudaMemset(g->d_counters, 0, max_batch * sizeof(unsigned))) != cudaSuccess ||
        (err = cudaMemcpy(g->d_fixed_bins, fixed_bins, n * sizeof(uint16_t),
                          cudaMemcpyHostToDevice)) != cudaSuccess ||
        (err = cudaMemset(g->d_joint, 0, max_batch * cells * sizeof(uint32_t))) != cudaSuccess)
        return dh_cuda_fail(msg, msg_len, "", "allocating the fixed image on the GPU", err);
    if (clusters > 1 &&
        ((err = cudaMalloc(&g->d_partials, max_batch * clusters * cells * sizeof(uint32_t))) !=
             cudaSuccess ||
         (err = cudaMalloc(&g->d_range_parts, max_batch * RANGE_BLOCKS * sizeof(int2))) !=
             cudaSuccess))
        return dh_cuda_fail(msg, msg_len, "", "allocating the multi-cluster workspace", err);
    const size_t acc_bytes = (size_t)g->spread_slots * spread_acc_words(g->cells) * 4;
    if (g->spread_slots &&
        ((err = cudaMalloc(&g->d_spread_slots, g->spread_slots * sizeof(spread_slot))) !=
             cudaSuccess ||
         (err = cudaMemset(g->d_spread_slots, 0, g->spread_slots * sizeof(spread_slot))) !=
             cudaSuccess ||
         (err = cudaMalloc(&g->d_spread_acc, acc_bytes)) != cudaSuccess ||
         (err = cudaMemset(g->d_spread_acc, 0, acc_bytes)) != cudaSuccess))
        return dh_cuda_fail(msg, msg_len, "", "allocating the spread workspace", err);
    if (g->ln_len) {
        if ((err = cudaMalloc(&g->d_ln_tab, g->ln_len * sizeof(double))) == cudaSuccess) {
            ln_table_kernel<<<(g->ln_len + 255) / 256, 256>>>(g->d_ln_tab, g->ln_len);
            err = cudaGetLastError();
        }
        if (err != cudaSuccess)
            return dh_cuda_fail(msg, msg_len, "", "making the logarithm table", err);
    }
    /* The memsets above run on the legacy default stream, asynchronously; an evaluation on a
     * non-blocking stream does not wait for them, and a late memset of d_joint would zero joint
     * histograms an evaluation had just written. Wait for them here, once. */
    if ((err = cudaDeviceSynchronize()) != cudaSuccess)
        return dh_cuda_fail(msg, msg_len, "", "preparing the fixed image on the GPU", err);
    return 0;
}

} // namespace

extern "C" int dh_mi_gpu_create(const uint16_t *fixed_bins, size_t n, uint32_t bins_fixed,
                                uint32_t bins_moving, uint32_t max_batch, uint64_t fixed_valid,
                                double fixed_sum, const dh_mi_gpu_tuning *tuning,
                                dh_mi_gpu **out, char *msg, size_t msg_len)
{
    *out = nullptr;
    dh_mi_gpu *g = new (std::nothrow) dh_mi_gpu();
    if (!g) {
        snprintf(msg, msg_len, "out of host memory");
        return -1;
    }
    init_state(g, n, bins_fixed, bins_moving, max_batch, fixed_valid, fixed_sum, tuning);
    uint32_t want = 0;
    if (choose_block_shape(g, tuning, &want, msg, msg_len)) {
        delete g;
        return -1;
    }
    int resident = 0;
    cudaError_t err = fit_cluster(g, want, &resident);
    if (err != cudaSuccess || !g->cluster) {
        delete g;
        if (err == cudaSuccess)
            err = cudaErrorInvalidConfiguration;
        return dh_cuda_fail(msg, msg_len, "", "fitting a thread-block cluster (sm_90 needed)",
                            err);
    }
    choose_batch_layouts(g, tuning);
    g->clusters = clusters_per_image(g, tuning, resident);
    choose_spread(g, tuning);
    if (allocate_and_upload(g, fixed_bins, msg, msg_len)) {
        dh_mi_gpu_free(g);
        return -1;
    }
    *out = g;
    return 0;
}

extern "C" void dh_mi_gpu_free(dh_mi_gpu *g)
{
    if (!g)
        return;
    cudaFree(g->d_fixed_bins);
    cudaFree(g->d_joint);
    cudaFree(g->d_partials);
    cudaFree(g->d_counters);
    cudaFree(g->d_range_parts);
    cudaFree(g->d_spread_slots);
    cudaFree(g->d_spread_acc);
    cudaFree(g->d_ln_tab);
    cudaFree(g->d_stage);
    delete g;
}

extern "C" void dh_mi_gpu_get_tuning(const dh_mi_gpu *g, dh_mi_gpu_tuning *t)
{
    t->cluster = g->cluster;
    t->clusters_per_image = g->clusters;
    t->threads = g->threads;
    t->stage_skip = g->skip;
    t->blocks_per_sm = g->blocks_per_sm;
    t->no_run_merge = g->no_merge;
    t->classic_count = g->classic_count;
    t->no_spread = !g->spread_slots;
    t->direct_terms = !g->ln_len;
    t->spread_blocks = g->spread_blocks;
}

extern "C" dh_mi_layout dh_mi_gpu_layout(const dh_mi_gpu *g, uint32_t count, int masked,
                                               int float32)
{
    if (g->solo_from && count >= g->solo_from && !float32 && !masked)
        return DH_MI_LAYOUT_SOLO;
    if (g->batch_from && count >= g->batch_from)
        return DH_MI_LAYOUT_BATCH;
    /* The spread kernel for few images, except where its one scoring block has much more to do
     * than the counting: above 64 x 64 bins, images above 2^17 pixels stay in their 16-block
     * clusters until those no longer fit the device in one wave (one 512x512 slice at 128 x 128
     * bins: 21 us as a cluster, 29 us spread; at 64 x 64 bins 19.4 us spread, 19.8 us as a
     * cluster; bench_mi's few-images table) */
    if (g->spread_slots && count <= g->spread_slots &&
        (g->spread_blocks || g->n <= (1u << 17) || g->cells <= 4096 ||
         (size_t)count * g->cluster * g->clusters > g->sms))
        return DH_MI_LAYOUT_SPREAD;
    return DH_MI_LAYOUT_CLUSTER;
}

extern "C" int dh_mi_gpu_evaluate(dh_mi_gpu *g, const void *d_moving, int is_signed,
                                     size_t stride, uint32_t count, const uint8_t *d_valid,
                                     size_t valid_stride, const dh_faxis *float_axis,
                                     int has_range, int32_t lo, int32_t hi,
                                     int log2, dh_mi_values *d_out, void *stream, char *msg,
                                     size_t msg_len)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (count == 1) { /* one image: strides are never used, so they cannot break alignment */
        stride = 0;
        valid_stride = 0;
    }
    const dh_mi_layout layout = dh_mi_gpu_layout(g, count, d_valid != nullptr,
                                                       float_axis != nullptr);
    const bool batch = layout == DH_MI_LAYOUT_BATCH;
    const uint32_t cluster = batch ? 1 : g->cluster, threads = batch ? 512 : g->threads;
    const uint32_t per_sm = batch ? AUTO_BLOCKS_PER_SM : g->blocks_per_sm;
    eval_args a = {};
    a.fixed_bins = g->d_fixed_bins;
    a.moving = (const uint16_t *)d_moving;
    a.stride = stride;
    a.valid = d_valid;
    a.valid_stride = valid_stride;
    a.n = g->n;
    a.is_signed = is_signed;
    a.vec = ((uintptr_t)d_moving % 16 == 0) && (stride % 8 == 0) &&
            (!d_valid || ((uintptr_t)d_valid % 8 == 0 && valid_stride % 8 == 0));
    a.bins_fixed = g->bins_fixed;
    a.bins_moving = g->bins_moving;
    a.bm_div = (uint32_t)((1ull << 32) / g->bins_moving + 1);
    a.cells = g->cells;
    a.lb_shift = log2u(256 / cluster);
    a.region_bytes = batch ? g->batch_region : g->region_bytes;
    a.has_range = has_range;
    a.lo = lo;
    a.hi = hi;
    a.range_parts = g->d_range_parts;
    a.fixed_valid = g->fixed_valid;
    a.fixed_sum = g->fixed_sum;
    a.log2 = log2;
    a.clusters = g->clusters;
    a.partials = g->d_partials;
    a.counters = g->d_counters;
    a.joint = g->d_joint;
    a.out = d_out;
    a.skip = g->skip;
    a.no_merge = (int)g->no_merge;
    a.classic_count = (int)g->classic_count;
    a.ln_tab = g->d_ln_tab;
    a.ln_len = g->ln_len;
    if (float_axis) { /* the range is given: no range pass, the record's integer range is 0:0 */
        a.moving_f32 = (const float *)d_moving;
        a.fbins = float_axis->bins;
        a.flo = float_axis->lo;
        a.fhi = float_axis->hi;
        a.fwidth = float_axis->width;
        a.has_range = 1;
        a.lo = a.hi = 0;
        a.vec = ((uintptr_t)d_moving % 16 == 0) && (stride % 4 == 0) &&
                (!d_valid || ((uintptr_t)d_valid % 8 == 0 && valid_stride % 8 == 0));
        has_range = 1;
    }

    cudaError_t err;
    if (layout == DH_MI_LAYOUT_SOLO) {
        solo_kernel_for(is_signed, !a.no_merge, g->n > SOLO_ROUND_PIXELS)<<<count, SOLO_THREADS,
                                                                          g->solo_smem, s>>>(a);
        if ((err = cudaGetLastError()) != cudaSuccess)
            return dh_cuda_fail(msg, msg_len, "", "launching the joint-histogram kernel", err);
        return 0;
    }
    if (layout == DH_MI_LAYOUT_SPREAD) {
        /* P blocks per image: SPREAD_PIXELS_PER_BLOCK each, as many as the device holds */
        const size_t per_block = SPREAD_PIXELS_PER_BLOCK;
        size_t P = g->spread_blocks ? g->spread_blocks : (g->n + per_block - 1) / per_block;
        const size_t most = g->spread_resident / count;
        P = P < 1 ? 1 : P > most ? most : P;
        a.spread_blocks = (uint32_t)P;
        a.spread_slots = g->d_spread_slots;
        a.spread_acc = g->d_spread_acc;
        a.lb_shift = 8;
        cudaLaunchConfig_t cfg = {};
        cudaLaunchAttribute attr;
        attr.id = cudaLaunchAttributeCooperative; /* the blocks of an image meet (step 2) */
        attr.val.cooperative = 1;
        cfg.gridDim = dim3((unsigned)(count * P), 1, 1);
        cfg.blockDim = dim3(SPREAD_THREADS, 1, 1);
        cfg.dynamicSmemBytes = g->spread_smem;
        cfg.stream = s;
        cfg.attrs = &attr;
        cfg.numAttrs = !has_range && P > 1;
        err = cudaLaunchKernelEx(&cfg, mi_spread_kernel, a);
        if (err == cudaSuccess)
            err = cudaGetLastError();
        if (err != cudaSuccess)
            return dh_cuda_fail(msg, msg_len, "", "launching the joint-histogram kernel", err);
        return 0;
    }
    if (!has_range && g->clusters > 1) {
        range_kernel<<<count * RANGE_BLOCKS, RANGE_THREADS, 0, s>>>(a, g->d_range_parts);
        if ((err = cudaGetLastError()) != cudaSuccess)
            return dh_cuda_fail(msg, msg_len, "", "launching the range kernel", err);
    }
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = cluster;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cfg.gridDim = dim3(count * g->clusters * cluster, 1, 1);
    cfg.blockDim = dim3(threads, 1, 1);
    cfg.dynamicSmemBytes = batch ? g->batch_smem : g->smem_bytes;
    cfg.stream = s;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    err = cudaLaunchKernelEx(&cfg, kernel_for(g->packed, cluster, threads, per_sm), a);
    if (err == cudaSuccess)
        err = cudaGetLastError();
    if (err != cudaSuccess)
        return dh_cuda_fail(msg, msg_len, "", "launching the joint-histogram kernel", err);
    return 0;
}

extern "C" int dh_mi_gpu_evaluate_host(dh_mi_gpu *g, const void *moving, int is_signed,
                                          size_t stride, uint32_t count, const uint8_t *valid,
                                          size_t valid_stride, const dh_faxis *float_axis,
                                          int has_range, int32_t lo,
                                          int32_t hi, int log2, dh_mi_values *out, char *msg,
                                          size_t msg_len)
{
    /* Staging: images back to back with a stride rounded up to 8 samples (16-byte loads), masks
     * after them with a stride rounded up to 8 bytes, records last. */
    const size_t img_stride = (g->n + 7) / 8 * 8, mask_stride = img_stride;
    const size_t sample = float_axis ? sizeof(float) : sizeof(uint16_t);
    size_t img_bytes = (size_t)count * img_stride * sample;
    size_t mask_bytes = valid ? (size_t)count * mask_stride : 0;
    size_t rec_off = (img_bytes + mask_bytes + 15) / 16 * 16;
    size_t need = rec_off + (size_t)count * sizeof(dh_mi_values);
    cudaError_t err;
    if (need > g->stage_bytes) {
        cudaFree(g->d_stage);
        g->d_stage = nullptr;
        g->stage_bytes = 0;
        if ((err = cudaMalloc(&g->d_stage, need)) != cudaSuccess)
            return dh_cuda_fail(msg, msg_len, "", "allocating staging memory", err);
        g->stage_bytes = need;
    }
    char *base = (char *)g->d_stage;
    void *d_img = base;
    uint8_t *d_mask = valid ? (uint8_t *)(base + img_bytes) : nullptr;
    dh_mi_values *d_out = (dh_mi_values *)(base + rec_off);
    if ((err = cudaMemcpy2D(d_img, img_stride * sample, moving,
                            (count > 1 ? stride : g->n) * sample, g->n * sample, count,
                            cudaMemcpyHostToDevice)) !=
        cudaSuccess)
        return dh_cuda_fail(msg, msg_len, "", "copying the moving images", err);
    if (valid && (err = cudaMemcpy2D(d_mask, mask_stride, valid, count > 1 ? valid_stride : g->n,
                                     g->n, count, cudaMemcpyHostToDevice)) != cudaSuccess)
        return dh_cuda_fail(msg, msg_len, "", "copying the validity masks", err);
    if (dh_mi_gpu_evaluate(g, d_img, is_signed, img_stride, count, d_mask, mask_stride,
                              float_axis, has_range, lo, hi, log2, d_out, nullptr, msg, msg_len))
        return -1;
    if ((err = cudaMemcpy(out, d_out, (size_t)count * sizeof(dh_mi_values),
                          cudaMemcpyDeviceToHost)) != cudaSuccess)
        return dh_cuda_fail(msg, msg_len, "", "evaluating", err);
    return 0;
}

extern "C" int dh_mi_gpu_read_joint(dh_mi_gpu *g, uint32_t item, uint32_t *counts,
                                       char *msg, size_t msg_len)
{
    size_t cells = g->cells;
    cudaError_t err;
    if ((err = cudaDeviceSynchronize()) != cudaSuccess ||
        (err = cudaMemcpy(counts, g->d_joint + item * cells, cells * sizeof(uint32_t),
                          cudaMemcpyDeviceToHost)) != cudaSuccess)
        return dh_cuda_fail(msg, msg_len, "", "reading the joint histogram", err);
    return 0;
}
