// SPDX-License-Identifier: MIT
/*
 * clahe_device.c: dh_clahe_device (clahe_device.h), the host side of dh_equalize's CLAHE on the
 * GPU: one stream, the samples uploaded once, dh_clahe_cuda (kernels/clahe_cuda.h) on them, the
 * result downloaded, everything freed before returning. Built only with CUDA.
 */
#include "clahe_device.h"

#include <cuda_runtime_api.h>
#include <stdio.h>

#include "clahe_cuda.h"

/* Writes "CLAHE on the GPU: <what> failed: <CUDA's text>" and returns -1. */
static int cuda_failed(char *msg, size_t msg_len, const char *what, cudaError_t err)
{
    (void)cudaGetLastError(); /* not left for the next caller to report as its own */
    snprintf(msg, msg_len, "CLAHE on the GPU: %s failed: %s", what, cudaGetErrorString(err));
    return -1;
}

int dh_clahe_device(const void *data, int is_signed, int32_t base, uint32_t len,
                    const dh_clahe_shape *shape, const dh_eq_window *windows, uint32_t bins,
                    uint32_t levels, double clip_limit, uint16_t *out, char *msg,
                    size_t msg_len)
{
    size_t bytes = (size_t)shape->nx * shape->ny * shape->nz * sizeof(uint16_t);
    cudaStream_t stream = NULL;
    void *d_data = NULL;
    uint16_t *d_out = NULL;
    dh_clahe_cuda_workspace *ws = NULL;
    int rc = -1;
    cudaError_t e;
    if ((e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)) != cudaSuccess)
        return cuda_failed(msg, msg_len, "cudaStreamCreate", e);
    if ((e = cudaMalloc(&d_data, bytes)) != cudaSuccess ||
        (e = cudaMalloc((void **)&d_out, bytes)) != cudaSuccess) {
        cuda_failed(msg, msg_len, "cudaMalloc", e);
        goto done;
    }
    if ((e = cudaMemcpyAsync(d_data, data, bytes, cudaMemcpyHostToDevice, stream)) !=
        cudaSuccess) {
        cuda_failed(msg, msg_len, "the upload", e);
        goto done;
    }
    if (!(ws = dh_clahe_cuda_workspace_new())) {
        snprintf(msg, msg_len, "CLAHE on the GPU: no memory for its workspace");
        goto done;
    }
    if (dh_clahe_cuda(ws, d_data, is_signed, base, len, shape, windows, bins, levels, clip_limit,
                      d_out, stream, msg, msg_len) != 0)
        goto done;
    if ((e = cudaMemcpyAsync(out, d_out, bytes, cudaMemcpyDeviceToHost, stream)) != cudaSuccess) {
        cuda_failed(msg, msg_len, "the download", e);
        goto done;
    }
    if ((e = cudaStreamSynchronize(stream)) != cudaSuccess) {
        cuda_failed(msg, msg_len, "cudaStreamSynchronize", e);
        goto done;
    }
    rc = 0;
done:
    dh_clahe_cuda_workspace_free(ws);
    cudaFree(d_out);
    cudaFree(d_data);
    cudaStreamDestroy(stream);
    return rc;
}
