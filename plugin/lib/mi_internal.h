// SPDX-License-Identifier: MIT
/*
 * mi_internal.h: what a dh_mi_fixed holds, for the library's own files and tests (the public
 * header keeps it opaque).
 */
#ifndef DH_PLUGIN_MI_INTERNAL_H
#define DH_PLUGIN_MI_INTERNAL_H

#include "dicomhist.h"
#include "mi_joint.h"
#include "mi_scores.h"

struct dh_mi_fixed {
    dh_mi_params params;
    dh_mi_fixed_info info;
    int sample_type;       /* of the fixed image (dh_sample_type) */
    dh_jaxis axis_fixed;   /* stored values */
    dh_faxis moving_faxis; /* float32 moving images, when moving_faxis_ok */
    int moving_faxis_ok;
    double fixed_sum;     /* fixed-order term sum of the fixed marginal (mi_scores.h) */
    uint16_t *bins;       /* CPU: the prepared fixed bins (NULL once on the GPU) */
    uint32_t *joint;      /* CPU: max_batch joint histograms of the last evaluation */
    uint32_t last_count;  /* images in the last evaluation */
    struct dh_mi_gpu *gpu; /* when the image lives on the GPU (kernels/mi_cuda.h) */
    char msg[512];        /* the GPU layer's message, copied into the context */
};

#endif /* DH_PLUGIN_MI_INTERNAL_H */
