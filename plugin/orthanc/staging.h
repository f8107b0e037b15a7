/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * staging.h: an Orthanc series as files dicomhist's reader can assemble. The library builds a
 * series from files (dh_volume_set_load: grouping, ordering along the normal, one slice decoded
 * at a time) and derives new files from source files, so the instances' DICOM bytes are copied
 * one at a time into a private folder named after nothing but their Orthanc IDs, and read from
 * there by the library; Orthanc's own decoder is never used. The folder is removed by
 * dho_stage_remove_files or dho_stage_free whatever happened.
 */
#ifndef DH_ORTHANC_STAGING_H
#define DH_ORTHANC_STAGING_H

#include <stddef.h>

#include "dicomhist.h"

typedef struct dho_stage {
    char *dir;         /* the private folder; its files are named by Orthanc instance ID */
    char *series_id;   /* the Orthanc series */
    char *study_id;    /* its parent study */
    char *modality;    /* Modality of the series, "" when absent */
    size_t count;      /* instances of the series */
    char **instances;  /* their Orthanc IDs, in Orthanc's order */
    char **sop_uids;   /* their SOPInstanceUIDs */
    size_t staged;     /* instances copied so far */
    dh_volume_set *set;
} dho_stage;

/* Where staging folders are made (Orthanc's TemporaryDirectory, else TMPDIR, else /tmp); set
 * once at start. */
void dho_stage_set_root(const char *root);

/* Lists the series' instances (the folder is made by the first dho_stage_next). Returns 0, or
 * the HTTP status of the failure (404 unknown series, 500) with the reason in msg. */
int dho_stage_open(dho_stage *st, const char *series_id, char *msg, size_t len);
/* Copies the next instance's bytes into the folder. Returns 0, or an HTTP status with msg. */
int dho_stage_next(dho_stage *st, char *msg, size_t len);
/* Once every instance is staged: loads them as a volume set (st->set). Returns 0, or -1 when
 * nothing could be tried (the reason in the context). Failures of single instances are in the
 * set. */
int dho_stage_load(dho_stage *st, dh_ctx *ctx);
/* Frees the loaded volumes and removes the folder, keeping the listing: for work that is over
 * while its answer is still wanted (a finished job's Content, kept as long as Orthanc keeps
 * the job). */
void dho_stage_remove_files(dho_stage *st);
void dho_stage_free(dho_stage *st);

/* The Orthanc instance ID a staged file stands for (report_names.source). */
const char *dho_stage_source_name(void *stage, const char *file);
/* A library message with the folder left out, so it names instances by their Orthanc IDs (and
 * the folder itself as the series). Takes const void * to serve as report_names.warning. */
void dho_stage_message(const void *stage, const char *message, char *out, size_t len);
/* The same with the signature of report_names.warning. */
void dho_stage_warning(void *stage, const char *warning, char *out, size_t len);
/* The instance ID behind a staged path (its last component). */
const char *dho_stage_instance_of(const char *path);

#endif /* DH_ORTHANC_STAGING_H */
