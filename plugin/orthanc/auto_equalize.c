/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * auto_equalize.c: the dispatcher, the workers and /dicomhist/status (auto_equalize.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "auto_equalize.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cpp_guard.h"
#include "derive.h"
#include "device_gate.h"
#include "options.h"
#include "orthanc_rest.h"
#include "routes.h"

#define MAX_THREADS 16
#define MAX_MODALITIES 16
#define QUEUE_CAP 64 /* series waiting; the dispatcher waits when it is full */

typedef struct item {
    char series[72];
    int64_t seq; /* the change that announced it */
} item;

static struct {
    /* configuration, fixed after dho_auto_configure */
    int enabled;
    char modalities[MAX_MODALITIES][17];
    int modality_count;
    dh_equalize_params params;
    char key[512];
    int gsps; /* "Output": "gsps": a presentation state per series instead of a derived one */
    int threads;
    /* state, under lock */
    pthread_mutex_t lock;
    pthread_mutex_t persist_lock; /* one writer of the property at a time, in order */
    pthread_cond_t wake;     /* workers: an item is queued; all: stop */
    pthread_cond_t room;     /* the dispatcher: the queue has room */
    pthread_cond_t changed;  /* the dispatcher: a change was notified */
    int running, stopping, notified;
    item queue[QUEUE_CAP];
    int head, count;
    int64_t in_flight[MAX_THREADS]; /* the seq each worker works on, -1 when idle */
    char working_on[MAX_THREADS][72]; /* and its series */
    int64_t read_seq;               /* the last change read from /changes */
    int64_t persisted;
    uint64_t processed, already, failed, skipped;
    char last_error[1024];
    pthread_t dispatcher, workers[MAX_THREADS];
} A = {.lock = PTHREAD_MUTEX_INITIALIZER,
       .persist_lock = PTHREAD_MUTEX_INITIALIZER,
       .wake = PTHREAD_COND_INITIALIZER,
       .room = PTHREAD_COND_INITIALIZER,
       .changed = PTHREAD_COND_INITIALIZER,
       .threads = 1};

/* ------------------------------------------------------------------ configuration */

int dho_auto_configure(const json_t *section)
{
    const json_t *threads = json_object_get(section, "Threads");
    if (threads) {
        if (!json_is_integer(threads) || json_integer_value(threads) < 1 ||
            json_integer_value(threads) > MAX_THREADS) {
            dho_log_warning("\"DicomHist.Threads\" must be a whole number from 1 to %d",
                            MAX_THREADS);
            return -1;
        }
        A.threads = (int)json_integer_value(threads);
    }
    const json_t *ae = json_object_get(section, "AutoEqualize");
    if (!ae)
        return 0;
    if (!json_is_object(ae)) {
        dho_log_warning("\"DicomHist.AutoEqualize\" must be a JSON object");
        return -1;
    }
    /* The equalization options are the REST route's: one parser, one meaning. */
    json_t *options = json_deep_copy(ae);
    const json_t *enable = json_object_get(ae, "Enable");
    const json_t *mods = json_object_get(ae, "Modalities");
    json_object_del(options, "Enable");
    json_object_del(options, "Modalities");
    if (!json_object_get(options, "Device") && json_object_get(section, "Device"))
        json_object_set(options, "Device", json_object_get(section, "Device"));
    int async = 0, rc = 0;
    dho_bad_argument bad;
    if (enable && !json_is_boolean(enable)) {
        dho_log_warning("\"DicomHist.AutoEqualize.Enable\" must be true or false");
        rc = -1;
    } else if (dho_parse_derive_body(options, DH_EQ_EQUALIZE, &A.params, &async, &A.gsps, A.key,
                                     sizeof A.key, &bad) != 0) {
        dho_log_warning("\"DicomHist.AutoEqualize.%s\": %s", bad.name, bad.reason);
        rc = -1;
    }
    json_decref(options);
    if (rc == 0 && mods) {
        if (!json_is_array(mods) || json_array_size(mods) > MAX_MODALITIES) {
            dho_log_warning("\"DicomHist.AutoEqualize.Modalities\" must be a list of at most "
                            "%d modalities", MAX_MODALITIES);
            return -1;
        }
        for (size_t i = 0; i < json_array_size(mods); i++) {
            const char *m = json_string_value(json_array_get(mods, i));
            if (!m || !*m || strlen(m) > 16) {
                dho_log_warning("\"DicomHist.AutoEqualize.Modalities\": item %zu is not a "
                                "modality", i);
                return -1;
            }
            snprintf(A.modalities[A.modality_count++], sizeof A.modalities[0], "%s", m);
        }
    } else if (rc == 0) {
        snprintf(A.modalities[0], sizeof A.modalities[0], "CR");
        snprintf(A.modalities[1], sizeof A.modalities[1], "DX");
        A.modality_count = 2;
    }
    A.enabled = rc == 0 && (!enable || json_is_true(enable));
    return rc;
}

static int modality_listed(const char *modality)
{
    for (int i = 0; i < A.modality_count; i++)
        if (strcasecmp(A.modalities[i], modality) == 0)
            return 1;
    return 0;
}

/* ------------------------------------------------------------------ the sequence number */

/* The highest seq below which everything is done: the oldest queued or in-flight item's
 * predecessor, else what was read. Under lock. */
static int64_t done_seq(void)
{
    int64_t low = A.read_seq;
    for (int i = 0; i < A.count; i++) {
        int64_t s = A.queue[(A.head + i) % QUEUE_CAP].seq - 1;
        if (s < low)
            low = s;
    }
    for (int i = 0; i < A.threads; i++)
        if (A.in_flight[i] >= 0 && A.in_flight[i] - 1 < low)
            low = A.in_flight[i] - 1;
    return low;
}

/* Persists done_seq when it moved. Called without the lock (Orthanc is called). */
static void persist(void)
{
    pthread_mutex_lock(&A.persist_lock);
    pthread_mutex_lock(&A.lock);
    int64_t seq = done_seq();
    int moved = seq > A.persisted;
    if (moved)
        A.persisted = seq;
    pthread_mutex_unlock(&A.lock);
    if (moved) {
        char text[32];
        snprintf(text, sizeof text, "%" PRId64, seq);
        OrthancPluginSetGlobalProperty(dho_context, DHO_PROPERTY_LAST_CHANGE, text);
    }
    pthread_mutex_unlock(&A.persist_lock);
}

static int64_t load_persisted(void)
{
    char *text = OrthancPluginGetGlobalProperty(dho_context, DHO_PROPERTY_LAST_CHANGE, "");
    int64_t seq = -1;
    if (text && *text)
        seq = strtoll(text, NULL, 10);
    if (text)
        OrthancPluginFreeString(dho_context, text);
    return seq;
}

/* The last change's seq now (what a first start takes as its beginning). */
static int64_t last_change(void)
{
    json_t *c = dho_get_json("/changes?last");
    int64_t last = json_integer_value(json_object_get(c, "Last"));
    json_decref(c);
    return last;
}

/* ------------------------------------------------------------------ the dispatcher */

/* Queues one series; waits for room. Returns 0, or -1 when stopping. */
static int enqueue(const char *series, int64_t seq)
{
    pthread_mutex_lock(&A.lock);
    while (A.count == QUEUE_CAP && !A.stopping)
        pthread_cond_wait(&A.room, &A.lock);
    int rc = -1;
    if (!A.stopping) {
        /* A series already waiting needs no second turn: the worker reads it as it is then. */
        int dup = 0;
        for (int i = 0; i < A.count; i++)
            dup |= strcmp(A.queue[(A.head + i) % QUEUE_CAP].series, series) == 0;
        if (!dup) {
            item *it = &A.queue[(A.head + A.count) % QUEUE_CAP];
            snprintf(it->series, sizeof it->series, "%s", series);
            it->seq = seq;
            A.count++;
            pthread_cond_signal(&A.wake);
        }
        rc = 0;
    }
    pthread_mutex_unlock(&A.lock);
    return rc;
}

/* Series announced by NewSeries before the start and not stable by then: their StableSeries
 * was lost with Orthanc's memory. */
typedef struct pending_series {
    char series[72];
    int64_t seq;
} pending_series;

static void forget(pending_series *p, size_t *n, const char *series)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(p[i].series, series) == 0) {
            p[i] = p[--*n];
            return;
        }
}

static int stopping(void)
{
    pthread_mutex_lock(&A.lock);
    int s = A.stopping;
    pthread_mutex_unlock(&A.lock);
    return s;
}

static void free_lost(pending_series **lost)
{
    free(*lost);
}

/* Reads the changes from the last persisted one until the plugin stops. */
static void dispatch(void *arg)
{
    (void)arg;
    int64_t seq = load_persisted();
    int64_t boundary = last_change();
    if (seq < 0) { /* first start: the archive as it is is not this plugin's business */
        seq = boundary;
        pthread_mutex_lock(&A.lock);
        A.read_seq = A.persisted = seq;
        pthread_mutex_unlock(&A.lock);
        char text[32];
        snprintf(text, sizeof text, "%" PRId64, seq);
        OrthancPluginSetGlobalProperty(dho_context, DHO_PROPERTY_LAST_CHANGE, text);
    } else {
        pthread_mutex_lock(&A.lock);
        A.read_seq = A.persisted = seq;
        pthread_mutex_unlock(&A.lock);
        dho_log_warning("auto-equalization catching up from change %" PRId64 " to %" PRId64, seq,
                        boundary);
    }
    __attribute__((cleanup(free_lost))) pending_series *lost = NULL;
    size_t lost_count = 0, lost_cap = 0;
    int catching_up = seq < boundary;
    while (1) {
        pthread_mutex_lock(&A.lock);
        int stop = A.stopping;
        pthread_mutex_unlock(&A.lock);
        if (stop)
            break;
        char uri[96];
        snprintf(uri, sizeof uri, "/changes?since=%" PRId64 "&limit=100", seq);
        json_t *page = dho_get_json(uri);
        const json_t *changes = json_object_get(page, "Changes");
        for (size_t i = 0; i < json_array_size(changes); i++) {
            const json_t *c = json_array_get(changes, i);
            const char *type = dho_json_str(c, "ChangeType"), *id = dho_json_str(c, "ID");
            int64_t s = json_integer_value(json_object_get(c, "Seq"));
            if (strcmp(type, "StableSeries") == 0) {
                forget(lost, &lost_count, id);
                if (enqueue(id, s) != 0)
                    break;
            } else if (catching_up && s <= boundary && strcmp(type, "NewSeries") == 0 &&
                       strlen(id) < sizeof lost->series) {
                if (lost_count == lost_cap) {
                    size_t cap = lost_cap ? 2 * lost_cap : 16;
                    pending_series *p = realloc(lost, cap * sizeof *p);
                    if (!p)
                        continue;
                    lost = p, lost_cap = cap;
                }
                snprintf(lost[lost_count].series, sizeof lost->series, "%s", id);
                lost[lost_count++].seq = s;
            }
            if (s > seq)
                seq = s;
            pthread_mutex_lock(&A.lock);
            A.read_seq = seq;
            pthread_mutex_unlock(&A.lock);
        }
        int done = !page || json_is_true(json_object_get(page, "Done")) ||
                   json_array_size(changes) == 0;
        json_decref(page);
        if (done && catching_up && seq >= boundary) {
            for (size_t i = 0; i < lost_count; i++)
                enqueue(lost[i].series, lost[i].seq);
            lost_count = 0;
            catching_up = 0;
        }
        persist();
        if (done) { /* wait for a notification, or poll again within a second */
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += 1;
            pthread_mutex_lock(&A.lock);
            while (!A.notified && !A.stopping &&
                   pthread_cond_timedwait(&A.changed, &A.lock, &until) != ETIMEDOUT)
                ;
            A.notified = 0;
            pthread_mutex_unlock(&A.lock);
        }
    }
}

/* dispatch() again from the persisted change, a second later, when an exception thrown inside
 * Orthanc left it (cpp_guard.h): the changes read since were not persisted, so none is lost. */
static void *dispatcher_main(void *arg)
{
    (void)arg;
    char why[512];
    while (dho_run_guarded(dispatch, NULL, why, sizeof why) != 0 && !stopping()) {
        dho_log_warning("auto-equalization: Orthanc failed inside one of its own calls while "
                        "its changes were read (%s); reading them again in a second",
                        why);
        sleep(1);
    }
    return NULL;
}

void dho_auto_notify(const char *series_id)
{
    (void)series_id; /* the dispatcher reads it, with its seq, from /changes */
    if (pthread_mutex_trylock(&A.lock) != 0) /* never block Orthanc's change thread */
        return; /* the dispatcher polls within a second anyway */
    A.notified = 1;
    pthread_cond_signal(&A.changed);
    pthread_mutex_unlock(&A.lock);
}

/* ------------------------------------------------------------------ the workers */

static void set_error(const char *fmt, const char *series, const char *reason)
{
    pthread_mutex_lock(&A.lock);
    snprintf(A.last_error, sizeof A.last_error, fmt, series, reason);
    pthread_mutex_unlock(&A.lock);
}

/* 1 when the series' first instance says dicomhist derived it. */
static int is_own_output(const json_t *series)
{
    const char *first = json_string_value(json_array_get(json_object_get(series, "Instances"), 0));
    if (!first || !dho_valid_id(first))
        return 0;
    char uri[160];
    snprintf(uri, sizeof uri, "/instances/%s/content/0008-2111", first);
    OrthancPluginMemoryBuffer buf = {0};
    if (OrthancPluginRestApiGet(dho_context, &buf, uri) != OrthancPluginErrorCode_Success)
        return 0; /* no DerivationDescription */
    size_t n = strlen(DHO_DERIVED_MARKER);
    int own = buf.size >= n && memcmp(buf.data, DHO_DERIVED_MARKER, n) == 0;
    OrthancPluginFreeMemoryBuffer(dho_context, &buf);
    return own;
}

typedef enum outcome { DONE, ALREADY, SKIPPED, FAILED, STOPPED } outcome;

/* The cleanup of process()'s derive when an exception from inside Orthanc leaves it: its claim
 * (a pointer to this stack frame in the claims list) and its buffers go with the frame. */
static void free_if_left(dho_derive **guard)
{
    if (*guard)
        dho_derive_free(*guard);
}

static outcome process(const char *series_id)
{
    char uri[96];
    snprintf(uri, sizeof uri, "/series/%s", series_id);
    json_t *series = dho_valid_id(series_id) ? dho_get_json(uri) : NULL;
    if (!series)
        return SKIPPED; /* deleted since */
    const char *modality = dho_json_str(json_object_get(series, "MainDicomTags"), "Modality");
    int wanted = modality_listed(modality) && !is_own_output(series);
    json_decref(series);
    if (!wanted)
        return SKIPPED;
    dho_derive d;
    memset(&d, 0, sizeof d);
    __attribute__((cleanup(free_if_left))) dho_derive *guard = &d;
    outcome result = DONE;
    if (dho_derive_open(&d, series_id, &A.params, A.gsps, A.key, 0) == 0) {
        int step;
        while ((step = dho_derive_step(&d)) > 0)
            if (stopping()) {
                result = STOPPED;
                break;
            }
        if (result != STOPPED && step < 0)
            result = FAILED;
        else if (result == DONE && d.already == d.stored)
            result = ALREADY;
    } else {
        result = FAILED;
    }
    if (result == FAILED) {
        set_error("series %.72s: %.900s", series_id, d.reason);
        dho_log_warning("auto-equalization of series %s failed: %s", series_id, d.reason);
    } else if (result == DONE) {
        dho_log_info("series %s equalized into %s", series_id, d.derived_id);
    }
    dho_derive_free(&d);
    guard = NULL;
    return result;
}

typedef struct process_call {
    const char *series;
    outcome result;
} process_call;

static void process_call_run(void *p)
{
    process_call *c = p;
    c->result = process(c->series);
}

/* process() on a thread with nothing above it to catch an exception thrown inside Orthanc: the
 * series counts as failed, with the reason, and the worker goes on (cpp_guard.h). */
static outcome process_guarded(const char *series_id)
{
    process_call call = {series_id, FAILED};
    char why[512];
    if (dho_run_guarded(process_call_run, &call, why, sizeof why) != 0) {
        set_error("series %.72s: Orthanc failed inside one of its own calls: %.800s", series_id,
                  why);
        dho_log_warning("auto-equalization of series %s failed: Orthanc failed inside one of "
                        "its own calls: %s",
                        series_id, why);
        return FAILED;
    }
    return call.result;
}

/* The first queued item whose series no other worker has in hand, or -1: two workers on one
 * series (its second burst arriving while the first is processed) could store a stale derived
 * instance over the fresh one. Under lock. */
static int next_item(void)
{
    for (int i = 0; i < A.count; i++) {
        const char *series = A.queue[(A.head + i) % QUEUE_CAP].series;
        int busy = 0;
        for (int w = 0; w < A.threads; w++)
            busy |= A.in_flight[w] >= 0 && strcmp(A.working_on[w], series) == 0;
        if (!busy)
            return i;
    }
    return -1;
}

static void *worker_main(void *arg)
{
    int self = (int)(intptr_t)arg;
    while (1) {
        pthread_mutex_lock(&A.lock);
        int k;
        while ((k = next_item()) < 0 && !A.stopping)
            pthread_cond_wait(&A.wake, &A.lock);
        if (A.stopping) {
            pthread_mutex_unlock(&A.lock);
            break;
        }
        /* Take item k out of the ring, keeping the others in order. */
        item it = A.queue[(A.head + k) % QUEUE_CAP];
        for (int i = k; i > 0; i--)
            A.queue[(A.head + i) % QUEUE_CAP] = A.queue[(A.head + i - 1) % QUEUE_CAP];
        A.head = (A.head + 1) % QUEUE_CAP;
        A.count--;
        A.in_flight[self] = it.seq;
        snprintf(A.working_on[self], sizeof A.working_on[self], "%s", it.series);
        pthread_cond_signal(&A.room);
        pthread_mutex_unlock(&A.lock);

        outcome o = process_guarded(it.series);

        pthread_mutex_lock(&A.lock);
        if (o != STOPPED)
            A.in_flight[self] = -1; /* a stopped one stays pending: redone after restart */
        pthread_cond_broadcast(&A.wake); /* an item held back for this series may go now */
        A.processed += o == DONE;
        A.already += o == ALREADY;
        A.skipped += o == SKIPPED;
        A.failed += o == FAILED;
        pthread_mutex_unlock(&A.lock);
        if (o == STOPPED)
            break;
        persist();
    }
    return NULL;
}

/* ------------------------------------------------------------------ start and stop */

void dho_auto_start(void)
{
    if (!A.enabled)
        return;
    pthread_mutex_lock(&A.lock);
    int already = A.running;
    if (!already) { /* a second OrthancStarted must not clear the running workers' state */
        A.running = 1;
        A.stopping = 0;
        for (int i = 0; i < MAX_THREADS; i++)
            A.in_flight[i] = -1;
    }
    pthread_mutex_unlock(&A.lock);
    if (already)
        return;
    for (int i = 0; i < A.threads; i++)
        if (pthread_create(&A.workers[i], NULL, worker_main, (void *)(intptr_t)i) != 0) {
            dho_log_warning("cannot start worker %d; running with %d", i, i);
            /* The workers started read A.threads under the lock (next_item), as /status does. */
            pthread_mutex_lock(&A.lock);
            A.threads = i;
            pthread_mutex_unlock(&A.lock);
            break;
        }
    if (A.threads == 0 || pthread_create(&A.dispatcher, NULL, dispatcher_main, NULL) != 0) {
        dho_log_warning("cannot start the auto-equalization threads; it is off");
        pthread_mutex_lock(&A.lock);
        A.stopping = 1;
        pthread_cond_broadcast(&A.wake);
        pthread_mutex_unlock(&A.lock);
        for (int i = 0; i < A.threads; i++)
            pthread_join(A.workers[i], NULL);
        pthread_mutex_lock(&A.lock); /* /status reads it under the lock from Orthanc's threads */
        A.running = 0;
        pthread_mutex_unlock(&A.lock);
        return;
    }
    dho_log_warning("auto-equalization of %d modalit%s with %d worker%s", A.modality_count,
                    A.modality_count == 1 ? "y" : "ies", A.threads, A.threads == 1 ? "" : "s");
}

void dho_auto_stop(void)
{
    pthread_mutex_lock(&A.lock);
    int running = A.running;
    A.stopping = 1;
    A.running = 0;
    pthread_cond_broadcast(&A.wake);
    pthread_cond_broadcast(&A.room);
    pthread_cond_broadcast(&A.changed);
    pthread_mutex_unlock(&A.lock);
    if (!running)
        return;
    pthread_join(A.dispatcher, NULL);
    for (int i = 0; i < A.threads; i++)
        pthread_join(A.workers[i], NULL);
    pthread_mutex_lock(&A.lock);
    A.count = 0; /* not done: the persisted sequence is still before them */
    pthread_mutex_unlock(&A.lock);
    dho_log_warning("auto-equalization stopped");
}

/* ------------------------------------------------------------------ /dicomhist/status */

OrthancPluginErrorCode dho_route_status(OrthancPluginRestOutput *out, const char *url,
                                        const OrthancPluginHttpRequest *request)
{
    (void)url;
    if (dho_wrong_method(out, request, OrthancPluginHttpMethod_Get))
        return OrthancPluginErrorCode_Success;
    json_t *s = json_object();
    json_object_set_new(s, "Version", json_string(dh_version_string()));
    json_object_set_new(s, "Device", json_string(dho_gate_device_name()));
    json_object_set_new(s, "CudaAvailable", json_boolean(dh_cuda_available()));
    json_object_set_new(s, "DeviceQueue", json_integer(dho_gate_waiting()));
    json_t *ae = json_object();
    json_t *mods = json_array();
    for (int i = 0; i < A.modality_count; i++)
        json_array_append_new(mods, json_string(A.modalities[i]));
    pthread_mutex_lock(&A.lock);
    int busy = 0; /* in_flight[] holds seqs only while the workers run (dho_auto_start sets it) */
    for (int i = 0; A.running && i < A.threads; i++)
        busy += A.in_flight[i] >= 0;
    json_object_set_new(ae, "Enabled", json_boolean(A.enabled));
    json_object_set_new(ae, "Running", json_boolean(A.running));
    json_object_set_new(ae, "Modalities", mods);
    json_object_set_new(ae, "Parameters", json_string(A.key));
    json_object_set_new(ae, "Threads", json_integer(A.threads));
    json_object_set_new(ae, "Queued", json_integer(A.count));
    json_object_set_new(ae, "InProgress", json_integer(busy));
    json_object_set_new(ae, "Processed", json_integer((json_int_t)A.processed));
    json_object_set_new(ae, "AlreadyStored", json_integer((json_int_t)A.already));
    json_object_set_new(ae, "Skipped", json_integer((json_int_t)A.skipped));
    json_object_set_new(ae, "Failed", json_integer((json_int_t)A.failed));
    json_object_set_new(ae, "LastChange", json_integer((json_int_t)A.persisted));
    json_object_set_new(ae, "LastError", A.last_error[0] ? json_string(A.last_error) : json_null());
    pthread_mutex_unlock(&A.lock);
    json_object_set_new(s, "AutoEqualize", ae);
    dho_answer_jansson(out, s);
    json_decref(s);
    return OrthancPluginErrorCode_Success;
}
