// SPDX-License-Identifier: MIT
/*
 * bench_decode.c: how fast the DICOM layer reads a file's pixels, one thread: the whole of
 * dh_dicom_read_memory with pixels (parse, fragments, codec, stored values) on a file already in
 * memory, repeated. Prints one line per file: decoded pixel megabytes (rows x columns x frames x
 * 2 bytes, 10^6) per second, best and median of the runs. bench_jpeg2000.py puts these beside
 * OpenJPEG's own opj_decompress on the same code streams.
 *
 * Usage: bench_decode RUNS FILE...
 *
 * GPU decoding (issue 24): bench_decode --gpu THREADS RUNS FILE... reads each file RUNS times
 * per thread four ways, all from memory, and prints one Markdown row per file: the CPU decoders
 * (OpenJPEG, DCMTK) on one thread and on THREADS threads at once (each thread reading the file
 * on its own, throughput of all together), and the GPU decoders (nvJPEG2000, nvJPEG: every frame
 * of the file in one call) the same two ways. Values are checked equal to the CPU's first.
 */
#define _POSIX_C_SOURCE 200809L
#include "dh_dicom.h"

#include <pthread.h>
#include <string.h>

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

/* ---- GPU against CPU ------------------------------------------------------------------------ */
typedef struct reader {
    const unsigned char *bytes;
    size_t size;
    int gpu, runs, failed;
    char decoder[16];
} reader;

static void *read_runs(void *arg)
{
    reader *r = arg;
    const dh_dicom_read_options o = {.codec_threads = 0, .gpu_decode = r->gpu};
    for (int i = 0; i < r->runs; i++) {
        char msg[DH_DICOM_MSG_LEN];
        dh_dicom_image *img = NULL;
        if (dh_dicom_read_memory_with(r->bytes, r->size, 1, &o, &img, msg, sizeof msg) != DH_DICOM_OK) {
            fprintf(stderr, "bench_decode: %s\n", msg);
            r->failed = 1;
            return NULL;
        }
        snprintf(r->decoder, sizeof r->decoder, "%s", img->decoder);
        dh_dicom_image_free(img);
    }
    return NULL;
}

/* Pixel megabytes per second of `threads` threads each reading the file `runs` times. */
static double throughput(const unsigned char *bytes, size_t size, int gpu, int threads, int runs,
                         double megabytes, char *decoder)
{
    reader r[128];
    pthread_t t[128];
    const double t0 = now();
    for (int i = 0; i < threads; i++) {
        r[i] = (reader){.bytes = bytes, .size = size, .gpu = gpu, .runs = runs};
        pthread_create(&t[i], NULL, read_runs, &r[i]);
    }
    int failed = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        failed |= r[i].failed;
    }
    const double seconds = now() - t0;
    snprintf(decoder, 16, "%s", r[0].decoder);
    return failed ? -1 : megabytes * threads * runs / seconds;
}

static int compare_file(const char *path, int threads, int runs)
{
    FILE *f = fopen(path, "rb");
    long size = -1;
    unsigned char *bytes = NULL;
    if (f && fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0)
        bytes = malloc((size_t)size);
    if (!bytes || fread(bytes, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "bench_decode: %s: cannot read\n", path);
        if (f)
            fclose(f);
        free(bytes);
        return 1;
    }
    fclose(f);
    char msg[DH_DICOM_MSG_LEN];
    dh_dicom_image *cpu = NULL, *gpu = NULL;
    const dh_dicom_read_options on = {.gpu_decode = 1};
    if (dh_dicom_read_memory(bytes, (size_t)size, 1, &cpu, msg, sizeof msg) != DH_DICOM_OK ||
        dh_dicom_read_memory_with(bytes, (size_t)size, 1, &on, &gpu, msg, sizeof msg) != DH_DICOM_OK) {
        fprintf(stderr, "bench_decode: %s: %s\n", path, msg);
        free(bytes);
        return 1;
    }
    const size_t n = (size_t)cpu->format.rows * cpu->format.columns * cpu->frames;
    const int same = memcmp(cpu->pixels, gpu->pixels, n * 2) == 0;
    const double megabytes = (double)n * 2 / 1e6;
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    printf("| %s | %u | %.1f | %s |", name, cpu->frames, megabytes, same ? "equal" : "DIFFERENT");
    dh_dicom_image_free(cpu);
    dh_dicom_image_free(gpu);
    char decoder[4][16];
    const double rates[4] = {throughput(bytes, (size_t)size, 0, 1, runs, megabytes, decoder[0]),
                             throughput(bytes, (size_t)size, 0, threads, runs, megabytes, decoder[1]),
                             throughput(bytes, (size_t)size, 1, 1, runs, megabytes, decoder[2]),
                             throughput(bytes, (size_t)size, 1, threads, runs, megabytes, decoder[3])};
    for (int i = 0; i < 4; i++)
        printf(" %.0f (%s) |", rates[i], decoder[i]);
    printf(" %.1fx |\n", rates[3] / rates[1]);
    free(bytes);
    return !same || rates[0] < 0 || rates[1] < 0 || rates[2] < 0 || rates[3] < 0;
}

static int compare_main(int argc, char **argv)
{
    const int threads = argc > 2 ? atoi(argv[2]) : 0, runs = argc > 3 ? atoi(argv[3]) : 0;
    if (argc < 5 || threads < 1 || threads > 128 || runs < 1) {
        fprintf(stderr, "usage: bench_decode --gpu THREADS RUNS FILE...\n");
        return 2;
    }
    char why[DH_DICOM_MSG_LEN];
    if (!dh_dicom_gpu_decoders(why, sizeof why)) {
        printf("bench_decode: no GPU decoders: %s\n", why);
        return 1;
    }
    printf("| file | frames | MB | GPU values | CPU 1 thread MB/s | CPU %d threads MB/s | GPU 1 thread "
           "MB/s | GPU %d threads MB/s | GPU/CPU, %d threads |\n",
           threads, threads, threads);
    printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    int failed = 0;
    for (int i = 4; i < argc; i++)
        failed |= compare_file(argv[i], threads, runs);
    return failed;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "--gpu") == 0)
        return compare_main(argc, argv);
    if (argc < 3 || atoi(argv[1]) < 1) {
        fprintf(stderr, "usage: bench_decode RUNS FILE...\n");
        return 2;
    }
    int failed = 0;
    for (int i = 2; i < argc; i++)
        failed |= bench_file(argv[i], atoi(argv[1]));
    return failed;
}
