/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * routes_mi.c: POST /tools/dicomhist/mutual-information, the command's `mi` over Orthanc
 * instances: the fixed instance prepared once, each moving one scored against it, answered as a
 * JSON array of `mi --json` records with `fixed` and `moving` holding the instance IDs. Any
 * instance that cannot be read or differs in shape fails the request, naming it.
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

static int same_shape(const dh_volume *a, const dh_volume *b)
{
    return dh_volume_rows(a) == dh_volume_rows(b) && dh_volume_columns(a) == dh_volume_columns(b) &&
           dh_volume_slices(a) == dh_volume_slices(b);
}

/* Scores every moving instance into the open array of t; returns 0, or -1 once answered. */
static int score_all(OrthancPluginRestOutput *out, dh_ctx *ctx, const char *fixed_id,
                     const dh_volume *fixed, dh_mi_fixed *prepared, const dh_mi_params *p,
                     const json_t *moving, dho_text *t)
{
    dh_mi_fixed_info info;
    dh_mi_fixed_get_info(prepared, &info);
    for (size_t i = 0; i < json_array_size(moving); i++) {
        const char *id = json_string_value(json_array_get(moving, i));
        dh_volume *v = dho_read_instance(out, ctx, id);
        if (!v)
            return -1;
        dh_mi_scores s;
        if (!same_shape(fixed, v)) {
            dho_answer_error(out, 422, "DH_ERR_MISMATCH", "Instance", id,
                             "%s: shape %ux%ux%u differs from the fixed image's %ux%ux%u (%s)",
                             id, (unsigned)dh_volume_columns(v), (unsigned)dh_volume_rows(v),
                             (unsigned)dh_volume_slices(v), (unsigned)dh_volume_columns(fixed),
                             (unsigned)dh_volume_rows(fixed), (unsigned)dh_volume_slices(fixed),
                             fixed_id);
            dh_volume_free(v);
            return -1;
        }
        int token = dho_gate_enter(info.device);
        dh_status st = dh_mi_evaluate(ctx, prepared, dh_volume_data(v), dh_volume_is_signed(v),
                                      dh_volume_sample_count(v), 1, NULL, 0, &s);
        dho_gate_leave(token);
        dh_volume_free(v);
        if (st != DH_OK) {
            dho_answer_error(out, dho_http_status(st), dh_status_name(st), "Instance", id, "%s",
                             dh_ctx_error(ctx));
            return -1;
        }
        report_mi_record(&t->json, fixed_id, id, &info, p->log2, &s);
    }
    return 0;
}

OrthancPluginErrorCode dho_route_mutual_information(OrthancPluginRestOutput *out, const char *url,
                                                    const OrthancPluginHttpRequest *request)
{
    (void)url;
    if (dho_wrong_method(out, request, OrthancPluginHttpMethod_Post))
        return OrthancPluginErrorCode_Success;
    json_error_t err;
    json_t *body = json_loadb(request->body, request->bodySize, 0, &err);
    if (!body)
        return dho_answer_error(out, 400, "BadArgument", "Argument", "body",
                                "the body is not JSON: %s", err.text);
    dh_mi_params p;
    dho_bad_argument bad;
    const char *fixed_id = NULL;
    const json_t *moving = NULL;
    if (dho_parse_mi_body(body, &p, &fixed_id, &moving, &bad) != 0) {
        json_decref(body);
        return dho_answer_error(out, 400, "BadArgument", "Argument", bad.name, "%s: %s", bad.name,
                                bad.reason);
    }
    dh_ctx *ctx = dh_ctx_create();
    dh_volume *fixed = ctx ? dho_read_instance(out, ctx, fixed_id) : NULL;
    dh_mi_fixed *prepared = NULL;
    dho_text t = {0};
    OrthancPluginErrorCode rc = OrthancPluginErrorCode_Success;
    if (!ctx) {
        rc = OrthancPluginErrorCode_NotEnoughMemory;
    } else if (fixed) {
        int token = dho_gate_enter(p.device);
        dh_status st = dh_mi_fixed_create(ctx, dh_volume_data(fixed), dh_volume_is_signed(fixed),
                                          dh_volume_sample_count(fixed), NULL, &p, &prepared);
        dho_gate_leave(token);
        if (st != DH_OK) {
            dho_answer_error(out, dho_http_status(st), dh_status_name(st), "Instance", fixed_id,
                             "%s", dh_ctx_error(ctx));
        } else if (dho_text_open(&t) != 0) {
            rc = OrthancPluginErrorCode_NotEnoughMemory;
        } else {
            report_json_begin_array(&t.json);
            if (score_all(out, ctx, fixed_id, fixed, prepared, &p, moving, &t) == 0) {
                report_json_end_array(&t.json);
                if (dho_text_finish(&t) == 0)
                    dho_answer_json(out, t.data, t.size);
                else
                    rc = OrthancPluginErrorCode_NotEnoughMemory;
            }
        }
    }
    dho_text_free(&t);
    dh_mi_fixed_free(prepared);
    dh_volume_free(fixed);
    dh_ctx_free(ctx);
    json_decref(body);
    return rc;
}
