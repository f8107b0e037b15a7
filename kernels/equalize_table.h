// SPDX-License-Identifier: MIT
/*
 * equalize_table.h: what the equalization tables of both twins (equalize_cpu.c, equalize_cuda.cu)
 * share: the layout of a table over stored values and the integer formulas of equalization, as
 * inline functions the host and the device compile alike. docs/equalization.md gives the
 * formulas; the functions here are their definition, and the GPU must equal them bit for bit.
 *
 * A table covers every representable stored value of the input: entry i maps the stored value
 * base + i, with base 0 (unsigned) or -2^(BitsStored-1) (signed) and len 2^BitsStored. Histograms
 * fed in have one bin per stored value in that same order (the dh_bin_map of
 * dh_eq_bin_map_init), so bin i counts the value base + i. Output values are 0 .. levels - 1.
 *
 * Equalization works on integers only: the cdf in 64 bits and the division exact, so every
 * backend gets the same table.
 */
#ifndef DH_KERNELS_EQUALIZE_TABLE_H
#define DH_KERNELS_EQUALIZE_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "hist.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__CUDACC__)
#define DH_EQ_HD __host__ __device__
#else
#define DH_EQ_HD
#endif

/* Where equalization is computed, in stored values, inclusive. lo > hi is an empty window. */
typedef struct dh_eq_window {
    int32_t lo, hi;
} dh_eq_window;

/* The table range of a pixel format: base and len as described above. Returns 0, or -1 when
 * bits_stored is not 1..16. */
int dh_eq_table_range(uint32_t bits_stored, int is_signed, int32_t *base, uint32_t *len);

/* The histogram map with one bin per stored value of the table range. Both defined in
 * equalize_cpu.c. */
int dh_eq_bin_map_init(dh_bin_map *map, int32_t base, uint32_t len);

/* floor(a * b / c) exactly, for a <= c, c > 0, b < 2^32 (128-bit product). When a < 2^32 the
 * product fits 64 bits and the 64-bit division gives the same quotient several times faster
 * (a CLAHE tile builds thousands of entries per table). */
static inline DH_EQ_HD uint64_t dh_eq_muldiv(uint64_t a, uint64_t b, uint64_t c)
{
    if ((a >> 32) == 0)
        return a * b / c;
    return (uint64_t)(((unsigned __int128)a * b) / c);
}

/* Everything equalization needs to know about a histogram inside a window, gathered in one pass
 * (the GPU gathers the same by reductions):
 *   count      pixels inside the window
 *   first/last lowest and highest bin (table index) with a pixel inside the window; first > last
 *              when the window holds no pixel
 *   limit      the clip limit in pixels per bin (0: no clipping)
 *   excess     pixels above the limit, summed over the bins
 * The clip limit for a factor x > 0 is max(1, floor(x * count / (last - first + 1))): x times the
 * mean count of the bins between the lowest and the highest value present. */
typedef struct dh_eq_stats {
    uint64_t count;
    int64_t first, last;
    uint64_t limit, excess;
} dh_eq_stats;

/* The clip limit from the count, span and factor (see dh_eq_stats); 0 when clip_limit <= 0. */
static inline DH_EQ_HD uint64_t dh_eq_clip_limit(double clip_limit, uint64_t count,
                                                 uint64_t span)
{
    if (!(clip_limit > 0) || span == 0)
        return 0;
    double l = clip_limit * (double)count / (double)span;
    uint64_t limit = l >= 18446744073709549568.0 ? UINT64_MAX : (uint64_t)l;
    return limit < 1 ? 1 : limit;
}

/* The count of table index i after clipping and redistribution. The excess is spread over the
 * span [first, last]: every bin gets excess / span, and the remainder r goes one pixel each to
 * the bins first, first + step, first + 2 step, ... (r of them) with step = max(span / r, 1).
 * Bins outside the span keep their count (zero inside the window). The total is unchanged. */
static inline DH_EQ_HD uint64_t dh_eq_clipped(uint64_t h, int64_t i, const dh_eq_stats *s)
{
    if (s->limit == 0 || i < s->first || i > s->last)
        return h;
    uint64_t span = (uint64_t)(s->last - s->first + 1);
    uint64_t share = s->excess / span, rest = s->excess % span;
    uint64_t c = (h < s->limit ? h : s->limit) + share;
    if (rest) {
        uint64_t step = span / rest;
        if (step < 1)
            step = 1;
        uint64_t k = (uint64_t)(i - s->first);
        if (k % step == 0 && k / step < rest)
            c++;
    }
    return c;
}

/* The equalized value of a stored value whose (clipped) cdf inside the window is cdf:
 *   out = floor((cdf - cdf_min) * (levels - 1) / (count - cdf_min))
 * with cdf_min the (clipped) count of the first bin present. When count == cdf_min (one distinct
 * value, or none, inside the window) the numerator is zero everywhere and the result is 0: the
 * only value present maps to 0, as the lowest value of any image does. */
static inline DH_EQ_HD uint16_t dh_eq_value(uint64_t cdf, uint64_t cdf_min, uint64_t count,
                                            uint32_t levels)
{
    if (cdf <= cdf_min || count <= cdf_min)
        return 0;
    return (uint16_t)dh_eq_muldiv(cdf - cdf_min, levels - 1, count - cdf_min);
}

#ifdef __cplusplus
}
#endif
#endif /* DH_KERNELS_EQUALIZE_TABLE_H */
