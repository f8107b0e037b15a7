// SPDX-License-Identifier: MIT
/*
 * bench_hist_cpu.c: the CPU twin dh_hist_cpu against the plain single-threaded loop
 * (dh_hist_naive) on a 64-slice 512x512 CT-like 12-bit volume at 4096 bins (issue 2's CPU
 * target). Prints GB/s (2 input bytes per sample), the median of several runs of each, and
 * checks that both give the same counts.
 *
 * Usage: bench_hist_cpu [threads]   (default 0: one per online processor)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_cpu_common.h"
#include "hist.h"

#define REPS 7

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Roughly normal noise spread about +-2 * width (the sum of four uniforms). */
static int32_t noise(uint64_t *s, uint32_t width)
{
    int32_t v = 0;
    for (int i = 0; i < 4; i++)
        v += (int32_t)(bench_next(s) % (width + 1));
    return v - 2 * (int32_t)width;
}

/* The CT mix of ../shared/docs/gpu.md: 40% air near 24, 15% fat near 924, 30% soft tissue near
 * 1064, 15% bone around 1700, clamped to 12 bits. */
static void fill_ct_like(uint16_t *d, size_t n)
{
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < n; i++) {
        uint32_t p = bench_next(&s) % 100;
        int32_t v = p < 40 ? 24 + noise(&s, 4)
                  : p < 55 ? 924 + noise(&s, 10)
                  : p < 85 ? 1064 + noise(&s, 15)
                           : 1700 + noise(&s, 150);
        d[i] = (uint16_t)(v < 0 ? 0 : v > 4095 ? 4095 : v);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    const int threads = argc > 1 ? atoi(argv[1]) : 0;
    const size_t slice = 512 * 512, slices = 64, n = slice * slices;
    uint16_t *data = malloc(n * sizeof *data);
    uint64_t *a = malloc(4098 * sizeof *a), *b = malloc(4098 * sizeof *b);
    if (!data || !a || !b) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    fill_ct_like(data, n);
    dh_bin_map map;
    dh_bin_map_init_affine(&map, 4096, 0, 4096);

    double t_naive[REPS], t_twin[REPS];
    for (int r = 0; r < REPS; r++) {
        double t0 = now_s();
        dh_hist_naive(data, 0, n, &map, a);
        t_naive[r] = now_s() - t0;
        t0 = now_s();
        if (dh_hist_cpu(data, 0, slice, slices, 0, &map, threads, b) != 0) {
            fprintf(stderr, "dh_hist_cpu failed\n");
            return 1;
        }
        t_twin[r] = now_s() - t0;
    }
    qsort(t_naive, REPS, sizeof(double), cmp_double);
    qsort(t_twin, REPS, sizeof(double), cmp_double);
    const double bytes = n * 2.0;
    printf("64 x 512x512 CT-like 12-bit, 4096 bins, median of %d:\n", REPS);
    printf("  plain loop (1 thread):  %.2f GB/s\n", bytes / t_naive[REPS / 2] / 1e9);
    printf("  dh_hist_cpu (threads %d): %.2f GB/s  (%.1fx)\n", threads,
           bytes / t_twin[REPS / 2] / 1e9, t_naive[REPS / 2] / t_twin[REPS / 2]);
    printf("  counts %s\n", memcmp(a, b, 4098 * sizeof *a) ? "DIFFER" : "identical");
    free(data);
    free(a);
    free(b);
    return 0;
}
