// SPDX-License-Identifier: MIT
/*
 * test_mi.c: the public mutual-information API (dicomhist.h section 5) on the CPU: scores against
 * a float64 reference computed from naive counts, batches with strides and masks, the joint
 * histograms read back, log2, degenerate inputs (constant images, empty mask, one valid pixel,
 * 12- and 16-bit extremes), argument errors, and a real CT slice against itself and a shifted
 * copy.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dicomhist.h"
#include "mi_joint.h"
#include "test_support.h"

static dh_mi_fixed *prepare(dh_ctx *ctx, const void *fixed, int is_signed, size_t n,
                            const uint8_t *mask, const dh_mi_params *p)
{
    dh_mi_fixed *f = NULL;
    dh_status st = dh_mi_fixed_create(ctx, fixed, is_signed, n, mask, p, &f);
    ck_assert_msg(st == DH_OK, "create: %s", dh_ctx_error(ctx));
    return f;
}

/* Naive counts, then -sum p ln p with log1p: written without the library's arithmetic. */
static void reference(const void *fixed, int fs, const uint8_t *fmask, const dh_jaxis *fa,
                      const void *moving, int ms, const uint8_t *valid, const dh_jaxis *ma,
                      size_t n, uint32_t *joint, double *mi, double *hf, double *hm, double *hj,
                      uint64_t *count)
{
    dh_mi_joint_naive(fixed, fs, fmask, fa, moving, ms, valid, ma, n, joint);
    *count = (uint64_t)dh_test_reference_scores(joint, fa->bins, ma->bins, mi, hf, hm, hj);
}

START_TEST(test_batch_against_reference)
{
    enum { N = 211 * 97, K = 5 };
    static const uint32_t shapes[][2] = {{2, 2}, {16, 16}, {50, 50}, {64, 64}, {100, 100},
                                         {256, 256}, {32, 200}};
    uint16_t *fixed = malloc(N * 2), *moving = malloc((size_t)K * (N + 3) * 2);
    uint8_t *fmask = malloc(N), *valid = malloc((size_t)K * (N + 1));
    uint32_t *joint = malloc(256 * 256 * 4), *got_joint = malloc(256 * 256 * 4);
    dh_test_fill_ct_like(fixed, N, 1);
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 2);
    for (size_t k = 0; k < K; k++) /* moving k: the fixed image blurred by k steps of noise */
        for (size_t i = 0; i < N; i++)
            moving[k * (N + 3) + i] = (uint16_t)(fixed[i] / 2 + dh_test_rng_below(&rng, 1 + 300 * k));
    for (size_t i = 0; i < N; i++)
        fmask[i] = dh_test_rng_below(&rng, 8) != 0;
    for (size_t i = 0; i < (size_t)K * (N + 1); i++)
        valid[i] = dh_test_rng_below(&rng, 5) != 0;
    dh_ctx *ctx = dh_ctx_create();
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        for (int masked = 0; masked <= 1; masked++) {
            dh_mi_params p;
            dh_mi_params_init(&p);
            p.bins_fixed = shapes[s][0];
            p.bins_moving = shapes[s][1];
            p.device = DH_DEVICE_CPU;
            p.max_batch = K;
            dh_mi_fixed *f = prepare(ctx, fixed, 0, N, masked ? fmask : NULL, &p);
            dh_mi_fixed_info info;
            dh_mi_fixed_get_info(f, &info);
            ck_assert_int_eq(info.device, DH_DEVICE_CPU);
            dh_mi_scores out[K];
            ck_assert_int_eq(dh_mi_evaluate(ctx, f, moving, 0, N + 3, K, masked ? valid : NULL,
                                            N + 1, out), DH_OK);
            for (size_t k = 0; k < K; k++) {
                const uint16_t *mk = moving + k * (N + 3);
                const uint8_t *vk = masked ? valid + k * (N + 1) : NULL;
                int32_t flo, fhi, mlo, mhi;
                dh_mi_minmax(fixed, 0, N, masked ? fmask : NULL, &flo, &fhi);
                dh_mi_minmax(mk, 0, N, vk, &mlo, &mhi);
                ck_assert_int_eq(info.fixed_lo, flo);
                ck_assert_int_eq(info.fixed_hi, fhi);
                ck_assert_int_eq(out[k].moving_lo, mlo);
                ck_assert_int_eq(out[k].moving_hi, mhi);
                dh_jaxis fa, ma;
                dh_jaxis_init(&fa, p.bins_fixed, flo, fhi);
                dh_jaxis_init(&ma, p.bins_moving, mlo, mhi);
                double mi, hf, hm, hj;
                uint64_t n;
                reference(fixed, 0, masked ? fmask : NULL, &fa, mk, 0, vk, &ma, N, joint, &mi,
                          &hf, &hm, &hj, &n);
                ck_assert_int_eq(dh_mi_joint_histogram(ctx, f, (uint32_t)k, got_joint), DH_OK);
                ck_assert(memcmp(joint, got_joint, (size_t)p.bins_fixed * p.bins_moving * 4) == 0);
                ck_assert_uint_eq(out[k].n, n);
                ck_assert_uint_eq(out[k].status, 0);
                dh_test_assert_close(out[k].h_fixed, hf, 1e-12, "H(fixed)");
                dh_test_assert_close(out[k].h_moving, hm, 1e-12, "H(moving)");
                dh_test_assert_close(out[k].h_joint, hj, 1e-12, "H(joint)");
                ck_assert_msg(fabs(out[k].mi - mi) <= 1e-12 * (hf + hm), "MI %.17g vs %.17g",
                              out[k].mi, mi);
                dh_test_assert_close(out[k].nmi, (hf + hm) / hj, 1e-12, "NMI");
                dh_test_assert_close(out[k].ecc, 2 * mi / (hf + hm), 1e-9, "ECC");
                if (!masked)
                    dh_test_assert_close(info.h_fixed, hf, 1e-12, "cached H(fixed)");
            }
            /* MI falls as the noise grows. */
            for (size_t k = 1; k < K; k++)
                ck_assert(out[k].mi < out[k - 1].mi);
            /* Repeated evaluations give the same bits. */
            dh_mi_scores again[K];
            ck_assert_int_eq(dh_mi_evaluate(ctx, f, moving, 0, N + 3, K, masked ? valid : NULL,
                                            N + 1, again), DH_OK);
            ck_assert(memcmp(out, again, sizeof out) == 0);
            dh_mi_fixed_free(f);
        }
    }
    dh_ctx_free(ctx);
    free(fixed);
    free(moving);
    free(fmask);
    free(valid);
    free(joint);
    free(got_joint);
}
END_TEST

START_TEST(test_log2_and_explicit_ranges)
{
    enum { N = 4099 };
    int16_t fixed[N], moving[N];
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 3);
    for (size_t i = 0; i < N; i++) {
        fixed[i] = (int16_t)((int)dh_test_rng_below(&rng, 4096) - 2048);
        moving[i] = (int16_t)(fixed[i] / 4 + (int)dh_test_rng_below(&rng, 200));
    }
    dh_ctx *ctx = dh_ctx_create();
    dh_mi_params p;
    dh_mi_params_init(&p);
    p.device = DH_DEVICE_CPU;
    p.has_range_fixed = 1, p.fixed_lo = -1000, p.fixed_hi = 1000;
    p.has_range_moving = 1, p.moving_lo = -300, p.moving_hi = 400;
    dh_mi_fixed *f = prepare(ctx, fixed, 1, N, NULL, &p);
    dh_mi_scores nats, bits;
    ck_assert_int_eq(dh_mi_evaluate(ctx, f, moving, 1, N, 1, NULL, 0, &nats), DH_OK);
    dh_mi_fixed_free(f);
    p.log2 = 1;
    f = prepare(ctx, fixed, 1, N, NULL, &p);
    ck_assert_int_eq(dh_mi_evaluate(ctx, f, moving, 1, N, 1, NULL, 0, &bits), DH_OK);
    dh_test_assert_close(bits.mi, nats.mi / log(2.0), 1e-12, "MI in bits");
    dh_test_assert_close(bits.h_joint, nats.h_joint / log(2.0), 1e-14, "H(joint) in bits");
    dh_test_assert_close(bits.nmi, nats.nmi, 1e-14, "NMI is base-free");
    ck_assert_int_eq(bits.moving_lo, -300);
    ck_assert_int_eq(bits.moving_hi, 400);
    /* Only pixels inside both ranges count. */
    uint64_t inside = 0;
    for (size_t i = 0; i < N; i++)
        inside += fixed[i] >= -1000 && fixed[i] <= 1000 && moving[i] >= -300 && moving[i] <= 400;
    ck_assert_uint_eq(bits.n, inside);
    ck_assert_uint_lt(inside, N);
    dh_mi_fixed_free(f);
    dh_ctx_free(ctx);
}
END_TEST

START_TEST(test_degenerate)
{
    enum { N = 1000 };
    uint16_t constant[N], varied[N], extremes[N];
    uint8_t none[N], one[N];
    for (size_t i = 0; i < N; i++) {
        constant[i] = 1234;
        varied[i] = (uint16_t)(i * 37 % 4096);
        extremes[i] = (i % 2) ? 65535 : 0;
        none[i] = 0;
        one[i] = i == 500;
    }
    dh_ctx *ctx = dh_ctx_create();
    dh_mi_params p;
    dh_mi_params_init(&p);
    p.device = DH_DEVICE_CPU;
    dh_mi_scores s;
    /* Constant pair: MI 0, NMI undefined. */
    dh_mi_fixed *f = prepare(ctx, constant, 0, N, NULL, &p);
    ck_assert_int_eq(dh_mi_evaluate(ctx, f, constant, 0, N, 1, NULL, 0, &s), DH_OK);
    ck_assert_uint_eq(s.status, DH_MI_ZERO_JOINT_ENTROPY);
    ck_assert(s.mi == 0 && s.h_joint == 0 && isnan(s.nmi) && isnan(s.ecc));
    ck_assert_uint_eq(s.n, N);
    /* Constant fixed, varied moving: MI 0, H(joint) = H(moving), NMI exactly 1. */
    ck_assert_int_eq(dh_mi_evaluate(ctx, f, varied, 0, N, 1, NULL, 0, &s), DH_OK);
    ck_assert_uint_eq(s.status, 0);
    ck_assert(s.h_fixed == 0 && s.h_joint == s.h_moving && s.mi == 0 && s.nmi == 1);
    /* An empty moving validity mask: nothing counts. */
    ck_assert_int_eq(dh_mi_evaluate(ctx, f, varied, 0, N, 1, none, 0, &s), DH_OK);
    ck_assert_uint_eq(s.status, DH_MI_EMPTY);
    ck_assert(s.n == 0 && isnan(s.mi) && isnan(s.nmi) && isnan(s.h_fixed));
    dh_mi_fixed_free(f);
    /* An empty fixed mask. */
    f = prepare(ctx, varied, 0, N, none, &p);
    ck_assert_int_eq(dh_mi_evaluate(ctx, f, varied, 0, N, 1, NULL, 0, &s), DH_OK);
    ck_assert_uint_eq(s.status, DH_MI_EMPTY);
    dh_mi_fixed_free(f);
    /* A single valid pixel. */
    f = prepare(ctx, varied, 0, N, one, &p);
    ck_assert_int_eq(dh_mi_evaluate(ctx, f, varied, 0, N, 1, NULL, 0, &s), DH_OK);
    ck_assert_uint_eq(s.status, DH_MI_ZERO_JOINT_ENTROPY);
    ck_assert_uint_eq(s.n, 1);
    dh_mi_fixed_free(f);
    /* 16-bit extremes, unsigned and signed, against themselves: two equal halves, MI = ln 2. */
    p.bins_fixed = p.bins_moving = 256;
    f = prepare(ctx, extremes, 0, N, NULL, &p);
    ck_assert_int_eq(dh_mi_evaluate(ctx, f, extremes, 0, N, 1, NULL, 0, &s), DH_OK);
    dh_test_assert_close(s.mi, log(2.0), 1e-15, "MI of 0/65535 halves");
    dh_test_assert_close(s.nmi, 2.0, 1e-15, "NMI");
    ck_assert_int_eq(s.moving_lo, 0);
    ck_assert_int_eq(s.moving_hi, 65535);
    dh_mi_fixed_free(f);
    int16_t sext[N];
    for (size_t i = 0; i < N; i++)
        sext[i] = (i % 4) ? 32767 : -32768;
    f = prepare(ctx, sext, 1, N, NULL, &p);
    ck_assert_int_eq(dh_mi_evaluate(ctx, f, sext, 1, N, 1, NULL, 0, &s), DH_OK);
    double h = -(0.25 * log(0.25) + 0.75 * log(0.75));
    dh_test_assert_close(s.mi, h, 1e-15, "MI of int16 extremes");
    ck_assert_int_eq(s.moving_lo, -32768);
    dh_mi_fixed_free(f);
    /* 12-bit extremes with an explicit full 12-bit range: 0 in bin 0, 4095 in bin B-1. */
    uint16_t twelve[N];
    for (size_t i = 0; i < N; i++)
        twelve[i] = (i % 3) ? 4095 : 0;
    p.bins_fixed = 64, p.bins_moving = 100;
    p.has_range_fixed = p.has_range_moving = 1;
    p.fixed_lo = p.moving_lo = 0;
    p.fixed_hi = p.moving_hi = 4095;
    f = prepare(ctx, twelve, 0, N, NULL, &p);
    ck_assert_int_eq(dh_mi_evaluate(ctx, f, twelve, 0, N, 1, NULL, 0, &s), DH_OK);
    uint32_t joint[64 * 100];
    ck_assert_int_eq(dh_mi_joint_histogram(ctx, f, 0, joint), DH_OK);
    ck_assert_uint_eq(joint[0], (N + 2) / 3);
    ck_assert_uint_eq(joint[63 * 100 + 99], N - (N + 2) / 3);
    dh_mi_fixed_free(f);
    dh_ctx_free(ctx);
}
END_TEST

START_TEST(test_argument_errors)
{
    uint16_t img[64] = {1, 2, 3};
    dh_ctx *ctx = dh_ctx_create();
    dh_mi_params p;
    dh_mi_params_init(&p);
    p.device = DH_DEVICE_CPU;
    dh_mi_fixed *f = NULL;
    p.bins_fixed = 1;
    ck_assert_int_eq(dh_mi_fixed_create(ctx, img, 0, 64, NULL, &p, &f), DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(f);
    ck_assert(strstr(dh_ctx_error(ctx), "bins") != NULL);
    p.bins_fixed = 257;
    ck_assert_int_eq(dh_mi_fixed_create(ctx, img, 0, 64, NULL, &p, &f), DH_ERR_INVALID_ARGUMENT);
    p.bins_fixed = 64;
    p.has_range_moving = 1, p.moving_lo = 10, p.moving_hi = 9;
    ck_assert_int_eq(dh_mi_fixed_create(ctx, img, 0, 64, NULL, &p, &f), DH_ERR_INVALID_ARGUMENT);
    ck_assert(strstr(dh_ctx_error(ctx), "moving range") != NULL);
    p.has_range_moving = 0;
    ck_assert_int_eq(dh_mi_fixed_create(ctx, img, 0, 0, NULL, &p, &f), DH_ERR_INVALID_ARGUMENT);
    p.struct_size = 4;
    ck_assert_int_eq(dh_mi_fixed_create(ctx, img, 0, 64, NULL, &p, &f), DH_ERR_INVALID_ARGUMENT);
    dh_mi_params_init(&p);
    p.device = DH_DEVICE_CPU;
    p.max_batch = 2;
    f = prepare(ctx, img, 0, 64, NULL, &p);
    dh_mi_scores s[3];
    ck_assert_int_eq(dh_mi_evaluate(ctx, f, img, 0, 64, 3, NULL, 0, s), DH_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(dh_mi_evaluate(ctx, f, img, 0, 10, 2, NULL, 0, s), DH_ERR_INVALID_ARGUMENT);
    uint32_t joint[64 * 64];
    ck_assert_int_eq(dh_mi_joint_histogram(ctx, f, 0, joint), DH_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(dh_mi_evaluate_device(ctx, f, img, 0, 64, 1, NULL, 0, NULL, s),
                     DH_ERR_NO_DEVICE);
    dh_mi_fixed_free(f);
    dh_mi_fixed_free(NULL);
    if (!dh_cuda_available()) {
        p.device = DH_DEVICE_CUDA;
        ck_assert_int_eq(dh_mi_fixed_create(ctx, img, 0, 64, NULL, &p, &f), DH_ERR_NO_DEVICE);
        p.device = DH_DEVICE_AUTO; /* falls back to the CPU silently */
        f = prepare(ctx, img, 0, 64, NULL, &p);
        dh_mi_fixed_info info;
        dh_mi_fixed_get_info(f, &info);
        ck_assert_int_eq(info.device, DH_DEVICE_CPU);
        dh_mi_fixed_free(f);
    }
    dh_ctx_free(ctx);
}
END_TEST

/* A real CT slice: against itself MI = H and NMI = 2; against a copy shifted by a few pixels MI
 * drops, and further shifts drop it more. */
START_TEST(test_real_ct_shift)
{
    dh_ctx *ctx = dh_ctx_create();
    dh_volume *v = NULL;
    ck_assert_int_eq(dh_volume_read_file(ctx, dh_test_shared("pydicom_CT_small.dcm"), &v), DH_OK);
    uint32_t rows = dh_volume_rows(v), cols = dh_volume_columns(v);
    size_t n = (size_t)rows * cols;
    const int16_t *ct = dh_volume_data(v);
    ck_assert(dh_volume_is_signed(v));
    int16_t *shifted = malloc(n * 2 * 3);
    for (int s = 0; s < 3; s++)
        for (uint32_t r = 0; r < rows; r++)
            for (uint32_t c = 0; c < cols; c++)
                shifted[s * n + r * cols + c] = ct[r * cols + (c + 2 * s) % cols];
    dh_mi_params p;
    dh_mi_params_init(&p);
    p.device = DH_DEVICE_CPU;
    p.max_batch = 3;
    dh_mi_fixed *f = prepare(ctx, ct, 1, n, NULL, &p);
    dh_mi_scores s[3];
    ck_assert_int_eq(dh_mi_evaluate(ctx, f, shifted, 1, n, 3, NULL, 0, s), DH_OK);
    dh_test_assert_close(s[0].mi, s[0].h_fixed, 1e-14, "MI with itself");
    dh_test_assert_close(s[0].nmi, 2.0, 1e-14, "NMI with itself");
    ck_assert(s[1].mi < s[0].mi && s[2].mi < s[1].mi);
    ck_assert(s[0].h_fixed > 1.0); /* a real image, not a flat one */
    dh_mi_fixed_free(f);
    free(shifted);
    dh_volume_free(v);
    dh_ctx_free(ctx);
}
END_TEST

int main(int argc, char **argv)
{
    const dh_test synthetic[] = {DH_TEST(test_batch_against_reference),
                                 DH_TEST(test_log2_and_explicit_ranges), DH_TEST(test_degenerate),
                                 DH_TEST(test_argument_errors)};
    const dh_test real_files[] = {DH_TEST(test_real_ct_shift)};
    return dh_test_main(argc, argv, "mi", 120, DH_TESTS(synthetic), DH_TESTS(real_files));
}
