// SPDX-License-Identifier: MIT
/*
 * hist_cpu.c: the CPU twin of the 1D histogram (kernels/hist.h): the reference the CUDA kernels
 * must equal bit for bit, and the CPU backend of the library.
 *
 * Speed comes from three habits. A slot table maps every possible 16-bit sample to its slot once
 * per call, so the inner loop has no division or branch. Each thread counts into private 32-bit
 * sub-histograms (four interleaved copies, so a run of equal values, as in air or a constant
 * image, does not serialize on one counter), flushed into 64-bit totals before they can wrap.
 * Threads work on contiguous ranges (or whole slices in per-slice mode) and merge at the end.
 */
#define _POSIX_C_SOURCE 200809L
#include "hist.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Private copies per thread; four breaks the store-to-load chain of repeated values. */
#define COPIES 4
/* Samples a thread counts before flushing 32-bit counters: each copy sees at most this / COPIES,
 * far below 2^32. */
#define FLUSH_SAMPLES ((size_t)1 << 30)
/* Below this many samples a slot table costs more than it saves. */
#define TABLE_MIN_SAMPLES ((size_t)1 << 17)
/* Each thread should get at least this many samples to be worth starting. */
#define MIN_SAMPLES_PER_THREAD ((size_t)1 << 16)

int dh_bin_map_init_affine(dh_bin_map *map, uint32_t bins, int64_t lo, int64_t hi)
{
    if (!map || bins == 0 || bins > DH_HIST_MAX_BINS || lo >= hi || lo < INT32_MIN ||
        hi > INT32_MAX)
        return -1;
    memset(map, 0, sizeof *map);
    map->bins = bins;
    map->lo = (int32_t)lo;
    map->hi = (int32_t)hi;
    map->shift = -1;
    uint64_t width = (uint64_t)(hi - lo);
    for (int s = 0; s < 32; s++) {
        if (((uint64_t)bins << s) == width) {
            map->shift = s;
            break;
        }
    }
    return 0;
}

void dh_hist_naive(const void *data, int is_signed, size_t n, const dh_bin_map *map,
                   uint64_t *out)
{
    memset(out, 0, (map->bins + 2) * sizeof *out);
    for (size_t i = 0; i < n; i++) {
        int32_t s = is_signed ? ((const int16_t *)data)[i] : ((const uint16_t *)data)[i];
        out[dh_bin_map_slot(map, s)]++;
    }
}

/* One unit of work: samples [begin, end) counted into out (bins + 2 slots, accumulated). */
typedef struct hist_job {
    const void *data;
    int is_signed;
    const dh_bin_map *map;
    const uint32_t *table; /* slot by sample + 32768 (signed) or by sample (unsigned); or NULL */
    size_t begin, end;
    uint64_t *out;
    uint32_t *scratch; /* COPIES * (bins + 2) counters */
} hist_job;

static void count_range(const hist_job *job)
{
    const uint32_t slots = job->map->bins + 2;
    uint32_t *c0 = job->scratch, *c1 = c0 + slots, *c2 = c1 + slots, *c3 = c2 + slots;
    for (size_t begin = job->begin; begin < job->end; begin += FLUSH_SAMPLES) {
        size_t end = job->end - begin > FLUSH_SAMPLES ? begin + FLUSH_SAMPLES : job->end;
        memset(job->scratch, 0, (size_t)COPIES * slots * sizeof *job->scratch);
        size_t i = begin;
        if (job->table && job->is_signed) {
            const int16_t *d = job->data;
            const uint32_t *t = job->table + 32768;
            for (; i + 4 <= end; i += 4) {
                c0[t[d[i]]]++;
                c1[t[d[i + 1]]]++;
                c2[t[d[i + 2]]]++;
                c3[t[d[i + 3]]]++;
            }
            for (; i < end; i++)
                c0[t[d[i]]]++;
        } else if (job->table) {
            const uint16_t *d = job->data;
            const uint32_t *t = job->table;
            for (; i + 4 <= end; i += 4) {
                c0[t[d[i]]]++;
                c1[t[d[i + 1]]]++;
                c2[t[d[i + 2]]]++;
                c3[t[d[i + 3]]]++;
            }
            for (; i < end; i++)
                c0[t[d[i]]]++;
        } else {
            for (; i < end; i++) {
                int32_t s = job->is_signed ? ((const int16_t *)job->data)[i]
                                           : ((const uint16_t *)job->data)[i];
                c0[dh_bin_map_slot(job->map, s)]++;
            }
        }
        for (uint32_t b = 0; b < slots; b++)
            job->out[b] += (uint64_t)c0[b] + c1[b] + c2[b] + c3[b];
    }
}

/* A thread's share: either one range (whole volume) or a run of whole slices (per slice). */
typedef struct worker {
    pthread_t thread;
    hist_job job;
    size_t slice_len, first_slice, slice_count; /* slice_count 0: one range */
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    if (w->slice_count == 0) {
        count_range(&w->job);
        return NULL;
    }
    hist_job job = w->job;
    const size_t slots = job.map->bins + 2;
    for (size_t s = 0; s < w->slice_count; s++) {
        job.begin = (w->first_slice + s) * w->slice_len;
        job.end = job.begin + w->slice_len;
        job.out = w->job.out + s * slots;
        count_range(&job);
    }
    return NULL;
}

static int thread_count(int requested, size_t units, size_t samples)
{
    long t = requested > 0 ? requested : sysconf(_SC_NPROCESSORS_ONLN);
    if (t < 1)
        t = 1;
    size_t by_size = samples / MIN_SAMPLES_PER_THREAD;
    if ((size_t)t > by_size)
        t = by_size ? (long)by_size : 1;
    if ((size_t)t > units)
        t = (long)units;
    return t < 1 ? 1 : (int)t;
}

/* The slot of every sample value the type can hold, so the inner loop only looks up. */
static uint32_t *build_table(const dh_bin_map *map, int is_signed)
{
    uint32_t *table = malloc(65536 * sizeof *table);
    if (!table)
        return NULL;
    int32_t base = is_signed ? -32768 : 0;
    for (int32_t i = 0; i < 65536; i++)
        table[i] = dh_bin_map_slot(map, base + i);
    return table;
}

int dh_hist_cpu(const void *data, int is_signed, size_t slice_len, size_t slices, int per_slice,
                const dh_bin_map *map, int threads, uint64_t *out)
{
    const size_t slots = map->bins + 2;
    const size_t n = slice_len * slices;
    const size_t hists = per_slice ? slices : 1;
    memset(out, 0, hists * slots * sizeof *out);
    if (n == 0)
        return 0;

    /* A table map already covers the whole type; an affine one gets a table when it pays. */
    uint32_t *table = NULL;
    if (!map->lut && n >= TABLE_MIN_SAMPLES && !(table = build_table(map, is_signed)))
        return -1;
    const uint32_t *lookup = map->lut ? map->lut : table;

    int t = thread_count(threads, per_slice ? slices : (size_t)-1, n);
    worker *workers = calloc((size_t)t, sizeof *workers);
    uint64_t *partial = per_slice ? NULL : calloc((size_t)t * slots, sizeof *partial);
    uint32_t *scratch = malloc((size_t)t * COPIES * slots * sizeof *scratch);
    int rc = 0;
    if (!workers || (!per_slice && !partial) || !scratch) {
        rc = -1;
        goto done;
    }

    size_t next = 0;
    for (int i = 0; i < t; i++) {
        worker *w = &workers[i];
        w->job = (hist_job){.data = data, .is_signed = is_signed, .map = map, .table = lookup,
                            .scratch = scratch + (size_t)i * COPIES * slots};
        if (per_slice) {
            size_t count = slices / t + ((size_t)i < slices % t);
            w->slice_len = slice_len;
            w->first_slice = next;
            w->slice_count = count;
            w->job.out = out + next * slots;
            next += count;
        } else {
            w->job.begin = n / t * i;
            w->job.end = i == t - 1 ? n : n / t * (i + 1);
            w->job.out = partial + (size_t)i * slots;
        }
    }

    int started = 0;
    for (; started < t - 1; started++) {
        if (pthread_create(&workers[started].thread, NULL, worker_main, &workers[started]) != 0) {
            rc = -1;
            break;
        }
    }
    if (rc == 0)
        worker_main(&workers[t - 1]); /* the calling thread does the last share */
    for (int i = 0; i < started; i++)
        pthread_join(workers[i].thread, NULL);
    if (rc == 0 && !per_slice) {
        for (int i = 0; i < t; i++)
            for (size_t b = 0; b < slots; b++)
                out[b] += partial[(size_t)i * slots + b];
    }

done:
    free(workers);
    free(partial);
    free(scratch);
    free(table);
    return rc;
}
