// SPDX-License-Identifier: MIT
/*
 * decode_device.c: dh_decode_to_device, the public face of the DICOM layer's batch into GPU
 * memory (dh_dicom_read_batch_device, dicom/dicom_gpu_batch.cpp): the context's threads and
 * decoder switch passed down, each item's result turned into the public record, messages naming
 * the item.
 */
#include "context.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Worker threads of the batch: the context's, within what the DICOM layer takes (0: its
 * default). */
static uint32_t batch_workers(const dh_ctx *ctx)
{
    const int threads = ctx ? ctx->threads : 0;
    return threads > 32 ? 32u : (uint32_t)threads;
}

static void copy_text(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src);
}

/* out from the DICOM layer's record of the item named name (in's image is freed, its device
 * memory handed over). */
static void take_result(dh_dicom_device_image *in, const char *name, dh_device_image *out)
{
    memset(out, 0, sizeof *out);
    out->status = in->status;
    if (in->status != DH_DICOM_OK) {
        snprintf(out->message, sizeof out->message, "%s: %s", name, in->msg);
        return;
    }
    const dh_dicom_image *img = in->image;
    out->columns = img->format.columns;
    out->rows = img->format.rows;
    out->frames = img->frames;
    out->bits_stored = img->format.bits_stored;
    out->is_signed = img->format.is_signed;
    out->rescale_slope = img->format.rescale_slope;
    out->rescale_intercept = img->format.rescale_intercept;
    out->d_samples = in->device_pixels;
    out->gpu_frames = in->gpu_frames;
    out->cpu_frames = in->cpu_frames;
    copy_text(out->decoder, sizeof out->decoder, img->decoder);
    copy_text(out->decoder_note, sizeof out->decoder_note, img->decoder_note);
    in->device_pixels = NULL; /* now out's */
    dh_dicom_device_image_release(in, NULL);
}

dh_status dh_decode_to_device(dh_ctx *ctx, const dh_memory_item *items, size_t count,
                              void *cuda_stream, dh_device_image *out)
{
    if (count > 0 && (items == NULL || out == NULL))
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "dh_decode_to_device: no items or no output given");
    for (size_t i = 0; i < count; i++)
        if ((items[i].bytes == NULL && items[i].size > 0) || items[i].name == NULL)
            return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                               "dh_decode_to_device: item %zu has no bytes or no name", i);
    dh_dicom_batch_input *in = malloc((count ? count : 1) * sizeof *in);
    dh_dicom_device_image *got = calloc(count ? count : 1, sizeof *got);
    if (in == NULL || got == NULL) {
        free(in);
        free(got);
        return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "dh_decode_to_device: out of memory");
    }
    for (size_t i = 0; i < count; i++)
        in[i] = (dh_dicom_batch_input){.data = items[i].bytes, .size = items[i].size};
    const dh_dicom_read_options read = dh_ctx_read_options(ctx);
    const dh_dicom_batch_options options = {.workers = batch_workers(ctx),
                                            .cpu_decoders_only = !read.gpu_decode};
    char msg[DH_DICOM_MSG_LEN];
    const dh_dicom_status st =
        dh_dicom_read_batch_device(in, count, &options, cuda_stream, got, NULL, msg, sizeof msg);
    for (size_t i = 0; st == DH_DICOM_OK && i < count; i++)
        take_result(&got[i], items[i].name, &out[i]);
    free(in);
    free(got);
    if (st == DH_DICOM_ERR_UNSUPPORTED)
        return dh_ctx_fail(ctx, DH_ERR_NO_DEVICE, "dh_decode_to_device: %s", msg);
    if (st != DH_DICOM_OK)
        return dh_ctx_fail(ctx, (dh_status)st, "dh_decode_to_device: %s", msg);
    dh_ctx_clear(ctx);
    return DH_OK;
}

void dh_device_image_release(dh_device_image *image, void *cuda_stream)
{
    if (image == NULL)
        return;
    dh_dicom_device_free(image->d_samples, cuda_stream);
    memset(image, 0, sizeof *image);
}
