/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * routes.h: the REST callbacks, one file per family, all registered without Orthanc's global
 * lock (each request has its own dh_ctx; the GPU is reached through device_gate.h).
 */
#ifndef DH_ORTHANC_ROUTES_H
#define DH_ORTHANC_ROUTES_H

#include <orthanc/OrthancCPlugin.h>

typedef OrthancPluginErrorCode (*dho_route)(OrthancPluginRestOutput *out, const char *url,
                                            const OrthancPluginHttpRequest *request);

/* routes_read.c: GET /instances/{id}/info, /series/{id}/info, .../histogram */
OrthancPluginErrorCode dho_route_instance_info(OrthancPluginRestOutput *, const char *,
                                               const OrthancPluginHttpRequest *);
OrthancPluginErrorCode dho_route_series_info(OrthancPluginRestOutput *, const char *,
                                             const OrthancPluginHttpRequest *);
OrthancPluginErrorCode dho_route_instance_histogram(OrthancPluginRestOutput *, const char *,
                                                    const OrthancPluginHttpRequest *);
OrthancPluginErrorCode dho_route_series_histogram(OrthancPluginRestOutput *, const char *,
                                                  const OrthancPluginHttpRequest *);
/* routes_derive.c: POST /series/{id}/equalize and /series/{id}/window */
OrthancPluginErrorCode dho_route_series_equalize(OrthancPluginRestOutput *, const char *,
                                                 const OrthancPluginHttpRequest *);
OrthancPluginErrorCode dho_route_series_window(OrthancPluginRestOutput *, const char *,
                                               const OrthancPluginHttpRequest *);
/* routes_mi.c: POST /tools/dicomhist/mutual-information */
OrthancPluginErrorCode dho_route_mutual_information(OrthancPluginRestOutput *, const char *,
                                                    const OrthancPluginHttpRequest *);
/* auto_equalize.c: GET /dicomhist/status */
OrthancPluginErrorCode dho_route_status(OrthancPluginRestOutput *, const char *,
                                        const OrthancPluginHttpRequest *);

/* Answers 405 unless the request uses `method`; returns 1 when it was answered. */
int dho_wrong_method(OrthancPluginRestOutput *out, const OrthancPluginHttpRequest *request,
                     OrthancPluginHttpMethod method);

#endif /* DH_ORTHANC_ROUTES_H */
