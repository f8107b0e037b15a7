// SPDX-License-Identifier: MIT
/*
 * cli_cuda_start.c: CUDA's start on a thread of its own (cli_cuda_start.h).
 */
#include "cli_cuda_start.h"

#include <stddef.h>

static void *run(void *arg)
{
    cli_cuda_start *c = arg;
    int usable = c->probe();
    pthread_mutex_lock(&c->lock);
    c->usable = usable;
    c->done = 1; /* set under the lock a waiter tests it under: no wakeup is lost */
    pthread_cond_broadcast(&c->changed);
    pthread_mutex_unlock(&c->lock);
    /* Its answer may differ from probe's only where the context cannot be made; the first GPU
     * call then fails with the library's own message, as it did before this overlap. */
    if (usable && c->prepare)
        (void)c->prepare();
    return NULL;
}

void cli_cuda_start_begin(cli_cuda_start *c, int (*probe)(void), int (*prepare)(void))
{
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->changed, NULL);
    c->probe = probe;
    c->prepare = prepare;
    c->done = c->usable = 0;
    c->started = pthread_create(&c->thread, NULL, run, c) == 0;
    if (!c->started)
        run(c); /* no thread to spare: the answer now, as before this overlap */
}

int cli_cuda_start_wait(cli_cuda_start *c)
{
    pthread_mutex_lock(&c->lock);
    while (!c->done)
        pthread_cond_wait(&c->changed, &c->lock);
    int usable = c->usable;
    pthread_mutex_unlock(&c->lock);
    return usable;
}

void cli_cuda_start_end(cli_cuda_start *c)
{
    if (c->started)
        pthread_join(c->thread, NULL);
    c->started = 0;
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->changed);
}
