// SPDX-License-Identifier: MIT
/*
 * jhist_cuda_solo.cuh: one block per image for batches at more than 16384 cells (up to 256 x 256
 * bins) of images of at most 65536 pixels, included by jhist_cuda.cu inside its namespace (it
 * uses eval_args, sample, share_minmax and jhist_cuda_score.cuh's score_counts from there).
 *
 * The cluster layout gives each of 4 blocks a 128 KB packed private histogram and a 64 KB share
 * per image, zeroes and flushes both for 16K pixels each: the fixed cost of an image is several
 * times its counting (256x256 pairs at 256 bins: 0.92M evaluations/s). Here one block holds the
 * image's only histogram, 16-bit counters packed two to a word (128 KB), and scores straight from
 * it:
 *  - no counter can wrap: the block counts pixels 1 .. n - 1 (at most 65535) into them and keeps
 *    pixel 0's cell aside, added back wherever a count is read (cnt);
 *  - every pixel one increment (the bin by dh_jaxis_mul, a predicate; pixels that do not count go
 *    to a sink word), N the pixels visited less the sink, plus pixel 0 when it counts;
 *  - scored from them by score_counts (jhist_cuda_score.cuh): the joint histogram written back,
 *    the sums, the lanes' trees and the record, every addition the CPU twin's.
 * The records are bit-identical to the CPU's (test_mi_cuda).
 */
#ifndef DH_KERNELS_JHIST_CUDA_SOLO_CUH
#define DH_KERNELS_JHIST_CUDA_SOLO_CUH

constexpr uint32_t SOLO_THREADS = SCORE_THREADS;
constexpr size_t SOLO_MAX_PIXELS = 65536;

/* Dynamic shared memory of the solo kernel: the packed counters (16-byte multiple), the four
 * subtrees' sums of 256 lanes, the sink word. */
uint32_t solo_smem_bytes(uint32_t cells)
{
    return ((cells + 1) / 2 * 4 + 15) / 16 * 16 + 4 * 256 * 8 + 16;
}

template <bool SIGNED>
__global__ void __launch_bounds__(SOLO_THREADS, 1) mi_solo_kernel(eval_args a)
{
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ unsigned long long s_visited;
    __shared__ uint32_t s_c0;

    const uint32_t words = (a.cells + 1) / 2, bm = a.bins_moving;
    uint32_t *hist = (uint32_t *)smem;
    double *part = (double *)(smem + (words * 4 + 15) / 16 * 16); /* [4][256] */
    uint32_t *sink = (uint32_t *)(part + 4 * 256);
    const uint32_t tid = threadIdx.x, T = blockDim.x, k = blockIdx.x;
    const uint16_t *img = a.moving + (size_t)k * a.stride;

    /* 1. zero */
    const uint4 zero = make_uint4(0, 0, 0, 0);
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
    if (tid == 0) { /* pixel 0, kept out of the 16-bit counters */
        uint32_t c0 = NO_CELL;
        if (a.n) {
            const uint32_t f = a.fixed_bins[0];
            const uint32_t off = (uint32_t)(sample(img[0], SIGNED) - lo);
            if (f != DH_JHIST_SKIP && off < width)
                c0 = f * bm + dh_jaxis_mul_bin(mul, off);
        }
        s_c0 = c0;
    }
    __syncthreads();

    /* 3. count pixels 1 .. n - 1 */
    const size_t n = a.n, nv = a.vec ? n >> 3 : 0;
    uint32_t visited = 0;
    auto add = [&](uint32_t f, uint32_t raw, bool not_first) {
        const uint32_t off = (uint32_t)(sample(raw, SIGNED) - lo);
        const bool ok = (off < width) & (f != DH_JHIST_SKIP) & not_first;
        const uint32_t c = f * bm + dh_jaxis_mul_bin(mul, off);
        atomicAdd(ok ? hist + (c >> 1) : sink, ok ? 1u << ((c & 1u) << 4) : 1u);
    };
    /* two vectors per turn, both loaded before either is counted (one block per SM: the loads'
     * latency is hidden by nothing else) */
    for (size_t u0 = tid; u0 < nv; u0 += 2 * T) {
        uint4 fq[2], mq[2];
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const size_t u = u0 + h * T;
            fq[h] = u < nv ? __ldg((const uint4 *)a.fixed_bins + u) : make_uint4(0, 0, 0, 0);
            mq[h] = u < nv ? __ldg((const uint4 *)img + u) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const size_t u = u0 + h * T;
            if (u >= nv)
                break;
            const uint32_t fw[4] = {fq[h].x, fq[h].y, fq[h].z, fq[h].w};
            const uint32_t mw[4] = {mq[h].x, mq[h].y, mq[h].z, mq[h].w};
#pragma unroll
            for (int j = 0; j < 8; j++) {
                const uint32_t sh = (j & 1) * 16;
                add((fw[j >> 1] >> sh) & 0xFFFFu, (mw[j >> 1] >> sh) & 0xFFFFu,
                    j != 0 || u != 0);
            }
            visited += 8;
        }
    }
    for (size_t i = nv * 8 + tid; i < n; i += T) {
        add(a.fixed_bins[i], img[i], i != 0);
        visited++;
    }
    for (int o = 16; o > 0; o >>= 1)
        visited += __shfl_xor_sync(0xFFFFFFFFu, visited, o);
    if ((tid & 31) == 0 && visited)
        atomicAdd(&s_visited, (unsigned long long)visited);
    __syncthreads();
    const uint32_t c0 = s_c0;
    const uint64_t nn = s_visited - *sink + (c0 != NO_CELL);
    auto cnt = [&](uint32_t c) -> uint32_t {
        return ((hist[c >> 1] >> ((c & 1u) << 4)) & 0xFFFFu) + (c == c0);
    };

    /* 4. scored straight from the counters */
    score_counts(a, k, cnt, nn, lo, hi, part);
}

#endif /* DH_KERNELS_JHIST_CUDA_SOLO_CUH */
