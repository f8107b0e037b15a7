// SPDX-License-Identifier: MIT
/*
 * test_plan_device.c: dh_plan_load_series_device (plugin/lib/plan_load_device.c, issue 24), a
 * whole series decoded into one buffer of GPU memory, against dh_plan_load_series on the host.
 *
 *   test_plan_device          (CPU, CI) arguments refused before anything else; where this
 *                             process cannot decode into GPU memory the call answers
 *                             DH_ERR_NO_DEVICE with the reason (no CUDA build, no decoders, no
 *                             GPU) and leaves out zeroed; a volume without host samples (what the
 *                             device volume keeps on the host) says what a host read says of the
 *                             same file, frame order included, and dh_hist_compute / dh_equalize
 *                             refuse it by name instead of reading NULL
 *   --gpu DIR...  (label gpu) every series of every DIR (real files, the sample data, generated
 *                             J2K / HTJ2K series with a damaged file, make_series.py) loaded both
 *                             ways: the same failures (path and status), the same metadata and
 *                             slice order, every sample equal (copied back through the DICOM
 *                             layer); loaded again into the caller's buffer; downloaded into a
 *                             host volume equal to the host read, stored range included; loaded
 *                             through a share with a helper thread on the CPU decoders copying
 *                             files in (dh_plan_load_series_device_shared): the same volume;
 *                             before that, dh_equalize of the device volume on the GPU (no copy
 *                             up) equal to the CPU twin's on the host read for four parameter
 *                             sets, and the CPU or CLAHE refused by name. Skipped (77) where no
 *                             GPU decodes.
 */
#define _XOPEN_SOURCE 700
#include "context.h"
#include "dh_dicom.h"
#include "dicom_bytes.h"
#include "dicomhist.h"
#include "test_support.h"
#include "volume.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *sample_path(const char *relative)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", DH_SAMPLE_DATA, relative);
    return path;
}

/* ---------------------------------------------------------------------------------------------
 * CPU
 * ------------------------------------------------------------------------------------------- */
START_TEST(test_arguments)
{
    dh_ctx *ctx = dh_ctx_create();
    dh_plan *plan = NULL;
    const char *paths[] = {sample_path("ct_phantom_jpeg2000")};
    ck_assert_int_eq(dh_plan_scan(ctx, paths, 1, &plan), DH_OK);
    ck_assert_uint_eq(dh_plan_series_count(plan), 1);
    dh_device_volume out;
    ck_assert_int_eq(dh_plan_load_series_device(ctx, plan, 0, NULL, NULL, 0, NULL),
                     DH_ERR_INVALID_ARGUMENT);
    memset(&out, 0xab, sizeof out);
    ck_assert_int_eq(dh_plan_load_series_device(ctx, plan, 1, NULL, NULL, 0, &out),
                     DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(out.set);
    ck_assert_msg(strstr(dh_ctx_error(ctx), "series 1 of a plan of 1") != NULL, "%s",
                  dh_ctx_error(ctx));
    /* A buffer of the caller's too small for the planned series: refused before any work. */
    static char not_device[16];
    ck_assert_int_eq(dh_plan_load_series_device(ctx, plan, 0, NULL, not_device, sizeof not_device,
                                                &out),
                     DH_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(dh_ctx_error(ctx), "bytes of GPU memory") != NULL, "%s",
                  dh_ctx_error(ctx));
    ck_assert_int_eq(dh_device_volume_download(ctx, NULL, NULL), DH_ERR_INVALID_ARGUMENT);
    dh_device_volume_release(NULL, NULL);
    /* The shared load needs its share. */
    memset(&out, 0xab, sizeof out);
    ck_assert_int_eq(dh_plan_load_series_device_shared(ctx, plan, 0, NULL, NULL, NULL, 0, &out),
                     DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(out.set);
    ck_assert_msg(strstr(dh_ctx_error(ctx), "share is NULL") != NULL, "%s", dh_ctx_error(ctx));
    /* Nor on the per-thread default stream (cudaStreamPerThread): the helpers' would not be it. */
    dh_plan_share *share = dh_plan_share_create();
    memset(&out, 0xab, sizeof out);
    ck_assert_int_eq(dh_plan_load_series_device_shared(ctx, plan, 0, share, (void *)0x2, NULL, 0,
                                                       &out),
                     DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(out.set);
    ck_assert_msg(strstr(dh_ctx_error(ctx), "per-thread") != NULL, "%s", dh_ctx_error(ctx));
    dh_plan_share_free(share);
    dh_plan_free(plan);
    dh_ctx_free(ctx);
}
END_TEST

START_TEST(test_no_device_says_why)
{
    char why[512];
    if (dh_gpu_decoders_available(why, sizeof why))
        return; /* a GPU decodes here: the --gpu entry checks the volume */
    dh_ctx *ctx = dh_ctx_create();
    dh_plan *plan = NULL;
    const char *paths[] = {sample_path("ct_phantom_jpeg2000")};
    ck_assert_int_eq(dh_plan_scan(ctx, paths, 1, &plan), DH_OK);
    dh_device_volume out;
    memset(&out, 0xab, sizeof out);
    ck_assert_int_eq(dh_plan_load_series_device(ctx, plan, 0, NULL, NULL, 0, &out),
                     DH_ERR_NO_DEVICE);
    const char *msg = dh_ctx_error(ctx);
    /* The series named, and the reason: no CUDA in this build, or what the decoders say. */
    ck_assert_msg(strstr(msg, "ct_phantom_jpeg2000") != NULL, "%s", msg);
#ifdef DH_HAVE_CUDA
    ck_assert_msg(strstr(msg, why) != NULL, "'%s' lacks the decoders' reason '%s'", msg, why);
#else
    ck_assert_msg(strstr(msg, "built without CUDA") != NULL, "%s", msg);
#endif
    dh_device_volume zero;
    memset(&zero, 0, sizeof zero);
    ck_assert_int_eq(memcmp(&out, &zero, sizeof out), 0);
    /* Through a share: the same answer, and the share left closed (no file offered). */
    dh_plan_share *share = dh_plan_share_create();
    memset(&out, 0xab, sizeof out);
    ck_assert_int_eq(dh_plan_load_series_device_shared(ctx, plan, 0, share, NULL, NULL, 0, &out),
                     DH_ERR_NO_DEVICE);
    ck_assert_int_eq(memcmp(&out, &zero, sizeof out), 0);
    ck_assert_uint_eq(dh_plan_share_left(share), 0);
    dh_plan_share_free(share);
    dh_plan_free(plan);
    dh_ctx_free(ctx);
}
END_TEST

/* What a host volume and a volume without samples must both say: NULL when they agree, else
 * the first field that differs (usable inside and outside Check's runner). */
static const char *metadata_difference(const dh_volume *a, const dh_volume *b)
{
    if (dh_volume_rows(a) != dh_volume_rows(b) || dh_volume_columns(a) != dh_volume_columns(b) ||
        dh_volume_slices(a) != dh_volume_slices(b))
        return "size";
    if (dh_volume_bits_stored(a) != dh_volume_bits_stored(b) ||
        dh_volume_is_signed(a) != dh_volume_is_signed(b))
        return "sample format";
    if (dh_volume_rescale_slope(a) != dh_volume_rescale_slope(b) ||
        dh_volume_rescale_intercept(a) != dh_volume_rescale_intercept(b))
        return "rescale";
    if (dh_volume_spacing(a) != dh_volume_spacing(b))
        return "spacing";
    if (strcmp(dh_volume_series_uid(a), dh_volume_series_uid(b)) != 0 ||
        strcmp(dh_volume_transfer_syntax(a), dh_volume_transfer_syntax(b)) != 0)
        return "series UID or transfer syntax";
    if (dh_volume_warning_count(a) != dh_volume_warning_count(b))
        return "warning count";
    for (size_t i = 0; i < dh_volume_warning_count(a); i++)
        if (strcmp(dh_volume_warning(a, i), dh_volume_warning(b, i)) != 0)
            return "a warning";
    for (uint32_t z = 0; z < dh_volume_slices(a); z++)
        if (strcmp(dh_volume_slice_source(a, z), dh_volume_slice_source(b, z)) != 0 ||
            dh_volume_slice_frame(a, z) != dh_volume_slice_frame(b, z) ||
            dh_volume_slice_location(a, z) != dh_volume_slice_location(b, z))
            return "a slice's source, frame or location";
    return NULL;
}

/* dh_volume_from_header against dh_volume_read_file on one file: the same record, and the frame
 * order (slice z is frame order[z]) the one the host read's slices name. */
static void check_header_volume(const char *path)
{
    dh_ctx *ctx = dh_ctx_create();
    dh_volume *host = NULL, *bare = NULL;
    ck_assert_msg(dh_volume_read_file(ctx, path, &host) == DH_OK, "%s", dh_ctx_error(ctx));
    char msg[DH_DICOM_MSG_LEN];
    dh_dicom_image *img = NULL;
    ck_assert_msg(dh_dicom_read_file(path, 0, &img, msg, sizeof msg) == DH_DICOM_OK, "%s", msg);
    uint32_t *order = malloc(img->frames * sizeof *order);
    ck_assert_int_eq(dh_volume_from_header(ctx, img, path, order, &bare), DH_OK);
    ck_assert_ptr_null(dh_volume_data(bare));
    const char *diff = metadata_difference(host, bare);
    ck_assert_msg(diff == NULL, "%s: %s differs", path, diff);
    for (uint32_t z = 0; z < dh_volume_slices(host); z++)
        ck_assert_uint_eq(order[z], dh_volume_slice_frame(host, z));
    /* The sample readers refuse it by name rather than read NULL. */
    dh_histogram *h = NULL;
    ck_assert_int_eq(dh_hist_compute(ctx, bare, NULL, &h), DH_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(dh_ctx_error(ctx), "samples on the GPU") != NULL, "%s",
                  dh_ctx_error(ctx));
    dh_equalized *eq = NULL;
    ck_assert_int_eq(dh_equalize(ctx, bare, NULL, &eq), DH_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(dh_ctx_error(ctx), "samples on the GPU") != NULL, "%s",
                  dh_ctx_error(ctx));
    free(order);
    dh_dicom_image_free(img);
    dh_volume_free(bare);
    dh_volume_free(host);
    dh_ctx_free(ctx);
}

START_TEST(test_header_volume)
{
    check_header_volume(sample_path("xray_projection.dcm"));
    check_header_volume(sample_path("ct_phantom_jpeg2000/IM0001.dcm"));
}
END_TEST

/* An enhanced multi-frame file whose per-frame positions are out of order (z 15, 10, 12.5, 5):
 * the host read sorts its frames, and the header volume must name the same order. */
static void unsorted_groups(buf *b)
{
    static const double z[4] = {15, 10, 12.5, 5};
    sq_begin(b, 0x5200, 0x9229);
    item_begin(b);
    sq_begin(b, 0x0020, 0x9116);
    item_begin(b);
    el_str(b, 0x0020, 0x0037, "DS", "1\\0\\0\\0\\1\\0");
    item_end(b);
    sq_end(b);
    item_end(b);
    sq_end(b);
    sq_begin(b, 0x5200, 0x9230);
    for (int f = 0; f < 4; f++) {
        char pos[64];
        snprintf(pos, sizeof pos, "0\\0\\%g", z[f]);
        item_begin(b);
        sq_begin(b, 0x0020, 0x9113);
        item_begin(b);
        el_str(b, 0x0020, 0x0032, "DS", pos);
        item_end(b);
        sq_end(b);
        item_end(b);
    }
    sq_end(b);
}

START_TEST(test_header_volume_unsorted_frames)
{
    uint16_t raw[4 * 3 * 2];
    for (int i = 0; i < 24; i++)
        raw[i] = (uint16_t)(i * 7);
    synth s = synth_default(3, 2, 16, 12, 11, 0);
    s.frames = "4";
    s.groups = unsorted_groups;
    s.data = raw;
    s.bytes = sizeof raw;
    buf b = synth_build(&s);
    char *dir = dh_test_temp_dir("/tmp/dh_plan_device");
    char path[4096];
    snprintf(path, sizeof path, "%s/unsorted.dcm", dir);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(b.p, 1, b.n, f), b.n);
    fclose(f);
    free(b.p);
    check_header_volume(path);
    dh_ctx *ctx = dh_ctx_create();
    dh_volume *host = NULL;
    ck_assert_int_eq(dh_volume_read_file(ctx, path, &host), DH_OK);
    ck_assert_uint_eq(dh_volume_slice_frame(host, 0), 3); /* z 5 first: the order is not 0 1 2 3 */
    ck_assert_uint_eq(dh_volume_slice_frame(host, 3), 0);
    dh_volume_free(host);
    dh_ctx_free(ctx);
    dh_test_remove_tree(dir);
    free(dir);
}
END_TEST

/* Multi-frame real files, one with per-frame positions out of order (the host sorts them). */
START_TEST(test_header_volume_real_files)
{
    static const char *files[] = {"fo-dicom_D_CLUNIE_CT1_RLE_FRAGS.dcm",
                                  "pydicom-data_emri_small.dcm",
                                  "pydicom-data_emri_small_jpeg_ls_lossless.dcm"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        const char *p = dh_test_shared(files[i]);
        if (p) {
            char copy[4096];
            snprintf(copy, sizeof copy, "%s", p);
            check_header_volume(copy);
        }
    }
}
END_TEST

static Suite *synthetic(void)
{
    const dh_test tests[] = {DH_TEST(test_arguments), DH_TEST(test_no_device_says_why),
                             DH_TEST(test_header_volume),
                             DH_TEST(test_header_volume_unsorted_frames)};
    return dh_test_suite("plan device", 60, DH_TESTS(tests));
}

static Suite *real_files(void)
{
    const dh_test tests[] = {DH_TEST(test_header_volume_real_files)};
    return dh_test_suite("plan device real files", 60, DH_TESTS(tests));
}

/* ---------------------------------------------------------------------------------------------
 * GPU
 * ------------------------------------------------------------------------------------------- */
static int failures;

#define CHECK(cond, ...)                                                                          \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            printf("FAIL: " __VA_ARGS__);                                                         \
            printf("\n");                                                                         \
            failures++;                                                                           \
        }                                                                                         \
    } while (0)

/* The same failures, in the same order, with the same status. */
static void compare_failures(const dh_volume_set *host, const dh_volume_set *dev, const char *what)
{
    CHECK(dh_volume_set_failure_count(host) == dh_volume_set_failure_count(dev),
          "%s: %zu failures on the host, %zu on the device", what,
          dh_volume_set_failure_count(host), dh_volume_set_failure_count(dev));
    for (size_t i = 0; i < dh_volume_set_failure_count(host) &&
                       i < dh_volume_set_failure_count(dev);
         i++) {
        CHECK(strcmp(dh_volume_set_failure_path(host, i), dh_volume_set_failure_path(dev, i)) ==
                      0 &&
                  dh_volume_set_failure_status(host, i) == dh_volume_set_failure_status(dev, i),
              "%s: failure %zu: host %s (%s), device %s (%s: %s)", what, i,
              dh_volume_set_failure_path(host, i),
              dh_status_name(dh_volume_set_failure_status(host, i)),
              dh_volume_set_failure_path(dev, i),
              dh_status_name(dh_volume_set_failure_status(dev, i)),
              dh_volume_set_failure_message(dev, i));
    }
}

/* The device samples, copied back, against the host volume's: equal, or within `bound` stored
 * units each. */
static int samples_within(const dh_volume *host, const void *d_samples, size_t count, int bound,
                          const char *what)
{
    uint16_t *back = malloc(count * 2 + 2);
    char msg[DH_DICOM_MSG_LEN];
    int ok = back && dh_dicom_device_to_host(back, d_samples, count * 2, NULL, msg, sizeof msg) ==
                         DH_DICOM_OK;
    CHECK(ok, "%s: copy back: %s", what, back ? msg : "out of memory");
    size_t bad = 0, first = 0;
    const uint16_t *want = dh_volume_data(host);
    const int is_signed = dh_volume_is_signed(host);
    for (size_t i = 0; ok && i < count; i++) {
        int a = is_signed ? (int16_t)back[i] : back[i], b = is_signed ? (int16_t)want[i] : want[i];
        if ((a > b ? a - b : b - a) > bound && bad++ == 0)
            first = i;
    }
    CHECK(!ok || bad == 0, "%s: %zu of %zu samples differ, the first at %zu (%u, host %u)", what,
          bad, count, first, back[first], want[first]);
    free(back);
    return ok && bad == 0;
}

static int samples_equal(const dh_volume *host, const void *d_samples, size_t count,
                         const char *what)
{
    return samples_within(host, d_samples, count, 0, what);
}

/* dh_equalize of the device volume d (its samples on the GPU, computed there) against the CPU
 * twin's on the host read h, for several parameter sets: the same values, tables and windows;
 * and what it cannot compute there refused by name, not read as NULL. */
static void check_equalize_on_device(dh_ctx *ctx, const dh_volume *h, const dh_volume *d,
                                     const char *what)
{
    for (int set = 0; set < 4; set++) {
        dh_equalize_params p;
        dh_equalize_params_init(&p);
        p.per_slice = set == 1 || set == 3;
        if (set >= 2) {
            p.window = DH_WINDOW_PERCENTILE;
            p.percentile = 1.5;
            p.clip_limit = set == 2 ? 3.0 : 0;
        }
        if (set == 3) {
            p.operation = DH_EQ_WINDOW_LEVEL;
            p.window = DH_WINDOW_MINMAX;
            p.clip_limit = 0;
        }
        dh_equalized *cpu = NULL, *gpu = NULL;
        p.device = DH_DEVICE_CPU;
        dh_status want = dh_equalize(ctx, h, &p, &cpu);
        p.device = DH_DEVICE_CUDA;
        dh_status got = dh_equalize(ctx, d, &p, &gpu);
        CHECK(got == want, "%s: parameter set %d: %d on the device volume, %d on the host (%s)",
              what, set, got, want, dh_ctx_error(ctx));
        if (got == DH_OK && want == DH_OK) {
            const size_t n = (size_t)cpu->rows * cpu->columns * cpu->slices;
            const size_t t = (size_t)cpu->table_count * cpu->table_len;
            int windows = 1;
            for (uint32_t k = 0; k < cpu->table_count; k++)
                windows &= memcmp(&cpu->window_lo[k], &gpu->window_lo[k], sizeof(double)) == 0 &&
                           memcmp(&cpu->window_hi[k], &gpu->window_hi[k], sizeof(double)) == 0;
            CHECK(gpu->device_used == DH_DEVICE_CUDA && gpu->table_count == cpu->table_count &&
                      memcmp(gpu->data, cpu->data, n * 2) == 0 &&
                      memcmp(gpu->tables, cpu->tables, t * 2) == 0 && windows &&
                      strcmp(gpu->description, cpu->description) == 0,
                  "%s: parameter set %d: the device volume's equalization differs from the "
                  "CPU twin's on the host read", what, set);
        }
        dh_equalized_free(cpu);
        dh_equalized_free(gpu);
    }
    dh_equalize_params p;
    dh_equalize_params_init(&p);
    dh_equalized *none = NULL;
    p.device = DH_DEVICE_CPU;
    CHECK(dh_equalize(ctx, d, &p, &none) == DH_ERR_INVALID_ARGUMENT &&
              strstr(dh_ctx_error(ctx), "samples on the GPU") != NULL,
          "%s: the CPU asked to equalize the device volume: %s", what, dh_ctx_error(ctx));
    p.device = DH_DEVICE_CUDA;
    p.method = DH_EQ_METHOD_CLAHE;
    CHECK(dh_equalize(ctx, d, &p, &none) == DH_ERR_INVALID_ARGUMENT &&
              strstr(dh_ctx_error(ctx), "samples on the GPU") != NULL,
          "%s: CLAHE asked of the device volume: %s", what, dh_ctx_error(ctx));
    dh_equalized_free(none);
}

static size_t compared_shared, helped_files; /* over the run (gpu_main) */

/* dh_plan_load_series_device_shared with a helper thread beside the owner: the host read's
 * metadata and every sample; returns 1 when compared. */
static int check_shared(dh_ctx *ctx, const dh_plan *plan, size_t k, const dh_volume_set *host,
                        const dh_volume *h, size_t count, const char *what)
{
    dh_plan_share *share = dh_plan_share_create();
    atomic_int stop;
    atomic_init(&stop, 0);
    dh_test_share_helper helper = {.share = share, .stop = &stop};
    pthread_t id;
    int running = share && pthread_create(&id, NULL, dh_test_help_until_stopped, &helper) == 0;
    dh_device_volume dev;
    dh_status st = dh_plan_load_series_device_shared(ctx, plan, k, share, NULL, NULL, 0, &dev);
    atomic_store(&stop, 1);
    if (running)
        pthread_join(id, NULL);
    CHECK(running && st == DH_OK, "%s: shared device load: %s", what, dh_ctx_error(ctx));
    int ok = 0;
    if (st == DH_OK) {
        compare_failures(host, dev.set, what);
        CHECK(dh_volume_set_count(dev.set) == 1, "%s: shared: %zu volumes, the host read 1", what,
              dh_volume_set_count(dev.set));
    }
    if (st == DH_OK && dh_volume_set_count(dev.set) == 1) {
        const char *diff = metadata_difference(h, dh_volume_set_volume(dev.set, 0));
        CHECK(diff == NULL, "%s: shared: %s differs", what, diff);
        /* A lossy JPEG 2000 file a helper took is OpenJPEG's where the plain load's is the GPU's:
         * the same inverse wavelet in floating point, rounded apart by one at most
         * (test_dicom_gpu_decode's LOSSY_BOUND). Lossless files decode to the same values. */
        ok = samples_within(h, dev.d_samples, count, dh_volume_lossy(h, NULL) ? 1 : 0, what) &&
             diff == NULL;
        /* Equalized where the helper's copies landed (ordered on the load's stream): exact
         * where the values are. */
        if (ok && !dh_volume_lossy(h, NULL))
            check_equalize_on_device(ctx, h, dh_volume_set_volume(dev.set, 0), what);
        helped_files += (size_t)helper.decoded;
    }
    dh_device_volume_release(&dev, NULL);
    dh_plan_share_free(share);
    return ok;
}

/* One series both ways; returns the number of slices compared. */
static size_t check_series(dh_ctx *ctx, const dh_plan *plan, size_t k)
{
    const char *what = dh_plan_series_path(plan, k);
    dh_volume_set *host = NULL;
    CHECK(dh_plan_load_series(ctx, plan, k, &host) == DH_OK, "%s: host: %s", what,
          dh_ctx_error(ctx));
    dh_device_volume dev;
    dh_status st = dh_plan_load_series_device(ctx, plan, k, NULL, NULL, 0, &dev);
    CHECK(st == DH_OK, "%s: device: %s", what, dh_ctx_error(ctx));
    if (!host || st != DH_OK) {
        dh_volume_set_free(host);
        return 0;
    }
    compare_failures(host, dev.set, what);
    size_t compared = 0;
    CHECK(dh_volume_set_count(host) == dh_volume_set_count(dev.set),
          "%s: %zu volumes on the host, %zu on the device", what, dh_volume_set_count(host),
          dh_volume_set_count(dev.set));
    if (dh_volume_set_count(host) == 1 && dh_volume_set_count(dev.set) == 1) {
        const dh_volume *h = dh_volume_set_volume(host, 0), *d = dh_volume_set_volume(dev.set, 0);
        const char *diff = metadata_difference(h, d);
        CHECK(diff == NULL, "%s: %s differs", what, diff);
        /* The same decoder, except where the batch read frames the one-file path gives
         * nvJPEG2000 on the CPU, saying why in its note (a code stream whose depth or sign is not
         * the dataset's: docs/batch.md); the values are compared below either way. */
        const char *device_note = NULL;
        const char *device_decoder = dh_volume_decoder(d, &device_note);
        CHECK(strcmp(dh_volume_decoder(h, NULL), device_decoder) == 0 || dev.gpu_frames > 0 ||
                  (device_note && strstr(device_note, "nvJPEG2000 read") != NULL),
              "%s: decoders %s and %s (note: %s)", what, dh_volume_decoder(h, NULL),
              device_decoder, device_note ? device_note : "none");
        CHECK(dev.slices == dh_volume_slices(h) && dev.rows == dh_volume_rows(h) &&
                  dev.columns == dh_volume_columns(h) && dev.is_signed == dh_volume_is_signed(h) &&
                  dev.bits_stored == dh_volume_bits_stored(h),
              "%s: the device volume's fields", what);
        const size_t count = dh_volume_sample_count(h);
        if (samples_equal(h, dev.d_samples, count, what))
            compared = dev.slices;
        /* Again into the caller's buffer (the first load's): the same values. */
        dh_device_volume again;
        st = dh_plan_load_series_device(ctx, plan, k, NULL, dev.d_samples,
                                        (size_t)dh_plan_series_sample_bytes(plan, k), &again);
        CHECK(st == DH_OK && !again.owns_samples && again.d_samples == dev.d_samples,
              "%s: into the caller's buffer: %s", what, dh_ctx_error(ctx));
        if (st == DH_OK)
            samples_equal(h, again.d_samples, count, what);
        dh_device_volume_release(&again, NULL);
        /* Through a share, a helper on the CPU decoders taking files from the back and copying
         * them in: the same volume. */
        compared_shared += check_shared(ctx, plan, k, host, h, count, what);
        check_equalize_on_device(ctx, h, d, what);
        /* Down to the host: a whole host volume, equal to the host read. */
        CHECK(dh_device_volume_download(ctx, &dev, NULL) == DH_OK, "%s: download: %s", what,
              dh_ctx_error(ctx));
        int32_t hmin, hmax, dmin, dmax;
        dh_volume_stored_range(h, &hmin, &hmax);
        dh_volume_stored_range(d, &dmin, &dmax);
        CHECK(dh_volume_data(d) && memcmp(dh_volume_data(d), dh_volume_data(h), count * 2) == 0 &&
                  hmin == dmin && hmax == dmax,
              "%s: the downloaded volume differs from the host read", what);
    }
    printf("%s: %zu slices, %u frames on the GPU, %u on the CPU, %zu failure(s)\n", what,
           compared, dev.gpu_frames, dev.cpu_frames, dh_volume_set_failure_count(dev.set));
    dh_device_volume_release(&dev, NULL);
    dh_volume_set_free(host);
    return compared;
}

static int gpu_main(int argc, char **argv)
{
    char why[512];
    if (!dh_gpu_decoders_available(why, sizeof why)) {
        printf("skipped: %s\n", why);
        return DH_TEST_SKIP;
    }
    dh_test_in_one_process();
    dh_ctx *ctx = dh_ctx_create();
    size_t series = 0, slices = 0, with_failures = 0;
    for (int i = 2; i < argc; i++) {
        dh_plan *plan = NULL;
        const char *paths[] = {argv[i]};
        if (dh_plan_scan(ctx, paths, 1, &plan) != DH_OK) {
            printf("note: %s: %s\n", argv[i], dh_ctx_error(ctx));
            continue;
        }
        for (size_t k = 0; k < dh_plan_series_count(plan); k++) {
            slices += check_series(ctx, plan, k);
            series++;
            dh_volume_set *probe = NULL;
            if (dh_plan_load_series(ctx, plan, k, &probe) == DH_OK)
                with_failures += dh_volume_set_failure_count(probe) > 0 &&
                                 dh_volume_set_count(probe) == 1;
            dh_volume_set_free(probe);
        }
        dh_plan_free(plan);
    }
    dh_ctx_free(ctx);
    printf("%zu series, %zu slices equal, %zu series with a slice left out; %zu loaded through "
           "a share too, %zu files decoded by its helper; %d failure(s)\n",
           series, slices, with_failures, compared_shared, helped_files, failures);
    CHECK(compared_shared > 0 && helped_files > 0,
          "the shared device load was not compared with a helper's files in it");
    CHECK(series > 0 && slices > 0, "nothing compared");
    CHECK(with_failures > 0, "no series with a damaged slice was compared (make_series.py)");
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "--gpu") == 0)
        return gpu_main(argc, argv);
    return dh_test_main_suites(argc, argv, synthetic, real_files);
}
