/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * routes_views.h: the routes a person looks at (routes_views.c): histogram plots as SVG and
 * previews as PNG, and the Orthanc Explorer page that shows them (explorer.js, built into the
 * plugin as dho_explorer_js by embed_text.cmake).
 */
#ifndef DH_ORTHANC_ROUTES_VIEWS_H
#define DH_ORTHANC_ROUTES_VIEWS_H

#include <orthanc/OrthancCPlugin.h>

/* GET /series/{id}/histogram.svg, /instances/{id}/histogram.svg */
OrthancPluginErrorCode dho_route_series_histogram_svg(OrthancPluginRestOutput *, const char *,
                                                      const OrthancPluginHttpRequest *);
OrthancPluginErrorCode dho_route_instance_histogram_svg(OrthancPluginRestOutput *, const char *,
                                                        const OrthancPluginHttpRequest *);
/* GET /instances/{id}/preview.png?mode=original|equalize|window|clahe&window=SPEC&frame=N */
OrthancPluginErrorCode dho_route_instance_preview(OrthancPluginRestOutput *, const char *,
                                                  const OrthancPluginHttpRequest *);
/* GET /dicomhist/preview-modes: the modes preview.png draws in this build, as a JSON list */
OrthancPluginErrorCode dho_route_preview_modes(OrthancPluginRestOutput *, const char *,
                                               const OrthancPluginHttpRequest *);

/* The Orthanc Explorer extension's JavaScript (explorer.js), NUL-terminated. */
extern const char dho_explorer_js[];

#endif /* DH_ORTHANC_ROUTES_VIEWS_H */
