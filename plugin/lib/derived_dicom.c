// SPDX-License-Identifier: MIT
/*
 * derived_dicom.c: dh_equalized_write_dicom, one derived DICOM series per call: a SeriesInstanceUID
 * for the series, a SOPInstanceUID per file, the frames of each source file gathered back out of
 * the volume's slice order, and dh_dicom_derive_write (dicom/) for each file, to disk or (the
 * dh_equalized_encode_dicom of memory hosts) into buffers. Files already written are removed
 * when a later one fails, so a series is written whole or not at all.
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
#include "derived_output.h"
#include "uid_name.h"
#include "volume.h"

/* 1 when path names the same file as one of the volume's sources. */
static int is_input(const char *path, const dh_derived_source *sources, size_t count)
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

/* The UIDs of a derived series: random, or named after the source and the derivation. */
static dh_status series_uid_for(dh_ctx *ctx, const dh_volume *v, const dh_equalized *r,
                                const dh_derive_params *wp, const char *first_source_uid,
                                char uid[DH_DICOM_UID_LEN])
{
    if (wp->series_uid) {
        snprintf(uid, DH_DICOM_UID_LEN, "%s", wp->series_uid);
        return DH_OK;
    }
    if (wp->uids == DH_UIDS_RANDOM)
        return dh_dicom_uid_random(uid) == DH_OK
                   ? DH_OK
                   : dh_ctx_fail(ctx, DH_ERR_INTERNAL, "no random source for UIDs");
    const char *parts[] = {"series", v->series_uid[0] ? v->series_uid : first_source_uid,
                           r->description};
    return dh_uid_from_name(uid, parts, 3) == 0
               ? DH_OK
               : dh_ctx_fail(ctx, DH_ERR_INTERNAL, "%s: cannot hash a UID", v->path);
}

/* The SOPInstanceUID the caller gives for the file derived from source, checked. */
static dh_status caller_instance_uid(dh_ctx *ctx, const dh_derive_params *p, const char *source,
                                     char uid[DH_DICOM_UID_LEN])
{
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

/* The source's SOPInstanceUID, for name-based UIDs (its path when it has none): as read with
 * the volume's pixels, never from the file again. */
static void source_uid(const dh_volume *v, const dh_derived_source *src,
                       char out[DH_DICOM_UID_LEN * 4])
{
    const char *uid = v->slice[src->slice_of_frame[0]].sop_uid;
    snprintf(out, DH_DICOM_UID_LEN * 4, "%s", uid[0] ? uid : src->path);
}

/* An existing output that is already this very instance (DH_EXISTING_KEEP): 1 when it is. */
static int is_same_instance(const char *path, const char *uid)
{
    char msg[DH_DICOM_MSG_LEN];
    dh_dicom_image *m = NULL;
    int same = dh_dicom_read_file(path, 0, &m, msg, sizeof msg) == DH_OK &&
               strcmp(m->sop_instance_uid, uid) == 0;
    dh_dicom_image_free(m);
    return same;
}

/* Writes one derived file to path as wp says, or into s's next buffer when s holds buffers.
 * *kept is set when an existing file already was it. */
static dh_status write_one(dh_ctx *ctx, dh_dicom_derive *req, const char *path,
                           const dh_derive_params *wp, dh_derived_series *s, int *kept)
{
    char msg[DH_DICOM_MSG_LEN];
    if (s->data) {
        void *data = NULL;
        req->output_path = path;
        req->out_data = &data;
        req->out_size = &s->sizes[s->file_count];
        dh_status st = dh_dicom_derive_write(req, msg, sizeof msg);
        s->data[s->file_count] = data;
        *kept = 0;
        return st == DH_OK ? DH_OK : dh_ctx_fail(ctx, st, "%s", msg);
    }
    dh_status st = dh_derived_existing(ctx, path, wp->existing, is_same_instance,
                                       req->sop_instance_uid, kept);
    if (st != DH_OK || *kept)
        return st;
    /* The DICOM writer itself writes beside and renames (replacing only when asked): one file
     * made, where going through a temporary name of ours would make three (and ext4 pays for
     * every inode created and deleted). */
    req->output_path = path;
    req->replace = wp->existing == DH_EXISTING_REPLACE;
    req->defer_folder_sync = 1; /* flushed once for the series: sync_written_folders */
    st = dh_dicom_derive_write(req, msg, sizeof msg);
    return st == DH_OK ? DH_OK : dh_ctx_fail(ctx, st, "%s", msg);
}

static dh_status derive_series(dh_ctx *ctx, const dh_volume *v, const dh_equalized *r,
                               const char *output_dir, const dh_derive_params *params,
                               dh_derived_series **out);

/* Flushes, once each, the folders of the series' files (write_one leaves that to here): one
 * folder flush for a series instead of one per file. Kept files too: a run killed between a
 * file's rename and this flush leaves that file for the next run to keep, and it is reported
 * only once flushed. (Session 21: on the H100 host's disk the write floor of 2080 files was
 * 0.945 s with a folder flush per file, 0.853 with one per series, bench/batch_write_floor.py,
 * whose per-series policy also defers the renames.) */
static void sync_written_folders(const dh_derived_series *s)
{
    const char *last = NULL;
    size_t last_len = 0;
    for (size_t i = 0; i < s->file_count; i++) {
        const char *slash = strrchr(s->files[i], '/');
        size_t len = slash ? (size_t)(slash - s->files[i]) + 1 : 0;
        if (last && len == last_len && strncmp(last, s->files[i], len) == 0)
            continue;
        dh_dicom_sync_folder_of(s->files[i]);
        last = s->files[i];
        last_len = len;
    }
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
    return derive_series(ctx, v, r, output_dir, params, out);
}

dh_status dh_equalized_encode_dicom(dh_ctx *ctx, const dh_volume *v, const dh_equalized *r,
                                    const dh_derive_params *params, dh_derived_series **out)
{
    if (!ctx || !v || !r || !out)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "dh_equalized_encode_dicom: NULL argument");
    return derive_series(ctx, v, r, NULL, params, out);
}

/* The derived series into output_dir, or into buffers when output_dir is NULL. */
static dh_status derive_series(dh_ctx *ctx, const dh_volume *v, const dh_equalized *r,
                               const char *output_dir, const dh_derive_params *params,
                               dh_derived_series **out)
{
    *out = NULL;
    dh_derive_params wp;
    dh_status st = dh_derived_request_check(ctx, v, r, params, "the derived", &wp);
    if (st != DH_OK)
        return st;
    /* The CT Image module allows BitsStored 12 to 16 only: refuse rather than write an
     * invalid file (PNG previews of 8-bit results are still possible). */
    if (strcmp(v->modality, "CT") == 0 && r->output_bits < 12)
        return dh_ctx_fail(ctx, DH_ERR_UNSUPPORTED,
                           "%s: CT images need 12 to 16 bits stored, not %u (use 12 or 16 bits)",
                           v->path, r->output_bits);
    dh_derived_source *src = NULL;
    size_t count = 0;
    char *folder = NULL;
    st = dh_derived_output_open(ctx, v, output_dir, &wp, &src, &count, &folder);
    if (st != DH_OK)
        return st;
    dh_derived_series *s = dh_derived_series_alloc(count, output_dir == NULL);
    uint16_t *frames = NULL;
    unsigned char *fresh = calloc(count ? count : 1, 1); /* written by this call, not kept */
    char source[DH_DICOM_UID_LEN * 4] = "";
    if (!s || !fresh) {
        st = dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "out of memory");
        goto fail;
    }
    if (wp.uids == DH_UIDS_DERIVED && (!wp.series_uid || !wp.instance_uid))
        source_uid(v, &src[0], source);
    if ((st = series_uid_for(ctx, v, r, &wp, source, s->series_uid)) != DH_OK)
        goto fail;
    const char *op = strstr(r->description, "window/level") ? " windowed" : " equalized";
    size_t slice_len = (size_t)v->format.rows * v->format.columns;
    for (size_t i = 0; i < count; i++) {
        char *path = NULL, uid[DH_DICOM_UID_LEN];
        if ((st = dh_derived_output_path(ctx, &wp, output_dir, folder, src[i].path, NULL, &path)) !=
            DH_OK)
            goto fail;
        if (output_dir && is_input(path, src, count)) {
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
        if (wp.instance_uid) {
            if ((st = caller_instance_uid(ctx, &wp, src[i].path, uid)) != DH_OK) {
                free(path);
                goto fail;
            }
        } else if (wp.uids == DH_UIDS_DERIVED) {
            const char *parts[] = {"instance", source, r->description};
            if (i > 0)
                source_uid(v, &src[i], source);
            if (dh_uid_from_name(uid, parts, 3) != 0) {
                st = dh_ctx_fail(ctx, DH_ERR_INTERNAL, "%s: cannot name the file's UID", path);
                free(path);
                goto fail;
            }
        } else if (dh_dicom_uid_random(uid) != DH_OK) {
            st = dh_ctx_fail(ctx, DH_ERR_INTERNAL, "%s: cannot prepare the file", path);
            free(path);
            goto fail;
        }
        dh_dicom_derive req = {
            .source_path = src[i].path,
            .source_data = src[i].bytes,
            .source_size = src[i].size,
            .series_uid = s->series_uid,
            .sop_instance_uid = uid,
            .rows = v->format.rows,
            .columns = v->format.columns,
            .frames = src[i].frames,
            .bits_stored = r->output_bits,
            .pixels = pixels,
            .derivation_description = r->description,
            .series_suffix = op,
            .has_created = wp.created >= 0,
            .created = wp.created,
        };
        int kept = 0;
        st = write_one(ctx, &req, path, &wp, s, &kept);
        if (st != DH_OK) {
            free(path);
            goto fail;
        }
        fresh[s->file_count] = !kept;
        s->files[s->file_count] = path;
        s->sop_uids[s->file_count] = dh_strdup(uid);
        s->sources[s->file_count] = dh_strdup(src[i].path);
        s->file_count++;
        if (!s->sop_uids[s->file_count - 1] || !s->sources[s->file_count - 1]) {
            st = dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "out of memory");
            goto fail;
        }
    }
    if (output_dir)
        sync_written_folders(s);
    if (wp.written)
        for (size_t i = 0; i < s->file_count; i++)
            wp.written(wp.user, s->sources[i], s->files[i]);
    free(fresh);
    free(frames);
    free(folder);
    dh_derived_sources_free(src, count);
    *out = s;
    dh_ctx_clear(ctx);
    return DH_OK;
fail:
    /* A series is written whole or not at all; files kept from an earlier run stay. */
    if (s && output_dir)
        for (size_t i = 0; i < s->file_count; i++)
            if (fresh[i])
                unlink(s->files[i]);
    free(fresh);
    free(frames);
    free(folder);
    dh_derived_sources_free(src, count);
    dh_derived_series_free(s);
    return st;
}
