// SPDX-License-Identifier: MIT
/*
 * parallel.h: the library's one way to use several cores inside a call: a loop whose iterations
 * run on threads created for the call and joined before it returns (no pool survives a call, so
 * the library keeps no global state and an embedding host owns every thread that lives on).
 */
#ifndef DH_PLUGIN_PARALLEL_H
#define DH_PLUGIN_PARALLEL_H

#include <stddef.h>

/* Runs body(arg, i) for every i in [0, count) on up to `threads` threads (the caller's among
 * them), handing out indices in increasing order. Iterations must not depend on each other.
 * When threads cannot be created the caller's thread does the rest alone. */
void dh_parallel_for(int threads, size_t count, void (*body)(void *arg, size_t i), void *arg);

#endif /* DH_PLUGIN_PARALLEL_H */
