// SPDX-License-Identifier: MIT
/*
 * clahe_cuda_blend.h: the 3D blend of clahe.h (dh_clahe_blend3) as the GPU's volume mapping
 * (clahe_cuda_volume.cuh) computes it, with the work that is the same along a row or along a
 * span between two tile centres taken out of the per-voxel part. Same value as dh_clahe_blend3
 * wherever dh_clahe_blend3_row_ok holds; tests/test_clahe_cuda_blend.c checks it on the CPU,
 * where the same code compiles.
 *
 * Why: the mapping of a 512^3 volume was bound by the instructions issued per voxel (64-bit
 * products of three weights, a float quotient of two 64-bit integers and its two-sided
 * correction). Here, per row, the y and z weights become four products wyz[k] (k = dy + 2 dz);
 * per voxel the eight entries collapse into two 32-bit sums, A on the x0 side and B on the x1
 * side (A, B <= den_y den_z 65535 < 2^32), and the numerator is w0 A + w1 B. Its quotient comes
 * from a float estimate biased below (value + 0.5 - 1/16, whose error is under 1/40: see
 * dh_clahe_blend3_row), so the truncated estimate is the exact rounding or one below it, and one
 * 64-bit comparison with (q + 1) times the denominator settles it. The reciprocal of the
 * denominator is per span, not per voxel.
 */
#ifndef DH_KERNELS_CLAHE_CUDA_BLEND_H
#define DH_KERNELS_CLAHE_CUDA_BLEND_H

#include <stdint.h>
#ifndef __CUDA_ARCH__
#include <math.h>
#endif

#include "clahe.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The y and z part of a voxel's blend, the same along its row: wyz[dy + 2 dz], the product of
 * the y weight of side dy and the z weight of side dz, and their sum den_y den_z. */
typedef struct dh_clahe_yz {
    uint32_t w[4];
    uint32_t den;
} dh_clahe_yz;

static inline DH_EQ_HD dh_clahe_yz dh_clahe_yz_of(dh_clahe_axis_weight ay,
                                                  dh_clahe_axis_weight az)
{
    dh_clahe_yz r;
    const uint32_t wy0 = ay.den - ay.w1, wz0 = az.den - az.w1;
    r.w[0] = wy0 * wz0;
    r.w[1] = ay.w1 * wz0;
    r.w[2] = wy0 * az.w1;
    r.w[3] = ay.w1 * az.w1;
    r.den = ay.den * az.den;
    return r;
}

/* What a span of x (the pixels between two tile centres, or a clamped border) adds: the doubled
 * denominator 2 den_x den_y den_z and the float reciprocal of den_x den_y den_z. */
typedef struct dh_clahe_span {
    uint32_t den2;
    float rden;
} dh_clahe_span;

static inline DH_EQ_HD dh_clahe_span dh_clahe_span_of(uint32_t den_x, uint32_t den_yz)
{
    dh_clahe_span s;
    const uint32_t den = den_x * den_yz;
    s.den2 = 2 * den;
#ifdef __CUDA_ARCH__
    s.rden = __frcp_rn((float)den); /* correctly rounded, as on the host */
#else
    s.rden = 1.0f / (float)den;
#endif
    return s;
}

/* Whether dh_clahe_blend3_row equals dh_clahe_blend3 for every voxel of a volume whose axis
 * denominators are at most dx, dy, dz: the sums A and B within 32 bits (den_y den_z 65535 <
 * 2^32) and the doubled denominator too (2 den_x den_y den_z < 2^32). The denominators are in
 * doubled positions (clahe.h): a 512^3 volume of 8x8x8 tiles, centres 64 voxels apart, has 128
 * on every axis, 2 x 128^3 = 2^22. */
static inline int dh_clahe_blend3_row_ok(uint64_t dx, uint64_t dy, uint64_t dz)
{
    return dx <= 65535 && dy <= 65535 && dz <= 65535 && dy * dz <= 65537 &&
           2 * dx * dy * dz < ((uint64_t)1 << 32);
}

/* dh_clahe_blend3 of a voxel with x weights w0 = den_x - w1 and w1 (f0, f1: the same as floats,
 * exact below 2^24), the row's yz and the span's sp, over the eight entries e[dx + 2 dy + 4 dz]
 * packed in pairs as the quads hold them: q[k] = e[2k] | e[2k + 1] << 16 (k = dy + 2 dz).
 *
 * The sums without unpacking: B = sum wyz[k] (q[k] >> 16), and sum wyz[k] q[k] = A + 2^16 B
 * modulo 2^32, so A = that sum - 2^16 B modulo 2^32, exact since A < 2^32.
 *
 * Exact: let N = 2 (w0 A + w1 B) + den (den = den_x den_y den_z) and value = (w0 A + w1 B) /
 * den <= 65535; the rounding is q = floor(N / (2 den)) = floor(value + 1/2). The estimate
 * fq = value + 7/16 up to its error: A and B rounded to float (2^-24 relative each), the two
 * products' and the reciprocal's roundings (2^-24 each, all terms non-negative, so relative
 * errors add: under 5 * 2^-24 of value, 0.02 at 65535) and the final rounding of the fused
 * multiply-add (half an ulp below 2^17: 2^-8). So value + 0.39 < fq < value + 0.5, and
 * truncated it is q or q - 1 (fq > 0). N >= (q0 + 1) 2 den tells which. */
static inline DH_EQ_HD uint16_t dh_clahe_blend3_row(uint32_t w0, uint32_t w1, float f0, float f1,
                                                    dh_clahe_span sp, dh_clahe_yz yz,
                                                    const uint32_t q[4])
{
    const uint32_t b =
        yz.w[0] * (q[0] >> 16) + yz.w[1] * (q[1] >> 16) + yz.w[2] * (q[2] >> 16) +
        yz.w[3] * (q[3] >> 16);
    const uint32_t a =
        yz.w[0] * q[0] + yz.w[1] * q[1] + yz.w[2] * q[2] + yz.w[3] * q[3] - (b << 16);
#ifdef __CUDA_ARCH__
    const float g = __fmaf_rn(f0, (float)a, __fmul_rn(f1, (float)b));
    const uint32_t q0 = (uint32_t)__fmaf_rn(g, sp.rden, 0.4375f);
#else
    const float p = f1 * (float)b; /* rounded once, as __fmul_rn */
    const float g = fmaf(f0, (float)a, p);
    const uint32_t q0 = (uint32_t)fmaf(g, sp.rden, 0.4375f);
#endif
    const uint64_t n = (uint64_t)(2 * w0) * a + (uint64_t)(2 * w1) * b + (sp.den2 >> 1);
    const uint64_t next = (uint64_t)(q0 + 1) * sp.den2;
    return (uint16_t)(q0 + (n >= next));
}

#ifdef __cplusplus
}
#endif
#endif /* DH_KERNELS_CLAHE_CUDA_BLEND_H */
