// SPDX-License-Identifier: MIT
/*
 * clahe_cuda_volume.cuh: the mapping pass of a volume's CLAHE (3D tiles) on the GPU, launched
 * by clahe_cuda.cu where clahe_cuda_blend.h's bound holds (tile centres at most 2^28 voxels
 * apart in the product of the three axes and 16384 in that of y and z, e.g. 4096 x 128 x 128; a
 * 512^3 volume of 8x8x8 tiles, 64 x 64 x 64, by far). Equal to clahe.h's dh_clahe_blend3 for
 * every voxel; the general mapping of clahe_cuda.cu remains for the rest.
 *
 * Why a kernel of its own: that mapping was bound by the instructions it issued per voxel (run
 * 72: 733 us for 512^3, SM 66%, DRAM 21%). Here a thread keeps its eight voxels of x (their
 * weights, loaded once) and walks rows (map_kernel), takes each row's y and z weights once
 * (clahe_cuda_blend.h: four products), and for eight voxels between the same two tile centres
 * along x steps the x weight by two per voxel with one reciprocal for all eight.
 * Per voxel remain: the bin (v - lo clamped into the window, where it has a bin per value), the
 * window's test folded into one max of the eight offsets, one 16-byte pair load
 * (the 2 x 2 tiles' entries of both z neighbours, clahe_cuda_tables.cuh), two 32-bit sums of four
 * products over the packed entries, a float estimate of the quotient read off a rounded-down
 * fused multiply-add, and the sign of a 32-bit remainder.
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
    uint32_t step_y, step_z; /* the grid's row step, gridDim.x blockDim.y rows, as y and z */
    uint64_t step_voxels;    /* and as voxels */
    uint64_t row_quads;      /* tx stride: a row of tiles' pairs */
};

constexpr int kThreads = 256;
/* Blocks per multiprocessor the registers must allow (64 a thread at 4): map_blocks' wave. */
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

/* What a thread's eight voxels x .. x + 7 share along x in every row, where one span between
 * tile centres holds them (every group where the spans start at multiples of 8 voxels, as with
 * the benchmark's 64-voxel tiles; else all but one group a tile): the first one's weight, the
 * step of the second tile's weight per voxel (2, or 0 at a clamped border) and the table offset
 * of the span's first tile. */
struct Span {
    uint32_t w1, den, dw;
    size_t base;
};

/* The bin of d = v - lo clamped into the window: a voxel outside reads an entry it does not
 * use (map_span sets its output apart), with one instruction where a bin is a value. */
template <int kIdent>
__device__ __forceinline__ uint32_t bin_clamped(const Args &a, uint32_t d)
{
    d = d < a.width ? d : a.width; /* v below lo wraps to a large d: also clamped */
    return kIdent ? d : dh_clahe_bin_fast(a.lo + (int32_t)d, a.lo, a.bins, a.magic);
}

/* Eight voxels of one span (q: the row's quads at tile column 0; in: their samples): the weight
 * of the second tile grows by sp.dw per voxel, the reciprocal is shared, and all eight pair
 * loads are issued before the first blend. Voxels outside the window are found by one test of
 * the largest offset from lo, and only then set apart (0 below, top above) from samples read
 * again: nothing is kept per voxel across the loads for a case a CT window rarely has. */
template <typename T, int kIdent>
__device__ __forceinline__ void map_span(const Args &a, const uint4 *q, const dh_clahe_yz &yz,
                                         const Span &x, const int32_t *v, const T *in,
                                         uint16_t *o)
{
    /* 64-bit once; per voxel one wide multiply-add of a 32-bit index. (The empty asm keeps the
     * compiler from folding the bases back into every voxel's 64-bit address arithmetic.) */
    const uint4 *p = q + x.base;
    asm("" : "+l"(p));
    uint4 qa[8];
    uint32_t far = 0;
#pragma unroll
    for (int j = 0; j < 8; j++) {
        const uint32_t d = (uint32_t)(v[j] - a.lo);
        far = d > far ? d : far;
        qa[j] = __ldg(p + bin_clamped<kIdent>(a, d));
    }
    const dh_clahe_span sp = dh_clahe_span_of(x.den, yz.den);
    /* Opaque copies: the voxels' weights derived from them stay inside the row loop (hoisted
     * out of it, sixteen integers and sixteen floats spilled to local memory). */
    uint32_t w1x = x.w1, dw = x.dw, den = x.den;
    asm volatile("" : "+r"(w1x), "+r"(dw), "+r"(den));
    const float f1 = (float)w1x, fdw = (float)dw, fden = (float)den;
#pragma unroll
    for (int j = 0; j < 8; j++) {
        const uint32_t w1 = w1x + dw * j;
        const float g1 = __fmaf_rn(fdw, (float)j, f1); /* exact: below 2^24 */
        uint32_t e[4];
        pairs(qa[j], e);
        o[j] = dh_clahe_blend3_row(den - w1, w1, __fsub_rn(fden, g1), g1, sp, yz, e);
    }
    if (far > a.width) { /* some voxel outside the window */
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const int32_t vj = (int32_t)__ldcg(in + j);
            o[j] = inside(a, vj) ? o[j] : vj < a.lo ? 0 : (uint16_t)a.top;
        }
    }
}

/* The rows a thread maps: row threadIdx.y of block blockIdx.x's first step, then every
 * gridDim.x blockDim.y rows further (rows counted slice after slice; a.step_y and a.step_z),
 * stepped by addition, as are their voxels' offsets (a.step_voxels). */
struct Rows {
    uint32_t y, z;
};

__device__ __forceinline__ Rows rows_of(const Args &a)
{
    const uint32_t first = blockIdx.x * blockDim.y + threadIdx.y;
    Rows r;
    r.z = first / a.ny;
    r.y = first - r.z * a.ny;
    return r;
}

__device__ __forceinline__ void next_row(const Args &a, Rows &r)
{
    r.y += a.step_y;
    r.z += a.step_z;
    if (r.y >= a.ny) {
        r.y -= a.ny;
        r.z++;
    }
}

/* A row's quads at tile column 0 (tile row ay.i0 of tile layer az.i0, with the next layer's in
 * the same 16 bytes) and its y and z weights. */
__device__ __forceinline__ const uint4 *row_quads(const Args &a, const dh_clahe_axis_weight *axes,
                                                  const uint4 *pairs_in, const Rows &r,
                                                  dh_clahe_yz *yz)
{
    const dh_clahe_axis_weight ay = load_weight(axes + a.nx + r.y);
    const dh_clahe_axis_weight az = load_weight(axes + a.nx + a.ny + r.z);
    *yz = dh_clahe_yz_of(ay, az);
    return pairs_in + (size_t)(az.i0 * a.ty + ay.i0) * a.row_quads;
}

/* The first of a thread's voxels in its first row; the next rows' are a.step_voxels further. */
__device__ __forceinline__ size_t first_voxel(const Args &a, const Rows &r, uint32_t x)
{
    return ((size_t)r.z * a.ny + r.y) * a.nx + x;
}

/* The thread's eight voxels x .. x + 7 in each of its rows (kSpan: one span holds them, x its
 * weights; else each voxel takes its own weight). One loop per case, so that the registers of
 * one do not weigh on the other. */
template <typename T, int kIdent, bool kSpan>
__device__ __forceinline__ void map_rows(const T *__restrict__ data, const Args &a,
                                         const dh_clahe_axis_weight *__restrict__ axes,
                                         const uint4 *__restrict__ pairs_in,
                                         uint16_t *__restrict__ out, uint32_t x, const Span &xs)
{
    Rows r = rows_of(a);
    for (size_t row = first_voxel(a, r, x); r.z < a.nz; next_row(a, r), row += a.step_voxels) {
        dh_clahe_yz yz;
        const uint4 *q = row_quads(a, axes, pairs_in, r, &yz);
        const T *in = data + row;
        uint16_t *o = out + row;
        T s[8];
        if (((uintptr_t)in & 15) == 0) {
            const uint4 v = __ldcs((const uint4 *)in);
            memcpy(s, &v, 16);
        } else {
#pragma unroll
            for (int j = 0; j < 8; j++)
                s[j] = in[j];
        }
        int32_t v[8];
#pragma unroll
        for (int j = 0; j < 8; j++)
            v[j] = (int32_t)s[j];
        uint16_t res[8];
        if (kSpan) {
            map_span<T, kIdent>(a, q, yz, xs, v, in, res);
        } else {
#pragma unroll /* constant indices: v and res stay in registers */
            for (int j = 0; j < 8; j++)
                res[j] = map_voxel<kIdent>(a, q, yz, load_weight(axes + x + j), v[j]);
        }
        if (((uintptr_t)o & 15) == 0) {
            uint4 w;
            memcpy(&w, res, 16);
            __stcs((uint4 *)o, w);
        } else {
#pragma unroll
            for (int j = 0; j < 8; j++)
                o[j] = res[j];
        }
    }
}

/* Block: blockDim.x threads per row (row_threads), blockDim.y rows, eight voxels per thread
 * per step; the grid is one wave of blocks (map_blocks), each thread walking the rows of
 * rows_of for its eight voxels of x (then for its next eight, where a row is longer than
 * blockDim.x eight). Why: a thread that mapped eight voxels and exited paid its row's set-up
 * (the x weights, the kernel's start, the addresses: a fifth of its instructions) for eight
 * voxels, and short-lived blocks left the multiprocessors part empty (35% occupancy achieved
 * of 50%, session 19).
 * axes: the x, y and z weights of dh_clahe_axis_at (nx, then ny, then nz of them); pairs:
 * clahe_cuda_tables.cuh's pair_kernel's (tile layer az.i0 with the next; at a clamped border
 * the next's weight is 0). */
template <typename T, int kIdent>
__global__ void __launch_bounds__(kThreads, kBlocksPerSm)
    map_kernel(const T *__restrict__ data, const Args a,
               const dh_clahe_axis_weight *__restrict__ axes, const uint4 *__restrict__ pairs_in,
               uint16_t *__restrict__ out)
{
    for (uint32_t x = threadIdx.x * 8; x < a.nx; x += blockDim.x * 8) {
        if (x + 8 > a.nx) { /* the rows' last few voxels */
            Rows r = rows_of(a);
            for (size_t row = first_voxel(a, r, x); r.z < a.nz;
                 next_row(a, r), row += a.step_voxels) {
                dh_clahe_yz yz;
                const uint4 *q = row_quads(a, axes, pairs_in, r, &yz);
                for (uint32_t j = 0; x + j < a.nx; j++)
                    out[row + j] = map_voxel<kIdent>(a, q, yz, load_weight(axes + x + j),
                                                     (int32_t)data[row + j]);
            }
            continue;
        }
        const dh_clahe_axis_weight first = load_weight(axes + x), last = load_weight(axes + x + 7);
        if (first.i0 != last.i0 || first.i1 != last.i1) {
            map_rows<T, kIdent, false>(data, a, axes, pairs_in, out, x, Span{});
            continue;
        }
        const Span xs = {first.w1, first.den, first.i0 == first.i1 ? 0u : 2u,
                         (size_t)first.i0 * a.stride};
        map_rows<T, kIdent, true>(data, a, axes, pairs_in, out, x, xs);
    }
}

/* The grid of map_kernel: kBlocksPerSm blocks per multiprocessor, fewer where the volume has
 * fewer row steps. */
inline unsigned map_blocks(int sms, uint32_t rows_per_block, uint64_t rows)
{
    const uint64_t need = (rows + rows_per_block - 1) / rows_per_block;
    const uint64_t wave = (uint64_t)(sms > 0 ? sms : 1) * kBlocksPerSm;
    return (unsigned)(need < wave ? need : wave);
}

} // namespace dh_clahe_volume

#endif /* DH_KERNELS_CLAHE_CUDA_VOLUME_CUH */
