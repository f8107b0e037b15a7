// SPDX-License-Identifier: MIT
/*
 * clahe_tiles_avx512.h: the tile pass's counting of CLAHE's CPU twin in AVX-512
 * (clahe_tiles_avx512.c), beside clahe_cpu.c's scalar loops, which choose it where the processor
 * has AVX-512 (clahe_cpu_path.h). The same counts and bounds, so the tables do not change.
 */
#ifndef DH_KERNELS_CLAHE_TILES_AVX512_H
#define DH_KERNELS_CLAHE_TILES_AVX512_H

#include <stddef.h>
#include <stdint.h>

/* Where dh_clahe_count_avx512 is compiled (its callers need it only there). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DH_CLAHE_AVX512_BUILT 1
#endif

/* A tile's rows in one slice: `rows` rows of columns x0 .. x1 - 1, the first at raw (column 0),
 * `stride` samples apart; the window [lo, hi] (lo <= hi) of `bins` bins (dh_clahe_bins_used). */
typedef struct dh_clahe_count_job {
    const uint16_t *raw;
    size_t stride;
    uint32_t x0, x1, rows;
    int is_signed;
    int32_t lo, hi;
    uint32_t bins;
} dh_clahe_count_job;

/* Adds every sample of the job to the halves h0 and h1 (bins + 2 counters each; in clahe_cpu.c's
 * split: even offsets from x0 into h0, odd into h1) at its bin, bins for below the window and
 * bins + 1 above, as clahe_cpu.c's bin table gives them, and widens [*kmin, *kmax] to the
 * samples' keys (the raw 16-bit patterns, the sign bit flipped when signed, so they order as the
 * values). Only where DH_CLAHE_AVX512_BUILT and the processor has AVX-512 F, BW, VL and DQ. */
void dh_clahe_count_avx512(const dh_clahe_count_job *job, uint32_t *h0, uint32_t *h1,
                           uint16_t *kmin, uint16_t *kmax);

#endif /* DH_KERNELS_CLAHE_TILES_AVX512_H */
