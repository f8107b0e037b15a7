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

#ifdef __cplusplus
}
#endif
#endif /* DH_KERNELS_HIST_CUDA_H */
