// SPDX-License-Identifier: MIT
/*
 * clahe_rows_cpu.h: the blend of one 2D row of CLAHE's CPU twin (clahe_rows_cpu.c), apart from
 * the tiling and the tables (clahe_cpu.c) because it is where the time goes and it has several
 * builds: portable C, and AVX2 (8 pixels a step) or AVX-512 (16, clahe_rows_avx512.h) in 32-bit
 * integer lanes chosen at run time on x86-64 (clahe_cpu_path.h). All compute clahe.h's
 * dh_clahe_blend2 exactly, so the bits never depend on the processor.
 *
 * Segments and bands: along x the pixels between the centres of tile columns s and s + 1 form
 * segment s (tx - 1 of them; one, tile column 0 alone, when tx is 1); along y the rows between
 * the centres of tile rows p and p + 1 form band p. A pixel before the first centre or after the
 * last one takes the nearest tile alone (clahe.h's clamping); here it joins the segment (band)
 * next to it with weights (den, 0) or (0, den) over that segment's den, which gives the same
 * value: the rounding floor((2 num + D) / (2 D)) does not change when num and D are scaled alike.
 *
 * Quads: per band, for every segment s and bin b, the four entries a pixel of that segment and
 * band blends, tiles (s, p), (s + 1, p), (s, p + 1), (s + 1, p + 1), in one 8-byte word
 * quads[s * bins + b] (16-bit lanes in that order, each entry with its top bit flipped: the
 * signed form the AVX2 multiply-add takes), so a pixel's entries are one load. The pixels of one
 * segment read one run of bins: 32 KiB at 4096 bins.
 */
#ifndef DH_KERNELS_CLAHE_ROWS_CPU_H
#define DH_KERNELS_CLAHE_ROWS_CPU_H

#include <stddef.h>
#include <stdint.h>

/* Where a pixel of an axis of n pixels and `tiles` tiles blends: segment s, weights w0 (tile s)
 * and w1 (tile s + 1, or s when tiles is 1) over den, w0 + w1 = den. */
typedef struct dh_clahe_segment_weight {
    uint32_t s, w0, w1, den;
} dh_clahe_segment_weight;

dh_clahe_segment_weight dh_clahe_segment_at(uint32_t n, uint32_t tiles, uint32_t x);

/* The number of segments (bands) of an axis of `tiles` tiles: tiles - 1, or 1. */
static inline uint32_t dh_clahe_segments(uint32_t tiles)
{
    return tiles > 1 ? tiles - 1 : 1;
}

/* What every row of an image shares: per column x its segment and weights, the quad index of
 * its segment's bin 0 (s * bins), the weights as the AVX2 build takes them (wpair: w0, w1, w0,
 * w1 as 16-bit lanes, in groups of 8 columns reordered 0 1 4 5 2 3 6 7) and as the AVX-512 one
 * does (wpair16: the same in column order, zero past n up to a multiple of 16), and 1 / den as
 * a float. */
typedef struct dh_clahe_columns {
    uint32_t n, tiles, bins;
    uint32_t max_den; /* the largest den of a segment */
    uint32_t *w0, *w1, *den;
    uint32_t *base;
    uint64_t *wpair, *wpair16;
    float *inv;
} dh_clahe_columns;

/* Fills c for an axis of n pixels, `tiles` tiles and `bins` bins per table. Returns 0, or -1
 * when memory is lacking (c is then empty and safe to free). */
int dh_clahe_columns_init(dh_clahe_columns *c, uint32_t n, uint32_t tiles, uint32_t bins);
void dh_clahe_columns_free(dh_clahe_columns *c);

/* The quads of a band (quads: dh_clahe_segments(tx) * bins words) from the tables of its two
 * rows of tiles: row0 (tile row p) and row1 (p + 1, or p again for a single row of tiles), each
 * tx tables of `bins` entries, tile ix's at ix * bins. */
void dh_clahe_quads_build(uint64_t *quads, const uint16_t *row0, const uint16_t *row1,
                          uint32_t tx, uint32_t bins);

/* The same, only over the bins a segment's pixels can reach: reach0 and reach1 hold, per tile of
 * rows p and p + 1 (tile ix at 2 ix), the first and last bin of the tile's samples inside the
 * window (first > last: none). A pixel of segment s and band p lies in one of the four tiles the
 * segment's quads blend, so the union of their ranges holds its bin. Bin 0 is always written
 * (the AVX2 blend reads it for pixels outside the window and drops it). At 65536 bins a band's
 * quads are megabytes, and a segment's tiles reach a fraction of the bins. */
void dh_clahe_quads_build_reached(uint64_t *quads, const uint16_t *row0, const uint16_t *row1,
                                  uint32_t tx, uint32_t bins, const uint32_t *reach0,
                                  const uint32_t *reach1);

/* One row's job: its samples (raw 16-bit patterns, signed or not) and output, the window
 * [lo, hi] in values (lo <= hi) with `bins` bins, the bin of every raw sample as clahe.h's
 * dh_clahe_bin gives it (bins: below the window, bins + 1: above; those give 0 and top), the
 * band's quads and the row's weights along y over den_y (dh_clahe_segment_at). */
typedef struct dh_clahe_row {
    const uint16_t *raw;
    uint16_t *out;
    int is_signed;
    int32_t lo, hi;
    uint32_t bins;
    const uint32_t *bin_of;
    uint16_t top;
    const uint64_t *quads;
    uint32_t wy0, wy1, den_y;
} dh_clahe_row;

/* How the vector builds compute a sample's bin in a window [lo, hi] of `bins` bins (bins <= W =
 * hi - lo + 1 values, u = v - lo): u >> shift where W / bins is 2^shift (shift >= 0), else
 * (shift -1) the high word of u magic with magic = ceil(bins 2^32 / W), which is
 * floor(u bins / W) exactly by clahe_rows_cpu.c's proof. */
typedef struct dh_clahe_bin_rule {
    int shift;
    uint32_t magic;
} dh_clahe_bin_rule;

/* Inline: the AVX2 blend here and the AVX-512 files share it, and files do not call each other
 * both ways. */
static inline dh_clahe_bin_rule dh_clahe_bin_rule_of(int32_t lo, int32_t hi, uint32_t bins)
{
    const uint32_t width = (uint32_t)((int64_t)hi - lo + 1);
    dh_clahe_bin_rule rule = {-1, 0};
    for (int k = 0; k <= 16; k++)
        if (((uint64_t)bins << k) == width)
            rule.shift = k;
    if (rule.shift < 0)
        rule.magic = (uint32_t)((((uint64_t)bins << 32) + width - 1) / width);
    return rule;
}

/* The build of the blend that runs here (a dh_clahe_path of clahe_cpu_path.h): the processor's
 * fastest (capped by DH_CLAHE_CPU_PATH) where every product of the vector builds' 32-bit lanes
 * is in bounds (den of a segment at most 32767, den_x den_y below 2^29: clahe_rows_cpu.c says
 * why) and the quad indices below 2^31, else DH_CLAHE_PATH_PORTABLE. max_den_y: the largest den
 * of a band. Any build up to the one returned runs here too (the tests run each). */
int dh_clahe_rows_fast(const dh_clahe_columns *c, uint32_t max_den_y);

/* Blends the row: out[x] = dh_clahe_blend2 of the pixel's four entries, by build `path` (at
 * most what dh_clahe_rows_fast returned). */
void dh_clahe_row_blend(const dh_clahe_row *r, const dh_clahe_columns *c, int path);

#endif /* DH_KERNELS_CLAHE_ROWS_CPU_H */
