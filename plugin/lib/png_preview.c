// SPDX-License-Identifier: MIT
/*
 * png_preview.c: dh_equalized_write_png, 8-bit grayscale PNG previews of a result through
 * libpng, one per slice, named after the derived DICOM files so the two sit side by side. Each
 * file is written under a hidden temporary name in its folder and linked into place, which fails
 * rather than replace an existing file (or renamed over it, when asked to replace); or, for
 * hosts that keep outputs in memory (dh_equalized_encode_png), encoded into a buffer through a
 * memory stream.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "context.h"
#include "derived_output.h"
#include "volume.h"

/* Writes rows of 8-bit pixels to an open file; 0, or -1 when libpng failed. */
static int write_png(FILE *f, const uint8_t *pixels, uint32_t rows, uint32_t columns)
{
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        png_destroy_write_struct(&png, &info);
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        return -1;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, columns, rows, 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (uint32_t y = 0; y < rows; y++)
        png_write_row(png, (png_const_bytep)(pixels + (size_t)y * columns));
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return 0;
}

/* 1 when two files hold the same bytes. */
static int same_bytes(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    char ba[65536], bb[65536];
    while (same) {
        size_t na = fread(ba, 1, sizeof ba, fa), nb = fread(bb, 1, sizeof bb, fb);
        same = na == nb && memcmp(ba, bb, na) == 0;
        if (na < sizeof ba)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

/* One preview, atomically; an existing file is replaced, kept or refused as `existing` says. */
static dh_status write_one(dh_ctx *ctx, const char *path, const uint8_t *pixels, uint32_t rows,
                           uint32_t columns, dh_existing existing)
{
    /* A hidden name in the same folder: what a killed run leaves is never taken for a preview. */
    const char *slash = strrchr(path, '/');
    size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
    size_t n = dir + 32;
    char *tmp = malloc(n);
    if (!tmp)
        return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "out of memory");
    snprintf(tmp, n, "%.*s.dicomhist-png-XXXXXX", (int)dir, path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        dh_status st = dh_ctx_fail(ctx, DH_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
        free(tmp);
        return st;
    }
    FILE *f = fdopen(fd, "wb");
    int rc = f ? write_png(f, pixels, rows, columns) : -1;
    if (f) {
        rc |= fflush(f) != 0 || fsync(fd) != 0 || fchmod(fd, 0644) != 0 ? -1 : 0;
        rc |= fclose(f) != 0 ? -1 : 0;
    } else {
        close(fd);
    }
    int e = 0;
    if (rc == 0 && existing == DH_EXISTING_KEEP && access(path, F_OK) == 0) {
        rc = same_bytes(tmp, path) ? 0 : -1; /* the same preview already: nothing to do */
        e = EEXIST;
        unlink(tmp);
    } else if (rc == 0) {
        rc = dh_derived_publish(tmp, path, existing);
        e = errno;
    } else {
        e = errno;
        unlink(tmp);
    }
    free(tmp);
    if (rc != 0)
        return dh_ctx_fail(ctx, DH_ERR_IO, "%s: cannot write the preview: %s", path,
                           e == EEXIST ? "already exists (not replaced)" : strerror(e));
    return DH_OK;
}

/* One preview into entry s->file_count of s (name and source copied). */
static dh_status encode_one(dh_ctx *ctx, dh_derived_series *s, const char *name,
                            const char *source, const uint8_t *pixels, uint32_t rows,
                            uint32_t columns)
{
    char *data = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&data, &size);
    int rc = f ? write_png(f, pixels, rows, columns) : -1;
    if (f && fclose(f) != 0)
        rc = -1;
    size_t k = s->file_count;
    if (rc != 0 || !(s->files[k] = dh_strdup(name)) || !(s->sources[k] = dh_strdup(source)) ||
        !(s->sop_uids[k] = dh_strdup(""))) {
        free(data);
        free(s->files[k]), free(s->sources[k]), free(s->sop_uids[k]);
        s->files[k] = s->sources[k] = s->sop_uids[k] = NULL;
        return dh_ctx_fail(ctx, rc != 0 ? DH_ERR_INTERNAL : DH_ERR_NO_MEMORY,
                           "%s: cannot encode the preview", name);
    }
    s->data[k] = (unsigned char *)data;
    s->sizes[k] = size;
    s->file_count++;
    return DH_OK;
}

static dh_status previews(dh_ctx *ctx, const dh_volume *v, const dh_equalized *r,
                          const char *dir, const dh_derive_params *params,
                          dh_derived_series *mem);

dh_status dh_equalized_encode_png(dh_ctx *ctx, const dh_volume *v, const dh_equalized *r,
                                  const dh_derive_params *params, dh_derived_series **out)
{
    if (!ctx || !v || !r || !out)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "dh_equalized_encode_png: NULL argument");
    *out = NULL;
    dh_derived_series *s = dh_derived_series_alloc(v->slices, 1);
    if (!s)
        return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "out of memory");
    dh_status st = previews(ctx, v, r, NULL, params, s);
    if (st != DH_OK) {
        dh_derived_series_free(s);
        return st;
    }
    *out = s;
    return DH_OK;
}

dh_status dh_equalized_write_png(dh_ctx *ctx, const dh_volume *v, const dh_equalized *r,
                                 const char *dir)
{
    return dh_equalized_write_png_with(ctx, v, r, dir, NULL);
}

dh_status dh_equalized_write_png_with(dh_ctx *ctx, const dh_volume *v, const dh_equalized *r,
                                    const char *dir, const dh_derive_params *params)
{
    if (!ctx || !v || !r || !dir || !*dir)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "dh_equalized_write_png: NULL argument");
    return previews(ctx, v, r, dir, params, NULL);
}

/* The previews into dir, or into mem's buffers when dir is NULL. */
static dh_status previews(dh_ctx *ctx, const dh_volume *v, const dh_equalized *r,
                          const char *dir, const dh_derive_params *params,
                          dh_derived_series *mem)
{
    dh_derive_params wp;
    dh_status st = dh_derived_params_check(ctx, params, &wp);
    if (st != DH_OK)
        return st;
    if (r->rows != v->format.rows || r->columns != v->format.columns || r->slices != v->slices)
        return dh_ctx_fail(ctx, DH_ERR_MISMATCH, "%s: the result does not belong to this volume",
                           v->path);
    dh_derived_source *src = NULL;
    size_t count = 0;
    char *folder = NULL;
    st = dh_derived_output_open(ctx, v, dir, &wp, &src, &count, &folder);
    if (st != DH_OK)
        return st;
    size_t slice_len = (size_t)v->format.rows * v->format.columns;
    uint8_t *pixels = malloc(slice_len);
    if (!pixels) {
        st = dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "out of memory");
        goto done;
    }
    uint32_t top = r->output_bits >= 16 ? 65535u : (1u << r->output_bits) - 1;
    int invert = v->format.photometric == DH_MONOCHROME1;
    for (size_t i = 0; i < count && st == DH_OK; i++) {
        for (uint32_t f = 0; f < src[i].frames && st == DH_OK; f++) {
            char suffix[32], *path = NULL;
            if (src[i].frames > 1)
                snprintf(suffix, sizeof suffix, "_f%04u.png", f);
            else
                snprintf(suffix, sizeof suffix, ".png");
            st = dh_derived_output_path(ctx, &wp, dir, folder, src[i].path, suffix, &path);
            if (st != DH_OK)
                break;
            const uint16_t *d = r->data + (size_t)src[i].slice_of_frame[f] * slice_len;
            for (size_t k = 0; k < slice_len; k++) {
                uint32_t g = (uint32_t)(((uint64_t)d[k] * 255 + top / 2) / top);
                pixels[k] = (uint8_t)(invert ? 255 - g : g);
            }
            st = mem ? encode_one(ctx, mem, path, src[i].path, pixels, v->format.rows,
                                  v->format.columns)
                     : write_one(ctx, path, pixels, v->format.rows, v->format.columns,
                                 wp.existing);
            if (st == DH_OK && wp.written)
                wp.written(wp.user, src[i].path, path);
            free(path);
        }
    }
done:
    free(pixels);
    free(folder);
    dh_derived_sources_free(src, count);
    if (st == DH_OK)
        dh_ctx_clear(ctx);
    return st;
}
