// SPDX-License-Identifier: MIT
/*
 * clahe_rows_cpu.c: the 2D row blend of CLAHE's CPU twin (clahe_rows_cpu.h), in portable C and,
 * on x86-64, in AVX2 chosen at run time (function multi-versioning by target attribute: the
 * library stays built for the x86-64 baseline and other processors compile the portable code
 * alone). Both give dh_clahe_blend2's value:
 *   num = w0 (wy0 t00 + wy1 t01) + w1 (wy0 t10 + wy1 t11),  out = floor((2 num + D) / (2 D))
 * with D = den_x den_y, num < 2^50 (den_x, den_y <= 65535 as clahe.h's axes are, entries < 2^16).
 *
 * The portable code divides by a multiply-and-shift fixed per run of columns with one den_x. The
 * AVX2 code blends 8 pixels at once in doubles, where every product and sum above is an exact
 * integer (below 2^53), and the quotient from a reciprocal is corrected by its exact remainder (a
 * fused multiply-add), so it is the integer floor and not an approximation of it. The bins and
 * the quads (one 8-byte load per pixel) are fetched by scalar loads: AVX2 gathers of the same
 * made the whole CLAHE 1.2x slower on an AMD EPYC (Zen 3), where a gather waits for all its lanes
 * and issues no faster than the loads it stands for.
 */
#include "clahe_rows_cpu.h"

#include <stdlib.h>
#include <string.h>

#include "clahe.h"
#include "divide_exact.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define DH_CLAHE_X86 1
#include <immintrin.h>
#endif

void dh_clahe_columns_free(dh_clahe_columns *c)
{
    free(c->i0);
    free(c->i1);
    free(c->w0);
    free(c->w1);
    free(c->den);
    free(c->w0d);
    free(c->w1d);
    free(c->dend);
    free(c->inv);
    c->i0 = c->i1 = NULL;
    c->w0 = c->w1 = c->den = NULL;
    c->w0d = c->w1d = c->dend = c->inv = NULL;
}

int dh_clahe_columns_init(dh_clahe_columns *c, uint32_t n, uint32_t tiles)
{
    c->n = n;
    c->i0 = malloc(n * sizeof *c->i0);
    c->i1 = malloc(n * sizeof *c->i1);
    c->w0 = malloc(n * sizeof *c->w0);
    c->w1 = malloc(n * sizeof *c->w1);
    c->den = malloc(n * sizeof *c->den);
    c->w0d = malloc(n * sizeof *c->w0d);
    c->w1d = malloc(n * sizeof *c->w1d);
    c->dend = malloc(n * sizeof *c->dend);
    c->inv = malloc(n * sizeof *c->inv);
    if (!c->i0 || !c->i1 || !c->w0 || !c->w1 || !c->den || !c->w0d || !c->w1d || !c->dend || !c->inv) {
        dh_clahe_columns_free(c);
        return -1;
    }
    for (uint32_t x = 0; x < n; x++) {
        dh_clahe_axis_weight a = dh_clahe_axis_at(n, tiles, x);
        c->i0[x] = (int32_t)a.i0;
        c->i1[x] = (int32_t)a.i1;
        c->w0[x] = a.den - a.w1;
        c->w1[x] = a.w1;
        c->den[x] = a.den;
        c->w0d[x] = c->w0[x];
        c->w1d[x] = c->w1[x];
        c->dend[x] = a.den;
        c->inv[x] = 1.0 / a.den;
    }
    return 0;
}

/* Columns x0 .. n - 1 in the portable way: per run of one den_x, one divisor. */
static void blend_portable(const dh_clahe_row *r, const dh_clahe_columns *c, uint32_t x0)
{
    const uint64_t wy0 = r->wy0, wy1 = r->wy1;
    for (uint32_t x = x0; x < c->n;) {
        const uint32_t den_x = c->den[x];
        uint32_t end = x + 1;
        while (end < c->n && c->den[end] == den_x)
            end++;
        const uint64_t den = (uint64_t)den_x * r->den_y;
        const dh_divisor q = dh_divisor_of(2 * den);
        for (; x < end; x++) {
            const uint32_t b = r->bin_of[r->raw[x]];
            if (b >= r->bins) {
                r->out[x] = b == r->bins ? 0 : r->top;
                continue;
            }
            const uint16_t *e0 = r->pair + ((size_t)(uint32_t)c->i0[x] * r->bins + b) * 2;
            const uint16_t *e1 = r->pair + ((size_t)(uint32_t)c->i1[x] * r->bins + b) * 2;
            const uint64_t a0 = wy0 * e0[0] + wy1 * e0[1];
            const uint64_t a1 = wy0 * e1[0] + wy1 * e1[1];
            r->out[x] = (uint16_t)dh_divide(2 * (c->w0[x] * a0 + c->w1[x] * a1) + den, q);
        }
    }
}

#ifdef DH_CLAHE_X86

/* The entries of dy 0 (low half) and dy 1 (high half) of four 32-bit lanes as exact doubles. */
__attribute__((target("avx2,fma"))) static inline void halves_pd(__m128i e, __m256d *lo,
                                                                  __m256d *hi)
{
    *lo = _mm256_cvtepi32_pd(_mm_and_si128(e, _mm_set1_epi32(0xffff)));
    *hi = _mm256_cvtepi32_pd(_mm_srli_epi32(e, 16));
}

/* Four pixels from their entries at i0 (e0) and i1 (e1): the exact
 * floor((2 num + D) / (2 D)) as 32-bit integers. */
__attribute__((target("avx2,fma"))) static inline __m128i blend4(const dh_clahe_columns *c,
                                                                  uint32_t x, __m128i e0,
                                                                  __m128i e1, __m256d wy0,
                                                                  __m256d wy1, __m256d den_y,
                                                                  __m256d inv2y)
{
    __m256d t00, t01, t10, t11;
    halves_pd(e0, &t00, &t01);
    halves_pd(e1, &t10, &t11);
    __m256d a0 = _mm256_fmadd_pd(wy1, t01, _mm256_mul_pd(wy0, t00));
    __m256d a1 = _mm256_fmadd_pd(wy1, t11, _mm256_mul_pd(wy0, t10));
    __m256d num = _mm256_fmadd_pd(_mm256_loadu_pd(c->w1d + x), a1,
                                  _mm256_mul_pd(_mm256_loadu_pd(c->w0d + x), a0));
    __m256d den = _mm256_mul_pd(_mm256_loadu_pd(c->dend + x), den_y);
    __m256d n2 = _mm256_fmadd_pd(_mm256_set1_pd(2.0), num, den); /* 2 num + D, exact */
    __m256d d2 = _mm256_add_pd(den, den);
    __m256d inv = _mm256_mul_pd(_mm256_loadu_pd(c->inv + x), inv2y); /* 1 / (2 D), nearly */
    /* inv is 1 / (2 D) within 3 roundings and the product adds one: the estimate is within
     * 2^-51 relative, 2^-35 absolute (the quotient is below 2^16), of n2 / d2. A quotient that is
     * not an integer is at least 1 / d2 > 2^-33 (d2 < 2^33) from the next one, so the estimate
     * floors to the same integer; an integer quotient k may come out as k - 2^-35 and floor to
     * k - 1, which the exact remainder n2 - q d2 (an integer below 2^53, so exact in the fused
     * multiply-add) shows as >= d2. So one correction, upwards, and never downwards. */
    __m256d q = _mm256_floor_pd(_mm256_mul_pd(n2, inv));
    __m256d r = _mm256_fnmadd_pd(q, d2, n2);
    q = _mm256_add_pd(q, _mm256_and_pd(_mm256_cmp_pd(r, d2, _CMP_GE_OQ), _mm256_set1_pd(1.0)));
    return _mm256_cvttpd_epi32(q);
}

/* The 32-bit words (entries dy 0 and 1) at the 8 offsets of `at`, by scalar loads. */
__attribute__((target("avx2,fma"))) static inline __m256i load8(const uint16_t *pair, __m256i at)
{
    int32_t o[8];
    uint32_t w[8];
    _mm256_storeu_si256((__m256i *)o, at);
    for (int k = 0; k < 8; k++)
        memcpy(&w[k], pair + o[k], sizeof w[k]);
    return _mm256_loadu_si256((const __m256i *)w);
}

__attribute__((target("avx2,fma"))) static void blend_avx2(const dh_clahe_row *r,
                                                           const dh_clahe_columns *c)
{
    const __m256d wy0 = _mm256_set1_pd(r->wy0), wy1 = _mm256_set1_pd(r->wy1);
    const __m256d den_y = _mm256_set1_pd(r->den_y), inv2y = _mm256_set1_pd(0.5 / r->den_y);
    const __m256i bins = _mm256_set1_epi32((int)r->bins), above = _mm256_set1_epi32((int)r->bins + 1);
    const __m256i top = _mm256_set1_epi32(r->top), stride = _mm256_set1_epi32((int)(2 * r->bins));
    uint32_t x = 0;
    for (; x + 8 <= c->n; x += 8) {
        int32_t bb[8];
        for (int k = 0; k < 8; k++)
            bb[k] = (int32_t)r->bin_of[r->raw[x + k]];
        __m256i b = _mm256_loadu_si256((const __m256i *)bb);
        __m256i inside = _mm256_cmpgt_epi32(bins, b);
        __m256i hi = _mm256_and_si256(_mm256_cmpeq_epi32(b, above), top);
        /* Outside the window bin 0 is read (any in-bounds one would do) and dropped. */
        __m256i b2 = _mm256_add_epi32(_mm256_and_si256(b, inside), _mm256_and_si256(b, inside));
        __m256i e0 = load8(r->pair, _mm256_add_epi32(b2, _mm256_mullo_epi32(
                                             _mm256_loadu_si256((const __m256i *)(c->i0 + x)), stride)));
        __m256i e1 = load8(r->pair, _mm256_add_epi32(b2, _mm256_mullo_epi32(
                                             _mm256_loadu_si256((const __m256i *)(c->i1 + x)), stride)));
        __m256i out = _mm256_set_m128i(
            blend4(c, x + 4, _mm256_extracti128_si256(e0, 1), _mm256_extracti128_si256(e1, 1),
                   wy0, wy1, den_y, inv2y),
            blend4(c, x, _mm256_castsi256_si128(e0), _mm256_castsi256_si128(e1), wy0, wy1, den_y,
                   inv2y));
        out = _mm256_or_si256(_mm256_and_si256(out, inside), hi);
        __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(out),
                                          _mm256_extracti128_si256(out, 1));
        _mm_storeu_si128((__m128i *)(r->out + x), packed);
    }
    if (x < c->n)
        blend_portable(r, c, x);
}

#endif /* DH_CLAHE_X86 */

int dh_clahe_rows_fast(uint32_t bins, uint32_t tx)
{
#ifdef DH_CLAHE_X86
    if ((uint64_t)bins * tx * 2 >= ((uint64_t)1 << 31))
        return 0;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    (void)bins;
    (void)tx;
    return 0;
#endif
}

void dh_clahe_row_blend(const dh_clahe_row *r, const dh_clahe_columns *c, int fast)
{
#ifdef DH_CLAHE_X86
    if (fast) {
        blend_avx2(r, c);
        return;
    }
#else
    (void)fast;
#endif
    blend_portable(r, c, 0);
}
