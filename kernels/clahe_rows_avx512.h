// SPDX-License-Identifier: MIT
/*
 * clahe_rows_avx512.h: the 2D row blend of CLAHE's CPU twin in AVX-512 (clahe_rows_avx512.c),
 * 16 pixels a step, beside the portable and AVX2 builds of clahe_rows_cpu.c, which chooses it.
 */
#ifndef DH_KERNELS_CLAHE_ROWS_AVX512_H
#define DH_KERNELS_CLAHE_ROWS_AVX512_H

#include "clahe_rows_cpu.h"

/* Blends the whole row as dh_clahe_row_blend does, the quads fetched by 8-lane gathers
 * (gathers != 0) or by scalar loads. Only on x86-64 with AVX-512 F, BW, VL and DQ, and within
 * the AVX2 build's bounds (dh_clahe_rows_fast). */
void dh_clahe_blend_avx512(const dh_clahe_row *r, const dh_clahe_columns *c, int gathers);

#endif /* DH_KERNELS_CLAHE_ROWS_AVX512_H */
