/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * orthanc_rest.h: the plugin's few ways of talking to Orthanc: the context it was given, the
 * core's REST API called from inside (JSON parsed with jansson), an instance's DICOM bytes, and
 * answers to HTTP clients: JSON built with the hosts' shared writer (report_json.h), and errors
 * as JSON bodies that name the resource and the reason.
 */
#ifndef DH_ORTHANC_REST_H
#define DH_ORTHANC_REST_H

#include <jansson.h>
#include <orthanc/OrthancCPlugin.h>
#include <stdio.h>

#include "dicomhist.h"
#include "report_json.h"

/* Set once by OrthancPluginInitialize, read by every thread afterwards. */
extern OrthancPluginContext *dho_context;

/* GET uri on Orthanc's own REST API, parsed; NULL when the call fails (unknown resource) or the
 * answer is not JSON. Free with json_decref. */
json_t *dho_get_json(const char *uri);
/* POST body on Orthanc's REST API; the answer parsed (NULL on failure). */
json_t *dho_post_json(const char *uri, const void *body, size_t size);
/* The string member key of a JSON object, "" when absent. */
const char *dho_json_str(const json_t *obj, const char *key);

/* A JSON answer being written: the shared writer over an in-memory FILE. */
typedef struct dho_text {
    FILE *file;
    char *data;
    size_t size;
    report_sink *sink; /* 64 KiB buffer, kept off the stack of HTTP threads */
    report_json json;
} dho_text;

/* Returns 0, or -1 when out of memory. */
int dho_text_open(dho_text *t);
/* Flushes and closes the FILE: t->data holds t->size bytes (NUL-terminated). Returns 0, or -1. */
int dho_text_finish(dho_text *t);
void dho_text_free(dho_text *t);

/* Answers 200 with a JSON body. */
void dho_answer_json(OrthancPluginRestOutput *out, const char *body, size_t size);
/* Answers 200 with a jansson value (not consumed). */
void dho_answer_jansson(OrthancPluginRestOutput *out, const json_t *value);
/* Answers an error: HTTP status http with the JSON body {"HttpStatus", "Error" (the dh_status
 * name, or "BadArgument", "UnknownResource", ...), "<kind>": id when given, "Reason"}.
 * kind is "Instance", "Series", "Argument" or NULL. Returns OrthancPluginErrorCode_Success so a
 * route can `return dho_answer_error(...)`. */
OrthancPluginErrorCode dho_answer_error(OrthancPluginRestOutput *out, int http, const char *error,
                                        const char *kind, const char *id, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;
/* The HTTP status for a library failure: 400 bad arguments and no device, 415 unsupported
 * data, 422 malformed or mismatching data, 500 otherwise. */
int dho_http_status(dh_status status);

/* Logs through Orthanc (printf style). */
void dho_log_warning(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
void dho_log_info(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* 1 when id looks like an Orthanc identifier (hex digits and dashes, at most 64 characters):
 * ids go into URIs and file names, so anything else is refused first. */
int dho_valid_id(const char *id);

/* The query argument `key` of a GET request, NULL when absent. */
const char *dho_query(const OrthancPluginHttpRequest *request, const char *key);

#endif /* DH_ORTHANC_REST_H */
