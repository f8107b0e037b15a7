// SPDX-License-Identifier: MIT
/*
 * clahe_cpu.h: the CPU twin of contrast-limited adaptive histogram equalization (clahe_cpu.c):
 * per tile a histogram over the stored values inside the window, its table by the global
 * equalization code (dh_eq_lut_build, clip limit and redistribution included), and every pixel
 * blended between the tables of its nearest tile centres by the integer formulas of clahe.h.
 * docs/equalization.md ("Adaptive equalization (CLAHE)") is the definition.
 */
#ifndef DH_KERNELS_CLAHE_CPU_H
#define DH_KERNELS_CLAHE_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "clahe.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The image and its tiling. nx columns, ny rows, nz slices (samples x fastest, then y, then z).
 * tx, ty, tz tiles along each axis, 1 <= t <= n. With volume 0 every slice is equalized on its
 * own with tx * ty tiles (tz is ignored); with volume 1 the tiles are boxes across the slices and
 * the pixel blend is trilinear. */
typedef struct dh_clahe_shape {
    uint32_t nx, ny, nz;
    uint32_t tx, ty, tz;
    int volume;
} dh_clahe_shape;

/* The number of tiles along an axis of n pixels for tiles of at most `size` pixels:
 * ceil(n / size), at least 1 (the tiles then split the axis evenly, clahe.h). 0 when n or size
 * is 0. */
uint32_t dh_clahe_tiles_for_size(uint32_t n, uint32_t size);

/* CLAHE of samples (uint16_t or int16_t by is_signed) whose table range is base .. base+len-1
 * (dh_eq_table_range). windows: one per slice (volume 0) or one (volume 1), in stored values,
 * clamped to the table range; values below a window give 0, above it levels - 1. bins: per tile
 * histogram bins over the window, 1..65536, or 0 for one per value (never more than one per
 * value). clip_limit as dh_eq_lut_build's (0: none), per tile. levels 2..65536. threads <= 0:
 * one per online processor. out gets nx * ny * nz values.
 * Returns 0, or -1 on bad arguments or when memory or a thread is lacking. */
int dh_clahe_cpu(const void *data, int is_signed, int32_t base, uint32_t len,
                 const dh_clahe_shape *shape, const dh_eq_window *windows, uint32_t bins,
                 uint32_t levels, double clip_limit, int threads, uint16_t *out);

#ifdef __cplusplus
}
#endif
#endif /* DH_KERNELS_CLAHE_CPU_H */
