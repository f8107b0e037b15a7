// SPDX-License-Identifier: MIT
/*
 * plan_share.c: dh_plan_share (dicomhist.h), one series' files decoded by its owner and by
 * helpers at once. The owner claims files from the front, helpers from the back, one at a time
 * under the share's lock: a batch's GPU decodes a JPEG 2000 series from one end while idle cores
 * decode it with OpenJPEG from the other, so a series is no longer the grain of the work
 * (docs/batch.md, "GPU decoders in a batch"). Every file lands in its own slot of the owner's
 * volume, so the result does not depend on who decoded what.
 */
#include "plan_share.h"

#include <pthread.h>
#include <stdlib.h>

#include "context.h"
#include "parallel.h"

struct dh_plan_share {
    pthread_mutex_t lock;
    pthread_cond_t idle; /* a helper's slot finished */
    int open;            /* a series is being read: its slots may be claimed */
    size_t front, back;  /* unclaimed slots are [front, back) */
    size_t in_flight;    /* helpers' slots being decoded now */
    dh_share_decode_fn decode;
    void *job;
    const dh_dicom_read_options *options; /* the owner's */
    dh_dicom_read_options back_options;   /* its own back threads': the CPU decoders */
    int back_threads; /* dh_plan_share_set_back_threads */
    int load_threads; /* dh_plan_share_set_load_threads */
};

dh_plan_share *dh_plan_share_create(void)
{
    dh_plan_share *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    if (pthread_mutex_init(&s->lock, NULL) != 0) {
        free(s);
        return NULL;
    }
    if (pthread_cond_init(&s->idle, NULL) != 0) {
        pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
    }
    return s;
}

void dh_plan_share_free(dh_plan_share *s)
{
    if (!s)
        return;
    pthread_cond_destroy(&s->idle);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* Claims the next slot from the front (owner) or the back (helper); 0 when none is left. */
static int claim(dh_plan_share *s, int from_back, size_t *slot)
{
    if (!s->open || s->front >= s->back)
        return 0;
    *slot = from_back ? --s->back : s->front++;
    return 1;
}

/* The owner's threads: the first `owner_threads` claim from the front with the owner's options,
 * the rest from the back with the CPU decoders: its back threads, then its load threads (from
 * `load_from` on), which stop once the GPU decoders' load has settled. */
typedef struct run_threads {
    dh_plan_share *s;
    size_t owner_threads, load_from;
} run_threads;

static void owner_loop(void *arg, size_t thread)
{
    run_threads *r = arg;
    dh_plan_share *s = r->s;
    int back = thread >= r->owner_threads;
    int until_loaded = thread >= r->load_from;
    for (;;) {
        size_t slot;
        if (until_loaded && dh_dicom_gpu_decoders_settled())
            return;
        pthread_mutex_lock(&s->lock);
        int got = claim(s, back, &slot);
        pthread_mutex_unlock(&s->lock);
        if (!got)
            return;
        s->decode(s->job, slot, back ? &s->back_options : s->options);
    }
}

/* A thread count asked for, held to 0..64. */
static int thread_count(int threads)
{
    return threads > 0 ? (threads < 64 ? threads : 64) : 0;
}

void dh_plan_share_set_back_threads(dh_plan_share *s, int threads)
{
    if (s)
        s->back_threads = thread_count(threads);
}

void dh_plan_share_set_load_threads(dh_plan_share *s, int threads)
{
    if (s)
        s->load_threads = thread_count(threads);
}

void dh_plan_share_run(dh_plan_share *s, size_t count, int threads, dh_share_decode_fn decode,
                       void *job, const dh_dicom_read_options *options)
{
    pthread_mutex_lock(&s->lock);
    s->decode = decode;
    s->job = job;
    s->options = options;
    s->back_options = *options;
    s->back_options.gpu_decode = 0;
    s->front = 0;
    s->back = count;
    s->open = 1;
    pthread_mutex_unlock(&s->lock);
    if (threads < 1)
        threads = 1;
    /* Back and load threads only where the owner decodes on the GPU: there its own threads
     * mostly wait for the GPU (or, before its decoders are loaded, for them), and their cores
     * are free for the CPU decoders (docs/batch.md). No load thread once the load has settled. */
    size_t back = options->gpu_decode ? (size_t)s->back_threads : 0;
    size_t load =
        options->gpu_decode && !dh_dicom_gpu_decoders_settled() ? (size_t)s->load_threads : 0;
    run_threads r = {.s = s, .owner_threads = (size_t)threads,
                     .load_from = (size_t)threads + back};
    size_t all = (size_t)threads + back + load;
    dh_parallel_for((int)all, all, owner_loop, &r);
    /* The job lives on the owner's stack: no helper may still be in it when this returns. */
    pthread_mutex_lock(&s->lock);
    while (s->in_flight > 0)
        pthread_cond_wait(&s->idle, &s->lock);
    s->open = 0;
    s->job = NULL;
    pthread_mutex_unlock(&s->lock);
}

int dh_plan_share_help(dh_ctx *ctx, dh_plan_share *s)
{
    if (!s)
        return 0;
    size_t slot;
    pthread_mutex_lock(&s->lock);
    int got = claim(s, 1, &slot);
    if (got)
        s->in_flight++;
    dh_share_decode_fn decode = s->decode;
    void *job = s->job;
    pthread_mutex_unlock(&s->lock);
    if (!got)
        return 0;
    dh_dicom_read_options options = dh_ctx_read_options(ctx);
    decode(job, slot, &options);
    pthread_mutex_lock(&s->lock);
    s->in_flight--;
    pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->lock);
    return 1;
}

size_t dh_plan_share_left(dh_plan_share *s)
{
    if (!s)
        return 0;
    pthread_mutex_lock(&s->lock);
    size_t left = s->open && s->back > s->front ? s->back - s->front : 0;
    pthread_mutex_unlock(&s->lock);
    return left;
}
