// SPDX-License-Identifier: MIT
/*
 * cmd_histogram.c: `dicomhist histogram`, the histogram of each volume (and of each of its
 * slices with --per-slice). JSON lines with --json; for people a summary (range, min/max,
 * percentiles) and a sparkline; --output FILE.csv writes bin edges and counts atomically,
 * --plot FILE.svg|FILE.png draws them (cli_plot.h).
 * Everything large is streamed through a report_sink, never built as one string.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "cli_batch.h"
#include "cli_commands.h"
#include "cli_plot.h"

static void histogram_help(FILE *out) {
    fprintf(out,
            "Usage: dicomhist histogram [OPTION]... PATH...\n"
            "\n"
            "Histogram of each volume found in the PATHs (a file, a directory holding a\n"
            "series, or several files). Bins cover the half-open range [LO, HI):\n"
            "  bin = floor((value - LO) * BINS / (HI - LO))\n"
            "values below LO count as underflow, values at or above HI as overflow.\n"
            "\n"
            "Options:\n"
            "  --bins N            number of bins, 1..65536 (default: one per possible stored\n"
            "                      value, 2^BitsStored)\n"
            "  --range LO:HI       the range in the chosen units, LO < HI (default: the full\n"
            "                      representable range of the stored values)\n"
            "  --units stored|modality\n"
            "                      stored values (default) or modality values\n"
            "                      (slope * stored + intercept: Hounsfield units for CT)\n"
            "  --per-slice         also one histogram per slice, in volume order\n"
            "  --device auto|cpu|cuda\n"
            "                      where to compute (default auto: the GPU for volumes of\n"
            "                      64M samples or more when one is usable, else the CPU,\n"
            "                      docs/batch.md); cpu: the decoders too; cuda without a\n"
            "                      usable GPU is an error\n"
            "  --json              one JSON object per volume, one per line, with the fields\n"
            "                      path, units, bins, range [LO, HI], total, underflow,\n"
            "                      overflow, counts, and with --per-slice slices: a list of\n"
            "                      {index, source, frame, position, total, underflow,\n"
            "                      overflow, counts}\n"
            "  --output FILE.csv   also write the histogram as CSV (one volume only): a header,\n"
            "                      then bin_lo,bin_hi,count rows, the first for underflow\n"
            "                      (-inf,LO) and the last for overflow (HI,inf); with\n"
            "                      --per-slice one more column per slice (slice_0, ...)\n"
            "  --plot FILE.svg|FILE.png\n"
            "                      also draw the histogram (one volume only): bars of the\n"
            "                      occupied bins, p1 p5 p50 p95 p99 as dashed lines\n"
            "  --plot-scale both|linear|log\n"
            "                      counts on a linear scale with the log-scale silhouette\n"
            "                      behind (both, the default), or either alone\n"
            "  --plot-window C:W|file|minmax|percentile:P\n"
            "  --plot-window-range LO:HI\n"
            "                      mark a window (modality units, as equalize's --window)\n"
            "  --plot-curve equalize|window\n"
            "                      draw the mapping curve of `dicomhist equalize` (inside the\n"
            "                      window when one is given) or of `dicomhist window` (needs a\n"
            "                      window) over the bars, output values on the right axis\n"
            "  --plot-function linear|linear-exact|sigmoid\n"
            "                      the VOI function of --plot-curve window (default linear)\n"
            "  --plot-slices       one small plot per slice below the main one (implies\n"
            "                      --per-slice; the first 256 slices)\n"
            "  -h, --help          this text\n");
    cli_batch_help(out, 0);
    fprintf(out,
            "\n"
            "Without --json: the range, total, smallest and largest value, the percentiles\n"
            "p1 p5 p50 p95 p99 (left edge of the bin holding each, nearest rank, over all\n"
            "values including underflow and overflow), and a sparkline of the occupied bins\n"
            "on a logarithmic scale (ASCII unless the locale is UTF-8).\n"
            "\n"
            "Inputs that cannot be read are reported on stderr as 'dicomhist: FILE: reason';\n"
            "the others are still processed. Exit status: 0 all inputs done, 1 some failed,\n"
            "2 usage error.\n");
}

/* The options of histogram's own (--device and --json are read into the cli_command_line). */
typedef struct hist_options {
    dh_hist_params params;
    const char *output;
    cli_plot_options plot;
    int windows; /* how many --plot-window and --plot-window-range were given */
} hist_options;

/* ------------------------------------------------------------------ text for people */

/* The nearest-rank p-th percentile as text: the left edge of the bin holding it, or "<LO" /
 * ">=HI" when it falls in the underflow or overflow. */
static void percentile_text(const dh_histogram *h, const uint64_t *counts, uint64_t underflow,
                            uint64_t total, double p, char *out, size_t size) {
    int64_t k = report_hist_percentile(counts, h->bins, underflow, total, p);
    if (k == -2)
        snprintf(out, size, "-");
    else if (k == -1)
        snprintf(out, size, "<%.6g", h->lo);
    else if (k == (int64_t)h->bins)
        snprintf(out, size, ">=%.6g", h->hi);
    else
        snprintf(out, size, "%.6g", dh_histogram_edge(h, (uint32_t)k));
}

/* Draws counts[first..last] in `width` columns, each the sum of its share of the bins, height on
 * a log scale so that a small tissue peak still shows beside the air peak of a CT. */
static void sparkline(report_sink *s, const uint64_t *counts, uint32_t first, uint32_t last,
                      uint32_t width, int utf8) {
    static const char *const blocks[8] = {"\u2581", "\u2582", "\u2583", "\u2584",
                                          "\u2585", "\u2586", "\u2587", "\u2588"};
    static const char ascii[8] = {'.', ':', '-', '=', '+', '*', '#', '@'};
    uint64_t span = (uint64_t)last - first + 1;
    if (width > span)
        width = (uint32_t)span;
    uint64_t max = 0;
    uint64_t column_sum[128];
    if (width > 128)
        width = 128;
    for (uint32_t c = 0; c < width; c++) {
        uint64_t b0 = first + span * c / width, b1 = first + span * (c + 1) / width;
        uint64_t sum = 0;
        for (uint64_t b = b0; b < b1; b++)
            sum += counts[b];
        column_sum[c] = sum;
        if (sum > max)
            max = sum;
    }
    for (uint32_t c = 0; c < width; c++) {
        if (column_sum[c] == 0) {
            report_sink_char(s, ' ');
            continue;
        }
        int level = max > 1 ? (int)(7.0 * log((double)column_sum[c]) / log((double)max) + 0.5) : 7;
        if (level < 0)
            level = 0;
        if (level > 7)
            level = 7;
        if (utf8)
            report_sink_puts(s, blocks[level]);
        else
            report_sink_char(s, ascii[level]);
    }
}

/* The first and last non-empty bin; returns 0 when every bin is empty. */
static int occupied_bins(const uint64_t *counts, uint32_t bins, uint32_t *first, uint32_t *last) {
    uint32_t i = 0;
    while (i < bins && counts[i] == 0)
        i++;
    if (i == bins)
        return 0;
    uint32_t k = bins - 1;
    while (counts[k] == 0)
        k--;
    *first = i;
    *last = k;
    return 1;
}

static void histogram_text(report_sink *s, const dh_volume *v, const dh_histogram *h, int first_volume,
                           int utf8) {
    const double *percentiles = report_percentiles;
    char text[64];
    double vmin, vmax;
    if (h->units == DH_UNITS_MODALITY) {
        report_modality_range(v, &vmin, &vmax);
    } else {
        int32_t smin = 0, smax = 0;
        dh_volume_stored_range(v, &smin, &smax);
        vmin = smin;
        vmax = smax;
    }
    if (!first_volume)
        report_sink_char(s, '\n');
    report_sink_printf(s, "%s\n", dh_volume_path(v));
    report_sink_printf(s, "  %-12s %u bins over [%.10g, %.10g), %s units%s\n", "histogram",
                    (unsigned)h->bins, h->lo, h->hi, report_units_name(h->units),
                    h->device_used == DH_DEVICE_CUDA ? ", on the GPU" : "");
    report_sink_printf(s, "  %-12s %llu values, %llu below the range, %llu at or above it\n", "total",
                    (unsigned long long)h->total, (unsigned long long)h->underflow,
                    (unsigned long long)h->overflow);
    report_sink_printf(s, "  %-12s %.10g .. %.10g\n", "min .. max", vmin, vmax);
    report_sink_printf(s, "  %-12s", "percentiles");
    for (size_t i = 0; i < REPORT_PERCENTILE_COUNT; i++) {
        percentile_text(h, h->counts, h->underflow, h->total, percentiles[i], text, sizeof text);
        report_sink_printf(s, " p%g %s", percentiles[i], text);
    }
    report_sink_char(s, '\n');

    uint32_t first = 0, last = 0;
    int occupied = occupied_bins(h->counts, h->bins, &first, &last);
    if (!occupied) {
        report_sink_printf(s, "  %-12s (every value is outside the range)\n", "shape");
    } else {
        report_sink_printf(s, "  %-12s ", "shape");
        sparkline(s, h->counts, first, last, 64, utf8);
        report_sink_printf(s, "\n  %-12s %.6g .. %.6g (occupied bins)\n", "", dh_histogram_edge(h, first),
                        dh_histogram_edge(h, last + 1));
    }
    if (h->slices == 0)
        return;
    report_sink_printf(s, "  %5s %12s %10s %10s  %s\n", "slice", "position", "total", "p50",
                    "shape");
    for (uint32_t k = 0; k < h->slices; k++) {
        const uint64_t *counts = h->slice_counts + (size_t)k * h->bins;
        double xyz[3];
        char position[32];
        if (dh_volume_slice_position(v, k, xyz))
            snprintf(position, sizeof position, "%.6g", dh_volume_slice_location(v, k));
        else
            snprintf(position, sizeof position, "-");
        percentile_text(h, counts, h->slice_underflow[k], h->slice_total[k], 50, text, sizeof text);
        report_sink_printf(s, "  %5u %12s %10llu %10s  ", (unsigned)k, position,
                        (unsigned long long)h->slice_total[k], text);
        if (occupied) /* the volume's span, so that slices line up with each other */
            sparkline(s, counts, first, last, 32, utf8);
        report_sink_char(s, '\n');
    }
}

/* ------------------------------------------------------------------ CSV */

static void csv_row(report_sink *s, double lo, double hi, uint64_t count, const dh_histogram *h,
                    const uint64_t *slice_values, size_t stride) {
    report_sink_double(s, lo);
    report_sink_char(s, ',');
    report_sink_double(s, hi);
    report_sink_char(s, ',');
    report_sink_u64(s, count);
    for (uint32_t k = 0; k < h->slices; k++) {
        report_sink_char(s, ',');
        report_sink_u64(s, slice_values[(size_t)k * stride]);
    }
    report_sink_char(s, '\n');
}

/* Writes the CSV under a temporary name and renames it into place only when complete. */
static int write_csv(const char *path, const dh_histogram *h) {
    static report_sink sink;
    cli_atomic_file f;
    if (cli_atomic_open(&f, path) != 0) {
        fprintf(stderr, "dicomhist: %s: cannot create: %s\n", path, strerror(errno));
        return -1;
    }
    report_sink_init(&sink, f.file);
    report_sink_puts(&sink, "bin_lo,bin_hi,count");
    for (uint32_t k = 0; k < h->slices; k++)
        report_sink_printf(&sink, ",slice_%u", (unsigned)k);
    report_sink_char(&sink, '\n');
    csv_row(&sink, -INFINITY, h->lo, h->underflow, h, h->slice_underflow, 1);
    for (uint32_t i = 0; i < h->bins; i++) {
        csv_row(&sink, dh_histogram_edge(h, i), dh_histogram_edge(h, i + 1), h->counts[i], h,
                h->slice_counts ? h->slice_counts + i : NULL, h->bins);
    }
    csv_row(&sink, h->hi, INFINITY, h->overflow, h, h->slice_overflow, 1);
    if (report_sink_flush(&sink) != 0 || cli_atomic_commit(&f) != 0) {
        int err = sink.failed ? sink.error : errno ? errno : EIO;
        cli_atomic_abort(&f);
        fprintf(stderr, "dicomhist: %s: cannot write: %s\n", path, strerror(err));
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ the command */

enum { OPT_BINS = 1, OPT_RANGE, OPT_UNITS, OPT_PER_SLICE, OPT_OUTPUT, OPT_PLOT, OPT_PLOT_SCALE,
       OPT_PLOT_WINDOW, OPT_PLOT_WINDOW_RANGE, OPT_PLOT_CURVE, OPT_PLOT_FUNCTION,
       OPT_PLOT_SLICES };

static const cli_option histogram_options[] = {
    {"bins", 1, OPT_BINS, 0},           {"range", 1, OPT_RANGE, 0},
    {"units", 1, OPT_UNITS, 0},         {"per-slice", 0, OPT_PER_SLICE, 0},
    {"output", 1, OPT_OUTPUT, 0},       {"plot", 1, OPT_PLOT, 0},
    {"plot-scale", 1, OPT_PLOT_SCALE, 0}, {"plot-window", 1, OPT_PLOT_WINDOW, 0},
    {"plot-window-range", 1, OPT_PLOT_WINDOW_RANGE, 0},
    {"plot-curve", 1, OPT_PLOT_CURVE, 0}, {"plot-function", 1, OPT_PLOT_FUNCTION, 0},
    {"plot-slices", 0, OPT_PLOT_SLICES, 0}, CLI_OPTION_DEVICE,
    CLI_OPTION_JSON,                    CLI_OPTIONS_BATCH,
    {NULL, 0, 0, 0},
};

/* One of the --plot options into o->plot; -1 to go on, else the exit status. */
static int read_plot_option(hist_options *o, const char *cmd, int id, const char *value) {
    cli_plot_options *p = &o->plot;
    const char *why = NULL;
    switch (id) {
    case OPT_PLOT:
        if (report_plot_format_of(value, &p->format) != 0)
            return cli_usage_error(cmd, "--plot '%s': expected a file name ending in .svg or "
                                        ".png", value);
        p->path = value;
        return -1;
    case OPT_PLOT_SCALE:
        if (strcmp(value, "both") == 0)
            p->scale = REPORT_PLOT_BOTH;
        else if (strcmp(value, "linear") == 0)
            p->scale = REPORT_PLOT_LINEAR;
        else if (strcmp(value, "log") == 0)
            p->scale = REPORT_PLOT_LOG;
        else
            return cli_usage_error(cmd, "--plot-scale '%s': expected both, linear or log", value);
        return -1;
    case OPT_PLOT_WINDOW:
        o->windows++;
        p->has_window = 1;
        if (text_parse_window(value, &p->window, &why) != 0)
            return cli_usage_error(cmd, "--plot-window '%s': %s", value, why);
        return -1;
    case OPT_PLOT_WINDOW_RANGE:
        o->windows++;
        p->has_window = 1;
        if (text_parse_range(value, &p->window.lo, &p->window.hi, &why) != 0)
            return cli_usage_error(cmd, "--plot-window-range '%s': %s", value, why);
        p->window.window = DH_WINDOW_RANGE;
        return -1;
    case OPT_PLOT_CURVE:
        if (strcmp(value, "equalize") == 0)
            p->curve = CLI_PLOT_CURVE_EQUALIZE;
        else if (strcmp(value, "window") == 0)
            p->curve = CLI_PLOT_CURVE_WINDOW;
        else
            return cli_usage_error(cmd, "--plot-curve '%s': expected equalize or window", value);
        return -1;
    case OPT_PLOT_FUNCTION:
        if (strcmp(value, "linear") == 0)
            p->window.voi = DH_VOI_LINEAR;
        else if (strcmp(value, "linear-exact") == 0)
            p->window.voi = DH_VOI_LINEAR_EXACT;
        else if (strcmp(value, "sigmoid") == 0)
            p->window.voi = DH_VOI_SIGMOID;
        else
            return cli_usage_error(cmd, "--plot-function '%s': expected linear, linear-exact "
                                        "or sigmoid", value);
        return -1;
    case OPT_PLOT_SLICES:
        p->slices = 1;
        o->params.per_slice = 1;
        return -1;
    default:
        return cli_usage_error(cmd, "internal: unhandled option");
    }
}

/* What the plot options need of each other once all are read; -1 when they hold, else 2. */
static int check_plot_options(const char *cmd, const hist_options *o) {
    const cli_plot_options *p = &o->plot;
    if (!p->path && (o->windows || p->curve || p->slices))
        return cli_usage_error(cmd, "--plot-* options need --plot FILE");
    if (o->windows > 1)
        return cli_usage_error(cmd, "give one --plot-window or --plot-window-range");
    if (p->curve == CLI_PLOT_CURVE_WINDOW && !p->has_window)
        return cli_usage_error(cmd, "--plot-curve window needs --plot-window or "
                                    "--plot-window-range");
    return -1;
}

/* One of histogram's own options into the hist_options; -1 to go on, else the exit status. */
static int read_histogram_option(void *state, const char *cmd, int id, const char *value) {
    hist_options *o = state;
    const char *why;
    switch (id) {
    case OPT_BINS:
        if (text_parse_u32(value, 1, 65536, &o->params.bins) != 0)
            return cli_usage_error(cmd, "--bins '%s': expected a whole number from 1 to 65536",
                                   value);
        return -1;
    case OPT_RANGE:
        if (text_parse_range(value, &o->params.lo, &o->params.hi, &why) != 0)
            return cli_usage_error(cmd, "--range '%s': %s", value, why);
        o->params.has_range = 1;
        return -1;
    case OPT_UNITS:
        if (strcmp(value, "stored") == 0)
            o->params.units = DH_UNITS_STORED;
        else if (strcmp(value, "modality") == 0)
            o->params.units = DH_UNITS_MODALITY;
        else
            return cli_usage_error(cmd, "--units '%s': expected stored or modality", value);
        return -1;
    case OPT_PER_SLICE:
        o->params.per_slice = 1;
        return -1;
    case OPT_OUTPUT:
        if (!*value)
            return cli_usage_error(cmd, "--output needs a file name");
        o->output = value;
        return -1;
    default:
        return read_plot_option(o, cmd, id, value);
    }
}

static int histogram_series(void *state, const cli_command_line *cl, cli_series *s,
                            const dh_volume *v) {
    const hist_options *o = state;
    dh_histogram *h = NULL;
    dh_hist_params params = o->params; /* shared by the workers: the device is the series' */
    params.device = cli_series_device(s, v);
    cli_stage_clock t = cli_stage_start();
    dh_status st = dh_hist_compute(s->ctx, v, &params, &h);
    cli_series_stage(s, CLI_STAGE_COMPUTE, t);
    if (st != DH_OK) {
        cli_series_fail(s, dh_volume_path(v), dh_ctx_error(s->ctx));
        return 1;
    }
    if (cl->json)
        report_histogram_record(s->json, v, h, NULL), report_json_end_line(s->json);
    else
        histogram_text(s->out, v, h, 1, cli_locale_is_utf8());
    int rc = 0;
    if (o->output && write_csv(o->output, h) != 0) {
        cli_series_fail(s, o->output, "cannot write the CSV (see above)");
        rc = 1;
    }
    char why[1024];
    if (o->plot.path && cli_plot_write(s->ctx, v, h, &o->plot, why, sizeof why) != 0) {
        cli_series_fail(s, o->plot.path, why);
        rc = 1;
    }
    dh_histogram_free(h);
    return rc;
}

static int histogram_run(int argc, char **argv) {
    hist_options o;
    memset(&o, 0, sizeof o);
    dh_hist_params_init(&o.params);
    dh_equalize_params_init(&o.plot.window);
    cli_command_line cl;
    int status = cli_read_command_line(&cl, "histogram", argc, argv, histogram_options,
                                       histogram_help, read_histogram_option, &o);
    if (status < 0 && cl.path_count == 0)
        status = cli_usage_error("histogram", "no PATH given");
    if (status < 0)
        status = check_plot_options("histogram", &o);
    if (status < 0) {
        o.params.device = cl.device;
        cli_batch_config config = {.blank_between = 1};
        if (o.output || o.plot.path) {
            config.max_series = 1;
            config.max_series_why = o.output ? "--output takes one volume"
                                             : "--plot takes one volume";
        }
        status = cli_run_batch(&cl, &config, histogram_series, &o);
        if (o.plot.path)
            report_plot_release_caches();
    }
    cli_command_line_free(&cl);
    return status;
}

const cli_command cli_command_histogram = {
    "histogram",
    "histogram of each volume (and of each slice): stored or modality units, CSV, JSON, plots",
    histogram_run,
    histogram_help,
};
