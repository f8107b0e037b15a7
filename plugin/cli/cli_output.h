// SPDX-License-Identifier: MIT
/*
 * cli_output.h: how the command writes: the sink and JSON writer shared with the other hosts
 * (report_json.h), the one sink over stdout, and files written atomically (a temporary file in
 * the destination folder renamed into place only once complete).
 */
#ifndef DH_CLI_OUTPUT_H
#define DH_CLI_OUTPUT_H

#include <stdint.h>
#include <stdio.h>

#include "report_json.h"

/* The sink over stdout that every command writes its report through: one per process, its
 * 64 KiB buffer kept off the stack. */
report_sink *cli_stdout_sink(void);
/* Flushes cli_stdout_sink; returns 0, or -1 after reporting `dicomhist: standard output: reason`
 * on stderr (a full disk, a closed pipe). */
int cli_stdout_finish(void);

/* ------------------------------------------------------------------ atomic files */

/* A file being written under a temporary name beside its destination. */
typedef struct cli_atomic_file {
    char *path;     /* the destination */
    char *tmp_path; /* where the bytes go until commit */
    FILE *file;
} cli_atomic_file;

/* Creates the temporary file; returns 0, or -1 with errno set (nothing is left behind). */
int cli_atomic_open(cli_atomic_file *f, const char *path);
/* Flushes, syncs and renames into place; returns 0, or -1 with errno set, in which case the
 * temporary file is removed and the destination is untouched. */
int cli_atomic_commit(cli_atomic_file *f);
/* Throws the temporary file away (safe after a failed commit, and on a zeroed struct). */
void cli_atomic_abort(cli_atomic_file *f);

/* ------------------------------------------------------------------ terminal */

/* 1 when the locale environment (LC_ALL, else LC_CTYPE, else LANG) names UTF-8. */
int cli_locale_is_utf8(void);

#endif /* DH_CLI_OUTPUT_H */
