// SPDX-License-Identifier: MIT
/*
 * clahe_table_cpu.c: a CLAHE tile's table from its two half histograms (clahe_table_cpu.h), the
 * same entries as dh_eq_lut_build (equalize_table.h's dh_eq_clip_limit, dh_eq_clipped and
 * dh_eq_value) with the per-bin divisions taken out: tests/test_clahe_rows.c compares the two
 * on random, sparse, flat and one-value histograms with every clip.
 *
 * With counts (a tile of fewer than 2^31 pixels), on x86-64 with AVX2, the halves are summed into
 * h0, clipped and redistributed there, and the cumulative sums and the division per bin run 8
 * bins at a time (cdf_avx2): the sums in 32-bit lanes, the quotient floor(num / d) with
 * num = (cdf - cdf_min) (levels - 1) < 2^47 and d < 2^31 in doubles, where num, d, q d and
 * num - q d (q < 2^16) are all exact: q = floor(num (1 / d)) is the exact quotient or one off,
 * and the sign of num - q d and its comparison with d settle which.
 */
#include "clahe_table_cpu.h"

#include <string.h>

#include "clahe_cpu_path.h"
#include "divide_exact.h"
#include "equalize_table.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DH_TABLE_X86 1
#include <immintrin.h>

/* table[b] = floor((c[first] + .. + c[b] - cdf_min) (levels - 1) / d) for b in first .. last:
 * the header's exact double arithmetic, 8 bins a step (c: the clipped counts, their total below
 * 2^31; d >= 1). */
__attribute__((target("avx2,fma"))) static void cdf_avx2(const uint32_t *c, uint32_t first,
                                                         uint32_t last, uint32_t cdf_min,
                                                         uint32_t levels, uint32_t d,
                                                         uint16_t *table)
{
    const __m256d scale = _mm256_set1_pd((double)(levels - 1)), dd = _mm256_set1_pd((double)d);
    const __m256d inv = _mm256_set1_pd(1.0 / (double)d), one = _mm256_set1_pd(1.0);
    const __m256d zero = _mm256_setzero_pd();
    const __m256i low3 = _mm256_set1_epi32(3), top7 = _mm256_set1_epi32(7);
    /* The running sum minus cdf_min, in every lane. */
    __m256i carry = _mm256_set1_epi32(-(int32_t)cdf_min);
    uint32_t b = first;
    for (; b + 8 <= last + 1; b += 8) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(c + b));
        v = _mm256_add_epi32(v, _mm256_slli_si256(v, 4)); /* prefix sums in each 128-bit half */
        v = _mm256_add_epi32(v, _mm256_slli_si256(v, 8));
        __m256i low_total = _mm256_permutevar8x32_epi32(v, low3);
        v = _mm256_add_epi32(v, _mm256_blend_epi32(_mm256_setzero_si256(), low_total, 0xf0));
        v = _mm256_add_epi32(v, carry);
        carry = _mm256_permutevar8x32_epi32(v, top7);
        __m128i q32[2];
        for (int half = 0; half < 2; half++) {
            __m128i x = half ? _mm256_extracti128_si256(v, 1) : _mm256_castsi256_si128(v);
            __m256d num = _mm256_mul_pd(_mm256_cvtepi32_pd(x), scale);
            __m256d q = _mm256_floor_pd(_mm256_mul_pd(num, inv));
            __m256d r = _mm256_fnmadd_pd(q, dd, num); /* num - q d, exact */
            q = _mm256_sub_pd(q, _mm256_and_pd(_mm256_cmp_pd(r, zero, _CMP_LT_OQ), one));
            q = _mm256_add_pd(q, _mm256_and_pd(_mm256_cmp_pd(r, dd, _CMP_GE_OQ), one));
            q32[half] = _mm256_cvttpd_epi32(q);
        }
        _mm_storeu_si128((__m128i *)(table + b), _mm_packus_epi32(q32[0], q32[1]));
    }
    uint32_t cdf = (uint32_t)_mm256_extract_epi32(carry, 0) + cdf_min;
    for (; b <= last; b++) {
        cdf += c[b];
        table[b] = (uint16_t)((uint64_t)(cdf - cdf_min) * (levels - 1) / d);
    }
}

/* AVX2 and FMA here, and not forced off (DH_CLAHE_CPU_PATH=portable, clahe_cpu_path.h). */
static int have_avx2(void)
{
    return dh_clahe_cpu_path() >= DH_CLAHE_PATH_AVX2;
}
#endif

#ifdef DH_TABLE_X86
/* The vector path's loops over bins (the header), compiled for AVX2 so they run 8 bins a step. */
__attribute__((target("avx2,fma"))) static uint64_t sum_halves(uint32_t *h0, const uint32_t *h1,
                                                               uint32_t lo, uint32_t hi)
{
    /* Counted from 0 to a size (not up to hi inclusive), so the compiler sees a finite loop and
     * vectorizes it. */
    const size_t n = (size_t)hi - lo + 1;
    uint32_t *a = h0 + lo;
    const uint32_t *b = h1 + lo;
    uint64_t count = 0;
    for (size_t i = 0; i < n; i++) {
        a[i] += b[i];
        count += a[i];
    }
    return count;
}

/* dh_eq_clipped over first .. last in place: min(h, limit) + share, one more at first + j step
 * for j < rest. */
__attribute__((target("avx2,fma"))) static void clip_in_place(uint32_t *h, uint32_t first,
                                                              uint32_t last, uint64_t limit)
{
    const uint64_t span = (uint64_t)last - first + 1;
    const uint32_t l32 = limit > UINT32_MAX ? UINT32_MAX : (uint32_t)limit;
    uint32_t *c = h + first;
    uint64_t excess = 0;
    for (size_t i = 0; i < span; i++) /* from 0 to a size: vectorized, as in sum_halves */
        excess += c[i] > l32 ? c[i] - l32 : 0;
    const uint32_t share = (uint32_t)(excess / span), rest = (uint32_t)(excess % span);
    for (size_t i = 0; i < span; i++)
        c[i] = (c[i] < l32 ? c[i] : l32) + share;
    const uint64_t step = rest ? (span / rest > 1 ? span / rest : 1) : 1;
    for (uint64_t j = 0; j < rest; j++)
        h[first + j * step]++;
}
#endif

/* The vector path (the header): h0 summed with h1 over [lo, hi] first, then clipped in place.
 * Returns 0, or -1 when it does not apply (no AVX2, no count, or a count of 2^31 or more), with
 * h0 as it was. */
static int table_vector(uint32_t *h0, const uint32_t *h1, uint32_t bins, uint32_t lo,
                        uint32_t hi, uint32_t levels, double clip_limit, uint16_t *table)
{
#ifdef DH_TABLE_X86
    if (lo > hi || !have_avx2())
        return -1;
    const uint64_t count = sum_halves(h0, h1, lo, hi);
    if (count == 0) /* h0 unchanged: all zero */
        return -1;
    if (count >= ((uint64_t)1 << 31)) { /* beyond the 32-bit lanes: h0 back as it was */
        for (uint32_t b = lo; b <= hi; b++)
            h0[b] -= h1[b];
        return -1;
    }
    uint32_t first = lo, last = hi;
    while (!h0[first])
        first++;
    while (!h0[last])
        last--;
    const uint64_t limit = dh_eq_clip_limit(clip_limit, count, (uint64_t)last - first + 1);
    if (limit)
        clip_in_place(h0, first, last, limit);
    const uint32_t cdf_min = h0[first], d = (uint32_t)(count - cdf_min);
    memset(table, 0, first * sizeof *table);
    if (d == 0)
        memset(table + first, 0, (last - first + 1) * sizeof *table);
    else
        cdf_avx2(h0, first, last, cdf_min, levels, d, table);
    for (uint32_t b = last + 1; b < bins; b++)
        table[b] = table[last];
    return 0;
#else
    (void)h0, (void)h1, (void)bins, (void)lo, (void)hi, (void)levels, (void)clip_limit;
    (void)table;
    return -1;
#endif
}

void dh_clahe_table_from_halves(uint32_t *h0, const uint32_t *h1, uint32_t bins,
                                uint32_t lo, uint32_t hi, uint32_t levels, double clip_limit,
                                uint16_t *table)
{
    if (hi >= bins)
        hi = bins - 1;
    if (table_vector(h0, h1, bins, lo, hi, levels, clip_limit, table) == 0)
        return;
    /* dh_eq_stats_gather over the window of all bins (the counts outside lo .. hi are zero). */
    uint64_t count = 0;
    int64_t first = -1, last = -1;
    if (hi >= bins)
        hi = bins - 1;
    for (uint32_t b = lo; b <= hi && lo <= hi; b++) {
        uint64_t h = (uint64_t)h0[b] + h1[b];
        if (!h)
            continue;
        count += h;
        if (first < 0)
            first = b;
        last = b;
    }
    const int flat = count == 0; /* no pixel: every bin counts 1 */
    if (flat) {
        count = bins;
        first = 0;
        last = (int64_t)bins - 1;
    }
#define COUNT(b) (flat ? 1 : (uint64_t)h0[b] + h1[b])
    const uint64_t span = (uint64_t)(last - first + 1);
    const uint64_t limit = dh_eq_clip_limit(clip_limit, count, span);
    uint64_t excess = 0;
    if (limit)
        for (int64_t b = first; b <= last; b++) {
            uint64_t h = COUNT(b);
            if (h > limit)
                excess += h - limit;
        }
    /* dh_eq_clipped inside [first, last]: min(h, limit) + share, plus one at first + j step for
     * j < rest, walked with a running index instead of a remainder per bin. */
    const uint64_t share = limit ? excess / span : 0, rest = limit ? excess % span : 0;
    uint64_t step = rest ? span / rest : 1;
    if (step < 1)
        step = 1;
    uint64_t cdf = 0, cdf_min = 0;
    {
        uint64_t h = COUNT(first);
        cdf_min = limit ? (h < limit ? h : limit) + share + (rest ? 1 : 0) : h;
    }
    /* dh_eq_value: floor((cdf - cdf_min) (levels - 1) / (count - cdf_min)), numerator below
     * 2^48 (cdf <= count < 2^32), one divisor for the tile. Below first the cdf is 0 (value 0);
     * above last it stays at its last value, as do the entries. */
    const uint64_t d = count > cdf_min ? count - cdf_min : 0;
    const dh_divisor q = dh_divisor_of(d >= 2 ? d : 2);
    uint64_t next = (uint64_t)first, given = 0; /* the next bin that gets one of the rest */
    for (int64_t b = 0; b < first; b++)
        table[b] = 0;
    for (int64_t b = first; b <= last; b++) {
        uint64_t c = COUNT(b);
        if (limit) {
            c = (c < limit ? c : limit) + share;
            if (given < rest && (uint64_t)b == next) {
                c++;
                given++;
                next += step;
            }
        }
        cdf += c;
        if (cdf <= cdf_min || d == 0)
            table[b] = 0;
        else if (d == 1)
            table[b] = (uint16_t)((cdf - cdf_min) * (levels - 1));
        else
            table[b] = (uint16_t)dh_divide((cdf - cdf_min) * (levels - 1), q);
    }
    for (uint32_t b = (uint32_t)last + 1; b < bins; b++)
        table[b] = table[last];
#undef COUNT
}
