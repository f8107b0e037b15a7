// SPDX-License-Identifier: MIT
/*
 * modality.c: modality values (modality.h) and their public accessors of section 3.
 */
#include "modality.h"

#include <stdlib.h>
#include <string.h>

/* The representable stored values of the volume's format: [lo, hi]. */
static void representable(const dh_volume *v, int32_t *lo, int32_t *hi)
{
    int32_t span = (int32_t)1 << v->format.bits_stored;
    *lo = v->format.is_signed ? -span / 2 : 0;
    *hi = *lo + span - 1;
}

/* The table indices the representable stored values reach: [first, last]. */
static void reachable(const dh_volume *v, int64_t *first, int64_t *last)
{
    int32_t lo, hi;
    representable(v, &lo, &hi);
    const int64_t n = v->modality_lut_entries;
    *first = (int64_t)lo - v->modality_lut_first;
    *last = (int64_t)hi - v->modality_lut_first;
    *first = *first < 0 ? 0 : *first > n - 1 ? n - 1 : *first;
    *last = *last < 0 ? 0 : *last > n - 1 ? n - 1 : *last;
}

void dh_modality_lut_span(const dh_volume *v, int32_t *lo, int32_t *hi)
{
    int64_t first, last;
    reachable(v, &first, &last);
    uint16_t a = UINT16_MAX, b = 0;
    for (int64_t i = first; i <= last; i++) {
        a = v->modality_lut[i] < a ? v->modality_lut[i] : a;
        b = v->modality_lut[i] > b ? v->modality_lut[i] : b;
    }
    *lo = a, *hi = b;
}

int dh_modality_order(const dh_volume *v)
{
    if (!v->has_modality_lut)
        return v->format.rescale_slope < 0 ? -1 : 1;
    int64_t first, last;
    reachable(v, &first, &last);
    int up = 1, down = 1;
    for (int64_t i = first + 1; i <= last; i++) {
        up &= v->modality_lut[i] >= v->modality_lut[i - 1];
        down &= v->modality_lut[i] <= v->modality_lut[i - 1];
    }
    return up ? 1 : down ? -1 : 0;
}

int dh_modality_lut_copy(dh_volume *v, const dh_dicom_image *image)
{
    if (!image->has_modality_lut || !image->modality_lut)
        return 0;
    size_t bytes = (size_t)image->modality_lut_entries * sizeof *v->modality_lut;
    if (!(v->modality_lut = malloc(bytes)))
        return -1;
    memcpy(v->modality_lut, image->modality_lut, bytes);
    v->has_modality_lut = 1;
    v->modality_lut_first = image->modality_lut_first;
    v->modality_lut_entries = image->modality_lut_entries;
    v->modality_lut_bits = image->modality_lut_bits;
    return 0;
}

uint64_t dh_modality_lut_hash(const dh_dicom_image *image)
{
    if (!image->has_modality_lut || !image->modality_lut)
        return 0;
    /* FNV-1a over the descriptor and the entries. */
    uint64_t h = 14695981039346656037ull;
    const uint32_t head[3] = {(uint32_t)image->modality_lut_first, image->modality_lut_entries,
                              image->modality_lut_bits};
    for (int i = 0; i < 3; i++)
        h = (h ^ head[i]) * 1099511628211ull;
    for (uint32_t i = 0; i < image->modality_lut_entries; i++)
        h = (h ^ image->modality_lut[i]) * 1099511628211ull;
    return h;
}

void dh_modality_update_range(dh_volume *v)
{
    if (!v->has_modality_lut) {
        double a = dh_modality_of(v, v->stored_min), b = dh_modality_of(v, v->stored_max);
        v->modality_min = a < b ? a : b;
        v->modality_max = a < b ? b : a;
        return;
    }
    /* A LUT need not be monotone: the extremes are over every distinct value present. */
    unsigned char *present = calloc(65536, 1);
    size_t n = dh_volume_sample_count(v);
    uint16_t lo = UINT16_MAX, hi = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t s =
            v->format.is_signed ? ((const int16_t *)v->data)[i] : ((const uint16_t *)v->data)[i];
        const size_t at = (size_t)(v->format.is_signed ? s + 32768 : s);
        if (present && present[at])
            continue;
        if (present)
            present[at] = 1;
        uint16_t m = dh_modality_lut_entry(v, s);
        lo = m < lo ? m : lo;
        hi = m > hi ? m : hi;
    }
    free(present);
    v->modality_min = n ? lo : 0;
    v->modality_max = n ? hi : 0;
}

/* Public accessors. */
double dh_volume_modality_value(const dh_volume *v, int32_t stored)
{
    return dh_modality_of(v, stored);
}

void dh_volume_modality_range(const dh_volume *v, double *min, double *max)
{
    if (min)
        *min = v->modality_min;
    if (max)
        *max = v->modality_max;
}

int dh_volume_modality_lut(const dh_volume *v, int32_t *first_mapped, uint32_t *entries,
                           uint32_t *bits, const uint16_t **data)
{
    if (!v->has_modality_lut)
        return 0;
    if (first_mapped)
        *first_mapped = v->modality_lut_first;
    if (entries)
        *entries = v->modality_lut_entries;
    if (bits)
        *bits = v->modality_lut_bits;
    if (data)
        *data = v->modality_lut;
    return 1;
}
