// SPDX-License-Identifier: MIT
/*
 * test_volume.c: volumes and series assembly over the real files in ../shared/dicom (the
 * --real-files entry; the codec-thread checks also run on sample_data alone): slice order
 * along the normal whatever the input order, uneven spacing warnings, multi-frame files, reading
 * from memory, a folder with a bad file and a README, and series whose slices do not fit
 * together (made in a temporary folder from real files with DCMTK's dcmodify).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dicomhist.h"
#include "test_support.h"

static const char *ct5n[] = {"2062.dcm", "2392.dcm", "2693.dcm", "3023.dcm", "3353.dcm"};

static char *shared_copy(const char *relative)
{
    return strdup(dh_test_shared(relative));
}

/* Loads the ct5n files in the given order and checks the one volume that results. */
static void check_ct5n(const int *order)
{
    char *paths[5];
    for (int i = 0; i < 5; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "series/ct5n/%s", ct5n[order[i]]);
        paths[i] = shared_copy(rel);
    }
    dh_ctx *ctx = dh_ctx_create();
    dh_volume_set *set = NULL;
    ck_assert_int_eq(dh_volume_set_load(ctx, (const char *const *)paths, 5, &set), DH_OK);
    ck_assert_uint_eq(dh_volume_set_failure_count(set), 0);
    ck_assert_uint_eq(dh_volume_set_count(set), 1);
    const dh_volume *v = dh_volume_set_volume(set, 0);
    ck_assert_uint_eq(dh_volume_slices(v), 5);
    ck_assert_uint_eq(dh_volume_rows(v), 16);
    ck_assert_int_eq(dh_volume_is_signed(v), 1);
    ck_assert(dh_volume_rescale_intercept(v) == -1024);
    /* Ascending along the normal: z rises from -1.24 to 8.76 in steps of 2.5, so the files come
     * in reverse InstanceNumber order (the manifest: z descending as instance numbers rise). */
    double xyz[3];
    for (uint32_t s = 0; s < 5; s++) {
        ck_assert(dh_volume_slice_position(v, s, xyz));
        if (s > 0)
            ck_assert(fabs(dh_volume_slice_location(v, s) - dh_volume_slice_location(v, s - 1) -
                           2.5) < 1e-6);
        ck_assert_ptr_nonnull(strstr(dh_volume_slice_source(v, s), ct5n[4 - s]));
    }
    ck_assert(fabs(dh_volume_spacing(v) - 2.5) < 1e-6);
    ck_assert_uint_eq(dh_volume_warning_count(v), 0);
    ck_assert_str_eq(dh_volume_modality(v), "CT");
    ck_assert_str_ne(dh_volume_series_uid(v), "");

    /* The volume's samples are each file's own, in that order. */
    for (uint32_t s = 0; s < 5; s++) {
        dh_volume *one = NULL;
        ck_assert_int_eq(dh_volume_read_file(ctx, dh_volume_slice_source(v, s), &one), DH_OK);
        ck_assert(memcmp((const int16_t *)dh_volume_data(v) + 256 * s, dh_volume_data(one),
                         256 * sizeof(int16_t)) == 0);
        dh_volume_free(one);
    }
    dh_volume_set_free(set);
    dh_ctx_free(ctx);
    for (int i = 0; i < 5; i++)
        free(paths[i]);
}

START_TEST(test_series_order)
{
    static const int orders[][5] = {{0, 1, 2, 3, 4}, {4, 3, 2, 1, 0}, {2, 0, 4, 1, 3},
                                    {3, 4, 0, 2, 1}};
    for (int i = 0; i < 4; i++)
        check_ct5n(orders[i]);
}
END_TEST

START_TEST(test_series_directory_uneven)
{
    const char *dir = dh_test_shared("series/ct2_uneven");
    dh_ctx *ctx = dh_ctx_create();
    dh_volume_set *set = NULL;
    ck_assert_int_eq(dh_volume_set_load(ctx, &dir, 1, &set), DH_OK);
    ck_assert_uint_eq(dh_volume_set_failure_count(set), 0);
    ck_assert_uint_eq(dh_volume_set_count(set), 1);
    const dh_volume *v = dh_volume_set_volume(set, 0);
    ck_assert_uint_eq(dh_volume_slices(v), 4);
    ck_assert_str_eq(dh_volume_path(v), dir);
    for (uint32_t s = 1; s < 4; s++)
        ck_assert(dh_volume_slice_location(v, s) > dh_volume_slice_location(v, s - 1));
    ck_assert_uint_eq(dh_volume_warning_count(v), 1);
    ck_assert_ptr_nonnull(strstr(dh_volume_warning(v, 0), "uneven"));
    /* Locations -99.48, 103.02, 104.27, 105.52 (the README rounds them): gaps 202.5, 1.25. */
    ck_assert_ptr_nonnull(strstr(dh_volume_warning(v, 0), "202.5"));
    ck_assert_ptr_nonnull(strstr(dh_volume_warning(v, 0), "1.25, 1.25"));
    dh_volume_set_free(set);
    dh_ctx_free(ctx);
}
END_TEST

START_TEST(test_multiframe)
{
    dh_ctx *ctx = dh_ctx_create();
    dh_volume *v = NULL;
    ck_assert_int_eq(dh_volume_read_file(ctx, dh_test_shared("pydicom-data_emri_small.dcm"), &v),
                     DH_OK);
    ck_assert_uint_eq(dh_volume_slices(v), 10);
    ck_assert_uint_eq(dh_volume_rows(v), 64);
    ck_assert_uint_eq(dh_volume_columns(v), 64);
    ck_assert_uint_eq(dh_volume_bits_stored(v), 12);
    for (uint32_t s = 0; s < 10; s++)
        ck_assert_uint_eq(dh_volume_slice_frame(v, s), s);
    int32_t lo, hi;
    dh_volume_stored_range(v, &lo, &hi);
    ck_assert_int_lt(lo, hi);
    ck_assert_int_ge(lo, 0);
    ck_assert_int_le(hi, 4095);

    /* In a set, a multi-frame file is a volume of its own; the RLE copy gives the same values. */
    const char *paths[] = {dh_test_shared("pydicom-data_emri_small.dcm"), NULL};
    char *first = strdup(paths[0]);
    paths[0] = first;
    paths[1] = dh_test_shared("pydicom-data_emri_small_RLE.dcm");
    dh_volume_set *set = NULL;
    ck_assert_int_eq(dh_volume_set_load(ctx, paths, 2, &set), DH_OK);
    ck_assert_uint_eq(dh_volume_set_count(set), 2);
    for (size_t i = 0; i < 2; i++) {
        const dh_volume *w = dh_volume_set_volume(set, i);
        ck_assert_uint_eq(dh_volume_slices(w), 10);
        ck_assert(memcmp(dh_volume_data(w), dh_volume_data(v), 10 * 64 * 64 * 2) == 0);
    }
    dh_volume_set_free(set);
    free(first);
    dh_volume_free(v);
    dh_ctx_free(ctx);
}
END_TEST

START_TEST(test_read_memory)
{
    const char *path = dh_test_shared("pydicom_CT_small.dcm");
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static unsigned char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    dh_ctx *ctx = dh_ctx_create();
    dh_volume *a = NULL, *b = NULL;
    ck_assert_int_eq(dh_volume_read_file(ctx, path, &a), DH_OK);
    ck_assert_int_eq(dh_volume_read_memory(ctx, buf, n, "upload.dcm", &b), DH_OK);
    ck_assert_uint_eq(dh_volume_sample_count(b), 128 * 128);
    ck_assert(memcmp(dh_volume_data(a), dh_volume_data(b), 128 * 128 * 2) == 0);
    ck_assert_str_eq(dh_volume_slice_source(b, 0), "upload.dcm");
    ck_assert(dh_volume_rescale_intercept(b) == -1024);
    dh_volume_free(b);
    /* A cut buffer fails with a message naming the buffer. */
    ck_assert_int_ne(dh_volume_read_memory(ctx, buf, n / 2, "upload.dcm", &b), DH_OK);
    ck_assert_ptr_null(b);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "upload.dcm"));
    ck_assert_int_eq(dh_volume_read_memory(ctx, NULL, 0, "x", &b), DH_ERR_INVALID_ARGUMENT);
    dh_volume_free(a);
    dh_ctx_free(ctx);
}
END_TEST

/* One file read with the default codec thread and with four gives the same values. */
static void check_codec_threads_agree(const char *file)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", file); /* dh_test_shared's buffer is not kept */
    dh_ctx *ctx = dh_ctx_create();
    dh_volume *one = NULL, *four = NULL;
    ck_assert_int_eq(dh_ctx_set_codec_threads(ctx, 0), DH_OK);
    ck_assert_msg(dh_volume_read_file(ctx, path, &one) == DH_OK, "%s", dh_ctx_error(ctx));
    ck_assert_int_eq(dh_ctx_set_codec_threads(ctx, 4), DH_OK);
    ck_assert_msg(dh_volume_read_file(ctx, path, &four) == DH_OK, "%s", dh_ctx_error(ctx));
    ck_assert_uint_eq(dh_volume_sample_count(one), dh_volume_sample_count(four));
    ck_assert(memcmp(dh_volume_data(one), dh_volume_data(four),
                     dh_volume_sample_count(one) * 2) == 0);
    dh_volume_free(one);
    dh_volume_free(four);
    dh_ctx_free(ctx);
}

/* More codec threads read the same values as the default one; out-of-range counts are refused. */
START_TEST(test_codec_threads)
{
    dh_ctx *ctx = dh_ctx_create();
    ck_assert_int_eq(dh_ctx_set_codec_threads(ctx, -1), DH_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(dh_ctx_set_codec_threads(ctx, 65), DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "codec threads must be 0..64, not 65"));
    dh_ctx_free(ctx);
    check_codec_threads_agree(DH_SAMPLE_DATA "/ct_phantom_jpeg2000/IM0001.dcm");
}
END_TEST

/* The same on a real JPEG 2000 file of ../shared (dicom-jpeg2000 beside dicom). */
START_TEST(test_codec_threads_real_file)
{
    check_codec_threads_agree(dh_test_shared("../dicom-jpeg2000/pydicom-data_RG3_J2KR.dcm"));
}
END_TEST

/* A folder with the series, a truncated file, a README and a DICOMDIR: the series loads, the
 * truncated file is a failure naming it, the README and DICOMDIR are skipped. */
START_TEST(test_directory_with_bad_file)
{
    char *dir = dh_test_temp_dir("/tmp/dh_test_volume");
    dh_test_shell("mkdir -p %s/sub && cp %s/*.dcm %s/sub/", dir, dh_test_shared("series/ct5n"), dir);
    dh_test_shell("cp %s %s/sub/zz_truncated.dcm", dh_test_shared("malformed/pydicom_MR_truncated.dcm"),
        dir);
    dh_test_shell("echo 'scanned on Tuesday' > %s/README && cp %s %s/DICOMDIR", dir,
        dh_test_shared("series/ct5n/2062.dcm"), dir);
    dh_ctx *ctx = dh_ctx_create();
    dh_volume_set *set = NULL;
    const char *paths[] = {dir};
    ck_assert_int_eq(dh_volume_set_load(ctx, paths, 1, &set), DH_OK);
    ck_assert_uint_eq(dh_volume_set_count(set), 1);
    ck_assert_uint_eq(dh_volume_slices(dh_volume_set_volume(set, 0)), 5);
    ck_assert_uint_eq(dh_volume_set_failure_count(set), 1);
    ck_assert_ptr_nonnull(strstr(dh_volume_set_failure_path(set, 0), "zz_truncated.dcm"));
    ck_assert_ptr_nonnull(strstr(dh_volume_set_failure_message(set, 0), "zz_truncated.dcm"));
    ck_assert_int_eq(dh_volume_set_failure_status(set, 0), DH_ERR_MALFORMED);
    ck_assert_uint_eq(dh_volume_set_skipped_count(set), 2);
    ck_assert_ptr_nonnull(strstr(dh_volume_set_skipped_path(set, 0), "DICOMDIR"));
    ck_assert_ptr_nonnull(strstr(dh_volume_set_skipped_path(set, 1), "README"));
    dh_volume_set_free(set);

    /* A path that does not exist is a failure too, beside the series. */
    const char *two[] = {dir, "/nonexistent/dh_test.dcm"};
    ck_assert_int_eq(dh_volume_set_load(ctx, two, 2, &set), DH_OK);
    ck_assert_uint_eq(dh_volume_set_count(set), 1);
    ck_assert_uint_eq(dh_volume_set_failure_count(set), 2);
    dh_volume_set_free(set);
    ck_assert_int_eq(dh_volume_set_load(ctx, two, 0, &set), DH_ERR_INVALID_ARGUMENT);
    dh_test_remove_tree(dir);
    free(dir);
    dh_ctx_free(ctx);
}
END_TEST

/* One slice with other rows, or another BitsStored: the series fails with both files named. */
START_TEST(test_mismatch)
{
    if (system("dcmodify --version > /dev/null 2>&1") != 0)
        return; /* DCMTK's tools absent: nothing to make the files with */
    static const char *edits[] = {"(0028,0101)=12", "(0028,0103)=0",
                                  "(0028,1053)=2"}; /* bits stored, signedness, rescale */
    for (int e = 0; e < 3; e++) {
        char *dir = dh_test_temp_dir("/tmp/dh_test_volume");
        dh_test_shell("cp %s/*.dcm %s/", dh_test_shared("series/ct5n"), dir);
        dh_test_shell("dcmodify -nb -m '%s' %s/2693.dcm > /dev/null", edits[e], dir);
        dh_ctx *ctx = dh_ctx_create();
        dh_volume_set *set = NULL;
        const char *paths[] = {dir};
        ck_assert_int_eq(dh_volume_set_load(ctx, paths, 1, &set), DH_OK);
        ck_assert_uint_eq(dh_volume_set_count(set), 0);
        ck_assert_uint_eq(dh_volume_set_failure_count(set), 1);
        ck_assert_int_eq(dh_volume_set_failure_status(set, 0), DH_ERR_MISMATCH);
        const char *msg = dh_volume_set_failure_message(set, 0);
        ck_assert_msg(strstr(msg, "2693.dcm") && strstr(msg, "2062.dcm"), "message: %s", msg);
        dh_volume_set_free(set);
        dh_ctx_free(ctx);
        dh_test_remove_tree(dir);
        free(dir);
    }
}
END_TEST

/* The same instance twice (a copy of one file) is kept once with a warning. */
START_TEST(test_repeated_instance)
{
    char *dir = dh_test_temp_dir("/tmp/dh_test_volume");
    dh_test_shell("cp %s/*.dcm %s/ && cp %s/2062.dcm %s/copy_of_2062.dcm", dh_test_shared("series/ct5n"),
        dir, dh_test_shared("series/ct5n"), dir);
    dh_ctx *ctx = dh_ctx_create();
    dh_volume_set *set = NULL;
    const char *paths[] = {dir};
    ck_assert_int_eq(dh_volume_set_load(ctx, paths, 1, &set), DH_OK);
    ck_assert_uint_eq(dh_volume_set_count(set), 1);
    const dh_volume *v = dh_volume_set_volume(set, 0);
    ck_assert_uint_eq(dh_volume_slices(v), 5);
    ck_assert_uint_eq(dh_volume_warning_count(v), 1);
    ck_assert_ptr_nonnull(strstr(dh_volume_warning(v, 0), "copy_of_2062.dcm"));
    dh_volume_set_free(set);
    dh_ctx_free(ctx);
    dh_test_remove_tree(dir);
    free(dir);
}
END_TEST

/* A Modality LUT Sequence replaces the rescale: the real file maps its signed 12-bit values
 * through 4096 entries from -2048 (0, 16, 32, ... 65535), with nothing left to warn about. */
START_TEST(test_modality_lut_applied)
{
    dh_ctx *ctx = dh_ctx_create();
    dh_volume *v = NULL;
    ck_assert_int_eq(dh_volume_read_file(ctx, dh_test_shared("lut/pydicom-data_mlut_18.dcm"), &v),
                     DH_OK);
    ck_assert_uint_eq(dh_volume_warning_count(v), 0);
    int32_t first = 0;
    uint32_t entries = 0, bits = 0;
    const uint16_t *data = NULL;
    ck_assert_int_eq(dh_volume_modality_lut(v, &first, &entries, &bits, &data), 1);
    ck_assert_int_eq(first, -2048);
    ck_assert_uint_eq(entries, 4096);
    ck_assert_uint_eq(bits, 16);
    ck_assert(dh_volume_modality_value(v, -2048) == data[0]);
    ck_assert(dh_volume_modality_value(v, -3000) == data[0]); /* below: the first entry */
    ck_assert(dh_volume_modality_value(v, 2047) == data[4095]);
    ck_assert(dh_volume_modality_value(v, 0) == data[2048]);
    double lo, hi;
    dh_volume_modality_range(v, &lo, &hi);
    ck_assert(lo == 0 && hi == 65535);
    dh_volume_free(v);
    /* a file without the sequence has none */
    ck_assert_int_eq(dh_volume_read_file(ctx, dh_test_shared("pydicom_CT_small.dcm"), &v), DH_OK);
    ck_assert_int_eq(dh_volume_modality_lut(v, NULL, NULL, NULL, NULL), 0);
    ck_assert(dh_volume_modality_value(v, 100) == 100 * dh_volume_rescale_slope(v) +
                                                      dh_volume_rescale_intercept(v));
    dh_volume_free(v);
    dh_ctx_free(ctx);
}
END_TEST

int main(int argc, char **argv)
{
    const dh_test synthetic[] = {DH_TEST(test_codec_threads)};
    const dh_test real_files[] = {DH_TEST(test_series_order),
                                  DH_TEST(test_series_directory_uneven),
                                  DH_TEST(test_multiframe),
                                  DH_TEST(test_read_memory),
                                  DH_TEST(test_codec_threads_real_file),
                                  DH_TEST(test_directory_with_bad_file),
                                  DH_TEST(test_mismatch),
                                  DH_TEST(test_repeated_instance),
                                  DH_TEST(test_modality_lut_applied)};
    return dh_test_main(argc, argv, "volume", 60, DH_TESTS(synthetic), DH_TESTS(real_files));
}
