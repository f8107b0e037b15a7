// SPDX-License-Identifier: MIT
/*
 * volume_access.c: the public accessors of a dh_volume (the struct is opaque to hosts): its
 * format, geometry, identity, tables and slices, read and never changed.
 */
#include <string.h>

#include "volume.h"

uint32_t dh_volume_rows(const dh_volume *v) { return v->format.rows; }
uint32_t dh_volume_columns(const dh_volume *v) { return v->format.columns; }
uint32_t dh_volume_slices(const dh_volume *v) { return v->slices; }
uint32_t dh_volume_bits_allocated(const dh_volume *v) { return v->format.bits_allocated; }
uint32_t dh_volume_bits_stored(const dh_volume *v) { return v->format.bits_stored; }
int dh_volume_is_signed(const dh_volume *v) { return v->format.is_signed; }
dh_photometric dh_volume_photometric(const dh_volume *v) { return v->format.photometric; }
double dh_volume_rescale_slope(const dh_volume *v) { return v->format.rescale_slope; }
double dh_volume_rescale_intercept(const dh_volume *v) { return v->format.rescale_intercept; }
double dh_volume_spacing(const dh_volume *v) { return v->spacing; }
const char *dh_volume_path(const dh_volume *v) { return v->path; }
const char *dh_volume_series_uid(const dh_volume *v) { return v->series_uid; }
const char *dh_volume_study_uid(const dh_volume *v) { return v->study_uid; }
const char *dh_volume_modality(const dh_volume *v) { return v->modality; }
const char *dh_volume_transfer_syntax(const dh_volume *v) { return v->transfer_syntax; }
size_t dh_volume_warning_count(const dh_volume *v) { return v->warning_count; }
const void *dh_volume_data(const dh_volume *v) { return v->data; }

int dh_volume_lossy(const dh_volume *v, const char **method)
{
    if (method)
        *method = v->lossy_method;
    return v->is_lossy;
}

int dh_volume_voi_lut(const dh_volume *v, uint32_t *count, int32_t *first_mapped,
                      uint32_t *entries, uint32_t *bits, const uint16_t **data)
{
    if (!v->voi_lut_count)
        return 0;
    if (count)
        *count = v->voi_lut_count;
    if (first_mapped)
        *first_mapped = v->voi_lut_first;
    if (entries)
        *entries = v->voi_lut_entries;
    if (bits)
        *bits = v->voi_lut_bits;
    if (data)
        *data = v->voi_lut;
    return 1;
}

int dh_volume_window(const dh_volume *v, double *center, double *width)
{
    if (!v->has_window)
        return 0;
    if (center)
        *center = v->window_center;
    if (width)
        *width = v->window_width;
    return 1;
}

const char *dh_volume_slice_source(const dh_volume *v, uint32_t slice)
{
    return slice < v->slices ? v->slice[slice].source : "";
}

uint32_t dh_volume_slice_frame(const dh_volume *v, uint32_t slice)
{
    return slice < v->slices ? v->slice[slice].frame : 0;
}

double dh_volume_slice_location(const dh_volume *v, uint32_t slice)
{
    return slice < v->slices ? v->slice[slice].location : 0;
}

int dh_volume_slice_position(const dh_volume *v, uint32_t slice, double xyz[3])
{
    if (slice >= v->slices || !v->slice[slice].has_position)
        return 0;
    memcpy(xyz, v->slice[slice].position, 3 * sizeof *xyz);
    return 1;
}

const char *dh_volume_warning(const dh_volume *v, size_t i)
{
    return i < v->warning_count ? v->warnings[i] : "";
}

size_t dh_volume_sample_count(const dh_volume *v)
{
    return (size_t)v->format.rows * v->format.columns * v->slices;
}

void dh_volume_stored_range(const dh_volume *v, int32_t *min, int32_t *max)
{
    if (min)
        *min = v->stored_min;
    if (max)
        *max = v->stored_max;
}

const char *dh_volume_decoder(const dh_volume *v, const char **note)
{
    if (note)
        *note = v->decoder_note;
    return v->decoders;
}
