/*
 * cli_commands.h: what a subcommand is (a row of main.c's table) and what the subcommands
 * share: opening a context, loading the PATH operands into volumes, reporting the inputs that
 * failed, and the one body (cli_run_on_volumes) that info, histogram, equalize and window
 * wrap around their per-volume work. A new command is one cmd_*.c file defining a
 * cli_command, one extern line here and one row in main.c.
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

/* What a command needs before reading anything: `--device cuda` without a usable GPU is said
 * once here rather than once per volume, then the context is created. Returns -1 with *ctx set
 * to go on, or the exit status (1, reported). */
int cli_open_context(dh_device device, dh_ctx **ctx);

/* Loads the paths through dh_volume_set_load and reports each input that failed. Returns the
 * set (NULL, after reporting, when nothing could be tried at all); *failed is set to 1 when
 * some input failed. */
dh_volume_set *cli_load_inputs(dh_ctx *ctx, const char *const *paths, size_t count, int *failed);

/* A command's work on the loaded volumes: one record per volume through `out` (text) or `json`
 * (cl->json), each input that fails reported with cli_report_failure. Returns the exit status. */
typedef int (*cli_volumes_fn)(void *state, const cli_command_line *cl, dh_ctx *ctx,
                              const dh_volume_set *set, report_sink *out, report_json *json);

/* Opens the context, loads cl's paths, hands the volumes to `work` and flushes stdout. Returns
 * the exit status: work's, made 1 when an input could not be read or stdout not written. */
int cli_run_on_volumes(const cli_command_line *cl, cli_volumes_fn work, void *state);

#endif /* DH_CLI_COMMANDS_H */
