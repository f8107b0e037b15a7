/*
 * test_mi_cuda.c: mutual information on the GPU equals the CPU twin bit for bit: joint counts
 * read back and whole score records (memcmp), for bins 2..256, non-square bins, masks, explicit
 * and per-image ranges, batches 1..256, odd sizes, a huge background bin, through both the host
 * path and device pointers; repeated runs give the same bits. Exits 77 without a usable GPU.
 * Runs without fork (CK_FORK=no): CUDA and fork do not mix.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include "dicomhist.h"
#include "test_support.h"

static void fill(uint16_t *img, size_t n, uint64_t seed, int background)
{
    dh_test_fill_ct_like(img, n, seed);
    if (background) /* an X-ray/DRR pair: most pixels one value */
        for (size_t i = 0; i < n; i++)
            if (i % 10)
                img[i] = 24;
}

static void compare(uint32_t bf, uint32_t bm, size_t n, uint32_t k, int masks, int ranges,
                    int background, uint64_t seed)
{
    uint16_t *fixed = malloc(n * 2), *moving = malloc((size_t)k * n * 2);
    uint8_t *fmask = malloc(n), *valid = malloc((size_t)k * n);
    fill(fixed, n, seed, background);
    fill(moving, (size_t)k * n, seed + 1, background);
    dh_test_rng rng;
    dh_test_rng_seed(&rng, seed);
    for (size_t i = 0; i < n; i++)
        fmask[i] = dh_test_rng_below(&rng, 9) != 0;
    for (size_t i = 0; i < (size_t)k * n; i++)
        valid[i] = dh_test_rng_below(&rng, 6) != 0;
    dh_ctx *ctx = dh_ctx_create();
    dh_mi_params p;
    dh_mi_params_init(&p);
    p.bins_fixed = bf, p.bins_moving = bm, p.max_batch = k;
    if (ranges) {
        p.has_range_fixed = p.has_range_moving = 1;
        p.fixed_lo = 0, p.fixed_hi = 1500, p.moving_lo = 20, p.moving_hi = 4095;
    }
    dh_mi_fixed *cpu = NULL, *gpu = NULL;
    p.device = DH_DEVICE_CPU;
    ck_assert_int_eq(dh_mi_fixed_create(ctx, fixed, 0, n, masks ? fmask : NULL, &p, &cpu), DH_OK);
    p.device = DH_DEVICE_CUDA;
    ck_assert_msg(dh_mi_fixed_create(ctx, fixed, 0, n, masks ? fmask : NULL, &p, &gpu) == DH_OK,
                  "%s", dh_ctx_error(ctx));
    dh_mi_scores *a = calloc(k, sizeof *a), *b = calloc(k, sizeof *b), *c = calloc(k, sizeof *c);
    const uint8_t *v = masks ? valid : NULL;
    ck_assert_int_eq(dh_mi_evaluate(ctx, cpu, moving, 0, n, k, v, n, a), DH_OK);
    ck_assert_msg(dh_mi_evaluate(ctx, gpu, moving, 0, n, k, v, n, b) == DH_OK, "%s",
                  dh_ctx_error(ctx));
    uint32_t *ja = malloc((size_t)bf * bm * 4), *jb = malloc((size_t)bf * bm * 4);
    for (uint32_t i = 0; i < k; i++) {
        ck_assert_int_eq(dh_mi_joint_histogram(ctx, cpu, i, ja), DH_OK);
        ck_assert_int_eq(dh_mi_joint_histogram(ctx, gpu, i, jb), DH_OK);
        ck_assert_msg(memcmp(ja, jb, (size_t)bf * bm * 4) == 0,
                      "counts differ: bins %u:%u n %zu item %u", bf, bm, n, i);
        ck_assert_msg(memcmp(&a[i], &b[i], sizeof a[i]) == 0,
                      "record differs: bins %u:%u item %u: mi %.17g vs %.17g, nmi %.17g vs %.17g",
                      bf, bm, i, a[i].mi, b[i].mi, a[i].nmi, b[i].nmi);
    }
    /* Device pointers on a stream; then again: the same bits. */
    void *d_moving = NULL, *d_valid = NULL, *d_out = NULL;
    cudaStream_t stream;
    ck_assert_int_eq(cudaStreamCreate(&stream), cudaSuccess);
    ck_assert_int_eq(cudaMalloc(&d_moving, (size_t)k * n * 2), cudaSuccess);
    ck_assert_int_eq(cudaMalloc(&d_valid, (size_t)k * n), cudaSuccess);
    ck_assert_int_eq(cudaMalloc(&d_out, k * sizeof *c), cudaSuccess);
    cudaMemcpy(d_moving, moving, (size_t)k * n * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(d_valid, valid, (size_t)k * n, cudaMemcpyHostToDevice);
    for (int rep = 0; rep < 3; rep++) {
        ck_assert_int_eq(dh_mi_evaluate_device(ctx, gpu, d_moving, 0, n, k,
                                               masks ? d_valid : NULL, n, stream, d_out),
                         DH_OK);
        ck_assert_int_eq(cudaStreamSynchronize(stream), cudaSuccess);
        cudaMemcpy(c, d_out, k * sizeof *c, cudaMemcpyDeviceToHost);
        ck_assert(memcmp(a, c, k * sizeof *c) == 0);
    }
    cudaFree(d_moving);
    cudaFree(d_valid);
    cudaFree(d_out);
    cudaStreamDestroy(stream);
    dh_mi_fixed_free(cpu);
    dh_mi_fixed_free(gpu);
    dh_ctx_free(ctx);
    free(fixed), free(moving), free(fmask), free(valid), free(a), free(b), free(c), free(ja),
        free(jb);
}

START_TEST(test_bins)
{
    static const uint32_t bins[] = {2, 16, 50, 64, 100, 256};
    for (size_t i = 0; i < sizeof bins / sizeof bins[0]; i++) {
        compare(bins[i], bins[i], 256 * 256, 1, 0, 0, 0, 10 + i);
        compare(bins[i], bins[i], 333 * 211, 3, 1, 0, 1, 20 + i);
        compare(bins[i], bins[i], 100003, 2, 1, 1, 0, 30 + i);
    }
    compare(7, 256, 512 * 512, 2, 1, 0, 0, 40); /* non-square */
    compare(256, 3, 512 * 512, 2, 0, 1, 1, 41);
    compare(64, 64, 1, 1, 0, 0, 0, 42);           /* one pixel */
    compare(64, 64, 64 * 64 * 64, 1, 1, 0, 1, 43); /* a small volume, huge background */
}
END_TEST

START_TEST(test_batches)
{
    static const uint32_t batches[] = {1, 2, 7, 64, 256};
    for (size_t i = 0; i < sizeof batches / sizeof batches[0]; i++) {
        compare(64, 64, 128 * 128, batches[i], 1, 0, 0, 50 + i);
        compare(32, 100, 97 * 101, batches[i], 0, 1, 1, 60 + i);
    }
}
END_TEST

int main(void)
{
    setenv("CK_FORK", "no", 1);
    if (!dh_cuda_available())
        return DH_TEST_SKIP;
    Suite *s = suite_create("mi_cuda");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_bins);
    tcase_add_test(tc, test_batches);
    suite_add_tcase(s, tc);
    return dh_test_run(s);
}
