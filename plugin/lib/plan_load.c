// SPDX-License-Identifier: MIT
/*
 * plan_load.c: dh_plan_load_series, one planned series read with its pixels: a volume sized from
 * the plan, every slice decoded straight into its place (several at once when the context allows
 * threads), slices that fail left out with their failure recorded, then the geometry finished.
 */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "context.h"
#include "parallel.h"
#include "plan.h"
#include "plan_share.h"
#include "volume.h"
#include "volume_set.h"

/* What each decoding thread needs, and what it leaves per slice. */
typedef struct decode_job {
    const dh_plan *plan;
    const dh_plan_series *series;
    dh_volume *volume;
    dh_status *status; /* per slice */
    char (*message)[DH_DICOM_MSG_LEN];
    dh_dicom_read_options options;
    char (*decoder)[16];                       /* per slice: which decoder read it */
    char (*decoder_note)[DH_DICOM_MSG_LEN / 2]; /* and why not the GPU */
    dh_read_times *times; /* per slice, when the context times its reads; else NULL */
} decode_job;

static double clock_seconds(clockid_t which)
{
    struct timespec t;
    clock_gettime(which, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* The whole file into *bytes (malloc'ed), for a read timed apart from its decode; -1 when it
 * cannot be read so (the caller then reads it the usual way, for the usual message). */
int dh_plan_read_whole(const char *path, unsigned char **bytes, size_t *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    *bytes = NULL;
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || st.st_size <= 0 || !(*bytes = malloc((size_t)st.st_size))) {
        close(fd);
        return -1;
    }
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, *bytes + got, (size_t)st.st_size - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    if (got != (size_t)st.st_size) {
        free(*bytes);
        *bytes = NULL;
        return -1;
    }
    *size = got;
    return 0;
}

/* dh_plan_file_read with pixels, timed as a read stage then a decode stage into *t. */
static dh_status read_timed(const dh_plan_file *f, const dh_dicom_read_options *options,
                            dh_dicom_image **img, char *msg, dh_read_times *t)
{
    double wall = clock_seconds(CLOCK_MONOTONIC), cpu = clock_seconds(CLOCK_THREAD_CPUTIME_ID);
    unsigned char *bytes = NULL;
    size_t size = 0;
    int whole = !f->bytes && dh_plan_read_whole(f->path, &bytes, &size) == 0;
    double wall2 = clock_seconds(CLOCK_MONOTONIC), cpu2 = clock_seconds(CLOCK_THREAD_CPUTIME_ID);
    t->read_seconds = wall2 - wall;
    t->read_cpu_seconds = cpu2 - cpu;
    t->bytes = whole ? size : (uint64_t)f->size;
    dh_status st = whole ? (dh_status)dh_dicom_read_memory_with(bytes, size, 1, options, img, msg,
                                                                DH_DICOM_MSG_LEN)
                         : dh_plan_file_read(f, 1, options, img, msg, DH_DICOM_MSG_LEN);
    free(bytes); /* the image keeps copies of what it needs */
    t->decode_seconds = clock_seconds(CLOCK_MONOTONIC) - wall2;
    t->decode_cpu_seconds = clock_seconds(CLOCK_THREAD_CPUTIME_ID) - cpu2;
    t->files = 1;
    return st;
}

/* Slot `slot` decoded with `options`: the owner's, or a helper's of a shared load (plan_share.c),
 * which differ only in the decoders used, never in the values. */
static void decode_slot(void *arg, size_t slot, const dh_dicom_read_options *options)
{
    decode_job *j = arg;
    const dh_plan_file *f = &j->plan->files[j->series->files[slot]];
    char *msg = j->message[slot];
    dh_dicom_image *img = NULL;
    dh_status st = j->times ? read_timed(f, options, &img, msg, &j->times[slot])
                            : dh_plan_file_read(f, 1, options, &img, msg, DH_DICOM_MSG_LEN);
    if (st == DH_OK) {
        memcpy(j->decoder[slot], img->decoder, sizeof j->decoder[slot]);
        memcpy(j->decoder_note[slot], img->decoder_note, sizeof j->decoder_note[slot]);
        dh_plan_slice now;
        dh_plan_slice_from_image(&now, img);
        if (!dh_plan_same_format(&now, &f->slice) || img->frames != 1) {
            st = DH_ERR_MISMATCH;
            snprintf(msg, DH_DICOM_MSG_LEN, "changed while the series was read");
        } else {
            size_t bytes = dh_volume_slice_bytes(j->volume);
            memcpy((unsigned char *)j->volume->data + slot * bytes, img->pixels, bytes);
            /* Kept for the derived files' UIDs, so that no header is read again for it. */
            memcpy(j->volume->slice[slot].sop_uid, img->sop_instance_uid,
                   sizeof j->volume->slice[slot].sop_uid);
        }
    }
    dh_dicom_image_free(img);
    j->status[slot] = st;
}

static void decode_one(void *arg, size_t slot)
{
    decode_slot(arg, slot, &((decode_job *)arg)->options);
}

static void add_times(dh_read_times *sum, const dh_read_times *t)
{
    sum->read_seconds += t->read_seconds;
    sum->read_cpu_seconds += t->read_cpu_seconds;
    sum->decode_seconds += t->decode_seconds;
    sum->decode_cpu_seconds += t->decode_cpu_seconds;
    sum->files += t->files;
    sum->bytes += t->bytes;
}

int dh_plan_slice_record(dh_volume *v, uint32_t kept, const dh_plan_series *g,
                         const dh_plan_file *f)
{
    dh_volume_note_lossy(v, f->slice.is_lossy, f->slice.lossy_method);
    dh_slice_info *s = &v->slice[kept];
    if (!(s->source = strdup(f->path)))
        return -1;
    s->source_bytes = f->bytes;
    s->source_size = f->bytes ? (size_t)f->size : 0;
    s->frame = 0;
    s->has_position = f->slice.has_position;
    memcpy(s->position, f->slice.position, sizeof s->position);
    s->location = g->by_location ? f->slice.location : (double)kept;
    s->instance_number = f->slice.has_instance_number ? f->slice.instance_number : 0;
    return 0;
}

/* The header the volume takes its fields from: the first slice's, read again (the plan keeps
 * only what ordering needs). */
static dh_status first_header(const dh_plan *p, const dh_plan_series *g, dh_dicom_image **meta,
                              char *msg)
{
    dh_status st = dh_plan_file_read(&p->files[g->files[0]], 0, NULL, meta, msg,
                                     DH_DICOM_MSG_LEN);
    if (st == DH_OK) {
        dh_plan_slice now;
        dh_plan_slice_from_image(&now, *meta);
        if (!dh_plan_same_format(&now, &p->files[g->files[0]].slice)) {
            dh_dicom_image_free(*meta);
            *meta = NULL;
            snprintf(msg, DH_DICOM_MSG_LEN, "changed since it was scanned");
            st = DH_ERR_MISMATCH;
        }
    }
    return st;
}

/* A series of single-frame files into set, its files shared with share's helpers when share is
 * not NULL; returns 0, or -1 when out of memory. */
static int load_files(dh_ctx *ctx, const dh_plan *p, const dh_plan_series *g, dh_volume_set *set,
                      dh_plan_share *share)
{
    if (g->status != DH_OK)
        return dh_set_add_failure(set, g->path, g->status, "%s", g->message);
    char msg[DH_DICOM_MSG_LEN] = "";
    dh_dicom_image *meta = NULL;
    dh_status st = first_header(p, g, &meta, msg);
    if (st != DH_OK)
        return dh_set_add_failure(set, g->path, st, "%s: %s", p->files[g->files[0]].path, msg);
    int rc = -1;
    dh_volume *v = dh_volume_alloc(meta, (uint32_t)g->count, g->path);
    decode_job job = {.plan = p, .series = g, .volume = v, .options = dh_ctx_read_options(ctx)};
    job.status = malloc(g->count * sizeof *job.status);
    job.message = malloc(g->count * sizeof *job.message);
    job.decoder = malloc(g->count * sizeof *job.decoder);
    job.decoder_note = malloc(g->count * sizeof *job.decoder_note);
    if (ctx && ctx->read_timing && !(job.times = calloc(g->count, sizeof *job.times)))
        goto done;
    if (!v || !job.status || !job.message || !job.decoder || !job.decoder_note)
        goto done;
    if (share)
        dh_plan_share_run(share, g->count, dh_ctx_worker_threads(ctx, g->count), decode_slot, &job,
                          &job.options);
    else
        dh_parallel_for(dh_ctx_worker_threads(ctx, g->count), g->count, decode_one, &job);
    for (size_t i = 0; job.times && i < g->count; i++)
        add_times(&ctx->read_times, &job.times[i]);

    /* Slices that failed are left out: the later ones move down, in order. */
    size_t bytes = dh_volume_slice_bytes(v);
    uint32_t kept = 0;
    for (size_t i = 0; i < g->count; i++) {
        const dh_plan_file *f = &p->files[g->files[i]];
        if (job.status[i] != DH_OK) {
            if (dh_set_add_failure(set, f->path, job.status[i], "%s: %s", f->path,
                                   job.message[i]) != 0 ||
                dh_volume_warn(v, "slice %s left out: it could not be decoded (see its error)",
                               f->path) != 0)
                goto done;
            continue;
        }
        if (kept != i)
            memmove((unsigned char *)v->data + kept * bytes, (unsigned char *)v->data + i * bytes,
                    bytes);
        dh_volume_note_decoder(v, job.decoder[i], job.decoder_note[i]);
        if (kept != i)
            memcpy(v->slice[kept].sop_uid, v->slice[i].sop_uid, sizeof v->slice[kept].sop_uid);
        if (dh_plan_slice_record(v, kept, g, f) != 0)
            goto done;
        kept++;
    }
    if (kept == 0) { /* every slice failed, each with its own failure */
        rc = 0;
        goto done;
    }
    v->slices = kept;
    memcpy(v->transfer_syntax, meta->transfer_syntax_uid, sizeof v->transfer_syntax);
    if (g->repeats && dh_volume_warn(v,
                                     "%zu file(s) repeat an instance already read and were kept "
                                     "once, e.g. %s repeats %s",
                                     g->repeats, p->files[g->repeat_file].path,
                                     p->files[g->repeat_of].path) != 0)
        goto done;
    if (dh_volume_finish_geometry(v) != 0)
        goto done;
    dh_volume_update_range(v);
    if (dh_set_add_volume(set, v) != 0)
        goto done;
    v = NULL;
    rc = 0;
done:
    dh_volume_free(v);
    dh_dicom_image_free(meta);
    free(job.status);
    free(job.message);
    free(job.decoder);
    free(job.decoder_note);
    free(job.times);
    return rc;
}

/* A multi-frame or UID-less file: a volume of its own, read with its pixels. */
static int load_single(dh_ctx *ctx, const dh_plan *p, const dh_plan_series *g,
                       dh_volume_set *set)
{
    dh_ctx local = {0}; /* its message is this file's alone; GPU decoding as the caller says */
    local.cpu_decode_only = ctx ? ctx->cpu_decode_only : 0;
    dh_volume *v = NULL;
    const dh_plan_file *f = &p->files[g->files[0]];
    double wall = clock_seconds(CLOCK_MONOTONIC), cpu = clock_seconds(CLOCK_THREAD_CPUTIME_ID);
    dh_status st = f->bytes ? dh_volume_read_memory(&local, f->bytes, (size_t)f->size, f->path, &v)
                            : dh_volume_read_file(&local, f->path, &v);
    if (ctx && ctx->read_timing) { /* read and decode in one: counted as decode */
        dh_read_times t = {.decode_seconds = clock_seconds(CLOCK_MONOTONIC) - wall,
                           .decode_cpu_seconds = clock_seconds(CLOCK_THREAD_CPUTIME_ID) - cpu,
                           .files = 1,
                           .bytes = (uint64_t)f->size};
        add_times(&ctx->read_times, &t);
    }
    if (st != DH_OK)
        return dh_set_add_failure(set, f->path, st, "%s", local.message);
    for (uint32_t z = 0; z < v->slices; z++) {
        v->slice[z].source_bytes = f->bytes;
        v->slice[z].source_size = f->bytes ? (size_t)f->size : 0;
    }
    if (dh_set_add_volume(set, v) != 0) {
        dh_volume_free(v);
        return -1;
    }
    return 0;
}

static dh_status load_series(dh_ctx *ctx, const dh_plan *plan, size_t series,
                             dh_plan_share *share, dh_volume_set **out)
{
    if (!out)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "dh_plan_load_series: out is NULL");
    *out = NULL;
    if (!plan || series >= plan->series_count)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "dh_plan_load_series: series %zu of a plan of %zu", series,
                           plan ? plan->series_count : 0);
    dh_volume_set *set = calloc(1, sizeof *set);
    const dh_plan_series *g = &plan->series[series];
    if (!set || (g->single ? load_single(ctx, plan, g, set)
                          : load_files(ctx, plan, g, set, share)) != 0) {
        dh_volume_set_free(set);
        return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "%s: out of memory reading the series",
                           g->path);
    }
    dh_ctx_clear(ctx);
    *out = set;
    return DH_OK;
}

dh_status dh_plan_load_series(dh_ctx *ctx, const dh_plan *plan, size_t series,
                              dh_volume_set **out)
{
    return load_series(ctx, plan, series, NULL, out);
}

dh_status dh_plan_load_series_shared(dh_ctx *ctx, const dh_plan *plan, size_t series,
                                     dh_plan_share *share, dh_volume_set **out)
{
    return load_series(ctx, plan, series, share, out);
}
