// SPDX-License-Identifier: MIT
/*
 * fuzz_read_memory.c: the reading path under arbitrary bytes. One input is handed to the
 * metadata-only read that series scans use (dh_dicom_read_memory without pixels), then to
 * dh_volume_read_memory, and when that succeeds the volume's default histogram is computed on
 * the CPU. Whatever the bytes say, each call must return a status: never crash, hang or make
 * an allocation that the real length of the data does not justify (libFuzzer's -malloc_limit_mb
 * and -timeout report those).
 *
 * Built with -DDH_LIBFUZZER it is a libFuzzer target; without, main() replays files and
 * folders of files (a checked-in corpus, or crashes found elsewhere) through the same entry
 * point, so every build keeps the corpus as a regression test.
 */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "dh_dicom.h"
#include "dicomhist.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A status outside the documented set would be a bug of its own: trap so the fuzzer reports
 * it with the input. */
static void check_status(dh_status st)
{
    if ((int)st < (int)DH_OK || (int)st > (int)DH_ERR_INTERNAL)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char msg[DH_DICOM_MSG_LEN];
    dh_dicom_image *meta = NULL;
    dh_status st = dh_dicom_read_memory(data, size, 0, &meta, msg, sizeof msg);
    check_status(st);
    if ((st == DH_OK) != (meta != NULL))
        abort();
    dh_dicom_image_free(meta);

    dh_ctx *ctx = dh_ctx_create();
    if (!ctx)
        return 0;
    dh_ctx_set_threads(ctx, 1); /* one input, one core: the fuzzer runs its own jobs */
    dh_volume *volume = NULL;
    st = dh_volume_read_memory(ctx, data, size, "fuzz-input", &volume);
    check_status(st);
    if (st == DH_OK) {
        dh_hist_params params;
        dh_hist_params_init(&params);
        params.device = DH_DEVICE_CPU;
        dh_histogram *hist = NULL;
        st = dh_hist_compute(ctx, volume, &params, &hist);
        check_status(st);
        /* The defaults cover every representable value: nothing may fall outside. */
        if (st == DH_OK && (hist->total != dh_volume_sample_count(volume) ||
                            hist->underflow != 0 || hist->overflow != 0))
            abort();
        dh_histogram_free(hist);
    }
    dh_volume_free(volume);
    dh_ctx_free(ctx);
    return 0;
}

#ifndef DH_LIBFUZZER
/* ---- replay without libFuzzer: every file named, every file inside every folder named ---- */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open\n", path);
        return -1;
    }
    size_t cap = 1 << 16, size = 0, got;
    uint8_t *buf = malloc(cap);
    while (buf && (got = fread(buf + size, 1, cap - size, f)) > 0) {
        size += got;
        if (size == cap) {
            uint8_t *grown = realloc(buf, cap * 2);
            if (!grown)
                free(buf);
            buf = grown;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "%s: out of memory\n", path);
        return -1;
    }
    LLVMFuzzerTestOneInput(buf, size);
    free(buf);
    return 0;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replays the regular files of a folder in name order; returns the number replayed or -1. */
static long replay_folder(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "%s: cannot open folder\n", dir);
        return -1;
    }
    char **names = NULL;
    size_t count = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char **grown = realloc(names, (count + 1) * sizeof *names);
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        char *path = malloc(len);
        if (!grown || !path) {
            free(path);
            names = grown ? grown : names;
            break;
        }
        names = grown;
        snprintf(path, len, "%s/%s", dir, e->d_name);
        names[count++] = path;
    }
    closedir(d);
    qsort(names, count, sizeof *names, compare_names);
    long replayed = 0;
    for (size_t i = 0; i < count; i++) {
        struct stat st;
        if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
            if (replay_file(names[i]) != 0)
                replayed = -1;
            else if (replayed >= 0)
                replayed++;
        }
        free(names[i]);
    }
    free(names);
    return replayed;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|FOLDER...\n", argv[0]);
        return 2;
    }
    long total = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        long n = (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) ? replay_folder(argv[i])
                                                                   : replay_file(argv[i]) + 1;
        if (n < 0)
            return 1;
        total += n;
    }
    if (total == 0) {
        fprintf(stderr, "no input replayed\n");
        return 1;
    }
    printf("%ld input(s) replayed without a crash\n", total);
    return 0;
}
#endif
