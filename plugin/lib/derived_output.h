// SPDX-License-Identifier: MIT
/*
 * derived_output.h: what the writers of derived images (derived_dicom.c, png_preview.c) share,
 * from derived_output.c: how the slices of a volume map back onto its source files (one derived
 * file, or one set of PNG previews, per source file and frame), where those outputs go and how
 * they are named and published.
 */
#ifndef DH_PLUGIN_DERIVED_OUTPUT_H
#define DH_PLUGIN_DERIVED_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

#include "dicomhist.h"

/* One source file of a volume: its frames and the volume slice that holds each. */
typedef struct dh_derived_source {
    const char *path; /* owned by the volume */
    const void *bytes; /* the source held in memory (borrowed), or NULL: read path */
    size_t size;
    uint32_t frames;
    uint32_t *slice_of_frame; /* frames entries */
} dh_derived_source;

/* Groups the volume's slices by source file, in the order of each file's first slice. Fails
 * (DH_ERR_MALFORMED) when a file's frames are not exactly 0..frames-1 once each. */
dh_status dh_derived_sources(dh_ctx *ctx, const dh_volume *v, dh_derived_source **out,
                             size_t *count);
void dh_derived_sources_free(dh_derived_source *sources, size_t count);

/* What both writers (DICOM and PNG) start with: the volume's sources (dh_derived_sources) and
 * their output folder under dir, created with its missing parents (mode 0755): dir itself for one
 * source file or when params name each output, else dir/<name of the series' folder>. dir NULL:
 * output to memory, the folder "." and nothing created. On failure nothing is left to free. */
dh_status dh_derived_output_open(dh_ctx *ctx, const dh_volume *v, const char *dir,
                                 const dh_derive_params *params, dh_derived_source **sources,
                                 size_t *count, char **folder);

/* The output path of one source file: dir/<name from params->output_name> with its folders
 * created, or folder/<the source's name>; `suffix` replaces a ".dcm" ending when not NULL (PNG
 * names). dir NULL (output to memory): the same name relative to the output folder, nothing
 * created. Returns DH_OK with *out to free, or the failure (recorded on ctx). */
dh_status dh_derived_output_path(dh_ctx *ctx, const dh_derive_params *params, const char *dir,
                                 const char *folder, const char *source, const char *suffix,
                                 char **out);

/* The params a plain writer call means, and a check of the ones given (NULL: the defaults). */
dh_status dh_derived_params_check(dh_ctx *ctx, const dh_derive_params *given,
                                  dh_derive_params *out);

/* Moves a complete temporary file to path as params->existing says: never replacing
 * (DH_EXISTING_FAIL, DH_EXISTING_KEEP) or replacing (DH_EXISTING_REPLACE). The temporary file is
 * gone afterwards either way; returns 0, or -1 with errno set (EEXIST: path exists). */
int dh_derived_publish(const char *tmp, const char *path, dh_existing existing);

/* What every writer of one result checks first: the params (dh_derived_params_check, into *wp),
 * a caller's SeriesInstanceUID (`what` names the series in the message) and that the result has
 * the volume's geometry. DH_OK, or the failure recorded on ctx. */
dh_status dh_derived_request_check(dh_ctx *ctx, const dh_volume *v, const dh_equalized *r,
                                   const dh_derive_params *params, const char *what,
                                   dh_derive_params *wp);

/* Before writing path: DH_OK with *kept 0 when it may be written (absent, or DH_EXISTING_REPLACE),
 * DH_OK with *kept 1 when DH_EXISTING_KEEP finds it is this very output already (is_same(path,
 * uid) non-zero), else the failure "already exists (not replaced)" (DH_ERR_IO, on ctx). */
dh_status dh_derived_existing(dh_ctx *ctx, const char *path, dh_existing existing,
                              int (*is_same)(const char *path, const char *uid), const char *uid,
                              int *kept);

/* A result list for count outputs, with room for their bytes when in_memory; NULL when out of
 * memory. */
dh_derived_series *dh_derived_series_alloc(size_t count, int in_memory);

/* The last component of a path (a pointer into it). */
const char *dh_path_basename(const char *path);

#endif /* DH_PLUGIN_DERIVED_OUTPUT_H */
