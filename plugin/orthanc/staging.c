/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * staging.c: Orthanc series copied into private folders for the library's reader (staging.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "staging.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "orthanc_rest.h"

static char stage_root[1024] = "/tmp";

void dho_stage_set_root(const char *root)
{
    if (root && *root)
        snprintf(stage_root, sizeof stage_root, "%s", root);
}

static char *dup_str(const char *s)
{
    char *d = malloc(strlen(s) + 1);
    return d ? strcpy(d, s) : NULL;
}

int dho_stage_open(dho_stage *st, const char *series_id, char *msg, size_t len)
{
    memset(st, 0, sizeof *st);
    if (!dho_valid_id(series_id)) {
        snprintf(msg, len, "no series with this ID");
        return 404;
    }
    char uri[128];
    snprintf(uri, sizeof uri, "/series/%s", series_id);
    json_t *series = dho_get_json(uri);
    if (!series) {
        snprintf(msg, len, "no series with this ID");
        return 404;
    }
    snprintf(uri, sizeof uri, "/series/%s/instances", series_id);
    json_t *instances = dho_get_json(uri);
    const json_t *tags = json_object_get(series, "MainDicomTags");
    st->series_id = dup_str(series_id);
    st->study_id = dup_str(dho_json_str(series, "ParentStudy"));
    st->modality = dup_str(dho_json_str(tags, "Modality"));
    size_t n = json_array_size(instances);
    st->instances = calloc(n ? n : 1, sizeof *st->instances);
    st->sop_uids = calloc(n ? n : 1, sizeof *st->sop_uids);
    int status = 0;
    if (!instances || !st->series_id || !st->study_id || !st->modality || !st->instances ||
        !st->sop_uids) {
        snprintf(msg, len, "cannot list the series' instances");
        status = 500;
    }
    for (size_t i = 0; status == 0 && i < n; i++) {
        const json_t *inst = json_array_get(instances, i);
        const char *id = dho_json_str(inst, "ID");
        const char *sop = dho_json_str(json_object_get(inst, "MainDicomTags"), "SOPInstanceUID");
        if (!dho_valid_id(id)) {
            snprintf(msg, len, "Orthanc listed an instance ID that is not one");
            status = 500;
            break;
        }
        st->instances[i] = dup_str(id);
        st->sop_uids[i] = dup_str(sop);
        st->count++;
        if (!st->instances[i] || !st->sop_uids[i]) {
            snprintf(msg, len, "out of memory");
            status = 500;
        }
    }
    if (status == 0 && st->count == 0) {
        snprintf(msg, len, "the series holds no instance");
        status = 404;
    }
    json_decref(series);
    json_decref(instances);
    return status;
}

/* The staging folder, made with the first instance staged rather than when the series is listed:
 * a job cancelled while it waits in Orthanc's queue is never stopped (Orthanc stops running jobs
 * only), so a folder made for it would stay until the job left Orthanc's history. */
static int make_folder(dho_stage *st, char *msg, size_t len)
{
    size_t dlen = strlen(stage_root) + 32;
    st->dir = malloc(dlen);
    if (st->dir)
        snprintf(st->dir, dlen, "%s/dicomhist-XXXXXX", stage_root);
    if (!st->dir || !mkdtemp(st->dir)) {
        snprintf(msg, len, "cannot make a staging folder in %s: %s", stage_root, strerror(errno));
        free(st->dir);
        st->dir = NULL;
        return 500;
    }
    return 0;
}

int dho_stage_next(dho_stage *st, char *msg, size_t len)
{
    if (st->staged >= st->count)
        return 0;
    int made = st->dir ? 0 : make_folder(st, msg, len);
    if (made != 0)
        return made;
    const char *id = st->instances[st->staged];
    OrthancPluginMemoryBuffer buf = {0};
    if (OrthancPluginGetDicomForInstance(dho_context, &buf, id) != OrthancPluginErrorCode_Success) {
        snprintf(msg, len, "%s: the instance vanished from Orthanc while it was read", id);
        return 404;
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", st->dir, id);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(buf.data, 1, buf.size, f) == buf.size;
    if (f && fclose(f) != 0)
        ok = 0;
    OrthancPluginFreeMemoryBuffer(dho_context, &buf);
    if (!ok) {
        snprintf(msg, len, "%s: cannot stage the instance in %s: %s", id, st->dir,
                 strerror(errno));
        return 500;
    }
    st->staged++;
    return 0;
}

int dho_stage_load(dho_stage *st, dh_ctx *ctx)
{
    const char **paths = calloc(st->count, sizeof *paths);
    char **owned = calloc(st->count, sizeof *owned);
    int rc = -1;
    if (paths && owned) {
        size_t i = 0;
        for (; i < st->count; i++) {
            size_t n = strlen(st->dir) + strlen(st->instances[i]) + 2;
            if (!(owned[i] = malloc(n)))
                break;
            snprintf(owned[i], n, "%s/%s", st->dir, st->instances[i]);
            paths[i] = owned[i];
        }
        if (i == st->count)
            rc = dh_volume_set_load(ctx, paths, st->count, &st->set) == DH_OK ? 0 : -1;
        for (size_t k = 0; k < i; k++)
            free(owned[k]);
    }
    free(paths);
    free(owned);
    return rc;
}

/* Removes the folder's files (names are instance IDs and derived files' names) and itself. */
static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char path[1400];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            struct stat sb;
            if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
                remove_tree(path);
            else
                unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

void dho_stage_remove_files(dho_stage *st)
{
    dh_volume_set_free(st->set);
    st->set = NULL;
    if (st->dir)
        remove_tree(st->dir);
    free(st->dir);
    st->dir = NULL;
}

void dho_stage_free(dho_stage *st)
{
    dho_stage_remove_files(st);
    for (size_t i = 0; i < st->count; i++) {
        free(st->instances[i]);
        free(st->sop_uids[i]);
    }
    free(st->instances);
    free(st->sop_uids);
    free(st->series_id);
    free(st->study_id);
    free(st->modality);
    memset(st, 0, sizeof *st);
}

const char *dho_stage_instance_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

const char *dho_stage_source_name(void *stage, const char *file)
{
    (void)stage;
    return dho_stage_instance_of(file);
}

void dho_stage_warning(void *stage, const char *warning, char *out, size_t len)
{
    dho_stage_message(stage, warning, out, len);
}

void dho_stage_message(const void *stage, const char *message, char *out, size_t len)
{
    const dho_stage *st = stage;
    size_t dlen = st->dir ? strlen(st->dir) : 0, o = 0;
    for (const char *p = message; *p && o + 1 < len;) {
        if (dlen && strncmp(p, st->dir, dlen) == 0) {
            p += dlen;
            if (*p == '/') { /* a staged file: its name is the instance ID */
                p++;
            } else { /* the folder: the series */
                for (const char *s = st->series_id; *s && o + 1 < len;)
                    out[o++] = *s++;
            }
            continue;
        }
        out[o++] = *p++;
    }
    out[o] = '\0';
}
