/*
 * equalize_write.c: dh_equalized_write_dicom, one derived series per call: a SeriesInstanceUID
 * for the series, a SOPInstanceUID per file, the frames of each source file gathered back out of
 * the volume's slice order, and dh_dicom_derive_write (dicom/) for each file. Files already
 * written are removed when a later one fails, so a series is written whole or not at all.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "context.h"
#include "dh_dicom_derive.h"
#include "dh_dicom_write.h"
#include "equalize_internal.h"
#include "volume.h"

void dh_derived_series_free(dh_derived_series *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->file_count; i++) {
        free(s->files[i]);
        free(s->sop_uids[i]);
        free(s->sources[i]);
    }
    free(s->files);
    free(s->sop_uids);
    free(s->sources);
    free(s);
}

/* 1 when path names the same file as one of the volume's sources. */
static int is_input(const char *path, const dh_eq_source *sources, size_t count)
{
    struct stat out_st, in_st;
    if (stat(path, &out_st) != 0)
        return 0;
    for (size_t i = 0; i < count; i++)
        if (stat(sources[i].path, &in_st) == 0 && in_st.st_dev == out_st.st_dev &&
            in_st.st_ino == out_st.st_ino)
            return 1;
    return 0;
}

void dh_derive_params_init(dh_derive_params *p)
{
    if (!p)
        return;
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
}

/* The SOPInstanceUID of the file derived from source: the caller's, checked, or a random one. */
static dh_status instance_uid(dh_ctx *ctx, const dh_derive_params *p, const char *source,
                              char uid[DH_DICOM_UID_LEN])
{
    if (!p->instance_uid)
        return dh_dicom_uid_random(uid) == DH_OK
                   ? DH_OK
                   : dh_ctx_fail(ctx, DH_ERR_INTERNAL, "no random source for UIDs");
    uid[0] = '\0';
    if (p->instance_uid(p->user, source, uid) != 0)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "%s: the caller gave no SOPInstanceUID for its derived file", source);
    uid[DH_DICOM_UID_LEN - 1] = '\0';
    if (!dh_dicom_uid_valid(uid))
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "%s: SOPInstanceUID \"%s\" given for its derived file is not a valid "
                           "UID (1 to 64 digits and dots)", source, uid);
    return DH_OK;
}

dh_status dh_equalized_write_dicom(dh_ctx *ctx, const dh_volume *v, const dh_equalized *r,
                                   const char *output_dir, dh_derived_series **out)
{
    return dh_equalized_write_dicom_with(ctx, v, r, output_dir, NULL, out);
}

dh_status dh_equalized_write_dicom_with(dh_ctx *ctx, const dh_volume *v, const dh_equalized *r,
                                        const char *output_dir, const dh_derive_params *params,
                                        dh_derived_series **out)
{
    if (!ctx || !v || !r || !output_dir || !*output_dir || !out)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "dh_equalized_write_dicom: NULL argument");
    *out = NULL;
    dh_derive_params defaults;
    dh_derive_params_init(&defaults);
    if (!params)
        params = &defaults;
    if (params->struct_size != sizeof *params)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "dh_equalized_write_dicom: dh_derive_params.struct_size is %u, not %zu "
                           "(use dh_derive_params_init)", (unsigned)params->struct_size,
                           sizeof *params);
    if (params->series_uid && !dh_dicom_uid_valid(params->series_uid))
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "%s: the derived SeriesInstanceUID \"%.80s\" is not a valid UID (1 to "
                           "64 digits and dots)", v->path, params->series_uid);
    if (r->rows != v->rows || r->columns != v->columns || r->slices != v->slices)
        return dh_ctx_fail(ctx, DH_ERR_MISMATCH, "%s: the result does not belong to this volume",
                           v->path);
    /* The CT Image module allows BitsStored 12 to 16 only: refuse rather than write an
     * invalid file (PNG previews of 8-bit results are still possible). */
    if (strcmp(v->modality, "CT") == 0 && r->output_bits < 12)
        return dh_ctx_fail(ctx, DH_ERR_UNSUPPORTED,
                           "%s: CT images need 12 to 16 bits stored, not %u (use 12 or 16 bits)",
                           v->path, r->output_bits);
    dh_eq_source *src = NULL;
    size_t count = 0;
    char *folder = NULL;
    dh_status st = dh_eq_output_open(ctx, v, output_dir, &src, &count, &folder);
    if (st != DH_OK)
        return st;
    dh_derived_series *s = calloc(1, sizeof *s);
    uint16_t *frames = NULL;
    char msg[DH_DICOM_MSG_LEN];
    if (!s || !(s->files = calloc(count, sizeof(char *))) ||
        !(s->sop_uids = calloc(count, sizeof(char *))) ||
        !(s->sources = calloc(count, sizeof(char *)))) {
        st = dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "out of memory");
        goto fail;
    }
    if (params->series_uid) {
        snprintf(s->series_uid, sizeof s->series_uid, "%s", params->series_uid);
    } else if (dh_dicom_uid_random(s->series_uid) != DH_OK) {
        st = dh_ctx_fail(ctx, DH_ERR_INTERNAL, "no random source for UIDs");
        goto fail;
    }
    const char *op = strstr(r->description, "window/level") ? " windowed" : " equalized";
    size_t slice_len = (size_t)v->rows * v->columns;
    for (size_t i = 0; i < count; i++) {
        const char *name = dh_eq_basename(src[i].path);
        size_t n = strlen(folder) + strlen(name) + 2;
        char *path = malloc(n), uid[DH_DICOM_UID_LEN];
        if (!path) {
            st = dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "out of memory");
            goto fail;
        }
        snprintf(path, n, "%s/%s", folder, name);
        if (is_input(path, src, count)) {
            st = dh_ctx_fail(ctx, DH_ERR_IO, "%s: is one of the inputs; refusing to write it",
                             path);
            free(path);
            goto fail;
        }
        /* A single-frame source's pixels are one slice of the result already; the frames of a
         * multi-frame one are gathered back in file order. */
        const uint16_t *pixels = r->data + (size_t)src[i].slice_of_frame[0] * slice_len;
        if (src[i].frames > 1) {
            free(frames);
            frames = malloc((size_t)src[i].frames * slice_len * sizeof *frames);
            if (!frames) {
                st = dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "%s: cannot prepare the file", path);
                free(path);
                goto fail;
            }
            for (uint32_t f = 0; f < src[i].frames; f++)
                memcpy(frames + (size_t)f * slice_len,
                       r->data + (size_t)src[i].slice_of_frame[f] * slice_len,
                       slice_len * sizeof *frames);
            pixels = frames;
        }
        if ((st = instance_uid(ctx, params, src[i].path, uid)) != DH_OK) {
            free(path);
            goto fail;
        }
        dh_dicom_derive req = {
            .source_path = src[i].path,
            .output_path = path,
            .series_uid = s->series_uid,
            .sop_instance_uid = uid,
            .rows = v->rows,
            .columns = v->columns,
            .frames = src[i].frames,
            .bits_stored = r->output_bits,
            .pixels = pixels,
            .derivation_description = r->description,
            .series_suffix = op,
        };
        st = dh_dicom_derive_write(&req, msg, sizeof msg);
        if (st != DH_OK) {
            st = dh_ctx_fail(ctx, st, "%s", msg);
            free(path);
            goto fail;
        }
        s->files[s->file_count] = path;
        s->sop_uids[s->file_count] = dh_strdup(uid);
        s->sources[s->file_count] = dh_strdup(src[i].path);
        s->file_count++;
        if (!s->sop_uids[s->file_count - 1] || !s->sources[s->file_count - 1]) {
            st = dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "out of memory");
            goto fail;
        }
    }
    free(frames);
    free(folder);
    dh_eq_sources_free(src, count);
    *out = s;
    dh_ctx_clear(ctx);
    return DH_OK;
fail:
    if (s)
        for (size_t i = 0; i < s->file_count; i++)
            unlink(s->files[i]);
    free(frames);
    free(folder);
    dh_eq_sources_free(src, count);
    dh_derived_series_free(s);
    return st;
}
