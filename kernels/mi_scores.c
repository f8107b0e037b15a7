// SPDX-License-Identifier: MIT
/*
 * mi_scores.c: the CPU side of mi_scores.h: fixed-order term sums and the scores of a joint
 * histogram. The GPU's score kernel follows the same lanes and tree, so both give the same bits.
 */
#include "mi_scores.h"

#include <string.h>

/* mi_scores.h's order: per lane a tree over its rows, then a tree over the lanes. */
#define LANE_SUM(counts, len, n, ln_n)                                                      \
    do {                                                                                 \
        const size_t rows = ((len) + DH_MI_LANES - 1) / DH_MI_LANES;                     \
        size_t pow2 = 1;                                                                 \
        while (pow2 < rows)                                                              \
            pow2 <<= 1;                                                                  \
        for (size_t t = 0; t < DH_MI_LANES; t++) {                                       \
            for (size_t j = 0; j < rows; j++) {                                          \
                size_t i = j * DH_MI_LANES + t;                                          \
                row[j] = i < (len) ? dh_mi_term((counts)[i], (n), (ln_n)) : 0.0;         \
            }                                                                            \
            for (size_t s = pow2 / 2; s >= 1; s >>= 1)                                   \
                for (size_t j = 0; j < s && j + s < rows; j++)                           \
                    row[j] = DH_MI_ADD(row[j], row[j + s]);                              \
            lane[t] = rows ? row[0] : 0.0;                                               \
        }                                                                                \
        for (size_t s = DH_MI_LANES / 2; s >= 1; s >>= 1)                                \
            for (size_t t = 0; t < s; t++)                                               \
                lane[t] = DH_MI_ADD(lane[t], lane[t + s]);                               \
    } while (0)

/* Histograms have at most 256 x 256 cells, so at most 256 rows. */
double dh_mi_sum_terms_u32(const uint32_t *counts, size_t len, uint64_t n, double ln_n)
{
    double lane[DH_MI_LANES], row[DH_MI_LANES];
    LANE_SUM(counts, len, n, ln_n);
    return lane[0];
}

double dh_mi_sum_terms_u64(const uint64_t *counts, size_t len, uint64_t n, double ln_n)
{
    double lane[DH_MI_LANES], row[DH_MI_LANES];
    LANE_SUM(counts, len, n, ln_n);
    return lane[0];
}

void dh_mi_scores_from_joint(const uint32_t *joint, uint32_t bins_fixed, uint32_t bins_moving,
                             uint64_t fixed_n, const double *fixed_sum, int log2,
                             dh_mi_values *out)
{
    uint64_t rows[256], cols[256];
    memset(rows, 0, sizeof rows);
    memset(cols, 0, sizeof cols);
    uint64_t n = 0;
    for (uint32_t f = 0; f < bins_fixed; f++)
        for (uint32_t m = 0; m < bins_moving; m++) {
            uint32_t c = joint[(size_t)f * bins_moving + m];
            rows[f] += c;
            cols[m] += c;
            n += c;
        }
    double ln_n = n ? dh_mi_log((double)n) : 0.0;
    double sf = (fixed_sum && n == fixed_n) ? *fixed_sum
                                            : dh_mi_sum_terms_u64(rows, bins_fixed, n, ln_n);
    double sm = dh_mi_sum_terms_u64(cols, bins_moving, n, ln_n);
    double sj = dh_mi_sum_terms_u32(joint, (size_t)bins_fixed * bins_moving, n, ln_n);
    dh_mi_finish(n, sf, sm, sj, log2, out);
}
