// SPDX-License-Identifier: MIT
/*
 * bench_cpu_common.h: what the CPU benchmarks share: the xorshift* generator their synthetic
 * images come from (the same stream everywhere, so runs repeat exactly), and the clock they time
 * with (include after defining _POSIX_C_SOURCE 200809L).
 */
#ifndef DH_BENCH_CPU_COMMON_H
#define DH_BENCH_CPU_COMMON_H

#include <stdint.h>
#include <time.h>

static inline uint64_t bench_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

/* Processor time of the whole process, in seconds: on a shared machine the time the work really
 * took on its cores, not the time it waited for them (with one thread, time per core). */
static inline double bench_cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#endif /* DH_BENCH_CPU_COMMON_H */
