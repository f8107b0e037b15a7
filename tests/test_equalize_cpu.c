// SPDX-License-Identifier: MIT
/*
 * test_equalize_cpu.c: the lookup tables of kernels/equalize_cpu.h against independent references:
 * the equalization formula evaluated from sorted pixels (no histogram, no running cdf), a
 * textbook clip-and-redistribute loop, the DICOM VOI formulas at hand-computed points, rank
 * statistics for percentile windows, and a naive loop for table application.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "equalize_cpu.h"
#include "test_support.h"

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Random stored values of a format, with a few heavy values so that cdf steps are uneven. */
static int32_t *random_values(dh_test_rng *rng, size_t n, int32_t base, uint32_t len)
{
    int32_t *v = malloc(n * sizeof *v);
    uint32_t sub_lo = dh_test_rng_below(rng, len), sub_w = 1 + dh_test_rng_below(rng, len);
    for (size_t i = 0; i < n; i++) {
        uint32_t r = dh_test_rng_below(rng, 4);
        uint32_t idx = r == 0 ? dh_test_rng_below(rng, len)
                       : r == 1 ? (sub_lo + dh_test_rng_below(rng, sub_w)) % len
                                : (sub_lo + 3 * r) % len; /* two heavy values */
        v[i] = base + (int32_t)idx;
    }
    return v;
}

static void histogram_of(const int32_t *v, size_t n, int32_t base, uint32_t len, uint64_t *h)
{
    memset(h, 0, len * sizeof *h);
    for (size_t i = 0; i < n; i++)
        h[v[i] - base]++;
}

/* Number of sorted values <= x. */
static uint64_t count_le(const int32_t *sorted, size_t n, int64_t x)
{
    size_t a = 0, b = n;
    while (a < b) {
        size_t m = (a + b) / 2;
        if (sorted[m] <= x)
            a = m + 1;
        else
            b = m;
    }
    return a;
}

/* The formula, from sorted pixels: inside [lo, hi] the cdf counts pixels in [lo, v]. */
static uint32_t formula(const int32_t *sorted, size_t n, int32_t lo, int32_t hi, int32_t v,
                        uint32_t levels)
{
    if (v < lo)
        return 0;
    if (v > hi)
        return levels - 1;
    uint64_t below = count_le(sorted, n, (int64_t)lo - 1);
    uint64_t N = count_le(sorted, n, hi) - below;
    uint64_t cdf = count_le(sorted, n, v) - below;
    uint64_t cdf_min = UINT64_MAX; /* smallest non-zero cdf: all copies of the lowest pixel */
    if (below < n && sorted[below] <= hi)
        cdf_min = count_le(sorted, n, sorted[below]) - below;
    if (cdf_min == UINT64_MAX || N == cdf_min || cdf < cdf_min)
        return 0;
    long double num = (long double)(cdf - cdf_min) * (levels - 1);
    return (uint32_t)floorl(num / (long double)(N - cdf_min));
}

START_TEST(equalization_matches_formula_on_random_data)
{
    static const struct { uint32_t bits; int sign; } fmt[] = {
        {8, 0}, {10, 0}, {12, 0}, {12, 1}, {16, 0}, {16, 1}, {1, 0}, {3, 1}};
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 41);
    for (size_t f = 0; f < sizeof fmt / sizeof fmt[0]; f++) {
        int32_t base;
        uint32_t len;
        ck_assert_int_eq(dh_eq_table_range(fmt[f].bits, fmt[f].sign, &base, &len), 0);
        for (int round = 0; round < 6; round++) {
            size_t n = 1 + dh_test_rng_below(&rng, 5000);
            int32_t *v = random_values(&rng, n, base, len);
            uint64_t *h = malloc(len * sizeof *h);
            uint16_t *lut = malloc(len * sizeof *lut);
            histogram_of(v, n, base, len, h);
            qsort(v, n, sizeof *v, cmp_i32);
            uint32_t levels = round % 3 == 0 ? 256 : round % 3 == 1 ? 4096 : 65536;
            dh_eq_window w = {base, base + (int32_t)len - 1};
            if (round >= 3) { /* a random window, possibly past the ends */
                w.lo = base - 3 + (int32_t)dh_test_rng_below(&rng, len);
                w.hi = w.lo + (int32_t)dh_test_rng_below(&rng, len);
            }
            ck_assert_int_eq(dh_eq_lut_build(h, base, len, w, levels, 0, lut), 0);
            for (uint32_t i = 0; i < len; i++)
                ck_assert_msg(lut[i] == formula(v, n, w.lo, w.hi, base + (int32_t)i, levels),
                              "bits %u value %d: %u != %u", fmt[f].bits, base + (int32_t)i,
                              lut[i], formula(v, n, w.lo, w.hi, base + (int32_t)i, levels));
            /* The lowest pixel in the window gives 0 and the highest levels - 1 (unless one
             * value only); the table never decreases. */
            for (uint32_t i = 1; i < len; i++)
                ck_assert_uint_le(lut[i - 1], lut[i]);
            free(v);
            free(h);
            free(lut);
        }
    }
}
END_TEST

START_TEST(constant_and_two_value_images)
{
    int32_t base;
    uint32_t len;
    dh_eq_table_range(12, 0, &base, &len);
    uint64_t *h = calloc(len, sizeof *h);
    uint16_t *lut = malloc(len * sizeof *lut);
    dh_eq_window all = {0, 4095};
    h[1000] = 262144; /* constant image: no division by zero, everything 0 */
    ck_assert_int_eq(dh_eq_lut_build(h, base, len, all, 4096, 0, lut), 0);
    for (uint32_t i = 0; i < len; i++)
        ck_assert_uint_eq(lut[i], 0);
    ck_assert_int_eq(dh_eq_lut_build(h, base, len, all, 4096, 2.5, lut), 0);
    ck_assert_uint_eq(lut[1000], 0);
    h[3000] = 5; /* two values: the lower gives 0, the upper the top level */
    ck_assert_int_eq(dh_eq_lut_build(h, base, len, all, 256, 0, lut), 0);
    ck_assert_uint_eq(lut[1000], 0);
    ck_assert_uint_eq(lut[2999], 0);
    ck_assert_uint_eq(lut[3000], 255);
    ck_assert_uint_eq(lut[4095], 255);
    /* A window holding no pixel: below 0, inside 0, above top. */
    dh_eq_window empty = {1500, 2000};
    ck_assert_int_eq(dh_eq_lut_build(h, base, len, empty, 256, 0, lut), 0);
    ck_assert_uint_eq(lut[1000], 0);
    ck_assert_uint_eq(lut[1700], 0);
    ck_assert_uint_eq(lut[3000], 255);
    /* Bad arguments. */
    ck_assert_int_eq(dh_eq_lut_build(h, base, len, all, 1, 0, lut), -1);
    ck_assert_int_eq(dh_eq_lut_build(h, base, len, all, 65537, 0, lut), -1);
    ck_assert_int_eq(dh_eq_lut_build(h, base, len, all, 256, -1, lut), -1);
    free(h);
    free(lut);
}
END_TEST

START_TEST(clip_limit_matches_textbook_redistribution)
{
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 7);
    int32_t base;
    uint32_t len;
    dh_eq_table_range(10, 0, &base, &len);
    uint64_t *h = malloc(len * sizeof *h), *c = malloc(len * sizeof *c);
    uint16_t *lut = malloc(len * sizeof *lut);
    for (int round = 0; round < 40; round++) {
        size_t n = 50 + dh_test_rng_below(&rng, 20000);
        int32_t *v = random_values(&rng, n, base, len);
        histogram_of(v, n, base, len, h);
        double x = round % 4 == 0 ? 1.0 : 0.5 + dh_test_rng_below(&rng, 1000) / 100.0;
        dh_eq_window w = {0, 1023};
        if (round % 2)
            w.lo = (int32_t)dh_test_rng_below(&rng, 512), w.hi = w.lo + 400;
        dh_test_reference_clip(h, len, w.lo, w.hi, x, c);
        uint64_t total_before = 0, total_after = 0;
        for (int32_t i = w.lo; i <= w.hi; i++)
            total_before += h[i], total_after += c[i];
        ck_assert_uint_eq(total_before, total_after);
        /* The clipped histogram, equalized without a clip, is the clipped equalization. */
        uint16_t *ref = malloc(len * sizeof *ref);
        ck_assert_int_eq(dh_eq_lut_build(c, base, len, w, 1024, 0, ref), 0);
        ck_assert_int_eq(dh_eq_lut_build(h, base, len, w, 1024, x, lut), 0);
        /* Equal where the reference's cdf_min matches, i.e. everywhere inside the span; the
         * reference sees zeros outside the span the same way. */
        for (uint32_t i = 0; i < len; i++)
            ck_assert_msg(lut[i] == ref[i], "round %d x %g value %u: %u != %u", round, x, i,
                          lut[i], ref[i]);
        free(ref);
        free(v);
    }
    /* A clip limit flattens a spike: without it the spike takes most of the range. */
    memset(h, 0, len * sizeof *h);
    for (uint32_t i = 100; i < 900; i++)
        h[i] = 10;
    h[500] = 100000;
    dh_eq_window all = {0, 1023};
    dh_eq_lut_build(h, base, len, all, 1024, 0, lut);
    int jump_plain = lut[500] - lut[499];
    dh_eq_lut_build(h, base, len, all, 1024, 2.0, lut);
    int jump_clipped = lut[500] - lut[499];
    ck_assert_int_gt(jump_plain, 900);
    ck_assert_int_lt(jump_clipped, 10);
    free(h);
    free(c);
    free(lut);
}
END_TEST

START_TEST(voi_functions_at_known_points)
{
    /* LINEAR, c 40 w 400, 8-bit out: x <= -160 -> 0, x > 239 -> 255,
     * y = ((x - 39.5) / 399 + 0.5) * 255 truncated. */
    ck_assert_uint_eq(dh_voi_value(-160, 40, 400, DH_EQ_VOI_LINEAR, 256), 0);
    ck_assert_uint_eq(dh_voi_value(-159, 40, 400, DH_EQ_VOI_LINEAR, 256), 0); /* 0.639 */
    ck_assert_uint_eq(dh_voi_value(-158, 40, 400, DH_EQ_VOI_LINEAR, 256), 1); /* 1.278 */
    ck_assert_uint_eq(dh_voi_value(40, 40, 400, DH_EQ_VOI_LINEAR, 256), 127); /* 127.82 */
    ck_assert_uint_eq(dh_voi_value(239, 40, 400, DH_EQ_VOI_LINEAR, 256), 255);
    ck_assert_uint_eq(dh_voi_value(1e6, 40, 400, DH_EQ_VOI_LINEAR, 256), 255);
    /* Width 1: a threshold at c - 0.5. */
    ck_assert_uint_eq(dh_voi_value(99.5, 100, 1, DH_EQ_VOI_LINEAR, 4096), 0);
    ck_assert_uint_eq(dh_voi_value(99.6, 100, 1, DH_EQ_VOI_LINEAR, 4096), 4095);
    /* LINEAR_EXACT, c 0 w 100: edges at +-50, y = (x / 100 + 0.5) * 4095. */
    ck_assert_uint_eq(dh_voi_value(-50, 0, 100, DH_EQ_VOI_LINEAR_EXACT, 4096), 0);
    ck_assert_uint_eq(dh_voi_value(0, 0, 100, DH_EQ_VOI_LINEAR_EXACT, 4096), 2047);
    ck_assert_uint_eq(dh_voi_value(25, 0, 100, DH_EQ_VOI_LINEAR_EXACT, 4096), 3071);
    ck_assert_uint_eq(dh_voi_value(50, 0, 100, DH_EQ_VOI_LINEAR_EXACT, 4096), 4095);
    ck_assert_uint_eq(dh_voi_value(0.5, 0, 0.5, DH_EQ_VOI_LINEAR_EXACT, 4096), 4095);
    /* SIGMOID: half way at the center; 4 (x - c) / w = 2 gives 1 / (1 + e^-2) = 0.8808. */
    ck_assert_uint_eq(dh_voi_value(300, 300, 200, DH_EQ_VOI_SIGMOID, 256), 127);
    ck_assert_uint_eq(dh_voi_value(400, 300, 200, DH_EQ_VOI_SIGMOID, 256), 224);
    ck_assert_uint_eq(dh_voi_value(200, 300, 200, DH_EQ_VOI_SIGMOID, 256), 30);

    /* The table applies slope and intercept first (CR: 0.684, 200). */
    int32_t base;
    uint32_t len;
    dh_eq_table_range(12, 0, &base, &len);
    uint16_t *lut = malloc(len * sizeof *lut);
    ck_assert_int_eq(dh_voi_lut_build(base, len, 0.684, 200, 1500, 1000, DH_EQ_VOI_LINEAR, 256,
                                      lut), 0);
    for (uint32_t s = 0; s < len; s++)
        ck_assert_uint_eq(lut[s], dh_voi_value(0.684 * s + 200, 1500, 1000, DH_EQ_VOI_LINEAR,
                                               256));
    ck_assert_int_eq(dh_voi_lut_build(base, len, 1, 0, 0, 0.5, DH_EQ_VOI_LINEAR, 256, lut), -1);
    ck_assert_int_eq(dh_voi_lut_build(base, len, 1, 0, 0, 0, DH_EQ_VOI_SIGMOID, 256, lut), -1);
    ck_assert_int_eq(dh_voi_lut_build(base, len, 1, 0, NAN, 10, DH_EQ_VOI_SIGMOID, 256, lut),
                     -1);
    free(lut);
}
END_TEST

START_TEST(percentile_window_is_symmetric_rank_statistics)
{
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 99);
    int32_t base;
    uint32_t len;
    dh_eq_table_range(12, 1, &base, &len);
    uint64_t *h = malloc(len * sizeof *h), *m = malloc(len * sizeof *m);
    for (int round = 0; round < 60; round++) {
        size_t n = 1 + dh_test_rng_below(&rng, 3000);
        int32_t *v = random_values(&rng, n, base, len);
        histogram_of(v, n, base, len, h);
        qsort(v, n, sizeof *v, cmp_i32);
        double p = round == 0 ? 0 : dh_test_rng_below(&rng, 4999) / 100.0;
        dh_eq_window w, mw, mm;
        ck_assert_int_eq(dh_window_percentile(h, len, base, p, &w), 0);
        size_t k = (size_t)floor((double)n * p / 100.0);
        ck_assert_int_eq(w.lo, v[k]);
        ck_assert_int_eq(w.hi, v[n - 1 - k]);
        /* Mirror the image (s -> -1 - s maps the signed range onto itself): the window mirrors. */
        for (uint32_t i = 0; i < len; i++)
            m[i] = h[len - 1 - i];
        ck_assert_int_eq(dh_window_percentile(m, len, base, p, &mw), 0);
        ck_assert_int_eq(mw.lo, -1 - w.hi);
        ck_assert_int_eq(mw.hi, -1 - w.lo);
        ck_assert_int_eq(dh_window_minmax(h, len, base, &mm), 0);
        ck_assert_int_eq(mm.lo, v[0]);
        ck_assert_int_eq(mm.hi, v[n - 1]);
        free(v);
    }
    dh_eq_window w;
    ck_assert_int_eq(dh_window_percentile(h, len, base, 50, &w), -1);
    ck_assert_int_eq(dh_window_percentile(h, len, base, -1, &w), -1);
    memset(h, 0, len * sizeof *h);
    ck_assert_int_eq(dh_window_minmax(h, len, base, &w), -1);
    /* 5% of 100 pixels 0..99 cuts five at each end: 5..94 (DCMTK's histogram window is not
     * symmetric here). */
    for (int i = 0; i < 100; i++)
        h[i - base] = 1;
    ck_assert_int_eq(dh_window_percentile(h, len, base, 5, &w), 0);
    ck_assert_int_eq(w.lo, 5);
    ck_assert_int_eq(w.hi, 94);
    free(h);
    free(m);
}
END_TEST

START_TEST(modality_window_to_stored_values)
{
    static const double slopes[] = {1, 0.684, 2.5, 1e-3};
    static const double intercepts[] = {0, 200, -1024, 0.25};
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 5);
    for (int k = 0; k < 4; k++)
        for (int round = 0; round < 50; round++) {
            int32_t base;
            uint32_t len;
            dh_eq_table_range(12, round % 2, &base, &len);
            double m = slopes[k], b = intercepts[k];
            double lo = m * (base - 100.0 + dh_test_rng_below(&rng, len + 200)) + b +
                        (dh_test_rng_below(&rng, 3) - 1) * 0.3;
            double hi = lo + dh_test_rng_below(&rng, 3000) * m * 0.7;
            dh_eq_window w;
            ck_assert_int_eq(dh_window_to_stored(lo, hi, m, b, base, len, &w), 0);
            for (uint32_t i = 0; i < len; i++) {
                int32_t s = base + (int32_t)i;
                double x = m * s + b;
                int inside = x >= lo && x <= hi;
                ck_assert_int_eq(inside, s >= w.lo && s <= w.hi);
            }
        }
    dh_eq_window w;
    ck_assert_int_eq(dh_window_to_stored(0, 1, 0, 0, 0, 16, &w), -1);
    ck_assert_int_eq(dh_window_to_stored(0, 1, -1, 0, 0, 16, &w), -1);
}
END_TEST

START_TEST(application_per_volume_and_per_slice)
{
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 3);
    for (int sign = 0; sign < 2; sign++)
        for (int per_slice = 0; per_slice < 2; per_slice++) {
            int32_t base;
            uint32_t len;
            dh_eq_table_range(12, sign, &base, &len);
            size_t slice_len = 300 * 257, slices = 5;
            size_t n = slice_len * slices;
            uint16_t *data = malloc(n * sizeof *data), *out = malloc(n * sizeof *out);
            for (size_t i = 0; i < n; i++) {
                int32_t s = base + (int32_t)dh_test_rng_below(&rng, len);
                data[i] = (uint16_t)s; /* int16_t bit pattern when signed */
            }
            size_t tables = per_slice ? slices : 1;
            uint16_t *luts = malloc(tables * len * sizeof *luts);
            for (size_t i = 0; i < tables * len; i++)
                luts[i] = (uint16_t)dh_test_rng_next(&rng);
            for (int threads = 1; threads <= 3; threads++) {
                memset(out, 0xab, n * sizeof *out);
                ck_assert_int_eq(dh_lut_apply_cpu(data, sign, slice_len, slices, luts,
                                                  per_slice, base, len, threads, out), 0);
                for (size_t i = 0; i < n; i++) {
                    int32_t s = sign ? (int16_t)data[i] : data[i];
                    size_t z = i / slice_len;
                    ck_assert_uint_eq(out[i], luts[(per_slice ? z : 0) * len + (s - base)]);
                }
            }
            free(data);
            free(out);
            free(luts);
        }
}
END_TEST

int main(void)
{
    const dh_test tests[] = {DH_TEST(equalization_matches_formula_on_random_data),
                             DH_TEST(constant_and_two_value_images),
                             DH_TEST(clip_limit_matches_textbook_redistribution),
                             DH_TEST(voi_functions_at_known_points),
                             DH_TEST(percentile_window_is_symmetric_rank_statistics),
                             DH_TEST(modality_window_to_stored_values),
                             DH_TEST(application_per_volume_and_per_slice)};
    return dh_test_run(dh_test_suite("equalize_cpu", 120, DH_TESTS(tests)));
}
