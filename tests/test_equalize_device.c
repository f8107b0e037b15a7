// SPDX-License-Identifier: MIT
/*
 * test_equalize_device.c: dh_equalize_device (equalization and CLAHE of samples in GPU memory)
 * against dh_equalize on the CPU of the volume dh_volume_from_samples makes of the same samples
 * (the CPU twins are checked against naive loops and NumPy elsewhere): global and CLAHE, per
 * volume and per slice, every window source it takes, clip limits, bin counts, output bits,
 * unsigned 12-bit and signed 16-bit CT-like, random and constant data, at sizes that divide into
 * no tile evenly, on a non-default stream; and its refusals.
 *
 * Exits 77 (ctest SKIP) where no GPU is usable. Runs in CK_NOFORK mode: CUDA does not survive
 * Check's fork.
 */
#include "test_support.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dicomhist.h"
#include "hist_cuda.h"

#define CUDA_OK(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        ck_assert_msg(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));                 \
    } while (0)

enum { NX = 67, NY = 45, NZ = 5 };
#define N ((size_t)NX * NY * NZ)

static void fill(uint16_t *d, int kind, int is_signed, uint64_t seed)
{
    dh_test_rng rng;
    dh_test_rng_seed(&rng, seed);
    if (kind == 0)
        dh_test_fill_ct_like(d, N, seed);
    for (size_t i = 0; i < N; i++) {
        if (kind == 1)
            d[i] = (uint16_t)dh_test_rng_next(&rng);
        else if (kind == 2)
            d[i] = 1500;
        if (!is_signed)
            d[i] &= 0x0fff; /* 12 bits stored */
        else if (kind == 0)
            d[i] = (uint16_t)(int16_t)((int)d[i] - 1024);
    }
}

typedef struct {
    const char *what;
    dh_eq_method method;
    int per_slice;
    dh_window_source window;
    double a, b; /* center/width or lo/hi or percentile */
    double clip;
    uint32_t bins, output_bits, tiles[3], tile_size[3];
} eq_case;

static const eq_case CASES[] = {
    {"global", DH_EQ_METHOD_GLOBAL, 0, DH_WINDOW_NONE, 0, 0, 0, 0, 0, {0}, {0}},
    {"global per slice, clip", DH_EQ_METHOD_GLOBAL, 1, DH_WINDOW_NONE, 0, 0, 2.5, 0, 8, {0}, {0}},
    {"global center/width", DH_EQ_METHOD_GLOBAL, 0, DH_WINDOW_CENTER_WIDTH, 600, 1201, 0, 0, 0,
     {0}, {0}},
    {"global percentile per slice", DH_EQ_METHOD_GLOBAL, 1, DH_WINDOW_PERCENTILE, 2, 0, 1.5, 0,
     16, {0}, {0}},
    {"clahe", DH_EQ_METHOD_CLAHE, 0, DH_WINDOW_NONE, 0, 0, 2, 0, 0, {0}, {0}},
    {"clahe per slice minmax", DH_EQ_METHOD_CLAHE, 1, DH_WINDOW_MINMAX, 0, 0, 3, 256, 0,
     {5, 3, 0}, {0}},
    {"clahe range 3D tiles", DH_EQ_METHOD_CLAHE, 0, DH_WINDOW_RANGE, -200, 2500, 1, 4096, 12,
     {4, 3, 2}, {0}},
    {"clahe tile size, 7 bins", DH_EQ_METHOD_CLAHE, 0, DH_WINDOW_PERCENTILE, 1, 0, 0, 7, 16,
     {0}, {9, 11, 2}},
    {"clahe one-pixel tiles", DH_EQ_METHOD_CLAHE, 1, DH_WINDOW_NONE, 0, 0, 0, 0, 0,
     {NX, NY, 0}, {0}},
};

static void set_params(dh_equalize_params *p, const eq_case *c)
{
    dh_equalize_params_init(p);
    p->method = c->method;
    p->per_slice = c->per_slice;
    p->window = c->window;
    if (c->window == DH_WINDOW_CENTER_WIDTH)
        p->center = c->a, p->width = c->b;
    else if (c->window == DH_WINDOW_RANGE)
        p->lo = c->a, p->hi = c->b;
    else if (c->window == DH_WINDOW_PERCENTILE)
        p->percentile = c->a;
    p->clip_limit = c->clip;
    p->bins = c->bins;
    p->output_bits = c->output_bits;
    memcpy(p->tiles, c->tiles, sizeof p->tiles);
    memcpy(p->tile_size, c->tile_size, sizeof p->tile_size);
}

START_TEST(test_same_bits_as_dh_equalize)
{
    dh_ctx *ctx = dh_ctx_create();
    uint16_t *data = malloc(N * sizeof *data), *got = malloc(N * sizeof *got);
    ck_assert_ptr_nonnull(ctx);
    ck_assert_ptr_nonnull(data);
    ck_assert_ptr_nonnull(got);
    uint16_t *d_data, *d_out;
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CUDA_OK(cudaMalloc((void **)&d_data, N * sizeof *d_data));
    CUDA_OK(cudaMalloc((void **)&d_out, N * sizeof *d_out));
    for (int is_signed = 0; is_signed < 2; is_signed++)
        for (int kind = 0; kind < 3; kind++) {
            const uint32_t bits = is_signed ? 16 : 12;
            fill(data, kind, is_signed, 40 + (uint64_t)kind);
            dh_volume *v = NULL;
            ck_assert_int_eq(dh_volume_from_samples(ctx, NY, NX, NZ, bits, is_signed, data, &v),
                             DH_OK);
            CUDA_OK(cudaMemcpy(d_data, data, N * sizeof *data, cudaMemcpyHostToDevice));
            /* a pageable copy may return before its DMA lands; the non-blocking stream below
             * would not wait for it */
            CUDA_OK(cudaDeviceSynchronize());
            for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
                dh_equalize_params p;
                set_params(&p, &CASES[c]);
                p.device = DH_DEVICE_CPU;
                dh_equalized *want = NULL;
                dh_status st = dh_equalize(ctx, v, &p, &want);
                ck_assert_msg(st == DH_OK, "%s: %s", CASES[c].what, dh_ctx_error(ctx));
                CUDA_OK(cudaMemsetAsync(d_out, 0xff, N * sizeof *d_out, stream));
                st = dh_equalize_device(ctx, d_data, is_signed, bits, NX, NY, NZ, &p, d_out,
                                        (c & 1) ? (void *)stream : NULL);
                ck_assert_msg(st == DH_OK, "%s: %s", CASES[c].what, dh_ctx_error(ctx));
                CUDA_OK(cudaDeviceSynchronize());
                CUDA_OK(cudaMemcpy(got, d_out, N * sizeof *got, cudaMemcpyDeviceToHost));
                size_t diff = 0;
                for (size_t i = 0; i < N; i++)
                    diff += got[i] != want->data[i];
                ck_assert_msg(diff == 0, "%s (%s, data %d): %zu pixels unlike dh_equalize",
                              CASES[c].what, is_signed ? "int16" : "12-bit", kind, diff);
                dh_equalized_free(want);
            }
            dh_volume_free(v);
        }
    CUDA_OK(cudaStreamDestroy(stream));
    cudaFree(d_data);
    cudaFree(d_out);
    dh_ctx_free(ctx);
    free(data);
    free(got);
}
END_TEST

START_TEST(test_refusals)
{
    dh_ctx *ctx = dh_ctx_create();
    uint16_t *d, *d_out;
    CUDA_OK(cudaMalloc((void **)&d, 128 * sizeof *d));
    d_out = d + 64;
    dh_equalize_params p;
    dh_equalize_params_init(&p);
    p.operation = DH_EQ_WINDOW_LEVEL;
    p.window = DH_WINDOW_MINMAX;
    ck_assert_int_eq(dh_equalize_device(ctx, d, 0, 12, 8, 8, 1, &p, d_out, NULL),
                     DH_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "window/level"));
    dh_equalize_params_init(&p);
    p.window = DH_WINDOW_FILE;
    ck_assert_int_eq(dh_equalize_device(ctx, d, 0, 12, 8, 8, 1, &p, d_out, NULL),
                     DH_ERR_UNSUPPORTED);
    dh_equalize_params_init(&p);
    p.method = DH_EQ_METHOD_CLAHE;
    p.tiles[0] = 9;
    ck_assert_int_eq(dh_equalize_device(ctx, d, 0, 12, 8, 8, 1, &p, d_out, NULL),
                     DH_ERR_INVALID_ARGUMENT);
    dh_equalize_params_init(&p);
    ck_assert_int_eq(dh_equalize_device(ctx, NULL, 0, 12, 8, 8, 1, &p, d_out, NULL),
                     DH_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(dh_equalize_device(ctx, d, 0, 17, 8, 8, 1, &p, d_out, NULL),
                     DH_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(dh_equalize_device(ctx, d, 0, 12, 8, 8, 1, NULL, d_out, NULL),
                     DH_ERR_INVALID_ARGUMENT);
    /* and it works afterwards */
    CUDA_OK(cudaMemset(d, 0, 128 * sizeof *d));
    ck_assert_int_eq(dh_equalize_device(ctx, d, 0, 12, 8, 8, 1, &p, d_out, NULL), DH_OK);
    CUDA_OK(cudaDeviceSynchronize());
    cudaFree(d);
    dh_ctx_free(ctx);
}
END_TEST

int main(void)
{
    if (!dh_cuda_usable()) {
        printf("no usable CUDA GPU: skipped\n");
        return DH_TEST_SKIP;
    }
    const dh_test tests[] = {DH_TEST(test_refusals), DH_TEST(test_same_bits_as_dh_equalize)};
    dh_test_in_one_process();
    return dh_test_run(dh_test_suite("equalize_device", 600, DH_TESTS(tests)));
}
