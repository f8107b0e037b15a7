// SPDX-License-Identifier: MIT
/*
 * probe_sv1.c: where nvJPEG's lossless backend decodes JPEG lossless SV1 frames exactly (issue
 * 24). The files' frames go through dh_dicom_read_batch_device twice: each file alone in its own
 * batch, then all files in ONE batch (their frames in shared nvjpegDecodeBatched calls); the
 * device values, copied back, are compared with DCMTK's CPU read of the same file.
 *
 *   probe_sv1 FILE...         the map: every frame to nvJPEG (DH_GPU_JPEG_LOSSLESS=all), whatever
 *                             the admission rule says; wrong values are the finding (exit 0 when
 *                             every file was read and compared)
 *   probe_sv1 --rule FILE...  the check of the rule (DH_GPU_JPEG_LOSSLESS=1): every file's values
 *                             must be DCMTK's, alone and in the batch, and nvJPEG must have read
 *                             some (exit 1 otherwise)
 * (tests/gpu_decode/make_sv1_sweep.py makes the sweep.) Prints one Markdown row per file: size,
 * precision, file bytes and, alone and in the batch, "exact" with the frames nvJPEG read, or the
 * number of wrong samples and the first one (frame, row, column, value against DCMTK's).
 */
#define _POSIX_C_SOURCE 200809L
#include "dh_dicom.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILES 4096

struct probe_file {
    const char *path;
    unsigned char *bytes;
    size_t size;
    dh_dicom_image *cpu;
};

static int read_whole(struct probe_file *p)
{
    FILE *f = fopen(p->path, "rb");
    long n = -1;
    p->bytes = NULL;
    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0)
        p->bytes = malloc((size_t)n);
    const int ok = p->bytes && fread(p->bytes, 1, (size_t)n, f) == (size_t)n;
    if (f)
        fclose(f);
    p->size = ok ? (size_t)n : 0;
    return ok;
}

/* The outcome of one file's device values against the CPU read, as a table cell. */
static int compare(const struct probe_file *p, const dh_dicom_device_image *out, char *cell,
                   size_t len)
{
    if (out->status != DH_DICOM_OK) {
        snprintf(cell, len, "failed: %s", out->msg);
        return -1;
    }
    const dh_dicom_image *c = p->cpu;
    const uint16_t *cpu = (const uint16_t *)c->pixels;
    const size_t frame = (size_t)c->format.rows * c->format.columns, n = frame * c->frames;
    uint16_t *host = malloc(n * 2);
    char msg[DH_DICOM_MSG_LEN];
    if (host == NULL ||
        dh_dicom_device_to_host(host, out->device_pixels, n * 2, NULL, msg, sizeof msg) != 0) {
        snprintf(cell, len, "copy back failed");
        free(host);
        return -1;
    }
    size_t wrong = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (host[i] != cpu[i] && wrong++ == 0)
            first = i;
    if (wrong == 0)
        snprintf(cell, len, "exact (%u of %u frames nvJPEG)", out->gpu_frames, c->frames);
    else
        snprintf(cell, len, "%zu wrong, first frame %zu row %zu col %zu: %u for %u", wrong,
                 first / frame + 1, first % frame / c->format.columns,
                 first % c->format.columns, host[first], cpu[first]);
    free(host);
    return wrong != 0;
}

static const char *name_of(const char *path)
{
    return strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
}

static int batch(struct probe_file *files, size_t n, dh_dicom_device_image *out)
{
    dh_dicom_batch_input *in = malloc(n * sizeof *in);
    char msg[DH_DICOM_MSG_LEN];
    for (size_t i = 0; i < n; i++)
        in[i] = (dh_dicom_batch_input){.data = files[i].bytes, .size = files[i].size};
    const dh_dicom_status s = dh_dicom_read_batch_device(in, n, NULL, NULL, out, NULL, msg,
                                                         sizeof msg);
    free(in);
    if (s != DH_DICOM_OK)
        fprintf(stderr, "probe_sv1: batch: %s\n", msg);
    return s == DH_DICOM_OK;
}

int main(int argc, char **argv)
{
    const int rule = argc > 1 && strcmp(argv[1], "--rule") == 0;
    argv += rule;
    argc -= rule;
    const size_t n = (size_t)argc - 1;
    char why[DH_DICOM_MSG_LEN];
    if (n == 0 || n > MAX_FILES) {
        fprintf(stderr, "usage: probe_sv1 [--rule] FILE... (at most %d)\n", MAX_FILES);
        return 2;
    }
    if (!dh_dicom_gpu_decoders(why, sizeof why)) {
        printf("probe_sv1: no GPU decoders: %s\n", why);
        return 1;
    }
    setenv("DH_GPU_JPEG_LOSSLESS", rule ? "1" : "all", 1);
    size_t on_gpu = 0;
    struct probe_file *files = calloc(n, sizeof *files);
    dh_dicom_device_image *alone = calloc(n, sizeof *alone), *together = calloc(n, sizeof *alone);
    int failed = 0;
    size_t exact[2] = {0, 0}, wrong[2] = {0, 0};
    char cell[640];
    /* Each file alone first, its row printed at once (a crash in the batch keeps them). */
    printf("| file | rows x cols x frames | bits | file bytes | alone |\n| --- | --- | --- | --- | --- |\n");
    for (size_t i = 0; i < n; i++) {
        files[i].path = argv[i + 1];
        if (!read_whole(&files[i]) || dh_dicom_read_memory(files[i].bytes, files[i].size, 1,
                                                           &files[i].cpu, why,
                                                           sizeof why) != DH_DICOM_OK) {
            fprintf(stderr, "probe_sv1: %s: cannot read on the CPU: %s\n", argv[i + 1], why);
            return 1;
        }
        const dh_dicom_image *c = files[i].cpu;
        const int r = batch(&files[i], 1, &alone[i]) ? compare(&files[i], &alone[i], cell, sizeof cell) : -1;
        failed |= r < 0;
        exact[0] += r == 0, wrong[0] += r == 1;
        printf("| %s | %ux%ux%u | %u | %zu | %s |\n", name_of(files[i].path), c->format.rows,
               c->format.columns, c->frames, c->format.bits_stored, files[i].size,
               r < 0 ? "failed" : cell);
        fflush(stdout);
        dh_dicom_device_image_release(&alone[i], NULL);
    }
    printf("\n| file | in one batch of %zu files |\n| --- | --- |\n", n);
    fflush(stdout);
    failed |= !batch(files, n, together);
    for (size_t i = 0; i < n && !failed; i++) {
        const int r = compare(&files[i], &together[i], cell, sizeof cell);
        failed |= r < 0;
        exact[1] += r == 0, wrong[1] += r == 1;
        on_gpu += together[i].gpu_frames > 0;
        printf("| %s | %s |\n", name_of(files[i].path), cell);
        dh_dicom_device_image_release(&together[i], NULL);
    }
    for (size_t i = 0; i < n; i++) {
        dh_dicom_image_free(files[i].cpu);
        free(files[i].bytes);
    }
    printf("probe_sv1: alone %zu exact, %zu wrong; in one batch %zu exact, %zu wrong; of %zu "
           "files\n", exact[0], wrong[0], exact[1], wrong[1], n);
    if (rule) {
        printf("probe_sv1: --rule: %zu of %zu files read by nvJPEG in the batch; %s\n", on_gpu, n,
               wrong[0] + wrong[1] == 0 && on_gpu > 0 ? "every value DCMTK's: passed"
                                                     : "FAILED");
        failed |= wrong[0] + wrong[1] > 0 || on_gpu == 0;
    }
    free(files);
    free(alone);
    free(together);
    return failed;
}
