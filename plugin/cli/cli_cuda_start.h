// SPDX-License-Identifier: MIT
/*
 * cli_cuda_start.h: CUDA's start (the driver, the device's context) on a thread of its own, so
 * that a batch under --device cuda scans its inputs meanwhile instead of waiting first (issue 24:
 * 0.18 s of a 1.35 s command before its batch, bench/NOTES.md run 87). The answer, usable or not,
 * is waited for before anything is written, so a machine without a GPU still gets one message and
 * no output.
 */
#ifndef DH_CLI_CUDA_START_H
#define DH_CLI_CUDA_START_H

#include <pthread.h>

typedef struct cli_cuda_start {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    pthread_t thread;
    int (*prepare)(void); /* dh_cuda_prepare in the command; a stand-in in the tests */
    int started;          /* the thread runs or ran (joined by cli_cuda_start_end) */
    int done, usable;     /* prepare has returned, and what */
} cli_cuda_start;

/* Calls prepare() on a thread of its own, or here and now where no thread can start. */
void cli_cuda_start_begin(cli_cuda_start *c, int (*prepare)(void));

/* Waits until prepare() has returned (at once when it already has) and returns its answer. Any
 * number of threads may wait, before or after it returns. */
int cli_cuda_start_wait(cli_cuda_start *c);

/* Waits for the thread and releases c. */
void cli_cuda_start_end(cli_cuda_start *c);

#endif /* DH_CLI_CUDA_START_H */
