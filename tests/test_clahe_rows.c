// SPDX-License-Identifier: MIT
/*
 * test_clahe_rows.c: the two fast pieces of CLAHE's CPU twin against the definitions they
 * replace. A tile's table from two half histograms (kernels/clahe_table_cpu.h) equals
 * dh_eq_lut_build over the summed histogram, on dense, sparse, spiky, one-value and empty
 * histograms at every clip and bin count; the 2D row blend (kernels/clahe_rows_cpu.h), portable
 * and AVX2 alike (the AVX2 one only where this processor has it), equals clahe.h's
 * dh_clahe_blend2 pixel by pixel, at the largest denominators an axis allows, table entries at 0,
 * 65535 and between, pixels below and above the window, and rows of every length modulo 8.
 */
#include <stdlib.h>
#include <string.h>

#include "clahe.h"
#include "clahe_rows_cpu.h"
#include "clahe_table_cpu.h"
#include "equalize_cpu.h"
#include "test_support.h"

/* ---- tables ---- */

enum { HIST_DENSE, HIST_SPARSE, HIST_SPIKY, HIST_ONE, HIST_EMPTY, HIST_KINDS };

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
 * blends land exactly on halves often: the rounding a quotient from a reciprocal gets wrong most
 * easily (its estimate falls just below the exact integer). */
enum { ENTRIES_ANY, ENTRIES_SMALL, ENTRIES_BINARY, ENTRY_KINDS };

static uint16_t entry(dh_test_rng *rng, int kind)
{
    if (kind != ENTRIES_ANY)
        return (uint16_t)dh_test_rng_below(rng, kind == ENTRIES_SMALL ? 4 : 2);
    uint32_t r = dh_test_rng_below(rng, 4);
    return (uint16_t)(r == 0 ? 0 : r == 1 ? 65535 : dh_test_rng_below(rng, 65536));
}

/* One row of n pixels over tx tile columns, row weights ay (as the pair sees them), against
 * dh_clahe_blend2 of the entries the definition takes, in every build this processor runs. */
static void check_row(uint32_t n, uint32_t tx, uint32_t bins, dh_clahe_axis_weight ay,
                      int kind, dh_test_rng *rng)
{
    size_t pair_len = (size_t)bins * tx * 2;
    uint16_t *pair = malloc(pair_len * sizeof *pair);
    uint32_t *bin_of = malloc(65536 * sizeof *bin_of);
    uint16_t *raw = malloc(n * sizeof *raw), *out = malloc(n * sizeof *out);
    for (size_t i = 0; i < pair_len; i++)
        pair[i] = entry(rng, kind);
    for (uint32_t v = 0; v < 65536; v++) { /* a few values below and above the window */
        uint32_t r = dh_test_rng_below(rng, 16);
        bin_of[v] = r == 0 ? bins : r == 1 ? bins + 1 : dh_test_rng_below(rng, bins);
    }
    for (uint32_t x = 0; x < n; x++)
        raw[x] = (uint16_t)dh_test_rng_below(rng, 65536);
    dh_clahe_columns c;
    ck_assert_int_eq(dh_clahe_columns_init(&c, n, tx), 0);
    const uint16_t top = 4095;
    dh_clahe_row row = {raw, out, bin_of, bins, tx, top, pair, ay.den - ay.w1, ay.w1, ay.den};
    for (int fast = 0; fast <= dh_clahe_rows_fast(bins, tx); fast++) {
        memset(out, 0xab, n * sizeof *out);
        dh_clahe_row_blend(&row, &c, fast);
        for (uint32_t x = 0; x < n; x++) {
            uint32_t b = bin_of[raw[x]];
            uint16_t want = b == bins ? 0 : b == bins + 1 ? top : 0;
            if (b < bins) {
                dh_clahe_axis_weight ax = dh_clahe_axis_at(n, tx, x);
                /* entry (ix, b, dy) of the pair at (ix * bins + b) * 2 + dy */
                const uint16_t *e0 = pair + ((size_t)ax.i0 * bins + b) * 2;
                const uint16_t *e1 = pair + ((size_t)ax.i1 * bins + b) * 2;
                want = dh_clahe_blend2(ax, ay, e0[0], e1[0], e0[1], e1[1]);
            }
            if (out[x] != want)
                ck_abort_msg("%s: row of %u, %u tiles, %u bins, den_y %u, pixel %u: %u != %u",
                             fast ? "avx2" : "portable", n, tx, bins, ay.den, x, out[x], want);
        }
    }
    dh_clahe_columns_free(&c);
    free(pair);
    free(bin_of);
    free(raw);
    free(out);
}

START_TEST(row_blend_equals_the_definition)
{
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 2116);
    /* Rows of every length modulo 8 (the AVX2 build's tail), the largest denominators along x
     * (two tiles of 65535 pixels), one tile, a tile per pixel. */
    static const uint32_t rows[][2] = {{1, 1},    {7, 2},    {8, 8},     {9, 3},    {17, 4},
                                       {23, 5},   {40, 8},   {61, 7},    {3000, 8}, {65535, 2},
                                       {65535, 3}, {4093, 4093}, {1000, 1}};
    static const uint32_t bins[] = {1, 3, 4096, 65536};
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        uint32_t b = bins[i % 4];
        if ((uint64_t)b * rows[i][1] > ((uint64_t)1 << 24)) /* keep the table small */
            b = 256;
        /* Row weights: between centres at the largest den_y, a clamped border (den 1), and the
         * second row of a pair alone (the bottom border). */
        dh_clahe_axis_weight ays[] = {dh_clahe_axis_at(65535, 2, dh_test_rng_below(&rng, 65535)),
                                      dh_clahe_axis_at(3000, 8, 1000), {0, 0, 0, 1},
                                      {0, 1, 1, 1}, {0, 1, 65534, 65535}};
        for (size_t k = 0; k < sizeof ays / sizeof *ays; k++)
            for (int kind = 0; kind < ENTRY_KINDS; kind++)
                check_row(rows[i][0], rows[i][1], b, ays[k], kind, &rng);
    }
    /* Many small shapes with binary entries: exact halves, at even denominators (a 3-pixel row of
     * 2 tiles, row 22 of 60 in 2 tiles, entries 0 1 0 0 is one). */
    for (uint32_t n = 3; n <= 40; n++)
        for (uint32_t tx = 2; tx <= 4 && tx <= n; tx++)
            for (uint32_t y = 0; y < 60; y++)
                check_row(n, tx, 16, dh_clahe_axis_at(60, 2, y), ENTRIES_BINARY, &rng);
}
END_TEST

int main(void)
{
    const dh_test tests[] = {DH_TEST(table_from_halves_equals_lut_build),
                             DH_TEST(row_blend_equals_the_definition)};
    return dh_test_run(dh_test_suite("clahe_rows", 300, DH_TESTS(tests)));
}
