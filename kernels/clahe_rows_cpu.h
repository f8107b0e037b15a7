// SPDX-License-Identifier: MIT
/*
 * clahe_rows_cpu.h: the blend of one 2D row of CLAHE's CPU twin (clahe_rows_cpu.c), apart from
 * the tiling and the tables (clahe_cpu.c) because it is where the time goes and it has two
 * builds: portable C, and AVX2 gathers with double arithmetic chosen at run time on x86-64.
 * Both compute clahe.h's dh_clahe_blend2 exactly, so the bits never depend on the processor.
 *
 * The tables of two neighbouring rows of tiles are laid out as a "pair": for every bin b and
 * tile column ix the entries of tile rows iy (dy 0) and iy + 1 (dy 1) side by side, so the four
 * entries a pixel blends, (ix, dy) for ix = i0, i0 + 1 and dy = 0, 1, are 4 consecutive uint16_t
 * at ((b * tx + i0) * 2): one 8-byte load and one cache line instead of four loads over two.
 */
#ifndef DH_KERNELS_CLAHE_ROWS_CPU_H
#define DH_KERNELS_CLAHE_ROWS_CPU_H

#include <stddef.h>
#include <stdint.h>

/* Entries a pair table needs beyond bins * tx * 2: the last bin's quad at i0 = tx - 1 reads
 * tile column tx, weighted 0 (a clamped border), which must still be inside the allocation. */
#define DH_CLAHE_PAIR_PAD 4

/* What every row of an image shares: per column x the offset of its quad within a bin
 * (at[x] = 2 * i0) and its weights along x, w0 = den - w1 for tile i0 and w1 for i0 + 1 (a
 * clamped column has w0 = den = 1, w1 = 0), as integers and as doubles (exact: below 2^17),
 * with 1 / den. */
typedef struct dh_clahe_columns {
    uint32_t n;
    int32_t *at;
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

/* Whether the AVX2 build runs here (x86-64 with AVX2 and FMA, and a table small enough for its
 * 32-bit gather offsets). */
int dh_clahe_rows_fast(uint32_t bins, uint32_t tx);

/* Blends the row: out[x] = dh_clahe_blend2 of the pixel's four entries. fast: the AVX2 build
 * (only where dh_clahe_rows_fast said so). */
void dh_clahe_row_blend(const dh_clahe_row *r, const dh_clahe_columns *c, int fast);

#endif /* DH_KERNELS_CLAHE_ROWS_CPU_H */
