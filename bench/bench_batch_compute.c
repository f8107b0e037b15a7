// SPDX-License-Identifier: MIT
/*
 * bench_batch_compute.c: the compute stage of `dicomhist equalize`'s batch alone (issue 24,
 * session 20): THREADS workers, each with its own context as the command's workers have, each
 * equalizing SERIES host volumes of SLICES x SIZE x SIZE CT-like 12-bit samples with
 * dh_equalize (the command's default parameters) on --device cpu or cuda, one call timed at a
 * time. The first call of a worker is reported apart from the others: on the GPU it grows the
 * worker's device buffers and pinned staging (kernels/equalize_cuda.cu's pool), the others
 * reuse them. CUDA's context is made before anything is timed (dh_cuda_prepare), as the command
 * has it made beside its scan.
 *
 * Before any timing, every volume's GPU result is compared with the CPU's (values and tables):
 * a difference exits 1. Prints one line per device:
 *   cuda 16 threads x 4 series: first call median M max X ms; later calls median M ms (N calls);
 *        all calls W s of the workers' wall, E s elapsed
 * and, in a CUDA build, what a pool of the volume's size would cost to grow: THREADS threads at
 * once each pinning two host buffers and allocating two device buffers of the volume's bytes
 * (the staging main's pool had before session 20's pinned ring; docs/performance.md).
 * Usage: bench_batch_compute [THREADS=16] [SERIES=4] [SLICES=40] [SIZE=512] [DEVICES=cpu,cuda]
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dicomhist.h"
#ifdef BENCH_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

typedef struct job {
    dh_device device;
    uint32_t series, slices, size, index;
    uint16_t **volumes; /* this worker's samples, series of them */
    double *ms;         /* per call, in order */
    int failed;
} job;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* A CT-like slice stack: a disc of soft tissue (about 1000-1100) in air (0-30) with noise, a
 * brighter insert, all inside 12 bits; seeded per volume, so no two volumes are equal. */
static void fill_ct(uint16_t *v, uint32_t slices, uint32_t size, uint32_t seed)
{
    uint64_t x = 0x9e3779b97f4a7c15ull ^ seed;
    const double c = size / 2.0, r2 = c * c * 0.8;
    for (uint32_t z = 0; z < slices; z++)
        for (uint32_t y = 0; y < size; y++)
            for (uint32_t i = 0; i < size; i++) {
                x = x * 6364136223846793005ull + 1442695040888963407ull;
                uint32_t noise = (uint32_t)(x >> 33) % 61;
                double d = (i - c) * (i - c) + (y - c) * (y - c);
                uint32_t val = d > r2 ? noise / 2 : 1000 + noise * 2;
                if (d < r2 / 16 && z % 8 < 5)
                    val += 1800 + (z * 37 + y) % 400;
                v[((size_t)z * size + y) * size + i] = (uint16_t)(val > 4095 ? 4095 : val);
            }
}

static dh_status equalize(dh_ctx *ctx, dh_device device, const uint16_t *samples,
                          const job *j, dh_equalized **out)
{
    dh_volume *v = NULL;
    dh_status st = dh_volume_from_samples(ctx, j->size, j->size, j->slices, 12, 0, samples, &v);
    if (st != DH_OK)
        return st;
    dh_equalize_params p;
    dh_equalize_params_init(&p);
    p.device = device;
    st = dh_equalize(ctx, v, &p, out);
    dh_volume_free(v);
    return st;
}

static void *run_worker(void *arg)
{
    job *j = arg;
    dh_ctx *ctx = dh_ctx_create();
    if (!ctx) {
        j->failed = 1;
        return NULL;
    }
    dh_ctx_set_threads(ctx, 1); /* as the command's workers: one thread each */
    for (uint32_t k = 0; k < j->series && !j->failed; k++) {
        dh_equalized *r = NULL;
        double t0 = now();
        if (equalize(ctx, j->device, j->volumes[k], j, &r) != DH_OK) {
            fprintf(stderr, "bench_batch_compute: %s\n", dh_ctx_error(ctx));
            j->failed = 1;
        }
        j->ms[k] = (now() - t0) * 1e3;
        dh_equalized_free(r);
    }
    dh_ctx_free(ctx);
    return NULL;
}

/* Runs fn on each of n items (item t at items + t * size), one thread each, all at once;
 * returns the seconds until the last one ended. */
static double run_threads(void *(*fn)(void *), void *items, size_t size, uint32_t n)
{
    pthread_t *tid = calloc(n, sizeof *tid);
    double t0 = now();
    for (uint32_t t = 0; t < n; t++)
        pthread_create(&tid[t], NULL, fn, (char *)items + (size_t)t * size);
    for (uint32_t t = 0; t < n; t++)
        pthread_join(tid[t], NULL);
    double elapsed = now() - t0;
    free(tid);
    return elapsed;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, by_value);
    return n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : 0;
}

/* Every volume on both devices, compared: values and tables. */
static int check(job *jobs, uint32_t threads)
{
    dh_ctx *ctx = dh_ctx_create();
    int bad = 0;
    for (uint32_t t = 0; t < threads && !bad; t++)
        for (uint32_t k = 0; k < jobs[t].series && !bad; k++) {
            dh_equalized *a = NULL, *b = NULL;
            if (equalize(ctx, DH_DEVICE_CPU, jobs[t].volumes[k], &jobs[t], &a) != DH_OK ||
                equalize(ctx, DH_DEVICE_CUDA, jobs[t].volumes[k], &jobs[t], &b) != DH_OK) {
                fprintf(stderr, "bench_batch_compute: %s\n", dh_ctx_error(ctx));
                bad = 1;
            } else if (b->device_used != DH_DEVICE_CUDA ||
                       memcmp(a->data, b->data, (size_t)a->rows * a->columns * a->slices * 2) ||
                       memcmp(a->tables, b->tables, (size_t)a->table_count * a->table_len * 2)) {
                fprintf(stderr, "bench_batch_compute: worker %u series %u: GPU != CPU\n", t, k);
                bad = 1;
            }
            dh_equalized_free(a);
            dh_equalized_free(b);
        }
    dh_ctx_free(ctx);
    return bad;
}

static int run_device(job *jobs, uint32_t threads, dh_device device)
{
    for (uint32_t t = 0; t < threads; t++)
        jobs[t].device = device;
    double elapsed = run_threads(run_worker, jobs, sizeof *jobs, threads);
    uint32_t series = jobs[0].series;
    double *first = calloc(threads, sizeof *first);
    double *later = calloc((size_t)threads * series + 1, sizeof *later);
    size_t n_later = 0;
    double sum = 0;
    int failed = 0;
    for (uint32_t t = 0; t < threads; t++) {
        failed |= jobs[t].failed;
        first[t] = jobs[t].ms[0];
        sum += first[t];
        for (uint32_t k = 1; k < series; k++) {
            later[n_later++] = jobs[t].ms[k];
            sum += jobs[t].ms[k];
        }
    }
    double first_max = 0;
    for (uint32_t t = 0; t < threads; t++)
        first_max = first[t] > first_max ? first[t] : first_max;
    printf("%s %u threads x %u series of %u x %u x %u: first call median %.1f max %.1f ms; "
           "later calls median %.1f ms (%zu calls); all calls %.3f s of the workers' wall, "
           "%.3f s elapsed\n",
           device == DH_DEVICE_CUDA ? "cuda" : "cpu", threads, series, jobs[0].slices,
           jobs[0].size, jobs[0].size, median(first, threads), first_max,
           median(later, n_later), n_later, sum / 1e3, elapsed);
    free(first);
    free(later);
    return failed;
}

#ifdef BENCH_HAVE_CUDA
/* What a pool of the volume's size costs to grow, THREADS at once: two pinned staging buffers
 * and two device buffers of the volume's bytes (before session 20 every worker's first GPU call
 * paid this; equalize_cuda.cu's pool now pins a fixed ring instead). */
typedef struct grow_job {
    size_t bytes;
    double pinned_ms, device_ms;
} grow_job;

static void *grow(void *arg)
{
    grow_job *g = arg;
    void *h[2] = {NULL, NULL}, *d[2] = {NULL, NULL};
    double t0 = now();
    for (int i = 0; i < 2; i++)
        (void)cudaMallocHost(&h[i], g->bytes);
    double t1 = now();
    for (int i = 0; i < 2; i++)
        (void)cudaMalloc(&d[i], g->bytes);
    g->pinned_ms = (t1 - t0) * 1e3;
    g->device_ms = (now() - t1) * 1e3;
    for (int i = 0; i < 2; i++) {
        (void)cudaFreeHost(h[i]);
        (void)cudaFree(d[i]);
    }
    return NULL;
}

static void time_growth(uint32_t threads, size_t bytes)
{
    grow_job *g = calloc(threads, sizeof *g);
    for (uint32_t t = 0; t < threads; t++)
        g[t].bytes = bytes;
    double elapsed = run_threads(grow, g, sizeof *g, threads);
    double *p = calloc(threads, sizeof *p), *d = calloc(threads, sizeof *d);
    for (uint32_t t = 0; t < threads; t++)
        p[t] = g[t].pinned_ms, d[t] = g[t].device_ms;
    qsort(p, threads, sizeof *p, by_value);
    qsort(d, threads, sizeof *d, by_value);
    printf("growth %u threads, 2 x %.1f MB pinned: median %.1f max %.1f ms; 2 x device: median "
           "%.1f max %.1f ms; %.3f s elapsed\n",
           threads, bytes / 1e6, p[threads / 2], p[threads - 1], d[threads / 2], d[threads - 1],
           elapsed);
    free(p);
    free(d);
    free(g);
}
#endif

int main(int argc, char **argv)
{
    uint32_t threads = argc > 1 ? (uint32_t)atoi(argv[1]) : 16;
    uint32_t series = argc > 2 ? (uint32_t)atoi(argv[2]) : 4;
    uint32_t slices = argc > 3 ? (uint32_t)atoi(argv[3]) : 40;
    uint32_t size = argc > 4 ? (uint32_t)atoi(argv[4]) : 512;
    const char *devices = argc > 5 ? argv[5] : "cpu,cuda";
    if (!threads || !series || !slices || !size) {
        fprintf(stderr, "usage: bench_batch_compute [THREADS] [SERIES] [SLICES] [SIZE] "
                        "[DEVICES=cpu,cuda]\n");
        return 2;
    }
    int want_cuda = strstr(devices, "cuda") != NULL;
    if (want_cuda && !dh_cuda_prepare()) {
        fprintf(stderr, "bench_batch_compute: no usable CUDA GPU\n");
        return 77;
    }
    job *jobs = calloc(threads, sizeof *jobs);
    const size_t n = (size_t)slices * size * size;
    for (uint32_t t = 0; t < threads; t++) {
        jobs[t] = (job){.series = series, .slices = slices, .size = size, .index = t};
        jobs[t].volumes = calloc(series, sizeof *jobs[t].volumes);
        jobs[t].ms = calloc(series, sizeof *jobs[t].ms);
        for (uint32_t k = 0; k < series; k++) {
            if (!(jobs[t].volumes[k] = malloc(n * sizeof(uint16_t)))) {
                fprintf(stderr, "bench_batch_compute: out of memory\n");
                return 1;
            }
            fill_ct(jobs[t].volumes[k], slices, size, t * 1000 + k);
        }
    }
    int status = 0;
    if (want_cuda && check(jobs, threads)) /* before any timing */
        return 1;
    if (want_cuda)
        printf("check: %u volumes, GPU results equal the CPU's\n", threads * series);
    /* Each device in the order given; the check above warmed nothing of the workers' contexts. */
    char *list = strdup(devices);
    for (char *d = strtok(list, ","); d; d = strtok(NULL, ","))
        status |= run_device(jobs, threads, strcmp(d, "cuda") == 0 ? DH_DEVICE_CUDA : DH_DEVICE_CPU);
    free(list);
#ifdef BENCH_HAVE_CUDA
    if (want_cuda)
        time_growth(threads, n * sizeof(uint16_t));
#endif
    for (uint32_t t = 0; t < threads; t++) {
        for (uint32_t k = 0; k < series; k++)
            free(jobs[t].volumes[k]);
        free(jobs[t].volumes);
        free(jobs[t].ms);
    }
    free(jobs);
    return status;
}
