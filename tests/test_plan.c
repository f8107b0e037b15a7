// SPDX-License-Identifier: MIT
/*
 * test_plan.c: the batch API over a tree made from the sample data: what a scan finds (series,
 * failed, skipped and repeated files, `cp -r` output names), one series read with one thread and
 * with several (the same volume, the same as dh_volume_set_load's), and the writers' naming,
 * replacement and name-based UIDs (the same work twice gives the same bytes).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dicomhist.h"
#include "test_support.h"

static char *tree; /* the temporary folder of the current test */

/* tree/in: ct/ (the phantom series and a repeat of its first file), xray.dcm, broken.dcm (cut
 * in half), notes.txt and DICOMDIR. */
static void make_tree(void)
{
    tree = dh_test_temp_dir("/tmp/dh-plan");
    dh_test_shell("mkdir -p %s/in && cp -r %s/ct_phantom %s/in/ct && cp %s/in/ct/IM0001.dcm "
        "%s/in/ct/zz-again.dcm && cp %s/xray_projection.dcm %s/in/xray.dcm && "
        "head -c 3000 %s/xray_projection.dcm > %s/in/broken.dcm && echo notes > %s/in/notes.txt "
        "&& printf 'DICOMDIR' > %s/in/DICOMDIR",
        tree, DH_SAMPLE_DATA, tree, tree, tree, DH_SAMPLE_DATA, tree, DH_SAMPLE_DATA, tree, tree,
        tree);
}

static void remove_tree(void)
{
    dh_test_remove_tree(tree);
    free(tree);
}

static size_t find_file(const dh_plan *plan, const char *suffix)
{
    for (size_t i = 0; i < dh_plan_file_count(plan); i++) {
        const char *p = dh_plan_file_path(plan, i);
        size_t n = strlen(p), m = strlen(suffix);
        if (n >= m && strcmp(p + n - m, suffix) == 0)
            return i;
    }
    ck_abort_msg("%s not in the plan", suffix);
    return 0;
}

START_TEST(scan_finds_series_and_the_rest)
{
    char in[4096];
    snprintf(in, sizeof in, "%s/in", tree);
    const char *paths[] = {in};
    dh_ctx *ctx = dh_ctx_create();
    dh_plan *plan = NULL;
    ck_assert_int_eq(dh_plan_scan(ctx, paths, 1, &plan), DH_OK);
    ck_assert_uint_eq(dh_plan_series_count(plan), 2); /* the CT series, the X-ray file */
    size_t ct = dh_plan_file_series(plan, find_file(plan, "/ct/IM0001.dcm"));
    size_t xray = dh_plan_file_series(plan, find_file(plan, "/xray.dcm"));
    ck_assert_uint_lt(ct, 2);
    ck_assert_uint_lt(xray, 2);
    ck_assert_uint_ne(ct, xray);
    ck_assert_str_eq(dh_plan_series_modality(plan, ct), "CT");
    size_t again = find_file(plan, "/ct/zz-again.dcm");
    ck_assert_int_eq(dh_plan_file_state_of(plan, again), DH_PLAN_FILE_REPEATED);
    ck_assert_ptr_nonnull(strstr(dh_plan_file_message(plan, again), "/ct/IM0001.dcm"));
    ck_assert_uint_eq(dh_plan_file_series(plan, again), ct);
    size_t broken = find_file(plan, "/broken.dcm");
    ck_assert_int_eq(dh_plan_file_state_of(plan, broken), DH_PLAN_FILE_FAILED);
    ck_assert_int_ne(dh_plan_file_status(plan, broken), DH_OK);
    ck_assert_int_eq(dh_plan_file_state_of(plan, find_file(plan, "/notes.txt")),
                     DH_PLAN_FILE_SKIPPED);
    ck_assert_str_eq(dh_plan_file_message(plan, find_file(plan, "/notes.txt")), "not DICOM");
    ck_assert_int_eq(dh_plan_file_state_of(plan, find_file(plan, "/DICOMDIR")),
                     DH_PLAN_FILE_SKIPPED);
    /* cp -r placement: the operand's name, then the path below it. */
    ck_assert_str_eq(dh_plan_file_output_name(plan, find_file(plan, "/ct/IM0001.dcm")),
                     "in/ct/IM0001.dcm");
    ck_assert_uint_eq(dh_plan_file_size(plan, broken), 3000);
    /* Files of a series in volume order, the repeat left out. */
    size_t n = dh_plan_series_file_count(plan, ct);
    struct stat st;
    ck_assert_int_eq(stat(DH_SAMPLE_DATA "/ct_phantom", &st), 0);
    for (size_t k = 0; k < n; k++)
        ck_assert_int_eq(dh_plan_file_state_of(plan, dh_plan_series_file(plan, ct, k)),
                         DH_PLAN_FILE_SERIES);
    ck_assert_uint_gt(dh_plan_series_sample_bytes(plan, ct), 0);
    dh_plan_free(plan);

    /* A file given directly is named by itself. */
    char file[4096];
    snprintf(file, sizeof file, "%s/in/xray.dcm", tree);
    const char *one[] = {file};
    ck_assert_int_eq(dh_plan_scan(ctx, one, 1, &plan), DH_OK);
    ck_assert_str_eq(dh_plan_file_output_name(plan, 0), "xray.dcm");
    dh_plan_free(plan);
    dh_ctx_free(ctx);
}
END_TEST

static void assert_same_volume(const dh_volume *a, const dh_volume *b)
{
    ck_assert_uint_eq(dh_volume_slices(a), dh_volume_slices(b));
    ck_assert_uint_eq(dh_volume_sample_count(a), dh_volume_sample_count(b));
    ck_assert_int_eq(memcmp(dh_volume_data(a), dh_volume_data(b),
                            dh_volume_sample_count(a) * 2), 0);
    for (uint32_t s = 0; s < dh_volume_slices(a); s++)
        ck_assert_str_eq(dh_volume_slice_source(a, s), dh_volume_slice_source(b, s));
    ck_assert_uint_eq(dh_volume_warning_count(a), dh_volume_warning_count(b));
    ck_assert_str_eq(dh_volume_path(a), dh_volume_path(b));
}

START_TEST(series_load_same_with_any_threads)
{
    char in[4096];
    snprintf(in, sizeof in, "%s/in", tree);
    const char *paths[] = {in};
    dh_ctx *ctx = dh_ctx_create();
    dh_plan *plan = NULL;
    dh_volume_set *whole = NULL;
    ck_assert_int_eq(dh_plan_scan(ctx, paths, 1, &plan), DH_OK);
    ck_assert_int_eq(dh_volume_set_load(ctx, paths, 1, &whole), DH_OK);
    ck_assert_uint_eq(dh_volume_set_count(whole), dh_plan_series_count(plan));
    ck_assert_uint_eq(dh_volume_set_failure_count(whole), 1); /* broken.dcm */
    ck_assert_uint_eq(dh_volume_set_skipped_count(whole), 2); /* notes.txt, DICOMDIR */
    for (size_t k = 0; k < dh_plan_series_count(plan); k++) {
        dh_volume_set *one = NULL, *four = NULL;
        ck_assert_int_eq(dh_ctx_set_threads(ctx, 1), DH_OK);
        ck_assert_int_eq(dh_plan_load_series(ctx, plan, k, &one), DH_OK);
        ck_assert_int_eq(dh_ctx_set_threads(ctx, 4), DH_OK);
        ck_assert_int_eq(dh_plan_load_series(ctx, plan, k, &four), DH_OK);
        ck_assert_uint_eq(dh_volume_set_count(one), 1);
        ck_assert_uint_eq(dh_volume_set_failure_count(one), 0);
        assert_same_volume(dh_volume_set_volume(one, 0), dh_volume_set_volume(four, 0));
        assert_same_volume(dh_volume_set_volume(one, 0), dh_volume_set_volume(whole, k));
        ck_assert_str_eq(dh_volume_path(dh_volume_set_volume(one, 0)),
                         dh_plan_series_path(plan, k));
        dh_volume_set_free(one);
        dh_volume_set_free(four);
    }
    dh_volume *none = NULL;
    dh_volume_set *bad = NULL;
    (void)none;
    ck_assert_int_eq(dh_plan_load_series(ctx, plan, 99, &bad), DH_ERR_INVALID_ARGUMENT);
    dh_volume_set_free(whole);
    dh_plan_free(plan);
    dh_ctx_free(ctx);
}
END_TEST

/* Read timing (issue 24): off, nothing is counted; on, each file read with its pixels counts
 * once with its bytes as they lie on disk, the times are sane, and the volumes are the same. */
START_TEST(read_timing_counts_every_file)
{
    char in[4096];
    snprintf(in, sizeof in, "%s/in", tree);
    const char *paths[] = {in};
    dh_ctx *ctx = dh_ctx_create();
    dh_plan *plan = NULL;
    dh_read_times t;
    ck_assert_int_eq(dh_plan_scan(ctx, paths, 1, &plan), DH_OK);
    ck_assert_int_eq(dh_ctx_read_times(NULL, &t), DH_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(dh_ctx_read_times(ctx, NULL), DH_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(dh_ctx_set_read_timing(NULL, 1), DH_ERR_INVALID_ARGUMENT);
    uint64_t files = 0, bytes = 0;
    for (size_t k = 0; k < dh_plan_series_count(plan); k++) {
        dh_volume_set *plain = NULL, *timed = NULL;
        ck_assert_int_eq(dh_ctx_set_read_timing(ctx, 0), DH_OK);
        ck_assert_int_eq(dh_plan_load_series(ctx, plan, k, &plain), DH_OK);
        ck_assert_int_eq(dh_ctx_read_times(ctx, &t), DH_OK);
        ck_assert_uint_eq(t.files, 0);
        ck_assert(t.read_seconds == 0 && t.decode_seconds == 0);
        ck_assert_int_eq(dh_ctx_set_read_timing(ctx, 1), DH_OK);
        ck_assert_int_eq(dh_ctx_set_threads(ctx, 1 + (int)(k % 3)), DH_OK);
        ck_assert_int_eq(dh_plan_load_series(ctx, plan, k, &timed), DH_OK);
        assert_same_volume(dh_volume_set_volume(plain, 0), dh_volume_set_volume(timed, 0));
        ck_assert_int_eq(dh_ctx_read_times(ctx, &t), DH_OK);
        size_t n = dh_plan_series_file_count(plan, k);
        uint64_t series_bytes = 0;
        for (size_t i = 0; i < n; i++) {
            struct stat st;
            ck_assert_int_eq(stat(dh_plan_file_path(plan, dh_plan_series_file(plan, k, i)), &st),
                             0);
            series_bytes += (uint64_t)st.st_size;
        }
        ck_assert_uint_eq(t.files, n);
        ck_assert_uint_eq(t.bytes, series_bytes);
        ck_assert(t.read_seconds >= 0 && t.read_cpu_seconds >= 0 && t.decode_seconds > 0 &&
                  t.decode_cpu_seconds >= 0 && t.read_seconds < 60 && t.decode_seconds < 60);
        files += t.files;
        bytes += t.bytes;
        dh_volume_set_free(plain);
        dh_volume_set_free(timed);
    }
    ck_assert_uint_gt(files, 2);
    ck_assert_uint_gt(bytes, 0);
    dh_plan_free(plan);
    dh_ctx_free(ctx);
}
END_TEST

/* The output name the writer asks for: "mirror/<name of the source>". */
static int mirror_name(void *user, const char *source, char *name, size_t size)
{
    (void)user;
    const char *base = strrchr(source, '/');
    snprintf(name, size, "mirror/%s", base ? base + 1 : source);
    return 0;
}

static void count_written(void *user, const char *source, const char *output)
{
    (void)source, (void)output;
    ++*(int *)user;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    char *data = malloc(*len ? *len : 1);
    ck_assert_uint_eq(fread(data, 1, *len, f), *len);
    fclose(f);
    return data;
}

START_TEST(writers_name_replace_and_repeat)
{
    char in[4096], out_a[4096], out_b[4096];
    snprintf(in, sizeof in, "%s/in/ct", tree);
    snprintf(out_a, sizeof out_a, "%s/a", tree);
    snprintf(out_b, sizeof out_b, "%s/b", tree);
    const char *paths[] = {in};
    dh_ctx *ctx = dh_ctx_create();
    dh_volume_set *set = NULL;
    ck_assert_int_eq(dh_volume_set_load(ctx, paths, 1, &set), DH_OK);
    const dh_volume *v = dh_volume_set_volume(set, 0);
    dh_equalize_params ep;
    dh_equalize_params_init(&ep);
    ep.device = DH_DEVICE_CPU;
    dh_equalized *r = NULL;
    ck_assert_int_eq(dh_equalize(ctx, v, &ep, &r), DH_OK);
    int written = 0;
    dh_derive_params wp;
    dh_derive_params_init(&wp);
    wp.uids = DH_UIDS_DERIVED;
    wp.created = 1700000000;
    wp.output_name = mirror_name;
    wp.written = count_written;
    wp.user = &written;
    dh_derived_series *a = NULL, *b = NULL, *c = NULL;
    ck_assert_int_eq(dh_equalized_write_dicom_with(ctx, v, r, out_a, &wp, &a), DH_OK);
    ck_assert_int_eq(dh_equalized_write_dicom_with(ctx, v, r, out_b, &wp, &b), DH_OK);
    ck_assert_int_eq(written, 2 * (int)a->file_count);
    ck_assert_str_eq(a->series_uid, b->series_uid);
    ck_assert(strncmp(a->series_uid, "2.25.", 5) == 0);
    for (size_t i = 0; i < a->file_count; i++) {
        size_t la, lb;
        ck_assert_ptr_nonnull(strstr(a->files[i], "/a/mirror/IM"));
        char *da = slurp(a->files[i], &la), *db = slurp(b->files[i], &lb);
        ck_assert_uint_eq(la, lb);
        ck_assert_msg(memcmp(da, db, la) == 0, "%s and %s differ", a->files[i], b->files[i]);
        free(da), free(db);
    }
    /* Again into a: refused by default, kept when it is the same, replaced when asked. */
    wp.written = NULL;
    ck_assert_int_eq(dh_equalized_write_dicom_with(ctx, v, r, out_a, &wp, &c), DH_ERR_IO);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "already exists"));
    struct stat before, after;
    ck_assert_int_eq(stat(a->files[0], &before), 0);
    wp.existing = DH_EXISTING_KEEP;
    ck_assert_int_eq(dh_equalized_write_dicom_with(ctx, v, r, out_a, &wp, &c), DH_OK);
    ck_assert_int_eq(stat(a->files[0], &after), 0);
    ck_assert_uint_eq(before.st_ino, after.st_ino);
    dh_derived_series_free(c);
    c = NULL;
    wp.existing = DH_EXISTING_REPLACE;
    ck_assert_int_eq(dh_equalized_write_dicom_with(ctx, v, r, out_a, &wp, &c), DH_OK);
    ck_assert_int_eq(stat(a->files[0], &after), 0);
    ck_assert_uint_ne(before.st_ino, after.st_ino);
    dh_derived_series_free(c);
    c = NULL;
    /* Other work into the same place is not "the same": refused under KEEP. */
    wp.existing = DH_EXISTING_KEEP;
    dh_equalized *r16 = NULL;
    ep.output_bits = 16;
    ck_assert_int_eq(dh_equalize(ctx, v, &ep, &r16), DH_OK);
    ck_assert_int_eq(dh_equalized_write_dicom_with(ctx, v, r16, out_a, &wp, &c), DH_ERR_IO);
    /* PNG: kept when the bytes are the same. */
    ck_assert_int_eq(dh_equalized_write_png_with(ctx, v, r, out_a, &wp), DH_OK);
    ck_assert_int_eq(dh_equalized_write_png_with(ctx, v, r, out_a, &wp), DH_OK);
    ck_assert_int_eq(dh_equalized_write_png_with(ctx, v, r16, out_a, &wp), DH_ERR_IO);
    /* A struct of another size is refused. */
    wp.struct_size = 8;
    ck_assert_int_eq(dh_equalized_write_png_with(ctx, v, r, out_a, &wp), DH_ERR_INVALID_ARGUMENT);
    dh_derived_series_free(a);
    dh_derived_series_free(b);
    dh_derived_series_free(c);
    dh_equalized_free(r);
    dh_equalized_free(r16);
    dh_volume_set_free(set);
    dh_ctx_free(ctx);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("plan");
    TCase *tc = tcase_create("plan");
    tcase_add_checked_fixture(tc, make_tree, remove_tree);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, scan_finds_series_and_the_rest);
    tcase_add_test(tc, series_load_same_with_any_threads);
    tcase_add_test(tc, read_timing_counts_every_file);
    tcase_add_test(tc, writers_name_replace_and_repeat);
    suite_add_tcase(s, tc);
    return dh_test_run(s);
}
