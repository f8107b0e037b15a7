/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * orthanc_rest.c: the REST helpers, answers and logging of orthanc_rest.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "orthanc_rest.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

OrthancPluginContext *dho_context;

static json_t *parse_buffer(OrthancPluginMemoryBuffer *buf)
{
    json_error_t err;
    json_t *v = json_loadb(buf->data, buf->size, 0, &err);
    OrthancPluginFreeMemoryBuffer(dho_context, buf);
    return v;
}

json_t *dho_get_json(const char *uri)
{
    OrthancPluginMemoryBuffer buf = {0};
    if (OrthancPluginRestApiGet(dho_context, &buf, uri) != OrthancPluginErrorCode_Success)
        return NULL;
    return parse_buffer(&buf);
}

json_t *dho_post_json(const char *uri, const void *body, size_t size)
{
    OrthancPluginMemoryBuffer buf = {0};
    if (size > UINT32_MAX ||
        OrthancPluginRestApiPost(dho_context, &buf, uri, body, (uint32_t)size) !=
            OrthancPluginErrorCode_Success)
        return NULL;
    return parse_buffer(&buf);
}

const char *dho_json_str(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : "";
}

int dho_text_open(dho_text *t)
{
    memset(t, 0, sizeof *t);
    t->sink = malloc(sizeof *t->sink);
    t->file = open_memstream(&t->data, &t->size);
    if (!t->sink || !t->file) {
        dho_text_free(t);
        return -1;
    }
    report_sink_init(t->sink, t->file);
    report_json_init(&t->json, t->sink);
    return 0;
}

int dho_text_finish(dho_text *t)
{
    int rc = report_sink_flush(t->sink);
    if (fclose(t->file) != 0)
        rc = -1;
    t->file = NULL;
    return rc;
}

void dho_text_free(dho_text *t)
{
    if (t->file)
        fclose(t->file);
    free(t->data);
    free(t->sink);
    memset(t, 0, sizeof *t);
}

void dho_answer_json(OrthancPluginRestOutput *out, const char *body, size_t size)
{
    OrthancPluginAnswerBuffer(dho_context, out, body, (uint32_t)size, "application/json");
}

void dho_answer_jansson(OrthancPluginRestOutput *out, const json_t *value)
{
    char *text = json_dumps(value, JSON_COMPACT);
    if (!text) {
        OrthancPluginSendHttpStatusCode(dho_context, out, 500);
        return;
    }
    dho_answer_json(out, text, strlen(text));
    free(text);
}

OrthancPluginErrorCode dho_answer_error(OrthancPluginRestOutput *out, int http, const char *error,
                                        const char *kind, const char *id, const char *fmt, ...)
{
    char reason[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    json_t *body = json_object();
    json_object_set_new(body, "HttpStatus", json_integer(http));
    json_object_set_new(body, "Error", json_string(error));
    if (kind && id)
        json_object_set_new(body, kind, json_string(id));
    /* Library messages are UTF-8 but may quote bytes of a broken file: keep the answer JSON. */
    json_t *r = json_string(reason);
    json_object_set_new(body, "Reason", r ? r : json_string("(reason not valid UTF-8)"));
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (text) {
        OrthancPluginSendHttpStatus(dho_context, out, (uint16_t)http, text, (uint32_t)strlen(text));
        free(text);
    } else {
        OrthancPluginSendHttpStatusCode(dho_context, out, (uint16_t)http);
    }
    return OrthancPluginErrorCode_Success;
}

int dho_http_status(dh_status status)
{
    switch (status) {
    case DH_ERR_INVALID_ARGUMENT:
    case DH_ERR_NO_DEVICE:
        return 400;
    case DH_ERR_UNSUPPORTED:
        return 415;
    case DH_ERR_MALFORMED:
    case DH_ERR_MISMATCH:
        return 422;
    default:
        return 500;
    }
}

static void log_with(void (*log)(OrthancPluginContext *, const char *), const char *fmt,
                     va_list ap)
{
    char text[2048];
    int n = snprintf(text, sizeof text, "dicomhist: ");
    vsnprintf(text + n, sizeof text - (size_t)n, fmt, ap);
    log(dho_context, text);
}

void dho_log_warning(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_with(OrthancPluginLogWarning, fmt, ap);
    va_end(ap);
}

void dho_log_info(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_with(OrthancPluginLogInfo, fmt, ap);
    va_end(ap);
}

int dho_valid_id(const char *id)
{
    size_t n = 0;
    for (; id[n]; n++)
        if (!((id[n] >= '0' && id[n] <= '9') || (id[n] >= 'a' && id[n] <= 'f') || id[n] == '-'))
            return 0;
    return n > 0 && n <= 64;
}

const char *dho_query(const OrthancPluginHttpRequest *request, const char *key)
{
    for (uint32_t i = 0; i < request->getCount; i++)
        if (strcmp(request->getKeys[i], key) == 0)
            return request->getValues[i];
    return NULL;
}
