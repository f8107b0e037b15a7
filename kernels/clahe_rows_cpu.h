// SPDX-License-Identifier: MIT
/*
 * clahe_rows_cpu.h: the blend of one 2D row of CLAHE's CPU twin (clahe_rows_cpu.c), apart from
 * the tiling and the tables (clahe_cpu.c) because it is where the time goes and it has two
 * builds: portable C, and AVX2 gathers with double arithmetic chosen at run time on x86-64.
 * Both compute clahe.h's dh_clahe_blend2 exactly, so the bits never depend on the processor.
 *
 * The tables of two neighbouring rows of tiles are laid out as a "pair": tile column by tile
 * column, bin by bin, the entries of tile rows iy (dy 0) and iy + 1 (dy 1) side by side, entry
 * (ix, b, dy) at (ix * bins + b) * 2 + dy. The four entries a pixel blends are two 4-byte loads,
 * at tile columns i0 and i1, and the pixels between two tile centres, which share i0 and i1,
 * read only those two columns' 8 bytes per bin: 32 KiB at 4096 bins, what a level-1 cache holds.
 * (Bin-major, the layout of session 14, spread them over every line of the table.)
 */
#ifndef DH_KERNELS_CLAHE_ROWS_CPU_H
#define DH_KERNELS_CLAHE_ROWS_CPU_H

#include <stddef.h>
#include <stdint.h>

/* What every row of an image shares: per column x its two tile columns i0, i1 and its weights
 * along x, w0 = den - w1 for tile i0 and w1 for i1 (clahe.h's dh_clahe_axis_at), as integers and
 * as doubles (exact: below 2^17), with 1 / den. */
typedef struct dh_clahe_columns {
    uint32_t n;
    int32_t *i0, *i1;
    uint32_t *w0, *w1, *den;
    double *w0d, *w1d, *dend, *inv;
} dh_clahe_columns;

/* Fills c for an axis of n pixels and `tiles` tiles (clahe.h's weights). Returns 0, or -1 when
 * memory is lacking (c is then empty and safe to free). */
int dh_clahe_columns_init(dh_clahe_columns *c, uint32_t n, uint32_t tiles);
void dh_clahe_columns_free(dh_clahe_columns *c);

/* One row's job: its samples and output, the bin of every raw 16-bit sample (bins: below the
 * window, bins + 1: above; those give 0 and top), and the pair table with the row's weights along
 * y (wy0 for dy 0, wy1 for dy 1, over den_y). */
typedef struct dh_clahe_row {
    const uint16_t *raw;
    uint16_t *out;
    const uint32_t *bin_of;
    uint32_t bins, tx;
    uint16_t top;
    const uint16_t *pair;
    uint32_t wy0, wy1, den_y;
} dh_clahe_row;

/* Whether the AVX2 build runs here (x86-64 with AVX2 and FMA, and a pair small enough for its
 * 32-bit offsets). */
int dh_clahe_rows_fast(uint32_t bins, uint32_t tx);

/* Blends the row: out[x] = dh_clahe_blend2 of the pixel's four entries. fast: the AVX2 build
 * (only where dh_clahe_rows_fast said so). */
void dh_clahe_row_blend(const dh_clahe_row *r, const dh_clahe_columns *c, int fast);

#endif /* DH_KERNELS_CLAHE_ROWS_CPU_H */
