// SPDX-License-Identifier: MIT
/*
 * hist_cuda_small.cuh: one histogram of a small input (a single slice) counted by one
 * thread-block cluster, launched by hist_cuda.cu.
 *
 * For a 512x512 slice the whole-device kernel spends most of its time outside counting: its
 * output must be zeroed before any block adds to it (a grid-wide barrier in a cooperative
 * launch), and 64 blocks then add their counters to the same few hundred global addresses. Here
 * one cluster of 8 or 16 blocks (one per multiprocessor) counts the input into its blocks' wide
 * shared histograms, meets at one cluster barrier, and each block then sums its share of the
 * slots over every block of the cluster through distributed shared memory, in rank order, and
 * stores the 64-bit totals with plain stores. Nothing is zeroed first, no global atomic is used,
 * and a call is one ordinary launch. Integer sums: the same counts as the CPU, bit for bit.
 */
#ifndef DH_KERNELS_HIST_CUDA_SMALL_CUH
#define DH_KERNELS_HIST_CUDA_SMALL_CUH

#include <cooperative_groups.h>

#include "hist_cuda_kernel.cuh"

namespace dh_cuda {

/* Threads per block: 8 blocks of 1024 or 16 of 512, the same 8192 threads either way. */
template <int CLUSTER>
struct small_shape {
    static const int threads = CLUSTER == 16 ? 512 : 1024;
};

/* Wide counters only; one histogram (a.seg_len >= a.n), at most DH_CUDA_PIECE_MAX samples, no
 * total; the grid is exactly one cluster (a.blocks == CLUSTER). */
template <int KIND, int SIGNED, int CLUSTER>
__global__ void __launch_bounds__(small_shape<CLUSTER>::threads, 1)
    hist_small_kernel(const hist_args a)
{
    extern __shared__ uint32_t smem[];
    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    const uint32_t total_words = a.copies * a.stride;
    for (uint32_t w = threadIdx.x; w < total_words; w += blockDim.x)
        smem[w] = 0;
    __syncthreads();

    uint64_t begin, end;
    block_range(a, begin, end);
    const uint32_t lane = threadIdx.x & 31;
    const uint32_t warp = threadIdx.x >> 5;
    counter c;
    c.hist = smem + (lane & (a.copies - 1)) * a.stride + (KIND == MAP_PAIR ? a.pair_post : 0);
    if (begin < end) {
        uint4 x[DH_CUDA_UNROLL], y[DH_CUDA_UNROLL];
        const piece p = make_piece(a, begin, end);
        load_group(p.v, p.nv, warp * 32, lane, x);
        count_piece<KIND, SIGNED>(a, c, p, x, y, warp, lane);
    }
    cluster.sync(); /* every block's counts are final and visible to the cluster */

    const uint32_t rank = cluster.block_rank();
    const uint32_t share = (a.slots + CLUSTER - 1) / CLUSTER;
    const uint32_t first = rank * share;
    const uint32_t stop = first + share < a.slots ? first + share : a.slots;
    for (uint32_t i = first + threadIdx.x; i < stop; i += blockDim.x) {
        unsigned long long sum = 0;
#pragma unroll
        for (int q = 0; q < CLUSTER; q++) {
            const uint32_t *h = cluster.map_shared_rank(smem, q);
            for (uint32_t k = 0; k < a.copies; k++)
                sum += h[k * a.stride + i];
        }
        a.out[external_slot(i, a.bins)] = sum;
    }
    cluster.sync(); /* no block leaves while another still reads its shared memory */
}

} // namespace dh_cuda

#endif /* DH_KERNELS_HIST_CUDA_SMALL_CUH */
