// SPDX-License-Identifier: MIT
/*
 * parallel.c: dh_parallel_for over POSIX threads and one atomic counter.
 */
#include "parallel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

typedef struct loop {
    void (*body)(void *, size_t);
    void *arg;
    size_t count;
    atomic_size_t next;
} loop;

static void *run_loop(void *p)
{
    loop *l = p;
    for (;;) {
        size_t i = atomic_fetch_add(&l->next, 1);
        if (i >= l->count)
            return NULL;
        l->body(l->arg, i);
    }
}

void dh_parallel_for(int threads, size_t count, void (*body)(void *arg, size_t i), void *arg)
{
    loop l = {.body = body, .arg = arg, .count = count};
    atomic_init(&l.next, 0);
    if (threads < 1)
        threads = 1;
    if ((size_t)threads > count)
        threads = count > 0 ? (int)count : 1;
    pthread_t *ids = threads > 1 ? malloc((size_t)(threads - 1) * sizeof *ids) : NULL;
    int started = 0;
    for (int t = 0; ids && t < threads - 1; t++) {
        if (pthread_create(&ids[t], NULL, run_loop, &l) != 0)
            break;
        started++;
    }
    run_loop(&l);
    for (int t = 0; t < started; t++)
        pthread_join(ids[t], NULL);
    free(ids);
}
