// SPDX-License-Identifier: MIT
/*
 * test_derived_sync.c: a derived series' durability (session 21). Every file is flushed before
 * its rename; its folder is flushed once for the series, after the last file and before the call
 * returns, whether the files were written now or kept from an earlier run (a run killed between
 * a rename and that flush leaves files the next run keeps). fsync is wrapped at link time
 * (-Wl,--wrap=fsync, tests/CMakeLists.txt) to count the flushes of files and of folders.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dicomhist.h"
#include "test_support.h"

int __real_fsync(int fd);
int __wrap_fsync(int fd);

static atomic_int file_syncs, folder_syncs;

int __wrap_fsync(int fd)
{
    struct stat st;
    if (fstat(fd, &st) == 0)
        atomic_fetch_add(S_ISDIR(st.st_mode) ? &folder_syncs : &file_syncs, 1);
    return __real_fsync(fd);
}

static void reset(void)
{
    atomic_store(&file_syncs, 0);
    atomic_store(&folder_syncs, 0);
}

static int files_flushed(void) { return atomic_load(&file_syncs); }
static int folders_flushed(void) { return atomic_load(&folder_syncs); }

/* The phantom series equalized (volume mode) and written into out, with derived UIDs, a fixed
 * creation time and `existing`; *files: how many files the call reports. */
static dh_status write_series(const char *out, dh_existing existing, size_t *files)
{
    const char *paths[] = {DH_SAMPLE_DATA "/ct_phantom"};
    dh_ctx *ctx = dh_ctx_create();
    dh_volume_set *set = NULL;
    ck_assert_int_eq(dh_volume_set_load(ctx, paths, 1, &set), DH_OK);
    const dh_volume *v = dh_volume_set_volume(set, 0);
    dh_equalized *r = dh_test_equalize_cpu(ctx, v);
    dh_derive_params wp;
    dh_derive_params_init(&wp);
    wp.uids = DH_UIDS_DERIVED;
    wp.existing = existing;
    wp.created = 1700000000;
    dh_derived_series *s = NULL;
    dh_status st = dh_equalized_write_dicom_with(ctx, v, r, out, &wp, &s);
    *files = st == DH_OK ? s->file_count : 0;
    dh_derived_series_free(s);
    dh_equalized_free(r);
    dh_volume_set_free(set);
    dh_ctx_free(ctx);
    return st;
}

START_TEST(one_folder_flush_per_series)
{
    char *out = dh_test_temp_dir("/tmp/dh-derived-sync");
    size_t files = 0;
    reset();
    ck_assert_int_eq(write_series(out, DH_EXISTING_FAIL, &files), DH_OK);
    ck_assert_uint_gt(files, 1);
    /* Every file flushed; one folder flush for the series' folder, however many files. */
    ck_assert_int_eq(files_flushed(), (int)files);
    ck_assert_int_eq(folders_flushed(), 1);

    /* Resumed: every file kept, none written, and the folder still flushed before the call
     * reports them. */
    reset();
    ck_assert_int_eq(write_series(out, DH_EXISTING_KEEP, &files), DH_OK);
    ck_assert_int_eq(files_flushed(), 0);
    ck_assert_int_eq(folders_flushed(), 1);

    /* Refused (the outputs exist): nothing reported, nothing flushed. */
    reset();
    ck_assert_int_eq(write_series(out, DH_EXISTING_FAIL, &files), DH_ERR_IO);
    ck_assert_int_eq(folders_flushed(), 0);
    dh_test_remove_tree(out);
    free(out);
}
END_TEST

int main(void)
{
    const dh_test tests[] = {DH_TEST(one_folder_flush_per_series)};
    return dh_test_run(dh_test_suite("derived_sync", 120, DH_TESTS(tests)));
}
