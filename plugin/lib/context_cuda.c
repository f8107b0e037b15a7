// SPDX-License-Identifier: MIT
/*
 * context_cuda.c: the context's GPU resources (streams, pinned staging, device buffers of
 * kernels/hist_cuda.h), made on first use and freed with the context, so that GPU calls on one
 * context reuse them. Apart from context.c so that the context's own file needs no CUDA and the
 * files that compute on the GPU need not be called back by the context.
 */
#include "context.h"

#include <stdlib.h>

#ifdef DH_HAVE_CUDA
#include "equalize_cuda.h"
#include "hist_cuda.h"
#endif

struct dh_cuda_state *dh_ctx_cuda(dh_ctx *ctx)
{
#ifdef DH_HAVE_CUDA
    if (ctx && !ctx->cuda)
        ctx->cuda = dh_cuda_state_create();
    return ctx ? ctx->cuda : NULL;
#else
    (void)ctx;
    return NULL;
#endif
}

struct dh_eq_cuda_pool *dh_ctx_eq_cuda(dh_ctx *ctx)
{
#ifdef DH_HAVE_CUDA
    if (ctx && !ctx->eq_cuda)
        ctx->eq_cuda = dh_eq_cuda_pool_create();
    return ctx ? ctx->eq_cuda : NULL;
#else
    (void)ctx;
    return NULL;
#endif
}

void dh_ctx_cuda_free(dh_ctx *ctx)
{
#ifdef DH_HAVE_CUDA
    if (ctx) {
        dh_cuda_state_free(ctx->cuda);
        ctx->cuda = NULL;
        dh_eq_cuda_pool_free(ctx->eq_cuda);
        ctx->eq_cuda = NULL;
    }
#else
    (void)ctx;
#endif
}
