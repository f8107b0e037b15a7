/* SPDX-License-Identifier: MIT */
/*
 * report_plot.h: a histogram drawn as a picture for people, through cairo (SVG or PNG, one
 * drawing for both): the counts as bars on a linear scale with their log-scale silhouette
 * behind (or either alone), the window as a shaded band, the percentiles p1 p5 p50 p95 p99 as
 * dashed lines, the mapping curve of an equalization or a window over it with its own axis, and
 * optionally one small panel per slice below. The command (--plot) and the Orthanc plugin
 * (histogram.svg) draw through it, so both show the same picture. The nearest-rank percentile
 * the text summary prints lives here too, so the lines and the text always agree.
 *
 * The geometry is fixed and documented (docs/command-line.md) so that a test can read the
 * bars back out of the SVG: the main plot area is the rectangle stroked in REPORT_PLOT_FRAME;
 * the plotted bins are the occupied span widened to hold the window, split into
 * min(span, area width) columns by the same integer formula as the text sparkline; a column's
 * bar is (sum of its bins) / (largest column sum) of the area's height (linear) or
 * log(1 + sum) / log(1 + largest) (log).
 */
#ifndef DH_REPORT_PLOT_H
#define DH_REPORT_PLOT_H

#include <stddef.h>
#include <stdint.h>

#include "dicomhist.h"

typedef enum report_plot_format { REPORT_PLOT_SVG = 0, REPORT_PLOT_PNG = 1 } report_plot_format;

typedef enum report_plot_scale {
    REPORT_PLOT_BOTH = 0,   /* linear bars, the log-scale silhouette behind them */
    REPORT_PLOT_LINEAR = 1, /* linear bars alone */
    REPORT_PLOT_LOG = 2     /* log-scale bars alone */
} report_plot_scale;

/* The main plot's size in pixels (SVG user units) and where its area sits inside it. */
enum {
    REPORT_PLOT_WIDTH = 960,
    REPORT_PLOT_HEIGHT = 480,
    REPORT_PLOT_LEFT = 80,
    REPORT_PLOT_RIGHT = 70, /* room for the mapping curve's axis */
    REPORT_PLOT_TOP = 56,
    REPORT_PLOT_BOTTOM = 56,
    REPORT_PLOT_PANEL_WIDTH = 192, /* one small panel per slice, 5 a row */
    REPORT_PLOT_PANEL_HEIGHT = 120,
    REPORT_PLOT_PANELS_MAX = 256 /* more slices than this: the first 256, and a note */
};

/* The colours as 0xRRGGBB: tests find each element by its fill or stroke. */
#define REPORT_PLOT_BAR_LINEAR 0x1f77b4
#define REPORT_PLOT_BAR_LOG 0xaec7e8
#define REPORT_PLOT_WINDOW 0xff7f0e
#define REPORT_PLOT_PERCENTILE 0x555555
#define REPORT_PLOT_CURVE 0xd62728
#define REPORT_PLOT_FRAME 0x222222

typedef struct report_plot {
    const dh_histogram *hist; /* slice_counts are drawn only with small_multiples */
    report_plot_scale scale;
    int small_multiples;        /* one panel per slice (needs hist->slices > 0) */
    int has_window;             /* mark [window_lo, window_hi] (the histogram's units) */
    double window_lo, window_hi;
    const double *curve_x;      /* the mapping curve: x in the histogram's units, */
    const double *curve_y;      /* y from 0 (black) to 1 (white), curve_points of them */
    size_t curve_points;        /* 0: no curve */
    double curve_top;           /* the output value y = 1 stands for (its axis labels) */
    const char *curve_label;    /* "equalization", "window (LINEAR)", ... */
    const char *title;          /* the first line (a file, an Orthanc ID); may be NULL */
} report_plot;

/* Where the encoded bytes go, in pieces; returns 0, or non-zero to stop. */
typedef int (*report_plot_write_fn)(void *arg, const unsigned char *data, size_t size);

/* Draws p and hands the SVG or PNG bytes to write. Returns 0, or -1 with a reason in why. */
int report_plot_render(const report_plot *p, report_plot_format format,
                       report_plot_write_fn write, void *arg, char *why, size_t why_len);

/* For a process that draws no more plots (the command, once its one plot is written): frees
 * cairo's font caches and fontconfig's configuration, which both keep for the life of the
 * process, so that leak checkers (the sanitizer build) see only the program's own memory. Not
 * for a host that may draw again from another thread (the Orthanc plugin). */
void report_plot_release_caches(void);

/* The format a file name asks for: ".svg" or ".png" (any case); returns 0, or -1. */
int report_plot_format_of(const char *path, report_plot_format *format);

/* The nearest-rank p-th percentile (0 < p <= 100) over every value counted, underflow and
 * overflow included: the bin index holding it, -1 in the underflow, `bins` in the overflow,
 * -2 when total is 0. */
int64_t report_hist_percentile(const uint64_t *counts, uint32_t bins, uint64_t underflow,
                               uint64_t total, double p);

/* The five percentiles the summary and the plot show. */
#define REPORT_PERCENTILE_COUNT 5
extern const double report_percentiles[REPORT_PERCENTILE_COUNT];

#endif /* DH_REPORT_PLOT_H */
