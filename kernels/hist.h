// SPDX-License-Identifier: MIT
/*
 * hist.h: the 1D histogram operation over 16-bit stored values, its CPU twin (hist_cpu.c) and
 * its CUDA launcher (hist_cuda.cu). The CPU twin is the reference the GPU must equal bit for bit.
 *
 * Binning is described by a dh_bin_map built once on the host (dh_bin_map_init_*), so both
 * backends read the same integers and never redo floating-point arithmetic that could differ.
 *
 * Output layout: a histogram is (bins + 2) uint64 slots: counts[0..bins-1], then underflow at
 * [bins] and overflow at [bins + 1]. Per-slice output is `slices` such histograms back to back.
 */
#ifndef DH_KERNELS_HIST_H
#define DH_KERNELS_HIST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DH_HIST_MAX_BINS 65536u

/* How a stored value s becomes a slot.
 *
 * Affine (lut == NULL): s < lo is underflow, s >= hi is overflow, otherwise
 *   bin = floor((s - lo) * bins / (hi - lo))       (exact integer arithmetic, 64-bit product)
 * with lo < hi any int32 (the difference and the product are taken in 64 bits). shift >= 0 marks
 * the fast path where the formula is (s - lo) >> shift (hi - lo == bins << shift); shift < 0
 * otherwise.
 *
 * Table (lut != NULL): slot = lut[s - lut_base], giving 0..bins-1, bins (underflow) or bins + 1
 * (overflow). A table always covers the whole sample type: lut_len 65536, lut_base -32768 for
 * int16_t data and 0 for uint16_t data. Used where the
 * range is not integer in stored units (modality units with a non-integer slope, fractional
 * range ends): the host evaluates the exact formula once per possible stored value. */
typedef struct dh_bin_map {
    uint32_t bins;
    int32_t lo, hi;
    int32_t shift;
    const uint32_t *lut;
    int32_t lut_base;
    uint32_t lut_len;
} dh_bin_map;

/* The affine map for an integer range [lo, hi) in stored units. Returns 0, or -1 when the
 * arguments are out of bounds (bins 0 or > 65536, lo >= hi, an end outside int32). */
int dh_bin_map_init_affine(dh_bin_map *map, uint32_t bins, int64_t lo, int64_t hi);

/* The slot of one stored value under a map: the definition the kernels must agree with. */
static inline uint32_t dh_bin_map_slot(const dh_bin_map *map, int32_t s)
{
    if (map->lut)
        return map->lut[s - map->lut_base];
    if (s < map->lo)
        return map->bins;
    if (s >= map->hi)
        return map->bins + 1;
    if (map->shift >= 0)
        return (uint32_t)((uint64_t)((int64_t)s - map->lo) >> map->shift);
    return (uint32_t)(((uint64_t)((int64_t)s - map->lo) * map->bins) /
                      (uint64_t)((int64_t)map->hi - map->lo));
}

/* Sample types: the data is uint16_t (is_signed 0) or int16_t (is_signed 1). */

/* CPU: histograms of `slices` consecutive slices of slice_len samples each into
 * out[(bins + 2) * slices] when per_slice, else into one histogram out[bins + 2]. The output is
 * overwritten, not accumulated. threads <= 0 means one per online processor.
 * Returns 0, or -1 when out of memory or a thread could not be started. */
int dh_hist_cpu(const void *data, int is_signed, size_t slice_len, size_t slices, int per_slice,
                const dh_bin_map *map, int threads, uint64_t *out);

/* The plain single-threaded loop the CPU twin is measured and tested against. */
void dh_hist_naive(const void *data, int is_signed, size_t n, const dh_bin_map *map,
                   uint64_t *out);

#ifdef __cplusplus
}
#endif
#endif /* DH_KERNELS_HIST_H */
