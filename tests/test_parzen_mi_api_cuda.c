// SPDX-License-Identifier: MIT
/*
 * test_parzen_mi_api_cuda.c: Parzen-window (Mattes) MI through the public API on device pointers
 * (dh_parzen_mi_evaluate_device) gives the bits of the host call (the CPU twin): records and
 * gradients for every sample type, both windows, MI and NMI, ranges, masks and batches; run
 * after run; on a non-blocking stream; replayed from a CUDA graph captured after a warm-up call.
 * Exits 77 without a usable GPU. Runs without fork (CK_FORK=no): CUDA and fork do not mix.
 */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dicomhist.h"
#include "parzen_test_data.h"
#include "test_support.h"

static void *to_device(const void *host, size_t bytes)
{
    void *d = NULL;
    if (!bytes)
        return NULL;
    ck_assert_int_eq(cudaMalloc(&d, bytes), cudaSuccess);
    ck_assert_int_eq(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
    /* A pageable copy may return before its DMA lands, and the tests launch on a non-blocking
     * stream, which does not wait for it. */
    ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
    return d;
}

static size_t type_bytes(int type)
{
    return type == DH_SAMPLE_FLOAT32 ? 4 : 2;
}

static void compare(int ftype, int mtype, uint32_t bins, int window, int nmi, int ranges,
                    int masks, uint32_t count, size_t n, uint64_t seed, int graph)
{
    void *fixed = dh_parzen_test_images(ftype, n, seed, 97);
    void *moving = dh_parzen_test_images(mtype, n * count, seed + 3, 89);
    uint8_t *fmask = dh_parzen_test_mask(n, seed, 8);
    uint8_t *mmask = dh_parzen_test_mask(n * count, seed + 1, 6);
    dh_parzen_mi_params p;
    dh_parzen_mi_params_init(&p);
    p.bins = bins, p.fixed_window = window, p.gradient_of = nmi;
    if (ranges) {
        p.has_range_fixed = p.has_range_moving = 1;
        p.fixed_lo = ftype == DH_SAMPLE_FLOAT32 ? 0.1 : 100, p.fixed_hi = ftype == DH_SAMPLE_FLOAT32 ? 0.7 : 2500;
        p.moving_lo = mtype == DH_SAMPLE_FLOAT32 ? 0.0 : -200, p.moving_hi = mtype == DH_SAMPLE_FLOAT32 ? 0.5 : 2000;
    }
    dh_ctx *ctx = dh_ctx_create();
    dh_parzen_mi *pm = NULL;
    ck_assert_int_eq(dh_parzen_mi_create(ctx, &p, &pm), DH_OK);
    dh_mi_scores *want = calloc(count, sizeof *want), *got = calloc(count, sizeof *got);
    float *want_grad = calloc(n * count, 4), *grad = calloc(n * count, 4);
    const uint8_t *fm = masks ? fmask : NULL, *mm = masks ? mmask : NULL;
    ck_assert_int_eq(dh_parzen_mi_evaluate(ctx, pm, n, fixed, ftype, fm, moving, mtype, mm, count,
                                           want, want_grad), DH_OK);

    void *d_fixed = to_device(fixed, n * type_bytes(ftype));
    void *d_moving = to_device(moving, n * count * type_bytes(mtype));
    uint8_t *d_fmask = masks ? to_device(fmask, n) : NULL, *d_mmask = masks ? to_device(mmask, n * count) : NULL;
    dh_mi_scores *d_out = NULL;
    float *d_grad = NULL;
    ck_assert_int_eq(cudaMalloc((void **)&d_out, count * sizeof *d_out), cudaSuccess);
    ck_assert_int_eq(cudaMalloc((void **)&d_grad, n * count * 4), cudaSuccess);
    cudaStream_t stream;
    ck_assert_int_eq(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    for (int rep = 0; rep < 3; rep++) {
        ck_assert_int_eq(cudaMemsetAsync(d_grad, 0xff, n * count * 4, stream), cudaSuccess);
        ck_assert_int_eq(cudaMemsetAsync(d_out, 0xff, count * sizeof *d_out, stream), cudaSuccess);
        if (graph && rep == 2) { /* warmed up: capture one call and replay it */
            cudaGraph_t g;
            cudaGraphExec_t exec;
            ck_assert_int_eq(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal),
                             cudaSuccess);
            ck_assert_msg(dh_parzen_mi_evaluate_device(ctx, pm, n, d_fixed, ftype, d_fmask,
                                                       d_moving, mtype, d_mmask, count, stream,
                                                       d_out, d_grad) == DH_OK,
                          "%s", dh_ctx_error(ctx));
            ck_assert_int_eq(cudaStreamEndCapture(stream, &g), cudaSuccess);
            ck_assert_int_eq(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
            ck_assert_int_eq(cudaGraphLaunch(exec, stream), cudaSuccess);
            ck_assert_int_eq(cudaStreamSynchronize(stream), cudaSuccess);
            cudaGraphExecDestroy(exec);
            cudaGraphDestroy(g);
        } else {
            ck_assert_msg(dh_parzen_mi_evaluate_device(ctx, pm, n, d_fixed, ftype, d_fmask,
                                                       d_moving, mtype, d_mmask, count, stream,
                                                       d_out, d_grad) == DH_OK,
                          "%s", dh_ctx_error(ctx));
        }
        ck_assert_int_eq(cudaStreamSynchronize(stream), cudaSuccess);
        ck_assert_int_eq(cudaMemcpy(got, d_out, count * sizeof *got, cudaMemcpyDeviceToHost),
                         cudaSuccess);
        ck_assert_int_eq(cudaMemcpy(grad, d_grad, n * count * 4, cudaMemcpyDeviceToHost),
                         cudaSuccess);
        ck_assert_msg(memcmp(got, want, count * sizeof *got) == 0,
                      "records differ from the host call (types %d/%d, %u bins, rep %d)", ftype,
                      mtype, bins, rep);
        ck_assert_msg(memcmp(grad, want_grad, n * count * 4) == 0,
                      "gradients differ from the host call (types %d/%d, %u bins, rep %d)", ftype,
                      mtype, bins, rep);
    }
    cudaStreamDestroy(stream);
    cudaFree(d_fixed), cudaFree(d_moving), cudaFree(d_fmask), cudaFree(d_mmask);
    cudaFree(d_out), cudaFree(d_grad);
    dh_parzen_mi_free(pm);
    dh_ctx_free(ctx);
    free(fixed), free(moving), free(fmask), free(mmask), free(want), free(got), free(want_grad),
        free(grad);
}

START_TEST(test_device_equals_host)
{
    static const int types[3] = {DH_SAMPLE_UINT16, DH_SAMPLE_INT16, DH_SAMPLE_FLOAT32};
    static const uint32_t bins[4] = {5, 32, 64, 256};
    compare(types[_i % 3], types[(_i / 3) % 3], bins[_i % 4], (_i / 2) % 2, (_i / 4) % 2,
            (_i / 3) % 2, (_i / 5) % 2, 1 + (uint32_t)(_i % 7) * 5, 257 * 61 + (size_t)_i,
            500 + (uint64_t)_i, _i % 4 == 3);
}
END_TEST

/* A 256x256 pair batch of 64 at 64 bins, the benchmark's case. */
START_TEST(test_device_large_batch)
{
    compare(DH_SAMPLE_UINT16, DH_SAMPLE_FLOAT32, 64, 0, 0, 1, 0, 64, 256 * 256, 77, 1);
}
END_TEST

int main(int argc, char **argv)
{
    if (!dh_cuda_available())
        return DH_TEST_SKIP;
    dh_test_in_one_process();
    const dh_test tests[] = {
        DH_TEST_LOOP(test_device_equals_host, 24),
        DH_TEST(test_device_large_batch),
    };
    return dh_test_main(argc, argv, "parzen_mi_api_cuda", 300, DH_TESTS(tests), NULL, 0);
}
