// SPDX-License-Identifier: MIT
/*
 * bench_clahe_floor3d.cuh: the memory floor of a CLAHE volume's mapping pass (bench_clahe
 * --floor3d, issue 21's 3D target). clahe_cuda_volume.cuh's map_kernel reads a voxel's sample,
 * gathers the 16-byte pair word of its cell at its bin (the eight table entries it blends) and
 * writes one output; floor_gather_kernel does exactly those loads and stores, with the same
 * threads per row, eight voxels a thread, the same pair layout ((tile z, y, x) x stride + bin)
 * and the same cells (the tile centres at k x tile + tile / 2, clamped at the borders), and none
 * of the blend's arithmetic: the output is the eight entries XORed. So its time is what the
 * gathers themselves cost on this data, and map_kernel's time over it is the arithmetic's.
 */
#ifndef DH_BENCH_CLAHE_FLOOR3D_CUH
#define DH_BENCH_CLAHE_FLOOR3D_CUH

#include <cuda_runtime.h>

#include <stdint.h>
#include <string.h>

/* A pair word's content: any non-constant pattern (its time does not depend on it), the same on
 * the host for the check. */
__host__ __device__ inline uint32_t floor3d_word(uint64_t i)
{
    uint64_t h = i * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 29) ^ (uint32_t)i;
}

__global__ void floor3d_fill_pairs(uint4 *pairs, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        pairs[i] = make_uint4(floor3d_word(4 * i), floor3d_word(4 * i + 1),
                              floor3d_word(4 * i + 2), floor3d_word(4 * i + 3));
}

/* The lower tile of the cell holding coordinate c (tiles of `tile` voxels, `tiles` of them). */
__host__ __device__ inline uint32_t floor3d_cell(uint32_t c, uint32_t tile, uint32_t tiles)
{
    if (c < tile / 2)
        return 0;
    const uint32_t k = (c - tile / 2) / tile;
    return k < tiles - 1 ? k : tiles - 1;
}

__host__ __device__ inline uint16_t floor3d_mix(uint4 e)
{
    const uint32_t m = e.x ^ e.y ^ e.z ^ e.w;
    return (uint16_t)(m ^ (m >> 16));
}

/* Block (row threads, rows): rows blockIdx.x * blockDim.y .. of slice blockIdx.y, as map_kernel;
 * n1 a multiple of 8 * blockDim.x (512 here). Samples are bins (a window with a bin per value
 * from 0, as the benchmark's 4096-bin case). */
__global__ void __launch_bounds__(256, 4)
    floor3d_gather_kernel(const uint16_t *__restrict__ data, uint32_t n1, uint32_t tile,
                          uint32_t tiles, const uint4 *__restrict__ pairs, uint32_t stride,
                          uint16_t *__restrict__ out)
{
    const uint32_t y = blockIdx.x * blockDim.y + threadIdx.y, z = blockIdx.y;
    if (y >= n1)
        return;
    const uint4 *q = pairs + ((size_t)floor3d_cell(z, tile, tiles) * tiles +
                              floor3d_cell(y, tile, tiles)) * tiles * stride;
    const size_t row = ((size_t)z * n1 + y) * n1;
    for (uint32_t x = threadIdx.x * 8; x < n1; x += blockDim.x * 8) {
        const uint4 v = __ldcs((const uint4 *)(data + row + x));
        uint16_t s[8];
        memcpy(s, &v, 16);
        uint4 e[8];
#pragma unroll
        for (int j = 0; j < 8; j++)
            e[j] = __ldg(q + (size_t)floor3d_cell(x + j, tile, tiles) * stride + s[j]);
        uint16_t r[8];
#pragma unroll
        for (int j = 0; j < 8; j++)
            r[j] = floor3d_mix(e[j]);
        uint4 o;
        memcpy(&o, r, 16);
        __stcs((uint4 *)(out + row + x), o);
    }
}

#endif /* DH_BENCH_CLAHE_FLOOR3D_CUH */
