/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * series_fetch.c: Orthanc series read into memory for the library (series_fetch.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "series_fetch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orthanc_rest.h"

static char *dup_str(const char *s)
{
    char *d = malloc(strlen(s) + 1);
    return d ? strcpy(d, s) : NULL;
}

/* The instances' IDs, UIDs and item names from Orthanc's listing. Returns 0, or an HTTP status
 * with msg. */
static int list_instances(dho_series *s, const json_t *instances, char *msg, size_t len)
{
    size_t n = json_array_size(instances);
    s->instances = calloc(n ? n : 1, sizeof *s->instances);
    s->sop_uids = calloc(n ? n : 1, sizeof *s->sop_uids);
    s->names = calloc(n ? n : 1, sizeof *s->names);
    s->bytes = calloc(n ? n : 1, sizeof *s->bytes);
    if (!s->instances || !s->sop_uids || !s->names || !s->bytes) {
        snprintf(msg, len, "out of memory");
        return 500;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *inst = json_array_get(instances, i);
        const char *id = dho_json_str(inst, "ID");
        const char *sop = dho_json_str(json_object_get(inst, "MainDicomTags"), "SOPInstanceUID");
        if (!dho_valid_id(id)) {
            snprintf(msg, len, "Orthanc listed an instance ID that is not one");
            return 500;
        }
        size_t name_len = strlen(s->series_id) + strlen(id) + 2;
        s->instances[i] = dup_str(id);
        s->sop_uids[i] = dup_str(sop);
        s->names[i] = malloc(name_len);
        s->count++;
        if (!s->instances[i] || !s->sop_uids[i] || !s->names[i]) {
            snprintf(msg, len, "out of memory");
            return 500;
        }
        snprintf(s->names[i], name_len, "%s/%s", s->series_id, id);
    }
    if (s->count == 0) {
        snprintf(msg, len, "the series holds no instance");
        return 404;
    }
    return 0;
}

int dho_series_open(dho_series *s, const char *series_id, char *msg, size_t len)
{
    memset(s, 0, sizeof *s);
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
    s->series_id = dup_str(series_id);
    s->study_id = dup_str(dho_json_str(series, "ParentStudy"));
    s->modality = dup_str(dho_json_str(tags, "Modality"));
    int status = 0;
    if (!instances || !s->series_id || !s->study_id || !s->modality) {
        snprintf(msg, len, "cannot list the series' instances");
        status = 500;
    } else {
        status = list_instances(s, instances, msg, len);
    }
    json_decref(series);
    json_decref(instances);
    return status;
}

int dho_series_fetch_next(dho_series *s, char *msg, size_t len)
{
    if (s->fetched >= s->count)
        return 0;
    const char *id = s->instances[s->fetched];
    if (OrthancPluginGetDicomForInstance(dho_context, &s->bytes[s->fetched], id) !=
        OrthancPluginErrorCode_Success) {
        memset(&s->bytes[s->fetched], 0, sizeof s->bytes[s->fetched]);
        snprintf(msg, len, "%s: the instance vanished from Orthanc while it was read", id);
        return 404;
    }
    s->fetched++;
    return 0;
}

int dho_series_load(dho_series *s, dh_ctx *ctx)
{
    dh_memory_item *items = calloc(s->count ? s->count : 1, sizeof *items);
    if (!items)
        return -1;
    for (size_t i = 0; i < s->fetched; i++)
        items[i] = (dh_memory_item){s->bytes[i].data, s->bytes[i].size, s->names[i]};
    int rc = dh_volume_set_load_memory(ctx, items, s->fetched, &s->set) == DH_OK ? 0 : -1;
    free(items);
    return rc;
}

void dho_series_release(dho_series *s)
{
    dh_volume_set_free(s->set); /* first: its volumes borrow the bytes */
    s->set = NULL;
    for (size_t i = 0; s->bytes && i < s->fetched; i++)
        OrthancPluginFreeMemoryBuffer(dho_context, &s->bytes[i]);
    s->fetched = 0;
}

void dho_series_free(dho_series *s)
{
    dho_series_release(s);
    for (size_t i = 0; i < s->count; i++) {
        free(s->instances[i]);
        free(s->sop_uids[i]);
        free(s->names[i]);
    }
    free(s->instances);
    free(s->sop_uids);
    free(s->names);
    free(s->bytes);
    free(s->series_id);
    free(s->study_id);
    free(s->modality);
    memset(s, 0, sizeof *s);
}

const char *dho_series_instance_of(const char *name)
{
    const char *slash = strrchr(name, '/');
    return slash ? slash + 1 : name;
}

const char *dho_series_source_name(void *series, const char *name)
{
    (void)series;
    return dho_series_instance_of(name);
}

dh_volume *dho_read_instance(OrthancPluginRestOutput *out, dh_ctx *ctx, const char *id)
{
    OrthancPluginMemoryBuffer buf = {0};
    if (!dho_valid_id(id) ||
        OrthancPluginGetDicomForInstance(dho_context, &buf, id) != OrthancPluginErrorCode_Success) {
        dho_answer_error(out, 404, "UnknownResource", "Instance", id,
                         "%s: no instance with this ID", id);
        return NULL;
    }
    dh_volume *v = NULL;
    dh_status st = dh_volume_read_memory(ctx, buf.data, buf.size, id, &v);
    OrthancPluginFreeMemoryBuffer(dho_context, &buf);
    if (st != DH_OK) {
        dho_answer_error(out, dho_http_status(st), dh_status_name(st), "Instance", id, "%s",
                         dh_ctx_error(ctx));
        return NULL;
    }
    return v;
}
