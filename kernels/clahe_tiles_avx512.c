// SPDX-License-Identifier: MIT
/*
 * clahe_tiles_avx512.c: a tile's histogram halves and sample bounds in AVX-512
 * (clahe_tiles_avx512.h). The scalar tile pass of clahe_cpu.c reads each row twice (once for
 * the bounds, once to count) and looks every sample's bin up in a 256 KiB table indexed by the
 * raw sample, a load that misses the level-1 cache for values spread over the 16-bit range.
 * Here each run of up to 512 samples is read once, 16 at a time: the keys' bounds in 16-bit
 * lanes, the bins computed (clahe_rows_cpu.h's rule, exact; the marks for below and above the
 * window by masks) into a 2 KiB buffer, from which the scalar increments read. The increments
 * stay scalar: a histogram's conflicting lanes make vector scatters no faster.
 */
#include "clahe_tiles_avx512.h"

#ifdef DH_CLAHE_AVX512_BUILT
#include <immintrin.h>

#include "clahe_avx512_bins.h"
#include "clahe_rows_cpu.h"

#define RUN 512 /* samples binned before they are counted; a multiple of 16 */

DH_AVX512 void dh_clahe_count_avx512(const dh_clahe_count_job *job, uint32_t *h0, uint32_t *h1,
                                     uint16_t *kmin, uint16_t *kmax)
{
    const dh_clahe_bin_rule rule = dh_clahe_bin_rule_of(job->lo, job->hi, job->bins);
    const int shift = rule.shift, is_signed = job->is_signed;
    const __m128i by = _mm_cvtsi32_si128(shift < 0 ? 0 : shift);
    const __m512i magic = _mm512_set1_epi32((int)rule.magic);
    const __m512i lo = _mm512_set1_epi32(job->lo), hi = _mm512_set1_epi32(job->hi);
    const __m512i below = _mm512_set1_epi32((int)job->bins);
    const __m512i above = _mm512_set1_epi32((int)job->bins + 1);
    const __m256i flip = _mm256_set1_epi16(is_signed ? (short)0x8000 : 0);
    __m256i low = _mm256_set1_epi16(-1), high = _mm256_setzero_si256();
    uint32_t bin[RUN] __attribute__((aligned(64)));
    const uint32_t x0 = job->x0, x1 = job->x1;
    for (uint32_t y = 0; y < job->rows; y++) {
        const uint16_t *row = job->raw + y * job->stride;
        /* The tile's rows are short runs a row apart: ask for the run two rows ahead, as the
         * scalar pass does. */
        if (y + 2 < job->rows)
            for (uint32_t x = x0; x < x1; x += 32)
                __builtin_prefetch(row + 2 * job->stride + x);
        for (uint32_t x = x0; x < x1; x += RUN) {
            const uint32_t len = x1 - x < RUN ? x1 - x : RUN;
            for (uint32_t i = 0; i < len; i += 16) {
                const __mmask16 m =
                    len - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (len - i)) - 1);
                const __m256i s16 = _mm256_maskz_loadu_epi16(m, row + x + i);
                const __m256i key = _mm256_xor_si256(s16, flip);
                low = _mm256_mask_min_epu16(low, m, low, key);
                high = _mm256_mask_max_epu16(high, m, high, key);
                const __m512i v = is_signed ? _mm512_cvtepi16_epi32(s16) : _mm512_cvtepu16_epi32(s16);
                __m512i b = dh_avx512_bins(_mm512_sub_epi32(v, lo), shift, by, magic);
                b = _mm512_mask_mov_epi32(b, _mm512_cmplt_epi32_mask(v, lo), below);
                b = _mm512_mask_mov_epi32(b, _mm512_cmpgt_epi32_mask(v, hi), above);
                _mm512_store_si512(bin + i, b); /* lanes past len are never counted */
            }
            uint32_t i = 0;
            for (; i + 2 <= len; i += 2) {
                h0[bin[i]]++;
                h1[bin[i + 1]]++;
            }
            if (i < len)
                h0[bin[i]]++;
        }
    }
    uint16_t l[16], h[16];
    _mm256_storeu_si256((__m256i *)l, low);
    _mm256_storeu_si256((__m256i *)h, high);
    for (int k = 0; k < 16; k++) {
        *kmin = l[k] < *kmin ? l[k] : *kmin;
        *kmax = h[k] > *kmax ? h[k] : *kmax;
    }
}

#endif
