// SPDX-License-Identifier: MIT
/*
 * test_clahe_segments.c: a CLAHE tile table built segment by segment with kernels/clahe_segments.h,
 * in the order the GPU twin's blocks build it (clahe_cuda_tables.cuh: each segment's record, the
 * plan from the records, the capped sums, then each segment's scan from its carry), equals
 * dh_eq_lut_build over the same histogram (the definition), entry for entry; and each segment's
 * clipped sum taken without its bins equals the sum of its clipped counts. Histograms: sparse
 * spikes, dense noise, bands across segment boundaries, one bin, none, counts near 2^32 in all;
 * bins around the segment size and up to 65536; clip limits from one sample per bin to none in
 * effect; 2 to 65536 output levels. Runs everywhere (no GPU needed), so the arithmetic is checked
 * in CI.
 */
#include <stdlib.h>
#include <string.h>

#include "clahe_segments.h"
#include "equalize_cpu.h"
#include "test_support.h"

/* The table of `bins` bins (stride >= bins entries, those past `bins` the top level) built as the
 * GPU blocks build it; also checks each segment's clipped sum against its bins. */
static void table_by_segments(const uint32_t *h, uint32_t bins, uint32_t stride, uint32_t levels,
                              double clip, uint16_t *out)
{
    const uint32_t segs = (stride + DH_CLAHE_SEG - 1) / DH_CLAHE_SEG;
    dh_clahe_seg rec[32];
    ck_assert_uint_le(segs, 32);
    uint32_t count = 0, first = UINT32_MAX, end = 0;
    for (uint32_t s = 0; s < segs; s++) { /* launch 1: each segment's record */
        dh_clahe_seg r = {0, UINT32_MAX, 0, 0};
        for (uint32_t i = s * DH_CLAHE_SEG; i < (s + 1) * DH_CLAHE_SEG && i < bins; i++)
            if (h[i]) {
                r.count += h[i];
                r.first = r.first < i ? r.first : i;
                r.end = i + 1;
            }
        rec[s] = r;
        count += r.count;
        first = r.first < first ? r.first : first;
        end = r.end > end ? r.end : end;
    }
    dh_clahe_plan p = dh_clahe_plan_of(count, first, end, clip);
    uint32_t capped = 0;
    for (uint32_t s = 0; p.limit && s < segs; s++) { /* launch 2: the capped sums */
        for (uint32_t i = s * DH_CLAHE_SEG; i < (s + 1) * DH_CLAHE_SEG && i < bins; i++)
            if (i >= p.first && i <= p.last)
                rec[s].capped += h[i] < p.limit ? h[i] : p.limit;
        capped += rec[s].capped;
    }
    dh_clahe_plan_excess(&p, capped);
    const uint32_t cdf_min = p.first <= p.last ? dh_clahe_seg_clipped(h[p.first], p.first, &p) : 0;
    for (uint32_t s = 0; s < segs; s++) { /* launch 3: each segment from its carry */
        uint32_t run = 0, own = 0;
        for (uint32_t l = 0; l < s; l++)
            run += dh_clahe_seg_clipped_sum(&rec[l], l, &p);
        for (uint32_t i = s * DH_CLAHE_SEG; i < (s + 1) * DH_CLAHE_SEG; i++) {
            const uint32_t c = dh_clahe_seg_clipped(i < bins ? h[i] : 0, i, &p);
            run += c;
            own += c;
            if (i < stride)
                out[i] = i >= bins ? (uint16_t)(levels - 1)
                                   : dh_clahe_seg_value(run, cdf_min, p.count, levels);
        }
        ck_assert_msg(own == dh_clahe_seg_clipped_sum(&rec[s], s, &p),
                      "segment %u of %u bins, clip %g: clipped sum %u, by records %u", s, bins,
                      clip, own, dh_clahe_seg_clipped_sum(&rec[s], s, &p));
    }
}

enum shape { SPIKES, NOISE, BANDS, ONE_BIN, EMPTY, HUGE, SHAPES };

/* A histogram of `bins` bins of `shape` whose total stays below 2^32. */
static void fill(uint32_t *h, uint32_t bins, enum shape shape, dh_test_rng *rng)
{
    memset(h, 0, bins * sizeof *h);
    switch (shape) {
    case SPIKES:
        for (int k = 0; k < 12; k++)
            h[dh_test_rng_below(rng, bins)] += 1 + dh_test_rng_below(rng, 100000);
        break;
    case NOISE:
        for (uint32_t i = 0; i < bins; i++)
            h[i] = dh_test_rng_below(rng, 3) ? dh_test_rng_below(rng, 50) : 0;
        break;
    case BANDS: /* runs of values around multiples of the segment size */
        for (uint32_t c = DH_CLAHE_SEG; c < bins + 60; c += DH_CLAHE_SEG)
            for (uint32_t i = c - 60; i < c + 60 && i < bins; i++)
                h[i] = dh_test_rng_below(rng, 400) + (i == c - 3 ? 50000 : 0);
        break;
    case ONE_BIN:
        h[dh_test_rng_below(rng, bins)] = 1 + dh_test_rng_below(rng, 1000);
        break;
    case EMPTY:
        break;
    default: /* HUGE: near 2^32 in all, most of it in one bin */
        h[dh_test_rng_below(rng, bins)] = 4000000000u;
        for (int k = 0; k < 200; k++)
            h[dh_test_rng_below(rng, bins)] += dh_test_rng_below(rng, 1000000);
        break;
    }
}

START_TEST(segments_equal_the_global_table)
{
    static const uint32_t bins[] = {1, 2, 7, 2047, 2048, 2049, 4096, 6000, 30001, 65535, 65536};
    static const uint32_t levels[] = {2, 256, 4096, 65536};
    static const double clips[] = {0, 0.01, 0.5, 1, 2.5, 40, 1e12, 1e30};
    uint32_t *h = malloc(65536 * sizeof *h);
    uint64_t *h64 = malloc((65536 + 2) * sizeof *h64);
    uint16_t *want = malloc(65536 * 2), *got = malloc((65536 + 8) * 2);
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 2048);
    int round = 0;
    for (size_t b = 0; b < sizeof bins / sizeof *bins; b++)
        for (int shape = 0; shape < SHAPES; shape++)
            for (size_t c = 0; c < sizeof clips / sizeof *clips; c++, round++) {
                /* a table row longer than its unit's bins (another unit has more), as the
                 * GPU's batches of slices have them; never past 65536 */
                const uint32_t n = bins[b], stride = n + (round % 3 || n > 65531 ? 0 : 5);
                const uint32_t lv = levels[round % 4];
                fill(h, n, (enum shape)shape, &rng);
                for (uint32_t i = 0; i < n; i++)
                    h64[i] = h[i];
                const dh_eq_window all = {0, (int32_t)n - 1};
                ck_assert_int_eq(dh_eq_lut_build(h64, 0, n, all, lv, clips[c], want), 0);
                table_by_segments(h, n, stride, lv, clips[c], got);
                for (uint32_t i = 0; i < n; i++)
                    if (want[i] != got[i])
                        ck_abort_msg("%u bins, shape %d, clip %g, %u levels: entry %u is %u, "
                                     "by segments %u",
                                     n, shape, clips[c], lv, i, want[i], got[i]);
                for (uint32_t i = n; i < stride; i++)
                    ck_assert_uint_eq(got[i], lv - 1);
            }
    free(h);
    free(h64);
    free(want);
    free(got);
}
END_TEST

int main(void)
{
    const dh_test tests[] = {DH_TEST(segments_equal_the_global_table)};
    return dh_test_run(dh_test_suite("clahe_segments", 120, DH_TESTS(tests)));
}
