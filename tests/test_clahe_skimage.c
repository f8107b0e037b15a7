// SPDX-License-Identifier: MIT
/*
 * test_clahe_skimage.c: kernels/clahe_skimage.h without Python: three images whose
 * equalize_adapthist results scikit-image 0.26 gave (its float64 values written as hexadecimal
 * literals, so the comparison is bit for bit), a uint16 2D image with kernel 2, clip 0.05 and 16
 * bins, an int16 3D volume (its negatives clipped by img_as_uint), and a constant uint8 image;
 * then the invariants on random volumes of awkward shapes (tiny, kernels larger than the image,
 * 1 and 65536 bins): the output is round(f * (L - 1)), f spans [0, 1], slice mode equals one
 * call per slice, iterations run in another order (as threads run them) give the same bits;
 * and bad arguments refused. The comparison with scikit-image on random data of
 * every kind is plugin/python/tests/test_skimage_clahe.py; this one runs in the sanitizer build.
 */
#include <math.h>
#include <stdlib.h>

#include "clahe_skimage.h"
#include "test_support.h"

static void check_against(const void *data, const dh_clahe_skimage_job *job, const double *want,
                          size_t n)
{
    double *f = malloc(n * sizeof *f);
    uint16_t *out = malloc(n * sizeof *out);
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(out);
    ck_assert_int_eq(dh_clahe_skimage_cpu(data, job, 65536, out, f), 0);
    for (size_t i = 0; i < n; i++) {
        if (f[i] != want[i])
            ck_abort_msg("sample %zu: %a, scikit-image %a", i, f[i], want[i]);
        ck_assert_uint_eq(out[i], (uint16_t)nearbyint(want[i] * 65535));
    }
    free(f);
    free(out);
}

START_TEST(uint16_2d_equals_scikit_image)
{
    static const uint16_t a[35] = {3870, 2560, 2802, 3674, 2368, 3177, 3414, 922,  227,
                                   1229, 1167, 3578, 3738, 21,   2047, 3363, 538,  3264,
                                   487,  1916, 3344, 1241, 1399, 1140, 2946, 1043, 4056,
                                   1823, 1958, 2066, 2386, 2267, 2086, 4077, 3308};
    static const double want[35] = {
        0x1.0000000000000p+0, 0x1.6276276276276p-1, 0x1.6276276276276p-1, 0x1.0000000000000p+0,
        0x1.89d89d89d89d9p-2, 0x1.6276276276276p-1, 0x1.b13b13b13b13bp-1, 0x1.89d89d89d89d9p-2,
        0x1.3b13b13b13b14p-4, 0x1.89d89d89d89d9p-2, 0x1.89d89d89d89d9p-2, 0x1.0000000000000p+0,
        0x1.0000000000000p+0, 0x1.3b13b13b13b14p-4, 0x1.13b13b13b13b1p-1, 0x1.b13b13b13b13bp-1,
        0x0.0p+0,             0x1.b13b13b13b13bp-1, 0x0.0p+0,             0x1.89d89d89d89d9p-2,
        0x1.89d89d89d89d9p-1, 0x1.3b13b13b13b14p-4, 0x1.89d89d89d89d9p-2, 0x1.d89d89d89d89ep-3,
        0x1.6276276276276p-1, 0x1.89d89d89d89d9p-2, 0x1.0000000000000p+0, 0x1.13b13b13b13b1p-1,
        0x1.6276276276276p-1, 0x1.b13b13b13b13bp-1, 0x1.6276276276276p-1, 0x1.89d89d89d89d9p-2,
        0x1.13b13b13b13b1p-1, 0x1.0000000000000p+0, 0x1.3b13b13b13b14p-1};
    /* equalize_adapthist(a.reshape(5, 7), kernel_size=2, clip_limit=0.05, nbins=16) */
    dh_clahe_skimage_job job = {7, 5, 1, 0, {2, 2, 0}, 0.05, 16, DH_SKIMAGE_UINT16, NULL, 1};
    check_against(a, &job, want, 35);
}
END_TEST

START_TEST(int16_3d_equals_scikit_image)
{
    static const int16_t b[60] = {
        651, 540,  446,  109,  886, 259,  -42, 714,  -108, 728,  435, -163, -248, 233, -258,
        -131, 317, 864,  259,  670, 800,  688, 455,  229,  316,  19,  296,  155,  -3,  891,
        -286, -184, -70, 862,  530, 758,  -60, 565,  143,  286,  -296, 441, 696,  496, -115,
        340, 21,   857,  756,  -77, 311,  827, 716,  549,  467,  -250, 590, 268,  -191, -7};
    static const double want[60] = {
        0x1.6db6db6db6db7p-1, 0x1.2492492492492p-1, 0x1.0000000000000p-1, 0x1.2492492492492p-3,
        0x1.db6db6db6db6ep-1, 0x1.2492492492492p-2, 0x0.0p+0,             0x1.b6db6db6db6dbp-1,
        0x0.0p+0,             0x1.6db6db6db6db7p-1, 0x1.b6db6db6db6dbp-2, 0x0.0p+0,
        0x0.0p+0,             0x1.6db6db6db6db7p-2, 0x0.0p+0,             0x0.0p+0,
        0x1.2492492492492p-2, 0x1.b6db6db6db6dbp-1, 0x1.b6db6db6db6dbp-2, 0x1.6db6db6db6db7p-1,
        0x1.0000000000000p+0, 0x1.b6db6db6db6dbp-1, 0x1.2492492492492p-1, 0x1.b6db6db6db6dbp-2,
        0x1.b6db6db6db6dbp-2, 0x1.2492492492492p-3, 0x1.b6db6db6db6dbp-2, 0x1.b6db6db6db6dbp-3,
        0x0.0p+0,             0x1.0000000000000p+0, 0x0.0p+0,             0x0.0p+0,
        0x0.0p+0,             0x1.9249249249249p-1, 0x1.2492492492492p-1, 0x1.b6db6db6db6dbp-1,
        0x0.0p+0,             0x1.2492492492492p-1, 0x1.2492492492492p-3, 0x1.0000000000000p-1,
        0x0.0p+0,             0x1.0000000000000p-1, 0x1.8000000000000p-1, 0x1.4924924924925p-1,
        0x0.0p+0,             0x1.b6db6db6db6dbp-2, 0x1.2492492492492p-3, 0x1.db6db6db6db6ep-1,
        0x1.b6db6db6db6dbp-1, 0x0.0p+0,             0x1.4924924924925p-2, 0x1.c924924924925p-1,
        0x1.6db6db6db6db7p-1, 0x1.1249249249249p-1, 0x1.db6db6db6db6ep-2, 0x0.0p+0,
        0x1.2492492492492p-1, 0x1.0000000000000p-2, 0x0.0p+0,             0x0.0p+0};
    /* equalize_adapthist(b.reshape(3, 4, 5), kernel_size=2, clip_limit=0.01, nbins=256) */
    dh_clahe_skimage_job job = {5, 4, 3, 1, {2, 2, 2}, 0.01, 256, DH_SKIMAGE_INT16, NULL, 1};
    check_against(b, &job, want, 60);
}
END_TEST

START_TEST(constant_images_as_scikit_image)
{
    uint16_t c[24], z[24];
    double ones[24];
    for (int i = 0; i < 24; i++)
        c[i] = 3, z[i] = 0, ones[i] = 1;
    /* A constant uint8 image gives 1 everywhere, zeros included: its table maps the one bin
     * above 0 and the final rescale clips a constant result to [0, 1] (scikit-image 0.26). */
    dh_clahe_skimage_job job = {6, 4, 1, 0, {0, 0, 0}, 0.01, 256, DH_SKIMAGE_UINT8, NULL, 1};
    check_against(c, &job, ones, 24);
    check_against(z, &job, ones, 24);
    job.clip_limit = 0;
    check_against(z, &job, ones, 24);
}
END_TEST

static uint32_t next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}

/* A parallel_for that runs the iterations last to first. */
static void backwards(int threads, size_t count, void (*body)(void *, size_t), void *arg)
{
    (void)threads;
    for (size_t i = count; i-- > 0;)
        body(arg, i);
}

START_TEST(invariants_on_awkward_shapes)
{
    static const uint32_t shapes[][3] = {{1, 1, 1}, {1, 9, 2}, {7, 3, 4}, {33, 17, 3},
                                         {64, 5, 1}, {13, 40, 6}};
    static const uint32_t kernels[] = {0, 1, 3, 50};
    static const uint32_t nbins[] = {1, 16, 256, 16384, 65536};
    static const double clips[] = {0, 0.01, 0.05, 1};
    uint64_t seed = 21;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const uint32_t nx = shapes[s][0], ny = shapes[s][1], nz = shapes[s][2];
        const size_t n = (size_t)nx * ny * nz, slice = (size_t)nx * ny;
        int16_t *x = malloc(n * sizeof *x);
        uint16_t *out = malloc(n * sizeof *out), *one = malloc(slice * sizeof *one);
        uint16_t *back = malloc(n * sizeof *back);
        double *f = malloc(n * sizeof *f);
        ck_assert(x && out && one && back && f);
        for (size_t i = 0; i < n; i++)
            x[i] = (int16_t)((int32_t)(next(&seed) % 5000) - 1000);
        for (size_t k = 0; k < 4; k++)
            for (size_t b = 0; b < 5; b++) {
                /* One table of 16384+ bins per pixel or per 3x3 box: only on the tiny shapes,
                 * where it costs little (the sanitizer build runs this too). */
                if (kernels[k] && kernels[k] <= 3 && nbins[b] >= 16384 && n > 64)
                    continue;
                for (int volume = 0; volume < 2; volume++) {
                    dh_clahe_skimage_job job = {nx, ny, nz, volume,
                                                {kernels[k], kernels[k], volume ? kernels[k] : 0},
                                                clips[(k + b) % 4], nbins[b],
                                                (k + b) % 2 ? DH_SKIMAGE_INT16 : DH_SKIMAGE_UINT16,
                                                NULL, 1};
                    ck_assert_int_eq(dh_clahe_skimage_cpu(x, &job, 4096, out, f), 0);
                    const size_t image = volume ? n : slice;
                    for (size_t i0 = 0; i0 < n; i0 += image) {
                        double lo = 2, hi = -1;
                        for (size_t i = i0; i < i0 + image; i++) {
                            ck_assert_uint_eq(out[i], (uint16_t)nearbyint(f[i] * 4095));
                            lo = f[i] < lo ? f[i] : lo;
                            hi = f[i] > hi ? f[i] : hi;
                        }
                        /* the final rescale spans [0, 1], or a constant 0 or 1 */
                        ck_assert(lo == 0 || lo == hi);
                        ck_assert(hi == 1 || lo == hi);
                        ck_assert(lo == hi ? lo == 0 || lo == 1 : 1);
                    }
                    /* Iterations in another order (as threads may run them): the same bits. */
                    dh_clahe_skimage_job shuffled = job;
                    shuffled.parallel_for = backwards;
                    shuffled.threads = 4;
                    ck_assert_int_eq(dh_clahe_skimage_cpu(x, &shuffled, 4096, back, NULL), 0);
                    for (size_t i = 0; i < n; i++)
                        ck_assert_uint_eq(back[i], out[i]);
                    if (volume)
                        continue;
                    dh_clahe_skimage_job alone = job;
                    alone.nz = 1;
                    for (uint32_t z = 0; z < nz; z++) {
                        ck_assert_int_eq(dh_clahe_skimage_cpu(x + z * slice, &alone, 4096, one,
                                                              NULL), 0);
                        for (size_t i = 0; i < slice; i++)
                            ck_assert_uint_eq(one[i], out[z * slice + i]);
                    }
                }
            }
        free(x);
        free(out);
        free(one);
        free(back);
        free(f);
    }
}
END_TEST

START_TEST(bad_arguments_are_refused)
{
    uint16_t x[4] = {0}, out[4];
    dh_clahe_skimage_job job = {2, 2, 1, 0, {0, 0, 0}, 0.01, 256, DH_SKIMAGE_UINT16, NULL, 1};
    ck_assert_int_eq(dh_clahe_skimage_cpu(x, &job, 1, out, NULL), -1);
    ck_assert_int_eq(dh_clahe_skimage_cpu(x, &job, 65537, out, NULL), -1);
    ck_assert_int_eq(dh_clahe_skimage_cpu(NULL, &job, 256, out, NULL), -1);
    job.nbins = 0;
    ck_assert_int_eq(dh_clahe_skimage_cpu(x, &job, 256, out, NULL), -1);
    job.nbins = 256;
    job.clip_limit = NAN;
    ck_assert_int_eq(dh_clahe_skimage_cpu(x, &job, 256, out, NULL), -1);
    job.clip_limit = 0.01;
    job.ny = 0;
    ck_assert_int_eq(dh_clahe_skimage_cpu(x, &job, 256, out, NULL), -1);
}
END_TEST

int main(void)
{
    const dh_test tests[] = {DH_TEST(uint16_2d_equals_scikit_image),
                             DH_TEST(int16_3d_equals_scikit_image),
                             DH_TEST(constant_images_as_scikit_image),
                             DH_TEST(invariants_on_awkward_shapes),
                             DH_TEST(bad_arguments_are_refused)};
    return dh_test_run(dh_test_suite("clahe_skimage", 300, DH_TESTS(tests)));
}
