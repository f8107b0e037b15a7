// SPDX-License-Identifier: MIT
/*
 * cli_plot.h: `dicomhist histogram --plot FILE.svg|FILE.png`: what the plot options ask for and
 * the one call that draws a volume's histogram with them (report_plot.h draws).
 */
#ifndef DH_CLI_PLOT_H
#define DH_CLI_PLOT_H

#include "dicomhist.h"
#include "report_plot.h"

typedef enum cli_plot_curve {
    CLI_PLOT_CURVE_NONE = 0,
    CLI_PLOT_CURVE_EQUALIZE, /* the equalization table (within the window when one is given) */
    CLI_PLOT_CURVE_WINDOW    /* the VOI function of the window (--plot-function) */
} cli_plot_curve;

typedef struct cli_plot_options {
    const char *path; /* NULL: no plot */
    report_plot_format format;
    report_plot_scale scale;
    int slices;        /* --plot-slices: small multiples (the histogram has per-slice counts) */
    int has_window;    /* --plot-window or --plot-window-range given: window.window is set */
    cli_plot_curve curve;
    dh_equalize_params window; /* the window's source, the VOI function */
} cli_plot_options;

/* Draws h of v into o->path atomically. The window and the curve come from dh_equalize with
 * o's window (the library's own rules: file, minmax and percentile windows are computed on v).
 * Returns 0, or -1 with the reason in why. */
int cli_plot_write(dh_ctx *ctx, const dh_volume *v, const dh_histogram *h,
                   const cli_plot_options *o, char *why, size_t why_len);

#endif /* DH_CLI_PLOT_H */
