/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plugin_main.c: the Orthanc plugin's entry points. Initialize reads the "DicomHist" section of
 * Orthanc's configuration and registers every route without the global lock, and the change
 * callback, which only hands events on (auto_equalize.h): it runs synchronously with Orthanc's
 * core, so it never does the work itself.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "auto_equalize.h"
#include "device_gate.h"
#include "options.h"
#include "orthanc_rest.h"
#include "routes.h"
#include "routes_views.h"

#define DHO_EXPORT __attribute__((visibility("default")))

static const struct {
    const char *regex;
    dho_route callback;
} routes[] = {
    {"/instances/([^/]+)/info", dho_route_instance_info},
    {"/series/([^/]+)/info", dho_route_series_info},
    {"/instances/([^/]+)/histogram", dho_route_instance_histogram},
    {"/series/([^/]+)/histogram", dho_route_series_histogram},
    {"/series/([^/]+)/equalize", dho_route_series_equalize},
    {"/series/([^/]+)/window", dho_route_series_window},
    {"/tools/dicomhist/mutual-information", dho_route_mutual_information},
    {"/dicomhist/status", dho_route_status},
    {"/series/([^/]+)/histogram\\.svg", dho_route_series_histogram_svg},
    {"/instances/([^/]+)/histogram\\.svg", dho_route_instance_histogram_svg},
    {"/instances/([^/]+)/preview\\.png", dho_route_instance_preview},
    {"/dicomhist/preview-modes", dho_route_preview_modes},
};

static OrthancPluginErrorCode on_change(OrthancPluginChangeType type,
                                        OrthancPluginResourceType resource, const char *id)
{
    (void)resource;
    switch (type) {
    case OrthancPluginChangeType_OrthancStarted:
        dho_auto_start();
        break;
    case OrthancPluginChangeType_OrthancStopped:
        dho_auto_stop();
        break;
    case OrthancPluginChangeType_StableSeries:
        dho_auto_notify(id);
        break;
    default:
        break;
    }
    return OrthancPluginErrorCode_Success;
}

/* Reads "DicomHist" from Orthanc's configuration (series are read in memory: no temporary
 * folder is used). Returns 0, or -1 after logging why (a configuration error stops Orthanc rather than run half configured). */
static int configure(void)
{
    char *text = OrthancPluginGetConfiguration(dho_context);
    json_error_t err;
    json_t *config = text ? json_loads(text, 0, &err) : NULL;
    if (text)
        OrthancPluginFreeString(dho_context, text);
    if (!config) {
        dho_log_warning("cannot read Orthanc's configuration");
        return -1;
    }
    const json_t *section = json_object_get(config, "DicomHist");
    int rc = 0;
    if (section && !json_is_object(section)) {
        OrthancPluginLogError(dho_context, "dicomhist: \"DicomHist\" must be a JSON object");
        rc = -1;
    }
    const char *device = json_string_value(json_object_get(section, "Device"));
    dh_device dev = DH_DEVICE_AUTO;
    if (rc == 0 && device && dho_parse_device(device, &dev) != 0) {
        OrthancPluginLogError(dho_context,
                              "dicomhist: \"DicomHist.Device\" must be auto, cpu or cuda");
        rc = -1;
    }
    dho_gate_set_default(dev);
    if (rc == 0)
        rc = dho_auto_configure(section);
    json_decref(config);
    return rc;
}

DHO_EXPORT int32_t OrthancPluginInitialize(OrthancPluginContext *context)
{
    dho_context = context;
    if (!OrthancPluginCheckVersion(context)) {
        OrthancPluginLogError(context, "dicomhist: this Orthanc is older than the SDK the plugin "
                                       "was built with (1.10.1)");
        return -1;
    }
    OrthancPluginSetDescription(context, "Histograms, equalization and mutual information of "
                                         "12/16-bit DICOM by dicomhist");
    if (configure() != 0)
        return -1;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        OrthancPluginRegisterRestCallbackNoLock(context, routes[i].regex, routes[i].callback);
    OrthancPluginRegisterOnChangeCallback(context, on_change);
    OrthancPluginExtendOrthancExplorer(context, dho_explorer_js); /* the page: explorer.js */
    dho_log_warning("version %s loaded (library %s, device %s)", DH_VERSION_STRING,
                    dh_version_string(), dho_gate_device_name());
    return 0;
}

DHO_EXPORT void OrthancPluginFinalize(void)
{
    dho_auto_stop(); /* already stopped on OrthancStopped; harmless twice */
}

DHO_EXPORT const char *OrthancPluginGetName(void) { return "dicomhist"; }

DHO_EXPORT const char *OrthancPluginGetVersion(void) { return dh_version_string(); }
