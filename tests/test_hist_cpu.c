// SPDX-License-Identifier: MIT
/*
 * test_hist_cpu.c: the CPU twin (kernels/hist_cpu.c) against the plain loop dh_hist_naive, and
 * dh_bin_map_slot against the formula written out independently, on random, CT-like, constant
 * and extreme data, every bin count class, affine, shift and table maps, 1..8 threads, odd sizes.
 */
#include <stdlib.h>
#include <string.h>

#include "hist.h"
#include "test_support.h"

/* The definition, written without the map's shortcuts. */
static uint32_t reference_slot(int64_t s, uint32_t bins, int64_t lo, int64_t hi)
{
    if (s < lo)
        return bins;
    if (s >= hi)
        return bins + 1;
    return (uint32_t)((s - lo) * (int64_t)bins / (hi - lo));
}

enum fill { FILL_UNIFORM, FILL_CT, FILL_CONSTANT, FILL_EXTREMES };

static void *make_data(size_t n, int is_signed, enum fill kind, uint64_t seed)
{
    uint16_t *d = malloc(n * sizeof *d + 1);
    dh_test_rng rng;
    dh_test_rng_seed(&rng, seed);
    if (kind == FILL_CT)
        dh_test_fill_ct_like(d, n, seed);
    for (size_t i = 0; i < n; i++) {
        if (kind == FILL_UNIFORM)
            d[i] = (uint16_t)dh_test_rng_next(&rng);
        else if (kind == FILL_CONSTANT)
            d[i] = is_signed ? (uint16_t)(int16_t)-1000 : 1234;
        else if (kind == FILL_EXTREMES)
            d[i] = (uint16_t[]){0, 1, 0x7fff, 0x8000, 0xffff, 0xfffe}[dh_test_rng_below(&rng, 6)];
        else if (is_signed)
            d[i] = (uint16_t)(int16_t)((int32_t)d[i] - 1024);
    }
    return d;
}

/* dh_hist_cpu (whole and per slice) equals the naive loop for each slice and the whole. */
static void check_map(const void *data, int is_signed, size_t slice_len, size_t slices,
                      const dh_bin_map *map, int threads)
{
    const size_t slots = map->bins + 2, n = slice_len * slices;
    uint64_t *whole = malloc(slots * sizeof *whole);
    uint64_t *expect = malloc(slots * sizeof *expect);
    uint64_t *per = malloc(slots * slices * sizeof *per);
    uint64_t *sum = calloc(slots, sizeof *sum);
    ck_assert_int_eq(dh_hist_cpu(data, is_signed, slice_len, slices, 0, map, threads, whole), 0);
    dh_hist_naive(data, is_signed, n, map, expect);
    ck_assert_msg(memcmp(whole, expect, slots * sizeof *whole) == 0,
                  "whole histogram differs: bins %u, lo %d, hi %d, lut %d, threads %d, n %zu",
                  map->bins, map->lo, map->hi, map->lut != NULL, threads, n);
    ck_assert_int_eq(dh_hist_cpu(data, is_signed, slice_len, slices, 1, map, threads, per), 0);
    const size_t bytes = is_signed ? sizeof(int16_t) : sizeof(uint16_t);
    for (size_t s = 0; s < slices; s++) {
        dh_hist_naive((const char *)data + s * slice_len * bytes, is_signed, slice_len, map,
                      expect);
        ck_assert_msg(memcmp(per + s * slots, expect, slots * sizeof *expect) == 0,
                      "slice %zu differs: bins %u, threads %d", s, map->bins, threads);
        for (size_t b = 0; b < slots; b++)
            sum[b] += per[s * slots + b];
    }
    ck_assert(memcmp(sum, whole, slots * sizeof *sum) == 0);
    uint64_t total = 0;
    for (size_t b = 0; b < slots; b++)
        total += whole[b];
    ck_assert_uint_eq(total, n);
    free(whole), free(expect), free(per), free(sum);
}

static const uint32_t bin_counts[] = {1, 7, 255, 256, 4096, 4097, 65535, 65536};

START_TEST(test_slot_matches_formula)
{
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 11);
    for (int trial = 0; trial < 2000; trial++) {
        uint32_t bins = bin_counts[trial % 8];
        int64_t lo = (int64_t)dh_test_rng_below(&rng, 70000) - 35000;
        int64_t hi = lo + 1 + dh_test_rng_below(&rng, trial % 3 ? 70000 : 3);
        if (trial % 5 == 0)
            hi = lo + (int64_t)bins * (1 << dh_test_rng_below(&rng, 4)); /* shift path */
        dh_bin_map map;
        ck_assert_int_eq(dh_bin_map_init_affine(&map, bins, lo, hi), 0);
        if (trial % 5 == 0)
            ck_assert_int_ge(map.shift, 0);
        int64_t probes[] = {lo - 1, lo, lo + 1, hi - 1, hi, hi + 1,
                            lo + dh_test_rng_below(&rng, (uint32_t)(hi - lo))};
        for (size_t i = 0; i < sizeof probes / sizeof *probes; i++) {
            if (probes[i] < -32768 || probes[i] > 65535)
                continue;
            ck_assert_uint_eq(dh_bin_map_slot(&map, (int32_t)probes[i]),
                              reference_slot(probes[i], bins, lo, hi));
        }
    }
    /* Range edges named by the definition. */
    dh_bin_map map;
    dh_bin_map_init_affine(&map, 7, -100, 100);
    ck_assert_uint_eq(dh_bin_map_slot(&map, -101), 7);
    ck_assert_uint_eq(dh_bin_map_slot(&map, -100), 0);
    ck_assert_uint_eq(dh_bin_map_slot(&map, 99), 6);
    ck_assert_uint_eq(dh_bin_map_slot(&map, 100), 8);
}
END_TEST

START_TEST(test_bad_affine_arguments)
{
    dh_bin_map map;
    ck_assert_int_eq(dh_bin_map_init_affine(&map, 0, 0, 10), -1);
    ck_assert_int_eq(dh_bin_map_init_affine(&map, 65537, 0, 70000), -1);
    ck_assert_int_eq(dh_bin_map_init_affine(&map, 4, 10, 10), -1);
    ck_assert_int_eq(dh_bin_map_init_affine(&map, 4, 11, 10), -1);
    ck_assert_int_eq(dh_bin_map_init_affine(&map, 4, 0, (int64_t)INT32_MAX + 1), -1);
}
END_TEST

/* Every bin class over random ranges, every fill, both sample types, threads 1..8. */
START_TEST(test_cpu_equals_naive)
{
    const int is_signed = _i & 1;
    const enum fill kind = (enum fill)(_i >> 1);
    const size_t slice_len = 301 * 217, slices = 7; /* odd sizes, enough for the table path */
    void *data = make_data(slice_len * slices, is_signed, kind, 1000 + (uint64_t)_i);
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 77 + (uint64_t)_i);
    for (size_t k = 0; k < sizeof bin_counts / sizeof *bin_counts; k++) {
        uint32_t bins = bin_counts[k];
        int64_t type_lo = is_signed ? -32768 : 0, type_hi = type_lo + 65536;
        int64_t ranges[3][2] = {
            {type_lo, type_hi},                                        /* everything in range */
            {type_lo + 1000, type_lo + 1000 + (int64_t)bins * 2},      /* shift 1 */
            {type_lo + dh_test_rng_below(&rng, 3000), type_lo + 3000 + dh_test_rng_below(&rng, 60000)},
        };
        if (kind == FILL_CT && !is_signed)
            ranges[2][0] = 24, ranges[2][1] = 1701; /* edges on the densest values */
        for (int r = 0; r < 3; r++) {
            dh_bin_map map;
            ck_assert_int_eq(dh_bin_map_init_affine(&map, bins, ranges[r][0], ranges[r][1]), 0);
            int threads = 1 + (int)((k + r) % 8);
            check_map(data, is_signed, slice_len, slices, &map, threads);
        }
    }
    free(data);
}
END_TEST

/* Table maps (as the library builds for modality units): arbitrary slots, over-/underflow. */
START_TEST(test_cpu_table_map)
{
    const int is_signed = _i & 1;
    const uint32_t bins = bin_counts[_i >> 1];
    uint32_t *lut = malloc(65536 * sizeof *lut);
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 5 + (uint64_t)_i);
    for (uint32_t i = 0; i < 65536; i++)
        lut[i] = dh_test_rng_below(&rng, bins + 2);
    dh_bin_map map = {.bins = bins, .shift = -1, .lut = lut, .lut_base = is_signed ? -32768 : 0,
                      .lut_len = 65536};
    void *data = make_data(513 * 255 * 3, is_signed, FILL_UNIFORM, 9 + (uint64_t)_i);
    for (int threads = 1; threads <= 8; threads += 3)
        check_map(data, is_signed, 513 * 255, 3, &map, threads);
    check_map(data, is_signed, 17, 5, &map, 2); /* tiny: no slot table of its own */
    free(data);
    free(lut);
}
END_TEST

/* Values exactly at lo, hi - 1 and hi are in the first bin, the last bin and overflow. */
START_TEST(test_range_edges)
{
    const size_t n = 200000;
    uint16_t *d = malloc(n * sizeof *d);
    for (size_t i = 0; i < n; i++)
        d[i] = (uint16_t)(i % 3 == 0 ? 100 : i % 3 == 1 ? 4195 : 4196);
    dh_bin_map map;
    dh_bin_map_init_affine(&map, 4096, 100, 4196);
    uint64_t out[4098];
    ck_assert_int_eq(dh_hist_cpu(d, 0, n, 1, 0, &map, 2, out), 0);
    ck_assert_uint_eq(out[0], (n + 2) / 3);
    ck_assert_uint_eq(out[4095], (n + 1) / 3);
    ck_assert_uint_eq(out[4097], n / 3);
    ck_assert_uint_eq(out[4096], 0);
    free(d);
}
END_TEST

/* Degenerate shapes: one sample, empty input, more threads than work. */
START_TEST(test_degenerate_shapes)
{
    int16_t one = -5;
    dh_bin_map map;
    dh_bin_map_init_affine(&map, 1, -5, -4);
    uint64_t out[3] = {9, 9, 9};
    ck_assert_int_eq(dh_hist_cpu(&one, 1, 1, 1, 0, &map, 8, out), 0);
    ck_assert_uint_eq(out[0], 1);
    ck_assert_uint_eq(out[1] + out[2], 0);
    ck_assert_int_eq(dh_hist_cpu(&one, 1, 0, 0, 0, &map, 8, out), 0);
    ck_assert_uint_eq(out[0] + out[1] + out[2], 0);
}
END_TEST

int main(void)
{
    const dh_test tests[] = {
        DH_TEST(test_slot_matches_formula),
        DH_TEST(test_bad_affine_arguments),
        DH_TEST_LOOP(test_cpu_equals_naive, 8), /* 4 fills x signed/unsigned */
        DH_TEST_LOOP(test_cpu_table_map, 16),   /* 8 bin classes x signed/unsigned */
        DH_TEST(test_range_edges),
        DH_TEST(test_degenerate_shapes)};
    return dh_test_run(dh_test_suite("hist_cpu", 120, DH_TESTS(tests)));
}
