// SPDX-License-Identifier: MIT
/*
 * clahe_fast.h: clahe.h's bin of a value and one rounding of the blend without a division per
 * pixel, as the GPU twin (clahe_cuda.cu) computes them. Same results as dh_clahe_bin and
 * dh_clahe_blend2/3 for every input they are used on (tests/test_clahe_fast.c checks it on the
 * CPU, where the same code compiles): a 64-bit division is dozens of instructions on a GPU, and
 * a pixel would pay one for its bin and one for its rounding.
 *
 * The bin floor(p / W) with p = (v - lo) * bins < 2^32 and W = hi - lo + 1 <= 65536 is the high
 * word of p * M, M = ceil(2^64 / W): the error p (M - 2^64 / W) / 2^64 < 2^-32 never reaches the
 * next integer, since the fraction of p / W is at most 1 - 1 / W and 1 / W >= 2^-16.
 * The rounding floor(N / D) takes a float quotient and corrects it by one exact integer
 * remainder test each way: the quotient is below 2^17 and a float carries 24 bits, so the float
 * is never more than one off.
 */
#ifndef DH_KERNELS_CLAHE_FAST_H
#define DH_KERNELS_CLAHE_FAST_H

#include <stdint.h>

#include "clahe.h"

#ifdef __cplusplus
extern "C" {
#endif

/* M = ceil(2^64 / width) for the bin's multiply (width 1 gives 0: its only p is 0). */
static inline DH_EQ_HD uint64_t dh_clahe_bin_magic(uint32_t width)
{
    return UINT64_MAX / width + 1;
}

/* dh_clahe_bin(v, lo, hi, bins) with magic = dh_clahe_bin_magic(hi - lo + 1). */
static inline DH_EQ_HD uint32_t dh_clahe_bin_fast(int32_t v, int32_t lo, uint32_t bins,
                                                  uint64_t magic)
{
    uint64_t p = (uint64_t)(uint32_t)(v - lo) * bins;
#ifdef __CUDA_ARCH__
    return (uint32_t)__umul64hi(p, magic);
#else
    return (uint32_t)(((unsigned __int128)p * magic) >> 64);
#endif
}

/* floor(n / d) for d > 0, n < 2^62, d < 2^46 and a quotient below 2^17. The float quotient of
 * the rounded n and d (each within 2^-24 relative, the division within 2 ulp on the GPU) is
 * within 2^-20 relative of n / d, so within 1/8 of it below 2^17: truncated, it is the exact
 * quotient or one off, and one remainder test each way corrects it. (Written as two tests, not
 * loops: a compiler turns a correction loop back into a division.) n converts as two 32-bit
 * halves: a 64-bit integer to float conversion is a long sequence on the GPU. */
static inline DH_EQ_HD uint32_t dh_clahe_div_small(uint64_t n, uint64_t d)
{
    const float fn = (float)(uint32_t)(n >> 32) * 4294967296.0f + (float)(uint32_t)n;
    const float fd = (float)(uint32_t)(d >> 32) * 4294967296.0f + (float)(uint32_t)d;
#ifdef __CUDA_ARCH__
    const float f = __fdividef(fn, fd);
#else
    const float f = fn / fd;
#endif
    int64_t q = (int64_t)f;
    int64_t r = (int64_t)n - q * (int64_t)d;
    if (r < 0) {
        q--;
        r += (int64_t)d;
    }
    if (r >= (int64_t)d)
        q++;
    return (uint32_t)q;
}

/* dh_clahe_blend2, the same value: the row blends fit 32 bits (den <= 65535, entries < 2^16). */
static inline DH_EQ_HD uint16_t dh_clahe_blend2_fast(dh_clahe_axis_weight ax,
                                                     dh_clahe_axis_weight ay, uint32_t t00,
                                                     uint32_t t10, uint32_t t01, uint32_t t11)
{
    uint32_t wx0 = ax.den - ax.w1, wy0 = ay.den - ay.w1;
    uint32_t row0 = wx0 * t00 + ax.w1 * t10;
    uint32_t row1 = wx0 * t01 + ax.w1 * t11;
    uint64_t num = (uint64_t)wy0 * row0 + (uint64_t)ay.w1 * row1;
    uint64_t den = (uint64_t)ax.den * ay.den;
    return (uint16_t)dh_clahe_div_small(2 * num + den, 2 * den);
}

/* Whether dh_clahe_blend3_fast is exact for every pixel of a volume whose axis denominators are
 * at most dx, dy, dz: row blends within 32 bits, the doubled numerator below 2^62 and the
 * denominator below 2^46. (Every axis of clahe.h has den <= n <= 65535, so 2D always is.) */
static inline int dh_clahe_blend3_fast_ok(uint64_t dx, uint64_t dy, uint64_t dz)
{
    return dx <= 65536 && dy <= 65536 && dz <= 65536 &&
           dx * dy * dz < ((uint64_t)1 << 44);
}

/* dh_clahe_blend3, the same value where dh_clahe_blend3_fast_ok holds. */
static inline DH_EQ_HD uint16_t dh_clahe_blend3_fast(dh_clahe_axis_weight ax,
                                                     dh_clahe_axis_weight ay,
                                                     dh_clahe_axis_weight az, const uint32_t t[8])
{
    uint32_t wx0 = ax.den - ax.w1, wy0 = ay.den - ay.w1, wz0 = az.den - az.w1;
    uint64_t plane[2];
    for (int dz = 0; dz < 2; dz++) {
        const uint32_t *q = t + 4 * dz;
        uint32_t row0 = wx0 * q[0] + ax.w1 * q[1];
        uint32_t row1 = wx0 * q[2] + ax.w1 * q[3];
        plane[dz] = (uint64_t)wy0 * row0 + (uint64_t)ay.w1 * row1;
    }
    uint64_t num = wz0 * plane[0] + az.w1 * plane[1];
    uint64_t den = (uint64_t)ax.den * ay.den * az.den;
    return (uint16_t)dh_clahe_div_small(2 * num + den, 2 * den);
}

#ifdef __cplusplus
}
#endif
#endif /* DH_KERNELS_CLAHE_FAST_H */
