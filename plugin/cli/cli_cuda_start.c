// SPDX-License-Identifier: MIT
/*
 * cli_cuda_start.c: CUDA's start on a thread of its own (cli_cuda_start.h).
 */
#include "cli_cuda_start.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

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

int cli_cuda_wait_asked(void)
{
    static const struct {
        const char *name;
        dh_cuda_wait mode;
    } modes[] = {{"auto", DH_CUDA_WAIT_AUTO},
                 {"spin", DH_CUDA_WAIT_SPIN},
                 {"yield", DH_CUDA_WAIT_YIELD},
                 {"block", DH_CUDA_WAIT_BLOCK}};
    const char *asked = getenv("DICOMHIST_CUDA_WAIT");
    for (size_t i = 0; asked && i < sizeof modes / sizeof *modes; i++)
        if (strcmp(asked, modes[i].name) == 0)
            return (int)modes[i].mode;
    return -1;
}

int cli_cuda_prepare_waiting(void)
{
    int mode = cli_cuda_wait_asked();
    if (mode >= 0)
        dh_cuda_set_wait((dh_cuda_wait)mode);
    return dh_cuda_prepare();
}
