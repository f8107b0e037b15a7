// SPDX-License-Identifier: MIT
/*
 * modality.h: modality values, the one place that knows how a stored value becomes one: the
 * linear rescale (slope * s + intercept) or, when the file has a Modality LUT Sequence, its
 * table, with stored values below or above the mapped range clamped to the first or last entry
 * (PS3.3 C.11.1). Histograms, windows, percentiles and `info` all go through here.
 */
#ifndef DH_PLUGIN_MODALITY_H
#define DH_PLUGIN_MODALITY_H

#include <stdint.h>

#include "volume.h"

/* The table entry of stored value s (the volume must have a Modality LUT). */
static inline uint16_t dh_modality_lut_entry(const dh_volume *v, int32_t s)
{
    int64_t i = (int64_t)s - v->modality_lut_first;
    if (i < 0)
        i = 0;
    if (i > (int64_t)v->modality_lut_entries - 1)
        i = (int64_t)v->modality_lut_entries - 1;
    return v->modality_lut[i];
}

/* The modality value of stored value s. */
static inline double dh_modality_of(const dh_volume *v, int32_t s)
{
    if (v->has_modality_lut)
        return (double)dh_modality_lut_entry(v, s);
    return v->format.rescale_slope * s + v->format.rescale_intercept;
}

/* The smallest and largest table entry that a representable stored value reaches (the
 * volume must have a Modality LUT): the LUT's output range for this pixel format. */
void dh_modality_lut_span(const dh_volume *v, int32_t *lo, int32_t *hi);

/* How the modality value follows the representable stored values: 1 non-decreasing (a
 * constant included), -1 non-increasing, 0 neither (a LUT that folds back). */
int dh_modality_order(const dh_volume *v);

/* Copies the Modality LUT of a decoded image into the volume (nothing when it has none).
 * Returns 0, or -1 when out of memory. */
int dh_modality_lut_copy(dh_volume *v, const dh_dicom_image *image);

/* A fingerprint of an image's Modality LUT (0 without one), so that the slices of a series can
 * be checked for the same table without keeping each one. */
uint64_t dh_modality_lut_hash(const dh_dicom_image *image);

/* Sets v->modality_min/max from the stored values present (stored_min/max already set). */
void dh_modality_update_range(dh_volume *v);

#endif /* DH_PLUGIN_MODALITY_H */
