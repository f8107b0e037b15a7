/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * options.h: the routes' arguments read into the library's parameter structs: histogram query
 * arguments (bins, range, units, per-slice, device) and the JSON bodies of equalize, window
 * and mutual-information in Orthanc's style (Mode, Window, WindowRange, ClipLimit, Bits,
 * Function, Device, ...), with the same bounds and texts as the command's options
 * (text_values.h). Auto-equalization reads its configuration through the same parser.
 */
#ifndef DH_ORTHANC_OPTIONS_H
#define DH_ORTHANC_OPTIONS_H

#include <jansson.h>
#include <orthanc/OrthancCPlugin.h>
#include <stddef.h>

#include "dicomhist.h"

/* Why an argument was refused: its name and the reason, for a 400 answer. */
typedef struct dho_bad_argument {
    char name[64];
    char reason[256];
} dho_bad_argument;

/* "auto", "cpu" or "cuda" (any case); returns 0, or -1. */
int dho_parse_device(const char *text, dh_device *out);

/* Query arguments of GET .../histogram. Returns 0, or -1 with *bad filled. */
int dho_parse_hist_query(const OrthancPluginHttpRequest *request, dh_hist_params *p,
                         dho_bad_argument *bad);

/* The body of POST .../equalize (op DH_EQ_EQUALIZE) or .../window (DH_EQ_WINDOW_LEVEL), NULL
 * meaning {}. Fills p (device left at the plugin's default unless "Device" is given), *async
 * from "Asynchronous", *gsps from "Output" ("series", the default: a derived series; "gsps": a
 * presentation state instead), and key (a canonical text of the parameters that change the
 * result, the output kind among them, used to derive the output UIDs: the same parameters give
 * the same UIDs). Unknown members are
 * refused, so a misspelt option is never silently ignored. Returns 0, or -1 with *bad. */
int dho_parse_derive_body(const json_t *body, dh_eq_operation op, dh_equalize_params *p,
                          int *async, int *gsps, char *key, size_t key_len,
                          dho_bad_argument *bad);

/* The body of POST /tools/dicomhist/mutual-information: Fixed (an instance ID), Moving (a list
 * of them), Bins (B or [BF, BM]), RangeFixed / RangeMoving ("LO:HI", whole stored values),
 * Log2, Device. *fixed and *moving point into body. Returns 0, or -1 with *bad. */
int dho_parse_mi_body(const json_t *body, dh_mi_params *p, const char **fixed,
                      const json_t **moving, dho_bad_argument *bad);

#endif /* DH_ORTHANC_OPTIONS_H */
