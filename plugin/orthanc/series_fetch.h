/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * series_fetch.h: an Orthanc series as the library's memory items. The instances are listed,
 * their DICOM bytes asked of Orthanc one at a time (so that a job reports progress and can stop
 * between two) and kept in memory, then planned and loaded by dh_volume_set_load_memory: nothing
 * is written to disk and nothing is parsed twice by the plugin. Each item is named
 * "<series ID>/<instance ID>", so that every message of the library names the instance by its
 * Orthanc ID and the series' volume is named by the series ID. The bytes stay until
 * dho_series_release: the derived writers read the sources' tags from them.
 */
#ifndef DH_ORTHANC_SERIES_FETCH_H
#define DH_ORTHANC_SERIES_FETCH_H

#include <orthanc/OrthancCPlugin.h>
#include <stddef.h>

#include "dicomhist.h"

typedef struct dho_series {
    char *series_id;   /* the Orthanc series */
    char *study_id;    /* its parent study */
    char *modality;    /* Modality of the series, "" when absent */
    size_t count;      /* instances of the series */
    char **instances;  /* their Orthanc IDs, in Orthanc's order */
    char **sop_uids;   /* their SOPInstanceUIDs */
    char **names;      /* "<series ID>/<instance ID>", the items' names */
    OrthancPluginMemoryBuffer *bytes; /* each instance's DICOM file, once fetched */
    size_t fetched;    /* instances fetched so far */
    dh_volume_set *set;
} dho_series;

/* Lists the series' instances. Returns 0, or the HTTP status of the failure (404 unknown
 * series or no instance, 500) with the reason in msg. */
int dho_series_open(dho_series *s, const char *series_id, char *msg, size_t len);
/* Asks Orthanc for the next instance's bytes. Returns 0, or an HTTP status with msg. */
int dho_series_fetch_next(dho_series *s, char *msg, size_t len);
/* Once every instance is fetched: loads them as a volume set (s->set). Returns 0, or -1 when
 * nothing could be tried (the reason in the context). Failures of single instances are in the
 * set, named "<series ID>/<instance ID>". */
int dho_series_load(dho_series *s, dh_ctx *ctx);
/* Frees the volumes and the instances' bytes, keeping the listing: for work that is over while
 * its answer is still wanted (a finished job's Content, kept as long as Orthanc keeps it). */
void dho_series_release(dho_series *s);
void dho_series_free(dho_series *s);

/* Reads one instance from its bytes in Orthanc. Returns the volume, or NULL once it has answered
 * the error (404 for an unknown ID, the library's status and message otherwise) on out. */
dh_volume *dho_read_instance(OrthancPluginRestOutput *out, dh_ctx *ctx, const char *id);

/* The instance ID in an item's name (its last component). */
const char *dho_series_instance_of(const char *name);
/* The same with the signature of report_names.source. */
const char *dho_series_source_name(void *series, const char *name);

#endif /* DH_ORTHANC_SERIES_FETCH_H */
