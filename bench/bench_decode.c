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
 *
 * The batch into device memory (issue 24, dh_dicom_read_batch_device):
 *   bench_decode --batch [--only-batch] WORKERS COPIES RUNS FILE...
 * for each file: COPIES copies of it make one batch (24 frames x 10 = 240 frames); first the
 * batch's device values are copied back and checked equal to the CPU read of the file (exit 1
 * otherwise), and the CPU's values written to FILE.values (raw 16-bit, for bench_nvimgcodec.py
 * to check nvImageCodec against). Then, unless --only-batch: the CPU decoders on as many threads
 * as the machine has cores and the one-file GPU path on as many, each thread reading the file
 * COPIES times (the batch's frames). Then the batch for each worker count of the comma list
 * WORKERS: one batch to warm up, RUNS timed; MB/s of the median, whole call and the decode step
 * (dh_dicom_batch_timing: from the first frame handed to the GPU until it is done, overlapping
 * the parse since session 17), with the parse and when the first frame reached the GPU. One Markdown row per measurement. DH_GPU_J2K_MEMORY=default
 * measures nvJPEG2000's own allocation instead of our pool (dicom_gpu_memory.cpp).
 */
#define _POSIX_C_SOURCE 200809L
#include "dh_dicom.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

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

/* ---- The batch into device memory ---------------------------------------------------------- */
static int read_whole(const char *path, unsigned char **bytes, size_t *size)
{
    FILE *f = fopen(path, "rb");
    long n = -1;
    *bytes = NULL;
    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0)
        *bytes = malloc((size_t)n);
    const int ok = *bytes && fread(*bytes, 1, (size_t)n, f) == (size_t)n;
    if (f)
        fclose(f);
    if (!ok) {
        fprintf(stderr, "bench_decode: %s: cannot read\n", path);
        free(*bytes);
        return 0;
    }
    *size = (size_t)n;
    return 1;
}

/* One batch of `copies` copies of the file; fills timing; frees what it decoded unless `keep`. */
static int run_batch(const dh_dicom_batch_input *in, int copies, unsigned workers,
                     dh_dicom_device_image *out, dh_dicom_batch_timing *timing, double *seconds,
                     int keep)
{
    char msg[DH_DICOM_MSG_LEN];
    const dh_dicom_batch_options o = {.workers = workers};
    const double t0 = now();
    if (dh_dicom_read_batch_device(in, (size_t)copies, &o, NULL, out, timing, msg, sizeof msg) !=
        DH_DICOM_OK) {
        fprintf(stderr, "bench_decode: batch: %s\n", msg);
        return 0;
    }
    *seconds = now() - t0;
    int ok = 1;
    for (int c = 0; c < copies; c++) {
        if (out[c].status != DH_DICOM_OK) {
            fprintf(stderr, "bench_decode: batch file %d: %s\n", c, out[c].msg);
            ok = 0;
        }
        if (!keep)
            dh_dicom_device_image_release(&out[c], NULL);
    }
    return ok;
}

/* The batch's values against the CPU read; the CPU's written to path.values. */
static int check_batch(const char *path, const dh_dicom_batch_input *in, int copies,
                       unsigned workers, dh_dicom_device_image *out, uint32_t *gpu_frames)
{
    char msg[DH_DICOM_MSG_LEN];
    dh_dicom_image *cpu = NULL;
    if (dh_dicom_read_memory(in[0].data, in[0].size, 1, &cpu, msg, sizeof msg) != DH_DICOM_OK) {
        fprintf(stderr, "bench_decode: %s: %s\n", path, msg);
        return 0;
    }
    const size_t bytes = (size_t)cpu->format.rows * cpu->format.columns * cpu->frames * 2;
    char values[4096];
    snprintf(values, sizeof values, "%s.values", path);
    FILE *f = fopen(values, "wb");
    int same = f && fwrite(cpu->pixels, 1, bytes, f) == bytes;
    if (f)
        fclose(f);
    dh_dicom_batch_timing t;
    double s;
    unsigned char *host = malloc(bytes);
    same = same && host && run_batch(in, copies, workers, out, &t, &s, 1);
    *gpu_frames = 0;
    for (int c = 0; same && c < copies; c++) {
        same = dh_dicom_device_to_host(host, out[c].device_pixels, bytes, NULL, msg,
                                       sizeof msg) == DH_DICOM_OK &&
               memcmp(host, cpu->pixels, bytes) == 0;
        *gpu_frames += out[c].gpu_frames;
    }
    for (int c = 0; c < copies; c++)
        dh_dicom_device_image_release(&out[c], NULL);
    free(host);
    dh_dicom_image_free(cpu);
    return same;
}

static void batch_file(const char *path, const char *worker_list, int copies, int runs,
                       int only_batch, int *failed)
{
    unsigned char *bytes;
    size_t size;
    if (!read_whole(path, &bytes, &size)) {
        *failed = 1;
        return;
    }
    dh_dicom_batch_input *in = malloc((size_t)copies * sizeof *in);
    dh_dicom_device_image *out = calloc((size_t)copies, sizeof *out);
    double *seconds = malloc((size_t)runs * sizeof *seconds);
    double *decode = malloc((size_t)runs * sizeof *decode);
    for (int c = 0; c < copies; c++)
        in[c] = (dh_dicom_batch_input){.data = bytes, .size = size};
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    const char *memory = getenv("DH_GPU_J2K_MEMORY");
    uint32_t on_gpu = 0;
    dh_dicom_image *meta = NULL;
    char msg[DH_DICOM_MSG_LEN];
    if (dh_dicom_read_memory(bytes, size, 0, &meta, msg, sizeof msg) != DH_DICOM_OK ||
        !check_batch(path, in, copies, 16, out, &on_gpu)) {
        printf("| %s | values | DIFFERENT or unreadable: stop |\n", name);
        *failed = 1;
        goto done;
    }
    const uint32_t frames = meta->frames * (uint32_t)copies;
    const double megabytes = (double)meta->format.rows * meta->format.columns * frames * 2 / 1e6;
    printf("| %s | batch of %u frames (%d copies), %.1f MB | values equal to the CPU read, %u of %u "
           "frames on the GPU | memory %s |\n",
           name, frames, copies, megabytes, on_gpu, frames, memory ? memory : "pool");
    if (!only_batch) {
        const long cores = sysconf(_SC_NPROCESSORS_ONLN);
        const int threads = cores > 0 && cores < 128 ? (int)cores : 16;
        char decoder[16];
        const double file_mb = megabytes / copies;
        const double cpu = throughput(bytes, size, 0, threads, 1, file_mb, decoder);
        printf("| %s | CPU, %d threads, whole reads | %.0f MB/s (%s) | |\n", name, threads, cpu,
               decoder);
        const double gpu = throughput(bytes, size, 1, threads, 1, file_mb, decoder);
        printf("| %s | one-file GPU path, %d threads | %.0f MB/s (%s) | |\n", name, threads, gpu,
               decoder);
        *failed |= cpu < 0 || gpu < 0;
    }
    for (const char *w = worker_list; *w;) {
        const unsigned workers = (unsigned)strtoul(w, NULL, 10);
        dh_dicom_batch_timing t;
        double s;
        int ok = run_batch(in, copies, workers, out, &t, &s, 0); /* warm-up */
        double parse = 0, first = 0;
        for (int r = 0; ok && r < runs; r++) {
            ok = run_batch(in, copies, workers, out, &t, &seconds[r], 0);
            decode[r] = t.decode;
            parse += t.parse / runs;
            first += t.first_frame / runs;
        }
        if (!ok) {
            *failed = 1;
            break;
        }
        qsort(seconds, (size_t)runs, sizeof *seconds, by_value);
        qsort(decode, (size_t)runs, sizeof *decode, by_value);
        if (on_gpu == 0) /* no GPU decode step to speak of: the CPU decoders read every frame */
            printf("| %s | batch, %u workers | %.0f MB/s whole call (%.1f ms) | no frame on the "
                   "GPU; parse %.1f ms |\n",
                   name, workers, megabytes / seconds[runs / 2], seconds[runs / 2] * 1e3,
                   parse * 1e3);
        else
            printf("| %s | batch, %u workers | %.0f MB/s whole call (%.1f ms) | decode step %.0f "
                   "MB/s (%.1f ms), parse %.1f ms (overlapped; the first frame reached the GPU "
                   "at %.1f ms) |\n",
                   name, workers, megabytes / seconds[runs / 2], seconds[runs / 2] * 1e3,
                   megabytes / decode[runs / 2], decode[runs / 2] * 1e3, parse * 1e3,
                   first * 1e3);
        fflush(stdout);
        w = strchr(w, ',') ? strchr(w, ',') + 1 : w + strlen(w);
    }
done:
    dh_dicom_image_free(meta);
    free(in);
    free(out);
    free(seconds);
    free(decode);
    free(bytes);
}

static int batch_main(int argc, char **argv)
{
    int a = 2;
    const int only_batch = argc > a && strcmp(argv[a], "--only-batch") == 0;
    a += only_batch;
    if (argc < a + 4 || atoi(argv[a + 1]) < 1 || atoi(argv[a + 2]) < 1 || atoi(argv[a]) < 1) {
        fprintf(stderr, "usage: bench_decode --batch [--only-batch] WORKERS COPIES RUNS FILE...\n");
        return 2;
    }
    char why[DH_DICOM_MSG_LEN];
    if (!dh_dicom_gpu_decoders(why, sizeof why)) {
        printf("bench_decode: no GPU decoders: %s\n", why);
        return 1;
    }
    printf("| file | what | throughput (MB/s of decoded pixels) | |\n| --- | --- | --- | --- |\n");
    int failed = 0;
    for (int i = a + 3; i < argc && !failed; i++)
        batch_file(argv[i], argv[a], atoi(argv[a + 1]), atoi(argv[a + 2]), only_batch, &failed);
    return failed;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "--gpu") == 0)
        return compare_main(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "--batch") == 0)
        return batch_main(argc, argv);
    if (argc < 3 || atoi(argv[1]) < 1) {
        fprintf(stderr, "usage: bench_decode RUNS FILE...\n");
        return 2;
    }
    int failed = 0;
    for (int i = 2; i < argc; i++)
        failed |= bench_file(argv[i], atoi(argv[1]));
    return failed;
}
