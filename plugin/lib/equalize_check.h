// SPDX-License-Identifier: MIT
/*
 * equalize_check.h: the checks of dh_equalize_params and CLAHE's tile grid shared by
 * dh_equalize (equalize.c, a volume) and dh_equalize_device (equalize_device.c, device samples),
 * so both refuse the same parameters with the same messages.
 */
#ifndef DH_LIB_EQUALIZE_CHECK_H
#define DH_LIB_EQUALIZE_CHECK_H

#include <stdint.h>

#include "dicomhist.h"

/* The fields that need no image: struct_size, operation, VOI function, output bits, clip limit,
 * device, method, and CLAHE's bins and slice tiles. */
dh_status dh_eq_check_fields(dh_ctx *ctx, const dh_equalize_params *p);

/* CLAHE's tiles against the image's columns, rows and slices n[3] (`what` names the image in
 * the message); DH_OK for the global method. */
dh_status dh_eq_check_clahe_extent(dh_ctx *ctx, const dh_equalize_params *p, const uint32_t n[3],
                                   const char *what);

/* The window source and its values; DH_WINDOW_FILE is left to the caller (it needs a file). */
dh_status dh_eq_check_window(dh_ctx *ctx, const dh_equalize_params *p);

/* CLAHE's tiles along an axis of n pixels: as given, else from the tile size, else 8 (fewer
 * when the axis has fewer pixels). */
uint32_t dh_eq_clahe_tiles_along(uint32_t n, uint32_t tiles, uint32_t size);

#endif /* DH_LIB_EQUALIZE_CHECK_H */
