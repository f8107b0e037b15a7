// SPDX-License-Identifier: MIT
/*
 * hist_cuda_cluster.cuh: the 1D histogram kernel for bin counts whose 32-bit counters do not fit
 * one block's shared memory (65536 bins need 256 KB, a Hopper block has 227 KB): a thread-block
 * cluster of CS blocks shares one histogram spread over its blocks' shared memories (distributed
 * shared memory). Launched by hist_cuda.cu in place of hist_kernel (hist_cuda_kernel.cuh) when
 * dh_cuda_tuning.cluster_size asks for it; not the default: on an H200 its remote atomics made it
 * 4 times slower than packed 16-bit counters at 65536 bins.
 *
 * A slot's key (the value the map gives: the internal slot, less `post` for the pair form) is
 * owned by block rank key % CS, at word key / CS of that block: interleaved, so the bins of a
 * narrow range (CT-like data) still spread over every block. Each sample's increment goes to its
 * owner with a relaxed, cluster-scoped `red.shared::cluster` (remote when the owner is another
 * block of the cluster).
 *
 * The cluster behaves as one large block: its CS * blockDim threads walk one contiguous range of
 * the input together, in the same pieces (slice or volume, at most 2^30 samples, as in
 * hist_kernel), so all its blocks flush together: cluster barrier, each block adds its own
 * non-zero words to the 64-bit counts and zeroes them, cluster barrier. The barriers also keep
 * every block's shared memory alive until no other block can still add to it.
 *
 * PACKED = 1 is the hybrid: each block keeps its share as packed 16-bit counters (two per word,
 * as in hist_cuda_count.cuh), so CS = 2 needs 64 KB per block; every add then returns the old
 * word (`atom` instead of `red`) for the wrap repair.
 */
#ifndef DH_KERNELS_HIST_CUDA_CLUSTER_CUH
#define DH_KERNELS_HIST_CUDA_CLUSTER_CUH

#include <cooperative_groups.h>

#include "hist_cuda_kernel.cuh"

namespace dh_cuda {

/* One block per SM at CS = 2 (128 KB each): as many threads as the register limit allows;
 * CS = 4 (64 KB) and the hybrid fit two or three blocks per SM. */
template <int CS, int PACKED>
struct cluster_shape {
    static const int threads = CS == 2 && !PACKED ? 1024 : 512;
    static const int min_blocks = CS == 2 && !PACKED ? 1 : 2;
};

/* The shared::cluster address of byte `cta_addr` (a shared::cta address) in block `rank`. */
__device__ __forceinline__ uint32_t cluster_addr(uint32_t cta_addr, uint32_t rank)
{
    uint32_t d;
    asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(d) : "r"(cta_addr), "r"(rank));
    return d;
}

__device__ __forceinline__ void cluster_red(uint32_t addr, uint32_t v)
{
    asm volatile("red.relaxed.cluster.shared::cluster.add.u32 [%0], %1;" ::"r"(addr), "r"(v)
                 : "memory");
}

__device__ __forceinline__ uint32_t cluster_atom(uint32_t addr, uint32_t v)
{
    uint32_t old;
    asm volatile("atom.relaxed.cluster.shared::cluster.add.u32 %0, [%1], %2;"
                 : "=r"(old)
                 : "r"(addr), "r"(v)
                 : "memory");
    return old;
}

/* The external slot of key k (internal slot k + post). A key that maps to no slot never counts
 * a sample, but the unused high half of a packed word can receive a carry and give it back at
 * the flush: both go to the overflow slot (as in hist_cuda_count.cuh) and cancel. */
__device__ __forceinline__ uint32_t key_slot(const hist_args &a, int32_t post, uint32_t k)
{
    const int64_t i = (int64_t)k + post;
    return i >= 0 && i < (int64_t)a.slots ? external_slot((uint32_t)i, a.bins) : a.bins + 1;
}

template <int CS, int PACKED>
struct cluster_counter {
    uint32_t base;   /* shared::cta address of this block's counters (same offset in every block) */
    uint32_t words;  /* packed: counter words per block (a high half is key index + words) */
    int32_t post;
    unsigned long long *out;

    /* Packed: key index j of block r wrapped a half or the word; repair the 64-bit counts. */
    __device__ __forceinline__ void fix(const hist_args &a, uint32_t r, uint32_t w, bool low_wrap,
                                        bool word_wrap) const
    {
        const uint32_t lo = key_slot(a, post, w * CS + r);
        const uint32_t hi = key_slot(a, post, (w + words) * CS + r);
        unsigned long long *outs[2] = {out, a.total};
        for (int o = 0; o < 2; o++) {
            unsigned long long *h = outs[o];
            if (!h)
                continue;
            if (low_wrap) {
                atomicAdd(h + lo, 65536ull);
                atomicAdd(h + hi, ~0ull);
            }
            if (word_wrap)
                atomicAdd(h + hi, 65536ull);
        }
    }

    /* Address of key k's counter word and the increment for v there. */
    __device__ __forceinline__ uint32_t where(uint32_t k, uint32_t v, uint32_t &inc, bool &high,
                                              uint32_t &w) const
    {
        const uint32_t r = k & (CS - 1), j = k / CS;
        high = PACKED && j >= words;
        w = high ? j - words : j;
        inc = high ? v << 16 : v;
        return cluster_addr(base + 4 * w, r);
    }

    __device__ __forceinline__ void add(const hist_args &a, uint32_t k, uint32_t v) const
    {
        uint32_t inc, w;
        bool high;
        const uint32_t addr = where(k, v, inc, high, w);
        if (!PACKED) {
            cluster_red(addr, inc);
            return;
        }
        const uint32_t old = cluster_atom(addr, inc);
        const bool word_wrap = (uint64_t)old + inc > 0xffffffffull;
        const bool low_wrap = !high && (old & 0xffffu) + v > 0xffffu;
        if (__builtin_expect(word_wrap || low_wrap, 0))
            fix(a, k & (CS - 1), w, low_wrap, word_wrap);
    }
};

template <int KIND, int SIGNED, int CS, int PACKED>
__device__ __forceinline__ void cluster_count_vector(const hist_args &a,
                                                     const cluster_counter<CS, PACKED> &c, uint4 x,
                                                     bool ok, uint32_t lane)
{
    uint32_t s[8], lead, leader;
    unsigned live;
    if (warp_slots<KIND, SIGNED>(a, x, ok, s, lead, leader, live)) {
        if (lane == leader)
            c.add(a, lead, 8u * __popc(live));
        return;
    }
    if (!ok)
        return;
    if (!PACKED) {
#pragma unroll
        for (int k = 0; k < 8; k++)
            c.add(a, s[k], 1u);
        return;
    }
    /* Packed: all eight atomics in flight, then the (rare) wrap repairs. */
    uint32_t old[8], w[8];
    bool high[8], wrap = false;
#pragma unroll
    for (int k = 0; k < 8; k++) {
        uint32_t inc;
        const uint32_t addr = c.where(s[k], 1u, inc, high[k], w[k]);
        old[k] = cluster_atom(addr, inc);
        wrap |= high[k] ? old[k] >= 0xffff0000u : (old[k] & 0xffffu) == 0xffffu;
    }
    if (__builtin_expect(wrap, 0)) {
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const bool word_wrap = high[k] ? old[k] >= 0xffff0000u : old[k] == 0xffffffffu;
            const bool low_wrap = !high[k] && (old[k] & 0xffffu) == 0xffffu;
            if (word_wrap || low_wrap)
                c.fix(a, s[k] & (CS - 1), w[k], low_wrap, word_wrap);
        }
    }
}

template <int KIND, int SIGNED, int CS, int PACKED>
__device__ __forceinline__ void cluster_count_scalar(const hist_args &a,
                                                     const cluster_counter<CS, PACKED> &c,
                                                     uint64_t i)
{
    if (KIND == MAP_PAIR) {
        c.add(a, pair_slots<SIGNED>(a, a.data[i]) & 0xffffu, 1);
        return;
    }
    const int32_t s = SIGNED ? (int32_t)(int16_t)a.data[i] : (int32_t)a.data[i];
    c.add(a, internal_slot<KIND>(a, s), 1);
}

/* One group of UNROLL vectors per lane of the cluster's virtual warp at `base`; `stride` is the
 * cluster's thread count. */
__device__ __forceinline__ void cluster_load_group(const uint4 *v, uint32_t nv, uint32_t base,
                                                   uint32_t stride, uint32_t lane,
                                                   uint4 x[DH_CUDA_UNROLL])
{
#pragma unroll
    for (int u = 0; u < DH_CUDA_UNROLL; u++) {
        const uint32_t idx = base + u * stride + lane;
        x[u] = idx < nv ? __ldcs(v + idx) : make_uint4(0, 0, 0, 0);
    }
}

template <int KIND, int SIGNED, int CS, int PACKED>
__device__ __forceinline__ void cluster_count_group(const hist_args &a,
                                                    const cluster_counter<CS, PACKED> &c,
                                                    const uint4 x[DH_CUDA_UNROLL], uint32_t nv,
                                                    uint32_t base, uint32_t stride, uint32_t lane)
{
#pragma unroll
    for (int u = 0; u < DH_CUDA_UNROLL; u++) {
        const uint32_t first = base + u * stride;
        if (first >= nv)
            break;
        cluster_count_vector<KIND, SIGNED, CS, PACKED>(a, c, x[u], first + lane < nv, lane);
    }
}

/* Cluster barrier, this block's words to the global counts (zeroed again), cluster barrier. */
template <int CS, int PACKED>
__device__ void cluster_flush(const hist_args &a, uint32_t *smem, int32_t post, uint32_t rank,
                              unsigned long long *out)
{
    cooperative_groups::this_cluster().sync();
    for (uint32_t w = threadIdx.x; w < a.words; w += blockDim.x) {
        const uint32_t v = smem[w];
        if (!v)
            continue;
        smem[w] = 0;
        const uint32_t lo = PACKED ? v & 0xffffu : v, hi = PACKED ? v >> 16 : 0;
        if (lo) {
            const uint32_t e = key_slot(a, post, w * CS + rank);
            atomicAdd(out + e, (unsigned long long)lo);
            if (a.total)
                atomicAdd(a.total + e, (unsigned long long)lo);
        }
        if (hi) {
            const uint32_t e = key_slot(a, post, (w + a.words) * CS + rank);
            atomicAdd(out + e, (unsigned long long)hi);
            if (a.total)
                atomicAdd(a.total + e, (unsigned long long)hi);
        }
    }
    cooperative_groups::this_cluster().sync();
}

/* a.blocks is a multiple of CS; a.words the counter words of each block; a.zero is 0 (the
 * launcher zeroes the outputs first: a cluster launch is not cooperative). */
template <int KIND, int SIGNED, int CS, int PACKED>
__global__ void __launch_bounds__(cluster_shape<CS, PACKED>::threads,
                                  cluster_shape<CS, PACKED>::min_blocks)
    hist_cluster_kernel(const hist_args a)
{
    extern __shared__ uint32_t smem[];
    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    const uint32_t rank = cluster.block_rank();
    for (uint32_t w = threadIdx.x; w < a.words; w += blockDim.x)
        smem[w] = 0;
    cluster.sync(); /* every block's counters are zero before anyone adds to them */

    /* The cluster's range, cut on the 16-byte grid as hist_kernel cuts a block's. */
    const uint32_t unit = blockIdx.x / CS, units = a.blocks / CS;
    const uint64_t body = a.n > a.head ? (a.n - a.head) / 8 : 0;
    uint64_t begin = unit == 0 ? 0 : a.head + body * unit / units * 8;
    uint64_t end = unit + 1 == units ? a.n : a.head + body * (unit + 1) / units * 8;
    if (end > a.n)
        end = a.n;
    if (begin > end)
        begin = end;

    const uint32_t lane = threadIdx.x & 31;
    const uint32_t vt = rank * blockDim.x + threadIdx.x; /* thread index inside the cluster */
    const uint32_t vdim = CS * blockDim.x;
    const uint32_t vwarp = vt >> 5;
    cluster_counter<CS, PACKED> c;
    c.base = (uint32_t)__cvta_generic_to_shared(smem);
    c.words = a.words;
    c.post = KIND == MAP_PAIR ? a.pair_post : 0;

    const uint32_t step = vdim * DH_CUDA_UNROLL;
    uint4 x[DH_CUDA_UNROLL], y[DH_CUDA_UNROLL];
    piece p;
    if (begin < end) {
        p = make_piece(a, begin, end);
        cluster_load_group(p.v, p.nv, vwarp * 32, vdim, lane, x);
    }
    while (begin < end) {
        c.out = p.out;
        for (uint64_t i = p.begin + vt; i < p.vb; i += vdim)
            cluster_count_scalar<KIND, SIGNED, CS, PACKED>(a, c, i);
        for (uint64_t i = p.ve + vt; i < p.stop; i += vdim)
            cluster_count_scalar<KIND, SIGNED, CS, PACKED>(a, c, i);

        const uint32_t nv = p.nv;
        uint32_t base = vwarp * 32;
        while (base < nv) {
            cluster_load_group(p.v, nv, base + step, vdim, lane, y);
            cluster_count_group<KIND, SIGNED, CS, PACKED>(a, c, x, nv, base, vdim, lane);
            base += step;
            if (base >= nv)
                break;
            cluster_load_group(p.v, nv, base + step, vdim, lane, x);
            cluster_count_group<KIND, SIGNED, CS, PACKED>(a, c, y, nv, base, vdim, lane);
            base += step;
        }
        begin = p.stop;
        if (begin < end) {
            p = make_piece(a, begin, end);
            cluster_load_group(p.v, p.nv, vwarp * 32, vdim, lane, x);
        }
        cluster_flush<CS, PACKED>(a, smem, c.post, rank, c.out);
    }
}

} // namespace dh_cuda

#endif /* DH_KERNELS_HIST_CUDA_CLUSTER_CUH */
