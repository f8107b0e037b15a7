// SPDX-License-Identifier: MIT
/*
 * test_mi_float.c: float32 images in the mutual-information API (dicomhist.h section 5) on the
 * CPU: integer-valued floats over [l, h + 1] give the integer path's records over [l, h] bit for
 * bit (fixed, moving, both); the float axis against the rational definition on random values
 * (the rounded formula may move a value by at most one bin, only next to an edge); NaN,
 * infinities, values outside the range and v = hi; ranges that are refused; unknown sample types.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dicomhist.h"
#include "mi_joint.h"
#include "test_support.h"

enum { W = 61, H = 53, N = W * H, K = 3 };

static dh_mi_fixed *prepare(dh_ctx *ctx, const void *fixed, int type, const dh_mi_params *p)
{
    dh_mi_fixed *f = NULL;
    ck_assert_msg(dh_mi_fixed_create(ctx, fixed, type, N, NULL, p, &f) == DH_OK, "create: %s",
                  dh_ctx_error(ctx));
    return f;
}

/* The records agree in every score (moving_lo/hi differ by design: 0 for floats). */
static void assert_same_scores(const dh_mi_scores *a, const dh_mi_scores *b)
{
    ck_assert_msg(memcmp(a, b, offsetof(dh_mi_scores, moving_lo)) == 0,
                  "scores differ: mi %.17g vs %.17g, n %llu vs %llu", a->mi, b->mi,
                  (unsigned long long)a->n, (unsigned long long)b->n);
}

START_TEST(test_integer_valued_floats_match_integer_path)
{
    static const uint32_t bins[] = {2, 16, 50, 64, 100, 256};
    uint16_t *fi = malloc(N * 2), *mi = malloc(K * N * 2);
    float *ff = malloc(N * 4), *mf = malloc(K * N * 4);
    dh_test_fill_ct_like(fi, N, 3);
    dh_test_fill_ct_like(mi, K * N, 4);
    for (size_t i = 0; i < N; i++)
        ff[i] = (float)fi[i];
    for (size_t i = 0; i < K * N; i++)
        mf[i] = (float)mi[i];
    dh_ctx *ctx = dh_ctx_create();
    for (size_t b = 0; b < sizeof bins / sizeof bins[0]; b++) {
        dh_mi_params p;
        dh_mi_params_init(&p);
        p.device = DH_DEVICE_CPU;
        p.max_batch = K;
        p.bins_fixed = bins[b];
        p.bins_moving = bins[(b + 2) % 6];
        p.has_range_fixed = p.has_range_moving = 1;
        /* widths 1000 and 3000: (v - lo) * B / width is often an exact integer, where a
         * formula that rounds differently (a reciprocal, a fused step) would fall one bin low */
        p.fixed_lo = 10, p.fixed_hi = 1009, p.moving_lo = 0, p.moving_hi = 2999;
        p.fixed_lo_f32 = 10.0f, p.fixed_hi_f32 = 1010.0f;
        p.moving_lo_f32 = 0.0f, p.moving_hi_f32 = 3000.0f;
        dh_mi_fixed *fint = prepare(ctx, fi, DH_SAMPLE_UINT16, &p);
        dh_mi_fixed *ffl = prepare(ctx, ff, DH_SAMPLE_FLOAT32, &p);
        dh_mi_scores want[K], got[K];
        ck_assert_int_eq(dh_mi_evaluate(ctx, fint, mi, DH_SAMPLE_UINT16, N, K, NULL, 0, want),
                         DH_OK);
        ck_assert(want[0].n > N / 4); /* the ranges leave many pixels in */
        /* float moving against an integer fixed image, and floats on both sides */
        ck_assert_int_eq(dh_mi_evaluate(ctx, fint, mf, DH_SAMPLE_FLOAT32, N, K, NULL, 0, got),
                         DH_OK);
        for (int k = 0; k < K; k++) {
            assert_same_scores(&want[k], &got[k]);
            ck_assert_int_eq(got[k].moving_lo, 0);
            ck_assert_int_eq(got[k].moving_hi, 0);
        }
        ck_assert_int_eq(dh_mi_evaluate(ctx, ffl, mf, DH_SAMPLE_FLOAT32, N, K, NULL, 0, got),
                         DH_OK);
        for (int k = 0; k < K; k++)
            assert_same_scores(&want[k], &got[k]);
        /* the joint counts, too */
        uint32_t *ja = malloc((size_t)p.bins_fixed * p.bins_moving * 4);
        uint32_t *jb = malloc((size_t)p.bins_fixed * p.bins_moving * 4);
        ck_assert_int_eq(dh_mi_joint_histogram(ctx, fint, 2, ja), DH_OK);
        ck_assert_int_eq(dh_mi_joint_histogram(ctx, ffl, 2, jb), DH_OK);
        ck_assert(memcmp(ja, jb, (size_t)p.bins_fixed * p.bins_moving * 4) == 0);
        dh_mi_fixed_info info;
        dh_mi_fixed_get_info(ffl, &info);
        ck_assert_int_eq(info.fixed_lo, 0);
        ck_assert_uint_eq(info.fixed_valid, want[0].n ? info.fixed_valid : 0);
        free(ja), free(jb);
        dh_mi_fixed_free(fint);
        dh_mi_fixed_free(ffl);
    }
    dh_ctx_free(ctx);
    free(fi), free(mi), free(ff), free(mf);
}
END_TEST

/* The documented exactness: integer-valued v over [l, l + w] gives floor((v - l) * B / w) for
 * every integer offset, every B, widths that divide often and widths that never do. */
START_TEST(test_integer_valued_exhaustive)
{
    static const int32_t widths[] = {2, 7, 100, 1000, 3000, 4096, 4095, 65536};
    static const int32_t los[] = {0, -1024, 10};
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
        for (size_t l = 0; l < 3; l++)
            for (uint32_t bins = 2; bins <= 256; bins += (widths[w] > 5000 ? 31 : 1)) {
                dh_faxis ax;
                ck_assert_int_eq(dh_faxis_init(&ax, bins, (float)los[l],
                                               (float)(los[l] + widths[w])), 0);
                for (int32_t d = 0; d < widths[w]; d++) {
                    uint32_t got = dh_faxis_bin(bins, ax.lo, ax.hi, ax.width, (float)(los[l] + d));
                    uint32_t want = (uint32_t)((int64_t)d * bins / widths[w]);
                    if (got != want)
                        ck_abort_msg("width %d lo %d bins %u offset %d: bin %u, want %u",
                                     widths[w], los[l], bins, d, got, want);
                }
            }
}
END_TEST

/* The rounded formula against exact arithmetic: floor((v - lo) * B / (hi - lo)) in long double
 * (64-bit mantissa: exact enough to see the rational value's floor except within 2^-40 of an
 * edge). The float bin may sit one below or above it only where the rational value is within a
 * few float ulps of an integer. */
START_TEST(test_float_axis_against_rational)
{
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 77);
    static const float ranges[][2] = {{0.0f, 1.0f}, {-1.5f, 2.25f}, {-1000.0f, 3071.0f},
                                      {1e-3f, 1.001e-3f}, {-3e30f, 3e30f}};
    for (size_t r = 0; r < 5; r++)
        for (uint32_t bins = 2; bins <= 256; bins += 37) {
            dh_faxis ax;
            ck_assert_int_eq(dh_faxis_init(&ax, bins, ranges[r][0], ranges[r][1]), 0);
            for (int i = 0; i < 20000; i++) {
                double t = dh_test_rng_next(&rng) / 18446744073709551616.0;
                float v = (float)(ranges[r][0] + t * ((double)ranges[r][1] - ranges[r][0]));
                if (v < ranges[r][0] || v > ranges[r][1])
                    continue;
                uint32_t got = dh_faxis_bin(bins, ax.lo, ax.hi, ax.width, v);
                long double q = ((long double)v - ax.lo) * bins / ((long double)ax.hi - ax.lo);
                long double fl = floorl(q);
                uint32_t want = fl >= bins ? bins - 1 : (uint32_t)fl;
                if (got != want) {
                    long double dist = fabsl(q - roundl(q));
                    ck_assert_msg(dist < 1e-5L * bins && (got + 1 == want || got == want + 1),
                                  "v %.9g bins %u: got %u, want %u (q %.12Lg)", (double)v, bins,
                                  got, want, q);
                }
            }
        }
}
END_TEST

START_TEST(test_special_values)
{
    dh_faxis ax;
    ck_assert_int_eq(dh_faxis_init(&ax, 4, -1.0f, 1.0f), 0);
#define BIN(v) dh_faxis_bin(4, ax.lo, ax.hi, ax.width, (v))
    ck_assert_uint_eq(BIN(NAN), DH_MI_JOINT_SKIP);
    ck_assert_uint_eq(BIN(INFINITY), DH_MI_JOINT_SKIP);
    ck_assert_uint_eq(BIN(-INFINITY), DH_MI_JOINT_SKIP);
    ck_assert_uint_eq(BIN(nextafterf(-1.0f, -2.0f)), DH_MI_JOINT_SKIP);
    ck_assert_uint_eq(BIN(nextafterf(1.0f, 2.0f)), DH_MI_JOINT_SKIP);
    ck_assert_uint_eq(BIN(-1.0f), 0);
    ck_assert_uint_eq(BIN(-0.5f), 1); /* an exact edge opens its bin */
    ck_assert_uint_eq(BIN(nextafterf(-0.5f, -1.0f)), 0);
    ck_assert_uint_eq(BIN(0.0f), 2);
    ck_assert_uint_eq(BIN(-0.0f), 2);
    ck_assert_uint_eq(BIN(nextafterf(1.0f, 0.0f)), 3);
    ck_assert_uint_eq(BIN(1.0f), 3); /* hi: the last bin, closed */
#undef BIN
    /* Through the API: the pixels that do not count are left out of N. */
    float fixed[N], moving[N];
    for (size_t i = 0; i < N; i++) {
        fixed[i] = (float)(i % 7) - 3.0f;
        moving[i] = (float)(i % 5) / 4.0f; /* 0 .. 1 */
    }
    moving[0] = NAN, moving[1] = INFINITY, moving[2] = -INFINITY, moving[3] = 1.5f;
    moving[4] = -0.25f;                  /* below the moving range */
    fixed[5] = NAN, fixed[6] = INFINITY; /* fixed pixels that can never count */
    dh_ctx *ctx = dh_ctx_create();
    dh_mi_params p;
    dh_mi_params_init(&p);
    p.device = DH_DEVICE_CPU;
    p.bins_fixed = 7, p.bins_moving = 5;
    p.fixed_lo_f32 = -3.0f, p.fixed_hi_f32 = 3.0f;
    p.moving_lo_f32 = 0.0f, p.moving_hi_f32 = 1.0f;
    dh_mi_fixed *f = prepare(ctx, fixed, DH_SAMPLE_FLOAT32, &p);
    dh_mi_fixed_info info;
    dh_mi_fixed_get_info(f, &info);
    ck_assert_uint_eq(info.fixed_valid, N - 2);
    dh_mi_scores s;
    ck_assert_int_eq(dh_mi_evaluate(ctx, f, moving, DH_SAMPLE_FLOAT32, N, 1, NULL, 0, &s), DH_OK);
    ck_assert_uint_eq(s.n, N - 7);
    ck_assert_uint_eq(s.status, 0);
    /* Every pixel out: an empty record, NaN scores, no error. */
    float nans[N];
    for (size_t i = 0; i < N; i++)
        nans[i] = NAN;
    ck_assert_int_eq(dh_mi_evaluate(ctx, f, nans, DH_SAMPLE_FLOAT32, N, 1, NULL, 0, &s), DH_OK);
    ck_assert_uint_eq(s.n, 0);
    ck_assert_uint_eq(s.status, DH_MI_EMPTY);
    ck_assert(isnan(s.mi));
    dh_mi_fixed_free(f);
    dh_ctx_free(ctx);
}
END_TEST

START_TEST(test_refused)
{
    dh_faxis ax;
    ck_assert_int_eq(dh_faxis_init(&ax, 64, 1.0f, 1.0f), -1);
    ck_assert_int_eq(dh_faxis_init(&ax, 64, 2.0f, 1.0f), -1);
    ck_assert_int_eq(dh_faxis_init(&ax, 64, NAN, 1.0f), -1);
    ck_assert_int_eq(dh_faxis_init(&ax, 64, 0.0f, INFINITY), -1);
    ck_assert_int_eq(dh_faxis_init(&ax, 64, -3e38f, 3e38f), -1);   /* hi - lo overflows */
    ck_assert_int_eq(dh_faxis_init(&ax, 256, -1e38f, 1e38f), -1);  /* (hi - lo) * B overflows */
    ck_assert_int_eq(dh_faxis_init(&ax, 1, 0.0f, 1.0f), -1);
    ck_assert_int_eq(dh_faxis_init(&ax, 257, 0.0f, 1.0f), -1);

    float img[N];
    for (size_t i = 0; i < N; i++)
        img[i] = (float)i;
    dh_ctx *ctx = dh_ctx_create();
    dh_mi_params p;
    dh_mi_params_init(&p);
    p.device = DH_DEVICE_CPU;
    dh_mi_fixed *f = NULL;
    /* a float32 fixed image without its range */
    ck_assert_int_eq(dh_mi_fixed_create(ctx, img, DH_SAMPLE_FLOAT32, N, NULL, &p, &f),
                     DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(f);
    ck_assert_msg(strstr(dh_ctx_error(ctx), "fixed_lo_f32") != NULL, "%s", dh_ctx_error(ctx));
    ck_assert_int_eq(dh_mi_fixed_create(ctx, img, 3, N, NULL, &p, &f), DH_ERR_INVALID_ARGUMENT);
    ck_assert(strstr(dh_ctx_error(ctx), "sample type 3") != NULL);
    p.fixed_lo_f32 = 0.0f, p.fixed_hi_f32 = (float)N;
    f = prepare(ctx, img, DH_SAMPLE_FLOAT32, &p);
    /* float32 moving images without theirs; an unknown moving type */
    dh_mi_scores s;
    ck_assert_int_eq(dh_mi_evaluate(ctx, f, img, DH_SAMPLE_FLOAT32, N, 1, NULL, 0, &s),
                     DH_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(dh_ctx_error(ctx), "moving_lo_f32") != NULL, "%s", dh_ctx_error(ctx));
    ck_assert_int_eq(dh_mi_evaluate(ctx, f, img, -1, N, 1, NULL, 0, &s), DH_ERR_INVALID_ARGUMENT);
    /* stored values still work against the float fixed image */
    uint16_t ints[N];
    for (size_t i = 0; i < N; i++)
        ints[i] = (uint16_t)(i * 7 % 1000);
    ck_assert_int_eq(dh_mi_evaluate(ctx, f, ints, DH_SAMPLE_UINT16, N, 1, NULL, 0, &s), DH_OK);
    ck_assert_uint_eq(s.n, N);
    dh_mi_fixed_free(f);
    dh_ctx_free(ctx);
}
END_TEST

int main(void)
{
    const dh_test tests[] = {DH_TEST(test_integer_valued_floats_match_integer_path),
                             DH_TEST(test_integer_valued_exhaustive),
                             DH_TEST(test_float_axis_against_rational),
                             DH_TEST(test_special_values), DH_TEST(test_refused)};
    return dh_test_run(dh_test_suite("mi_float", 0, DH_TESTS(tests)));
}
