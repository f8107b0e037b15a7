/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * routes_views.c: what a person looks at. GET /series/{id}/histogram.svg and
 * /instances/{id}/histogram.svg draw the JSON histogram routes' answer (the same query
 * arguments, asked of the plugin's own route through Orthanc's REST API, so a series is read
 * exactly as .../histogram reads it) with the command's plot (report_plot.h), plus the plot's
 * own arguments: scale, window / window-range (a band in the histogram's units) and slices.
 * GET /instances/{id}/preview.png draws one frame of an instance as an 8-bit PNG: as stored
 * (mode=original: its own window, else min-max), equalized, or windowed, from the instance's
 * bytes in memory through dh_equalize, made 8-bit as the command's --png previews are.
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_gate.h"
#include "options.h"
#include "orthanc_rest.h"
#include "report_plot.h"
#include "routes.h"
#include "routes_views.h"
#include "series_fetch.h"
#include "text_values.h"

/* ------------------------------------------------------------------ histogram.svg */

/* The plot's own query arguments; everything else is the histogram route's. */
typedef struct plot_query {
    report_plot_scale scale;
    int has_window, slices;
    double lo, hi;
} plot_query;

/* Reads one of the plot's arguments; 1 when key was one (0 = not the plot's), -1 refused. */
static int plot_argument(const char *key, const char *value, plot_query *q, dho_bad_argument *bad)
{
    const char *why = NULL;
    double c, w;
    if (strcmp(key, "scale") == 0) {
        if (strcmp(value, "both") == 0)
            q->scale = REPORT_PLOT_BOTH;
        else if (strcmp(value, "linear") == 0)
            q->scale = REPORT_PLOT_LINEAR;
        else if (strcmp(value, "log") == 0)
            q->scale = REPORT_PLOT_LOG;
        else
            why = "expected both, linear or log";
    } else if (strcmp(key, "window") == 0) {
        /* DICOM LINEAR's edges, as the command's --window C:W covers them. */
        if (text_parse_pair(value, &c, &w) != 0 || !(w >= 1))
            why = "expected CENTER:WIDTH with WIDTH >= 1";
        q->lo = c - 0.5 - (w - 1) / 2, q->hi = c - 0.5 + (w - 1) / 2;
        q->has_window++;
    } else if (strcmp(key, "window-range") == 0) {
        if (text_parse_range(value, &q->lo, &q->hi, &why) != 0 && !why)
            why = "expected LO:HI";
        q->has_window++;
    } else if (strcmp(key, "slices") == 0) {
        if (strcmp(value, "true") == 0 || strcmp(value, "1") == 0)
            q->slices = 1;
        else if (strcmp(value, "false") == 0 || strcmp(value, "0") == 0)
            q->slices = 0;
        else
            why = "expected true or false";
    } else {
        return 0;
    }
    if (!why && q->has_window > 1)
        why = "give one window or window-range";
    if (why) {
        snprintf(bad->name, sizeof bad->name, "%s", key);
        snprintf(bad->reason, sizeof bad->reason, "%s", why);
        return -1;
    }
    return 1;
}

/* Appends key=value to a query string, the value percent-encoded. Returns 0, or -1 when full. */
static int append_query(char *uri, size_t size, const char *key, const char *value)
{
    size_t n = strlen(uri);
    n += (size_t)snprintf(uri + n, n < size ? size - n : 0, "%c%s=", strchr(uri, '?') ? '&' : '?',
                          key);
    for (const unsigned char *p = (const unsigned char *)value; *p && n < size; p++) {
        if (isalnum(*p) || strchr("-_.~:", *p))
            uri[n++] = (char)*p;
        else
            n += (size_t)snprintf(uri + n, size - n, "%%%02X", *p);
    }
    if (n >= size)
        return -1;
    uri[n] = 0;
    return 0;
}

/* The histogram of the JSON route as a dh_histogram (arrays owned by the caller: free_hist). */
static int hist_from_json(const json_t *j, dh_histogram *h)
{
    memset(h, 0, sizeof *h);
    const json_t *counts = json_object_get(j, "counts"), *range = json_object_get(j, "range");
    const json_t *slices = json_object_get(j, "slices");
    h->bins = (uint32_t)json_array_size(counts);
    if (h->bins == 0 || json_array_size(range) != 2)
        return -1;
    h->lo = json_number_value(json_array_get(range, 0));
    h->hi = json_number_value(json_array_get(range, 1));
    h->units = strcmp(dho_json_str(j, "units"), "modality") == 0 ? DH_UNITS_MODALITY
                                                                  : DH_UNITS_STORED;
    h->total = (uint64_t)json_integer_value(json_object_get(j, "total"));
    h->underflow = (uint64_t)json_integer_value(json_object_get(j, "underflow"));
    h->overflow = (uint64_t)json_integer_value(json_object_get(j, "overflow"));
    h->slices = (uint32_t)json_array_size(slices);
    h->counts = malloc(sizeof *h->counts * h->bins);
    h->slice_counts = h->slices ? malloc(sizeof *h->slice_counts * h->bins * h->slices) : NULL;
    if (!h->counts || (h->slices && !h->slice_counts))
        return -1;
    for (uint32_t i = 0; i < h->bins; i++)
        h->counts[i] = (uint64_t)json_integer_value(json_array_get(counts, i));
    for (uint32_t k = 0; k < h->slices; k++) {
        const json_t *c = json_object_get(json_array_get(slices, k), "counts");
        if (json_array_size(c) != h->bins)
            return -1;
        for (uint32_t i = 0; i < h->bins; i++)
            h->slice_counts[(size_t)k * h->bins + i] =
                (uint64_t)json_integer_value(json_array_get(c, i));
    }
    return 0;
}

static void free_hist(dh_histogram *h)
{
    free(h->counts);
    free(h->slice_counts);
}

/* Collects the encoded plot in memory. */
typedef struct bytes {
    unsigned char *data;
    size_t size, cap;
} bytes;

static int bytes_write(void *arg, const unsigned char *data, size_t size)
{
    bytes *b = arg;
    if (b->size + size > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 65536;
        while (cap < b->size + size)
            cap *= 2;
        unsigned char *p = realloc(b->data, cap);
        if (!p)
            return -1;
        b->data = p, b->cap = cap;
    }
    memcpy(b->data + b->size, data, size);
    b->size += size;
    return 0;
}

/* Asks the plugin's own JSON route; on success *answer holds the parsed record. Orthanc hands
 * a failed inner call back without its body, so the arguments are checked before (a 400 here
 * names them); what fails after is an unknown resource (404) or data the route refused (422,
 * the JSON route tells why). */
static void ask_histogram(OrthancPluginRestOutput *out, const char *uri, const char *family,
                          const char *kind, const char *id, json_t **answer)
{
    OrthancPluginMemoryBuffer body = {0};
    uint16_t http = 0;
    OrthancPluginErrorCode rc = OrthancPluginCallRestApi(
        dho_context, &body, NULL, &http, OrthancPluginHttpMethod_Get, uri, 0, NULL, NULL, NULL,
        0, 1);
    json_error_t err;
    json_t *j = rc == OrthancPluginErrorCode_Success && body.size
                    ? json_loadb(body.data, body.size, 0, &err) : NULL;
    if (body.data)
        OrthancPluginFreeMemoryBuffer(dho_context, &body);
    *answer = NULL;
    if (rc == OrthancPluginErrorCode_Success && http == 200 && json_is_object(j)) {
        *answer = j;
        return;
    }
    json_decref(j);
    char exists_uri[128];
    snprintf(exists_uri, sizeof exists_uri, "/%s/%s", family, id);
    json_t *resource = dho_get_json(exists_uri);
    if (!resource)
        dho_answer_error(out, 404, "UnknownResource", kind, id, "%s: no %s with this ID", id,
                         family);
    else
        dho_answer_error(out, 422, "DH_ERR_MALFORMED", kind, id,
                         "%s: its histogram cannot be computed (GET %s says why)", id, uri);
    json_decref(resource);
}

/* The histogram route's own arguments, checked as that route checks them (options.h). */
static int check_hist_arguments(const OrthancPluginHttpRequest *request, dho_bad_argument *bad)
{
    const char *keys[64], *values[64];
    OrthancPluginHttpRequest copy = *request;
    copy.getCount = 0, copy.getKeys = keys, copy.getValues = values;
    for (uint32_t i = 0; i < request->getCount; i++) {
        plot_query ignored = {REPORT_PLOT_BOTH, 0, 0, 0, 0};
        if (plot_argument(request->getKeys[i], request->getValues[i], &ignored, bad) != 0)
            continue;
        if (copy.getCount == 64) {
            snprintf(bad->name, sizeof bad->name, "%s", request->getKeys[i]);
            snprintf(bad->reason, sizeof bad->reason, "too many arguments");
            return -1;
        }
        keys[copy.getCount] = request->getKeys[i];
        values[copy.getCount++] = request->getValues[i];
    }
    dh_hist_params hp;
    return dho_parse_hist_query(&copy, &hp, bad);
}

/* One drawing on a thread of its own. cairo's first text loads fontconfig's configuration,
 * whose parser recurses deeper than the small stacks of Orthanc's HTTP threads (civetweb's
 * workers) allow: found as a crash of the next request served by a neighbouring worker, whose
 * thread-local data the overflow had overwritten. A full-sized stack costs one thread start. */
typedef struct render_job {
    const report_plot *plot;
    bytes *out;
    char why[256];
    int rc;
} render_job;

enum { RENDER_STACK_BYTES = 16 << 20 };

static void *render_thread(void *arg)
{
    render_job *j = arg;
    j->rc = report_plot_render(j->plot, REPORT_PLOT_SVG, bytes_write, j->out, j->why,
                               sizeof j->why);
    return NULL;
}

static int render_svg(const report_plot *p, bytes *out, char *why, size_t why_len)
{
    render_job job = {p, out, "", -1};
    pthread_attr_t attr;
    pthread_t thread;
    int rc = pthread_attr_init(&attr);
    if (rc == 0) {
        rc = pthread_attr_setstacksize(&attr, RENDER_STACK_BYTES);
        if (rc == 0)
            rc = pthread_create(&thread, &attr, render_thread, &job);
        pthread_attr_destroy(&attr);
    }
    if (rc != 0) {
        snprintf(why, why_len, "cannot start the drawing thread: %s", strerror(rc));
        return -1;
    }
    pthread_join(thread, NULL);
    if (job.rc != 0)
        snprintf(why, why_len, "%s", job.why);
    return job.rc;
}

static OrthancPluginErrorCode histogram_svg(OrthancPluginRestOutput *out,
                                            const OrthancPluginHttpRequest *request,
                                            const char *family, const char *kind)
{
    if (dho_wrong_method(out, request, OrthancPluginHttpMethod_Get))
        return OrthancPluginErrorCode_Success;
    const char *id = request->groups[0];
    if (!dho_valid_id(id))
        return dho_answer_error(out, 404, "UnknownResource", kind, id, "%s: no %s with this ID",
                                id, family);
    char uri[1024];
    snprintf(uri, sizeof uri, "/%s/%s/histogram", family, id);
    plot_query q = {REPORT_PLOT_BOTH, 0, 0, 0, 0};
    dho_bad_argument bad;
    for (uint32_t i = 0; i < request->getCount; i++) {
        const char *key = request->getKeys[i], *value = request->getValues[i];
        int r = plot_argument(key, value, &q, &bad);
        if (r < 0)
            return dho_answer_error(out, 400, "BadArgument", "Argument", bad.name, "%s: %s",
                                    bad.name, bad.reason);
        if (r == 0 && append_query(uri, sizeof uri, key, value) != 0)
            return dho_answer_error(out, 400, "BadArgument", "Argument", key,
                                    "the query is too long");
    }
    if (check_hist_arguments(request, &bad) != 0)
        return dho_answer_error(out, 400, "BadArgument", "Argument", bad.name, "%s: %s",
                                bad.name, bad.reason);
    if (q.slices && append_query(uri, sizeof uri, "per-slice", "true") != 0)
        return dho_answer_error(out, 400, "BadArgument", "Argument", "slices",
                                "the query is too long");
    json_t *j = NULL;
    if (ask_histogram(out, uri, family, kind, id, &j), !j)
        return OrthancPluginErrorCode_Success; /* answered with the route's error */
    dh_histogram h;
    bytes b = {0};
    char why[256], title[128];
    int rc = hist_from_json(j, &h);
    snprintf(title, sizeof title, "%s %s", kind, id);
    report_plot p = {.hist = &h, .scale = q.scale, .small_multiples = q.slices,
                     .has_window = q.has_window, .window_lo = q.lo, .window_hi = q.hi,
                     .title = title};
    if (rc == 0)
        rc = render_svg(&p, &b, why, sizeof why);
    else
        snprintf(why, sizeof why, "the histogram route's answer is not a histogram");
    if (rc == 0)
        OrthancPluginAnswerBuffer(dho_context, out, (const char *)b.data, (uint32_t)b.size,
                                  "image/svg+xml");
    else
        dho_answer_error(out, 500, "InternalError", kind, id, "%s: %s", id, why);
    free(b.data);
    free_hist(&h);
    json_decref(j);
    return OrthancPluginErrorCode_Success;
}

OrthancPluginErrorCode dho_route_series_histogram_svg(OrthancPluginRestOutput *out,
                                                      const char *url,
                                                      const OrthancPluginHttpRequest *request)
{
    (void)url;
    return histogram_svg(out, request, "series", "Series");
}

OrthancPluginErrorCode dho_route_instance_histogram_svg(OrthancPluginRestOutput *out,
                                                        const char *url,
                                                        const OrthancPluginHttpRequest *request)
{
    (void)url;
    return histogram_svg(out, request, "instances", "Instance");
}

/* ------------------------------------------------------------------ preview.png */

/* How a preview mode sets up dh_equalize; NULL where the method is not there yet. A new
 * method fills its row: nothing else changes, and the page lists the modes. */
typedef void (*preview_setup)(dh_equalize_params *p);

static void setup_original(dh_equalize_params *p)
{
    p->operation = DH_EQ_WINDOW_LEVEL;
    p->window = DH_WINDOW_FILE; /* whatever window was asked: the original is the file's */
}

static void setup_equalize(dh_equalize_params *p) { p->operation = DH_EQ_EQUALIZE; }

static void setup_window(dh_equalize_params *p)
{
    p->operation = DH_EQ_WINDOW_LEVEL;
    if (p->window == DH_WINDOW_NONE)
        p->window = DH_WINDOW_FILE;
}

/* CLAHE with the library's defaults (8 tiles per axis, one bin per stored value), as
 * `dicomhist equalize --method clahe` without further options. */
static void setup_clahe(dh_equalize_params *p)
{
    p->operation = DH_EQ_EQUALIZE;
    p->method = DH_EQ_METHOD_CLAHE;
}

static const struct {
    const char *name;
    preview_setup setup;
} preview_modes[] = {
    {"original", setup_original}, /* what a viewer shows: the file's window, else min-max */
    {"equalize", setup_equalize}, /* global histogram equalization (window: inside it) */
    {"window", setup_window},     /* the window given (default: the file's) */
    {"clahe", setup_clahe},       /* adaptive equalization (CLAHE), 8 x 8 tiles */
};

/* The query of preview.png into p and *frame; 0, or -1 with *bad (501 when *unsupported). */
static int preview_query(const OrthancPluginHttpRequest *request, dh_equalize_params *p,
                         uint32_t *frame, int *mode, dho_bad_argument *bad)
{
    const char *why = NULL, *key = "mode";
    *mode = 0, *frame = 0;
    for (uint32_t i = 0; i < request->getCount && !why; i++) {
        const char *value = request->getValues[i];
        key = request->getKeys[i];
        if (strcmp(key, "mode") == 0) {
            *mode = -1;
            for (size_t m = 0; m < sizeof preview_modes / sizeof preview_modes[0]; m++)
                if (strcmp(value, preview_modes[m].name) == 0)
                    *mode = (int)m;
            if (*mode < 0)
                why = "expected original, equalize, window or clahe";
        } else if (strcmp(key, "window") == 0) {
            if (text_parse_window(value, p, &why) != 0 && !why)
                why = "expected C:W, file, minmax or percentile:P";
        } else if (strcmp(key, "frame") == 0) {
            if (text_parse_u32(value, 0, UINT32_MAX - 1, frame) != 0)
                why = "expected a frame number from 0";
        } else {
            why = "unknown argument (expected mode, window or frame)";
        }
    }
    if (why) {
        snprintf(bad->name, sizeof bad->name, "%s", key);
        snprintf(bad->reason, sizeof bad->reason, "%s", why);
        return -1;
    }
    return 0;
}

/* The preview's 8-bit rows of slice f by the rule of dh_equalized_write_png (the command's
 * --png): round(v * 255 / (2^output_bits - 1)), inverted for MONOCHROME1 as a viewer shows it.
 * The result keeps the input's bits, as the derived series the buttons make does. */
static uint8_t *preview_pixels(const dh_volume *v, const dh_equalized *r, uint32_t f)
{
    size_t n = (size_t)r->rows * r->columns;
    uint8_t *px = malloc(n ? n : 1);
    if (!px)
        return NULL;
    int invert = dh_volume_photometric(v) == DH_MONOCHROME1;
    uint32_t top = r->output_bits >= 16 ? 65535u : (1u << r->output_bits) - 1;
    const uint16_t *d = r->data + (size_t)f * n;
    for (size_t i = 0; i < n; i++) {
        uint32_t g = (uint32_t)(((uint64_t)d[i] * 255 + top / 2) / top);
        px[i] = (uint8_t)(invert ? 255 - g : g);
    }
    return px;
}

OrthancPluginErrorCode dho_route_instance_preview(OrthancPluginRestOutput *out, const char *url,
                                                  const OrthancPluginHttpRequest *request)
{
    (void)url;
    if (dho_wrong_method(out, request, OrthancPluginHttpMethod_Get))
        return OrthancPluginErrorCode_Success;
    const char *id = request->groups[0];
    dh_equalize_params p;
    dh_equalize_params_init(&p);
    p.device = DH_DEVICE_CPU; /* one image: not worth a trip through the GPU gate */
    uint32_t frame;
    int mode;
    dho_bad_argument bad;
    if (preview_query(request, &p, &frame, &mode, &bad) != 0)
        return dho_answer_error(out, 400, "BadArgument", "Argument", bad.name, "%s: %s",
                                bad.name, bad.reason);
    if (!preview_modes[mode].setup)
        return dho_answer_error(out, 501, "NotImplemented", "Argument", "mode",
                                "mode %s: this build of dicomhist has no such method yet",
                                preview_modes[mode].name);
    preview_modes[mode].setup(&p);
    dh_ctx *ctx = dh_ctx_create();
    if (!ctx)
        return dho_answer_error(out, 500, "DH_ERR_NO_MEMORY", "Instance", id, "out of memory");
    dh_equalized *r = NULL;
    dh_volume *v = dho_read_instance(out, ctx, id);
    if (!v)
        goto done;
    /* The volume orders a multi-frame instance's frames along the slice normal: the frame
     * asked for is the file's, found by its number. */
    uint32_t slice = UINT32_MAX;
    for (uint32_t k = 0; k < dh_volume_slices(v); k++)
        if (dh_volume_slice_frame(v, k) == frame)
            slice = k;
    if (slice == UINT32_MAX) {
        dho_answer_error(out, 400, "BadArgument", "Argument", "frame",
                         "frame: %u is past the instance's %u frames", (unsigned)frame,
                         (unsigned)dh_volume_slices(v));
        goto done;
    }
    dh_status st = dh_equalize(ctx, v, &p, &r);
    if (st == DH_ERR_UNSUPPORTED && mode == 0) { /* no window of its own: min-max */
        p.window = DH_WINDOW_MINMAX;
        st = dh_equalize(ctx, v, &p, &r);
    }
    if (st != DH_OK) {
        dho_answer_error(out, dho_http_status(st), dh_status_name(st), "Instance", id, "%s",
                         dh_ctx_error(ctx));
        goto done;
    }
    uint8_t *px = preview_pixels(v, r, slice);
    if (!px) {
        dho_answer_error(out, 500, "DH_ERR_NO_MEMORY", "Instance", id, "out of memory");
        goto done;
    }
    OrthancPluginCompressAndAnswerPngImage(dho_context, out, OrthancPluginPixelFormat_Grayscale8,
                                           r->columns, r->rows, r->columns, px);
    free(px);
done:
    dh_equalized_free(r);
    dh_volume_free(v);
    dh_ctx_free(ctx);
    return OrthancPluginErrorCode_Success;
}

OrthancPluginErrorCode dho_route_preview_modes(OrthancPluginRestOutput *out, const char *url,
                                               const OrthancPluginHttpRequest *request)
{
    (void)url;
    if (dho_wrong_method(out, request, OrthancPluginHttpMethod_Get))
        return OrthancPluginErrorCode_Success;
    json_t *list = json_array();
    for (size_t m = 0; m < sizeof preview_modes / sizeof preview_modes[0]; m++)
        if (preview_modes[m].setup)
            json_array_append_new(list, json_string(preview_modes[m].name));
    dho_answer_jansson(out, list);
    json_decref(list);
    return OrthancPluginErrorCode_Success;
}
