// SPDX-License-Identifier: MIT
/*
 * clahe_cuda.cu: the CUDA twin of CLAHE (clahe_cuda.h), equal to dh_clahe_cpu bit for bit.
 * A batch of equalization units (up to kMaxUnits slices in 2D, the volume in 3D) takes these
 * launches, each covering every tile of the batch:
 *
 * Histograms. The large-bin scheme of the histogram engine (hist_cuda_big.cuh) applied to boxes
 * instead of contiguous runs: every tile is cut into pieces of at most 65535 samples, one block
 * per piece, so the block's counters can be packed 16-bit halves of 32-bit shared words (65536
 * bins in 128 KiB, at most one block per multiprocessor; at few bins several copies of the
 * histogram, lane by lane, so equal values in a warp do not queue on one address). A piece is
 * counted row by row, a warp per row of the tile and four loads in flight per lane, then its
 * non-zero counters are added to the tile's histogram in global memory: 32-bit counters, or
 * 64-bit ones where a tile holds 2^32 samples or more. The bin is a multiply-high
 * (clahe_fast.h), not a division. Pieces too small to pay for zeroing and flushing shared
 * counters (tiles of a few pixels) add straight to global memory. Each histogram's slot `stride`
 * gets the number of samples inside the window.
 *
 * Tables. With 32-bit counters, clahe_cuda_tables.cuh's kernels: every table cut into segments
 * of 2048 bins, a block each, in three launches (span, clipped sums, scan), so a 65536-bin table
 * keeps 32 multiprocessors busy rather than one; a tile with no sample inside the window reads
 * as the flat histogram (as the CPU twin). With 64-bit counters, the empty tiles' flat
 * histograms and windows in a small launch, then dh_eq_lut_build_cuda, the global
 * equalization's own table kernel (one block per table). Either way the CPU twin's formula
 * (dh_eq_lut_build: base 0, length = bins, window the whole table). Then the quads: each tile's
 * entries beside those of its neighbours along x and y, 8 bytes per bin (a volume within
 * clahe_cuda_blend.h's bound: the pairs, both z neighbours' quads in 16 bytes). With 32-bit
 * counters the table scan, the quads and the pairs cover only the bins some sample of the batch
 * has (the reach, clahe_cuda_tables.cuh).
 *
 * Mapping. One pass over the batch's samples, eight consecutive samples per thread with 16-byte
 * loads and stores where aligned: bin by multiply-high, one 8-byte quad per z neighbour (the
 * four tables around the pixel in its slice) through the read-only cache, and the blend of
 * clahe.h with its one division replaced by a float quotient corrected to the exact integer
 * (clahe_fast.h). The per-axis weights (dh_clahe_axis_at) are computed once per shape into the
 * workspace. A volume (3D tiles) within clahe_cuda_blend.h's bound is mapped by
 * clahe_cuda_volume.cuh instead: one wave of blocks whose threads walk rows for their eight
 * voxels of x, the y and z weights taken once per row.
 */
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#define DH_CUDA_PREFIX "CLAHE: "

#include "clahe_cuda.h"
#include "clahe_fast.h"
#include "cuda_check.h"
#include "clahe_cuda_tables.cuh"
#include "clahe_cuda_volume.cuh"
#include "equalize_cuda.h"

namespace {

/* Units per batch: their parameters travel inside the launches (no upload, no wait). */
constexpr uint32_t kMaxUnits = dh_clahe_tables::kMaxUnits;
/* Samples per histogram piece: a packed 16-bit counter cannot overflow; with 32-bit counters
 * the bound only keeps indices in 32 bits. */
constexpr uint32_t kPieceMaxPacked = 65535, kPieceMaxWide = 1u << 26;
/* Bins up to this many get 32-bit shared counters (64 KiB a copy); more, packed 16-bit ones. */
constexpr uint32_t kWideMaxBins = 16384;
constexpr int kMapThreads = 256;
/* Scratch a batch of slices may take (at least one unit, whatever its size). */
constexpr size_t kBatchBytes = (size_t)256 << 20;
/* Shared memory the histogram copies may take together before copies stop doubling. */
constexpr uint32_t kCopyBytes = 64 * 1024;

/* One equalization unit's window (clamped; lo > hi: empty), its bins and the bin multiplier;
 * ident: a bin per value of the window (the bin is v - lo, no multiply). */
struct Unit {
    int32_t lo, hi;
    uint32_t bins, ident;
    uint64_t magic;
};

/* A batch: units z0 .. z0 + units - 1 (slices in 2D; the volume, z0 0, in 3D). */
struct Batch {
    Unit u[kMaxUnits];
    size_t total;       /* samples of the whole input */
    uint32_t units, z0; /* in units */
    uint32_t nz;        /* slices per unit */
    uint32_t tz;        /* tiles across a unit's slices */
    uint32_t nx, ny, tx, ty;
    uint32_t tiles;  /* per unit */
    uint32_t stride; /* entries per table */
    uint32_t pitch;  /* counters per histogram (slot stride: the window count) */
    uint32_t pieces; /* histogram pieces per tile */
    uint32_t top;    /* levels - 1 */
};

struct Box {
    uint32_t x0, w, y0, h, z0, rows;
};

__device__ __forceinline__ Box tile_box(const Batch &b, uint32_t k)
{
    const uint32_t ix = k % b.tx, iy = k / b.tx % b.ty, iz = k / b.tx / b.ty;
    Box t;
    t.x0 = dh_clahe_tile_start(b.nx, b.tx, ix);
    t.w = dh_clahe_tile_start(b.nx, b.tx, ix + 1) - t.x0;
    t.y0 = dh_clahe_tile_start(b.ny, b.ty, iy);
    t.h = dh_clahe_tile_start(b.ny, b.ty, iy + 1) - t.y0;
    t.z0 = dh_clahe_tile_start(b.nz, b.tz, iz);
    t.rows = t.h * (dh_clahe_tile_start(b.nz, b.tz, iz + 1) - t.z0);
    return t;
}

/* ---- histograms ---- */

/* Counts one sample into this lane's copy: a 32-bit counter, or a 16-bit half of a packed word.
 * kIdent: every unit of the batch has a bin per value (Unit::ident), so the bin is v - lo (a
 * template flag, not a test per sample: that cost the other windows 5 us of 27 on a 2D image). */
template <int kPacked, int kIdent>
__device__ __forceinline__ void count_sample(uint32_t *mine, const Unit &u, int32_t v,
                                             uint32_t &count)
{
    if (v < u.lo || v > u.hi)
        return;
    const uint32_t bin =
        kIdent ? (uint32_t)(v - u.lo) : dh_clahe_bin_fast(v, u.lo, u.bins, u.magic);
    if (kPacked)
        atomicAdd(mine + (bin >> 1), 1u << ((bin & 1) << 4));
    else
        atomicAdd(mine + bin, 1u);
    count++;
}

/* The eight samples of 16-byte vector k of row r of a piece (k counted from the vector holding
 * the row's first sample, which starts `head` samples before it); samples outside the row are
 * left out. Vectors reaching outside the input are read sample by sample. */
template <typename T, int kPacked, int kIdent>
__device__ __forceinline__ void count_vector(const T *__restrict__ data, const Batch &b,
                                             const Box &box, const Unit &u, size_t slice0,
                                             uint32_t r, uint32_t k, uint32_t *mine,
                                             uint32_t &count)
{
    const size_t start = ((slice0 + r / box.h) * b.ny + box.y0 + r % box.h) * b.nx + box.x0;
    const uint32_t head = (uint32_t)(((uintptr_t)(data + start) >> 1) & 7);
    if (8 * k >= head + box.w)
        return; /* this row has fewer vectors than the longest */
    const long long v0 = (long long)start - head + 8ll * k;
    T x[8];
    if (v0 >= 0 && v0 + 8 <= (long long)b.total) {
        const uint4 q = __ldcs((const uint4 *)(data + v0));
        memcpy(x, &q, 16);
    } else {
#pragma unroll
        for (int j = 0; j < 8; j++)
            x[j] = v0 + j >= 0 && v0 + j < (long long)b.total ? data[v0 + j] : (T)0;
    }
#pragma unroll
    for (int j = 0; j < 8; j++) {
        const int32_t pos = (int32_t)(8 * k + j) - (int32_t)head;
        if (pos >= 0 && pos < (int32_t)box.w)
            count_sample<kPacked, kIdent>(mine, u, (int32_t)x[j], count);
    }
}

/* Block = (table t of the batch, piece p of its tile): rows r0 .. r1 - 1 of the tile, read as
 * 16-byte vectors, two per thread in flight, counted into `copies` shared histograms of `words`
 * words each, then added to the tile's global counts. */
template <typename T, int kPacked, typename C, int kIdent>
__global__ void __launch_bounds__(1024)
    hist_kernel(const T *__restrict__ data, const Batch b, uint32_t copies, uint32_t words,
                C *__restrict__ hist)
{
    extern __shared__ uint32_t smem[];
    const uint32_t p = blockIdx.x % b.pieces, t = blockIdx.x / b.pieces;
    const uint32_t ub = t / b.tiles, k = t % b.tiles;
    const Unit u = b.u[ub];
    if (u.lo > u.hi)
        return; /* no sample is counted: the whole block leaves together */
    const Box box = tile_box(b, k);
    const uint32_t r0 = (uint32_t)((uint64_t)p * box.rows / b.pieces);
    const uint32_t r1 = (uint32_t)((uint64_t)(p + 1) * box.rows / b.pieces);
    const size_t slice0 = ((size_t)b.z0 + ub) * b.nz + box.z0;
    C *out = hist + (size_t)t * b.pitch;
    const uint32_t tid = threadIdx.x, lane = tid & 31;
    const uint32_t pixels = (r1 - r0) * box.w;

    if ((uint64_t)pixels * 8 < b.stride) { /* a few pixels: straight into the global counts */
        uint32_t count = 0;
        for (uint32_t i = tid; i < pixels; i += blockDim.x) {
            const uint32_t r = r0 + i / box.w, x = box.x0 + i % box.w;
            const size_t at = ((slice0 + r / box.h) * b.ny + box.y0 + r % box.h) * b.nx + x;
            const int32_t v = data[at];
            if (v >= u.lo && v <= u.hi) {
                atomicAdd(out + dh_clahe_bin_fast(v, u.lo, u.bins, u.magic), (C)1);
                count++;
            }
        }
        count = __reduce_add_sync(0xffffffffu, count);
        if (lane == 0 && count)
            atomicAdd(out + b.stride, (C)count);
        return;
    }

    for (uint32_t i = tid; i < copies * words; i += blockDim.x)
        smem[i] = 0;
    __syncthreads();
    uint32_t *mine = smem + (lane & (copies - 1)) * words;
    uint32_t count = 0;
    const uint32_t vmax = (box.w + 14) / 8; /* vectors of the longest row (head up to 7) */
    const uint32_t total = (r1 - r0) * vmax, step = blockDim.x;
    for (uint32_t f = tid; f < total; f += 2 * step) {
        const uint32_t ra = f / vmax, g = f + step, rb = g / vmax;
        count_vector<T, kPacked, kIdent>(data, b, box, u, slice0, r0 + ra, f - ra * vmax, mine,
                                         count);
        if (g < total)
            count_vector<T, kPacked, kIdent>(data, b, box, u, slice0, r0 + rb, g - rb * vmax,
                                             mine, count);
    }
    __syncthreads();
    const uint32_t slots = kPacked ? 2 * words : words;
    for (uint32_t w = tid; w < words; w += blockDim.x) {
        uint32_t lo = 0, hi = 0;
        for (uint32_t c = 0; c < copies; c++) {
            const uint32_t s = smem[c * words + w];
            lo += kPacked ? s & 0xffffu : s;
            hi += kPacked ? s >> 16 : 0;
        }
        const uint32_t bin = kPacked ? 2 * w : w;
        if (lo)
            atomicAdd(out + bin, (C)lo);
        if (hi && bin + 1 < slots)
            atomicAdd(out + bin + 1, (C)hi);
    }
    count = __reduce_add_sync(0xffffffffu, count);
    if (lane == 0 && count)
        atomicAdd(out + b.stride, (C)count);
}

/* Per table: its window for the table kernel (the unit's bins), and the flat histogram where
 * the tile has no sample inside the window (clahe_cpu.c's tile_table). */
__global__ void prepare_tables_kernel(const Batch b, unsigned long long *hist,
                                      dh_eq_window *windows)
{
    const uint32_t t = blockIdx.x;
    const Unit u = b.u[t / b.tiles];
    if (threadIdx.x == 0) {
        dh_eq_window w = {0, (int32_t)u.bins - 1};
        windows[t] = w;
    }
    unsigned long long *h = hist + (size_t)t * b.pitch;
    if (u.lo > u.hi || h[b.stride] != 0)
        return;
    for (uint32_t i = threadIdx.x; i < u.bins; i += blockDim.x)
        h[i] = 1;
}

/* ---- mapping ---- */

__global__ void axes_kernel(uint32_t nx, uint32_t tx, uint32_t ny, uint32_t ty, uint32_t nz,
                            uint32_t tz, dh_clahe_axis_weight *w)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < nx)
        w[i] = dh_clahe_axis_at(nx, tx, i);
    else if (i < nx + ny)
        w[i] = dh_clahe_axis_at(ny, ty, i - nx);
    else if (i < nx + ny + nz)
        w[i] = dh_clahe_axis_at(nz, tz, i - nx - ny);
}

/* What a row of a unit blends between: its y (and z) weights and the rows of quads (one per z
 * neighbour) of tile row ay.i0 (clahe_cuda_tables.cuh: a quad holds the 2 x 2 tiles' entries). */
struct RowState {
    Unit u;
    dh_clahe_axis_weight ay, az;
    const uint2 *qp[2]; /* quads of tile row (ay.i0, az.i0) and (ay.i0, az.i1) */
};

template <int kVolume>
__device__ __forceinline__ void row_state(const Batch &b, const dh_clahe_axis_weight *wy,
                                          const dh_clahe_axis_weight *wz, const uint2 *quads,
                                          uint32_t unit, uint32_t zl, uint32_t y, RowState &s)
{
    s.u = b.u[unit];
    s.ay = wy[y];
    if (kVolume) {
        s.az = wz[zl];
    } else {
        s.az.i0 = s.az.i1 = 0;
        s.az.w1 = 0;
        s.az.den = 1;
    }
    const uint2 *qu = quads + (size_t)unit * b.tiles * b.stride;
    const size_t plane = (size_t)b.tx * b.ty;
#pragma unroll
    for (int dz = 0; dz < 2; dz++) {
        const uint32_t iz = dz ? s.az.i1 : s.az.i0;
        s.qp[dz] = qu + ((size_t)iz * plane + (size_t)s.ay.i0 * b.tx) * b.stride;
    }
}

/* The 4 (2D) or 8 (3D) entries of clahe.h's blend, k = dx + 2 dy + 4 dz, from one quad per z
 * neighbour: quad (ax.i0, ay.i0) holds tiles ax.i0 and ax.i0 + 1 by ay.i0 and ay.i0 + 1, which
 * are ax.i1 and ay.i1, or (clamped, i1 == i0) a tile whose weight is 0. */
__device__ __forceinline__ void unpack_quad(uint2 q, uint32_t *e)
{
    e[0] = q.x & 0xffffu;
    e[1] = q.x >> 16;
    e[2] = q.y & 0xffffu;
    e[3] = q.y >> 16;
}

template <int kVolume, int kWide>
__device__ __forceinline__ uint16_t blend(const RowState &s, const dh_clahe_axis_weight ax,
                                          const uint32_t *e)
{
    if constexpr (!kVolume)
        return dh_clahe_blend2_fast(ax, s.ay, e[0], e[1], e[2], e[3]);
    else if constexpr (kWide)
        return dh_clahe_blend3(ax, s.ay, s.az, e);
    else
        return dh_clahe_blend3_fast(ax, s.ay, s.az, e);
}

template <int kVolume, int kWide>
__device__ __forceinline__ uint16_t map_one(const RowState &s, const dh_clahe_axis_weight ax,
                                            int32_t v, uint32_t stride, uint32_t top)
{
    if (v < s.u.lo)
        return 0;
    if (v > s.u.hi)
        return (uint16_t)top;
    const uint32_t bin = dh_clahe_bin_fast(v, s.u.lo, s.u.bins, s.u.magic);
    const size_t c = (size_t)ax.i0 * stride + bin;
    uint32_t e[8];
    unpack_quad(__ldg(s.qp[0] + c), e);
    if (kVolume)
        unpack_quad(__ldg(s.qp[1] + c), e + 4);
    return blend<kVolume, kWide>(s, ax, e);
}

/* An axis weight with one 16-byte load (shared with the volume mapping). */
using dh_clahe_volume::load_weight;

/* G samples of one row (x .. x + G - 1) at once: their weights, bins and quads all loaded before
 * the first blend, so each thread keeps G (2D) or 2 G (3D) independent 8-byte loads in flight
 * instead of a chain of dependent ones per sample. */
template <typename T, int kVolume, int kWide, int G>
__device__ __forceinline__ void map_group(const RowState &s, const dh_clahe_axis_weight *wx,
                                          const T *in, uint32_t stride, uint32_t top,
                                          uint16_t *o)
{
    constexpr int kQuads = kVolume ? 2 : 1; /* z neighbours per sample */
    dh_clahe_axis_weight ax[G];
    uint32_t c[G];
    ax[0] = load_weight(wx);
    ax[G - 1] = load_weight(wx + G - 1);
    if (ax[0].i0 == ax[G - 1].i0 && ax[0].i1 == ax[G - 1].i1) {
        /* One span between two centres (or one clamped border) holds the group: the weight of
         * the second tile grows by 2 per pixel (by 0 where clamped, w1 = 0 and den = 1). */
        const uint32_t dw = ax[0].i0 == ax[0].i1 ? 0 : 2;
#pragma unroll
        for (int j = 1; j < G - 1; j++) {
            ax[j] = ax[0];
            ax[j].w1 = ax[0].w1 + dw * j;
        }
    } else {
#pragma unroll
        for (int j = 1; j < G - 1; j++)
            ax[j] = load_weight(wx + j);
    }
#pragma unroll
    for (int j = 0; j < G; j++) {
        const int32_t v = (int32_t)in[j];
        const uint32_t bin =
            v >= s.u.lo && v <= s.u.hi ? dh_clahe_bin_fast(v, s.u.lo, s.u.bins, s.u.magic) : 0;
        c[j] = ax[j].i0 * stride + bin;
    }
    uint2 q[G][kQuads];
#pragma unroll
    for (int j = 0; j < G; j++)
#pragma unroll
        for (int k = 0; k < kQuads; k++)
            q[j][k] = __ldg(s.qp[k] + c[j]);
#pragma unroll
    for (int j = 0; j < G; j++) {
        const int32_t v = (int32_t)in[j];
        uint32_t e[8];
#pragma unroll
        for (int k = 0; k < kQuads; k++)
            unpack_quad(q[j][k], e + 4 * k);
        const uint16_t r = blend<kVolume, kWide>(s, ax[j], e);
        o[j] = v < s.u.lo ? 0 : v > s.u.hi ? (uint16_t)top : r;
    }
}

/* Thread: eight consecutive samples of the batch (slices z0 * nz .. of the volume). Where all
 * eight lie in one row (all but the threads that straddle a row's end), the row's state is
 * found once and the samples go through map_group; the others go one by one. */
template <typename T, int kVolume, int kWide>
__global__ void __launch_bounds__(kMapThreads)
    map_kernel(const T *__restrict__ data, const Batch b,
               const dh_clahe_axis_weight *__restrict__ axes, const uint2 *__restrict__ quads,
               uint16_t *__restrict__ out)
{
    const dh_clahe_axis_weight *wx = axes, *wy = axes + b.nx, *wz = axes + b.nx + b.ny;
    const size_t slice = (size_t)b.nx * b.ny;
    const size_t n = slice * b.units * b.nz;
    const size_t i0 = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * 8;
    if (i0 >= n)
        return;
    const size_t first = (size_t)b.z0 * b.nz * slice + i0; /* sample index in the volume */
    const uint32_t cnt = n - i0 < 8 ? (uint32_t)(n - i0) : 8;
    T in[8];
    if (cnt == 8 && ((uintptr_t)(data + first) & 15) == 0) {
        const uint4 q = __ldcs((const uint4 *)(data + first));
        memcpy(in, &q, 16);
    } else {
        for (uint32_t j = 0; j < 8; j++)
            in[j] = j < cnt ? data[first + j] : (T)0;
    }
    uint32_t x, y, zb; /* column, row, slice within the batch */
    if (n <= UINT32_MAX) {
        const uint32_t r = (uint32_t)i0 / b.nx;
        x = (uint32_t)i0 - r * b.nx;
        zb = r / b.ny;
        y = r - zb * b.ny;
    } else {
        const size_t r = i0 / b.nx;
        x = (uint32_t)(i0 - r * b.nx);
        zb = (uint32_t)(r / b.ny);
        y = (uint32_t)(r - (size_t)zb * b.ny);
    }
    RowState s;
    row_state<kVolume>(b, wy, wz, quads, zb / b.nz, zb % b.nz, y, s);
    uint16_t o[8];
    if (cnt == 8 && x + 8 <= b.nx) {
        map_group<T, kVolume, kWide, 8>(s, wx + x, in, b.stride, b.top, o);
    } else {
        for (uint32_t j = 0; j < cnt; j++) {
            o[j] = map_one<kVolume, kWide>(s, wx[x], (int32_t)in[j], b.stride, b.top);
            if (++x == b.nx && j + 1 < cnt) { /* next row (and maybe slice or unit) */
                x = 0;
                if (++y == b.ny) {
                    y = 0;
                    zb++;
                }
                row_state<kVolume>(b, wy, wz, quads, zb / b.nz, zb % b.nz, y, s);
            }
        }
    }
    if (cnt == 8 && ((uintptr_t)(out + first) & 15) == 0) {
        uint4 q;
        memcpy(&q, o, 16);
        __stcs((uint4 *)(out + first), q);
    } else {
        for (uint32_t j = 0; j < cnt; j++)
            out[first + j] = o[j];
    }
}

int shape_ok(const dh_clahe_shape *s)
{
    if (!s || !s->nx || !s->ny || !s->nz || s->nx > 65535 || s->ny > 65535 || s->nz > 65535)
        return 0;
    if (!s->tx || !s->ty || s->tx > s->nx || s->ty > s->ny)
        return 0;
    return !s->volume || (s->tz && s->tz <= s->nz);
}

/* The largest denominator of dh_clahe_axis_at along an axis: the widest span between two
 * neighbouring centres (1 with one tile). */
uint64_t max_den(uint32_t n, uint32_t tiles)
{
    uint64_t m = 1;
    for (uint32_t i = 0; i + 2 <= tiles; i++) {
        uint64_t d = (uint64_t)dh_clahe_tile_start(n, tiles, i + 2) - dh_clahe_tile_start(n, tiles, i);
        m = d > m ? d : m;
    }
    return m;
}

} // namespace

struct dh_clahe_cuda_workspace {
    void *d_hist; /* 32-bit counters, or 64-bit for tiles of 2^32 samples or more */
    uint16_t *d_tables;
    uint2 *d_quads; /* the tables as the mapping reads them: quads, or a volume's pairs
                     * (16 bytes a tile and bin: clahe_cuda_tables.cuh) */
    dh_clahe_tables::Seg *d_segs;
    dh_eq_window *d_windows;
    dh_clahe_axis_weight *d_axes;
    size_t hist_bytes, table_bytes, quad_bytes, seg_bytes, window_bytes, axes_bytes;
    uint32_t axes_key[6]; /* nx, tx, ny, ty, nz, tz of the weights in d_axes */
    int sms, smem_optin, smem_per_sm;
};

namespace {

/* Makes *p hold at least `bytes` (contents not kept). */
int grow(void **p, size_t *have, size_t bytes, const char *what, char *msg, size_t msg_len)
{
    if (*have >= bytes)
        return 0;
    cudaFree(*p);
    *p = nullptr;
    *have = 0;
    DH_CUDA_CK(cudaMalloc(p, bytes), what);
    *have = bytes;
    return 0;
}

/* The histogram blocks' shape for `stride` bins: words per copy, copies (a power of two up to 8,
 * together at most kCopyBytes unless one copy is more), shared bytes and threads. */
struct HistShape {
    uint32_t words, copies, threads;
    size_t smem;
};

HistShape hist_shape(uint32_t stride, bool packed)
{
    HistShape h;
    h.words = packed ? (stride + 1) / 2 : stride;
    h.copies = 1;
    while (h.copies < 8 && (size_t)h.copies * 2 * h.words * 4 <= kCopyBytes)
        h.copies *= 2;
    h.smem = (size_t)h.copies * h.words * 4;
    /* One block per multiprocessor fits at the largest copies: then 1024 threads keep the
     * loads in flight; else 512 and several blocks. */
    h.threads = h.smem > 100 * 1024 ? 1024 : 512;
    return h;
}

/* Histogram blocks the GPU runs at once: its multiprocessors times the blocks of this shape
 * that fit one (threads, and shared memory with the 1 KiB each block reserves). */
uint64_t hist_slots(const dh_clahe_cuda_workspace *ws, uint32_t stride, bool packed)
{
    const HistShape h = hist_shape(stride, packed);
    uint64_t per_sm = 2048 / h.threads;
    const uint64_t by_smem = (uint64_t)ws->smem_per_sm / (h.smem + 1024);
    per_sm = by_smem < per_sm ? by_smem : per_sm;
    return (uint64_t)ws->sms * (per_sm ? per_sm : 1);
}

/* At least `pieces` per tile (and at most rows_min, or pieces): the count whose blocks fill
 * their last wave best, the smallest unless a larger one fills clearly better (each piece
 * costs a zeroing and a flush of its shared counters). */
uint64_t fill_pieces(uint64_t pieces, uint64_t rows_min, uint64_t tables, uint64_t slots)
{
    uint64_t best = pieces;
    double best_fill = 0;
    const uint64_t top = rows_min > pieces ? rows_min : pieces;
    for (uint64_t p = pieces; p <= top && p < pieces + 16; p++) {
        const uint64_t blocks = tables * p, waves = (blocks + slots - 1) / slots;
        const double fill = (double)blocks / (double)(waves * slots);
        if (fill > best_fill + 0.05) {
            best = p;
            best_fill = fill;
        }
    }
    return best;
}

/* The histogram kernel for this sample type, counter width, packing and bin (a bin per value in
 * every unit of the batch, or not), with its shared memory allowed. */
template <typename T, typename C>
int hist_kernel_for(const Batch &b, bool packed, size_t smem,
                    void (**k)(const T *, Batch, uint32_t, uint32_t, C *), char *msg,
                    size_t msg_len)
{
    bool ident = true;
    for (uint32_t i = 0; i < b.units; i++)
        ident = ident && (b.u[i].ident || b.u[i].lo > b.u[i].hi); /* empty: counts nothing */
    if (ident)
        *k = packed ? hist_kernel<T, 1, C, 1> : hist_kernel<T, 0, C, 1>;
    else
        *k = packed ? hist_kernel<T, 1, C, 0> : hist_kernel<T, 0, C, 0>;
    DH_CUDA_CK(dh_cuda_allow_smem((const void *)*k, smem),
               "histogram kernel, shared memory size");
    return 0;
}

/* The reach's two words (clahe_cuda_tables.cuh) after the batch's 32-bit histograms. */
uint32_t *reach_words(const dh_clahe_cuda_workspace *ws, const Batch &b)
{
    return (uint32_t *)ws->d_hist + (size_t)b.units * b.tiles * b.pitch;
}

/* The batch's tile histograms and tables: 32-bit counters and the segmented table kernels of
 * clahe_cuda_tables.cuh (narrow; their reach too), or, for tiles of 2^32 samples or more,
 * 64-bit counters and the global equalization's table kernel (dh_eq_lut_build_cuda). Tables
 * into ws->d_tables. */
template <typename T>
int tables_of_batch(dh_clahe_cuda_workspace *ws, const T *data, const Batch &b, bool narrow,
                    bool packed, uint32_t levels, double clip, cudaStream_t stream, char *msg,
                    size_t msg_len)
{
    const HistShape h = hist_shape(b.stride, packed);
    const uint32_t tables = b.units * b.tiles, blocks = tables * b.pieces;
    const size_t counter = narrow ? 4 : 8, reach = narrow ? 2 * sizeof(uint32_t) : 0;
    DH_CUDA_CK(cudaMemsetAsync(ws->d_hist, 0, (size_t)tables * b.pitch * counter + reach, stream),
               "zeroing histograms");
    if (narrow) {
        void (*k)(const T *, Batch, uint32_t, uint32_t, uint32_t *);
        if (hist_kernel_for(b, packed, h.smem, &k, msg, msg_len) != 0)
            return -1;
        k<<<blocks, h.threads, h.smem, stream>>>(data, b, h.copies, h.words,
                                                 (uint32_t *)ws->d_hist);
        DH_CUDA_CK(cudaGetLastError(), "tile histogram kernel");
        namespace tk = dh_clahe_tables;
        tk::Args a = {};
        for (uint32_t k2 = 0; k2 < b.units; k2++)
            a.bins[k2] = b.u[k2].bins;
        a.tiles = b.tiles;
        a.stride = b.stride;
        a.pitch = b.pitch;
        a.segs = (b.stride + tk::kSeg - 1) / tk::kSeg;
        a.levels = levels;
        a.clip = clip;
        const uint32_t *hist = (const uint32_t *)ws->d_hist;
        const unsigned grid = tables * a.segs;
        tk::seg_span_kernel<<<grid, tk::kThreads, 0, stream>>>(hist, a, ws->d_segs,
                                                               reach_words(ws, b));
        DH_CUDA_CK(cudaGetLastError(), "table span kernel");
        if (clip > 0) {
            tk::seg_capped_kernel<<<grid, tk::kThreads, 0, stream>>>(hist, a, ws->d_segs);
            DH_CUDA_CK(cudaGetLastError(), "table clipping kernel");
        }
        tk::seg_table_kernel<<<grid, tk::kThreads, 0, stream>>>(hist, a, ws->d_segs,
                                                                reach_words(ws, b),
                                                                ws->d_tables);
        DH_CUDA_CK(cudaGetLastError(), "table kernel");
        return 0;
    }
    void (*k)(const T *, Batch, uint32_t, uint32_t, unsigned long long *);
    if (hist_kernel_for(b, packed, h.smem, &k, msg, msg_len) != 0)
        return -1;
    k<<<blocks, h.threads, h.smem, stream>>>(data, b, h.copies, h.words,
                                             (unsigned long long *)ws->d_hist);
    DH_CUDA_CK(cudaGetLastError(), "tile histogram kernel");
    prepare_tables_kernel<<<tables, 256, 0, stream>>>(b, (unsigned long long *)ws->d_hist,
                                                      ws->d_windows);
    DH_CUDA_CK(cudaGetLastError(), "empty tile kernel");
    return dh_eq_lut_build_cuda((const uint64_t *)ws->d_hist, tables, 0, b.stride, ws->d_windows,
                                levels, clip, ws->d_tables, stream, msg, msg_len);
}

/* A volume's mapping through clahe_cuda_volume.cuh (its bound and a window that is not empty
 * checked by the caller): one wave of blocks walking the rows, the bin by subtraction where the
 * window has one per value. */
template <typename T>
void map_volume(const T *data, const Batch &b, const dh_clahe_axis_weight *axes,
                const uint4 *pairs, uint16_t *d_out, int sms, cudaStream_t stream)
{
    namespace vm = dh_clahe_volume;
    const Unit &u = b.u[0];
    const unsigned rt = vm::row_threads(b.nx), rows = vm::kThreads / rt;
    const dim3 block(rt, rows), grid(vm::map_blocks(sms, rows, (uint64_t)b.ny * b.nz));
    const uint32_t step = grid.x * rows; /* rows the grid maps at once */
    const vm::Args a = {u.lo, u.hi, (uint32_t)(u.hi - u.lo), u.bins, b.top, u.magic,
                        b.nx, b.ny, b.nz, b.tx, b.ty, b.stride, step % b.ny, step / b.ny,
                        (uint64_t)step * b.nx, (uint64_t)b.tx * b.stride};
    if (u.ident)
        vm::map_kernel<T, 1><<<grid, block, 0, stream>>>(data, a, axes, pairs, d_out);
    else
        vm::map_kernel<T, 0><<<grid, block, 0, stream>>>(data, a, axes, pairs, d_out);
}

template <typename T>
int run_batches(dh_clahe_cuda_workspace *ws, const T *data, Batch &b, const Unit *units,
                uint32_t unit_count, uint32_t per_batch, uint32_t levels, double clip,
                bool narrow, bool packed, bool wide, bool rows, uint16_t *d_out,
                cudaStream_t stream, char *msg, size_t msg_len)
{
    const HistShape h = hist_shape(b.stride, packed);
    if (h.smem > (size_t)ws->smem_optin) {
        snprintf(msg, msg_len, "CLAHE: %u bins need %zu bytes of shared memory, the GPU has %d",
                 b.stride, h.smem, ws->smem_optin);
        return -1;
    }
    for (uint32_t first = 0; first < unit_count; first += per_batch) {
        b.units = unit_count - first < per_batch ? unit_count - first : per_batch;
        b.z0 = first;
        memcpy(b.u, units + first, b.units * sizeof *units);
        if (tables_of_batch(ws, data, b, narrow, packed, levels, clip, stream, msg, msg_len) != 0)
            return -1;
        const uint32_t tables = b.units * b.tiles;
        /* Blocks per table along the bins: at most kQuadBlocks, each walking the reach (a grid
         * over the whole table, mostly outside the reach, cost 82 us of block starts for a
         * 512-tile volume at 65536 bins; session 17). */
        const uint32_t qx = (b.stride + 255) / 256;
        const dim3 qgrid(qx < dh_clahe_tables::kQuadBlocks ? qx : dh_clahe_tables::kQuadBlocks,
                         tables < 65535 ? tables : 65535);
        const uint32_t *reach = narrow ? reach_words(ws, b) : nullptr;
        const size_t n = (size_t)b.nx * b.ny * b.nz * b.units;
        const size_t blocks = (n + 8 * kMapThreads - 1) / (8 * kMapThreads);
        if (b.tz > 1 && rows && b.u[0].lo <= b.u[0].hi) { /* a volume, its window not empty */
            uint4 *pairs = (uint4 *)ws->d_quads;
            dh_clahe_tables::pair_kernel<<<qgrid, 256, 0, stream>>>(
                ws->d_tables, b.tx, b.ty, b.tz, b.stride, reach, pairs);
            DH_CUDA_CK(cudaGetLastError(), "table pair kernel");
            map_volume(data, b, ws->d_axes, pairs, d_out, ws->sms, stream);
            DH_CUDA_CK(cudaGetLastError(), "mapping kernel");
            continue;
        }
        dh_clahe_tables::quad_kernel<<<qgrid, 256, 0, stream>>>(ws->d_tables, b.tx, b.ty,
                                                                 b.tiles, b.stride, tables,
                                                                 reach, ws->d_quads);
        DH_CUDA_CK(cudaGetLastError(), "table quad kernel");
        if (b.tz > 1) { /* one tile across the slices blends as 2D: the same exact value */
            if (wide)
                map_kernel<T, 1, 1><<<(unsigned)blocks, kMapThreads, 0, stream>>>(
                    data, b, ws->d_axes, ws->d_quads, d_out);
            else
                map_kernel<T, 1, 0><<<(unsigned)blocks, kMapThreads, 0, stream>>>(
                    data, b, ws->d_axes, ws->d_quads, d_out);
        } else {
            map_kernel<T, 0, 0><<<(unsigned)blocks, kMapThreads, 0, stream>>>(
                data, b, ws->d_axes, ws->d_quads, d_out);
        }
        DH_CUDA_CK(cudaGetLastError(), "mapping kernel");
    }
    return 0;
}

} // namespace

extern "C" {

dh_clahe_cuda_workspace *dh_clahe_cuda_workspace_new(void)
{
    return (dh_clahe_cuda_workspace *)calloc(1, sizeof(dh_clahe_cuda_workspace));
}

void dh_clahe_cuda_workspace_free(dh_clahe_cuda_workspace *ws)
{
    if (!ws)
        return;
    cudaFree(ws->d_hist);
    cudaFree(ws->d_tables);
    cudaFree(ws->d_quads);
    cudaFree(ws->d_segs);
    cudaFree(ws->d_windows);
    cudaFree(ws->d_axes);
    free(ws);
}

int dh_clahe_cuda(dh_clahe_cuda_workspace *ws, const void *d_data, int is_signed, int32_t base,
                  uint32_t len, const dh_clahe_shape *shape, const dh_eq_window *windows,
                  uint32_t bins, uint32_t levels, double clip_limit, uint16_t *d_out,
                  void *stream, char *msg, size_t msg_len)
{
    if (!ws || !d_data || !windows || !d_out || !shape_ok(shape) || len == 0 || len > 65536 ||
        bins > 65536 || levels < 2 || levels > 65536 || !(clip_limit >= 0)) {
        snprintf(msg, msg_len, "CLAHE: bad arguments");
        return -1;
    }
    const dh_clahe_shape *s = shape;
    const uint32_t unit_count = s->volume ? 1 : s->nz;
    const uint32_t nzu = s->volume ? s->nz : 1, tz = s->volume ? s->tz : 1;
    const uint64_t tiles = (uint64_t)s->tx * s->ty * tz;
    if (!ws->sms) {
        int dev = 0;
        DH_CUDA_CK(cudaGetDevice(&dev), "cudaGetDevice");
        DH_CUDA_CK(cudaDeviceGetAttribute(&ws->sms, cudaDevAttrMultiProcessorCount, dev),
                   "SM count");
        DH_CUDA_CK(cudaDeviceGetAttribute(&ws->smem_optin,
                                          cudaDevAttrMaxSharedMemoryPerBlockOptin, dev),
                   "shared memory size");
        DH_CUDA_CK(cudaDeviceGetAttribute(&ws->smem_per_sm,
                                          cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev),
                   "shared memory per multiprocessor");
    }

    /* The units: windows clamped to the table range, bins never more than one per value. */
    Unit *units = (Unit *)malloc(unit_count * sizeof *units);
    if (!units) {
        snprintf(msg, msg_len, "CLAHE: out of memory");
        return -1;
    }
    uint32_t stride = 1;
    const int64_t top = (int64_t)base + len - 1;
    for (uint32_t k = 0; k < unit_count; k++) {
        Unit u = {};
        u.lo = windows[k].lo < base ? base : windows[k].lo;
        u.hi = (int64_t)windows[k].hi > top ? (int32_t)top : windows[k].hi;
        u.bins = 1;
        if (u.lo <= u.hi) {
            const uint32_t width = (uint32_t)((int64_t)u.hi - u.lo + 1);
            u.bins = dh_clahe_bins_used(bins, width);
            u.magic = dh_clahe_bin_magic(width);
            u.ident = u.bins == width;
        }
        stride = u.bins > stride ? u.bins : stride;
        units[k] = u;
    }

    /* Counters: 32 bits unless a tile holds 2^32 samples or more. */
    const uint64_t tile_max = (uint64_t)((s->nx + s->tx - 1) / s->tx) *
                              ((s->ny + s->ty - 1) / s->ty) * ((nzu + tz - 1) / tz);
    const bool narrow = tile_max <= UINT32_MAX;
    const uint32_t pitch = narrow ? (stride + 1 + 7) / 8 * 8 : stride + 2;
    const uint32_t segs = (stride + dh_clahe_tables::kSeg - 1) / dh_clahe_tables::kSeg;
    /* The volume mapping: the exact 64-bit blend (wide), clahe_cuda_volume.cuh's row-factored
     * one (rows; its tables read as 16-byte pairs), or clahe.h's fast one. */
    const uint64_t dx = max_den(s->nx, s->tx), dy = max_den(s->ny, s->ty), dz = max_den(nzu, tz);
    const bool wide = s->volume && !dh_clahe_blend3_fast_ok(dx, dy, dz);
    const bool rows = s->volume && dh_clahe_blend3_row_ok(dx, dy, dz);
    const uint64_t quad = rows ? sizeof(uint4) : sizeof(uint2);
    /* Scratch for a batch of units, bounded by kBatchBytes (one unit at least). */
    const uint64_t per_unit =
        tiles * ((uint64_t)pitch * (narrow ? 4 : 8) + (uint64_t)stride * (2 + quad) +
                 sizeof(dh_eq_window) + segs * sizeof(dh_clahe_tables::Seg));
    uint64_t per_batch = kBatchBytes / per_unit;
    per_batch = per_batch < 1 ? 1 : per_batch > kMaxUnits ? kMaxUnits : per_batch;
    per_batch = per_batch > unit_count ? unit_count : per_batch;
    const uint64_t batch_tables = per_batch * tiles;

    Batch b = {};
    b.nz = nzu;
    b.tz = tz;
    b.nx = s->nx;
    b.ny = s->ny;
    b.tx = s->tx;
    b.ty = s->ty;
    b.tiles = (uint32_t)tiles;
    b.stride = stride;
    b.pitch = pitch;
    b.top = levels - 1;
    b.total = (size_t)s->nx * s->ny * s->nz;
    /* Pieces per tile: few enough samples each for the counters, and as many more as fill the
     * GPU's block slots evenly. */
    const bool packed = stride > kWideMaxBins;
    const uint32_t wmax = (s->nx + s->tx - 1) / s->tx;
    const uint64_t rows_max = (uint64_t)((s->ny + s->ty - 1) / s->ty) * ((nzu + tz - 1) / tz);
    const uint64_t rows_min = (uint64_t)(s->ny / s->ty) * (nzu / tz);
    const uint64_t rows_per_piece = (packed ? kPieceMaxPacked : kPieceMaxWide) / wmax;
    uint64_t pieces = (rows_max + rows_per_piece - 1) / rows_per_piece;
    pieces = fill_pieces(pieces, rows_min, batch_tables, hist_slots(ws, stride, packed));
    b.pieces = (uint32_t)pieces;
    if (tiles > UINT32_MAX || batch_tables * pieces > INT32_MAX ||
        batch_tables * segs > INT32_MAX) {
        free(units);
        snprintf(msg, msg_len, "CLAHE: %llu tiles are more than the GPU twin launches",
                 (unsigned long long)tiles);
        return -1;
    }

    const size_t axes = (size_t)s->nx + s->ny + nzu;
    int rc = 0;
    if (grow((void **)&ws->d_hist, &ws->hist_bytes,
             batch_tables * pitch * (narrow ? 4 : 8) + 2 * sizeof(uint32_t) /* the reach */,
             "allocating tile histograms", msg, msg_len) != 0 ||
        grow((void **)&ws->d_tables, &ws->table_bytes, batch_tables * stride * 2,
             "allocating tile tables", msg, msg_len) != 0 ||
        grow((void **)&ws->d_quads, &ws->quad_bytes, batch_tables * stride * quad,
             "allocating tile table quads", msg, msg_len) != 0 ||
        grow((void **)&ws->d_segs, &ws->seg_bytes,
             batch_tables * segs * sizeof(dh_clahe_tables::Seg), "allocating table segments",
             msg, msg_len) != 0 ||
        grow((void **)&ws->d_windows, &ws->window_bytes, batch_tables * sizeof(dh_eq_window),
             "allocating table windows", msg, msg_len) != 0 ||
        grow((void **)&ws->d_axes, &ws->axes_bytes, axes * sizeof(dh_clahe_axis_weight),
             "allocating axis weights", msg, msg_len) != 0)
        rc = -1;
    cudaStream_t st = (cudaStream_t)stream;
    const uint32_t key[6] = {s->nx, s->tx, s->ny, s->ty, nzu, tz};
    if (rc == 0 && memcmp(key, ws->axes_key, sizeof key) != 0) {
        axes_kernel<<<(unsigned)((axes + 255) / 256), 256, 0, st>>>(s->nx, s->tx, s->ny, s->ty,
                                                                   nzu, tz, ws->d_axes);
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess)
            rc = dh_cuda_fail(msg, msg_len, DH_CUDA_PREFIX, "axis weight kernel", e);
        else
            memcpy(ws->axes_key, key, sizeof key);
    }
    if (rc == 0)
        rc = is_signed ? run_batches(ws, (const int16_t *)d_data, b, units, unit_count,
                                     (uint32_t)per_batch, levels, clip_limit, narrow, packed, wide,
                                     rows, d_out, st, msg, msg_len)
                       : run_batches(ws, (const uint16_t *)d_data, b, units, unit_count,
                                     (uint32_t)per_batch, levels, clip_limit, narrow, packed, wide,
                                     rows, d_out, st, msg, msg_len);
    if (rc != 0)
        memset(ws->axes_key, 0, sizeof ws->axes_key); /* a failed launch may have left them */
    free(units);
    return rc;
}

} // extern "C"
