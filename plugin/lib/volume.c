// SPDX-License-Identifier: MIT
/*
 * volume.c: single volumes: built from one decoded DICOM image (a single or multi-frame file,
 * from disk or memory) or from caller samples, their geometry and warnings. The accessors of
 * the public header's section 3 are in volume_access.c; series assembly in plan_scan.c and
 * plan_load.c.
 */
#define _POSIX_C_SOURCE 200809L
#include "volume.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "modality.h"

/* Gaps that differ from the mean by more than this (relative, with an absolute floor in mm) make
 * the spacing uneven: scanners write positions with a few decimals, so tiny jitter is normal. */
#define SPACING_RELATIVE_TOLERANCE 0.01
#define SPACING_ABSOLUTE_TOLERANCE 0.01
/* How many spacings an uneven-spacing warning lists before it abbreviates. */
#define SPACINGS_LISTED 16

char *dh_strdup(const char *s)
{
    size_t n = strlen(s ? s : "") + 1;
    char *copy = malloc(n);
    if (copy)
        memcpy(copy, s ? s : "", n);
    return copy;
}

void dh_orientation_normal(const double o[6], double n[3])
{
    n[0] = o[1] * o[5] - o[2] * o[4];
    n[1] = o[2] * o[3] - o[0] * o[5];
    n[2] = o[0] * o[4] - o[1] * o[3];
}

double dh_project_on_normal(const double p[3], const double n[3])
{
    return p[0] * n[0] + p[1] * n[1] + p[2] * n[2];
}

size_t dh_volume_slice_bytes(const dh_volume *v)
{
    return (size_t)v->format.rows * v->format.columns * sizeof(uint16_t);
}

/* The volume without (with_data 0) or with its sample buffer. */
static dh_volume *volume_alloc(const dh_dicom_image *first, uint32_t slices, const char *path,
                               int with_data)
{
    if (!first || first->format.rows == 0 || first->format.columns == 0 || slices == 0)
        return NULL;
    /* rows and columns are at most 65535 (US tags), so one slice always fits; the volume may
     * not on a 32-bit host. */
    size_t slice_samples = (size_t)first->format.rows * first->format.columns;
    if (slice_samples > SIZE_MAX / sizeof(uint16_t) / slices)
        return NULL;
    dh_volume *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    v->path = dh_strdup(path);
    v->slice = calloc(slices, sizeof *v->slice);
    if (with_data)
        v->data = malloc(slice_samples * slices * sizeof(uint16_t));
    if (!v->path || !v->slice || (with_data && !v->data)) {
        dh_volume_free(v);
        return NULL;
    }
    v->format = first->format;
    v->slices = slices;
    v->has_window = first->has_window;
    v->window_center = first->window_center;
    v->window_width = first->window_width;
    v->has_orientation = first->has_orientation;
    if (first->has_orientation) {
        memcpy(v->orientation, first->orientation, sizeof v->orientation);
        dh_orientation_normal(v->orientation, v->normal);
    }
    memcpy(v->series_uid, first->series_uid, sizeof v->series_uid);
    memcpy(v->study_uid, first->study_uid, sizeof v->study_uid);
    memcpy(v->modality, first->modality, sizeof v->modality);
    memcpy(v->transfer_syntax, first->transfer_syntax_uid, sizeof v->transfer_syntax);
    dh_volume_note_lossy(v, first->is_lossy, first->lossy_method);
    dh_volume_note_decoder(v, first->decoder, first->decoder_note);
    v->window_count = first->window_count;
    memcpy(v->window_explanation, first->window_explanation, sizeof v->window_explanation);
    if (first->voi_lut_count && first->voi_lut) {
        size_t bytes = (size_t)first->voi_lut_entries * sizeof *v->voi_lut;
        if (!(v->voi_lut = malloc(bytes))) {
            dh_volume_free(v);
            return NULL;
        }
        memcpy(v->voi_lut, first->voi_lut, bytes);
        v->voi_lut_count = first->voi_lut_count;
        v->voi_lut_entries = first->voi_lut_entries;
        v->voi_lut_bits = first->voi_lut_bits;
        v->voi_lut_first = first->voi_lut_first;
        memcpy(v->voi_lut_explanation, first->voi_lut_explanation, sizeof v->voi_lut_explanation);
    }
    if (dh_modality_lut_copy(v, first) != 0) {
        dh_volume_free(v);
        return NULL;
    }
    return v;
}

void dh_volume_note_lossy(dh_volume *v, int is_lossy, const char *method)
{
    if (!is_lossy || v->is_lossy)
        return;
    v->is_lossy = 1;
    snprintf(v->lossy_method, sizeof v->lossy_method, "%s", method);
}

void dh_volume_note_decoder(dh_volume *v, const char *decoder, const char *note)
{
    if (note[0] != '\0' && v->decoder_note[0] == '\0')
        snprintf(v->decoder_note, sizeof v->decoder_note, "%s", note);
    if (decoder[0] == '\0')
        return;
    const size_t n = strlen(decoder);
    for (const char *at = v->decoders; (at = strstr(at, decoder)) != NULL; at += n)
        if ((at == v->decoders || at[-1] == '+') && (at[n] == '\0' || at[n] == '+'))
            return; /* named already */
    const size_t used = strlen(v->decoders);
    snprintf(v->decoders + used, sizeof v->decoders - used, "%s%s", used ? "+" : "", decoder);
}

dh_volume *dh_volume_alloc(const dh_dicom_image *first, uint32_t slices, const char *path)
{
    return volume_alloc(first, slices, path, 1);
}

void dh_volume_free(dh_volume *v)
{
    if (!v)
        return;
    if (v->slice)
        for (uint32_t i = 0; i < v->slices; i++)
            free(v->slice[i].source);
    for (size_t i = 0; i < v->warning_count; i++)
        free(v->warnings[i]);
    free(v->warnings);
    free(v->slice);
    free(v->data);
    free(v->path);
    free(v->modality_lut);
    free(v->voi_lut);
    free(v);
}

int dh_volume_warn(dh_volume *v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    char *text = malloc((size_t)n + 1);
    char **grown = realloc(v->warnings, (v->warning_count + 1) * sizeof *grown);
    if (!text || !grown) {
        free(text);
        if (grown)
            v->warnings = grown;
        return -1;
    }
    v->warnings = grown;
    va_start(ap, fmt);
    vsnprintf(text, (size_t)n + 1, fmt, ap);
    va_end(ap);
    v->warnings[v->warning_count++] = text;
    return 0;
}

void dh_volume_update_range(dh_volume *v)
{
    size_t n = dh_volume_sample_count(v);
    int32_t lo = INT32_MAX, hi = INT32_MIN;
    if (v->format.is_signed) {
        const int16_t *d = v->data;
        int16_t a = INT16_MAX, b = INT16_MIN;
        for (size_t i = 0; i < n; i++) {
            a = d[i] < a ? d[i] : a;
            b = d[i] > b ? d[i] : b;
        }
        lo = a, hi = b;
    } else {
        const uint16_t *d = v->data;
        uint16_t a = UINT16_MAX, b = 0;
        for (size_t i = 0; i < n; i++) {
            a = d[i] < a ? d[i] : a;
            b = d[i] > b ? d[i] : b;
        }
        lo = a, hi = b;
    }
    v->stored_min = n ? lo : 0;
    v->stored_max = n ? hi : 0;
    dh_modality_update_range(v);
}

/* Appends "a, b, c" of up to SPACINGS_LISTED gaps to buf. */
static void list_gaps(char *buf, size_t len, const double *gaps, uint32_t count)
{
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < count && used < len; i++) {
        if (i == SPACINGS_LISTED) {
            snprintf(buf + used, len - used, ", ... (%u gaps)", count);
            return;
        }
        int n = snprintf(buf + used, len - used, "%s%g", i ? ", " : "", gaps[i]);
        if (n < 0)
            return;
        used += (size_t)n;
    }
}

int dh_volume_finish_geometry(dh_volume *v)
{
    v->spacing = 0;
    if (v->slices < 2)
        return 0;
    for (uint32_t i = 0; i < v->slices; i++)
        if (!v->slice[i].has_position || !v->has_orientation)
            return 0; /* no geometry to judge: locations are indices */

    /* Slices sharing a location (several acquisitions in one series) are kept; their zero gaps
     * do not count towards the spacing. */
    uint32_t gaps_n = 0, shared = 0;
    double *gaps = malloc((v->slices - 1) * sizeof *gaps);
    if (!gaps)
        return -1;
    double sum = 0;
    uint32_t first_shared = 0;
    for (uint32_t i = 1; i < v->slices; i++) {
        double gap = v->slice[i].location - v->slice[i - 1].location;
        if (fabs(gap) <= 1e-6) {
            if (shared++ == 0)
                first_shared = i;
            continue;
        }
        gaps[gaps_n++] = gap;
        sum += gap;
    }
    int rc = 0;
    if (shared) {
        const dh_slice_info *a = &v->slice[first_shared - 1], *b = &v->slice[first_shared];
        rc |= dh_volume_warn(v,
                             "%u slice(s) share a position with another, e.g. %s (frame %u) "
                             "and %s (frame %u) at %g mm along the normal: several "
                             "acquisitions in one series?",
                             shared, a->source, a->frame, b->source, b->frame, a->location);
    }
    if (gaps_n) {
        double mean = sum / gaps_n;
        v->spacing = mean;
        double tolerance = fmax(SPACING_ABSOLUTE_TOLERANCE, SPACING_RELATIVE_TOLERANCE * mean);
        int uneven = 0;
        for (uint32_t i = 0; i < gaps_n; i++)
            uneven |= fabs(gaps[i] - mean) > tolerance;
        if (uneven) {
            char list[512];
            list_gaps(list, sizeof list, gaps, gaps_n);
            rc |= dh_volume_warn(v, "uneven slice spacing: gaps %s mm (mean %g mm)", list, mean);
        }
    }
    free(gaps);
    return rc;
}

/* A frame's place in the sort: by location, file order among equals (qsort is not stable);
 * a NaN location (positions so large that the projection overflows) sorts last, keeping the
 * order total. */
typedef struct frame_key {
    double location;
    uint32_t index;
} frame_key;

static int compare_frame_keys(const void *pa, const void *pb)
{
    const frame_key *a = pa, *b = pb;
    int a_nan = isnan(a->location), b_nan = isnan(b->location);
    if (a_nan != b_nan)
        return a_nan - b_nan;
    if (!a_nan && a->location != b->location)
        return a->location < b->location ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* Orders the frames of a multi-frame volume by location, moving slices in place along the
 * cycles of the permutation with one slice of scratch (a volume without samples, whose frames
 * are elsewhere, only has its slice records ordered). order_out, when not NULL, receives the
 * permutation: slice i is the file's frame order_out[i]. */
static int sort_frames(dh_volume *v, uint32_t *order_out)
{
    uint32_t n = v->slices;
    int sorted = 1;
    for (uint32_t i = 1; i < n; i++)
        sorted &= v->slice[i - 1].location <= v->slice[i].location;
    if (sorted)
        return 0;
    uint32_t *order = malloc(n * sizeof *order);
    unsigned char *done = calloc(n, 1);
    dh_slice_info *info = malloc(n * sizeof *info);
    frame_key *keys = malloc(n * sizeof *keys);
    size_t bytes = v->data ? dh_volume_slice_bytes(v) : 1;
    unsigned char *scratch = malloc(bytes);
    if (!order || !done || !info || !keys || !scratch) {
        free(order), free(done), free(info), free(keys), free(scratch);
        return -1;
    }
    /* n log n: a file may hold tens of thousands of frames (an insertion sort took seconds). */
    for (uint32_t i = 0; i < n; i++)
        keys[i] = (frame_key){v->slice[i].location, i};
    qsort(keys, n, sizeof *keys, compare_frame_keys);
    for (uint32_t i = 0; i < n; i++)
        order[i] = keys[i].index;
    free(keys);
    if (order_out)
        memcpy(order_out, order, n * sizeof *order);
    unsigned char *data = v->data;
    for (uint32_t start = 0; data && start < n; start++) {
        if (done[start] || order[start] == start)
            continue;
        /* Slot `start` receives slice order[start], whose slot receives order[order[start]]... */
        memcpy(scratch, data + (size_t)start * bytes, bytes);
        uint32_t to = start;
        for (;;) {
            uint32_t from = order[to];
            done[to] = 1;
            if (from == start) {
                memcpy(data + (size_t)to * bytes, scratch, bytes);
                break;
            }
            memcpy(data + (size_t)to * bytes, data + (size_t)from * bytes, bytes);
            to = from;
        }
    }
    for (uint32_t i = 0; i < n; i++)
        info[i] = v->slice[order[i]];
    memcpy(v->slice, info, n * sizeof *info);
    free(order), free(done), free(info), free(scratch);
    return 0;
}

/* dh_volume_from_image, or (take_pixels 0) dh_volume_from_header. */
static dh_status frames_volume(dh_ctx *ctx, dh_dicom_image *image, const char *path,
                               int take_pixels, uint32_t *order, dh_volume **out)
{
    *out = NULL;
    if (take_pixels && !image->pixels)
        return dh_ctx_fail(ctx, DH_ERR_INTERNAL, "%s: image read without pixels", path);
    if (image->frames == 0)
        return dh_ctx_fail(ctx, DH_ERR_MALFORMED, "%s: no frames", path);
    /* Take the decoded pixels instead of copying them. */
    dh_volume *v = volume_alloc(image, image->frames, path, 0);
    if (!v)
        return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "%s: out of memory for %u frames", path,
                           image->frames);
    if (take_pixels) {
        v->data = image->pixels;
        image->pixels = NULL;
    }
    for (uint32_t f = 0; order && f < v->slices; f++)
        order[f] = f; /* unless sort_frames orders them */

    int has_geometry = image->has_orientation;
    for (uint32_t f = 0; f < v->slices; f++) {
        dh_slice_info *s = &v->slice[f];
        s->frame = f;
        memcpy(s->sop_uid, image->sop_instance_uid, sizeof s->sop_uid);
        s->instance_number = image->has_instance_number ? image->instance_number : 0;
        if (image->frame_positions) {
            memcpy(s->position, image->frame_positions + 3 * (size_t)f, sizeof s->position);
            s->has_position = 1;
        } else if (f == 0 && image->has_position) {
            memcpy(s->position, image->position, sizeof s->position);
            s->has_position = 1;
        }
        /* A multi-frame file without per-frame positions has no geometry beyond its first
         * frame: file order and index locations rather than one real location among indices. */
        const int located = s->has_position && has_geometry &&
                            (image->frame_positions || v->slices == 1);
        s->location = located ? dh_project_on_normal(s->position, v->normal) : (double)f;
        if (!(s->source = dh_strdup(path))) {
            dh_volume_free(v);
            return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "%s: out of memory", path);
        }
    }
    if ((image->frame_positions && has_geometry && sort_frames(v, order) != 0) ||
        dh_volume_finish_geometry(v) != 0) {
        dh_volume_free(v);
        return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "%s: out of memory", path);
    }
    if (v->data)
        dh_volume_update_range(v);
    *out = v;
    return DH_OK;
}

dh_status dh_volume_from_image(dh_ctx *ctx, dh_dicom_image *image, const char *path,
                               dh_volume **out)
{
    return frames_volume(ctx, image, path, 1, NULL, out);
}

dh_status dh_volume_from_header(dh_ctx *ctx, dh_dicom_image *image, const char *path,
                                uint32_t *order, dh_volume **out)
{
    return frames_volume(ctx, image, path, 0, order, out);
}

dh_volume *dh_volume_alloc_header(const dh_dicom_image *first, uint32_t slices, const char *path)
{
    return volume_alloc(first, slices, path, 0);
}

static dh_status finish_read(dh_ctx *ctx, dh_status st, dh_dicom_image *image, const char *name,
                             const char *msg, dh_volume **out)
{
    if (st != DH_OK)
        return dh_ctx_fail(ctx, st, "%s: %s", name, msg);
    st = dh_volume_from_image(ctx, image, name, out);
    dh_dicom_image_free(image);
    if (st == DH_OK)
        dh_ctx_clear(ctx);
    return st;
}

dh_status dh_volume_read_file(dh_ctx *ctx, const char *path, dh_volume **out)
{
    if (!out)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "dh_volume_read_file: out is NULL");
    *out = NULL;
    if (!path)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "dh_volume_read_file: path is NULL");
    char msg[DH_DICOM_MSG_LEN] = "";
    dh_dicom_image *image = NULL;
    const dh_dicom_read_options options = dh_ctx_read_options(ctx);
    dh_status st = dh_dicom_read_file_with(path, 1, &options, &image, msg, sizeof msg);
    return finish_read(ctx, st, image, path, msg, out);
}

dh_status dh_volume_read_memory(dh_ctx *ctx, const void *data, size_t size, const char *name,
                                dh_volume **out)
{
    if (!out)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "dh_volume_read_memory: out is NULL");
    *out = NULL;
    if (!name)
        name = "(memory)";
    if (!data || size == 0)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "%s: empty buffer", name);
    char msg[DH_DICOM_MSG_LEN] = "";
    dh_dicom_image *image = NULL;
    const dh_dicom_read_options options = dh_ctx_read_options(ctx);
    dh_status st = dh_dicom_read_memory_with(data, size, 1, &options, &image, msg, sizeof msg);
    return finish_read(ctx, st, image, name, msg, out);
}

dh_status dh_volume_from_samples(dh_ctx *ctx, uint32_t rows, uint32_t columns, uint32_t slices,
                                 uint32_t bits_stored, int is_signed, const void *samples,
                                 dh_volume **out)
{
    if (!out)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "dh_volume_from_samples: out is NULL");
    *out = NULL;
    if (!samples)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "dh_volume_from_samples: samples is NULL");
    if (rows == 0 || columns == 0 || slices == 0 || rows > 65535 || columns > 65535)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "dh_volume_from_samples: %u x %u x %u: rows and columns must be "
                           "1..65535 and slices at least 1",
                           rows, columns, slices);
    if (bits_stored < 1 || bits_stored > 16)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "dh_volume_from_samples: bits_stored must be 1..16, not %u",
                           bits_stored);
    if (is_signed != 0 && is_signed != 1)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "dh_volume_from_samples: is_signed must be 0 or 1, not %d", is_signed);

    dh_dicom_image header = {.format = {.rows = rows,
                                        .columns = columns,
                                        .bits_allocated = 16,
                                        .bits_stored = bits_stored,
                                        .high_bit = bits_stored - 1,
                                        .is_signed = is_signed,
                                        .photometric = DH_MONOCHROME2,
                                        .rescale_slope = 1,
                                        .rescale_intercept = 0},
                             .frames = slices};
    dh_volume *v = dh_volume_alloc(&header, slices, "");
    if (!v)
        return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY,
                           "dh_volume_from_samples: out of memory for %u x %u x %u samples",
                           rows, columns, slices);
    size_t n = dh_volume_sample_count(v);
    memcpy(v->data, samples, n * sizeof(uint16_t));
    dh_volume_update_range(v);

    int32_t lo = is_signed ? -(int32_t)(1u << (bits_stored - 1)) : 0;
    int32_t hi = is_signed ? (int32_t)(1u << (bits_stored - 1)) - 1
                           : (int32_t)((1u << bits_stored) - 1);
    if (v->stored_min < lo || v->stored_max > hi) {
        int32_t bad = v->stored_min < lo ? v->stored_min : v->stored_max;
        size_t at = 0;
        for (; at < n; at++) {
            int32_t s = is_signed ? ((const int16_t *)v->data)[at] : ((const uint16_t *)v->data)[at];
            if (s == bad)
                break;
        }
        dh_volume_free(v);
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "dh_volume_from_samples: sample %zu is %d, outside the %u-bit %s "
                           "range %d..%d",
                           at, bad, bits_stored, is_signed ? "signed" : "unsigned", lo, hi);
    }
    for (uint32_t i = 0; i < slices; i++) {
        v->slice[i].location = (double)i;
        if (!(v->slice[i].source = dh_strdup(""))) {
            dh_volume_free(v);
            return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "dh_volume_from_samples: out of memory");
        }
        v->slice[i].frame = i;
    }
    dh_ctx_clear(ctx);
    *out = v;
    return DH_OK;
}
