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
 * Each image is scored by one thread-block cluster (Hopper; C = 1, 2, 4, 8 or 16 blocks):
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
#include "mi_joint.h"
#include "mi_cuda.h"
#include "mi_scores.h"

namespace cg = cooperative_groups;

namespace {

constexpr int THREADS = 1024;
/* Packed 16-bit counters: at most this many tiles (THREADS x 8 pixels) between flushes, so a
 * counter holds at most 7 x 8192 = 57344 < 65536. */
constexpr uint32_t PACKED_ROUND_TILES = 65535u / (THREADS * 8u);
constexpr uint32_t PACKED_ABOVE_CELLS = 16384; /* 32-bit counters up to 64 KB */
constexpr uint32_t NO_CELL = 0xFFFFFFFFu;
constexpr uint32_t LN_TABLE_MAX = 65536; /* logarithms of counts 0 .. 65535 (cell_term) */
constexpr int RANGE_THREADS = 512;
constexpr uint32_t RANGE_BLOCKS = 128; /* per image, for multi-cluster images */
/* Blocks per SM for one-block images of 512 threads (dh_mi_gpu_tuning): 4, registers capped
 * at 32 (a few spill, outside the counting loop), is full occupancy; batch of 1024 256x256 pairs
 * at 64 bins on an H100: 177 us at 2 blocks, 159 at 3, 156 at 4 (bench/NOTES.md run 23). */
constexpr uint32_t AUTO_BLOCKS_PER_SM = 4;


struct spread_slot; /* mi_cuda_spread.cuh */

struct eval_args {
    const uint16_t *fixed_bins;
    const uint16_t *moving; /* image k at moving + k * stride */
    size_t stride;
    const uint8_t *valid; /* or NULL */
    size_t valid_stride;
    size_t n;
    int is_signed;
    int vec; /* fixed, moving (and valid) allow 16-byte (8-byte) loads for every image */
    uint32_t bins_fixed, bins_moving, cells;
    uint32_t lb_shift;     /* lanes per block = 1 << lb_shift = 256 / C */
    uint32_t region_bytes; /* private histogram / terms region; red follows */
    int has_range;
    int32_t lo, hi;
    const int2 *range_parts; /* multi-cluster without a range: RANGE_BLOCKS per image */
    uint64_t fixed_valid;
    double fixed_sum;
    int log2;
    uint32_t clusters; /* G per image */
    uint32_t *partials; /* K x G x cells when G > 1 */
    unsigned *counters; /* K, zero between evaluations */
    uint32_t *joint;    /* K x cells, written */
    dh_mi_values *out;  /* K records */
    uint32_t skip;      /* DH_MI_STAGE_* bits left out (bench_mi's stage timing only) */
    int no_merge;       /* tuning's no_run_merge */
    int classic_count;  /* tuning's classic_count */
    /* float32 moving images (DRRs): image k at moving_f32 + k * stride, binned by dh_faxis_bin
     * over [flo, fhi]; NULL for stored values. vec then means 16-byte loads of 4 floats. */
    const float *moving_f32;
    uint32_t fbins;
    float flo, fhi, fwidth;
    /* the spread kernel (mi_cuda_spread.cuh): P blocks per image, each image's state and
     * 32-bit accumulator, all zero between evaluations */
    uint32_t spread_blocks;
    spread_slot *spread_slots;
    uint32_t *spread_acc;
    uint32_t bm_div; /* 2^32 / bins_moving + 1: cell c's fixed bin is row_of(c) */
    /* ln_tab[x] = dh_mi_log(x) for x < ln_len (cell_term); ln_len 0: every term computes its own */
    const double *ln_tab;
    uint32_t ln_len;
};

/* Cell c's fixed bin, c / bins_moving without a division (about 20 instructions for a divisor
 * known only at run time, twice per cell in the scoring passes): with m = floor(2^32 / d) + 1,
 * __umulhi(c, m) = floor(c / d + c e / 2^32) for some 0 < e <= 1, exact while c d < 2^32 (cells
 * hold at most 65536 x 256). */
__device__ __forceinline__ uint32_t row_of(const eval_args &a, uint32_t c)
{
    return __umulhi(c, a.bm_div);
}

__device__ __forceinline__ int32_t sample(uint32_t raw, int is_signed)
{
    return is_signed ? (int32_t)(int16_t)(uint16_t)raw : (int32_t)raw;
}

/* The cell of one pixel, or NO_CELL when it does not count. */
__device__ __forceinline__ uint32_t cell_of(uint32_t f, uint32_t ok, int32_t v, uint32_t bm,
                                            int32_t lo, uint32_t width, uint32_t magic)
{
    if (f == DH_MI_JOINT_SKIP || !ok)
        return NO_CELL;
    uint32_t m = dh_jaxis_bin_fast(bm, lo, width, magic, v);
    return m == DH_MI_JOINT_SKIP ? NO_CELL : f * bm + m;
}

template <bool PACKED> __device__ __forceinline__ void add_private(uint32_t *hist, uint32_t c,
                                                                   uint32_t r)
{
    if (PACKED)
        atomicAdd(&hist[c >> 1], r << ((c & 1u) * 16u));
    else
        atomicAdd(&hist[c], r);
}

/* Adds count x of cell c into the owner block's share of the cluster histogram. */
__device__ __forceinline__ void add_owned(cg::cluster_group &cluster, uint32_t *red, uint32_t c,
                                          uint32_t x, uint32_t lb_shift)
{
    const uint32_t lane = c & 255u, owner = lane >> lb_shift;
    const uint32_t local = ((c >> 8) << lb_shift) | (lane & ((1u << lb_shift) - 1u));
    uint32_t *dst = cluster.map_shared_rank(red, owner);
    atomicAdd(dst + local, x);
}

/* Moves every non-zero private counter into the cluster histogram (and zeroes it when asked).
 * Reads four words at a time: most of a large histogram is empty. */
template <bool PACKED>
__device__ void flush(cg::cluster_group &cluster, uint32_t *hist, uint32_t *red, uint32_t cells,
                      uint32_t lb_shift, bool clear)
{
    const uint32_t quads = ((PACKED ? (cells + 1) / 2 : cells) + 3) / 4;
    uint4 *h4 = (uint4 *)hist;
    for (uint32_t q = threadIdx.x; q < quads; q += blockDim.x) {
        const uint4 v = h4[q];
        if (!(v.x | v.y | v.z | v.w))
            continue;
        if (clear)
            h4[q] = make_uint4(0, 0, 0, 0);
        const uint32_t xs[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (uint32_t j = 0; j < 4; j++) {
            const uint32_t x = xs[j], w = 4 * q + j;
            if (!x)
                continue;
            if (PACKED) {
                if (x & 0xFFFFu)
                    add_owned(cluster, red, 2 * w, x & 0xFFFFu, lb_shift);
                if (x >> 16)
                    add_owned(cluster, red, 2 * w + 1, x >> 16, lb_shift);
            } else {
                add_owned(cluster, red, w, x, lb_shift);
            }
        }
    }
}

__device__ __forceinline__ int2 minmax_merge(int2 a, int2 b)
{
    return make_int2(min(a.x, b.x), max(a.y, b.y));
}

/* Min..max over pixels [part * stride_units ...) of one image as this block's share: units of 8
 * when vec, plus the scalar tail; {INT_MAX, INT_MIN} when it saw no valid pixel. */
__device__ int2 share_minmax(const uint16_t *img, const uint8_t *val, size_t n, int is_signed,
                             int vec, size_t part, size_t parts)
{
    int2 r = make_int2(INT_MAX, INT_MIN);
    const size_t nv = vec ? n >> 3 : 0;
    for (size_t u = part * blockDim.x + threadIdx.x; u < nv; u += parts * blockDim.x) {
        uint4 q = __ldg((const uint4 *)img + u);
        uint64_t ok = val ? *((const unsigned long long *)val + u) : ~0ull;
        uint32_t w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
        for (int j = 0; j < 8; j++) {
            if (!((ok >> (8 * j)) & 0xFFu))
                continue;
            int32_t v = sample((w[j >> 1] >> ((j & 1) * 16)) & 0xFFFFu, is_signed);
            r.x = min(r.x, v);
            r.y = max(r.y, v);
        }
    }
    for (size_t i = nv * 8 + part * blockDim.x + threadIdx.x; i < n; i += parts * blockDim.x) {
        if (val && !val[i])
            continue;
        int32_t v = sample(img[i], is_signed);
        r.x = min(r.x, v);
        r.y = max(r.y, v);
    }
    /* block reduction: warps, then warp 0 */
    __shared__ int2 warp_r[32];
    for (int o = 16; o > 0; o >>= 1) {
        r.x = min(r.x, __shfl_xor_sync(0xFFFFFFFFu, r.x, o));
        r.y = max(r.y, __shfl_xor_sync(0xFFFFFFFFu, r.y, o));
    }
    if ((threadIdx.x & 31) == 0)
        warp_r[threadIdx.x >> 5] = r;
    __syncthreads();
    r = make_int2(INT_MAX, INT_MIN);
    for (uint32_t i = 0; i < (blockDim.x + 31) / 32; i++)
        r = minmax_merge(r, warp_r[i]);
    __syncthreads(); /* warp_r free for the next call */
    return r;
}

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

/* Counts this block's share of the image into its private histogram; returns how many pixels
 * this thread counted. MASKED (val not NULL) and SIGNED are template arguments so that the
 * loop has no per-pixel mask or sign test when it needs none. */
template <bool PACKED, bool MASKED, bool SIGNED, bool MERGE>
__device__ uint32_t count_share(cg::cluster_group &cluster, const eval_args &a, const uint16_t *img,
                            const uint8_t *val, uint32_t *hist, uint32_t *red, size_t part,
                            size_t parts, int32_t lo, uint32_t width, uint32_t magic)
{
    const uint32_t bm = a.bins_moving;
    const size_t n = a.n, nv = a.vec ? n >> 3 : 0;
    const size_t tile = blockDim.x;
    uint32_t tiles = 0, counted = 0;
    /* Software-pipelined: the next tile's loads are issued before this tile is counted, so a
     * thread keeps two tiles (5 loads) in flight instead of one (latency, not bandwidth, bounds
     * a lone block). */
    const size_t step = parts * tile;
    uint4 fq = make_uint4(0, 0, 0, 0), mq = fq;
    uint64_t ok = 0;
    if (part * tile + threadIdx.x < nv) {
        const size_t u = part * tile + threadIdx.x;
        fq = __ldg((const uint4 *)a.fixed_bins + u);
        mq = __ldg((const uint4 *)img + u);
        ok = MASKED ? __ldg((const unsigned long long *)val + u) : ~0ull;
    }
    for (size_t base = part * tile; base < nv; base += step) {
        const size_t u = base + threadIdx.x, un = u + step;
        const bool have = u < nv;
        const uint4 cf = fq, cm = mq;
        const uint64_t cok = ok;
        if (un < nv) {
            fq = __ldg((const uint4 *)a.fixed_bins + un);
            mq = __ldg((const uint4 *)img + un);
            ok = MASKED ? __ldg((const unsigned long long *)val + un) : ~0ull;
        }
        if (have) {
            uint32_t fw[4] = {cf.x, cf.y, cf.z, cf.w}, mw[4] = {cm.x, cm.y, cm.z, cm.w};
            uint32_t prev = NO_CELL, run = 0;
#pragma unroll
            for (int j = 0; j < 8; j++) {
                const uint32_t sh = (j & 1) * 16;
                uint32_t c = cell_of((fw[j >> 1] >> sh) & 0xFFFFu,
                                     MASKED ? (uint32_t)(cok >> (8 * j)) & 0xFFu : 1u,
                                     sample((mw[j >> 1] >> sh) & 0xFFFFu, SIGNED), bm, lo, width,
                                     magic);
                if (!MERGE) { /* one predicated atomic per pixel, no branch */
                    if (c != NO_CELL)
                        add_private<PACKED>(hist, c, 1);
                    counted += c != NO_CELL;
                    continue;
                }
                if (c == prev) {
                    run++;
                } else {
                    if (prev != NO_CELL) {
                        add_private<PACKED>(hist, prev, run);
                        counted += run;
                    }
                    prev = c;
                    run = 1;
                }
            }
            if (MERGE && prev != NO_CELL) {
                add_private<PACKED>(hist, prev, run);
                counted += run;
            }
        }
        if (PACKED && ++tiles == PACKED_ROUND_TILES) { /* block-uniform: base is */
            __syncthreads();
            flush<PACKED>(cluster, hist, red, a.cells, a.lb_shift, true);
            __syncthreads();
            tiles = 0;
        }
    }
    /* The scalar part: the < 8-pixel tail, or everything when loads cannot be vectors. A tile
     * here is THREADS pixels, fewer than a vector tile, so the round bound still holds. */
    for (size_t base = nv * 8 + part * tile; base < n; base += parts * tile) {
        const size_t i = base + threadIdx.x;
        if (i < n) {
            uint32_t c = cell_of(a.fixed_bins[i], MASKED ? val[i] : 1u, sample(img[i], SIGNED), bm,
                                 lo, width, magic);
            if (c != NO_CELL) {
                add_private<PACKED>(hist, c, 1);
                counted++;
            }
        }
        if (PACKED && ++tiles == PACKED_ROUND_TILES) {
            __syncthreads();
            flush<PACKED>(cluster, hist, red, a.cells, a.lb_shift, true);
            __syncthreads();
            tiles = 0;
        }
    }
    return counted;
}

/* Words of one block's share of the cluster histogram: 256 / C lanes (1 << lb_shift) of every
 * row of 256 cells. count_plain's sink word follows them (smem_layout leaves the room). */
__host__ __device__ __forceinline__ uint32_t owned_words(uint32_t cells, uint32_t lb_shift)
{
    return ((cells + 255) >> 8) << lb_shift;
}

/* count_share for 32-bit counters without a mask (the batched registration case), without a
 * branch per pixel: the bin by one multiply-high (dh_jaxis_mul_bin), and every pixel one
 * increment of 1 (ATOMS.POPC.INC: the hardware merges lanes that hit one cell), a pixel that
 * does not count (fixed bin SKIP, moving value outside lo..hi) going to `sink`, a shared word
 * that the kernel zeroes first. Returns the pixels this thread visited: the block's N is their
 * sum less the sink's count, so no pixel pays for counting itself. Run merging and the
 * per-pixel branches of count_share cost about 40% more time (bench/NOTES.md run 29). */
template <bool SIGNED>
__device__ uint32_t count_plain(const eval_args &a, const uint16_t *img, uint32_t *hist,
                                uint32_t *sink, size_t part, size_t parts, int32_t lo,
                                uint32_t width)
{
    const uint32_t bm = a.bins_moving;
    const dh_jaxis_mul mul = dh_jaxis_mul_init(bm, width);
    const size_t n = a.n, nv = a.vec ? n >> 3 : 0, step = parts * blockDim.x;
    uint32_t visited = 0;
    uint4 fq = make_uint4(0, 0, 0, 0), mq = fq;
    if (part * blockDim.x + threadIdx.x < nv) {
        const size_t u = part * blockDim.x + threadIdx.x;
        fq = __ldg((const uint4 *)a.fixed_bins + u);
        mq = __ldg((const uint4 *)img + u);
    }
    for (size_t base = part * blockDim.x; base < nv; base += step) {
        const size_t u = base + threadIdx.x, un = u + step;
        const uint4 cf = fq, cm = mq;
        if (un < nv) { /* the next step's loads in flight while this one counts */
            fq = __ldg((const uint4 *)a.fixed_bins + un);
            mq = __ldg((const uint4 *)img + un);
        }
        if (u < nv) {
            const uint32_t fw[4] = {cf.x, cf.y, cf.z, cf.w}, mw[4] = {cm.x, cm.y, cm.z, cm.w};
#pragma unroll
            for (int j = 0; j < 8; j++) {
                const uint32_t sh = (j & 1) * 16;
                const uint32_t f = (fw[j >> 1] >> sh) & 0xFFFFu;
                const uint32_t off = (uint32_t)(sample((mw[j >> 1] >> sh) & 0xFFFFu, SIGNED) - lo);
                const bool ok = (off < width) & (f != DH_MI_JOINT_SKIP);
                atomicAdd(ok ? hist + f * bm + dh_jaxis_mul_bin(mul, off) : sink, 1u);
            }
            visited += 8;
        }
    }
    for (size_t i = nv * 8 + part * blockDim.x + threadIdx.x; i < n; i += step) {
        const uint32_t f = a.fixed_bins[i];
        const uint32_t off = (uint32_t)(sample(img[i], SIGNED) - lo);
        const bool ok = (off < width) & (f != DH_MI_JOINT_SKIP);
        atomicAdd(ok ? hist + f * bm + dh_jaxis_mul_bin(mul, off) : sink, 1u);
        visited++;
    }
    return visited;
}

/* Whether count_stored counts with count_plain (stored values, 32-bit counters, no mask). */
template <bool PACKED> __device__ __forceinline__ bool plain_count(const eval_args &a,
                                                                  const uint8_t *val)
{
    return !PACKED && !val && !a.classic_count && !a.moving_f32;
}

template <bool PACKED, bool MERGE>
__device__ uint32_t count_signs(cg::cluster_group &cluster, const eval_args &a,
                                const uint16_t *img, const uint8_t *val, uint32_t *hist,
                                uint32_t *red, size_t part, size_t parts, int32_t lo,
                                uint32_t width, uint32_t magic)
{
    if (val)
        return a.is_signed ? count_share<PACKED, true, true, MERGE>(cluster, a, img, val, hist,
                                                                    red, part, parts, lo, width,
                                                                    magic)
                           : count_share<PACKED, true, false, MERGE>(cluster, a, img, val, hist,
                                                                     red, part, parts, lo, width,
                                                                     magic);
    return a.is_signed ? count_share<PACKED, false, true, MERGE>(cluster, a, img, val, hist, red,
                                                                 part, parts, lo, width, magic)
                       : count_share<PACKED, false, false, MERGE>(cluster, a, img, val, hist, red,
                                                                  part, parts, lo, width, magic);
}

/* count_share with its mask and sign tests chosen here, once per block. */
template <bool PACKED>
__device__ uint32_t count_stored(cg::cluster_group &cluster, const eval_args &a,
                                 const uint16_t *img, const uint8_t *val, uint32_t *hist,
                                 uint32_t *red, size_t part, size_t parts, int32_t lo,
                                 uint32_t width, uint32_t magic)
{
    if (plain_count<PACKED>(a, val)) { /* returns pixels visited; mi_kernel subtracts the sink */
        uint32_t *sink = red + owned_words(a.cells, a.lb_shift);
        return a.is_signed ? count_plain<true>(a, img, hist, sink, part, parts, lo, width)
                           : count_plain<false>(a, img, hist, sink, part, parts, lo, width);
    }
    if (a.no_merge)
        return count_signs<PACKED, false>(cluster, a, img, val, hist, red, part, parts, lo, width,
                                          magic);
    return count_signs<PACKED, true>(cluster, a, img, val, hist, red, part, parts, lo, width,
                                     magic);
}

/* count_share for float32 moving images: 8 pixels per step (one 16-byte load of fixed bins, two
 * of floats), each binned by dh_faxis_bin exactly as the CPU twin does, runs merged as above, and
 * software-pipelined the same way (the next step's loads issued before this one is counted). */
template <bool PACKED>
__device__ uint32_t count_share_f32(cg::cluster_group &cluster, const eval_args &a,
                                    const float *img, const uint8_t *val, uint32_t *hist,
                                    uint32_t *red, size_t part, size_t parts)
{
    const uint32_t bm = a.bins_moving;
    const size_t n = a.n, nv = a.vec ? n >> 3 : 0, step = parts * blockDim.x;
    uint32_t tiles = 0, counted = 0;
    uint4 fq = make_uint4(0, 0, 0, 0);
    float4 m0 = make_float4(0.f, 0.f, 0.f, 0.f), m1 = m0;
    uint64_t ok = 0;
    if (part * blockDim.x + threadIdx.x < nv) {
        const size_t u = part * blockDim.x + threadIdx.x;
        fq = __ldg((const uint4 *)a.fixed_bins + u);
        m0 = __ldg((const float4 *)img + 2 * u);
        m1 = __ldg((const float4 *)img + 2 * u + 1);
        ok = val ? __ldg((const unsigned long long *)val + u) : ~0ull;
    }
    for (size_t base = part * blockDim.x; base < nv; base += step) {
        const size_t u = base + threadIdx.x, un = u + step;
        const uint4 cf = fq;
        const float4 c0 = m0, c1 = m1;
        const uint64_t cok = ok;
        if (un < nv) {
            fq = __ldg((const uint4 *)a.fixed_bins + un);
            m0 = __ldg((const float4 *)img + 2 * un);
            m1 = __ldg((const float4 *)img + 2 * un + 1);
            ok = val ? __ldg((const unsigned long long *)val + un) : ~0ull;
        }
        if (u < nv) {
            const uint32_t fw[4] = {cf.x, cf.y, cf.z, cf.w};
            const float mv[8] = {c0.x, c0.y, c0.z, c0.w, c1.x, c1.y, c1.z, c1.w};
            uint32_t prev = NO_CELL, run = 0;
#pragma unroll
            for (int j = 0; j < 8; j++) {
                const uint32_t f = (fw[j >> 1] >> ((j & 1) * 16)) & 0xFFFFu;
                const uint32_t m = dh_faxis_bin(a.fbins, a.flo, a.fhi, a.fwidth, mv[j]);
                const uint32_t c = f == DH_MI_JOINT_SKIP || !((cok >> (8 * j)) & 0xFFu) ||
                                           m == DH_MI_JOINT_SKIP
                                       ? NO_CELL
                                       : f * bm + m;
                if (c == prev) {
                    run++;
                } else {
                    if (prev != NO_CELL) {
                        add_private<PACKED>(hist, prev, run);
                        counted += run;
                    }
                    prev = c;
                    run = 1;
                }
            }
            if (prev != NO_CELL) {
                add_private<PACKED>(hist, prev, run);
                counted += run;
            }
        }
        if (PACKED && ++tiles == PACKED_ROUND_TILES) { /* block-uniform: base is */
            __syncthreads();
            flush<PACKED>(cluster, hist, red, a.cells, a.lb_shift, true);
            __syncthreads();
            tiles = 0;
        }
    }
    for (size_t base = nv * 8 + part * blockDim.x; base < n; base += step) {
        const size_t i = base + threadIdx.x;
        if (i < n && a.fixed_bins[i] != DH_MI_JOINT_SKIP && (!val || val[i])) {
            const uint32_t m = dh_faxis_bin(a.fbins, a.flo, a.fhi, a.fwidth, img[i]);
            if (m != DH_MI_JOINT_SKIP) {
                add_private<PACKED>(hist, a.fixed_bins[i] * bm + m, 1);
                counted++;
            }
        }
        if (PACKED && ++tiles == PACKED_ROUND_TILES) {
            __syncthreads();
            flush<PACKED>(cluster, hist, red, a.cells, a.lb_shift, true);
            __syncthreads();
            tiles = 0;
        }
    }
    return counted;
}

/* Counts block `part` of `parts`' share of image k (its samples at img, or float32 ones) into
 * hist, and returns how many of that share's pixels count, to every thread, after a barrier.
 * s_count: a shared word, zero before. count_plain returns the pixels visited; its sink (the word
 * after red's owned words) holds those that did not count. */
template <bool PACKED>
__device__ unsigned long long count_block(cg::cluster_group &cluster, const eval_args &a,
                                          uint32_t k, const uint16_t *img, const uint8_t *val,
                                          uint32_t *hist, uint32_t *red, size_t part,
                                          size_t parts, int32_t lo, uint32_t width,
                                          uint32_t magic, bool count,
                                          unsigned long long *s_count)
{
    unsigned long long counted = 0;
    if (count)
        counted = a.moving_f32
                      ? count_share_f32<PACKED>(cluster, a, a.moving_f32 + (size_t)k * a.stride,
                                                val, hist, red, part, parts)
                      : count_stored<PACKED>(cluster, a, img, val, hist, red, part, parts, lo,
                                             width, magic);
    for (int o = 16; o > 0; o >>= 1)
        counted += __shfl_xor_sync(0xFFFFFFFFu, counted, o);
    if ((threadIdx.x & 31) == 0 && counted)
        atomicAdd(s_count, counted);
    __syncthreads();
    return *s_count -
           (plain_count<PACKED>(a, val) ? red[owned_words(a.cells, a.lb_shift)] : 0u);
}

/* The natural cell index of owned slot l of block `rank`. */
__device__ __forceinline__ uint32_t owned_cell(uint32_t l, uint32_t rank, uint32_t lb_shift)
{
    return ((l >> lb_shift) << 8) | (rank << lb_shift) | (l & ((1u << lb_shift) - 1u));
}

/* mi_scores.h's tree over 256 entries x(0), ..., x(255) (x[t] += x[t + s] for s = 128 .. 1), by
 * one warp without a barrier: lane i holds entries i + 32 k, k < 8, adds the levels s = 128, 64,
 * 32 in registers and the levels 16 .. 1 through shuffles. Lane 0 returns the sum (the other
 * lanes return partial values). A missing entry is 0.0: every term is >= +0.0, so adding it
 * changes no bit and the levels the CPU skips (j + s >= rows) come out the same. */
template <typename Get> __device__ __forceinline__ double warp_tree256(Get get)
{
    const uint32_t i = threadIdx.x & 31u;
    double v[8];
#pragma unroll
    for (uint32_t k = 0; k < 8; k++)
        v[k] = get(i + 32 * k);
#pragma unroll
    for (uint32_t k = 0; k < 4; k++)
        v[k] = __dadd_rn(v[k], v[k + 4]);
    v[0] = __dadd_rn(v[0], v[2]);
    v[1] = __dadd_rn(v[1], v[3]);
    v[0] = __dadd_rn(v[0], v[1]);
#pragma unroll
    for (int s = 16; s >= 1; s >>= 1)
        v[0] = __dadd_rn(v[0], __shfl_down_sync(0xFFFFFFFFu, v[0], s));
    return v[0];
}

/* mi_scores.h's tree over W entries (x[t] += x[t + s] for s = W / 2 .. 1) evaluated depth first
 * by one thread: entry t of level s is entry t plus entry t + s of level 2s, the leaves (level W)
 * are get(t). The same additions as the levels, so the same bits; a few doubles live at once. */
template <uint32_t S, uint32_t W, class Get>
__device__ __forceinline__ double thread_tree(const Get &get, uint32_t t)
{
    if constexpr (S == W)
        return get(t);
    else
        return __dadd_rn(thread_tree<2 * S, W>(get, t), thread_tree<2 * S, W>(get, t + S));
}

/* dh_mi_term as one call: thread_tree inlines a leaf per row, and the logarithm once is enough. */
__device__ __noinline__ double term_direct(uint64_t c, uint64_t n, double ln_n)
{
    return dh_mi_term(c, n, ln_n);
}

/* dh_mi_term(c, n, ln_n) with the logarithm of c read from the table where it holds it:
 * ln_tab[c] = dh_mi_log(c) for c < ln_len (ln_table_kernel, the same code on the same device,
 * so the same bits), and the term's own two steps are dh_mi_term's, c ln(n / c) = c (ln n - ln c)
 * for c <= n - c (c = 0: 0 x ln n = +0.0, dh_mi_term's 0.0). A logarithm is about 60 FP64 steps
 * and a warp pays them for any one lane with a non-zero cell: batches of 1024 256x256 pairs took
 * 102 -> 88 us at 64 bins, 520 -> 400 us at 256 (bench/NOTES.md runs 54-55). Larger counts and
 * the dominant cell compute theirs. */
__device__ __forceinline__ double cell_term(const eval_args &a, uint64_t c, uint64_t n,
                                            double ln_n)
{
    if (c < a.ln_len && c <= n - c)
        return __dmul_rn((double)c, __dsub_rn(ln_n, __ldg(a.ln_tab + c)));
    return term_direct(c, n, ln_n);
}

/* ln_tab[x] = dh_mi_log(x) for x < len (0 for x = 0), once per prepared fixed image. */
__global__ void ln_table_kernel(double *tab, uint32_t len)
{
    for (uint32_t x = blockIdx.x * blockDim.x + threadIdx.x; x < len; x += gridDim.x * blockDim.x)
        tab[x] = x ? dh_mi_log((double)x) : 0.0;
}

/* The marginals' sums turned into their entropy terms in place (doubles in the 64-bit words;
 * the fixed one only when the cached sum does not apply), by the whole block. */
__device__ __forceinline__ void marginal_terms(const eval_args &a, unsigned long long *tot_f,
                                               unsigned long long *tot_m, bool need_f,
                                               uint64_t n, double ln_n)
{
    for (uint32_t i = threadIdx.x; i < 2 * DH_MI_LANES; i += blockDim.x) {
        const uint32_t t = i & (DH_MI_LANES - 1);
        if (i < DH_MI_LANES) {
            if (need_f)
                tot_f[t] = __double_as_longlong(
                    t < a.bins_fixed ? cell_term(a, tot_f[t], n, ln_n) : 0.0);
        } else {
            tot_m[t] = __double_as_longlong(t < a.bins_moving ? cell_term(a, tot_m[t], n, ln_n)
                                                              : 0.0);
        }
    }
}

/* Image k's record from N and the three term sums. */
__device__ __forceinline__ void write_record(const eval_args &a, uint32_t k, uint64_t n, double sf,
                                             double sm, double sj, int32_t lo, int32_t hi)
{
    dh_mi_values r;
    dh_mi_finish(n, sf, sm, sj, a.log2, &r);
    r.moving_lo = lo;
    r.moving_hi = hi;
    r.reserved = 0;
    a.out[k] = r;
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

/* PACKED: 16-bit counters; THR, MINB: the launch bounds (512 threads and 3 or 4 blocks per SM
 * cap the registers so more one-block images run on an SM at once). */
template <bool PACKED, int THR, int MINB>
__global__ void __launch_bounds__(THR, MINB) mi_kernel(eval_args a)
{
    if (a.skip & DH_MI_STAGE_ALL)
        return;
    cg::cluster_group cluster = cg::this_cluster();
    extern __shared__ __align__(16) unsigned char smem[];
    /* This block's row and column sums of its owned cells; in block 0 also the cluster's totals
     * (every block adds its sums into block 0's tot_*), later overwritten by their terms. */
    __shared__ unsigned long long rowp[DH_MI_LANES], colp[DH_MI_LANES];
    __shared__ unsigned long long tot_f[DH_MI_LANES], tot_m[DH_MI_LANES];
    __shared__ double lane_j[DH_MI_LANES]; /* block 0: every lane's row sum, stored by its owner */
    __shared__ unsigned long long s_count, s_n;
    __shared__ int2 s_share, s_range;
    __shared__ int s_last;
    __shared__ double s_ln_n;

    const uint32_t C = cluster.num_blocks(), rank = cluster.block_rank();
    const uint32_t P = a.clusters * C;
    const uint32_t k = blockIdx.x / P, b = blockIdx.x % P, g = b / C;
    const uint32_t tid = threadIdx.x, T = blockDim.x;
    const uint32_t cells = a.cells, lb_shift = a.lb_shift, LB = 1u << lb_shift;
    const uint32_t owned = owned_words(cells, lb_shift);
    const uint32_t skip = a.skip;
    uint32_t *red = (uint32_t *)(smem + a.region_bytes);
    /* A one-block cluster with 32-bit counters counts straight into its share of the cluster
     * histogram (the same cells in the same order: owned_cell is the identity for C = 1), so it
     * has no private histogram to zero or flush (smem_layout gives it no region). */
    const bool direct = !PACKED && C == 1;
    uint32_t *hist = direct ? red : (uint32_t *)smem;
    const uint16_t *img = a.moving + (size_t)k * a.stride;
    const uint8_t *val = a.valid ? a.valid + (size_t)k * a.valid_stride : nullptr;

    /* 1. zero the private histogram, this block's share of the cluster histogram, the sums
     * (16-byte stores; both regions are whole multiples of 16 bytes) */
    if (!(skip & DH_MI_STAGE_ZERO)) {
        const uint32_t hist_quads = ((PACKED ? (cells + 1) / 2 : cells) + 3) / 4;
        const uint4 zero = make_uint4(0, 0, 0, 0);
        if (!direct)
            for (uint32_t w = tid; w < hist_quads; w += T)
                ((uint4 *)hist)[w] = zero;
        for (uint32_t w = tid; w < owned / 4; w += T)
            ((uint4 *)red)[w] = zero;
    }
    for (uint32_t t = tid; t < DH_MI_LANES; t += T)
        rowp[t] = colp[t] = tot_f[t] = tot_m[t] = 0;
    if (tid == 0) {
        s_count = s_n = 0;
        red[owned] = 0; /* count_plain's sink (smem_layout leaves the room) */
    }

    /* 2. the moving range */
    int32_t lo = a.lo, hi = a.hi;
    if (!a.has_range && a.clusters == 1) {
        int2 r = share_minmax(img, val, a.n, a.is_signed, a.vec, b, P);
        if (tid == 0)
            s_share = r;
    }
    cluster.sync(); /* zeroed shares and the partial ranges are visible cluster-wide */
    if (!a.has_range) {
        if (tid < 32) {
            int2 r = make_int2(INT_MAX, INT_MIN);
            if (a.clusters == 1) {
                if (tid < C)
                    r = *cluster.map_shared_rank(&s_share, tid);
            } else {
                for (uint32_t i = tid; i < RANGE_BLOCKS; i += 32)
                    r = minmax_merge(r, a.range_parts[(size_t)k * RANGE_BLOCKS + i]);
            }
            for (int o = 16; o > 0; o >>= 1) {
                r.x = min(r.x, __shfl_xor_sync(0xFFFFFFFFu, r.x, o));
                r.y = max(r.y, __shfl_xor_sync(0xFFFFFFFFu, r.y, o));
            }
            if (tid == 0) /* no valid pixel: 0:0, as on the CPU (nothing counts anyway) */
                s_range = r.x > r.y ? make_int2(0, 0) : r;
        }
        __syncthreads();
        lo = s_range.x;
        hi = s_range.y;
    }
    const uint32_t width = (uint32_t)(hi - lo + 1);
    const uint32_t magic = width == 1 ? 0u : (uint32_t)((1ull << 32) / width);

    /* 3. count; N of a one-cluster image is the pixels its blocks counted (no pass over the
     * cells for it) */
    const unsigned long long block_n =
        count_block<PACKED>(cluster, a, k, img, val, hist, red, b, P, lo, width, magic,
                            !(skip & DH_MI_STAGE_COUNT), &s_count);
    if (a.clusters == 1 && tid < C && block_n)
        atomicAdd(cluster.map_shared_rank(&s_n, tid), block_n);
    /* 4. flush into the owners' shares */
    if (!direct && !(skip & DH_MI_STAGE_REDUCE))
        flush<PACKED>(cluster, hist, red, cells, lb_shift, false);
    cluster.sync(); /* every share and s_n complete; private histograms dead */

    /* Multi-cluster images: publish this cluster's counts; the last cluster adds them all. */
    if (a.clusters > 1) {
        uint32_t *mine = a.partials + ((size_t)k * a.clusters + g) * cells;
        for (uint32_t l = tid; l < owned; l += T) {
            uint32_t c = owned_cell(l, rank, lb_shift);
            if (c < cells)
                mine[c] = red[l];
        }
        __threadfence();
        cluster.sync();
        if (rank == 0 && tid == 0)
            s_last = atomicAdd(&a.counters[k], 1u) == a.clusters - 1;
        cluster.sync();
        const int last = *cluster.map_shared_rank(&s_last, 0);
        cluster.sync(); /* block 0 stays until everyone has read its flag */
        if (!last)
            return;
        __threadfence();
        const uint32_t *all = a.partials + (size_t)k * a.clusters * cells;
        unsigned long long total = 0;
        for (uint32_t l = tid; l < owned; l += T) {
            uint32_t c = owned_cell(l, rank, lb_shift), sum = 0;
            if (c < cells)
                for (uint32_t q = 0; q < a.clusters; q++)
                    sum += __ldcg(all + (size_t)q * cells + c);
            red[l] = sum;
            total += sum;
        }
        if (rank == 0 && tid == 0)
            a.counters[k] = 0; /* ready for the next evaluation, in stream order */
        /* N is the sum of the totals: every block adds its cells into every block's s_n */
        for (int o = 16; o > 0; o >>= 1)
            total += __shfl_xor_sync(0xFFFFFFFFu, total, o);
        if ((tid & 31) == 0 && total)
            for (uint32_t q = 0; q < C; q++)
                atomicAdd(cluster.map_shared_rank(&s_n, q), total);
        cluster.sync();
    }

    /* 5a. the joint histogram written back; row and column sums of the owned cells (integers:
     * any order); ln N, once per block */
    const uint64_t n = s_n;
    if (tid == 0)
        s_ln_n = n ? dh_mi_log((double)n) : 0.0;
    uint32_t *joint = a.joint + (size_t)k * cells;
    const uint32_t bm = a.bins_moving;
    for (uint32_t l = tid; l < owned; l += T) {
        uint32_t c = owned_cell(l, rank, lb_shift);
        if (c >= cells)
            continue;
        uint32_t x = red[l];
        if (!(skip & DH_MI_STAGE_WRITE))
            joint[c] = x;
        if (x && !(skip & DH_MI_STAGE_MARGINALS)) {
            const uint32_t r = row_of(a, c);
            atomicAdd(&rowp[r], (unsigned long long)x);
            atomicAdd(&colp[c - r * bm], (unsigned long long)x);
        }
    }
    __syncthreads();
    const double ln_n = s_ln_n;

    /* 5b. the sums into block 0's totals; the entropy terms of the owned cells, in parallel */
    if (!(skip & DH_MI_STAGE_MARGINALS))
        for (uint32_t t = tid; t < DH_MI_LANES; t += T) {
            if (rowp[t])
                atomicAdd(cluster.map_shared_rank(tot_f, 0) + t, rowp[t]);
            if (colp[t])
                atomicAdd(cluster.map_shared_rank(tot_m, 0) + t, colp[t]);
        }
    const uint32_t rows = (cells + 255) >> 8;
    const bool with_terms = !(skip & DH_MI_STAGE_TERMS);
    /* More than 32 rows (one warp per lane below): the terms of the owned cells first, in
     * parallel, into a region padded by one double per row so that the threads of a warp that
     * walk one lane's rows hit different banks (computed inside the tree, the loads of one lane's
     * counts, LB words apart, hit one bank: 256 bins measured 13% slower that way, run 23). */
    double *terms = (double *)smem; /* the private histogram, dead after the flush */
    if (rows > 32 && with_terms)
        for (uint32_t l = tid; l < owned; l += T) {
            uint32_t c = owned_cell(l, rank, lb_shift);
            terms[(l >> lb_shift) * (LB + 1) + (l & (LB - 1))] =
                c < cells ? cell_term(a, red[l], n, ln_n) : 0.0;
        }
    __syncthreads();
    /* The entropy term of owned row j, lane L: up to 32 rows computed where the tree needs it
     * (no terms region, no pass for it); the same values in the same order either way. */
    auto term = [&](uint32_t j, uint32_t L) -> double {
        const uint32_t l = (j << lb_shift) | L;
        if (!with_terms)
            return 0.0;
        if (PACKED || rows > 32) /* packed counters always have 256+ rows */
            return terms[j * (LB + 1) + L];
        return owned_cell(l, rank, lb_shift) < cells ? cell_term(a, red[l], n, ln_n) : 0.0;
    };

    /* 5c. each owned lane's rows as mi_scores.h's tree; the lane sum goes straight into block
     * 0's lane_j. Up to 16 rows (64 x 64 bins) of a one-block image: one thread per lane
     * (thread_tree); up to 32 rows: a segment of W threads per lane (W = rows rounded up to a
     * power of two; the CPU's levels exactly), 32 / W lanes per warp; more rows: one warp per
     * lane. */
    if (!(skip & DH_MI_STAGE_TREES)) {
        double *lanes0 = cluster.map_shared_rank(lane_j, 0) + (rank << lb_shift);
        if (rows <= 16 && LB == 256) {
            /* One-block images: one thread per lane, its rows' tree in registers; each warp
             * loads 32 consecutive lanes of a row (no bank conflicts: the segments below load
             * one lane's rows, all in one bank) and needs no shuffles. 64 bins, batch of 1024
             * 256x256 pairs: 101.9 us against 106.2 (bench/NOTES.md run 34; two threads per
             * lane, halves joined through shared memory: 104.4). */
            for (uint32_t L = tid; L < LB; L += T) {
                auto get = [&](uint32_t j) -> double {
                    const uint32_t l = (j << 8) | L;
                    return j < rows && with_terms && l < cells ? cell_term(a, red[l], n, ln_n)
                                                               : 0.0;
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
                const double v =
                    warp_tree256([&](uint32_t j) { return j < rows ? term(j, L) : 0.0; });
                if ((tid & 31) == 0)
                    lanes0[L] = v;
            }
        }
    }
    cluster.sync(); /* lane sums and marginal totals are in block 0: the others may leave */
    if (rank != 0)
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

#include "mi_cuda_score.cuh"
#include "mi_cuda_solo.cuh"
#include "mi_cuda_spread.cuh"

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

/* Lets the kernel launch with up to smem bytes of dynamic shared memory. The limit is the
 * function's, shared by every fixed image in the process: it is set to the most the device
 * allows (the same value from any thread), never to this layout's size, which would refuse a
 * larger layout made earlier. */
cudaError_t configure(void (*kernel)(eval_args), uint32_t smem)
{
    int dev = 0, optin = 0;
    cudaFuncAttributes fa;
    cudaError_t err = cudaGetDevice(&dev);
    if (err == cudaSuccess)
        err = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    if (err == cudaSuccess)
        err = cudaFuncGetAttributes(&fa, kernel);
    if (err != cudaSuccess)
        return err;
    const int most = optin - (int)fa.sharedSizeBytes;
    if ((int)smem > most)
        return cudaErrorInvalidValue;
    err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, most);
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

    /* Cluster size: a batch of small images wants the smallest cluster that fits (the fixed
     * cost of scoring is paid once per image instead of once per block of it, and more images
     * run at once); one small image a cluster of 4 (latency), one large slice 16, volumes 8. Take
     * the largest size at or below the wish that launches (256 x 256 bins need 4 at least). */
    uint32_t want = tuning && tuning->cluster ? tuning->cluster
                    : n <= (1u << 17)         ? (max_batch >= 16 ? 1u : 4u)
                    : n <= (1u << 20)         ? 16u
                                              : 8u;
    if (want != 1 && want != 2 && want != 4 && want != 8 && want != 16) {
        snprintf(msg, msg_len, "cluster size %u is not 1, 2, 4, 8 or 16", want);
        delete g;
        return -1;
    }
    /* A batch of small images, one block each, runs best with 512 threads per block (more blocks
     * per SM); an image split over a cluster, or packed counters, with 1024 (bench_mi --stages,
     * threads table). */
    g->threads = tuning && tuning->threads      ? tuning->threads
                 : want == 1 && !g->packed      ? 512u
                                                : (uint32_t)THREADS;
    if (g->threads != 256 && g->threads != 512 && g->threads != 1024) {
        snprintf(msg, msg_len, "%u threads per block is not 256, 512 or 1024", g->threads);
        delete g;
        return -1;
    }
    g->blocks_per_sm = tuning && tuning->blocks_per_sm ? tuning->blocks_per_sm
                                                       : AUTO_BLOCKS_PER_SM;
    if ((g->blocks_per_sm < 2 || g->blocks_per_sm > 4) && g->blocks_per_sm != 8) {
        snprintf(msg, msg_len, "%u blocks per SM is not 2, 3, 4 or 8", g->blocks_per_sm);
        delete g;
        return -1;
    }
    cudaError_t err = cudaSuccess;
    int resident = 0;
    /* The wish, then larger sizes (a large histogram needs more blocks to hold it), then
     * smaller ones (a device that refuses 16-block clusters). */
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
        if ((resident = active_clusters(g->packed, c, g->threads, g->blocks_per_sm,
                                        g->smem_bytes)) > 0) {
            g->cluster = c;
            break;
        }
    }
    if (err != cudaSuccess || !g->cluster) {
        delete g;
        if (err == cudaSuccess)
            err = cudaErrorInvalidConfiguration;
        return dh_cuda_fail(msg, msg_len, "", "fitting a thread-block cluster (sm_90 needed)",
                            err);
    }
    /* Calls of one image per SM or more run one block per image where nothing in the tuning
     * fixes the layout: slices up to a megapixel with 32-bit counters in mi_kernel's one-block
     * layout, images up to 512x512 with packed counters in the solo kernel. */
    int sms = 0, dev = 0;
    const bool fixed = tuning && (tuning->cluster || tuning->threads || tuning->blocks_per_sm);
    const bool per_call =
        max_batch > 1 && !fixed && cudaGetDevice(&dev) == cudaSuccess &&
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
    /* Clusters per image: one up to about a megapixel; beyond, enough to fill the GPU once. */
    uint32_t clusters = 1;
    if (tuning && tuning->clusters_per_image)
        clusters = tuning->clusters_per_image;
    else if (n > (1u << 20)) {
        size_t by_size = (n + (1u << 20) - 1) >> 20;
        clusters = (uint32_t)(by_size < (size_t)resident ? by_size : (size_t)resident);
        if (clusters < 1)
            clusters = 1;
    }
    g->clusters = clusters;
    /* Few images of up to a megapixel with 32-bit counters: the spread kernel, unless the tuning
     * fixes a layout or asks for the cluster one. */
    const bool spread_fixed = fixed || (tuning && (tuning->clusters_per_image || tuning->no_spread));
    if (!spread_fixed && !g->packed && !g->skip && n <= (1u << 20) &&
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
            g->spread_slots = max_batch < g->spread_resident ? max_batch : g->spread_resident;
            g->spread_blocks = tuning ? tuning->spread_blocks : 0;
        }
    }
    (void)cudaGetLastError();

    const size_t cells = g->cells;
    if ((err = cudaMalloc(&g->d_fixed_bins, n * sizeof(uint16_t))) != cudaSuccess ||
        (err = cudaMalloc(&g->d_joint, (size_t)max_batch * cells * sizeof(uint32_t))) !=
            cudaSuccess ||
        (err = cudaMalloc(&g->d_counters, (size_t)max_batch * sizeof(unsigned))) !=
            cudaSuccess ||
        (err = cudaMemset(g->d_counters, 0, (size_t)max_batch * sizeof(unsigned))) !=
            cudaSuccess ||
        (err = cudaMemcpy(g->d_fixed_bins, fixed_bins, n * sizeof(uint16_t),
                          cudaMemcpyHostToDevice)) != cudaSuccess ||
        (err = cudaMemset(g->d_joint, 0, (size_t)max_batch * cells * sizeof(uint32_t))) !=
            cudaSuccess) {
        dh_mi_gpu_free(g);
        return dh_cuda_fail(msg, msg_len, "", "allocating the fixed image on the GPU", err);
    }
    if (clusters > 1 &&
        ((err = cudaMalloc(&g->d_partials,
                           (size_t)max_batch * clusters * cells * sizeof(uint32_t))) !=
             cudaSuccess ||
         (err = cudaMalloc(&g->d_range_parts,
                           (size_t)max_batch * RANGE_BLOCKS * sizeof(int2))) != cudaSuccess)) {
        dh_mi_gpu_free(g);
        return dh_cuda_fail(msg, msg_len, "", "allocating the multi-cluster workspace", err);
    }
    if (g->spread_slots &&
        ((err = cudaMalloc(&g->d_spread_slots, g->spread_slots * sizeof(spread_slot))) !=
             cudaSuccess ||
         (err = cudaMemset(g->d_spread_slots, 0, g->spread_slots * sizeof(spread_slot))) !=
             cudaSuccess ||
         (err = cudaMalloc(&g->d_spread_acc, g->spread_slots * spread_acc_words(g->cells) *
                                                 sizeof(uint32_t))) != cudaSuccess ||
         (err = cudaMemset(g->d_spread_acc, 0, g->spread_slots * spread_acc_words(g->cells) *
                                                   sizeof(uint32_t))) != cudaSuccess)) {
        dh_mi_gpu_free(g);
        return dh_cuda_fail(msg, msg_len, "", "allocating the spread workspace", err);
    }
    if (g->ln_len) {
        if ((err = cudaMalloc(&g->d_ln_tab, g->ln_len * sizeof(double))) == cudaSuccess) {
            ln_table_kernel<<<(g->ln_len + 255) / 256, 256>>>(g->d_ln_tab, g->ln_len);
            err = cudaGetLastError();
        }
        if (err != cudaSuccess) {
            dh_mi_gpu_free(g);
            return dh_cuda_fail(msg, msg_len, "", "making the logarithm table", err);
        }
    }
    /* The memsets above run on the legacy default stream, asynchronously; an evaluation on a
     * non-blocking stream does not wait for them, and a late memset of d_joint used to zero
     * joint histograms an evaluation had just written. Wait for them here, once. */
    if ((err = cudaDeviceSynchronize()) != cudaSuccess) {
        dh_mi_gpu_free(g);
        return dh_cuda_fail(msg, msg_len, "", "preparing the fixed image on the GPU", err);
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
     * cluster; bench_mi's few-images table, run 52) */
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
        size_t P = g->spread_blocks ? g->spread_blocks
                                    : (g->n + SPREAD_PIXELS_PER_BLOCK - 1) / SPREAD_PIXELS_PER_BLOCK;
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
