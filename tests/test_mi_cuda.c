// SPDX-License-Identifier: MIT
/*
 * test_mi_cuda.c: mutual information on the GPU equals the CPU twin bit for bit: joint counts
 * read back and whole score records (memcmp), for bins 2..256, non-square bins, masks, explicit
 * and per-image ranges, batches 1..256, odd sizes, a huge background bin, through both the host
 * path (16-byte loads) and device pointers at odd offsets (scalar loads), one and several
 * clusters per image, every cluster layout; repeated runs give the same bits, and many launches
 * back to back on a non-blocking stream right after setup stay right every time; float32 moving
 * images (NaN, infinities, out of range) likewise. Exits 77 without a usable GPU.
 * Runs without fork (CK_FORK=no): CUDA and fork do not mix.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/mi_joint.h"
#include "../kernels/mi_cuda.h"
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
    /* The host path stages 16-byte aligned rows (vector loads); here the images sit at an odd
     * offset with an odd stride, which takes the scalar loads. */
    const size_t ds = n + 1;
    ck_assert_int_eq(cudaMalloc(&d_moving, ((size_t)k * ds + 1) * 2), cudaSuccess);
    ck_assert_int_eq(cudaMalloc(&d_valid, (size_t)k * ds + 1), cudaSuccess);
    ck_assert_int_eq(cudaMalloc(&d_out, k * sizeof *c), cudaSuccess);
    uint16_t *dm = (uint16_t *)d_moving + 1;
    uint8_t *dv = (uint8_t *)d_valid + 1;
    ck_assert_int_eq(cudaMemcpy2D(dm, ds * 2, moving, n * 2, n * 2, k, cudaMemcpyHostToDevice),
                     cudaSuccess);
    ck_assert_int_eq(cudaMemcpy2D(dv, ds, valid, n, n, k, cudaMemcpyHostToDevice), cudaSuccess);
    for (int rep = 0; rep < 3; rep++) {
        ck_assert_int_eq(dh_mi_evaluate_device(ctx, gpu, dm, 0, ds, k, masks ? dv : NULL, ds,
                                               stream, d_out),
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
    compare(256, 256, 512 * 512, 1, 1, 0, 1, 44);  /* packed counters, one large cluster */
    compare(64, 64, 512 * 512, 2, 0, 1, 0, 45);
    /* Over a megapixel: several clusters per image, partials and the last-cluster stage, the
     * range kernel (no explicit range), and at 256 bins mid-count flushes of packed counters. */
    compare(64, 64, 1031 * 1030, 2, 1, 0, 1, 46);
    compare(256, 256, 1031 * 1030, 1, 0, 0, 0, 47);
    compare(100, 33, 1024 * 1024 + 5, 1, 1, 1, 0, 48);
    /* Slices above 2^17 pixels in a call of at least one image per SM: one block per image
     * instead of a cluster (the batch layout), stored values and masks, and a call of few
     * images through the same kind of object (the cluster layout). */
    compare(64, 64, 400 * 400, 140, 0, 1, 0, 80);
    compare(100, 33, 401 * 399, 133, 1, 0, 1, 81);
    compare(128, 128, 400 * 400, 133, 0, 0, 0, 82);
    compare(64, 64, 400 * 400, 7, 0, 1, 0, 83);
    /* 17..32 rows of 256 cells (the per-lane segment trees; up to 16 rows one thread per lane) */
    compare(96, 64, 256 * 256, 2, 1, 0, 1, 70);
    compare(128, 64, 300 * 301, 1, 0, 1, 0, 71);
}
END_TEST

/* Bins the fixed image over its own min..max (bf bins) into fbins; returns the pixels that can
 * count and their term sum in *fsum, as dh_mi_fixed_create caches them. */
static uint64_t bin_fixed(const uint16_t *fixed, int is_signed, size_t n, uint32_t bf,
                          uint16_t *fbins, double *fsum)
{
    int32_t flo, fhi;
    dh_mi_minmax(fixed, is_signed, n, NULL, &flo, &fhi);
    dh_jaxis fa;
    ck_assert_int_eq(dh_jaxis_init(&fa, bf, flo, fhi), 0);
    uint64_t marg[256];
    uint64_t valid = dh_mi_bin_fixed(fixed, is_signed, n, NULL, &fa, fbins, marg);
    *fsum = dh_mi_sum_terms_u64(marg, bf, valid, dh_mi_log((double)valid));
    return valid;
}

/* One block per image with packed counters (mi_cuda_solo.cuh), taken by calls of at least one
 * image per SM: every record and joint histogram of a batch against the CPU twin, signed and
 * unsigned, given and found ranges; kind 0 CT-like pairs, 1 constant fixed and moving images (all
 * n pixels in one cell: 65536 counts, one more than a 16-bit counter holds), 2 two values, 3 the
 * sample type's extremes (images of more than 65536 pixels count in rounds). variant bit 0:
 * every entropy term computes its logarithm (tuning's direct_terms) instead of reading the table;
 * bit 1: one add per pixel, not per run of one cell (no_run_merge). */
static void compare_solo(uint32_t bf, uint32_t bm, size_t n, uint32_t k, int is_signed,
                         int has_range, int kind, int variant, uint64_t seed)
{
    uint16_t *fixed = malloc(n * 2), *moving = malloc((size_t)k * n * 2), *fbins = malloc(n * 2);
    dh_test_rng rng;
    dh_test_rng_seed(&rng, seed);
    const uint16_t ext[2] = {is_signed ? 0x8000u : 0u, is_signed ? 0x7FFFu : 0xFFFFu};
    dh_test_fill_ct_like(fixed, n, seed);
    dh_test_fill_ct_like(moving, (size_t)k * n, seed + 1);
    for (size_t i = 0; i < (size_t)k * n; i++) {
        if (kind == 1)
            moving[i] = 1000;
        else if (kind == 2)
            moving[i] = dh_test_rng_below(&rng, 2) ? 77 : 3000;
        else if (kind == 3)
            moving[i] = ext[dh_test_rng_below(&rng, 2)];
        if (i < n && kind == 1)
            fixed[i] = 500;
    }
    int32_t lo = -100, hi = 1900;
    double fsum;
    uint64_t valid = bin_fixed(fixed, is_signed, n, bf, fbins, &fsum);
    dh_mi_gpu *g = NULL;
    char msg[512];
    dh_mi_gpu_tuning t = {.direct_terms = variant & 1, .no_run_merge = variant >> 1};
    ck_assert_msg(dh_mi_gpu_create(fbins, n, bf, bm, k, valid, fsum, &t, &g, msg,
                                      sizeof msg) == 0, "%s", msg);
    ck_assert_int_eq(dh_mi_gpu_layout(g, k, 0, 0), DH_MI_LAYOUT_SOLO);
    dh_mi_values *got = malloc(k * sizeof *got);
    ck_assert_msg(dh_mi_gpu_evaluate_host(g, moving, is_signed, n, k, NULL, 0, NULL, has_range,
                                             lo, hi, 0, got, msg, sizeof msg) == 0, "%s", msg);
    uint32_t *want = malloc((size_t)bf * bm * 4), *gj = malloc((size_t)bf * bm * 4);
    for (uint32_t i = 0; i < k; i++) {
        const uint16_t *mi = moving + (size_t)i * n;
        int32_t ilo = lo, ihi = hi;
        if (!has_range)
            dh_mi_minmax(mi, is_signed, n, NULL, &ilo, &ihi);
        dh_jaxis ma;
        ck_assert_int_eq(dh_jaxis_init(&ma, bm, ilo, ihi), 0);
        dh_mi_joint_cpu(fbins, bf, mi, is_signed, n, NULL, &ma, want);
        dh_mi_values rec;
        dh_mi_scores_from_joint(want, bf, bm, valid, &fsum, 0, &rec);
        rec.moving_lo = ilo, rec.moving_hi = ihi, rec.reserved = 0;
        ck_assert_int_eq(dh_mi_gpu_read_joint(g, i, gj, msg, sizeof msg), 0);
        ck_assert_msg(memcmp(want, gj, (size_t)bf * bm * 4) == 0,
                      "solo counts differ: bins %u:%u n %zu kind %d item %u", bf, bm, n, kind, i);
        ck_assert_msg(memcmp(&rec, &got[i], sizeof rec) == 0,
                      "solo record differs: bins %u:%u kind %d item %u: mi %.17g vs %.17g", bf,
                      bm, kind, i, rec.mi, got[i].mi);
    }
    dh_mi_gpu_free(g);
    free(fixed), free(moving), free(fbins), free(got), free(want), free(gj);
}

START_TEST(test_solo)
{
    compare_solo(256, 256, 256 * 256, 140, 0, 1, 0, 0, 300);
    compare_solo(256, 256, 256 * 256, 133, 1, 0, 0, 0, 301);
    compare_solo(256, 256, 256 * 256, 133, 0, 0, 1, 0, 302);
    compare_solo(256, 256, 256 * 256, 133, 1, 1, 1, 0, 303);
    compare_solo(200, 129, 255 * 251, 140, 0, 0, 2, 0, 304);
    compare_solo(256, 100, 1001, 133, 1, 0, 3, 0, 305);
    compare_solo(129, 256, 257 * 255, 140, 0, 1, 3, 0, 306);
    compare_solo(256, 256, 256 * 256, 133, 1, 0, 0, 1, 307);
    compare_solo(255, 129, 300 * 211, 133, 0, 0, 0, 0, 308); /* an odd number of cells */
    compare_solo(256, 256, 256 * 256, 133, 0, 0, 1, 2, 309);
    compare_solo(200, 129, 255 * 251, 140, 1, 1, 0, 2, 310);
    /* images of several rounds of 65536 pixels, added up in the joint histogram: 512x512
     * (4 rounds; constant: 4 x 65536 in one cell), 300x300 (2, the last one short), 511x509 (4,
     * no 16-byte loads: every pixel one by one) */
    compare_solo(256, 256, 512 * 512, 133, 0, 1, 0, 0, 311);
    compare_solo(256, 256, 512 * 512, 133, 1, 0, 1, 0, 312);
    compare_solo(256, 200, 300 * 300, 140, 0, 0, 2, 2, 313);
    compare_solo(129, 256, 511 * 509, 133, 1, 0, 3, 0, 314);
    compare_solo(256, 256, 511 * 509, 133, 0, 1, 0, 2, 315);
}
END_TEST

/* The spread kernel (mi_cuda_spread.cuh), taken by calls of fewer images than SMs with 32-bit
 * counters: its per-image state and accumulators must be back at zero after every evaluation, so
 * each case runs 8 evaluations back to back on a non-blocking stream, alternating two sets of
 * moving images and given and found ranges, with the records poisoned first, and compares every
 * record and joint histogram with the CPU twin each time. Blocks per image P (0: automatic, which
 * takes the spread kernel for such calls only where the image is small or the calls many),
 * signed and unsigned samples, masks; kind 0 CT-like, 1 constant (every pixel in one cell, added
 * up across all P blocks), 2 two values, 3 the sample type's extremes, 4 masked with image 0
 * having no valid pixel (found range 0:0, nothing counts), 5 two fixed values in halves against a
 * constant moving image (two cells of n / 2: counts past the logarithm table, not dominant). */
static void compare_spread(uint32_t bf, uint32_t bm, size_t n, uint32_t k, uint32_t P,
                           int is_signed, int kind, uint64_t seed)
{
    enum { SETS = 2, REPS = 8 };
    const size_t cells = (size_t)bf * bm, total = (size_t)SETS * k * n;
    uint16_t *fixed = malloc(n * 2), *moving = malloc(total * 2), *fbins = malloc(n * 2);
    uint8_t *valid = malloc(total);
    dh_test_rng rng;
    dh_test_rng_seed(&rng, seed);
    const uint16_t ext[2] = {is_signed ? 0x8000u : 0u, is_signed ? 0x7FFFu : 0xFFFFu};
    dh_test_fill_ct_like(fixed, n, seed);
    dh_test_fill_ct_like(moving, total, seed + 1);
    for (size_t i = 0; i < total; i++) {
        if (kind == 1)
            moving[i] = (uint16_t)(1000 + i / n); /* one value per image */
        else if (kind == 2)
            moving[i] = dh_test_rng_below(&rng, 2) ? 77 : 3000;
        else if (kind == 3)
            moving[i] = ext[dh_test_rng_below(&rng, 2)];
        else if (kind == 5)
            moving[i] = 1234;
        valid[i] = kind == 4 ? (i % ((size_t)k * n) >= n && dh_test_rng_below(&rng, 5) != 0) : 1;
    }
    for (size_t i = 0; i < n; i++)
        if (kind == 1 || kind == 5)
            fixed[i] = kind == 1 || i % 2 ? 500 : 1500;
    const uint8_t *vh = kind == 4 ? valid : NULL;
    double fsum;
    uint64_t fvalid = bin_fixed(fixed, is_signed, n, bf, fbins, &fsum);
    /* the CPU twin of every image, with the given range (-100..1900) and with its own */
    uint32_t *want = malloc(2 * total / n * cells * 4), *got = malloc(cells * 4);
    dh_mi_values *rec = malloc(2 * total / n * sizeof *rec);
    for (size_t r = 0; r < 2; r++)
        for (size_t i = 0; i < total / n; i++) {
            const size_t w = r * (total / n) + i;
            int32_t lo = -100, hi = 1900;
            if (r == 1 && !dh_mi_minmax(moving + i * n, is_signed, n, vh ? vh + i * n : NULL,
                                           &lo, &hi))
                lo = hi = 0;
            dh_jaxis ma;
            ck_assert_int_eq(dh_jaxis_init(&ma, bm, lo, hi), 0);
            dh_mi_joint_cpu(fbins, bf, moving + i * n, is_signed, n, vh ? vh + i * n : NULL, &ma,
                         want + w * cells);
            dh_mi_scores_from_joint(want + w * cells, bf, bm, fvalid, &fsum, 0, &rec[w]);
            rec[w].moving_lo = lo, rec[w].moving_hi = hi, rec[w].reserved = 0;
        }
    dh_mi_gpu_tuning t = {0};
    t.spread_blocks = P;
    dh_mi_gpu *g = NULL;
    char msg[512];
    ck_assert_msg(dh_mi_gpu_create(fbins, n, bf, bm, k, fvalid, fsum, &t, &g, msg,
                                      sizeof msg) == 0, "%s", msg);
    ck_assert_msg(dh_mi_gpu_layout(g, k, kind == 4, 0) == DH_MI_LAYOUT_SPREAD,
                  "the spread kernel should take %u images of %zu pixels", k, n);
    cudaStream_t stream;
    ck_assert_int_eq(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    void *d_moving = NULL, *d_valid = NULL, *d_out = NULL;
    ck_assert_int_eq(cudaMalloc(&d_moving, total * 2), cudaSuccess);
    ck_assert_int_eq(cudaMalloc(&d_valid, total), cudaSuccess);
    ck_assert_int_eq(cudaMalloc(&d_out, k * sizeof(dh_mi_values)), cudaSuccess);
    ck_assert_int_eq(cudaMemcpy(d_moving, moving, total * 2, cudaMemcpyHostToDevice), cudaSuccess);
    ck_assert_int_eq(cudaMemcpy(d_valid, valid, total, cudaMemcpyHostToDevice), cudaSuccess);
    /* A pageable cudaMemcpy may return before its DMA lands, and a non-blocking stream does
     * not wait for the legacy stream's work: wait for the copies before launching there. */
    ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
    dh_mi_values *out = malloc(k * sizeof *out);
    for (int rep = 0; rep < REPS; rep++) {
        const size_t set = (size_t)rep % SETS, found = (size_t)(rep / SETS) % 2;
        ck_assert_int_eq(cudaMemsetAsync(d_out, 0xFF, k * sizeof *out, stream), cudaSuccess);
        ck_assert_msg(dh_mi_gpu_evaluate(g, (const uint16_t *)d_moving + set * k * n,
                                            is_signed, n, k,
                                            vh ? (const uint8_t *)d_valid + set * k * n : NULL, n,
                                            NULL, !found, -100, 1900, 0, d_out, stream, msg,
                                            sizeof msg) == 0, "%s", msg);
        ck_assert_int_eq(cudaStreamSynchronize(stream), cudaSuccess);
        ck_assert_int_eq(cudaMemcpy(out, d_out, k * sizeof *out, cudaMemcpyDeviceToHost),
                         cudaSuccess);
        for (uint32_t i = 0; i < k; i++) {
            const size_t w = found * (total / n) + set * k + i;
            ck_assert_int_eq(dh_mi_gpu_read_joint(g, i, got, msg, sizeof msg), 0);
            ck_assert_msg(memcmp(want + w * cells, got, cells * 4) == 0,
                          "spread counts differ: bins %u:%u n %zu P %u kind %d rep %d item %u", bf,
                          bm, n, P, kind, rep, i);
            ck_assert_msg(memcmp(&rec[w], &out[i], sizeof out[i]) == 0,
                          "spread record differs: bins %u:%u n %zu P %u kind %d rep %d item %u: "
                          "mi %.17g vs %.17g, n %llu vs %llu",
                          bf, bm, n, P, kind, rep, i, rec[w].mi, out[i].mi,
                          (unsigned long long)rec[w].n, (unsigned long long)out[i].n);
        }
    }
    dh_mi_gpu_free(g);
    cudaFree(d_moving), cudaFree(d_valid), cudaFree(d_out);
    cudaStreamDestroy(stream);
    free(fixed), free(moving), free(fbins), free(valid), free(want), free(got), free(rec),
        free(out);
}

START_TEST(test_spread)
{
    compare_spread(64, 64, 512 * 512, 1, 32, 0, 0, 400); /* one 512x512 slice */
    compare_spread(64, 64, 512 * 512, 1, 128, 1, 1, 401);
    compare_spread(64, 64, 256 * 256, 3, 0, 1, 3, 402);
    compare_spread(32, 100, 300 * 301, 2, 7, 0, 2, 403);
    compare_spread(128, 128, 400 * 400, 5, 33, 1, 0, 404);
    compare_spread(64, 64, 200 * 203, 4, 1, 0, 1, 405);  /* one block per image: no gathering */
    compare_spread(64, 64, 200 * 203, 4, 0, 0, 4, 406);  /* masks, an image with none valid */
    compare_spread(50, 64, 1024 * 1024, 2, 66, 1, 4, 407);
    compare_spread(64, 64, 512 * 512, 9, 0, 0, 0, 410); /* clusters of 16 would need 144 SMs */
    compare_spread(2, 3, 1001, 2, 3, 0, 0, 408);
    compare_spread(16, 16, 5, 3, 0, 1, 3, 409);          /* smaller than one vector */
    compare_spread(64, 64, 512 * 512, 1, 0, 1, 5, 411);  /* cells of n / 2 */
}
END_TEST

/* Every cluster layout gives the CPU twin's counts and record bits: cluster sizes 4, 8, 16,
 * one to five clusters per image, signed and unsigned samples, given and found ranges. */
static void compare_layout_bp(uint32_t bins_f, uint32_t bins_m, size_t n, uint32_t cluster,
                              uint32_t per_image, uint32_t threads, uint32_t blocks_per_sm,
                              uint32_t no_merge, int is_signed, int has_range, uint64_t seed)
{
    uint16_t *fixed = malloc(n * 2), *moving = malloc(n * 2), *fbins = malloc(n * 2);
    dh_test_fill_ct_like(fixed, n, seed);
    dh_test_fill_ct_like(moving, n, seed + 7);
    if (is_signed)
        for (size_t i = 0; i < n; i++) { /* around zero: -2048..2047 as int16 */
            fixed[i] = (uint16_t)(int16_t)(fixed[i] - 2048);
            moving[i] = (uint16_t)(int16_t)(moving[i] - 2048);
        }
    int32_t flo, fhi, lo = -100, hi = 1900;
    dh_mi_minmax(fixed, is_signed, n, NULL, &flo, &fhi);
    if (!has_range)
        dh_mi_minmax(moving, is_signed, n, NULL, &lo, &hi);
    dh_jaxis fa, ma;
    ck_assert_int_eq(dh_jaxis_init(&fa, bins_f, flo, fhi), 0);
    ck_assert_int_eq(dh_jaxis_init(&ma, bins_m, lo, hi), 0);
    uint64_t marg[256];
    uint64_t valid = dh_mi_bin_fixed(fixed, is_signed, n, NULL, &fa, fbins, marg);
    double fsum = dh_mi_sum_terms_u64(marg, bins_f, valid, dh_mi_log((double)valid));
    uint32_t *want = malloc((size_t)bins_f * bins_m * 4), *got = malloc((size_t)bins_f * bins_m * 4);
    dh_mi_joint_cpu(fbins, bins_f, moving, is_signed, n, NULL, &ma, want);
    dh_mi_values rec_want, rec_got;
    dh_mi_scores_from_joint(want, bins_f, bins_m, valid, &fsum, 0, &rec_want);
    rec_want.moving_lo = lo, rec_want.moving_hi = hi, rec_want.reserved = 0;

    /* no_merge bit 0: no_run_merge; bit 1: classic_count (the run-merging loop for 32-bit
     * counters without a mask, instead of the branch-free one) */
    dh_mi_gpu_tuning t = {.cluster = cluster, .clusters_per_image = per_image,
                             .threads = threads, .blocks_per_sm = blocks_per_sm,
                             .no_run_merge = no_merge & 1, .classic_count = no_merge >> 1};
    dh_mi_gpu *g = NULL;
    char msg[512];
    ck_assert_msg(dh_mi_gpu_create(fbins, n, bins_f, bins_m, 1, valid, fsum, &t, &g, msg,
                                      sizeof msg) == 0, "%s", msg);
    for (int rep = 0; rep < 2; rep++) {
        ck_assert_msg(dh_mi_gpu_evaluate_host(g, moving, is_signed, n, 1, NULL, 0, NULL, has_range,
                                                 lo, hi, 0, &rec_got, msg, sizeof msg) == 0,
                      "%s", msg);
        ck_assert_int_eq(dh_mi_gpu_read_joint(g, 0, got, msg, sizeof msg), 0);
        ck_assert_msg(memcmp(want, got, (size_t)bins_f * bins_m * 4) == 0,
                      "counts differ: bins %u:%u n %zu cluster %u x %u", bins_f, bins_m, n,
                      cluster, per_image);
        ck_assert_msg(memcmp(&rec_want, &rec_got, sizeof rec_got) == 0,
                      "record differs: cluster %u x %u: mi %.17g vs %.17g", cluster, per_image,
                      rec_want.mi, rec_got.mi);
    }
    dh_mi_gpu_free(g);
    free(fixed), free(moving), free(fbins), free(want), free(got);
}

static void compare_layout(uint32_t bins_f, uint32_t bins_m, size_t n, uint32_t cluster,
                           uint32_t per_image, uint32_t threads, int is_signed, int has_range,
                           uint64_t seed)
{
    compare_layout_bp(bins_f, bins_m, n, cluster, per_image, threads, 0, 0, is_signed, has_range,
                      seed);
}

START_TEST(test_layouts)
{
    static const uint32_t clusters[] = {1, 2, 4, 8, 16};
    static const uint32_t per_image[] = {1, 2, 5};
    for (size_t c = 0; c < 5; c++)
        for (size_t g = 0; g < 3; g++) {
            uint64_t seed = 70 + 3 * c + g;
            compare_layout(64, 64, 300 * 301, clusters[c], per_image[g], 0, 0, 1, seed);
            compare_layout(256, 256, 300 * 301, clusters[c], per_image[g], 0, 1, 0, seed);
            compare_layout(255, 129, 777 * 333, clusters[c], per_image[g], 0, 1, 1, seed);
            compare_layout(2, 3, 1001, clusters[c], per_image[g], 0, 0, 0, seed);
        }
    /* Smaller blocks: more tiles per thread, so packed counters flush while counting. */
    static const uint32_t threads[] = {256, 512};
    for (size_t th = 0; th < 2; th++)
        for (size_t c = 0; c < 5; c += 2)
            for (size_t g = 0; g < 2; g++) {
                uint64_t seed = 170 + 5 * th + 3 * c + g;
                compare_layout(64, 64, 300 * 301, clusters[c], per_image[g], threads[th], 0, 1,
                               seed);
                compare_layout(256, 256, 512 * 509, clusters[c], per_image[g], threads[th], 1, 1,
                               seed);
                compare_layout(255, 129, 777 * 333, clusters[c], per_image[g], threads[th], 1, 0,
                               seed);
            }
    /* One-block images with registers capped for 3 or 4 blocks per SM (their own kernels). */
    for (uint32_t bp = 2; bp <= 4; bp++)
        for (size_t g = 0; g < 2; g++) {
            uint64_t seed = 190 + 2 * bp + g;
            compare_layout_bp(64, 64, 256 * 256, 1, per_image[g], 512, bp, 0, 0, 1, seed);
            compare_layout_bp(32, 64, 300 * 301, 1, per_image[g], 512, bp, 0, 1, 0, seed);
            compare_layout_bp(2, 3, 1001, 1, per_image[g], 512, bp, 0, 0, 0, seed);
            compare_layout_bp(128, 128, 777 * 333, 1, per_image[g], 512, bp, 0, 1, 1, seed);
        }
    /* One shared atomic per pixel instead of one per run: 32-bit and packed counters, one and
     * several blocks per image, signed and unsigned. */
    for (size_t c = 0; c < 5; c += 2)
        for (size_t g = 0; g < 2; g++) {
            uint64_t seed = 210 + 3 * c + g;
            compare_layout_bp(64, 64, 300 * 301, clusters[c], per_image[g], 0, 0, 1, 0, 1, seed);
            compare_layout_bp(256, 256, 512 * 509, clusters[c], per_image[g], 0, 0, 1, 1, 0,
                              seed);
            compare_layout_bp(255, 129, 777 * 333, clusters[c], per_image[g], 0, 0, 1, 1, 1,
                              seed);
        }
    /* The run-merging loop (and its one-atomic-per-pixel form) where the branch-free one is the
     * default: 32-bit counters without a mask, one and several blocks per image. */
    for (size_t c = 0; c < 5; c += 2)
        for (uint32_t mode = 2; mode <= 3; mode++) {
            uint64_t seed = 230 + 3 * c + mode;
            compare_layout_bp(64, 64, 300 * 301, clusters[c], 1, 0, 0, mode, 0, 1, seed);
            compare_layout_bp(100, 33, 777 * 333, clusters[c], 2, 0, 0, mode, 1, 0, seed);
            compare_layout_bp(64, 64, 256 * 256, 1, 1, 512, 4, mode, 1, 1, seed);
        }
    /* One-block images of 256 threads, 8 per SM. */
    for (size_t g = 0; g < 2; g++) {
        compare_layout_bp(64, 64, 256 * 256, 1, per_image[g], 256, 8, 0, 0, 1, 250 + g);
        compare_layout_bp(32, 100, 300 * 301, 1, per_image[g], 256, 8, 0, 1, 0, 252 + g);
        compare_layout_bp(2, 3, 1001, 1, per_image[g], 256, 8, 2, 0, 0, 254 + g);
        compare_layout_bp(128, 128, 777 * 333, 1, per_image[g], 256, 8, 0, 1, 1, 256 + g);
    }
}
END_TEST

/* The race hunt: every layout, a fresh fixed image each time (its setup memsets a large joint
 * buffer), then many back-to-back launches on a NON-blocking stream (which does not wait for
 * the legacy stream), each record area poisoned first, every record and the joint histograms
 * of the first and last image compared with the CPU twin after every launch; two sets of moving
 * images alternate so that a stale result cannot pass. */
static void repeat_layout(uint32_t bins, uint32_t cluster, uint32_t per_image, size_t n,
                          uint64_t seed)
{
    enum { K = 4, REPS = 25, SETS = 2 };
    const size_t cells = (size_t)bins * bins;
    uint16_t *fixed = malloc(n * 2), *fbins = malloc(n * 2);
    uint16_t *moving = malloc((size_t)SETS * K * n * 2);
    dh_test_fill_ct_like(fixed, n, seed);
    dh_test_fill_ct_like(moving, (size_t)SETS * K * n, seed + 1);
    const int32_t lo = 0, hi = 4095;
    int32_t flo, fhi;
    dh_mi_minmax(fixed, 0, n, NULL, &flo, &fhi);
    dh_jaxis fa, ma;
    ck_assert_int_eq(dh_jaxis_init(&fa, bins, flo, fhi), 0);
    ck_assert_int_eq(dh_jaxis_init(&ma, bins, lo, hi), 0);
    uint64_t marg[256];
    uint64_t valid = dh_mi_bin_fixed(fixed, 0, n, NULL, &fa, fbins, marg);
    double fsum = dh_mi_sum_terms_u64(marg, bins, valid, dh_mi_log((double)valid));
    uint32_t *want = malloc((size_t)SETS * K * cells * 4), *got = malloc(cells * 4);
    dh_mi_values rec_want[SETS * K], rec_got[K];
    for (size_t i = 0; i < (size_t)SETS * K; i++) {
        dh_mi_joint_cpu(fbins, bins, moving + i * n, 0, n, NULL, &ma, want + i * cells);
        dh_mi_scores_from_joint(want + i * cells, bins, bins, valid, &fsum, 0, &rec_want[i]);
        rec_want[i].moving_lo = lo, rec_want[i].moving_hi = hi, rec_want[i].reserved = 0;
    }
    cudaStream_t stream;
    ck_assert_int_eq(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    void *d_moving = NULL, *d_out = NULL;
    ck_assert_int_eq(cudaMalloc(&d_moving, (size_t)SETS * K * n * 2), cudaSuccess);
    ck_assert_int_eq(cudaMalloc(&d_out, K * sizeof(dh_mi_values)), cudaSuccess);
    ck_assert_int_eq(cudaMemcpy(d_moving, moving, (size_t)SETS * K * n * 2,
                                cudaMemcpyHostToDevice), cudaSuccess);
    /* A pageable cudaMemcpy may return before its DMA lands, and a non-blocking stream does
     * not wait for the legacy stream's work: wait for the copies before launching there. */
    ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
    dh_mi_gpu_tuning t = {.cluster = cluster, .clusters_per_image = per_image};
    dh_mi_gpu *g = NULL;
    char msg[512];
    ck_assert_msg(dh_mi_gpu_create(fbins, n, bins, bins, 256, valid, fsum, &t, &g, msg,
                                      sizeof msg) == 0, "%s", msg);
    for (int rep = 0; rep < REPS; rep++) {
        const size_t set = (size_t)rep % SETS;
        ck_assert_int_eq(cudaMemsetAsync(d_out, 0xFF, K * sizeof(dh_mi_values), stream),
                         cudaSuccess);
        ck_assert_msg(dh_mi_gpu_evaluate(g, (const uint16_t *)d_moving + set * K * n, 0, n, K,
                                            NULL, 0, NULL, 1, lo, hi, 0, d_out, stream, msg,
                                            sizeof msg) == 0, "%s", msg);
        ck_assert_int_eq(cudaStreamSynchronize(stream), cudaSuccess);
        ck_assert_int_eq(cudaMemcpy(rec_got, d_out, sizeof rec_got, cudaMemcpyDeviceToHost),
                         cudaSuccess);
        for (uint32_t i = 0; i < K; i++)
            ck_assert_msg(memcmp(&rec_want[set * K + i], &rec_got[i], sizeof rec_got[i]) == 0,
                          "record differs: bins %u cluster %u x %u rep %d item %u", bins, cluster,
                          per_image, rep, i);
        for (uint32_t i = 0; i < K; i += K - 1) {
            ck_assert_int_eq(dh_mi_gpu_read_joint(g, i, got, msg, sizeof msg), 0);
            ck_assert_msg(memcmp(want + (set * K + i) * cells, got, cells * 4) == 0,
                          "counts differ: bins %u cluster %u x %u rep %d item %u", bins, cluster,
                          per_image, rep, i);
        }
    }
    dh_mi_gpu_free(g);
    cudaFree(d_moving);
    cudaFree(d_out);
    cudaStreamDestroy(stream);
    free(fixed), free(fbins), free(moving), free(want), free(got);
}

START_TEST(test_repeats)
{
    static const uint32_t clusters[] = {1, 2, 4, 8, 16};
    static const uint32_t per_image[] = {1, 3};
    for (size_t c = 0; c < 5; c++)
        for (size_t g = 0; g < 2; g++) {
            repeat_layout(64, clusters[c], per_image[g], 200 * 203, 90 + c);
            repeat_layout(256, clusters[c], per_image[g], 160 * 160, 95 + c);
        }
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

/* Float32 moving images (DRRs) with NaN, infinities and values outside the range, against a
 * float32 or a stored-value fixed image: the GPU's counts and records equal the CPU's through the
 * host path (vector loads), device pointers at an odd 4-byte offset (scalar loads) and 16-byte
 * aligned device pointers with a stride of a multiple of 4 (vector loads), one and several
 * clusters per image, 32-bit and packed counters. */
static void compare_f32(uint32_t bf, uint32_t bm, size_t n, uint32_t k, int masks, int float_fixed,
                        uint64_t seed)
{
    float *ffix = malloc(n * 4), *moving = malloc((size_t)k * n * 4);
    uint16_t *ifix = malloc(n * 2);
    uint8_t *valid = malloc((size_t)k * n);
    dh_test_rng rng;
    dh_test_rng_seed(&rng, seed);
    dh_test_fill_ct_like(ifix, n, seed);
    for (size_t i = 0; i < n; i++)
        ffix[i] = (float)ifix[i] * 0.37f - 100.0f;
    for (size_t i = 0; i < (size_t)k * n; i++) {
        uint32_t r = dh_test_rng_below(&rng, 1000);
        /* a smooth DRR-like ramp with noise, a background value, and specials */
        moving[i] = r == 0   ? NAN
                    : r == 1 ? INFINITY
                    : r == 2 ? -INFINITY
                    : r == 3 ? 1.5f    /* above hi */
                    : r == 4 ? -1e-7f  /* below lo */
                    : r == 5 ? 1.0f    /* hi itself */
                    : r < 400 ? 0.0f   /* the background */
                              : (float)((i % n) % 997) / 997.0f + (float)r * 1e-6f;
        valid[i] = dh_test_rng_below(&rng, 7) != 0;
    }
    dh_ctx *ctx = dh_ctx_create();
    dh_mi_params p;
    dh_mi_params_init(&p);
    p.bins_fixed = bf, p.bins_moving = bm, p.max_batch = k;
    p.fixed_lo_f32 = -50.0f, p.fixed_hi_f32 = 1200.0f;
    p.moving_lo_f32 = 0.0f, p.moving_hi_f32 = 1.0f;
    const void *fixed = float_fixed ? (const void *)ffix : (const void *)ifix;
    const int ftype = float_fixed ? DH_SAMPLE_FLOAT32 : DH_SAMPLE_UINT16;
    dh_mi_fixed *cpu = NULL, *gpu = NULL;
    p.device = DH_DEVICE_CPU;
    ck_assert_int_eq(dh_mi_fixed_create(ctx, fixed, ftype, n, NULL, &p, &cpu), DH_OK);
    p.device = DH_DEVICE_CUDA;
    ck_assert_msg(dh_mi_fixed_create(ctx, fixed, ftype, n, NULL, &p, &gpu) == DH_OK, "%s",
                  dh_ctx_error(ctx));
    dh_mi_scores *a = calloc(k, sizeof *a), *b = calloc(k, sizeof *b);
    const uint8_t *v = masks ? valid : NULL;
    ck_assert_int_eq(dh_mi_evaluate(ctx, cpu, moving, DH_SAMPLE_FLOAT32, n, k, v, n, a), DH_OK);
    ck_assert(a[0].n > 0 && (n < 1000 || a[0].n < n)); /* specials were left out */
    ck_assert_msg(dh_mi_evaluate(ctx, gpu, moving, DH_SAMPLE_FLOAT32, n, k, v, n, b) == DH_OK,
                  "%s", dh_ctx_error(ctx));
    uint32_t *ja = malloc((size_t)bf * bm * 4), *jb = malloc((size_t)bf * bm * 4);
    for (uint32_t i = 0; i < k; i++) {
        ck_assert_int_eq(dh_mi_joint_histogram(ctx, cpu, i, ja), DH_OK);
        ck_assert_int_eq(dh_mi_joint_histogram(ctx, gpu, i, jb), DH_OK);
        ck_assert_msg(memcmp(ja, jb, (size_t)bf * bm * 4) == 0,
                      "float counts differ: bins %u:%u n %zu item %u", bf, bm, n, i);
    }
    ck_assert_msg(memcmp(a, b, k * sizeof *a) == 0, "float records differ: bins %u:%u n %zu", bf,
                  bm, n);
    /* Device pointers: at an odd float offset and stride (scalar), then 16-byte aligned with a
     * stride of a multiple of 4 (vector), on a non-blocking stream. */
    cudaStream_t stream;
    ck_assert_int_eq(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    void *d_moving = NULL, *d_valid = NULL, *d_out = NULL;
    const size_t strides[2] = {n + 1, (n + 3) / 4 * 4 + 4}, offsets[2] = {1, 0};
    ck_assert_int_eq(cudaMalloc(&d_moving, ((size_t)k * (n + 8) + 8) * 4), cudaSuccess);
    ck_assert_int_eq(cudaMalloc(&d_valid, (size_t)k * (n + 8) + 8), cudaSuccess);
    ck_assert_int_eq(cudaMalloc(&d_out, k * sizeof *b), cudaSuccess);
    for (int layout = 0; layout < 2; layout++) {
        const size_t ds = strides[layout];
        float *dm = (float *)d_moving + offsets[layout];
        uint8_t *dv = (uint8_t *)d_valid + offsets[layout];
        ck_assert_int_eq(cudaMemcpy2D(dm, ds * 4, moving, n * 4, n * 4, k, cudaMemcpyHostToDevice),
                         cudaSuccess);
        ck_assert_int_eq(cudaMemcpy2D(dv, ds, valid, n, n, k, cudaMemcpyHostToDevice),
                         cudaSuccess);
        /* (the copies' DMA may still run when they return: see above) */
        ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
        ck_assert_int_eq(cudaMemsetAsync(d_out, 0xFF, k * sizeof *b, stream), cudaSuccess);
        ck_assert_int_eq(dh_mi_evaluate_device(ctx, gpu, dm, DH_SAMPLE_FLOAT32, ds, k,
                                               masks ? dv : NULL, ds, stream, d_out),
                         DH_OK);
        ck_assert_int_eq(cudaStreamSynchronize(stream), cudaSuccess);
        ck_assert_int_eq(cudaMemcpy(b, d_out, k * sizeof *b, cudaMemcpyDeviceToHost), cudaSuccess);
        ck_assert_msg(memcmp(a, b, k * sizeof *a) == 0, "device float records differ, layout %d",
                      layout);
    }
    cudaFree(d_moving), cudaFree(d_valid), cudaFree(d_out);
    cudaStreamDestroy(stream);
    dh_mi_fixed_free(cpu);
    dh_mi_fixed_free(gpu);
    dh_ctx_free(ctx);
    free(ffix), free(moving), free(ifix), free(valid), free(a), free(b), free(ja), free(jb);
}

START_TEST(test_float32)
{
    compare_f32(64, 64, 256 * 256, 4, 1, 1, 200);
    compare_f32(64, 256, 256 * 256, 1, 0, 0, 201);
    compare_f32(256, 256, 512 * 512, 2, 1, 1, 202);  /* packed counters */
    compare_f32(32, 100, 97 * 101, 64, 1, 0, 203);   /* a batch of odd-sized images */
    compare_f32(64, 64, 1031 * 1030, 1, 1, 1, 204);  /* several clusters per image */
    compare_f32(256, 256, 1031 * 1030, 1, 0, 1, 205); /* and packed flushes mid-count */
    compare_f32(16, 16, 5, 3, 1, 1, 206);            /* smaller than one vector */
    /* without masks: batches, several clusters, smaller than one vector, the batch layout */
    compare_f32(32, 100, 97 * 101, 64, 0, 1, 207);
    compare_f32(64, 64, 1031 * 1030, 1, 0, 0, 208);
    compare_f32(16, 16, 5, 3, 0, 0, 209);
    compare_f32(64, 64, 400 * 400, 140, 0, 1, 210);
}
END_TEST

int main(void)
{
    if (!dh_cuda_available())
        return DH_TEST_SKIP;
    const dh_test tests[] = {DH_TEST(test_bins),    DH_TEST(test_batches), DH_TEST(test_layouts),
                             DH_TEST(test_repeats), DH_TEST(test_float32), DH_TEST(test_solo),
                             DH_TEST(test_spread)};
    dh_test_in_one_process();
    return dh_test_run(dh_test_suite("mi_cuda", 600, DH_TESTS(tests)));
}
