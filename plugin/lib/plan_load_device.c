// SPDX-License-Identifier: MIT
/*
 * plan_load_device.c: dh_plan_load_series_device, one planned series decoded into one buffer of
 * GPU memory in the plan's slice order (dicomhist.h says what the caller gets and why): the
 * series' files read whole, decoded together by the DICOM layer's batch straight into their
 * places in that buffer (dh_dicom_read_batch_device with each file's device_dest: no per-file
 * buffer, no copy; since session 17), the host volume's metadata built as plan_load.c builds it,
 * without samples. Copies on the GPU remain only where the plan's places and the volume's
 * differ: the slices after one left out move down, and a multi-frame file whose frames are not
 * in volume order is reordered through a temporary. Shared (dh_plan_load_series_device_shared),
 * the files go one at a time to whoever claims them (plan_share.c), each through the same batch
 * call into its place. Needs CUDA (the buffer, those copies): without it the entry points answer
 * DH_ERR_NO_DEVICE.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "plan.h"
#include "plan_share.h"
#include "volume.h"
#include "volume_set.h"

#ifdef DH_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

static const char WHO[] = "dh_plan_load_series_device";

#ifdef DH_HAVE_CUDA

/* The series' files as batch inputs: an item's own bytes, else the file read whole (NULL data
 * where it cannot be read: the batch then fails that file alone, as a read would). */
typedef struct series_inputs {
    dh_dicom_batch_input *in;
    int *unread; /* errno of a file that could not be read whole, else 0 */
    unsigned char **owned; /* what was read here, freed after the batch */
    dh_dicom_device_image *got;
    size_t count;
} series_inputs;

static void inputs_free(series_inputs *s, void *stream)
{
    for (size_t i = 0; s->got && i < s->count; i++)
        dh_dicom_device_image_release(&s->got[i], stream);
    for (size_t i = 0; s->owned && i < s->count; i++)
        free(s->owned[i]);
    free(s->in);
    free(s->unread);
    free(s->owned);
    free(s->got);
    memset(s, 0, sizeof *s);
}

/* base: the series' buffer; each file's values go to its place in the plan's order (the bytes
 * the plan expects of it), where a file that turns out larger fails alone in the batch. */
static int inputs_read(const dh_plan *p, const dh_plan_series *g, unsigned char *base,
                       series_inputs *s)
{
    s->count = g->count;
    s->in = calloc(g->count, sizeof *s->in);
    s->unread = calloc(g->count, sizeof *s->unread);
    s->owned = calloc(g->count, sizeof *s->owned);
    s->got = calloc(g->count, sizeof *s->got);
    if (!s->in || !s->unread || !s->owned || !s->got)
        return -1;
    size_t at = 0;
    for (size_t i = 0; i < g->count; i++) {
        const dh_plan_file *f = &p->files[g->files[i]];
        const size_t place = (size_t)f->slice.format.rows * f->slice.format.columns *
                             f->slice.frames * 2;
        size_t size = 0;
        if (f->bytes)
            s->in[i] = (dh_dicom_batch_input){.data = f->bytes, .size = (size_t)f->size};
        else if (dh_plan_read_whole(f->path, &s->owned[i], &size) == 0)
            s->in[i] = (dh_dicom_batch_input){.data = s->owned[i], .size = size};
        else /* an empty input for the batch; its failure is the read's */
            s->unread[i] = errno ? errno : EIO;
        s->in[i].device_dest = base + at;
        s->in[i].capacity = place;
        at += place;
    }
    return 0;
}

static dh_status oom(dh_ctx *ctx, const char *path)
{
    return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "%s: out of memory reading the series", path);
}

/* The file's slice failed: its own status, or a format the plan did not expect. */
static dh_status slice_status(const dh_plan_file *f, const dh_dicom_device_image *got, int unread,
                              int single, char *msg, size_t len)
{
    if (unread) {
        snprintf(msg, len, "cannot be read: %s", strerror(unread));
        return DH_ERR_IO;
    }
    if (got->status != DH_DICOM_OK) {
        snprintf(msg, len, "%s", got->msg);
        return (dh_status)got->status;
    }
    dh_plan_slice now;
    dh_plan_slice_from_image(&now, got->image);
    if (!dh_plan_same_format(&now, &f->slice) || (!single && got->image->frames != 1)) {
        snprintf(msg, len, "changed while the series was read");
        return DH_ERR_MISMATCH;
    }
    return DH_OK;
}

/* The device buffer for `bytes`: the caller's, or one allocated on the stream. */
static dh_status take_buffer(dh_ctx *ctx, dh_device_volume *out, void *d_samples, size_t bytes,
                             void *stream, const char *path)
{
    if (d_samples) {
        out->d_samples = d_samples;
        return DH_OK;
    }
    cudaError_t e = cudaMallocAsync(&out->d_samples, bytes ? bytes : 1, (cudaStream_t)stream);
    if (e != cudaSuccess) {
        out->d_samples = NULL;
        return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "%s: %zu bytes of GPU memory: %s", path, bytes,
                           cudaGetErrorString(e));
    }
    out->owns_samples = 1;
    return DH_OK;
}

static dh_status copy_slices(dh_ctx *ctx, void *dst, const void *src, size_t bytes, void *stream,
                             const char *path)
{
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
                                    (cudaStream_t)stream);
    if (e != cudaSuccess)
        return dh_ctx_fail(ctx, DH_ERR_CUDA, "%s: copying the samples into place: %s", path,
                           cudaGetErrorString(e));
    return DH_OK;
}

/* A multi-frame file's frames, decoded in file order into buf, put in volume order (slice z is
 * frame order[z]) through a temporary copy, only when that order is not the file's. */
static dh_status reorder_frames(dh_ctx *ctx, void *buf, size_t bytes, const uint32_t *order,
                                uint32_t slices, void *stream, const char *path)
{
    uint32_t z = 0;
    while (z < slices && order[z] == z)
        z++;
    if (z == slices)
        return DH_OK;
    void *tmp = NULL;
    cudaError_t e = cudaMallocAsync(&tmp, bytes * slices, (cudaStream_t)stream);
    if (e != cudaSuccess)
        return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "%s: %zu bytes of GPU memory to reorder the "
                           "frames: %s", path, bytes * slices, cudaGetErrorString(e));
    dh_status st = copy_slices(ctx, tmp, buf, bytes * slices, stream, path);
    for (z = 0; st == DH_OK && z < slices; z++)
        st = copy_slices(ctx, (unsigned char *)buf + z * bytes,
                         (const unsigned char *)tmp + order[z] * bytes, bytes, stream, path);
    cudaFreeAsync(tmp, (cudaStream_t)stream);
    return st;
}

static void fill_fields(dh_device_volume *out, const dh_volume *v)
{
    out->columns = v->format.columns;
    out->rows = v->format.rows;
    out->slices = v->slices;
    out->bits_stored = v->format.bits_stored;
    out->is_signed = v->format.is_signed;
    out->rescale_slope = v->format.rescale_slope;
    out->rescale_intercept = v->format.rescale_intercept;
}

/* A multi-frame or UID-less file: its frames ordered as dh_volume_read_file orders them. */
static dh_status load_single(dh_ctx *ctx, const dh_plan *p, const dh_plan_series *g,
                             series_inputs *s, void *stream, dh_device_volume *out)
{
    const dh_plan_file *f = &p->files[g->files[0]];
    char msg[DH_DICOM_MSG_LEN];
    dh_status st = slice_status(f, &s->got[0], s->unread[0], 1, msg, sizeof msg);
    if (st != DH_OK)
        return dh_set_add_failure(out->set, f->path, st, "%s: %s", f->path, msg) ? oom(ctx, f->path)
                                                                                 : DH_OK;
    dh_dicom_image *img = s->got[0].image;
    uint32_t *order = malloc(img->frames * sizeof *order);
    dh_volume *v = NULL;
    if (!order)
        return oom(ctx, f->path);
    dh_ctx local = {0}; /* a failure here is the file's, recorded in the set */
    st = dh_volume_from_header(&local, img, f->path, order, &v);
    if (st != DH_OK) {
        free(order);
        return dh_set_add_failure(out->set, f->path, st, "%s", local.message) ? oom(ctx, f->path)
                                                                              : DH_OK;
    }
    for (uint32_t z = 0; z < v->slices; z++) {
        v->slice[z].source_bytes = f->bytes;
        v->slice[z].source_size = f->bytes ? (size_t)f->size : 0;
    }
    st = reorder_frames(ctx, out->d_samples, dh_volume_slice_bytes(v), order, v->slices, stream,
                        f->path);
    free(order);
    out->gpu_frames = s->got[0].gpu_frames;
    out->cpu_frames = s->got[0].cpu_frames;
    fill_fields(out, v);
    if (st == DH_OK && dh_set_add_volume(out->set, v) != 0)
        st = oom(ctx, f->path);
    if (st != DH_OK)
        dh_volume_free(v);
    return st;
}

/* One slice's record, as plan_load.c keeps it. */
static int describe_slice(dh_volume *v, uint32_t kept, const dh_plan_series *g,
                          const dh_plan_file *f, const dh_dicom_image *img)
{
    memcpy(v->slice[kept].sop_uid, img->sop_instance_uid, sizeof v->slice[kept].sop_uid);
    dh_volume_note_decoder(v, img->decoder, img->decoder_note);
    return dh_plan_slice_record(v, kept, g, f);
}

/* A series of single-frame files: the slices read, in order, into one buffer. */
static dh_status load_files(dh_ctx *ctx, const dh_plan *p, const dh_plan_series *g,
                            series_inputs *s, void *stream, dh_device_volume *out)
{
    dh_status *status = calloc(g->count, sizeof *status);
    if (!status)
        return oom(ctx, g->path);
    size_t first = SIZE_MAX;
    uint32_t kept = 0;
    dh_status st = DH_OK;
    for (size_t i = 0; i < g->count && st == DH_OK; i++) {
        const dh_plan_file *f = &p->files[g->files[i]];
        char msg[DH_DICOM_MSG_LEN];
        status[i] = slice_status(f, &s->got[i], s->unread[i], 0, msg, sizeof msg);
        if (status[i] == DH_OK) {
            kept++;
            first = first == SIZE_MAX ? i : first;
        } else if (dh_set_add_failure(out->set, f->path, status[i], "%s: %s", f->path, msg)) {
            st = oom(ctx, g->path);
        }
    }
    /* The volume's header fields are the series' first file's, as dh_plan_load_series takes
     * them, even when that file's pixels failed (its header read again); else the first slice
     * read's (the plan checked that the format agrees across the slices). */
    dh_dicom_image *head = NULL;
    char head_msg[DH_DICOM_MSG_LEN];
    if (st == DH_OK && kept && first != 0 &&
        dh_plan_file_read(&p->files[g->files[0]], 0, NULL, &head, head_msg, sizeof head_msg) !=
            DH_OK) {
        dh_dicom_image_free(head);
        head = NULL;
    }
    dh_volume *v = st == DH_OK && kept
                       ? dh_volume_alloc_header(head ? head : s->got[first].image, kept, g->path)
                       : NULL;
    dh_dicom_image_free(head);
    if (st == DH_OK && kept && !v)
        st = oom(ctx, g->path);
    const size_t bytes = v ? dh_volume_slice_bytes(v) : 0;
    uint32_t z = 0;
    for (size_t i = 0; v && st == DH_OK && i < g->count; i++) {
        const dh_plan_file *f = &p->files[g->files[i]];
        if (status[i] != DH_OK) {
            if (dh_volume_warn(v, "slice %s left out: it could not be decoded (see its error)",
                               f->path) != 0)
                st = oom(ctx, g->path);
            continue;
        }
        /* Decoded in place; after a slice left out, the kept ones move down (in increasing
         * order on one stream: a slice's new place is free by then). */
        unsigned char *place = (unsigned char *)out->d_samples + z * bytes;
        if (place != s->got[i].device_pixels)
            st = copy_slices(ctx, place, s->got[i].device_pixels, bytes, stream, f->path);
        if (st == DH_OK && describe_slice(v, z, g, f, s->got[i].image) != 0)
            st = oom(ctx, g->path);
        out->gpu_frames += s->got[i].gpu_frames;
        out->cpu_frames += s->got[i].cpu_frames;
        z++;
    }
    free(status);
    if (v && st == DH_OK && g->repeats &&
        dh_volume_warn(v, "%zu file(s) repeat an instance already read and were kept once, e.g. "
                          "%s repeats %s",
                       g->repeats, p->files[g->repeat_file].path, p->files[g->repeat_of].path))
        st = oom(ctx, g->path);
    if (v && st == DH_OK && dh_volume_finish_geometry(v) != 0)
        st = oom(ctx, g->path);
    if (v && st == DH_OK) {
        fill_fields(out, v);
        if (dh_set_add_volume(out->set, v) != 0)
            st = oom(ctx, g->path);
        else
            v = NULL;
    }
    dh_volume_free(v);
    return st;
}

/* A shared load's file (plan_share.c): decoded into its place in the series' buffer by whoever
 * claims it, the GPU's decoders where its reader's options allow them, else the CPU's with the
 * values copied in; what comes back is what the whole series' batch gives for that file. */
typedef struct device_job {
    series_inputs *s;
    void *stream;
    dh_dicom_status *call; /* per slot: the call's own status (not the file's) */
} device_job;

static void decode_device_slot(void *arg, size_t slot, const dh_dicom_read_options *options)
{
    device_job *j = arg;
    dh_dicom_device_image *got = &j->s->got[slot];
    const dh_dicom_batch_options one = {.workers = 1, .cpu_decoders_only = !options->gpu_decode};
    char msg[DH_DICOM_MSG_LEN];
    j->call[slot] = dh_dicom_read_batch_device(&j->s->in[slot], 1, &one, j->stream, got, NULL,
                                               msg, sizeof msg);
    if (j->call[slot] != DH_DICOM_OK) /* the series fails with it, as the one batch would */
        snprintf(got->msg, sizeof got->msg, "%s", msg);
}

/* The series' buffer taken, the batch over its files decoding into it (or, shared, its files
 * one at a time by the owner from the front and helpers from the back), then its volume built
 * from what came back. */
static dh_status load(dh_ctx *ctx, const dh_plan *p, const dh_plan_series *g, void *d_samples,
                      dh_plan_share *share, void *stream, dh_device_volume *out)
{
    char why[DH_DICOM_MSG_LEN];
    if (!dh_dicom_gpu_decoders(why, sizeof why)) /* before any GPU memory is asked for */
        return dh_ctx_fail(ctx, DH_ERR_NO_DEVICE, "%s: no decoding into GPU memory: %s", g->path,
                           why);
    dh_status st = take_buffer(ctx, out, d_samples, (size_t)g->sample_bytes, stream, g->path);
    if (st != DH_OK)
        return st;
    series_inputs s = {0};
    if (inputs_read(p, g, out->d_samples, &s) != 0) {
        inputs_free(&s, stream);
        return oom(ctx, g->path);
    }
    const dh_dicom_read_options read = dh_ctx_read_options(ctx);
    const int threads = ctx ? ctx->threads : 0;
    const dh_dicom_batch_options options = {.workers = threads > 32 ? 32u : (uint32_t)threads,
                                            .cpu_decoders_only = !read.gpu_decode};
    char msg[DH_DICOM_MSG_LEN];
    dh_dicom_status bst = DH_DICOM_OK;
    if (share) {
        device_job job = {.s = &s, .stream = stream, .call = calloc(s.count, sizeof *job.call)};
        if (!job.call) {
            inputs_free(&s, stream);
            return oom(ctx, g->path);
        }
        dh_plan_share_run(share, s.count, 1, decode_device_slot, &job, &read);
        for (size_t i = 0; i < s.count && bst == DH_DICOM_OK; i++)
            if ((bst = job.call[i]) != DH_DICOM_OK)
                snprintf(msg, sizeof msg, "%s", s.got[i].msg);
        free(job.call);
    } else {
        bst = dh_dicom_read_batch_device(s.in, s.count, &options, stream, s.got, NULL, msg,
                                         sizeof msg);
    }
    if (bst != DH_DICOM_OK) {
        inputs_free(&s, stream);
        return dh_ctx_fail(ctx, bst == DH_DICOM_ERR_UNSUPPORTED ? DH_ERR_NO_DEVICE : (dh_status)bst,
                           "%s: %s", g->path, msg);
    }
    st = g->single ? load_single(ctx, p, g, &s, stream, out)
                   : load_files(ctx, p, g, &s, stream, out);
    inputs_free(&s, stream);
    if (st == DH_OK && (out->set->count == 0)) { /* no slice read: no samples */
        if (out->owns_samples)
            cudaFreeAsync(out->d_samples, (cudaStream_t)stream);
        out->d_samples = NULL;
        out->owns_samples = 0;
    }
    return st;
}

#endif /* DH_HAVE_CUDA */

static dh_status load_series_device(dh_ctx *ctx, const dh_plan *plan, size_t series,
                                    dh_plan_share *share, void *cuda_stream, void *d_samples,
                                    size_t capacity, dh_device_volume *out)
{
    if (!out)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "%s: out is NULL", WHO);
    memset(out, 0, sizeof *out);
    if (!plan || series >= plan->series_count)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "%s: series %zu of a plan of %zu", WHO,
                           series, plan ? plan->series_count : 0);
    const dh_plan_series *g = &plan->series[series];
    if (d_samples && capacity < g->sample_bytes)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "%s: %s needs %llu bytes of GPU memory, %zu given", WHO, g->path,
                           (unsigned long long)g->sample_bytes, capacity);
#ifndef DH_HAVE_CUDA
    (void)cuda_stream;
    (void)share;
    return dh_ctx_fail(ctx, DH_ERR_NO_DEVICE,
                       "%s: %s: built without CUDA (configure with -DDH_WITH_CUDA=ON)", WHO,
                       g->path);
#else
    if (!(out->set = calloc(1, sizeof *out->set)))
        return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "%s: out of memory", g->path);
    dh_status st = DH_OK;
    if (g->status != DH_OK) /* the series cannot be built: its one failure, as the host says */
        st = dh_set_add_failure(out->set, g->path, g->status, "%s", g->message) ? oom(ctx, g->path)
                                                                                : DH_OK;
    else
        st = load(ctx, plan, g, d_samples, share, cuda_stream, out);
    if (st != DH_OK) { /* the message is set */
        dh_device_volume_release(out, cuda_stream);
        return st;
    }
    if (out->set->count > 0 && out->d_samples) {
        out->set->volumes[0]->device_samples = out->d_samples;
        out->set->volumes[0]->device_stream = cuda_stream;
    }
    dh_ctx_clear(ctx);
    return DH_OK;
#endif
}

dh_status dh_plan_load_series_device(dh_ctx *ctx, const dh_plan *plan, size_t series,
                                     void *cuda_stream, void *d_samples, size_t capacity,
                                     dh_device_volume *out)
{
    return load_series_device(ctx, plan, series, NULL, cuda_stream, d_samples, capacity, out);
}

dh_status dh_plan_load_series_device_shared(dh_ctx *ctx, const dh_plan *plan, size_t series,
                                            dh_plan_share *share, void *cuda_stream,
                                            void *d_samples, size_t capacity,
                                            dh_device_volume *out)
{
    /* Helpers copy on the stream given, from their own threads: the per-thread default stream
     * (cudaStreamPerThread, 0x2) would be each one's own, not ordered with the owner's. */
    if (!share || cuda_stream == (void *)0x2) {
        if (out)
            memset(out, 0, sizeof *out);
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "%s_shared: %s", WHO,
                           share ? "the per-thread default stream is not one the helpers share"
                                 : "share is NULL");
    }
    return load_series_device(ctx, plan, series, share, cuda_stream, d_samples, capacity, out);
}

dh_status dh_device_volume_download(dh_ctx *ctx, dh_device_volume *v, void *cuda_stream)
{
    if (!v || !v->set)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "dh_device_volume_download: no volume");
    if (v->set->count == 0 || v->set->volumes[0]->data)
        return DH_OK; /* nothing to copy, or copied already */
    dh_volume *host = v->set->volumes[0];
#ifndef DH_HAVE_CUDA
    (void)cuda_stream;
    (void)host;
    return dh_ctx_fail(ctx, DH_ERR_NO_DEVICE, "dh_device_volume_download: built without CUDA");
#else
    const size_t bytes = dh_volume_slice_bytes(host) * host->slices;
    void *data = malloc(bytes);
    if (!data)
        return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "%s: out of memory for %zu bytes", host->path,
                           bytes);
    cudaError_t e = cudaMemcpyAsync(data, v->d_samples, bytes, cudaMemcpyDeviceToHost,
                                    (cudaStream_t)cuda_stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize((cudaStream_t)cuda_stream);
    if (e != cudaSuccess) {
        free(data);
        return dh_ctx_fail(ctx, DH_ERR_CUDA, "%s: copying the samples to the host: %s",
                           host->path, cudaGetErrorString(e));
    }
    host->data = data;
    host->device_samples = NULL; /* a host volume from now on */
    dh_volume_update_range(host);
    dh_ctx_clear(ctx);
    return DH_OK;
#endif
}

void dh_device_volume_release(dh_device_volume *v, void *cuda_stream)
{
    if (!v)
        return;
#ifdef DH_HAVE_CUDA
    if (v->owns_samples && v->d_samples)
        cudaFreeAsync(v->d_samples, (cudaStream_t)cuda_stream);
#else
    (void)cuda_stream;
#endif
    dh_volume_set_free(v->set);
    memset(v, 0, sizeof *v);
}
