// SPDX-License-Identifier: MIT
/*
 * cli_args.h: the command line, read the same way by every subcommand. Long options as
 * `--name value` or `--name=value`, a few short ones (`-h` for `--help`, `-o DIR` where a
 * command declares it), `--` ending the options; operands (the paths) may come before, between
 * or after options; an option given twice counts as given last. Options that several commands
 * share (--json, --device) are read here once. Bad input is a usage error: a message on stderr
 * naming the command, a pointer to its --help, and exit status 2.
 */
#ifndef DH_CLI_ARGS_H
#define DH_CLI_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dicomhist.h"
#include "text_values.h"

#define CLI_EXIT_OK 0
#define CLI_EXIT_INPUT 1 /* some input (or output) failed; the rest was still done */
#define CLI_EXIT_USAGE 2

/* One option a command accepts. */
typedef struct cli_option {
    const char *name; /* without the dashes: "bins" */
    int takes_value;
    int id;           /* what cli_next returns for it; positive */
    char short_name;  /* 'o' for -o, or 0 for none */
} cli_option;

/* What cli_next returns besides an option id. */
enum {
    CLI_END = 0,      /* nothing left */
    CLI_OPERAND = -1, /* a path: *value points at it */
    CLI_ERROR = -2,   /* a usage error, already reported */
    CLI_HELP = -3     /* -h or --help */
};

/* The options several commands share: a command that accepts one lists it in its table, and
 * cli_read_command_line reads it into the cli_command_line. */
enum {
    CLI_OPT_JSON = 1000,
    CLI_OPT_DEVICE,
    CLI_OPT_JOBS,
    CLI_OPT_PROGRESS,
    CLI_OPT_MODALITY,
    CLI_OPT_SHARD,
    CLI_OPT_SHARD_COUNT,
    CLI_OPT_FORCE,
    CLI_OPT_DRY_RUN,
    CLI_OPT_DECODE,
    CLI_OPT_STATS
};
#define CLI_OPTION_JSON {"json", 0, CLI_OPT_JSON, 0}
#define CLI_OPTION_DEVICE {"device", 1, CLI_OPT_DEVICE, 0}
/* The options of every command that works through an archive series by series (cli_batch.h). */
#define CLI_OPTIONS_BATCH                                                                        \
    {"jobs", 1, CLI_OPT_JOBS, 'j'}, {"progress", 0, CLI_OPT_PROGRESS, 0},                        \
        {"modality", 1, CLI_OPT_MODALITY, 0}, {"shard", 1, CLI_OPT_SHARD, 0},                    \
        {"shard-count", 1, CLI_OPT_SHARD_COUNT, 0}, {"decode", 1, CLI_OPT_DECODE, 0},     \
        {"stats", 0, CLI_OPT_STATS, 0}
/* ... and of those that write outputs and a manifest. */
#define CLI_OPTIONS_BATCH_WRITE                                                                  \
    {"force", 0, CLI_OPT_FORCE, 0}, {"dry-run", 0, CLI_OPT_DRY_RUN, 0}

typedef struct cli_parser {
    const char *command; /* "histogram", for messages */
    int argc;
    char **argv;
    int index;
    int options_done; /* after "--" */
} cli_parser;

/* argv[0] is the command's own name; reading starts at argv[1]. */
void cli_parser_init(cli_parser *p, const char *command, int argc, char **argv);
/* The next option (its id, with *value set when it takes one), operand, end or error.
 * `options` ends with an entry whose name is NULL. */
int cli_next(cli_parser *p, const cli_option *options, const char **value);

/* What every command's command line holds besides the command's own options. */
/* How a batch is run: --jobs, --progress, --modality, --shard, --force, --dry-run, --decode,
 * --stats. */
typedef struct cli_batch_options {
    uint32_t jobs;          /* 0: one per online processor */
    int progress;           /* --progress given (else only when stderr is a terminal) */
    const char *modalities; /* "CR,DX" as given, or NULL for every modality */
    int shard_given, shard_auto;
    uint32_t shard_index, shard_count; /* I/N; with auto, N from --shard-count or Slurm */
    uint32_t shard_count_option;       /* --shard-count, 0 when absent */
    int force, dry_run;
    int cpu_decode; /* --decode cpu: never NVIDIA's GPU decoders */
    int stats;      /* --stats: the time split into stages after the summary */
} cli_batch_options;

typedef struct cli_command_line {
    const char *command;
    const char **paths; /* the operands, in order */
    size_t path_count;
    int json;          /* --json */
    dh_device device;  /* --device, DH_DEVICE_AUTO when absent */
    cli_batch_options batch;
} cli_command_line;

/* Reads a command's own option (id from its table, value when it takes one) into state;
 * returns -1 to go on, or the exit status to stop with (cli_usage_error's, after a bad value). */
typedef int (*cli_option_reader)(void *state, const char *command, int id, const char *value);

/* Reads argv (argv[0] the command's name) against `options`: the shared options and the
 * operands into cl, the others through read_option. Returns -1 to go on, or the exit status to
 * return at once: 0 after --help (written by `help`), 2 after a usage error, 1 when out of
 * memory. cl is to be released with cli_command_line_free either way. */
int cli_read_command_line(cli_command_line *cl, const char *command, int argc, char **argv,
                          const cli_option *options, void (*help)(FILE *),
                          cli_option_reader read_option, void *state);
void cli_command_line_free(cli_command_line *cl);

/* Writes a --help text to stdout; returns 0, or 1 (reported) when stdout cannot be written. */
int cli_show_help(void (*help)(FILE *));

/* Reports a usage error for `command` and returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *command, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;


#endif /* DH_CLI_ARGS_H */
