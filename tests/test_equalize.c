// SPDX-License-Identifier: MIT
/*
 * test_equalize.c: the public equalization API and the derived DICOM it writes, on the real
 * files of ../shared/dicom (the --real-files entry) and on a constant volume. Outputs are
 * checked against the formula evaluated here from the volume's own samples (naive counting, no
 * library histogram), written files are read back through the project's reader and dcmdump,
 * UIDs and references are checked, dciodvfy must find no error the source did not already have,
 * and the inputs' bytes must not change.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dh_dicom.h"
#include "dicomhist.h"
#include "test_support.h"

/* FNV-1a of a whole file: enough to see that not one byte moved. */
static uint64_t file_hash(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    uint64_t h = 0xcbf29ce484222325ull;
    int c;
    while ((c = getc(f)) != EOF)
        h = (h ^ (uint64_t)c) * 0x100000001b3ull;
    fclose(f);
    return h;
}

/* Expected output of equalization over the whole range for samples [begin, end) of a volume. */
static void check_formula(const dh_volume *v, const uint16_t *out, size_t begin, size_t end,
                          uint32_t levels)
{
    int sign = dh_volume_is_signed(v);
    const void *data = dh_volume_data(v);
    uint64_t *h = calloc(65536, sizeof *h);
    for (size_t i = begin; i < end; i++)
        h[sign ? ((const int16_t *)data)[i] + 32768 : ((const uint16_t *)data)[i]]++;
    uint64_t *cdf = malloc(65536 * sizeof *cdf), run = 0, cdf_min = 0;
    for (int i = 0; i < 65536; i++) {
        run += h[i];
        cdf[i] = run;
        if (!cdf_min && run)
            cdf_min = run;
    }
    uint64_t n = end - begin;
    for (size_t i = begin; i < end; i++) {
        int idx = sign ? ((const int16_t *)data)[i] + 32768 : ((const uint16_t *)data)[i];
        uint64_t want = n == cdf_min ? 0
                        : (uint64_t)floorl((long double)(cdf[idx] - cdf_min) * (levels - 1) /
                                           (long double)(n - cdf_min));
        ck_assert_msg(out[i] == want, "sample %zu: %u != %llu", i, out[i],
                      (unsigned long long)want);
    }
    free(h);
    free(cdf);
}

/* Error lines of dciodvfy for a file, sorted, with the file-specific prefix dropped. */
static char *dciodvfy_errors(const char *path)
{
    return dh_test_command_output("dciodvfy '%s' 2>&1 | grep '^Error' | sort -u", path);
}

static void check_no_new_errors(const char *source, const char *written)
{
    dh_test_need_tool("dciodvfy");
    char *before = dciodvfy_errors(source), *after = dciodvfy_errors(written);
    for (char *line = strtok(after, "\n"); line; line = strtok(NULL, "\n"))
        ck_assert_msg(strstr(before, line) != NULL, "%s: new dciodvfy error: %s", written, line);
    free(before);
    free(after);
}

/* Asserts that one tag, as dcmdump prints it (e.g. "[DERIVED\SECONDARY]"), contains `want`.
 * dcmdump comes with DCMTK's tools; a host without them (a bare GPU machine) skips the check. */
static void assert_tag_contains(const char *path, const char *tag, const char *want)
{
    dh_test_need_tool("dcmdump");
    char cmd[1024], value[512] = "";
    snprintf(cmd, sizeof cmd, "dcmdump -q +P %s '%s' 2>/dev/null | head -1", tag, path);
    FILE *p = popen(cmd, "r");
    if (!fgets(value, (int)sizeof value, p))
        value[0] = '\0';
    pclose(p);
    ck_assert_msg(strstr(value, want) != NULL, "%s: %s is '%s', expected '%s' in it", path, tag,
                  value, want);
}

START_TEST(real_xray_volume_mode_is_the_formula_and_valid_dicom)
{
    const char *src_c = dh_test_shared("pylibjpeg-data_RG2_JPLL.dcm");
    if (!src_c)
        return;
    char *src = strdup(src_c);
    uint64_t before = file_hash(src);
    dh_ctx *ctx = dh_ctx_create();
    dh_volume *v = NULL;
    ck_assert_int_eq(dh_volume_read_file(ctx, src, &v), DH_OK);
    dh_equalize_params p;
    dh_equalize_params_init(&p);
    p.device = DH_DEVICE_CPU;
    dh_equalized *r = NULL;
    ck_assert_int_eq(dh_equalize(ctx, v, &p, &r), DH_OK);
    ck_assert_uint_eq(r->output_bits, dh_volume_bits_stored(v));
    check_formula(v, r->data, 0, dh_volume_sample_count(v), 1u << r->output_bits);

    char *dir = dh_test_temp_dir("/tmp/dh_eq_test");
    dh_derived_series *s = NULL;
    ck_assert_int_eq(dh_equalized_write_dicom(ctx, v, r, dir, &s), DH_OK);
    ck_assert_uint_eq(s->file_count, 1);
    ck_assert_str_ne(s->series_uid, dh_volume_series_uid(v));
    ck_assert_int_eq(strncmp(s->series_uid, "2.25.", 5), 0);
    /* Read back through the project's reader: same values, new identity, same study. */
    dh_dicom_image *img = NULL;
    char msg[512];
    ck_assert_int_eq(dh_dicom_read_file(s->files[0], 1, &img, msg, sizeof msg), DH_OK);
    ck_assert_uint_eq(img->format.bits_stored, r->output_bits);
    ck_assert_int_eq(img->format.is_signed, 0);
    ck_assert_int_eq(img->has_window, 0);
    ck_assert_int_eq(img->format.photometric, dh_volume_photometric(v));
    ck_assert_str_eq(img->series_uid, s->series_uid);
    ck_assert_str_eq(img->sop_instance_uid, s->sop_uids[0]);
    ck_assert_str_eq(img->study_uid, dh_volume_study_uid(v));
    ck_assert_int_eq(memcmp(img->pixels, r->data, dh_volume_sample_count(v) * 2), 0);
    dh_dicom_image_free(img);
    assert_tag_contains(s->files[0], "ImageType", "[DERIVED\\SECONDARY");
    assert_tag_contains(s->files[0], "PatientName", "CompressedSamples^RG2");
    assert_tag_contains(s->files[0], "ReferencedSOPInstanceUID",
                        "1.3.6.1.4.1.5962.1.1.10.1.4.20040826185059.5457");
    assert_tag_contains(s->files[0], "DerivationDescription", "equalization");
    check_no_new_errors(src, s->files[0]);

    /* Never replace: a second run into the same folder fails and leaves the first file. */
    uint64_t written = file_hash(s->files[0]);
    dh_derived_series *again = NULL;
    ck_assert_int_eq(dh_equalized_write_dicom(ctx, v, r, dir, &again), DH_ERR_IO);
    ck_assert_ptr_null(again);
    ck_assert_uint_eq(file_hash(s->files[0]), written);
    /* The input's own folder as output: the path is the input, refused. */
    char src_dir[4096];
    snprintf(src_dir, sizeof src_dir, "%s", src);
    *strrchr(src_dir, '/') = '\0';
    ck_assert_int_eq(dh_equalized_write_dicom(ctx, v, r, src_dir, &again), DH_ERR_IO);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "input"));
    ck_assert_int_eq(dh_equalized_write_png(ctx, v, r, dir), DH_OK);

    ck_assert_uint_eq(file_hash(src), before);
    dh_derived_series_free(s);
    dh_test_remove_tree(dir);
    free(dir);
    dh_equalized_free(r);
    dh_volume_free(v);
    dh_ctx_free(ctx);
    free(src);
}
END_TEST

START_TEST(ct_series_slice_mode_one_derived_series)
{
    const char *d = dh_test_shared("series/ct5n");
    if (!d)
        return;
    char *src = strdup(d);
    dh_ctx *ctx = dh_ctx_create();
    dh_volume_set *set = NULL;
    const char *paths[] = {src};
    ck_assert_int_eq(dh_volume_set_load(ctx, paths, 1, &set), DH_OK);
    ck_assert_uint_eq(dh_volume_set_count(set), 1);
    const dh_volume *v = dh_volume_set_volume(set, 0);
    uint64_t hashes[5];
    for (uint32_t z = 0; z < 5; z++)
        hashes[z] = file_hash(dh_volume_slice_source(v, z));
    dh_equalize_params p;
    dh_equalize_params_init(&p);
    p.per_slice = 1;
    p.device = DH_DEVICE_CPU;
    dh_equalized *r = NULL;
    ck_assert_int_eq(dh_equalize(ctx, v, &p, &r), DH_OK);
    ck_assert_uint_eq(r->table_count, 5);
    size_t slice_len = (size_t)dh_volume_rows(v) * dh_volume_columns(v);
    for (uint32_t z = 0; z < 5; z++)
        check_formula(v, r->data, z * slice_len, (z + 1) * slice_len, 1u << r->output_bits);
    char *dir = dh_test_temp_dir("/tmp/dh_eq_test");
    dh_derived_series *s = NULL;
    ck_assert_int_eq(dh_equalized_write_dicom(ctx, v, r, dir, &s), DH_OK);
    ck_assert_uint_eq(s->file_count, 5);
    for (size_t i = 0; i < 5; i++) {
        dh_dicom_image *img = NULL;
        char msg[512];
        ck_assert_int_eq(dh_dicom_read_file(s->files[i], 1, &img, msg, sizeof msg), DH_OK);
        ck_assert_str_eq(img->series_uid, s->series_uid);
        ck_assert_str_eq(img->study_uid, dh_volume_study_uid(v));
        for (size_t k = 0; k < i; k++)
            ck_assert_str_ne(s->sop_uids[k], s->sop_uids[i]);
        ck_assert_str_eq(img->modality, "CT");
        ck_assert_double_eq(img->format.rescale_slope, 1);
        ck_assert_double_eq(img->format.rescale_intercept, 0);
        /* The slice of this file in the volume. */
        uint32_t z = 0;
        while (strcmp(dh_volume_slice_source(v, z), s->sources[i]) != 0)
            z++;
        ck_assert_int_eq(memcmp(img->pixels, r->data + z * slice_len, slice_len * 2), 0);
        dh_dicom_image_free(img);
        assert_tag_contains(s->files[i], "RescaleType", "[US]");
        check_no_new_errors(s->sources[i], s->files[i]);
    }
    for (uint32_t z = 0; z < 5; z++)
        ck_assert_uint_eq(file_hash(dh_volume_slice_source(v, z)), hashes[z]);
    dh_derived_series_free(s);
    dh_test_remove_tree(dir);
    free(dir);
    dh_equalized_free(r);
    dh_volume_set_free(set);
    dh_ctx_free(ctx);
    free(src);
}
END_TEST

START_TEST(window_sources_on_real_files)
{
    const char *c = dh_test_shared("fo-dicom_CR-MONO1-10-chest");
    if (!c)
        return;
    char *src = strdup(c);
    dh_ctx *ctx = dh_ctx_create();
    dh_volume *v = NULL;
    ck_assert_int_eq(dh_volume_read_file(ctx, src, &v), DH_OK);
    ck_assert_int_eq(dh_volume_photometric(v), DH_MONOCHROME1);
    dh_equalize_params p;
    dh_equalize_params_init(&p);
    p.device = DH_DEVICE_CPU;
    p.operation = DH_EQ_WINDOW_LEVEL;
    p.window = DH_WINDOW_MINMAX;
    p.output_bits = 8;
    dh_equalized *r = NULL;
    ck_assert_int_eq(dh_equalize(ctx, v, &p, &r), DH_OK);
    /* Min-max under LINEAR: the lowest pixel gives 0 and the highest 255. */
    int32_t smin, smax;
    dh_volume_stored_range(v, &smin, &smax);
    uint16_t lo_out = 65535, hi_out = 0;
    for (size_t i = 0; i < dh_volume_sample_count(v); i++) {
        lo_out = r->data[i] < lo_out ? r->data[i] : lo_out;
        hi_out = r->data[i] > hi_out ? r->data[i] : hi_out;
    }
    ck_assert_uint_eq(lo_out, 0);
    ck_assert_uint_eq(hi_out, 255);
    ck_assert_double_eq(r->window_lo[0], smin * dh_volume_rescale_slope(v) +
                                             dh_volume_rescale_intercept(v));
    dh_equalized_free(r);
    /* File window and percentile, equalized with a clip limit: monotone in the stored value. */
    p.operation = DH_EQ_EQUALIZE;
    p.window = DH_WINDOW_PERCENTILE;
    p.percentile = 2;
    p.clip_limit = 3;
    ck_assert_int_eq(dh_equalize(ctx, v, &p, &r), DH_OK);
    for (uint32_t i = 1; i < r->table_len; i++)
        ck_assert_uint_le(r->tables[i - 1], r->tables[i]);
    dh_equalized_free(r);
    p.window = DH_WINDOW_FILE;
    p.clip_limit = 0;
    ck_assert_int_eq(dh_equalize(ctx, v, &p, &r), DH_OK);
    dh_equalized_free(r);
    /* Bad parameters are refused with a message. */
    p.output_bits = 10;
    ck_assert_int_eq(dh_equalize(ctx, v, &p, &r), DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "bits"));
    p.output_bits = 0;
    p.window = DH_WINDOW_PERCENTILE;
    p.percentile = 50;
    ck_assert_int_eq(dh_equalize(ctx, v, &p, &r), DH_ERR_INVALID_ARGUMENT);
    p.window = DH_WINDOW_NONE;
    p.operation = DH_EQ_WINDOW_LEVEL;
    ck_assert_int_eq(dh_equalize(ctx, v, &p, &r), DH_ERR_INVALID_ARGUMENT);
    dh_volume_free(v);
    dh_ctx_free(ctx);
    free(src);
}
END_TEST

START_TEST(constant_volume_gives_zero)
{
    dh_ctx *ctx = dh_ctx_create();
    uint16_t samples[64];
    for (int i = 0; i < 64; i++)
        samples[i] = 1234;
    dh_volume *v = NULL;
    ck_assert_int_eq(dh_volume_from_samples(ctx, 8, 4, 2, 12, 0, samples, &v), DH_OK);
    dh_equalize_params p;
    dh_equalize_params_init(&p);
    p.device = DH_DEVICE_CPU;
    dh_equalized *r = NULL;
    ck_assert_int_eq(dh_equalize(ctx, v, &p, &r), DH_OK);
    for (int i = 0; i < 64; i++)
        ck_assert_uint_eq(r->data[i], 0);
    dh_equalized_free(r);
    samples[5] = 3000; /* two values: 0 and the top level */
    dh_volume_free(v);
    ck_assert_int_eq(dh_volume_from_samples(ctx, 8, 4, 2, 12, 0, samples, &v), DH_OK);
    ck_assert_int_eq(dh_equalize(ctx, v, &p, &r), DH_OK);
    ck_assert_uint_eq(r->data[0], 0);
    ck_assert_uint_eq(r->data[5], 4095);
    dh_equalized_free(r);
    dh_volume_free(v);
    dh_ctx_free(ctx);
}
END_TEST

/* Caller-chosen UIDs: one per source, derived from the source's name here; a bad UID from the
 * caller fails the call before any file is written. */
static int uid_from_source(void *user, const char *source, char uid[65])
{
    int *calls = user;
    const char *base = strrchr(source, '/');
    unsigned n = 0;
    for (const char *c = base ? base + 1 : source; *c; c++)
        n = n * 31 + (unsigned char)*c;
    snprintf(uid, 65, "1.2.826.0.1.3680043.10.1.%u.%d", n % 1000000u, ++*calls);
    return 0;
}

static int bad_uid(void *user, const char *source, char uid[65])
{
    (void)user, (void)source;
    snprintf(uid, 65, "1.2.x");
    return 0;
}

START_TEST(caller_given_uids_are_written)
{
    const char *d = dh_test_shared("series/ct5n");
    if (!d)
        return;
    char *src = strdup(d);
    dh_ctx *ctx = dh_ctx_create();
    dh_volume_set *set = NULL;
    const char *paths[] = {src};
    ck_assert_int_eq(dh_volume_set_load(ctx, paths, 1, &set), DH_OK);
    const dh_volume *v = dh_volume_set_volume(set, 0);
    dh_equalized *r = dh_test_equalize_cpu(ctx, v);
    char *dir = dh_test_temp_dir("/tmp/dh_eq_test");
    int calls = 0;
    dh_derive_params dp;
    dh_derive_params_init(&dp);
    dp.series_uid = "1.2.826.0.1.3680043.10.1.999";
    dp.instance_uid = bad_uid;
    dh_derived_series *s = NULL;
    ck_assert_int_eq(dh_equalized_write_dicom_with(ctx, v, r, dir, &dp, &s), DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(s);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "1.2.x"));
    dp.instance_uid = uid_from_source;
    dp.user = &calls;
    ck_assert_int_eq(dh_equalized_write_dicom_with(ctx, v, r, dir, &dp, &s), DH_OK);
    ck_assert_int_eq(calls, 5);
    ck_assert_str_eq(s->series_uid, dp.series_uid);
    for (size_t i = 0; i < s->file_count; i++) {
        dh_dicom_image *img = NULL;
        char msg[512], want[65];
        int k = 0;
        ck_assert_int_eq(dh_dicom_read_file(s->files[i], 0, &img, msg, sizeof msg), DH_OK);
        ck_assert_str_eq(img->series_uid, dp.series_uid);
        ck_assert_str_eq(img->sop_instance_uid, s->sop_uids[i]);
        /* The UID of this file's source, as the callback computed it on call i + 1. */
        uid_from_source(&k, s->sources[i], want);
        ck_assert_int_eq(strncmp(img->sop_instance_uid, want, strlen(want) - 2), 0);
        dh_dicom_image_free(img);
    }
    dh_derived_series_free(s);
    dp.series_uid = "not a uid";
    ck_assert_int_eq(dh_equalized_write_dicom_with(ctx, v, r, dir, &dp, &s), DH_ERR_INVALID_ARGUMENT);
    dh_test_remove_tree(dir);
    free(dir);
    dh_equalized_free(r);
    dh_volume_set_free(set);
    dh_ctx_free(ctx);
    free(src);
}
END_TEST

int main(int argc, char **argv)
{
    const dh_test synthetic[] = {DH_TEST(constant_volume_gives_zero)};
    const dh_test real_files[] = {DH_TEST(real_xray_volume_mode_is_the_formula_and_valid_dicom),
                                  DH_TEST(ct_series_slice_mode_one_derived_series),
                                  DH_TEST(window_sources_on_real_files),
                                  DH_TEST(caller_given_uids_are_written)};
    return dh_test_main(argc, argv, "equalize", 120, DH_TESTS(synthetic), DH_TESTS(real_files));
}
