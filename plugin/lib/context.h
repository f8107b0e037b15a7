// SPDX-License-Identifier: MIT
/*
 * context.h: what a dh_ctx holds, for the library's own files. The public header keeps the struct
 * opaque so it can grow.
 */
#ifndef DH_PLUGIN_CONTEXT_H
#define DH_PLUGIN_CONTEXT_H

#include "dh_dicom.h"
#include "dicomhist.h"

#define DH_CTX_MESSAGE_LEN 1024

struct dh_cuda_state; /* kernels/hist_cuda.h: streams, pinned staging, device buffers */
struct dh_eq_cuda_pool; /* kernels/equalize_cuda.h: equalization's stream and staging */

struct dh_ctx {
    int threads; /* 0: one per processor */
    int codec_threads; /* JPEG 2000 / HTJ2K workers per frame; 0: one */
    int cpu_decode_only; /* dh_ctx_set_gpu_decode(ctx, 0): never the GPU decoders */
    char message[DH_CTX_MESSAGE_LEN];
    struct dh_cuda_state *cuda; /* made on first GPU use (dh_ctx_cuda), freed with the context */
    struct dh_eq_cuda_pool *eq_cuda; /* equalization's stream and staging (dh_ctx_eq_cuda) */
    int read_timing;            /* dh_ctx_set_read_timing: reads split and timed */
    dh_read_times read_times;   /* their sums since it was set */
};

/* The context's GPU resources, made on first use; NULL without a context, when out of memory or
 * in builds without CUDA (callers then use a per-call state). context_cuda.c. */
struct dh_cuda_state *dh_ctx_cuda(dh_ctx *ctx);
void dh_ctx_cuda_free(dh_ctx *ctx);
/* The context's equalization stream and staging (kernels/equalize_cuda.h), made on first use;
 * NULL as dh_ctx_cuda. context_cuda.c. */
struct dh_eq_cuda_pool *dh_ctx_eq_cuda(dh_ctx *ctx);

/* Records a failure on the context (printf-style message) and returns status, so that a
 * function can end with `return dh_ctx_fail(ctx, DH_ERR_..., "...")`. ctx may be NULL. */
dh_status dh_ctx_fail(dh_ctx *ctx, dh_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The device decision every operation makes: the GPU when asked for, or under AUTO when one is
 * usable (dh_cuda_available); asked for where none can run, DH_ERR_NO_DEVICE with a message
 * starting with `who`. Sets *use_cuda. */
dh_status dh_ctx_use_cuda(dh_ctx *ctx, dh_device requested, const char *who, int *use_cuda);

/* How this context's reads decode (codec threads, GPU decoders); defaults without a context. */
dh_dicom_read_options dh_ctx_read_options(const dh_ctx *ctx);

/* Clears the message at the start of a call that then succeeds. */
void dh_ctx_clear(dh_ctx *ctx);

#endif /* DH_PLUGIN_CONTEXT_H */
