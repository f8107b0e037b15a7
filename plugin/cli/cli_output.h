/*
 * cli_output.h: how the command writes. A buffered sink that streams large outputs (65536 bins
 * times hundreds of slices never become one string), a JSON writer over it with exact string
 * escaping and round-trip numbers, number formatting for people, and files written atomically
 * (a temporary file in the destination folder renamed into place only once complete).
 */
#ifndef DH_CLI_OUTPUT_H
#define DH_CLI_OUTPUT_H

#include <stdint.h>
#include <stdio.h>

/* ------------------------------------------------------------------ the buffered sink */

#define CLI_SINK_BUFFER 65536

typedef struct cli_sink {
    FILE *file;
    int failed; /* a write to `file` failed; later writes are dropped */
    int error;  /* errno of that first failure (EIO when the C library gave none) */
    size_t len;
    char buf[CLI_SINK_BUFFER];
} cli_sink;

void cli_sink_init(cli_sink *s, FILE *file);
void cli_sink_write(cli_sink *s, const char *data, size_t n);
void cli_sink_puts(cli_sink *s, const char *text);
void cli_sink_char(cli_sink *s, char c);
void cli_sink_printf(cli_sink *s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void cli_sink_u64(cli_sink *s, uint64_t v);
void cli_sink_i64(cli_sink *s, int64_t v);
/* The shortest decimal that reads back as the same double ("inf"/"nan" as given). */
void cli_sink_double(cli_sink *s, double v);
/* Writes out what is buffered; returns 0, or -1 when any write so far failed. */
int cli_sink_flush(cli_sink *s);

/* The sink over stdout that every command writes its report through: one per process, its
 * 64 KiB buffer kept off the stack. */
cli_sink *cli_stdout_sink(void);
/* Flushes cli_stdout_sink; returns 0, or -1 after reporting `dicomhist: standard output: reason`
 * on stderr (a full disk, a closed pipe). */
int cli_stdout_finish(void);

/* Formats v as the shortest of %.15g, %.16g, %.17g that parses back to v exactly. */
void cli_format_double(char *out, size_t size, double v);

/* ------------------------------------------------------------------ JSON */

#define CLI_JSON_MAX_DEPTH 16

/* Writes one JSON value at a time; commas and nesting are tracked here so callers only say
 * what comes next. Not a validator: callers pair begin/end and give keys inside objects. */
typedef struct cli_json {
    cli_sink *sink;
    int depth;
    int after_key;
    unsigned char has_items[CLI_JSON_MAX_DEPTH];
} cli_json;

void cli_json_init(cli_json *j, cli_sink *sink);
void cli_json_begin_object(cli_json *j);
void cli_json_end_object(cli_json *j);
void cli_json_begin_array(cli_json *j);
void cli_json_end_array(cli_json *j);
void cli_json_key(cli_json *j, const char *key);
/* Escapes quotes, backslashes and control characters; valid UTF-8 passes through unchanged,
 * and each byte that is not part of valid UTF-8 becomes U+FFFD so the line stays valid JSON. */
void cli_json_string(cli_json *j, const char *s);
/* Round-trip numbers; NaN and infinities (which JSON cannot hold) are written as null. */
void cli_json_double(cli_json *j, double v);
void cli_json_u64(cli_json *j, uint64_t v);
void cli_json_i64(cli_json *j, int64_t v);
void cli_json_bool(cli_json *j, int v);
void cli_json_null(cli_json *j);
/* Ends the record: one JSON object per line. */
void cli_json_end_line(cli_json *j);

/* ------------------------------------------------------------------ atomic files */

/* A file being written under a temporary name beside its destination. */
typedef struct cli_atomic_file {
    char *path;     /* the destination */
    char *tmp_path; /* where the bytes go until commit */
    FILE *file;
} cli_atomic_file;

/* Creates the temporary file; returns 0, or -1 with errno set (nothing is left behind). */
int cli_atomic_open(cli_atomic_file *f, const char *path);
/* Flushes, syncs and renames into place; returns 0, or -1 with errno set, in which case the
 * temporary file is removed and the destination is untouched. */
int cli_atomic_commit(cli_atomic_file *f);
/* Throws the temporary file away (safe after a failed commit, and on a zeroed struct). */
void cli_atomic_abort(cli_atomic_file *f);

/* ------------------------------------------------------------------ terminal */

/* 1 when the locale environment (LC_ALL, else LC_CTYPE, else LANG) names UTF-8. */
int cli_locale_is_utf8(void);

#endif /* DH_CLI_OUTPUT_H */
