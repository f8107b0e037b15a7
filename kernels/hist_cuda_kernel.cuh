// SPDX-License-Identifier: MIT
/*
 * hist_cuda_kernel.cuh: the 1D histogram kernel itself (launched by hist_cuda.cu).
 *
 * One kernel serves the whole volume and per-slice batches: the launch's samples are cut into
 * one contiguous range per block (on the 16-byte grid), and a block walks its range in pieces
 * that never cross a histogram boundary (a slice in per-slice mode, the whole volume otherwise)
 * nor exceed 2^30 samples. Each piece is counted into the block's shared histogram, which is then
 * flushed: non-zero slots are added to the 64-bit global counts (and, when asked, to a second
 * whole-volume histogram, so per-slice and volume counts come from one pass) and zeroed again.
 * A block thus flushes about once per slice it touches, so 512 slices cost about what one volume
 * costs.
 *
 * Samples are read 8 at a time with 16-byte loads, the next group in flight while the current
 * one is counted (the first group of the next piece already during the flush). Power-of-two
 * maps take the pair form (pair_slots): two samples per 32-bit min/max/add/shift, about a third
 * fewer instructions per sample. Small inputs zero their outputs inside the kernel (a cooperative
 * launch with one grid-wide barrier before the first flush), so a call is one launch. Per-slice
 * launches need no zeroing at all (a.store): the piece that ends a slice stores that slice's
 * whole histogram, and only a block's last piece, ending inside a slice, adds to it, after one
 * grid-wide barrier that every store precedes. Degenerate data stays fast: when a whole warp's
 * 256 samples fall in one slot (a constant image, air) one lane adds 256 with one atomic;
 * otherwise lanes add into different copies of the histogram, so equal values in a warp do not
 * queue on one address.
 */
#ifndef DH_KERNELS_HIST_CUDA_KERNEL_CUH
#define DH_KERNELS_HIST_CUDA_KERNEL_CUH

#include <cooperative_groups.h>

#include "hist_cuda_count.cuh"

namespace dh_cuda {

#define DH_CUDA_UNROLL 4

/* Where a lane counts (wide counters). Slots given to add() are internal slots less `post` (0
 * except for MAP_PAIR): `hist` already points `post` words further, so the add is one address
 * computation and one atomic. */
struct counter {
    uint32_t *hist; /* smem + this lane's copy offset + post */

    __device__ __forceinline__ void add(uint32_t slot, uint32_t v) const
    {
        atomicAdd(hist + slot, v);
    }
};

/* 8 internal slots of one 16-byte vector. */
template <int KIND, int SIGNED>
__device__ __forceinline__ void slots8(const hist_args &a, uint4 x, uint32_t s[8])
{
    s[0] = internal_slot<KIND>(a, lo16<SIGNED>(x.x));
    s[1] = internal_slot<KIND>(a, hi16<SIGNED>(x.x));
    s[2] = internal_slot<KIND>(a, lo16<SIGNED>(x.y));
    s[3] = internal_slot<KIND>(a, hi16<SIGNED>(x.y));
    s[4] = internal_slot<KIND>(a, lo16<SIGNED>(x.z));
    s[5] = internal_slot<KIND>(a, hi16<SIGNED>(x.z));
    s[6] = internal_slot<KIND>(a, lo16<SIGNED>(x.w));
    s[7] = internal_slot<KIND>(a, hi16<SIGNED>(x.w));
}

/* The eight slots of a 16-byte vector into s; returns whether all eight are equal. Shared by the
 * one-block and the cluster kernels. */
template <int KIND, int SIGNED>
__device__ __forceinline__ bool vector_slots(const hist_args &a, uint4 x, uint32_t s[8])
{
    if (KIND == MAP_PAIR) {
        /* Four words of two slots each; all eight equal when the words are equal and the first
         * word's halves are. */
        const uint32_t p0 = pair_slots<SIGNED>(a, x.x), p1 = pair_slots<SIGNED>(a, x.y);
        const uint32_t p2 = pair_slots<SIGNED>(a, x.z), p3 = pair_slots<SIGNED>(a, x.w);
        s[0] = p0 & 0xffffu, s[1] = p0 >> 16, s[2] = p1 & 0xffffu, s[3] = p1 >> 16;
        s[4] = p2 & 0xffffu, s[5] = p2 >> 16, s[6] = p3 & 0xffffu, s[7] = p3 >> 16;
        return (p0 == p1) & (p2 == p3) & (p0 == p2) & (__byte_perm(p0, 0, 0x1032) == p0);
    }
    slots8<KIND, SIGNED>(a, x, s);
    bool same = true;
#pragma unroll
    for (int k = 1; k < 8; k++)
        same &= s[k] == s[0];
    return same;
}

/* The eight slots of this lane's vector into s (all 32 lanes call; ok false past the end);
 * returns whether every live lane's eight slots are one slot, `lead` (the first live lane,
 * `leader`, holds it; `live` the live lanes). Shared by every kernel's vector count. */
template <int KIND, int SIGNED>
__device__ __forceinline__ bool warp_slots(const hist_args &a, uint4 x, bool ok, uint32_t s[8],
                                           uint32_t &lead, uint32_t &leader, unsigned &live)
{
    const bool same = vector_slots<KIND, SIGNED>(a, x, s);
    live = __ballot_sync(0xffffffffu, ok);
    leader = __ffs(live) - 1;
    lead = __shfl_sync(0xffffffffu, s[0], leader);
    return __all_sync(0xffffffffu, !ok || (same && s[0] == lead));
}

/* Counts one vector per lane; called by all 32 lanes of the warp together (ok false for lanes
 * past the end). Every add is unconditional (a branch per sample costs more than the add), and
 * equal slots of different lanes land in different copies; only a warp whose 256 samples share
 * one slot takes the other way: one add of 256. */
template <int KIND, int SIGNED>
__device__ __forceinline__ void count_vector(const hist_args &a, const counter &c, uint4 x, bool ok,
                                             uint32_t lane)
{
    uint32_t s[8], lead, leader;
    unsigned live;
    if (warp_slots<KIND, SIGNED>(a, x, ok, s, lead, leader, live)) {
        if (lane == leader)
            c.add(lead, 8u * __popc(live));
        return;
    }
    if (!ok)
        return;
#pragma unroll
    for (int k = 0; k < 8; k++)
        atomicAdd(c.hist + s[k], 1u);
}

template <int KIND, int SIGNED>
__device__ __forceinline__ void count_scalar(const hist_args &a, const counter &c, uint64_t i)
{
    if (KIND == MAP_PAIR) { /* the low half of a pair, the high half unused */
        c.add(pair_slots<SIGNED>(a, a.data[i]) & 0xffffu, 1);
        return;
    }
    const int32_t s = SIGNED ? (int32_t)(int16_t)a.data[i] : (int32_t)a.data[i];
    c.add(internal_slot<KIND>(a, s), 1);
}

/* Adds the (wide) shared histogram to the global counts (internal order back to the output's)
 * and zeroes it. */
__device__ void flush(const hist_args &a, uint32_t *smem, unsigned long long *out)
{
    __syncthreads();
    for (uint32_t i = threadIdx.x; i < a.slots; i += blockDim.x) {
        uint32_t sum = 0;
        for (uint32_t k = 0; k < a.copies; k++) {
            sum += smem[k * a.stride + i];
            smem[k * a.stride + i] = 0;
        }
        if (sum) {
            const uint32_t e = external_slot(i, a.bins);
            atomicAdd(out + e, (unsigned long long)sum);
            if (a.total)
                atomicAdd(a.total + e, (unsigned long long)sum);
        }
    }
    __syncthreads();
}

/* Stores every slot of the (wide) shared histogram into `out`, zeroes included, and zeroes it:
 * the whole histogram was counted by this block, so nothing needs zeroing or adding first. */
__device__ void flush_store(const hist_args &a, uint32_t *smem, unsigned long long *out)
{
    __syncthreads();
    for (uint32_t i = threadIdx.x; i < a.slots; i += blockDim.x) {
        uint32_t sum = 0;
        for (uint32_t k = 0; k < a.copies; k++) {
            sum += smem[k * a.stride + i];
            smem[k * a.stride + i] = 0;
        }
        out[external_slot(i, a.bins)] = sum;
    }
    __syncthreads();
}

/* One group of U vectors per lane starting at the warp's index `base`. */
template <int U = DH_CUDA_UNROLL>
__device__ __forceinline__ void load_group(const uint4 *v, uint32_t nv, uint32_t base,
                                           uint32_t lane, uint4 *x)
{
#pragma unroll
    for (int u = 0; u < U; u++) {
        const uint32_t idx = base + u * blockDim.x + lane;
        x[u] = idx < nv ? __ldcs(v + idx) : make_uint4(0, 0, 0, 0);
    }
}

template <int KIND, int SIGNED>
__device__ __forceinline__ void count_group(const hist_args &a, const counter &c,
                                            const uint4 x[DH_CUDA_UNROLL], uint32_t nv,
                                            uint32_t base, uint32_t lane)
{
#pragma unroll
    for (int u = 0; u < DH_CUDA_UNROLL; u++) {
        const uint32_t first = base + u * blockDim.x;
        if (first >= nv) /* the whole warp is past the end (uniform) */
            break;
        count_vector<KIND, SIGNED>(a, c, x[u], first + lane < nv, lane);
    }
}

/* 512 threads, two blocks per multiprocessor (hist_cuda_big.cuh has the one-block shape). */
#define DH_CUDA_THREADS 512

/* One piece of a block's range: the samples of one histogram (slice or volume), at most
 * DH_CUDA_PIECE_MAX of them, as a scalar head up to the 16-byte grid, a vector body and a
 * scalar tail. */
struct piece {
    uint64_t begin, stop, vb, ve;
    uint32_t nv; /* vectors in the body (a piece is at most 2^30 samples: 32 bits suffice) */
    bool last;   /* the piece ends its histogram */
    const uint4 *v;
    unsigned long long *out;
};

__device__ __forceinline__ piece make_piece(const hist_args &a, uint64_t begin, uint64_t end)
{
    piece p;
    const uint64_t seg = (a.first + begin) / a.seg_len;
    uint64_t stop = (seg + 1) * a.seg_len - a.first;
    p.last = stop <= end && stop - begin <= DH_CUDA_PIECE_MAX;
    if (stop > end)
        stop = end;
    if (stop - begin > DH_CUDA_PIECE_MAX)
        stop = begin + DH_CUDA_PIECE_MAX;
    uint64_t vb = begin <= a.head ? a.head : a.head + (begin - a.head + 7) / 8 * 8;
    if (vb > stop)
        vb = stop;
    const uint64_t nv = (stop - vb) / 8;
    p.begin = begin;
    p.stop = stop;
    p.vb = vb;
    p.ve = vb + nv * 8;
    p.nv = (uint32_t)nv;
    p.v = reinterpret_cast<const uint4 *>(a.data + vb);
    p.out = a.out + seg * a.slots;
    return p;
}

/* This block's range of the launch's samples, cut on the 16-byte grid (index head + 8k) so that
 * pieces of different blocks never share a vector. */
__device__ __forceinline__ void block_range(const hist_args &a, uint64_t &begin, uint64_t &end)
{
    const uint64_t body = a.n > a.head ? (a.n - a.head) / 8 : 0;
    begin = blockIdx.x == 0 ? 0 : a.head + body * blockIdx.x / a.blocks * 8;
    end = blockIdx.x + 1 == a.blocks ? a.n : a.head + body * (blockIdx.x + 1) / a.blocks * 8;
    if (end > a.n)
        end = a.n;
    if (begin > end)
        begin = end;
}

/* Counts piece p into c: its scalar head and tail, then its vectors with the software pipeline
 * (x holds the first group, already loaded; the next group is issued before the current one is
 * counted, two register groups taking turns). */
template <int KIND, int SIGNED>
__device__ __forceinline__ void count_piece(const hist_args &a, const counter &c,
                                            const piece &p, uint4 x[DH_CUDA_UNROLL],
                                            uint4 y[DH_CUDA_UNROLL], uint32_t warp, uint32_t lane)
{
    for (uint64_t i = p.begin + threadIdx.x; i < p.vb; i += blockDim.x)
        count_scalar<KIND, SIGNED>(a, c, i);
    for (uint64_t i = p.ve + threadIdx.x; i < p.stop; i += blockDim.x)
        count_scalar<KIND, SIGNED>(a, c, i);
    const uint32_t step = blockDim.x * DH_CUDA_UNROLL;
    const uint32_t nv = p.nv;
    uint32_t base = warp * 32;
    while (base < nv) {
        load_group(p.v, nv, base + step, lane, y);
        count_group<KIND, SIGNED>(a, c, x, nv, base, lane);
        base += step;
        if (base >= nv)
            break;
        load_group(p.v, nv, base + step, lane, x);
        count_group<KIND, SIGNED>(a, c, y, nv, base, lane);
        base += step;
    }
}

/* Zeroes this block's share of the outputs (a.zero: the launch is cooperative). */
__device__ void zero_outputs(const hist_args &a)
{
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < a.out_len; i += stride)
        a.out[i] = 0;
    if (a.total)
        for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < a.slots; i += stride)
            a.total[i] = 0;
}

template <int KIND, int SIGNED>
__global__ void __launch_bounds__(DH_CUDA_THREADS, 2)
    hist_kernel(const hist_args a)
{
    extern __shared__ uint32_t smem[];
    const uint32_t total_words = a.copies * a.stride;
    for (uint32_t w = threadIdx.x; w < total_words; w += blockDim.x)
        smem[w] = 0;
    if (a.zero)
        zero_outputs(a);
    __syncthreads();

    uint64_t begin, end;
    block_range(a, begin, end);

    const uint32_t lane = threadIdx.x & 31;
    const uint32_t warp = threadIdx.x >> 5;
    counter c;
    c.hist = smem + (lane & (a.copies - 1)) * a.stride + (KIND == MAP_PAIR ? a.pair_post : 0);

    /* Software pipeline: the next group of loads is issued before the current group is counted,
     * so every lane keeps 16 * UNROLL bytes in flight while it counts; two register groups take
     * turns (no copies between them). The first group of the next piece is loaded before the
     * current piece's flush, so a slice boundary does not drain the pipeline. */
    uint4 x[DH_CUDA_UNROLL], y[DH_CUDA_UNROLL];
    piece p;
    if (begin < end) {
        p = make_piece(a, begin, end);
        load_group(p.v, p.nv, warp * 32, lane, x);
    }
    bool met = !a.zero && !a.store; /* passed the grid-wide barrier (or none is needed) */
    while (begin < end) {
        unsigned long long *out = p.out;
        const bool last = p.last;
        count_piece<KIND, SIGNED>(a, c, p, x, y, warp, lane);
        begin = p.stop;
        if (begin < end) {
            p = make_piece(a, begin, end);
            load_group(p.v, p.nv, warp * 32, lane, x);
        }
        if (a.store && last) { /* this block counted the histogram's end */
            flush_store(a, smem, out);
            continue;
        }
        if (!met) { /* every output is zero (or stored) before any block adds to it */
            cooperative_groups::this_grid().sync();
            met = true;
        }
        flush(a, smem, out);
    }
    if (!met)
        cooperative_groups::this_grid().sync();
}

} // namespace dh_cuda

#endif /* DH_KERNELS_HIST_CUDA_KERNEL_CUH */
