// SPDX-License-Identifier: MIT
/*
 * mi_joint_cpu.c: the CPU twin of the joint histogram (kernels/mi_joint.h): the fixed image binned once,
 * then one pass over each moving image. Counts are integers, so any order gives the same result;
 * the GPU kernels must equal these counts exactly.
 */
#include "mi_joint.h"

#include <math.h>
#include <string.h>

#define SAMPLE(data, is_signed, i) \
    ((is_signed) ? (int32_t)((const int16_t *)(data))[i] : (int32_t)((const uint16_t *)(data))[i])

int dh_jaxis_init(dh_jaxis *axis, uint32_t bins, int64_t lo, int64_t hi)
{
    if (!axis || bins < DH_MI_JOINT_MIN_BINS || bins > DH_MI_JOINT_MAX_BINS || lo > hi ||
        lo < -32768 || hi > 65535 || hi - lo + 1 > 65536)
        return -1;
    axis->bins = bins;
    axis->lo = (int32_t)lo;
    axis->hi = (int32_t)hi;
    axis->width = (uint32_t)(hi - lo + 1);
    axis->magic = axis->width == 1 ? 0 : (uint32_t)((UINT64_C(1) << 32) / axis->width);
    return 0;
}

int dh_faxis_init(dh_faxis *axis, uint32_t bins, float lo, float hi)
{
    if (!axis || bins < DH_MI_JOINT_MIN_BINS || bins > DH_MI_JOINT_MAX_BINS || !isfinite(lo) ||
        !isfinite(hi) || !(lo < hi))
        return -1;
    const float width = hi - lo;
    if (!isfinite(width) || !isfinite(width * (float)bins))
        return -1;
    axis->bins = bins;
    axis->lo = lo;
    axis->hi = hi;
    axis->width = width;
    return 0;
}

size_t dh_mi_minmax(const void *data, int is_signed, size_t n, const uint8_t *mask,
                       int32_t *lo, int32_t *hi)
{
    size_t seen = 0;
    int32_t mn = INT32_MAX, mx = INT32_MIN;
    for (size_t i = 0; i < n; i++) {
        if (mask && !mask[i])
            continue;
        int32_t v = SAMPLE(data, is_signed, i);
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
        seen++;
    }
    if (seen) {
        *lo = mn;
        *hi = mx;
    }
    return seen;
}

/* The marginal and the count of the prepared bins out[n] (DH_MI_JOINT_SKIP left out). */
static size_t tally_fixed_bins(const uint16_t *out, size_t n, uint32_t bins, uint64_t *marginal)
{
    size_t counted = 0;
    if (marginal)
        memset(marginal, 0, bins * sizeof *marginal);
    for (size_t i = 0; i < n; i++)
        if (out[i] != DH_MI_JOINT_SKIP) {
            counted++;
            if (marginal)
                marginal[out[i]]++;
        }
    return counted;
}

size_t dh_mi_bin_fixed(const void *data, int is_signed, size_t n, const uint8_t *mask,
                          const dh_jaxis *axis, uint16_t *out, uint64_t *marginal)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (uint16_t)((mask && !mask[i]) ? DH_MI_JOINT_SKIP
                                               : dh_jaxis_bin(axis, SAMPLE(data, is_signed, i)));
    return tally_fixed_bins(out, n, axis->bins, marginal);
}

size_t dh_mi_joint_cpu(const uint16_t *fixed_bins, uint32_t bins_fixed, const void *moving,
                    int moving_signed, size_t n, const uint8_t *valid, const dh_jaxis *moving_axis,
                    uint32_t *joint)
{
    const uint32_t bm = moving_axis->bins;
    memset(joint, 0, (size_t)bins_fixed * bm * sizeof *joint);
    size_t counted = 0;
    /* The same division-free bin as the kernels; equal to the definition (tested). */
    const uint32_t width = moving_axis->width, magic = moving_axis->magic;
    const int32_t lo = moving_axis->lo;
    for (size_t i = 0; i < n; i++) {
        uint32_t f = fixed_bins[i];
        if (f == DH_MI_JOINT_SKIP || (valid && !valid[i]))
            continue;
        uint32_t m = dh_jaxis_bin_fast(bm, lo, width, magic, SAMPLE(moving, moving_signed, i));
        if (m == DH_MI_JOINT_SKIP)
            continue;
        joint[f * bm + m]++;
        counted++;
    }
    return counted;
}

size_t dh_mi_bin_fixed_f32(const float *data, size_t n, const uint8_t *mask,
                              const dh_faxis *axis, uint16_t *out, uint64_t *marginal)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (uint16_t)((mask && !mask[i])
                                ? DH_MI_JOINT_SKIP
                                : dh_faxis_bin(axis->bins, axis->lo, axis->hi, axis->width, data[i]));
    return tally_fixed_bins(out, n, axis->bins, marginal);
}

size_t dh_mi_joint_cpu_f32(const uint16_t *fixed_bins, uint32_t bins_fixed, const float *moving,
                        size_t n, const uint8_t *valid, const dh_faxis *moving_axis,
                        uint32_t *joint)
{
    const uint32_t bm = moving_axis->bins;
    memset(joint, 0, (size_t)bins_fixed * bm * sizeof *joint);
    size_t counted = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t f = fixed_bins[i];
        if (f == DH_MI_JOINT_SKIP || (valid && !valid[i]))
            continue;
        uint32_t m = dh_faxis_bin(bm, moving_axis->lo, moving_axis->hi, moving_axis->width,
                                  moving[i]);
        if (m == DH_MI_JOINT_SKIP)
            continue;
        joint[f * bm + m]++;
        counted++;
    }
    return counted;
}

void dh_mi_joint_naive(const void *fixed, int fixed_signed, const uint8_t *fixed_mask,
                    const dh_jaxis *fixed_axis, const void *moving, int moving_signed,
                    const uint8_t *valid, const dh_jaxis *moving_axis, size_t n, uint32_t *joint)
{
    const uint32_t bf = fixed_axis->bins, bm = moving_axis->bins;
    for (size_t i = 0; i < (size_t)bf * bm; i++)
        joint[i] = 0;
    for (size_t i = 0; i < n; i++) {
        if ((fixed_mask && !fixed_mask[i]) || (valid && !valid[i]))
            continue;
        int64_t a = SAMPLE(fixed, fixed_signed, i), b = SAMPLE(moving, moving_signed, i);
        if (a < fixed_axis->lo || a > fixed_axis->hi || b < moving_axis->lo || b > moving_axis->hi)
            continue;
        int64_t fa = (a - fixed_axis->lo) * bf / ((int64_t)fixed_axis->hi - fixed_axis->lo + 1);
        int64_t fb = (b - moving_axis->lo) * bm / ((int64_t)moving_axis->hi - moving_axis->lo + 1);
        joint[fa * bm + fb]++;
    }
}
