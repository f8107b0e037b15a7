// SPDX-License-Identifier: MIT
/*
 * cli_manifest.c: the manifest of cli_manifest.h: earlier lines read through Jansson, new lines
 * appended with O_APPEND so that what is on disk is always whole lines or one cut-short tail.
 */
#define _POSIX_C_SOURCE 200809L
#include "cli_manifest.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dicomhist.h" /* dh_folder_create */

struct cli_manifest {
    char *path;
    int fd;
    cli_manifest_record *records; /* sorted by path, the last line for each */
    size_t count;
};

static void record_free(cli_manifest_record *r)
{
    free(r->path), free(r->status), free(r->reason), free(r->work);
    for (size_t i = 0; i < r->output_count; i++)
        free(r->outputs[i]);
    free(r->outputs);
}

static char *string_of(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? strdup(s) : NULL;
}

/* One line into a record; returns 0, or -1 when the line is not a manifest line. */
static int parse_line(const char *line, size_t len, cli_manifest_record *r)
{
    memset(r, 0, sizeof *r);
    json_t *o = json_loadb(line, len, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return -1;
    }
    r->path = string_of(o, "path");
    r->status = string_of(o, "status");
    r->reason = string_of(o, "reason");
    r->work = string_of(o, "work");
    json_t *size = json_object_get(o, "size"), *mtime = json_object_get(o, "mtime_ns");
    r->size = json_is_integer(size) ? (uint64_t)json_integer_value(size) : UINT64_MAX;
    r->mtime_ns = json_is_integer(mtime) ? (int64_t)json_integer_value(mtime) : -1;
    json_t *outputs = json_object_get(o, "outputs");
    size_t n = json_is_array(outputs) ? json_array_size(outputs) : 0;
    r->outputs = calloc(n ? n : 1, sizeof *r->outputs);
    for (size_t i = 0; r->outputs && i < n; i++) {
        const char *s = json_string_value(json_array_get(outputs, i));
        if (s && (r->outputs[r->output_count] = strdup(s)))
            r->output_count++;
    }
    json_decref(o);
    if (!r->path || !r->status || !r->outputs) {
        record_free(r);
        return -1;
    }
    return 0;
}

/* Orders by path, then by line so the last line of a path comes last. */
typedef struct numbered {
    cli_manifest_record r;
    size_t line;
} numbered;

static int by_path_then_line(const void *a, const void *b)
{
    const numbered *x = a, *y = b;
    int c = strcmp(x->r.path, y->r.path);
    return c ? c : (x->line > y->line) - (x->line < y->line);
}

static int read_records(cli_manifest *m, FILE *f)
{
    numbered *all = NULL;
    size_t count = 0, cap = 0, line_no = 0;
    char *line = NULL;
    size_t line_cap = 0;
    ssize_t len;
    while ((len = getline(&line, &line_cap, f)) > 0) {
        line_no++;
        if (line[len - 1] != '\n')
            break; /* cut short by a killed run */
        if (count == cap) {
            size_t c2 = cap ? cap * 2 : 256;
            numbered *p = realloc(all, c2 * sizeof *p);
            if (!p)
                goto oom;
            all = p, cap = c2;
        }
        if (parse_line(line, (size_t)len, &all[count].r) == 0)
            all[count++].line = line_no;
    }
    free(line);
    if (count > 1)
        qsort(all, count, sizeof *all, by_path_then_line);
    m->records = malloc((count ? count : 1) * sizeof *m->records);
    if (!m->records)
        goto oom2;
    for (size_t i = 0; i < count; i++) {
        if (i + 1 < count && strcmp(all[i].r.path, all[i + 1].r.path) == 0) {
            record_free(&all[i].r);
            continue;
        }
        m->records[m->count++] = all[i].r;
    }
    free(all);
    return 0;
oom:
    free(line);
oom2:
    for (size_t i = 0; i < count; i++)
        record_free(&all[i].r);
    free(all);
    errno = ENOMEM;
    return -1;
}

int cli_manifest_open(const char *outdir, const char *name, cli_manifest **out)
{
    *out = NULL;
    if (dh_folder_create(outdir) != 0)
        return -1;
    cli_manifest *m = calloc(1, sizeof *m);
    size_t n = strlen(outdir) + strlen(name) + 2;
    if (!m || !(m->path = malloc(n))) {
        free(m);
        errno = ENOMEM;
        return -1;
    }
    snprintf(m->path, n, "%s/%s", outdir, name);
    m->fd = -1;
    FILE *f = fopen(m->path, "rb");
    if (f) {
        int rc = read_records(m, f);
        fclose(f);
        if (rc != 0) {
            cli_manifest_close(m);
            return -1;
        }
    }
    m->fd = open(m->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (m->fd < 0) {
        int e = errno;
        cli_manifest_close(m);
        errno = e;
        return -1;
    }
    /* A tail cut short by a killed run ends here, so the next line starts on a line of its own. */
    struct stat st;
    char last = '\n';
    if (fstat(m->fd, &st) == 0 && st.st_size > 0) {
        int rfd = open(m->path, O_RDONLY | O_CLOEXEC);
        if (rfd >= 0) {
            if (pread(rfd, &last, 1, st.st_size - 1) != 1)
                last = '\n';
            close(rfd);
        }
    }
    if (last != '\n' && write(m->fd, "\n", 1) != 1) {
        int e = errno;
        cli_manifest_close(m);
        errno = e;
        return -1;
    }
    *out = m;
    return 0;
}

void cli_manifest_close(cli_manifest *m)
{
    if (!m)
        return;
    if (m->fd >= 0)
        close(m->fd);
    for (size_t i = 0; i < m->count; i++)
        record_free(&m->records[i]);
    free(m->records);
    free(m->path);
    free(m);
}

const char *cli_manifest_path(const cli_manifest *m) { return m->path; }

const cli_manifest_record *cli_manifest_find(const cli_manifest *m, const char *path)
{
    size_t lo = 0, hi = m ? m->count : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(m->records[mid].path, path);
        if (c == 0)
            return &m->records[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

int cli_manifest_record_done(const cli_manifest_record *r, const char *work, uint64_t size,
                             int64_t mtime_ns)
{
    if (!r || strcmp(r->status, "done") != 0 || r->size != size || r->mtime_ns != mtime_ns ||
        strcmp(r->work ? r->work : "", work ? work : "") != 0)
        return 0;
    for (size_t i = 0; i < r->output_count; i++)
        if (access(r->outputs[i], F_OK) != 0)
            return 0;
    return 1;
}

int cli_manifest_append(cli_manifest *m, const char *lines, size_t len)
{
    while (len > 0) {
        ssize_t n = write(m->fd, lines, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        lines += n;
        len -= (size_t)n;
    }
    return 0;
}
