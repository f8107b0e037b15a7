// SPDX-License-Identifier: MIT
/*
 * test_parzen_autograd.c: the CPU twin of kernels/parzen_autograd.h against the documented
 * formulas written out (signed score columns; the gradient times (float)(sign * factor) per item,
 * with per-item and shared factors, in place), and the device entry points' answers where no GPU
 * runs them: DH_ERR_NO_DEVICE in builds without CUDA, DH_ERR_INVALID_ARGUMENT on bad arguments
 * in every build. The CUDA twin's bits: test_parzen_autograd_cuda.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dicomhist.h"
#include "parzen_autograd.h"
#include "test_support.h"

START_TEST(test_signed_scores)
{
    dh_mi_values rec[3];
    memset(rec, 0, sizeof rec);
    for (int i = 0; i < 3; i++)
        rec[i].mi = 0.1 * (i + 1) / 3.0, rec[i].nmi = 1.0 + 1.0 / (i + 7);
    rec[2].nmi = NAN;
    double v[3];
    dh_parzen_signed_scores_cpu(rec, 3, 0, -1.0, v);
    for (int i = 0; i < 3; i++)
        ck_assert(v[i] == -rec[i].mi);
    dh_parzen_signed_scores_cpu(rec, 3, 1, 1.0, v);
    ck_assert(v[0] == rec[0].nmi && v[1] == rec[1].nmi && isnan(v[2]));
}
END_TEST

START_TEST(test_scale_gradient)
{
    enum { PIXELS = 37, COUNT = 4 };
    float g[PIXELS * COUNT], out[PIXELS * COUNT];
    double f[3 * COUNT];
    for (int k = 0; k < PIXELS * COUNT; k++)
        g[k] = (float)((k * 7919 % 1000) - 500) / 333.0f;
    for (int i = 0; i < 3 * COUNT; i++)
        f[i] = (i % 2 ? -1.0 : 1.0) * (1.0 + i / 3.0) / 7.0;
    static const size_t strides[3] = {0, 1, 3};
    for (int s = 0; s < 3; s++) {
        dh_parzen_scale_gradient_cpu(g, PIXELS, COUNT, f, strides[s], -1.0, out);
        for (int b = 0; b < COUNT; b++) {
            const float factor = (float)(-1.0 * f[b * strides[s]]);
            for (int k = 0; k < PIXELS; k++)
                ck_assert(out[b * PIXELS + k] == g[b * PIXELS + k] * factor);
        }
    }
    float in_place[PIXELS * COUNT];
    memcpy(in_place, g, sizeof g);
    dh_parzen_scale_gradient_cpu(in_place, PIXELS, COUNT, f, 1, 1.0, in_place);
    dh_parzen_scale_gradient_cpu(g, PIXELS, COUNT, f, 1, 1.0, out);
    ck_assert(memcmp(in_place, out, sizeof out) == 0);
}
END_TEST

START_TEST(test_device_entry_points_without_a_gpu_run)
{
    dh_ctx *ctx = dh_ctx_create();
    dh_parzen_mi *pm = NULL;
    ck_assert_int_eq(dh_parzen_mi_create(ctx, NULL, &pm), DH_OK);
    float buf[4] = {0};
    double value = 0;
    ck_assert_int_eq(dh_parzen_mi_evaluate_device_signed(ctx, pm, 4, buf, DH_SAMPLE_FLOAT32, NULL,
                                                         buf, DH_SAMPLE_FLOAT32, NULL, 1, NULL,
                                                         1.0, NULL, NULL),
                     DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "d_values"));
    ck_assert_int_eq(dh_parzen_mi_evaluate_device_signed(ctx, pm, 4, buf, DH_SAMPLE_FLOAT32, NULL,
                                                         buf, DH_SAMPLE_FLOAT32, NULL, 0, NULL,
                                                         1.0, &value, NULL),
                     DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "count 0"));
    ck_assert_int_eq(dh_parzen_mi_scale_gradient_device(ctx, buf, 4, 1, &value, 0, NAN, buf,
                                                        NULL), DH_ERR_INVALID_ARGUMENT);
    if (!dh_cuda_available()) {
        ck_assert_int_eq(dh_parzen_mi_evaluate_device_signed(ctx, pm, 4, buf, DH_SAMPLE_FLOAT32,
                                                             NULL, buf, DH_SAMPLE_FLOAT32, NULL,
                                                             1, NULL, -1.0, &value, NULL),
                         DH_ERR_NO_DEVICE);
        ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "CUDA"));
    }
    dh_parzen_mi_free(pm);
    dh_ctx_free(ctx);
}
END_TEST

int main(int argc, char **argv)
{
    const dh_test tests[] = {
        DH_TEST(test_signed_scores),
        DH_TEST(test_scale_gradient),
        DH_TEST(test_device_entry_points_without_a_gpu_run),
    };
    return dh_test_main(argc, argv, "parzen_autograd", 60, DH_TESTS(tests), NULL, 0);
}
