// SPDX-License-Identifier: MIT
/*
 * clahe_avx512_bins.h: what the AVX-512 builds of CLAHE's CPU twin share (the row blend,
 * clahe_rows_avx512.c, and the tile count, clahe_tiles_avx512.c): their target attribute and
 * the bin of 16 samples by clahe_rows_cpu.h's dh_clahe_bin_rule. Included only on x86-64 with
 * GCC or Clang, after <immintrin.h>.
 */
#ifndef DH_KERNELS_CLAHE_AVX512_BINS_H
#define DH_KERNELS_CLAHE_AVX512_BINS_H

#define DH_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))

/* The bins of u = v - lo (16 lanes, each below W) by the rule: u >> shift (`by` holds the shift)
 * or the high words of u magic (`magic` in every lane), the even lanes' by one 32 x 32 -> 64-bit
 * multiply, the odd lanes' by another. */
DH_AVX512 static inline __attribute__((always_inline)) __m512i
dh_avx512_bins(__m512i u, int shift, __m128i by, __m512i magic)
{
    if (shift >= 0)
        return _mm512_srl_epi32(u, by);
    const __m512i even = _mm512_srli_epi64(_mm512_mul_epu32(u, magic), 32);
    const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(u, 32), magic);
    return _mm512_mask_blend_epi32((__mmask16)0xaaaa, even, odd);
}

#endif /* DH_KERNELS_CLAHE_AVX512_BINS_H */
