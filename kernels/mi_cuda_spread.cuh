// SPDX-License-Identifier: MIT
/*
 * mi_cuda_spread.cuh: one image over P plain blocks, for calls of fewer images than SMs with
 * 32-bit counters (up to 16384 cells): the latency of one evaluation, as a registration loop
 * that scores one pose at a time sees it (eval_args, share_minmax and owned_words from
 * mi_cuda_common.cuh, count_block from mi_cuda_count.cuh, score_counts from
 * mi_cuda_score.cuh).
 *
 * The cluster layout spends most of a single evaluation on itself: a 16-block cluster's launch,
 * three cluster barriers and the distributed reduction, about 10 of a 512x512 pair's 16 us on an
 * H100 with every stage left out (docs/performance.md). Here the blocks never wait for each
 * other once counting starts:
 *   1. each block zeroes its private 32-bit histogram (no other zeroing: the per-image state in
 *      device memory is left at zero by the evaluation before);
 *   2. (no explicit moving range) each block finds its share's min..max and publishes it; the
 *      image's blocks meet once (a counter they all reach; they are co-resident: the launch is
 *      cooperative);
 *   3. each block counts its share of the pixels with the count loops of mi_kernel;
 *   4. it adds its non-zero counters into the image's 32-bit accumulator (global atomics, integers:
 *      order-free) and its pixel count into the image's N, and takes a ticket;
 *   5. the block that takes the last ticket reads the accumulator into its own counters, puts the
 *      accumulator and the image's state back to zero for the next evaluation, and scores the
 *      image with score_counts, the same additions as the CPU twin.
 * An image of one block skips 4 and 5's gathering and scores its own counters.
 */
#ifndef DH_KERNELS_MI_CUDA_SPREAD_CUH
#define DH_KERNELS_MI_CUDA_SPREAD_CUH

#include "mi_cuda_common.cuh"
#include "mi_cuda_count.cuh"
#include "mi_cuda_score.cuh"

namespace {

constexpr uint32_t SPREAD_THREADS = SCORE_THREADS;
/* Pixels per block when the call leaves room: one vector of 8 per thread (the count loops hand
 * each block whole tiles of SPREAD_THREADS vectors, so more blocks would idle): 512x512 -> 32
 * blocks, 256x256 -> 8. */
constexpr size_t SPREAD_PIXELS_PER_BLOCK = 8 * SPREAD_THREADS;

/* One image's state between its blocks, all zero between evaluations. */
struct spread_slot {
    unsigned long long n; /* pixels counted by the blocks so far */
    unsigned ticket;      /* blocks done counting */
    unsigned arrived;     /* blocks past step 2 (found ranges only) */
    unsigned min_key;     /* ~key of the smallest valid moving value seen (0: none) */
    unsigned max_key;     /* key of the largest (0: none) */
};

/* An order-preserving map of int32 onto uint32, so that unsigned atomicMax finds both ends and
 * zero is below every key: key(INT_MIN) = 0. */
__device__ __forceinline__ unsigned range_key(int32_t v)
{
    return (unsigned)v ^ 0x80000000u;
}

__device__ __forceinline__ int32_t range_value(unsigned key)
{
    return (int32_t)(key ^ 0x80000000u);
}

/* Words of one image's accumulator: whole 16-byte units, for the last block's vector loads
 * (the padding is never counted into: it stays zero). */
__host__ __device__ __forceinline__ uint32_t spread_acc_words(uint32_t cells)
{
    return (cells + 3) / 4 * 4;
}

/* Dynamic shared memory: the counters (whole rows of 256), the sink word (16 bytes), the four
 * subtrees' sums of score_counts. */
uint32_t spread_smem_bytes(uint32_t cells)
{
    return owned_words(cells, 8) * 4 + 16 + 4 * 256 * 8;
}

__global__ void __launch_bounds__(SPREAD_THREADS, 1) mi_spread_kernel(eval_args a)
{
    /* The count loops take the cluster for packed counters' flushes; 32-bit counters never
     * flush, and this launch's cluster is the block itself. */
    cg::cluster_group cluster = cg::this_cluster();
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ unsigned long long s_count;
    __shared__ int2 s_range;
    __shared__ int s_last;

    const uint32_t P = a.spread_blocks, k = blockIdx.x / P, b = blockIdx.x % P;
    const uint32_t tid = threadIdx.x, T = blockDim.x, cells = a.cells;
    const uint32_t owned = owned_words(cells, 8);
    uint32_t *hist = (uint32_t *)smem, *sink = hist + owned;
    double *part = (double *)(smem + owned * 4 + 16);
    spread_slot *slot = a.spread_slots + k;
    const uint32_t acc_words = spread_acc_words(cells);
    uint32_t *acc = a.spread_acc + (size_t)k * acc_words;
    const uint16_t *img = a.moving + (size_t)k * a.stride;
    const uint8_t *val = a.valid ? a.valid + (size_t)k * a.valid_stride : nullptr;

    /* 1. zero */
    const uint4 zero = make_uint4(0, 0, 0, 0);
    for (uint32_t w = tid; w < owned / 4; w += T)
        ((uint4 *)hist)[w] = zero;
    if (tid == 0) {
        s_count = 0;
        *sink = 0;
    }

    /* 2. the moving range (no valid pixel: 0:0, as on the CPU) */
    int32_t lo = a.lo, hi = a.hi;
    if (!a.has_range) {
        int2 r = share_minmax(img, val, a.n, a.is_signed, a.vec, b, P);
        if (P > 1) {
            if (tid == 0) {
                atomicMax(&slot->min_key, ~range_key(r.x)); /* no-ops for an empty share */
                atomicMax(&slot->max_key, range_key(r.y));
                __threadfence();
                atomicAdd(&slot->arrived, 1u);
                while (*(volatile unsigned *)&slot->arrived < P)
                    __nanosleep(64);
                __threadfence();
                s_range = make_int2(range_value(~*(volatile unsigned *)&slot->min_key),
                                    range_value(*(volatile unsigned *)&slot->max_key));
            }
            __syncthreads();
            r = s_range;
        }
        lo = r.x > r.y ? 0 : r.x;
        hi = r.x > r.y ? 0 : r.y;
    }
    const uint32_t width = (uint32_t)(hi - lo + 1);
    const uint32_t magic = width == 1 ? 0u : (uint32_t)((1ull << 32) / width);
    __syncthreads(); /* zeroed counters */

    /* 3. count */
    uint64_t nn = count_block<false>(cluster, a, k, img, val, hist, hist, b, P, lo, width, magic,
                                     true, &s_count);

    if (P > 1) {
        /* 4. into the image's accumulator; a ticket */
        for (uint32_t q = tid; q < owned / 4; q += T) {
            const uint4 v = ((const uint4 *)hist)[q];
            if (!(v.x | v.y | v.z | v.w))
                continue;
            const uint32_t xs[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (uint32_t j = 0; j < 4; j++)
                if (xs[j])
                    atomicAdd(acc + 4 * q + j, xs[j]); /* cells >= `cells` never count */
        }
        if (tid == 0 && nn)
            atomicAdd(&slot->n, (unsigned long long)nn);
        __threadfence();
        __syncthreads();
        if (tid == 0)
            s_last = atomicAdd(&slot->ticket, 1u) == P - 1;
        __syncthreads();
        if (!s_last)
            return;
        /* 5. the last block: every block's counts, the state back to zero */
        __threadfence();
        for (uint32_t q = tid; q < acc_words / 4; q += T) {
            ((uint4 *)hist)[q] = __ldcg((const uint4 *)acc + q);
            ((uint4 *)acc)[q] = zero;
        }
        if (tid == 0) {
            s_count = __ldcg(&slot->n);
            *slot = spread_slot{};
        }
        __syncthreads();
        nn = s_count;
    }
    score_counts(
        a, k, [&](uint32_t c) -> uint32_t { return hist[c]; },
        [&](uint32_t c) -> uint4 { return *(const uint4 *)(hist + c); }, nn, lo, hi, part,
        true);
}

} // namespace

#endif /* DH_KERNELS_MI_CUDA_SPREAD_CUH */
