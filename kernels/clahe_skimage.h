// SPDX-License-Identifier: MIT
/*
 * clahe_skimage.h: scikit-image's exposure.equalize_adapthist (0.19 to 0.26) reproduced step by
 * step on the CPU (clahe_skimage_cpu.c), so that a user migrating from it gets its numbers:
 * img_as_uint of the array it would have been given, rescale_intensity to 14 bits with its
 * rounding, reflect padding, its bin lookup, integer clip limit and redistribution loop, its
 * float64 tables and the float32 multilinear blend in its order, then its final rescale to
 * [0, 1]. docs/equalization.md ("scikit-image-compatible mode") is the definition; this is not
 * our CLAHE (clahe.h) and shares nothing with it on purpose: every rounding is scikit-image's.
 */
#ifndef DH_KERNELS_CLAHE_SKIMAGE_H
#define DH_KERNELS_CLAHE_SKIMAGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The NumPy dtype of the array scikit-image would have been given (pydicom's pixel_array for
 * these stored values): it decides img_as_uint's scaling (uint8 x 257, int8 and int16 scaled
 * up with their negatives clipped to 0, uint16 as it is). The samples are always 16-bit words. */
typedef enum dh_skimage_dtype {
    DH_SKIMAGE_UINT8 = 0,
    DH_SKIMAGE_INT8 = 1,
    DH_SKIMAGE_UINT16 = 2,
    DH_SKIMAGE_INT16 = 3
} dh_skimage_dtype;

/* One call's work. nx columns, ny rows, nz slices (x fastest). With volume 1 the whole block
 * is one 3D image (axes slices, rows, columns as NumPy sees it); with volume 0 every slice is a
 * 2D image of its own (its own min-max, default kernel and final rescale). kernel: scikit-image's
 * kernel_size along columns, rows, slices; 0 takes its default max(n // 8, 1) (kernel[2] is
 * unused with volume 0). clip_limit its fraction (<= 0: no clipping); nbins >= 1. */
typedef struct dh_clahe_skimage_job {
    uint32_t nx, ny, nz;
    int volume;
    uint32_t kernel[3];
    double clip_limit;
    uint32_t nbins;
    dh_skimage_dtype dtype;
    /* Optional: runs body(arg, i) for i in [0, count) on up to `threads` threads, iterations
     * independent (the library's dh_parallel_for); NULL or threads 1: one thread. The tiles
     * and the rows of one image are spread over it; the result is the same bits. */
    void (*parallel_for)(int threads, size_t count, void (*body)(void *arg, size_t i), void *arg);
    int threads;
} dh_clahe_skimage_job;

/* scikit-image's kernel_size along an axis of n pixels for a requested size k (0: default). */
uint32_t dh_clahe_skimage_kernel(uint32_t n, uint32_t k);

/* The bytes one image of the job holds at its peak (its bins, its tables, the blend's axis
 * tables): what a caller checks before asking for a tiny kernel over a large image, whose
 * tables (one per tile, nbins entries each) can outgrow any memory. */
uint64_t dh_clahe_skimage_bytes(const dh_clahe_skimage_job *job);

/* Runs the job on samples (uint16_t or int16_t words as job->dtype says). out (optional) gets
 * round-half-even(f * (levels - 1)) per sample, levels 2..65536; out_float (optional) gets f
 * itself, scikit-image's float64 result. Memory: 2 bytes per sample of one image, one uint16
 * table of nbins per tile, nbins int64 of scratch. Returns 0, or -1 on bad arguments or when
 * memory is lacking. */
int dh_clahe_skimage_cpu(const void *data, const dh_clahe_skimage_job *job, uint32_t levels,
                         uint16_t *out, double *out_float);

#ifdef __cplusplus
}
#endif
#endif /* DH_KERNELS_CLAHE_SKIMAGE_H */
