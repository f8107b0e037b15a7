// SPDX-License-Identifier: MIT
/*
 * mi_cuda_common.cuh: what every kernel of mi_cuda.cu and its fragments (mi_cuda_count.cuh,
 * mi_cuda_score.cuh, mi_cuda_solo.cuh, mi_cuda_spread.cuh) shares: the launch arguments
 * (eval_args), a pixel's cell, the moving range of a block's share, the owned-share indexing of
 * the cluster histogram, and the scoring arithmetic of mi_scores.h as the device runs it (the
 * trees, the entropy terms, the record), every addition the CPU twin's.
 *
 * These headers are private to mi_cuda.cu, their one translation unit: they declare in the
 * unnamed namespace, as the code did when it lived in mi_cuda.cu, so that every device function
 * keeps internal linkage and the compiler inlines and allocates registers as it did then.
 */
#ifndef DH_KERNELS_MI_CUDA_COMMON_CUH
#define DH_KERNELS_MI_CUDA_COMMON_CUH

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstddef>
#include <cstdint>

#include "mi_joint.h"
#include "mi_cuda.h"
#include "mi_scores.h"

namespace {

namespace cg = cooperative_groups;

constexpr int THREADS = 1024; /* mi_kernel's block of a cluster; the count loops' tile */

constexpr uint32_t NO_CELL = 0xFFFFFFFFu; /* a pixel that does not count */

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

/* Words of one block's share of the cluster histogram: 256 / C lanes (1 << lb_shift) of every
 * row of 256 cells. count_plain's sink word follows them (smem_layout leaves the room). */
__host__ __device__ __forceinline__ uint32_t owned_words(uint32_t cells, uint32_t lb_shift)
{
    return ((cells + 255) >> 8) << lb_shift;
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
 * 102 -> 88 us at 64 bins, 520 -> 400 us at 256. Larger counts and
 * the dominant cell compute theirs. */
__device__ __forceinline__ double cell_term(const eval_args &a, uint64_t c, uint64_t n,
                                            double ln_n)
{
    if (c < a.ln_len && c <= n - c)
        return __dmul_rn((double)c, __dsub_rn(ln_n, __ldg(a.ln_tab + c)));
    return term_direct(c, n, ln_n);
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

} // namespace

#endif /* DH_KERNELS_MI_CUDA_COMMON_CUH */
