// SPDX-License-Identifier: MIT
/*
 * mi_cuda.h: the CUDA side of joint histograms and mutual information (mi_joint.h,
 * mi_scores.h), callable from plain C: a GPU-resident prepared fixed image and the launcher that
 * scores batches of moving images against it. Compiled only when the build has CUDA
 * (DH_HAVE_CUDA). Counts equal dh_mi_joint_cpu's and records equal dh_mi_scores_from_joint's, bit
 * for bit. Every function returns 0, or -1 with a message (CUDA's own text included) in msg.
 *
 * One evaluation is one launch of one kernel (mi_cuda.cu says how); only a volume-sized image
 * without an explicit moving range adds a small range kernel before it.
 */
#ifndef DH_KERNELS_MI_CUDA_H
#define DH_KERNELS_MI_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "mi_scores.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Device buffers of one prepared fixed image: its bins (DH_MI_JOINT_SKIP where it never counts),
 * max_batch joint histograms, the workspace of multi-cluster images, staging for the host path. */
typedef struct dh_mi_gpu dh_mi_gpu;

/* How an evaluation is spread over the GPU; 0 = chosen from the image size and the device (and,
 * with cluster, threads and blocks_per_sm all 0, from each call's image count: one block per image
 * for calls of at least one image per SM; above 16384 cells, images of at most 512x512 pixels
 * without masks, mi_cuda_solo.cuh's kernel; fewer images, up to 16384 cells and a megapixel,
 * the spread kernel, mi_cuda_spread.cuh; dh_mi_gpu_layout says which). For benchmarks and
 * tests: every choice gives the same bits. */
typedef struct dh_mi_gpu_tuning {
    uint32_t cluster;            /* blocks per thread-block cluster: 1, 2, 4, 8 or 16 */
    uint32_t clusters_per_image; /* 1, or more for large images (a second, deterministic stage) */
    uint32_t threads;            /* threads per block: 256, 512 or 1024 (0: 512 for a batch of
                                    one-block images with 32-bit counters, else 1024) */
    uint32_t stage_skip;         /* bench_mi's stage timing only: DH_MI_STAGE_* bits of the
                                    kernel's stages to leave out; the results are then wrong */
    uint32_t blocks_per_sm;      /* one-block images with 32-bit counters at 512 threads: the
                                    blocks an SM should hold, 2, 3 or 4 (registers capped to
                                    fit), or 8 at 256 threads; 0: automatic; ignored elsewhere */
    uint32_t no_run_merge;       /* 1: one shared atomic per pixel of 16-bit samples instead of
                                    one per run of equal cells among a thread's 8 (the loop of
                                    masked images and packed counters) */
    uint32_t classic_count;      /* 1: 32-bit counters without a mask count with that loop too,
                                    not the branch-free one */
    uint32_t no_spread;          /* 1: calls of few images take the cluster layouts, not the
                                    spread kernel (mi_cuda_spread.cuh); reads back 1 wherever
                                    the spread kernel is never taken */
    uint32_t spread_blocks;      /* the spread kernel's blocks per image (0: automatic) */
    uint32_t direct_terms;       /* 1: every entropy term computes its logarithm, no table of
                                    them */
} dh_mi_gpu_tuning;

/* Stages of one evaluation, for stage_skip (timing, never for results). */
#define DH_MI_STAGE_ZERO 1u      /* zeroing the shared histograms */
#define DH_MI_STAGE_COUNT 2u     /* counting the pixels */
#define DH_MI_STAGE_REDUCE 4u    /* adding the blocks' counts into the cluster histogram */
#define DH_MI_STAGE_TERMS 8u     /* entropy terms of the joint cells */
#define DH_MI_STAGE_MARGINALS 16u /* row and column sums, and their terms */
#define DH_MI_STAGE_TREES 32u    /* fixed-order tree sums */
#define DH_MI_STAGE_WRITE 64u    /* writing the joint histogram back */
#define DH_MI_STAGE_FINISH 128u  /* the record */
#define DH_MI_STAGE_ALL 256u     /* everything: the launch alone */

/* Uploads the fixed bins (host array of n) and allocates everything an evaluation of up to
 * max_batch images needs. fixed_valid and fixed_sum are the cached marginal's pixel count and
 * fixed-order term sum (mi_scores.h). tuning may be NULL (automatic). */
int dh_mi_gpu_create(const uint16_t *fixed_bins, size_t n, uint32_t bins_fixed,
                        uint32_t bins_moving, uint32_t max_batch, uint64_t fixed_valid,
                        double fixed_sum, const dh_mi_gpu_tuning *tuning, dh_mi_gpu **out,
                        char *msg, size_t msg_len);
void dh_mi_gpu_free(dh_mi_gpu *gpu);

/* The layout chosen (after automatic choices are resolved). */
void dh_mi_gpu_get_tuning(const dh_mi_gpu *gpu, dh_mi_gpu_tuning *tuning);

struct dh_faxis;

/* How a call of `count` images runs (masked: with validity masks; float32: float moving images):
 * a thread-block cluster per image (or G of them), one block per image (batch: 32-bit counters;
 * solo: packed counters, mi_cuda_solo.cuh), or P plain blocks per image whose last one scores
 * it (spread, mi_cuda_spread.cuh). dh_mi_gpu_evaluate asks this too. */
typedef enum dh_mi_layout {
    DH_MI_LAYOUT_CLUSTER,
    DH_MI_LAYOUT_BATCH,
    DH_MI_LAYOUT_SOLO,
    DH_MI_LAYOUT_SPREAD
} dh_mi_layout;
dh_mi_layout dh_mi_gpu_layout(const dh_mi_gpu *gpu, uint32_t count, int masked,
                                    int float32);

/* Scores count images at d_moving + k * stride samples (validity bytes at d_valid +
 * k * valid_stride, or d_valid NULL) into d_out[count] (device), on stream; the moving range is
 * [lo, hi] when has_range, else each image's min..max over its valid pixels. With float_axis
 * (not NULL) the images are float32 binned by it (mi_joint.h) and is_signed, has_range, lo and hi
 * are unused. Enqueues only: no allocation, no synchronization, so it can be captured in a CUDA
 * graph. One evaluation at a time per fixed image (its workspace is shared). */
int dh_mi_gpu_evaluate(dh_mi_gpu *gpu, const void *d_moving, int is_signed, size_t stride,
                          uint32_t count, const uint8_t *d_valid, size_t valid_stride,
                          const struct dh_faxis *float_axis, int has_range, int32_t lo,
                          int32_t hi, int log2, dh_mi_values *d_out, void *stream, char *msg,
                          size_t msg_len);

/* The same from host memory into host records: copies through staging buffers (allocated on
 * first use) and waits for the result. */
int dh_mi_gpu_evaluate_host(dh_mi_gpu *gpu, const void *moving, int is_signed,
                               size_t stride, uint32_t count, const uint8_t *valid,
                               size_t valid_stride, const struct dh_faxis *float_axis,
                               int has_range, int32_t lo, int32_t hi, int log2,
                               dh_mi_values *out, char *msg, size_t msg_len);

/* Copies joint histogram `item` of the last evaluation to host memory, after the GPU is done. */
int dh_mi_gpu_read_joint(dh_mi_gpu *gpu, uint32_t item, uint32_t *counts, char *msg,
                            size_t msg_len);

#ifdef __cplusplus
}
#endif
#endif /* DH_KERNELS_MI_CUDA_H */
