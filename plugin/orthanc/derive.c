/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * derive.c: equalize or window an Orthanc series step by step into a derived series or a
 * presentation state (derive.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "derive.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device_gate.h"
#include "orthanc_rest.h"

/* The derives holding a claim (derive.h), linked through their own structs: no allocation. */
static pthread_mutex_t claims_lock = PTHREAD_MUTEX_INITIALIZER;
/* The longest a derive waits for another of the same result before it gives up (409). */
#define DHO_CLAIM_WAIT_SECONDS 300
static dho_derive *claims;

/* Claims d->claim_key; returns 0, or -1 while another derive holds it. */
static int claim(dho_derive *d)
{
    pthread_mutex_lock(&claims_lock);
    int busy = 0;
    for (const dho_derive *c = claims; c && !busy; c = c->next_claim)
        busy = strcmp(c->claim_key, d->claim_key) == 0;
    if (!busy) {
        d->next_claim = claims;
        claims = d;
        d->claimed = 1;
    }
    pthread_mutex_unlock(&claims_lock);
    return busy ? -1 : 0;
}

static void release_claim(dho_derive *d)
{
    if (!d->claimed)
        return;
    pthread_mutex_lock(&claims_lock);
    for (dho_derive **c = &claims; *c; c = &(*c)->next_claim)
        if (*c == d) {
            *c = d->next_claim;
            break;
        }
    pthread_mutex_unlock(&claims_lock);
    d->claimed = 0;
    d->next_claim = NULL;
}

static int fail(dho_derive *d, int http, const char *error, const char *kind, const char *id,
                const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;

static int fail(dho_derive *d, int http, const char *error, const char *kind, const char *id,
                const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->reason, sizeof d->reason, fmt, ap);
    va_end(ap);
    d->http = http;
    snprintf(d->error, sizeof d->error, "%s", error);
    snprintf(d->kind, sizeof d->kind, "%s", kind);
    snprintf(d->id, sizeof d->id, "%s", id ? id : "");
    d->phase = DHO_DERIVE_FAILED;
    release_claim(d);
    dho_series_release(&d->series); /* last: id may point into the loaded set */
    return -1;
}

/* 2.25.<the MD5 of text as a decimal>: at most 5 + 39 characters. Returns 0, or -1. */
static int uid_from_text(const char *text, char uid[65])
{
    char *hex = OrthancPluginComputeMd5(dho_context, text, (uint32_t)strlen(text));
    if (!hex)
        return -1;
    uint8_t b[16];
    int ok = strlen(hex) == 32;
    for (int i = 0; ok && i < 16; i++) {
        unsigned v;
        ok = sscanf(hex + 2 * i, "%2x", &v) == 1;
        b[i] = (uint8_t)v;
    }
    OrthancPluginFreeString(dho_context, hex);
    if (!ok)
        return -1;
    char digits[40];
    int n = 0, nonzero;
    do { /* one decimal digit per pass: divide the 128-bit big-endian number by 10 */
        unsigned rem = 0;
        nonzero = 0;
        for (int i = 0; i < 16; i++) {
            unsigned cur = rem * 256 + b[i];
            b[i] = (uint8_t)(cur / 10);
            rem = cur % 10;
            nonzero |= b[i];
        }
        digits[n++] = (char)('0' + rem);
    } while (nonzero && n < 39);
    int o = snprintf(uid, 65, "2.25.");
    while (n > 0)
        uid[o++] = digits[--n];
    uid[o] = '\0';
    return 0;
}

/* dh_derive_params.instance_uid: the item's instance, its SOPInstanceUID, the key. */
static int instance_uid(void *user, const char *source, char uid[65])
{
    dho_derive *d = user;
    const char *id = dho_series_instance_of(source);
    for (size_t i = 0; i < d->series.count; i++) {
        if (strcmp(d->series.instances[i], id) != 0)
            continue;
        if (!d->series.sop_uids[i][0])
            return -1;
        size_t n = strlen(d->key) + strlen(d->series.sop_uids[i]) + 16;
        char *text = malloc(n);
        if (!text)
            return -1;
        snprintf(text, n, "%s|instance|%s", d->key, d->series.sop_uids[i]);
        int rc = uid_from_text(text, uid);
        free(text);
        return rc;
    }
    return -1;
}

static int by_text(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* dh_derive_params.instance_uid of a presentation state: the key and every SOPInstanceUID of
 * the series (sorted, so Orthanc's listing order does not matter): a series that grew gets a
 * new state rather than keep one that references part of it. */
static int state_uid(void *user, const char *source, char uid[65])
{
    (void)source;
    dho_derive *d = user;
    const char **sorted = calloc(d->series.count ? d->series.count : 1, sizeof *sorted);
    size_t n = strlen(d->key) + 16;
    for (size_t i = 0; sorted && i < d->series.count; i++) {
        sorted[i] = d->series.sop_uids[i];
        n += strlen(sorted[i]) + 1;
    }
    char *text = sorted ? malloc(n) : NULL;
    int rc = -1;
    if (text) {
        qsort(sorted, d->series.count, sizeof *sorted, by_text);
        size_t o = (size_t)snprintf(text, n, "%s|state", d->key);
        for (size_t i = 0; i < d->series.count; i++)
            o += (size_t)snprintf(text + o, n - o, "|%s", sorted[i]);
        rc = uid_from_text(text, uid);
    }
    free(text);
    free(sorted);
    return rc;
}

int dho_derive_open(dho_derive *d, const char *series_id, const dh_equalize_params *params,
                    int gsps, const char *key, int later)
{
    memset(d, 0, sizeof *d);
    d->params = *params;
    d->gsps = gsps;
    snprintf(d->key, sizeof d->key, "%s", key);
    d->instances = json_array();
    d->ctx = dh_ctx_create();
    if (!d->instances || !d->ctx)
        return fail(d, 500, "NotEnoughMemory", "Series", series_id, "out of memory");
    /* Claimed by the first step, which runs where the work runs: a job queued behind others
     * holds no claim that a running derive could wait for. */
    char text[640], msg[2048];
    snprintf(text, sizeof text, "%s|claim|%s", key, series_id);
    if (uid_from_text(text, d->claim_key) != 0)
        return fail(d, 500, "InternalError", "Series", series_id, "cannot compute the claim");
    d->relist = later;
    int http = dho_series_open(&d->series, series_id, msg, sizeof msg);
    if (http != 0)
        return fail(d, http, http == 404 ? "UnknownResource" : "InternalError", "Series",
                    series_id, "%s: %s", series_id, msg);
    d->phase = DHO_DERIVE_FETCH;
    return 0;
}

/* Takes the claim before anything is fetched; returns 1 when it is held, 0 while another derive
 * of the same result runs (after a short wait), -1 on failure. Once it had to wait, or when it
 * was opened for later, the series is listed again: instances may have arrived since it was
 * listed in dho_derive_open. */
static int take_claim(dho_derive *d)
{
    if (d->claimed)
        return 1;
    if (claim(d) != 0) {
        /* Bounded: a holder that never ends (one lost to an exception inside Orthanc) must not
         * keep every later request of the same result waiting for ever. */
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double t = (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
        if (d->claim_wait_since == 0.0)
            d->claim_wait_since = t;
        else if (t - d->claim_wait_since > DHO_CLAIM_WAIT_SECONDS)
            return fail(d, 409, "Busy", "Series", d->series.series_id,
                        "%s: the same derive has been running for over %d s; try again later",
                        d->series.series_id, DHO_CLAIM_WAIT_SECONDS);
        d->relist = 1;
        nanosleep(&(struct timespec){.tv_nsec = 50 * 1000 * 1000}, NULL);
        return 0;
    }
    if (d->relist) {
        char id[72], msg[2048];
        snprintf(id, sizeof id, "%s", d->series.series_id);
        dho_series_free(&d->series);
        int http = dho_series_open(&d->series, id, msg, sizeof msg);
        if (http != 0)
            return fail(d, http, http == 404 ? "UnknownResource" : "InternalError", "Series", id,
                        "%s: %s", id, msg);
    }
    return 1;
}

/* Fetches one instance; once all are, loads the volume from their bytes. */
static int step_fetch(dho_derive *d)
{
    int held = take_claim(d);
    if (held <= 0)
        return held < 0 ? -1 : 1;
    char msg[2048];
    const char *sid = d->series.series_id;
    if (d->series.fetched < d->series.count) {
        int http = dho_series_fetch_next(&d->series, msg, sizeof msg);
        if (http != 0)
            return fail(d, http, http == 404 ? "UnknownResource" : "InternalError", "Series", sid,
                        "%s", msg);
        return 1;
    }
    if (dho_series_load(&d->series, d->ctx) != 0)
        return fail(d, 500, "InternalError", "Series", sid, "%s", dh_ctx_error(d->ctx));
    const dh_volume_set *set = d->series.set;
    if (dh_volume_set_failure_count(set) > 0) {
        dh_status why = dh_volume_set_failure_status(set, 0);
        return fail(d, dho_http_status(why), dh_status_name(why), "Instance",
                    dho_series_instance_of(dh_volume_set_failure_path(set, 0)), "series %s: %s",
                    sid, dh_volume_set_failure_message(set, 0));
    }
    if (dh_volume_set_count(set) != 1)
        return fail(d, 422, "DH_ERR_MISMATCH", "Series", sid,
                    "%s: the series holds %zu volumes (multi-frame instances are volumes of "
                    "their own); it is derived as one volume only", sid, dh_volume_set_count(set));
    d->phase = DHO_DERIVE_COMPUTE;
    return 1;
}

/* A derived series of the same UID already in Orthanc with another number of instances was
 * made from fewer (or other) source instances: it is removed so that the new one replaces it
 * whole rather than mixing instances of two computations. Returns 0, or -1 when Orthanc could
 * not look it up or remove it. */
static int drop_stale_derived(const char *series_uid, size_t file_count)
{
    json_t *found = dho_post_json("/tools/lookup", series_uid, strlen(series_uid));
    int rc = found ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < json_array_size(found); i++) {
        const json_t *hit = json_array_get(found, i);
        if (strcmp(dho_json_str(hit, "Type"), "Series") != 0 ||
            !dho_valid_id(dho_json_str(hit, "ID")))
            continue;
        char uri[128];
        snprintf(uri, sizeof uri, "/series/%s", dho_json_str(hit, "ID"));
        json_t *old = dho_get_json(uri);
        if (!old)
            continue; /* gone since the lookup */
        size_t had = json_array_size(json_object_get(old, "Instances"));
        json_decref(old);
        if (had != file_count) {
            dho_log_info("replacing derived series %s (%zu instances, now %zu)",
                         dho_json_str(hit, "ID"), had, file_count);
            /* Storing beside a stale series that stays would mix two computations. */
            if (OrthancPluginRestApiDelete(dho_context, uri) != OrthancPluginErrorCode_Success)
                rc = -1;
        }
    }
    json_decref(found);
    return rc;
}

/* A presentation state series of this UID in Orthanc that does not hold this very state
 * (sop_uid) was made from another listing of the series: removed, so that the series shows
 * one state, the current one. Returns 0, or -1 when Orthanc could not look it up or remove it. */
static int drop_stale_state(const char *series_uid, const char *sop_uid)
{
    json_t *mine = dho_post_json("/tools/lookup", sop_uid, strlen(sop_uid));
    int have = 0;
    for (size_t i = 0; i < json_array_size(mine); i++)
        have |= strcmp(dho_json_str(json_array_get(mine, i), "Type"), "Instance") == 0;
    json_decref(mine);
    return have ? 0 : drop_stale_derived(series_uid, 0);
}

static int step_compute(dho_derive *d)
{
    const dh_volume *v = dh_volume_set_volume(d->series.set, 0);
    const char *sid = d->series.series_id;
    int token = dho_gate_enter(d->params.device);
    dh_status st = dh_equalize(d->ctx, v, &d->params, &d->result);
    dho_gate_leave(token);
    if (st != DH_OK)
        return fail(d, dho_http_status(st), dh_status_name(st), "Series", sid, "%s",
                    dh_ctx_error(d->ctx));
    char series_uid[65], text[640];
    snprintf(text, sizeof text, "%s|series|%s", d->key, dh_volume_series_uid(v));
    if (uid_from_text(text, series_uid) != 0)
        return fail(d, 500, "InternalError", "Series", sid, "cannot compute the derived UIDs");
    dh_derive_params dp;
    dh_derive_params_init(&dp);
    dp.series_uid = series_uid;
    dp.instance_uid = d->gsps ? state_uid : instance_uid;
    dp.user = d;
    st = d->gsps ? dh_equalized_encode_gsps(d->ctx, v, d->result, &dp, &d->written)
                 : dh_equalized_encode_dicom(d->ctx, v, d->result, &dp, &d->written);
    if (st != DH_OK)
        return fail(d, dho_http_status(st), dh_status_name(st), "Series", sid, "%s",
                    dh_ctx_error(d->ctx));
    /* Encoded: the sources' bytes and the volume are no longer needed. */
    dh_equalized_free(d->result);
    d->result = NULL;
    dho_series_release(&d->series);
    if ((d->gsps ? drop_stale_state(series_uid, d->written->sop_uids[0])
                 : drop_stale_derived(series_uid, d->written->file_count)) != 0)
        return fail(d, 500, "InternalError", "Series", sid,
                    "%s: cannot look up or remove the earlier derived series %s", sid, series_uid);
    d->phase = DHO_DERIVE_STORE;
    return 1;
}

/* A derived series left with part of its instances (a failure or a cancel while storing) is
 * removed, so that Orthanc never shows half a result as a whole one; one that was whole already
 * (every instance so far AlreadyStored) is left alone. */
static void remove_partial(dho_derive *d)
{
    if (d->phase != DHO_DERIVE_STORE || d->stored == d->already || !dho_valid_id(d->derived_id))
        return;
    char uri[96];
    snprintf(uri, sizeof uri, "/series/%s", d->derived_id);
    if (OrthancPluginRestApiDelete(dho_context, uri) == OrthancPluginErrorCode_Success)
        dho_log_warning("removed the partly stored derived series %s", d->derived_id);
    d->derived_id[0] = '\0';
}

void dho_derive_lost(dho_derive *d)
{
    if (d->phase == DHO_DERIVE_DONE || d->phase == DHO_DERIVE_FAILED)
        return;
    /* Nothing here asks Orthanc for work (only its buffers are freed): this runs while an
     * exception from inside it unwinds. */
    const char *sid = d->series.series_id ? d->series.series_id : "";
    fail(d, 500, "InternalError", "Series", sid,
         "%s: Orthanc failed inside one of its own calls (see its log)", sid);
}

void dho_derive_abandon(dho_derive *d)
{
    if (d->phase == DHO_DERIVE_DONE || d->phase == DHO_DERIVE_FAILED)
        return; /* the claim and the files are gone already */
    remove_partial(d);
    const char *sid = d->series.series_id ? d->series.series_id : "";
    fail(d, 409, "Cancelled", "Series", sid, "%s: stopped before it was done", sid);
}

static int step_store(dho_derive *d)
{
    const char *sid = d->series.series_id;
    if (d->stored == d->written->file_count) {
        d->phase = DHO_DERIVE_DONE;
        release_claim(d);
        return 0;
    }
    json_t *answer = dho_post_json("/instances", d->written->data[d->stored],
                                   d->written->sizes[d->stored]);
    if (!answer) {
        /* Once more after a pause: Orthanc's file storage can lose a race between this store and
         * a delete pruning the same folder (the soak test meets it on a loaded machine). A
         * repeat is harmless: an instance stored after all comes back AlreadyStored. */
        nanosleep(&(struct timespec){.tv_nsec = 100 * 1000 * 1000}, NULL);
        answer = dho_post_json("/instances", d->written->data[d->stored],
                               d->written->sizes[d->stored]);
    }
    /* Orthanc has its copy (or refused it): ours goes at once, so that a job's answer, which
     * outlives it in Orthanc's history, holds no file. */
    free(d->written->data[d->stored]);
    d->written->data[d->stored] = NULL;
    const char *id = dho_json_str(answer, "ID"), *status = dho_json_str(answer, "Status");
    if (!*id) {
        json_decref(answer);
        remove_partial(d);
        return fail(d, 500, "InternalError", "Series", sid,
                    "Orthanc refused the derived instance of %s",
                    dho_series_instance_of(d->written->sources[d->stored]));
    }
    json_array_append_new(d->instances, json_string(id));
    snprintf(d->derived_id, sizeof d->derived_id, "%s", dho_json_str(answer, "ParentSeries"));
    if (strcmp(status, "AlreadyStored") == 0)
        d->already++;
    json_decref(answer);
    d->stored++;
    return 1;
}

int dho_derive_step(dho_derive *d)
{
    switch (d->phase) {
    case DHO_DERIVE_FETCH:
        return step_fetch(d);
    case DHO_DERIVE_COMPUTE:
        return step_compute(d);
    case DHO_DERIVE_STORE:
        return step_store(d);
    case DHO_DERIVE_DONE:
        return 0;
    default:
        return -1;
    }
}

float dho_derive_progress(const dho_derive *d)
{
    /* Fetching and storing count one unit per file, computing one unit per instance too. */
    double count = d->series.count ? (double)d->series.count : 1.0;
    double stores = d->written ? (double)d->written->file_count : count;
    double total = 2.0 * count + stores;
    double done = d->phase >= DHO_DERIVE_STORE ? 2.0 * count + (double)d->stored
                                                : (double)d->series.fetched;
    if (d->phase == DHO_DERIVE_DONE)
        return 1.0f;
    return (float)(done / total);
}

json_t *dho_derive_answer(const dho_derive *d)
{
    json_t *a = json_object();
    if (d->phase == DHO_DERIVE_FAILED) {
        json_object_set_new(a, "HttpStatus", json_integer(d->http));
        json_object_set_new(a, "Error", json_string(d->error));
        json_object_set_new(a, d->kind, json_string(d->id));
        json_t *r = json_string(d->reason);
        json_object_set_new(a, "Reason", r ? r : json_string("(reason not valid UTF-8)"));
        return a;
    }
    char path[96];
    snprintf(path, sizeof path, "/series/%s", d->derived_id);
    json_object_set_new(a, "ID", json_string(d->derived_id));
    json_object_set_new(a, "Path", json_string(path));
    json_object_set_new(a, "Instances", json_copy(d->instances));
    json_object_set_new(a, "AlreadyStored", json_integer((json_int_t)d->already));
    if (d->written)
        json_object_set_new(a, "SeriesInstanceUID", json_string(d->written->series_uid));
    return a;
}

void dho_derive_free(dho_derive *d)
{
    release_claim(d);
    dh_equalized_free(d->result);
    dh_derived_series_free(d->written);
    dho_series_free(&d->series);
    json_decref(d->instances);
    dh_ctx_free(d->ctx);
    memset(d, 0, sizeof *d);
}
