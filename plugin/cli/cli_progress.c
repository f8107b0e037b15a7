// SPDX-License-Identifier: MIT
/*
 * cli_progress.c: the progress line of cli_progress.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "cli_progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

double cli_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

void cli_progress_init(cli_progress *p, int asked)
{
    *p = (cli_progress){0};
    p->terminal = isatty(STDERR_FILENO);
    p->enabled = asked || p->terminal;
    p->start = p->last = cli_now();
}

static void duration(char *out, size_t size, double s)
{
    if (s < 60)
        snprintf(out, size, "%.0fs", s);
    else if (s < 3600)
        snprintf(out, size, "%dm%02ds", (int)(s / 60), (int)s % 60);
    else
        snprintf(out, size, "%dh%02dm", (int)(s / 3600), (int)(s / 60) % 60);
}

void cli_progress_show(cli_progress *p, int force)
{
    if (!p->enabled)
        return;
    double now = cli_now();
    if (!force && now - p->last < (p->terminal ? 0.25 : 5.0))
        return;
    p->last = now;
    double elapsed = now - p->start;
    double rate = elapsed > 0 ? (double)p->bytes_done / elapsed : 0;
    char left[32] = "?";
    if (rate > 0 && p->bytes_done > 0)
        duration(left, sizeof left, (double)(p->bytes_total - p->bytes_done) / rate);
    fprintf(stderr, "%sdicomhist: %zu/%zu files, %zu/%zu series, %.1f MB/s, %zu failed, %s left%s",
            p->terminal ? "\r\033[K" : "", p->files_done, p->files_total, p->series_done,
            p->series_total, rate / 1e6, p->failures, left, p->terminal ? "" : "\n");
    fflush(stderr);
    p->shown = 1;
}

void cli_progress_clear(cli_progress *p)
{
    if (p->enabled && p->terminal && p->shown) {
        fputs("\r\033[K", stderr);
        p->shown = 0;
    }
}
