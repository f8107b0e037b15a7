// SPDX-License-Identifier: MIT
/*
 * test_parzen_autograd_cuda.c: the calls dicomhist.torch makes on CUDA tensors (dicomhist.h
 * section 5b, issue 22): dh_parzen_mi_evaluate_device_signed writes sign * the host records' MI
 * or NMI and the host's gradient, bit for bit, for both signs, MI and NMI, one image and a
 * batch, on a non-blocking stream, and from a CUDA graph captured after a warm-up call;
 * dh_parzen_mi_scale_gradient_device equals its CPU twin (kernels/parzen_autograd.h) and a naive
 * loop of the documented formula, for per-item and shared factors; bad arguments are refused.
 * Exits 77 without a usable GPU. Runs without fork (CK_FORK=no): CUDA and fork do not mix.
 */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dicomhist.h"
#include "parzen_autograd.h"
#include "parzen_test_data.h"
#include "test_support.h"

static void *to_device(const void *host, size_t bytes)
{
    void *d = NULL;
    ck_assert_int_eq(cudaMalloc(&d, bytes), cudaSuccess);
    if (host)
        ck_assert_int_eq(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
    /* A pageable copy may return before its DMA lands, and the tests launch on a non-blocking
     * stream, which does not wait for it. */
    ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
    return d;
}

static void signed_case(int nmi, double sign, uint32_t count, size_t n, int graph)
{
    void *fixed = dh_parzen_test_images(DH_SAMPLE_UINT16, n, 31 + count, 97);
    void *moving = dh_parzen_test_images(DH_SAMPLE_FLOAT32, n * count, 37 + count, 89);
    dh_parzen_mi_params p;
    dh_parzen_mi_params_init(&p);
    p.bins = 48, p.gradient_of = nmi ? DH_PARZEN_SCORE_NMI : DH_PARZEN_SCORE_MI;
    dh_ctx *ctx = dh_ctx_create();
    dh_parzen_mi *pm = NULL;
    ck_assert_int_eq(dh_parzen_mi_create(ctx, &p, &pm), DH_OK);
    dh_mi_scores *rec = calloc(count, sizeof *rec);
    float *want_grad = calloc(n * count, 4), *grad = calloc(n * count, 4);
    double *values = calloc(count, sizeof *values);
    ck_assert_int_eq(dh_parzen_mi_evaluate(ctx, pm, n, fixed, DH_SAMPLE_UINT16, NULL, moving,
                                           DH_SAMPLE_FLOAT32, NULL, count, rec, want_grad),
                     DH_OK);
    void *d_fixed = to_device(fixed, n * 2), *d_moving = to_device(moving, n * count * 4);
    double *d_values = to_device(NULL, count * sizeof(double));
    float *d_grad = to_device(NULL, n * count * 4);
    cudaStream_t stream;
    ck_assert_int_eq(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    for (int rep = 0; rep < 2; rep++) { /* rep 0 allocates the scratch; rep 1 may be a graph */
        ck_assert_int_eq(cudaMemset(d_values, 0x7f, count * sizeof(double)), cudaSuccess);
        cudaGraph_t g;
        cudaGraphExec_t exec;
        if (graph && rep == 1)
            ck_assert_int_eq(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
                             cudaSuccess);
        ck_assert_msg(dh_parzen_mi_evaluate_device_signed(ctx, pm, n, d_fixed, DH_SAMPLE_UINT16,
                                                          NULL, d_moving, DH_SAMPLE_FLOAT32, NULL,
                                                          count, stream, sign, d_values,
                                                          d_grad) == DH_OK,
                      "%s", dh_ctx_error(ctx));
        if (graph && rep == 1) {
            ck_assert_int_eq(cudaStreamEndCapture(stream, &g), cudaSuccess);
            ck_assert_int_eq(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
            ck_assert_int_eq(cudaGraphLaunch(exec, stream), cudaSuccess);
        }
        ck_assert_int_eq(cudaStreamSynchronize(stream), cudaSuccess);
        if (graph && rep == 1)
            cudaGraphExecDestroy(exec), cudaGraphDestroy(g);
        ck_assert_int_eq(cudaMemcpy(values, d_values, count * sizeof(double),
                                    cudaMemcpyDeviceToHost), cudaSuccess);
        ck_assert_int_eq(cudaMemcpy(grad, d_grad, n * count * 4, cudaMemcpyDeviceToHost),
                         cudaSuccess);
        for (uint32_t i = 0; i < count; i++) {
            const double want = sign * (nmi ? rec[i].nmi : rec[i].mi);
            ck_assert_msg(memcmp(&values[i], &want, sizeof want) == 0,
                          "item %u: %.17g, the host's signed score %.17g (rep %d)", i, values[i],
                          want, rep);
        }
        ck_assert_msg(memcmp(grad, want_grad, n * count * 4) == 0,
                      "the gradient differs from the host's (count %u, rep %d)", count, rep);
    }
    cudaStreamDestroy(stream);
    cudaFree(d_fixed), cudaFree(d_moving), cudaFree(d_values), cudaFree(d_grad);
    dh_parzen_mi_free(pm);
    dh_ctx_free(ctx);
    free(fixed), free(moving), free(rec), free(want_grad), free(grad), free(values);
}

START_TEST(test_signed_scores_equal_host_records)
{
    static const double signs[2] = {1.0, -1.0};
    static const uint32_t counts[3] = {1, 7, 33};
    signed_case(_i % 2, signs[(_i / 2) % 2], counts[_i % 3], 67 * 53 + (size_t)_i, _i % 4 == 3);
}
END_TEST

/* The gradient scaled per item: device == CPU twin == the formula's naive loop. */
static void scale_case(uint32_t count, size_t pixels, size_t stride, double sign)
{
    const size_t total = (size_t)count * pixels, nf = stride ? (count - 1) * stride + 1 : 1;
    float *g = dh_parzen_test_images(DH_SAMPLE_FLOAT32, total, 5 + count, (size_t)-1);
    double *f = malloc(nf * sizeof *f);
    float *cpu = malloc(total * 4), *gpu = malloc(total * 4);
    ck_assert(f && cpu && gpu);
    for (size_t i = 0; i < nf; i++)
        f[i] = (i % 3 ? 1.0 : -0.37) * (1.0 + (double)i / 7.0) / 3.0; /* not a float32 value */
    for (size_t k = 0; k < total; k++)
        g[k] = isfinite(g[k]) ? g[k] - 0.5f : 1e-3f;
    dh_parzen_scale_gradient_cpu(g, pixels, count, f, stride, sign, cpu);
    for (uint32_t b = 0; b < count; b++) {
        const float factor = (float)(sign * f[b * stride]);
        for (size_t k = 0; k < pixels; k++) {
            const float want = g[b * pixels + k] * factor;
            ck_assert_msg(memcmp(&cpu[b * pixels + k], &want, 4) == 0, "CPU twin at %u/%zu", b, k);
        }
    }
    float *d_g = to_device(g, total * 4), *d_out = to_device(NULL, total * 4);
    double *d_f = to_device(f, nf * sizeof *f);
    dh_ctx *ctx = dh_ctx_create();
    ck_assert_msg(dh_parzen_mi_scale_gradient_device(ctx, d_g, pixels, count, d_f, stride, sign,
                                                     d_out, NULL) == DH_OK,
                  "%s", dh_ctx_error(ctx));
    ck_assert_int_eq(cudaMemcpy(gpu, d_out, total * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    ck_assert_msg(memcmp(gpu, cpu, total * 4) == 0, "device != CPU twin (count %u, stride %zu)",
                  count, stride);
    /* in place (d_out == d_gradient) */
    ck_assert_int_eq(dh_parzen_mi_scale_gradient_device(ctx, d_g, pixels, count, d_f, stride,
                                                        sign, d_g, NULL), DH_OK);
    ck_assert_int_eq(cudaMemcpy(gpu, d_g, total * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    ck_assert_msg(memcmp(gpu, cpu, total * 4) == 0, "in place != CPU twin");
    dh_ctx_free(ctx);
    cudaFree(d_g), cudaFree(d_out), cudaFree(d_f);
    free(g), free(f), free(cpu), free(gpu);
}

START_TEST(test_scale_gradient_equals_twin)
{
    scale_case(1, 4099, 0, -1.0);
    scale_case(9, 1031, 1, 1.0);
    scale_case(9, 1031, 0, -1.0);
    scale_case(5, 300000, 3, -1.0); /* more elements than one grid: the stride loop */
}
END_TEST

START_TEST(test_bad_arguments)
{
    dh_ctx *ctx = dh_ctx_create();
    dh_parzen_mi *pm = NULL;
    ck_assert_int_eq(dh_parzen_mi_create(ctx, NULL, &pm), DH_OK);
    float *d = to_device(NULL, 64);
    ck_assert_int_eq(dh_parzen_mi_evaluate_device_signed(ctx, pm, 4, d, DH_SAMPLE_FLOAT32, NULL,
                                                         d, DH_SAMPLE_FLOAT32, NULL, 1, NULL,
                                                         -1.0, NULL, NULL),
                     DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "d_values"));
    ck_assert_int_eq(dh_parzen_mi_evaluate_device_signed(ctx, pm, 4, d, DH_SAMPLE_FLOAT32, NULL,
                                                         d, DH_SAMPLE_FLOAT32, NULL, 1, NULL,
                                                         NAN, (double *)d, NULL),
                     DH_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(dh_parzen_mi_evaluate_device_signed(ctx, pm, 4, d, DH_SAMPLE_FLOAT32, NULL,
                                                         d, DH_SAMPLE_FLOAT32, NULL, 0, NULL,
                                                         1.0, (double *)d, NULL),
                     DH_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(dh_parzen_mi_scale_gradient_device(ctx, NULL, 4, 1, (double *)d, 0, 1.0, d,
                                                        NULL), DH_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(dh_parzen_mi_scale_gradient_device(ctx, d, 4, 1, (double *)d, 0, INFINITY,
                                                        d, NULL), DH_ERR_INVALID_ARGUMENT);
    cudaFree(d);
    dh_parzen_mi_free(pm);
    dh_ctx_free(ctx);
}
END_TEST

int main(int argc, char **argv)
{
    if (!dh_cuda_available())
        return DH_TEST_SKIP;
    dh_test_in_one_process();
    const dh_test tests[] = {
        DH_TEST_LOOP(test_signed_scores_equal_host_records, 12),
        DH_TEST(test_scale_gradient_equals_twin),
        DH_TEST(test_bad_arguments),
    };
    return dh_test_main(argc, argv, "parzen_autograd_cuda", 300, DH_TESTS(tests), NULL, 0);
}
