// SPDX-License-Identifier: MIT
/*
 * hist_cuda_big.cuh: the 1D histogram kernel for large bin counts, one block of 1024 threads per
 * multiprocessor (launched by hist_cuda.cu in place of hist_kernel, hist_cuda_kernel.cuh, whose
 * pieces, maps and flushes it shares).
 *
 *  - GUARD = 0, wide 32-bit counters: for histograms of which only one block fits a
 *    multiprocessor (more than about 28000 slots); hist_kernel would run 512 threads there.
 *  - GUARD = 1, packed 16-bit counters (two per word, as in hist_cuda_count.cuh: 128 KB at 65536
 *    bins) that never wrap, so every increment is one shared atomic with no repair: the guard
 *    below proves it. (Repairing wraps from each atomic's returned word instead, in 768
 *    threads, reached 44% of the read ceiling at 65536 bins on an H100, against 67%.)
 *
 * The guard. A block walks each piece in epochs of at most E = 2 x 2 x 1024 x 8 = 32768 vector
 * samples (one loop turn), plus at most 14 scalar samples at the piece's ends. Every shared
 * increment returns the old word, and each thread ORs those words into `acc`; at the end of an
 * epoch the block votes (__syncthreads_or) whether any returned half was >= 16384. Claim: at each
 * vote every counter is <= 16383 + 256 when nobody saw such a half, so no counter can reach 65536
 * in the next epoch. Proof by induction over epochs: a counter touched in the epoch ends at
 * (old value of its last add) + (that add) <= 16383 + 256, an untouched one keeps its earlier
 * bound, and a vote that finds a half >= 16384 drains the block (flush: every counter back to 0).
 * Within an epoch a counter starts <= 16639 and gains at most 32768 + 14 samples, plus the
 * register runs below that are spilled into shared memory (at most 256 per warp, 32 warps),
 * so it stays <= 16639 + 32782 + 8192 = 57613 < 65536: no half ever wraps, and the words hold
 * the exact counts at every flush.
 *
 * Runs. A warp whose 256 samples share one slot (a constant image, padding) does not touch shared
 * memory: it adds 256 to a run kept in registers (slot and count, the same in every lane) and
 * spills the run when a uniform vector of another slot comes or the piece ends: a run of at
 * most 256 samples into shared memory (returning, guarded like any add), a longer one straight
 * into the 64-bit output (one global atomic per run). So a constant volume costs no shared
 * atomics and drains nothing, while two slots alternating every 256 samples still count in
 * shared memory.
 *
 * Pairs. At 65536 bins on uniform data every block flushes 65536 non-zero counts, 8.6 million
 * global atomics per call, which cost about a fifth of the time (H100). With hist_args.pairs
 * a flush adds each packed word as one 64-bit atomic (low count | high count << 32) into the
 * output itself, and after a grid-wide barrier the blocks spread the pairs into the slots
 * (spread_pairs): half the atomics, +6 points.
 */
#ifndef DH_KERNELS_HIST_CUDA_BIG_CUH
#define DH_KERNELS_HIST_CUDA_BIG_CUH

#include <cooperative_groups.h>
#include <type_traits>

#include "hist_cuda_kernel.cuh"

namespace dh_cuda {

#define DH_CUDA_BIG_THREADS 1024
/* Vectors per lane per group: two groups take turns (4 vectors, 64 bytes in flight per lane),
 * within 64 registers per thread. */
#define DH_CUDA_BIG_UNROLL 2
/* A returned half at or above 16384 asks for a drain (GUARD 1, see the guard above). */
#define DH_CUDA_GUARD_MASK 0xc000c000u
#define DH_CUDA_NO_RUN 0xffffffffu

/* The guarded packed counters of one thread: every add returns the old word, ORed into acc.
 * KEYED (the pair map): word and half straight from the key (hist_args.half_lo); else from the
 * internal slot, key + post, against `words`. */
template <int KEYED>
struct guard_counter {
    uint32_t *smem;
    int32_t post;
    uint32_t words;
    uint32_t acc;      /* OR of every word this thread's adds returned in this epoch */
    uint32_t run_slot; /* this warp's run: slot less post (DH_CUDA_NO_RUN: none), same in all */
    uint32_t run_n;    /* lanes; samples in the run */

    /* Word and half of key k (internal slot less post). */
    __device__ __forceinline__ uint32_t word_of(uint32_t k, bool &high) const
    {
        if (KEYED) {
            high = k & 0x8000u;
            return k & 0x7fffu;
        }
        k += post;
        high = k >= words;
        return high ? k - words : k;
    }

    /* Adds v (<= 256) to key k. */
    __device__ __forceinline__ void add(uint32_t k, uint32_t v)
    {
        bool high;
        const uint32_t w = word_of(k, high);
        acc |= atomicAdd(smem + w, high ? v << 16 : v);
    }
};

/* Adds n samples of one half of word w straight to the global counts (a long run). */
__device__ __forceinline__ void add_half_global(const hist_args &a, uint32_t w, bool high,
                                                uint32_t n, unsigned long long *out)
{
    if (a.pairs) {
        atomicAdd(out + a.half_hi - 1 + w, (unsigned long long)n << (high ? 32 : 0));
        return;
    }
    const uint32_t e = external_slot(w + (high ? a.half_hi : a.half_lo), a.bins);
    atomicAdd(out + e, (unsigned long long)n);
    if (a.total)
        atomicAdd(a.total + e, (unsigned long long)n);
}

/* The warp's run goes where it belongs (all lanes call; lane 0 adds): at most 256 samples into
 * shared memory (a returning add, guarded like any other), a longer run straight into the global
 * counts. */
template <int KEYED>
__device__ __forceinline__ void spill_run(const hist_args &a, guard_counter<KEYED> &c,
                                          unsigned long long *out, uint32_t lane)
{
    if (c.run_n && lane == 0) {
        if (c.run_n <= 256) {
            c.add(c.run_slot, c.run_n);
        } else {
            bool high;
            const uint32_t w = c.word_of(c.run_slot, high);
            add_half_global(a, w, high, c.run_n, out);
        }
    }
    c.run_n = 0;
    c.run_slot = DH_CUDA_NO_RUN;
}

/* Adds the packed shared counters to the global counts and zeroes them: one 64-bit atomic per
 * non-zero word with a.pairs, else one add per non-zero count. */
__device__ void guard_flush(const hist_args &a, uint32_t *smem, unsigned long long *out)
{
    __syncthreads();
    for (uint32_t w = threadIdx.x; w < a.words; w += blockDim.x) {
        const uint32_t v = smem[w];
        if (!v)
            continue;
        smem[w] = 0;
        const uint32_t lo = v & 0xffffu, hi = v >> 16;
        if (a.pairs) {
            atomicAdd(out + a.half_hi - 1 + w,
                      (unsigned long long)lo | ((unsigned long long)hi << 32));
            continue;
        }
        const uint32_t el = external_slot(w + a.half_lo, a.bins);
        const uint32_t eh = external_slot(w + a.half_hi, a.bins);
        if (lo)
            atomicAdd(out + el, (unsigned long long)lo);
        if (hi)
            atomicAdd(out + eh, (unsigned long long)hi);
        if (a.total && lo)
            atomicAdd(a.total + el, (unsigned long long)lo);
        if (a.total && hi)
            atomicAdd(a.total + eh, (unsigned long long)hi);
    }
    __syncthreads();
}

/* a.pairs, after every block's last flush (grid-wide barrier): the pair of word w sits at
 * out[half_hi - 1 + w]; its low count belongs in slot external_slot(w + half_lo) and its high
 * count in external_slot(w + half_hi). The host asks for pairs only where every high count
 * lands on its own pair's place (or the overflow slot, outside the pairs) and every low count
 * below the pairs, except, by internal slot with half_lo = 0, word 0's underflow count, which
 * lands on the pair of word words - 1: by internal slot with an even slot count (half_hi =
 * words = slots / 2), and by key for 65536 bins with post 1 (half_hi = 32769, no under- or
 * overflow key). So each block takes a run of j = 1 .. words (word j mod words: words - 1 and
 * 0 fall to the same block, the host gives every block two or more), reads its pairs first and
 * writes after a block barrier. */
__device__ void spread_pairs(const hist_args &a, unsigned long long *out)
{
    const uint32_t words = a.words;
    const uint32_t j0 = 1 + (uint32_t)((uint64_t)words * blockIdx.x / gridDim.x);
    const uint32_t j1 = 1 + (uint32_t)((uint64_t)words * (blockIdx.x + 1) / gridDim.x);
    for (uint32_t base = j0; base < j1; base += blockDim.x) {
        const uint32_t j = base + threadIdx.x;
        const uint32_t w = j % words;
        const unsigned long long g = j < j1 ? out[a.half_hi - 1 + w] : 0;
        __syncthreads(); /* this chunk's pairs are read before any of them is overwritten */
        if (j < j1) {
            out[external_slot(w + a.half_lo, a.bins)] = g & 0xffffffffull;
            out[external_slot(w + a.half_hi, a.bins)] = g >> 32;
        }
        __syncthreads();
    }
}

/* The run of a warp whose live lanes' samples all fall in slot `lead` (less post). */
template <int KEYED>
__device__ __forceinline__ void add_to_run(const hist_args &a, guard_counter<KEYED> &c,
                                           uint32_t lead, unsigned live, uint32_t lane,
                                           unsigned long long *out)
{
    if (lead != c.run_slot) {
        spill_run(a, c, out, lane);
        c.run_slot = lead;
    }
    c.run_n += 8u * __popc(live);
}

/* Counts one vector per lane (all 32 lanes call; ok false past the end). The warp-wide test for
 * a run is taken only when some lane's eight samples share a slot (a vote), so data without such
 * lanes pays five instructions for it instead of about twenty. With the pair map (KEYED) the
 * adds work on the pair words: byte offset and increment of each half straight from its bits. */
template <int KIND, int SIGNED, int KEYED>
__device__ __forceinline__ void guard_vector(const hist_args &a, guard_counter<KEYED> &c, uint4 x,
                                             bool ok, uint32_t lane, unsigned long long *out)
{
    if constexpr (KEYED) {
        const uint32_t p[4] = {pair_slots<SIGNED>(a, x.x), pair_slots<SIGNED>(a, x.y),
                               pair_slots<SIGNED>(a, x.z), pair_slots<SIGNED>(a, x.w)};
        const bool same = (p[0] == p[1]) & (p[2] == p[3]) & (p[0] == p[2]) &
                          (__byte_perm(p[0], 0, 0x1032) == p[0]);
        if (__any_sync(0xffffffffu, ok && same)) {
            const unsigned live = __ballot_sync(0xffffffffu, ok);
            const uint32_t lead = __shfl_sync(0xffffffffu, p[0] & 0xffffu, __ffs(live) - 1);
            if (__all_sync(0xffffffffu, !ok || (same && (p[0] & 0xffffu) == lead))) {
                add_to_run(a, c, lead, live, lane, out);
                return;
            }
        }
        if (!ok)
            return;
        char *base = reinterpret_cast<char *>(c.smem);
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const uint32_t lo_off = (p[j] & 0x7fffu) << 2, hi_off = (p[j] >> 14) & 0x1fffcu;
            const uint32_t lo_inc = (p[j] & 0x8000u) ? 0x10000u : 1u;
            const uint32_t hi_inc = (int32_t)p[j] < 0 ? 0x10000u : 1u;
            c.acc |= atomicAdd(reinterpret_cast<uint32_t *>(base + lo_off), lo_inc) |
                     atomicAdd(reinterpret_cast<uint32_t *>(base + hi_off), hi_inc);
        }
    } else {
        uint32_t s[8];
        const bool same = vector_slots<KIND, SIGNED>(a, x, s);
        if (__any_sync(0xffffffffu, ok && same)) {
            const unsigned live = __ballot_sync(0xffffffffu, ok);
            const uint32_t lead = __shfl_sync(0xffffffffu, s[0], __ffs(live) - 1);
            if (__all_sync(0xffffffffu, !ok || (same && s[0] == lead))) {
                add_to_run(a, c, lead, live, lane, out);
                return;
            }
        }
        if (!ok)
            return;
#pragma unroll
        for (int k = 0; k < 8; k++)
            c.add(s[k], 1);
    }
}

template <int KIND, int SIGNED, int KEYED>
__device__ __forceinline__ void guard_scalar(const hist_args &a, guard_counter<KEYED> &c,
                                             uint64_t i)
{
    if (KIND == MAP_PAIR) {
        c.add(pair_slots<SIGNED>(a, a.data[i]) & 0xffffu, 1);
        return;
    }
    const int32_t s = SIGNED ? (int32_t)(int16_t)a.data[i] : (int32_t)a.data[i];
    c.add(internal_slot<KIND>(a, s) - c.post, 1);
}

template <int KIND, int SIGNED, int GUARD, class C>
__device__ __forceinline__ void big_group(const hist_args &a, C &c, const uint4 *x, uint32_t nv,
                                          uint32_t base, uint32_t lane, unsigned long long *out)
{
#pragma unroll
    for (int u = 0; u < DH_CUDA_BIG_UNROLL; u++) {
        const uint32_t first = base + u * blockDim.x;
        if (first >= nv) /* the whole warp is past the end (uniform) */
            break;
        if constexpr (GUARD)
            guard_vector<KIND, SIGNED>(a, c, x[u], first + lane < nv, lane, out);
        else
            count_vector<KIND, SIGNED>(a, c, x[u], first + lane < nv, lane);
    }
}

/* Counts piece p (x holds its first group, already loaded). The loop runs the same number of
 * turns in every warp, so the guards' block-wide steps after each group are safe. */
template <int KIND, int SIGNED, int GUARD, class C>
__device__ __forceinline__ void big_piece(const hist_args &a, C &c, const piece &p, uint4 *x,
                                          uint4 *y, uint32_t *smem, uint32_t warp, uint32_t lane)
{
    for (uint64_t i = p.begin + threadIdx.x; i < p.vb; i += blockDim.x) {
        if constexpr (GUARD)
            guard_scalar<KIND, SIGNED>(a, c, i);
        else
            count_scalar<KIND, SIGNED>(a, c, i);
    }
    for (uint64_t i = p.ve + threadIdx.x; i < p.stop; i += blockDim.x) {
        if constexpr (GUARD)
            guard_scalar<KIND, SIGNED>(a, c, i);
        else
            count_scalar<KIND, SIGNED>(a, c, i);
    }
    const uint32_t step = blockDim.x * DH_CUDA_BIG_UNROLL;
    const uint32_t nv = p.nv;
    for (uint32_t b0 = 0; b0 < nv; b0 += 2 * step) {
        const uint32_t base = b0 + warp * 32;
        load_group<DH_CUDA_BIG_UNROLL>(p.v, nv, base + step, lane, y);
        big_group<KIND, SIGNED, GUARD>(a, c, x, nv, base, lane, p.out);
        load_group<DH_CUDA_BIG_UNROLL>(p.v, nv, base + 2 * step, lane, x);
        big_group<KIND, SIGNED, GUARD>(a, c, y, nv, base + step, lane, p.out);
        if constexpr (GUARD) {
            if (__syncthreads_or(c.acc & DH_CUDA_GUARD_MASK))
                guard_flush(a, smem, p.out); /* drain: every counter back to 0 */
            c.acc = 0;
        }
    }
}

template <int KIND, int SIGNED, int GUARD>
__global__ void __launch_bounds__(DH_CUDA_BIG_THREADS, 1) hist_big_kernel(const hist_args a)
{
    extern __shared__ uint32_t smem[];
    const uint32_t total_words = GUARD ? a.words : a.copies * a.stride;
    for (uint32_t w = threadIdx.x; w < total_words; w += blockDim.x)
        smem[w] = 0;
    if (a.zero)
        zero_outputs(a);
    __syncthreads();
    bool met = !a.zero && !a.store; /* passed the grid-wide barrier (or none is needed) */
    if (GUARD && !met) {
        /* Drains and long runs add to the outputs in the middle of a piece: zeroed first. */
        cooperative_groups::this_grid().sync();
        met = true;
    }

    uint64_t begin, end;
    block_range(a, begin, end);
    const uint32_t lane = threadIdx.x & 31;
    const uint32_t warp = threadIdx.x >> 5;
    const int32_t post = KIND == MAP_PAIR ? a.pair_post : 0;
    typename std::conditional<GUARD != 0, guard_counter<KIND == MAP_PAIR>, counter>::type c;
    if constexpr (GUARD) {
        c.smem = smem;
        c.post = post;
        c.words = a.words;
        c.acc = 0;
        c.run_slot = DH_CUDA_NO_RUN;
        c.run_n = 0;
    } else {
        c.hist = smem + (lane & (a.copies - 1)) * a.stride + post;
    }

    uint4 x[DH_CUDA_BIG_UNROLL], y[DH_CUDA_BIG_UNROLL];
    piece p;
    if (begin < end) {
        p = make_piece(a, begin, end);
        load_group<DH_CUDA_BIG_UNROLL>(p.v, p.nv, warp * 32, lane, x);
    }
    while (begin < end) {
        unsigned long long *out = p.out;
        const bool last = p.last;
        big_piece<KIND, SIGNED, GUARD>(a, c, p, x, y, smem, warp, lane);
        if constexpr (GUARD)
            spill_run(a, c, out, lane);
        begin = p.stop;
        if (begin < end) {
            p = make_piece(a, begin, end);
            load_group<DH_CUDA_BIG_UNROLL>(p.v, p.nv, warp * 32, lane, x);
        }
        if (!GUARD && a.store && last) { /* this block counted the histogram's end */
            flush_store(a, smem, out);
            continue;
        }
        if (!met) { /* every output is zero (or stored) before any block adds to it */
            cooperative_groups::this_grid().sync();
            met = true;
        }
        if constexpr (GUARD) {
            guard_flush(a, smem, out);
            c.acc = 0;
        } else {
            flush(a, smem, out);
        }
    }
    if (!met)
        cooperative_groups::this_grid().sync();
    if (GUARD && a.pairs) {
        cooperative_groups::this_grid().sync(); /* every block's pairs are in */
        spread_pairs(a, a.out);
    }
}

} // namespace dh_cuda

#endif /* DH_KERNELS_HIST_CUDA_BIG_CUH */
