// SPDX-License-Identifier: MIT
/*
 * clahe_cpu_path.c: the build of CLAHE's CPU twin this processor runs (clahe_cpu_path.h), from
 * the processor's features as the compiler's run-time checks report them (which include the
 * operating system's support for the wider registers), capped by DH_CLAHE_CPU_PATH.
 */
#include "clahe_cpu_path.h"

#include <stdlib.h>
#include <string.h>

static const char *const names[DH_CLAHE_PATHS] = {"portable", "avx2", "avx512-loads", "avx512"};

const char *dh_clahe_path_name(dh_clahe_path path)
{
    return (unsigned)path < DH_CLAHE_PATHS ? names[path] : "?";
}

/* What the processor runs, uncapped. */
static dh_clahe_path processor_path(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        return DH_CLAHE_PATH_PORTABLE;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        return DH_CLAHE_PATH_AVX512;
    return DH_CLAHE_PATH_AVX2;
#else
    return DH_CLAHE_PATH_PORTABLE;
#endif
}

dh_clahe_path dh_clahe_cpu_path_asked(void)
{
    const char *asked = getenv("DH_CLAHE_CPU_PATH");
    for (int p = 0; asked && p < DH_CLAHE_PATHS; p++)
        if (strcmp(asked, names[p]) == 0)
            return (dh_clahe_path)p;
    return DH_CLAHE_PATHS;
}

dh_clahe_path dh_clahe_cpu_path(void)
{
    const dh_clahe_path best = processor_path(), asked = dh_clahe_cpu_path_asked();
    return asked < best ? asked : best;
}
