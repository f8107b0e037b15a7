/*
 * jhist.h: joint histograms of two images of 16-bit stored values, the operation behind mutual
 * information. Its CPU twin is jhist_cpu.c; the CUDA launchers (jhist_cuda.h) must give the same
 * counts bit for bit, and tests hold both to the naive double loop declared here.
 *
 * Binning (../shared/docs/mutual-information.md): an inclusive integer range [lo, hi] per image
 * and B bins, bin(v) = floor((v - lo) * B / (hi - lo + 1)), exact in integers. A pixel is counted
 * when both its values lie inside their ranges and both masks (if any) are non-zero; every other
 * pixel is left out of the joint histogram, and so out of N.
 *
 * The fixed image is binned once (dh_jhist_bin_fixed) into one uint16 per pixel: its bin, or
 * DH_JHIST_SKIP for a pixel that can never count. Joint counts are uint32, row-major with the
 * fixed image's bin as the row: joint[f * bins_moving + m].
 */
#ifndef DH_KERNELS_JHIST_H
#define DH_KERNELS_JHIST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define DH_JHIST_HD __host__ __device__ static inline
#else
#define DH_JHIST_HD static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define DH_JHIST_MIN_BINS 2u
#define DH_JHIST_MAX_BINS 256u
/* The prepared fixed bin of a pixel that is masked out or outside the fixed range. */
#define DH_JHIST_SKIP 0xFFFFu
/* Images are counted in uint32 bins: at most this many pixels per image. */
#define DH_JHIST_MAX_PIXELS ((size_t)UINT32_MAX)

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

/* The definition: the bin of v, or DH_JHIST_SKIP when v lies outside [lo, hi]. */
DH_JHIST_HD uint32_t dh_jaxis_bin(const dh_jaxis *axis, int32_t v)
{
    if (v < axis->lo || v > axis->hi)
        return DH_JHIST_SKIP;
    return (uint32_t)(((uint64_t)((int64_t)v - axis->lo) * axis->bins) / axis->width);
}

/* The same value without a division, as the kernels compute it: q = floor(x * magic / 2^32)
 * is never above x / width and at most one below it (x < 2^24), so one correction step is exact.
 * Tested against dh_jaxis_bin for every value of many ranges. */
DH_JHIST_HD uint32_t dh_jaxis_bin_fast(uint32_t bins, int32_t lo, uint32_t width, uint32_t magic,
                                       int32_t v)
{
    uint32_t off = (uint32_t)(v - lo);
    if (off >= width) /* below lo wraps to a huge value: one test covers both ends */
        return DH_JHIST_SKIP;
    uint32_t x = off * bins;
    uint32_t q = (uint32_t)(((uint64_t)x * magic) >> 32);
    if (x - q * width >= width)
        q++;
    return q;
}

/* Sample types: uint16_t data when is_signed is 0, int16_t when 1. */

/* Smallest and largest value over the pixels whose mask byte is non-zero (mask NULL: all).
 * Returns how many pixels were looked at; *lo and *hi are untouched when that is 0. */
size_t dh_jhist_minmax(const void *data, int is_signed, size_t n, const uint8_t *mask,
                       int32_t *lo, int32_t *hi);

/* Bins the fixed image once: out[i] = its bin, or DH_JHIST_SKIP where mask[i] is 0 or the value
 * lies outside the axis range. Fills marginal[axis->bins] (may be NULL) with the counts of each
 * bin. Returns the number of pixels that can count. */
size_t dh_jhist_bin_fixed(const void *data, int is_signed, size_t n, const uint8_t *mask,
                          const dh_jaxis *axis, uint16_t *out, uint64_t *marginal);

/* CPU twin: the joint histogram of a prepared fixed image and one moving image (valid: the
 * moving validity mask, may be NULL) into joint[bins_fixed * moving->bins], overwritten.
 * Returns the number of pixels counted. */
size_t dh_jhist_cpu(const uint16_t *fixed_bins, uint32_t bins_fixed, const void *moving,
                    int moving_signed, size_t n, const uint8_t *valid, const dh_jaxis *moving_axis,
                    uint32_t *joint);

/* The naive double loop from raw samples, written from the definition alone (64-bit division,
 * no prepared image, no shortcuts): the reference tests hold both backends to. */
void dh_jhist_naive(const void *fixed, int fixed_signed, const uint8_t *fixed_mask,
                    const dh_jaxis *fixed_axis, const void *moving, int moving_signed,
                    const uint8_t *valid, const dh_jaxis *moving_axis, size_t n, uint32_t *joint);

#ifdef __cplusplus
}
#endif
#endif /* DH_KERNELS_JHIST_H */
