// SPDX-License-Identifier: MIT
/*
 * cli_batch.c: cli_run_batch (cli_batch.h): the plan, the choice of series, the workers, and the
 * in-order release of what each series printed, with its manifest lines and the progress line.
 */
#define _XOPEN_SOURCE 700
#include "cli_batch.h"
#include "cli_batch_decode.h"
#include "cli_cuda_start.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli_commands.h"
#include "cli_manifest.h"
#include "cli_progress.h"
#include "cli_shard.h"

/* How many finished series may wait for an earlier one, per worker: bounds the held output. */
#define WINDOW_PER_JOB 2

/* A writer's slot holds no series. */
#define NO_SERIES SIZE_MAX

/* --device auto computes on the GPU from this many samples per volume (cli_series_device). */
#define CLI_AUTO_GPU_MIN_SAMPLES (UINT64_C(1) << 26)

/* One source file's place in its series, for output names and manifest lines. */
typedef struct series_file {
    size_t file; /* plan index */
    char *error; /* its own failure, or NULL */
    char **outputs;
    size_t output_count;
} series_file;

struct cli_series_private {
    struct batch *b;
    series_file *files; /* the series' files in volume order, then its repeats */
    size_t file_count;
    size_t *by_path; /* indices into files, sorted by path */
    char *series_error;
    FILE *out_file, *err_file;
    char *out_buf, *err_buf;
    size_t out_len, err_len;
    double seconds;
    int ready;
    char *decoder, *decoder_note; /* of the series' volume (dh_volume_decoder), NULL: none */
    double stage[CLI_STAGE_COUNT][2]; /* --stats: wall and CPU seconds per stage */
    int device_read; /* read into device memory (load_on_device): 1 read, -1 fell back */
    int gpu_idle_beside; /* decoded on the GPU in a syntax that leaves it idle: auto computes
                            there too (cli_decode_compute_beside) */
    /* Held from the read to the end of the command's deferred part (cli_series_defer). */
    double start;
    dh_volume_set *set;
    dh_device_volume device; /* where device.set is set: its samples on the GPU (kept) */
    report_sink *sink;
    report_json json;
    cli_series_finish_fn finish;
    void *pending;
};

/* A worker's writer thread: the deferred part of the worker's last series (its outputs
 * written) runs there while the worker reads and computes the next one. One slot, so a worker
 * holds at most two series: the one being written and the one it works on. */
typedef struct series_writer {
    struct batch *b;
    pthread_t id;
    int started;     /* the thread runs (started at the worker's first deferred series) */
    int failed;      /* it could not start: the worker finishes its series itself */
    int quit;        /* the worker takes no more series (under the batch's lock) */
    size_t pending;  /* the slot of the series handed over, NO_SERIES when free */
    dh_ctx *ctx;     /* the writer's own: errors of its writes are named there */
    double busy;     /* seconds spent finishing series */
} series_writer;

typedef struct batch {
    const cli_command_line *cl;
    const cli_batch_config *cfg;
    cli_series_fn work;
    void *state;
    dh_plan *plan;
    size_t *todo; /* series to process, in plan order */
    size_t todo_count;
    cli_series *slots; /* one per todo entry while in flight */
    size_t next_take, next_emit;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    uint64_t changes; /* how many times changed was broadcast (announce) */
    int cuda_usable;  /* a GPU answers: --device auto may choose it */
    int cuda_checked; /* cuda_usable asked (under lock), first when a volume needs it */
    int gpu_sched;    /* the GPU decoders may read series: gpu_decode chooses per series */
    int gpu_declined; /* --device auto's rule kept them unloaded: too little to decode */
    double gpu_estimate[2]; /* its estimate, seconds: the cores alone, with the GPU */
    cli_gpu_decode gpu_decode;
    dh_plan_share **shares; /* the workers' shares, freed once all have ended */
    uint32_t share_count;
    uint32_t jobs, decode_threads;
    uint32_t alive; /* workers still running */
    dh_existing existing;
    int64_t created;
    cli_manifest *manifest;
    cli_progress progress;
    size_t done_files, failed_files, skipped_files, already_files;
    int any_failure, text_emitted, want_summary;
    /* --stats: the stages' sums over the series, what the workers did besides, the scan */
    double stage[CLI_STAGE_COUNT][2];
    size_t device_series, device_fallbacks; /* series read into device memory / fell back */
    double busy, idle;  /* workers' seconds processing series / waiting for the output order */
    int writers_on;     /* each worker writes behind (series_writer); DICOMHIST_BATCH_WRITERS=0: not */
    series_writer *writers; /* one per worker */
    uint32_t writers_started; /* writers that ran (counted as they end) */
    double writer_busy, writer_wait; /* writers' seconds finishing / workers' waiting for them */
    double start, scan; /* when the run started; seconds of the scan */
} batch;

/* ------------------------------------------------------------------ what a series reports */

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

static series_file *file_of_source(struct cli_series_private *p, const dh_plan *plan,
                                   const char *source)
{
    size_t lo = 0, hi = p->file_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(dh_plan_file_path(plan, p->files[p->by_path[mid]].file), source);
        if (c == 0)
            return &p->files[p->by_path[mid]];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

void cli_series_fail(cli_series *s, const char *what, const char *message)
{
    cli_report_failure_to(s->priv->err_file, what, message);
    series_file *f = file_of_source(s->priv, s->plan, what);
    if (f && !f->error)
        f->error = dup_or_null(message && *message ? message : "failed");
    else if (!f && !s->priv->series_error)
        s->priv->series_error = dup_or_null(message && *message ? message : "failed");
}

int cli_series_output_name(void *user, const char *source, char *name, size_t size)
{
    cli_series *s = user;
    series_file *f = file_of_source(s->priv, s->plan, source);
    if (!f)
        return -1;
    int n = snprintf(name, size, "%s", dh_plan_file_output_name(s->plan, f->file));
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

void cli_series_written(void *user, const char *source, const char *output)
{
    cli_series *s = user;
    series_file *f = file_of_source(s->priv, s->plan, source);
    if (!f)
        return;
    char **grown = realloc(f->outputs, (f->output_count + 1) * sizeof *grown);
    if (!grown)
        return;
    f->outputs = grown;
    if ((grown[f->output_count] = strdup(output)))
        f->output_count++;
}

static double thread_cpu(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

cli_stage_clock cli_stage_start(void)
{
    return (cli_stage_clock){cli_now(), thread_cpu()};
}

void cli_series_stage(cli_series *s, cli_stage stage, cli_stage_clock since)
{
    s->priv->stage[stage][0] += cli_now() - since.wall;
    s->priv->stage[stage][1] += thread_cpu() - since.cpu;
}

const char *cli_series_decoder_note(const cli_series *s)
{
    return s->priv && s->priv->decoder_note ? s->priv->decoder_note : "";
}

dh_device cli_series_device(const cli_series *s, const dh_volume *v)
{
    const batch *b = s->priv->b;
    if (b->cl->device != DH_DEVICE_AUTO)
        return b->cl->device;
    /* The rule of --device auto (docs/batch.md): the GPU computes only a volume large enough
     * that its copies there and back cost less than the CPU passes they replace (measured on
     * an H100 host, bench/NOTES.md, session 15); else the worker's own core does it, beside
     * the others, with no copy. CUDA is asked about only then: a run that never computes on
     * the GPU never starts its runtime. */
    uint64_t samples = (uint64_t)dh_volume_rows(v) * dh_volume_columns(v) * dh_volume_slices(v);
    if (samples < CLI_AUTO_GPU_MIN_SAMPLES && !s->priv->gpu_idle_beside)
        return DH_DEVICE_CPU;
    batch *shared = (batch *)b; /* the lock and the one answer are the batch's */
    pthread_mutex_lock(&shared->lock);
    if (!shared->cuda_checked) {
        shared->cuda_usable = dh_cuda_available();
        shared->cuda_checked = 1;
    }
    int usable = shared->cuda_usable;
    pthread_mutex_unlock(&shared->lock);
    return usable ? DH_DEVICE_CUDA : DH_DEVICE_CPU;
}

/* ------------------------------------------------------------------ one series */

static const dh_plan *sort_plan; /* qsort has no context; set under the single-threaded setup */
static const struct cli_series_private *sort_priv;

static int by_source_path(const void *a, const void *b)
{
    const char *pa = dh_plan_file_path(sort_plan, sort_priv->files[*(const size_t *)a].file);
    const char *pb = dh_plan_file_path(sort_plan, sort_priv->files[*(const size_t *)b].file);
    return strcmp(pa, pb);
}

/* The files of series k: volume order, then the repeats set aside from it. */
static int prepare_files(batch *b, size_t series, struct cli_series_private *p, size_t *repeats,
                         size_t repeat_count)
{
    size_t n = dh_plan_series_file_count(b->plan, series);
    p->files = calloc(n + repeat_count + 1, sizeof *p->files);
    p->by_path = malloc((n + repeat_count + 1) * sizeof *p->by_path);
    if (!p->files || !p->by_path)
        return -1;
    for (size_t k = 0; k < n; k++)
        p->files[p->file_count++].file = dh_plan_series_file(b->plan, series, k);
    for (size_t k = 0; k < repeat_count; k++)
        p->files[p->file_count++].file = repeats[k];
    for (size_t k = 0; k < p->file_count; k++)
        p->by_path[k] = k;
    return 0;
}

static void free_private(struct cli_series_private *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->file_count; i++) {
        free(p->files[i].error);
        for (size_t k = 0; k < p->files[i].output_count; k++)
            free(p->files[i].outputs[k]);
        free(p->files[i].outputs);
    }
    free(p->files);
    free(p->by_path);
    free(p->series_error);
    free(p->decoder);
    free(p->decoder_note);
    free(p->out_buf);
    free(p->err_buf);
    free(p);
}

/* Series `series` read into GPU memory, through `share` where given (its files from the back
 * decoded by idle cores and copied in): 1 with p->set the set, whose volume is the one
 * dh_plan_load_series gives (the lossless decoders are exact) and names its decoders, its samples
 * kept on the GPU (p->device) when `keep`, for a command that computes there, else copied down and
 * the device samples freed; 0 where the device call failed (DH_ERR_NO_DEVICE or any other),
 * nothing kept, so the caller reads the series as before. The library times no stage on this
 * path: decode[] gets the call's wall seconds and this thread's CPU seconds (reading and decoding
 * in one; the GPU's time and the helpers' are not CPU time of this thread). */
static int load_on_device(dh_ctx *ctx, const dh_plan *plan, size_t series, dh_plan_share *share,
                          struct cli_series_private *p, int keep, double decode[2])
{
    double wall = cli_now(), cpu = thread_cpu();
    dh_device_volume dv;
    dh_status st = share ? dh_plan_load_series_device_shared(ctx, plan, series, share, NULL, NULL,
                                                             0, &dv)
                         : dh_plan_load_series_device(ctx, plan, series, NULL, NULL, 0, &dv);
    int ok = st == DH_OK && (keep || dh_device_volume_download(ctx, &dv, NULL) == DH_OK);
    if (ok) {
        p->set = dv.set;
        if (keep) /* the whole device volume, released by finish_series */
            p->device = dv, dv = (dh_device_volume){0};
        else /* the host set is kept, the device samples freed below */
            dv.set = NULL;
    }
    dh_device_volume_release(&dv, NULL);
    decode[0] += cli_now() - wall;
    decode[1] += thread_cpu() - cpu;
    return ok;
}

void cli_series_defer(cli_series *s, cli_series_finish_fn finish, void *pending)
{
    s->priv->finish = finish;
    s->priv->pending = pending;
}

/* The end of series slot k: the command's deferred part, if any (its writes and records, on
 * ctx, the calling thread's own), then the volume freed, the held output closed and the
 * series' time taken. Runs on the worker, or on its writer while the worker goes on. */
static void finish_series(batch *b, size_t k, dh_ctx *ctx)
{
    cli_series *s = &b->slots[k];
    struct cli_series_private *p = s->priv;
    if (p->finish) {
        s->ctx = ctx;
        p->finish(b->state, b->cl, s, dh_volume_set_volume(p->set, 0), p->pending);
        p->finish = NULL;
        p->pending = NULL;
    }
    if (p->device.set) /* set is the device volume's: freed with its GPU samples */
        dh_device_volume_release(&p->device, NULL);
    else
        dh_volume_set_free(p->set);
    p->set = NULL;
    if (p->sink && report_sink_flush(p->sink) != 0 && !p->series_error)
        p->series_error = strdup("out of memory holding the output");
    if (p->out_file)
        fclose(p->out_file);
    if (p->err_file)
        fclose(p->err_file);
    p->out_file = p->err_file = NULL;
    free(p->sink);
    p->sink = NULL;
    s->out = NULL;
    s->json = NULL;
    p->seconds = cli_now() - p->start;
}

/* Reads series slot k's volume and hands it to the command; all it prints is held. A series
 * the GPU decodes is read through the worker's share, whose files idle workers decode from the
 * back on their cores (cli_gpu_decode_help). Returns 1 when the command deferred the rest
 * (cli_series_defer) and may_defer: the caller hands the slot to its writer, which calls
 * finish_series; else 0, the series finished here. */
static int process(batch *b, size_t k, dh_ctx *ctx, dh_plan_share *share, int may_defer)
{
    cli_series *s = &b->slots[k];
    struct cli_series_private *p = s->priv;
    size_t series = s->index;
    p->start = cli_now();
    report_sink *sink = p->sink = malloc(sizeof *sink);
    p->out_file = open_memstream(&p->out_buf, &p->out_len);
    p->err_file = open_memstream(&p->err_buf, &p->err_len);
    if (!sink || !p->out_file || !p->err_file) {
        if (!p->series_error)
            p->series_error = strdup("out of memory");
        goto done;
    }
    report_sink_init(sink, p->out_file);
    report_json_init(&p->json, sink);
    s->ctx = ctx;
    s->out = sink;
    s->json = &p->json;
    dh_volume_set *set = NULL;
    dh_read_times before, after;
    /* Which decoder reads the series (cli_batch_decode.h): the GPU only for a syntax its
     * decoders read, and only while it has a slot free or is worth waiting for. */
    const char *syntax =
        dh_plan_file_transfer_syntax(b->plan, dh_plan_series_file(b->plan, series, 0));
    const char *sched_note = "";
    cli_decode_choice choice = CLI_DECODE_CPU;
    uint64_t bytes = dh_plan_series_sample_bytes(b->plan, series);
    uint32_t slots = cli_decode_slots(syntax, b->jobs);
    /* JPEG lossless SV1 under --device cuda: the whole series in one nvJPEG batch into GPU
     * memory (cli_decode_device_sv1) when the scheduler gives it one of the GPU's slots, else
     * DCMTK on the worker's core (run 81: sixteen such batches at once were slower than DCMTK). */
    int sv1 = b->gpu_sched && cli_decode_device_sv1(syntax, b->cl->device);
    int gpu_syntax = b->gpu_sched && !sv1 && cli_decode_gpu_syntax(syntax);
    /* Where the command computes on the GPU (cli_batch_config.device_samples), a series the GPU
     * decodes is read into GPU memory and stays there: JPEG 2000 through the worker's share,
     * the files idle cores decode copied in (cli_decode_device_series). */
    int keep_on_device = b->cl->device == DH_DEVICE_CUDA && b->cfg->device_samples;
    cli_device_series into = gpu_syntax && keep_on_device ? cli_decode_device_series()
                                                          : CLI_DEVICE_SERIES_NONE;
    int whole = into == CLI_DEVICE_SERIES_WHOLE;
    /* SV1 has no CPU prior, and no share: the device read takes the whole series in one call. */
    if (sv1 || gpu_syntax)
        choice = cli_gpu_decode_take(&b->gpu_decode, bytes, slots, cli_decode_cpu_prior(syntax),
                                     ctx, gpu_syntax && !whole ? share : NULL, &sched_note);
    /* JPEG lossless goes to the library with the GPU decoders on only once they are loaded:
     * it loads them (0.7 s that every worker waited for) only to refuse the stream by default.
     * Any other syntax is read with them off. */
    else if (b->gpu_sched && cli_decode_gpu_refused(syntax) &&
             cli_gpu_decode_loaded(&b->gpu_decode))
        choice = CLI_DECODE_GPU;
    else if (b->gpu_declined && cli_decode_gpu_syntax(syntax))
        sched_note = "decoded on the CPU: --device auto loads the GPU decoders only for a batch "
                     "they would finish sooner, and did not look for them (docs/batch.md)";
    if (b->gpu_sched)
        dh_ctx_set_gpu_decode(ctx, choice == CLI_DECODE_GPU);
    double load_from = cli_now();
    dh_ctx_read_times(ctx, &before);
    int shared = gpu_syntax && !whole && share && choice == CLI_DECODE_GPU;
    /* Back threads (threads of the load decoding from the back on the feeder's core while it
     * waits for the GPU): none by default since session 21, when the run was faster without
     * them (J2K 4.63-5.09 s against 5.05-5.67 with one, same calls; docs/batch.md); the knob
     * DICOMHIST_BACK_THREADS stays, to measure another host. */
    if (shared) {
        dh_plan_share_set_back_threads(
            share, cli_gpu_decode_usable(&b->gpu_decode) ? cli_decode_back_threads(syntax) : 0);
        /* A feeder that took its slot while the decoders load: its own core decodes from the
         * back until they are there (the library starts none once the load has settled). Not
         * on the device read (into GPU memory), which waits for the load before it offers any
         * file: there the first feeders' cores wait through it (docs/batch.md, item 7). */
        dh_plan_share_set_load_threads(share, cli_decode_load_threads());
    }
    double device_decode[2] = {0, 0};
    dh_status loaded = DH_OK;
    if ((sv1 || whole || (shared && into == CLI_DEVICE_SERIES_SHARED)) &&
        choice == CLI_DECODE_GPU) {
        p->device_read = load_on_device(ctx, b->plan, series, shared ? share : NULL, p,
                                        keep_on_device, device_decode) ? 1 : -1;
        set = p->set;
    }
    if (p->device_read != 1)
        loaded = shared ? dh_plan_load_series_shared(ctx, b->plan, series, share, &set)
                        : dh_plan_load_series(ctx, b->plan, series, &set);
    dh_ctx_read_times(ctx, &after);
    if (gpu_syntax || sv1)
        cli_gpu_decode_done(&b->gpu_decode, choice, shared ? share : NULL, slots, bytes,
                            cli_now() - load_from);
    p->stage[CLI_STAGE_READ][0] = after.read_seconds - before.read_seconds;
    p->stage[CLI_STAGE_READ][1] = after.read_cpu_seconds - before.read_cpu_seconds;
    p->stage[CLI_STAGE_DECODE][0] =
        after.decode_seconds - before.decode_seconds + device_decode[0];
    p->stage[CLI_STAGE_DECODE][1] =
        after.decode_cpu_seconds - before.decode_cpu_seconds + device_decode[1];
    if (loaded != DH_OK) {
        cli_series_fail(s, dh_plan_series_path(b->plan, series), dh_ctx_error(ctx));
    } else {
        for (size_t i = 0; i < dh_volume_set_failure_count(set); i++)
            cli_series_fail(s, dh_volume_set_failure_path(set, i),
                            dh_volume_set_failure_message(set, i));
        if (dh_volume_set_count(set) == 1) {
            const char *note = "";
            p->decoder = dup_or_null(dh_volume_decoder(dh_volume_set_volume(set, 0), &note));
            if (shared && !*note && p->decoder && strchr(p->decoder, '+'))
                note = "files of the series decoded by idle cores beside the GPU (docs/batch.md)";
            p->decoder_note = dup_or_null(*note ? note : sched_note);
            /* By what decoded it, not by the choice: nvJPEG2000 read some of its files. */
            p->gpu_idle_beside = gpu_syntax && choice == CLI_DECODE_GPU && p->decoder &&
                                 strncmp(p->decoder, "nvjpeg2k", 8) == 0 &&
                                 cli_decode_compute_beside(syntax);
            b->work(b->state, b->cl, s, dh_volume_set_volume(set, 0));
        }
    }
    p->set = set; /* freed by finish_series, after the deferred part that reads the volume */
    if (p->finish && may_defer)
        return 1;
done:
    finish_series(b, k, ctx);
    return 0;
}

/* b->lock held: tells the waiting threads that the slots or the output order moved on. */
static void announce(batch *b)
{
    b->changes++;
    pthread_cond_broadcast(&b->changed);
}

/* b->lock held: while series on the GPU have files left, decodes them on this core; returns the
 * seconds spent (the lock dropped meanwhile). */
static double help_gpu_series(batch *b, dh_ctx *ctx)
{
    if (!b->gpu_sched || !ctx)
        return 0;
    double from = cli_now();
    pthread_mutex_unlock(&b->lock);
    int any = 0;
    while (cli_gpu_decode_help(&b->gpu_decode, ctx))
        any = 1;
    pthread_mutex_lock(&b->lock);
    return any ? cli_now() - from : 0;
}

/* A worker's writer (series_writer): finishes each series its worker hands over, then marks it
 * ready for the output order. Every change of pending, quit and ready is made under the batch's
 * lock and broadcast on changed, and every wait re-tests its condition: no wakeup is lost. */
static void *writer_main(void *arg)
{
    series_writer *w = arg;
    batch *b = w->b;
    pthread_mutex_lock(&b->lock);
    for (;;) {
        while (w->pending == NO_SERIES && !w->quit)
            pthread_cond_wait(&b->changed, &b->lock);
        if (w->pending == NO_SERIES)
            break; /* quit, and nothing left */
        size_t k = w->pending;
        pthread_mutex_unlock(&b->lock);
        double from = cli_now();
        finish_series(b, k, w->ctx);
        w->busy += cli_now() - from;
        pthread_mutex_lock(&b->lock);
        w->pending = NO_SERIES;
        b->slots[k].priv->ready = 1;
        announce(b);
    }
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

/* Starts the worker's writer, at its first deferred series (info and histogram defer nothing
 * and start none); returns 1 when it runs. Without one (no memory or no thread) the worker
 * finishes its series itself, as before. */
static int writer_start(batch *b, series_writer *w)
{
    if (w->started || w->failed)
        return w->started;
    if ((w->ctx = dh_ctx_create())) {
        dh_ctx_set_threads(w->ctx, (int)b->decode_threads);
        dh_ctx_set_gpu_decode(w->ctx, 0);
        w->started = pthread_create(&w->id, NULL, writer_main, w) == 0;
    }
    if (!w->started) {
        dh_ctx_free(w->ctx);
        w->ctx = NULL;
        w->failed = 1;
    }
    return w->started;
}

/* b->lock held: the worker takes no more series; its writer finishes the one it holds and
 * ends. Returns with the lock held again. */
static void writer_stop(batch *b, series_writer *w)
{
    if (!w->started)
        return;
    w->quit = 1;
    announce(b);
    pthread_mutex_unlock(&b->lock);
    pthread_join(w->id, NULL);
    dh_ctx_free(w->ctx);
    w->ctx = NULL;
    w->started = 0;
    pthread_mutex_lock(&b->lock);
    b->writer_busy += w->busy;
    b->writers_started++;
}

/* DICOMHIST_BATCH_WRITERS: unset or anything but "0", the workers write behind (docs/batch.md,
 * "Memory and cores"); "0", each worker writes its series itself before the next. */
static int cli_batch_writers_wanted(const char *env)
{
    return !env || strcmp(env, "0") != 0;
}

static void *worker(void *arg)
{
    series_writer *w = arg; /* this worker's writer, started at its first deferred series */
    batch *b = w->b;
    w->pending = NO_SERIES;
    dh_ctx *ctx = dh_ctx_create();
    /* This worker's series on the GPU offer their files to the others through it. */
    dh_plan_share *share = b->gpu_sched && b->shares ? dh_plan_share_create() : NULL;
    if (ctx) {
        dh_ctx_set_threads(ctx, (int)b->decode_threads);
        /* --device cpu keeps everything on the CPU, the decoders too; otherwise each series'
         * decoder is chosen when it is taken (process). */
        dh_ctx_set_gpu_decode(ctx, 0);
        dh_ctx_set_read_timing(ctx, b->cl->batch.stats);
    }
    double busy = 0, idle = 0;
    pthread_mutex_lock(&b->lock);
    for (;;) {
        double wait_from = cli_now(), helped = 0;
        while (b->next_take < b->todo_count &&
               b->next_take >= b->next_emit + (size_t)b->jobs * WINDOW_PER_JOB) {
            /* help_gpu_series drops the lock: what was announced meanwhile is not waited for
             * (a wait then could outlast the last announcement, and the run hang). */
            uint64_t seen = b->changes;
            double h = help_gpu_series(b, ctx);
            helped += h;
            if (h == 0 && b->changes == seen)
                pthread_cond_wait(&b->changed, &b->lock);
        }
        busy += helped;
        idle += cli_now() - wait_from - helped;
        if (b->next_take >= b->todo_count || !ctx)
            break;
        size_t k = b->next_take++;
        pthread_mutex_unlock(&b->lock);
        double from = cli_now();
        int deferred = process(b, k, ctx, share, b->writers_on && !w->failed);
        if (deferred && !writer_start(b, w)) {
            finish_series(b, k, ctx);
            deferred = 0;
        }
        busy += cli_now() - from;
        pthread_mutex_lock(&b->lock);
        if (deferred) { /* to the writer once it has finished the previous one */
            double wait_from = cli_now();
            while (w->pending != NO_SERIES)
                pthread_cond_wait(&b->changed, &b->lock);
            b->writer_wait += cli_now() - wait_from;
            w->pending = k;
        } else {
            b->slots[k].priv->ready = 1;
        }
        announce(b);
    }
    /* No series left to take: the series still on the GPU get this core until they are read
     * (the run's tail, where the GPU alone would be the wall). */
    while (ctx && b->gpu_sched && cli_gpu_decode_sharing(&b->gpu_decode)) {
        double h = help_gpu_series(b, ctx);
        busy += h;
        if (h == 0) {
            pthread_mutex_unlock(&b->lock);
            struct timespec pause = {0, 2000000};
            nanosleep(&pause, NULL);
            pthread_mutex_lock(&b->lock);
        }
    }
    writer_stop(b, w);
    b->busy += busy;
    b->idle += idle;
    b->alive--;
    announce(b);
    pthread_mutex_unlock(&b->lock);
    dh_ctx_free(ctx);
    /* Shares are kept until every worker is done: a helper may still hold this one's pointer
     * (it then finds no file); batch_free_shares frees them. */
    pthread_mutex_lock(&b->lock);
    if (share)
        b->shares[b->share_count++] = share;
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

/* ------------------------------------------------------------------ manifest lines */

typedef struct line_buffer {
    char *buf;
    size_t len;
    FILE *file;
    report_sink *sink;
    report_json json;
} line_buffer;

static int lines_open(line_buffer *l)
{
    memset(l, 0, sizeof *l);
    l->file = open_memstream(&l->buf, &l->len);
    l->sink = malloc(sizeof *l->sink);
    if (!l->file || !l->sink)
        return -1;
    report_sink_init(l->sink, l->file);
    report_json_init(&l->json, l->sink);
    return 0;
}

/* Appends what was written to the manifest; returns 0, or -1 (reported) when it cannot. */
static int lines_close(batch *b, line_buffer *l)
{
    int rc = 0;
    if (l->sink)
        report_sink_flush(l->sink);
    if (l->file)
        fclose(l->file);
    if (!l->file || !l->sink) {
        rc = -1;
        fprintf(stderr, "dicomhist: out of memory writing the manifest\n");
    } else if (b->manifest && l->len > 0 && cli_manifest_append(b->manifest, l->buf, l->len) != 0) {
        rc = -1;
        fprintf(stderr, "dicomhist: %s: cannot write: %s\n", cli_manifest_path(b->manifest),
                strerror(errno));
    }
    free(l->sink);
    free(l->buf);
    return rc;
}

/* decoded: the series the file was read in, for its decoders (NULL when it was not read). */
static void manifest_line(batch *b, line_buffer *l, size_t file, const char *status,
                          const char *error, const char *reason, char *const *outputs,
                          size_t output_count, double seconds,
                          const struct cli_series_private *decoded)
{
    report_json *j = &l->json;
    size_t series = dh_plan_file_series(b->plan, file);
    report_json_begin_object(j);
    report_json_key(j, "path"), report_json_string(j, dh_plan_file_path(b->plan, file));
    report_json_key(j, "status"), report_json_string(j, status);
    if (error)
        report_json_key(j, "error"), report_json_string(j, error);
    if (reason)
        report_json_key(j, "reason"), report_json_string(j, reason);
    report_json_key(j, "series_uid");
    if (series != SIZE_MAX)
        report_json_string(j, dh_plan_series_uid(b->plan, series));
    else
        report_json_null(j);
    report_json_key(j, "outputs");
    report_json_begin_array(j);
    for (size_t i = 0; i < output_count; i++)
        report_json_string(j, outputs[i]);
    report_json_end_array(j);
    report_json_key(j, "seconds"), report_json_double(j, seconds);
    if (decoded && decoded->decoder) {
        report_json_key(j, "decoder"), report_json_string(j, decoded->decoder);
        report_json_key(j, "decoder_note"),
            report_json_string(j, decoded->decoder_note ? decoded->decoder_note : "");
    }
    if (b->cfg->work && (strcmp(status, "done") == 0 || strcmp(status, "planned") == 0))
        report_json_key(j, "work"), report_json_string(j, b->cfg->work);
    report_json_key(j, "size"), report_json_u64(j, dh_plan_file_size(b->plan, file));
    report_json_key(j, "mtime_ns"), report_json_i64(j, dh_plan_file_mtime_ns(b->plan, file));
    report_json_end_object(j);
    report_json_end_line(j);
}

/* ------------------------------------------------------------------ releasing a series */

static void emit(batch *b, size_t k)
{
    cli_series *s = &b->slots[k];
    struct cli_series_private *p = s->priv;
    report_sink *out = cli_stdout_sink();
    if (p->out_len > 0) {
        cli_progress_clear(&b->progress); /* stdout and stderr may share one terminal */
        if (b->cfg->blank_between && !b->cl->json && b->text_emitted)
            report_sink_char(out, '\n');
        report_sink_write(out, p->out_buf, p->out_len);
        b->text_emitted = 1;
        /* Out as soon as the series is done, not when the buffer fills. */
        report_sink_flush(out);
    }
    if (p->err_len > 0) {
        cli_progress_clear(&b->progress);
        fwrite(p->err_buf, 1, p->err_len, stderr);
        fflush(stderr);
    }
    line_buffer l;
    int ok = lines_open(&l) == 0;
    size_t n = dh_plan_series_file_count(b->plan, s->index);
    double seconds = round(p->seconds * 1000) / 1000;
    for (size_t j = 0; j < p->file_count; j++) {
        size_t i = p->by_path[j]; /* lines in the order of the files' paths */
        series_file *f = &p->files[i];
        const char *error = f->error ? f->error : p->series_error;
        if (i >= n) { /* a repeat, set aside at the scan */
            b->skipped_files++;
            if (ok)
                manifest_line(b, &l, f->file, "skipped", NULL,
                              dh_plan_file_message(b->plan, f->file), NULL, 0, 0, NULL);
        } else if (error) {
            b->failed_files++;
            if (ok)
                manifest_line(b, &l, f->file, "failed", error, NULL, NULL, 0, seconds, NULL);
        } else {
            b->done_files++;
            if (ok)
                manifest_line(b, &l, f->file, "done", NULL, NULL, f->outputs, f->output_count,
                              seconds, p);
        }
        b->progress.bytes_done += dh_plan_file_size(b->plan, f->file);
    }
    if (lines_close(b, &l) != 0)
        b->any_failure = 1;
    for (size_t i = 0; i < n; i++)
        if (p->files[i].error || p->series_error) {
            b->any_failure = 1;
            b->progress.failures++;
        }
    for (int st = 0; st < CLI_STAGE_COUNT; st++)
        b->stage[st][0] += p->stage[st][0], b->stage[st][1] += p->stage[st][1];
    b->device_series += p->device_read == 1;
    b->device_fallbacks += p->device_read == -1;
    b->progress.files_done += p->file_count;
    b->progress.series_done++;
    cli_progress_show(&b->progress, 0);
    free_private(p);
    s->priv = NULL;
}

/* ------------------------------------------------------------------ choosing the work */

static int modality_chosen(const char *list, const char *modality)
{
    if (!list)
        return 1;
    size_t len = strlen(modality);
    for (const char *c = list; *c;) {
        size_t n = strcspn(c, ",");
        if (n == len && len > 0 && strncasecmp(c, modality, n) == 0)
            return 1;
        c += n + (c[n] == ',');
    }
    return 0;
}

/* The identity a series is sharded by: its UID, else (one file on its own) the file's name. */
static const char *series_identity(const dh_plan *plan, size_t series)
{
    const char *uid = dh_plan_series_uid(plan, series);
    return *uid ? uid : dh_plan_file_output_name(plan, dh_plan_series_file(plan, series, 0));
}

/* ------------------------------------------------------------------ inputs and outputs */

/* The real path of `path`, which need not exist yet: its nearest existing ancestor resolved,
 * the rest appended. NULL when out of memory or nothing resolves. */
static char *real_path_of(const char *path)
{
    char *head = strdup(path), *tail = strdup(""), *out = NULL;
    while (head && tail) {
        size_t len = strlen(head);
        while (len > 1 && head[len - 1] == '/')
            head[--len] = '\0';
        char *real = realpath(head[0] ? head : ".", NULL);
        if (real) {
            size_t n = strlen(real) + strlen(tail) + 2;
            if ((out = malloc(n)))
                snprintf(out, n, "%s%s%s", real, *tail && strcmp(real, "/") ? "/" : "", tail);
            free(real);
            break;
        }
        if (!head[0] || strcmp(head, "/") == 0)
            break;
        char *slash = strrchr(head, '/');
        const char *last = slash ? slash + 1 : head;
        size_t n = strlen(last) + strlen(tail) + 2;
        char *t = malloc(n);
        if (!t)
            break;
        snprintf(t, n, "%s%s%s", last, *tail ? "/" : "", tail);
        free(tail);
        tail = t;
        if (!slash)
            head[0] = '\0';
        else if (slash == head)
            head[1] = '\0';
        else
            *slash = '\0';
    }
    free(head);
    free(tail);
    return out;
}

/* 1 when inner is outer or lies below it (both real paths). */
static int is_within(const char *inner, const char *outer)
{
    size_t n = strlen(outer);
    if (strcmp(outer, "/") == 0)
        return 1;
    return strncmp(inner, outer, n) == 0 && (inner[n] == '\0' || inner[n] == '/');
}

/* Refuses an output folder inside an input folder (outputs would become inputs) and an input
 * that `cp -r` placement would write over. Returns -1 to go on, or 2 (reported). */
static int check_output_folder(const cli_command_line *cl, const char *option, const char *dir)
{
    if (!dir)
        return -1;
    char *out = real_path_of(dir);
    if (!out)
        return -1; /* nothing resolves: creating it will report why */
    int status = -1;
    for (size_t i = 0; i < cl->path_count && status < 0; i++) {
        char *in = realpath(cl->paths[i], NULL);
        struct stat st;
        if (!in)
            continue;
        if (stat(in, &st) == 0 && S_ISDIR(st.st_mode) && is_within(out, in))
            status = cli_usage_error(cl->command, "%s '%s' is inside the input '%s': outputs "
                                     "would be read as inputs; choose a folder outside it",
                                     option, dir, cl->paths[i]);
        else if (is_within(in, out) && strcmp(in, out) != 0) {
            /* cp -r places the input at OUT/<its name>: that must not be the input itself. */
            const char *name = strrchr(in, '/') + 1;
            size_t n = strlen(out) + strlen(name) + 2;
            char *target = malloc(n);
            if (target) {
                snprintf(target, n, "%s/%s", out, name);
                if (is_within(in, target))
                    status = cli_usage_error(cl->command, "%s '%s' would place the outputs of "
                                             "'%s' over the input itself", option, dir,
                                             cl->paths[i]);
                free(target);
            }
        }
        free(in);
    }
    free(out);
    return status;
}

static const dh_plan *name_plan; /* qsort has no context; set before the one sort */
static int by_output_name_q(const void *a, const void *b)
{
    return strcmp(dh_plan_file_output_name(name_plan, *(const size_t *)a),
                  dh_plan_file_output_name(name_plan, *(const size_t *)b));
}

/* Two inputs placed at one output name (two operands with the same last name): refused up front
 * rather than one output refusing the other. Returns -1 to go on, or 2 (reported). */
static int check_collisions(const cli_command_line *cl, const dh_plan *plan)
{
    size_t n = dh_plan_file_count(plan), m = 0;
    size_t *idx = malloc((n ? n : 1) * sizeof *idx);
    if (!idx)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (dh_plan_file_state_of(plan, i) == DH_PLAN_FILE_SERIES)
            idx[m++] = i;
    name_plan = plan;
    qsort(idx, m, sizeof *idx, by_output_name_q);
    int status = -1;
    for (size_t i = 1; i < m && status < 0; i++)
        if (strcmp(dh_plan_file_output_name(plan, idx[i]),
                   dh_plan_file_output_name(plan, idx[i - 1])) == 0)
            status = cli_usage_error(cl->command, "'%s' and '%s' would both be written as "
                                     "OUTDIR/%s: give inputs with different names",
                                     dh_plan_file_path(plan, idx[i - 1]),
                                     dh_plan_file_path(plan, idx[i]),
                                     dh_plan_file_output_name(plan, idx[i]));
    free(idx);
    return status;
}

/* ------------------------------------------------------------------ the run */

static int64_t creation_time(void)
{
    /* reproducible-builds.org's convention: a fixed time makes runs byte for byte repeatable. */
    const char *e = getenv("SOURCE_DATE_EPOCH");
    uint32_t v;
    return e && text_parse_u32(e, 0, UINT32_MAX, &v) == 0 ? (int64_t)v : -1;
}

static int open_manifest(batch *b)
{
    char name[96];
    const cli_batch_options *o = &b->cl->batch;
    if (o->shard_count > 1)
        snprintf(name, sizeof name, "dicomhist-manifest-%u-of-%u.jsonl", (unsigned)o->shard_index,
                 (unsigned)o->shard_count);
    else
        snprintf(name, sizeof name, "dicomhist-manifest.jsonl");
    if (cli_manifest_open(b->cfg->outdir, name, &b->manifest) != 0) {
        fprintf(stderr, "dicomhist: %s/%s: cannot open the manifest: %s\n", b->cfg->outdir, name,
                strerror(errno));
        return -1;
    }
    return 0;
}

/* Lines for the files that belong to no series (failed or skipped at the scan) of this shard,
 * unless an earlier run recorded them the same way. */
static int record_unplanned(batch *b, const cli_batch_options *o)
{
    line_buffer l;
    int ok = lines_open(&l) == 0;
    for (size_t i = 0; i < dh_plan_file_count(b->plan); i++) {
        dh_plan_file_state st = dh_plan_file_state_of(b->plan, i);
        if (st != DH_PLAN_FILE_FAILED && st != DH_PLAN_FILE_SKIPPED)
            continue;
        if (cli_shard_of(dh_plan_file_output_name(b->plan, i), o->shard_count) != o->shard_index)
            continue;
        const char *status = st == DH_PLAN_FILE_FAILED ? "failed" : "skipped";
        const char *message = dh_plan_file_message(b->plan, i);
        b->progress.files_done++;
        if (st == DH_PLAN_FILE_FAILED) {
            char *what = strdup(dh_plan_file_path(b->plan, i));
            cli_report_failure(what ? what : "input", message);
            free(what);
            b->failed_files++;
            b->any_failure = 1;
            b->progress.failures++;
        } else {
            b->skipped_files++;
        }
        const cli_manifest_record *r = cli_manifest_find(b->manifest, dh_plan_file_path(b->plan, i));
        if (r && strcmp(r->status, status) == 0 && r->size == dh_plan_file_size(b->plan, i) &&
            r->mtime_ns == dh_plan_file_mtime_ns(b->plan, i))
            continue;
        if (ok && b->manifest)
            manifest_line(b, &l, i, status, st == DH_PLAN_FILE_FAILED ? message : NULL,
                          st == DH_PLAN_FILE_SKIPPED ? message : NULL, NULL, 0, 0, NULL);
    }
    return lines_close(b, &l);
}

/* Series chosen by modality and shard, less those a manifest says are done; the rest of the
 * chosen ones' files are recorded as skipped or already done. */
static int choose_series(batch *b, size_t **repeats, size_t *repeat_counts)
{
    const cli_batch_options *o = &b->cl->batch;
    size_t count = dh_plan_series_count(b->plan);
    b->todo = malloc((count ? count : 1) * sizeof *b->todo);
    if (!b->todo)
        return -1;
    line_buffer l;
    int ok = lines_open(&l) == 0;
    for (size_t k = 0; k < count; k++) {
        if (cli_shard_of(series_identity(b->plan, k), o->shard_count) != o->shard_index)
            continue;
        size_t n = dh_plan_series_file_count(b->plan, k);
        if (!modality_chosen(o->modalities, dh_plan_series_modality(b->plan, k))) {
            char reason[96];
            snprintf(reason, sizeof reason, "modality %s is not among those chosen",
                     *dh_plan_series_modality(b->plan, k) ? dh_plan_series_modality(b->plan, k)
                                                          : "(none)");
            for (size_t i = 0; i < n + repeat_counts[k]; i++) {
                size_t f = i < n ? dh_plan_series_file(b->plan, k, i) : repeats[k][i - n];
                const cli_manifest_record *r = cli_manifest_find(b->manifest,
                                                                 dh_plan_file_path(b->plan, f));
                b->skipped_files++;
                b->progress.files_done++;
                if (ok && b->manifest && !(r && strcmp(r->status, "skipped") == 0 &&
                                           r->reason && strcmp(r->reason, reason) == 0))
                    manifest_line(b, &l, f, "skipped", NULL, reason, NULL, 0, 0, NULL);
            }
            continue;
        }
        int done = b->manifest != NULL && !o->force;
        for (size_t i = 0; i < n && done; i++) {
            size_t f = dh_plan_series_file(b->plan, k, i);
            done = cli_manifest_record_done(cli_manifest_find(b->manifest,
                                                              dh_plan_file_path(b->plan, f)),
                                            b->cfg->work, dh_plan_file_size(b->plan, f),
                                            dh_plan_file_mtime_ns(b->plan, f));
        }
        b->progress.series_total++;
        if (done) {
            b->already_files += n;
            b->progress.files_done += n + repeat_counts[k];
            b->progress.series_done++;
            continue;
        }
        b->todo[b->todo_count++] = k;
        for (size_t i = 0; i < n; i++)
            b->progress.bytes_total += dh_plan_file_size(b->plan, dh_plan_series_file(b->plan, k, i));
        for (size_t i = 0; i < repeat_counts[k]; i++)
            b->progress.bytes_total += dh_plan_file_size(b->plan, repeats[k][i]);
    }
    return lines_close(b, &l);
}

/* --dry-run: what would be done, as "planned" manifest lines with the outputs to come. */
static void record_planned(batch *b, size_t **repeats, size_t *repeat_counts)
{
    line_buffer l;
    if (lines_open(&l) != 0) {
        lines_close(b, &l);
        return;
    }
    for (size_t t = 0; t < b->todo_count; t++) {
        size_t k = b->todo[t], n = dh_plan_series_file_count(b->plan, k);
        for (size_t i = 0; i < n + repeat_counts[k]; i++) {
            size_t f = i < n ? dh_plan_series_file(b->plan, k, i) : repeats[k][i - n];
            if (i >= n) {
                manifest_line(b, &l, f, "skipped", NULL, dh_plan_file_message(b->plan, f), NULL,
                              0, 0, NULL);
                continue;
            }
            char *outputs[2] = {NULL, NULL};
            size_t count = 0;
            const char *name = dh_plan_file_output_name(b->plan, f);
            size_t len = strlen(b->cfg->outdir) + strlen(name) + 2;
            if ((outputs[count] = malloc(len)))
                snprintf(outputs[count++], len, "%s/%s", b->cfg->outdir, name);
            manifest_line(b, &l, f, "planned", NULL, NULL, outputs, count, 0, NULL);
            free(outputs[0]);
        }
        b->done_files += n;
    }
    lines_close(b, &l);
}

/* --stats: where the workers' time went, stage by stage, so that the wall can be named. The
 * stages are summed over the threads that ran them (decode over a series' slice threads too),
 * so with W workers busy throughout they add up to about W times the elapsed time. */
static void stats(const batch *b)
{
    static const char *const names[CLI_STAGE_COUNT] = {"read", "decode", "compute", "write"};
    /* The stages' shares are of the workers' and their writers' busy time together. */
    double elapsed = cli_now() - b->start, staged = 0, busy = b->busy + b->writer_busy;
    for (int st = 0; st < CLI_STAGE_COUNT; st++)
        staged += b->stage[st][0];
    fprintf(stderr, "dicomhist: stats: %.3f s elapsed, %u worker%s (%u decode thread%s each), "
            "scan %.3f s, %.1f MB of files\n", elapsed, b->jobs, b->jobs == 1 ? "" : "s",
            b->decode_threads, b->decode_threads == 1 ? "" : "s", b->scan,
            b->progress.bytes_total / 1e6);
    for (int st = 0; st < CLI_STAGE_COUNT; st++)
        fprintf(stderr, "dicomhist: stats: %-8s %9.3f s wall %9.3f s CPU %5.1f%%\n", names[st],
                b->stage[st][0], b->stage[st][1],
                busy > 0 ? 100.0 * b->stage[st][0] / busy : 0.0);
    /* What the stages do not cover: a series' assembly, the command's reports, allocation. */
    double other = busy - staged;
    fprintf(stderr, "dicomhist: stats: %-8s %9.3f s wall %9s   %5.1f%%\n", "other",
            other > 0 ? other : 0.0, "", busy > 0 && other > 0 ? 100.0 * other / busy : 0.0);
    fprintf(stderr, "dicomhist: stats: workers busy %.3f s, waiting for the output order %.3f s\n",
            b->busy, b->idle);
    if (b->writers_started)
        fprintf(stderr, "dicomhist: stats: writers busy %.3f s (inside the stages above), "
                "workers waiting for their writer %.3f s\n", b->writer_busy, b->writer_wait);
    if (b->gpu_decode.gpu_series + b->gpu_decode.cpu_series > 0)
        fprintf(stderr, "dicomhist: stats: series the GPU decoders could read: %llu on the GPU, "
                "%llu on the CPU beside it; %.3f s waiting for a GPU slot or the decoders' load\n",
                (unsigned long long)b->gpu_decode.gpu_series,
                (unsigned long long)b->gpu_decode.cpu_series, b->gpu_decode.waited);
    if (b->gpu_declined)
        fprintf(stderr, "dicomhist: stats: GPU decoders not loaded (--device auto): the series "
                "they read decode in about %.2f s on the cores alone, %.2f s with the GPU "
                "(priors, docs/batch.md)\n", b->gpu_estimate[0], b->gpu_estimate[1]);
    if (b->device_series + b->device_fallbacks > 0)
        fprintf(stderr, "dicomhist: stats: series read into device memory: %zu, "
                "%zu read on the host after the device call failed (inside decode)\n",
                b->device_series, b->device_fallbacks);
    if (b->gpu_decode.helped_files > 0)
        fprintf(stderr, "dicomhist: stats: files of series on the GPU decoded by cores beside it: "
                "%llu, in %.3f s of the workers' time (inside decode)\n",
                (unsigned long long)b->gpu_decode.helped_files, b->gpu_decode.helped_seconds);
    /* The CPU columns count the worker threads alone; OpenJPEG decodes on a thread of its own
     * while the worker waits, and the scan and the GPU driver have theirs. */
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec +
                     ru.ru_stime.tv_usec * 1e-6, worker_cpu = 0;
        for (int st = 0; st < CLI_STAGE_COUNT; st++)
            worker_cpu += b->stage[st][1];
        fprintf(stderr, "dicomhist: stats: process CPU %.3f s: stages on the worker threads "
                "%.3f s, other threads (codec threads, scan, GPU driver) %.3f s\n", cpu,
                worker_cpu, cpu - worker_cpu);
    }
}

static void summary(batch *b)
{
    if (!b->progress.terminal)
        cli_progress_show(&b->progress, 1); /* the last state, for logs */
    cli_progress_clear(&b->progress);
    fprintf(stderr, "dicomhist: %s: %zu file%s %s, %zu failed, %zu skipped", b->cl->command,
            b->done_files, b->done_files == 1 ? "" : "s",
            b->cl->batch.dry_run ? "planned" : "done", b->failed_files, b->skipped_files);
    if (b->already_files)
        fprintf(stderr, ", %zu done before", b->already_files);
    if (b->manifest)
        fprintf(stderr, "; manifest %s", cli_manifest_path(b->manifest));
    fputc('\n', stderr);
    if (b->cl->batch.stats && !b->cl->batch.dry_run)
        stats(b);
}

int cli_run_batch(const cli_command_line *cl, const cli_batch_config *cfg, cli_series_fn work,
                  void *state)
{
    batch b = {.cl = cl, .cfg = cfg, .work = work, .state = state};
    cli_batch_options *o = (cli_batch_options *)&cl->batch;
    size_t **repeats = NULL, *repeat_counts = NULL;
    int status = cli_shard_resolve(cl->command, o);
    if (status < 0 && !cfg->outdir && (o->force || o->dry_run))
        status = cli_usage_error(cl->command, "--force and --dry-run go with -o OUTDIR");
    if (status < 0)
        status = check_output_folder(cl, "-o", cfg->outdir);
    if (status < 0)
        status = check_output_folder(cl, "--png", cfg->png_dir);
    if (status >= 0)
        return status;
    /* --device cuda: CUDA starts (the driver, then the context: 0.34 s together on the H100
     * host) while the inputs are scanned and the first series read; the driver's answer is
     * awaited before anything is reported or written, so that without a GPU the one message of
     * cli_open_context is all there is (cli_cuda_start.h). */
    cli_cuda_start cuda;
    int cuda_starting = cl->device == DH_DEVICE_CUDA;
    if (cuda_starting)
        cli_cuda_start_begin(&cuda, dh_cuda_available, cli_cuda_prepare_waiting);
    dh_ctx *ctx = NULL;
    status = cli_open_context(cuda_starting ? DH_DEVICE_CPU : cl->device, &ctx);
    if (status < 0) {
        b.jobs = o->jobs ? o->jobs : (uint32_t)(sysconf(_SC_NPROCESSORS_ONLN) > 0
                                                    ? sysconf(_SC_NPROCESSORS_ONLN) : 1);
        dh_ctx_set_threads(ctx, (int)b.jobs);
        cli_progress_init(&b.progress, o->progress);
        b.start = cli_now();
        if (dh_plan_scan(ctx, cl->paths, cl->path_count, &b.plan) != DH_OK)
            status = CLI_EXIT_INPUT;
        b.scan = cli_now() - b.start; /* the scan alone; a wait for CUDA below is not its */
    }
    if (cuda_starting) {
        int usable = cli_cuda_start_wait(&cuda);
        if (!usable)
            cli_cuda_start_end(&cuda);
        cuda_starting = usable; /* the context is still being made: joined after the workers */
        if (!usable && ctx) {
            dh_plan_free(b.plan);
            dh_ctx_free(ctx);
            return cli_report_no_cuda();
        }
    }
    if (status >= 0) {
        if (ctx)
            cli_report_failure(cl->path_count == 1 ? cl->paths[0] : "inputs", dh_ctx_error(ctx));
        if (cuda_starting)
            cli_cuda_start_end(&cuda);
        dh_ctx_free(ctx);
        dh_plan_free(b.plan);
        return status;
    }
    dh_ctx_free(ctx);
    status = cfg->outdir ? check_collisions(cl, b.plan) : -1;
    if (status >= 0)
        goto out;
    status = CLI_EXIT_INPUT;

    /* The repeats of each series, for its manifest lines. */
    size_t series_count = dh_plan_series_count(b.plan);
    repeats = calloc(series_count + 1, sizeof *repeats);
    repeat_counts = calloc(series_count + 1, sizeof *repeat_counts);
    if (!repeats || !repeat_counts)
        goto oom;
    for (size_t i = 0; i < dh_plan_file_count(b.plan); i++) {
        if (dh_plan_file_state_of(b.plan, i) != DH_PLAN_FILE_REPEATED)
            continue;
        size_t k = dh_plan_file_series(b.plan, i);
        size_t *grown = realloc(repeats[k], (repeat_counts[k] + 1) * sizeof *grown);
        if (!grown)
            goto oom;
        repeats[k] = grown;
        repeats[k][repeat_counts[k]++] = i;
    }
    if (cfg->outdir && open_manifest(&b) != 0)
        goto out;
    b.progress.files_total = dh_plan_file_count(b.plan);
    if (record_unplanned(&b, o) != 0 || choose_series(&b, repeats, repeat_counts) != 0)
        b.any_failure = 1;
    if (cfg->max_series && b.todo_count > cfg->max_series) {
        status = cli_usage_error(cl->command, "%s, and the inputs hold %zu", cfg->max_series_why,
                                 b.todo_count);
        goto out;
    }
    if (o->dry_run) {
        record_planned(&b, repeats, repeat_counts);
        b.want_summary = 1;
        status = b.any_failure ? CLI_EXIT_INPUT : CLI_EXIT_OK;
        goto out;
    }

    cli_progress_show(&b.progress, 1); /* what was found, at once */

    /* Workers: a series each; a large series alone gets the cores to decode its slices. */
    b.existing = o->force ? DH_EXISTING_REPLACE : DH_EXISTING_KEEP;
    b.created = creation_time();
    uint32_t workers = b.jobs;
    if (workers > b.todo_count)
        workers = b.todo_count ? (uint32_t)b.todo_count : 1;
    b.decode_threads = b.jobs / workers ? b.jobs / workers : 1;
    b.slots = calloc(b.todo_count + 1, sizeof *b.slots);
    if (!b.slots)
        goto oom;
    for (size_t t = 0; t < b.todo_count; t++) {
        size_t k = b.todo[t];
        cli_series *s = &b.slots[t];
        s->plan = b.plan;
        s->index = k;
        s->existing = b.existing;
        s->created = b.created;
        if (!(s->priv = calloc(1, sizeof *s->priv)))
            goto oom;
        s->priv->b = &b;
        if (prepare_files(&b, k, s->priv, repeats[k], repeat_counts[k]) != 0)
            goto oom;
        sort_plan = b.plan;
        sort_priv = s->priv;
        qsort(s->priv->by_path, s->priv->file_count, sizeof *s->priv->by_path, by_source_path);
    }
    /* The GPU decoders load on a thread of their own while the first series decode, and only
     * where some series is in a syntax they read (cli_batch_decode.h). */
    b.gpu_sched = !o->cpu_decode && cl->device != DH_DEVICE_CPU;
    uint64_t gpu_pending = 0;
    int gpu_asked = 0; /* a JPEG lossless series: the library will ask about the decoders */
    double core_seconds = 0, gpu_seconds = 0; /* the GPU-decodable series by the priors */
    int unweighed = 0;                        /* one of them has no prior */
    for (size_t t = 0; b.gpu_sched && t < b.todo_count; t++) {
        const char *syntax = dh_plan_file_transfer_syntax(
            b.plan, dh_plan_series_file(b.plan, b.todo[t], 0));
        int device_sv1 = cli_decode_device_sv1(syntax, cl->device);
        if (device_sv1 || cli_decode_gpu_syntax(syntax)) {
            uint64_t bytes = dh_plan_series_sample_bytes(b.plan, b.todo[t]);
            double cpu = cli_decode_cpu_prior(syntax), gpu = cli_decode_gpu_prior(syntax);
            gpu_pending += bytes;
            if (cpu > 0 && gpu > 0)
                core_seconds += (double)bytes / cpu, gpu_seconds += (double)bytes / gpu;
            else
                unweighed = 1;
        }
        gpu_asked |= device_sv1 || cli_decode_gpu_refused(syntax);
    }
    /* --device auto loads the GPU decoders only for a batch whose decoding they shorten: on 16
     * cores their load and fixed costs outweigh the gain below about 0.2 GB of J2K or 2 GB of
     * HTJ2K (cli_decode_auto_loads). --device cuda asked for the GPU: it keeps them. */
    if (cl->device == DH_DEVICE_AUTO && gpu_pending > 0 && !unweighed &&
        !cli_decode_auto_loads(core_seconds, gpu_seconds, b.jobs, b.gpu_estimate)) {
        b.gpu_sched = 0;
        b.gpu_declined = 1;
        gpu_pending = 0;
        gpu_asked = 0;
    }
    cli_gpu_decode_start(&b.gpu_decode, gpu_pending, gpu_asked);
    if (b.gpu_decode.started && cli_decode_wait_for_load())
        cli_gpu_decode_wait_usable(&b.gpu_decode);
    pthread_mutex_init(&b.lock, NULL);
    pthread_cond_init(&b.changed, NULL);
    pthread_t *ids = calloc(workers, sizeof *ids);
    b.shares = calloc(workers, sizeof *b.shares); /* NULL: each frees its own, not shared */
    b.writers = calloc(workers, sizeof *b.writers);
    b.writers_on = cli_batch_writers_wanted(getenv("DICOMHIST_BATCH_WRITERS"));
    uint32_t started = 0;
    pthread_mutex_lock(&b.lock);
    for (uint32_t w = 0; ids && b.writers && w < workers; w++)
        if ((b.writers[w].b = &b, pthread_create(&ids[w], NULL, worker, &b.writers[w]) == 0))
            started++, b.alive++;
    pthread_mutex_unlock(&b.lock);
    for (size_t t = 0; t < b.todo_count; t++) {
        pthread_mutex_lock(&b.lock);
        while (!b.slots[t].priv->ready && b.alive > 0) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += 250000000;
            if (until.tv_nsec >= 1000000000)
                until.tv_sec++, until.tv_nsec -= 1000000000;
            pthread_cond_timedwait(&b.changed, &b.lock, &until);
            pthread_mutex_unlock(&b.lock);
            cli_progress_show(&b.progress, 0);
            pthread_mutex_lock(&b.lock);
        }
        int ready = b.slots[t].priv->ready;
        pthread_mutex_unlock(&b.lock);
        if (!ready) {
            fprintf(stderr, "dicomhist: cannot start the workers (out of memory or threads)\n");
            b.any_failure = 1;
            break;
        }
        emit(&b, t);
        pthread_mutex_lock(&b.lock);
        b.next_emit = t + 1;
        announce(&b);
        pthread_mutex_unlock(&b.lock);
    }
    for (uint32_t w = 0; w < started; w++)
        pthread_join(ids[w], NULL);
    free(ids);
    free(b.writers);
    for (uint32_t w = 0; w < b.share_count; w++)
        dh_plan_share_free(b.shares[w]);
    free(b.shares);
    cli_gpu_decode_stop(&b.gpu_decode);
    pthread_mutex_destroy(&b.lock);
    pthread_cond_destroy(&b.changed);
    b.want_summary = cfg->outdir || b.progress.enabled || o->stats;
    status = b.any_failure ? CLI_EXIT_INPUT : CLI_EXIT_OK;
    goto out;
oom:
    fprintf(stderr, "dicomhist: out of memory planning the work\n");
    status = CLI_EXIT_INPUT;
out:
    if (cuda_starting)
        cli_cuda_start_end(&cuda);
    if (cli_stdout_finish() != 0 && status == CLI_EXIT_OK)
        status = CLI_EXIT_INPUT;
    if (b.want_summary)
        summary(&b);
    for (size_t t = 0; b.slots && t < b.todo_count; t++)
        free_private(b.slots[t].priv);
    free(b.slots);
    for (size_t k = 0; repeats && k < dh_plan_series_count(b.plan); k++)
        free(repeats[k]);
    free(repeats);
    free(repeat_counts);
    free(b.todo);
    cli_manifest_close(b.manifest);
    dh_plan_free(b.plan);
    return status;
}
