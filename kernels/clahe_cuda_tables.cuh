// SPDX-License-Identifier: MIT
/*
 * clahe_cuda_tables.cuh: CLAHE's tile tables on the GPU from 32-bit tile histograms, spread over
 * many blocks per table, and the tables' interleaved copy the mapping reads (clahe_cuda.cu).
 *
 * Each table (dh_eq_lut_build over one tile's histogram, window = all of the unit's bins, as
 * clahe_cpu.c's tile_table calls it) is cut into segments of kSeg bins, one block each, and built
 * in three launches: the segments' count and first and last bin present; the segments' sums of
 * min(count, limit) over the span (only when clipping); then each segment's entries by a block
 * scan that starts from the segment's carry. Every block derives the table's statistics (count,
 * span, limit, excess and the redistribution) from the at most 32 segment records itself, so no
 * launch is spent on one thread per table. A segment's clipped sum needs no second look at its
 * bins: min(count, limit) summed, plus the share per bin of the span, plus the remainder's bins
 * that fall inside it (an arithmetic count). That arithmetic is clahe_segments.h's, checked on
 * the CPU by tests/test_clahe_segments.c. The counts are 32-bit (tiles below 2^32 samples), so
 * a 65536-bin table moves 256 KiB per pass, not 512.
 *
 * A tile with no sample inside the window takes the flat histogram (every bin 1), as the CPU
 * twin; the histogram kernel leaves its window count in slot `stride`, and a zero there makes
 * every reader here see ones.
 *
 * Quads. The mapping blends the tables of the 2 x 2 tiles around a pixel (per z neighbour): the
 * quad of tile (ix, iy) holds, per bin, the entries of tiles (ix, iy), (ix + 1, iy), (ix, iy + 1)
 * and (ix + 1, iy + 1) in one 8-byte word (a neighbour past the last tile repeats the last, where
 * its blend weight is 0), so a pixel reads one word per z neighbour instead of four scattered
 * 2-byte entries. A volume's row mapping (clahe_cuda_volume.cuh) reads pairs instead: the quads of
 * tile layers iz and iz + 1 side by side in one 16-byte word, one gather per voxel rather than two
 * (that mapping is bound by its L1 requests).
 *
 * The reach. A sample only ever reads its bin, and its bin is present in its own tile's
 * histogram, so the quads, the pairs and the tables are needed only over the bins present in
 * some tile of the batch: [first, end). seg_span_kernel gathers that range into two device words
 * (`reach`: ~first and end, both by atomicMax, so zeroed words mean "none"); the table scan skips
 * segments outside it and the quads and pairs are built inside it alone. A 12-bit CT in a 16-bit
 * table reaches 4096 of 65536 bins: a sixteenth of the table and quad work. Entries outside the
 * reach are left unwritten: nothing reads them (the mapping's loads for samples outside the window
 * read bin 0 and discard what they get).
 */
#ifndef DH_KERNELS_CLAHE_CUDA_TABLES_CUH
#define DH_KERNELS_CLAHE_CUDA_TABLES_CUH

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>

#include <stdint.h>
#include <string.h>

#include "clahe_segments.h"

namespace dh_clahe_tables {

/* Units (slices) per batch, as clahe_cuda.cu launches them. */
constexpr uint32_t kMaxUnits = 64;
constexpr int kThreads = 256, kItems = 8, kSeg = kThreads * kItems;
static_assert(kSeg == DH_CLAHE_SEG, "a block per segment of clahe_segments.h");
/* At most 65536 bins: at most 32 segments, one lane of a warp each. */
static_assert(65536 / kSeg <= 32, "a table's segments fit one warp");

/* What the table launches share: the batch's tables (units x tiles), their bins (per unit), the
 * histograms' row pitch in words (a multiple of 8, at least stride + 1: slot `stride` is the
 * window count) and the tables' row length `stride`. */
struct Args {
    uint32_t bins[kMaxUnits];
    uint32_t tiles, stride, pitch, segs;
    uint32_t levels;
    double clip;
};

using Seg = dh_clahe_seg;
using Plan = dh_clahe_plan;

/* Bins i0 .. i0 + 7 of histogram h (zero at and past `bins`; ones when flat). i0 is a multiple
 * of 8 below the pitch, so two aligned 16-byte loads stay inside the row. */
__device__ __forceinline__ void load8(const uint32_t *h, uint32_t i0, uint32_t bins, bool flat,
                                      uint32_t (&c)[kItems])
{
    if (i0 >= bins) {
#pragma unroll
        for (int k = 0; k < kItems; k++)
            c[k] = 0;
        return;
    }
    if (flat) {
#pragma unroll
        for (int k = 0; k < kItems; k++)
            c[k] = i0 + k < bins;
        return;
    }
    const uint4 a = __ldg((const uint4 *)(h + i0)), b = __ldg((const uint4 *)(h + i0) + 1);
    const uint32_t v[kItems] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
    for (int k = 0; k < kItems; k++)
        c[k] = i0 + k < bins ? v[k] : 0;
}

__device__ __forceinline__ uint32_t table_bins(const Args &a, uint32_t t)
{
    return a.bins[t / a.tiles];
}

struct SpanOp {
    __device__ uint3 operator()(const uint3 &a, const uint3 &b) const
    {
        return make_uint3(a.x + b.x, a.y < b.y ? a.y : b.y, a.z > b.z ? a.z : b.z);
    }
};

/* Launch 1, block (table t, segment s): the segment's count and first and last bin present. */
__global__ void __launch_bounds__(kThreads) seg_span_kernel(const uint32_t *__restrict__ hist,
                                                            const Args a, Seg *__restrict__ segs,
                                                            uint32_t *__restrict__ reach)
{
    using Reduce = cub::BlockReduce<uint3, kThreads>;
    __shared__ typename Reduce::TempStorage tmp;
    const uint32_t t = blockIdx.x / a.segs, s = blockIdx.x % a.segs;
    const uint32_t *h = hist + (size_t)t * a.pitch;
    const uint32_t i0 = s * kSeg + threadIdx.x * kItems;
    uint32_t c[kItems];
    const bool flat = h[a.stride] == 0;
    load8(h, i0, table_bins(a, t), flat, c);
    uint3 mine = make_uint3(0, UINT32_MAX, 0); /* count, first, end */
#pragma unroll
    for (int k = 0; k < kItems; k++)
        if (c[k]) {
            mine.x += c[k];
            mine.y = min(mine.y, i0 + k);
            mine.z = i0 + k + 1;
        }
    const uint3 all = Reduce(tmp).Reduce(mine, SpanOp());
    if (threadIdx.x == 0) {
        Seg r = {all.x, all.y, all.z, 0};
        segs[blockIdx.x] = r;
        if (!flat && all.x) { /* bins samples have (a flat tile's ones are no sample's) */
            atomicMax(reach, ~all.y);
            atomicMax(reach + 1, all.z);
        }
    }
}

/* The batch's reach [first, end) from the words seg_span_kernel left (first >= end: none). */
__device__ __forceinline__ uint2 reach_of(const uint32_t *reach)
{
    return make_uint2(~reach[0], reach[1]);
}

/* The plan of table t from its segment records, computed by warp 0 (lane s reads segment s);
 * the caller hands it to the other warps through shared memory. Needs the segments' `capped`
 * sums when clipping (with_excess). */
__device__ __forceinline__ Plan plan_of(const Args &a, const Seg *segs, bool with_excess)
{
    const uint32_t lane = threadIdx.x & 31;
    Seg r = {0, UINT32_MAX, 0, 0};
    if (lane < a.segs)
        r = segs[lane];
    const uint32_t count = __reduce_add_sync(0xffffffffu, r.count);
    const uint32_t first = __reduce_min_sync(0xffffffffu, r.first);
    const uint32_t end = __reduce_max_sync(0xffffffffu, r.end);
    Plan p = dh_clahe_plan_of(count, first, end, a.clip);
    if (with_excess && p.limit) /* p.limit is the same in every lane */
        dh_clahe_plan_excess(&p, __reduce_add_sync(0xffffffffu, r.capped));
    return p;
}

/* Launch 2 (clipping only), block (t, s): the segment's sum of min(count, limit) over the span. */
__global__ void __launch_bounds__(kThreads) seg_capped_kernel(const uint32_t *__restrict__ hist,
                                                              const Args a, Seg *__restrict__ segs)
{
    using Reduce = cub::BlockReduce<uint32_t, kThreads>;
    __shared__ typename Reduce::TempStorage tmp;
    __shared__ Plan plan_s;
    const uint32_t t = blockIdx.x / a.segs, s = blockIdx.x % a.segs;
    Seg *mine_segs = segs + (size_t)t * a.segs;
    if (mine_segs[s].count == 0)
        return; /* no bin counted: its capped sum is the 0 seg_span_kernel wrote */
    if (threadIdx.x < 32) {
        const Plan p = plan_of(a, mine_segs, false);
        if (threadIdx.x == 0)
            plan_s = p;
    }
    __syncthreads();
    const Plan p = plan_s;
    if (!p.limit)
        return; /* the whole block together */
    const uint32_t *h = hist + (size_t)t * a.pitch;
    const uint32_t i0 = s * kSeg + threadIdx.x * kItems;
    uint32_t c[kItems];
    load8(h, i0, table_bins(a, t), h[a.stride] == 0, c);
    uint32_t sum = 0;
#pragma unroll
    for (int k = 0; k < kItems; k++)
        if (i0 + k >= p.first && i0 + k <= p.last)
            sum += min(c[k], p.limit);
    const uint32_t all = Reduce(tmp).Sum(sum);
    if (threadIdx.x == 0)
        mine_segs[s].capped = all;
}

/* Launch 3, block (t, s): the entries of segment s of table t into `tables` (stride per table):
 * the clipped counts scanned from the segment's carry (the clipped sums of the segments before
 * it), then the equalization formula of equalize_table.h. */
__global__ void __launch_bounds__(kThreads) seg_table_kernel(const uint32_t *__restrict__ hist,
                                                             const Args a,
                                                             const Seg *__restrict__ segs,
                                                             const uint32_t *__restrict__ reach,
                                                             uint16_t *__restrict__ tables)
{
    using Scan = cub::BlockScan<uint32_t, kThreads>;
    __shared__ typename Scan::TempStorage tmp;
    __shared__ Plan plan_s;
    __shared__ uint32_t carry_s, cdf_min_s;
    const uint32_t t = blockIdx.x / a.segs, s = blockIdx.x % a.segs;
    const uint2 r = reach_of(reach);
    if (s * kSeg >= r.y || (s + 1) * kSeg <= r.x)
        return; /* no sample reads these entries (the carry of later ones needs no scan here) */
    const uint32_t *h = hist + (size_t)t * a.pitch;
    const bool flat = h[a.stride] == 0;
    if (threadIdx.x < 32) {
        const Seg *mine_segs = segs + (size_t)t * a.segs;
        const Plan p = plan_of(a, mine_segs, true);
        const uint32_t lane = threadIdx.x;
        const uint32_t part =
            lane < s ? dh_clahe_seg_clipped_sum(&mine_segs[lane], lane, &p) : 0;
        const uint32_t carry = __reduce_add_sync(0xffffffffu, part);
        if (lane == 0) {
            plan_s = p;
            carry_s = carry;
            cdf_min_s = p.first <= p.last
                            ? dh_clahe_seg_clipped(flat ? 1 : h[p.first], p.first, &p)
                            : 0;
        }
    }
    __syncthreads();
    const Plan p = plan_s;
    const uint32_t bins = table_bins(a, t);
    const uint32_t i0 = s * kSeg + threadIdx.x * kItems;
    uint32_t c[kItems];
    load8(h, i0, bins, flat, c);
    uint32_t sum = 0;
#pragma unroll
    for (int k = 0; k < kItems; k++) {
        c[k] = dh_clahe_seg_clipped(c[k], i0 + k, &p);
        sum += c[k];
    }
    uint32_t run;
    Scan(tmp).ExclusiveSum(sum, run);
    run += carry_s;
    const uint32_t cdf_min = cdf_min_s, top = a.levels - 1;
    uint16_t out[kItems];
#pragma unroll
    for (int k = 0; k < kItems; k++) {
        run += c[k];
        out[k] = i0 + k >= bins ? (uint16_t)top
                                : dh_clahe_seg_value(run, cdf_min, p.count, a.levels);
    }
    uint16_t *lut = tables + (size_t)t * a.stride;
    if (i0 >= a.stride)
        return;
    if ((a.stride & 7) == 0) {
        uint4 v;
        memcpy(&v, out, 16);
        *(uint4 *)(lut + i0) = v;
    } else {
        for (int k = 0; k < kItems && i0 + k < a.stride; k++)
            lut[i0 + k] = out[k];
    }
}

/* Blocks of 256 threads per table along its bins for quad_kernel and pair_kernel: the reach is
 * known on the device only, so each block walks it in steps of the grid rather than the grid
 * covering every bin; 16 cover a 4096-bin reach in one step. */
constexpr uint32_t kQuadBlocks = 16;

/* The bins [lo, hi) to build: the reach within the tables (all of them without a reach: the
 * 64-bit counters' path, which has no segment records). */
__device__ __forceinline__ uint2 bins_to_build(const uint32_t *reach, uint32_t stride)
{
    if (!reach)
        return make_uint2(0, stride);
    const uint2 r = reach_of(reach);
    return make_uint2(r.x, r.y < stride ? r.y : stride);
}

/* The quad of table e (tile ix, iy of its layer) at `bin`; dx, dy: the offsets of its x and y
 * neighbours' tables (0 past the last tile). */
__device__ __forceinline__ uint2 quad_at(const uint16_t *e, size_t dx, size_t dy, uint32_t bin)
{
    const uint32_t t00 = e[bin], t10 = e[dx + bin], t01 = e[dy + bin], t11 = e[dx + dy + bin];
    return make_uint2(t00 | t10 << 16, t01 | t11 << 16);
}

/* The quads of `tables` (units x tiles tables of `stride` entries, tiles tx x ty x tz, x
 * fastest) into `quads`, one 8-byte word per tile and bin, in the tables' order, over the reach
 * (null: every bin). Blocks along y take tables, along x runs of bins (no division per entry). */
__global__ void quad_kernel(const uint16_t *__restrict__ tables, uint32_t tx, uint32_t ty,
                            uint32_t tiles, uint32_t stride, uint32_t count,
                            const uint32_t *__restrict__ reach, uint2 *__restrict__ quads)
{
    const uint2 r = bins_to_build(reach, stride);
    for (uint32_t t = blockIdx.y; t < count; t += gridDim.y) {
        const uint32_t k = t % tiles, ix = k % tx, iy = k / tx % ty;
        const size_t dx = ix + 1 < tx ? stride : 0, dy = iy + 1 < ty ? (size_t)tx * stride : 0;
        const uint16_t *e = tables + (size_t)t * stride;
        uint2 *q = quads + (size_t)t * stride;
        for (uint32_t bin = r.x + blockIdx.x * blockDim.x + threadIdx.x; bin < r.y;
             bin += gridDim.x * blockDim.x)
            q[bin] = quad_at(e, dx, dy, bin);
    }
}

/* The pairs of one volume's tables (tiles tx x ty x tz, x fastest, `stride` entries each) into
 * `pairs`, one 16-byte word per tile and bin: the quad of tile (ix, iy, iz) and that of (ix, iy,
 * iz + 1) (the last layer's repeated past it, where its blend weight is 0), over the reach. */
__global__ void pair_kernel(const uint16_t *__restrict__ tables, uint32_t tx, uint32_t ty,
                            uint32_t tz, uint32_t stride, const uint32_t *__restrict__ reach,
                            uint4 *__restrict__ pairs)
{
    const uint2 r = bins_to_build(reach, stride);
    const uint32_t tiles = tx * ty * tz;
    for (uint32_t t = blockIdx.y; t < tiles; t += gridDim.y) {
        const uint32_t ix = t % tx, iy = t / tx % ty, iz = t / tx / ty;
        const size_t dx = ix + 1 < tx ? stride : 0, dy = iy + 1 < ty ? (size_t)tx * stride : 0;
        const size_t dz = iz + 1 < tz ? (size_t)tx * ty * stride : 0;
        const uint16_t *e = tables + (size_t)t * stride;
        uint4 *q = pairs + (size_t)t * stride;
        for (uint32_t bin = r.x + blockIdx.x * blockDim.x + threadIdx.x; bin < r.y;
             bin += gridDim.x * blockDim.x) {
            const uint2 a = quad_at(e, dx, dy, bin), b = quad_at(e + dz, dx, dy, bin);
            q[bin] = make_uint4(a.x, a.y, b.x, b.y);
        }
    }
}

} // namespace dh_clahe_tables

#endif /* DH_KERNELS_CLAHE_CUDA_TABLES_CUH */
