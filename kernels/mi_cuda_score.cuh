// SPDX-License-Identifier: MIT
/*
 * mi_cuda_score.cuh: one block of 1024 threads scores one image whose counts it can read
 * whole (cnt(c) for every cell c, cnt4(c) for the four from c = 0 mod 4), with the scoring
 * arithmetic of mi_cuda_common.cuh. The solo kernel reads its packed shared counters this way,
 * the spread kernel the 32-bit counts its last block gathered.
 *  - the joint histogram written back, the row and column sums from it (integers, 32-bit: the
 *    callers count fewer than 2^32 pixels), four cells a turn where rows hold whole fours;
 *  - the lanes' trees of mi_scores.h: lane L adds the terms of cells j * 256 + L over its rows j
 *    in its tree order; that tree (W leaves, W the rows rounded up to a power of two, at least 4;
 *    missing rows are +0.0, which changes no bit) splits into four subtrees of the entries
 *    j = q mod 4, which threads q * 256 + L add depth first (thread_tree<4, W>), joined as
 *    (q0 + q2) + (q1 + q3), the tree's last two levels;
 *  - the marginals' terms, and the three 256-lane trees by three warps at once (mi_kernel's block 0
 *    runs them in one warp: the same additions).
 * Every addition is the CPU twin's, so the records are bit-identical (test_mi_cuda).
 */
#ifndef DH_KERNELS_MI_CUDA_SCORE_CUH
#define DH_KERNELS_MI_CUDA_SCORE_CUH

#include "mi_cuda_common.cuh"

namespace {

constexpr uint32_t SCORE_THREADS = 1024;

/* Lane L's quarter q of its rows' tree of W leaves. */
template <uint32_t W, class Get>
__device__ __forceinline__ double quarter_tree(const Get &get, uint32_t q)
{
    return thread_tree<4, W>(get, q);
}

/* Scores image k from cnt(c) (every cell, nn the pixels that count, lo..hi the moving range of
 * its record) into a.out[k], and with write_back its joint histogram into a.joint (without, cnt
 * reads it there). part: 4 x 256 doubles of shared memory. Called by all SCORE_THREADS threads
 * of the block; ends without a barrier. */
template <class Cnt, class Cnt4>
__device__ void score_counts(const eval_args &a, uint32_t k, const Cnt &cnt, const Cnt4 &cnt4,
                             uint64_t nn, int32_t lo, int32_t hi, double *part, bool write_back)
{
    __shared__ uint32_t row32[DH_MI_LANES], col32[DH_MI_LANES];
    __shared__ unsigned long long rowp[DH_MI_LANES], colp[DH_MI_LANES];
    __shared__ double s_ln_n;
    const uint32_t cells = a.cells, bm = a.bins_moving;
    const uint32_t tid = threadIdx.x, T = blockDim.x;
    for (uint32_t t = tid; t < DH_MI_LANES; t += T)
        row32[t] = col32[t] = 0;
    if (tid == 0)
        s_ln_n = nn ? dh_mi_log((double)nn) : 0.0;
    __syncthreads();
    const double ln_n = s_ln_n;

    const uint32_t skip = a.skip;
    uint32_t *joint = a.joint + (size_t)k * cells;
    const uint32_t rows = (cells + 255) >> 8, L = tid & 255u, q = tid >> 8;
    /* the joint histogram back, the row and column sums: four cells at a time where a row holds
     * whole fours (one load, one 16-byte store; at 256 x 256 bins most fours are empty and take
     * no atomic: 8 of 100 warps' turns had a non-zero cell) */
    if (bm % 4 == 0) {
        for (uint32_t g = tid; g < cells / 4; g += T) {
            const uint32_t c = g * 4;
            const uint4 x = cnt4(c);
            if (write_back && !(skip & DH_MI_STAGE_WRITE))
                ((uint4 *)joint)[g] = x;
            const uint32_t sum = x.x + x.y + x.z + x.w;
            if (sum && !(skip & DH_MI_STAGE_MARGINALS)) {
                const uint32_t row = row_of(a, c), col = c - row * bm;
                atomicAdd(&row32[row], sum);
                if (x.x)
                    atomicAdd(&col32[col], x.x);
                if (x.y)
                    atomicAdd(&col32[col + 1], x.y);
                if (x.z)
                    atomicAdd(&col32[col + 2], x.z);
                if (x.w)
                    atomicAdd(&col32[col + 3], x.w);
            }
        }
    } else {
        for (uint32_t c = tid; c < cells; c += T) {
            const uint32_t x = cnt(c);
            if (write_back && !(skip & DH_MI_STAGE_WRITE))
                joint[c] = x;
            if (x && !(skip & DH_MI_STAGE_MARGINALS)) {
                const uint32_t row = row_of(a, c);
                atomicAdd(&row32[row], x);
                atomicAdd(&col32[c - row * bm], x);
            }
        }
    }
    __syncthreads();

    /* the lanes' trees: quarter q of lane L in thread q * 256 + L */
    if (q < 4 && !(skip & DH_MI_STAGE_TREES)) {
        auto get = [&](uint32_t j) -> double {
            const uint32_t c = (j << 8) | L;
            const uint32_t x = j < rows && c < cells ? cnt(c) : 0u;
            /* most cells are empty: no term */
            return x && !(skip & DH_MI_STAGE_TERMS) ? cell_term(a, x, nn, ln_n) : 0.0;
        };
        part[q * 256 + L] = rows <= 4    ? quarter_tree<4>(get, q)
                            : rows <= 8  ? quarter_tree<8>(get, q)
                            : rows <= 16 ? quarter_tree<16>(get, q)
                            : rows <= 32 ? quarter_tree<32>(get, q)
                            : rows <= 64 ? quarter_tree<64>(get, q)
                            : rows <= 128 ? quarter_tree<128>(get, q)
                                          : quarter_tree<256>(get, q);
    }
    __syncthreads();

    /* the marginals' sums and terms: entry i of marginal_terms' loop converted by the thread that
     * turns it into its term (no barrier between) */
    for (uint32_t i = tid; i < 2 * DH_MI_LANES; i += T) {
        const uint32_t t = i & (DH_MI_LANES - 1);
        if (i < DH_MI_LANES)
            rowp[t] = row32[t];
        else
            colp[t] = col32[t];
    }
    const bool need_f = nn != a.fixed_valid;
    if (!(skip & DH_MI_STAGE_MARGINALS))
        marginal_terms(a, rowp, colp, need_f, nn, ln_n);
    /* the tree's last two levels */
    if (tid < 256)
        part[tid] = __dadd_rn(__dadd_rn(part[tid], part[512 + tid]),
                              __dadd_rn(part[256 + tid], part[768 + tid]));
    __syncthreads();

    /* the three 256-lane trees by three warps at once, then the record */
    __shared__ double s_sum[3];
    const uint32_t w = tid >> 5;
    if (w < 3) {
        double v = a.fixed_sum;
        if (w == 0 && need_f)
            v = warp_tree256([&](uint32_t t) { return __longlong_as_double(rowp[t]); });
        else if (w == 1)
            v = warp_tree256([&](uint32_t t) { return __longlong_as_double(colp[t]); });
        else if (w == 2)
            v = warp_tree256([&](uint32_t t) { return part[t]; });
        if ((tid & 31) == 0)
            s_sum[w] = v;
    }
    __syncthreads();
    if (tid == 0 && !(skip & DH_MI_STAGE_FINISH))
        write_record(a, k, nn, s_sum[0], s_sum[1], s_sum[2], lo, hi);
}

} // namespace

#endif /* DH_KERNELS_MI_CUDA_SCORE_CUH */
