// SPDX-License-Identifier: MIT
/*
 * test_mi_parzen_cuda.c: the Parzen-window (Mattes) MI GPU twin (kernels/mi_parzen_cuda.h)
 * equals the CPU twin (dh_parzen_mi_cpu) bit for bit: whole score records (memcmp) and every
 * float32 of the gradient, for random, smooth, CT-like, constant and two-value images, masks,
 * NaN and infinite float pixels, given ranges with pixels outside them, bins 5, 32, 64, 256,
 * batches 1, 3, 64, both fixed windows, the MI and NMI gradients, nats and bits, float32, uint16
 * and int16 pixels, private and global histograms, one and many blocks per item, given ranges
 * whose widths and offsets take every path of the GPU's division, the run paths of the
 * histogram and gradient (aligned and misaligned buffers, flat, smooth and noisy images), the
 * fixed pass's vector and scalar paths (an aligned fixed image, one a sample past alignment;
 * pixel counts with and without a remainder of four), fixed samples on and around the box
 * window's row thresholds (test_fixed_thresholds), one workspace through changing parameters
 * and the score pass's two kernels (test_workspace_follows_parameters); a
 * second run (and a third on another stream with the workspace reused) gives the same bits; bad
 * arguments are refused as the CPU twin refuses them. Exits 77 without a usable GPU.
 * Runs without fork (CUDA and fork do not mix).
 */
#include <cuda_runtime_api.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/mi_parzen.h"
#include "../kernels/mi_parzen_cuda.h"
#include "test_support.h"

/* ---- Test images -------------------------------------------------------------------------- */

enum pattern { RANDOM, SMOOTH, CT_LIKE, CONSTANT, TWO_VALUE };

/* Value k of image `which` (0: fixed, 1 + b: moving item b) of a pattern, as a double that every
 * sample type holds exactly (integers in -2000..4095, or floats). */
static double pattern_value(enum pattern p, size_t side, size_t k, uint32_t which,
                            dh_test_rng *rng, const uint16_t *ct)
{
    const double x = (double)(k % side) / (double)side, y = (double)(k / side) / (double)side;
    switch (p) {
    case RANDOM:
        return (double)dh_test_rng_below(rng, 6096) - 2000.0;
    case SMOOTH: { /* a blob and a ramp, shifted per item, plus a little noise */
        const double s = 0.01 * which;
        const double blob = exp(-((x - 0.4 - s) * (x - 0.4 - s) + (y - 0.6) * (y - 0.6)) * 8.0);
        return floor(3000.0 * (0.6 * blob + 0.4 * x * y) + dh_test_rng_below(rng, 40));
    }
    case CT_LIKE:
        return (double)ct[k];
    case CONSTANT:
        return which ? 700.0 : -300.0;
    default:
        return ((k + which) % 3 == 0) ? 40.0 : 1234.0;
    }
}

/* Image `which` as `sample` into dst (count images of n pixels from dst), with masks (every
 * ninth pixel off, at random) and, for float32, NaN and infinities sprinkled when `specials`. */
static void *make_images(enum pattern p, dh_parzen_sample sample, size_t side, uint32_t first,
                         uint32_t count, int specials, uint64_t seed)
{
    const size_t n = side * side;
    const size_t elem = sample == DH_PARZEN_FLOAT32 ? 4 : 2;
    unsigned char *dst = malloc(elem * n * count);
    uint16_t *ct = malloc(n * sizeof *ct);
    dh_test_rng rng;
    for (uint32_t b = 0; b < count; b++) {
        dh_test_rng_seed(&rng, seed + 977u * (first + b));
        dh_test_fill_ct_like(ct, n, seed + first + b);
        for (size_t k = 0; k < n; k++) {
            double v = pattern_value(p, side, k, first + b, &rng, ct);
            size_t at = (size_t)b * n + k;
            if (sample == DH_PARZEN_FLOAT32) {
                float f = (float)(v * 0.25); /* quarters: fractions that are exact */
                if (specials && k % 37 == 5)
                    f = (k % 3 == 0) ? NAN : (k % 3 == 1 ? INFINITY : -INFINITY);
                ((float *)dst)[at] = f;
            } else if (sample == DH_PARZEN_UINT16) {
                ((uint16_t *)dst)[at] = (uint16_t)(v < 0 ? -v : v);
            } else {
                ((int16_t *)dst)[at] = (int16_t)v;
            }
        }
    }
    free(ct);
    return dst;
}

static uint8_t *make_mask(size_t n, uint64_t seed)
{
    uint8_t *m = malloc(n);
    dh_test_rng rng;
    dh_test_rng_seed(&rng, seed);
    for (size_t k = 0; k < n; k++)
        m[k] = dh_test_rng_below(&rng, 9) != 0;
    return m;
}

static void *to_device(const void *host, size_t bytes)
{
    void *d = NULL;
    if (!host)
        return NULL;
    ck_assert_int_eq(cudaMalloc(&d, bytes), cudaSuccess);
    ck_assert_int_eq(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
    /* A pageable copy may return before its DMA lands, and the tests launch on non-blocking
     * streams, which do not wait for it. */
    ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
    return d;
}

/* to_device at `skip` bytes past an aligned allocation (free with cudaFree(d - skip)). */
static void *to_device_at(const void *host, size_t bytes, size_t skip)
{
    if (!host)
        return NULL;
    char *d = NULL;
    ck_assert_int_eq(cudaMalloc((void **)&d, bytes + skip), cudaSuccess);
    ck_assert_int_eq(cudaMemcpy(d + skip, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
    ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess); /* as in to_device */
    return d + skip;
}

/* ---- One comparison ----------------------------------------------------------------------- */

typedef struct pz_case {
    enum pattern pattern;
    dh_parzen_sample fixed_sample, moving_sample;
    size_t side;
    uint32_t bins, count, window, grad_of;
    int log2, masks, specials, ranges, gradient;
    int misalign; /* fixed and moving samples, mask bytes and gradient one element past an
                     aligned start */
} pz_case;

static const char *describe(const pz_case *c)
{
    static char text[256];
    snprintf(text, sizeof text,
             "pattern %d samples %d/%d side %zu bins %u batch %u window %u grad %u log2 %d "
             "masks %d specials %d ranges %d gradient %d misalign %d",
             (int)c->pattern, (int)c->fixed_sample, (int)c->moving_sample, c->side, c->bins,
             c->count, c->window, c->grad_of, c->log2, c->masks, c->specials, c->ranges,
             c->gradient, c->misalign);
    return text;
}

/* Runs the GPU twin on device copies and returns the records and gradient on the host. */
/* gradient 2: the gradient buffer one float past an aligned start (the scalar stores' path). */
static void run_gpu(dh_parzen_cuda_workspace *ws, const dh_parzen_params *p, size_t n,
                    const dh_parzen_image *df, const dh_parzen_image *dm, uint32_t count,
                    int gradient, cudaStream_t stream, dh_mi_values *out, float *grad)
{
    dh_mi_values *d_out = NULL;
    float *d_grad = NULL;
    const size_t skip = gradient == 2 ? 1 : 0;
    char msg[512] = "";
    ck_assert_int_eq(cudaMalloc((void **)&d_out, count * sizeof *d_out), cudaSuccess);
    ck_assert_int_eq(cudaMemset(d_out, 0xA5, count * sizeof *d_out), cudaSuccess);
    if (gradient) {
        ck_assert_int_eq(cudaMalloc((void **)&d_grad, ((size_t)count * n + skip) * 4),
                         cudaSuccess);
        ck_assert_int_eq(cudaMemset(d_grad, 0xA5, ((size_t)count * n + skip) * 4), cudaSuccess);
    }
    int rc = dh_parzen_mi_cuda(ws, p, n, df, dm, count, d_out, d_grad ? d_grad + skip : NULL,
                               stream, msg, sizeof msg);
    ck_assert_msg(rc == DH_PARZEN_OK, "dh_parzen_mi_cuda: %d %s", rc, msg);
    ck_assert_int_eq(cudaStreamSynchronize(stream), cudaSuccess);
    ck_assert_int_eq(cudaMemcpy(out, d_out, count * sizeof *out, cudaMemcpyDeviceToHost),
                     cudaSuccess);
    if (gradient)
        ck_assert_int_eq(
            cudaMemcpy(grad, d_grad + skip, (size_t)count * n * 4, cudaMemcpyDeviceToHost),
            cudaSuccess);
    cudaFree(d_out);
    cudaFree(d_grad);
}

static void assert_same(const pz_case *c, size_t n, const dh_mi_values *want,
                        const float *want_grad, const dh_mi_values *got, const float *got_grad,
                        const char *which)
{
    for (uint32_t b = 0; b < c->count; b++)
        ck_assert_msg(memcmp(&want[b], &got[b], sizeof want[b]) == 0,
                      "%s: record %u differs (%s): mi %.17g vs %.17g, nmi %.17g vs %.17g, n %llu "
                      "vs %llu",
                      which, b, describe(c), want[b].mi, got[b].mi, want[b].nmi, got[b].nmi,
                      (unsigned long long)want[b].n, (unsigned long long)got[b].n);
    if (!c->gradient)
        return;
    for (size_t i = 0; i < (size_t)c->count * n; i++)
        ck_assert_msg(memcmp(&want_grad[i], &got_grad[i], 4) == 0,
                      "%s: gradient of item %zu pixel %zu differs (%s): %.9g vs %.9g", which,
                      i / n, i % n, describe(c), want_grad[i], got_grad[i]);
}

/* CPU against GPU, then the GPU again on another stream with the same workspace. */
static void compare(const pz_case *c, uint64_t seed)
{
    const size_t n = c->side * c->side;
    const size_t fe = c->fixed_sample == DH_PARZEN_FLOAT32 ? 4 : 2;
    const size_t me = c->moving_sample == DH_PARZEN_FLOAT32 ? 4 : 2;
    void *fixed = make_images(c->pattern, c->fixed_sample, c->side, 0, 1, c->specials, seed);
    void *moving =
        make_images(c->pattern, c->moving_sample, c->side, 1, c->count, c->specials, seed);
    uint8_t *fmask = c->masks ? make_mask(n, seed + 5) : NULL;
    uint8_t *mmask = c->masks ? make_mask((size_t)c->count * n, seed + 6) : NULL;
    dh_parzen_params p;
    memset(&p, 0, sizeof p);
    p.bins = c->bins;
    p.fixed_window = c->window;
    p.gradient_of = c->grad_of;
    p.log2 = c->log2;
    if (c->ranges) { /* narrower than the data: pixels sit outside on both sides */
        p.fixed_range_given = p.moving_range_given = 1;
        p.fixed_lo = -100.0, p.fixed_hi = 900.25;
        p.moving_lo = 30.5, p.moving_hi = 1100.0;
    }
    dh_mi_values *want = calloc(c->count, sizeof *want), *got = calloc(c->count, sizeof *got);
    float *want_grad = c->gradient ? malloc((size_t)c->count * n * 4) : NULL;
    float *got_grad = c->gradient ? malloc((size_t)c->count * n * 4) : NULL;
    dh_parzen_image hf = {fixed, c->fixed_sample, fmask}, hm = {moving, c->moving_sample, mmask};
    ck_assert_int_eq(dh_parzen_mi_cpu(&p, n, &hf, &hm, c->count, want, want_grad),
                     DH_PARZEN_OK);

    /* misalign: the fixed image too, so that its scalar pass (pz_fixed_kernel) runs, else the
     * vector one (pz_fixed_vec_kernel) */
    const size_t skip = c->misalign ? 1 : 0;
    dh_parzen_image df = {to_device_at(fixed, fe * n, fe * skip), c->fixed_sample,
                          to_device_at(fmask, n, skip)};
    dh_parzen_image dm = {to_device_at(moving, me * n * c->count, me * skip), c->moving_sample,
                          to_device_at(mmask, n * c->count, skip)};
    const int gradient = c->gradient && c->misalign ? 2 : c->gradient;
    dh_parzen_cuda_workspace *ws = dh_parzen_cuda_workspace_new();
    ck_assert_ptr_nonnull(ws);
    run_gpu(ws, &p, n, &df, &dm, c->count, gradient, 0, got, got_grad);
    assert_same(c, n, want, want_grad, got, got_grad, "GPU vs CPU");
    cudaStream_t stream;
    ck_assert_int_eq(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    run_gpu(ws, &p, n, &df, &dm, c->count, gradient, stream, got, got_grad);
    assert_same(c, n, want, want_grad, got, got_grad, "second GPU run");
    cudaStreamDestroy(stream);
    dh_parzen_cuda_workspace_free(ws);
    cudaFree((void *)((const char *)df.data - fe * skip));
    if (df.mask)
        cudaFree((void *)(df.mask - skip));
    cudaFree((void *)((const char *)dm.data - me * skip));
    if (dm.mask)
        cudaFree((void *)(dm.mask - skip));
    free(fixed);
    free(moving);
    free(fmask);
    free(mmask);
    free(want);
    free(got);
    free(want_grad);
    free(got_grad);
}

static pz_case base_case(enum pattern pattern, uint32_t bins, uint32_t count)
{
    pz_case c;
    memset(&c, 0, sizeof c);
    c.pattern = pattern;
    c.fixed_sample = c.moving_sample = DH_PARZEN_FLOAT32;
    c.side = 41;
    c.bins = bins;
    c.count = count;
    c.gradient = 1;
    return c;
}

/* ---- Tests -------------------------------------------------------------------------------- */

/* Every pattern, bins, batch, window and gradient kind, float32 with masks or specials. */
START_TEST(test_grid)
{
    static const uint32_t bins[] = {5, 32, 64, 256};
    static const uint32_t batches[] = {1, 3, 64};
    const enum pattern pattern = (enum pattern)_i;
    for (size_t bi = 0; bi < sizeof bins / sizeof *bins; bi++)
        for (size_t ki = 0; ki < sizeof batches / sizeof *batches; ki++)
            for (uint32_t w = 0; w < 2; w++)
                for (uint32_t g = 0; g < 2; g++) {
                    if (bins[bi] == 256 && batches[ki] == 64 && (w || g))
                        continue; /* the slowest corner on the CPU once is enough */
                    pz_case c = base_case(pattern, bins[bi], batches[ki]);
                    c.window = w;
                    c.grad_of = g;
                    c.masks = (bi + ki + w) % 2;
                    c.specials = (bi + g) % 2;
                    c.log2 = (ki + g) % 2;
                    compare(&c, 100 + 17 * bi + 5 * ki + 3 * w + g + 1000 * (uint64_t)_i);
                }
}
END_TEST

/* 16-bit samples (signed and unsigned, fixed and moving mixed with float32: a DRR against a CT
 * slice), given ranges, scores without a gradient. */
START_TEST(test_samples_and_ranges)
{
    static const dh_parzen_sample samples[] = {DH_PARZEN_FLOAT32, DH_PARZEN_UINT16,
                                               DH_PARZEN_INT16};
    for (int fs = 0; fs < 3; fs++)
        for (int ms = 0; ms < 3; ms++)
            for (int ranges = 0; ranges < 2; ranges++) {
                pz_case c = base_case(ms == 2 ? RANDOM : CT_LIKE, 32 + 32 * (uint32_t)ranges, 3);
                c.fixed_sample = samples[fs];
                c.moving_sample = samples[ms];
                c.ranges = ranges;
                c.masks = (fs + ms) % 2;
                c.window = (uint32_t)ms % 2;
                c.grad_of = (uint32_t)fs % 2;
                compare(&c, 500 + 7 * fs + ms);
                c.gradient = 0;
                compare(&c, 600 + 7 * fs + ms);
            }
}
END_TEST

/* Larger images: many blocks per item (one item, or three), each histogram path. */
START_TEST(test_large)
{
    static const uint32_t bins[] = {5, 64, 128, 200, 256};
    for (size_t bi = 0; bi < sizeof bins / sizeof *bins; bi++)
        for (uint32_t w = 0; w < 2; w++) {
            pz_case c = base_case(bi % 2 ? SMOOTH : CT_LIKE, bins[bi], 1 + 2 * (uint32_t)(bi % 2));
            c.side = 300;
            c.moving_sample = DH_PARZEN_UINT16;
            c.window = w;
            c.grad_of = (uint32_t)bi % 2;
            c.masks = w;
            compare(&c, 900 + 3 * bi + w);
        }
}
END_TEST

/* The histogram's and the gradient's run paths (PZ_RUN contiguous pixels per thread,
 * mi_parzen_cuda_hist.cuh): 64 x 64 images (a multiple of the run: 16-byte loads and stores) and
 * the same one element past an aligned start (one load per pixel), every sample type, with and
 * without masks, flat images (every lane's run on one cell: the warp's sums), smooth ones (runs
 * that end inside a thread's pixels) and noise (a run per pixel), both windows, MI and NMI. */
START_TEST(test_runs)
{
    static const enum pattern patterns[] = {CONSTANT, SMOOTH, RANDOM};
    static const dh_parzen_sample samples[] = {DH_PARZEN_FLOAT32, DH_PARZEN_UINT16,
                                               DH_PARZEN_INT16};
    for (int pi = 0; pi < 3; pi++)
        for (int si = 0; si < 3; si++)
            for (int misalign = 0; misalign < 2; misalign++) {
                pz_case c = base_case(patterns[pi], 64, 5);
                c.side = 64;
                c.moving_sample = samples[si];
                c.misalign = misalign;
                c.masks = (pi + si + misalign) % 2;
                c.window = (uint32_t)(si + misalign) % 2;
                c.grad_of = (uint32_t)(pi + misalign) % 2;
                compare(&c, 1300 + 11 * pi + 3 * si + misalign);
            }
}
END_TEST

/* One-item calls, whose histogram pass computes the fixed rows and positions itself with the
 * cubic window (pz_hist_kernel's FUSED, where the histogram fits shared memory: 64 and 128 bins;
 * 200 takes the fixed pass, as the box window does): every fixed sample type against every
 * moving one, both windows, masks, specials and given ranges, images of many blocks; then noise
 * on an odd side (a block's last warp partly past the end). */
START_TEST(test_one_item)
{
    static const dh_parzen_sample samples[] = {DH_PARZEN_FLOAT32, DH_PARZEN_UINT16,
                                               DH_PARZEN_INT16};
    static const uint32_t bins[] = {64, 128, 200};
    for (int fs = 0; fs < 3; fs++)
        for (int ms = 0; ms < 3; ms++) {
            pz_case c = base_case(ms == 1 ? SMOOTH : CT_LIKE, bins[(fs + ms) % 3], 1);
            c.side = 300;
            c.fixed_sample = samples[fs];
            c.moving_sample = samples[ms];
            c.window = (uint32_t)(fs + ms) % 2;
            c.grad_of = (uint32_t)fs % 2;
            c.masks = (fs + 2 * ms) % 3 != 0;
            c.specials = fs == 0 && ms == 0;
            c.ranges = ms == 2;
            compare(&c, 1500 + 7 * fs + ms);
        }
    pz_case c = base_case(RANDOM, 64, 1);
    c.side = 97;
    c.masks = 1;
    c.window = 1;
    compare(&c, 1600);
    c.window = 0;
    compare(&c, 1601);
}
END_TEST

/* A single pixel, every pixel masked off, one item of a batch entirely masked. */
START_TEST(test_degenerate)
{
    pz_case c = base_case(RANDOM, 8, 2);
    c.side = 1;
    compare(&c, 41);
    c.window = 1;
    c.grad_of = 1;
    compare(&c, 42);

    /* Nothing valid in the fixed image: every record empty, the gradient 0. */
    const size_t n = 64;
    float fixed[64], moving[128];
    uint8_t fmask[64], mmask[128];
    for (size_t k = 0; k < n; k++) {
        fixed[k] = (float)k;
        fmask[k] = 0;
    }
    for (size_t k = 0; k < 2 * n; k++) {
        moving[k] = (float)(k * 3 % 17);
        mmask[k] = k >= n; /* item 0 all masked, item 1 all valid */
    }
    for (int which = 0; which < 2; which++) {
        dh_parzen_params p;
        memset(&p, 0, sizeof p);
        p.bins = 16;
        p.gradient_of = (uint32_t)which;
        dh_parzen_image hf = {fixed, DH_PARZEN_FLOAT32, which ? NULL : fmask};
        dh_parzen_image hm = {moving, DH_PARZEN_FLOAT32, mmask};
        dh_mi_values want[2], got[2];
        float want_grad[128], got_grad[128];
        ck_assert_int_eq(dh_parzen_mi_cpu(&p, n, &hf, &hm, 2, want, want_grad), DH_PARZEN_OK);
        dh_parzen_image df = {to_device(fixed, sizeof fixed), DH_PARZEN_FLOAT32,
                              which ? NULL : to_device(fmask, sizeof fmask)};
        dh_parzen_image dm = {to_device(moving, sizeof moving), DH_PARZEN_FLOAT32,
                              to_device(mmask, sizeof mmask)};
        dh_parzen_cuda_workspace *ws = dh_parzen_cuda_workspace_new();
        run_gpu(ws, &p, n, &df, &dm, 2, 1, 0, got, got_grad);
        pz_case c = base_case(RANDOM, 16, 2);
        assert_same(&c, n, want, want_grad, got, got_grad, "masked");
        ck_assert_uint_eq(got[0].n, 0);
        ck_assert(got[0].status & DH_MI_FLAG_EMPTY);
        dh_parzen_cuda_workspace_free(ws);
        cudaFree((void *)df.data);
        cudaFree((void *)df.mask);
        cudaFree((void *)dm.data);
        cudaFree((void *)dm.mask);
    }
}
END_TEST

/* The GPU twin divides by the width through its reciprocal with two exact corrections, and turns
 * doubles into integers by adding 2^52 (mi_parzen_cuda_pixels.cuh): the same bits as the CPU
 * twin's IEEE division and conversions, for widths and offsets of every size, including those
 * that take its IEEE division (a width outside [2^-500, 2^500], a quotient below 2^-400). Float
 * images of random values over many magnitudes, zeros and subnormals, against given ranges. */
START_TEST(test_division_paths)
{
    static const double ranges[][2] = {
        {-0x1p-1000, 1.0},     /* 0 - lo = 2^-1000: a quotient below 2^-400 */
        {0.0, 1e-160},         /* width below 2^-500: the IEEE division for every pixel */
        {-1e300, 1e300},       /* width above 2^500: likewise */
        {-0x1p-149, 0x1p-140}, /* subnormal floats inside the range */
        {1.0, 1.0 + 0x1p-40},  /* a narrow range far from 0 */
        {-3.0e7, 7.5e8},       /* wide */
        {0.1, 0.7},            /* ends that are not floats */
    };
    const size_t n = 41 * 41;
    const uint32_t count = 2;
    float *fixed = malloc(n * sizeof *fixed), *moving = malloc(count * n * sizeof *moving);
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 4242);
    for (size_t i = 0; i < (1 + count) * n; i++) {
        /* a random float of a random magnitude in 2^-149 .. 2^30, either sign, 1 in 8 zero */
        const uint32_t kind = dh_test_rng_below(&rng, 8);
        const double mant = (double)dh_test_rng_below(&rng, 1u << 24) / (double)(1u << 24);
        const int e = (int)dh_test_rng_below(&rng, 180) - 149;
        float v = kind == 0 ? 0.0f : (float)ldexp(mant, e);
        if (kind == 1)
            v = (float)(mant * 1.5 - 0.2); /* plenty inside the ordinary ranges */
        if (dh_test_rng_below(&rng, 4) == 0)
            v = -v;
        if (i < n)
            fixed[i] = v;
        else
            moving[i - n] = v;
    }
    dh_parzen_image hf = {fixed, DH_PARZEN_FLOAT32, NULL}, hm = {moving, DH_PARZEN_FLOAT32, NULL};
    dh_parzen_image df = {to_device(fixed, n * 4), DH_PARZEN_FLOAT32, NULL};
    dh_parzen_image dm = {to_device(moving, count * n * 4), DH_PARZEN_FLOAT32, NULL};
    dh_parzen_cuda_workspace *ws = dh_parzen_cuda_workspace_new();
    dh_mi_values want[2], got[2];
    float *want_grad = malloc(count * n * 4), *got_grad = malloc(count * n * 4);
    const size_t nr = sizeof ranges / sizeof *ranges;
    for (size_t fi = 0; fi < nr; fi++)
        for (size_t mi = 0; mi < nr; mi++)
            for (uint32_t w = 0; w < 2; w++) {
                dh_parzen_params p;
                memset(&p, 0, sizeof p);
                p.bins = (fi + mi) % 2 ? 64 : 13;
                p.fixed_window = w;
                p.fixed_range_given = p.moving_range_given = 1;
                p.fixed_lo = ranges[fi][0], p.fixed_hi = ranges[fi][1];
                p.moving_lo = ranges[mi][0], p.moving_hi = ranges[mi][1];
                ck_assert_int_eq(dh_parzen_mi_cpu(&p, n, &hf, &hm, count, want, want_grad),
                                 DH_PARZEN_OK);
                run_gpu(ws, &p, n, &df, &dm, count, 1, 0, got, got_grad);
                pz_case c = base_case(RANDOM, p.bins, count);
                c.window = w;
                c.ranges = 1;
                assert_same(&c, n, want, want_grad, got, got_grad, "division paths");
            }
    dh_parzen_cuda_workspace_free(ws);
    cudaFree((void *)df.data);
    cudaFree((void *)dm.data);
    free(fixed);
    free(moving);
    free(want_grad);
    free(got_grad);
}
END_TEST

/* ---- The box window's fixed rows by thresholds (session 20) -------------------------------
 * The GPU twin finds the box window's fixed rows by comparing each sample with thresholds thr[k],
 * the smallest float whose row is >= k, that it finds with the definition's own arithmetic
 * (mi_parzen_cuda_pixels.cuh, pz_threshold). These cases put fixed samples on and around those
 * thresholds: each threshold as the host's definition gives it (a plain bisection over the
 * ordered floats with dh_parzen_index(dh_parzen_position()), independent of the device's search),
 * its float neighbours up to two ulps on both sides, the nominal edges lo + k width computed in
 * float and their neighbours, -0.0 and +0.0, the range's ends and values beyond them (clamped),
 * the float extremes, NaN and infinities, masked samples; ranges given and found, a degenerate
 * axis, bins 5 (no threshold) to 256, float32 and 16-bit samples, both forms of the fixed pass
 * (aligned, one sample past alignment), pixel counts with a remainder of four. A wrong row moves
 * a pixel's weights to another row of the joint histogram and changes its gradient, so the
 * records and gradients compared bit for bit with the CPU twin catch it. */

static uint32_t host_row(const dh_parzen_axis *ax, float v)
{
    double f;
    return dh_parzen_index(ax->bins, dh_parzen_position(ax, (double)v), &f);
}

static uint32_t float_key(float x) /* the floats' order as unsigned integers (-0 below +0) */
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

static float key_float(uint32_t key)
{
    const uint32_t u = (key & 0x80000000u) ? (key & 0x7FFFFFFFu) : ~key;
    float x;
    memcpy(&x, &u, 4);
    return x;
}

/* The smallest finite float whose row is >= k, or +inf: bisection over every finite float. */
static float host_threshold(const dh_parzen_axis *ax, uint32_t k)
{
    uint64_t lo = float_key(-FLT_MAX), hi = (uint64_t)float_key(FLT_MAX) + 1;
    while (lo < hi) {
        const uint64_t mid = lo + (hi - lo) / 2;
        if (host_row(ax, key_float((uint32_t)mid)) >= k)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo > float_key(FLT_MAX) ? INFINITY : key_float((uint32_t)lo);
}

/* Appends x, or with `clip` (a range to be found from the image) x clamped to [lo, hi]. */
static void edge_push(float *v, size_t *m, size_t cap, float x, int clip, float lo, float hi)
{
    if (*m < cap)
        v[(*m)++] = clip && isfinite(x) ? (x < lo ? lo : (x > hi ? hi : x)) : x;
}

/* Appends x and its float neighbours up to two ulps on each side. */
static void edge_push_around(float *v, size_t *m, size_t cap, float x, int clip, float lo,
                             float hi)
{
    if (!isfinite(x))
        return;
    float down = x, up = x;
    edge_push(v, m, cap, x, clip, lo, hi);
    for (int i = 0; i < 2; i++) {
        down = nextafterf(down, -INFINITY);
        up = nextafterf(up, INFINITY);
        edge_push(v, m, cap, down, clip, lo, hi);
        edge_push(v, m, cap, up, clip, lo, hi);
    }
}

/* n fixed samples (float values) around every threshold of axis `ax`, the rest random over the
 * range and a little beyond; `clip`: kept inside [lo, hi] with both ends present, so that a range
 * found from the image is the axis's. Checks on the way that each threshold is one: its row >= k,
 * its lower neighbour's < k. */
static void edge_values(const dh_parzen_axis *ax, int clip, size_t n, uint64_t seed, float *v)
{
    const float lo = (float)ax->lo, hi = (float)ax->hi;
    size_t m = 0;
    edge_push(v, &m, n, lo, 0, lo, hi);
    edge_push(v, &m, n, hi, 0, lo, hi);
    for (uint32_t k = 3; k + 3 <= ax->bins; k++) {
        const float t = host_threshold(ax, k);
        if (isfinite(t)) {
            ck_assert_uint_ge(host_row(ax, t), k);
            if (t > -FLT_MAX)
                ck_assert_uint_lt(host_row(ax, nextafterf(t, -INFINITY)), k);
        }
        edge_push_around(v, &m, n, t, clip, lo, hi);
        /* the nominal edge, in float arithmetic */
        edge_push_around(v, &m, n, lo + (float)(k - 2) * (float)ax->width, clip, lo, hi);
    }
    const float specials[] = {-0.0f, 0.0f, lo, hi, lo - 1.0f, hi + 1.0f, -1e30f, 1e30f,
                              FLT_MAX, -FLT_MAX, 0x1p-149f, -0x1p-149f};
    for (size_t i = 0; i < sizeof specials / sizeof *specials; i++)
        edge_push_around(v, &m, n, specials[i], clip, lo, hi);
    dh_test_rng rng;
    dh_test_rng_seed(&rng, seed);
    const float span = hi - lo;
    while (m < n) {
        const uint32_t kind = dh_test_rng_below(&rng, 16);
        const float r = (float)dh_test_rng_below(&rng, 1u << 24) / (float)(1u << 24);
        float x = lo + (r * 1.2f - 0.1f) * span;
        if (kind == 0)
            x = (float)dh_test_rng_below(&rng, 3) - 1.0f; /* -1, 0, 1 */
        else if (kind < 6) /* on a nominal edge */
            x = lo + (float)dh_test_rng_below(&rng, ax->bins) * (float)ax->width;
        if (!clip && kind == 15)
            x = dh_test_rng_below(&rng, 2) ? NAN : -INFINITY;
        edge_push(v, &m, n, x, clip, lo, hi);
    }
    for (size_t i = n - 1; i > 0; i--) { /* mix them over warps and groups of four */
        const size_t j = dh_test_rng_below(&rng, (uint32_t)(i + 1));
        const float t = v[i];
        v[i] = v[j], v[j] = t;
    }
}

/* The values as `sample` (16-bit: rounded up, so a threshold's integer and the one below it both
 * appear, and clamped to the type). */
static void *edge_samples(const float *v, size_t n, dh_parzen_sample sample)
{
    if (sample == DH_PARZEN_FLOAT32) {
        float *out = malloc(n * 4);
        memcpy(out, v, n * 4);
        return out;
    }
    const double min = sample == DH_PARZEN_UINT16 ? 0.0 : -32768.0;
    const double max = sample == DH_PARZEN_UINT16 ? 65535.0 : 32767.0;
    uint16_t *out = malloc(n * 2);
    for (size_t i = 0; i < n; i++) {
        double x = isfinite(v[i]) ? ceil((double)v[i]) - (double)(i % 2) : 0.0;
        x = x < min ? min : (x > max ? max : x);
        if (sample == DH_PARZEN_UINT16)
            out[i] = (uint16_t)x;
        else
            ((int16_t *)out)[i] = (int16_t)x;
    }
    return out;
}

/* The GPU twin against the CPU twin on these images: the fixed image aligned (the vector fixed
 * pass) and one sample past alignment (the scalar one). */
static void edge_compare(const dh_parzen_params *p, size_t n, const dh_parzen_image *hf,
                         const dh_parzen_image *hm, uint32_t count, const char *what)
{
    dh_mi_values want[2], got[2];
    float *want_grad = malloc((size_t)count * n * 4), *got_grad = malloc((size_t)count * n * 4);
    ck_assert_int_eq(dh_parzen_mi_cpu(p, n, hf, hm, count, want, want_grad), DH_PARZEN_OK);
    const size_t fe = hf->sample == DH_PARZEN_FLOAT32 ? 4 : 2;
    dh_parzen_image dm = {to_device(hm->data, (size_t)count * n * 4), DH_PARZEN_FLOAT32, NULL};
    dh_parzen_cuda_workspace *ws = dh_parzen_cuda_workspace_new();
    for (size_t skip = 0; skip < 2; skip++) {
        dh_parzen_image df = {to_device_at(hf->data, fe * n, fe * skip), hf->sample,
                              to_device_at(hf->mask, n, skip)};
        run_gpu(ws, p, n, &df, &dm, count, 1, 0, got, got_grad);
        pz_case c = base_case(RANDOM, p->bins, count);
        c.fixed_sample = hf->sample;
        c.ranges = p->fixed_range_given;
        c.masks = hf->mask != NULL;
        c.misalign = (int)skip;
        assert_same(&c, n, want, want_grad, got, got_grad, what);
        cudaFree((void *)((const char *)df.data - fe * skip));
        if (df.mask)
            cudaFree((void *)(df.mask - skip));
    }
    dh_parzen_cuda_workspace_free(ws);
    cudaFree((void *)dm.data);
    free(want_grad);
    free(got_grad);
}

/* One workspace through calls whose parameters change (given ranges, bins, the window, ranges
 * found and given again): a call with both ranges given takes the axes the host computed and its
 * workspace keeps (pz_given_axes_of), which must follow every change. Then a batch of more items
 * than the GPU has SMs at 32 bins: the lane score kernel. The score pass's other two forms up to
 * 64 bins (pz_launch_score) run elsewhere here: a cluster of staged blocks for one item (batch 1
 * in test_grid, test_one_item), one staged block per item up to one item per SM (batches 3 and
 * 64, and the steps below). */
START_TEST(test_workspace_follows_parameters)
{
    static const struct {
        uint32_t bins, window, count;
        int given;
        double flo, fhi, mlo, mhi;
    } steps[] = {
        {64, DH_PARZEN_FIXED_BOX, 3, 1, -100.0, 900.25, 30.5, 1100.0},
        {64, DH_PARZEN_FIXED_BOX, 3, 1, -50.0, 700.0, 30.5, 1100.0},
        {64, DH_PARZEN_FIXED_BOX, 3, 1, -100.0, 900.25, 30.5, 1100.0},
        {64, DH_PARZEN_FIXED_BOX, 3, 1, -100.0, 900.25, 0.0, 500.0},
        {32, DH_PARZEN_FIXED_BOX, 3, 1, -100.0, 900.25, 0.0, 500.0},
        {32, DH_PARZEN_FIXED_CUBIC, 3, 1, -100.0, 900.25, 0.0, 500.0},
        {64, DH_PARZEN_FIXED_BOX, 3, 0, 0.0, 0.0, 0.0, 0.0},
        {64, DH_PARZEN_FIXED_BOX, 3, 1, -100.0, 900.25, 30.5, 1100.0},
        {32, DH_PARZEN_FIXED_BOX, 0, 1, -100.0, 900.25, 30.5, 1100.0}, /* 0: SMs + 1 items */
    };
    int dev = 0, sms = 0;
    ck_assert_int_eq(cudaGetDevice(&dev), cudaSuccess);
    ck_assert_int_eq(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev),
                     cudaSuccess);
    const uint32_t most = (uint32_t)sms + 1;
    pz_case c = base_case(SMOOTH, 64, most);
    c.side = 16;
    const size_t n = c.side * c.side;
    void *fixed = make_images(c.pattern, DH_PARZEN_FLOAT32, c.side, 0, 1, 0, 31);
    void *moving = make_images(c.pattern, DH_PARZEN_FLOAT32, c.side, 1, most, 0, 31);
    dh_parzen_image hf = {fixed, DH_PARZEN_FLOAT32, NULL}, hm = {moving, DH_PARZEN_FLOAT32, NULL};
    dh_parzen_image df = {to_device(fixed, n * 4), DH_PARZEN_FLOAT32, NULL};
    dh_parzen_image dm = {to_device(moving, (size_t)most * n * 4), DH_PARZEN_FLOAT32, NULL};
    dh_mi_values *want = calloc(most, sizeof *want), *got = calloc(most, sizeof *got);
    float *want_grad = malloc((size_t)most * n * 4), *got_grad = malloc((size_t)most * n * 4);
    dh_parzen_cuda_workspace *ws = dh_parzen_cuda_workspace_new();
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
        dh_parzen_params p;
        memset(&p, 0, sizeof p);
        p.bins = steps[i].bins;
        p.fixed_window = steps[i].window;
        p.fixed_range_given = p.moving_range_given = steps[i].given;
        p.fixed_lo = steps[i].flo, p.fixed_hi = steps[i].fhi;
        p.moving_lo = steps[i].mlo, p.moving_hi = steps[i].mhi;
        c.bins = p.bins;
        c.window = p.fixed_window;
        c.ranges = steps[i].given;
        c.count = steps[i].count ? steps[i].count : most;
        ck_assert_int_eq(dh_parzen_mi_cpu(&p, n, &hf, &hm, c.count, want, want_grad),
                         DH_PARZEN_OK);
        run_gpu(ws, &p, n, &df, &dm, c.count, 1, 0, got, got_grad);
        char what[64];
        snprintf(what, sizeof what, "step %zu of one workspace", i);
        assert_same(&c, n, want, want_grad, got, got_grad, what);
    }
    dh_parzen_cuda_workspace_free(ws);
    cudaFree((void *)df.data);
    cudaFree((void *)dm.data);
    free(fixed);
    free(moving);
    free(want);
    free(got);
    free(want_grad);
    free(got_grad);
}
END_TEST

START_TEST(test_fixed_thresholds)
{
    static const uint32_t bins[] = {5, 6, 7, 13, 64, 255, 256};
    /* fixed ranges {lo, hi, given}: given ones that clip the data, one from 0 (-0.0 below it),
     * one of integer edges (16-bit samples land on them), ends that are not floats, tiny and huge
     * widths, a degenerate one; found ones (the image's own min..max) */
    static const struct {
        double lo, hi;
        int given;
    } ranges[] = {
        {-100.0, 900.25, 1}, {0.0, 1.0, 1},      {0.0, 0.0, 1},         {100.0, 100.0, 1},
        {0.1, 0.7, 1},       {-2000.0, 3000.0, 1}, {1.0, 1.0 + 0x1p-20, 1}, {-3.0e7, 7.5e8, 1},
        {-123.375f, 4567.89f, 0}, {-0.0, 250.0, 0}, {7.25, 7.25, 0},
    };
    static const dh_parzen_sample samples[] = {DH_PARZEN_FLOAT32, DH_PARZEN_UINT16,
                                               DH_PARZEN_INT16};
    const size_t n = 3001; /* a remainder of one after groups of four */
    const uint32_t count = 2;
    float *values = malloc(n * sizeof *values);
    float *moving = malloc(count * n * sizeof *moving);
    uint8_t *mask = malloc(n);
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 2020);
    for (size_t i = 0; i < count * n; i++)
        moving[i] = (float)dh_test_rng_below(&rng, 1u << 20) * 0x1p-10f - 100.0f;
    for (size_t i = 0; i < n; i++)
        mask[i] = i % 7 != 3;
    const size_t nr = sizeof ranges / sizeof *ranges;
    for (size_t bi = 0; bi < sizeof bins / sizeof *bins; bi++)
        for (size_t ri = 0; ri < nr; ri++) {
            /* float32 everywhere; 16-bit too where the range is given (a found one would be
             * the rounded samples' own) and its values fit them */
            const size_t kinds =
                ranges[ri].given && ranges[ri].lo >= -30000.0 && ranges[ri].hi <= 30000.0 ? 3 : 1;
            for (size_t si = 0; si < kinds; si++) {
                const dh_parzen_sample sample = samples[(si + bi) % kinds];
                dh_parzen_axis ax;
                ck_assert_int_eq(dh_parzen_axis_init(&ax, bins[bi], ranges[ri].lo, ranges[ri].hi),
                                 0);
                edge_values(&ax, !ranges[ri].given, n, 77 + 13 * bi + ri, values);
                void *fixed = edge_samples(values, n, sample);
                dh_parzen_params p;
                memset(&p, 0, sizeof p);
                p.bins = bins[bi];
                p.fixed_range_given = ranges[ri].given;
                p.fixed_lo = ranges[ri].lo, p.fixed_hi = ranges[ri].hi;
                p.gradient_of = (uint32_t)(ri % 2);
                const int masked = (int)((bi + ri) % 2) && ranges[ri].given;
                dh_parzen_image hf = {fixed, sample, masked ? mask : NULL};
                dh_parzen_image hm = {moving, DH_PARZEN_FLOAT32, NULL};
                /* a given fixed range with the moving range found: the device's thresholds
                 * (pz_axes_kernel); with both given: the host's (pz_given_axes_set) */
                for (int mg = 0; mg <= ranges[ri].given; mg++) {
                    p.moving_range_given = mg;
                    p.moving_lo = -100.0, p.moving_hi = 1000.0;
                    char what[192];
                    snprintf(what, sizeof what,
                             "thresholds: bins %u range %g..%g given %d (moving %d) sample %d",
                             bins[bi], ranges[ri].lo, ranges[ri].hi, ranges[ri].given, mg,
                             (int)sample);
                    edge_compare(&p, n, &hf, &hm, count, what);
                }
                free(fixed);
            }
        }
    free(values);
    free(moving);
    free(mask);
}
END_TEST

/* What the CPU twin refuses, the GPU twin refuses, with a message; count 0 does nothing. */
START_TEST(test_arguments)
{
    dh_parzen_params p;
    memset(&p, 0, sizeof p);
    p.bins = 32;
    float *d = NULL;
    ck_assert_int_eq(cudaMalloc((void **)&d, 64 * sizeof *d), cudaSuccess);
    dh_mi_values *d_out = NULL;
    ck_assert_int_eq(cudaMalloc((void **)&d_out, sizeof *d_out), cudaSuccess);
    dh_parzen_image img = {d, DH_PARZEN_FLOAT32, NULL}, none = {NULL, DH_PARZEN_FLOAT32, NULL};
    dh_parzen_cuda_workspace *ws = dh_parzen_cuda_workspace_new();
    char msg[256];
    ck_assert_int_eq(dh_parzen_mi_cuda(ws, &p, 64, &img, &img, 1, d_out, NULL, 0, msg, sizeof msg),
                     DH_PARZEN_OK);
    ck_assert_int_eq(dh_parzen_mi_cuda(ws, &p, 64, &img, &img, 0, NULL, NULL, 0, msg, sizeof msg),
                     DH_PARZEN_OK);
    const dh_parzen_params good = p;
    struct {
        uint32_t bins, window, grad;
        int given;
        double lo, hi;
    } bad[] = {{4, 0, 0, 0, 0, 0},       {257, 0, 0, 0, 0, 0}, {32, 2, 0, 0, 0, 0},
               {32, 0, 2, 0, 0, 0},      {32, 0, 0, 1, 5, 1},  {32, 0, 0, 1, 0, INFINITY},
               {32, 0, 0, 1, NAN, 1.0}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        p = good;
        p.bins = bad[i].bins;
        p.fixed_window = bad[i].window;
        p.gradient_of = bad[i].grad;
        p.moving_range_given = bad[i].given;
        p.moving_lo = bad[i].lo;
        p.moving_hi = bad[i].hi;
        dh_mi_values host_out;
        msg[0] = 0;
        ck_assert_int_eq(dh_parzen_mi_cpu(&p, 64, &img, &img, 1, &host_out, NULL),
                         DH_PARZEN_ERR_ARGUMENT);
        ck_assert_int_eq(
            dh_parzen_mi_cuda(ws, &p, 64, &img, &img, 1, d_out, NULL, 0, msg, sizeof msg),
            DH_PARZEN_ERR_ARGUMENT);
        ck_assert_msg(strstr(msg, "dh_parzen_mi_cuda") != NULL, "no message: %s", msg);
    }
    /* no pixels, no fixed data, no records, no workspace */
    const size_t pixels[] = {0, 64, 64, 64};
    const dh_parzen_image *fixed[] = {&img, &none, &img, &img};
    dh_mi_values *outs[] = {d_out, d_out, NULL, d_out};
    dh_parzen_cuda_workspace *spaces[] = {ws, ws, ws, NULL};
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(dh_parzen_mi_cuda(spaces[i], &good, pixels[i], fixed[i], &img, 1,
                                           outs[i], NULL, 0, msg, sizeof msg),
                         DH_PARZEN_ERR_ARGUMENT);
    dh_parzen_cuda_workspace_free(ws);
    cudaFree(d);
    cudaFree(d_out);
}
END_TEST

int main(void)
{
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
        return DH_TEST_SKIP;
    const dh_test tests[] = {DH_TEST_LOOP(test_grid, TWO_VALUE + 1),
                             DH_TEST(test_samples_and_ranges), DH_TEST(test_large),
                             DH_TEST(test_runs), DH_TEST(test_one_item),
                             DH_TEST(test_division_paths), DH_TEST(test_fixed_thresholds),
                             DH_TEST(test_workspace_follows_parameters),
                             DH_TEST(test_degenerate), DH_TEST(test_arguments)};
    dh_test_in_one_process();
    return dh_test_run(dh_test_suite("mi_parzen_cuda", 600, DH_TESTS(tests)));
}
