// SPDX-License-Identifier: MIT
/*
 * test_dicom_write.c: the DICOM writer (dicom/dh_dicom_write.h). Random stored values of several
 * pixel layouts go out in every transfer syntax and must come back identical through the reader;
 * the words of the explicit little endian file are checked straight from its bytes (value at
 * HighBit's place, zero or sign bits above), independently of DCMTK, and DCMTK's own decoding
 * tools (dcmdrle, dcmdjpeg, dcmdjpls) must find the same values in the compressed files, whose
 * JPEG-LS streams CharLS 2 wrote, not DCMTK. Also: UIDs, refusal to
 * replace a file, no temporary file left behind, rejected values and UIDs, copied tags.
 */
#define _POSIX_C_SOURCE 200809L
#include "dh_dicom.h"
#include "dicomhist.h"
#include "dh_dicom_write.h"
#include "test_support.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *dir; /* the current test's folder, under the build folder */

static void make_dir(void) { dir = dh_test_temp_dir(DH_BUILD_DIR "/test_dicom_write"); }

static void remove_dir(void)
{
    dh_test_remove_tree(dir);
    free(dir);
    dir = NULL;
}

static size_t entries(void)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static long file_bytes(const char *path, uint8_t **out)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *out = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(*out);
    ck_assert_uint_eq(fread(*out, 1, (size_t)n, f), (size_t)n);
    (*out)[n] = 0;
    fclose(f);
    return n;
}

static char uid_buf[5][DH_DICOM_UID_LEN];

static void describe(dh_dicom_write_image *im, uint32_t rows, uint32_t cols, const void *pixels)
{
    dh_dicom_write_image_init(im);
    im->rows = rows;
    im->columns = cols;
    im->pixels = pixels;
    for (uint32_t i = 0; i < 4; ++i)
        ck_assert_int_eq(dh_dicom_uid_seeded(uid_buf[i], 7, i + 1), DH_OK);
    im->sop_class_uid = "1.2.840.10008.5.1.4.1.1.7"; /* Secondary Capture */
    im->sop_instance_uid = uid_buf[0];
    im->study_uid = uid_buf[1];
    im->series_uid = uid_buf[2];
    im->modality = "OT";
    im->patient_name = "Test^Writer";
}

START_TEST(uids_are_valid_and_seeded_ones_repeat)
{
    char a[DH_DICOM_UID_LEN], b[DH_DICOM_UID_LEN], c[DH_DICOM_UID_LEN];
    ck_assert_int_eq(dh_dicom_uid_seeded(a, 1, 2), DH_OK);
    ck_assert_int_eq(dh_dicom_uid_seeded(b, 1, 2), DH_OK);
    ck_assert_int_eq(dh_dicom_uid_seeded(c, 12, 2), DH_OK);
    ck_assert_str_eq(a, b);
    ck_assert_str_ne(a, c);
    ck_assert_str_eq(a, DH_DICOM_UID_ROOT ".2.1.2");
    ck_assert_int_eq(dh_dicom_uid_seeded(c, 999999, 999999), DH_OK);
    ck_assert_uint_le(strlen(c), 64);
    ck_assert_int_eq(dh_dicom_uid_seeded(c, 4294967295u, 4294967295u), DH_ERR_INVALID_ARGUMENT);

    ck_assert_int_eq(dh_dicom_uid_random(a), DH_OK);
    ck_assert_int_eq(dh_dicom_uid_random(b), DH_OK);
    ck_assert_str_ne(a, b);
    for (const char *u = a;; u = b) {
        ck_assert_uint_le(strlen(u), 64);
        ck_assert_int_eq(strncmp(u, DH_DICOM_UID_ROOT ".1.", strlen(DH_DICOM_UID_ROOT) + 3), 0);
        const char *last = u + strlen(DH_DICOM_UID_ROOT) + 3;
        ck_assert(last[0] >= '1' && last[0] <= '9'); /* no leading zero */
        ck_assert_uint_eq(strspn(last, "0123456789"), strlen(last));
        if (u == b)
            break;
    }
}
END_TEST

/* Pixel layouts: bits allocated, stored, high bit, signed. */
static const struct layout {
    uint32_t allocated, stored, high_bit;
    int is_signed;
} layouts[] = {
    {16, 12, 11, 0}, {16, 12, 11, 1}, {16, 10, 13, 1}, {16, 16, 15, 0},
    {16, 16, 15, 1}, {16, 9, 8, 0},   {8, 8, 7, 0},
};

static const dh_dicom_syntax syntaxes[] = {
    DH_DICOM_EXPLICIT_LE, DH_DICOM_IMPLICIT_LE, DH_DICOM_EXPLICIT_BE, DH_DICOM_DEFLATED_LE,
    DH_DICOM_RLE,         DH_DICOM_JPEG_LOSSLESS, DH_DICOM_JPEG_LS_LOSSLESS,
    DH_DICOM_JPEG_2000_LOSSLESS,
};

static void assert_same_pixels(const dh_dicom_image *back, const uint16_t *pixels, int n,
                               const char *what)
{
    int first = -1;
    for (int i = 0; i < n && first < 0; ++i)
        if (((const uint16_t *)back->pixels)[i] != pixels[i])
            first = i;
    ck_assert_msg(first < 0, "%s: sample %d reads %u, written %u", what, first,
                  first < 0 ? 0 : ((const uint16_t *)back->pixels)[first],
                  first < 0 ? 0 : pixels[first]);
}

/* The compressed file decompressed by DCMTK's tool for its syntax, where installed, then read. */
static void decode_with_dcmtk(const char *path, dh_dicom_syntax syntax, const uint16_t *pixels,
                              int n)
{
    const char *tool = syntax == DH_DICOM_RLE              ? "dcmdrle"
                       : syntax == DH_DICOM_JPEG_LOSSLESS    ? "dcmdjpeg"
                       : syntax == DH_DICOM_JPEG_LS_LOSSLESS ? "dcmdjpls"
                                                             : NULL;
    if (!tool)
        return; /* a syntax DCMTK's tools do not decode: nothing to compare with */
    dh_test_need_tool(tool);
    char native[600], cmd[1400], msg[DH_DICOM_MSG_LEN];
    snprintf(native, sizeof native, "%s.native", path);
    snprintf(cmd, sizeof cmd, "%s %s %s >/dev/null 2>&1", tool, path, native);
    ck_assert_msg(system(cmd) == 0, "'%s' failed", cmd);
    dh_dicom_image *img = NULL;
    dh_status st = dh_dicom_read_file(native, 1, &img, msg, sizeof msg);
    ck_assert_msg(st == DH_OK, "%s: %s", native, msg);
    ck_assert_str_eq(img->transfer_syntax_uid, "1.2.840.10008.1.2.1");
    assert_same_pixels(img, pixels, n, native);
    dh_dicom_image_free(img);
    unlink(native);
}

START_TEST(every_layout_round_trips_in_every_syntax)
{
    const struct layout *L = &layouts[_i];
    enum { ROWS = 13, COLS = 17, FRAMES = 3, N = ROWS * COLS * FRAMES };
    int32_t lo = L->is_signed ? -(1 << (L->stored - 1)) : 0;
    int32_t hi = L->is_signed ? (1 << (L->stored - 1)) - 1 : (1 << L->stored) - 1;
    uint16_t pixels[N];
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 1000 + (uint64_t)_i);
    for (int i = 0; i < N; ++i) {
        int32_t v = lo + (int32_t)dh_test_rng_below(&rng, (uint32_t)(hi - lo + 1));
        if (i == 0)
            v = lo; /* the extremes are always there */
        if (i == 1)
            v = hi;
        pixels[i] = (uint16_t)v; /* int16_t bits when signed */
    }
    dh_dicom_write_image im;
    describe(&im, ROWS, COLS, pixels);
    im.frames = FRAMES;
    im.bits_allocated = L->allocated;
    im.bits_stored = L->stored;
    im.high_bit = L->high_bit;
    im.is_signed = L->is_signed;

    make_dir();
    char msg[DH_DICOM_MSG_LEN], path[512];
    for (size_t s = 0; s < sizeof syntaxes / sizeof syntaxes[0]; ++s) {
        snprintf(path, sizeof path, "%s/image_%zu.dcm", dir, s);
        dh_status st = dh_dicom_write_file(&im, path, syntaxes[s], 0, msg, sizeof msg);
        ck_assert_msg(st == DH_OK, "layout %d syntax %zu: %s", _i, s, msg);
        dh_dicom_image *back = NULL;
        st = dh_dicom_read_file(path, 1, &back, msg, sizeof msg);
        ck_assert_msg(st == DH_OK, "layout %d syntax %zu: read back: %s", _i, s, msg);
        ck_assert_uint_eq(back->format.rows, ROWS);
        ck_assert_uint_eq(back->format.columns, COLS);
        ck_assert_uint_eq(back->frames, FRAMES);
        ck_assert_uint_eq(back->format.bits_stored, L->stored);
        ck_assert_int_eq(back->format.is_signed, L->is_signed);
        ck_assert_str_eq(back->transfer_syntax_uid, dh_dicom_syntax_uid(syntaxes[s]));
        assert_same_pixels(back, pixels, N, path);
        dh_dicom_image_free(back);
        decode_with_dcmtk(path, syntaxes[s], pixels, N);

        if (syntaxes[s] == DH_DICOM_EXPLICIT_LE) {
            /* PixelData is the last element: its value is the file's last bytes. */
            uint8_t *bytes;
            long n = file_bytes(path, &bytes);
            size_t width = L->allocated / 8;
            const uint8_t *value = bytes + n - (long)(N * width + (N * width) % 2);
            unsigned shift = L->high_bit + 1 - L->stored;
            for (int i = 0; i < N; ++i) {
                uint32_t word = width == 2 ? (uint32_t)(value[2 * i] | value[2 * i + 1] << 8)
                                           : value[i];
                int32_t v = L->is_signed ? (int16_t)pixels[i] : pixels[i];
                /* Expected: the value at HighBit's place; above it zeros, or sign copies. */
                int64_t expect = ((int64_t)v * (1 << shift)) & ((1 << L->allocated) - 1);
                ck_assert_msg(word == (uint32_t)expect, "sample %d: word %x, expected %x", i,
                              word, (unsigned)expect);
            }
            free(bytes);
        }
    }
    ck_assert_uint_eq(entries(), sizeof syntaxes / sizeof syntaxes[0]); /* no temporary left */
    remove_dir();
}
END_TEST

START_TEST(never_replaces_unless_asked)
{
    uint16_t a[4] = {1, 2, 3, 4}, b[4] = {9, 9, 9, 9};
    dh_dicom_write_image im;
    char msg[DH_DICOM_MSG_LEN], path[512];
    make_dir();
    snprintf(path, sizeof path, "%s/once.dcm", dir);
    describe(&im, 2, 2, a);
    ck_assert_int_eq(dh_dicom_write_file(&im, path, DH_DICOM_EXPLICIT_LE, 0, msg, sizeof msg),
                     DH_OK);
    im.pixels = b;
    ck_assert_int_eq(dh_dicom_write_file(&im, path, DH_DICOM_RLE, 0, msg, sizeof msg), DH_ERR_IO);
    ck_assert_ptr_nonnull(strstr(msg, "once.dcm"));
    dh_dicom_image *back = NULL;
    ck_assert_int_eq(dh_dicom_read_file(path, 1, &back, msg, sizeof msg), DH_OK);
    ck_assert_int_eq(memcmp(back->pixels, a, sizeof a), 0); /* untouched */
    dh_dicom_image_free(back);
    ck_assert_int_eq(dh_dicom_write_file(&im, path, DH_DICOM_RLE, 1, msg, sizeof msg), DH_OK);
    ck_assert_int_eq(dh_dicom_read_file(path, 1, &back, msg, sizeof msg), DH_OK);
    ck_assert_int_eq(memcmp(back->pixels, b, sizeof b), 0);
    dh_dicom_image_free(back);
    ck_assert_uint_eq(entries(), 1);

    /* A folder that does not exist: an I/O error naming the path, nothing created. */
    char missing[600];
    snprintf(missing, sizeof missing, "%s/no/such/folder.dcm", dir);
    ck_assert_int_eq(dh_dicom_write_file(&im, missing, DH_DICOM_EXPLICIT_LE, 0, msg, sizeof msg),
                     DH_ERR_IO);
    ck_assert_ptr_nonnull(strstr(msg, "folder.dcm"));
    remove_dir();
}
END_TEST

START_TEST(rejects_bad_values_and_uids)
{
    uint16_t px[4] = {0, 4095, 4096, 1}; /* 4096 does not fit in 12 bits */
    dh_dicom_write_image im;
    char msg[DH_DICOM_MSG_LEN], path[512];
    dh_dicom_dataset *ds = (dh_dicom_dataset *)&im; /* must be reset to NULL on failure */
    make_dir();
    snprintf(path, sizeof path, "%s/bad.dcm", dir);
    describe(&im, 2, 2, px);
    im.bits_stored = 12;
    im.high_bit = 11;
    ck_assert_int_eq(dh_dicom_dataset_build(&im, &ds, msg, sizeof msg), DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(ds);
    ck_assert_ptr_nonnull(strstr(msg, "sample 2"));

    int16_t spx[4] = {-2048, 2047, -2049, 0}; /* -2049 does not fit in 12 signed bits */
    im.pixels = spx;
    im.is_signed = 1;
    ck_assert_int_eq(dh_dicom_write_file(&im, path, DH_DICOM_EXPLICIT_LE, 0, msg, sizeof msg),
                     DH_ERR_INVALID_ARGUMENT);
    spx[2] = -1;
    im.series_uid = "1.2.abc";
    ck_assert_int_eq(dh_dicom_write_file(&im, path, DH_DICOM_EXPLICIT_LE, 0, msg, sizeof msg),
                     DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(msg, "SeriesInstanceUID"));
    im.series_uid = uid_buf[2];
    im.high_bit = 16;
    ck_assert_int_eq(dh_dicom_write_file(&im, path, DH_DICOM_EXPLICIT_LE, 0, msg, sizeof msg),
                     DH_ERR_INVALID_ARGUMENT);
    im.high_bit = 11;
    ck_assert_int_eq(dh_dicom_write_file(&im, path, (dh_dicom_syntax)99, 0, msg, sizeof msg),
                     DH_ERR_INVALID_ARGUMENT);
    ck_assert_uint_eq(entries(), 0); /* nothing written by any refusal */
    ck_assert_int_eq(dh_dicom_write_file(&im, path, DH_DICOM_EXPLICIT_LE, 0, msg, sizeof msg),
                     DH_OK);
    remove_dir();
}
END_TEST

START_TEST(copies_patient_and_study_and_sets_tags)
{
    uint16_t px[4] = {5, 6, 7, 8};
    dh_dicom_write_image im;
    char msg[DH_DICOM_MSG_LEN], source[512], derived[512];
    make_dir();
    snprintf(source, sizeof source, "%s/source.dcm", dir);
    snprintf(derived, sizeof derived, "%s/derived.dcm", dir);
    describe(&im, 2, 2, px);
    im.patient_name = "Source^Patient";
    im.patient_id = "SRC-42";
    ck_assert_int_eq(dh_dicom_write_file(&im, source, DH_DICOM_EXPLICIT_LE, 0, msg, sizeof msg),
                     DH_OK);

    char other_study[DH_DICOM_UID_LEN];
    ck_assert_int_eq(dh_dicom_uid_seeded(other_study, 8, 1), DH_OK);
    im.patient_name = "Someone^Else";
    im.patient_id = "OTHER";
    im.study_uid = other_study;
    dh_dicom_dataset *ds = NULL;
    ck_assert_int_eq(dh_dicom_dataset_build(&im, &ds, msg, sizeof msg), DH_OK);
    ck_assert_int_eq(dh_dicom_dataset_copy_patient_study(ds, source, msg, sizeof msg), DH_OK);
    ck_assert_int_eq(dh_dicom_dataset_put_string(ds, 0x0008, 0x2111, "Equalized by a test", msg,
                                                 sizeof msg),
                     DH_OK);
    ck_assert_int_eq(dh_dicom_dataset_put_string(ds, 0x0008, 0x0060, NULL, msg, sizeof msg), DH_OK);
    ck_assert_int_eq(dh_dicom_dataset_save(ds, derived, DH_DICOM_EXPLICIT_LE, 0, msg, sizeof msg),
                     DH_OK);
    dh_dicom_dataset_free(ds);

    uint8_t *bytes;
    long n = file_bytes(derived, &bytes);
    /* Strings are searched in the raw bytes: the reader does not expose these tags. */
    int has_source = 0, has_other = 0, has_study = 0, has_other_study = 0, has_desc = 0;
    for (long i = 0; i < n; ++i) {
        const char *p = (const char *)bytes + i;
        has_source |= strncmp(p, "Source^Patient", 14) == 0;
        has_other |= strncmp(p, "Someone^Else", 12) == 0;
        has_study |= strncmp(p, uid_buf[1], strlen(uid_buf[1])) == 0;
        has_other_study |= strncmp(p, other_study, strlen(other_study)) == 0;
        has_desc |= strncmp(p, "Equalized by a test", 19) == 0;
    }
    free(bytes);
    ck_assert(has_source && !has_other);
    ck_assert(has_study && !has_other_study);
    ck_assert(has_desc);
    dh_dicom_image *back = NULL;
    ck_assert_int_eq(dh_dicom_read_file(derived, 1, &back, msg, sizeof msg), DH_OK);
    ck_assert_str_eq(back->study_uid, uid_buf[1]);
    ck_assert_str_eq(back->modality, ""); /* removed by the NULL value */
    dh_dicom_image_free(back);

    ck_assert_int_eq(dh_dicom_dataset_build(&im, &ds, msg, sizeof msg), DH_OK);
    ck_assert_int_ne(dh_dicom_dataset_copy_patient_study(ds, "/no/such/file.dcm", msg, sizeof msg),
                     DH_OK);
    ck_assert_ptr_nonnull(strstr(msg, "/no/such/file.dcm"));
    dh_dicom_dataset_free(ds);
    remove_dir();
}
END_TEST

/* dh_dicom_dataset_save_unsynced (session 21: a series' folder flushed once, by the caller):
 * the same file as dh_dicom_dataset_save, the same refusal of an existing name, no temporary file
 * left; dh_dicom_sync_folder_of takes any path, or none, without failing (the folder flush
 * itself is counted by test_derived_sync). */
START_TEST(unsynced_save_writes_the_same_file)
{
    uint16_t px[6] = {1, 4000, 7, 65535, 0, 123};
    char msg[DH_DICOM_MSG_LEN], paths[2][512];
    make_dir();
    for (int i = 0; i < 2; i++)
        snprintf(paths[i], sizeof paths[i], "%s/%s.dcm", dir, i ? "unsynced" : "synced");
    const char *synced = paths[0], *unsynced = paths[1];
    dh_dicom_write_image im;
    describe(&im, 2, 3, px);
    dh_dicom_dataset *ds = NULL;
    ck_assert_int_eq(dh_dicom_dataset_build(&im, &ds, msg, sizeof msg), DH_OK);
    ck_assert_int_eq(dh_dicom_dataset_save(ds, synced, DH_DICOM_EXPLICIT_LE, 0, msg, sizeof msg),
                     DH_OK);
    ck_assert_int_eq(
        dh_dicom_dataset_save_unsynced(ds, unsynced, DH_DICOM_EXPLICIT_LE, 0, msg, sizeof msg),
        DH_OK);
    uint8_t *a, *b;
    long na = file_bytes(synced, &a), nb = file_bytes(unsynced, &b);
    ck_assert_int_gt(na, 132);
    ck_assert_int_eq(na, nb);
    ck_assert_int_eq(memcmp(a, b, (size_t)na), 0);
    free(a);
    free(b);
    /* An existing name is refused unless replace, as by dh_dicom_dataset_save. */
    ck_assert_int_ne(
        dh_dicom_dataset_save_unsynced(ds, unsynced, DH_DICOM_EXPLICIT_LE, 0, msg, sizeof msg),
        DH_OK);
    ck_assert_ptr_nonnull(strstr(msg, "already exists"));
    ck_assert_int_eq(
        dh_dicom_dataset_save_unsynced(ds, unsynced, DH_DICOM_EXPLICIT_LE, 1, msg, sizeof msg),
        DH_OK);
    dh_dicom_dataset_free(ds);
    ck_assert_uint_eq(entries(), 2); /* no temporary file left */
    dh_dicom_sync_folder_of(unsynced);
    dh_dicom_sync_folder_of("bare-name.dcm"); /* the current folder */
    dh_dicom_sync_folder_of(NULL);
    dh_dicom_sync_folder_of("");
    dh_dicom_sync_folder_of("/no/such/folder/file.dcm");
    remove_dir();
}
END_TEST

int main(void)
{
    const dh_test tests[] = {DH_TEST(uids_are_valid_and_seeded_ones_repeat),
                             DH_TEST_LOOP(every_layout_round_trips_in_every_syntax,
                                          (int)(sizeof layouts / sizeof layouts[0])),
                             DH_TEST(never_replaces_unless_asked),
                             DH_TEST(rejects_bad_values_and_uids),
                             DH_TEST(copies_patient_and_study_and_sets_tags),
                             DH_TEST(unsynced_save_writes_the_same_file)};
    return dh_test_run(dh_test_suite("dicom_write", 120, DH_TESTS(tests)));
}
