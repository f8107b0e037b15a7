// SPDX-License-Identifier: MIT
/*
 * cli_batch_decode.h: which decoder reads each series of a batch (issue 24). The GPU decoders
 * (nvJPEG2000) are loaded once per process on a thread of their own, and only where some series
 * of the batch is in a syntax they read, so a run that never decodes on the GPU never pays for
 * them (their load, CUDA's context, their handles: about 0.7 s that every worker waited for).
 * Meanwhile, and whenever the GPU's decode slots are all taken, a worker decodes its series on
 * its own core if it would be done before the GPU could have drained the queue, else it waits for
 * a slot: the GPU and the idle cores share the decoding, and the values are the same either way
 * (lossless streams decode to the same stored values on both; the tests check it).
 */
#ifndef DH_CLI_BATCH_DECODE_H
#define DH_CLI_BATCH_DECODE_H

#include <pthread.h>
#include <stdint.h>

#include "dicomhist.h"

/* The choice for one series. */
typedef enum cli_decode_choice {
    CLI_DECODE_CPU,  /* the CPU decoders, on the worker's own core */
    CLI_DECODE_GPU,  /* the GPU decoders (the library falls back to the CPU per frame) */
    CLI_DECODE_WAIT, /* wait for a GPU slot, or for the decoders to load */
} cli_decode_choice;

/* What the rule looks at (cli_decode_choose): a snapshot under the scheduler's lock. */
typedef struct cli_decode_view {
    int loading, ready;   /* the GPU decoders are loading / loaded and usable */
    uint32_t busy;        /* series holding a GPU slot now (taken while loading or loaded) */
    uint32_t slots;       /* the most series the GPU decodes at once for this syntax */
    uint64_t bytes;       /* this series' decoded bytes */
    uint64_t after;       /* GPU-decodable bytes of the series not yet taken, this one excluded */
    double gpu_rate;      /* bytes per second of the GPU with its slots busy; 0: not measured */
    double cpu_rate;      /* bytes per second of one worker decoding alone; 0: not measured */
    double cpu_prior;     /* cpu_rate's prior for this syntax (cli_decode_cpu_prior); 0: none */
    double load_left;     /* seconds the decoders' load is still expected to take */
} cli_decode_view;

/* The rule (docs/batch.md, "GPU decoders in a batch"): a free slot of ready decoders takes the
 * series; while the decoders load, a series one core decodes before they are expected to be
 * loaded goes to the CPU, else the first `slots` workers take the GPU's slots at once (their
 * first frame waits for the decoders; their load threads decode from the back meanwhile,
 * dh_plan_share_set_load_threads); otherwise the CPU
 * takes the series when one core would finish it no later than the GPU would finish it and every
 * GPU-decodable series after it, else the worker waits. Pure: unit-tested without a GPU. */
cli_decode_choice cli_decode_choose(const cli_decode_view *v);

/* The GPU's throughput over one core's, for J2K and HTJ2K, until both are measured in the run. */
#define CLI_DECODE_PRIOR_RATIO 24.0
/* How long the GPU decoders take to load (CUDA's context, nvJPEG2000's and nvJPEG's handles):
 * 0.63 s on the H100 host (bench/NOTES.md, "Session 16, gpu-pipeline"). */
#define CLI_DECODE_PRIOR_LOAD_SECONDS 0.6

/* Decoded bytes per second of one core for a syntax, until measured in the run: OpenJPEG with 16
 * workers busy on the H100 host (same notes): J2K 10.6 MB/s, HTJ2K 74 MB/s; 0 for others. */
double cli_decode_cpu_prior(const char *transfer_syntax_uid);

/* Decoded bytes per second the GPU adds to a batch for a syntax, as --device auto's rule counts
 * them (cli_decode_auto_loads): J2K 250 MB/s, the GPU's own J2K rate in a batch (session 21, ours
 * and nvImageCodec's alike); HTJ2K 0.56 GB/s, far below the GPU's own 5.4 GB/s in batches of 240
 * frames: a batch feeds it series by series from the same cores that would otherwise decode, and
 * this is the rate that puts the rule's break-even where session 22 measured it (2.2 GB on 16
 * workers, bench/NOTES.md). 0 for others. */
double cli_decode_gpu_prior(const char *transfer_syntax_uid);

/* What the GPU decoders cost a batch beyond their load and do not give back: the load's own CPU
 * and the GPU's first calls beside the cores' decoding, the process's teardown with a GPU context
 * (0.11-0.20 s, session 19). Session 22's runs on the H100 host (16 workers, auto with the
 * decoders forced on against forced off, 4 rounds each) put the break-even between 0.14 GB of J2K
 * (the GPU 0.02-0.12 s slower) and 0.27 GB (0.8-1.0 s faster): 0.4 s puts the rule's at 0.22 GB. */
#define CLI_DECODE_AUTO_FIXED_SECONDS 0.4

/* --device auto's rule for the decoders (docs/batch.md): load them for a batch only where they
 * shorten its decoding. `core_seconds`: one core's seconds to decode the batch's GPU-decodable
 * series (bytes / cli_decode_cpu_prior), `gpu_seconds` the GPU's (bytes / cli_decode_gpu_prior).
 * The cores alone take core_seconds / jobs; with the GPU, its load (the cores decoding alone
 * meanwhile), CLI_DECODE_AUTO_FIXED_SECONDS, then the rest with the GPU adding core_seconds /
 * gpu_seconds cores' worth. 1 where that is shorter, or where there is no prior (gpu_seconds 0);
 * `estimate` (may be NULL) gets the two seconds, cores alone and with the GPU (0 and 0 where
 * there is no prior). On 16 workers the
 * GPU is worth it from about 0.22 GB of J2K and 2.2 GB of HTJ2K. Pure, but for the measuring knob
 * DICOMHIST_AUTO_DECODERS: gpu or cpu decides instead. */
int cli_decode_auto_loads(double core_seconds, double gpu_seconds, uint32_t jobs,
                          double estimate[2]);

/* 1 where --device auto computes a series on the GPU because the GPU decoded it, whatever its
 * size (cli_series_device): HTJ2K, whose GPU decoding leaves the GPU mostly idle while the cores
 * are the wall (they feed it, and write), so a core's compute is worth more than the GPU's
 * (session 22: at 2.18 GB cuda, computing there, was the fastest device); not classic JPEG 2000,
 * where the GPU's decoding is the wall and a compute queued behind it waits (session 21: auto,
 * computing on the cores, beat cuda by 0.4-0.9 s). DICOMHIST_AUTO_COMPUTE_BESIDE=0 or 1 decides
 * instead for every GPU syntax, to measure. */
int cli_decode_compute_beside(const char *transfer_syntax_uid);

/* 1 when the GPU decoders read this transfer syntax (JPEG 2000 and HTJ2K; JPEG lossless SV1
 * only where DH_GPU_JPEG_LOSSLESS=1 asks for nvJPEG, as the library does). */
int cli_decode_gpu_syntax(const char *transfer_syntax_uid);

/* 1 for JPEG lossless SV1 where cli_decode_gpu_syntax is 0: the library asks the GPU decoders
 * about it, loading them, only to refuse it by default (docs/batch.md). The batch hands such a
 * series to the library with the GPU decoders on once they are loaded (so that its note is the
 * one the library gives everywhere), and off while they load (no worker waits for them). */
int cli_decode_gpu_refused(const char *transfer_syntax_uid);

/* 1 where the batch reads a series whose first file is in this syntax with
 * dh_plan_load_series_device and downloads it (docs/batch.md, "JPEG lossless SV1 into device
 * memory"): JPEG lossless SV1 under --device cuda, unless DH_GPU_JPEG_LOSSLESS=0 keeps DCMTK.
 * There nvJPEG's lossless backend reads a series in one batch at 3.2-4.0 GB/s on the H100 host
 * against DCMTK's 1.1 GB/s on 16 threads (docs/performance.md, "Session 17 (decode)"), where its
 * one-file path (cli_decode_gpu_syntax) reads 45-79 MB/s. --device auto keeps DCMTK: a batch
 * whose GPU is not asked for leaves it alone for decoding as for computing. */
int cli_decode_device_sv1(const char *transfer_syntax_uid, dh_device device);

/* The decode slots for a syntax on `jobs` workers: classic JPEG 2000 at most 10 (the GPU's own
 * J2K decoding is the wall: on H100 hosts, 16 workers, 12 beat 8 and 6, then 10 beat 12 and 16),
 * JPEG lossless SV1 read into device memory at most 4 (sixteen at once were slower than DCMTK),
 * HTJ2K all of them; DICOMHIST_GPU_DECODE_SLOTS overrides them, to measure. */
uint32_t cli_decode_slots(const char *transfer_syntax_uid, uint32_t jobs);

/* Back threads of a series on the GPU (dh_plan_share_set_back_threads): none, unless
 * DICOMHIST_BACK_THREADS (0-64) asks for some for classic JPEG 2000 (never for other syntaxes).
 * Session 17 added one for J2K, whose feeder mostly waits for the GPU (then the run kept 12.6
 * cores busy instead of 8.6); session 21 measured the run faster without it, with or without a
 * lowered priority for it (bench/NOTES.md, "Session 21"). */
int cli_decode_back_threads(const char *transfer_syntax_uid);

/* Load threads of a series on the GPU (dh_plan_share_set_load_threads): 1, so that a feeder
 * whose first frame waits for the decoders' load decodes files from the back on its own core
 * meanwhile (session 22); DICOMHIST_LOAD_THREADS (0-64) overrides it, to measure. */
int cli_decode_load_threads(void);

/* How --device cuda reads a series the GPU decodes when the command computes it there: into
 * GPU memory through the worker's share (the default since session 23: no copy down and up
 * again, the files idle cores decode copied in); DICOMHIST_DEVICE_SERIES=0 to the host as
 * before, =whole the series in one call without the share. The last two to measure. */
typedef enum cli_device_series {
    CLI_DEVICE_SERIES_NONE = 0,
    CLI_DEVICE_SERIES_SHARED,
    CLI_DEVICE_SERIES_WHOLE,
} cli_device_series;
cli_device_series cli_decode_device_series(void);

/* 1 where DICOMHIST_GPU_DECODE_WAIT=1 asks the batch to take no series before the GPU decoders'
 * load has settled: to test and measure the paths taken once they are there (a small batch
 * otherwise ends on the cores while they load; test_cli_gpu's JPEG 2000 batch). */
int cli_decode_wait_for_load(void);

/* The scheduler of one batch. */
typedef struct cli_gpu_decode {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    pthread_t loader;
    int started;         /* the loader thread runs or ran */
    int loading, ready;  /* as in cli_decode_view; neither: unusable (reason) */
    char reason[256];    /* why the GPU decoders are unusable */
    uint32_t busy, waiting;
    uint64_t pending;    /* GPU-decodable bytes of series not yet taken */
    double gpu_bytes, gpu_seconds, cpu_bytes, cpu_seconds; /* measured, per series */
    uint32_t gpu_slots_seen;                               /* the slots of the series measured */
    double waited;       /* workers' seconds waiting in the scheduler for a slot (feeders taken
                            while the decoders load wait for them inside decode, since session
                            22, not here) */
    double load_start;   /* when the loader started (CLOCK_MONOTONIC seconds) */
    double load_end;     /* when it finished; series begun before are not measured */
    uint64_t gpu_series, cpu_series;
    /* The shares of the series on the GPU now (dh_plan_share): idle workers decode their files
     * from the back on their cores, so the GPU and the cores split a series, not only series. */
    dh_plan_share **shares;
    uint32_t shared, share_capacity;
    uint64_t helped_files;  /* files of GPU series the cores decoded beside it */
    double helped_seconds;  /* the workers' seconds doing so */
} cli_gpu_decode;

/* Prepares g with `pending` GPU-decodable bytes and, when pending > 0 or want_loader, starts
 * loading the GPU decoders on a thread of their own, giving it 50 ms (where no GPU is present it
 * has failed by then, so no series races it). Returns 0, or -1 when the thread cannot start (the
 * decoders then load on the first worker that needs them, as without this). */
int cli_gpu_decode_start(cli_gpu_decode *g, uint64_t pending, int want_loader);

/* 1 once the loader has finished (the GPU decoders usable or not), or when none was started. */
int cli_gpu_decode_loaded(cli_gpu_decode *g);

/* The decoder for one GPU-decodable series of `bytes` at `slots` (cpu_prior: its syntax's
 * cli_decode_cpu_prior); while the rule says wait, the worker decodes files of the series on
 * the GPU with ctx (cli_gpu_decode_help), or sleeps where none is left. On CLI_DECODE_GPU, `own`
 * (the worker's share, read with dh_plan_load_series_shared) is offered to the others until
 * cli_gpu_decode_done. *note is set to why a series the GPU could read goes to the CPU ("" otherwise). */
cli_decode_choice cli_gpu_decode_take(cli_gpu_decode *g, uint64_t bytes, uint32_t slots,
                                      double cpu_prior, dh_ctx *ctx, dh_plan_share *own,
                                      const char **note);

/* The series taken with `choice` (and `own`, as given to take) is read, in `seconds`. */
void cli_gpu_decode_done(cli_gpu_decode *g, cli_decode_choice choice, dh_plan_share *own,
                         uint32_t slots, uint64_t bytes, double seconds);

/* Decodes one file of a series on the GPU now, from the back, on this worker's core (ctx's GPU
 * decoding turned off): the share with the most files left. 1 when it did, 0 when none had any. */
int cli_gpu_decode_help(cli_gpu_decode *g, dh_ctx *ctx);

/* 1 while some series is being read on the GPU (its files may still be offered for help). */
int cli_gpu_decode_sharing(cli_gpu_decode *g);

/* 1 once the GPU decoders have loaded and are usable. */
int cli_gpu_decode_usable(cli_gpu_decode *g);

/* Waits while the GPU decoders load; 1 when they are usable (or the library loads them on
 * first use, the loader thread having failed to start), 0 when they are not. */
int cli_gpu_decode_wait_usable(cli_gpu_decode *g);

/* Waits for the loader and releases g. */
void cli_gpu_decode_stop(cli_gpu_decode *g);

#endif /* DH_CLI_BATCH_DECODE_H */
