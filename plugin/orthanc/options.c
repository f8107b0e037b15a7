/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * options.c: route arguments into parameter structs (options.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "options.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "device_gate.h"
#include "text_values.h"

static int refuse(dho_bad_argument *bad, const char *name, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int refuse(dho_bad_argument *bad, const char *name, const char *fmt, ...)
{
    snprintf(bad->name, sizeof bad->name, "%s", name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(bad->reason, sizeof bad->reason, fmt, ap);
    va_end(ap);
    return -1;
}

int dho_parse_device(const char *text, dh_device *out)
{
    if (strcasecmp(text, "auto") == 0)
        *out = DH_DEVICE_AUTO;
    else if (strcasecmp(text, "cpu") == 0)
        *out = DH_DEVICE_CPU;
    else if (strcasecmp(text, "cuda") == 0)
        *out = DH_DEVICE_CUDA;
    else
        return -1;
    return 0;
}

int dho_parse_hist_query(const OrthancPluginHttpRequest *request, dh_hist_params *p,
                         dho_bad_argument *bad)
{
    dh_hist_params_init(p);
    p->device = dho_gate_default();
    for (uint32_t i = 0; i < request->getCount; i++) {
        const char *key = request->getKeys[i], *value = request->getValues[i], *why = NULL;
        if (strcmp(key, "bins") == 0) {
            if (text_parse_u32(value, 1, 65536, &p->bins) != 0)
                return refuse(bad, key, "'%s': expected a whole number from 1 to 65536", value);
        } else if (strcmp(key, "range") == 0) {
            if (text_parse_range(value, &p->lo, &p->hi, &why) != 0)
                return refuse(bad, key, "'%s': %s", value, why);
            p->has_range = 1;
        } else if (strcmp(key, "units") == 0) {
            if (strcmp(value, "stored") == 0)
                p->units = DH_UNITS_STORED;
            else if (strcmp(value, "modality") == 0)
                p->units = DH_UNITS_MODALITY;
            else
                return refuse(bad, key, "'%s': expected stored or modality", value);
        } else if (strcmp(key, "per-slice") == 0) {
            if (strcmp(value, "true") == 0 || strcmp(value, "1") == 0)
                p->per_slice = 1;
            else if (strcmp(value, "false") == 0 || strcmp(value, "0") == 0)
                p->per_slice = 0;
            else
                return refuse(bad, key, "'%s': expected true or false", value);
        } else if (strcmp(key, "device") == 0) {
            if (dho_parse_device(value, &p->device) != 0)
                return refuse(bad, key, "'%s': expected auto, cpu or cuda", value);
        } else {
            return refuse(bad, key, "unknown argument (expected bins, range, units, per-slice "
                                    "or device)");
        }
    }
    return 0;
}

/* A member that must be a string; returns it, or NULL after refusing. */
static const char *string_member(const json_t *value, const char *name, dho_bad_argument *bad)
{
    const char *s = json_string_value(value);
    if (!s)
        refuse(bad, name, "expected a string");
    return s;
}

/* A member that must be a number (JSON integer or real). */
static int number_member(const json_t *value, const char *name, double *out,
                         dho_bad_argument *bad)
{
    if (!json_is_number(value))
        return refuse(bad, name, "expected a number");
    *out = json_number_value(value);
    return 0;
}

/* The parts of the key: what changes the output pixels, in one fixed order. */
static void derive_key(const dh_equalize_params *p, char *key, size_t len)
{
    int n = snprintf(key, len, "dicomhist-derive/1;op=%s;mode=%s;window=%d",
                     p->operation == DH_EQ_EQUALIZE ? "equalize" : "window",
                     p->per_slice ? "slice" : "volume", (int)p->window);
    if (n < 0 || (size_t)n >= len)
        return;
    switch (p->window) {
    case DH_WINDOW_CENTER_WIDTH:
        n += snprintf(key + n, len - (size_t)n, ";c=%.17g;w=%.17g", p->center, p->width);
        break;
    case DH_WINDOW_RANGE:
        n += snprintf(key + n, len - (size_t)n, ";lo=%.17g;hi=%.17g", p->lo, p->hi);
        break;
    case DH_WINDOW_PERCENTILE:
        n += snprintf(key + n, len - (size_t)n, ";p=%.17g", p->percentile);
        break;
    default:
        break;
    }
    if (n < 0 || (size_t)n >= len)
        return;
    if (p->operation == DH_EQ_EQUALIZE && p->method == DH_EQ_METHOD_CLAHE)
        snprintf(key + n, len - (size_t)n,
                 ";clip=%.17g;bits=%u;method=clahe;tiles=%ux%ux%u;size=%ux%ux%u;bins=%u",
                 p->clip_limit, (unsigned)p->output_bits, p->tiles[0], p->tiles[1], p->tiles[2],
                 p->tile_size[0], p->tile_size[1], p->tile_size[2], p->bins);
    else if (p->operation == DH_EQ_EQUALIZE)
        snprintf(key + n, len - (size_t)n, ";clip=%.17g;bits=%u", p->clip_limit,
                 (unsigned)p->output_bits);
    else
        snprintf(key + n, len - (size_t)n, ";voi=%d;bits=%u", (int)p->voi,
                 (unsigned)p->output_bits);
}

/* CLAHE's members (equalize only): Method, Tiles, TileSize, Bins. 1 when `name` is not one of
 * them, 0 when it was read, -1 when refused. *axes counts the sizes Tiles or TileSize gave. */
static int clahe_member(const char *name, const json_t *value, dh_equalize_params *p,
                        uint32_t *axes, dho_bad_argument *bad)
{
    const char *text;
    double x = 0;
    if (strcmp(name, "Method") == 0) {
        if (!(text = string_member(value, name, bad)))
            return -1;
        if (strcmp(text, "global") == 0)
            p->method = DH_EQ_METHOD_GLOBAL;
        else if (strcmp(text, "clahe") == 0)
            p->method = DH_EQ_METHOD_CLAHE;
        else
            return refuse(bad, name, "'%s': expected global or clahe", text);
        return 0;
    }
    if (strcmp(name, "Tiles") == 0 || strcmp(name, "TileSize") == 0) {
        const int tiles = strcmp(name, "Tiles") == 0;
        uint32_t v[3] = {0, 0, 0};
        if (!(text = string_member(value, name, bad)))
            return -1;
        if (*axes)
            return refuse(bad, name, "give one of Tiles and TileSize");
        if (text_parse_axes(text, tiles ? 2 : 1, v, axes) != 0)
            return refuse(bad, name, "'%s': expected %s (each 1..65535)", text,
                          tiles ? "\"NxM\" or \"NxMxK\"" : "\"N\", \"NxM\" or \"NxMxK\"");
        if (*axes == 1)
            v[1] = v[2] = v[0]; /* the slices' share is dropped in slice mode, below */
        memcpy(tiles ? p->tiles : p->tile_size, v, sizeof v);
        return 0;
    }
    if (strcmp(name, "Bins") == 0) {
        if (number_member(value, name, &x, bad) != 0)
            return -1;
        if (!(x >= 1 && x <= 65536) || x != (double)(uint32_t)x)
            return refuse(bad, name, "expected a whole number 1..65536");
        p->bins = (uint32_t)x;
        return 0;
    }
    return 1;
}

/* What CLAHE's members need once the whole body is read: Method clahe, and tiles across slices
 * only per volume. */
static int check_clahe_members(dh_equalize_params *p, uint32_t axes, dho_bad_argument *bad)
{
    if (p->method != DH_EQ_METHOD_CLAHE && (axes || p->bins))
        return refuse(bad, p->bins && !axes ? "Bins" : p->tiles[0] ? "Tiles" : "TileSize",
                      "needs \"Method\": \"clahe\"");
    if (axes == 3 && p->per_slice)
        return refuse(bad, p->tiles[0] ? "Tiles" : "TileSize",
                      "tiles across slices need \"Mode\": \"volume\"");
    if (p->per_slice) /* one TileSize for the columns and rows only */
        p->tile_size[2] = 0;
    return 0;
}

int dho_parse_derive_body(const json_t *body, dh_eq_operation op, dh_equalize_params *p,
                          int *async, int *gsps, char *key, size_t key_len,
                          dho_bad_argument *bad)
{
    dh_equalize_params_init(p);
    p->operation = op;
    p->device = dho_gate_default();
    *async = 0;
    *gsps = 0;
    int windows = 0;
    uint32_t axes = 0;
    if (body && !json_is_object(body))
        return refuse(bad, "body", "expected a JSON object");
    const char *name;
    json_t *value;
    json_object_foreach((json_t *)body, name, value) {
        const char *text, *why = NULL;
        double x = 0;
        int clahe = op == DH_EQ_EQUALIZE ? clahe_member(name, value, p, &axes, bad) : 1;
        if (clahe < 0)
            return -1;
        if (clahe == 0)
            continue;
        if (strcmp(name, "Mode") == 0) {
            if (!(text = string_member(value, name, bad)))
                return -1;
            if (strcmp(text, "volume") == 0)
                p->per_slice = 0;
            else if (strcmp(text, "slice") == 0)
                p->per_slice = 1;
            else
                return refuse(bad, name, "'%s': expected volume or slice", text);
        } else if (strcmp(name, "Window") == 0) {
            if (!(text = string_member(value, name, bad)))
                return -1;
            if (text_parse_window(text, p, &why) != 0)
                return refuse(bad, name, "'%s': %s", text, why);
            windows++;
        } else if (strcmp(name, "WindowRange") == 0) {
            if (!(text = string_member(value, name, bad)))
                return -1;
            if (text_parse_range(text, &p->lo, &p->hi, &why) != 0)
                return refuse(bad, name, "'%s': %s", text, why);
            p->window = DH_WINDOW_RANGE;
            windows++;
        } else if (strcmp(name, "ClipLimit") == 0 && op == DH_EQ_EQUALIZE) {
            if (number_member(value, name, &x, bad) != 0)
                return -1;
            if (!(x > 0) || !isfinite(x))
                return refuse(bad, name, "expected a number > 0");
            p->clip_limit = x;
        } else if (strcmp(name, "Function") == 0 && op == DH_EQ_WINDOW_LEVEL) {
            if (!(text = string_member(value, name, bad)))
                return -1;
            if (strcasecmp(text, "linear") == 0)
                p->voi = DH_VOI_LINEAR;
            else if (strcasecmp(text, "linear-exact") == 0 || strcasecmp(text, "LINEAR_EXACT") == 0)
                p->voi = DH_VOI_LINEAR_EXACT;
            else if (strcasecmp(text, "sigmoid") == 0)
                p->voi = DH_VOI_SIGMOID;
            else
                return refuse(bad, name, "'%s': expected linear, linear-exact or sigmoid", text);
        } else if (strcmp(name, "Bits") == 0) {
            if (number_member(value, name, &x, bad) != 0)
                return -1;
            if (x != 8 && x != 12 && x != 16)
                return refuse(bad, name, "expected 8, 12 or 16");
            p->output_bits = (uint32_t)x;
        } else if (strcmp(name, "Device") == 0) {
            if (!(text = string_member(value, name, bad)))
                return -1;
            if (dho_parse_device(text, &p->device) != 0)
                return refuse(bad, name, "'%s': expected auto, cpu or cuda", text);
        } else if (strcmp(name, "Asynchronous") == 0) {
            if (!json_is_boolean(value))
                return refuse(bad, name, "expected true or false");
            *async = json_is_true(value);
        } else if (strcmp(name, "Output") == 0) {
            if (!(text = string_member(value, name, bad)))
                return -1;
            if (strcasecmp(text, "series") == 0 || strcasecmp(text, "derived") == 0)
                *gsps = 0; /* "derived": the command's --output-kind word */
            else if (strcasecmp(text, "gsps") == 0)
                *gsps = 1;
            else
                return refuse(bad, name, "'%s': expected series (or derived) or gsps", text);
        } else {
            return refuse(bad, name, "unknown option (expected Mode, Window, WindowRange, %s, "
                                     "Bits, Device, Output or Asynchronous)",
                          op == DH_EQ_EQUALIZE
                              ? "ClipLimit, Method, Tiles, TileSize, Bins"
                              : "Function");
        }
    }
    if (windows > 1)
        return refuse(bad, "Window", "give one of Window and WindowRange");
    if (op == DH_EQ_WINDOW_LEVEL && windows == 0)
        return refuse(bad, "Window", "a window is required (Window or WindowRange)");
    if (check_clahe_members(p, axes, bad) != 0)
        return -1;
    derive_key(p, key, key_len);
    size_t used = strlen(key);
    if (*gsps && used < key_len) /* another result, other UIDs and another claim */
        snprintf(key + used, key_len - used, ";out=gsps");
    return 0;
}

/* "LO:HI" in whole stored values, into an inclusive range. */
static int parse_int_range(const json_t *value, const char *name, int32_t *lo, int32_t *hi,
                           dho_bad_argument *bad)
{
    const char *text = string_member(value, name, bad), *why = NULL;
    if (!text)
        return -1;
    if (text_parse_stored_range(text, lo, hi, &why) != 0)
        return refuse(bad, name, "'%s': %s", text, why);
    return 0;
}

static int parse_bins(const json_t *value, dh_mi_params *p, dho_bad_argument *bad)
{
    const json_t *f = value, *m = value;
    if (json_is_array(value)) {
        if (json_array_size(value) != 2)
            return refuse(bad, "Bins", "expected B or [BF, BM]");
        f = json_array_get(value, 0);
        m = json_array_get(value, 1);
    }
    if (!json_is_integer(f) || !json_is_integer(m))
        return refuse(bad, "Bins", "expected whole numbers from %d to %d", DH_MI_MIN_BINS,
                      DH_MI_MAX_BINS);
    json_int_t bf = json_integer_value(f), bm = json_integer_value(m);
    if (bf < DH_MI_MIN_BINS || bf > DH_MI_MAX_BINS || bm < DH_MI_MIN_BINS || bm > DH_MI_MAX_BINS)
        return refuse(bad, "Bins", "expected whole numbers from %d to %d", DH_MI_MIN_BINS,
                      DH_MI_MAX_BINS);
    p->bins_fixed = (uint32_t)bf;
    p->bins_moving = (uint32_t)bm;
    return 0;
}

int dho_parse_mi_body(const json_t *body, dh_mi_params *p, const char **fixed,
                      const json_t **moving, dho_bad_argument *bad)
{
    dh_mi_params_init(p);
    p->device = dho_gate_default();
    *fixed = NULL;
    *moving = NULL;
    if (!json_is_object(body))
        return refuse(bad, "body", "expected a JSON object with Fixed and Moving");
    const char *name;
    json_t *value;
    json_object_foreach((json_t *)body, name, value) {
        const char *text;
        if (strcmp(name, "Fixed") == 0) {
            if (!(*fixed = string_member(value, name, bad)))
                return -1;
        } else if (strcmp(name, "Moving") == 0) {
            if (!json_is_array(value) || json_array_size(value) == 0)
                return refuse(bad, name, "expected a non-empty list of instance IDs");
            for (size_t i = 0; i < json_array_size(value); i++)
                if (!json_is_string(json_array_get(value, i)))
                    return refuse(bad, name, "item %zu is not a string", i);
            *moving = value;
        } else if (strcmp(name, "Bins") == 0) {
            if (parse_bins(value, p, bad) != 0)
                return -1;
        } else if (strcmp(name, "RangeFixed") == 0) {
            if (parse_int_range(value, name, &p->fixed_lo, &p->fixed_hi, bad) != 0)
                return -1;
            p->has_range_fixed = 1;
        } else if (strcmp(name, "RangeMoving") == 0) {
            if (parse_int_range(value, name, &p->moving_lo, &p->moving_hi, bad) != 0)
                return -1;
            p->has_range_moving = 1;
        } else if (strcmp(name, "Log2") == 0) {
            if (!json_is_boolean(value))
                return refuse(bad, name, "expected true or false");
            p->log2 = json_is_true(value);
        } else if (strcmp(name, "Device") == 0) {
            if (!(text = string_member(value, name, bad)))
                return -1;
            if (dho_parse_device(text, &p->device) != 0)
                return refuse(bad, name, "'%s': expected auto, cpu or cuda", text);
        } else {
            return refuse(bad, name, "unknown option (expected Fixed, Moving, Bins, RangeFixed, "
                                     "RangeMoving, Log2 or Device)");
        }
    }
    if (!*fixed)
        return refuse(bad, "Fixed", "required: the instance ID of the fixed image");
    if (!*moving)
        return refuse(bad, "Moving", "required: a list of instance IDs");
    return 0;
}
