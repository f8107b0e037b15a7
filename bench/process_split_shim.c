// SPDX-License-Identifier: MIT
/*
 * process_split_shim.c: preloaded into a dicomhist command by bench/process_split.py, it writes
 * the wall clock to stderr when the process starts (before main) and when it finishes (after
 * main and the other libraries' destructors, before the kernel tears the process down), so the
 * time a command spends outside its batch (CUDA's start, the GPU decoders' teardown) can be
 * split from the batch itself. Only a benchmark's helper: no dependency, nothing else done.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static void stamp(const char *what)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    char line[96];
    int n = snprintf(line, sizeof line, "SPLIT %s %.6f\n", what, t.tv_sec + t.tv_nsec * 1e-9);
    if (n > 0 && write(2, line, (size_t)n) < 0)
        return; /* nothing to do about a closed stderr */
}

__attribute__((constructor(101))) static void at_start(void) { stamp("start"); }
__attribute__((destructor(101))) static void at_end(void) { stamp("end"); }
