/* SPDX-License-Identifier: MIT */
/*
 * report_json.h: how the hosts (the command, the Orthanc plugin) write their records. A
 * buffered sink over a FILE that streams large outputs (65536 bins times hundreds of slices
 * never become one string; a host wanting a string gives it an open_memstream FILE), and a
 * JSON writer over it with exact string escaping and round-trip numbers. Compiled into each
 * host, not part of the library's API.
 */
#ifndef DH_REPORT_JSON_H
#define DH_REPORT_JSON_H

#include <stdint.h>
#include <stdio.h>

/* ------------------------------------------------------------------ the buffered sink */

#define REPORT_SINK_BUFFER 65536

typedef struct report_sink {
    FILE *file;
    int failed; /* a write to `file` failed; later writes are dropped */
    int error;  /* errno of that first failure (EIO when the C library gave none) */
    size_t len;
    char buf[REPORT_SINK_BUFFER];
} report_sink;

void report_sink_init(report_sink *s, FILE *file);
void report_sink_write(report_sink *s, const char *data, size_t n);
void report_sink_puts(report_sink *s, const char *text);
void report_sink_char(report_sink *s, char c);
void report_sink_printf(report_sink *s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void report_sink_u64(report_sink *s, uint64_t v);
void report_sink_i64(report_sink *s, int64_t v);
/* The shortest decimal that reads back as the same double ("inf"/"nan" as given). */
void report_sink_double(report_sink *s, double v);
/* Writes out what is buffered; returns 0, or -1 when any write so far failed. */
int report_sink_flush(report_sink *s);

/* Formats v as the shortest of %.15g, %.16g, %.17g that parses back to v exactly. */
void report_format_double(char *out, size_t size, double v);

/* ------------------------------------------------------------------ JSON */

#define REPORT_JSON_MAX_DEPTH 16

/* Writes one JSON value at a time; commas and nesting are tracked here so callers only say
 * what comes next. Not a validator: callers pair begin/end and give keys inside objects. */
typedef struct report_json {
    report_sink *sink;
    int depth;
    int after_key;
    unsigned char has_items[REPORT_JSON_MAX_DEPTH];
} report_json;

void report_json_init(report_json *j, report_sink *sink);
void report_json_begin_object(report_json *j);
void report_json_end_object(report_json *j);
void report_json_begin_array(report_json *j);
void report_json_end_array(report_json *j);
void report_json_key(report_json *j, const char *key);
/* Escapes quotes, backslashes and control characters; valid UTF-8 passes through unchanged,
 * and each byte that is not part of valid UTF-8 becomes U+FFFD so the line stays valid JSON. */
void report_json_string(report_json *j, const char *s);
/* Round-trip numbers; NaN and infinities (which JSON cannot hold) are written as null. */
void report_json_double(report_json *j, double v);
void report_json_u64(report_json *j, uint64_t v);
void report_json_i64(report_json *j, int64_t v);
void report_json_bool(report_json *j, int v);
void report_json_null(report_json *j);
/* Ends the record: one JSON object per line. */
void report_json_end_line(report_json *j);

#endif /* DH_REPORT_JSON_H */
