// SPDX-License-Identifier: MIT
/*
 * clahe_cuda_volume.cuh: the mapping pass of a volume's CLAHE (3D tiles) on the GPU, launched
 * by clahe_cuda.cu where clahe_cuda_blend.h's bound holds (tile centres at most 2^28 voxels
 * apart in the product of the three axes and 16384 in that of y and z, e.g. 4096 x 128 x 128; a
 * 512^3 volume of 8x8x8 tiles, 64 x 64 x 64, by far). Equal to clahe.h's dh_clahe_blend3 for
 * every voxel; the general mapping of clahe_cuda.cu remains for the rest.
 *
 * Why a kernel of its own: that mapping was bound by the instructions it issued per voxel (run
 * 72: 733 us for 512^3, SM 66%, DRAM 21%). Here a thread is given its row by the grid (no
 * division of a flat index), takes the row's y and z weights once (clahe_cuda_blend.h: four
 * products), walks its row eight voxels at a time, and for eight voxels between the same two
 * tile centres along x steps the x weight by two per voxel with one reciprocal for all eight.
 * Per voxel remain: the bin (v - lo where the window has a bin per value), one 16-byte pair load
 * (the 2 x 2 tiles' entries of both z neighbours, clahe_cuda_tables.cuh), two 32-bit sums of four
 * products over the packed entries, a float estimate of the quotient and one 64-bit comparison.
 * (Two 8-byte quad loads per voxel, one per z neighbour, kept this kernel bound by its L1
 * requests, the lanes' bins being scattered: 474 us for 512^3 at L1/TEX 90.5%, session 16.)
 */
#ifndef DH_KERNELS_CLAHE_CUDA_VOLUME_CUH
#define DH_KERNELS_CLAHE_CUDA_VOLUME_CUH

#include <cuda_runtime.h>

#include <stdint.h>
#include <string.h>

#include "clahe_cuda_blend.h"
#include "clahe_fast.h"

namespace dh_clahe_volume {

/* The volume (one unit): its window (lo <= hi, width = hi - lo), bins and bin multiplier
 * (clahe_fast.h), its shape and tile grid in x and y (the quads' layout), the tables' row length
 * and levels - 1. */
struct Args {
    int32_t lo, hi;
    uint32_t width, bins, top;
    uint64_t magic;
    uint32_t nx, ny, nz, tx, ty, stride;
};

constexpr int kThreads = 256;
/* Blocks per multiprocessor the registers must allow (64 a thread at 4). */
constexpr int kBlocksPerSm = 4;

/* Threads along a row: a power of two, eight voxels each, at most 64 (a 512-voxel row in one
 * pass); the rest of the block's threads take further rows. */
inline unsigned row_threads(uint32_t nx)
{
    unsigned t = 1;
    while (t < 64 && 8u * t < nx)
        t *= 2;
    return t;
}

/* An axis weight with one 16-byte load (the weights are 16 bytes, the array 256-aligned). */
__device__ __forceinline__ dh_clahe_axis_weight load_weight(const dh_clahe_axis_weight *w)
{
    static_assert(sizeof(dh_clahe_axis_weight) == 16, "weights load as one 16-byte vector");
    const uint4 q = __ldg((const uint4 *)w);
    dh_clahe_axis_weight a;
    a.i0 = q.x;
    a.i1 = q.y;
    a.w1 = q.z;
    a.den = q.w;
    return a;
}

/* Whether v is inside the window (one unsigned comparison), and its bin there; 0 outside (its
 * quads are read but not used). */
__device__ __forceinline__ bool inside(const Args &a, int32_t v)
{
    return (uint32_t)(v - a.lo) <= a.width;
}

template <int kIdent>
__device__ __forceinline__ uint32_t bin_of(const Args &a, int32_t v)
{
    if (!inside(a, v))
        return 0;
    return kIdent ? (uint32_t)(v - a.lo) : dh_clahe_bin_fast(v, a.lo, a.bins, a.magic);
}

/* The eight entries as dh_clahe_blend3_row takes them, from the pair of both z neighbours'
 * quads: a quad's words are already the pairs (x0 side | x1 side << 16) of its two tile rows. */
__device__ __forceinline__ void pairs(uint4 p, uint32_t *q)
{
    q[0] = p.x;
    q[1] = p.y;
    q[2] = p.z;
    q[3] = p.w;
}

/* One voxel with its own x weight (row ends, and groups that cross a tile centre). */
template <int kIdent>
__device__ __forceinline__ uint16_t map_voxel(const Args &a, const uint4 *q,
                                              const dh_clahe_yz &yz, dh_clahe_axis_weight ax,
                                              int32_t v)
{
    if (v < a.lo)
        return 0;
    if (v > a.hi)
        return (uint16_t)a.top;
    const size_t c = (size_t)ax.i0 * a.stride;
    const uint32_t bin = bin_of<kIdent>(a, v);
    uint32_t e[4];
    pairs(__ldg(q + c + bin), e);
    const uint32_t w0 = ax.den - ax.w1;
    return dh_clahe_blend3_row(w0, ax.w1, (float)w0, (float)ax.w1,
                               dh_clahe_span_of(ax.den, yz.den), yz, e);
}

/* Eight voxels x .. x + 7 of a row. Where one span between tile centres holds them (seven
 * groups in eight at 64-voxel tiles) the weight of the second tile grows by 2 per voxel (by 0
 * at a clamped border), the reciprocal is shared, and all eight pair loads are issued before
 * the first blend. */
template <int kIdent>
__device__ __forceinline__ void map_group(const Args &a, const uint4 *q,
                                          const dh_clahe_yz &yz, const dh_clahe_axis_weight *wx,
                                          const int32_t *v, uint16_t *o)
{
    const dh_clahe_axis_weight first = load_weight(wx), last = load_weight(wx + 7);
    if (first.i0 != last.i0 || first.i1 != last.i1) {
#pragma unroll /* constant indices: v and o stay in registers */
        for (int j = 0; j < 8; j++)
            o[j] = map_voxel<kIdent>(a, q, yz, load_weight(wx + j), v[j]);
        return;
    }
    const uint32_t dw = first.i0 == first.i1 ? 0 : 2;
    const size_t base = (size_t)first.i0 * a.stride;
    /* 64-bit once; per voxel one wide multiply-add of a 32-bit index. (The empty asm keeps the
     * compiler from folding the bases back into every voxel's 64-bit address arithmetic.) */
    const uint4 *p = q + base;
    asm("" : "+l"(p));
    uint4 qa[8];
#pragma unroll
    for (int j = 0; j < 8; j++)
        qa[j] = __ldg(p + bin_of<kIdent>(a, v[j]));
    const dh_clahe_span sp = dh_clahe_span_of(first.den, yz.den);
    const float f1 = (float)first.w1, fdw = (float)dw, fden = (float)first.den;
#pragma unroll
    for (int j = 0; j < 8; j++) {
        const uint32_t w1 = first.w1 + dw * j;
        const float g1 = __fmaf_rn(fdw, (float)j, f1); /* exact: below 2^24 */
        uint32_t e[4];
        pairs(qa[j], e);
        const uint16_t r = dh_clahe_blend3_row(first.den - w1, w1, __fsub_rn(fden, g1), g1,
                                               sp, yz, e);
        o[j] = inside(a, v[j]) ? r : v[j] < a.lo ? 0 : (uint16_t)a.top;
    }
}

/* Block: rows blockIdx.x * blockDim.y .. of slice blockIdx.y, blockDim.x threads per row
 * (row_threads), eight voxels per thread per step. axes: the x, y and z weights of
 * dh_clahe_axis_at (nx, then ny, then nz of them); pairs: clahe_cuda_tables.cuh's pair_kernel's
 * (tile layer az.i0 with the next; at a clamped border the next's weight is 0). */
template <typename T, int kIdent>
__global__ void __launch_bounds__(kThreads, kBlocksPerSm)
    map_kernel(const T *__restrict__ data, const Args a,
               const dh_clahe_axis_weight *__restrict__ axes, const uint4 *__restrict__ pairs_in,
               uint16_t *__restrict__ out)
{
    const uint32_t y = blockIdx.x * blockDim.y + threadIdx.y, z = blockIdx.y;
    if (y >= a.ny)
        return;
    const dh_clahe_axis_weight ay = load_weight(axes + a.nx + y);
    const dh_clahe_axis_weight az = load_weight(axes + a.nx + a.ny + z);
    const dh_clahe_yz yz = dh_clahe_yz_of(ay, az);
    const size_t plane = (size_t)a.tx * a.ty, row_q = (size_t)ay.i0 * a.tx;
    const uint4 *q = pairs_in + ((size_t)az.i0 * plane + row_q) * a.stride;
    const size_t row = ((size_t)z * a.ny + y) * a.nx;
    for (uint32_t x = threadIdx.x * 8; x < a.nx; x += blockDim.x * 8) {
        const T *in = data + row + x;
        uint16_t *o = out + row + x;
        if (x + 8 > a.nx) { /* the row's last few voxels */
            for (uint32_t j = 0; x + j < a.nx; j++)
                o[j] = map_voxel<kIdent>(a, q, yz, load_weight(axes + x + j),
                                         (int32_t)in[j]);
            return;
        }
        T s[8];
        if (((uintptr_t)in & 15) == 0) {
            const uint4 q = __ldcs((const uint4 *)in);
            memcpy(s, &q, 16);
        } else {
#pragma unroll
            for (int j = 0; j < 8; j++)
                s[j] = in[j];
        }
        int32_t v[8];
#pragma unroll
        for (int j = 0; j < 8; j++)
            v[j] = (int32_t)s[j];
        uint16_t r[8];
        map_group<kIdent>(a, q, yz, axes + x, v, r);
        if (((uintptr_t)o & 15) == 0) {
            uint4 q;
            memcpy(&q, r, 16);
            __stcs((uint4 *)o, q);
        } else {
#pragma unroll
            for (int j = 0; j < 8; j++)
                o[j] = r[j];
        }
    }
}

} // namespace dh_clahe_volume

#endif /* DH_KERNELS_CLAHE_CUDA_VOLUME_CUH */
