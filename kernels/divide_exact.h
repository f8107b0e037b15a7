// SPDX-License-Identifier: MIT
/*
 * divide_exact.h: division by a divisor fixed for many numerators as a multiply and a shift,
 * exact (not approximate) for every numerator below 2^52: the CPU twins divide by one number
 * thousands of times (a CLAHE row's blend, a tile's table), where a 64-bit division costs several
 * times a multiply.
 *
 * With 2^(L-1) < d <= 2^L, k = max(64, 52 + L) and m = ceil(2^k / d) < 2^64, the error
 * m d - 2^k is below d, so n times it is below 2^k (2^(52+L) >= 2^52 d, or 2^64 > 2^52 * 2^11
 * when L <= 11) and floor(n m / 2^k) is the exact quotient (the round-up method of Granlund and
 * Montgomery). k >= 64 keeps the shift on the high word of the product.
 */
#ifndef DH_KERNELS_DIVIDE_EXACT_H
#define DH_KERNELS_DIVIDE_EXACT_H

#include <stdint.h>

typedef struct dh_divisor {
    uint64_t m;
    unsigned shift; /* k - 64 */
} dh_divisor;

/* The divisor d, 2 <= d < 2^41. */
static inline dh_divisor dh_divisor_of(uint64_t d)
{
    unsigned l = 0;
    while (((uint64_t)1 << l) < d)
        l++;
    unsigned k = 52 + l > 64 ? 52 + l : 64;
    dh_divisor q = {0, k - 64};
    unsigned __int128 p = (unsigned __int128)1 << k;
    q.m = (uint64_t)((p + d - 1) / d);
    return q;
}

/* floor(n / d) for n < 2^52. */
static inline uint64_t dh_divide(uint64_t n, dh_divisor q)
{
    return (uint64_t)(((unsigned __int128)n * q.m) >> 64) >> q.shift;
}

#endif /* DH_KERNELS_DIVIDE_EXACT_H */
