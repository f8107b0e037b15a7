// SPDX-License-Identifier: MIT
/*
 * test_gsps.c: dh_equalized_write_gsps, the result as a Grayscale Softcopy Presentation State:
 * one file per volume beside where the derived series would go, its tables one per slice or one
 * for all, the references and identity read back with dcmdump, dciodvfy without an error, the
 * inputs untouched, and the placement rules (never replacing, keeping the same instance, caller
 * UIDs checked, a result of another volume refused). Rendering through DCMTK against the derived
 * series is tests/cli/test_cli_gsps.py's.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dicomhist.h"
#include "test_support.h"

/* How many times `tag` ("0028,3002") occurs in the file, items included. */
static int tag_count(const char *path, const char *tag)
{
    char fmt[256];
    snprintf(fmt, sizeof fmt, "dcmdump -q +P %s '%%s' | wc -l", tag);
    char *out = dh_test_command_output(fmt, path);
    int n = atoi(out);
    free(out);
    return n;
}

static void check_valid(const char *path)
{
    dh_test_need_tool("dciodvfy");
    char *errors = dh_test_command_output("dciodvfy '%s' 2>&1 | grep '^Error'", path);
    ck_assert_msg(errors[0] == '\0', "%s: dciodvfy: %s", path, errors);
    free(errors);
}

/* One volume equalized, and a fresh output folder: what each test starts from. */
typedef struct gsps_case {
    dh_ctx *ctx;
    dh_volume_set *set;
    const dh_volume *v;
    dh_equalized *r;
    char *dir;
} gsps_case;

static gsps_case open_case(const char *path, int per_slice)
{
    gsps_case c = {.ctx = dh_ctx_create()};
    ck_assert_int_eq(dh_volume_set_load(c.ctx, &path, 1, &c.set), DH_OK);
    c.v = dh_volume_set_volume(c.set, 0);
    dh_equalize_params p;
    dh_equalize_params_init(&p);
    p.per_slice = per_slice;
    p.device = DH_DEVICE_CPU;
    ck_assert_int_eq(dh_equalize(c.ctx, c.v, &p, &c.r), DH_OK);
    c.dir = dh_test_temp_dir("/tmp/dh_gsps_test");
    return c;
}

static void close_case(gsps_case *c)
{
    dh_test_remove_tree(c->dir);
    free(c->dir);
    dh_equalized_free(c->r);
    dh_volume_set_free(c->set);
    dh_ctx_free(c->ctx);
}

START_TEST(sample_file_one_table_for_all)
{
    dh_test_need_tool("dcmdump");
    const char *path = DH_SAMPLE_DATA "/xray_projection.dcm";
    gsps_case c = open_case(path, 0);
    dh_ctx *ctx = c.ctx;
    const dh_volume *v = c.v;
    dh_equalized *r = c.r;
    const char *dir = c.dir;
    dh_derived_series *s = NULL;
    ck_assert_int_eq(dh_equalized_write_gsps(ctx, v, r, dir, NULL, &s), DH_OK);
    ck_assert_uint_eq(s->file_count, 1);
    ck_assert_str_eq(s->sources[0], path);
    ck_assert_ptr_nonnull(strstr(s->files[0], "/xray_projection.gsps.dcm"));
    check_valid(s->files[0]);
    ck_assert_int_eq(tag_count(s->files[0], "0028,3002"), 1); /* one LUT */
    ck_assert_int_eq(tag_count(s->files[0], "0008,1160"), 0); /* no frame references */
    char *dump = dh_test_command_output("dcmdump -q '%s'", s->files[0]);
    ck_assert_ptr_nonnull(strstr(dump, "[PR]"));
    ck_assert_ptr_nonnull(strstr(dump, "=GrayscaleSoftcopyPresentationStateStorage"));
    ck_assert_ptr_nonnull(strstr(dump, "[EQUALIZED]"));
    ck_assert_ptr_nonnull(strstr(dump, dh_volume_study_uid(v)));
    /* MONOCHROME1 source: shown inverted, as its derived MONOCHROME1 image would be. */
    ck_assert_ptr_nonnull(strstr(dump, "[INVERSE]"));
    free(dump);
    /* Never replaced by default; a result of another size is refused before anything. */
    dh_derived_series *again = NULL;
    ck_assert_int_eq(dh_equalized_write_gsps(ctx, v, r, dir, NULL, &again), DH_ERR_IO);
    ck_assert_ptr_null(again);
    r->rows++;
    ck_assert_int_eq(dh_equalized_write_gsps(ctx, v, r, dir, NULL, &again), DH_ERR_MISMATCH);
    r->rows--;
    dh_derived_series_free(s);
    close_case(&c);
}
END_TEST

START_TEST(ct_series_one_table_per_slice)
{
    const char *d = dh_test_shared("series/ct5n");
    if (!d)
        return;
    dh_test_need_tool("dcmdump");
    char *before = dh_test_command_output("cat '%s'/*.dcm | md5sum", d);
    gsps_case c = open_case(d, 1);
    dh_ctx *ctx = c.ctx;
    const dh_volume *v = c.v;
    dh_equalized *r = c.r;
    const char *dir = c.dir;
    dh_derive_params dp;
    dh_derive_params_init(&dp);
    dp.uids = DH_UIDS_DERIVED;
    dp.created = 0;
    dh_derived_series *s = NULL, *derived = NULL;
    ck_assert_int_eq(dh_equalized_write_gsps(ctx, v, r, dir, &dp, &s), DH_OK);
    check_valid(s->files[0]);
    ck_assert_int_eq(tag_count(s->files[0], "0028,3002"), 5);          /* a LUT per slice */
    ck_assert_int_eq(tag_count(s->files[0], "0008,1155"), 10);         /* 5 + 5 references */
    ck_assert_int_eq(tag_count(s->files[0], "0028,1053"), 1);          /* identity rescale */
    char *dump = dh_test_command_output("dcmdump -q +P 0028,1053 +P 0028,1052 '%s'", s->files[0]);
    ck_assert_ptr_nonnull(strstr(dump, "[1]"));
    ck_assert_ptr_nonnull(strstr(dump, "[0]"));
    free(dump);
    /* The same work again keeps the same instance; the derived series' UIDs are others. */
    dp.existing = DH_EXISTING_KEEP;
    dh_derived_series *kept = NULL;
    ck_assert_int_eq(dh_equalized_write_gsps(ctx, v, r, dir, &dp, &kept), DH_OK);
    ck_assert_str_eq(kept->sop_uids[0], s->sop_uids[0]);
    ck_assert_str_eq(kept->series_uid, s->series_uid);
    ck_assert_int_eq(dh_equalized_write_dicom_with(ctx, v, r, dir, &dp, &derived), DH_OK);
    ck_assert_str_ne(derived->series_uid, s->series_uid);
    for (size_t i = 0; i < derived->file_count; i++)
        ck_assert_str_ne(derived->sop_uids[i], s->sop_uids[0]);
    dp.series_uid = "not a uid";
    dh_derived_series *bad = NULL;
    ck_assert_int_eq(dh_equalized_write_gsps(ctx, v, r, dir, &dp, &bad), DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "not a uid"));
    char *after = dh_test_command_output("cat '%s'/*.dcm | md5sum", d);
    ck_assert_str_eq(before, after);
    free(before);
    free(after);
    dh_derived_series_free(s);
    dh_derived_series_free(kept);
    dh_derived_series_free(derived);
    close_case(&c);
}
END_TEST

int main(int argc, char **argv)
{
    const dh_test synthetic[] = {DH_TEST(sample_file_one_table_for_all)};
    const dh_test real_files[] = {DH_TEST(ct_series_one_table_per_slice)};
    return dh_test_main(argc, argv, "gsps", 120, DH_TESTS(synthetic), DH_TESTS(real_files));
}
