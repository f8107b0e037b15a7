/*
 * cli_output.c: the buffered sink, the JSON writer and atomic files of cli_output.h.
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_output.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ the buffered sink */

void cli_sink_init(cli_sink *s, FILE *file) {
    s->file = file;
    s->failed = 0;
    s->error = 0;
    s->len = 0;
}

static void sink_fail(cli_sink *s) {
    if (!s->failed)
        s->error = errno ? errno : EIO;
    s->failed = 1;
}

static void sink_drain(cli_sink *s) {
    errno = 0;
    if (s->len > 0 && !s->failed && fwrite(s->buf, 1, s->len, s->file) != s->len)
        sink_fail(s);
    s->len = 0;
}

void cli_sink_write(cli_sink *s, const char *data, size_t n) {
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

void cli_sink_puts(cli_sink *s, const char *text) { cli_sink_write(s, text, strlen(text)); }

void cli_sink_char(cli_sink *s, char c) {
    if (s->len == sizeof s->buf)
        sink_drain(s);
    s->buf[s->len++] = c;
}

void cli_sink_printf(cli_sink *s, const char *fmt, ...) {
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        cli_sink_write(s, small, (size_t)n);
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
    cli_sink_write(s, big, (size_t)n);
    free(big);
}

/* Counts are the bulk of every large output, so they skip printf. */
void cli_sink_u64(cli_sink *s, uint64_t v) {
    char digits[20];
    int n = 0;
    do {
        digits[sizeof digits - 1 - n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    cli_sink_write(s, digits + sizeof digits - n, (size_t)n);
}

void cli_sink_i64(cli_sink *s, int64_t v) {
    if (v < 0) {
        cli_sink_char(s, '-');
        cli_sink_u64(s, (uint64_t)0 - (uint64_t)v);
    } else {
        cli_sink_u64(s, (uint64_t)v);
    }
}

void cli_format_double(char *out, size_t size, double v) {
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

void cli_sink_double(cli_sink *s, double v) {
    char text[40];
    cli_format_double(text, sizeof text, v);
    cli_sink_puts(s, text);
}

int cli_sink_flush(cli_sink *s) {
    sink_drain(s);
    errno = 0;
    if (!s->failed && fflush(s->file) != 0)
        sink_fail(s);
    return s->failed ? -1 : 0;
}

static cli_sink stdout_sink;
static int stdout_sink_ready;

cli_sink *cli_stdout_sink(void) {
    if (!stdout_sink_ready) {
        cli_sink_init(&stdout_sink, stdout);
        stdout_sink_ready = 1;
    }
    return &stdout_sink;
}

int cli_stdout_finish(void) {
    cli_sink *s = cli_stdout_sink();
    if (cli_sink_flush(s) == 0)
        return 0;
    fprintf(stderr, "dicomhist: standard output: write error: %s\n", strerror(s->error));
    return -1;
}

/* ------------------------------------------------------------------ JSON */

void cli_json_init(cli_json *j, cli_sink *sink) {
    memset(j, 0, sizeof *j);
    j->sink = sink;
}

/* Separates a value from the one before it at the same level. */
static void json_before_value(cli_json *j) {
    if (j->after_key) {
        j->after_key = 0;
        return;
    }
    if (j->has_items[j->depth])
        cli_sink_char(j->sink, ',');
    j->has_items[j->depth] = 1;
}

static void json_open(cli_json *j, char c) {
    json_before_value(j);
    cli_sink_char(j->sink, c);
    if (j->depth + 1 < CLI_JSON_MAX_DEPTH)
        j->depth++;
    j->has_items[j->depth] = 0;
}

static void json_close(cli_json *j, char c) {
    cli_sink_char(j->sink, c);
    if (j->depth > 0)
        j->depth--;
}

void cli_json_begin_object(cli_json *j) { json_open(j, '{'); }
void cli_json_end_object(cli_json *j) { json_close(j, '}'); }
void cli_json_begin_array(cli_json *j) { json_open(j, '['); }
void cli_json_end_array(cli_json *j) { json_close(j, ']'); }

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

static void json_string_body(cli_sink *s, const char *text) {
    const unsigned char *p = (const unsigned char *)text;
    while (*p) {
        unsigned char c = *p;
        if (c == '"' || c == '\\') {
            cli_sink_char(s, '\\');
            cli_sink_char(s, (char)c);
            p++;
        } else if (c < 0x20) {
            switch (c) {
            case '\n': cli_sink_puts(s, "\\n"); break;
            case '\r': cli_sink_puts(s, "\\r"); break;
            case '\t': cli_sink_puts(s, "\\t"); break;
            case '\b': cli_sink_puts(s, "\\b"); break;
            case '\f': cli_sink_puts(s, "\\f"); break;
            default: cli_sink_printf(s, "\\u%04x", c); break;
            }
            p++;
        } else {
            int n = utf8_sequence_length(p);
            if (n == 0) {
                cli_sink_puts(s, "\\ufffd");
                p++;
            } else {
                cli_sink_write(s, (const char *)p, (size_t)n);
                p += n;
            }
        }
    }
}

void cli_json_key(cli_json *j, const char *key) {
    json_before_value(j);
    cli_sink_char(j->sink, '"');
    json_string_body(j->sink, key);
    cli_sink_puts(j->sink, "\":");
    j->after_key = 1;
}

void cli_json_string(cli_json *j, const char *s) {
    json_before_value(j);
    cli_sink_char(j->sink, '"');
    json_string_body(j->sink, s ? s : "");
    cli_sink_char(j->sink, '"');
}

void cli_json_double(cli_json *j, double v) {
    json_before_value(j);
    if (isfinite(v))
        cli_sink_double(j->sink, v);
    else
        cli_sink_puts(j->sink, "null");
}

void cli_json_u64(cli_json *j, uint64_t v) {
    json_before_value(j);
    cli_sink_u64(j->sink, v);
}

void cli_json_i64(cli_json *j, int64_t v) {
    json_before_value(j);
    cli_sink_i64(j->sink, v);
}

void cli_json_bool(cli_json *j, int v) {
    json_before_value(j);
    cli_sink_puts(j->sink, v ? "true" : "false");
}

void cli_json_null(cli_json *j) {
    json_before_value(j);
    cli_sink_puts(j->sink, "null");
}

void cli_json_end_line(cli_json *j) {
    cli_sink_char(j->sink, '\n');
    memset(j->has_items, 0, sizeof j->has_items);
    j->depth = 0;
    j->after_key = 0;
}

/* ------------------------------------------------------------------ atomic files */

int cli_atomic_open(cli_atomic_file *f, const char *path) {
    memset(f, 0, sizeof *f);
    /* The temporary file sits in the destination's folder so that rename() stays atomic. */
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    const char *base = path + dir_len;
    size_t size = strlen(path) + sizeof ".XXXXXX.tmp" + 1;
    f->path = malloc(strlen(path) + 1);
    f->tmp_path = malloc(size);
    if (!f->path || !f->tmp_path) {
        free(f->path);
        free(f->tmp_path);
        memset(f, 0, sizeof *f);
        errno = ENOMEM;
        return -1;
    }
    strcpy(f->path, path);
    snprintf(f->tmp_path, size, "%.*s.%s.XXXXXX", (int)dir_len, path, base);
    int fd = mkstemp(f->tmp_path);
    if (fd < 0) {
        int err = errno;
        free(f->path);
        free(f->tmp_path);
        memset(f, 0, sizeof *f);
        errno = err;
        return -1;
    }
    /* mkstemp creates mode 0600; give the file the mode a plain fopen would have given it. */
    mode_t mask = umask(0);
    umask(mask);
    (void)fchmod(fd, 0666 & ~mask);
    f->file = fdopen(fd, "w");
    if (!f->file) {
        int err = errno;
        close(fd);
        unlink(f->tmp_path);
        free(f->path);
        free(f->tmp_path);
        memset(f, 0, sizeof *f);
        errno = err;
        return -1;
    }
    return 0;
}

int cli_atomic_commit(cli_atomic_file *f) {
    int err = 0;
    if (fflush(f->file) != 0 || ferror(f->file))
        err = errno ? errno : EIO;
    if (!err && fsync(fileno(f->file)) != 0)
        err = errno;
    if (fclose(f->file) != 0 && !err)
        err = errno ? errno : EIO;
    f->file = NULL;
    if (!err && rename(f->tmp_path, f->path) != 0)
        err = errno;
    if (err) {
        cli_atomic_abort(f);
        errno = err;
        return -1;
    }
    free(f->path);
    free(f->tmp_path);
    memset(f, 0, sizeof *f);
    return 0;
}

void cli_atomic_abort(cli_atomic_file *f) {
    if (f->file)
        fclose(f->file);
    if (f->tmp_path)
        unlink(f->tmp_path);
    free(f->path);
    free(f->tmp_path);
    memset(f, 0, sizeof *f);
}

/* ------------------------------------------------------------------ terminal */

int cli_locale_is_utf8(void) {
    static const char *const vars[] = {"LC_ALL", "LC_CTYPE", "LANG"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *value = getenv(vars[i]);
        if (!value || !*value)
            continue;
        /* The first variable that is set decides, as setlocale() would. */
        for (const char *p = value; *p; p++) {
            if ((p[0] == 'U' || p[0] == 'u') && (p[1] == 'T' || p[1] == 't') &&
                (p[2] == 'F' || p[2] == 'f')) {
                const char *q = p + 3;
                if (*q == '-')
                    q++;
                if (q[0] == '8')
                    return 1;
            }
        }
        return 0;
    }
    return 0;
}
