// SPDX-License-Identifier: MIT
/*
 * cli_progress.h: the progress line on stderr (when it is a terminal, or with --progress): files
 * and series done of the total, MB/s of input read, failures so far and the time left. On a
 * terminal it is rewritten in place; elsewhere a line every few seconds. stdout is never touched.
 */
#ifndef DH_CLI_PROGRESS_H
#define DH_CLI_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

typedef struct cli_progress {
    int enabled, terminal, shown;
    double start, last;
    size_t files_total, files_done, series_total, series_done, failures;
    uint64_t bytes_total, bytes_done;
} cli_progress;

void cli_progress_init(cli_progress *p, int asked);
/* Redraws when due (force: now). */
void cli_progress_show(cli_progress *p, int force);
/* Clears the line before other text goes to stderr (a no-op off a terminal). */
void cli_progress_clear(cli_progress *p);
/* Seconds on a monotonic clock. */
double cli_now(void);

#endif /* DH_CLI_PROGRESS_H */
