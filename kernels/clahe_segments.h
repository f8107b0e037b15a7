// SPDX-License-Identifier: MIT
/*
 * clahe_segments.h: the arithmetic of a CLAHE tile table built in segments of bins, as the GPU
 * twin builds it (clahe_cuda_tables.cuh: a block per segment), as inline functions the host and
 * the device compile alike, so tests/test_clahe_segments.c checks them against dh_eq_lut_build
 * (the definition) on the CPU, in CI.
 *
 * A table is dh_eq_lut_build over one tile's histogram with the window the whole table
 * (clahe_cpu.c's tile_table). Cut into segments, each segment first gives its count and its first
 * and last bin present (dh_clahe_seg), from which the table's statistics follow
 * (dh_clahe_plan_of: count, span, clip limit); when clipping, each segment then gives its sum of
 * min(count, limit) over the span, from which the excess and its redistribution follow
 * (dh_clahe_plan_excess). A segment's clipped sum then needs no second look at its bins
 * (dh_clahe_seg_clipped_sum), so each segment knows where its cdf starts from the records before
 * it alone. Counts are 32-bit: a tile of fewer than 2^32 samples, and every clipped count, cdf
 * and sum is at most the tile's count.
 */
#ifndef DH_KERNELS_CLAHE_SEGMENTS_H
#define DH_KERNELS_CLAHE_SEGMENTS_H

#include <stdint.h>

#include "clahe_fast.h"
#include "equalize_table.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bins per segment: one GPU block of 256 threads, 8 bins each. */
#define DH_CLAHE_SEG 2048u

/* A segment's record: its count, bins present [first, end) (first UINT32_MAX, end 0: none), and
 * (clipping) its sum of min(count, limit) over the table's span. */
typedef struct dh_clahe_seg {
    uint32_t count, first, end, capped;
} dh_clahe_seg;

/* dh_eq_stats with the redistribution's quotients (dh_eq_clipped's divisions, done once). */
typedef struct dh_clahe_plan {
    uint32_t count, first, last; /* first > last: no bin present */
    uint32_t limit;              /* 0: no clipping; else min(limit, 2^32 - 1), the same effect */
    uint32_t share, rest, step;  /* excess / span, excess % span, max(span / rest, 1) */
} dh_clahe_plan;

/* The plan from the segments' totals: count, lowest first and highest end. The clip limit of
 * dh_eq_clip_limit; a limit beyond 2^32 - 1 caps nothing that a 32-bit count holds, so it is
 * kept as 2^32 - 1. No redistribution yet (dh_clahe_plan_excess). */
static inline DH_EQ_HD dh_clahe_plan dh_clahe_plan_of(uint32_t count, uint32_t first,
                                                      uint32_t end, double clip_limit)
{
    dh_clahe_plan p = {0, 1, 0, 0, 0, 0, 0};
    if (count == 0)
        return p;
    p.count = count;
    p.first = first;
    p.last = end - 1;
    const uint64_t limit =
        dh_eq_clip_limit(clip_limit, count, (uint64_t)p.last - p.first + 1);
    p.limit = limit > UINT32_MAX ? UINT32_MAX : (uint32_t)limit;
    return p;
}

/* The redistribution, from the segments' capped sums added up: inside the window every bin
 * present lies in the span, so the excess is the count less the capped counts. */
static inline DH_EQ_HD void dh_clahe_plan_excess(dh_clahe_plan *p, uint32_t capped)
{
    if (!p->limit || p->count == 0)
        return;
    const uint32_t span = p->last - p->first + 1, excess = p->count - capped;
    p->share = excess / span;
    p->rest = excess % span;
    const uint32_t step = p->rest ? span / p->rest : 1;
    p->step = step < 1 ? 1 : step;
}

/* dh_eq_clipped of bin i with count c. */
static inline DH_EQ_HD uint32_t dh_clahe_seg_clipped(uint32_t c, uint32_t i,
                                                     const dh_clahe_plan *p)
{
    if (!p->limit || i < p->first || i > p->last)
        return c;
    uint32_t v = (c < p->limit ? c : p->limit) + p->share;
    if (p->rest) {
        const uint32_t k = i - p->first;
        if (k % p->step == 0 && k / p->step < p->rest)
            v++;
    }
    return v;
}

/* The clipped counts of segment s summed without its bins: its plain count when not clipping,
 * else its capped sum, the share for each of its bins inside the span, and the remainder's bins
 * among them (k = i - first a multiple of step with k / step < rest: an arithmetic count). */
static inline DH_EQ_HD uint32_t dh_clahe_seg_clipped_sum(const dh_clahe_seg *r, uint32_t s,
                                                         const dh_clahe_plan *p)
{
    if (!p->limit)
        return r->count;
    const uint32_t s0 = s * DH_CLAHE_SEG, s1 = s0 + DH_CLAHE_SEG - 1;
    const uint32_t lo = s0 > p->first ? s0 : p->first, hi = s1 < p->last ? s1 : p->last;
    if (lo > hi)
        return r->capped;
    uint32_t sum = r->capped + p->share * (hi - lo + 1);
    if (p->rest) {
        const uint32_t a = lo - p->first, end = (p->rest - 1) * p->step;
        const uint32_t b = hi - p->first < end ? hi - p->first : end;
        if (b >= a)
            sum += b / p->step - (a + p->step - 1) / p->step + 1;
    }
    return sum;
}

/* dh_eq_value through clahe_fast.h's exact quotient: (cdf - cdf_min) (levels - 1) < 2^48,
 * count - cdf_min < 2^32, the quotient below 2^16. */
static inline DH_EQ_HD uint16_t dh_clahe_seg_value(uint32_t cdf, uint32_t cdf_min, uint32_t count,
                                                   uint32_t levels)
{
    if (cdf <= cdf_min || count <= cdf_min)
        return 0;
    return (uint16_t)dh_clahe_div_small((uint64_t)(cdf - cdf_min) * (levels - 1),
                                        count - cdf_min);
}

#ifdef __cplusplus
}
#endif
#endif /* DH_KERNELS_CLAHE_SEGMENTS_H */
