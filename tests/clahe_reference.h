// SPDX-License-Identifier: MIT
/*
 * clahe_reference.h: a naive CLAHE written from docs/equalization.md ("Adaptive equalization
 * (CLAHE)") without kernels/clahe.h or the equalize code (clahe_reference.c), for the suites of
 * the CPU twin, the public API and the GPU twin alike.
 */
#ifndef DH_TEST_CLAHE_REFERENCE_H
#define DH_TEST_CLAHE_REFERENCE_H

#include <stdint.h>

#include "clahe_cpu.h"

/* One call's arguments, as dh_clahe_cpu takes them. */
typedef struct dh_test_clahe_case {
    const void *data;
    int is_signed;
    int32_t base;
    uint32_t len;
    dh_clahe_shape s;
    const dh_eq_window *windows;
    uint32_t bins, levels;
    double clip;
} dh_test_clahe_case;

/* out (nx * ny * nz values) gets CLAHE of the case: tiles found by scanning, a textbook
 * clip-and-redistribute, the equalization formula from a running sum, and each pixel blended in
 * exact rationals between the centres it lies between, rounded half up once. */
void dh_test_clahe_reference(const dh_test_clahe_case *c, uint16_t *out);

#endif /* DH_TEST_CLAHE_REFERENCE_H */
