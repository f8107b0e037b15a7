// SPDX-License-Identifier: MIT
/*
 * test_clahe_fast.c: the division-free bin and blend of kernels/clahe_fast.h, which the GPU twin
 * of CLAHE uses, equal clahe.h's own functions (the definition) on the CPU, where the same code
 * compiles: every value of windows of awkward widths against every bin count that matters, and
 * blends at the largest denominators the shapes allow, at table entries 0, 65535 and between.
 * Runs everywhere (no GPU needed), so the arithmetic is checked in CI.
 */
#include "clahe_fast.h"
#include "test_support.h"

/* Every value of the window [lo, lo + width - 1] against dh_clahe_bin. */
static void check_window(int32_t lo, uint32_t width, uint32_t bins)
{
    int32_t hi = lo + (int32_t)width - 1;
    uint32_t used = dh_clahe_bins_used(bins, width);
    uint64_t magic = dh_clahe_bin_magic(width);
    for (int64_t v = lo; v <= hi; v++) {
        uint32_t want = dh_clahe_bin((int32_t)v, lo, hi, used);
        uint32_t got = dh_clahe_bin_fast((int32_t)v, lo, used, magic);
        if (want != got)
            ck_abort_msg("window [%d, %d], %u bins, value %lld: bin %u, fast %u", lo, hi, used,
                         (long long)v, want, got);
    }
}

START_TEST(bin_by_multiply_equals_the_division)
{
    static const uint32_t widths[] = {1, 2, 3, 7, 255, 256, 257, 4095, 4096, 4097, 40000,
                                      65521, 65535, 65536};
    static const uint32_t bins[] = {0, 1, 2, 3, 255, 256, 4096, 4097, 65535, 65536};
    for (size_t w = 0; w < sizeof widths / sizeof *widths; w++)
        for (size_t b = 0; b < sizeof bins / sizeof *bins; b++)
            check_window(widths[w] == 65536 ? 0 : -1000, widths[w], bins[b]);
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 21);
    for (int k = 0; k < 60; k++) {
        uint32_t width = 1 + dh_test_rng_below(&rng, 65536);
        check_window(-32768 + (int32_t)dh_test_rng_below(&rng, 65537 - width), width,
                     dh_test_rng_below(&rng, 65537));
    }
}
END_TEST

static uint32_t entry(dh_test_rng *rng)
{
    uint32_t r = dh_test_rng_below(rng, 4);
    return r == 0 ? 0 : r == 1 ? 65535 : dh_test_rng_below(rng, 65536);
}

/* A random pixel's axis weight along an axis of n pixels cut into `tiles`. */
static dh_clahe_axis_weight axis(dh_test_rng *rng, uint32_t n, uint32_t tiles)
{
    return dh_clahe_axis_at(n, tiles, dh_test_rng_below(rng, n));
}

START_TEST(blends_equal_the_exact_rounding)
{
    /* Axis lengths and tile counts up to the largest denominators (two tiles of 65535). */
    static const uint32_t axes[][2] = {{65535, 2}, {65535, 3}, {65535, 65535}, {3000, 8},
                                       {512, 8},   {7, 3},     {1, 1},          {40000, 2},
                                       {2, 2},     {65535, 1}, {1000, 999}};
    const size_t na = sizeof axes / sizeof *axes;
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 99);
    for (int k = 0; k < 400000; k++) {
        const uint32_t *a = axes[dh_test_rng_below(&rng, (uint32_t)na)];
        const uint32_t *b = axes[dh_test_rng_below(&rng, (uint32_t)na)];
        const uint32_t *c = axes[dh_test_rng_below(&rng, (uint32_t)na)];
        dh_clahe_axis_weight ax = axis(&rng, a[0], a[1]), ay = axis(&rng, b[0], b[1]);
        dh_clahe_axis_weight az = axis(&rng, c[0], c[1]);
        uint32_t t[8];
        for (int j = 0; j < 8; j++)
            t[j] = entry(&rng);
        uint16_t want2 = dh_clahe_blend2(ax, ay, t[0], t[1], t[2], t[3]);
        uint16_t got2 = dh_clahe_blend2_fast(ax, ay, t[0], t[1], t[2], t[3]);
        if (want2 != got2)
            ck_abort_msg("2D: weights %u/%u, %u/%u: %u, fast %u", ax.w1, ax.den, ay.w1, ay.den,
                         want2, got2);
        if (!dh_clahe_blend3_fast_ok(ax.den, ay.den, az.den))
            continue;
        uint16_t want3 = dh_clahe_blend3(ax, ay, az, t), got3 = dh_clahe_blend3_fast(ax, ay, az, t);
        if (want3 != got3)
            ck_abort_msg("3D: weights %u/%u, %u/%u, %u/%u: %u, fast %u", ax.w1, ax.den, ay.w1,
                         ay.den, az.w1, az.den, want3, got3);
    }
    /* The bound itself: 8 tiles of 512 qualifies, two tiles of 65535 on all three axes not. */
    ck_assert(dh_clahe_blend3_fast_ok(128, 128, 128));
    ck_assert(!dh_clahe_blend3_fast_ok(65535, 65535, 65535));
}
END_TEST

/* The rounding at its edges: exact halves round up, and quotients just below an integer stay. */
START_TEST(division_corrects_the_float_quotient)
{
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 7);
    for (int k = 0; k < 200000; k++) {
        uint64_t d = 1 + (dh_test_rng_next(&rng) >> (20 + dh_test_rng_below(&rng, 44)));
        if (d >= ((uint64_t)1 << 45))
            d = ((uint64_t)1 << 45) - 1;
        uint64_t q = dh_test_rng_below(&rng, 65537);
        uint64_t r = dh_test_rng_below(&rng, 3) == 0 ? d - 1 : dh_test_rng_next(&rng) % d;
        uint64_t n = q * d + r;
        ck_assert_uint_eq(dh_clahe_div_small(n, d), q);
    }
}
END_TEST

int main(void)
{
    const dh_test tests[] = {DH_TEST(bin_by_multiply_equals_the_division),
                             DH_TEST(blends_equal_the_exact_rounding),
                             DH_TEST(division_corrects_the_float_quotient)};
    return dh_test_run(dh_test_suite("clahe_fast", 120, DH_TESTS(tests)));
}
