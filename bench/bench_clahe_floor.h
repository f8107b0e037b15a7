// SPDX-License-Identifier: MIT
/*
 * bench_clahe_floor.h: the floor under any exact CLAHE on one core (bench_clahe_floor.c), timed
 * on the image and core bench_clahe_cpu times the twin on, so issue 21's 5x target can be argued
 * from measurement: CLAHE reads the image once for its tile histograms and maps every pixel once,
 * so a plain histogram plus a plain one-table lookup of the same pixels is work it cannot avoid.
 */
#ifndef DH_BENCH_CLAHE_FLOOR_H
#define DH_BENCH_CLAHE_FLOOR_H

#include <stddef.h>
#include <stdint.h>

/* Prints one line per measure, "name milliseconds" (the fastest of `reps` runs, processor time
 * of one thread), for the n samples of img; out is n samples of scratch. Returns 0, or 1 when
 * memory is lacking. */
int bench_clahe_floor(const uint16_t *img, uint16_t *out, size_t n, int reps);

#endif /* DH_BENCH_CLAHE_FLOOR_H */
