// SPDX-License-Identifier: MIT
/*
 * equalize_cuda.h: the CUDA twin of kernels/equalize_cpu.h, only with DH_HAVE_CUDA. Three
 * stages, each one launch for all slices: histograms (the engine of hist_cuda.h, one bin per
 * stored value), tables from histograms (one block per table: reductions for the window's
 * count, span and clip excess, then a block-wide scan of the clipped counts and the formula),
 * and table application (16-byte loads and stores, each block on a contiguous run of samples
 * with its slice's table in shared memory). Tables and outputs equal the CPU twin bit for bit.
 *
 * Raw launchers take device pointers and a stream (void*, a cudaStream_t) and do not
 * synchronize; a small host-side session (dh_eq_cuda_*) moves one volume through them for the
 * library. Every function returns 0, or -1 with a message (CUDA's own text included) in msg.
 */
#ifndef DH_KERNELS_EQUALIZE_CUDA_H
#define DH_KERNELS_EQUALIZE_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "equalize_table.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Tables from histograms: `tables` histograms of (len + 2) slots each (the hist_cuda.h layout,
 * under/overflow ignored) at d_hist, windows d_windows[tables], into d_luts[tables * len]. */
int dh_eq_lut_build_cuda(const uint64_t *d_hist, uint32_t tables, int32_t base, uint32_t len,
                         const dh_eq_window *d_windows, uint32_t levels, double clip_limit,
                         uint16_t *d_luts, void *stream, char *msg, size_t msg_len);

/* Table application, same contract as dh_lut_apply_cpu, device pointers. */
int dh_lut_apply_cuda(const void *d_data, int is_signed, size_t slice_len, size_t slices,
                      const uint16_t *d_luts, int per_slice, int32_t base, uint32_t len,
                      uint16_t *d_out, void *stream, char *msg, size_t msg_len);

/* One volume on the GPU: its samples, histograms, tables and output. */
typedef struct dh_eq_cuda dh_eq_cuda;

/* Uploads the samples and computes the histograms (per slice or one), all slices in one launch. */
int dh_eq_cuda_begin(const void *data, int is_signed, size_t slice_len, size_t slices,
                     int per_slice, int32_t base, uint32_t len, dh_eq_cuda **out, char *msg,
                     size_t msg_len);
/* Copies the histograms to host memory: tables * (len + 2) slots. */
int dh_eq_cuda_histograms(dh_eq_cuda *s, uint64_t *hist, char *msg, size_t msg_len);
/* Builds the equalization tables on the GPU from its histograms (windows: one per table). */
int dh_eq_cuda_equalize(dh_eq_cuda *s, const dh_eq_window *windows, uint32_t levels,
                        double clip_limit, char *msg, size_t msg_len);
/* Uploads tables built on the host (window/level). */
int dh_eq_cuda_set_tables(dh_eq_cuda *s, const uint16_t *luts, char *msg, size_t msg_len);
/* Applies the tables and copies the output and the tables back. */
int dh_eq_cuda_finish(dh_eq_cuda *s, uint16_t *out, uint16_t *luts, char *msg, size_t msg_len);
void dh_eq_cuda_free(dh_eq_cuda *s);

/* What one context keeps between volumes so that equalizations on several threads (one context
 * each) run side by side on one GPU: its own stream, device buffers grown to the largest volume
 * seen and reused, a fixed ring of pinned host staging (4 MiB, whatever the volume: the samples
 * and the output pass through it in chunks) and events the thread sleeps on (blocking sync: the
 * core it frees decodes for the other workers) rather than spinning. Nothing in it
 * allocates or frees device memory per volume, so no call waits for the whole device (cudaFree
 * does). Creating one touches no CUDA; used by one thread at a time. */
typedef struct dh_eq_cuda_pool dh_eq_cuda_pool;
dh_eq_cuda_pool *dh_eq_cuda_pool_create(void);
void dh_eq_cuda_pool_free(dh_eq_cuda_pool *pool); /* NULL accepted */

/* dh_eq_cuda_begin on the pool's stream and buffers (NULL pool: dh_eq_cuda_begin). The session
 * borrows them until dh_eq_cuda_free; one session per pool at a time. */
int dh_eq_cuda_begin_pooled(dh_eq_cuda_pool *pool, const void *data, int is_signed,
                            size_t slice_len, size_t slices, int per_slice, int32_t base,
                            uint32_t len, dh_eq_cuda **out, char *msg, size_t msg_len);
/* The same over samples already in GPU memory (a volume decoded there), read where they are
 * once the stream d_ready (a cudaStream_t; NULL: the legacy default stream) has made them: no
 * upload. d_data must outlive the session. */
int dh_eq_cuda_begin_pooled_device(dh_eq_cuda_pool *pool, const void *d_data, void *d_ready,
                                   int is_signed, size_t slice_len, size_t slices, int per_slice,
                                   int32_t base, uint32_t len, dh_eq_cuda **out, char *msg,
                                   size_t msg_len);

#ifdef __cplusplus
}
#endif
#endif /* DH_KERNELS_EQUALIZE_CUDA_H */
