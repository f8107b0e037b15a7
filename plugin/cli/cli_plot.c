// SPDX-License-Identifier: MIT
/*
 * cli_plot.c: cli_plot_write, a volume's histogram drawn into an SVG or PNG file. The window
 * marked and the mapping curve are the library's own: one dh_equalize with the asked window,
 * whose table (the volume's) is the curve and whose window ends are the band, so the plot shows
 * exactly what `dicomhist equalize` or `window` with the same window would do.
 */
#include "cli_plot.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_output.h"

/* The x of stored value s in the histogram's units. */
static double x_of(const dh_volume *v, const dh_histogram *h, int32_t s) {
    return h->units == DH_UNITS_MODALITY ? dh_volume_modality_value(v, s) : (double)s;
}

/* The window of r (modality units) in the histogram's units: in stored units, from the lowest
 * stored value whose modality value lies inside to the right edge of the highest. Returns 0
 * when r used no window or no stored value falls inside it. */
static int window_in_units(const dh_volume *v, const dh_histogram *h, const dh_equalized *r,
                           double *lo, double *hi) {
    double wlo = r->window_lo[0], whi = r->window_hi[0];
    if (isnan(wlo) || isnan(whi))
        return 0;
    if (h->units == DH_UNITS_MODALITY) {
        *lo = wlo, *hi = whi;
        return 1;
    }
    int found = 0;
    for (uint32_t i = 0; i < r->table_len; i++) {
        int32_t s = r->table_base + (int32_t)i;
        double m = dh_volume_modality_value(v, s);
        if (m < wlo || m > whi)
            continue;
        if (!found || s < *lo)
            *lo = s;
        if (!found || s + 1.0 > *hi)
            *hi = s + 1.0;
        found = 1;
    }
    return found;
}

static int write_file(void *arg, const unsigned char *data, size_t size) {
    return fwrite(data, 1, size, (FILE *)arg) == size ? 0 : -1;
}

static int render_to_file(const report_plot *p, const cli_plot_options *o, char *why,
                          size_t why_len) {
    cli_atomic_file f;
    if (cli_atomic_open(&f, o->path) != 0) {
        snprintf(why, why_len, "cannot create: %s", strerror(errno));
        return -1;
    }
    if (report_plot_render(p, o->format, write_file, f.file, why, why_len) != 0) {
        cli_atomic_abort(&f);
        return -1;
    }
    if (cli_atomic_commit(&f) != 0) {
        snprintf(why, why_len, "cannot write: %s", strerror(errno));
        return -1;
    }
    return 0;
}

int cli_plot_write(dh_ctx *ctx, const dh_volume *v, const dh_histogram *h,
                   const cli_plot_options *o, char *why, size_t why_len) {
    report_plot p = {.hist = h, .scale = o->scale, .small_multiples = o->slices,
                     .title = dh_volume_path(v)};
    dh_equalized *r = NULL;
    double *xy = NULL;
    if (o->has_window || o->curve != CLI_PLOT_CURVE_NONE) {
        dh_equalize_params ep = o->window;
        ep.operation = o->curve == CLI_PLOT_CURVE_WINDOW ? DH_EQ_WINDOW_LEVEL : DH_EQ_EQUALIZE;
        ep.per_slice = 0;
        if (dh_equalize(ctx, v, &ep, &r) != DH_OK) {
            snprintf(why, why_len, "the window or curve: %s", dh_ctx_error(ctx));
            return -1;
        }
        if (o->has_window)
            p.has_window = window_in_units(v, h, r, &p.window_lo, &p.window_hi);
    }
    if (o->curve != CLI_PLOT_CURVE_NONE) {
        xy = malloc(sizeof *xy * 2 * r->table_len);
        if (!xy) {
            dh_equalized_free(r);
            snprintf(why, why_len, "out of memory");
            return -1;
        }
        double top = r->output_bits >= 16 ? 65535.0 : (double)((1u << r->output_bits) - 1);
        for (uint32_t i = 0; i < r->table_len; i++) {
            xy[i] = x_of(v, h, r->table_base + (int32_t)i);
            xy[r->table_len + i] = r->tables[i] / top;
        }
        p.curve_x = xy, p.curve_y = xy + r->table_len, p.curve_points = r->table_len;
        p.curve_top = top;
        p.curve_label = o->curve == CLI_PLOT_CURVE_WINDOW ? "window (VOI function)" : "equalization";
    }
    int rc = render_to_file(&p, o, why, why_len);
    free(xy);
    dh_equalized_free(r);
    return rc;
}
