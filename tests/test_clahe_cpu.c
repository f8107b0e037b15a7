// SPDX-License-Identifier: MIT
/*
 * test_clahe_cpu.c: CLAHE's CPU twin (kernels/clahe_cpu.h) against the naive reference of
 * clahe_reference.h, written from docs/equalization.md without clahe.h or the equalize code.
 * Also: one tile is global equalization with the same clip, and tiles that do not divide the image
 * leave no seam.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clahe_cpu.h"
#include "clahe_forced_build.h"
#include "clahe_reference.h"
#include "equalize_cpu.h"
#include "test_support.h"

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
static void check_case(const dh_test_clahe_case *c, const char *what)
{
    size_t n = (size_t)c->s.nx * c->s.ny * c->s.nz;
    uint16_t *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    dh_test_clahe_reference(c, want);
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
                dh_test_clahe_case c = {data, fmt[f].sign, 0, 0, s, windows, bins[ib], 0, 0};
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
    if (dh_test_clahe_build_missing())
        return DH_TEST_SKIP;
    return dh_test_run(dh_test_suite("clahe_cpu", 300, DH_TESTS(tests)));
}
