// SPDX-License-Identifier: MIT
/*
 * clahe_rows_avx512.c: the 2D row blend in AVX-512 (clahe_rows_avx512.h), compiled for it by
 * target attribute alone so the library stays built for the x86-64 baseline. It is the AVX2
 * build of clahe_rows_cpu.c twice as wide, with the same arithmetic, so the same proof holds
 * (clahe_rows_cpu.c's header: the float estimate within 0.02 of the exact quotient, the
 * remainder below 2^31 in magnitude with den_x den_y < 2^29 and den_x <= 32767, the bin as a
 * shift or a multiply-high): the bits are dh_clahe_blend2's.
 *
 * Per 16 pixels: the samples widened to 32-bit lanes, the window tested into masks (so pixels
 * outside it fetch nothing and the output needs no blend of vectors), the bin and the quad
 * index, then the 16 quads as two 8-lane gathers of 64-bit words (vpgatherdq, masked by the
 * window) or, for comparison, 16 scalar loads; one multiply-add of 16-bit lanes per 8 quads gives
 * both horizontal blends of each pixel, and one two-source permute of 32-bit lanes each puts the
 * 16 first and the 16 second blends in column order; the estimate, the exact remainder and its
 * two corrections in masked adds; one narrowing store. The row's tail is the same step under a
 * mask (masked loads do not fault), not a scalar loop. The weights come from the columns' wpair16
 * (w0, w1, w0, w1 per column, in column order, padded to 16 columns).
 */
#include "clahe_rows_avx512.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "clahe_avx512_bins.h"

/* One build of the loop; `gathers` is a constant in each caller, so each gets its own. */
DH_AVX512 static inline __attribute__((always_inline)) void
blend16(const dh_clahe_row *r, const dh_clahe_columns *c, const int gathers)
{
    const __m512i lo = _mm512_set1_epi32(r->lo), hi = _mm512_set1_epi32(r->hi);
    const __m512i top = _mm512_set1_epi32(r->top), one = _mm512_set1_epi32(1);
    const __m512i zero = _mm512_setzero_si512(), k65537 = _mm512_set1_epi32(65537);
    /* The bin: a shift, or a multiply-high. */
    const dh_clahe_bin_rule rule = dh_clahe_bin_rule_of(r->lo, r->hi, r->bins);
    const int shift = rule.shift;
    const __m128i by = _mm_cvtsi32_si128(shift < 0 ? 0 : shift);
    const __m512i magic = _mm512_set1_epi32((int)rule.magic);
    const __m512i wy0 = _mm512_set1_epi32((int)r->wy0), wy1 = _mm512_set1_epi32((int)r->wy1);
    const __m512i den_y = _mm512_set1_epi32((int)r->den_y);
    const __m512 wy0f = _mm512_set1_ps((float)r->wy0), wy1f = _mm512_set1_ps((float)r->wy1);
    const __m512 inv_y = _mm512_set1_ps(1.0f / (float)r->den_y);
    const __m512 offset = _mm512_set1_ps(32768.5f);
    /* After the multiply-adds, lane 2 j of the first (second) vector holds pixel j's (j + 8's)
     * first blend and lane 2 j + 1 its second; index 16 + i names lane i of the second. */
    const __m512i first = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26,
                                            28, 30);
    const __m512i second = _mm512_add_epi32(first, one);
    const long long *quads = (const long long *)r->quads;
    const uint32_t n = c->n;
    for (uint32_t x = 0; x < n; x += 16) {
        const __mmask16 m = n - x >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - x)) - 1);
        const __m256i s16 = _mm256_maskz_loadu_epi16(m, r->raw + x);
        const __m512i v = r->is_signed ? _mm512_cvtepi16_epi32(s16) : _mm512_cvtepu16_epi32(s16);
        const __mmask16 above = _mm512_mask_cmpgt_epi32_mask(m, v, hi);
        const __mmask16 inside =
            _mm512_mask_cmple_epi32_mask(_mm512_mask_cmpge_epi32_mask(m, v, lo), v, hi);
        const __m512i u = _mm512_maskz_sub_epi32(inside, v, lo); /* 0 outside: bin 0 */
        const __m512i b = dh_avx512_bins(u, shift, by, magic);
        /* Lanes outside the window or the row index bin 0 of a segment (or quad 0), which
         * clahe_rows_cpu.c's quads always hold: the scalar loads stay in bounds; the gathers
         * skip them. */
        const __m512i at = _mm512_add_epi32(b, _mm512_maskz_loadu_epi32(m, c->base + x));
        __m512i qa, qb;
        if (gathers) {
            qa = _mm512_mask_i32gather_epi64(zero, (__mmask8)inside, _mm512_castsi512_si256(at),
                                             quads, 8);
            qb = _mm512_mask_i32gather_epi64(zero, (__mmask8)(inside >> 8),
                                             _mm512_extracti64x4_epi64(at, 1), quads, 8);
        } else {
            int32_t i[16];
            _mm512_storeu_si512(i, at);
            qa = _mm512_set_epi64(quads[i[7]], quads[i[6]], quads[i[5]], quads[i[4]],
                                  quads[i[3]], quads[i[2]], quads[i[1]], quads[i[0]]);
            qb = _mm512_set_epi64(quads[i[15]], quads[i[14]], quads[i[13]], quads[i[12]],
                                  quads[i[11]], quads[i[10]], quads[i[9]], quads[i[8]]);
        }
        const __m512i ha = _mm512_madd_epi16(qa, _mm512_loadu_si512(c->wpair16 + x));
        const __m512i hb = _mm512_madd_epi16(qb, _mm512_loadu_si512(c->wpair16 + x + 8));
        const __m512i h0 = _mm512_permutex2var_epi32(ha, first, hb);
        const __m512i h1 = _mm512_permutex2var_epi32(ha, second, hb);
        /* The estimate, then the exact remainder modulo 2^32 (clahe_rows_cpu.c's proof). */
        const __m512 nf = _mm512_fmadd_ps(wy1f, _mm512_cvtepi32_ps(h1),
                                          _mm512_mul_ps(wy0f, _mm512_cvtepi32_ps(h0)));
        const __m512 inv = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, c->inv + x), inv_y);
        __m512i q = _mm512_cvttps_epi32(_mm512_fmadd_ps(nf, inv, offset));
        const __m512i num =
            _mm512_add_epi32(_mm512_mullo_epi32(h0, wy0), _mm512_mullo_epi32(h1, wy1));
        const __m512i d = _mm512_mullo_epi32(_mm512_maskz_loadu_epi32(m, c->den + x), den_y);
        const __m512i rem = _mm512_add_epi32(
            _mm512_add_epi32(num, num),
            _mm512_mullo_epi32(d, _mm512_sub_epi32(k65537, _mm512_add_epi32(q, q))));
        const __mmask16 high = _mm512_cmplt_epi32_mask(rem, zero); /* q one too large */
        const __mmask16 low = _mm512_cmpge_epi32_mask(rem, _mm512_add_epi32(d, d));
        q = _mm512_mask_sub_epi32(q, high, q, one);
        q = _mm512_mask_add_epi32(q, low, q, one);
        q = _mm512_mask_mov_epi32(_mm512_maskz_mov_epi32(inside, q), above, top);
        _mm256_mask_storeu_epi16(r->out + x, m, _mm512_cvtepi32_epi16(q));
    }
}

DH_AVX512 static void blend_gathers(const dh_clahe_row *r, const dh_clahe_columns *c)
{
    blend16(r, c, 1);
}

DH_AVX512 static void blend_loads(const dh_clahe_row *r, const dh_clahe_columns *c)
{
    blend16(r, c, 0);
}

void dh_clahe_blend_avx512(const dh_clahe_row *r, const dh_clahe_columns *c, int gathers)
{
    if (gathers)
        blend_gathers(r, c);
    else
        blend_loads(r, c);
}

#endif
