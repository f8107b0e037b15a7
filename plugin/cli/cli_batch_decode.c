// SPDX-License-Identifier: MIT
/*
 * cli_batch_decode.c: the choice of each series' decoder in a batch, and the GPU decoders loaded
 * on a thread of their own (cli_batch_decode.h).
 */
#define _XOPEN_SOURCE 700
#include "cli_batch_decode.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_cuda_start.h"
#include "dicomhist.h"

/* Classic JPEG 2000: the GPU's own decoding is the wall; 16 workers on H100 hosts, one series
 * per slot, no back threads (bench/NOTES.md, "Session 21"; batch elapsed, 3 rounds a run): in
 * run S21-2 6 slots 4.70-5.09 s, 8 4.63-4.91, 12 4.29-4.53; in S21-3 10 4.05-4.48, 12 4.55-4.89,
 * 16 4.92-5.10 (no core beside the GPU then). 8 and 10 never ran in the same call. Session 16
 * (before back threads existed), one run each: 2 slots 8.08 s, 4 5.47, 8 5.12, 16 5.24. */
#define J2K_GPU_SLOTS 10

/* JPEG lossless SV1 read into device memory a series per call (cli_decode_device_sv1): sixteen
 * calls at once decoded at about 0.9 GB/s together on the H100 host, slower than DCMTK on the
 * 16 cores (bench/NOTES.md, run 81), where one call of 240 frames reads 4.8 GB/s; so a few series
 * at a time on the GPU, the other workers on DCMTK beside it. */
#define SV1_GPU_SLOTS 4

/* How long the workers wait for a loader that fails at once (cli_gpu_decode_start). */
#define LOADER_HEAD_START_NS 50000000

/* How often a waiting worker looks again for files to decode while some series is on the GPU:
 * a share offers its files only once its owner has read the first header (a few ms). */
#define HELP_POLL_NS 5000000

cli_decode_choice cli_decode_choose(const cli_decode_view *v)
{
    if (!v->loading && !v->ready)
        return CLI_DECODE_GPU; /* unusable: the library reads it and says why not on the GPU */
    if (v->ready && v->busy < v->slots)
        return CLI_DECODE_GPU;
    double per_core = v->cpu_rate > 0 ? v->cpu_rate : v->cpu_prior;
    if (v->loading && per_core > 0 && (double)v->bytes / per_core <= v->load_left)
        return CLI_DECODE_CPU; /* done on a core before the GPU is there */
    if (v->loading && v->busy < v->slots)
        return CLI_DECODE_GPU; /* a feeder: its first frame waits for the decoders, its load
                                  thread decodes from the back meanwhile (cli_batch.c) */
    /* One core takes bytes / cpu_rate; the GPU drains (after + bytes) / gpu_rate. */
    double ratio = v->gpu_rate > 0 && v->cpu_rate > 0 ? v->gpu_rate / v->cpu_rate
                                                      : CLI_DECODE_PRIOR_RATIO;
    return (double)(v->after + v->bytes) >= ratio * (double)v->bytes ? CLI_DECODE_CPU
                                                                       : CLI_DECODE_WAIT;
}

int cli_decode_gpu_syntax(const char *uid)
{
    static const char *const gpu[] = {"1.2.840.10008.1.2.4.90", "1.2.840.10008.1.2.4.91",
                                      "1.2.840.10008.1.2.4.201", "1.2.840.10008.1.2.4.202",
                                      "1.2.840.10008.1.2.4.203"};
    if (!uid)
        return 0;
    for (size_t i = 0; i < sizeof gpu / sizeof *gpu; i++)
        if (strcmp(uid, gpu[i]) == 0)
            return 1;
    const char *lossless = getenv("DH_GPU_JPEG_LOSSLESS");
    return strcmp(uid, "1.2.840.10008.1.2.4.70") == 0 && lossless && strcmp(lossless, "1") == 0;
}

/* Classic JPEG 2000, lossless (.90) or not (.91): the syntaxes whose GPU decoding is the wall. */
static int classic_j2k(const char *uid)
{
    return uid && (strcmp(uid, "1.2.840.10008.1.2.4.90") == 0 ||
                   strcmp(uid, "1.2.840.10008.1.2.4.91") == 0);
}

/* HTJ2K: .201, .202, .203. */
static int htj2k(const char *uid)
{
    return uid && strncmp(uid, "1.2.840.10008.1.2.4.20", 22) == 0 && strlen(uid) == 23;
}

/* A measuring knob naming one of two words: 1 for `yes`, 0 for `no`, -1 unset or anything else. */
static int env_word(const char *name, const char *yes, const char *no)
{
    const char *env = getenv(name);
    return !env ? -1 : strcmp(env, yes) == 0 ? 1 : strcmp(env, no) == 0 ? 0 : -1;
}

int cli_decode_compute_beside(const char *uid)
{
    int asked = env_word("DICOMHIST_AUTO_COMPUTE_BESIDE", "1", "0");
    return asked >= 0 ? cli_decode_gpu_syntax(uid) && asked : htj2k(uid);
}

double cli_decode_cpu_prior(const char *uid)
{
    return classic_j2k(uid) ? 10.6e6 : htj2k(uid) ? 74e6 : 0;
}

double cli_decode_gpu_prior(const char *uid)
{
    return classic_j2k(uid) ? 250e6 : htj2k(uid) ? 0.56e9 : 0;
}

int cli_decode_auto_loads(double core_seconds, double gpu_seconds, uint32_t jobs,
                          double estimate[2])
{
    if (estimate)
        estimate[0] = estimate[1] = 0;
    int forced = env_word("DICOMHIST_AUTO_DECODERS", "gpu", "cpu"); /* to measure */
    if (!(gpu_seconds > 0) || jobs == 0)
        return forced >= 0 ? forced : 1; /* no prior: as before the rule */
    const double cores = (double)jobs, load = CLI_DECODE_PRIOR_LOAD_SECONDS;
    const double alone = core_seconds / cores;
    /* During the load the cores decode alone; then the GPU adds core_seconds / gpu_seconds
     * cores' worth to them. */
    double left = core_seconds - cores * load;
    double with_gpu = load + CLI_DECODE_AUTO_FIXED_SECONDS +
                      (left > 0 ? left / (cores + core_seconds / gpu_seconds) : 0);
    if (estimate)
        estimate[0] = alone, estimate[1] = with_gpu;
    return forced >= 0 ? forced : with_gpu < alone;
}

int cli_decode_gpu_refused(const char *uid)
{
    return uid && strcmp(uid, "1.2.840.10008.1.2.4.70") == 0 && !cli_decode_gpu_syntax(uid);
}

int cli_decode_device_sv1(const char *uid, dh_device device)
{
    /* Asked for only: per series (16 concurrent calls of 40 frames) the device read was slower
     * than DCMTK on the cores, 3.81 s against 1.93 for the bench archive on the H100 host
     * (bench/NOTES.md run 81), though one batch of 240 frames decodes at 3.5x DCMTK. */
    const char *lossless = getenv("DH_GPU_JPEG_LOSSLESS");
    return device == DH_DEVICE_CUDA && uid && strcmp(uid, "1.2.840.10008.1.2.4.70") == 0 &&
           lossless && (strcmp(lossless, "1") == 0 || strcmp(lossless, "all") == 0);
}

/* The whole decimal number in the environment variable `name` when it is 0..max, else -1 (unset,
 * empty, not a number, out of range). */
static long env_number(const char *name, long max)
{
    const char *env = getenv(name);
    char *end = NULL;
    long n = env && *env ? strtol(env, &end, 10) : -1;
    return end && *end == '\0' && n >= 0 && n <= max ? n : -1;
}

int cli_decode_back_threads(const char *uid)
{
    long n = classic_j2k(uid) ? env_number("DICOMHIST_BACK_THREADS", 64) : -1;
    return n > 0 ? (int)n : 0;
}

int cli_decode_load_threads(void)
{
    long n = env_number("DICOMHIST_LOAD_THREADS", 64);
    return n >= 0 ? (int)n : 1;
}

cli_device_series cli_decode_device_series(void)
{
    int asked = env_word("DICOMHIST_DEVICE_SERIES", "whole", "0");
    return asked == 1 ? CLI_DEVICE_SERIES_WHOLE
           : asked == 0 ? CLI_DEVICE_SERIES_NONE
                        : CLI_DEVICE_SERIES_SHARED;
}

int cli_decode_wait_for_load(void)
{
    return env_word("DICOMHIST_GPU_DECODE_WAIT", "1", "0") == 1;
}

uint32_t cli_decode_slots(const char *uid, uint32_t jobs)
{
    long n = env_number("DICOMHIST_GPU_DECODE_SLOTS", LONG_MAX);
    uint32_t slots = jobs;
    if (n > 0)
        slots = (unsigned long)n < jobs ? (uint32_t)n : jobs;
    else if (classic_j2k(uid))
        slots = jobs < J2K_GPU_SLOTS ? jobs : J2K_GPU_SLOTS;
    else if (uid && strcmp(uid, "1.2.840.10008.1.2.4.70") == 0)
        slots = jobs < SV1_GPU_SLOTS ? jobs : SV1_GPU_SLOTS;
    return slots ? slots : 1;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static void *load(void *arg)
{
    cli_gpu_decode *g = arg;
    char reason[sizeof g->reason];
    /* How the decoders' feeders wait on the GPU, where asked for (cli_cuda_wait_asked). */
    int wait = cli_cuda_wait_asked();
    if (wait >= 0)
        dh_cuda_set_wait((dh_cuda_wait)wait);
    int usable = dh_gpu_decoders_available(reason, sizeof reason);
    pthread_mutex_lock(&g->lock);
    g->loading = 0;
    g->ready = usable;
    g->load_end = now();
    if (!usable)
        memcpy(g->reason, reason, sizeof reason);
    pthread_cond_broadcast(&g->changed);
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

int cli_gpu_decode_start(cli_gpu_decode *g, uint64_t pending, int want_loader)
{
    memset(g, 0, sizeof *g);
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->changed, NULL);
    g->pending = pending;
    if (pending == 0 && !want_loader)
        return 0;
    g->loading = 1;
    g->load_start = now();
    if (pthread_create(&g->loader, NULL, load, g) != 0) {
        g->loading = 0;
        g->ready = 1; /* the library loads them on first use, as it always could */
        return -1;
    }
    g->started = 1;
    /* Where no GPU or no decoder is present the load fails at once (the driver's dlopen): given
     * that long before the workers start, every series then goes to the library as before, and
     * what the batch writes (decoders, notes) does not depend on a race with the loader. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += LOADER_HEAD_START_NS;
    if (until.tv_nsec >= 1000000000)
        until.tv_sec++, until.tv_nsec -= 1000000000;
    pthread_mutex_lock(&g->lock);
    while (g->loading && pthread_cond_timedwait(&g->changed, &g->lock, &until) == 0)
        ;
    pthread_mutex_unlock(&g->lock);
    return 0;
}

/* Waits on g->changed (g->lock held), waking every HELP_POLL_NS while a series is shared. */
static void wait_changed(cli_gpu_decode *g)
{
    if (!g->shared) {
        pthread_cond_wait(&g->changed, &g->lock);
        return;
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += HELP_POLL_NS;
    if (until.tv_nsec >= 1000000000)
        until.tv_sec++, until.tv_nsec -= 1000000000;
    pthread_cond_timedwait(&g->changed, &g->lock, &until);
}

/* g->lock held: the share with the most files not yet claimed, or NULL. */
static dh_plan_share *share_to_help(cli_gpu_decode *g)
{
    dh_plan_share *best = NULL;
    size_t most = 0;
    for (uint32_t i = 0; i < g->shared; i++) {
        size_t left = dh_plan_share_left(g->shares[i]);
        if (left > most)
            most = left, best = g->shares[i];
    }
    return best;
}

int cli_gpu_decode_help(cli_gpu_decode *g, dh_ctx *ctx)
{
    if (!ctx)
        return 0;
    pthread_mutex_lock(&g->lock);
    dh_plan_share *share = share_to_help(g);
    pthread_mutex_unlock(&g->lock);
    if (!share)
        return 0;
    /* The share lives until the batch ends (one per worker, reused): should its series end
     * meanwhile, the call finds no file, or one of its owner's next GPU series. */
    double from = now();
    dh_ctx_set_gpu_decode(ctx, 0);
    int helped = dh_plan_share_help(ctx, share);
    pthread_mutex_lock(&g->lock);
    g->helped_files += (uint64_t)helped;
    g->helped_seconds += now() - from;
    pthread_mutex_unlock(&g->lock);
    return helped;
}

int cli_gpu_decode_sharing(cli_gpu_decode *g)
{
    pthread_mutex_lock(&g->lock);
    int sharing = g->shared > 0;
    pthread_mutex_unlock(&g->lock);
    return sharing;
}

int cli_gpu_decode_usable(cli_gpu_decode *g)
{
    pthread_mutex_lock(&g->lock);
    int usable = g->ready;
    pthread_mutex_unlock(&g->lock);
    return usable;
}

cli_decode_choice cli_gpu_decode_take(cli_gpu_decode *g, uint64_t bytes, uint32_t slots,
                                      double cpu_prior, dh_ctx *ctx, dh_plan_share *own,
                                      const char **note)
{
    pthread_mutex_lock(&g->lock);
    g->pending -= bytes < g->pending ? bytes : g->pending;
    cli_decode_choice c;
    int waited = 0, was_loading = g->loading;
    double from = now();
    for (;;) {
        cli_decode_view v = {
            .loading = g->loading, .ready = g->ready, .busy = g->busy,
            .slots = slots, .bytes = bytes, .after = g->pending,
            .gpu_rate = g->gpu_seconds > 0 ? g->gpu_bytes / g->gpu_seconds * g->gpu_slots_seen
                                           : 0,
            .cpu_rate = g->cpu_seconds > 0 ? g->cpu_bytes / g->cpu_seconds : 0,
            .cpu_prior = cpu_prior};
        double loaded_in = g->load_start + CLI_DECODE_PRIOR_LOAD_SECONDS - now();
        v.load_left = g->loading && loaded_in > 0 ? loaded_in : 0;
        c = cli_decode_choose(&v);
        if (c != CLI_DECODE_WAIT)
            break;
        was_loading |= g->loading;
        waited = 1;
        if (ctx && share_to_help(g)) { /* a file of a series on the GPU, rather than sleep */
            pthread_mutex_unlock(&g->lock);
            double help_from = now();
            cli_gpu_decode_help(g, ctx);
            pthread_mutex_lock(&g->lock);
            from += now() - help_from; /* counted as helping, not as waiting */
            continue;
        }
        g->waiting++;
        wait_changed(g);
        g->waiting--;
    }
    if (waited)
        g->waited += now() - from;
    if (c == CLI_DECODE_GPU && (g->ready || g->loading)) {
        g->busy++;
        if (own && g->shared == g->share_capacity) {
            uint32_t cap = g->share_capacity ? 2 * g->share_capacity : 16;
            dh_plan_share **grown = realloc(g->shares, cap * sizeof *grown);
            if (grown)
                g->shares = grown, g->share_capacity = cap;
        }
        if (own && g->shared < g->share_capacity)
            g->shares[g->shared++] = own;
    }
    *note = c == CLI_DECODE_GPU ? ""
            : was_loading ? "decoded on the CPU while the GPU decoders loaded (docs/batch.md)"
                          : "decoded on the CPU beside the GPU, whose decode slots were all busy "
                            "(docs/batch.md)";
    pthread_mutex_unlock(&g->lock);
    return c;
}

void cli_gpu_decode_done(cli_gpu_decode *g, cli_decode_choice choice, dh_plan_share *own,
                         uint32_t slots, uint64_t bytes, double seconds)
{
    pthread_mutex_lock(&g->lock);
    for (uint32_t i = 0; own && i < g->shared; i++)
        if (g->shares[i] == own) {
            g->shares[i] = g->shares[--g->shared];
            break;
        }
    if (choice == CLI_DECODE_GPU && g->busy > 0)
        g->busy--; /* a slot is held by every series taken while the decoders load or are ready */
    /* A series begun before the decoders were loaded is not measured: its time holds the load. */
    if (choice == CLI_DECODE_GPU && g->ready) {
        g->gpu_series++;
        if (now() - seconds >= g->load_end) {
            g->gpu_bytes += (double)bytes;
            g->gpu_seconds += seconds;
            g->gpu_slots_seen = slots;
        }
    } else if (choice == CLI_DECODE_CPU) {
        g->cpu_bytes += (double)bytes;
        g->cpu_seconds += seconds;
        g->cpu_series++;
    }
    pthread_cond_broadcast(&g->changed);
    pthread_mutex_unlock(&g->lock);
}

int cli_gpu_decode_loaded(cli_gpu_decode *g)
{
    pthread_mutex_lock(&g->lock);
    int loaded = !g->loading;
    pthread_mutex_unlock(&g->lock);
    return loaded;
}

int cli_gpu_decode_wait_usable(cli_gpu_decode *g)
{
    pthread_mutex_lock(&g->lock);
    while (g->loading)
        pthread_cond_wait(&g->changed, &g->lock);
    int usable = g->ready;
    pthread_mutex_unlock(&g->lock);
    return usable;
}

void cli_gpu_decode_stop(cli_gpu_decode *g)
{
    if (g->started)
        pthread_join(g->loader, NULL);
    g->started = 0;
    pthread_mutex_destroy(&g->lock);
    pthread_cond_destroy(&g->changed);
    free(g->shares);
    g->shares = NULL;
}
