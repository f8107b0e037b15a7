// SPDX-License-Identifier: MIT
/*
 * equalize_internal.h: what the equalization files of the library share: how the slices of a
 * volume map back onto its source files (one derived file, or one set of PNG previews, per
 * source file and frame), and how those outputs are named.
 */
#ifndef DH_PLUGIN_EQUALIZE_INTERNAL_H
#define DH_PLUGIN_EQUALIZE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "dicomhist.h"

/* One source file of a volume: its frames and the volume slice that holds each. */
typedef struct dh_eq_source {
    const char *path; /* owned by the volume */
    uint32_t frames;
    uint32_t *slice_of_frame; /* frames entries */
} dh_eq_source;

/* Groups the volume's slices by source file, in the order of each file's first slice. Fails
 * (DH_ERR_MALFORMED) when a file's frames are not exactly 0..frames-1 once each. */
dh_status dh_eq_sources(dh_ctx *ctx, const dh_volume *v, dh_eq_source **out, size_t *count);
void dh_eq_sources_free(dh_eq_source *sources, size_t count);

/* What both writers (DICOM and PNG) start with: the volume's sources (dh_eq_sources) and their
 * output folder under dir, created with its missing parents (mode 0755): dir itself for one
 * source file or when params name each output, else dir/<name of the series' folder>. On
 * failure nothing is left to free. */
dh_status dh_eq_output_open(dh_ctx *ctx, const dh_volume *v, const char *dir,
                            const dh_derive_params *params, dh_eq_source **sources, size_t *count,
                            char **folder);

/* The output path of one source file: dir/<name from params->output_name> with its folders
 * created, or folder/<the source's name>; `suffix` replaces a ".dcm" ending when not NULL (PNG
 * names). Returns DH_OK with *out to free, or the failure (recorded on ctx). */
dh_status dh_eq_output_path(dh_ctx *ctx, const dh_derive_params *params, const char *dir,
                            const char *folder, const char *source, const char *suffix,
                            char **out);

/* The params a plain writer call means, and a check of the ones given (NULL: the defaults). */
dh_status dh_eq_derive_params(dh_ctx *ctx, const dh_derive_params *given, dh_derive_params *out);

/* Moves a complete temporary file to path as params->existing says: never replacing
 * (DH_EXISTING_FAIL, DH_EXISTING_KEEP) or replacing (DH_EXISTING_REPLACE). The temporary file is
 * gone afterwards either way; returns 0, or -1 with errno set (EEXIST: path exists). */
int dh_eq_publish(const char *tmp, const char *path, dh_existing existing);

/* A name-based UID (UUID version 5 under 2.25) from parts joined by NUL; returns 0, or -1 when
 * hashing failed. uid_name.c. */
int dh_uid_from_name(char uid[65], const char *const *parts, size_t count);

/* The last component of a path (a pointer into it). */
const char *dh_eq_basename(const char *path);

#endif /* DH_PLUGIN_EQUALIZE_INTERNAL_H */
