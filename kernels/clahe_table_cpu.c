// SPDX-License-Identifier: MIT
/*
 * clahe_table_cpu.c: a CLAHE tile's table from its two half histograms (clahe_table_cpu.h), the
 * same entries as dh_eq_lut_build (equalize_table.h's dh_eq_clip_limit, dh_eq_clipped and
 * dh_eq_value) with the per-bin divisions taken out: tests/test_clahe_table.c compares the two
 * on random, sparse, flat and one-value histograms with every clip.
 */
#include "clahe_table_cpu.h"

#include "divide_exact.h"
#include "equalize_table.h"

void dh_clahe_table_from_halves(const uint32_t *h0, const uint32_t *h1, uint32_t bins,
                                uint32_t lo, uint32_t hi, uint32_t levels, double clip_limit,
                                uint16_t *table)
{
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
