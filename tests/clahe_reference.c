// SPDX-License-Identifier: MIT
/*
 * clahe_reference.c: the naive CLAHE of clahe_reference.h. Only the documented formulas: no
 * clahe.h function, no equalize_cpu.h function.
 */
#include "clahe_reference.h"

#include <stdlib.h>
#include <string.h>

#include "test_support.h"

typedef struct ref_axis {
    uint32_t n, tiles;
} ref_axis;

static uint32_t ref_start(ref_axis a, uint32_t i)
{
    return (uint32_t)((uint64_t)i * a.n / a.tiles);
}

/* Neighbouring tiles of pixel x and the weight of the second one as num / den, found by scanning
 * the doubled centres s_i + s_{i+1} against the doubled pixel centre 2x + 1. */
static void ref_neighbours(ref_axis a, uint32_t x, uint32_t *i0, uint32_t *i1, int64_t *num,
                           int64_t *den)
{
    int64_t p = 2 * (int64_t)x + 1;
    int64_t first = ref_start(a, 0) + ref_start(a, 1);
    int64_t last = (int64_t)ref_start(a, a.tiles - 1) + ref_start(a, a.tiles);
    *num = 0;
    *den = 1;
    if (p <= first) {
        *i0 = *i1 = 0;
        return;
    }
    if (p >= last) {
        *i0 = *i1 = a.tiles - 1;
        return;
    }
    for (uint32_t i = 0; i + 1 < a.tiles; i++) {
        int64_t c0 = (int64_t)ref_start(a, i) + ref_start(a, i + 1);
        int64_t c1 = (int64_t)ref_start(a, i + 1) + ref_start(a, i + 2);
        if (c0 <= p && p < c1) {
            *i0 = i;
            *i1 = i + 1;
            *num = p - c0;
            *den = c1 - c0;
            return;
        }
    }
    ck_abort_msg("pixel %u between no centres", x);
}

/* The textbook contrast limit (test_support.h), then the equalization formula from a running sum. */
static void ref_table(const uint64_t *h, uint32_t bins, uint32_t levels, double clip,
                      uint16_t *table)
{
    int64_t first = -1; /* the lowest bin present */
    uint64_t n = 0;
    for (uint32_t b = 0; b < bins; b++) {
        if (h[b] && first < 0)
            first = b;
        n += h[b];
    }
    if (n == 0) { /* empty tile: the flat histogram's ramp */
        for (uint32_t b = 0; b < bins; b++)
            table[b] = bins == 1 ? 0 : (uint16_t)((uint64_t)b * (levels - 1) / (bins - 1));
        return;
    }
    uint64_t *c = calloc(bins, sizeof *c);
    if (clip > 0)
        dh_test_reference_clip(h, bins, 0, bins - 1, clip, c);
    else
        memcpy(c, h, bins * sizeof *c);
    uint64_t cdf_min = c[first], cdf = 0;
    for (uint32_t b = 0; b < bins; b++) {
        cdf += c[b];
        table[b] = cdf <= cdf_min || n == cdf_min
                       ? 0
                       : (uint16_t)((unsigned __int128)(cdf - cdf_min) * (levels - 1) /
                                    (n - cdf_min));
    }
    free(c);
}


static int32_t ref_sample(const dh_test_clahe_case *c, size_t i)
{
    return c->is_signed ? ((const int16_t *)c->data)[i] : ((const uint16_t *)c->data)[i];
}

/* One equalization unit (a slice, or the volume) of the reference. */
static void ref_unit(const dh_test_clahe_case *c, uint32_t z0, uint32_t nz, uint32_t tz, dh_eq_window w,
                     uint16_t *out)
{
    int64_t lo = w.lo < c->base ? c->base : w.lo;
    int64_t hi = w.hi > c->base + (int64_t)c->len - 1 ? c->base + (int64_t)c->len - 1 : w.hi;
    ref_axis ax = {c->s.nx, c->s.tx}, ay = {c->s.ny, c->s.ty}, az = {nz, tz};
    uint32_t bins = 1;
    if (lo <= hi)
        bins = c->bins && c->bins < hi - lo + 1 ? c->bins : (uint32_t)(hi - lo + 1);
    size_t tiles = (size_t)c->s.tx * c->s.ty * tz;
    uint16_t *tables = malloc(tiles * bins * sizeof *tables);
    uint64_t *h = malloc(bins * sizeof *h);
    for (uint32_t iz = 0; iz < tz; iz++)
        for (uint32_t iy = 0; iy < c->s.ty; iy++)
            for (uint32_t ix = 0; ix < c->s.tx; ix++) {
                memset(h, 0, bins * sizeof *h);
                for (uint32_t z = ref_start(az, iz); z < ref_start(az, iz + 1); z++)
                    for (uint32_t y = ref_start(ay, iy); y < ref_start(ay, iy + 1); y++)
                        for (uint32_t x = ref_start(ax, ix); x < ref_start(ax, ix + 1); x++) {
                            int64_t v = ref_sample(
                                c, ((size_t)(z0 + z) * c->s.ny + y) * c->s.nx + x);
                            if (v >= lo && v <= hi)
                                h[(v - lo) * bins / (hi - lo + 1)]++;
                        }
                size_t k = ((size_t)iz * c->s.ty + iy) * c->s.tx + ix;
                ref_table(h, bins, c->levels, c->clip, tables + k * bins);
            }
    for (uint32_t z = 0; z < nz; z++)
        for (uint32_t y = 0; y < c->s.ny; y++)
            for (uint32_t x = 0; x < c->s.nx; x++) {
                size_t at = ((size_t)(z0 + z) * c->s.ny + y) * c->s.nx + x;
                int64_t v = ref_sample(c, at);
                if (v < lo || v > hi) {
                    out[at] = v < lo ? 0 : (uint16_t)(c->levels - 1);
                    continue;
                }
                uint32_t b = (uint32_t)((v - lo) * bins / (hi - lo + 1));
                uint32_t xi[2], yi[2], zi[2];
                int64_t xn, xd, yn, yd, zn, zd;
                ref_neighbours(ax, x, &xi[0], &xi[1], &xn, &xd);
                ref_neighbours(ay, y, &yi[0], &yi[1], &yn, &yd);
                ref_neighbours(az, z, &zi[0], &zi[1], &zn, &zd);
                const int64_t wxs[2] = {xd - xn, xn}, wys[2] = {yd - yn, yn}, wzs[2] = {zd - zn, zn};
                __int128 num = 0, den = (__int128)xd * yd * zd;
                for (int k = 0; k < 8; k++) {
                    size_t t = ((size_t)zi[k >> 2] * c->s.ty + yi[(k >> 1) & 1]) * c->s.tx +
                               xi[k & 1];
                    num += (__int128)wxs[k & 1] * wys[(k >> 1) & 1] * wzs[k >> 2] *
                           tables[t * bins + b];
                }
                out[at] = (uint16_t)((2 * num + den) / (2 * den)); /* half up */
            }
    free(h);
    free(tables);
}

void dh_test_clahe_reference(const dh_test_clahe_case *c, uint16_t *out)
{
    if (c->s.volume) {
        ref_unit(c, 0, c->s.nz, c->s.tz, c->windows[0], out);
        return;
    }
    for (uint32_t z = 0; z < c->s.nz; z++)
        ref_unit(c, z, 1, 1, c->windows[z], out);
}
