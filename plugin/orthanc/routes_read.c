/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * routes_read.c: info and histogram of an instance (read from its bytes with
 * dh_volume_read_memory) or of a series (its instances' bytes fetched into memory, then assembled
 * by dh_volume_set_load_memory: series_fetch.h),
 * answered with the command's records (report_records.h), `path` holding the Orthanc ID and a
 * slice's `source` its instance's ID.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "device_gate.h"
#include "options.h"
#include "orthanc_rest.h"
#include "report_records.h"
#include "routes.h"
#include "series_fetch.h"

int dho_wrong_method(OrthancPluginRestOutput *out, const OrthancPluginHttpRequest *request,
                     OrthancPluginHttpMethod method)
{
    if (request->method == method)
        return 0;
    OrthancPluginSendMethodNotAllowed(dho_context, out,
                                      method == OrthancPluginHttpMethod_Get ? "GET" : "POST");
    return 1;
}

typedef enum read_kind { READ_INFO, READ_HISTOGRAM } read_kind;

/* Writes the record of one volume and answers it; histogram failures are answered as errors. */
static OrthancPluginErrorCode answer_volume(OrthancPluginRestOutput *out, read_kind kind,
                                            dh_ctx *ctx, const dh_volume *v,
                                            const dh_hist_params *hp, const report_names *names,
                                            const char *what, const char *id)
{
    dh_histogram *h = NULL;
    if (kind == READ_HISTOGRAM) {
        int token = dho_gate_enter(hp->device);
        dh_status st = dh_hist_compute(ctx, v, hp, &h);
        dho_gate_leave(token);
        if (st != DH_OK)
            return dho_answer_error(out, dho_http_status(st), dh_status_name(st), what, id, "%s",
                                    dh_ctx_error(ctx));
    }
    dho_text t;
    if (dho_text_open(&t) != 0) {
        dh_histogram_free(h);
        return OrthancPluginErrorCode_NotEnoughMemory;
    }
    if (kind == READ_HISTOGRAM)
        report_histogram_record(&t.json, v, h, names);
    else
        report_info_record(&t.json, v, names);
    dh_histogram_free(h);
    if (dho_text_finish(&t) != 0) {
        dho_text_free(&t);
        return OrthancPluginErrorCode_NotEnoughMemory;
    }
    dho_answer_json(out, t.data, t.size);
    dho_text_free(&t);
    return OrthancPluginErrorCode_Success;
}

static OrthancPluginErrorCode read_instance(OrthancPluginRestOutput *out,
                                            const OrthancPluginHttpRequest *request,
                                            read_kind kind)
{
    if (dho_wrong_method(out, request, OrthancPluginHttpMethod_Get))
        return OrthancPluginErrorCode_Success;
    const char *id = request->groups[0];
    dh_hist_params hp;
    dho_bad_argument bad;
    if (kind == READ_HISTOGRAM && dho_parse_hist_query(request, &hp, &bad) != 0)
        return dho_answer_error(out, 400, "BadArgument", "Argument", bad.name, "%s: %s", bad.name,
                                bad.reason);
    dh_ctx *ctx = dh_ctx_create();
    if (!ctx)
        return dho_answer_error(out, 500, "DH_ERR_NO_MEMORY", "Instance", id, "out of memory");
    OrthancPluginErrorCode rc = OrthancPluginErrorCode_Success;
    dh_volume *v = dho_read_instance(out, ctx, id);
    if (v) {
        report_names names = {.path = id};
        rc = answer_volume(out, kind, ctx, v, &hp, &names, "Instance", id);
    }
    dh_volume_free(v);
    dh_ctx_free(ctx);
    return rc;
}

static OrthancPluginErrorCode read_series(OrthancPluginRestOutput *out,
                                          const OrthancPluginHttpRequest *request, read_kind kind)
{
    if (dho_wrong_method(out, request, OrthancPluginHttpMethod_Get))
        return OrthancPluginErrorCode_Success;
    const char *id = request->groups[0];
    dh_hist_params hp;
    dho_bad_argument bad;
    if (kind == READ_HISTOGRAM && dho_parse_hist_query(request, &hp, &bad) != 0)
        return dho_answer_error(out, 400, "BadArgument", "Argument", bad.name, "%s: %s", bad.name,
                                bad.reason);
    char msg[2048];
    dho_series st;
    int http = dho_series_open(&st, id, msg, sizeof msg);
    while (http == 0 && st.fetched < st.count)
        http = dho_series_fetch_next(&st, msg, sizeof msg);
    if (http != 0) {
        dho_series_free(&st);
        return dho_answer_error(out, http, http == 404 ? "UnknownResource" : "InternalError",
                                "Series", id, "%s: %s", id, msg);
    }
    dh_ctx *ctx = dh_ctx_create();
    OrthancPluginErrorCode rc;
    if (!ctx || dho_series_load(&st, ctx) != 0) {
        rc = dho_answer_error(out, 500, "InternalError", "Series", id, "%s",
                              ctx ? dh_ctx_error(ctx) : "out of memory");
    } else if (dh_volume_set_failure_count(st.set) > 0) {
        /* One broken instance fails the series: an answer for part of it would look whole. */
        const char *inst = dho_series_instance_of(dh_volume_set_failure_path(st.set, 0));
        dh_status why = dh_volume_set_failure_status(st.set, 0);
        rc = dho_answer_error(out, dho_http_status(why), dh_status_name(why), "Instance", inst,
                              "series %s: %s", id, dh_volume_set_failure_message(st.set, 0));
    } else if (dh_volume_set_count(st.set) != 1) {
        rc = dho_answer_error(out, 422, "DH_ERR_MISMATCH", "Series", id,
                              "%s: the series holds %zu volumes (multi-frame instances are "
                              "volumes of their own); ask for each instance", id,
                              dh_volume_set_count(st.set));
    } else {
        /* Warnings name instances as "<series ID>/<instance ID>", as the items were named. */
        report_names names = {.path = id, .source = dho_series_source_name, .arg = &st};
        rc = answer_volume(out, kind, ctx, dh_volume_set_volume(st.set, 0), &hp, &names,
                           "Series", id);
    }
    dh_ctx_free(ctx);
    dho_series_free(&st);
    return rc;
}

OrthancPluginErrorCode dho_route_instance_info(OrthancPluginRestOutput *out, const char *url,
                                               const OrthancPluginHttpRequest *request)
{
    (void)url;
    return read_instance(out, request, READ_INFO);
}

OrthancPluginErrorCode dho_route_instance_histogram(OrthancPluginRestOutput *out, const char *url,
                                                    const OrthancPluginHttpRequest *request)
{
    (void)url;
    return read_instance(out, request, READ_HISTOGRAM);
}

OrthancPluginErrorCode dho_route_series_info(OrthancPluginRestOutput *out, const char *url,
                                             const OrthancPluginHttpRequest *request)
{
    (void)url;
    return read_series(out, request, READ_INFO);
}

OrthancPluginErrorCode dho_route_series_histogram(OrthancPluginRestOutput *out, const char *url,
                                                  const OrthancPluginHttpRequest *request)
{
    (void)url;
    return read_series(out, request, READ_HISTOGRAM);
}
