// SPDX-License-Identifier: MIT
/*
 * bench_clahe_split.h: where CLAHE's CPU twin spends its time on one core, per build of its row
 * blend (bench_clahe_split.c), so the bound of issue 21's CPU target can be stated from
 * measurement on any processor: the whole call, and the blend alone (the band quads and the row
 * blends over the image, from the very tables the call builds).
 */
#ifndef DH_BENCH_CLAHE_SPLIT_H
#define DH_BENCH_CLAHE_SPLIT_H

#include <stdint.h>

/* Prints a Markdown table for the n x n image img (8 x 8 tiles, full 16-bit window, clip 2, at
 * 4096 and 65536 bins): per build this processor runs (kernels/clahe_cpu_path.h), the whole
 * dh_clahe_cpu call on one thread and the blend alone, fastest of `runs`, the builds alternating
 * run by run. out: n x n samples of scratch. Returns 0, or 1 (with the reason on stderr) when
 * memory is lacking, a call fails or the blend alone differs from the call's output. */
int bench_clahe_split(const uint16_t *img, uint16_t *out, uint32_t n, int runs);

#endif /* DH_BENCH_CLAHE_SPLIT_H */
