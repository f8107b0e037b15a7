// SPDX-License-Identifier: MIT
/*
 * test_histogram.c: the public histogram API (dh_hist_compute) over volumes built from caller
 * samples, against naive loops written here from the header's definition: defaults, explicit
 * ranges, modality units with a non-integer and a negative slope, per-slice results, parameter
 * checks, and the device choice.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dicomhist.h"
#include "test_support.h"
#include "volume.h" /* to give a test volume a rescale, as a file would */

/* The definition in 113-bit floating point where the compiler has it: every product and sum of
 * these doubles and 16-bit values is exact there, so only the division rounds, and no test value
 * is within 2^-100 of a bin edge without being on it. (long double is not enough: with slope 2.5
 * and range [250.3, 1900.7) it puts stored 637 into bin 208 where the exact value is below.) */
#ifdef __SIZEOF_FLOAT128__
typedef __float128 ref_real;
#else
typedef long double ref_real;
#endif

static void naive_hist(const dh_volume *v, double slope, double intercept, uint32_t bins,
                       double lo, double hi, uint64_t *counts, uint64_t *under, uint64_t *over)
{
    memset(counts, 0, bins * sizeof *counts);
    *under = *over = 0;
    size_t n = dh_volume_sample_count(v);
    for (size_t i = 0; i < n; i++) {
        int32_t s = dh_volume_is_signed(v) ? ((const int16_t *)dh_volume_data(v))[i]
                                           : ((const uint16_t *)dh_volume_data(v))[i];
        ref_real x = (ref_real)slope * s + intercept;
        if (x < lo) {
            (*under)++;
        } else if (x >= hi) {
            (*over)++;
        } else {
            ref_real num = (x - lo) * bins, den = (ref_real)hi - lo;
            uint64_t k = (uint64_t)(num / den);
            /* Truncation of a rounded quotient: settle it with exact products. */
            while (k > 0 && (ref_real)k * den > num)
                k--;
            while ((ref_real)(k + 1) * den <= num)
                k++;
            counts[k]++;
        }
    }
}

static dh_volume *random_volume(dh_ctx *ctx, uint32_t rows, uint32_t cols, uint32_t slices,
                                uint32_t bits, int is_signed, uint64_t seed)
{
    size_t n = (size_t)rows * cols * slices;
    uint16_t *d = malloc(n * sizeof *d);
    dh_test_rng rng;
    dh_test_rng_seed(&rng, seed);
    for (size_t i = 0; i < n; i++) {
        uint32_t u = dh_test_rng_below(&rng, 1u << bits);
        d[i] = is_signed ? (uint16_t)(int16_t)((int32_t)u - (1 << (bits - 1))) : (uint16_t)u;
    }
    dh_volume *v = NULL;
    ck_assert_int_eq(dh_volume_from_samples(ctx, rows, cols, slices, bits, is_signed, d, &v),
                     DH_OK);
    free(d);
    return v;
}

static void assert_matches(const dh_histogram *h, const uint64_t *counts, uint64_t under,
                           uint64_t over, uint64_t total)
{
    for (uint32_t b = 0; b < h->bins; b++)
        ck_assert_msg(h->counts[b] == counts[b], "bin %u: %llu, expected %llu", b,
                      (unsigned long long)h->counts[b], (unsigned long long)counts[b]);
    ck_assert_uint_eq(h->underflow, under);
    ck_assert_uint_eq(h->overflow, over);
    ck_assert_uint_eq(h->total, total);
}

START_TEST(test_defaults_stored)
{
    dh_ctx *ctx = dh_ctx_create();
    static const uint32_t bits[] = {1, 8, 12, 16};
    for (int signed_ = 0; signed_ < 2; signed_++) {
        for (int k = 0; k < 4; k++) {
            dh_volume *v = random_volume(ctx, 33, 17, 5, bits[k], signed_, 100 + k);
            dh_histogram *h = NULL;
            ck_assert_int_eq(dh_hist_compute(ctx, v, NULL, &h), DH_OK);
            ck_assert_uint_eq(h->bins, 1u << bits[k]);
            double lo = signed_ ? -ldexp(1, bits[k] - 1) : 0, hi = lo + ldexp(1, bits[k]);
            ck_assert(h->lo == lo && h->hi == hi && h->units == DH_UNITS_STORED);
            /* auto: the GPU where one is usable (this suite also runs on GPU hosts) */
            ck_assert_int_eq(h->device_used,
                             dh_cuda_available() ? DH_DEVICE_CUDA : DH_DEVICE_CPU);
            ck_assert_uint_eq(h->slices, 0);
            uint64_t *c = malloc(h->bins * sizeof *c), u, o;
            naive_hist(v, 1, 0, h->bins, lo, hi, c, &u, &o);
            assert_matches(h, c, u, o, 33 * 17 * 5);
            ck_assert_uint_eq(u + o, 0);
            ck_assert(dh_histogram_edge(h, 0) == lo && dh_histogram_edge(h, h->bins) == hi);
            free(c);
            dh_histogram_free(h);
            dh_volume_free(v);
        }
    }
    dh_ctx_free(ctx);
}
END_TEST

/* Every bin class with ranges that cut the data, fractional ends included, per slice too. */
START_TEST(test_ranges_and_per_slice)
{
    static const uint32_t bins[] = {1, 7, 255, 256, 4096, 4097, 65535, 65536};
    static const double ranges[][2] = {{-1000, 1000}, {0.5, 3000.25}, {-2048, 2048}, {-3, 1}};
    dh_ctx *ctx = dh_ctx_create();
    dh_volume *v = random_volume(ctx, 64, 63, 6, 12, 1, 7);
    for (int k = 0; k < 8; k++) {
        for (int r = 0; r < 4; r++) {
            dh_hist_params p;
            dh_hist_params_init(&p);
            p.bins = bins[k];
            p.has_range = 1;
            p.lo = ranges[r][0], p.hi = ranges[r][1];
            p.per_slice = 1;
            p.device = DH_DEVICE_CPU;
            dh_histogram *h = NULL;
            ck_assert_int_eq(dh_hist_compute(ctx, v, &p, &h), DH_OK);
            uint64_t *c = malloc(bins[k] * sizeof *c), u, o;
            naive_hist(v, 1, 0, bins[k], p.lo, p.hi, c, &u, &o);
            assert_matches(h, c, u, o, 64 * 63 * 6);
            ck_assert_uint_eq(h->slices, 6);
            uint64_t sum_total = 0;
            for (uint32_t s = 0; s < 6; s++) {
                uint64_t t = h->slice_underflow[s] + h->slice_overflow[s];
                for (uint32_t b = 0; b < bins[k]; b++)
                    t += h->slice_counts[(size_t)s * bins[k] + b];
                ck_assert_uint_eq(t, h->slice_total[s]);
                ck_assert_uint_eq(t, 64 * 63);
                sum_total += t;
            }
            ck_assert_uint_eq(sum_total, h->total);
            /* The per-slice rows must be each slice's own histogram. */
            dh_volume *one = NULL;
            const int16_t *data = dh_volume_data(v);
            ck_assert_int_eq(dh_volume_from_samples(ctx, 64, 63, 1, 12, 1, data + 3 * 64 * 63,
                                                    &one),
                             DH_OK);
            naive_hist(one, 1, 0, bins[k], p.lo, p.hi, c, &u, &o);
            ck_assert(memcmp(c, h->slice_counts + 3 * (size_t)bins[k], bins[k] * sizeof *c) == 0);
            ck_assert_uint_eq(h->slice_underflow[3], u);
            ck_assert_uint_eq(h->slice_overflow[3], o);
            dh_volume_free(one);
            free(c);
            dh_histogram_free(h);
        }
    }
    dh_volume_free(v);
    dh_ctx_free(ctx);
}
END_TEST

/* Modality units: slope 0.684 (the CR files), -1024 intercept CT, a negative slope. */
START_TEST(test_modality_units)
{
    static const double rescale[][2] = {{0.684, 200}, {1, -1024}, {-0.5, 100}, {2.5, -1.25}};
    dh_ctx *ctx = dh_ctx_create();
    for (int r = 0; r < 4; r++) {
        dh_volume *v = random_volume(ctx, 40, 41, 3, 12, r == 1, 300 + r);
        v->format.rescale_slope = rescale[r][0];
        v->format.rescale_intercept = rescale[r][1];
        const double a = rescale[r][0], b = rescale[r][1];

        /* Defaults: one bin per stored value, reversed for a negative slope. */
        dh_hist_params p;
        dh_hist_params_init(&p);
        p.units = DH_UNITS_MODALITY;
        dh_histogram *h = NULL;
        ck_assert_int_eq(dh_hist_compute(ctx, v, &p, &h), DH_OK);
        ck_assert_uint_eq(h->bins, 4096);
        int32_t slo = r == 1 ? -2048 : 0;
        uint64_t *c = calloc(4096, sizeof *c);
        size_t n = dh_volume_sample_count(v);
        for (size_t i = 0; i < n; i++) {
            int32_t s = r == 1 ? ((const int16_t *)dh_volume_data(v))[i]
                               : ((const uint16_t *)dh_volume_data(v))[i];
            c[a > 0 ? s - slo : slo + 4095 - s]++;
        }
        assert_matches(h, c, 0, 0, n);
        double lo = a > 0 ? a * slo + b : a * (slo + 4095) + b;
        ck_assert(fabs(h->lo - lo) < 1e-9 && fabs(h->hi - (lo + fabs(a) * 4096)) < 1e-9);
        dh_histogram_free(h);

        /* Explicit ranges, against the definition in long double. */
        static const double ranges[][2] = {{250.3, 1900.7}, {-1000, 1000}, {-2000, 100}};
        static const uint32_t bins[] = {7, 256, 4097, 65536};
        for (int q = 0; q < 3; q++) {
            for (int k = 0; k < 4; k++) {
                p.has_range = 1, p.lo = ranges[q][0], p.hi = ranges[q][1], p.bins = bins[k];
                ck_assert_int_eq(dh_hist_compute(ctx, v, &p, &h), DH_OK);
                uint64_t *e = malloc(bins[k] * sizeof *e), u, o;
                naive_hist(v, a, b, bins[k], p.lo, p.hi, e, &u, &o);
                assert_matches(h, e, u, o, n);
                free(e);
                dh_histogram_free(h);
            }
        }
        free(c);
        dh_volume_free(v);
    }
    dh_ctx_free(ctx);
}
END_TEST

/* Edges that fall exactly on modality values: slope 0.5, range [1, 3), 4 bins of 0.5. */
START_TEST(test_modality_exact_edges)
{
    uint16_t d[] = {0, 1, 2, 3, 4, 5, 6, 7};
    dh_ctx *ctx = dh_ctx_create();
    dh_volume *v = NULL;
    ck_assert_int_eq(dh_volume_from_samples(ctx, 1, 8, 1, 3, 0, d, &v), DH_OK);
    v->format.rescale_slope = 0.5;
    dh_hist_params p;
    dh_hist_params_init(&p);
    p.units = DH_UNITS_MODALITY, p.has_range = 1, p.lo = 1, p.hi = 3, p.bins = 4;
    dh_histogram *h = NULL;
    ck_assert_int_eq(dh_hist_compute(ctx, v, &p, &h), DH_OK);
    /* values 0, .5 under; 1, 1.5, 2, 2.5 one per bin; 3, 3.5 over */
    ck_assert_uint_eq(h->underflow, 2);
    ck_assert_uint_eq(h->overflow, 2);
    for (int b = 0; b < 4; b++)
        ck_assert_uint_eq(h->counts[b], 1);
    dh_histogram_free(h);
    /* 0.1 is not exact in binary: 0.1 * 10 is still exactly at the edge 1 in rational terms of
     * the doubles only if it is; check against the long double definition either way. */
    v->format.rescale_slope = 0.1;
    p.lo = 0.3, p.hi = 0.6, p.bins = 3;
    ck_assert_int_eq(dh_hist_compute(ctx, v, &p, &h), DH_OK);
    uint64_t c[3], u, o;
    naive_hist(v, 0.1, 0, 3, 0.3, 0.6, c, &u, &o);
    assert_matches(h, c, u, o, 8);
    dh_histogram_free(h);
    dh_volume_free(v);
    dh_ctx_free(ctx);
}
END_TEST

START_TEST(test_bad_params)
{
    dh_ctx *ctx = dh_ctx_create();
    dh_volume *v = random_volume(ctx, 4, 4, 2, 12, 0, 1);
    dh_histogram *h = (dh_histogram *)1;
    dh_hist_params p;

    dh_hist_params_init(&p);
    p.bins = 65537;
    ck_assert_int_eq(dh_hist_compute(ctx, v, &p, &h), DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(h);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "65536"));

    dh_hist_params_init(&p);
    p.has_range = 1, p.lo = 5, p.hi = 5;
    ck_assert_int_eq(dh_hist_compute(ctx, v, &p, &h), DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "empty"));
    p.lo = 6;
    ck_assert_int_eq(dh_hist_compute(ctx, v, &p, &h), DH_ERR_INVALID_ARGUMENT);
    p.lo = NAN;
    ck_assert_int_eq(dh_hist_compute(ctx, v, &p, &h), DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "finite"));
    p.lo = 0, p.hi = INFINITY;
    ck_assert_int_eq(dh_hist_compute(ctx, v, &p, &h), DH_ERR_INVALID_ARGUMENT);

    dh_hist_params_init(&p);
    p.struct_size = 8;
    ck_assert_int_eq(dh_hist_compute(ctx, v, &p, &h), DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "dh_hist_params_init"));

    dh_hist_params_init(&p);
    p.units = (dh_units)7;
    ck_assert_int_eq(dh_hist_compute(ctx, v, &p, &h), DH_ERR_INVALID_ARGUMENT);
    dh_hist_params_init(&p);
    p.device = (dh_device)9;
    ck_assert_int_eq(dh_hist_compute(ctx, v, &p, &h), DH_ERR_INVALID_ARGUMENT);

    dh_hist_params_init(&p);
    p.units = DH_UNITS_MODALITY;
    v->format.rescale_slope = 0;
    ck_assert_int_eq(dh_hist_compute(ctx, v, &p, &h), DH_ERR_INVALID_ARGUMENT);
    v->format.rescale_slope = 1;

    ck_assert_int_eq(dh_hist_compute(ctx, NULL, NULL, &h), DH_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(dh_hist_compute(ctx, v, NULL, NULL), DH_ERR_INVALID_ARGUMENT);
    /* A good call clears the message. */
    ck_assert_int_eq(dh_hist_compute(ctx, v, NULL, &h), DH_OK);
    ck_assert_str_eq(dh_ctx_error(ctx), "");
    dh_histogram_free(h);
    dh_histogram_free(NULL);
    dh_volume_free(v);
    dh_ctx_free(ctx);
}
END_TEST

START_TEST(test_from_samples_checks)
{
    dh_ctx *ctx = dh_ctx_create();
    uint16_t d[6] = {0, 1, 4095, 4096, 2, 3};
    dh_volume *v = (dh_volume *)1;
    ck_assert_int_eq(dh_volume_from_samples(ctx, 2, 3, 1, 12, 0, d, &v), DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(v);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "4096"));
    int16_t s[4] = {-2048, 2047, -2049, 0};
    ck_assert_int_eq(dh_volume_from_samples(ctx, 2, 2, 1, 12, 1, s, &v), DH_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(dh_volume_from_samples(ctx, 2, 2, 1, 17, 1, s, &v), DH_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(dh_volume_from_samples(ctx, 0, 2, 1, 12, 1, s, &v), DH_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(dh_volume_from_samples(ctx, 1, 2, 1, 12, 1, s, &v), DH_OK);
    int32_t lo, hi;
    dh_volume_stored_range(v, &lo, &hi);
    ck_assert_int_eq(lo, -2048);
    ck_assert_int_eq(hi, 2047);
    ck_assert_uint_eq(dh_volume_slices(v), 1);
    ck_assert_uint_eq(dh_volume_bits_stored(v), 12);
    ck_assert_int_eq(dh_volume_is_signed(v), 1);
    ck_assert(dh_volume_data(v) != (const void *)s); /* a copy */
    dh_volume_free(v);
    dh_ctx_free(ctx);
}
END_TEST

START_TEST(test_devices)
{
    dh_ctx *ctx = dh_ctx_create();
    dh_volume *v = random_volume(ctx, 128, 128, 3, 12, 0, 5);
    dh_hist_params p;
    dh_hist_params_init(&p);
    dh_histogram *cpu = NULL, *other = NULL;
    p.device = DH_DEVICE_CPU;
    ck_assert_int_eq(dh_hist_compute(ctx, v, &p, &cpu), DH_OK);
    ck_assert_int_eq(cpu->device_used, DH_DEVICE_CPU);
    p.device = DH_DEVICE_CUDA;
    dh_status st = dh_hist_compute(ctx, v, &p, &other);
    if (dh_cuda_available()) {
        ck_assert_int_eq(st, DH_OK);
        ck_assert_int_eq(other->device_used, DH_DEVICE_CUDA);
        ck_assert(memcmp(cpu->counts, other->counts, cpu->bins * sizeof *cpu->counts) == 0);
    } else {
        ck_assert_int_eq(st, DH_ERR_NO_DEVICE);
        ck_assert_ptr_null(other);
        ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "CUDA"));
    }
    dh_histogram_free(other);
    p.device = DH_DEVICE_AUTO;
    ck_assert_int_eq(dh_hist_compute(ctx, v, &p, &other), DH_OK);
    ck_assert_int_eq(other->device_used, dh_cuda_available() ? DH_DEVICE_CUDA : DH_DEVICE_CPU);
    ck_assert(memcmp(cpu->counts, other->counts, cpu->bins * sizeof *cpu->counts) == 0);
    dh_histogram_free(other);
    dh_histogram_free(cpu);
    dh_volume_free(v);
    dh_ctx_free(ctx);
    /* The GPU's name exactly when there is a GPU, cut to the buffer, never overrun. */
    char name[64], tiny[4] = "xyz";
    memset(name, 'x', sizeof name);
    int has = dh_cuda_device_name(name, sizeof name);
    ck_assert_int_eq(has, dh_cuda_available());
    ck_assert(has ? strlen(name) > 0 && strlen(name) < sizeof name : name[0] == '\0');
    ck_assert_int_eq(dh_cuda_device_name(tiny, sizeof tiny), has);
    ck_assert(strlen(tiny) < sizeof tiny);
    ck_assert_int_eq(dh_cuda_device_name(NULL, 8), 0);
}
END_TEST

int main(void)
{
    const dh_test tests[] = {DH_TEST(test_defaults_stored), DH_TEST(test_ranges_and_per_slice),
                             DH_TEST(test_modality_units),  DH_TEST(test_modality_exact_edges),
                             DH_TEST(test_bad_params),      DH_TEST(test_from_samples_checks),
                             DH_TEST(test_devices)};
    return dh_test_run(dh_test_suite("histogram", 120, DH_TESTS(tests)));
}
