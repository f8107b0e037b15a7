// SPDX-License-Identifier: MIT
/*
 * equalize_skimage.h: dh_equalize's scikit-image-compatible mode (method
 * DH_EQ_METHOD_CLAHE_SKIMAGE), equalize_skimage.c, over kernels/clahe_skimage.h.
 */
#ifndef DH_LIB_EQUALIZE_SKIMAGE_H
#define DH_LIB_EQUALIZE_SKIMAGE_H

#include "dicomhist.h"

/* dh_equalize for the scikit-image mode: checks params (the caller has checked the pointers)
 * and makes *out. */
dh_status dh_eq_skimage(dh_ctx *ctx, const dh_volume *v, const dh_equalize_params *p,
                        dh_equalized **out);

#endif /* DH_LIB_EQUALIZE_SKIMAGE_H */
