// SPDX-License-Identifier: MIT
/*
 * test_equalize_cuda.c: the GPU equalization equals the CPU twin bit for bit: tables from
 * histograms (random windows, clip limits, 8/12/16-bit outputs, signed and unsigned data,
 * constant and two-value slices) and the public dh_equalize on both devices, per volume and
 * per slice, on random volumes and on the real files; one context's volumes of sizes around the
 * pinned ring's chunks in a row; threads equalizing 15- and 16-bit signed volumes at once (one
 * kernel, two shared-memory sizes). Exits 77 (skipped) without a usable GPU.
 * Runs in CK_NOFORK mode: CUDA and fork do not mix.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dicomhist.h"
#include "equalize_cpu.h"
#include "equalize_cuda.h"
#include "hist_cuda.h"
#include "test_support.h"

/* A volume of random slices, some of them constant or two-valued. */
static void fill(uint16_t *d, size_t slice_len, size_t slices, int32_t base, uint32_t len,
                 uint64_t seed)
{
    dh_test_rng rng;
    dh_test_rng_seed(&rng, seed);
    for (size_t z = 0; z < slices; z++) {
        uint16_t *s = d + z * slice_len;
        int kind = (int)(z % 4);
        if (kind == 0 && len >= 4096) {
            dh_test_fill_ct_like(s, slice_len, seed + z);
            for (size_t i = 0; i < slice_len; i++)
                s[i] = (uint16_t)(base + (int32_t)(s[i] % len));
        } else {
            uint32_t a = dh_test_rng_below(&rng, len), b = dh_test_rng_below(&rng, len);
            for (size_t i = 0; i < slice_len; i++) {
                uint32_t idx = kind == 1   ? a
                               : kind == 2 ? (dh_test_rng_below(&rng, 3) ? a : b)
                                           : dh_test_rng_below(&rng, len);
                s[i] = (uint16_t)(base + (int32_t)idx);
            }
        }
    }
}

START_TEST(tables_and_outputs_equal_the_cpu)
{
    static const struct { uint32_t bits; int sign; } fmt[] = {{12, 0}, {12, 1}, {16, 1}, {10, 0}};
    static const uint32_t levels[] = {256, 4096, 65536};
    static const double clips[] = {0, 1, 2.5, 40};
    for (size_t f = 0; f < 4; f++)
        for (int per_slice = 0; per_slice < 2; per_slice++) {
            int32_t base;
            uint32_t len;
            dh_eq_table_range(fmt[f].bits, fmt[f].sign, &base, &len);
            size_t slice_len = 97 * 131, slices = 9, n = slice_len * slices;
            uint16_t *data = malloc(n * 2);
            fill(data, slice_len, slices, base, len, 11 + f * 2 + (uint64_t)per_slice);
            uint32_t tables = per_slice ? (uint32_t)slices : 1;
            uint64_t *hist = malloc((size_t)tables * (len + 2) * 8);
            dh_bin_map map;
            dh_eq_bin_map_init(&map, base, len);
            ck_assert_int_eq(dh_hist_cpu(data, fmt[f].sign, slice_len, slices, per_slice, &map,
                                         1, hist), 0);
            dh_test_rng rng;
            dh_test_rng_seed(&rng, 5 + f);
            for (int round = 0; round < 6; round++) {
                dh_eq_window *w = malloc(tables * sizeof *w);
                for (uint32_t t = 0; t < tables; t++) {
                    w[t].lo = base - 2 + (int32_t)dh_test_rng_below(&rng, len / 2);
                    w[t].hi = round == 0 ? base + (int32_t)len - 1
                                         : w[t].lo + (int32_t)dh_test_rng_below(&rng, len);
                }
                uint32_t L = levels[round % 3];
                double clip = clips[round % 4];
                uint16_t *cpu_lut = malloc((size_t)tables * len * 2);
                uint16_t *gpu_lut = malloc((size_t)tables * len * 2);
                uint16_t *cpu_out = malloc(n * 2), *gpu_out = malloc(n * 2);
                for (uint32_t t = 0; t < tables; t++)
                    dh_eq_lut_build(hist + (size_t)t * (len + 2), base, len, w[t], L, clip,
                                    cpu_lut + (size_t)t * len);
                dh_lut_apply_cpu(data, fmt[f].sign, slice_len, slices, cpu_lut, per_slice, base,
                                 len, 1, cpu_out);
                char msg[512];
                dh_eq_cuda *s = NULL;
                ck_assert_msg(dh_eq_cuda_begin(data, fmt[f].sign, slice_len, slices, per_slice,
                                               base, len, &s, msg, sizeof msg) == 0, "%s", msg);
                ck_assert_msg(dh_eq_cuda_equalize(s, w, L, clip, msg, sizeof msg) == 0, "%s",
                              msg);
                ck_assert_msg(dh_eq_cuda_finish(s, gpu_out, gpu_lut, msg, sizeof msg) == 0, "%s",
                              msg);
                dh_eq_cuda_free(s);
                for (size_t i = 0; i < (size_t)tables * len; i++)
                    ck_assert_msg(cpu_lut[i] == gpu_lut[i],
                                  "bits %u signed %d per_slice %d round %d entry %zu: %u != %u",
                                  fmt[f].bits, fmt[f].sign, per_slice, round, i, cpu_lut[i],
                                  gpu_lut[i]);
                ck_assert_int_eq(memcmp(cpu_out, gpu_out, n * 2), 0);
                free(w);
                free(cpu_lut);
                free(gpu_lut);
                free(cpu_out);
                free(gpu_out);
            }
            free(hist);
            free(data);
        }
}
END_TEST

/* dh_equalize of v on both devices through one context (its GPU pool reused from call to
 * call), the results equal. */
static void compare_devices_on(dh_ctx *ctx, const dh_volume *v, dh_equalize_params p)
{
    dh_equalized *a = NULL, *b = NULL;
    p.device = DH_DEVICE_CPU;
    ck_assert_msg(dh_equalize(ctx, v, &p, &a) == DH_OK, "%s", dh_ctx_error(ctx));
    p.device = DH_DEVICE_CUDA;
    ck_assert_msg(dh_equalize(ctx, v, &p, &b) == DH_OK, "%s", dh_ctx_error(ctx));
    ck_assert_int_eq(b->device_used, DH_DEVICE_CUDA);
    ck_assert_int_eq(memcmp(a->data, b->data, dh_volume_sample_count(v) * 2), 0);
    ck_assert_int_eq(memcmp(a->tables, b->tables, (size_t)a->table_count * a->table_len * 2),
                     0);
    ck_assert_str_eq(a->description, b->description);
    dh_equalized_free(a);
    dh_equalized_free(b);
}

static void compare_devices(const dh_volume *v, dh_equalize_params p)
{
    dh_ctx *ctx = dh_ctx_create();
    compare_devices_on(ctx, v, p);
    dh_ctx_free(ctx);
}

/* One context's volumes one after another, as a batch worker's: the samples and the output pass
 * through the pool's pinned ring in 2 MiB chunks (equalize_cuda.cu), so sizes below one chunk,
 * exactly one, one and a bit, several with a partial last, then smaller again (the slots hold
 * the previous volume's bytes), each equal to the CPU's, with and without a rank window (the
 * histograms' download between the ring's upload and download). */
START_TEST(pooled_ring_sizes_equal_the_cpu)
{
    static const struct {
        uint32_t rows, columns, slices;
        int sign;
    } shape[] = {{100, 100, 3, 0}, {1024, 1024, 1, 0}, {1024, 1025, 1, 1},
                 {512, 512, 21, 0}, {37, 41, 5, 1},    {512, 512, 21, 1}};
    dh_ctx *ctx = dh_ctx_create();
    for (size_t k = 0; k < sizeof shape / sizeof shape[0]; k++) {
        const size_t slice_len = (size_t)shape[k].rows * shape[k].columns;
        const int32_t base = shape[k].sign ? -2048 : 0;
        uint16_t *data = malloc(slice_len * shape[k].slices * sizeof *data);
        ck_assert_ptr_nonnull(data);
        fill(data, slice_len, shape[k].slices, base, 4096, 1000 + k);
        dh_volume *v = NULL;
        ck_assert_msg(dh_volume_from_samples(ctx, shape[k].rows, shape[k].columns,
                                             shape[k].slices, 12, shape[k].sign, data,
                                             &v) == DH_OK,
                      "%s", dh_ctx_error(ctx));
        for (int ranks = 0; ranks < 2; ranks++) {
            dh_equalize_params p;
            dh_equalize_params_init(&p);
            p.per_slice = (int)(k % 2);
            p.window = ranks ? DH_WINDOW_PERCENTILE : DH_WINDOW_NONE;
            p.percentile = 1;
            compare_devices_on(ctx, v, p);
        }
        dh_volume_free(v);
        free(data);
    }
    dh_ctx_free(ctx);
}
END_TEST

/* Threads with a context each equalizing on the GPU at once, half of them 15-bit and half
 * 16-bit signed volumes: the table application kernel is one function whose shared-memory
 * limit (64 and 128 KiB tables) is process-wide state. Session 23 saw a batch fail one series
 * in 24 runs with cudaErrorLaunchOutOfResources while each launch set the limit to its own
 * table's size (dh_cuda_allow_smem now sets one value); every call must succeed and equal the
 * CPU twin. */
typedef struct racer {
    uint32_t bits;
    int failed_calls, differing;
    char first_error[256];
} racer;

static void *race_tables(void *arg)
{
    racer *r = arg;
    dh_ctx *ctx = dh_ctx_create();
    const uint32_t rows = 64, columns = 48, slices = 2;
    const size_t n = (size_t)rows * columns * slices;
    uint16_t *data = malloc(n * sizeof *data);
    const int32_t base = -(int32_t)(1u << (r->bits - 1));
    if (data)
        fill(data, (size_t)rows * columns, slices, base, 1u << r->bits, 77 + r->bits);
    dh_volume *v = NULL;
    dh_equalize_params p;
    dh_equalize_params_init(&p);
    dh_equalized *cpu = NULL;
    p.device = DH_DEVICE_CPU;
    if (!data || dh_volume_from_samples(ctx, rows, columns, slices, r->bits, 1, data, &v) != DH_OK ||
        dh_equalize(ctx, v, &p, &cpu) != DH_OK) {
        r->failed_calls = -1;
        snprintf(r->first_error, sizeof r->first_error, "setup: %s", dh_ctx_error(ctx));
    }
    p.device = DH_DEVICE_CUDA;
    for (int i = 0; r->failed_calls >= 0 && i < 300; i++) {
        dh_equalized *gpu = NULL;
        if (dh_equalize(ctx, v, &p, &gpu) != DH_OK) {
            if (r->failed_calls++ == 0)
                snprintf(r->first_error, sizeof r->first_error, "%s", dh_ctx_error(ctx));
        } else if (memcmp(gpu->data, cpu->data, n * 2) != 0) {
            r->differing++;
        }
        dh_equalized_free(gpu);
    }
    dh_equalized_free(cpu);
    dh_volume_free(v);
    free(data);
    dh_ctx_free(ctx);
    return NULL;
}

START_TEST(concurrent_table_sizes_all_launch)
{
    enum { THREADS = 6 };
    racer r[THREADS];
    pthread_t id[THREADS];
    for (int t = 0; t < THREADS; t++) {
        r[t] = (racer){.bits = t % 2 ? 15 : 16};
        ck_assert_int_eq(pthread_create(&id[t], NULL, race_tables, &r[t]), 0);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(id[t], NULL);
    for (int t = 0; t < THREADS; t++)
        ck_assert_msg(r[t].failed_calls == 0 && r[t].differing == 0,
                      "thread %d (%u-bit signed): %d calls failed, %d differ from the CPU twin; "
                      "first error: %s", t, r[t].bits, r[t].failed_calls, r[t].differing,
                      r[t].first_error);
}
END_TEST

START_TEST(public_api_equal_on_both_devices)
{
    static const char *files[] = {"pylibjpeg-data_RG2_JPLL.dcm", "pydicom_CT_small.dcm",
                                  "fo-dicom_D_CLUNIE_CT1_RLE_FRAGS.dcm",
                                  "pydicom-data_emri_small.dcm", "fo-dicom_CR-MONO1-10-chest"};
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
        const char *path = dh_test_shared(files[k]);
        dh_ctx *ctx = dh_ctx_create();
        dh_volume *v = NULL;
        ck_assert_int_eq(dh_volume_read_file(ctx, path, &v), DH_OK);
        dh_equalize_params p;
        dh_equalize_params_init(&p);
        for (int per_slice = 0; per_slice < 2; per_slice++) {
            p.per_slice = per_slice;
            p.operation = DH_EQ_EQUALIZE;
            p.window = DH_WINDOW_NONE;
            p.clip_limit = 0;
            compare_devices(v, p);
            p.window = DH_WINDOW_PERCENTILE;
            p.percentile = 1;
            p.clip_limit = 2;
            compare_devices(v, p);
            p.window = DH_WINDOW_MINMAX;
            p.clip_limit = 0;
            p.output_bits = 8;
            compare_devices(v, p);
            p.operation = DH_EQ_WINDOW_LEVEL;
            p.voi = DH_VOI_SIGMOID;
            compare_devices(v, p);
            p.output_bits = 0;
        }
        dh_volume_free(v);
        dh_ctx_free(ctx);
    }
}
END_TEST

int main(int argc, char **argv)
{
    if (!dh_cuda_usable())
        return DH_TEST_SKIP;
    const dh_test synthetic[] = {DH_TEST(tables_and_outputs_equal_the_cpu),
                                 DH_TEST(pooled_ring_sizes_equal_the_cpu),
                                 DH_TEST(concurrent_table_sizes_all_launch)};
    const dh_test real_files[] = {DH_TEST(public_api_equal_on_both_devices)};
    dh_test_in_one_process();
    return dh_test_main(argc, argv, "equalize_cuda", 300, DH_TESTS(synthetic),
                        DH_TESTS(real_files));
}
