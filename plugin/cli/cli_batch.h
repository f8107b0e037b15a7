// SPDX-License-Identifier: MIT
/*
 * cli_batch.h: how every per-volume command (info, histogram, equalize, window) works through
 * its inputs: a plan from the headers alone (dh_plan_scan), the series chosen by --modality and
 * --shard, skipped when a manifest says they are done already, then each series read, handed to
 * the command and freed by one of --jobs worker threads. What each series prints (stdout, errors
 * on stderr, manifest lines) is held until the series before it are out, so the output comes in
 * plan order whatever the timing, and as soon as each series is done.
 */
#ifndef DH_CLI_BATCH_H
#define DH_CLI_BATCH_H

#include <stddef.h>
#include <stdio.h>

#include "cli_args.h"
#include "cli_output.h"
#include "dicomhist.h"

/* One series being processed by a worker: where the command writes, and what it reports. */
typedef struct cli_series cli_series;

struct cli_series {
    const dh_plan *plan;
    size_t index;     /* the series in the plan */
    dh_ctx *ctx;      /* the worker's own */
    report_sink *out;    /* stdout, held until the series' turn */
    report_json *json;   /* over out */
    dh_existing existing; /* how outputs already there are treated (resume, --force) */
    int64_t created;      /* creation time for derived files (SOURCE_DATE_EPOCH, else -1) */
    struct cli_series_private *priv;
};

/* What a command does with one series' volume; returns 0, or 1 after cli_series_fail. */
typedef int (*cli_series_fn)(void *state, const cli_command_line *cl, cli_series *s,
                             const dh_volume *v);

/* The rest of a command's work on a series, deferred by cli_series_defer: its outputs written
 * and its record printed. s->ctx is then the thread's own (a writer's), the volume v still held;
 * pending is the command's, freed here whatever happens. Returns 0, or 1 after cli_series_fail. */
typedef int (*cli_series_finish_fn)(void *state, const cli_command_line *cl, cli_series *s,
                                    const dh_volume *v, void *pending);

/* Called by a command's cli_series_fn once its computation is done: finish runs after the
 * function returns, on the worker's writer thread while the worker reads and computes its next
 * series (docs/batch.md, "Memory and cores"), or on the worker itself when it has no writer. */
void cli_series_defer(cli_series *s, cli_series_finish_fn finish, void *pending);

typedef struct cli_batch_config {
    const char *outdir;   /* equalize and window: where outputs and the manifest go; else NULL */
    const char *png_dir;  /* --png: refused inside an input like outdir */
    int blank_between;    /* text records separated by an empty line (info, histogram) */
    size_t max_series;    /* 0, or the most series the command can take (histogram --output) */
    const char *max_series_why;
    /* What the command does, as text: a manifest line counts as done only for the same work. */
    const char *work;
    /* The command computes a volume whose samples are on the GPU (dh_equalize, --device cuda,
     * global): a series decoded into GPU memory stays there, not copied down and up again. */
    int device_samples;
} cli_batch_config;

/* Runs the batch. Returns the exit status: 0 all done, 1 some input failed, 2 usage error. */
int cli_run_batch(const cli_command_line *cl, const cli_batch_config *config, cli_series_fn work,
                  void *state);

/* The command reports the series (or one of its files) failed: `what: message` on stderr in
 * the series' turn, and the message in the manifest for its files. */
void cli_series_fail(cli_series *s, const char *what, const char *message);

/* For dh_derive_params: output_name places a source file as `cp -r` would; written records an
 * output in the manifest. user is the cli_series. */
int cli_series_output_name(void *user, const char *source, char *name, size_t size);
void cli_series_written(void *user, const char *source, const char *output);

/* The stages a series' time is split into (--stats); read and decode come from the library
 * (dh_ctx_read_times), the command times the others with cli_stage_start / cli_series_stage. */
typedef enum cli_stage {
    CLI_STAGE_READ,
    CLI_STAGE_DECODE,
    CLI_STAGE_COMPUTE, /* the histograms, tables and their application, copies to the GPU included */
    CLI_STAGE_WRITE,   /* encoding and writing the outputs (derived files, PNG, CSV) */
    CLI_STAGE_COUNT
} cli_stage;

/* A point in time, wall and this thread's CPU. */
typedef struct cli_stage_clock {
    double wall, cpu;
} cli_stage_clock;

cli_stage_clock cli_stage_start(void);
/* Adds the time since `since` to the series' stage. */
void cli_series_stage(cli_series *s, cli_stage stage, cli_stage_clock since);

/* The series' decoder_note as its manifest lines have it: the library's, else why the batch
 * decoded on a core a series the GPU could read (cli_batch_decode.h); "" when none. */
const char *cli_series_decoder_note(const cli_series *s);

/* Where the series' computation runs: --device as given, except that under auto the GPU only
 * where it is the faster for this volume (the rule is in docs/batch.md, "--device auto"). */
dh_device cli_series_device(const cli_series *s, const dh_volume *v);

#endif /* DH_CLI_BATCH_H */
