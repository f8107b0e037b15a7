// SPDX-License-Identifier: MIT
/*
 * mi_cuda_solo.cuh: one block per image for batches at more than 16384 cells (up to 256 x 256
 * bins) of images of at most 512x512 pixels (eval_args, sample and share_minmax from
 * mi_cuda_common.cuh, score_counts from mi_cuda_score.cuh).
 *
 * The cluster layout gives each of 4 blocks a 128 KB packed private histogram and a 64 KB share
 * per image, zeroes and flushes both for 16K pixels each: the fixed cost of an image is several
 * times its counting (256x256 pairs at 256 bins: 0.92M evaluations/s). Here one block holds the
 * image's only histogram, 16-bit counters packed two to a word (128 KB), and scores straight from
 * it:
 *  - no counter can wrap: the block counts pixels 1 .. n - 1 (at most 65535) into them and keeps
 *    pixel 0's cell aside, added back wherever a count is read (cnt);
 *  - every pixel one increment (the bin by dh_jaxis_mul, a predicate; pixels that do not count go
 *    to a sink word), N the pixels visited less the sink, plus pixel 0 when it counts; runs of
 *    one cell among a thread's 8 pixels take one add of their length (the air around a body is
 *    one cell);
 *  - scored from them by score_counts (mi_cuda_score.cuh): the joint histogram written back,
 *    the sums, the lanes' trees and the record, every addition the CPU twin's.
 * Larger images count in rounds of 65536 pixels, each with its first pixel aside, and add each
 * round into their joint histogram in global memory (the first round stores), then score from
 * it: 512x512 pairs at 256 bins 920 -> 304 us per batch of 256.
 * The records are bit-identical to the CPU's (test_mi_cuda).
 */
#ifndef DH_KERNELS_MI_CUDA_SOLO_CUH
#define DH_KERNELS_MI_CUDA_SOLO_CUH

#include "mi_cuda_common.cuh"
#include "mi_cuda_score.cuh"

namespace {

constexpr uint32_t SOLO_THREADS = SCORE_THREADS;
/* A round counts at most 65536 pixels, its first one kept aside: no 16-bit counter can pass 65535.
 * Images of more rounds add each round into their joint histogram in global memory. */
constexpr size_t SOLO_ROUND_PIXELS = 65536;
constexpr uint32_t SOLO_MAX_ROUNDS = 4; /* 512x512 */
constexpr size_t SOLO_MAX_PIXELS = SOLO_MAX_ROUNDS * SOLO_ROUND_PIXELS;

/* Dynamic shared memory of the solo kernel: the packed counters (16-byte multiple), the four
 * subtrees' sums of 256 lanes, the sink word. */
uint32_t solo_smem_bytes(uint32_t cells)
{
    return ((cells + 1) / 2 * 4 + 15) / 16 * 16 + 4 * 256 * 8 + 16;
}

/* Adds the packed counters into joint (round 0: stores them) and zeroes them; by the whole block,
 * which leaves the last barrier to the caller. */
__device__ void solo_flush(uint32_t *hist, uint32_t *joint, uint32_t cells, bool add)
{
    const uint32_t tid = threadIdx.x, T = blockDim.x;
    if (cells % 4 == 0) { /* two words, four cells a turn: 16-byte aligned in joint */
        for (uint32_t q = tid; q < cells / 4; q += T) {
            const uint2 w = ((const uint2 *)hist)[q];
            uint4 x = make_uint4(w.x & 0xFFFFu, w.x >> 16, w.y & 0xFFFFu, w.y >> 16);
            if (add) {
                const uint4 o = __ldcg((const uint4 *)joint + q);
                x = make_uint4(x.x + o.x, x.y + o.y, x.z + o.z, x.w + o.w);
            }
            ((uint4 *)joint)[q] = x;
            ((uint2 *)hist)[q] = make_uint2(0, 0);
        }
        return;
    }
    for (uint32_t c = tid; c < cells; c += T)
        joint[c] = ((hist[c >> 1] >> ((c & 1u) << 4)) & 0xFFFFu) + (add ? __ldcg(joint + c) : 0);
    __syncthreads(); /* a word's two cells may be another thread's */
    for (uint32_t w = tid; w < (cells + 1) / 2; w += T)
        hist[w] = 0;
}

/* MULTI: images of more than one round (a kernel of its own, so that one-round images run
 * code without the rounds' flushes and bookkeeping: 3% faster). */
template <bool SIGNED, bool MERGE, bool MULTI>
__global__ void __launch_bounds__(SOLO_THREADS, 1) mi_solo_kernel(eval_args a)
{
    if (a.skip & DH_MI_STAGE_ALL)
        return;
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ unsigned long long s_visited;
    __shared__ uint32_t s_aside[SOLO_MAX_ROUNDS];

    const uint32_t cells = a.cells, words = (cells + 1) / 2, bm = a.bins_moving;
    uint32_t *hist = (uint32_t *)smem;
    double *part = (double *)(smem + (words * 4 + 15) / 16 * 16); /* [4][256] */
    uint32_t *sink = (uint32_t *)(part + 4 * 256);
    const uint32_t tid = threadIdx.x, T = blockDim.x, k = blockIdx.x;
    const uint16_t *img = a.moving + (size_t)k * a.stride;
    uint32_t *joint = a.joint + (size_t)k * cells;
    const uint32_t rounds =
        MULTI ? (uint32_t)((a.n + SOLO_ROUND_PIXELS - 1) / SOLO_ROUND_PIXELS) : a.n > 0;

    /* 1. zero */
    const uint4 zero = make_uint4(0, 0, 0, 0);
    if (!(a.skip & DH_MI_STAGE_ZERO))
        for (uint32_t w = tid; w < (words + 3) / 4; w += T)
            ((uint4 *)hist)[w] = zero;
    if (tid == 0) {
        s_visited = 0;
        *sink = 0;
    }

    /* 2. the moving range (no valid pixel: 0:0, as on the CPU) */
    int32_t lo = a.lo, hi = a.hi;
    if (!a.has_range) {
        const int2 r = share_minmax(img, nullptr, a.n, SIGNED, a.vec, 0, 1);
        lo = r.x > r.y ? 0 : r.x;
        hi = r.x > r.y ? 0 : r.y;
    }
    const uint32_t width = (uint32_t)(hi - lo + 1);
    const dh_jaxis_mul mul = dh_jaxis_mul_init(bm, width);
    if (tid < SOLO_MAX_ROUNDS) { /* each round's first pixel, kept out of the 16-bit counters */
        uint32_t c = NO_CELL;
        if (tid < rounds) {
            const size_t i = tid * SOLO_ROUND_PIXELS;
            const uint32_t f = a.fixed_bins[i];
            const uint32_t off = (uint32_t)(sample(img[i], SIGNED) - lo);
            if (f != DH_MI_JOINT_SKIP && off < width)
                c = f * bm + dh_jaxis_mul_bin(mul, off);
        }
        s_aside[tid] = c;
    }
    __syncthreads();

    /* 3. count every round's pixels but its first */
    const size_t n = a.skip & DH_MI_STAGE_COUNT ? 0 : a.n, nv = a.vec ? n >> 3 : 0;
    constexpr size_t ROUND_VECTORS = SOLO_ROUND_PIXELS / 8;
    uint32_t visited = 0;
    auto add = [&](uint32_t f, uint32_t raw, bool not_first) {
        const uint32_t off = (uint32_t)(sample(raw, SIGNED) - lo);
        const bool ok = (off < width) & (f != DH_MI_JOINT_SKIP) & not_first;
        const uint32_t c = f * bm + dh_jaxis_mul_bin(mul, off);
        atomicAdd(ok ? hist + (c >> 1) : sink, ok ? 1u << ((c & 1u) << 4) : 1u);
    };
    for (uint32_t r = 0; r < rounds; r++) {
        const size_t v_end = min(nv, (r + 1) * ROUND_VECTORS);
        /* two vectors per turn, both loaded before either is counted (one block per SM: the
         * loads' latency is hidden by nothing else) */
        for (size_t u0 = r * ROUND_VECTORS + tid; u0 < v_end; u0 += 2 * T) {
            uint4 fq[2], mq[2];
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const size_t u = u0 + h * T;
                fq[h] = u < v_end ? __ldg((const uint4 *)a.fixed_bins + u) : zero;
                mq[h] = u < v_end ? __ldg((const uint4 *)img + u) : zero;
            }
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const size_t u = u0 + h * T;
                if (u >= v_end)
                    break;
                const bool first = u % ROUND_VECTORS == 0; /* holds its round's first pixel */
                const uint32_t fw[4] = {fq[h].x, fq[h].y, fq[h].z, fq[h].w};
                const uint32_t mw[4] = {mq[h].x, mq[h].y, mq[h].z, mq[h].w};
                if (!MERGE) {
#pragma unroll
                    for (int j = 0; j < 8; j++) {
                        const uint32_t sh = (j & 1) * 16;
                        add((fw[j >> 1] >> sh) & 0xFFFFu, (mw[j >> 1] >> sh) & 0xFFFFu,
                            j != 0 || !first);
                    }
                    visited += 8;
                    continue;
                }
                /* runs of one cell among the 8 pixels: one add of the run's length (smooth
                 * regions put a warp's pixels into few cells; the counters' bound is unchanged).
                 * visited counts the pixels counted here. */
                uint32_t prev = NO_CELL, run = 0;
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    const uint32_t sh = (j & 1) * 16, f = (fw[j >> 1] >> sh) & 0xFFFFu;
                    const uint32_t off =
                        (uint32_t)(sample((mw[j >> 1] >> sh) & 0xFFFFu, SIGNED) - lo);
                    const bool ok = (off < width) & (f != DH_MI_JOINT_SKIP) & (j != 0 || !first);
                    const uint32_t c = ok ? f * bm + dh_jaxis_mul_bin(mul, off) : NO_CELL;
                    if (c == prev) {
                        run++;
                    } else {
                        if (prev != NO_CELL) {
                            atomicAdd(hist + (prev >> 1), run << ((prev & 1u) << 4));
                            visited += run;
                        }
                        prev = c;
                        run = 1;
                    }
                }
                if (prev != NO_CELL) {
                    atomicAdd(hist + (prev >> 1), run << ((prev & 1u) << 4));
                    visited += run;
                }
            }
        }
        /* the pixels past the vectors (all of them when loads cannot be vectors) */
        const size_t i_end = min(n, (r + 1) * SOLO_ROUND_PIXELS);
        for (size_t i = max(nv * 8, r * SOLO_ROUND_PIXELS) + tid; i < i_end; i += T) {
            add(a.fixed_bins[i], img[i], i % SOLO_ROUND_PIXELS != 0);
            visited++;
        }
        if (MULTI && !(a.skip & DH_MI_STAGE_WRITE)) { /* block-uniform */
            __syncthreads();
            solo_flush(hist, joint, cells, r > 0);
            __syncthreads();
        }
    }
    for (int o = 16; o > 0; o >>= 1)
        visited += __shfl_xor_sync(0xFFFFFFFFu, visited, o);
    if ((tid & 31) == 0 && visited)
        atomicAdd(&s_visited, (unsigned long long)visited);
    uint64_t aside = 0;
    for (uint32_t r = 0; r < rounds; r++)
        aside += s_aside[r] != NO_CELL;
    if (MULTI && tid == 0) /* after the last flush's barrier */
        for (uint32_t r = 0; r < rounds; r++)
            if (s_aside[r] != NO_CELL) /* the L2's copy, as everywhere the rounds add */
                joint[s_aside[r]] = __ldcg(joint + s_aside[r]) + 1;
    __syncthreads();
    const uint64_t nn = s_visited - *sink + aside;

    /* 4. scored straight from the counters, or from the joint histogram the rounds added up */
    if (!MULTI) {
        const uint32_t c0 = s_aside[0];
        auto cnt = [&](uint32_t c) -> uint32_t {
            return ((hist[c >> 1] >> ((c & 1u) << 4)) & 0xFFFFu) + (c == c0);
        };
        auto cnt4 = [&](uint32_t c) -> uint4 {
            const uint2 w = *(const uint2 *)(hist + (c >> 1));
            return make_uint4((w.x & 0xFFFFu) + (c == c0), (w.x >> 16) + (c + 1 == c0),
                              (w.y & 0xFFFFu) + (c + 2 == c0), (w.y >> 16) + (c + 3 == c0));
        };
        score_counts(a, k, cnt, cnt4, nn, lo, hi, part, true);
    } else {
        score_counts(
            a, k, [&](uint32_t c) -> uint32_t { return __ldcg(joint + c); },
            [&](uint32_t c) -> uint4 { return __ldcg((const uint4 *)(joint + c)); }, nn, lo, hi,
            part, false);
    }
}

} // namespace

#endif /* DH_KERNELS_MI_CUDA_SOLO_CUH */
