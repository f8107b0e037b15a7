// SPDX-License-Identifier: MIT
/*
 * clahe.h: what both twins of contrast-limited adaptive histogram equalization share: the tiling,
 * the bin of a stored value, the interpolation weights between tile centres and the one rounding
 * of the blend, as inline integer functions the host and the device compile alike.
 * docs/equalization.md ("Adaptive equalization (CLAHE)") states the definition; these functions
 * are it, and a GPU twin must equal them bit for bit. The tables themselves are the global ones
 * (dh_eq_lut_build of equalize_cpu.h over a tile's histogram).
 *
 * Positions along an axis are doubled so that every centre is an integer: pixel x sits at
 * 2x + 1, tile i (pixels s_i .. s_{i+1} - 1) has its centre at s_i + s_{i+1}.
 */
#ifndef DH_KERNELS_CLAHE_H
#define DH_KERNELS_CLAHE_H

#include <stdint.h>

#include "equalize_table.h"

#ifdef __cplusplus
extern "C" {
#endif

/* First pixel of tile i of `tiles` along an axis of n pixels (1 <= tiles <= n): the tiles split
 * the axis as evenly as integers allow, floor(i * n / tiles), so their sizes differ by at most
 * one pixel and no thin remainder tile is left at an edge. dh_clahe_tile_start(n, tiles, tiles)
 * is n. */
static inline DH_EQ_HD uint32_t dh_clahe_tile_start(uint32_t n, uint32_t tiles, uint32_t i)
{
    return (uint32_t)((uint64_t)i * n / tiles);
}

/* The tile that holds pixel x: the largest i with tile_start(i) <= x. */
static inline DH_EQ_HD uint32_t dh_clahe_tile_of(uint32_t n, uint32_t tiles, uint32_t x)
{
    uint32_t i = (uint32_t)(((uint64_t)x * tiles + tiles) / n); /* an upper bound, off by <= 1 */
    if (i >= tiles)
        i = tiles - 1;
    while (dh_clahe_tile_start(n, tiles, i) > x)
        i--;
    return i;
}

/* How pixel x of an axis blends between two neighbouring tiles: weight (den - w1) / den for
 * tile i0 and w1 / den for tile i1. Between the centres of tiles i and i + 1 that is the linear
 * interpolation of the doubled position; before the first centre and after the last one the
 * pixel takes the nearest tile alone (i0 == i1, w1 = 0, den = 1): clamping at the borders. */
typedef struct dh_clahe_axis_weight {
    uint32_t i0, i1;
    uint32_t w1, den;
} dh_clahe_axis_weight;

static inline DH_EQ_HD dh_clahe_axis_weight dh_clahe_axis_at(uint32_t n, uint32_t tiles,
                                                             uint32_t x)
{
    dh_clahe_axis_weight a;
    uint32_t t = dh_clahe_tile_of(n, tiles, x);
    uint64_t p = 2 * (uint64_t)x + 1;
    uint64_t c = (uint64_t)dh_clahe_tile_start(n, tiles, t) + dh_clahe_tile_start(n, tiles, t + 1);
    uint32_t lo = p < c ? t - 1 : t; /* the centre at or before p, when there is one */
    if ((p < c && t == 0) || (p >= c && t == tiles - 1)) {
        a.i0 = a.i1 = t;
        a.w1 = 0;
        a.den = 1;
        return a;
    }
    uint64_t c0 = (uint64_t)dh_clahe_tile_start(n, tiles, lo) +
                  dh_clahe_tile_start(n, tiles, lo + 1);
    uint64_t c1 = (uint64_t)dh_clahe_tile_start(n, tiles, lo + 1) +
                  dh_clahe_tile_start(n, tiles, lo + 2);
    a.i0 = lo;
    a.i1 = lo + 1;
    a.w1 = (uint32_t)(p - c0);
    a.den = (uint32_t)(c1 - c0);
    return a;
}

/* The histogram bin (and table entry) of a stored value v inside the window [lo, hi]
 * (lo <= v <= hi): floor((v - lo) * bins / (hi - lo + 1)). With bins = hi - lo + 1 every value
 * has its own bin. */
static inline DH_EQ_HD uint32_t dh_clahe_bin(int32_t v, int32_t lo, int32_t hi, uint32_t bins)
{
    return (uint32_t)((uint64_t)(v - lo) * bins / (uint64_t)((int64_t)hi - lo + 1));
}

/* The number of bins of a window of `width` values when `bins` are asked for (0: one per value):
 * never more than one per value. */
static inline DH_EQ_HD uint32_t dh_clahe_bins_used(uint32_t bins, uint32_t width)
{
    return bins == 0 || bins > width ? width : bins;
}

/* The one rounding of the blend: the exact value num / den rounded half up,
 * floor((2 num + den) / (2 den)). num / den is a convex blend of table entries, so the result
 * is in the tables' range 0 .. levels - 1. In 64 bits for 2D (num < 2^51), 128 for 3D. */
static inline DH_EQ_HD uint16_t dh_clahe_round(uint64_t num, uint64_t den)
{
    return (uint16_t)((2 * num + den) / (2 * den));
}

static inline DH_EQ_HD uint16_t dh_clahe_round_wide(unsigned __int128 num, unsigned __int128 den)
{
    return (uint16_t)((2 * num + den) / (2 * den));
}

/* The blend of a 2D pixel: tables t00 (i0 along x, i0 along y), t10, t01, t11, weighted by the
 * axis weights ax, ay. Exact up to den_x * den_y * 65535 < 2^51. */
static inline DH_EQ_HD uint16_t dh_clahe_blend2(dh_clahe_axis_weight ax, dh_clahe_axis_weight ay,
                                                uint32_t t00, uint32_t t10, uint32_t t01,
                                                uint32_t t11)
{
    uint64_t wx0 = ax.den - ax.w1, wy0 = ay.den - ay.w1;
    uint64_t row0 = wx0 * t00 + (uint64_t)ax.w1 * t10;
    uint64_t row1 = wx0 * t01 + (uint64_t)ax.w1 * t11;
    uint64_t num = wy0 * row0 + (uint64_t)ay.w1 * row1;
    return dh_clahe_round(num, (uint64_t)ax.den * ay.den);
}

/* The blend of a 3D pixel: t[k] for k = dx + 2 dy + 4 dz (dx, dy, dz 0 for i0, 1 for i1 along
 * that axis). The third product exceeds 64 bits, so it is taken in 128. */
static inline DH_EQ_HD uint16_t dh_clahe_blend3(dh_clahe_axis_weight ax, dh_clahe_axis_weight ay,
                                                dh_clahe_axis_weight az, const uint32_t t[8])
{
    uint64_t wx0 = ax.den - ax.w1, wy0 = ay.den - ay.w1, wz0 = az.den - az.w1;
    uint64_t plane[2];
    for (int dz = 0; dz < 2; dz++) {
        const uint32_t *q = t + 4 * dz;
        uint64_t row0 = wx0 * q[0] + (uint64_t)ax.w1 * q[1];
        uint64_t row1 = wx0 * q[2] + (uint64_t)ax.w1 * q[3];
        plane[dz] = wy0 * row0 + (uint64_t)ay.w1 * row1;
    }
    unsigned __int128 num = (unsigned __int128)wz0 * plane[0] +
                            (unsigned __int128)az.w1 * plane[1];
    unsigned __int128 den = (unsigned __int128)((uint64_t)ax.den * ay.den) * az.den;
    return dh_clahe_round_wide(num, den);
}

#ifdef __cplusplus
}
#endif
#endif /* DH_KERNELS_CLAHE_H */
