/* SPDX-License-Identifier: MIT */
/*
 * text_values.c: the strict parsers of text_values.h.
 */
#include "text_values.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int text_parse_u32(const char *text, uint32_t min, uint32_t max, uint32_t *out) {
    if (!text || !isdigit((unsigned char)text[0]))
        return -1; /* no sign, no space, no empty string */
    errno = 0;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || *end != '\0' || v < min || v > max)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

/* The first len characters of text as a whole finite number, nothing else: strtod alone would
 * accept " 5", "inf", "0x10". */
static int parse_number(const char *text, size_t len, double *out) {
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, text, len);
    buf[len] = '\0';
    for (size_t i = 0; i < len; i++) {
        if (!strchr("0123456789+-.eE", buf[i]))
            return -1;
    }
    errno = 0;
    char *end;
    double v = strtod(buf, &end);
    if (errno == ERANGE || *end != '\0' || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

int text_parse_double(const char *text, double *out) {
    return parse_number(text, strlen(text), out);
}

/* Splits "A:B" at its one colon; returns the colon, or NULL when there is not exactly one. */
static const char *pair_colon(const char *text) {
    const char *colon = strchr(text, ':');
    return colon && !strchr(colon + 1, ':') ? colon : NULL;
}

int text_parse_pair(const char *text, double *a, double *b) {
    const char *colon = pair_colon(text);
    if (!colon || parse_number(text, (size_t)(colon - text), a) != 0 ||
        parse_number(colon + 1, strlen(colon + 1), b) != 0)
        return -1;
    return 0;
}

int text_parse_range(const char *text, double *lo, double *hi, const char **why) {
    if (!pair_colon(text)) {
        *why = "expected LO:HI";
        return -1;
    }
    if (text_parse_pair(text, lo, hi) != 0) {
        *why = "LO and HI must be finite numbers";
        return -1;
    }
    if (!(*lo < *hi)) {
        *why = "LO must be below HI (the range is [LO, HI))";
        return -1;
    }
    return 0;
}

int text_parse_stored_range(const char *text, int32_t *lo, int32_t *hi, const char **why) {
    double a, b;
    if (text_parse_range(text, &a, &b, why) != 0)
        return -1;
    if (a != floor(a) || b != floor(b) || a < -32768 || b > 65535 || b - a + 1 > 65536) {
        *why = "expected whole stored values within -32768..65535, at most 65536 apart";
        return -1;
    }
    *lo = (int32_t)a;
    *hi = (int32_t)b;
    return 0;
}

int text_parse_window(const char *text, dh_equalize_params *p, const char **why) {
    if (strcmp(text, "file") == 0) {
        p->window = DH_WINDOW_FILE;
    } else if (strcmp(text, "minmax") == 0) {
        p->window = DH_WINDOW_MINMAX;
    } else if (strncmp(text, "percentile:", 11) == 0) {
        if (text_parse_double(text + 11, &p->percentile) != 0 || p->percentile < 0 ||
            p->percentile >= 50) {
            *why = "the percentile must be 0 <= P < 50";
            return -1;
        }
        p->window = DH_WINDOW_PERCENTILE;
    } else if (!strchr(text, ':')) {
        *why = "expected C:W, file, minmax or percentile:P";
        return -1;
    } else {
        if (text_parse_pair(text, &p->center, &p->width) != 0 || p->width < 1) {
            *why = "expected CENTER:WIDTH with WIDTH >= 1";
            return -1;
        }
        p->window = DH_WINDOW_CENTER_WIDTH;
    }
    return 0;
}

/* text_values.h */
int text_parse_axes(const char *text, int min_axes, uint32_t out[3], uint32_t *count) {
    uint32_t n = 0;
    for (const char *part = text;; n++) {
        const char *end = strchr(part, 'x');
        size_t len = end ? (size_t)(end - part) : strlen(part);
        char buf[16];
        if (n == 3 || len == 0 || len >= sizeof buf)
            return -1;
        memcpy(buf, part, len);
        buf[len] = '\0';
        if (text_parse_u32(buf, 1, 65535, &out[n]) != 0)
            return -1;
        if (!end)
            break;
        part = end + 1;
    }
    *count = n + 1;
    return *count >= (uint32_t)min_axes ? 0 : -1;
}
