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
 * from a float estimate biased below (value + 7/16, within 1/50: see dh_clahe_blend3_row) whose
 * floor is the exact rounding or one below it; the floor is read off the bits of a fused
 * multiply-add rounded down at 2^23 (no float-to-integer conversion, which issues at a quarter
 * of the rate on sm_90), and one 32-bit remainder's sign settles it (no 64-bit product). What
 * depends only on the span (the reciprocal, the bias, the remainder's constant) is per span.
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

/* What a span of x (the pixels between two tile centres, or a clamped border) adds, for the
 * denominator den = den_x den_y den_z (< 2^31: dh_clahe_blend3_row_ok): its float reciprocal
 * rden, the estimate's bias c = 7/16 den as a float, -den and the remainder's constant
 * k = floor(den / 2) + 0x4B000000 den, all modulo 2^32 (dh_clahe_blend3_row says why). */
typedef struct dh_clahe_span {
    float rden, c;
    uint32_t nden, k;
} dh_clahe_span;

static inline DH_EQ_HD dh_clahe_span dh_clahe_span_of(uint32_t den_x, uint32_t den_yz)
{
    dh_clahe_span s;
    const uint32_t den = den_x * den_yz;
    const float fden = (float)den; /* rounded to nearest on both sides */
#ifdef __CUDA_ARCH__
    s.rden = __frcp_rn(fden); /* correctly rounded, as on the host */
    s.c = __fmul_rn(fden, 0.4375f);
#else
    s.rden = 1.0f / fden;
    s.c = fden * 0.4375f; /* one float rounding, as __fmul_rn */
#endif
    s.nden = 0u - den;
    s.k = (den >> 1) + 0x4B000000u * den;
    return s;
}

/* Whether dh_clahe_blend3_row equals dh_clahe_blend3 for every voxel of a volume whose axis
 * denominators are at most dx, dy, dz: the sums A and B within 32 bits (den_y den_z 65535 <
 * 2^32) and den = den_x den_y den_z below 2^31, where the 32-bit remainder keeps its sign
 * (dh_clahe_blend3_row; the doubled denominator 2 den < 2^32, the bound the 64-bit check had).
 * The denominators are in doubled positions (clahe.h): a 512^3 volume of 8x8x8 tiles, centres
 * 64 voxels apart, has 128 on every axis, 2 x 128^3 = 2^22. Volumes beyond it take
 * clahe_cuda.cu's general mapping. */
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
 * Exact: let S = w0 A + w1 B, den = den_x den_y den_z and value = S / den <= 65535; the
 * rounding is q = floor(value + 1/2) (clahe.h: floor((2 S + den) / (2 den))).
 * The estimate: g = fma(f0, A, fma(f1, B, c)) with c = 7/16 den, so g rden = value + 7/16 up to
 * the roundings: A and B to float, c (den to float, then the product), the two fused
 * multiply-adds and the reciprocal, 2^-24 relative each. Every term is non-negative, so the
 * relative errors add along each term's path, five at most (the bias: den, c, both fmas,
 * rden): under 5.0001 2^-24 of value + 7/16 <= 65535.44, that is under 0.0196. The product
 * g rden itself is not rounded: the fused multiply-add g rden + (2^23 + 1) rounded toward minus
 * infinity lands in [2^23, 2^24), where floats are the integers, so it is exactly
 * 2^23 + 1 + floor(g rden), and its bits are 0x4B000000 + q0 + 1 with q0 = floor(g rden)
 * (q0 + 1 <= 65536 < 2^23: no carry into the exponent). Since value + 0.41 < g rden <
 * value + 0.46, q0 is q or q - 1 (g rden >= value - 1/2 >= q - 1 and < value + 1/2).
 * On the host the same floor is taken of the exact product in double (24 x 24 bits), with g
 * from the same fmaf calls, so both sides take the same q0.
 * The check: q = q0 + 1 exactly when 2 S + den >= 2 (q0 + 1) den, that is (all integers)
 * when r = S - (q0 + 1) den + floor(den / 2) >= 0. With q0 in {q - 1, q} and
 * value - q in [-1/2, 1/2), r lies in [-den - 1/2, den): inside int32 for den < 2^31 (the
 * bound), so its sign is bit 31 of r computed modulo 2^32: w0 A + w1 B + bits nden + k with
 * k = floor(den / 2) + 0x4B000000 den (the exponent's bits times den, taken back), three
 * 32-bit multiply-adds. The result q0 + 1 - (r < 0) is the low 16 bits of bits - (r >> 31)
 * (0x4B000000 has none, and the result is at most 65535). */
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
    const float g = __fmaf_rn(f0, (float)a, __fmaf_rn(f1, (float)b, sp.c));
    const uint32_t bits = __float_as_uint(__fmaf_rd(g, sp.rden, 8388609.0f));
#else
    const float g = fmaf(f0, (float)a, fmaf(f1, (float)b, sp.c));
    const uint32_t bits = 0x4B000001u + (uint32_t)floor((double)g * (double)sp.rden);
#endif
    const uint32_t r = w0 * a + w1 * b + bits * sp.nden + sp.k;
    return (uint16_t)(bits - (r >> 31));
}

#ifdef __cplusplus
}
#endif
#endif /* DH_KERNELS_CLAHE_CUDA_BLEND_H */
