// SPDX-License-Identifier: MIT
/*
 * mi_scores.h: entropies, mutual information, NMI and ECC from joint-histogram counts, defined so
 * that the CPU (mi_scores.c) and the GPU (mi_cuda.cu) produce the same bits.
 *
 * Bit-identity needs three things, all fixed here and shared by both sides:
 *   - one logarithm, dh_mi_log, built from IEEE-exact steps (frexp, +, -, *, /) instead of the
 *     platform's log(), whose last bit differs between glibc and CUDA;
 *   - no fused multiply-add: on the device every step goes through __dadd_rn/__dmul_rn (which the
 *     compiler never contracts), on the host plain C11 does not contract (-std=c11 implies
 *     -ffp-contract=off in GCC);
 *   - one summation order, two pairwise trees: entry i of a histogram of len cells sits in
 *     lane t = i mod 256, row j = i / 256 (rows R = ceil(len / 256); a missing entry is 0.0);
 *     each lane adds its rows as a tree (row j += row j + s for s = P/2, ..., 1, P the power of
 *     two at or above R, only where j + s < R), then the lanes add as a tree (lane t += lane
 *     t + s for s = 128, ..., 1). Every level is one parallel step on the GPU (no long serial
 *     chains), and trees are more accurate than running sums.
 *
 * Each entropy is H = (1/N) sum_c c ln(N / c) over the non-zero counts c: every term is
 * non-negative, a single occupied bin gives exactly 0, and a dominant bin keeps its digits
 * (dh_mi_term).
 */
#ifndef DH_KERNELS_MI_SCORES_H
#define DH_KERNELS_MI_SCORES_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __CUDACC__
#define DH_MI_HD __host__ __device__ static inline
#else
#define DH_MI_HD static inline
#endif

#ifdef __CUDA_ARCH__
#define DH_MI_ADD(a, b) __dadd_rn((a), (b))
#define DH_MI_SUB(a, b) __dsub_rn((a), (b))
#define DH_MI_MUL(a, b) __dmul_rn((a), (b))
#define DH_MI_DIV(a, b) __ddiv_rn((a), (b))
#else
#define DH_MI_ADD(a, b) ((a) + (b))
#define DH_MI_SUB(a, b) ((a) - (b))
#define DH_MI_MUL(a, b) ((a) * (b))
#define DH_MI_DIV(a, b) ((a) / (b))
#endif

#define DH_MI_LANES 256

/* Status bits of a score record (the public DH_MI_* flags have these values). */
#define DH_MI_FLAG_EMPTY 1u             /* no pixel counted: every score is NaN */
#define DH_MI_FLAG_ZERO_JOINT_ENTROPY 2u /* one joint bin holds everything: NMI, ECC are NaN */

/* One score record; the layout of the public dh_mi_scores (plugin/lib/mi.c checks it). */
typedef struct dh_mi_values {
    double mi, nmi, ecc;
    double h_fixed, h_moving, h_joint;
    uint64_t n;
    uint32_t status;
    int32_t moving_lo, moving_hi; /* the moving range used */
    uint32_t reserved;
} dh_mi_values;

#if defined(__CUDA_ARCH__)
#define DH_MI_UNROLL _Pragma("unroll")
#else
#define DH_MI_UNROLL
#endif

/* 2 atanh(s) = ln((1 + s) / (1 - s)) by its series 2 s sum_k s^2k / (2k + 1), k < terms, in
 * Horner form. The coefficients 1.0 / (2k + 1) are correctly rounded quotients on both sides:
 * with terms a constant the loop unrolls and the compiler folds them (no division at run time;
 * folding is exact IEEE division, the same bits as the host's). */
DH_MI_HD double dh_mi_atanh2(double s, int terms)
{
    double s2 = DH_MI_MUL(s, s);
    double p = 1.0 / (double)(2 * terms - 1);
    DH_MI_UNROLL
    for (int k = terms - 2; k >= 0; k--)
        p = DH_MI_ADD(DH_MI_MUL(p, s2), 1.0 / (double)(2 * k + 1));
    return DH_MI_MUL(DH_MI_MUL(2.0, s), p);
}

/* ln x for x >= 1 to within a few ulp: x = m 2^e with m in [sqrt(1/2), sqrt(2)),
 * ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.1716, series to s^21 (the next term is
 * below 1e-18 relative); ln 2 split in a high part exact in e * ln2_hi and a low part. */
DH_MI_HD double dh_mi_log(double x)
{
    int e;
    double m = frexp(x, &e); /* exact: m in [0.5, 1) */
    if (m < 0.70710678118654752440) {
        m = m * 2.0; /* exact */
        e -= 1;
    }
    double lm = dh_mi_atanh2(DH_MI_DIV(DH_MI_SUB(m, 1.0), DH_MI_ADD(m, 1.0)), 11);
    const double ln2_hi = 6.93147180369123816490e-01; /* low 32 bits zero: e * ln2_hi exact */
    const double ln2_lo = 1.90821492927058770002e-10;
    double de = (double)e;
    return DH_MI_ADD(DH_MI_MUL(de, ln2_hi), DH_MI_ADD(DH_MI_MUL(de, ln2_lo), lm));
}

/* The entropy term of one count c of n (ln_n = dh_mi_log(n)): c ln(n / c), 0 for c = 0.
 * A count above n / 2 (the background bin of an X-ray) would lose digits in ln n - ln c, so
 * there ln(n / c) = 2 atanh((n - c) / (n + c)) with the exact integer n - c and s <= 1/3
 * (series to s^37: below 1e-18 relative). */
DH_MI_HD double dh_mi_term(uint64_t c, uint64_t n, double ln_n)
{
    if (c == 0)
        return 0.0;
    double dc = (double)c, ratio_log;
    if (c <= n - c)
        ratio_log = DH_MI_SUB(ln_n, dh_mi_log(dc));
    else
        ratio_log = dh_mi_atanh2(DH_MI_DIV((double)(n - c), (double)n + dc), 19);
    return DH_MI_MUL(dc, ratio_log);
}

/* The scores from N and the three fixed-order term sums (natural log); log2 converts the
 * entropies and MI to bits. Undefined values are NaN with a status bit. */
DH_MI_HD void dh_mi_finish(uint64_t n, double sum_fixed, double sum_moving, double sum_joint,
                           int log2, dh_mi_values *out)
{
    out->n = n;
    out->status = 0;
    if (n == 0) {
        out->mi = out->nmi = out->ecc = NAN;
        out->h_fixed = out->h_moving = out->h_joint = NAN;
        out->status = DH_MI_FLAG_EMPTY;
        return;
    }
    double dn = (double)n;
    double hf = DH_MI_DIV(sum_fixed, dn), hm = DH_MI_DIV(sum_moving, dn);
    double hj = DH_MI_DIV(sum_joint, dn);
    if (log2) {
        const double inv_ln2 = 1.44269504088896340736;
        hf = DH_MI_MUL(hf, inv_ln2);
        hm = DH_MI_MUL(hm, inv_ln2);
        hj = DH_MI_MUL(hj, inv_ln2);
    }
    double marg = DH_MI_ADD(hf, hm);
    double mi = DH_MI_SUB(marg, hj);
    out->h_fixed = hf;
    out->h_moving = hm;
    out->h_joint = hj;
    out->mi = mi;
    if (hj == 0.0) {
        out->nmi = out->ecc = NAN;
        out->status = DH_MI_FLAG_ZERO_JOINT_ENTROPY;
    } else {
        out->nmi = DH_MI_DIV(marg, hj);
        out->ecc = DH_MI_DIV(DH_MI_MUL(2.0, mi), marg);
    }
}

/* Fixed-order sums of dh_mi_term over counts[0..len) (see the top of this file). */
double dh_mi_sum_terms_u32(const uint32_t *counts, size_t len, uint64_t n, double ln_n);
double dh_mi_sum_terms_u64(const uint64_t *counts, size_t len, uint64_t n, double ln_n);

/* All scores of a joint histogram joint[bins_fixed * bins_moving] (fixed bin = row). When
 * fixed_sum is not NULL and the histogram counts exactly fixed_n pixels, *fixed_sum is taken as
 * the fixed term sum (a prepared image's cached marginal: every pixel of it was counted, so its
 * marginal is the row sums and the value is the same bits). The caller fills moving_lo/hi. */
void dh_mi_scores_from_joint(const uint32_t *joint, uint32_t bins_fixed, uint32_t bins_moving,
                            uint64_t fixed_n, const double *fixed_sum, int log2,
                            dh_mi_values *out);

#ifdef __cplusplus
}
#endif
#endif /* DH_KERNELS_MI_SCORES_H */
