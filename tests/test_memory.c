// SPDX-License-Identifier: MIT
/*
 * test_memory.c: series held in memory (dh_plan_scan_memory, dh_volume_set_load_memory) and
 * derived output into buffers (dh_equalized_encode_dicom, _gsps, _png), against the same inputs
 * read from disk and written to files: the same volumes, failures and plans, and every output
 * equal byte for byte to the file the disk writer writes with the same UIDs and time. On random
 * series (shuffled slices, random values), the sample data, and every file of ../shared/dicom
 * and ../shared/dicom-jpeg2000; malformed items are failures naming the item; loading borrows
 * the bytes rather than copying them (the heap grows by the volume, not by the files).
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dh_dicom_write.h"
#include "dicomhist.h"
#include "test_support.h"

/* ---- inputs ---- */

typedef struct inputs {
    size_t count;
    dh_memory_item *items;
    char **names;
    unsigned char **bytes;
} inputs;

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s: cannot open", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc((size_t)n + 1);
    ck_assert_uint_eq(fread(p, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return p;
}

/* Every file a scan of `paths` would read (skipped ones left out), as items named by their path,
 * so that the volumes from memory name their slices exactly as those from disk. */
static inputs inputs_of(const char *const *paths, size_t n)
{
    dh_ctx *ctx = dh_ctx_create();
    dh_plan *plan = NULL;
    ck_assert_int_eq(dh_plan_scan(ctx, paths, n, &plan), DH_OK);
    inputs in = {0};
    in.items = calloc(dh_plan_file_count(plan), sizeof *in.items);
    in.names = calloc(dh_plan_file_count(plan), sizeof *in.names);
    in.bytes = calloc(dh_plan_file_count(plan), sizeof *in.bytes);
    for (size_t i = 0; i < dh_plan_file_count(plan); i++) {
        if (dh_plan_file_state_of(plan, i) == DH_PLAN_FILE_SKIPPED)
            continue;
        size_t k = in.count++;
        in.names[k] = strdup(dh_plan_file_path(plan, i));
        in.bytes[k] = slurp(in.names[k], &in.items[k].size);
        in.items[k].bytes = in.bytes[k];
        in.items[k].name = in.names[k];
    }
    dh_plan_free(plan);
    dh_ctx_free(ctx);
    return in;
}

static void inputs_free(inputs *in)
{
    for (size_t i = 0; i < in->count; i++) {
        free(in->names[i]);
        free(in->bytes[i]);
    }
    free(in->items), free(in->names), free(in->bytes);
}

/* A random CT series in dir: `slices` files of random 12-bit values with positions along z in a
 * shuffled order of file names, and one MR file of its own (another series). */
static void write_random_series(const char *dir, uint32_t slices, uint64_t seed)
{
    dh_test_rng rng;
    dh_test_rng_seed(&rng, seed);
    uint32_t rows = 17 + dh_test_rng_below(&rng, 40), cols = 9 + dh_test_rng_below(&rng, 50);
    uint16_t *px = malloc((size_t)rows * cols * sizeof *px);
    char series[DH_DICOM_UID_LEN], study[DH_DICOM_UID_LEN], sop[DH_DICOM_UID_LEN], msg[512];
    ck_assert_int_eq(dh_dicom_uid_random(series), DH_DICOM_OK);
    ck_assert_int_eq(dh_dicom_uid_random(study), DH_DICOM_OK);
    uint32_t *order = malloc(slices * sizeof *order);
    for (uint32_t i = 0; i < slices; i++)
        order[i] = i;
    for (uint32_t i = slices; i > 1; i--) {
        uint32_t j = dh_test_rng_below(&rng, i), t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
    for (uint32_t z = 0; z <= slices; z++) {
        int lone = z == slices; /* the MR file of its own */
        for (size_t k = 0; k < (size_t)rows * cols; k++)
            px[k] = (uint16_t)dh_test_rng_below(&rng, 4096);
        dh_dicom_write_image im;
        dh_dicom_write_image_init(&im);
        im.rows = rows, im.columns = cols, im.bits_stored = 12, im.high_bit = 11;
        im.pixels = px;
        im.has_rescale = !lone, im.rescale_slope = 1, im.rescale_intercept = -1024;
        im.rescale_type = lone ? NULL : "HU";
        ck_assert_int_eq(dh_dicom_uid_random(sop), DH_DICOM_OK);
        im.sop_class_uid = lone ? "1.2.840.10008.5.1.4.1.1.4" : "1.2.840.10008.5.1.4.1.1.2";
        im.sop_instance_uid = sop;
        im.study_uid = study;
        char lone_series[DH_DICOM_UID_LEN];
        ck_assert_int_eq(dh_dicom_uid_random(lone_series), DH_DICOM_OK);
        im.series_uid = lone ? lone_series : series;
        im.frame_of_reference_uid = study;
        im.modality = lone ? "MR" : "CT";
        im.patient_name = "Memory^Test", im.patient_id = "MEM1";
        im.study_date = "20260101", im.study_time = "120000";
        im.series_number = lone ? 2 : 1;
        im.instance_number = (int32_t)z + 1;
        im.has_position = 1;
        im.position[2] = lone ? 0 : 2.5 * z;
        im.has_orientation = 1;
        const double axial[6] = {1, 0, 0, 0, 1, 0};
        memcpy(im.orientation, axial, sizeof axial);
        im.has_pixel_spacing = 1, im.pixel_spacing[0] = im.pixel_spacing[1] = 0.7;
        char path[8400];
        if (lone)
            snprintf(path, sizeof path, "%s/mr.dcm", dir);
        else
            snprintf(path, sizeof path, "%s/ct/IM%04u.dcm", dir, order[z]);
        ck_assert_msg(dh_dicom_write_file(&im, path, DH_DICOM_EXPLICIT_LE, 0, msg, sizeof msg) ==
                          DH_DICOM_OK, "%s", msg);
    }
    free(order);
    free(px);
}

/* A temporary folder (free it with done_tree) holding in/ with a random series (see
 * write_random_series); `in` gets the path of in/. */
static char *random_tree(uint32_t slices, uint64_t seed, char in[4200])
{
    char *tmp = dh_test_temp_dir("/tmp/dh-memory");
    dh_test_shell("mkdir -p %s/in/ct", tmp);
    snprintf(in, 4200, "%s/in", tmp);
    write_random_series(in, slices, seed);
    return tmp;
}

static void done_tree(char *tmp)
{
    dh_test_remove_tree(tmp);
    free(tmp);
}

/* ---- comparisons ---- */

static void assert_same_volume(const dh_volume *a, const dh_volume *b)
{
    ck_assert_str_eq(dh_volume_path(a), dh_volume_path(b));
    ck_assert_uint_eq(dh_volume_slices(a), dh_volume_slices(b));
    ck_assert_uint_eq(dh_volume_sample_count(a), dh_volume_sample_count(b));
    ck_assert_int_eq(memcmp(dh_volume_data(a), dh_volume_data(b),
                            dh_volume_sample_count(a) * 2), 0);
    for (uint32_t s = 0; s < dh_volume_slices(a); s++)
        ck_assert_str_eq(dh_volume_slice_source(a, s), dh_volume_slice_source(b, s));
    ck_assert_uint_eq(dh_volume_warning_count(a), dh_volume_warning_count(b));
    ck_assert_str_eq(dh_volume_series_uid(a), dh_volume_series_uid(b));
}

static void assert_same_set(const dh_volume_set *disk, const dh_volume_set *mem)
{
    ck_assert_uint_eq(dh_volume_set_count(disk), dh_volume_set_count(mem));
    ck_assert_uint_eq(dh_volume_set_failure_count(disk), dh_volume_set_failure_count(mem));
    for (size_t i = 0; i < dh_volume_set_failure_count(disk); i++) {
        ck_assert_str_eq(dh_volume_set_failure_path(disk, i), dh_volume_set_failure_path(mem, i));
        ck_assert_int_eq(dh_volume_set_failure_status(disk, i),
                         dh_volume_set_failure_status(mem, i));
        /* The message names the item as it names the file. */
        ck_assert_ptr_nonnull(strstr(dh_volume_set_failure_message(mem, i),
                                     dh_volume_set_failure_path(mem, i)));
    }
    for (size_t k = 0; k < dh_volume_set_count(disk); k++)
        assert_same_volume(dh_volume_set_volume(disk, k), dh_volume_set_volume(mem, k));
}

/* The file under dir whose path ends with "/" name, compared with the buffer. */
static void assert_file_is(const char *dir, const char *name, const unsigned char *data,
                           size_t size)
{
    char path[8400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t len = 0;
    unsigned char *file = slurp(path, &len);
    ck_assert_msg(len == size && memcmp(file, data, size) == 0,
                  "%s: %zu bytes on disk, %zu in memory, not the same", path, len, size);
    free(file);
}

static int output_count(const char *dir)
{
    char *out = dh_test_command_output("find %s -type f | wc -l", dir);
    int n = atoi(out);
    free(out);
    return n;
}

/* Every volume of the set equalized (per slice when `per_slice`), then written to files and
 * encoded into buffers with the same UIDs and time: DICOM, GSPS and PNG, byte for byte. The
 * disk writers read the sources' files, the encoders the items' bytes. */
static void assert_same_outputs(const dh_volume_set *disk, const dh_volume_set *mem,
                                int per_slice, const char *tmp)
{
    dh_ctx *ctx = dh_ctx_create();
    for (size_t k = 0; k < dh_volume_set_count(mem); k++) {
        const dh_volume *dv = dh_volume_set_volume(disk, k), *mv = dh_volume_set_volume(mem, k);
        dh_equalize_params p;
        dh_equalize_params_init(&p);
        p.output_bits = 12;
        p.per_slice = per_slice;
        dh_equalized *r = NULL;
        ck_assert_int_eq(dh_equalize(ctx, mv, &p, &r), DH_OK);
        dh_derive_params dp;
        dh_derive_params_init(&dp);
        dp.uids = DH_UIDS_DERIVED;
        dp.created = 1767225600; /* 2026-01-01 UTC */
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/out%zu-%d", tmp, k, per_slice);

        dh_derived_series *files = NULL, *bufs = NULL;
        dh_status ds = dh_equalized_write_dicom_with(ctx, dv, r, dir, &dp, &files);
        char why_dicom[1024];
        snprintf(why_dicom, sizeof why_dicom, "%s", dh_ctx_error(ctx));
        dh_status ms = dh_equalized_encode_dicom(ctx, mv, r, &dp, &bufs);
        ck_assert_msg(ds == ms, "DICOM: %d on disk (%s), %d in memory (%s)", ds, why_dicom, ms,
                      dh_ctx_error(ctx));
        if (ds == DH_OK) {
            ck_assert_uint_eq(files->file_count, bufs->file_count);
            ck_assert_str_eq(files->series_uid, bufs->series_uid);
            for (size_t i = 0; i < bufs->file_count; i++) {
                ck_assert_str_eq(files->sources[i], bufs->sources[i]);
                ck_assert_str_eq(files->sop_uids[i], bufs->sop_uids[i]);
                assert_file_is(dir, bufs->files[i], bufs->data[i], bufs->sizes[i]);
            }
        }
        dh_derived_series_free(files), dh_derived_series_free(bufs);
        files = bufs = NULL;

        ds = dh_equalized_write_gsps(ctx, dv, r, dir, &dp, &files);
        char why[1024];
        snprintf(why, sizeof why, "%s", dh_ctx_error(ctx));
        ms = dh_equalized_encode_gsps(ctx, mv, r, &dp, &bufs);
        ck_assert_msg(ds == ms, "GSPS: %d on disk (%s), %d in memory (%s)", ds, why, ms,
                      dh_ctx_error(ctx));
        if (ds == DH_OK) {
            ck_assert_uint_eq(bufs->file_count, 1);
            ck_assert_str_eq(files->sop_uids[0], bufs->sop_uids[0]);
            assert_file_is(dir, bufs->files[0], bufs->data[0], bufs->sizes[0]);
        }
        dh_derived_series_free(files), dh_derived_series_free(bufs);
        bufs = NULL;

        ck_assert_int_eq(dh_equalized_write_png_with(ctx, dv, r, dir, &dp), DH_OK);
        ck_assert_int_eq(dh_equalized_encode_png(ctx, mv, r, &dp, &bufs), DH_OK);
        ck_assert_uint_eq(bufs->file_count, dh_volume_slices(mv));
        for (size_t i = 0; i < bufs->file_count; i++)
            assert_file_is(dir, bufs->files[i], bufs->data[i], bufs->sizes[i]);
        dh_derived_series_free(bufs);
        dh_equalized_free(r);
    }
    dh_ctx_free(ctx);
}

/* Loads `paths` from disk and the same files from memory, and compares all of it. */
static void compare_disk_and_memory(const char *const *paths, size_t n, const char *tmp)
{
    inputs in = inputs_of(paths, n);
    dh_ctx *ctx = dh_ctx_create();
    dh_volume_set *disk = NULL, *mem = NULL;
    ck_assert_int_eq(dh_volume_set_load(ctx, paths, n, &disk), DH_OK);
    ck_assert_int_eq(dh_volume_set_load_memory(ctx, in.items, in.count, &mem), DH_OK);
    assert_same_set(disk, mem);
    /* The plan too: the same series of the same files. */
    dh_plan *pd = NULL, *pm = NULL;
    ck_assert_int_eq(dh_plan_scan(ctx, paths, n, &pd), DH_OK);
    ck_assert_int_eq(dh_plan_scan_memory(ctx, in.items, in.count, &pm), DH_OK);
    ck_assert_uint_eq(dh_plan_series_count(pd), dh_plan_series_count(pm));
    for (size_t k = 0; k < dh_plan_series_count(pd); k++) {
        ck_assert_str_eq(dh_plan_series_path(pd, k), dh_plan_series_path(pm, k));
        ck_assert_uint_eq(dh_plan_series_file_count(pd, k), dh_plan_series_file_count(pm, k));
        for (size_t i = 0; i < dh_plan_series_file_count(pd, k); i++)
            ck_assert_str_eq(dh_plan_file_path(pd, dh_plan_series_file(pd, k, i)),
                             dh_plan_file_path(pm, dh_plan_series_file(pm, k, i)));
    }
    dh_plan_free(pd), dh_plan_free(pm);
    assert_same_outputs(disk, mem, 0, tmp);
    assert_same_outputs(disk, mem, 1, tmp);
    dh_volume_set_free(disk), dh_volume_set_free(mem);
    dh_ctx_free(ctx);
    inputs_free(&in);
}

/* ---- tests ---- */

START_TEST(random_series_same_as_from_disk)
{
    char in[4200];
    char *tmp = random_tree(3 + (uint32_t)_i * 4, 0x5eed0000u + (uint64_t)_i, in);
    const char *paths[] = {in};
    compare_disk_and_memory(paths, 1, tmp);
    done_tree(tmp);
}
END_TEST

START_TEST(sample_data_same_as_from_disk)
{
    char *tmp = dh_test_temp_dir("/tmp/dh-memory");
    const char *paths[] = {DH_SAMPLE_DATA};
    compare_disk_and_memory(paths, 1, tmp);
    done_tree(tmp);
}
END_TEST

/* Truncated, garbage, empty and repeated items fail on their own, each message naming the item,
 * while the series of the good ones loads whole; unusable arguments fail the call. */
START_TEST(malformed_items_named)
{
    char in[4200];
    char *tmp = random_tree(4, 99, in);
    const char *paths[] = {in};
    inputs good = inputs_of(paths, 1);
    size_t n = good.count + 4;
    dh_memory_item *items = calloc(n, sizeof *items);
    memcpy(items, good.items, good.count * sizeof *items);
    static const char garbage[] = "this is not DICOM at all, only text of some length ....";
    items[good.count] = (dh_memory_item){good.items[0].bytes, good.items[0].size / 3,
                                         "orthanc/instance-truncated"};
    items[good.count + 1] = (dh_memory_item){garbage, sizeof garbage, "orthanc/instance-garbage"};
    items[good.count + 2] = (dh_memory_item){garbage, 0, "orthanc/instance-empty"};
    items[good.count + 3] = (dh_memory_item){good.items[1].bytes, good.items[1].size,
                                             good.items[1].name};
    dh_ctx *ctx = dh_ctx_create();
    dh_volume_set *set = NULL;
    ck_assert_int_eq(dh_volume_set_load_memory(ctx, items, n, &set), DH_OK);
    ck_assert_uint_eq(dh_volume_set_count(set), 2); /* the CT series whole, the MR file */
    ck_assert_uint_eq(dh_volume_set_failure_count(set), 4);
    const char *named[] = {"orthanc/instance-truncated", "orthanc/instance-garbage",
                           "orthanc/instance-empty", good.items[1].name};
    for (size_t i = 0; i < 4; i++) {
        ck_assert_str_eq(dh_volume_set_failure_path(set, i), named[i]);
        ck_assert_msg(strstr(dh_volume_set_failure_message(set, i), named[i]) != NULL,
                      "message \"%s\" does not name %s", dh_volume_set_failure_message(set, i),
                      named[i]);
        ck_assert_int_ne(dh_volume_set_failure_status(set, i), DH_OK);
    }
    ck_assert_int_eq(dh_volume_set_failure_status(set, 3), DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(dh_volume_set_failure_message(set, 3), "given again"));
    ck_assert_int_eq(dh_volume_set_failure_status(set, 0), DH_ERR_MALFORMED);
    dh_volume_set_free(set);

    /* No name, bytes missing, no items: the call fails naming the item's index. */
    dh_memory_item bad[2] = {good.items[0], {NULL, 10, "x"}};
    ck_assert_int_eq(dh_volume_set_load_memory(ctx, bad, 2, &set), DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "item 1"));
    bad[1] = (dh_memory_item){garbage, sizeof garbage, NULL};
    ck_assert_int_eq(dh_volume_set_load_memory(ctx, bad, 2, &set), DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "no name"));
    ck_assert_int_eq(dh_volume_set_load_memory(ctx, bad, 0, &set), DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(set);
    dh_ctx_free(ctx);
    free(items);
    inputs_free(&good);
    done_tree(tmp);
}
END_TEST

/* Nothing is written: a series loaded from memory and encoded leaves TMPDIR and the working
 * folder as they were (the writers must not stage anything). */
START_TEST(encoding_writes_nothing)
{
    char in[4200], empty[4200];
    char *tmp = random_tree(5, 7, in);
    snprintf(empty, sizeof empty, "%s/empty", tmp);
    dh_test_shell("mkdir -p %s", empty);
    const char *paths[] = {in};
    inputs good = inputs_of(paths, 1);
    dh_test_shell("rm -rf %s", in); /* the files are gone: only the bytes remain */
    setenv("TMPDIR", empty, 1);
    char cwd[4200];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    ck_assert_int_eq(chdir(empty), 0);
    dh_ctx *ctx = dh_ctx_create();
    dh_volume_set *set = NULL;
    ck_assert_int_eq(dh_volume_set_load_memory(ctx, good.items, good.count, &set), DH_OK);
    ck_assert_uint_eq(dh_volume_set_failure_count(set), 0);
    for (size_t k = 0; k < dh_volume_set_count(set); k++) {
        dh_equalized *r = NULL;
        dh_equalize_params p;
        dh_equalize_params_init(&p);
        p.output_bits = 12;
        ck_assert_int_eq(dh_equalize(ctx, dh_volume_set_volume(set, k), &p, &r), DH_OK);
        dh_derived_series *a = NULL, *b = NULL, *c = NULL;
        ck_assert_int_eq(dh_equalized_encode_dicom(ctx, dh_volume_set_volume(set, k), r, NULL, &a),
                         DH_OK);
        ck_assert_int_eq(dh_equalized_encode_gsps(ctx, dh_volume_set_volume(set, k), r, NULL, &b),
                         DH_OK);
        ck_assert_int_eq(dh_equalized_encode_png(ctx, dh_volume_set_volume(set, k), r, NULL, &c),
                         DH_OK);
        /* The encoded files read back as the derived series: same geometry, derived pixels. */
        for (size_t i = 0; i < a->file_count; i++) {
            dh_volume *back = NULL;
            ck_assert_int_eq(dh_volume_read_memory(ctx, a->data[i], a->sizes[i], a->files[i],
                                                   &back), DH_OK);
            ck_assert_uint_eq(dh_volume_rows(back), r->rows);
            ck_assert_uint_eq(dh_volume_bits_stored(back), 12);
            dh_volume_free(back);
        }
        dh_derived_series_free(a), dh_derived_series_free(b), dh_derived_series_free(c);
        dh_equalized_free(r);
    }
    dh_volume_set_free(set);
    dh_ctx_free(ctx);
    ck_assert_int_eq(chdir(cwd), 0);
    ck_assert_int_eq(output_count(empty), 0);
    inputs_free(&good);
    done_tree(tmp);
}
END_TEST

/* Memory follows the series, not the files: loading borrows the items' bytes, so the heap grows
 * by about the volume's samples (2 bytes a pixel) and the bookkeeping, never by another copy of
 * the files. (Under AddressSanitizer mallinfo2 says nothing: the check is skipped there.) */
START_TEST(loading_borrows_the_bytes)
{
#if defined(__SANITIZE_ADDRESS__)
    return;
#endif
    char in[4200];
    char *tmp = random_tree(60, 1234, in);
    const char *paths[] = {in};
    inputs good = inputs_of(paths, 1);
    size_t file_bytes = 0;
    for (size_t i = 0; i < good.count; i++)
        file_bytes += good.items[i].size;
    dh_ctx *ctx = dh_ctx_create();
    ck_assert_int_eq(dh_ctx_set_threads(ctx, 1), DH_OK);
    dh_volume_set *set = NULL;
    size_t before = mallinfo2().uordblks;
    ck_assert_int_eq(dh_volume_set_load_memory(ctx, good.items, good.count, &set), DH_OK);
    size_t grown = mallinfo2().uordblks - before;
    size_t samples = 0;
    for (size_t k = 0; k < dh_volume_set_count(set); k++)
        samples += dh_volume_sample_count(dh_volume_set_volume(set, k)) * 2;
    /* Bookkeeping: a slice record and its strings per file, well under 2 KiB each. */
    size_t bound = samples + good.count * 2048;
    ck_assert_msg(grown <= bound, "loading grew the heap by %zu bytes: more than %zu (samples %zu, "
                  "files %zu)", grown, bound, samples, file_bytes);
    dh_volume_set_free(set);
    dh_ctx_free(ctx);
    inputs_free(&good);
    done_tree(tmp);
}
END_TEST

/* Every file of ../shared/dicom and ../shared/dicom-jpeg2000 (CT, CR, DX, MR, series, LUTs,
 * compressed syntaxes, the malformed ones), through memory and from disk. */
START_TEST(real_files_same_as_from_disk)
{
    char *tmp = dh_test_temp_dir("/tmp/dh-memory");
    const char *paths[] = {dh_test_shared(_i == 0 ? "." : "../dicom-jpeg2000")};
    struct stat st;
    if (stat(paths[0], &st) != 0) {
        dh_test_remove_tree(tmp);
        free(tmp);
        ck_assert_msg(_i == 1, "%s is missing", paths[0]);
        return;
    }
    compare_disk_and_memory(paths, 1, tmp);
    done_tree(tmp);
}
END_TEST

int main(int argc, char **argv)
{
    const dh_test synthetic[] = {
        DH_TEST_LOOP(random_series_same_as_from_disk, 4),
        DH_TEST(sample_data_same_as_from_disk),
        DH_TEST(malformed_items_named),
        DH_TEST(encoding_writes_nothing),
        DH_TEST(loading_borrows_the_bytes),
    };
    const dh_test real_files[] = {
        DH_TEST_LOOP(real_files_same_as_from_disk, 2),
    };
    return dh_test_main(argc, argv, "memory", 300, DH_TESTS(synthetic), DH_TESTS(real_files));
}
