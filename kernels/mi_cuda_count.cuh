// SPDX-License-Identifier: MIT
/*
 * mi_cuda_count.cuh: how a block counts its share of one image's pixels into a private joint
 * histogram (mi_kernel, mi_cuda_spread.cuh): the loops over stored or float32 moving samples
 * (count_share, one template over the sample type; count_plain, the branch-free one for 32-bit
 * counters without a mask), the flush of packed 16-bit counters into the cluster's histogram
 * before any can wrap, and count_block, which picks the loop once per block and returns the
 * block's N. Private to mi_cuda.cu (mi_cuda_common.cuh says why the unnamed namespace).
 */
#ifndef DH_KERNELS_MI_CUDA_COUNT_CUH
#define DH_KERNELS_MI_CUDA_COUNT_CUH

#include "mi_cuda_common.cuh"

namespace {

/* Packed 16-bit counters: at most this many tiles (THREADS x 8 pixels) between flushes, so a
 * counter holds at most 7 x 8192 = 57344 < 65536. */
constexpr uint32_t PACKED_ROUND_TILES = 65535u / (THREADS * 8u);

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

/* The stored 16-bit moving samples of count_share: a unit of 8 pixels is one 16-byte load of
 * fixed bins, one of samples and (MASKED) one 8-byte load of the mask. MASKED and SIGNED are
 * template arguments so that the loop has no per-pixel mask or sign test when it needs none. */
template <bool MASKED, bool SIGNED> struct stored_samples {
    const uint16_t *img;
    const uint8_t *val;
    int32_t lo;
    uint32_t width, magic;

    struct unit {
        uint4 f, m;
        uint64_t ok;
    };
    __device__ __forceinline__ unit none() const { return unit{}; } /* all zero */
    __device__ __forceinline__ unit load(const uint16_t *fixed_bins, size_t u) const
    {
        unit x;
        x.f = __ldg((const uint4 *)fixed_bins + u);
        x.m = __ldg((const uint4 *)img + u);
        x.ok = MASKED ? __ldg((const unsigned long long *)val + u) : ~0ull;
        return x;
    }
    /* Pixel j of a unit: its cell, or NO_CELL. */
    __device__ __forceinline__ uint32_t cell(const unit &x, int j, uint32_t bm) const
    {
        const uint32_t fw[4] = {x.f.x, x.f.y, x.f.z, x.f.w}, mw[4] = {x.m.x, x.m.y, x.m.z, x.m.w};
        const uint32_t sh = (j & 1) * 16;
        return cell_of((fw[j >> 1] >> sh) & 0xFFFFu,
                       MASKED ? (uint32_t)(x.ok >> (8 * j)) & 0xFFu : 1u,
                       sample((mw[j >> 1] >> sh) & 0xFFFFu, SIGNED), bm, lo, width, magic);
    }
    /* Pixel i, outside the units: count(c) with its cell c where it counts. */
    template <class Count>
    __device__ __forceinline__ void visit(const uint16_t *fixed_bins, size_t i, uint32_t bm,
                                          const Count &count) const
    {
        const uint32_t c = cell_of(fixed_bins[i], MASKED ? val[i] : 1u, sample(img[i], SIGNED),
                                   bm, lo, width, magic);
        if (c != NO_CELL)
            count(c);
    }
};

/* The float32 moving samples of count_share (DRRs): a unit of 8 pixels is one 16-byte load of
 * fixed bins and two of floats, each binned by dh_faxis_bin exactly as the CPU twin does; the
 * mask is tested per unit (val may be NULL). */
struct float_samples {
    const float *img;
    const uint8_t *val;
    uint32_t bins;
    float lo, hi, width;

    struct unit {
        uint4 f;
        float4 m0, m1;
        uint64_t ok;
    };
    __device__ __forceinline__ unit none() const { return unit{}; } /* all zero */
    __device__ __forceinline__ unit load(const uint16_t *fixed_bins, size_t u) const
    {
        unit x;
        x.f = __ldg((const uint4 *)fixed_bins + u);
        x.m0 = __ldg((const float4 *)img + 2 * u);
        x.m1 = __ldg((const float4 *)img + 2 * u + 1);
        x.ok = val ? __ldg((const unsigned long long *)val + u) : ~0ull;
        return x;
    }
    __device__ __forceinline__ uint32_t cell(const unit &x, int j, uint32_t bm) const
    {
        const uint32_t fw[4] = {x.f.x, x.f.y, x.f.z, x.f.w};
        const float mv[8] = {x.m0.x, x.m0.y, x.m0.z, x.m0.w, x.m1.x, x.m1.y, x.m1.z, x.m1.w};
        const uint32_t f = (fw[j >> 1] >> ((j & 1) * 16)) & 0xFFFFu;
        const uint32_t m = dh_faxis_bin(bins, lo, hi, width, mv[j]);
        return f == DH_MI_JOINT_SKIP || !((x.ok >> (8 * j)) & 0xFFu) || m == DH_MI_JOINT_SKIP
                   ? NO_CELL
                   : f * bm + m;
    }
    template <class Count>
    __device__ __forceinline__ void visit(const uint16_t *fixed_bins, size_t i, uint32_t bm,
                                          const Count &count) const
    {
        if (fixed_bins[i] != DH_MI_JOINT_SKIP && (!val || val[i])) {
            const uint32_t m = dh_faxis_bin(bins, lo, hi, width, img[i]);
            if (m != DH_MI_JOINT_SKIP)
                count(fixed_bins[i] * bm + m);
        }
    }
};

/* Counts this block's share of the image (Samples: stored_samples or float_samples) into its
 * private histogram; returns how many pixels this thread counted. MERGE: runs of one cell among
 * a unit's 8 pixels take one add of their length (the air around a body is one cell); without,
 * one predicated atomic per pixel. */
template <bool PACKED, bool MERGE, class Samples>
__device__ uint32_t count_share(cg::cluster_group &cluster, const eval_args &a, const Samples &px,
                                uint32_t *hist, uint32_t *red, size_t part, size_t parts)
{
    const uint32_t bm = a.bins_moving;
    const size_t n = a.n, nv = a.vec ? n >> 3 : 0;
    const size_t tile = blockDim.x;
    uint32_t tiles = 0, counted = 0;
    /* Software-pipelined: the next tile's loads are issued before this tile is counted, so a
     * thread keeps two tiles in flight instead of one (latency, not bandwidth, bounds a lone
     * block). */
    const size_t step = parts * tile;
    typename Samples::unit next = px.none();
    if (part * tile + threadIdx.x < nv)
        next = px.load(a.fixed_bins, part * tile + threadIdx.x);
    for (size_t base = part * tile; base < nv; base += step) {
        const size_t u = base + threadIdx.x, un = u + step;
        const bool have = u < nv;
        const typename Samples::unit cur = next;
        if (un < nv)
            next = px.load(a.fixed_bins, un);
        if (have) {
            uint32_t prev = NO_CELL, run = 0;
#pragma unroll
            for (int j = 0; j < 8; j++) {
                const uint32_t c = px.cell(cur, j, bm);
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
    for (size_t base = nv * 8 + part * tile; base < n; base += step) {
        const size_t i = base + threadIdx.x;
        if (i < n)
            px.visit(a.fixed_bins, i, bm, [&](uint32_t c) {
                add_private<PACKED>(hist, c, 1);
                counted++;
            });
        if (PACKED && ++tiles == PACKED_ROUND_TILES) {
            __syncthreads();
            flush<PACKED>(cluster, hist, red, a.cells, a.lb_shift, true);
            __syncthreads();
            tiles = 0;
        }
    }
    return counted;
}

/* count_share for 32-bit counters without a mask (the batched registration case), without a
 * branch per pixel: the bin by one multiply-high (dh_jaxis_mul_bin), and every pixel one
 * increment of 1 (ATOMS.POPC.INC: the hardware merges lanes that hit one cell), a pixel that
 * does not count (fixed bin SKIP, moving value outside lo..hi) going to `sink`, a shared word
 * that the kernel zeroes first. Returns the pixels this thread visited: the block's N is their
 * sum less the sink's count, so no pixel pays for counting itself. Run merging and the
 * per-pixel branches of count_share cost about 40% more time. */
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
        return a.is_signed
                   ? count_share<PACKED, MERGE>(cluster, a,
                                                stored_samples<true, true>{img, val, lo, width,
                                                                           magic},
                                                hist, red, part, parts)
                   : count_share<PACKED, MERGE>(cluster, a,
                                                stored_samples<true, false>{img, val, lo, width,
                                                                            magic},
                                                hist, red, part, parts);
    return a.is_signed
               ? count_share<PACKED, MERGE>(cluster, a,
                                            stored_samples<false, true>{img, val, lo, width, magic},
                                            hist, red, part, parts)
               : count_share<PACKED, MERGE>(cluster, a,
                                            stored_samples<false, false>{img, val, lo, width,
                                                                         magic},
                                            hist, red, part, parts);
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
                      ? count_share<PACKED, true>(cluster, a,
                                                  float_samples{a.moving_f32 + (size_t)k * a.stride,
                                                                val, a.fbins, a.flo, a.fhi,
                                                                a.fwidth},
                                                  hist, red, part, parts)
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

} // namespace

#endif /* DH_KERNELS_MI_CUDA_COUNT_CUH */
