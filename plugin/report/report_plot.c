/* SPDX-License-Identifier: MIT */
/*
 * report_plot.c: report_plot_render, a histogram drawn with cairo into an SVG or a PNG stream
 * (report_plot.h has what is drawn and the geometry a test reads back), and the nearest-rank
 * percentile that both the text summary and the plot use.
 */
#include "report_plot.h"
#include "report_records.h"

#include <cairo-svg.h>
#include <cairo.h>
#include <fontconfig/fontconfig.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

const double report_percentiles[REPORT_PERCENTILE_COUNT] = {1, 5, 50, 95, 99};

int64_t report_hist_percentile(const uint64_t *counts, uint32_t bins, uint64_t underflow,
                               uint64_t total, double p) {
    if (total == 0)
        return -2;
    uint64_t rank = (uint64_t)ceil(p / 100.0 * (double)total);
    if (rank < 1)
        rank = 1;
    if (rank <= underflow)
        return -1;
    uint64_t seen = underflow;
    for (uint32_t i = 0; i < bins; i++) {
        seen += counts[i];
        if (seen >= rank)
            return i;
    }
    return bins;
}

int report_plot_format_of(const char *path, report_plot_format *format) {
    size_t n = path ? strlen(path) : 0;
    if (n > 4 && strcasecmp(path + n - 4, ".svg") == 0)
        *format = REPORT_PLOT_SVG;
    else if (n > 4 && strcasecmp(path + n - 4, ".png") == 0)
        *format = REPORT_PLOT_PNG;
    else
        return -1;
    return 0;
}

/* ------------------------------------------------------------------ geometry */

/* The plotted bins [first, first + count) and the rectangle they fill. */
typedef struct span {
    uint32_t first, count;
    double x0, y0, w, h; /* the plot area */
} span;

static double bin_position(const dh_histogram *h, double v) {
    return (v - h->lo) * (double)h->bins / (h->hi - h->lo);
}

static uint32_t bin_of(const dh_histogram *h, double v) {
    double b = floor(bin_position(h, v));
    if (!(b >= 0))
        return 0;
    return b >= h->bins ? h->bins - 1 : (uint32_t)b;
}

/* The occupied bins widened to hold the window; every bin when none is occupied. */
static void plotted_bins(const report_plot *p, uint32_t *first, uint32_t *count) {
    const dh_histogram *h = p->hist;
    uint32_t lo = 0, hi = h->bins - 1;
    while (lo < h->bins && h->counts[lo] == 0)
        lo++;
    if (lo == h->bins) {
        lo = 0;
    } else {
        while (h->counts[hi] == 0)
            hi--;
    }
    if (p->has_window) {
        uint32_t wl = bin_of(h, p->window_lo), wh = bin_of(h, p->window_hi);
        if (wl < lo)
            lo = wl;
        if (wh > hi)
            hi = wh;
    }
    *first = lo;
    *count = hi - lo + 1;
}

/* The x of a bin position (fractional bins allowed) inside the span. */
static double span_x(const span *s, double bin) {
    return s->x0 + (bin - s->first) * s->w / s->count;
}

static void set_rgb(cairo_t *cr, unsigned rgb, double alpha) {
    cairo_set_source_rgba(cr, ((rgb >> 16) & 255) / 255.0, ((rgb >> 8) & 255) / 255.0,
                          (rgb & 255) / 255.0, alpha);
}

/* A step of 1, 2 or 5 times a power of ten giving about `ticks` ticks over `range`. */
static double nice_step(double range, int ticks) {
    if (!(range > 0))
        return 1;
    double raw = range / ticks, mag = pow(10, floor(log10(raw))), f = raw / mag;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

static void text_at(cairo_t *cr, double x, double y, double size, double align, const char *t) {
    cairo_text_extents_t e;
    cairo_set_font_size(cr, size);
    cairo_text_extents(cr, t, &e);
    cairo_move_to(cr, x - align * e.x_advance, y);
    cairo_show_text(cr, t);
}

/* ------------------------------------------------------------------ bars */

/* How many columns the bins of s are drawn in: one per bin, or one per pixel when there are
 * more bins than pixels. */
static uint32_t column_count(const span *s) {
    return s->count < (uint32_t)s->w ? s->count : (uint32_t)s->w;
}

/* Column c's bins [*b0, *b1) (the text sparkline's split) and the sum of their counts. */
static uint64_t column_sum(const span *s, const uint64_t *counts, uint32_t c, uint32_t columns,
                           uint64_t *b0, uint64_t *b1) {
    uint64_t sum = 0;
    *b0 = s->first + (uint64_t)s->count * c / columns;
    *b1 = s->first + (uint64_t)s->count * (c + 1) / columns;
    for (uint64_t b = *b0; b < *b1; b++)
        sum += counts[b];
    return sum;
}

/* The largest column sum over s (the linear axis' top). */
static uint64_t column_max(const span *s, const uint64_t *counts) {
    uint32_t columns = column_count(s);
    uint64_t max = 0, b0, b1;
    for (uint32_t c = 0; c < columns; c++) {
        uint64_t sum = column_sum(s, counts, c, columns, &b0, &b1);
        if (sum > max)
            max = sum;
    }
    return max;
}

/* The bars of counts over s: one rectangle per non-empty column, all in one path. */
static void draw_bars(cairo_t *cr, const span *s, const uint64_t *counts, int log_scale,
                      unsigned rgb) {
    uint32_t columns = column_count(s);
    uint64_t max = column_max(s, counts), b0, b1;
    if (max == 0)
        return;
    for (uint32_t c = 0; c < columns; c++) {
        uint64_t sum = column_sum(s, counts, c, columns, &b0, &b1);
        if (sum == 0)
            continue;
        double f = log_scale ? log1p((double)sum) / log1p((double)max)
                             : (double)sum / (double)max;
        double x0 = span_x(s, (double)b0), x1 = span_x(s, (double)b1);
        cairo_rectangle(cr, x0, s->y0 + s->h * (1 - f), x1 - x0, s->h * f);
    }
    set_rgb(cr, rgb, 1);
    cairo_fill(cr);
}

static void draw_window(cairo_t *cr, const report_plot *p, const span *s) {
    double a = span_x(s, bin_position(p->hist, p->window_lo));
    double b = span_x(s, bin_position(p->hist, p->window_hi));
    a = fmax(a, s->x0), b = fmin(b, s->x0 + s->w);
    if (b < a)
        return;
    cairo_rectangle(cr, a, s->y0, b - a, s->h);
    set_rgb(cr, REPORT_PLOT_WINDOW, 0.12);
    cairo_fill(cr);
    cairo_move_to(cr, a, s->y0), cairo_line_to(cr, a, s->y0 + s->h);
    cairo_move_to(cr, b, s->y0), cairo_line_to(cr, b, s->y0 + s->h);
    set_rgb(cr, REPORT_PLOT_WINDOW, 1);
    cairo_set_line_width(cr, 1.5);
    cairo_stroke(cr);
}

static void draw_frame(cairo_t *cr, const span *s) {
    cairo_rectangle(cr, s->x0, s->y0, s->w, s->h);
    set_rgb(cr, REPORT_PLOT_FRAME, 1);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
}

/* ------------------------------------------------------------------ the main plot */

static void draw_x_axis(cairo_t *cr, const report_plot *p, const span *s) {
    const dh_histogram *h = p->hist;
    double vlo = dh_histogram_edge(h, s->first), vhi = dh_histogram_edge(h, s->first + s->count);
    double step = nice_step(vhi - vlo, 8);
    char t[64];
    set_rgb(cr, REPORT_PLOT_FRAME, 1);
    for (double v = ceil(vlo / step) * step; v <= vhi; v += step) {
        double x = span_x(s, bin_position(h, v));
        cairo_move_to(cr, x, s->y0 + s->h), cairo_line_to(cr, x, s->y0 + s->h + 5);
        cairo_stroke(cr);
        snprintf(t, sizeof t, "%g", fabs(v) < step * 1e-9 ? 0.0 : v);
        text_at(cr, x, s->y0 + s->h + 18, 11, 0.5, t);
    }
    snprintf(t, sizeof t, "%s value", report_units_name(h->units));
    text_at(cr, s->x0 + s->w / 2, s->y0 + s->h + 40, 12, 0.5, t);
}

static void draw_y_axis(cairo_t *cr, const report_plot *p, const span *s) {
    uint64_t max = column_max(s, p->hist->counts);
    char t[64];
    if (max == 0)
        return;
    set_rgb(cr, REPORT_PLOT_FRAME, 1);
    if (p->scale == REPORT_PLOT_LOG) {
        for (double v = 1; v <= (double)max; v *= 10) {
            double y = s->y0 + s->h * (1 - log1p(v) / log1p((double)max));
            cairo_move_to(cr, s->x0 - 5, y), cairo_line_to(cr, s->x0, y);
            cairo_stroke(cr);
            snprintf(t, sizeof t, "%g", v);
            text_at(cr, s->x0 - 8, y + 4, 11, 1, t);
        }
    } else {
        double step = nice_step((double)max, 5);
        for (double v = 0; v <= (double)max; v += step) {
            double y = s->y0 + s->h * (1 - v / (double)max);
            cairo_move_to(cr, s->x0 - 5, y), cairo_line_to(cr, s->x0, y);
            cairo_stroke(cr);
            snprintf(t, sizeof t, "%g", v);
            text_at(cr, s->x0 - 8, y + 4, 11, 1, t);
        }
    }
    cairo_save(cr);
    cairo_translate(cr, 16, s->y0 + s->h / 2);
    cairo_rotate(cr, -2 * atan(1.0)); /* a quarter turn */
    text_at(cr, 0, 0, 12, 0.5,
            p->scale == REPORT_PLOT_LOG ? "count (log scale)" : "count per column");
    cairo_restore(cr);
}

static void draw_percentiles(cairo_t *cr, const report_plot *p, const span *s) {
    const dh_histogram *h = p->hist;
    static const double dash[] = {4, 3};
    for (int i = 0; i < REPORT_PERCENTILE_COUNT; i++) {
        int64_t k = report_hist_percentile(h->counts, h->bins, h->underflow, h->total,
                                           report_percentiles[i]);
        if (k < (int64_t)s->first || k >= (int64_t)(s->first + s->count))
            continue; /* outside the plotted bins (underflow, overflow, nothing counted) */
        double x = span_x(s, (double)k);
        char t[16];
        cairo_set_dash(cr, dash, 2, 0);
        set_rgb(cr, REPORT_PLOT_PERCENTILE, 1);
        cairo_set_line_width(cr, 1);
        cairo_move_to(cr, x, s->y0), cairo_line_to(cr, x, s->y0 + s->h);
        cairo_stroke(cr);
        cairo_set_dash(cr, NULL, 0, 0);
        snprintf(t, sizeof t, "p%g", report_percentiles[i]);
        /* Alternate heights: p95 and p99 (or p1 and p5) often sit a few pixels apart. */
        text_at(cr, x, s->y0 - 4 - (i % 2) * 11, 10, 0.5, t);
    }
}

static void draw_curve(cairo_t *cr, const report_plot *p, const span *s) {
    int started = 0;
    double lo = s->first, hi = (double)s->first + s->count;
    cairo_save(cr);
    cairo_rectangle(cr, s->x0, s->y0 - 1, s->w, s->h + 2);
    cairo_clip(cr);
    for (size_t i = 0; i < p->curve_points; i++) {
        double b = bin_position(p->hist, p->curve_x[i]);
        if (b < lo - 1 || b > hi + 1)
            continue;
        double x = span_x(s, b), y = s->y0 + s->h * (1 - p->curve_y[i]);
        if (started)
            cairo_line_to(cr, x, y);
        else
            cairo_move_to(cr, x, y), started = 1;
    }
    set_rgb(cr, REPORT_PLOT_CURVE, 1);
    cairo_set_line_width(cr, 2);
    cairo_stroke(cr);
    cairo_restore(cr);
    char t[64];
    double right = s->x0 + s->w;
    for (int i = 0; i <= 4; i++) {
        double y = s->y0 + s->h * (1 - i / 4.0);
        cairo_move_to(cr, right, y), cairo_line_to(cr, right + 5, y);
        cairo_stroke(cr);
        snprintf(t, sizeof t, "%g", round(p->curve_top * i / 4.0));
        text_at(cr, right + 8, y + 4, 11, 0, t);
    }
}

static void legend_item(cairo_t *cr, double *x, double y, unsigned rgb, double alpha,
                        const char *label) {
    cairo_text_extents_t e;
    cairo_rectangle(cr, *x, y - 9, 12, 10);
    set_rgb(cr, rgb, alpha);
    cairo_fill(cr);
    set_rgb(cr, REPORT_PLOT_FRAME, 1);
    cairo_set_font_size(cr, 11);
    cairo_text_extents(cr, label, &e);
    cairo_move_to(cr, *x + 16, y);
    cairo_show_text(cr, label);
    *x += 16 + e.x_advance + 18;
}

static void draw_header(cairo_t *cr, const report_plot *p) {
    const dh_histogram *h = p->hist;
    char t[512];
    set_rgb(cr, REPORT_PLOT_FRAME, 1);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
    snprintf(t, sizeof t, "%.120s", p->title ? p->title : "histogram");
    text_at(cr, 10, 16, 13, 0, t);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    snprintf(t, sizeof t, "%u bins over [%.10g, %.10g), %s units; %llu values, %llu below, "
             "%llu at or above", (unsigned)h->bins, h->lo, h->hi, report_units_name(h->units),
             (unsigned long long)h->total, (unsigned long long)h->underflow,
             (unsigned long long)h->overflow);
    text_at(cr, 10, 31, 11, 0, t);
    double x = 480;
    if (p->scale != REPORT_PLOT_LOG)
        legend_item(cr, &x, 16, REPORT_PLOT_BAR_LINEAR, 1, "linear");
    if (p->scale != REPORT_PLOT_LINEAR)
        legend_item(cr, &x, 16, REPORT_PLOT_BAR_LOG, 1, "log scale");
    if (p->has_window) {
        snprintf(t, sizeof t, "window %.6g..%.6g", p->window_lo, p->window_hi);
        legend_item(cr, &x, 16, REPORT_PLOT_WINDOW, 0.5, t);
    }
    if (p->curve_points)
        legend_item(cr, &x, 16, REPORT_PLOT_CURVE, 1, p->curve_label ? p->curve_label : "mapping");
}

static void draw_main(cairo_t *cr, const report_plot *p, const span *s) {
    const dh_histogram *h = p->hist;
    draw_header(cr, p);
    if (p->has_window)
        draw_window(cr, p, s);
    if (p->scale != REPORT_PLOT_LINEAR)
        draw_bars(cr, s, h->counts, 1, REPORT_PLOT_BAR_LOG);
    if (p->scale != REPORT_PLOT_LOG)
        draw_bars(cr, s, h->counts, 0, REPORT_PLOT_BAR_LINEAR);
    draw_percentiles(cr, p, s);
    draw_frame(cr, s);
    draw_x_axis(cr, p, s);
    draw_y_axis(cr, p, s);
    if (p->curve_points)
        draw_curve(cr, p, s);
}

/* ------------------------------------------------------------------ small multiples */

static uint32_t panel_count(const report_plot *p) {
    if (!p->small_multiples || p->hist->slices == 0 || !p->hist->slice_counts)
        return 0;
    return p->hist->slices < REPORT_PLOT_PANELS_MAX ? p->hist->slices : REPORT_PLOT_PANELS_MAX;
}

static int panel_rows(uint32_t panels) { return (int)((panels + 4) / 5); }

static void draw_panels(cairo_t *cr, const report_plot *p, const span *main_span) {
    const dh_histogram *h = p->hist;
    uint32_t n = panel_count(p);
    char t[96];
    for (uint32_t k = 0; k < n; k++) {
        double px = (k % 5) * (double)REPORT_PLOT_PANEL_WIDTH;
        double py = REPORT_PLOT_HEIGHT + 8 + (k / 5) * (double)REPORT_PLOT_PANEL_HEIGHT;
        span s = {main_span->first, main_span->count, px + 16, py + 20,
                  REPORT_PLOT_PANEL_WIDTH - 28, REPORT_PLOT_PANEL_HEIGHT - 34};
        const uint64_t *counts = h->slice_counts + (size_t)k * h->bins;
        if (p->has_window)
            draw_window(cr, p, &s);
        draw_bars(cr, &s, counts, p->scale == REPORT_PLOT_LOG,
                  p->scale == REPORT_PLOT_LOG ? REPORT_PLOT_BAR_LOG : REPORT_PLOT_BAR_LINEAR);
        draw_frame(cr, &s);
        snprintf(t, sizeof t, "slice %u  (max %llu)", (unsigned)k,
                 (unsigned long long)column_max(&s, counts));
        set_rgb(cr, REPORT_PLOT_FRAME, 1);
        text_at(cr, s.x0, py + 14, 10, 0, t);
    }
    if (n < h->slices && n > 0) {
        snprintf(t, sizeof t, "(the first %u of %u slices)", (unsigned)n, (unsigned)h->slices);
        text_at(cr, 10, REPORT_PLOT_HEIGHT + 8 + panel_rows(n) * REPORT_PLOT_PANEL_HEIGHT + 4,
                11, 0, t);
    }
}

/* ------------------------------------------------------------------ render */

typedef struct stream {
    report_plot_write_fn write;
    void *arg;
} stream;

static cairo_status_t stream_write(void *closure, const unsigned char *data, unsigned int size) {
    const stream *s = closure;
    return s->write(s->arg, data, size) == 0 ? CAIRO_STATUS_SUCCESS : CAIRO_STATUS_WRITE_ERROR;
}

int report_plot_render(const report_plot *p, report_plot_format format,
                       report_plot_write_fn write, void *arg, char *why, size_t why_len) {
    const dh_histogram *h = p ? p->hist : NULL;
    if (!h || h->bins == 0 || !h->counts || !(h->lo < h->hi) || !write) {
        snprintf(why, why_len, "nothing to plot");
        return -1;
    }
    uint32_t panels = panel_count(p);
    int height = REPORT_PLOT_HEIGHT +
                 (panels ? 8 + panel_rows(panels) * REPORT_PLOT_PANEL_HEIGHT + 16 : 0);
    stream out = {write, arg};
    cairo_surface_t *surface;
    if (format == REPORT_PLOT_SVG) {
        surface = cairo_svg_surface_create_for_stream(stream_write, &out, REPORT_PLOT_WIDTH,
                                                      height);
        cairo_svg_surface_set_document_unit(surface, CAIRO_SVG_UNIT_USER);
    } else {
        surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, REPORT_PLOT_WIDTH, height);
    }
    cairo_t *cr = cairo_create(surface);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    span s = {0, 0, REPORT_PLOT_LEFT, REPORT_PLOT_TOP,
              REPORT_PLOT_WIDTH - REPORT_PLOT_LEFT - REPORT_PLOT_RIGHT,
              REPORT_PLOT_HEIGHT - REPORT_PLOT_TOP - REPORT_PLOT_BOTTOM};
    plotted_bins(p, &s.first, &s.count);
    draw_main(cr, p, &s);
    draw_panels(cr, p, &s);
    cairo_status_t st = cairo_status(cr);
    cairo_destroy(cr);
    if (st == CAIRO_STATUS_SUCCESS && format == REPORT_PLOT_PNG)
        st = cairo_surface_write_to_png_stream(surface, stream_write, &out);
    cairo_surface_finish(surface); /* the SVG is written out here */
    if (st == CAIRO_STATUS_SUCCESS)
        st = cairo_surface_status(surface);
    cairo_surface_destroy(surface);
    if (st != CAIRO_STATUS_SUCCESS) {
        snprintf(why, why_len, "cannot draw the plot: %s", cairo_status_to_string(st));
        return -1;
    }
    return 0;
}

void report_plot_release_caches(void) {
    cairo_debug_reset_static_data();
    FcFini();
}
