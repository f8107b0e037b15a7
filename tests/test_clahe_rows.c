// SPDX-License-Identifier: MIT
/*
 * test_clahe_rows.c: the two fast pieces of CLAHE's CPU twin against the definitions they
 * replace. A tile's table from two half histograms (kernels/clahe_table_cpu.h) equals
 * dh_eq_lut_build over the summed histogram, on dense, sparse, spiky, one-value and empty
 * histograms at every clip and bin count; a band's quads hold the entries they stand for (all of
 * them, or those of the bins its tiles reach); the 2D
 * row blend (kernels/clahe_rows_cpu.h), every build this processor runs (portable, AVX2,
 * AVX-512 with scalar loads and with gathers: kernels/clahe_cpu_path.h), equals clahe.h's
 * dh_clahe_blend2 and dh_clahe_bin pixel by pixel, at the
 * largest denominators the AVX2 build takes and beyond, table entries at 0, 65535 and between,
 * signed and unsigned windows with bins a power of two, one per value or neither, pixels below
 * and above the window, border rows and columns, and rows of every length modulo 16. With
 * DH_CLAHE_CPU_PATH set, the build it names must be the one chosen for an ordinary image (a
 * processor without it skips the program: clahe_forced_build.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clahe.h"
#include "clahe_cpu_path.h"
#include "clahe_forced_build.h"
#include "clahe_rows_cpu.h"
#include "clahe_table_cpu.h"
#include "equalize_cpu.h"
#include "test_support.h"

/* ---- tables ---- */

/* BIG: up to 16 bins whose counts total just below 2^31 (the table's vector path at its largest
 * sums); HUGE: just below 2^32 (past the vector path's 32-bit lanes: the scalar path, with the
 * halves as they came). */
enum { HIST_DENSE, HIST_SPARSE, HIST_SPIKY, HIST_ONE, HIST_EMPTY, HIST_BIG, HIST_HUGE, HIST_KINDS };

static void fill_halves(uint32_t *h0, uint32_t *h1, uint32_t bins, int kind, dh_test_rng *rng)
{
    memset(h0, 0, bins * sizeof *h0);
    memset(h1, 0, bins * sizeof *h1);
    uint32_t spot = dh_test_rng_below(rng, bins);
    for (uint32_t b = 0; b < bins; b++) {
        uint32_t c = 0;
        if (kind == HIST_DENSE)
            c = dh_test_rng_below(rng, 50);
        else if (kind == HIST_SPARSE)
            c = dh_test_rng_below(rng, 8) == 0 ? dh_test_rng_below(rng, 1000) : 0;
        else if (kind == HIST_SPIKY)
            c = dh_test_rng_below(rng, 64) == 0 ? 100000 + dh_test_rng_below(rng, 100000)
                                                 : dh_test_rng_below(rng, 3);
        else if (kind == HIST_ONE)
            c = b == spot ? 140625 : 0;
        else if ((kind == HIST_BIG || kind == HIST_HUGE) && b % (bins / 16 ? bins / 16 : 1) == 0 &&
                 b / (bins / 16 ? bins / 16 : 1) < 16)
            c = (kind == HIST_BIG ? 0x7fffffffu : 0xffffffffu) / 16 - dh_test_rng_below(rng, 1000);
        uint32_t half = c ? dh_test_rng_below(rng, c + 1) : 0;
        h0[b] = half;
        h1[b] = c - half;
    }
}

START_TEST(table_from_halves_equals_lut_build)
{
    static const uint32_t bins[] = {1, 2, 7, 256, 4095, 4096, 65536};
    static const uint32_t levels[] = {2, 256, 4096, 65536};
    static const double clips[] = {0, 0.3, 1, 2, 2.5, 40, 1e6};
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 2115);
    uint32_t *h0 = malloc(65536 * sizeof *h0), *h1 = malloc(65536 * sizeof *h1);
    uint64_t *sum = malloc(65536 * sizeof *sum);
    uint16_t *got = malloc(65536 * sizeof *got), *want = malloc(65536 * sizeof *want);
    for (size_t ib = 0; ib < sizeof bins / sizeof *bins; ib++)
        for (int kind = 0; kind < HIST_KINDS; kind++)
            for (size_t ic = 0; ic < sizeof clips / sizeof *clips; ic++) {
                uint32_t n = bins[ib], l = levels[(ib + kind + ic) % 4];
                fill_halves(h0, h1, n, kind, &rng);
                uint64_t count = 0;
                for (uint32_t b = 0; b < n; b++)
                    count += sum[b] = (uint64_t)h0[b] + h1[b];
                if (count == 0) /* clahe_cpu.c's empty tile: a flat histogram */
                    for (uint32_t b = 0; b < n; b++)
                        sum[b] = 1;
                dh_eq_window all = {0, (int32_t)n - 1};
                ck_assert_int_eq(dh_eq_lut_build(sum, 0, n, all, l, clips[ic], want), 0);
                /* The bins it is told hold every count: all of them, or a random range around
                 * the ones that count (an empty range when none does). */
                uint32_t first = n, last = 0;
                for (uint32_t b = 0; b < n; b++)
                    if (h0[b] + h1[b]) {
                        first = b < first ? b : first;
                        last = b;
                    }
                uint32_t lo = 0, hi = n - 1;
                if (ic % 2 && first < n) {
                    lo = dh_test_rng_below(&rng, first + 1);
                    hi = last + dh_test_rng_below(&rng, n - last);
                } else if (ic % 2) {
                    lo = 1 + dh_test_rng_below(&rng, n);
                    hi = lo - 1;
                }
                dh_clahe_table_from_halves(h0, h1, n, lo, hi, l, clips[ic], got);
                for (uint32_t b = 0; b < n; b++)
                    ck_assert_msg(got[b] == want[b],
                                  "bins %u kind %d clip %g levels %u bin %u: %u != %u", n, kind,
                                  clips[ic], l, b, got[b], want[b]);
            }
    free(h0);
    free(h1);
    free(sum);
    free(got);
    free(want);
}
END_TEST

/* ---- row blend ---- */

/* Table entries: 0, 65535 and anything between; or (small) 0..3; or (binary) 0 and 1 only, where
 * blends land exactly on halves often: the rounding a quotient from an estimate gets wrong most
 * easily (its estimate falls just beside the exact integer). */
enum { ENTRIES_ANY, ENTRIES_SMALL, ENTRIES_BINARY, ENTRY_KINDS };

static uint16_t entry(dh_test_rng *rng, int kind)
{
    if (kind != ENTRIES_ANY)
        return (uint16_t)dh_test_rng_below(rng, kind == ENTRIES_SMALL ? 4 : 2);
    uint32_t r = dh_test_rng_below(rng, 4);
    return (uint16_t)(r == 0 ? 0 : r == 1 ? 65535 : dh_test_rng_below(rng, 65536));
}

/* The window of a row: its values, bins over it, and whether samples are signed. */
typedef struct window {
    int is_signed;
    int32_t lo, hi;
    uint32_t bins;
} window;

/* A raw 16-bit sample: mostly inside the window, some below and above it when there is room. */
static uint16_t sample(const window *w, dh_test_rng *rng)
{
    uint32_t r = dh_test_rng_below(rng, 16);
    if (r < 2)
        return (uint16_t)dh_test_rng_below(rng, 65536);
    int64_t width = (int64_t)w->hi - w->lo + 1;
    return (uint16_t)(w->lo + (int64_t)dh_test_rng_below(rng, (uint32_t)width));
}

/* The builds the row checks ran, one bit each (printed at the end: where it ran, it shows). */
static unsigned paths_run;

/* One row y of an image of ny rows in ty tile rows, n pixels in tx tile columns, against
 * dh_clahe_blend2 of the entries the definition takes (clahe.h's axes, the tables of the two tile
 * rows the row lies between), in every build this processor runs. */
static void check_row(uint32_t n, uint32_t tx, uint32_t ny, uint32_t ty, uint32_t y,
                      const window *w, int kind, dh_test_rng *rng)
{
    const uint32_t width = (uint32_t)((int64_t)w->hi - w->lo + 1);
    const uint32_t bins = dh_clahe_bins_used(w->bins, width);
    const size_t row_len = (size_t)tx * bins;
    uint16_t *rows = malloc(2 * row_len * sizeof *rows); /* tile rows p and p + 1 */
    uint64_t *quads = malloc((size_t)dh_clahe_segments(tx) * bins * sizeof *quads);
    uint32_t *bin_of = malloc(65536 * sizeof *bin_of);
    uint16_t *raw = malloc(n * sizeof *raw), *out = malloc(n * sizeof *out);
    for (size_t i = 0; i < 2 * row_len; i++)
        rows[i] = entry(rng, kind);
    for (uint32_t r = 0; r < 65536; r++) { /* the bin of every raw sample, by the definition */
        int32_t v = w->is_signed ? (int16_t)(uint16_t)r : (int32_t)r;
        bin_of[r] = v < w->lo ? bins : v > w->hi ? bins + 1 : dh_clahe_bin(v, w->lo, w->hi, bins);
    }
    for (uint32_t x = 0; x < n; x++)
        raw[x] = sample(w, rng);
    dh_clahe_segment_weight wy = dh_clahe_segment_at(ny, ty, y);
    dh_clahe_axis_weight ay = dh_clahe_axis_at(ny, ty, y);
    ck_assert(ay.i0 >= wy.s && ay.i1 <= wy.s + (ty > 1));
    const uint16_t *row1 = ty > 1 ? rows + row_len : rows;
    dh_clahe_quads_build(quads, rows, row1, tx, bins);
    dh_clahe_columns c;
    ck_assert_int_eq(dh_clahe_columns_init(&c, n, tx, bins), 0);
    const uint16_t top = 4095;
    dh_clahe_row row = {raw,  out,    w->is_signed, w->lo, w->hi, bins,  bin_of,
                        top,  quads,  wy.w0,        wy.w1, wy.den};
    for (int fast = 0; fast <= dh_clahe_rows_fast(&c, wy.den); fast++) {
        memset(out, 0xab, n * sizeof *out);
        dh_clahe_row_blend(&row, &c, fast);
        paths_run |= 1u << fast;
        for (uint32_t x = 0; x < n; x++) {
            uint32_t b = bin_of[raw[x]];
            uint16_t want = b == bins ? 0 : top;
            if (b < bins) {
                dh_clahe_axis_weight ax = dh_clahe_axis_at(n, tx, x);
                const uint16_t *r0 = ay.i0 == wy.s ? rows : row1;
                const uint16_t *r1 = ay.i1 == wy.s ? rows : row1;
                want = dh_clahe_blend2(ax, ay, r0[(size_t)ax.i0 * bins + b],
                                       r0[(size_t)ax.i1 * bins + b], r1[(size_t)ax.i0 * bins + b],
                                       r1[(size_t)ax.i1 * bins + b]);
            }
            if (out[x] != want)
                ck_abort_msg("%s: row %u of %u in %u tiles, %u pixels in %u tiles, %u bins over "
                             "[%d, %d], pixel %u: %u != %u",
                             dh_clahe_path_name(fast), y, ny, ty, n, tx, bins, w->lo, w->hi,
                             x, out[x], want);
        }
    }
    dh_clahe_columns_free(&c);
    free(rows);
    free(quads);
    free(bin_of);
    free(raw);
    free(out);
}

START_TEST(row_blend_equals_the_definition)
{
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 2116);
    /* Rows of every length modulo 8 (the AVX2 build's tail) and 16 (the AVX-512 build's masked
     * one: 1, 7, 9, 17, 23, 40, 61, 3000, 32767, 65535, 4093, 1000, 3001 and the small shapes
     * below), the largest denominators along x
     * the AVX2 build takes (two tiles of 32767 pixels: den 32767) and beyond it (65535), one
     * tile, a tile per pixel. */
    static const uint32_t rows[][2] = {{1, 1},     {7, 2},      {8, 8},     {9, 3},
                                       {17, 4},    {23, 5},     {40, 8},    {61, 7},
                                       {3000, 8},  {32767, 2},  {65535, 2}, {65535, 3},
                                       {4093, 4093}, {1000, 1}, {3001, 9}};
    /* Windows: the full unsigned range at 4096 bins (a shift), 65536 (one per value), 3 and 1000
     * (neither); signed ones one bin per value and fewer; one value. */
    static const window windows[] = {{0, 0, 65535, 4096},      {0, 0, 65535, 65536},
                                     {0, 100, 60000, 3},       {0, 1000, 5095, 1000},
                                     {1, -1024, 3071, 0},      {1, -32768, 32767, 777},
                                     {1, -5, 200, 64},         {0, 7, 7, 0}};
    /* Rows: between centres, the largest den_y the AVX2 build takes with den_x 32767
     * (16383: den_x den_y just below 2^29) and a larger one, the top and bottom borders, a
     * single row of tiles. */
    static const uint32_t ys[][3] = {{3000, 8, 1000}, {16383, 2, 9000}, {16384, 2, 9000},
                                     {65535, 2, 40000}, {3000, 8, 0}, {3000, 8, 2999},
                                     {60, 1, 17}, {60, 2, 22}};
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        for (size_t k = 0; k < sizeof ys / sizeof *ys; k++) {
            window w = windows[(i + k) % (sizeof windows / sizeof *windows)];
            if ((uint64_t)w.bins * rows[i][1] > ((uint64_t)1 << 22)) /* keep the tables small */
                w.bins = 256;
            for (int kind = 0; kind < ENTRY_KINDS; kind++)
                check_row(rows[i][0], rows[i][1], ys[k][0], ys[k][1], ys[k][2], &w, kind, &rng);
        }
    /* Many small shapes with binary entries: exact halves, at even denominators (a 3-pixel row of
     * 2 tiles, row 22 of 60 in 2 tiles, entries 0 1 0 0 is one). */
    const window small = {0, 0, 15, 16};
    for (uint32_t n = 3; n <= 40; n++)
        for (uint32_t tx = 2; tx <= 4 && tx <= n; tx++)
            for (uint32_t y = 0; y < 60; y++)
                check_row(n, tx, 60, 2, y, &small, ENTRIES_BINARY, &rng);
    printf("row blend builds checked:");
    for (int p = 0; p < DH_CLAHE_PATHS; p++)
        if (paths_run >> p & 1)
            printf(" %s", dh_clahe_path_name((dh_clahe_path)p));
    printf("\n");
    fflush(stdout); /* Check runs the test in a child */
}
END_TEST

/* DH_CLAHE_CPU_PATH=name: that build is chosen for the blend of an ordinary image (3000 x 3000
 * in 8 x 8 tiles at 4096 bins), which the vector builds' bounds admit, so a run that forces a
 * build and passes proves the build ran (main skips where the processor lacks it). */
START_TEST(forced_build_is_chosen)
{
    const dh_clahe_path asked = dh_clahe_cpu_path_asked();
    dh_clahe_columns c;
    ck_assert_int_eq(dh_clahe_columns_init(&c, 3000, 8, 4096), 0);
    const int chosen = dh_clahe_rows_fast(&c, dh_clahe_segment_at(3000, 8, 1000).den);
    dh_clahe_columns_free(&c);
    ck_assert_int_le(chosen, dh_clahe_cpu_path());
    printf("DH_CLAHE_CPU_PATH %s: the blend's build %s\n",
           asked == DH_CLAHE_PATHS ? "unset" : dh_clahe_path_name(asked),
           dh_clahe_path_name((dh_clahe_path)chosen));
    fflush(stdout);
    if (asked != DH_CLAHE_PATHS)
        ck_assert_msg(chosen == (int)asked, "DH_CLAHE_CPU_PATH=%s, but this processor runs %s",
                      dh_clahe_path_name(asked), dh_clahe_path_name((dh_clahe_path)chosen));
}
END_TEST

/* Quad (s, b) holds the entries of tiles (s, p), (s + 1, p), (s, p + 1), (s + 1, p + 1) with
 * their top bits flipped. */
static void check_quad(const uint64_t *quads, const uint16_t *row0, const uint16_t *row1,
                       uint32_t tx, uint32_t bins, uint32_t s, uint32_t b)
{
    uint32_t s1 = tx > 1 ? s + 1 : s;
    const uint16_t e[4] = {row0[(size_t)s * bins + b], row0[(size_t)s1 * bins + b],
                           row1[(size_t)s * bins + b], row1[(size_t)s1 * bins + b]};
    uint64_t want = 0;
    for (int k = 0; k < 4; k++)
        want |= (uint64_t)(uint16_t)(e[k] ^ 0x8000) << (16 * k);
    if (quads[(size_t)s * bins + b] != want)
        ck_abort_msg("quad of segment %u bin %u (%u tiles, %u bins): %016llx != %016llx", s, b,
                     tx, bins, (unsigned long long)quads[(size_t)s * bins + b],
                     (unsigned long long)want);
}

/* Random reached ranges per tile of a row: a third empty (first > last), some one bin, the rest
 * any span. */
static void random_reach(uint32_t *reach, uint32_t tx, uint32_t bins, dh_test_rng *rng)
{
    for (uint32_t ix = 0; ix < tx; ix++) {
        uint32_t a = dh_test_rng_below(rng, bins), b = dh_test_rng_below(rng, bins);
        switch (dh_test_rng_below(rng, 3)) {
        case 0: reach[2 * ix] = 1, reach[2 * ix + 1] = 0; break;
        case 1: reach[2 * ix] = reach[2 * ix + 1] = a; break;
        default: reach[2 * ix] = a < b ? a : b, reach[2 * ix + 1] = a < b ? b : a; break;
        }
    }
}

/* The quads of a band hold, per segment and bin, the entries of its four tiles, at every bin
 * count modulo 8; built over the reached bins only, they hold them over the union of the four
 * tiles' ranges and at bin 0, and leave every other quad as it was. */
START_TEST(quads_hold_the_four_entries)
{
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 2117);
    static const uint32_t shapes[][2] = {{1, 1}, {1, 9}, {2, 8}, {3, 17}, {8, 4096}, {5, 65536}};
    const uint64_t untouched = 0x5a5a5a5a5a5a5a5aull;
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        uint32_t tx = shapes[i][0], bins = shapes[i][1], segs = dh_clahe_segments(tx);
        uint16_t *row0 = malloc((size_t)tx * bins * sizeof *row0);
        uint16_t *row1 = malloc((size_t)tx * bins * sizeof *row1);
        uint64_t *quads = malloc((size_t)segs * bins * sizeof *quads);
        uint32_t *reach0 = malloc(2 * tx * sizeof *reach0), *reach1 = malloc(2 * tx * sizeof *reach1);
        for (size_t k = 0; k < (size_t)tx * bins; k++) {
            row0[k] = entry(&rng, ENTRIES_ANY);
            row1[k] = entry(&rng, ENTRIES_ANY);
        }
        dh_clahe_quads_build(quads, row0, row1, tx, bins);
        for (uint32_t s = 0; s < segs; s++)
            for (uint32_t b = 0; b < bins; b++)
                check_quad(quads, row0, row1, tx, bins, s, b);
        for (int trial = 0; trial < (bins > 4096 ? 4 : 20); trial++) {
            random_reach(reach0, tx, bins, &rng);
            random_reach(reach1, tx, bins, &rng);
            for (size_t k = 0; k < (size_t)segs * bins; k++)
                quads[k] = untouched;
            dh_clahe_quads_build_reached(quads, row0, row1, tx, bins, reach0, reach1);
            for (uint32_t s = 0; s < segs; s++) {
                uint32_t s1 = tx > 1 ? s + 1 : s, lo = UINT32_MAX, hi = 0;
                const uint32_t *r[4] = {reach0 + 2 * s, reach0 + 2 * s1, reach1 + 2 * s,
                                        reach1 + 2 * s1};
                for (int k = 0; k < 4; k++)
                    if (r[k][0] <= r[k][1]) {
                        lo = r[k][0] < lo ? r[k][0] : lo;
                        hi = r[k][1] > hi ? r[k][1] : hi;
                    }
                for (uint32_t b = 0; b < bins; b++) {
                    if (b == 0 || (lo <= b && b <= hi))
                        check_quad(quads, row0, row1, tx, bins, s, b);
                    else
                        ck_assert(quads[(size_t)s * bins + b] == untouched);
                }
            }
        }
        free(row0);
        free(row1);
        free(quads);
        free(reach0);
        free(reach1);
    }
}
END_TEST

int main(void)
{
    const dh_test tests[] = {DH_TEST(table_from_halves_equals_lut_build),
                             DH_TEST(row_blend_equals_the_definition),
                             DH_TEST(quads_hold_the_four_entries),
                             DH_TEST(forced_build_is_chosen)};
    if (dh_test_clahe_build_missing())
        return DH_TEST_SKIP;
    return dh_test_run(dh_test_suite("clahe_rows", 300, DH_TESTS(tests)));
}
