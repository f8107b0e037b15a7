// SPDX-License-Identifier: MIT
/*
 * test_dicom_gpu_batch.c: dh_dicom_read_batch_device (dicom/dicom_gpu_batch.cpp, issue 24), the
 * frames of many files decoded at once into GPU memory, against dh_dicom_read_memory on the CPU.
 *
 *   test_dicom_gpu_batch        (CPU) arguments checked before anything else; where this process
 *                               cannot decode on the GPU the call says why, with the reason
 *                               dh_dicom_gpu_decoders gives, and hands nothing back; the public
 *                               dh_decode_to_device the same through its context
 *   --gpu DIR...   (label gpu)  on a GPU: every file under the DIRs (real files, the sample data,
 *                               tests/gpu_decode/make_streams.py's streams: every syntax the
 *                               layer reads, malformed files among them) read in ONE batch, twice
 *                               (16 workers, then 1): each file's status is the CPU read's; its
 *                               device values, copied back, are the CPU read's exactly for every
 *                               lossless syntax and within LOSSY_BOUND of OpenJPEG for lossy J2K;
 *                               the decoder named says who read the frames (nvjpeg2k only when
 *                               the GPU read all of them, else a note saying why); every
 *                               generated J2K / HTJ2K stream is read on the GPU whole; the
 *                               public dh_decode_to_device gives the same for every file;
 *                               and again straight into memory the caller gives
 *                               (device_dest, into_place_once).
 *                               Skipped (77) where dh_dicom_gpu_decoders says no. With
 *                               DH_GPU_JPEG_LOSSLESS=1 (test_dicom_gpu_batch_sv1_gpu; the
 *                               default too with nvJPEG 13.3) the SV1 frames measured exact go
 *                               to nvJPEG: some file must be read there whole, named nvjpeg, the
 *                               16-bit header over 12 stored bits with dirty high bits among
 *                               them (masked on the GPU), and every value stay DCMTK's.
 */
#define _XOPEN_SOURCE 700
#include "dh_dicom.h"
#include "dicomhist.h"
#include "test_support.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOSSY_BOUND 1 /* as test_dicom_gpu_decode.c: the 9/7 wavelet's rounding */
#define MAX_FILES 2048

/* ---------------------------------------------------------------------------------------------
 * CPU
 * ------------------------------------------------------------------------------------------- */
START_TEST(test_batch_arguments)
{
    char msg[DH_DICOM_MSG_LEN];
    dh_dicom_device_image out[1];
    ck_assert_int_eq(dh_dicom_read_batch_device(NULL, 1, NULL, NULL, out, NULL, msg, sizeof msg),
                     DH_DICOM_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(msg, "no files") != NULL, "%s", msg);
    const unsigned char byte = 0;
    const dh_dicom_batch_input in = {.data = &byte, .size = 1};
    const dh_dicom_batch_options too_many = {.workers = 33};
    ck_assert_int_eq(dh_dicom_read_batch_device(&in, 1, &too_many, NULL, out, NULL, msg,
                                                sizeof msg),
                     DH_DICOM_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(msg, "workers") != NULL, "%s", msg);
    const dh_dicom_batch_input missing = {.data = NULL, .size = 10};
    ck_assert_int_eq(dh_dicom_read_batch_device(&missing, 1, NULL, NULL, out, NULL, msg,
                                                sizeof msg),
                     DH_DICOM_ERR_INVALID_ARGUMENT);
    /* An empty batch is no work, whatever the machine. */
    char why[DH_DICOM_MSG_LEN];
    const dh_dicom_status empty = dh_dicom_read_batch_device(NULL, 0, NULL, NULL, NULL, NULL, msg,
                                                             sizeof msg);
    ck_assert_int_eq(empty, dh_dicom_gpu_decoders(why, sizeof why) ? DH_DICOM_OK
                                                                   : DH_DICOM_ERR_UNSUPPORTED);
}
END_TEST

START_TEST(test_batch_says_why_not)
{
    char why[DH_DICOM_MSG_LEN];
    if (dh_dicom_gpu_decoders(why, sizeof why))
        return; /* a GPU here: the --gpu entry checks the batch */
    char path[4096];
    snprintf(path, sizeof path, "%s/ct_phantom_jpeg2000/IM0010.dcm", DH_SAMPLE_DATA);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s missing", path);
    static unsigned char bytes[1 << 22];
    const size_t n = fread(bytes, 1, sizeof bytes, f);
    fclose(f);
    const dh_dicom_batch_input in[2] = {{.data = bytes, .size = n}, {.data = bytes, .size = n}};
    dh_dicom_device_image out[2];
    memset(out, 0xab, sizeof out);
    dh_dicom_batch_timing timing;
    char msg[DH_DICOM_MSG_LEN];
    ck_assert_int_eq(dh_dicom_read_batch_device(in, 2, NULL, NULL, out, &timing, msg, sizeof msg),
                     DH_DICOM_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(msg, why) != NULL, "'%s' does not give the reason '%s'", msg, why);
    for (int i = 0; i < 2; i++) {
        ck_assert_ptr_null(out[i].image);
        ck_assert_ptr_null(out[i].device_pixels);
    }
    ck_assert_int_eq(dh_dicom_device_to_host(bytes, bytes, 16, NULL, msg, sizeof msg),
                     DH_DICOM_ERR_UNSUPPORTED);
    dh_dicom_device_image_release(&out[0], NULL); /* zeroed: nothing to free */
}
END_TEST

/* The public API: the same refusal through the context, items checked first. */
START_TEST(test_public_api_says_why_not)
{
    dh_ctx *ctx = dh_ctx_create();
    ck_assert_ptr_nonnull(ctx);
    dh_device_image out[1];
    const dh_memory_item nameless = {"x", 1, NULL};
    ck_assert_int_eq(dh_decode_to_device(ctx, &nameless, 1, NULL, out), DH_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(dh_ctx_error(ctx), "item 0") != NULL, "%s", dh_ctx_error(ctx));
    char why[DH_DICOM_MSG_LEN];
    if (!dh_gpu_decoders_available(why, sizeof why)) {
        const dh_memory_item item = {"x", 1, "x.dcm"};
        ck_assert_int_eq(dh_decode_to_device(ctx, &item, 1, NULL, out), DH_ERR_NO_DEVICE);
        ck_assert_msg(strstr(dh_ctx_error(ctx), why) != NULL, "%s", dh_ctx_error(ctx));
    }
    dh_device_image_release(NULL, NULL);
    dh_ctx_free(ctx);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * GPU: every file of the folders in one batch
 * ------------------------------------------------------------------------------------------- */
typedef struct files {
    size_t count;
    char *path[MAX_FILES];
    dh_dicom_batch_input in[MAX_FILES];
} files;

static files *gathered; /* nftw's callback has no user argument */
static int sv1_on_gpu;  /* SV1 files nvJPEG read whole, counted by check_file */

static int gather(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    if (type != FTW_F || strcmp(base, "MANIFEST.tsv") == 0 || strcmp(base, "README.md") == 0 ||
        strstr(base, ".values") != NULL || gathered->count == MAX_FILES)
        return 0;
    FILE *f = fopen(path, "rb");
    unsigned char *bytes = malloc((size_t)st->st_size + 1);
    const size_t n = f && bytes ? fread(bytes, 1, (size_t)st->st_size, f) : 0;
    if (f)
        fclose(f);
    if (n != (size_t)st->st_size) {
        free(bytes);
        return 0;
    }
    gathered->path[gathered->count] = strdup(path);
    gathered->in[gathered->count++] = (dh_dicom_batch_input){.data = bytes, .size = n};
    return 0;
}

static int is_syntax(const dh_dicom_image *img, const char *uid)
{
    return strcmp(img->transfer_syntax_uid, uid) == 0;
}

static int jpeg2000_syntax(const dh_dicom_image *img)
{
    return strncmp(img->transfer_syntax_uid, "1.2.840.10008.1.2.4.9", 21) == 0 ||
           strncmp(img->transfer_syntax_uid, "1.2.840.10008.1.2.4.20", 22) == 0;
}

static int32_t sample(const dh_dicom_image *img, const void *cells, size_t i)
{
    return img->format.is_signed ? ((const int16_t *)cells)[i] : ((const uint16_t *)cells)[i];
}

/* One file of the batch against its CPU read; returns the failures. */
static int check_file(const char *path, const dh_dicom_batch_input *in,
                      const dh_dicom_device_image *got, int *generated_on_gpu)
{
    char msg[DH_DICOM_MSG_LEN] = "";
    dh_dicom_image *cpu = NULL;
    const dh_dicom_status cs = dh_dicom_read_memory(in->data, in->size, 1, &cpu, msg, sizeof msg);
    int failures = 0;
    if (cs != got->status) {
        printf("FAIL %s: CPU status %d (%s), batch %d (%s)\n", path, cs, msg, got->status,
               got->msg);
        failures++;
    }
    if (cs != DH_DICOM_OK || got->status != DH_DICOM_OK) {
        dh_dicom_image_free(cpu);
        return failures;
    }
    const dh_dicom_image *img = got->image;
    const size_t n = (size_t)cpu->format.rows * cpu->format.columns * cpu->frames;
    const size_t gpu_n = (size_t)img->format.rows * img->format.columns * img->frames;
    uint16_t *host = malloc(n * 2);
    if (gpu_n != n || img->format.is_signed != cpu->format.is_signed || img->pixels != NULL ||
        got->gpu_frames + got->cpu_frames != img->frames || host == NULL ||
        dh_dicom_device_to_host(host, got->device_pixels, n * 2, NULL, msg, sizeof msg) !=
            DH_DICOM_OK) {
        printf("FAIL %s: the batch's image differs in size, sign or frame counts, or cannot be "
               "copied back (%s)\n", path, msg);
        free(host);
        dh_dicom_image_free(cpu);
        return failures + 1;
    }
    const int lossy = is_syntax(cpu, "1.2.840.10008.1.2.4.91") && got->gpu_frames > 0;
    int32_t worst = 0;
    size_t first = n;
    for (size_t i = 0; i < n; i++) {
        int32_t d = sample(img, host, i) - sample(cpu, cpu->pixels, i);
        d = d < 0 ? -d : d;
        if (d != 0 && first == n)
            first = i;
        worst = d > worst ? d : worst;
    }
    if (worst > (lossy ? LOSSY_BOUND : 0)) {
        printf("FAIL %s: values differ from the CPU read by up to %d (sample %zu: %d against "
               "%d)\n", path, worst, first, sample(img, host, first),
               sample(cpu, cpu->pixels, first));
        failures++;
    }
    const int all_gpu = got->gpu_frames == img->frames;
    /* JPEG lossless SV1 goes to nvJPEG where DH_GPU_JPEG_LOSSLESS=1 admits its frames. */
    const int sv1 = is_syntax(cpu, "1.2.840.10008.1.2.4.70");
    sv1_on_gpu += sv1 && all_gpu;
    if (all_gpu != (strcmp(img->decoder, sv1 ? "nvjpeg" : "nvjpeg2k") == 0) ||
        (!all_gpu && jpeg2000_syntax(cpu) && img->decoder_note[0] == '\0') ||
        (!jpeg2000_syntax(cpu) && !all_gpu && strcmp(img->decoder, cpu->decoder) != 0)) {
        printf("FAIL %s: decoder %s (%s) for %u of %u frames on the GPU (CPU read: %s)\n", path,
               img->decoder, img->decoder_note, got->gpu_frames, img->frames, cpu->decoder);
        failures++;
    }
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    /* make_streams.py's 16-bit header over 12 stored bits with the bits above them set: with
     * DH_GPU_JPEG_LOSSLESS=1 nvJPEG must read it whole and the mask kernel give DCMTK's values
     * (compared above). */
    const char *lossless_asked = getenv("DH_GPU_JPEG_LOSSLESS");
    if (strstr(base, "p16_dirty") != NULL && lossless_asked && strcmp(lossless_asked, "1") == 0 &&
        !all_gpu) {
        printf("FAIL %s: the 16-bit header over 12 stored bits not read by nvJPEG whole: %s\n",
               path, img->decoder_note);
        failures++;
    }
    if (strncmp(base, "gen_", 4) == 0 && jpeg2000_syntax(cpu)) {
        *generated_on_gpu += all_gpu;
        if (!all_gpu) {
            printf("FAIL %s: a generated stream not read on the GPU whole: %s\n", path,
                   img->decoder_note);
            failures++;
        }
    }
    free(host);
    dh_dicom_image_free(cpu);
    return failures;
}

static int batch_once(files *fs, uint32_t workers)
{
    dh_dicom_device_image *out = calloc(fs->count, sizeof *out);
    dh_dicom_batch_timing t;
    char msg[DH_DICOM_MSG_LEN];
    const dh_dicom_batch_options o = {.workers = workers};
    if (out == NULL ||
        dh_dicom_read_batch_device(fs->in, fs->count, &o, NULL, out, &t, msg, sizeof msg) !=
            DH_DICOM_OK) {
        printf("FAIL: the batch did not run: %s\n", out ? msg : "out of memory");
        free(out);
        return 1;
    }
    int failures = 0, generated = 0, ok = 0;
    uint32_t gpu_frames = 0, cpu_frames = 0;
    sv1_on_gpu = 0;
    for (size_t i = 0; i < fs->count; i++) {
        failures += check_file(fs->path[i], &fs->in[i], &out[i], &generated);
        ok += out[i].status == DH_DICOM_OK;
        gpu_frames += out[i].gpu_frames;
        cpu_frames += out[i].cpu_frames;
        dh_dicom_device_image_release(&out[i], NULL);
    }
    printf("%u workers: %zu files (%d read), %u frames on the GPU, %u on the CPU; %d generated "
           "J2K/HTJ2K streams on the GPU; parse %.3f s, decode %.3f s, fallback %.3f s; %d "
           "failure(s)\n",
           workers, fs->count, ok, gpu_frames, cpu_frames, generated, t.parse, t.decode,
           t.fallback, failures);
    /* make_streams.py: J2K 8-16 bits signed and unsigned (10), HTJ2K unsigned (7), CT (2). */
    if (generated < 19) {
        printf("FAIL: only %d generated J2K/HTJ2K streams read on the GPU (19 expected)\n",
               generated);
        failures++;
    }
    /* DH_GPU_JPEG_LOSSLESS=1 (ctest test_dicom_gpu_batch_sv1_gpu): the frames measured exact
     * (the sweep's large ones, the real 2140x1760 radiograph) go to nvJPEG, the rest to DCMTK,
     * every value DCMTK's (checked above). */
    const char *lossless = getenv("DH_GPU_JPEG_LOSSLESS");
    printf("%d JPEG lossless SV1 files read by nvJPEG whole\n", sv1_on_gpu);
    if (lossless && strcmp(lossless, "1") == 0) {
        if (sv1_on_gpu == 0) {
            printf("FAIL: DH_GPU_JPEG_LOSSLESS=1 and no SV1 file read by nvJPEG\n");
            failures++;
        }
    }
    free(out);
    return failures;
}

/* dh_decode_to_device against the DICOM layer's batch (checked above against the CPU): the same
 * status, geometry, decoder and values for every file. */
static int public_api_once(files *fs)
{
    dh_memory_item *items = calloc(fs->count, sizeof *items);
    dh_device_image *pub = calloc(fs->count, sizeof *pub);
    dh_dicom_device_image *own = calloc(fs->count, sizeof *own);
    dh_ctx *ctx = dh_ctx_create();
    char msg[DH_DICOM_MSG_LEN];
    for (size_t i = 0; items && i < fs->count; i++)
        items[i] = (dh_memory_item){fs->in[i].data, fs->in[i].size, fs->path[i]};
    int failures = 0;
    if (!items || !pub || !own || !ctx ||
        dh_decode_to_device(ctx, items, fs->count, NULL, pub) != DH_OK ||
        dh_dicom_read_batch_device(fs->in, fs->count, NULL, NULL, own, NULL, msg, sizeof msg) !=
            DH_DICOM_OK) {
        printf("FAIL: dh_decode_to_device did not run: %s\n", ctx ? dh_ctx_error(ctx) : "");
        failures = 1;
        fs = NULL;
    }
    for (size_t i = 0; fs && i < fs->count; i++) {
        const size_t n = pub[i].status == DH_OK
                             ? (size_t)pub[i].columns * pub[i].rows * pub[i].frames * 2
                             : 0;
        unsigned char *a = malloc(n ? n : 1), *b = malloc(n ? n : 1);
        const int same =
            (int)pub[i].status == own[i].status &&
            (n == 0 ||
             (pub[i].frames == own[i].image->frames && pub[i].gpu_frames == own[i].gpu_frames &&
              strcmp(pub[i].decoder, own[i].image->decoder) == 0 &&
              dh_dicom_device_to_host(a, pub[i].d_samples, n, NULL, msg, sizeof msg) == 0 &&
              dh_dicom_device_to_host(b, own[i].device_pixels, n, NULL, msg, sizeof msg) == 0 &&
              memcmp(a, b, n) == 0));
        if (!same) {
            printf("FAIL %s: dh_decode_to_device gives status %d (%s), decoder %s; the DICOM "
                   "layer %d\n", fs->path[i], pub[i].status, pub[i].message, pub[i].decoder,
                   own[i].status);
            failures++;
        }
        free(a);
        free(b);
        dh_device_image_release(&pub[i], NULL);
        dh_dicom_device_image_release(&own[i], NULL);
    }
    printf("dh_decode_to_device: %d failure(s)\n", failures);
    dh_ctx_free(ctx);
    free(items);
    free(pub);
    free(own);
    return failures;
}

static size_t value_bytes(const dh_dicom_device_image *d)
{
    const dh_dicom_image *m = d->image;
    return (size_t)m->format.rows * m->format.columns * m->frames * 2;
}

/* The batch straight into the caller's memory (device_dest): every file decoded again into the
 * buffer a first batch gave ANOTHER file of the same size (a rotation within each size, so the
 * old contents are that other file's values unless the write happened), each file's values
 * then the CPU read's as in batch_once, the image pointing at that memory and marked as the
 * caller's (its release leaves it to the first batch's); one file given a byte too little fails
 * alone with DH_DICOM_ERR_MISMATCH. */
static int into_place_once(files *fs)
{
    dh_dicom_device_image *first = calloc(fs->count, sizeof *first);
    dh_dicom_device_image *again = calloc(fs->count, sizeof *again);
    dh_dicom_batch_input *in = calloc(fs->count, sizeof *in);
    char msg[DH_DICOM_MSG_LEN];
    int failures = 0, generated = 0, moved = 0;
    if (!first || !again || !in ||
        dh_dicom_read_batch_device(fs->in, fs->count, NULL, NULL, first, NULL, msg, sizeof msg) !=
            DH_DICOM_OK) {
        printf("FAIL: the first batch did not run: %s\n", msg);
        failures = 1;
        fs = NULL;
    }
    size_t small = SIZE_MAX; /* a file read, for the too-small case */
    for (size_t i = 0; fs && i < fs->count; i++) {
        in[i] = fs->in[i];
        if (first[i].status != DH_DICOM_OK)
            continue;
        small = small == SIZE_MAX ? i : small;
        size_t j = i;
        for (size_t k = 1; k <= fs->count; k++) {
            const size_t c = (i + k) % fs->count;
            if (first[c].status == DH_DICOM_OK && value_bytes(&first[c]) == value_bytes(&first[i])) {
                j = c;
                break;
            }
        }
        moved += j != i;
        in[i].device_dest = first[j].device_pixels;
        in[i].capacity = value_bytes(&first[j]);
    }
    if (fs && dh_dicom_read_batch_device(in, fs->count, NULL, NULL, again, NULL, msg,
                                         sizeof msg) != DH_DICOM_OK) {
        printf("FAIL: the batch into place did not run: %s\n", msg);
        failures++;
        fs = NULL;
    }
    for (size_t i = 0; fs && i < fs->count; i++) {
        failures += check_file(fs->path[i], &in[i], &again[i], &generated);
        if (again[i].status == DH_DICOM_OK && in[i].device_dest != NULL &&
            (again[i].device_pixels != in[i].device_dest || !again[i].callers_memory)) {
            printf("FAIL %s: not decoded into the memory given\n", fs->path[i]);
            failures++;
        }
        dh_dicom_device_image_release(&again[i], NULL); /* leaves first's memory alone */
    }
    if (fs && small != SIZE_MAX) {
        dh_dicom_batch_input tight = in[small];
        tight.capacity = value_bytes(&first[small]) - 1;
        dh_dicom_device_image one;
        if (dh_dicom_read_batch_device(&tight, 1, NULL, NULL, &one, NULL, msg, sizeof msg) !=
                DH_DICOM_OK ||
            one.status != DH_DICOM_ERR_MISMATCH || strstr(one.msg, "bytes of GPU memory") == NULL ||
            one.device_pixels != NULL) {
            printf("FAIL %s: a byte too little gives status %d (%s)\n", fs->path[small],
                   one.status, one.msg);
            failures++;
        }
        dh_dicom_device_image_release(&one, NULL);
    }
    for (size_t i = 0; fs && i < fs->count; i++)
        dh_dicom_device_image_release(&first[i], NULL);
    printf("into place: %d file(s) decoded into another file's buffer; %d failure(s)\n", moved,
           failures);
    if (fs && moved == 0) {
        printf("FAIL: no two files of the same size to swap buffers\n");
        failures++;
    }
    free(first);
    free(again);
    free(in);
    return failures;
}

static int gpu_main(int argc, char **argv)
{
    char why[DH_DICOM_MSG_LEN];
    if (!dh_dicom_gpu_decoders(why, sizeof why)) {
        printf("GPU decoders unusable here, skipped: %s\n", why);
        return DH_TEST_SKIP;
    }
    files *fs = calloc(1, sizeof *fs);
    gathered = fs;
    for (int i = 2; i < argc; i++)
        if (nftw(argv[i], gather, 16, FTW_PHYS) != 0)
            printf("note: %s cannot be walked\n", argv[i]);
    gathered = NULL;
    const int failures =
        batch_once(fs, 16) + batch_once(fs, 1) + public_api_once(fs) + into_place_once(fs);
    for (size_t i = 0; i < fs->count; i++) {
        free(fs->path[i]);
        free((void *)fs->in[i].data);
    }
    free(fs);
    printf("%s: %d failure(s)\n", failures ? "FAILED" : "passed", failures);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "--gpu") == 0)
        return gpu_main(argc, argv);
    const dh_test synthetic[] = {
        DH_TEST(test_batch_arguments),
        DH_TEST(test_batch_says_why_not),
        DH_TEST(test_public_api_says_why_not),
    };
    return dh_test_main(argc, argv, "gpu batch", 60, DH_TESTS(synthetic), NULL, 0);
}
