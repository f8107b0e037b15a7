// SPDX-License-Identifier: MIT
/*
 * cli_cuda_start.h: CUDA's start on a thread of its own, so that a batch under --device cuda
 * scans its inputs and reads its first series meanwhile instead of waiting first (issue 24:
 * 0.18 s of a 1.35 s command before its batch and about 0.15 s more for the context in it,
 * bench/NOTES.md runs 87 and session 19). Two steps: the answer (usable or not: the driver's
 * start, dh_cuda_available), which the batch waits for before anything is written, so that a
 * machine without a GPU still gets one message and no output; then, where usable, the device's
 * context made (dh_cuda_prepare), which nobody waits for here: a worker's first GPU call that
 * comes sooner waits inside CUDA for the same context.
 */
#ifndef DH_CLI_CUDA_START_H
#define DH_CLI_CUDA_START_H

#include <pthread.h>

#include "dicomhist.h"

typedef struct cli_cuda_start {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    pthread_t thread;
    int (*probe)(void);   /* dh_cuda_available in the command; stand-ins in the tests */
    int (*prepare)(void); /* dh_cuda_prepare, or NULL */
    int started;          /* the thread runs or ran (joined by cli_cuda_start_end) */
    int done, usable;     /* probe has returned, and what */
} cli_cuda_start;

/* Calls probe() and then, where it answered 1 and prepare is not NULL, prepare() on a thread of
 * its own, or both here and now where no thread can start. */
void cli_cuda_start_begin(cli_cuda_start *c, int (*probe)(void), int (*prepare)(void));

/* Waits until probe() has returned (at once when it already has) and returns its answer; not for
 * prepare(). Any number of threads may wait, before or after it returns. */
int cli_cuda_start_wait(cli_cuda_start *c);

/* Waits for the thread (prepare() included) and releases c. */
void cli_cuda_start_end(cli_cuda_start *c);

/* The wait mode DICOMHIST_CUDA_WAIT asks for (auto, spin, yield or block: dh_cuda_set_wait's), or
 * -1 where it names none: CUDA's own default is kept (it spins with fewer contexts than cores).
 * To measure: session 22 on H100 hosts found no clear gain either way (J2K under cuda blocking
 * faster than spinning in 6 rounds of 9, auto slower in 3 of 6, HTJ2K slower in 4 of 6; yield no
 * better; docs/batch.md). */
int cli_cuda_wait_asked(void);

/* dh_cuda_set_wait where cli_cuda_wait_asked names a mode, then dh_cuda_prepare(): the command's
 * prepare. */
int cli_cuda_prepare_waiting(void);

#endif /* DH_CLI_CUDA_START_H */
