// SPDX-License-Identifier: MIT
/*
 * equalize_cpu.h: the CPU twin of equalization (equalize_cpu.c): equalization tables from
 * histograms by the formulas of equalize_table.h, DICOM VOI window/level tables, the window
 * sources (min-max, percentiles, modality ranges) and the application of tables to samples.
 * Window/level tables are built on the host in double (they do not depend on the data) and
 * shared by both backends; the CUDA launchers are in equalize_cuda.h.
 */
#ifndef DH_KERNELS_EQUALIZE_CPU_H
#define DH_KERNELS_EQUALIZE_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "equalize_table.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Gathers the stats of hist (len bins) inside window w (table indices = stored - base, already
 * clamped to 0..len-1 by the caller or not: any part outside the table is ignored). */
void dh_eq_stats_gather(const uint64_t *hist, uint32_t len, int32_t base, dh_eq_window w,
                        double clip_limit, dh_eq_stats *stats);

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
#endif /* DH_KERNELS_EQUALIZE_CPU_H */
