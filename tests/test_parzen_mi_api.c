// SPDX-License-Identifier: MIT
/*
 * test_parzen_mi_api.c: the public Parzen-window (Mattes) MI API (dicomhist.h section 5b)
 * against the CPU twin it wraps (kernels/mi_parzen.h, itself tested against a float64 reference
 * and SimpleITK): the same records and gradient bits for every sample type, both fixed windows,
 * MI and NMI, bits, given ranges, masks and batches, whatever the number of threads; defined
 * results on constant and two-value images; every bad argument refused with a message naming it;
 * device pointers refused without CUDA.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dicomhist.h"
#include "mi_parzen.h"
#include "parzen_test_data.h"
#include "test_support.h"

static int kernel_type(int type)
{
    return type == DH_SAMPLE_FLOAT32 ? DH_PARZEN_FLOAT32
                                     : (type == DH_SAMPLE_INT16 ? DH_PARZEN_INT16 : DH_PARZEN_UINT16);
}

/* One configuration: the API's records and gradient equal the twin's, with 1 and 3 threads. */
static void compare(int ftype, int mtype, uint32_t bins, int window, int nmi, int log2,
                    int ranges, int masks, uint32_t count, size_t n, uint64_t seed)
{
    void *fixed = dh_parzen_test_images(ftype, n, seed, 97);
    void *moving = dh_parzen_test_images(mtype, n * count, seed + 7, 89);
    uint8_t *fmask = dh_parzen_test_mask(n, seed, 7);
    uint8_t *mmask = dh_parzen_test_mask(n * count, seed + 1, 5);

    dh_parzen_mi_params p;
    dh_parzen_mi_params_init(&p);
    p.bins = bins, p.fixed_window = window, p.gradient_of = nmi, p.log2 = log2;
    dh_parzen_params k = {bins, (uint32_t)window, (uint32_t)nmi, log2, 0, 0, 0, 0, 0, 0};
    if (ranges) {
        const double lo = mtype == DH_SAMPLE_FLOAT32 ? 0.0 : (mtype == DH_SAMPLE_INT16 ? -500 : 300);
        const double hi = mtype == DH_SAMPLE_FLOAT32 ? 0.5 : (mtype == DH_SAMPLE_INT16 ? 1500 : 3000);
        p.has_range_fixed = p.has_range_moving = 1;
        p.fixed_lo = ftype == DH_SAMPLE_FLOAT32 ? -0.25 : 0.0;
        p.fixed_hi = ftype == DH_SAMPLE_FLOAT32 ? 0.6 : 2000.0;
        p.moving_lo = lo, p.moving_hi = hi;
        k.fixed_range_given = k.moving_range_given = 1;
        k.fixed_lo = p.fixed_lo, k.fixed_hi = p.fixed_hi, k.moving_lo = lo, k.moving_hi = hi;
    }
    dh_mi_values *want = calloc(count, sizeof *want);
    float *want_grad = calloc(n * count, sizeof *want_grad);
    dh_parzen_image fi = {fixed, kernel_type(ftype), masks ? fmask : NULL};
    dh_parzen_image mi = {moving, kernel_type(mtype), masks ? mmask : NULL};
    ck_assert_int_eq(dh_parzen_mi_cpu(&k, n, &fi, &mi, count, want, want_grad), DH_PARZEN_OK);

    dh_ctx *ctx = dh_ctx_create();
    dh_parzen_mi *pm = NULL;
    ck_assert_msg(dh_parzen_mi_create(ctx, &p, &pm) == DH_OK, "%s", dh_ctx_error(ctx));
    for (int threads = 1; threads <= 3; threads += 2) {
        ck_assert_int_eq(dh_ctx_set_threads(ctx, threads), DH_OK);
        dh_mi_scores *got = calloc(count, sizeof *got);
        float *grad = calloc(n * count, sizeof *grad);
        ck_assert_msg(dh_parzen_mi_evaluate(ctx, pm, n, fixed, ftype, masks ? fmask : NULL,
                                            moving, mtype, masks ? mmask : NULL, count, got,
                                            grad) == DH_OK, "%s", dh_ctx_error(ctx));
        ck_assert_str_eq(dh_ctx_error(ctx), "");
        ck_assert_msg(memcmp(got, want, count * sizeof *got) == 0,
                      "records differ from the twin (types %d/%d, %u bins, %d threads)", ftype,
                      mtype, bins, threads);
        ck_assert_msg(memcmp(grad, want_grad, n * count * sizeof *grad) == 0,
                      "gradient differs from the twin (types %d/%d, %u bins, %d threads)", ftype,
                      mtype, bins, threads);
        /* without a gradient buffer: the same records */
        memset(got, 0, count * sizeof *got);
        ck_assert_int_eq(dh_parzen_mi_evaluate(ctx, pm, n, fixed, ftype, masks ? fmask : NULL,
                                               moving, mtype, masks ? mmask : NULL, count, got,
                                               NULL), DH_OK);
        ck_assert(memcmp(got, want, count * sizeof *got) == 0);
        for (uint32_t b = 0; b < count; b++) {
            ck_assert(got[b].n > 0 && isfinite(got[b].mi) && isfinite(got[b].nmi));
            ck_assert(got[b].mi >= -1e-12 && got[b].nmi >= 1.0 - 1e-12);
        }
        free(got);
        free(grad);
    }
    dh_parzen_mi_free(pm);
    dh_ctx_free(ctx);
    free(fixed), free(moving), free(fmask), free(mmask), free(want), free(want_grad);
}

START_TEST(test_matches_twin)
{
    /* _i walks the types, windows, scores, units, ranges and masks */
    static const int types[3] = {DH_SAMPLE_UINT16, DH_SAMPLE_INT16, DH_SAMPLE_FLOAT32};
    const int ftype = types[_i % 3], mtype = types[(_i / 3) % 3];
    const uint32_t bins[4] = {5, 16, 64, 256};
    compare(ftype, mtype, bins[_i % 4], (_i / 2) % 2, (_i / 4) % 2, (_i / 5) % 2, (_i / 3) % 2,
            (_i / 6) % 2, 1 + (uint32_t)(_i % 5), 37 * 29, 1000 + (uint64_t)_i);
}
END_TEST

/* A constant moving image: MI 0, NMI 1, gradient 0; a constant fixed image (box): MI 0; a
 * two-value pair: finite MI, finite gradient. Never NaN from data. */
START_TEST(test_degenerate_images)
{
    enum { N = 400 };
    float fixed[N], moving[N * 3];
    for (int k = 0; k < N; k++) {
        fixed[k] = (float)(k % 13);
        moving[k] = 7.0f;                       /* constant */
        moving[N + k] = k % 2 ? 1.0f : 0.0f;    /* two values */
        moving[2 * N + k] = (float)((k * 7) % 13) + 0.3f * sinf((float)k);
    }
    dh_ctx *ctx = dh_ctx_create();
    dh_parzen_mi *pm = NULL;
    ck_assert_int_eq(dh_parzen_mi_create(ctx, NULL, &pm), DH_OK);
    dh_mi_scores s[3];
    float grad[N * 3];
    ck_assert_int_eq(dh_parzen_mi_evaluate(ctx, pm, N, fixed, DH_SAMPLE_FLOAT32, NULL, moving,
                                           DH_SAMPLE_FLOAT32, NULL, 3, s, grad), DH_OK);
    dh_test_assert_close(s[0].mi, 0.0, 1e-12, "MI of a constant moving image");
    dh_test_assert_close(s[0].nmi, 1.0, 1e-12, "NMI of a constant moving image");
    for (int k = 0; k < N; k++)
        ck_assert(grad[k] == 0.0f);
    /* two values sit at the ends, where the window is symmetric: finite (zero) slopes; a
     * spread image: some non-zero */
    for (int b = 1; b < 3; b++) {
        ck_assert(isfinite(s[b].mi) && s[b].mi > 0 && isfinite(s[b].nmi) && s[b].status == 0);
        int nonzero = 0;
        for (int k = 0; k < N; k++) {
            ck_assert(isfinite(grad[b * N + k]));
            nonzero += grad[b * N + k] != 0.0f;
        }
        if (b == 2)
            ck_assert_int_gt(nonzero, 0);
    }
    /* constant fixed image, box window: MI 0 */
    float flat[N];
    for (int k = 0; k < N; k++)
        flat[k] = 3.0f;
    ck_assert_int_eq(dh_parzen_mi_evaluate(ctx, pm, N, flat, DH_SAMPLE_FLOAT32, NULL, moving + N,
                                           DH_SAMPLE_FLOAT32, NULL, 1, s, grad), DH_OK);
    dh_test_assert_close(s[0].mi, 0.0, 1e-12, "MI against a constant fixed image");
    /* nothing valid: NaN scores flagged empty, gradient 0 */
    uint8_t none[N] = {0};
    ck_assert_int_eq(dh_parzen_mi_evaluate(ctx, pm, N, fixed, DH_SAMPLE_FLOAT32, none, moving + N,
                                           DH_SAMPLE_FLOAT32, NULL, 1, s, grad), DH_OK);
    ck_assert(isnan(s[0].mi) && (s[0].status & DH_MI_EMPTY) && s[0].n == 0);
    for (int k = 0; k < N; k++)
        ck_assert(grad[k] == 0.0f);
    dh_parzen_mi_free(pm);
    dh_ctx_free(ctx);
}
END_TEST

/* A masked-out pixel contributes nothing: its gradient is 0 and changing its value changes no
 * bit of the result. */
START_TEST(test_masks)
{
    enum { N = 900 };
    uint16_t fixed[N], moving[N], changed[N];
    uint8_t mask[N];
    dh_test_fill_ct_like(fixed, N, 5);
    dh_test_fill_ct_like(moving, N, 6);
    for (int k = 0; k < N; k++) {
        mask[k] = k % 4 != 0;
        changed[k] = mask[k] ? moving[k] : (uint16_t)(moving[k] / 2 + 3);
    }
    dh_parzen_mi_params p;
    dh_parzen_mi_params_init(&p);
    p.bins = 32, p.has_range_moving = 1, p.moving_lo = 0, p.moving_hi = 4095;
    dh_ctx *ctx = dh_ctx_create();
    dh_parzen_mi *pm = NULL;
    ck_assert_int_eq(dh_parzen_mi_create(ctx, &p, &pm), DH_OK);
    dh_mi_scores a, b;
    float ga[N], gb[N];
    ck_assert_int_eq(dh_parzen_mi_evaluate(ctx, pm, N, fixed, DH_SAMPLE_UINT16, NULL, moving,
                                           DH_SAMPLE_UINT16, mask, 1, &a, ga), DH_OK);
    ck_assert_int_eq(dh_parzen_mi_evaluate(ctx, pm, N, fixed, DH_SAMPLE_UINT16, NULL, changed,
                                           DH_SAMPLE_UINT16, mask, 1, &b, gb), DH_OK);
    ck_assert(memcmp(&a, &b, sizeof a) == 0 && memcmp(ga, gb, sizeof ga) == 0);
    ck_assert_uint_eq(a.n, N - (N + 3) / 4);
    for (int k = 0; k < N; k += 4)
        ck_assert(ga[k] == 0.0f);
    dh_parzen_mi_free(pm);
    dh_ctx_free(ctx);
}
END_TEST

/* Each bad argument is refused with DH_ERR_INVALID_ARGUMENT and a message naming it. */
START_TEST(test_bad_arguments)
{
    dh_ctx *ctx = dh_ctx_create();
    dh_parzen_mi *pm = NULL;
    dh_parzen_mi_params p;
    dh_parzen_mi_params_init(&p);
    p.bins = 4;
    ck_assert_int_eq(dh_parzen_mi_create(ctx, &p, &pm), DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "bins must be 5..256"));
    ck_assert_ptr_null(pm);
    p.bins = 257;
    ck_assert_int_eq(dh_parzen_mi_create(ctx, &p, &pm), DH_ERR_INVALID_ARGUMENT);
    dh_parzen_mi_params_init(&p);
    p.fixed_window = 2;
    ck_assert_int_eq(dh_parzen_mi_create(ctx, &p, &pm), DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "fixed_window 2"));
    dh_parzen_mi_params_init(&p);
    p.gradient_of = 7;
    ck_assert_int_eq(dh_parzen_mi_create(ctx, &p, &pm), DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "gradient_of 7"));
    dh_parzen_mi_params_init(&p);
    p.has_range_moving = 1, p.moving_lo = 2, p.moving_hi = 1;
    ck_assert_int_eq(dh_parzen_mi_create(ctx, &p, &pm), DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "moving range"));
    dh_parzen_mi_params_init(&p);
    p.has_range_fixed = 1, p.fixed_lo = 0, p.fixed_hi = INFINITY;
    ck_assert_int_eq(dh_parzen_mi_create(ctx, &p, &pm), DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "fixed range"));
    dh_parzen_mi_params_init(&p);
    p.struct_size = 8;
    ck_assert_int_eq(dh_parzen_mi_create(ctx, &p, &pm), DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "struct_size"));
    ck_assert_int_eq(dh_parzen_mi_create(ctx, NULL, NULL), DH_ERR_INVALID_ARGUMENT);

    ck_assert_int_eq(dh_parzen_mi_create(ctx, NULL, &pm), DH_OK);
    uint16_t img[16] = {1, 2, 3};
    dh_mi_scores s;
    ck_assert_int_eq(dh_parzen_mi_evaluate(ctx, pm, 16, img, 9, NULL, img, 0, NULL, 1, &s, NULL),
                     DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "fixed sample type 9"));
    ck_assert_int_eq(dh_parzen_mi_evaluate(ctx, pm, 16, img, 0, NULL, img, 5, NULL, 1, &s, NULL),
                     DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "moving sample type 5"));
    ck_assert_int_eq(dh_parzen_mi_evaluate(ctx, pm, 0, img, 0, NULL, img, 0, NULL, 1, &s, NULL),
                     DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "0 pixels"));
    ck_assert_int_eq(dh_parzen_mi_evaluate(ctx, pm, 16, img, 0, NULL, img, 0, NULL, 0, &s, NULL),
                     DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "count 0"));
    ck_assert_int_eq(dh_parzen_mi_evaluate(ctx, pm, 16, NULL, 0, NULL, img, 0, NULL, 1, &s, NULL),
                     DH_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(dh_parzen_mi_evaluate(ctx, NULL, 16, img, 0, NULL, img, 0, NULL, 1, &s, NULL),
                     DH_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(dh_parzen_mi_evaluate(ctx, pm, 16, img, 0, NULL, img, 0, NULL, 1, NULL, NULL),
                     DH_ERR_INVALID_ARGUMENT);
    /* a good call clears the message */
    ck_assert_int_eq(dh_parzen_mi_evaluate(ctx, pm, 16, img, 0, NULL, img, 0, NULL, 1, &s, NULL),
                     DH_OK);
    ck_assert_str_eq(dh_ctx_error(ctx), "");
    if (!dh_cuda_available()) {
        ck_assert_int_eq(dh_parzen_mi_evaluate_device(ctx, pm, 16, img, 0, NULL, img, 0, NULL, 1,
                                                      NULL, &s, NULL), DH_ERR_NO_DEVICE);
        ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "parzen mi"));
    }
    dh_parzen_mi_free(pm);
    dh_parzen_mi_free(NULL);
    dh_ctx_free(ctx);
}
END_TEST

int main(int argc, char **argv)
{
    const dh_test tests[] = {
        DH_TEST_LOOP(test_matches_twin, 36),
        DH_TEST(test_degenerate_images),
        DH_TEST(test_masks),
        DH_TEST(test_bad_arguments),
    };
    return dh_test_main(argc, argv, "parzen_mi_api", 120, DH_TESTS(tests), NULL, 0);
}
