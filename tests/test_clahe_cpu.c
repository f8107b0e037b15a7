// SPDX-License-Identifier: MIT
/*
 * test_clahe_cpu.c: CLAHE's CPU twin (kernels/clahe_cpu.h) against a naive reference written
 * from docs/equalization.md ("Adaptive equalization (CLAHE)") without clahe.h or the equalize
 * code: tiles found by scanning, a textbook clip-and-redistribute, the equalization formula from
 * a running sum, and each pixel blended in exact rationals between the centres it lies between.
 * Also: one tile is global equalization with the same clip, and tiles that do not divide the image
 * leave no seam.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clahe_cpu.h"
#include "equalize_cpu.h"
#include "test_support.h"

/* ---- the reference ---- */

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

typedef struct ref_case {
    const void *data;
    int is_signed;
    int32_t base;
    uint32_t len;
    dh_clahe_shape s;
    const dh_eq_window *windows;
    uint32_t bins, levels;
    double clip;
} ref_case;

static int32_t ref_sample(const ref_case *c, size_t i)
{
    return c->is_signed ? ((const int16_t *)c->data)[i] : ((const uint16_t *)c->data)[i];
}

/* One equalization unit (a slice, or the volume) of the reference. */
static void ref_unit(const ref_case *c, uint32_t z0, uint32_t nz, uint32_t tz, dh_eq_window w,
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

static void reference_clahe(const ref_case *c, uint16_t *out)
{
    if (c->s.volume) {
        ref_unit(c, 0, c->s.nz, c->s.tz, c->windows[0], out);
        return;
    }
    for (uint32_t z = 0; z < c->s.nz; z++)
        ref_unit(c, z, 1, 1, c->windows[z], out);
}

/* ---- data ---- */

enum { KIND_RANDOM, KIND_CT, KIND_CONSTANT, KIND_TWO, KIND_EXTREME, KINDS };

static void fill(uint16_t *d, size_t n, int kind, int is_signed, uint32_t bits, dh_test_rng *rng)
{
    int32_t base;
    uint32_t len;
    dh_eq_table_range(bits, is_signed, &base, &len);
    if (kind == KIND_CT) {
        dh_test_fill_ct_like(d, n, dh_test_rng_next(rng));
        for (size_t i = 0; i < n; i++) /* into the format's range: CT-like is 12-bit */
            d[i] = (uint16_t)(base + (int32_t)(d[i] % len));
        return;
    }
    int32_t a = base + (int32_t)dh_test_rng_below(rng, len);
    int32_t b = base + (int32_t)dh_test_rng_below(rng, len);
    for (size_t i = 0; i < n; i++) {
        int32_t v = base + (int32_t)dh_test_rng_below(rng, len);
        if (kind == KIND_CONSTANT)
            v = a;
        else if (kind == KIND_TWO)
            v = dh_test_rng_below(rng, 3) ? a : b;
        else if (kind == KIND_EXTREME)
            v = dh_test_rng_below(rng, 2) ? base : base + (int32_t)len - 1;
        d[i] = (uint16_t)v; /* the int16_t bit pattern when signed */
    }
}

static dh_eq_window random_window(dh_test_rng *rng, int32_t base, uint32_t len, int full)
{
    if (full) {
        dh_eq_window w = {base, base + (int32_t)len - 1};
        return w;
    }
    int32_t a = base + (int32_t)dh_test_rng_below(rng, len);
    int32_t b = base + (int32_t)dh_test_rng_below(rng, len);
    dh_eq_window w = {a < b ? a : b, a < b ? b : a};
    return w;
}

/* Runs the twin (threads 1 and 3) and the reference on one case and compares every pixel. */
static void check_case(const ref_case *c, const char *what)
{
    size_t n = (size_t)c->s.nx * c->s.ny * c->s.nz;
    uint16_t *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    reference_clahe(c, want);
    for (int threads = 1; threads <= 3; threads += 2) {
        memset(got, 0xab, n * sizeof *got);
        ck_assert_int_eq(dh_clahe_cpu(c->data, c->is_signed, c->base, c->len, &c->s, c->windows,
                                      c->bins, c->levels, c->clip, threads, got),
                         0);
        for (size_t i = 0; i < n; i++)
            ck_assert_msg(got[i] == want[i] && got[i] < c->levels,
                          "%s threads %d pixel %zu: %u != %u", what, threads, i, got[i], want[i]);
    }
    free(want);
    free(got);
}

/* A run of cases over one shape: every kind of data, signs, bin counts, clips and windows. */
static void sweep(dh_clahe_shape s, const uint32_t *bins, size_t nbins, uint64_t seed)
{
    dh_test_rng rng;
    dh_test_rng_seed(&rng, seed);
    size_t n = (size_t)s.nx * s.ny * s.nz;
    uint16_t *data = malloc(n * sizeof *data);
    dh_eq_window *windows = malloc(s.nz * sizeof *windows);
    static const struct { uint32_t bits; int sign; } fmt[] = {{12, 0}, {16, 1}, {16, 0}, {10, 1}};
    static const double clips[] = {0, 1, 2.5};
    for (int kind = 0; kind < KINDS; kind++)
        for (size_t f = 0; f < 4; f++)
            for (size_t ib = 0; ib < nbins; ib++) {
                ref_case c = {data, fmt[f].sign, 0, 0, s, windows, bins[ib], 0, 0};
                dh_eq_table_range(fmt[f].bits, fmt[f].sign, &c.base, &c.len);
                fill(data, n, kind, fmt[f].sign, fmt[f].bits, &rng);
                for (uint32_t z = 0; z < s.nz; z++)
                    windows[z] = random_window(&rng, c.base, c.len, (ib + kind + z) % 3 != 0);
                c.levels = (ib + f) % 2 ? 256 : 1u << fmt[f].bits;
                c.clip = clips[(kind + ib) % 3];
                char what[160];
                snprintf(what, sizeof what,
                         "%ux%ux%u tiles %ux%ux%u %s kind %d bits %u signed %d bins %u clip %g",
                         s.nx, s.ny, s.nz, s.tx, s.ty, s.tz, s.volume ? "3D" : "2D", kind,
                         fmt[f].bits, fmt[f].sign, bins[ib], c.clip);
                check_case(&c, what);
            }
    free(data);
    free(windows);
}

START_TEST(matches_reference_2d)
{
    static const uint32_t many[] = {0, 1, 7, 256, 4096, 65536}, few[] = {0, 5, 256};
    /* Grids that divide and that do not, tiles of 1, 2 and 3 pixels, one tile, odd sizes. */
    dh_clahe_shape shapes[] = {{37, 23, 2, 4, 3, 1, 0}, {40, 24, 1, 8, 8, 1, 0},
                               {13, 11, 2, 1, 1, 1, 0}, {1, 1, 1, 1, 1, 1, 0},
                               {29, 7, 1, 7, 2, 1, 0},  {31, 17, 1, 31, 17, 1, 0}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int small_tiles = shapes[i].tx * shapes[i].ty > 64;
        sweep(shapes[i], small_tiles ? few : many, small_tiles ? 3 : 6, 100 + i);
    }
    /* Tiles of at most 2 and 3 pixels, by size. */
    for (uint32_t size = 2; size <= 3; size++) {
        dh_clahe_shape s = {19, 14, 1, dh_clahe_tiles_for_size(19, size),
                            dh_clahe_tiles_for_size(14, size), 1, 0};
        sweep(s, few, 3, 200 + size);
    }
}
END_TEST

START_TEST(matches_reference_3d)
{
    static const uint32_t many[] = {0, 3, 256, 65536}, few[] = {0, 17};
    dh_clahe_shape shapes[] = {{17, 13, 9, 3, 2, 4, 1}, {16, 16, 8, 2, 2, 2, 1},
                               {9, 7, 5, 1, 1, 1, 1},   {11, 6, 7, 11, 3, 7, 1},
                               {5, 4, 3, 2, 4, 1, 1}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int small_tiles = shapes[i].tx * shapes[i].ty * shapes[i].tz > 64;
        sweep(shapes[i], small_tiles ? few : many, small_tiles ? 2 : 4, 300 + i);
    }
}
END_TEST

/* One tile over the whole image (per slice, or the volume) with one bin per value is global
 * equalization: dh_eq_lut_build over the histogram of everything, applied by dh_lut_apply_cpu. */
START_TEST(one_tile_is_global_equalization)
{
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 11);
    const uint32_t nx = 61, ny = 35, nz = 4;
    size_t slice = (size_t)nx * ny, n = slice * nz;
    uint16_t *data = malloc(n * sizeof *data), *got = malloc(n * sizeof *got),
             *want = malloc(n * sizeof *want);
    for (int round = 0; round < 24; round++) {
        int sign = round % 2, volume = round / 2 % 2, kind = round / 4 % KINDS;
        uint32_t bits = sign ? 16 : 12;
        int32_t base;
        uint32_t len;
        dh_eq_table_range(bits, sign, &base, &len);
        fill(data, n, kind, sign, bits, &rng);
        double clip = round % 3 == 0 ? 0 : 0.5 + dh_test_rng_below(&rng, 400) / 100.0;
        dh_eq_window windows[4];
        for (uint32_t z = 0; z < nz; z++)
            windows[z] = random_window(&rng, base, len, round % 3 == 1);
        uint32_t tables = volume ? 1 : nz;
        uint64_t *h = malloc(len * sizeof *h);
        uint16_t *luts = malloc(tables * len * sizeof *luts);
        for (uint32_t t = 0; t < tables; t++) {
            memset(h, 0, len * sizeof *h);
            for (size_t i = t * slice; i < (volume ? n : (t + 1) * slice); i++)
                h[(sign ? (int16_t)data[i] : data[i]) - base]++;
            ck_assert_int_eq(dh_eq_lut_build(h, base, len, windows[t], 4096, clip,
                                             luts + (size_t)t * len),
                             0);
        }
        ck_assert_int_eq(dh_lut_apply_cpu(data, sign, slice, nz, luts, !volume, base, len, 2,
                                          want),
                         0);
        dh_clahe_shape s = {nx, ny, nz, 1, 1, 1, volume};
        ck_assert_int_eq(dh_clahe_cpu(data, sign, base, len, &s, windows, 0, 4096, clip, 2, got),
                         0);
        for (size_t i = 0; i < n; i++)
            ck_assert_msg(got[i] == want[i], "round %d pixel %zu: %u != %u", round, i, got[i],
                          want[i]);
        free(h);
        free(luts);
    }
    free(data);
    free(got);
    free(want);
}
END_TEST

/* No seams where tiles do not divide: along a row of one value the output is the rounded linear
 * interpolation between tile centres, so inside each stretch between two centres (which holds a
 * tile boundary in its middle) consecutive steps differ by at most 1, and outside the first and
 * last centres it is flat. Tiles that differ strongly (their values' ranges shift with the tile)
 * make any jump at a boundary visible. */
START_TEST(no_seams_where_tiles_do_not_divide)
{
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 5);
    const uint32_t nx = 203, ny = 9, tx = 7; /* 203 / 7 = 29: also 201, 202 below */
    for (uint32_t width = 201; width <= nx; width++) {
        uint16_t *data = malloc((size_t)width * ny * sizeof *data);
        uint16_t *out = malloc((size_t)width * ny * sizeof *out);
        for (uint32_t y = 0; y < ny; y++)
            for (uint32_t x = 0; x < width; x++) {
                uint32_t tile = x * tx / width;
                data[(size_t)y * width + x] =
                    y == 0 ? 2000 : (uint16_t)(tile * 500 + dh_test_rng_below(&rng, 1500));
            }
        dh_clahe_shape s = {width, ny, 1, tx, 1, 1, 0};
        dh_eq_window w = {0, 4095};
        ck_assert_int_eq(dh_clahe_cpu(data, 0, 0, 4096, &s, &w, 0, 4096, 2, 1, out), 0);
        int moved = 0;
        for (uint32_t i = 0; i + 1 < tx; i++) { /* the stretch between centres i and i + 1 */
            uint32_t c0 = (dh_clahe_tile_start(width, tx, i) + dh_clahe_tile_start(width, tx, i + 1)) / 2;
            uint32_t c1 = (dh_clahe_tile_start(width, tx, i + 1) + dh_clahe_tile_start(width, tx, i + 2)) / 2;
            int lo = 1 << 30, hi = -(1 << 30);
            for (uint32_t x = c0; x + 1 < c1; x++) {
                int step = (int)out[x + 1] - (int)out[x];
                lo = step < lo ? step : lo;
                hi = step > hi ? step : hi;
            }
            ck_assert_msg(hi - lo <= 1, "width %u stretch %u: steps %d .. %d", width, i, lo, hi);
            moved |= out[c1] != out[c0];
        }
        ck_assert_msg(moved, "the tiles' tables should differ"); /* else the test proves nothing */
        uint32_t first = dh_clahe_tile_start(width, tx, 1) / 2;
        uint32_t last = (dh_clahe_tile_start(width, tx, tx - 1) + width) / 2;
        for (uint32_t x = 0; x < first; x++)
            ck_assert_uint_eq(out[x], out[0]);
        for (uint32_t x = last + 1; x < width; x++)
            ck_assert_uint_eq(out[x], out[width - 1]);
        free(data);
        free(out);
    }
}
END_TEST

START_TEST(tiles_split_evenly_and_bad_arguments_are_refused)
{
    for (uint32_t n = 1; n <= 50; n++)
        for (uint32_t t = 1; t <= n; t++) {
            uint32_t smallest = n, largest = 0;
            for (uint32_t i = 0; i < t; i++) {
                uint32_t size = dh_clahe_tile_start(n, t, i + 1) - dh_clahe_tile_start(n, t, i);
                smallest = size < smallest ? size : smallest;
                largest = size > largest ? size : largest;
            }
            ck_assert_uint_eq(dh_clahe_tile_start(n, t, t), n);
            ck_assert_uint_ge(smallest, 1);
            ck_assert_uint_le(largest - smallest, 1);
            ck_assert_uint_le(largest, (n + t - 1) / t);
        }
    ck_assert_uint_eq(dh_clahe_tiles_for_size(100, 32), 4);
    ck_assert_uint_eq(dh_clahe_tiles_for_size(96, 32), 3);
    ck_assert_uint_eq(dh_clahe_tiles_for_size(5, 100), 1);
    uint16_t d[6] = {0}, o[6];
    dh_eq_window w = {0, 4095};
    dh_clahe_shape ok = {3, 2, 1, 1, 1, 1, 0};
    ck_assert_int_eq(dh_clahe_cpu(d, 0, 0, 4096, &ok, &w, 0, 4096, 0, 1, o), 0);
    dh_clahe_shape too_many = {3, 2, 1, 4, 1, 1, 0}, no_tiles = {3, 2, 1, 1, 0, 1, 0};
    dh_clahe_shape deep = {3, 2, 1, 1, 1, 2, 1};
    ck_assert_int_eq(dh_clahe_cpu(d, 0, 0, 4096, &too_many, &w, 0, 4096, 0, 1, o), -1);
    ck_assert_int_eq(dh_clahe_cpu(d, 0, 0, 4096, &no_tiles, &w, 0, 4096, 0, 1, o), -1);
    ck_assert_int_eq(dh_clahe_cpu(d, 0, 0, 4096, &deep, &w, 0, 4096, 0, 1, o), -1);
    ck_assert_int_eq(dh_clahe_cpu(d, 0, 0, 4096, &ok, &w, 65537, 4096, 0, 1, o), -1);
    ck_assert_int_eq(dh_clahe_cpu(d, 0, 0, 4096, &ok, &w, 0, 1, 0, 1, o), -1);
    ck_assert_int_eq(dh_clahe_cpu(d, 0, 0, 4096, &ok, &w, 0, 4096, -1, 1, o), -1);
}
END_TEST

int main(void)
{
    const dh_test tests[] = {DH_TEST(matches_reference_2d), DH_TEST(matches_reference_3d),
                             DH_TEST(one_tile_is_global_equalization),
                             DH_TEST(no_seams_where_tiles_do_not_divide),
                             DH_TEST(tiles_split_evenly_and_bad_arguments_are_refused)};
    return dh_test_run(dh_test_suite("clahe_cpu", 300, DH_TESTS(tests)));
}
