// SPDX-License-Identifier: MIT
/*
 * cli_output.c: the command's stdout sink, atomic files and the locale test of cli_output.h.
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static report_sink stdout_sink;
static int stdout_sink_ready;

report_sink *cli_stdout_sink(void) {
    if (!stdout_sink_ready) {
        report_sink_init(&stdout_sink, stdout);
        stdout_sink_ready = 1;
    }
    return &stdout_sink;
}

int cli_stdout_finish(void) {
    report_sink *s = cli_stdout_sink();
    if (report_sink_flush(s) == 0)
        return 0;
    fprintf(stderr, "dicomhist: standard output: write error: %s\n", strerror(s->error));
    return -1;
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
