/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * routes_derive.c: POST /series/{id}/equalize and /series/{id}/window. Synchronous by default
 * (the steps of derive.h run in the HTTP thread); with "Asynchronous": true the same steps run
 * as an Orthanc job, one step per call of the job's step callback, with progress, and the
 * answer is {"ID", "Path": "/jobs/ID"}; the job's Content holds the result once done. With
 * "Output": "gsps" the result is one presentation state in a series of its own instead of a
 * derived series.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "derive.h"
#include "options.h"
#include "orthanc_rest.h"
#include "routes.h"

/* ------------------------------------------------------------------ the job */

typedef struct derive_job {
    dho_derive derive;
    char series_id[72];
    dh_equalize_params params;
    int gsps;
    char key[512];
    char *content; /* getContent's string: kept until the next call or the end */
} derive_job;

static void job_finalize(void *p)
{
    derive_job *job = p;
    dho_derive_free(&job->derive);
    free(job->content);
    free(job);
}

static float job_progress(void *p) { return dho_derive_progress(&((derive_job *)p)->derive); }

static const char *job_content(void *p)
{
    derive_job *job = p;
    json_t *a = dho_derive_answer(&job->derive);
    json_object_set_new(a, "Source", json_string(job->series_id));
    free(job->content);
    job->content = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    return job->content ? job->content : "{}";
}

/* Not serialized: a job interrupted by a restart is not resumed (auto-equalization catches up
 * on its own; a client resubmits, and the same UIDs make the repeat harmless). */
static const char *job_serialized(void *p)
{
    (void)p;
    return NULL;
}

/* The cleanup of a job step's guard: a step left by an exception from inside Orthanc gives up
 * its claim at once (the job itself is freed only when Orthanc drops it from its history). */
static void lose_if_left(dho_derive **guard)
{
    if (*guard)
        dho_derive_lost(*guard);
}

static OrthancPluginJobStepStatus job_step(void *p)
{
    derive_job *job = p;
    __attribute__((cleanup(lose_if_left))) dho_derive *guard = &job->derive;
    int rc = dho_derive_step(&job->derive);
    guard = NULL;
    if (rc > 0)
        return OrthancPluginJobStepStatus_Continue;
    if (rc < 0)
        dho_log_warning("job on series %s failed: %s", job->series_id, job->derive.reason);
    return rc == 0 ? OrthancPluginJobStepStatus_Success : OrthancPluginJobStepStatus_Failure;
}

/* Steps are short (one instance), so there is nothing to interrupt; a job that will take no
 * further step leaves no partial derived series and lets other derives of the same result go
 * on (a paused one keeps its claim). */
static OrthancPluginErrorCode job_stop(void *p, OrthancPluginJobStopReason reason)
{
    if (reason != OrthancPluginJobStopReason_Paused)
        dho_derive_abandon(&((derive_job *)p)->derive);
    return OrthancPluginErrorCode_Success;
}

/* A resubmitted job starts over from the series as it is now. */
static OrthancPluginErrorCode job_reset(void *p)
{
    derive_job *job = p;
    dho_derive_free(&job->derive);
    dho_derive_open(&job->derive, job->series_id, &job->params, job->gsps, job->key, 1);
    return OrthancPluginErrorCode_Success;
}

/* ------------------------------------------------------------------ the routes */

/* The cleanup of a synchronous derive's guard: finalizes the job when the route is left by an
 * exception unwinding from inside Orthanc (CMakeLists.txt: -fexceptions), so that its claim and
 * memory go; NULL once the route has finalized it itself. */
static void finalize_if_left(derive_job **guard)
{
    if (*guard)
        job_finalize(*guard);
}

static OrthancPluginErrorCode answer_derive_failure(OrthancPluginRestOutput *out,
                                                    const dho_derive *d)
{
    return dho_answer_error(out, d->http, d->error, d->kind, d->id, "%s", d->reason);
}

static OrthancPluginErrorCode derive_route(OrthancPluginRestOutput *out,
                                           const OrthancPluginHttpRequest *request,
                                           dh_eq_operation op)
{
    if (dho_wrong_method(out, request, OrthancPluginHttpMethod_Post))
        return OrthancPluginErrorCode_Success;
    const char *id = request->groups[0];
    json_t *body = NULL;
    if (request->bodySize > 0) {
        json_error_t err;
        body = json_loadb(request->body, request->bodySize, 0, &err);
        if (!body)
            return dho_answer_error(out, 400, "BadArgument", "Argument", "body",
                                    "the body is not JSON: %s", err.text);
    }
    dh_equalize_params params;
    dho_bad_argument bad;
    char key[512];
    int async = 0, gsps = 0;
    int rc = dho_parse_derive_body(body, op, &params, &async, &gsps, key, sizeof key, &bad);
    json_decref(body);
    if (rc != 0)
        return dho_answer_error(out, 400, "BadArgument", "Argument", bad.name, "%s: %s", bad.name,
                                bad.reason);
    if (params.device == DH_DEVICE_CUDA && !dh_cuda_available())
        return dho_answer_error(out, 400, "DH_ERR_NO_DEVICE", "Argument", "Device",
                                "Device: cuda asked for, but no usable CUDA GPU");

    derive_job *job = calloc(1, sizeof *job);
    if (!job)
        return OrthancPluginErrorCode_NotEnoughMemory;
    snprintf(job->series_id, sizeof job->series_id, "%s", id);
    job->params = params;
    job->gsps = gsps;
    snprintf(job->key, sizeof job->key, "%s", key);
    if (dho_derive_open(&job->derive, id, &params, gsps, key, async) != 0) {
        OrthancPluginErrorCode e = answer_derive_failure(out, &job->derive);
        job_finalize(job);
        return e;
    }
    if (!async) {
        __attribute__((cleanup(finalize_if_left))) derive_job *guard = job;
        int step;
        while ((step = dho_derive_step(&job->derive)) > 0)
            ;
        OrthancPluginErrorCode e;
        if (step < 0) {
            e = answer_derive_failure(out, &job->derive);
        } else {
            json_t *a = dho_derive_answer(&job->derive);
            dho_answer_jansson(out, a);
            json_decref(a);
            e = OrthancPluginErrorCode_Success;
        }
        guard = NULL;
        job_finalize(job);
        return e;
    }
    OrthancPluginJob *handle = OrthancPluginCreateJob(
        dho_context, job, job_finalize, op == DH_EQ_EQUALIZE ? "DicomHistEqualize" : "DicomHistWindow",
        job_progress, job_content, job_serialized, job_step, job_stop, job_reset);
    if (!handle) {
        job_finalize(job);
        return OrthancPluginErrorCode_InternalError;
    }
    char *job_id = OrthancPluginSubmitJob(dho_context, handle, 0);
    if (!job_id) /* the engine owns the job once submitted, even when refusing it */
        return OrthancPluginErrorCode_InternalError;
    json_t *a = json_object();
    char path[128];
    snprintf(path, sizeof path, "/jobs/%s", job_id);
    json_object_set_new(a, "ID", json_string(job_id));
    json_object_set_new(a, "Path", json_string(path));
    OrthancPluginFreeString(dho_context, job_id);
    dho_answer_jansson(out, a);
    json_decref(a);
    return OrthancPluginErrorCode_Success;
}

OrthancPluginErrorCode dho_route_series_equalize(OrthancPluginRestOutput *out, const char *url,
                                                 const OrthancPluginHttpRequest *request)
{
    (void)url;
    return derive_route(out, request, DH_EQ_EQUALIZE);
}

OrthancPluginErrorCode dho_route_series_window(OrthancPluginRestOutput *out, const char *url,
                                               const OrthancPluginHttpRequest *request)
{
    (void)url;
    return derive_route(out, request, DH_EQ_WINDOW_LEVEL);
}
