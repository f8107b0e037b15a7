// SPDX-License-Identifier: MIT
/*
 * hist_cuda.h: the CUDA launchers of the 1D histogram (kernels/hist.h), compiled only when the
 * build has CUDA (DH_HAVE_CUDA). Plain C callers never see CUDA headers: streams travel as void*.
 * Results are bit-identical to dh_hist_cpu: same dh_bin_map, same (bins + 2)-slot layout.
 * Every function returns 0 on success, or -1 with a message (CUDA's own text included) in msg.
 */
#ifndef DH_KERNELS_HIST_CUDA_H
#define DH_KERNELS_HIST_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "hist.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when a CUDA device can be used by this process, else 0. Never fails, never prints. */
int dh_cuda_usable(void);
/* The name of the current CUDA device ("NVIDIA H100 80GB HBM3") into name; returns 1, or 0 with
 * name "" when no device can be used. Never fails, never prints. */
int dh_cuda_name(char *name, size_t size);
/* dh_cuda_usable, and where it is 1 the current device's primary context made as well (once per
 * process, CUDA's own state; later calls only read it), so that the process's first GPU call does
 * not pay for it. 0 also when the context cannot be made. Never fails, never prints. */
int dh_cuda_open_context(void);
/* cudaSetDeviceFlags with one of cudaDeviceScheduleSpin, Yield, BlockingSync or Auto (the
 * runtime's values: 1, 2, 4, 0) on the current device's primary context, made or not; 1 when
 * set, else 0 (no device, another value). Never fails, never prints. */
int dh_cuda_schedule(unsigned flags);

/* Host samples in, host counts out (same contract as dh_hist_cpu). Moves the data to the GPU
 * itself (pinned staging, transfer overlapped with compute, chunked when the volume exceeds free
 * GPU memory). */
int dh_hist_cuda_host(const void *data, int is_signed, size_t slice_len, size_t slices,
                      int per_slice, const dh_bin_map *map, uint64_t *out, char *msg,
                      size_t msg_len);

/* Device samples in, device counts out (overwritten), enqueued on `stream` (a cudaStream_t, NULL
 * for the default stream); returns without synchronizing. A table map's lut must be a device
 * pointer here. */
int dh_hist_cuda_device(const void *d_data, int is_signed, size_t slice_len, size_t slices,
                        int per_slice, const dh_bin_map *map, uint64_t *d_out, void *stream,
                        char *msg, size_t msg_len);

/* --- Added by the CUDA engine: reusable GPU resources and tuning. --------------------------- */

/* GPU resources reused between host-path calls (streams, events, pinned staging, device
 * buffers), owned by one dh_ctx and used by one thread at a time. Creating one touches no CUDA;
 * resources are made on first use and freed by dh_cuda_state_free (NULL accepted). */
typedef struct dh_cuda_state dh_cuda_state;
dh_cuda_state *dh_cuda_state_create(void);
void dh_cuda_state_free(dh_cuda_state *state);

/* dh_hist_cuda_host over a state's resources (dh_hist_cuda_host makes and frees a state per
 * call). Returns 0, or -1 with a message. */
int dh_hist_cuda_host_state(dh_cuda_state *state, const void *data, int is_signed,
                            size_t slice_len, size_t slices, int per_slice, const dh_bin_map *map,
                            uint64_t *out, char *msg, size_t msg_len);

/* Launch shape, for the benchmark and tests: zero fields take the default. */
typedef struct dh_cuda_tuning {
    uint32_t smem_target;          /* bytes of wide-counter copies a block aims for */
    uint32_t max_copies;           /* cap on wide-counter copies (power of two, <= 32) */
    int force_packed;              /* 1: packed 16-bit counters at any bin count (the guarded
                                    * kernel of hist_cuda_big.cuh; with cluster_size 2 the
                                    * cluster's packed counters) */
    uint64_t min_samples_per_block; /* small inputs get fewer blocks */
    int classic_map;               /* 1: the shift map one sample at a time, not in pairs */
    int zero_mode;                 /* output zeroing: 0 default, 1 a memset before the kernel,
                                    * 2 inside the kernel (one cooperative launch), 3 none: each
                                    * histogram's last piece stores it, the other pieces add
                                    * after a grid-wide barrier (wide counters, else 1) */
    uint32_t cluster_size;         /* 0 (default) or 1: no cluster (packed counters won,
                                    * hist_cuda.cu says why); 2 or 4: a
                                    * cluster of that many blocks sharing the histogram over
                                    * distributed shared memory, at any bin count (with
                                    * force_packed and 2: packed counters in the cluster) */
    uint32_t small_cluster;        /* one histogram of a small input: 0 default (today never:
                                    * it measured slower), 1 never, 8 or 16: one cluster of
                                    * that many blocks counts it and sums the blocks' counters
                                    * over distributed shared memory into the output with plain
                                    * stores (no zeroing, no atomics) */
    uint32_t wide_threads;         /* wide counters: 0 default, 512 (two blocks per SM where
                                    * they fit) or 1024 (one block per SM, hist_cuda_big.cuh) */
    int pair_flush;                /* guarded packed counters of one histogram: 0 default, 1 one
                                    * global add per count, 2 one per pair of counts */
} dh_cuda_tuning;

/* dh_hist_cuda_device with an explicit shape (NULL: defaults). zero_output 0 leaves d_out as
 * it is and adds to it (the caller zeroed it). */
int dh_hist_cuda_device_tuned(const void *d_data, int is_signed, size_t slice_len, size_t slices,
                              int per_slice, const dh_bin_map *map, uint64_t *d_out, void *stream,
                              const dh_cuda_tuning *tuning, int zero_output, char *msg,
                              size_t msg_len);

/* Per-slice histograms into d_slices (slices x (bins + 2)) and the whole volume's into d_total
 * (bins + 2), both overwritten, from one pass over the samples; enqueued on `stream`. */
int dh_hist_cuda_device_with_total(const void *d_data, int is_signed, size_t slice_len,
                                   size_t slices, const dh_bin_map *map, uint64_t *d_total,
                                   uint64_t *d_slices, void *stream, char *msg, size_t msg_len);

#ifdef __cplusplus
}
#endif
#endif /* DH_KERNELS_HIST_CUDA_H */
