// SPDX-License-Identifier: MIT
/*
 * test_mi_joint_cpu.c: the joint-histogram CPU twin and the score arithmetic (kernels/mi_joint.h,
 * kernels/mi_scores.h) against independent references: the division-free bin against the
 * definition for every 16-bit value, prepared-image counts against the naive double loop, the
 * project's logarithm against libm, and scores against a float64 formula written from the
 * textbook definition (-sum p log p).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mi_joint.h"
#include "mi_scores.h"
#include "test_support.h"

/* The division-free bin equals the definition for every value of the sample domain. */
static void check_axis_all_values(uint32_t bins, int32_t lo, int32_t hi)
{
    dh_jaxis a;
    ck_assert_int_eq(dh_jaxis_init(&a, bins, lo, hi), 0);
    for (int32_t v = -32768; v <= 65535; v++) {
        uint32_t want = DH_MI_JOINT_SKIP;
        if (v >= lo && v <= hi)
            want = (uint32_t)(((int64_t)v - lo) * bins / ((int64_t)hi - lo + 1));
        uint32_t got = dh_jaxis_bin_fast(a.bins, a.lo, a.width, a.magic, v);
        if (got != want || dh_jaxis_bin(&a, v) != want)
            ck_abort_msg("bins %u range %d:%d value %d: fast %u, def %u, want %u", bins, lo, hi,
                         v, got, dh_jaxis_bin(&a, v), want);
        if (want != DH_MI_JOINT_SKIP &&
            dh_jaxis_mul_bin(dh_jaxis_mul_init(bins, a.width), (uint32_t)(v - lo)) != want)
            ck_abort_msg("bins %u range %d:%d value %d: multiply form %u, want %u", bins, lo, hi,
                         v, dh_jaxis_mul_bin(dh_jaxis_mul_init(bins, a.width), (uint32_t)(v - lo)),
                         want);
    }
}

START_TEST(test_axis_exact)
{
    static const uint32_t bins[] = {2, 3, 16, 50, 64, 100, 255, 256};
    for (size_t b = 0; b < sizeof bins / sizeof bins[0]; b++) {
        check_axis_all_values(bins[b], 0, 4095);
        check_axis_all_values(bins[b], 0, 65535);
        check_axis_all_values(bins[b], -32768, 32767);
        check_axis_all_values(bins[b], -1024, 3071);
        check_axis_all_values(bins[b], 7, 7);
        check_axis_all_values(bins[b], 100, 101);
    }
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 42);
    for (int i = 0; i < 24; i++) {
        int32_t lo = (int32_t)dh_test_rng_below(&rng, 65536) - 32768;
        int32_t hi = lo + (int32_t)dh_test_rng_below(&rng, (uint32_t)(65535 - lo) < 65536u
                                                               ? (uint32_t)(65535 - lo) + 1
                                                               : 65536u);
        check_axis_all_values(2 + dh_test_rng_below(&rng, 255), lo, hi);
    }
    /* The multiply form at every width up to 2^12 + 1 and at the widths around each power of
     * two (where its shift changes), every offset, several bin counts. */
    static const uint32_t mbins[] = {2, 3, 64, 100, 256};
    for (size_t b = 0; b < sizeof mbins / sizeof mbins[0]; b++)
        for (uint32_t w = 1; w <= 65536; w = w < 4097 ? w + 1 : w * 2) {
            for (int d = -1; d <= 1; d++) {
                const uint32_t width = w > 4097 ? w + d : w;
                if (width > 65536 || (w <= 4097 && d != 0))
                    continue;
                const dh_jaxis_mul f = dh_jaxis_mul_init(mbins[b], width);
                for (uint32_t off = 0; off < width; off++) {
                    const uint32_t want = (uint32_t)((uint64_t)off * mbins[b] / width);
                    if (dh_jaxis_mul_bin(f, off) != want)
                        ck_abort_msg("multiply form: bins %u width %u off %u: %u, want %u",
                                     mbins[b], width, off, dh_jaxis_mul_bin(f, off), want);
                }
            }
        }
}
END_TEST

START_TEST(test_axis_bounds)
{
    dh_jaxis a;
    ck_assert_int_eq(dh_jaxis_init(&a, 1, 0, 10), -1);
    ck_assert_int_eq(dh_jaxis_init(&a, 257, 0, 10), -1);
    ck_assert_int_eq(dh_jaxis_init(&a, 16, 10, 9), -1);
    ck_assert_int_eq(dh_jaxis_init(&a, 16, -32769, 0), -1);
    ck_assert_int_eq(dh_jaxis_init(&a, 16, 0, 65536), -1);
    ck_assert_int_eq(dh_jaxis_init(&a, 16, -32768, 65535), -1); /* wider than 65536 */
    ck_assert_int_eq(dh_jaxis_init(&a, 256, -32768, 32767), 0);
}
END_TEST

/* Random images with masks; returns fresh buffers. */
typedef struct pair {
    size_t n;
    uint16_t *fixed, *moving;
    uint8_t *fmask, *mvalid;
} pair;

static pair make_pair(size_t n, uint64_t seed, int ct_like)
{
    pair p = {n, malloc(n * 2), malloc(n * 2), malloc(n), malloc(n)};
    dh_test_rng rng;
    dh_test_rng_seed(&rng, seed);
    if (ct_like) {
        dh_test_fill_ct_like(p.fixed, n, seed);
        dh_test_fill_ct_like(p.moving, n, seed + 1);
    } else {
        for (size_t i = 0; i < n; i++) {
            p.fixed[i] = (uint16_t)dh_test_rng_next(&rng);
            p.moving[i] = (uint16_t)(p.fixed[i] / 3 + dh_test_rng_below(&rng, 4000));
        }
    }
    for (size_t i = 0; i < n; i++) {
        p.fmask[i] = dh_test_rng_below(&rng, 10) != 0;
        p.mvalid[i] = dh_test_rng_below(&rng, 7) != 0;
    }
    return p;
}

static void free_pair(pair *p)
{
    free(p->fixed);
    free(p->moving);
    free(p->fmask);
    free(p->mvalid);
}

static void check_counts(const pair *p, int is_signed, uint32_t bf, uint32_t bm, int32_t flo,
                         int32_t fhi, int32_t mlo, int32_t mhi, int masks)
{
    dh_jaxis fa, ma;
    ck_assert_int_eq(dh_jaxis_init(&fa, bf, flo, fhi), 0);
    ck_assert_int_eq(dh_jaxis_init(&ma, bm, mlo, mhi), 0);
    uint16_t *bins = malloc(p->n * 2);
    uint32_t *got = malloc((size_t)bf * bm * 4), *want = malloc((size_t)bf * bm * 4);
    uint64_t marginal[256];
    const uint8_t *fm = masks ? p->fmask : NULL, *mv = masks ? p->mvalid : NULL;
    size_t valid = dh_mi_bin_fixed(p->fixed, is_signed, p->n, fm, &fa, bins, marginal);
    size_t counted = dh_mi_joint_cpu(bins, bf, p->moving, is_signed, p->n, mv, &ma, got);
    dh_mi_joint_naive(p->fixed, is_signed, fm, &fa, p->moving, is_signed, mv, &ma, p->n, want);
    uint64_t total = 0, marg_total = 0;
    for (size_t i = 0; i < (size_t)bf * bm; i++) {
        if (got[i] != want[i])
            ck_abort_msg("bins %u:%u cell %zu: %u, naive %u", bf, bm, i, got[i], want[i]);
        total += want[i];
    }
    for (uint32_t f = 0; f < bf; f++)
        marg_total += marginal[f];
    ck_assert_uint_eq(total, counted);
    ck_assert_uint_eq(marg_total, valid);
    ck_assert_uint_ge(valid, counted);
    free(bins);
    free(got);
    free(want);
}

START_TEST(test_counts_match_naive)
{
    static const uint32_t bins[] = {2, 16, 50, 64, 100, 256};
    static const size_t sizes[] = {1, 7, 1023, 65537, 300 * 301};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        pair p = make_pair(sizes[s], 100 + s, s % 2);
        int32_t lo, hi, mlo, mhi;
        dh_mi_minmax(p.fixed, 0, p.n, NULL, &lo, &hi);
        dh_mi_minmax(p.moving, 0, p.n, NULL, &mlo, &mhi);
        for (size_t b = 0; b < sizeof bins / sizeof bins[0]; b++) {
            check_counts(&p, 0, bins[b], bins[b], lo, hi, mlo, mhi, 0);
            check_counts(&p, 0, bins[b], bins[b], lo, hi, mlo, mhi, 1);
        }
        check_counts(&p, 0, 7, 256, lo, hi, mlo, mhi, 1);   /* non-square */
        check_counts(&p, 0, 256, 3, lo, hi, mlo, mhi, 1);
        check_counts(&p, 0, 64, 32, 900, 1100, 1000, 1700, 1); /* ranges that cut */
        check_counts(&p, 1, 64, 64, -32768, 32767, -2000, 2000, 1); /* as signed data */
        free_pair(&p);
    }
}
END_TEST

START_TEST(test_minmax)
{
    pair p = make_pair(5000, 7, 0);
    int32_t lo = 1, hi = 2, want_lo = INT32_MAX, want_hi = INT32_MIN;
    size_t seen = 0;
    for (size_t i = 0; i < p.n; i++)
        if (p.fmask[i]) {
            int32_t v = (int16_t)p.fixed[i];
            want_lo = v < want_lo ? v : want_lo;
            want_hi = v > want_hi ? v : want_hi;
            seen++;
        }
    ck_assert_uint_eq(dh_mi_minmax(p.fixed, 1, p.n, p.fmask, &lo, &hi), seen);
    ck_assert_int_eq(lo, want_lo);
    ck_assert_int_eq(hi, want_hi);
    memset(p.fmask, 0, p.n);
    lo = 1, hi = 2;
    ck_assert_uint_eq(dh_mi_minmax(p.fixed, 1, p.n, p.fmask, &lo, &hi), 0);
    ck_assert_int_eq(lo, 1); /* untouched */
    ck_assert_int_eq(hi, 2);
    free_pair(&p);
}
END_TEST

START_TEST(test_log_against_libm)
{
    ck_assert(dh_mi_log(1.0) == 0.0);
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 9);
    double worst = 0;
    for (int i = 0; i < 2000000; i++) {
        double x = i < 1000000 ? (double)(i + 1)
                               : (double)(dh_test_rng_next(&rng) >> (dh_test_rng_below(&rng, 50)));
        if (x < 1)
            x = 1;
        double want = log(x), got = dh_mi_log(x);
        double err = want == 0 ? fabs(got) : fabs(got - want) / want;
        if (err > worst)
            worst = err;
    }
    ck_assert_msg(worst < 1e-15, "worst relative error %g", worst);
}
END_TEST

START_TEST(test_scores_against_reference)
{
    static const uint32_t shapes[][2] = {{2, 2}, {16, 16}, {50, 50}, {64, 64}, {100, 7}, {256, 256}};
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 5);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        uint32_t bf = shapes[s][0], bm = shapes[s][1];
        uint32_t *joint = calloc((size_t)bf * bm, 4);
        for (size_t i = 0; i < (size_t)bf * bm; i++) /* sparse, with one huge background cell */
            joint[i] = dh_test_rng_below(&rng, 3) ? 0 : dh_test_rng_below(&rng, 5000);
        joint[0] = 3000000000u;
        for (int log2 = 0; log2 <= 1; log2++) {
            dh_mi_values v;
            dh_mi_scores_from_joint(joint, bf, bm, 0, NULL, log2, &v);
            double mi, hf, hm, hj, k = log2 ? 1 / log(2.0) : 1;
            dh_test_reference_scores(joint, bf, bm, &mi, &hf, &hm, &hj);
            ck_assert_uint_eq(v.status, 0);
            dh_test_assert_close(v.h_fixed, hf * k, 1e-12, "H(fixed)");
            dh_test_assert_close(v.h_moving, hm * k, 1e-12, "H(moving)");
            dh_test_assert_close(v.h_joint, hj * k, 1e-12, "H(joint)");
            ck_assert_msg(fabs(v.mi - mi * k) <= 1e-12 * (hf + hm) * k, "MI %.17g vs %.17g", v.mi,
                          mi * k);
            dh_test_assert_close(v.nmi, (hf + hm) / hj, 1e-12, "NMI");
            dh_test_assert_close(v.ecc, 2 * mi / (hf + hm), 1e-10, "ECC");
        }
        free(joint);
    }
}
END_TEST

START_TEST(test_scores_degenerate)
{
    uint32_t joint[4 * 3] = {0};
    dh_mi_values v;
    dh_mi_scores_from_joint(joint, 4, 3, 0, NULL, 0, &v); /* nothing counted */
    ck_assert_uint_eq(v.status, DH_MI_FLAG_EMPTY);
    ck_assert_uint_eq(v.n, 0);
    ck_assert(isnan(v.mi) && isnan(v.nmi) && isnan(v.ecc) && isnan(v.h_joint));
    joint[5] = 1; /* one pixel */
    dh_mi_scores_from_joint(joint, 4, 3, 0, NULL, 0, &v);
    ck_assert_uint_eq(v.status, DH_MI_FLAG_ZERO_JOINT_ENTROPY);
    ck_assert(v.mi == 0 && v.h_fixed == 0 && v.h_moving == 0 && v.h_joint == 0);
    ck_assert(isnan(v.nmi) && isnan(v.ecc));
    joint[5] = 4000000000u; /* a constant pair of images */
    dh_mi_scores_from_joint(joint, 4, 3, 0, NULL, 1, &v);
    ck_assert_uint_eq(v.status, DH_MI_FLAG_ZERO_JOINT_ENTROPY);
    ck_assert(v.mi == 0 && v.h_joint == 0);
    /* Independent halves: MI is 0 up to rounding, NMI 1. */
    uint32_t ind[4] = {250, 250, 250, 250};
    dh_mi_scores_from_joint(ind, 2, 2, 0, NULL, 0, &v);
    ck_assert(fabs(v.mi) < 1e-15);
    dh_test_assert_close(v.h_joint, 2 * log(2.0), 1e-15, "H(joint)");
    dh_test_assert_close(v.nmi, 1.0, 1e-15, "NMI");
    /* Identical images: MI = H, NMI = 2, ECC = 1. */
    uint32_t diag[9] = {10, 0, 0, 0, 20, 0, 0, 0, 70};
    dh_mi_scores_from_joint(diag, 3, 3, 0, NULL, 0, &v);
    dh_test_assert_close(v.mi, v.h_fixed, 1e-15, "MI of identical images");
    dh_test_assert_close(v.nmi, 2.0, 1e-15, "NMI of identical images");
    dh_test_assert_close(v.ecc, 1.0, 1e-15, "ECC of identical images");
}
END_TEST

int main(void)
{
    const dh_test tests[] = {
        DH_TEST(test_axis_exact),         DH_TEST(test_axis_bounds),
        DH_TEST(test_counts_match_naive), DH_TEST(test_minmax),
        DH_TEST(test_log_against_libm),   DH_TEST(test_scores_against_reference),
        DH_TEST(test_scores_degenerate)};
    return dh_test_run(dh_test_suite("mi_joint_cpu", 120, DH_TESTS(tests)));
}
