// SPDX-License-Identifier: MIT
/*
 * bench_decode.c: how fast the DICOM layer reads a file's pixels, one thread: the whole of
 * dh_dicom_read_memory with pixels (parse, fragments, codec, stored values) on a file already in
 * memory, repeated. Prints one line per file: decoded pixel megabytes (rows x columns x frames x
 * 2 bytes, 10^6) per second, best and median of the runs. bench_jpeg2000.py puts these beside
 * OpenJPEG's own opj_decompress on the same code streams.
 *
 * Usage: bench_decode RUNS FILE...
 */
#define _POSIX_C_SOURCE 200809L
#include "dh_dicom.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int bench_file(const char *path, int runs)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "bench_decode: %s: cannot open\n", path);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    const long size = ftell(f);
    rewind(f);
    unsigned char *bytes = malloc((size_t)size);
    double *seconds = malloc((size_t)runs * sizeof *seconds);
    if (!bytes || !seconds || fread(bytes, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "bench_decode: %s: cannot read\n", path);
        fclose(f);
        free(bytes);
        free(seconds);
        return 1;
    }
    fclose(f);
    double megabytes = 0;
    for (int r = 0; r < runs; r++) {
        char msg[DH_DICOM_MSG_LEN];
        dh_dicom_image *img = NULL;
        const double t0 = now();
        const dh_dicom_status st =
            dh_dicom_read_memory(bytes, (size_t)size, 1, &img, msg, sizeof msg);
        seconds[r] = now() - t0;
        if (st != DH_DICOM_OK) {
            fprintf(stderr, "bench_decode: %s: %s\n", path, msg);
            free(bytes);
            free(seconds);
            return 1;
        }
        megabytes = (double)img->format.rows * img->format.columns * img->frames * 2 / 1e6;
        dh_dicom_image_free(img);
    }
    qsort(seconds, (size_t)runs, sizeof *seconds, by_value);
    printf("%s\t%.2f MB\tbest %.1f ms\t%.1f MB/s\tmedian %.1f ms\t%.1f MB/s\n", path, megabytes,
           seconds[0] * 1e3, megabytes / seconds[0], seconds[runs / 2] * 1e3,
           megabytes / seconds[runs / 2]);
    free(bytes);
    free(seconds);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3 || atoi(argv[1]) < 1) {
        fprintf(stderr, "usage: bench_decode RUNS FILE...\n");
        return 2;
    }
    int failed = 0;
    for (int i = 2; i < argc; i++)
        failed |= bench_file(argv[i], atoi(argv[1]));
    return failed;
}
