/* SPDX-License-Identifier: MIT */
/*
 * report_json.c: the buffered sink and the JSON writer of report_json.h.
 */
#define _POSIX_C_SOURCE 200809L

#include "report_json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ the buffered sink */

void report_sink_init(report_sink *s, FILE *file) {
    s->file = file;
    s->failed = 0;
    s->error = 0;
    s->len = 0;
}

static void sink_fail(report_sink *s) {
    if (!s->failed)
        s->error = errno ? errno : EIO;
    s->failed = 1;
}

static void sink_drain(report_sink *s) {
    errno = 0;
    if (s->len > 0 && !s->failed && fwrite(s->buf, 1, s->len, s->file) != s->len)
        sink_fail(s);
    s->len = 0;
}

void report_sink_write(report_sink *s, const char *data, size_t n) {
    if (n > sizeof s->buf - s->len) {
        sink_drain(s);
        if (n > sizeof s->buf) { /* larger than the buffer: straight through */
            errno = 0;
            if (!s->failed && fwrite(data, 1, n, s->file) != n)
                sink_fail(s);
            return;
        }
    }
    memcpy(s->buf + s->len, data, n);
    s->len += n;
}

void report_sink_puts(report_sink *s, const char *text) {
    report_sink_write(s, text, strlen(text));
}

void report_sink_char(report_sink *s, char c) {
    if (s->len == sizeof s->buf)
        sink_drain(s);
    s->buf[s->len++] = c;
}

void report_sink_printf(report_sink *s, const char *fmt, ...) {
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        report_sink_write(s, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        errno = ENOMEM;
        sink_fail(s);
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    report_sink_write(s, big, (size_t)n);
    free(big);
}

/* Counts are the bulk of every large output, so they skip printf. */
void report_sink_u64(report_sink *s, uint64_t v) {
    char digits[20];
    int n = 0;
    do {
        digits[sizeof digits - 1 - n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    report_sink_write(s, digits + sizeof digits - n, (size_t)n);
}

void report_sink_i64(report_sink *s, int64_t v) {
    if (v < 0) {
        report_sink_char(s, '-');
        report_sink_u64(s, (uint64_t)0 - (uint64_t)v);
    } else {
        report_sink_u64(s, (uint64_t)v);
    }
}

void report_format_double(char *out, size_t size, double v) {
    if (isnan(v)) {
        snprintf(out, size, "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(out, size, v < 0 ? "-inf" : "inf");
        return;
    }
    for (int precision = 15; precision <= 17; precision++) {
        snprintf(out, size, "%.*g", precision, v);
        if (strtod(out, NULL) == v)
            return;
    }
}

void report_sink_double(report_sink *s, double v) {
    char text[40];
    report_format_double(text, sizeof text, v);
    report_sink_puts(s, text);
}

int report_sink_flush(report_sink *s) {
    sink_drain(s);
    errno = 0;
    if (!s->failed && fflush(s->file) != 0)
        sink_fail(s);
    return s->failed ? -1 : 0;
}

/* ------------------------------------------------------------------ JSON */

void report_json_init(report_json *j, report_sink *sink) {
    memset(j, 0, sizeof *j);
    j->sink = sink;
}

/* Separates a value from the one before it at the same level. */
static void json_before_value(report_json *j) {
    if (j->after_key) {
        j->after_key = 0;
        return;
    }
    if (j->has_items[j->depth])
        report_sink_char(j->sink, ',');
    j->has_items[j->depth] = 1;
}

static void json_open(report_json *j, char c) {
    json_before_value(j);
    report_sink_char(j->sink, c);
    if (j->depth + 1 < REPORT_JSON_MAX_DEPTH)
        j->depth++;
    j->has_items[j->depth] = 0;
}

static void json_close(report_json *j, char c) {
    report_sink_char(j->sink, c);
    if (j->depth > 0)
        j->depth--;
}

void report_json_begin_object(report_json *j) { json_open(j, '{'); }
void report_json_end_object(report_json *j) { json_close(j, '}'); }
void report_json_begin_array(report_json *j) { json_open(j, '['); }
void report_json_end_array(report_json *j) { json_close(j, ']'); }

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when the bytes there are not one.
 * Overlong forms, surrogates and code points above U+10FFFF are refused, as JSON parsers do. */
static int utf8_sequence_length(const unsigned char *s) {
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    int n;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) /* also stops at the terminating NUL */
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

static void json_string_body(report_sink *s, const char *text) {
    const unsigned char *p = (const unsigned char *)text;
    while (*p) {
        unsigned char c = *p;
        if (c == '"' || c == '\\') {
            report_sink_char(s, '\\');
            report_sink_char(s, (char)c);
            p++;
        } else if (c < 0x20) {
            switch (c) {
            case '\n': report_sink_puts(s, "\\n"); break;
            case '\r': report_sink_puts(s, "\\r"); break;
            case '\t': report_sink_puts(s, "\\t"); break;
            case '\b': report_sink_puts(s, "\\b"); break;
            case '\f': report_sink_puts(s, "\\f"); break;
            default: report_sink_printf(s, "\\u%04x", c); break;
            }
            p++;
        } else {
            int n = utf8_sequence_length(p);
            if (n == 0) {
                report_sink_puts(s, "\\ufffd");
                p++;
            } else {
                report_sink_write(s, (const char *)p, (size_t)n);
                p += n;
            }
        }
    }
}

void report_json_key(report_json *j, const char *key) {
    json_before_value(j);
    report_sink_char(j->sink, '"');
    json_string_body(j->sink, key);
    report_sink_puts(j->sink, "\":");
    j->after_key = 1;
}

void report_json_string(report_json *j, const char *s) {
    json_before_value(j);
    report_sink_char(j->sink, '"');
    json_string_body(j->sink, s ? s : "");
    report_sink_char(j->sink, '"');
}

void report_json_double(report_json *j, double v) {
    json_before_value(j);
    if (isfinite(v))
        report_sink_double(j->sink, v);
    else
        report_sink_puts(j->sink, "null");
}

void report_json_u64(report_json *j, uint64_t v) {
    json_before_value(j);
    report_sink_u64(j->sink, v);
}

void report_json_i64(report_json *j, int64_t v) {
    json_before_value(j);
    report_sink_i64(j->sink, v);
}

void report_json_bool(report_json *j, int v) {
    json_before_value(j);
    report_sink_puts(j->sink, v ? "true" : "false");
}

void report_json_null(report_json *j) {
    json_before_value(j);
    report_sink_puts(j->sink, "null");
}

void report_json_end_line(report_json *j) {
    report_sink_char(j->sink, '\n');
    memset(j->has_items, 0, sizeof j->has_items);
    j->depth = 0;
    j->after_key = 0;
}

