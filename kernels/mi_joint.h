// SPDX-License-Identifier: MIT
/*
 * mi_joint.h: joint histograms of two images of 16-bit stored values, the operation behind mutual
 * information. Its CPU twin is mi_joint_cpu.c; the CUDA launchers (mi_cuda.h) must give the same
 * counts bit for bit, and tests hold both to the naive double loop declared here.
 *
 * Binning (../shared/docs/mutual-information.md): an inclusive integer range [lo, hi] per image
 * and B bins, bin(v) = floor((v - lo) * B / (hi - lo + 1)), exact in integers. A pixel is counted
 * when both its values lie inside their ranges and both masks (if any) are non-zero; every other
 * pixel is left out of the joint histogram, and so out of N.
 *
 * The fixed image is binned once (dh_mi_bin_fixed) into one uint16 per pixel: its bin, or
 * DH_MI_JOINT_SKIP for a pixel that can never count. Joint counts are uint32, row-major with the
 * fixed image's bin as the row: joint[f * bins_moving + m].
 *
 * Float32 images (DRRs) are binned over a given float range instead (dh_faxis): the same
 * formula in float32 arithmetic with every step rounded once, so the host and the device give
 * the same bins; the fixed bins and everything after them are the same as for stored values.
 */
#ifndef DH_KERNELS_MI_JOINT_H
#define DH_KERNELS_MI_JOINT_H

#include <float.h>
#include <stddef.h>
#include <stdint.h>

/* Host float arithmetic must round every float32 step to float32 (SSE, not x87), as the device
 * does; the float axis below relies on it. */
#if !defined(__CUDA_ARCH__) && defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0
#error "dh_faxis_bin needs FLT_EVAL_METHOD 0 (float32 operations rounded to float32)"
#endif

#ifdef __CUDACC__
#define DH_MI_JOINT_HD __host__ __device__ static inline
#else
#define DH_MI_JOINT_HD static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define DH_MI_JOINT_MIN_BINS 2u
#define DH_MI_JOINT_MAX_BINS 256u
/* The prepared fixed bin of a pixel that is masked out or outside the fixed range. */
#define DH_MI_JOINT_SKIP 0xFFFFu
/* Images are counted in uint32 bins: at most this many pixels per image. */
#define DH_MI_JOINT_MAX_PIXELS ((size_t)UINT32_MAX)

/* One image's binning. width = hi - lo + 1 is at most 65536 (the span of a 16-bit sample), so
 * (v - lo) * bins < 2^24 and the division can be done by a multiply-high (`magic`) plus one
 * correction; dh_jaxis_bin_fast is that form, dh_jaxis_bin the definition. */
typedef struct dh_jaxis {
    uint32_t bins;  /* 2..256 */
    int32_t lo, hi; /* inclusive, both within -32768..65535 */
    uint32_t width; /* hi - lo + 1 */
    uint32_t magic; /* floor(2^32 / width), 0 when width is 1 (then every value is bin 0) */
} dh_jaxis;

/* Returns 0, or -1 when bins is outside 2..256, lo > hi, an end is outside -32768..65535 or the
 * range is wider than 65536 values. */
int dh_jaxis_init(dh_jaxis *axis, uint32_t bins, int64_t lo, int64_t hi);

/* The definition: the bin of v, or DH_MI_JOINT_SKIP when v lies outside [lo, hi]. */
DH_MI_JOINT_HD uint32_t dh_jaxis_bin(const dh_jaxis *axis, int32_t v)
{
    if (v < axis->lo || v > axis->hi)
        return DH_MI_JOINT_SKIP;
    return (uint32_t)(((uint64_t)((int64_t)v - axis->lo) * axis->bins) / axis->width);
}

/* The same value without a division, as the kernels compute it: q = floor(x * magic / 2^32)
 * is never above x / width and at most one below it (x < 2^24), so one correction step is exact.
 * Tested against dh_jaxis_bin for every value of many ranges. */
DH_MI_JOINT_HD uint32_t dh_jaxis_bin_fast(uint32_t bins, int32_t lo, uint32_t width, uint32_t magic,
                                       int32_t v)
{
    uint32_t off = (uint32_t)(v - lo);
    if (off >= width) /* below lo wraps to a huge value: one test covers both ends */
        return DH_MI_JOINT_SKIP;
    uint32_t x = off * bins;
    uint32_t q = (uint32_t)(((uint64_t)x * magic) >> 32);
    if (x - q * width >= width)
        q++;
    return q;
}

/* The same bin as one multiply-high and a shift, for the GPU's branch-free count loop: for
 * 0 <= off < width, floor(off * bins / width) = umulhi(off * k, m) >> shift. With x = off * bins
 * < 2^24, l = ceil(log2 width), s = 24 + l and m = ceil(2^s / width): m = (2^s + e) / width with
 * 0 <= e < width, so x m / 2^s = x / width + x e / (width 2^s), and the second term is below
 * 2^24 width / (width 2^(24 + l)) = 2^-l <= 1 / width: it cannot carry x / width past the next
 * integer. umulhi(x 2^a, m) >> b with a = 32 - s (s < 32, so x 2^a < 2^32) or b = s - 32 takes
 * floor(x m / 2^s); k = bins 2^a folds the first multiplication in. m < 2^26. Off >= width gives
 * a meaningless value (callers test off < width). Tested against dh_jaxis_bin for every value. */
typedef struct dh_jaxis_mul {
    uint32_t k, m, shift;
} dh_jaxis_mul;

DH_MI_JOINT_HD dh_jaxis_mul dh_jaxis_mul_init(uint32_t bins, uint32_t width)
{
    uint32_t l = 0;
    while (l < 16 && (1u << l) < width)
        l++;
    const uint32_t s = 24 + l;
    dh_jaxis_mul r;
    r.m = (uint32_t)((((uint64_t)1 << s) + width - 1) / width);
    r.k = s < 32 ? bins << (32 - s) : bins;
    r.shift = s > 32 ? s - 32 : 0;
    return r;
}

DH_MI_JOINT_HD uint32_t dh_jaxis_mul_bin(dh_jaxis_mul f, uint32_t off)
{
#ifdef __CUDA_ARCH__
    return __umulhi(off * f.k, f.m) >> f.shift;
#else
    return (uint32_t)(((uint64_t)(off * f.k) * f.m) >> 32) >> f.shift;
#endif
}

/* The binning of a float32 image over its given range [lo, hi] (finite, lo < hi, and
 * (hi - lo) * bins finite in float32), B = bins:
 *   a value counts when lo <= v <= hi (NaN and values outside, infinities included, never do);
 *   bin(v) = min(B - 1, floor(fl(fl(fl(v - lo) * B) / fl(hi - lo))))
 * where fl() rounds one float32 operation to nearest-even: a subtraction, a multiplication and a
 * division, never fused. v = hi falls into the last bin (numpy's closed last bin). For
 * integer-valued v and ends with (hi - lo) * B < 2^24 every step is exact but the division, whose
 * rounding cannot cross an integer, so bin(v) = floor((v - lo) * B / (hi - lo)) exactly: the range
 * [l, h + 1] bins the integers l..h as the integer axis [l, h] does. */
typedef struct dh_faxis {
    uint32_t bins; /* 2..256 */
    float lo, hi;
    float width; /* fl(hi - lo) */
} dh_faxis;

/* Returns 0, or -1 when bins is outside 2..256 or the range breaks the rules above. */
int dh_faxis_init(dh_faxis *axis, uint32_t bins, float lo, float hi);

/* The bin of v, or DH_MI_JOINT_SKIP (the CPU twin and the kernels both call this). */
DH_MI_JOINT_HD uint32_t dh_faxis_bin(uint32_t bins, float lo, float hi, float width, float v)
{
    if (!(v >= lo && v <= hi)) /* false for NaN */
        return DH_MI_JOINT_SKIP;
#ifdef __CUDA_ARCH__
    const float q = __fdiv_rn(__fmul_rn(__fsub_rn(v, lo), (float)bins), width);
#else
    /* Three separate float32 operations: nothing to contract into an FMA, and FLT_EVAL_METHOD 0
     * rounds each to float32 (checked above); the file is also built with -ffp-contract=off. */
    const float d = v - lo;
    const float x = d * (float)bins;
    const float q = x / width;
#endif
    const uint32_t b = (uint32_t)q; /* q >= 0: truncation is floor */
    return b < bins ? b : bins - 1;
}

/* Sample types: uint16_t data when is_signed is 0, int16_t when 1. */

/* Smallest and largest value over the pixels whose mask byte is non-zero (mask NULL: all).
 * Returns how many pixels were looked at; *lo and *hi are untouched when that is 0. */
size_t dh_mi_minmax(const void *data, int is_signed, size_t n, const uint8_t *mask,
                       int32_t *lo, int32_t *hi);

/* Bins the fixed image once: out[i] = its bin, or DH_MI_JOINT_SKIP where mask[i] is 0 or the value
 * lies outside the axis range. Fills marginal[axis->bins] (may be NULL) with the counts of each
 * bin. Returns the number of pixels that can count. */
size_t dh_mi_bin_fixed(const void *data, int is_signed, size_t n, const uint8_t *mask,
                          const dh_jaxis *axis, uint16_t *out, uint64_t *marginal);

/* CPU twin: the joint histogram of a prepared fixed image and one moving image (valid: the
 * moving validity mask, may be NULL) into joint[bins_fixed * moving->bins], overwritten.
 * Returns the number of pixels counted. */
size_t dh_mi_joint_cpu(const uint16_t *fixed_bins, uint32_t bins_fixed, const void *moving,
                    int moving_signed, size_t n, const uint8_t *valid, const dh_jaxis *moving_axis,
                    uint32_t *joint);

/* Float32 images (dh_faxis): the fixed image's bins, and the CPU twin of one moving image. */
size_t dh_mi_bin_fixed_f32(const float *data, size_t n, const uint8_t *mask,
                              const dh_faxis *axis, uint16_t *out, uint64_t *marginal);
size_t dh_mi_joint_cpu_f32(const uint16_t *fixed_bins, uint32_t bins_fixed, const float *moving,
                        size_t n, const uint8_t *valid, const dh_faxis *moving_axis,
                        uint32_t *joint);

/* The naive double loop from raw samples, written from the definition alone (64-bit division,
 * no prepared image, no shortcuts): the reference tests hold both backends to. */
void dh_mi_joint_naive(const void *fixed, int fixed_signed, const uint8_t *fixed_mask,
                    const dh_jaxis *fixed_axis, const void *moving, int moving_signed,
                    const uint8_t *valid, const dh_jaxis *moving_axis, size_t n, uint32_t *joint);

#ifdef __cplusplus
}
#endif
#endif /* DH_KERNELS_MI_JOINT_H */
