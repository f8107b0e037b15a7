// SPDX-License-Identifier: MIT
/*
 * hist_cuda_count.cuh: the device-side pieces of the 1D histogram kernel (hist_cuda.cu): how a
 * stored value becomes a slot (the same integers as dh_bin_map_slot in hist.h), and the two kinds
 * of privatized shared-memory histogram a block counts into.
 *
 *  - Wide counters: `copies` interleaved copies of 32-bit counters, the copy chosen by lane, so
 *    lanes that hit the same bin hit different addresses. Each copy is `stride` words apart, an
 *    odd number, so the copies of one bin also sit in different banks. Used whenever one copy
 *    fits the block's shared memory (up to about 58000 slots on Hopper).
 *  - Packed counters: two 16-bit counters per 32-bit word (hist_args.half_lo/half_hi say which
 *    slots), so 65536 bins + 2 need 128 KB. No half may wrap: the kernel that counts into them
 *    (hist_cuda_big.cuh) proves it with a guard.
 */
#ifndef DH_KERNELS_HIST_CUDA_COUNT_CUH
#define DH_KERNELS_HIST_CUDA_COUNT_CUH

#include <stdint.h>

namespace dh_cuda {

/* MAP_PAIR is the shift map computed two samples at a time (see pair_slots); MAP_SHIFT the same
 * map one sample at a time, for the ranges the pair form cannot take. */
enum map_kind { MAP_SHIFT = 0, MAP_DIV = 1, MAP_LUT = 2, MAP_PAIR = 3 };

/* Everything a launch needs, passed by value. */
struct hist_args {
    const uint16_t *data;    /* this launch's samples (device; at least 2-byte aligned) */
    uint64_t n;              /* samples in this launch */
    uint64_t first;          /* index of data[0] in the whole volume (chunked host path) */
    uint64_t seg_len;        /* samples per histogram: slice_len, or the whole volume */
    unsigned long long *out; /* histogram s is out[s * slots .. + slots) */
    unsigned long long *total; /* NULL, or one more histogram that every piece also adds to */
    uint32_t slots;          /* bins + 2 */
    uint32_t bins;
    int32_t lo, hi, shift;
    uint64_t width;          /* hi - lo */
    double inv_width;        /* 1 / width, then corrected exactly (MAP_DIV) */
    const uint32_t *lut;     /* MAP_LUT: slot by (s - lut_base), on the device */
    int32_t lut_base;
    uint32_t copies, stride; /* wide counters */
    uint32_t words;          /* packed counters: words of two 16-bit counters */
    /* Packed counters: the low half of word w counts internal slot w + half_lo, the high half
     * w + half_hi. By internal slot (half_lo = 0, half_hi = words = ceil(slots / 2)), or for
     * the pair map by key, the pair form's 16-bit slot less post (words = 32768, half_lo = post,
     * half_hi = 32768 + post): word = key & 0x7fff, half = key >> 15, no compare. */
    int32_t half_lo, half_hi;
    uint32_t head;           /* samples before the first 16-byte boundary of data (0..7) */
    uint32_t blocks;
    /* MAP_PAIR (pair_slots): clamp bounds and added constant, both halves alike; the mask of a
     * shifted half; the slot offset added at the end (folded into the histogram's base). */
    uint32_t pair_lo, pair_hi, pair_add, pair_mask;
    int32_t pair_post;
    /* 1: the kernel zeroes out (out_len counts) and total itself, and its blocks meet at one
     * grid-wide barrier before their first flush (cooperative launch): one launch per call. */
    uint32_t zero;
    uint64_t out_len;
    /* 1 (wide counters, no total, pieces cut only at histogram and block ends): no zeroing at
     * all. The piece that ends a histogram stores every slot of it with plain stores; a block's
     * last piece that ends inside a histogram adds to it after one grid-wide barrier, which every
     * such store precedes (cooperative launch). */
    uint32_t store;
    /* 1 (guarded packed counters, one histogram of an even slot count, output overwritten,
     * cooperative launch): flushes add each packed word as one 64-bit atomic, low count in the
     * low 32 bits, high count in the high 32 bits, into out[half_hi - 1 + w] (every 32-bit sum
     * stays below 2^32 since n does); after a grid-wide barrier the blocks spread those pairs into
     * the output's slots (hist_cuda_big.cuh). Half the atomics of one per count. */
    uint32_t pairs;
};

/* Pieces never exceed this, so a 32-bit shared counter cannot wrap before its flush. */
#define DH_CUDA_PIECE_MAX ((uint64_t)1 << 30)

/* Inside a block, slots are kept in an internal order that makes the common map cheap:
 * internal 0 is underflow, 1..bins the bins, bins + 1 overflow. Then the shift map is
 * clamp((s - lo) >> shift, -1, bins) + 1 with an arithmetic shift: four instructions, no branch
 * (valid while s - lo cannot overflow int32; the host picks MAP_DIV otherwise). */
__device__ __forceinline__ uint32_t external_slot(uint32_t i, uint32_t bins)
{
    return i == 0 ? bins : i <= bins ? i - 1 : bins + 1;
}

template <int KIND>
__device__ __forceinline__ uint32_t internal_slot(const hist_args &a, int32_t s)
{
    if (KIND == MAP_SHIFT) {
        const int32_t t = (s - a.lo) >> a.shift;
        return (uint32_t)(min(max(t, -1), (int32_t)a.bins) + 1);
    }
    uint32_t slot;
    if (KIND == MAP_LUT) {
        slot = __ldg(a.lut + (s - a.lut_base));
    } else {
        /* floor(d * bins / width) with d = s - lo in 32 unsigned bits (exact even for
         * lo = INT32_MIN): d * bins < 2^48 is exact in a double, and the quotient from the
         * precomputed reciprocal is off by at most one, which the remainder test corrects. */
        const uint32_t d = (uint32_t)s - (uint32_t)a.lo;
        const uint64_t num = (uint64_t)d * a.bins;
        uint64_t q = (uint64_t)((double)num * a.inv_width);
        const int64_t rem = (int64_t)(num - q * a.width);
        q = rem < 0 ? q - 1 : (uint64_t)rem >= a.width ? q + 1 : q;
        slot = (uint32_t)q;
        slot = s >= a.hi ? a.bins + 1 : slot;
        slot = s < a.lo ? a.bins : slot;
    }
    return slot == a.bins ? 0 : slot < a.bins ? slot + 1 : a.bins + 1;
}

/* The shift map of two 16-bit samples packed in one word, in five instructions for the pair.
 * Signed samples are first made unsigned (xor 0x8000: order kept, the host biases lo by 32768).
 * With u a sample, the internal slot is ((clamp(u, A, B) + c) >> shift) + post, where the host
 * (pair_params in hist_cuda.cu) picks A <= B and c so that A + c >= 0 and B + c <= 65535: each
 * half then stays inside its 16 bits, so one 32-bit min, max (the sm_90 u16x2 forms), add and
 * shift serve both samples. Returns the two slots less `post`, packed like the samples. */
template <int SIGNED>
__device__ __forceinline__ uint32_t pair_slots(const hist_args &a, uint32_t w)
{
    if (SIGNED)
        w ^= 0x80008000u;
    w = __vminu2(__vmaxu2(w, a.pair_lo), a.pair_hi) + a.pair_add;
    return (w >> a.shift) & a.pair_mask;
}

template <int SIGNED>
__device__ __forceinline__ int32_t lo16(uint32_t w)
{
    return SIGNED ? (int32_t)(int16_t)(w & 0xffffu) : (int32_t)(w & 0xffffu);
}
template <int SIGNED>
__device__ __forceinline__ int32_t hi16(uint32_t w)
{
    return SIGNED ? ((int32_t)w >> 16) : (int32_t)(w >> 16);
}

} // namespace dh_cuda

#endif /* DH_KERNELS_HIST_CUDA_COUNT_CUH */
