// SPDX-License-Identifier: MIT
/*
 * clahe_forced_build.h: what the CPU CLAHE tests do when DH_CLAHE_CPU_PATH forces a build of
 * the twin (kernels/clahe_cpu_path.h) this processor cannot run: say so and skip (exit
 * DH_TEST_SKIP, which ctest shows as skipped, never as passed), rather than test a slower build
 * under the forced one's name. tests/CMakeLists.txt runs them with the AVX-512 builds forced,
 * which only a processor with AVX-512 (the GPU host's Xeon, through tools/gpu-check) runs.
 */
#ifndef DH_TESTS_CLAHE_FORCED_BUILD_H
#define DH_TESTS_CLAHE_FORCED_BUILD_H

#include <stdio.h>

#include "clahe_cpu_path.h"

/* 1 (after a line saying why) when the forced build is beyond this processor, else 0. */
static inline int dh_test_clahe_build_missing(void)
{
    const dh_clahe_path asked = dh_clahe_cpu_path_asked(), here = dh_clahe_cpu_path();
    if (asked == DH_CLAHE_PATHS || here == asked)
        return 0;
    printf("DH_CLAHE_CPU_PATH=%s: this processor runs at most %s; skipped\n",
           dh_clahe_path_name(asked), dh_clahe_path_name(here));
    return 1;
}

#endif /* DH_TESTS_CLAHE_FORCED_BUILD_H */
