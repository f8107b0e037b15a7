// SPDX-License-Identifier: MIT
/*
 * equalize.h: lookup tables over stored values (histogram equalization, windowed and
 * contrast-limited equalization, DICOM VOI window/level) and their application, with the CPU
 * twin in equalize_cpu.c and the CUDA launchers in equalize_cuda.cu. docs/equalization.md gives
 * the formulas; the functions here are their definition, and the GPU must equal them bit for bit.
 *
 * A table covers every representable stored value of the input: entry i maps the stored value
 * base + i, with base 0 (unsigned) or -2^(BitsStored-1) (signed) and len 2^BitsStored. Histograms
 * fed in have one bin per stored value in that same order (the dh_bin_map of
 * dh_eq_bin_map_init), so bin i counts the value base + i. Output values are 0 .. levels - 1.
 *
 * Equalization works on integers only: the cdf in 64 bits and the division exact, so every
 * backend gets the same table. Window/level tables are built on the host in double (they do not
 * depend on the data) and shared by both backends.
 */
#ifndef DH_KERNELS_EQUALIZE_H
#define DH_KERNELS_EQUALIZE_H

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

/* The histogram map with one bin per stored value of the table range. */
int dh_eq_bin_map_init(dh_bin_map *map, int32_t base, uint32_t len);

/* floor(a * b / c) exactly, for a <= c, c > 0, b < 2^32 (128-bit product). */
static inline DH_EQ_HD uint64_t dh_eq_muldiv(uint64_t a, uint64_t b, uint64_t c)
{
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

/* Gathers the stats of hist (len bins) inside window w (table indices = stored - base, already
 * clamped to 0..len-1 by the caller or not: any part outside the table is ignored). */
void dh_eq_stats_gather(const uint64_t *hist, uint32_t len, int32_t base, dh_eq_window w,
                        double clip_limit, dh_eq_stats *stats);

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

/* The equalization table of one histogram (len bins, one per stored value from base): values
 * below the window map to 0, above it to levels - 1, inside it by dh_eq_value over the cdf of
 * the pixels inside the window, after clipping when clip_limit > 0. levels is 2..65536.
 * lut has len entries. Returns 0, or -1 on bad arguments. */
int dh_eq_lut_build(const uint64_t *hist, int32_t base, uint32_t len, dh_eq_window w,
                    uint32_t levels, double clip_limit, uint16_t *lut);

/* DICOM VOI LUT functions (PS3.3 C.11.2.1.2), applied to modality values. */
typedef enum dh_eq_voi {
    DH_EQ_VOI_LINEAR = 0,
    DH_EQ_VOI_LINEAR_EXACT = 1,
    DH_EQ_VOI_SIGMOID = 2
} dh_eq_voi;

/* The window/level table: x = slope * stored + intercept, y by the VOI function with
 * ymin 0 and ymax levels - 1, then floor (truncation, like DCMTK) and clamped to 0..levels-1.
 * LINEAR needs width >= 1, the others width > 0. Returns 0, or -1 on bad arguments. */
int dh_voi_lut_build(int32_t base, uint32_t len, double slope, double intercept, double center,
                     double width, dh_eq_voi function, uint32_t levels, uint16_t *lut);

/* One VOI value (the definition dh_voi_lut_build tabulates). */
uint16_t dh_voi_value(double x, double center, double width, dh_eq_voi function,
                      uint32_t levels);

/* Window sources over a histogram (len bins from base), in stored values.
 * Min-max: the lowest and highest value present. Percentile p (0 <= p < 50): with N pixels and
 * k = floor(N * p / 100), the window runs from the (k+1)-th smallest pixel to the (k+1)-th
 * largest: the same number of pixels is cut at each end, p = 0 is min-max, and a mirrored image
 * gets the mirrored window. Both return 0, or -1 when the histogram is empty or p is out of
 * bounds. */
int dh_window_minmax(const uint64_t *hist, uint32_t len, int32_t base, dh_eq_window *w);
int dh_window_percentile(const uint64_t *hist, uint32_t len, int32_t base, double p,
                         dh_eq_window *w);

/* The stored values whose modality value slope * s + intercept lies in [lo, hi] (slope > 0),
 * clamped to the table range; an empty window (lo > hi) when none does. Returns 0, or -1 when
 * slope <= 0 or a bound is NaN. */
int dh_window_to_stored(double lo, double hi, double slope, double intercept, int32_t base,
                        uint32_t len, dh_eq_window *w);

/* The same for any modality function m(arg, s) that never decreases in s (a Modality LUT's, for
 * one). Returns 0, or -1 when a bound is NaN. */
typedef double (*dh_modality_fn)(const void *arg, int32_t stored);
int dh_window_to_stored_by(double lo, double hi, dh_modality_fn m, const void *arg,
                           int32_t base, uint32_t len, dh_eq_window *w);

/* Applies tables to samples (uint16_t or int16_t by is_signed): `slices` slices of slice_len
 * samples; with per_slice, slice z uses luts + z * len, else every slice uses luts. out gets
 * slice_len * slices values. threads <= 0: one per online processor. Returns 0, or -1 when a
 * thread could not be started. */
int dh_lut_apply_cpu(const void *data, int is_signed, size_t slice_len, size_t slices,
                     const uint16_t *luts, int per_slice, int32_t base, uint32_t len,
                     int threads, uint16_t *out);

#ifdef __cplusplus
}
#endif
#endif /* DH_KERNELS_EQUALIZE_H */
