// SPDX-License-Identifier: MIT
/*
 * derived_output.c: where the writers of derived images (derived_dicom.c, png_preview.c) put
 * their files: the volume's slices grouped back by source file, the output folder and each
 * output's name (dh_derive_params), folders created with their parents, and a finished
 * temporary file published without replacing, or replacing, what is there.
 */
#define _POSIX_C_SOURCE 200809L
#include "derived_output.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "context.h"
#include "dh_dicom_write.h"
#include "volume.h"

void dh_derived_sources_free(dh_derived_source *sources, size_t count)
{
    if (!sources)
        return;
    for (size_t i = 0; i < count; i++)
        free(sources[i].slice_of_frame);
    free(sources);
}

dh_status dh_derived_sources(dh_ctx *ctx, const dh_volume *v, dh_derived_source **out,
                             size_t *count)
{
    dh_derived_source *s = calloc(v->slices, sizeof *s);
    size_t k = 0;
    if (!s)
        return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "out of memory");
    /* Frames per file first (slices are few thousand at most: a quadratic scan is fine). */
    for (uint32_t z = 0; z < v->slices; z++) {
        size_t i = 0;
        while (i < k && strcmp(s[i].path, v->slice[z].source) != 0)
            i++;
        if (i == k) {
            s[k].bytes = v->slice[z].source_bytes;
            s[k].size = v->slice[z].source_size;
            s[k++].path = v->slice[z].source;
        }
        if (v->slice[z].frame + 1 > s[i].frames)
            s[i].frames = v->slice[z].frame + 1;
    }
    for (size_t i = 0; i < k; i++) {
        s[i].slice_of_frame = malloc(s[i].frames * sizeof(uint32_t));
        if (!s[i].slice_of_frame) {
            dh_derived_sources_free(s, k);
            return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "out of memory");
        }
        for (uint32_t f = 0; f < s[i].frames; f++)
            s[i].slice_of_frame[f] = UINT32_MAX;
    }
    for (uint32_t z = 0; z < v->slices; z++) {
        size_t i = 0;
        while (strcmp(s[i].path, v->slice[z].source) != 0)
            i++;
        uint32_t f = v->slice[z].frame;
        if (s[i].slice_of_frame[f] != UINT32_MAX) {
            dh_status st = dh_ctx_fail(ctx, DH_ERR_MALFORMED, "%s: frame %u appears twice",
                                       s[i].path, f);
            dh_derived_sources_free(s, k);
            return st;
        }
        s[i].slice_of_frame[f] = z;
    }
    for (size_t i = 0; i < k; i++)
        for (uint32_t f = 0; f < s[i].frames; f++)
            if (s[i].slice_of_frame[f] == UINT32_MAX) {
                dh_status st = dh_ctx_fail(ctx, DH_ERR_MALFORMED,
                                           "%s: frame %u is missing from the volume", s[i].path, f);
                dh_derived_sources_free(s, k);
                return st;
            }
    *out = s;
    *count = k;
    return DH_OK;
}

const char *dh_path_basename(const char *path)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    const char *end = path + n, *b = end;
    while (b > path && b[-1] != '/')
        b--;
    return b;
}

static char *output_folder(const char *dir, const dh_volume *v, size_t source_count)
{
    if (source_count <= 1)
        return dh_strdup(dir);
    const char *name = dh_path_basename(v->path);
    size_t name_len = strcspn(name, "/");
    if (name_len == 0 || (name_len == 1 && name[0] == '.') ||
        (name_len == 2 && name[0] == '.' && name[1] == '.')) {
        name = "series";
        name_len = 6;
    }
    size_t n = strlen(dir) + name_len + 2;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%s/%.*s", dir, (int)name_len, name);
    return out;
}

/* Public (dicomhist.h): hosts create the folders of their own files the same way. */
int dh_folder_create(const char *path)
{
    char *p = dh_strdup(path);
    if (!p)
        return -1;
    for (char *c = p + 1; *c; c++) {
        if (*c != '/')
            continue;
        *c = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST) {
            free(p);
            return -1;
        }
        *c = '/';
    }
    int rc = mkdir(p, 0755) != 0 && errno != EEXIST ? -1 : 0;
    free(p);
    return rc;
}

dh_status dh_derived_output_open(dh_ctx *ctx, const dh_volume *v, const char *dir,
                                 const dh_derive_params *params, dh_derived_source **sources,
                                 size_t *count, char **folder)
{
    *folder = NULL;
    dh_status st = dh_derived_sources(ctx, v, sources, count);
    if (st != DH_OK)
        return st;
    const char *base = dir ? dir : ".";
    *folder = params->output_name ? dh_strdup(base) : output_folder(base, v, *count);
    if (!*folder)
        st = dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "out of memory");
    else if (dir && dh_folder_create(*folder) != 0)
        st = dh_ctx_fail(ctx, DH_ERR_IO, "%s: cannot create the folder: %s", *folder,
                         strerror(errno));
    if (st != DH_OK) {
        free(*folder);
        *folder = NULL;
        dh_derived_sources_free(*sources, *count);
        *sources = NULL;
        *count = 0;
    }
    return st;
}

void dh_derived_series_free(dh_derived_series *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->file_count; i++) {
        free(s->files[i]);
        free(s->sop_uids[i]);
        free(s->sources[i]);
    }
    for (size_t i = 0; s->data && i < s->file_count; i++)
        free(s->data[i]);
    free(s->files);
    free(s->sop_uids);
    free(s->sources);
    free(s->data);
    free(s->sizes);
    free(s);
}

dh_derived_series *dh_derived_series_alloc(size_t count, int in_memory)
{
    dh_derived_series *s = calloc(1, sizeof *s);
    size_t n = count ? count : 1;
    if (!s || !(s->files = calloc(n, sizeof(char *))) || !(s->sop_uids = calloc(n, sizeof(char *))) ||
        !(s->sources = calloc(n, sizeof(char *))) ||
        (in_memory && (!(s->data = calloc(n, sizeof *s->data)) ||
                       !(s->sizes = calloc(n, sizeof *s->sizes))))) {
        dh_derived_series_free(s);
        return NULL;
    }
    return s;
}

void dh_derive_params_init(dh_derive_params *p)
{
    if (!p)
        return;
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
    p->uids = DH_UIDS_RANDOM;
    p->existing = DH_EXISTING_FAIL;
    p->created = -1;
}

dh_status dh_derived_params_check(dh_ctx *ctx, const dh_derive_params *given,
                                  dh_derive_params *out)
{
    dh_derive_params_init(out);
    if (!given)
        return DH_OK;
    if (given->struct_size != sizeof *given)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "dh_derive_params.struct_size is %u, not %zu (use "
                           "dh_derive_params_init)", (unsigned)given->struct_size, sizeof *given);
    if (given->existing != DH_EXISTING_FAIL && given->existing != DH_EXISTING_REPLACE &&
        given->existing != DH_EXISTING_KEEP)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "dh_derive_params: existing %d unknown",
                           (int)given->existing);
    if (given->uids != DH_UIDS_RANDOM && given->uids != DH_UIDS_DERIVED)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "dh_derive_params: uids %d unknown",
                           (int)given->uids);
    if (given->created < -1)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "dh_derive_params: created %lld < -1",
                           (long long)given->created);
    *out = *given;
    return DH_OK;
}

/* The folder part of a path, created with its parents. */
static int make_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path)
        return 0;
    char *dir = dh_strdup(path);
    if (!dir)
        return -1;
    dir[slash - path] = '\0';
    struct stat st;
    int rc = stat(dir, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : dh_folder_create(dir);
    free(dir);
    return rc;
}

dh_status dh_derived_output_path(dh_ctx *ctx, const dh_derive_params *params, const char *dir,
                                 const char *folder, const char *source, const char *suffix,
                                 char **out)
{
    char name[4096];
    const char *base = folder;
    *out = NULL;
    if (params->output_name) {
        if (params->output_name(params->user, source, name, sizeof name) != 0 || !name[0] ||
            name[0] == '/' || strcmp(name, "..") == 0 || strncmp(name, "../", 3) == 0 ||
            strstr(name, "/../") || (strlen(name) > 2 && strcmp(name + strlen(name) - 3, "/..") == 0))
            return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                               "%s: no usable output name for it", source);
        base = dir ? dir : ".";
    } else {
        snprintf(name, sizeof name, "%s", dh_path_basename(source));
    }
    size_t stem = strlen(name);
    if (suffix && stem > 4 && strcasecmp(name + stem - 4, ".dcm") == 0)
        stem -= 4;
    size_t n = strlen(base) + stem + (suffix ? strlen(suffix) : 0) + 2;
    char *path = malloc(n);
    if (!path)
        return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "out of memory");
    snprintf(path, n, "%s/%.*s%s", base, (int)stem, name, suffix ? suffix : "");
    if (!dir) /* a name below the output folder, without the "./" it was built with */
        memmove(path, path + 2, strlen(path + 2) + 1);
    else if (params->output_name && make_parent(path) != 0) {
        dh_status st = dh_ctx_fail(ctx, DH_ERR_IO, "%s: cannot create its folder: %s", path,
                                   strerror(errno));
        free(path);
        return st;
    }
    *out = path;
    return DH_OK;
}

int dh_derived_publish(const char *tmp, const char *path, dh_existing existing)
{
    int rc;
    if (existing == DH_EXISTING_REPLACE) {
        rc = rename(tmp, path);
    } else {
        /* A hard link fails when path exists, where rename would replace it. */
        rc = link(tmp, path);
    }
    int e = errno;
    unlink(tmp);
    errno = e;
    return rc;
}

dh_status dh_derived_existing(dh_ctx *ctx, const char *path, dh_existing existing,
                              int (*is_same)(const char *path, const char *uid), const char *uid,
                              int *kept)
{
    *kept = 0;
    if (existing == DH_EXISTING_REPLACE || access(path, F_OK) != 0)
        return DH_OK;
    if (existing == DH_EXISTING_KEEP && is_same(path, uid)) {
        *kept = 1;
        return DH_OK;
    }
    return dh_ctx_fail(ctx, DH_ERR_IO, "%s: already exists (not replaced)", path);
}

dh_status dh_derived_request_check(dh_ctx *ctx, const dh_volume *v, const dh_equalized *r,
                                   const dh_derive_params *params, const char *what,
                                   dh_derive_params *wp)
{
    dh_status st = dh_derived_params_check(ctx, params, wp);
    if (st != DH_OK)
        return st;
    if (wp->series_uid && !dh_dicom_uid_valid(wp->series_uid))
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "%s: %s SeriesInstanceUID \"%.80s\" is not a valid UID (1 to 64 digits "
                           "and dots)", v->path, what, wp->series_uid);
    if (r->rows != v->format.rows || r->columns != v->format.columns || r->slices != v->slices)
        return dh_ctx_fail(ctx, DH_ERR_MISMATCH, "%s: the result does not belong to this volume",
                           v->path);
    return DH_OK;
}
