// SPDX-License-Identifier: MIT
/*
 * plan_scan.c: dh_plan_scan, the inputs as a plan without their pixels: folders walked in a
 * deterministic order, every file's header read (on several threads), single-frame files grouped
 * by SeriesInstanceUID, each series checked for slices that do not fit together, repeated
 * instances set aside, and its slices ordered along the slice normal. Also where `cp -r` would
 * put each file, and the plan's accessors.
 */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "context.h"
#include "parallel.h"
#include "modality.h"
#include "plan.h"
#include "volume.h"

/* Directory nesting followed before giving up (symbolic link loops end here). */
#define MAX_DEPTH 64

/* ---- small helpers ---- */

static int grow(void **items, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t cap2 = *cap ? *cap * 2 : 16;
    while (cap2 < need)
        cap2 *= 2;
    void *p = realloc(*items, cap2 * size);
    if (!p)
        return -1;
    *items = p;
    *cap = cap2;
    return 0;
}

static char *format_text(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static char *format_text(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!s)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

static char *join_path(const char *dir, const char *name)
{
    size_t a = strlen(dir);
    int slash = a > 0 && dir[a - 1] != '/';
    return format_text("%s%s%s", dir, slash ? "/" : "", name);
}

int dh_ctx_worker_threads(const dh_ctx *ctx, size_t work)
{
    if (work <= 1) /* one piece of work: no need to ask (glibc reads a /sys file each time) */
        return 1;
    long t = ctx && ctx->threads > 0 ? ctx->threads : sysconf(_SC_NPROCESSORS_ONLN);
    if (t < 1)
        t = 1;
    if ((size_t)t > work)
        t = work > 0 ? (long)work : 1;
    return (int)t;
}

/* ---- the file list ---- */

typedef struct scan {
    dh_plan *plan;
    size_t cap;
    const char *root;      /* the operand being walked */
    const char *root_name; /* its output name */
} scan;

static dh_plan_file *add_file(scan *s, const char *path, const struct stat *st)
{
    dh_plan *p = s->plan;
    if (grow((void **)&p->files, &s->cap, p->file_count + 1, sizeof *p->files) != 0)
        return NULL;
    dh_plan_file *f = &p->files[p->file_count];
    memset(f, 0, sizeof *f);
    f->series = SIZE_MAX;
    f->state = DH_PLAN_FILE_SERIES;
    if (!(f->path = strdup(path)))
        return NULL;
    /* Below the operand: what follows its text and the separating slash. */
    const char *below = path + strlen(s->root);
    while (*below == '/')
        below++;
    f->output_name = *below ? join_path(s->root_name, below) : strdup(s->root_name);
    if (!f->output_name) {
        free(f->path);
        return NULL;
    }
    if (st) {
        f->size = (uint64_t)st->st_size;
        f->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
    }
    p->file_count++;
    return f;
}

static int add_other(scan *s, const char *path, const struct stat *st, dh_plan_file_state state,
                     dh_status status, char *message)
{
    dh_plan_file *f = message ? add_file(s, path, st) : NULL;
    if (!f) {
        free(message);
        return -1;
    }
    f->state = state;
    f->status = status;
    f->message = message;
    return 0;
}

static int has_dicom_extension(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot && (strcasecmp(dot, ".dcm") == 0 || strcasecmp(dot, ".dicom") == 0 ||
                   strcasecmp(dot, ".ima") == 0);
}

/* Whether a file found in a folder looks like DICOM: the "DICM" marker after the preamble, or
 * (a dataset without preamble) a first tag in group 0000, 0002, 0004 or 0008 in either byte
 * order. Named *.dcm files are always tried, so a damaged one is reported rather than hidden. */
static int looks_like_dicom(const char *path, const char *name)
{
    if (has_dicom_extension(name))
        return 1;
    FILE *f = fopen(path, "rb");
    if (!f)
        return 1; /* let the reader report why it cannot be opened */
    unsigned char b[132];
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    if (n == sizeof b && memcmp(b + 128, "DICM", 4) == 0)
        return 1;
    if (n < 8)
        return 0;
    unsigned le = b[0] | (unsigned)b[1] << 8, be = b[1] | (unsigned)b[0] << 8;
    return le == 0x0000 || le == 0x0002 || le == 0x0004 || le == 0x0008 || be == 0x0002 ||
           be == 0x0008;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds the files under dir, names in byte order, folders followed as they come. Returns 0, or -1
 * when out of memory (other problems become failed entries). */
static int walk(scan *s, const char *dir, int depth)
{
    if (depth > MAX_DEPTH)
        return add_other(s, dir, NULL, DH_PLAN_FILE_FAILED, DH_ERR_IO,
                         format_text("folders nested deeper than %d (a link loop?)", MAX_DEPTH));
    DIR *d = opendir(dir);
    if (!d)
        return add_other(s, dir, NULL, DH_PLAN_FILE_FAILED, DH_ERR_IO,
                         format_text("cannot open folder: %s", strerror(errno)));
    char **names = NULL;
    size_t count = 0, cap = 0;
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue; /* ".", "..", and hidden files such as .DS_Store */
        if (grow((void **)&names, &cap, count + 1, sizeof *names) != 0 ||
            !(names[count] = strdup(e->d_name))) {
            rc = -1;
            break;
        }
        count++;
    }
    closedir(d);
    if (count > 1)
        qsort(names, count, sizeof *names, compare_names);
    for (size_t i = 0; i < count && rc == 0; i++) {
        char *path = join_path(dir, names[i]);
        struct stat st;
        if (!path) {
            rc = -1;
        } else if (stat(path, &st) != 0) {
            rc = add_other(s, path, NULL, DH_PLAN_FILE_FAILED, DH_ERR_IO,
                           format_text("%s", strerror(errno)));
        } else if (S_ISDIR(st.st_mode)) {
            rc = walk(s, path, depth + 1);
        } else if (!S_ISREG(st.st_mode)) {
            rc = add_other(s, path, &st, DH_PLAN_FILE_SKIPPED, DH_OK,
                           format_text("not a regular file"));
        } else if (strcasecmp(names[i], "DICOMDIR") == 0) {
            rc = add_other(s, path, &st, DH_PLAN_FILE_SKIPPED, DH_OK,
                           format_text("DICOMDIR (a media directory, not an image)"));
        } else if (!looks_like_dicom(path, names[i])) {
            rc = add_other(s, path, &st, DH_PLAN_FILE_SKIPPED, DH_OK, format_text("not DICOM"));
        } else {
            rc = add_file(s, path, &st) ? 0 : -1;
        }
        free(path);
    }
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
    return rc;
}

/* The name `cp -r` gives an operand in the destination: its last component; "." and ".." (and
 * "/") are named after the folder they stand for. */
static char *operand_name(const char *path)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    size_t b = n;
    while (b > 0 && path[b - 1] != '/')
        b--;
    size_t len = n - b;
    if (len == 0 || (len == 1 && path[b] == '.') || (len == 2 && path[b] == '.' && path[b + 1] == '.')) {
        char *real = realpath(path, NULL);
        if (real && strcmp(real, "/") != 0) {
            char *name = strdup(strrchr(real, '/') + 1);
            free(real);
            return name;
        }
        free(real);
        return strdup("root");
    }
    char *name = malloc(len + 1);
    if (name)
        memcpy(name, path + b, len), name[len] = '\0';
    return name;
}

/* ---- headers ---- */

void dh_plan_slice_from_image(dh_plan_slice *s, const dh_dicom_image *m)
{
    memset(s, 0, sizeof *s);
    s->format = m->format;
    s->frames = m->frames;
    s->is_lossy = m->is_lossy;
    memcpy(s->lossy_method, m->lossy_method, sizeof s->lossy_method);
    s->has_modality_lut = m->has_modality_lut;
    s->modality_lut_hash = dh_modality_lut_hash(m);
    s->has_position = m->has_position;
    s->has_orientation = m->has_orientation;
    s->has_instance_number = m->has_instance_number;
    memcpy(s->position, m->position, sizeof s->position);
    memcpy(s->orientation, m->orientation, sizeof s->orientation);
    s->instance_number = m->instance_number;
    memcpy(s->transfer_syntax, m->transfer_syntax_uid, sizeof s->transfer_syntax);
}

int dh_plan_same_format(const dh_plan_slice *a, const dh_plan_slice *b)
{
    return dh_image_format_equal(&a->format, &b->format) &&
           a->has_modality_lut == b->has_modality_lut &&
           a->modality_lut_hash == b->modality_lut_hash;
}

void dh_plan_describe_format(char *buf, size_t len, const dh_plan_slice *m)
{
    char lut[48] = ""; /* tables that differ show different fingerprints */
    if (m->has_modality_lut)
        snprintf(lut, sizeof lut, ", Modality LUT %08x", (unsigned)(m->modality_lut_hash >> 32));
    const dh_image_format *f = &m->format;
    snprintf(buf, len, "%ux%u, %u bits allocated, %u stored, high bit %u, %s, %s, rescale %g/%g%s",
             f->columns, f->rows, f->bits_allocated, f->bits_stored, f->high_bit,
             f->is_signed ? "signed" : "unsigned",
             f->photometric == DH_MONOCHROME1 ? "MONOCHROME1" : "MONOCHROME2", f->rescale_slope,
             f->rescale_intercept, lut);
}

dh_status dh_plan_file_read(const dh_plan_file *f, int want_pixels,
                            const dh_dicom_read_options *options, dh_dicom_image **out, char *msg,
                            size_t msg_len)
{
    if (f->bytes)
        return options ? dh_dicom_read_memory_with(f->bytes, (size_t)f->size, want_pixels, options,
                                                   out, msg, msg_len)
                       : dh_dicom_read_memory(f->bytes, (size_t)f->size, want_pixels, out, msg,
                                              msg_len);
    return options ? dh_dicom_read_file_with(f->path, want_pixels, options, out, msg, msg_len)
                   : dh_dicom_read_file(f->path, want_pixels, out, msg, msg_len);
}

/* One file's header into its record (run on the scan threads: touches only that record). */
static void read_header(void *arg, size_t i)
{
    dh_plan_file *f = &((dh_plan *)arg)->files[i];
    if (f->state != DH_PLAN_FILE_SERIES)
        return;
    char msg[DH_DICOM_MSG_LEN] = "";
    dh_dicom_image *m = NULL;
    dh_status st = dh_plan_file_read(f, 0, NULL, &m, msg, sizeof msg);
    if (st == DH_OK) {
        dh_plan_slice_from_image(&f->slice, m);
        /* A series is single-frame files sharing a UID; anything else is read on its own. */
        if (m->frames == 1 && m->series_uid[0] && !(f->series_uid = strdup(m->series_uid)))
            st = DH_ERR_NO_MEMORY;
        if (!(f->sop_uid = strdup(m->sop_instance_uid)) || !(f->modality = strdup(m->modality)))
            st = DH_ERR_NO_MEMORY;
        if (st != DH_OK)
            snprintf(msg, sizeof msg, "out of memory");
    }
    dh_dicom_image_free(m);
    if (st != DH_OK) {
        f->state = DH_PLAN_FILE_FAILED;
        f->status = st;
        f->message = strdup(msg[0] ? msg : "cannot be read");
    }
}

/* ---- series ---- */

static int by_series_then_order(const void *a, const void *b)
{
    const dh_plan_file *fa = *(const dh_plan_file *const *)a, *fb = *(const dh_plan_file *const *)b;
    int c = strcmp(fa->series_uid, fb->series_uid);
    return c ? c : (fa > fb) - (fa < fb);
}

/* leader[i]: the first file (in plan order) of file i's series, i itself for a file on its own.
 * One sort by (UID, position) rather than comparing each file with every series so far. */
static int find_leaders(const dh_plan *p, size_t *leader)
{
    const dh_plan_file **keyed = malloc((p->file_count ? p->file_count : 1) * sizeof *keyed);
    if (!keyed)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < p->file_count; i++) {
        leader[i] = i;
        if (p->files[i].state == DH_PLAN_FILE_SERIES && p->files[i].series_uid)
            keyed[n++] = &p->files[i];
    }
    qsort(keyed, n, sizeof *keyed, by_series_then_order);
    for (size_t k = 1; k < n; k++)
        if (strcmp(keyed[k]->series_uid, keyed[k - 1]->series_uid) == 0)
            leader[keyed[k] - p->files] = leader[keyed[k - 1] - p->files];
    free(keyed);
    return 0;
}

/* The series' folder when all its files share one, else their longest common folder prefix;
 * the file itself for a single file. */
static char *series_path(const dh_plan *p, const dh_plan_series *g)
{
    const char *first = p->files[g->files[0]].path;
    if (g->count == 1)
        return strdup(first);
    size_t len = strlen(first);
    for (size_t i = 1; i < g->count; i++) {
        const char *q = p->files[g->files[i]].path;
        size_t k = 0;
        while (k < len && q[k] == first[k])
            k++;
        len = k;
    }
    while (len > 0 && first[len - 1] != '/')
        len--;
    if (len > 1)
        len--; /* drop the trailing slash, keep "/" itself */
    if (len == 0)
        return strdup(".");
    char *out = malloc(len + 1);
    if (out)
        memcpy(out, first, len), out[len] = '\0';
    return out;
}

/* Sort context: qsort has none, so keys carry what the comparators need. */
typedef struct slice_key {
    dh_plan_file *file;
    size_t index;
    int by_location;
} slice_key;

static int compare_slices(const void *pa, const void *pb)
{
    const slice_key *a = pa, *b = pb;
    const dh_plan_slice *ma = &a->file->slice, *mb = &b->file->slice;
    if (a->by_location && ma->location != mb->location)
        return ma->location < mb->location ? -1 : 1;
    int32_t ia = ma->has_instance_number ? ma->instance_number : 0;
    int32_t ib = mb->has_instance_number ? mb->instance_number : 0;
    if (ia != ib)
        return ia < ib ? -1 : 1;
    return strcmp(a->file->path, b->file->path);
}

static int compare_sop(const void *pa, const void *pb)
{
    const slice_key *a = pa, *b = pb;
    int c = strcmp(a->file->sop_uid, b->file->sop_uid);
    return c ? c : (a->index > b->index) - (a->index < b->index); /* earlier file first */
}

/* Checks, sets repeats aside and orders the files of a multi-file series (g->files holds them
 * in plan order on entry, in volume order on return). Returns 0, or -1 when out of memory. */
static int order_series(dh_plan *p, dh_plan_series *g)
{
    const dh_plan_file *first = &p->files[g->files[0]];
    for (size_t i = 1; i < g->count; i++) {
        const dh_plan_file *f = &p->files[g->files[i]];
        if (!dh_plan_same_format(&first->slice, &f->slice)) {
            char a[256], b[256];
            dh_plan_describe_format(a, sizeof a, &first->slice);
            dh_plan_describe_format(b, sizeof b, &f->slice);
            g->status = DH_ERR_MISMATCH;
            g->message = format_text("%s: series %s mixes slice formats: %s is %s; %s is %s",
                                     g->path, g->series_uid, first->path, a, f->path, b);
            return g->message ? 0 : -1;
        }
    }
    slice_key *keys = malloc(g->count * sizeof *keys);
    if (!keys)
        return -1;
    for (size_t i = 0; i < g->count; i++)
        keys[i] = (slice_key){.file = &p->files[g->files[i]], .index = g->files[i]};

    /* Repeats: the same SOPInstanceUID again; the earliest file is kept. */
    qsort(keys, g->count, sizeof *keys, compare_sop);
    for (size_t i = 1; i < g->count; i++) {
        dh_plan_file *f = keys[i].file;
        const dh_plan_file *prev = keys[i - 1].file;
        if (!f->sop_uid[0] || strcmp(f->sop_uid, prev->sop_uid) != 0)
            continue;
        const dh_plan_file *original = prev;
        for (size_t k = i - 1; k > 0 && original->state == DH_PLAN_FILE_REPEATED; k--)
            original = keys[k - 1].file;
        f->state = DH_PLAN_FILE_REPEATED;
        if (!(f->message = format_text("repeated instance of %s", original->path))) {
            free(keys);
            return -1;
        }
        if (g->repeats++ == 0) {
            g->repeat_file = (size_t)(f - p->files);
            g->repeat_of = (size_t)(original - p->files);
        }
    }

    /* Along the normal of the first slice when every slice has a position and orientation;
     * else by InstanceNumber. */
    size_t n = 0;
    int by_location = first->slice.has_orientation;
    double normal[3] = {0, 0, 0};
    if (by_location)
        dh_orientation_normal(first->slice.orientation, normal);
    for (size_t i = 0; i < g->count; i++) {
        dh_plan_file *f = keys[i].file;
        if (f->state == DH_PLAN_FILE_REPEATED)
            continue;
        by_location &= f->slice.has_position;
        if (f->slice.has_position)
            f->slice.location = dh_project_on_normal(f->slice.position, normal);
        keys[n++] = keys[i];
    }
    for (size_t i = 0; i < n; i++)
        keys[i].by_location = by_location;
    qsort(keys, n, sizeof *keys, compare_slices);
    for (size_t i = 0; i < n; i++)
        g->files[i] = keys[i].index;
    g->count = n;
    g->by_location = by_location;
    free(keys);
    return 0;
}

/* Groups the files whose header was read into series, in the order of each one's first file. */
static int form_series(dh_plan *p)
{
    size_t *leader = malloc((p->file_count ? p->file_count : 1) * sizeof *leader);
    size_t cap = 0;
    if (!leader || find_leaders(p, leader) != 0) {
        free(leader);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < p->file_count && rc == 0; i++) {
        dh_plan_file *f = &p->files[i];
        if (f->state != DH_PLAN_FILE_SERIES)
            continue;
        dh_plan_series *g;
        if (leader[i] == i) {
            if (grow((void **)&p->series, &cap, p->series_count + 1, sizeof *p->series) != 0) {
                rc = -1;
                break;
            }
            g = &p->series[p->series_count];
            memset(g, 0, sizeof *g);
            g->single = f->series_uid == NULL;
            snprintf(g->series_uid, sizeof g->series_uid, "%s", f->series_uid ? f->series_uid : "");
            snprintf(g->modality, sizeof g->modality, "%s", f->modality ? f->modality : "");
            f->series = p->series_count++;
        } else {
            f->series = p->files[leader[i]].series;
            g = &p->series[f->series];
        }
        if (grow((void **)&g->files, &g->cap, g->count + 1, sizeof *g->files) != 0) {
            rc = -1;
            break;
        }
        g->files[g->count++] = i;
    }
    free(leader);
    for (size_t k = 0; k < p->series_count && rc == 0; k++) {
        dh_plan_series *g = &p->series[k];
        if (!(g->path = series_path(p, g)))
            rc = -1;
        else if (!g->single && (rc = order_series(p, g)) == 0 && g->repeats) {
            free(g->path); /* the folder of the files kept, not of their repeats */
            rc = (g->path = series_path(p, g)) ? 0 : -1;
        }
        for (size_t i = 0; i < g->count && rc == 0; i++) {
            const dh_plan_slice *s = &p->files[g->files[i]].slice;
            g->file_bytes += p->files[g->files[i]].size;
            g->sample_bytes += (uint64_t)s->format.rows * s->format.columns * s->frames * 2;
        }
    }
    return rc;
}

/* ---- the call ---- */

int dh_plan_finish(dh_ctx *ctx, dh_plan *p)
{
    dh_parallel_for(dh_ctx_worker_threads(ctx, p->file_count), p->file_count, read_header, p);
    for (size_t i = 0; i < p->file_count; i++)
        if (p->files[i].state == DH_PLAN_FILE_FAILED && !p->files[i].message)
            return -1;
    if (form_series(p) != 0)
        return -1;
    for (size_t i = 0; i < p->file_count; i++) {
        dh_plan_file *f = &p->files[i];
        free(f->series_uid), free(f->sop_uid), free(f->modality);
        f->series_uid = f->sop_uid = f->modality = NULL;
    }
    return 0;
}

dh_status dh_plan_scan(dh_ctx *ctx, const char *const *paths, size_t count, dh_plan **out)
{
    if (!out)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "dh_plan_scan: out is NULL");
    *out = NULL;
    if (!paths || count == 0)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "dh_plan_scan: no paths given");
    for (size_t i = 0; i < count; i++)
        if (!paths[i])
            return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "dh_plan_scan: path %zu is NULL", i);
    dh_plan *p = calloc(1, sizeof *p);
    scan s = {.plan = p};
    if (!p)
        goto oom;
    for (size_t i = 0; i < count; i++) {
        struct stat st;
        char *name = operand_name(paths[i]);
        int rc = -1;
        s.root = paths[i];
        s.root_name = name;
        if (!name)
            rc = -1;
        else if (stat(paths[i], &st) != 0)
            rc = add_other(&s, paths[i], NULL, DH_PLAN_FILE_FAILED, DH_ERR_IO,
                           format_text("%s", strerror(errno)));
        else if (S_ISDIR(st.st_mode))
            rc = walk(&s, paths[i], 0);
        else {
            dh_plan_file *f = add_file(&s, paths[i], &st);
            rc = f ? 0 : -1;
            if (f)
                f->explicit_input = 1;
        }
        free(name);
        if (rc != 0)
            goto oom;
    }
    if (dh_plan_finish(ctx, p) != 0)
        goto oom;
    dh_ctx_clear(ctx);
    *out = p;
    return DH_OK;
oom:
    dh_plan_free(p);
    return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "out of memory while scanning %zu path(s)", count);
}

void dh_plan_free(dh_plan *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->file_count; i++) {
        dh_plan_file *f = &p->files[i];
        free(f->path), free(f->output_name), free(f->message);
        free(f->series_uid), free(f->sop_uid), free(f->modality);
    }
    for (size_t k = 0; k < p->series_count; k++) {
        free(p->series[k].files);
        free(p->series[k].path);
        free(p->series[k].message);
    }
    free(p->files);
    free(p->series);
    free(p);
}

/* ---- accessors ---- */

static const dh_plan_file *file_at(const dh_plan *p, size_t i)
{
    return p && i < p->file_count ? &p->files[i] : NULL;
}

static const dh_plan_series *series_at(const dh_plan *p, size_t k)
{
    return p && k < p->series_count ? &p->series[k] : NULL;
}

size_t dh_plan_file_count(const dh_plan *p) { return p ? p->file_count : 0; }
size_t dh_plan_series_count(const dh_plan *p) { return p ? p->series_count : 0; }

const char *dh_plan_file_path(const dh_plan *p, size_t i)
{
    const dh_plan_file *f = file_at(p, i);
    return f ? f->path : "";
}

const char *dh_plan_file_output_name(const dh_plan *p, size_t i)
{
    const dh_plan_file *f = file_at(p, i);
    return f ? f->output_name : "";
}

dh_plan_file_state dh_plan_file_state_of(const dh_plan *p, size_t i)
{
    const dh_plan_file *f = file_at(p, i);
    return f ? f->state : DH_PLAN_FILE_FAILED;
}

dh_status dh_plan_file_status(const dh_plan *p, size_t i)
{
    const dh_plan_file *f = file_at(p, i);
    return f ? f->status : DH_ERR_INVALID_ARGUMENT;
}

const char *dh_plan_file_message(const dh_plan *p, size_t i)
{
    const dh_plan_file *f = file_at(p, i);
    return f && f->message ? f->message : "";
}

size_t dh_plan_file_series(const dh_plan *p, size_t i)
{
    const dh_plan_file *f = file_at(p, i);
    return f ? f->series : SIZE_MAX;
}

uint64_t dh_plan_file_size(const dh_plan *p, size_t i)
{
    const dh_plan_file *f = file_at(p, i);
    return f ? f->size : 0;
}

int64_t dh_plan_file_mtime_ns(const dh_plan *p, size_t i)
{
    const dh_plan_file *f = file_at(p, i);
    return f ? f->mtime_ns : 0;
}

size_t dh_plan_series_file_count(const dh_plan *p, size_t k)
{
    const dh_plan_series *g = series_at(p, k);
    return g ? g->count : 0;
}

size_t dh_plan_series_file(const dh_plan *p, size_t k, size_t i)
{
    const dh_plan_series *g = series_at(p, k);
    return g && i < g->count ? g->files[i] : SIZE_MAX;
}

const char *dh_plan_series_path(const dh_plan *p, size_t k)
{
    const dh_plan_series *g = series_at(p, k);
    return g ? g->path : "";
}

const char *dh_plan_series_uid(const dh_plan *p, size_t k)
{
    const dh_plan_series *g = series_at(p, k);
    return g ? g->series_uid : "";
}

const char *dh_plan_series_modality(const dh_plan *p, size_t k)
{
    const dh_plan_series *g = series_at(p, k);
    return g ? g->modality : "";
}

uint64_t dh_plan_series_file_bytes(const dh_plan *p, size_t k)
{
    const dh_plan_series *g = series_at(p, k);
    return g ? g->file_bytes : 0;
}

uint64_t dh_plan_series_sample_bytes(const dh_plan *p, size_t k)
{
    const dh_plan_series *g = series_at(p, k);
    return g ? g->sample_bytes : 0;
}

const char *dh_plan_file_transfer_syntax(const dh_plan *p, size_t i)
{
    const dh_plan_file *f = file_at(p, i);
    return f && f->state != DH_PLAN_FILE_FAILED ? f->slice.transfer_syntax : "";
}
