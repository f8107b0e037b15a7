// SPDX-License-Identifier: MIT
/*
 * cli_commands.h: what a subcommand is (a row of main.c's table) and what the subcommands
 * share: opening a context, loading operands (mi), reporting the inputs that failed; info,
 * histogram, equalize and window work series by series through cli_batch.h. A new command is
 * one cmd_*.c file defining a cli_command, one extern line here and one row in main.c.
 */
#ifndef DH_CLI_COMMANDS_H
#define DH_CLI_COMMANDS_H

#include <stddef.h>
#include <stdio.h>

#include "cli_args.h"
#include "cli_output.h"
#include "dicomhist.h"
#include "report_records.h"

typedef struct cli_command {
    const char *name;
    const char *summary; /* one line for the global --help */
    /* Runs the command; argv[0] is its name. Returns the process exit status. */
    int (*run)(int argc, char **argv);
    /* Writes the command's --help. */
    void (*help)(FILE *out);
} cli_command;

extern const cli_command cli_command_info;
extern const cli_command cli_command_histogram;
extern const cli_command cli_command_mi;
extern const cli_command cli_command_equalize;
extern const cli_command cli_command_window;

/* Reports one failure as `dicomhist: WHAT: reason` on stderr; the reason is the library's
 * message without the leading "WHAT: " when it already names it. */
void cli_report_failure(const char *what, const char *message);
/* The same into another stream (a series' held stderr). */
void cli_report_failure_to(FILE *to, const char *what, const char *message);

/* What a command needs before reading anything: `--device cuda` without a usable GPU is said
 * once here rather than once per volume, then the context is created. Returns -1 with *ctx set
 * to go on, or the exit status (1, reported). */
int cli_open_context(dh_device device, dh_ctx **ctx);
/* The message of `--device cuda` without a usable GPU, said once; returns the exit status (1). */
int cli_report_no_cuda(void);

/* Loads the paths through dh_volume_set_load and reports each input that failed. Returns the
 * set (NULL, after reporting, when nothing could be tried at all); *failed is set to 1 when
 * some input failed. */
dh_volume_set *cli_load_inputs(dh_ctx *ctx, const char *const *paths, size_t count, int *failed);

/* The --help lines of the batch options (cli_args.h CLI_OPTIONS_BATCH), and with `writes` those
 * of the commands that write outputs and a manifest (--force, --dry-run). */
void cli_batch_help(FILE *out, int writes);

#endif /* DH_CLI_COMMANDS_H */
