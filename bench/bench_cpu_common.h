// SPDX-License-Identifier: MIT
/*
 * bench_cpu_common.h: what the CPU benchmarks share: the xorshift* generator their synthetic
 * images come from (the same stream everywhere, so runs repeat exactly).
 */
#ifndef DH_BENCH_CPU_COMMON_H
#define DH_BENCH_CPU_COMMON_H

#include <stdint.h>

static inline uint64_t bench_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

#endif /* DH_BENCH_CPU_COMMON_H */
