// SPDX-License-Identifier: MIT
/*
 * test_mi_parzen_cpu.c: the Parzen-window (Mattes) MI CPU twin (kernels/mi_parzen.h) against a
 * float64 reference written here from the definition (real-valued B-spline weights, libm's log,
 * no quantization, none of the kernel's helpers), its gradient against central finite
 * differences of that reference, repeated and batched runs bit for bit, the three sample types,
 * constant and two-value images, masks and bad arguments.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mi_parzen.h"
#include "test_support.h"

/* ---- The float64 reference ---------------------------------------------------------------- */

/* The cubic B-spline at x, from its textbook pieces. */
static double ref_bspline(double x)
{
    double a = fabs(x);
    if (a < 1.0)
        return (4.0 - 6.0 * a * a + 3.0 * a * a * a) / 6.0;
    if (a < 2.0)
        return (2.0 - a) * (2.0 - a) * (2.0 - a) / 6.0;
    return 0.0;
}

typedef struct ref_axis {
    double lo, width;
} ref_axis;

/* The bins of one pixel's window: weight[b] for every bin b (zero outside its support). */
static void ref_window(int cubic, uint32_t bins, ref_axis ax, double v, double *weight)
{
    double t = (v - ax.lo) / ax.width + 2.0;
    long i = (long)floor(t);
    i = i < 2 ? 2 : (i > (long)bins - 3 ? (long)bins - 3 : i);
    for (uint32_t b = 0; b < bins; b++)
        weight[b] = cubic ? ref_bspline((double)b - t) : (b == (uint32_t)i ? 1.0 : 0.0);
}

/* MI and NMI (nats) of fixed f[] and moving m[] over the pixels with valid[k], each axis given
 * as lo and width. */
static void ref_scores(int cubic_fixed, uint32_t bins, size_t n, const double *f, const double *m,
                       const uint8_t *valid, ref_axis fa, ref_axis ma, double *mi, double *nmi)
{
    double *joint = calloc((size_t)bins * bins, sizeof *joint);
    double wf[256], wm[256];
    double count = 0.0;
    for (size_t k = 0; k < n; k++) {
        if (valid && !valid[k])
            continue;
        ref_window(cubic_fixed, bins, fa, f[k], wf);
        ref_window(1, bins, ma, m[k], wm);
        for (uint32_t i = 0; i < bins; i++)
            for (uint32_t j = 0; j < bins; j++)
                joint[i * bins + j] += wf[i] * wm[j];
        count += 1.0;
    }
    double hf = 0.0, hm = 0.0, hj = 0.0;
    for (uint32_t i = 0; i < bins; i++) {
        double row = 0.0, col = 0.0;
        for (uint32_t j = 0; j < bins; j++) {
            row += joint[i * bins + j];
            col += joint[j * bins + i];
            double p = joint[i * bins + j] / count;
            hj -= p > 0.0 ? p * log(p) : 0.0;
        }
        hf -= row > 0.0 ? row / count * log(row / count) : 0.0;
        hm -= col > 0.0 ? col / count * log(col / count) : 0.0;
    }
    *mi = hf + hm - hj;
    *nmi = (hf + hm) / hj;
    free(joint);
}

static ref_axis ref_axis_of(uint32_t bins, double lo, double hi)
{
    ref_axis a = {lo, hi > lo ? (hi - lo) / (bins - 4) : 1.0};
    return a;
}

/* ---- Test images -------------------------------------------------------------------------- */

/* A smooth float image in [0, 1] (a blob and a ramp) and a moving one related to it by a
 * non-linear map plus noise, so MI is well away from 0 and every bin range is used. */
static void make_pair(size_t side, uint64_t seed, float *fixed, float *moving)
{
    dh_test_rng rng;
    dh_test_rng_seed(&rng, seed);
    for (size_t y = 0; y < side; y++)
        for (size_t x = 0; x < side; x++) {
            double u = (double)x / (side - 1), v = (double)y / (side - 1);
            double blob = exp(-((u - 0.4) * (u - 0.4) + (v - 0.6) * (v - 0.6)) * 8.0);
            double f = 0.6 * blob + 0.4 * u * v;
            double noise = (dh_test_rng_below(&rng, 1u << 16) / 65536.0 - 0.5) * 0.1;
            fixed[y * side + x] = (float)f;
            moving[y * side + x] = (float)(0.05 + 0.9 * f * f + noise);
        }
}

static dh_parzen_params params_of(uint32_t bins, uint32_t window, uint32_t grad_of)
{
    dh_parzen_params p;
    memset(&p, 0, sizeof p);
    p.bins = bins;
    p.fixed_window = window;
    p.gradient_of = grad_of;
    return p;
}

static void run_ok(const dh_parzen_params *p, size_t n, const void *fixed, dh_parzen_sample fs,
                   const uint8_t *fmask, const void *moving, dh_parzen_sample ms,
                   const uint8_t *mmask, uint32_t count, dh_mi_values *out, float *grad)
{
    dh_parzen_image fi = {fixed, fs, fmask}, mi = {moving, ms, mmask};
    ck_assert_int_eq(dh_parzen_mi_cpu(p, n, &fi, &mi, count, out, grad), DH_PARZEN_OK);
}

static void min_max(const float *v, size_t n, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (size_t k = 0; k < n; k++) {
        *lo = v[k] < *lo ? v[k] : *lo;
        *hi = v[k] > *hi ? v[k] : *hi;
    }
}

/* ---- Tests -------------------------------------------------------------------------------- */

/* Values against the float64 reference, ranges from the data, both fixed windows, several B.
 * Prints the largest error: docs/registration.md quotes it. */
START_TEST(test_value_matches_reference)
{
    enum { SIDE = 48, N = SIDE * SIDE };
    static const uint32_t bins[] = {5, 8, 32, 64, 256};
    float *f = malloc(N * sizeof *f), *m = malloc(N * sizeof *m);
    double *fd = malloc(N * sizeof *fd), *md = malloc(N * sizeof *md);
    make_pair(SIDE, 7, f, m);
    for (size_t k = 0; k < N; k++) {
        fd[k] = f[k];
        md[k] = m[k];
    }
    double flo, fhi, mlo, mhi;
    min_max(f, N, &flo, &fhi);
    min_max(m, N, &mlo, &mhi);
    for (int cubic = 0; cubic <= 1; cubic++) {
        double worst_mi = 0.0, worst_nmi = 0.0;
        for (size_t b = 0; b < sizeof bins / sizeof bins[0]; b++) {
            dh_parzen_params p = params_of(bins[b], (uint32_t)cubic, DH_PARZEN_GRAD_MI);
            dh_mi_values out;
            run_ok(&p, N, f, DH_PARZEN_FLOAT32, NULL, m, DH_PARZEN_FLOAT32, NULL, 1, &out, NULL);
            double mi, nmi;
            ref_scores(cubic, bins[b], N, fd, md, NULL, ref_axis_of(bins[b], flo, fhi),
                       ref_axis_of(bins[b], mlo, mhi), &mi, &nmi);
            ck_assert_uint_eq(out.n, N);
            ck_assert_uint_eq(out.status, 0);
            if (bins[b] == 5) { /* one middle bin: a box fixed window has H(f) = 0 */
                ck_assert(fabs(out.mi - mi) < (cubic ? 2e-6 : 1e-12));
                continue;
            }
            ck_assert(mi > 0.1);
            worst_mi = fmax(worst_mi, fabs(out.mi - mi) / mi);
            worst_nmi = fmax(worst_nmi, fabs(out.nmi - nmi) / nmi);
            dh_mi_values bits;
            p.log2 = 1; /* bits: the same numbers divided by ln 2 */
            run_ok(&p, N, f, DH_PARZEN_FLOAT32, NULL, m, DH_PARZEN_FLOAT32, NULL, 1, &bits, NULL);
            dh_test_assert_close(bits.mi, out.mi / log(2.0), 1e-14, "MI in bits");
        }
        printf("parzen %s fixed window: largest relative error MI %.3g, NMI %.3g\n",
               cubic ? "cubic" : "box", worst_mi, worst_nmi);
        /* 2^-32 weights (box) and 2^-16 weights (cubic): measured 1.0e-11 and 4.4e-7 for MI,
         * 2.0e-12 and 9.3e-8 for NMI (docs/registration.md). */
        ck_assert(worst_mi < (cubic ? 2e-6 : 1e-10));
        ck_assert(worst_nmi < (cubic ? 5e-7 : 1e-11));
    }
    free(f);
    free(m);
    free(fd);
    free(md);
}
END_TEST

/* The gradient against central differences of the reference (given ranges, so the bins do not
 * move with the pixel), MI and NMI, both windows. */
START_TEST(test_gradient_matches_finite_differences)
{
    enum { SIDE = 20, N = SIDE * SIDE };
    const int cubic = _i / 2, nmi_of = _i % 2;
    const uint32_t bins = 16;
    float f[N], m[N], grad[N];
    double fd[N], md[N];
    make_pair(SIDE, 11 + (uint64_t)_i, f, m);
    for (size_t k = 0; k < N; k++) {
        fd[k] = f[k];
        md[k] = m[k];
    }
    dh_parzen_params p = params_of(bins, (uint32_t)cubic, nmi_of ? DH_PARZEN_GRAD_NMI
                                                                   : DH_PARZEN_GRAD_MI);
    p.fixed_range_given = p.moving_range_given = 1;
    p.fixed_lo = p.moving_lo = -0.1;
    p.fixed_hi = p.moving_hi = 1.1;
    dh_mi_values out;
    run_ok(&p, N, f, DH_PARZEN_FLOAT32, NULL, m, DH_PARZEN_FLOAT32, NULL, 1, &out, grad);
    const ref_axis ax = ref_axis_of(bins, -0.1, 1.1);
    const double h = 1e-5;
    double worst = 0.0, largest = 0.0;
    for (size_t k = 0; k < N; k++) {
        double up[2], down[2];
        const double keep = md[k];
        md[k] = keep + h;
        ref_scores(cubic, bins, N, fd, md, NULL, ax, ax, &up[0], &up[1]);
        md[k] = keep - h;
        ref_scores(cubic, bins, N, fd, md, NULL, ax, ax, &down[0], &down[1]);
        md[k] = keep;
        double want = (up[nmi_of] - down[nmi_of]) / (2.0 * h);
        worst = fmax(worst, fabs(grad[k] - want));
        largest = fmax(largest, fabs(want));
    }
    printf("parzen gradient (%s, %s): largest |error| %.3g of largest |gradient| %.3g\n",
           cubic ? "cubic" : "box", nmi_of ? "NMI" : "MI", worst, largest);
    ck_assert(largest > 1e-4);
    /* Measured: 4e-8 (box) and 1e-5 (cubic) of the largest, finite-difference error included. */
    ck_assert(worst <= (cubic ? 1e-4 : 1e-6) * largest);
}
END_TEST

/* Every run, and every batch position, gives the same bits; so do the three sample types for
 * the same integer values. */
START_TEST(test_bits_repeat_batch_and_types)
{
    enum { SIDE = 32, N = SIDE * SIDE, K = 3 };
    float f[N], m[K * N];
    uint16_t fu[N], mu[K * N];
    int16_t mi16[K * N];
    for (int b = 0; b < K; b++)
        make_pair(SIDE, 100 + (uint64_t)b, f, m + b * N);
    for (size_t k = 0; k < K * N; k++) {
        mu[k] = (uint16_t)lrintf(m[k] * 4000.0f);
        mi16[k] = (int16_t)(mu[k] - 2000);
        m[k] = (float)mu[k];
        if (k < N) {
            fu[k] = (uint16_t)lrintf(f[k] * 4000.0f);
            f[k] = (float)fu[k];
        }
    }
    for (int cubic = 0; cubic <= 1; cubic++) {
        dh_parzen_params p = params_of(64, (uint32_t)cubic, DH_PARZEN_GRAD_MI);
        dh_mi_values a[K], b[K], c[K], one;
        static float ga[K * N], gb[K * N], gc[K * N], g1[N];
        run_ok(&p, N, f, DH_PARZEN_FLOAT32, NULL, m, DH_PARZEN_FLOAT32, NULL, K, a, ga);
        run_ok(&p, N, f, DH_PARZEN_FLOAT32, NULL, m, DH_PARZEN_FLOAT32, NULL, K, b, gb);
        run_ok(&p, N, fu, DH_PARZEN_UINT16, NULL, mu, DH_PARZEN_UINT16, NULL, K, c, gc);
        ck_assert_mem_eq(a, b, sizeof a);
        ck_assert_mem_eq(ga, gb, sizeof ga);
        ck_assert_mem_eq(a, c, sizeof a);
        ck_assert_mem_eq(ga, gc, sizeof ga);
        run_ok(&p, N, fu, DH_PARZEN_UINT16, NULL, mi16, DH_PARZEN_INT16, NULL, K, c, gc);
        for (int k = 0; k < K; k++) { /* a shift of the moving values shifts its range alike */
            dh_test_assert_close(c[k].mi, a[k].mi, 1e-12, "int16 MI");
            ck_assert_uint_eq(c[k].n, a[k].n);
        }
        run_ok(&p, N, f, DH_PARZEN_FLOAT32, NULL, m + 2 * N, DH_PARZEN_FLOAT32, NULL, 1, &one,
               g1);
        ck_assert_mem_eq(&one, &a[2], sizeof one);
        ck_assert_mem_eq(g1, ga + 2 * N, sizeof g1);
    }
}
END_TEST

static int all_finite(const dh_mi_values *v, const float *g, size_t n)
{
    if (!isfinite(v->mi) || !isfinite(v->nmi) || !isfinite(v->h_joint))
        return 0;
    for (size_t k = 0; k < n; k++)
        if (!isfinite(g[k]))
            return 0;
    return 1;
}

/* Constant and two-value images give defined numbers: no NaN anywhere. */
START_TEST(test_constant_and_two_value_images)
{
    enum { N = 256 };
    float cf[N], cm[N], tf[N], tm[N], g[N];
    for (size_t k = 0; k < N; k++) {
        cf[k] = 5.0f;
        cm[k] = -3.0f;
        tf[k] = (k % 3) ? 10.0f : 20.0f;
        tm[k] = (k % 3) ? 1.0f : 2.0f;
    }
    for (int cubic = 0; cubic <= 1; cubic++)
        for (uint32_t gof = 0; gof <= 1; gof++) {
            dh_parzen_params p = params_of(32, (uint32_t)cubic, gof);
            dh_mi_values v;
            /* Constant moving: MI 0, NMI 1, gradient 0 (no range, no scale). */
            run_ok(&p, N, tf, DH_PARZEN_FLOAT32, NULL, cm, DH_PARZEN_FLOAT32, NULL, 1, &v, g);
            ck_assert(all_finite(&v, g, N));
            ck_assert(fabs(v.mi) < 1e-12);
            for (size_t k = 0; k < N; k++)
                ck_assert(g[k] == 0.0f);
            /* Constant fixed: MI 0 with a box window (one row), finite everything. */
            run_ok(&p, N, cf, DH_PARZEN_FLOAT32, NULL, tm, DH_PARZEN_FLOAT32, NULL, 1, &v, g);
            ck_assert(all_finite(&v, g, N));
            ck_assert(fabs(v.mi) < 1e-12);
            /* Both constant. */
            run_ok(&p, N, cf, DH_PARZEN_FLOAT32, NULL, cm, DH_PARZEN_FLOAT32, NULL, 1, &v, g);
            ck_assert(all_finite(&v, g, N));
            /* Two values each, perfectly related: MI > 0, gradient finite. */
            run_ok(&p, N, tf, DH_PARZEN_FLOAT32, NULL, tm, DH_PARZEN_FLOAT32, NULL, 1, &v, g);
            ck_assert(all_finite(&v, g, N));
            ck_assert(v.mi > 0.3);
            double mi, nmi;
            double fd[N], md[N];
            for (size_t k = 0; k < N; k++) {
                fd[k] = tf[k];
                md[k] = tm[k];
            }
            ref_scores(cubic, 32, N, fd, md, NULL, ref_axis_of(32, 10, 20), ref_axis_of(32, 1, 2),
                       &mi, &nmi);
            dh_test_assert_close(v.mi, mi, 1e-5, "two-value MI");
        }
}
END_TEST

/* Masks (and NaN moving values) leave pixels out: the result equals that of the images with those
 * pixels removed, bit for bit, and their gradient is 0. */
START_TEST(test_masks)
{
    enum { SIDE = 32, N = SIDE * SIDE };
    float f[N], m[N], fc[N], mc[N], g[N], gc[N];
    uint8_t fmask[N], mmask[N];
    make_pair(SIDE, 5, f, m);
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 9);
    size_t kept = 0;
    for (size_t k = 0; k < N; k++) {
        fmask[k] = dh_test_rng_below(&rng, 4) != 0;
        mmask[k] = fmask[k] || dh_test_rng_below(&rng, 2); /* moving keeps some more */
        if (k % 17 == 0)
            m[k] = NAN; /* a moving NaN is not valid either */
        if (fmask[k] && mmask[k] && !isnan(m[k])) {
            fc[kept] = f[k];
            mc[kept++] = m[k];
        }
    }
    /* Data ranges are over each image's own valid pixels, which the compacted images do not
     * have: give both ranges. */
    for (int cubic = 0; cubic <= 1; cubic++) {
        dh_parzen_params p = params_of(24, (uint32_t)cubic, DH_PARZEN_GRAD_MI);
        p.moving_range_given = p.fixed_range_given = 1;
        p.moving_lo = p.fixed_lo = -0.2;
        p.moving_hi = p.fixed_hi = 1.2;
        dh_mi_values v, vc;
        run_ok(&p, N, f, DH_PARZEN_FLOAT32, fmask, m, DH_PARZEN_FLOAT32, mmask, 1, &v, g);
        run_ok(&p, kept, fc, DH_PARZEN_FLOAT32, NULL, mc, DH_PARZEN_FLOAT32, NULL, 1, &vc, gc);
        ck_assert_uint_eq(v.n, kept);
        ck_assert_mem_eq(&v, &vc, sizeof v);
        size_t j = 0;
        for (size_t k = 0; k < N; k++) {
            if (fmask[k] && mmask[k] && !isnan(m[k]))
                ck_assert(g[k] == gc[j++]);
            else
                ck_assert(g[k] == 0.0f);
        }
        /* Nothing valid: NaN scores flagged empty (mi_scores.h), gradient 0. */
        uint8_t none[N];
        memset(none, 0, sizeof none);
        run_ok(&p, N, f, DH_PARZEN_FLOAT32, none, m, DH_PARZEN_FLOAT32, mmask, 1, &v, g);
        ck_assert_uint_eq(v.n, 0);
        ck_assert_uint_eq(v.status, DH_MI_FLAG_EMPTY);
        for (size_t k = 0; k < N; k++)
            ck_assert(g[k] == 0.0f);
    }
}
END_TEST

START_TEST(test_bad_arguments)
{
    float img[16] = {0};
    dh_parzen_image im = {img, DH_PARZEN_FLOAT32, NULL};
    dh_mi_values out;
    dh_parzen_params p = params_of(16, DH_PARZEN_FIXED_BOX, DH_PARZEN_GRAD_MI);
    ck_assert_int_eq(dh_parzen_mi_cpu(&p, 16, &im, &im, 1, &out, NULL), DH_PARZEN_OK);
    ck_assert_int_eq(dh_parzen_mi_cpu(NULL, 16, &im, &im, 1, &out, NULL), DH_PARZEN_ERR_ARGUMENT);
    ck_assert_int_eq(dh_parzen_mi_cpu(&p, 0, &im, &im, 1, &out, NULL), DH_PARZEN_ERR_ARGUMENT);
    ck_assert_int_eq(dh_parzen_mi_cpu(&p, 16, &im, &im, 1, NULL, NULL), DH_PARZEN_ERR_ARGUMENT);
    p.bins = 4;
    ck_assert_int_eq(dh_parzen_mi_cpu(&p, 16, &im, &im, 1, &out, NULL), DH_PARZEN_ERR_ARGUMENT);
    p.bins = 257;
    ck_assert_int_eq(dh_parzen_mi_cpu(&p, 16, &im, &im, 1, &out, NULL), DH_PARZEN_ERR_ARGUMENT);
    p.bins = 16;
    p.fixed_window = 2;
    ck_assert_int_eq(dh_parzen_mi_cpu(&p, 16, &im, &im, 1, &out, NULL), DH_PARZEN_ERR_ARGUMENT);
    p.fixed_window = 0;
    p.moving_range_given = 1;
    p.moving_lo = 1.0;
    p.moving_hi = 0.0;
    ck_assert_int_eq(dh_parzen_mi_cpu(&p, 16, &im, &im, 1, &out, NULL), DH_PARZEN_ERR_ARGUMENT);
    p.moving_hi = NAN;
    ck_assert_int_eq(dh_parzen_mi_cpu(&p, 16, &im, &im, 1, &out, NULL), DH_PARZEN_ERR_ARGUMENT);
    p.moving_range_given = 0;
    dh_parzen_image bad = {img, (dh_parzen_sample)3, NULL};
    ck_assert_int_eq(dh_parzen_mi_cpu(&p, 16, &im, &bad, 1, &out, NULL), DH_PARZEN_ERR_ARGUMENT);
}
END_TEST

/* dh_parzen_mi_cpu_threads: 1, 2, 3, 7 threads and one per processor give dh_parzen_mi_cpu's
 * bits (records and gradients), masks and both windows, batches smaller and larger than the
 * thread count. */
START_TEST(test_threads_same_bits)
{
    enum { SIDE = 40, N = SIDE * SIDE, COUNT = 5 };
    float *f = malloc(N * sizeof *f), *m = malloc(COUNT * N * sizeof *m);
    float *want_grad = malloc(COUNT * N * sizeof *want_grad);
    float *got_grad = malloc(COUNT * N * sizeof *got_grad);
    uint8_t *mask = malloc(COUNT * N);
    for (int b = 0; b < COUNT; b++)
        make_pair(SIDE, 70 + b, f, m + b * N);
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 71);
    for (int k = 0; k < COUNT * N; k++)
        mask[k] = dh_test_rng_below(&rng, 7) != 0;
    static const int threads[] = {1, 2, 3, 7, 0};
    for (uint32_t window = 0; window < 2; window++)
        for (uint32_t count = 1; count <= COUNT; count += 4) {
            dh_parzen_params p = params_of(32, window, window);
            dh_parzen_image fi = {f, DH_PARZEN_FLOAT32, NULL};
            dh_parzen_image mi = {m, DH_PARZEN_FLOAT32, mask};
            dh_mi_values want[COUNT], got[COUNT];
            ck_assert_int_eq(dh_parzen_mi_cpu(&p, N, &fi, &mi, count, want, want_grad),
                             DH_PARZEN_OK);
            for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
                memset(got, 0xA5, sizeof got);
                ck_assert_int_eq(dh_parzen_mi_cpu_threads(&p, N, &fi, &mi, count, got, got_grad,
                                                          threads[t]),
                                 DH_PARZEN_OK);
                ck_assert_msg(memcmp(want, got, count * sizeof *got) == 0 &&
                                  memcmp(want_grad, got_grad, count * N * sizeof *got_grad) == 0,
                              "threads %d, window %u, batch %u: bits differ", threads[t], window,
                              count);
            }
        }
    free(f);
    free(m);
    free(want_grad);
    free(got_grad);
    free(mask);
}
END_TEST

int main(void)
{
    const dh_test tests[] = {
        DH_TEST(test_value_matches_reference),
        DH_TEST_LOOP(test_gradient_matches_finite_differences, 4),
        DH_TEST(test_bits_repeat_batch_and_types),
        DH_TEST(test_constant_and_two_value_images),
        DH_TEST(test_masks),
        DH_TEST(test_bad_arguments),
        DH_TEST(test_threads_same_bits),
    };
    return dh_test_run(dh_test_suite("mi_parzen_cpu", 300, DH_TESTS(tests)));
}
