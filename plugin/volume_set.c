/*
 * volume_set.c: dh_volume_set_load, files and directories into volumes: walks directories in a
 * deterministic order, scans every file's metadata without its pixels, groups single-frame files
 * by SeriesInstanceUID, checks that the slices of a series fit together, orders them along the
 * slice normal, then decodes each slice straight into its place in the volume (one slice in
 * flight, never the series twice in memory). Failures are kept beside the volumes.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "context.h"
#include "volume.h"

/* Directory nesting followed before giving up (symbolic link loops end here). */
#define MAX_DEPTH 64

typedef struct failure {
    char *path;
    dh_status status;
    char *message;
} failure;

struct dh_volume_set {
    dh_volume **volumes;
    size_t count;
    failure *failures;
    size_t failure_count;
    char **skipped;
    size_t skipped_count;
};

/* A file to read; explicit ones were named by the caller rather than found in a folder. */
typedef struct input_file {
    char *path;
    dh_dicom_image *meta; /* after the scan; NULL when the scan failed */
    double location;
    int dropped; /* a repeated instance */
} input_file;

typedef struct file_list {
    input_file *items;
    size_t count, cap;
} file_list;

/* ---- growing arrays; each returns 0, or -1 when out of memory ---- */

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

static int add_failure(dh_volume_set *set, const char *path, dh_status status, const char *fmt,
                       ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static int add_failure(dh_volume_set *set, const char *path, dh_status status, const char *fmt,
                       ...)
{
    char message[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    failure *f = realloc(set->failures, (set->failure_count + 1) * sizeof *f);
    if (!f)
        return -1;
    set->failures = f;
    f += set->failure_count;
    f->path = dh_strdup(path);
    f->message = dh_strdup(message);
    f->status = status;
    if (!f->path || !f->message) {
        free(f->path), free(f->message);
        return -1;
    }
    set->failure_count++;
    return 0;
}

static int add_skipped(dh_volume_set *set, const char *path)
{
    char **s = realloc(set->skipped, (set->skipped_count + 1) * sizeof *s);
    if (!s)
        return -1;
    set->skipped = s;
    if (!(s[set->skipped_count] = dh_strdup(path)))
        return -1;
    set->skipped_count++;
    return 0;
}

static int add_volume(dh_volume_set *set, dh_volume *v)
{
    dh_volume **p = realloc(set->volumes, (set->count + 1) * sizeof *p);
    if (!p)
        return -1;
    set->volumes = p;
    set->volumes[set->count++] = v;
    return 0;
}

static int add_file(file_list *list, const char *path)
{
    size_t cap = list->cap;
    if (grow((void **)&list->items, &cap, list->count + 1, sizeof *list->items) != 0)
        return -1;
    list->cap = cap;
    input_file *f = &list->items[list->count];
    memset(f, 0, sizeof *f);
    if (!(f->path = dh_strdup(path)))
        return -1;
    list->count++;
    return 0;
}

/* ---- finding files ---- */

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

static char *join_path(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    int slash = a > 0 && dir[a - 1] != '/';
    char *p = malloc(a + slash + b + 1);
    if (!p)
        return NULL;
    memcpy(p, dir, a);
    if (slash)
        p[a] = '/';
    memcpy(p + a + slash, name, b + 1);
    return p;
}

/* Adds the files under dir, names in byte order, folders followed as they come. Returns 0, or -1
 * when out of memory (other problems become failures). */
static int walk(dh_volume_set *set, file_list *list, const char *dir, int depth)
{
    if (depth > MAX_DEPTH)
        return add_failure(set, dir, DH_ERR_IO, "%s: folders nested deeper than %d (a link loop?)",
                           dir, MAX_DEPTH);
    DIR *d = opendir(dir);
    if (!d)
        return add_failure(set, dir, DH_ERR_IO, "%s: cannot open folder: %s", dir,
                           strerror(errno));
    char **names = NULL;
    size_t count = 0, cap = 0;
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue; /* ".", "..", and hidden files such as .DS_Store */
        if (grow((void **)&names, &cap, count + 1, sizeof *names) != 0 ||
            !(names[count] = dh_strdup(e->d_name))) {
            rc = -1;
            break;
        }
        count++;
    }
    closedir(d);
    qsort(names, count, sizeof *names, compare_names);
    for (size_t i = 0; i < count && rc == 0; i++) {
        char *path = join_path(dir, names[i]);
        struct stat st;
        if (!path) {
            rc = -1;
        } else if (stat(path, &st) != 0) {
            rc = add_failure(set, path, DH_ERR_IO, "%s: %s", path, strerror(errno));
        } else if (S_ISDIR(st.st_mode)) {
            rc = walk(set, list, path, depth + 1);
        } else if (!S_ISREG(st.st_mode)) {
            rc = add_skipped(set, path); /* sockets, devices, pipes */
        } else if (strcasecmp(names[i], "DICOMDIR") == 0 ||
                   !looks_like_dicom(path, names[i])) {
            rc = add_skipped(set, path);
        } else {
            rc = add_file(list, path);
        }
        free(path);
    }
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
    return rc;
}

/* ---- series assembly ---- */

/* One series (or one multi-frame or UID-less file): indices into the file list. */
typedef struct group {
    const char *series_uid; /* NULL: a file on its own */
    size_t *files;
    size_t count, cap;
} group;

/* The series' folder when all its files share one, else their longest common folder prefix;
 * the file itself for a single file. */
static char *series_path(const file_list *list, const group *g)
{
    const char *first = list->items[g->files[0]].path;
    if (g->count == 1)
        return dh_strdup(first);
    size_t len = strlen(first);
    for (size_t i = 1; i < g->count; i++) {
        const char *p = list->items[g->files[i]].path;
        size_t k = 0;
        while (k < len && p[k] == first[k])
            k++;
        len = k;
    }
    while (len > 0 && first[len - 1] != '/')
        len--;
    if (len > 1)
        len--; /* drop the trailing slash, keep "/" itself */
    char *p = malloc(len + 2);
    if (!p)
        return NULL;
    if (len == 0)
        strcpy(p, ".");
    else
        memcpy(p, first, len), p[len] = '\0';
    return p;
}

static void describe_format(char *buf, size_t len, const dh_dicom_image *m)
{
    snprintf(buf, len,
             "%ux%u, %u bits allocated, %u stored, high bit %u, %s, %s, rescale %g/%g",
             m->columns, m->rows, m->bits_allocated, m->bits_stored, m->high_bit,
             m->is_signed ? "signed" : "unsigned",
             m->photometric == DH_MONOCHROME1 ? "MONOCHROME1" : "MONOCHROME2", m->rescale_slope,
             m->rescale_intercept);
}

static int same_format(const dh_dicom_image *a, const dh_dicom_image *b)
{
    return a->rows == b->rows && a->columns == b->columns &&
           a->bits_allocated == b->bits_allocated && a->bits_stored == b->bits_stored &&
           a->high_bit == b->high_bit && a->is_signed == b->is_signed &&
           a->photometric == b->photometric && a->rescale_slope == b->rescale_slope &&
           a->rescale_intercept == b->rescale_intercept;
}

/* Sort context: qsort has none, so the comparator reads the list through the index records. */
typedef struct sort_key {
    const input_file *file;
    int by_location;
} sort_key;

static int compare_slices(const void *pa, const void *pb)
{
    const sort_key *a = pa, *b = pb;
    const dh_dicom_image *ma = a->file->meta, *mb = b->file->meta;
    if (a->by_location && a->file->location != b->file->location)
        return a->file->location < b->file->location ? -1 : 1;
    int32_t ia = ma->has_instance_number ? ma->instance_number : 0;
    int32_t ib = mb->has_instance_number ? mb->instance_number : 0;
    if (ia != ib)
        return ia < ib ? -1 : 1;
    return strcmp(a->file->path, b->file->path);
}

static int compare_sop(const void *pa, const void *pb)
{
    const input_file *a = *(input_file *const *)pa, *b = *(input_file *const *)pb;
    int c = strcmp(a->meta->sop_instance_uid, b->meta->sop_instance_uid);
    return c ? c : (a < b ? -1 : a > b); /* earlier file first */
}

/* Marks the later copies of a repeated SOPInstanceUID as dropped; returns how many. */
static size_t drop_repeats(file_list *list, const group *g, input_file **first_repeat,
                           input_file **of)
{
    input_file **byuid = malloc(g->count * sizeof *byuid);
    if (!byuid)
        return 0; /* keeping repeats only costs a warning less */
    for (size_t i = 0; i < g->count; i++)
        byuid[i] = &list->items[g->files[i]];
    qsort(byuid, g->count, sizeof *byuid, compare_sop);
    size_t dropped = 0;
    for (size_t i = 1; i < g->count; i++) {
        if (byuid[i]->meta->sop_instance_uid[0] &&
            strcmp(byuid[i]->meta->sop_instance_uid, byuid[i - 1]->meta->sop_instance_uid) == 0) {
            byuid[i]->dropped = 1;
            if (dropped++ == 0)
                *first_repeat = byuid[i], *of = byuid[i - 1];
        }
    }
    free(byuid);
    return dropped;
}

/* Reads one file's pixels into slice `slot`; returns DH_OK or the failure (recorded). */
static dh_status decode_slice(dh_volume_set *set, dh_volume *v, uint32_t slot, input_file *f)
{
    char msg[DH_DICOM_MSG_LEN] = "";
    dh_dicom_image *img = NULL;
    dh_status st = dh_dicom_read_file(f->path, 1, &img, msg, sizeof msg);
    if (st == DH_OK && (!same_format(img, f->meta) || img->frames != 1)) {
        st = DH_ERR_MISMATCH;
        snprintf(msg, sizeof msg, "changed while the series was read");
    }
    if (st != DH_OK) {
        add_failure(set, f->path, st, "%s: %s", f->path, msg);
        dh_dicom_image_free(img);
        return st;
    }
    memcpy((unsigned char *)v->data + (size_t)slot * dh_volume_slice_bytes(v), img->pixels,
           dh_volume_slice_bytes(v));
    dh_dicom_image_free(img);
    return DH_OK;
}

/* Builds the volume of one series of single-frame files; failures go into the set. Returns 0, or
 * -1 when out of memory. */
static int build_series(dh_volume_set *set, file_list *list, const group *g)
{
    char *path = series_path(list, g);
    if (!path)
        return -1;
    int rc = 0;
    sort_key *keys = NULL;
    dh_volume *v = NULL;

    /* Slices must share one pixel format and rescale: else the values do not mean the same. */
    const input_file *first = &list->items[g->files[0]];
    for (size_t i = 1; i < g->count; i++) {
        const input_file *f = &list->items[g->files[i]];
        if (!same_format(first->meta, f->meta)) {
            char a[256], b[256];
            describe_format(a, sizeof a, first->meta);
            describe_format(b, sizeof b, f->meta);
            rc = add_failure(set, path, DH_ERR_MISMATCH,
                             "%s: series %s mixes slice formats: %s is %s; %s is %s", path,
                             g->series_uid, first->path, a, f->path, b);
            free(path);
            return rc;
        }
    }

    input_file *repeat = NULL, *original = NULL;
    size_t repeats = drop_repeats(list, g, &repeat, &original);

    /* Order along the normal of the first slice when every slice has a position and
     * orientation; else by InstanceNumber. */
    int by_location = 1;
    double normal[3] = {0, 0, 0};
    if (first->meta->has_orientation)
        dh_orientation_normal(first->meta->orientation, normal);
    else
        by_location = 0;
    size_t n = 0;
    keys = malloc(g->count * sizeof *keys);
    if (!keys)
        goto oom;
    for (size_t i = 0; i < g->count; i++) {
        input_file *f = &list->items[g->files[i]];
        if (f->dropped)
            continue;
        by_location &= f->meta->has_position;
        if (f->meta->has_position)
            f->location = dh_project_on_normal(f->meta->position, normal);
        keys[n++] = (sort_key){.file = f};
    }
    for (size_t i = 0; i < n; i++)
        keys[i].by_location = by_location;
    qsort(keys, n, sizeof *keys, compare_slices);

    v = dh_volume_alloc(keys[0].file->meta, (uint32_t)n, path);
    if (!v)
        goto oom;
    uint32_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        input_file *f = (input_file *)keys[i].file;
        if (decode_slice(set, v, kept, f) != DH_OK) {
            if (dh_volume_warn(v, "slice %s left out: it could not be decoded (see its error)",
                               f->path) != 0)
                goto oom;
            continue;
        }
        dh_slice_info *s = &v->slice[kept];
        if (!(s->source = dh_strdup(f->path)))
            goto oom;
        s->frame = 0;
        s->has_position = f->meta->has_position;
        memcpy(s->position, f->meta->position, sizeof s->position);
        s->location = by_location ? f->location : (double)kept;
        s->instance_number = f->meta->has_instance_number ? f->meta->instance_number : 0;
        kept++;
    }
    if (kept == 0) { /* every slice failed, each with its own failure */
        dh_volume_free(v);
        free(keys);
        free(path);
        return 0;
    }
    v->slices = kept;
    /* The first kept slice speaks for the volume's transfer syntax. */
    memcpy(v->transfer_syntax, keys[0].file->meta->transfer_syntax_uid, sizeof v->transfer_syntax);
    if (repeats && dh_volume_warn(v,
                                  "%zu file(s) repeat an instance already read and were kept "
                                  "once, e.g. %s repeats %s",
                                  repeats, repeat->path, original->path) != 0)
        goto oom;
    if (dh_volume_finish_geometry(v) != 0)
        goto oom;
    dh_volume_update_range(v);
    if (add_volume(set, v) != 0)
        goto oom;
    free(keys);
    free(path);
    return 0;

oom:
    dh_volume_free(v);
    free(keys);
    free(path);
    return -1;
}

/* A multi-frame or UID-less file: a volume of its own, read with its pixels. */
static int build_single(dh_volume_set *set, input_file *f)
{
    dh_ctx local = {0};
    dh_volume *v = NULL;
    dh_status st = dh_volume_read_file(&local, f->path, &v);
    if (st != DH_OK)
        return add_failure(set, f->path, st, "%s", local.message);
    if (add_volume(set, v) != 0) {
        dh_volume_free(v);
        return -1;
    }
    return 0;
}

static void free_list(file_list *list)
{
    for (size_t i = 0; i < list->count; i++) {
        free(list->items[i].path);
        dh_dicom_image_free(list->items[i].meta);
    }
    free(list->items);
}

/* The series a file joins: its SeriesInstanceUID when it is a single-frame image that has one;
 * NULL for a file read on its own (multi-frame, no UID) or not read at all. */
static const char *series_key(const input_file *f)
{
    return f->meta && f->meta->frames == 1 && f->meta->series_uid[0] ? f->meta->series_uid
                                                                        : NULL;
}

static int by_series_then_order(const void *a, const void *b)
{
    const input_file *fa = *(const input_file *const *)a, *fb = *(const input_file *const *)b;
    int c = strcmp(series_key(fa), series_key(fb));
    return c ? c : (fa > fb) - (fa < fb);
}

/* leader[i]: the first file (in list order) of file i's series, i itself for a file on its own.
 * One sort by (UID, position) rather than comparing each file with every series so far, which
 * for an archive of N one-file series is N^2 / 2 comparisons of long, common-prefix UIDs. */
static int find_leaders(const file_list *list, size_t *leader)
{
    const input_file **keyed = malloc((list->count ? list->count : 1) * sizeof *keyed);
    if (!keyed)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < list->count; i++) {
        leader[i] = i;
        if (series_key(&list->items[i]))
            keyed[n++] = &list->items[i];
    }
    qsort(keyed, n, sizeof *keyed, by_series_then_order);
    for (size_t k = 1; k < n; k++)
        if (strcmp(series_key(keyed[k]), series_key(keyed[k - 1])) == 0)
            leader[keyed[k] - list->items] = leader[keyed[k - 1] - list->items];
    free(keyed);
    return 0;
}

dh_status dh_volume_set_load(dh_ctx *ctx, const char *const *paths, size_t count,
                             dh_volume_set **out)
{
    if (!out)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "dh_volume_set_load: out is NULL");
    *out = NULL;
    if (!paths || count == 0)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "dh_volume_set_load: no paths given");
    for (size_t i = 0; i < count; i++)
        if (!paths[i])
            return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                               "dh_volume_set_load: path %zu is NULL", i);
    dh_volume_set *set = calloc(1, sizeof *set);
    file_list list = {0};
    group *groups = NULL;
    size_t group_count = 0, group_cap = 0;
    size_t *leader = NULL, *group_of = NULL;
    if (!set)
        goto oom;

    /* 1. The files: named ones as given, folders walked. */
    for (size_t i = 0; i < count; i++) {
        struct stat st;
        int rc;
        if (stat(paths[i], &st) != 0)
            rc = add_failure(set, paths[i], DH_ERR_IO, "%s: %s", paths[i], strerror(errno));
        else if (S_ISDIR(st.st_mode))
            rc = walk(set, &list, paths[i], 0);
        else
            rc = add_file(&list, paths[i]);
        if (rc != 0)
            goto oom;
    }

    /* 2. Metadata of every file, without pixels; then the groups in order of first file. */
    for (size_t i = 0; i < list.count; i++) {
        input_file *f = &list.items[i];
        char msg[DH_DICOM_MSG_LEN] = "";
        dh_status st = dh_dicom_read_file(f->path, 0, &f->meta, msg, sizeof msg);
        if (st != DH_OK) {
            f->meta = NULL;
            if (add_failure(set, f->path, st, "%s: %s", f->path, msg) != 0)
                goto oom;
        }
    }
    leader = malloc((list.count ? list.count : 1) * sizeof *leader);
    group_of = malloc((list.count ? list.count : 1) * sizeof *group_of);
    if (!leader || !group_of || find_leaders(&list, leader) != 0)
        goto oom;
    for (size_t i = 0; i < list.count; i++) {
        input_file *f = &list.items[i];
        if (!f->meta)
            continue;
        group *g;
        if (leader[i] == i) {
            if (grow((void **)&groups, &group_cap, group_count + 1, sizeof *groups) != 0)
                goto oom;
            group_of[i] = group_count;
            g = &groups[group_count++];
            memset(g, 0, sizeof *g);
            g->series_uid = series_key(f);
        } else {
            g = &groups[group_of[leader[i]]];
        }
        if (grow((void **)&g->files, &g->cap, g->count + 1, sizeof *g->files) != 0)
            goto oom;
        g->files[g->count++] = i;
    }

    /* 3. One volume per group. */
    for (size_t k = 0; k < group_count; k++) {
        int rc = groups[k].series_uid ? build_series(set, &list, &groups[k])
                                      : build_single(set, &list.items[groups[k].files[0]]);
        if (rc != 0)
            goto oom;
    }

    for (size_t k = 0; k < group_count; k++)
        free(groups[k].files);
    free(groups);
    free(leader);
    free(group_of);
    free_list(&list);
    dh_ctx_clear(ctx);
    *out = set;
    return DH_OK;

oom:
    for (size_t k = 0; k < group_count; k++)
        free(groups[k].files);
    free(groups);
    free(leader);
    free(group_of);
    free_list(&list);
    dh_volume_set_free(set);
    return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "out of memory while loading %zu path(s)", count);
}

void dh_volume_set_free(dh_volume_set *set)
{
    if (!set)
        return;
    for (size_t i = 0; i < set->count; i++)
        dh_volume_free(set->volumes[i]);
    for (size_t i = 0; i < set->failure_count; i++) {
        free(set->failures[i].path);
        free(set->failures[i].message);
    }
    for (size_t i = 0; i < set->skipped_count; i++)
        free(set->skipped[i]);
    free(set->volumes);
    free(set->failures);
    free(set->skipped);
    free(set);
}

size_t dh_volume_set_count(const dh_volume_set *set) { return set ? set->count : 0; }
size_t dh_volume_set_failure_count(const dh_volume_set *set) { return set ? set->failure_count : 0; }
size_t dh_volume_set_skipped_count(const dh_volume_set *set) { return set ? set->skipped_count : 0; }

const dh_volume *dh_volume_set_volume(const dh_volume_set *set, size_t i)
{
    return set && i < set->count ? set->volumes[i] : NULL;
}

const char *dh_volume_set_failure_path(const dh_volume_set *set, size_t i)
{
    return set && i < set->failure_count ? set->failures[i].path : "";
}

dh_status dh_volume_set_failure_status(const dh_volume_set *set, size_t i)
{
    return set && i < set->failure_count ? set->failures[i].status : DH_OK;
}

const char *dh_volume_set_failure_message(const dh_volume_set *set, size_t i)
{
    return set && i < set->failure_count ? set->failures[i].message : "";
}

const char *dh_volume_set_skipped_path(const dh_volume_set *set, size_t i)
{
    return set && i < set->skipped_count ? set->skipped[i] : "";
}
