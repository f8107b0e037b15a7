// SPDX-License-Identifier: MIT
/*
 * gsps_output.c: dh_equalized_write_gsps, one Grayscale Softcopy Presentation State per result:
 * the result's tables (one shared, or one per slice mapped back to its source file and frame)
 * handed to dh_dicom_gsps_write (dicom/) with UIDs chosen as the derived series' are, placed
 * where the derived series would go (derived_output.c), or into a buffer
 * (dh_equalized_encode_gsps).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "context.h"
#include "derived_output.h"
#include "dh_dicom_gsps.h"
#include "dh_dicom_write.h"
#include "uid_name.h"
#include "volume.h"

/* The presentation state's series and instance UIDs: the caller's, random, or named after the
 * source series and the derivation (never equal to the derived series' own). */
static dh_status gsps_uids(dh_ctx *ctx, const dh_volume *v, const dh_equalized *r,
                           const dh_derive_params *wp, const char *first_source,
                           char series[DH_DICOM_UID_LEN], char instance[DH_DICOM_UID_LEN])
{
    const char *named = v->series_uid[0] ? v->series_uid
                        : v->slice[0].sop_uid[0] ? v->slice[0].sop_uid
                                                 : first_source;
    const char *series_parts[] = {"presentation series", named, r->description};
    const char *instance_parts[] = {"presentation state", named, r->description};
    if (wp->series_uid)
        snprintf(series, DH_DICOM_UID_LEN, "%s", wp->series_uid);
    else if (wp->uids == DH_UIDS_DERIVED ? dh_uid_from_name(series, series_parts, 3) != 0
                                         : dh_dicom_uid_random(series) != DH_DICOM_OK)
        return dh_ctx_fail(ctx, DH_ERR_INTERNAL, "%s: cannot make a UID", v->path);
    if (wp->instance_uid) {
        instance[0] = '\0';
        if (wp->instance_uid(wp->user, first_source, instance) != 0)
            return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                               "%s: the caller gave no SOPInstanceUID for its presentation state",
                               first_source);
        instance[DH_DICOM_UID_LEN - 1] = '\0';
        if (!dh_dicom_uid_valid(instance))
            return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                               "%s: SOPInstanceUID \"%s\" given for its presentation state is "
                               "not a valid UID (1 to 64 digits and dots)", first_source,
                               instance);
    } else if (wp->uids == DH_UIDS_DERIVED ? dh_uid_from_name(instance, instance_parts, 3) != 0
                                           : dh_dicom_uid_random(instance) != DH_DICOM_OK) {
        return dh_ctx_fail(ctx, DH_ERR_INTERNAL, "%s: cannot make a UID", v->path);
    }
    return DH_OK;
}

/* The tables as the DICOM layer takes them: one for every image, or table t for slice t,
 * referencing the source file and frame (frame 0 for a single-frame file) that hold slice t. */
static dh_status gsps_tables(dh_ctx *ctx, const dh_volume *v, const dh_equalized *r,
                             const dh_derived_source *src, size_t count, dh_dicom_gsps_lut *luts,
                             uint32_t *ref_image, uint32_t *ref_frame)
{
    for (uint32_t t = 0; t < r->table_count; t++) {
        luts[t] = (dh_dicom_gsps_lut){
            .first_mapped = r->table_base,
            .entries = r->table_len,
            .bits = r->output_bits,
            .data = r->tables + (size_t)t * r->table_len,
            .ref_count = r->table_count > 1 ? 1 : 0,
            .ref_image = ref_image + t,
            .ref_frame = ref_frame + t,
        };
        ref_image[t] = UINT32_MAX;
    }
    if (r->table_count == 1)
        return DH_OK;
    for (size_t i = 0; i < count; i++)
        for (uint32_t f = 0; f < src[i].frames; f++) {
            uint32_t slice = src[i].slice_of_frame[f];
            ref_image[slice] = (uint32_t)i;
            ref_frame[slice] = src[i].frames > 1 ? f + 1 : 0;
        }
    for (uint32_t t = 0; t < r->table_count; t++)
        if (ref_image[t] == UINT32_MAX)
            return dh_ctx_fail(ctx, DH_ERR_MALFORMED, "%s: slice %u has no source file", v->path,
                               t);
    return DH_OK;
}

/* "dicomhist 1.2.3 histogram equalization, ..." without the program's name and version, which
 * the presentation state says as its Manufacturer: the rest fits its 64-character LO fields. */
static const char *without_program(const char *description)
{
    if (strncmp(description, "dicomhist ", 10) != 0)
        return description;
    const char *rest = strchr(description + 10, ' ');
    return rest ? rest + 1 : description;
}

/* Writes the state to path as wp->existing says (*kept when it is there already), or into s's
 * buffer when s holds buffers. */
static dh_status publish_gsps(dh_ctx *ctx, dh_dicom_gsps *req, const char *path,
                              const dh_derive_params *wp, dh_derived_series *s, int *kept)
{
    char msg[DH_DICOM_MSG_LEN];
    if (s->data) {
        void *data = NULL;
        req->output_path = path;
        req->out_data = &data;
        req->out_size = &s->sizes[0];
        dh_dicom_status done = dh_dicom_gsps_write(req, msg, sizeof msg);
        s->data[0] = data;
        *kept = 0;
        return done == DH_DICOM_OK ? DH_OK : dh_ctx_fail(ctx, (dh_status)done, "%s", msg);
    }
    dh_status st = dh_derived_existing(ctx, path, wp->existing, dh_dicom_gsps_is_instance,
                                       req->sop_instance_uid, kept);
    if (st != DH_OK || *kept)
        return st;
    req->output_path = path;
    req->replace = wp->existing == DH_EXISTING_REPLACE;
    dh_dicom_status written = dh_dicom_gsps_write(req, msg, sizeof msg);
    return written == DH_DICOM_OK ? DH_OK : dh_ctx_fail(ctx, (dh_status)written, "%s", msg);
}

static dh_status write_state(dh_ctx *ctx, const dh_volume *v, const dh_equalized *r,
                             const char *output_dir, const dh_derive_params *params,
                             dh_derived_series **out);

dh_status dh_equalized_write_gsps(dh_ctx *ctx, const dh_volume *v, const dh_equalized *r,
                                  const char *output_dir, const dh_derive_params *params,
                                  dh_derived_series **out)
{
    if (!ctx || !v || !r || !output_dir || !*output_dir || !out)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "dh_equalized_write_gsps: NULL argument");
    return write_state(ctx, v, r, output_dir, params, out);
}

dh_status dh_equalized_encode_gsps(dh_ctx *ctx, const dh_volume *v, const dh_equalized *r,
                                   const dh_derive_params *params, dh_derived_series **out)
{
    if (!ctx || !v || !r || !out)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "dh_equalized_encode_gsps: NULL argument");
    return write_state(ctx, v, r, NULL, params, out);
}

/* The state into output_dir, or into a buffer when output_dir is NULL. */
static dh_status write_state(dh_ctx *ctx, const dh_volume *v, const dh_equalized *r,
                             const char *output_dir, const dh_derive_params *params,
                             dh_derived_series **out)
{
    *out = NULL;
    dh_derive_params wp;
    dh_status st = dh_derived_request_check(ctx, v, r, params, "the presentation state's", &wp);
    if (st != DH_OK)
        return st;
    if (!r->tables && r->table_len == 0) /* CLAHE: a table per tile, blended per pixel */
        return dh_ctx_fail(ctx, DH_ERR_UNSUPPORTED,
                           "%s: adaptive equalization (CLAHE) has no single table per image for "
                           "a presentation state to hold; write a derived series instead",
                           v->path);
    if ((r->table_count != 1 && r->table_count != r->slices) || !r->tables || r->table_len == 0)
        return dh_ctx_fail(ctx, DH_ERR_MISMATCH, "%s: the result's tables do not fit the volume",
                           v->path);
    dh_derived_source *src = NULL;
    size_t count = 0;
    char *folder = NULL, *path = NULL;
    st = dh_derived_output_open(ctx, v, output_dir, &wp, &src, &count, &folder);
    if (st != DH_OK)
        return st;
    const char **images = calloc(count, sizeof *images);
    const void **image_data = calloc(count, sizeof *image_data);
    size_t *image_size = calloc(count, sizeof *image_size);
    dh_dicom_gsps_lut *luts = calloc(r->table_count, sizeof *luts);
    uint32_t *refs = calloc((size_t)r->table_count * 2, sizeof *refs);
    dh_derived_series *s = dh_derived_series_alloc(1, output_dir == NULL);
    if (!images || !image_data || !image_size || !luts || !refs || !s) {
        st = dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < count; i++) {
        images[i] = src[i].path;
        image_data[i] = src[i].bytes;
        image_size[i] = src[i].size;
    }
    char instance[DH_DICOM_UID_LEN];
    if ((st = gsps_uids(ctx, v, r, &wp, src[0].path, s->series_uid, instance)) != DH_OK ||
        (st = gsps_tables(ctx, v, r, src, count, luts, refs, refs + r->table_count)) != DH_OK ||
        (st = dh_derived_output_path(ctx, &wp, output_dir, folder, src[0].path, ".gsps.dcm",
                                     &path)) != DH_OK)
        goto done;
    const int windowed = strstr(r->description, "window/level") != NULL;
    dh_dicom_gsps req = {
        .images = images,
        .image_count = count,
        .image_data = image_data,
        .image_size = image_size,
        .luts = luts,
        .lut_count = r->table_count,
        .series_uid = s->series_uid,
        .sop_instance_uid = instance,
        .content_label = windowed ? "WINDOWED" : "EQUALIZED",
        .content_description = without_program(r->description),
        .lut_explanation = without_program(r->description),
        .has_created = wp.created >= 0,
        .created = wp.created,
    };
    int kept = 0;
    if ((st = publish_gsps(ctx, &req, path, &wp, s, &kept)) != DH_OK)
        goto done;
    s->files[0] = path;
    path = NULL;
    s->file_count = 1;
    if (!(s->sop_uids[0] = dh_strdup(instance)) || !(s->sources[0] = dh_strdup(src[0].path))) {
        if (!kept && output_dir)
            unlink(s->files[0]);
        st = dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "out of memory");
        goto done;
    }
    if (wp.written)
        for (size_t i = 0; i < count; i++)
            wp.written(wp.user, src[i].path, s->files[0]);
    *out = s;
    s = NULL;
    dh_ctx_clear(ctx);
done:
    free(path);
    free(images);
    free(image_data);
    free(image_size);
    free(luts);
    free(refs);
    free(folder);
    dh_derived_sources_free(src, count);
    dh_derived_series_free(s);
    return st;
}
