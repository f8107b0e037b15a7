// SPDX-License-Identifier: MIT
/*
 * clahe_rows_cpu.c: the 2D row blend of CLAHE's CPU twin (clahe_rows_cpu.h), in portable C and,
 * on x86-64, in AVX2 or AVX-512 (clahe_rows_avx512.c) chosen at run time (clahe_cpu_path.h;
 * function multi-versioning by target attribute: the library stays built for the x86-64
 * baseline and other processors compile the portable code alone). All give dh_clahe_blend2's
 * value, written with the segment weights of the header:
 *   num = wy0 (w0 t00 + w1 t10) + wy1 (w0 t01 + w1 t11),  out = floor((2 num + D) / (2 D))
 * with D = den_x den_y, entries t below 2^16.
 *
 * The portable code divides by a multiply-and-shift fixed per run of columns with one den_x.
 * The AVX2 code blends 8 pixels in 32-bit lanes. Its entries are stored as t' = t - 2^15 (signed
 * 16 bits), so one multiply-add of 16-bit lanes gives both horizontal blends of a pixel,
 * h' = w0 t'0 + w1 t'1 (|h'| < 2^15 den_x < 2^30 with den_x <= 32767, the weights signed 16-bit
 * too), and num' = wy0 h0' + wy1 h1' = num - 2^15 D. The quotient: an estimate from floats,
 *   f = (wy0 h0' + wy1 h1') / D + 2^15 + 1/2,
 * is within 0.02 of the exact (2 num + D) / (2 D): with u = 2^-24, the numerator's roundings
 * (two conversions, a product, a fused sum) err by at most 3u times the sum of its terms' sizes,
 * which is at most 2^15 D, the reciprocal's three (1 / den_x, 1 / den_y, their product) by 3u
 * relative on a quotient of size at most 2^15, so the product errs by at most 6u 2^15 < 0.012,
 * and the fused addition's one rounding near 2^16 by at most 2^-9; so its truncation q is the
 * exact floor or one off either way. The remainder
 *   rem = 2 num + D - 2 D q = 2 num' + D (2^16 + 1 - 2 q)
 * is then in [-2D, 4D), below 2^31 in magnitude with D < 2^29, so its value modulo 2^32, which
 * wrapping 32-bit multiplies give exactly, is its value: rem < 0 means q is one too large,
 * rem >= 2D one too small. The bin of a sample is floor(u bins / W) (u = v - lo < W <= 2^16) as
 * the high word of u m with m = ceil(bins 2^32 / W) < 2^32 (bins < W): the error u (m - bins
 * 2^32 / W) / 2^32 < 2^-16 <= 1 / W never reaches the next integer. The quads are fetched by
 * scalar loads: AVX2 gathers of the same made the whole CLAHE 1.2x slower on an AMD EPYC
 * (Zen 3), where a gather waits for all its lanes and issues no faster than the loads it stands
 * for. On Intel processors with AVX-512, whose gathers are faster, clahe_rows_avx512.c does the
 * same 16 pixels a step, by gathers.
 */
#include "clahe_rows_cpu.h"

#include <stdlib.h>
#include <string.h>

#include "clahe.h"
#include "clahe_cpu_path.h"
#include "clahe_rows_avx512.h"
#include "divide_exact.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DH_CLAHE_X86 1
#include <immintrin.h>
#endif

/* The doubled position of tile i's centre (clahe.h). */
static uint64_t centre(uint32_t n, uint32_t tiles, uint32_t i)
{
    return (uint64_t)dh_clahe_tile_start(n, tiles, i) + dh_clahe_tile_start(n, tiles, i + 1);
}

dh_clahe_segment_weight dh_clahe_segment_at(uint32_t n, uint32_t tiles, uint32_t x)
{
    dh_clahe_segment_weight w = {0, 1, 0, 1};
    if (tiles <= 1)
        return w;
    dh_clahe_axis_weight a = dh_clahe_axis_at(n, tiles, x);
    if (a.i0 != a.i1) {
        w.s = a.i0;
        w.w0 = a.den - a.w1;
        w.w1 = a.w1;
        w.den = a.den;
        return w;
    }
    /* Before the first centre or after the last: the segment next to it, the near tile alone. */
    w.s = a.i0 == 0 ? 0 : tiles - 2;
    w.den = (uint32_t)(centre(n, tiles, w.s + 1) - centre(n, tiles, w.s));
    w.w0 = a.i0 == 0 ? w.den : 0;
    w.w1 = w.den - w.w0;
    return w;
}

void dh_clahe_columns_free(dh_clahe_columns *c)
{
    free(c->w0);
    free(c->w1);
    free(c->den);
    free(c->base);
    free(c->wpair);
    free(c->wpair16);
    free(c->inv);
    c->w0 = c->w1 = c->den = NULL;
    c->base = NULL;
    c->wpair = c->wpair16 = NULL;
    c->inv = NULL;
}

/* Column x's weights as the vector builds multiply them: w0, w1, w0, w1 in 16-bit lanes. */
static uint64_t weight_pair(const dh_clahe_columns *c, size_t x)
{
    uint64_t pair = (uint64_t)(c->w0[x] & 0xffff) | (uint64_t)(c->w1[x] & 0xffff) << 16;
    return pair | pair << 32;
}

int dh_clahe_columns_init(dh_clahe_columns *c, uint32_t n, uint32_t tiles, uint32_t bins)
{
    size_t padded = ((size_t)n + 7) / 8 * 8, padded16 = ((size_t)n + 15) / 16 * 16;
    c->n = n;
    c->tiles = tiles;
    c->bins = bins;
    c->max_den = 0;
    c->w0 = malloc(n * sizeof *c->w0);
    c->w1 = malloc(n * sizeof *c->w1);
    c->den = malloc(n * sizeof *c->den);
    c->base = malloc(n * sizeof *c->base);
    c->wpair = calloc(padded, sizeof *c->wpair);
    c->wpair16 = calloc(padded16, sizeof *c->wpair16);
    c->inv = malloc(n * sizeof *c->inv);
    if (!c->w0 || !c->w1 || !c->den || !c->base || !c->wpair || !c->wpair16 || !c->inv) {
        dh_clahe_columns_free(c);
        return -1;
    }
    static const uint32_t order[8] = {0, 1, 4, 5, 2, 3, 6, 7}; /* the AVX2 build's lanes */
    for (uint32_t x = 0; x < n; x++) {
        dh_clahe_segment_weight w = dh_clahe_segment_at(n, tiles, x);
        c->w0[x] = w.w0;
        c->w1[x] = w.w1;
        c->den[x] = w.den;
        c->base[x] = w.s * bins; /* below 2^32: s < 65535, bins <= 65536 */
        c->inv[x] = 1.0f / (float)w.den;
        c->max_den = w.den > c->max_den ? w.den : c->max_den;
    }
    for (size_t k = 0; k < padded; k++) {
        size_t x = k / 8 * 8 + order[k % 8];
        if (x >= n)
            continue;
        c->wpair[k] = weight_pair(c, x);
    }
    for (uint32_t x = 0; x < n; x++)
        c->wpair16[x] = weight_pair(c, x);
    return 0;
}

/* One quad from its four entries, top bits flipped. */
static uint64_t quad_of(uint16_t t00, uint16_t t10, uint16_t t01, uint16_t t11)
{
    return (uint64_t)(uint16_t)(t00 ^ 0x8000) | (uint64_t)(uint16_t)(t10 ^ 0x8000) << 16 |
           (uint64_t)(uint16_t)(t01 ^ 0x8000) << 32 | (uint64_t)(uint16_t)(t11 ^ 0x8000) << 48;
}

/* The quads of one segment over bins from .. to - 1, from its four tiles' tables a, b (row 0)
 * and c, d (row 1). */
static void quads_segment(uint64_t *q, const uint16_t *a, const uint16_t *b, const uint16_t *c,
                          const uint16_t *d, uint32_t from, uint32_t to)
{
    uint32_t k = from;
#if defined(__SSE2__)
    /* Eight bins at a time: interleaving 16-bit lanes, then 32-bit ones, puts the four entries
     * of a bin side by side. */
    const __m128i flip = _mm_set1_epi16((short)0x8000);
    for (; k + 8 <= to; k += 8) {
        __m128i va = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(a + k)), flip);
        __m128i vb = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(b + k)), flip);
        __m128i vc = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(c + k)), flip);
        __m128i vd = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(d + k)), flip);
        __m128i ab0 = _mm_unpacklo_epi16(va, vb), ab1 = _mm_unpackhi_epi16(va, vb);
        __m128i cd0 = _mm_unpacklo_epi16(vc, vd), cd1 = _mm_unpackhi_epi16(vc, vd);
        _mm_storeu_si128((__m128i *)(q + k), _mm_unpacklo_epi32(ab0, cd0));
        _mm_storeu_si128((__m128i *)(q + k + 2), _mm_unpackhi_epi32(ab0, cd0));
        _mm_storeu_si128((__m128i *)(q + k + 4), _mm_unpacklo_epi32(ab1, cd1));
        _mm_storeu_si128((__m128i *)(q + k + 6), _mm_unpackhi_epi32(ab1, cd1));
    }
#endif
    for (; k < to; k++)
        q[k] = quad_of(a[k], b[k], c[k], d[k]);
}

/* The bins of a segment's four tiles reach: the union of their ranges, or none. */
static void reached(const uint32_t *reach0, const uint32_t *reach1, uint32_t s, uint32_t s1,
                    uint32_t *from, uint32_t *to)
{
    const uint32_t *r[4] = {reach0 + 2 * s, reach0 + 2 * s1, reach1 + 2 * s, reach1 + 2 * s1};
    uint32_t lo = UINT32_MAX, hi = 0;
    for (int k = 0; k < 4; k++)
        if (r[k][0] <= r[k][1]) {
            lo = r[k][0] < lo ? r[k][0] : lo;
            hi = r[k][1] + 1 > hi ? r[k][1] + 1 : hi;
        }
    *from = lo < hi ? lo : 0;
    *to = lo < hi ? hi : 0;
}

static void quads_build(uint64_t *quads, const uint16_t *row0, const uint16_t *row1,
                        uint32_t tx, uint32_t bins, const uint32_t *reach0,
                        const uint32_t *reach1)
{
    const uint32_t segs = dh_clahe_segments(tx);
    for (uint32_t s = 0; s < segs; s++) {
        const uint32_t s1 = tx > 1 ? s + 1 : s;
        const uint16_t *a = row0 + (size_t)s * bins, *b = row0 + (size_t)s1 * bins;
        const uint16_t *c = row1 + (size_t)s * bins, *d = row1 + (size_t)s1 * bins;
        uint64_t *q = quads + (size_t)s * bins;
        uint32_t from = 0, to = bins;
        if (reach0)
            reached(reach0, reach1, s, s1, &from, &to);
        quads_segment(q, a, b, c, d, from, to);
        /* The AVX2 blend reads bin 0 for the pixels outside the window (and drops it): keep it
         * written, so no read is of memory never written. */
        if (from > 0 || to == 0)
            q[0] = quad_of(a[0], b[0], c[0], d[0]);
    }
}

void dh_clahe_quads_build(uint64_t *quads, const uint16_t *row0, const uint16_t *row1,
                          uint32_t tx, uint32_t bins)
{
    quads_build(quads, row0, row1, tx, bins, NULL, NULL);
}

void dh_clahe_quads_build_reached(uint64_t *quads, const uint16_t *row0, const uint16_t *row1,
                                  uint32_t tx, uint32_t bins, const uint32_t *reach0,
                                  const uint32_t *reach1)
{
    quads_build(quads, row0, row1, tx, bins, reach0, reach1);
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
            const uint64_t e = r->quads[(size_t)c->base[x] + b];
            const uint64_t t00 = (e & 0xffff) ^ 0x8000, t10 = (e >> 16 & 0xffff) ^ 0x8000;
            const uint64_t t01 = (e >> 32 & 0xffff) ^ 0x8000, t11 = (e >> 48) ^ 0x8000;
            const uint64_t h0 = c->w0[x] * t00 + c->w1[x] * t10;
            const uint64_t h1 = c->w0[x] * t01 + c->w1[x] * t11;
            r->out[x] = (uint16_t)dh_divide(2 * (wy0 * h0 + wy1 * h1) + den, q);
        }
    }
}

#ifdef DH_CLAHE_X86

__attribute__((target("avx2,fma"))) static void blend_avx2(const dh_clahe_row *r,
                                                           const dh_clahe_columns *c)
{
    const __m256i lo = _mm256_set1_epi32(r->lo), hi = _mm256_set1_epi32(r->hi);
    const __m256i top = _mm256_set1_epi32(r->top), one = _mm256_set1_epi32(1);
    const __m256i zero = _mm256_setzero_si256(), k = _mm256_set1_epi32(65537);
    /* The bin: a shift, or the multiply-high in the even 32-bit lanes, which _mm256_mul_epu32
     * reads. */
    const dh_clahe_bin_rule rule = dh_clahe_bin_rule_of(r->lo, r->hi, r->bins);
    const int shift = rule.shift;
    const __m128i by = _mm_cvtsi32_si128(shift < 0 ? 0 : shift);
    const __m256i magic = _mm256_set1_epi32((int)rule.magic);
    const uint16_t *raw = r->raw;
    uint16_t *out = r->out;
    const int is_signed = r->is_signed;
    const uint32_t *base = c->base, *den = c->den;
    const uint64_t *wpair = c->wpair;
    const float *inv_x = c->inv;
    const uint32_t n = c->n;
    const __m256i wy0 = _mm256_set1_epi32((int)r->wy0), wy1 = _mm256_set1_epi32((int)r->wy1);
    const __m256i den_y = _mm256_set1_epi32((int)r->den_y);
    const __m256 wy0f = _mm256_set1_ps((float)r->wy0), wy1f = _mm256_set1_ps((float)r->wy1);
    const __m256 inv_y = _mm256_set1_ps(1.0f / (float)r->den_y);
    const __m256 offset = _mm256_set1_ps(32768.5f);
    const long long *quads = (const long long *)r->quads;
    uint32_t x = 0;
    for (; x + 8 <= n; x += 8) {
        __m128i s16 = _mm_loadu_si128((const __m128i *)(raw + x));
        __m256i v = is_signed ? _mm256_cvtepi16_epi32(s16) : _mm256_cvtepu16_epi32(s16);
        __m256i above = _mm256_cmpgt_epi32(v, hi);
        __m256i outside = _mm256_or_si256(_mm256_cmpgt_epi32(lo, v), above);
        /* Outside the window bin 0 is read (any in-bounds one would do) and dropped. */
        __m256i u = _mm256_andnot_si256(outside, _mm256_sub_epi32(v, lo));
        __m256i b;
        if (shift >= 0) {
            b = _mm256_srl_epi32(u, by);
        } else {
            __m256i even = _mm256_srli_epi64(_mm256_mul_epu32(u, magic), 32);
            __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(u, 32), magic);
            b = _mm256_blend_epi32(even, odd, 0xaa);
        }
        int32_t at[8];
        _mm256_storeu_si256((__m256i *)at,
                            _mm256_add_epi32(b, _mm256_loadu_si256((const __m256i *)(base + x))));
        /* Pixels 0 1 4 5 and 2 3 6 7: after the multiply-add, one shuffle of each puts the
         * horizontal blends of all 8 in column order. */
        __m256i qa = _mm256_set_epi64x(quads[at[5]], quads[at[4]], quads[at[1]], quads[at[0]]);
        __m256i qb = _mm256_set_epi64x(quads[at[7]], quads[at[6]], quads[at[3]], quads[at[2]]);
        __m256i ha = _mm256_madd_epi16(qa, _mm256_loadu_si256((const __m256i *)(wpair + x)));
        __m256i hb = _mm256_madd_epi16(qb, _mm256_loadu_si256((const __m256i *)(wpair + x + 4)));
        __m256i h0 = _mm256_castps_si256(
            _mm256_shuffle_ps(_mm256_castsi256_ps(ha), _mm256_castsi256_ps(hb), 0x88));
        __m256i h1 = _mm256_castps_si256(
            _mm256_shuffle_ps(_mm256_castsi256_ps(ha), _mm256_castsi256_ps(hb), 0xdd));
        /* The estimate, then the exact remainder modulo 2^32 (the header's proof). */
        __m256 nf = _mm256_fmadd_ps(wy1f, _mm256_cvtepi32_ps(h1),
                                    _mm256_mul_ps(wy0f, _mm256_cvtepi32_ps(h0)));
        __m256 inv = _mm256_mul_ps(_mm256_loadu_ps(inv_x + x), inv_y);
        __m256i q = _mm256_cvttps_epi32(_mm256_fmadd_ps(nf, inv, offset));
        __m256i num = _mm256_add_epi32(_mm256_mullo_epi32(h0, wy0), _mm256_mullo_epi32(h1, wy1));
        __m256i d = _mm256_mullo_epi32(_mm256_loadu_si256((const __m256i *)(den + x)), den_y);
        __m256i rem = _mm256_add_epi32(_mm256_add_epi32(num, num),
                                       _mm256_mullo_epi32(d, _mm256_sub_epi32(k, _mm256_add_epi32(q, q))));
        q = _mm256_add_epi32(q, _mm256_cmpgt_epi32(zero, rem)); /* rem < 0: one less */
        q = _mm256_sub_epi32(q, _mm256_cmpgt_epi32(rem, _mm256_sub_epi32(_mm256_add_epi32(d, d), one)));
        q = _mm256_or_si256(_mm256_andnot_si256(outside, q), _mm256_and_si256(above, top));
        _mm_storeu_si128((__m128i *)(out + x),
                         _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1)));
    }
    if (x < n)
        blend_portable(r, c, x);
}

#endif /* DH_CLAHE_X86 */

int dh_clahe_rows_fast(const dh_clahe_columns *c, uint32_t max_den_y)
{
    if (c->max_den > 32767 || (uint64_t)c->max_den * max_den_y >= ((uint64_t)1 << 29) ||
        (uint64_t)dh_clahe_segments(c->tiles) * c->bins >= ((uint64_t)1 << 31))
        return DH_CLAHE_PATH_PORTABLE;
    return dh_clahe_cpu_path();
}

void dh_clahe_row_blend(const dh_clahe_row *r, const dh_clahe_columns *c, int path)
{
#ifdef DH_CLAHE_X86
    if (path >= DH_CLAHE_PATH_AVX512_LOADS) {
        dh_clahe_blend_avx512(r, c, path == DH_CLAHE_PATH_AVX512);
        return;
    }
    if (path == DH_CLAHE_PATH_AVX2) {
        blend_avx2(r, c);
        return;
    }
#else
    (void)path;
#endif
    blend_portable(r, c, 0);
}
