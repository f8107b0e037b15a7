/*
 * context.h: what a dh_ctx holds, for the library's own files. The public header keeps the struct
 * opaque so it can grow.
 */
#ifndef DH_PLUGIN_CONTEXT_H
#define DH_PLUGIN_CONTEXT_H

#include "dicomhist.h"

#define DH_CTX_MESSAGE_LEN 1024

struct dh_ctx {
    int threads; /* 0: one per processor */
    char message[DH_CTX_MESSAGE_LEN];
};

/* Records a failure on the context (printf-style message) and returns status, so that a
 * function can end with `return dh_ctx_fail(ctx, DH_ERR_..., "...")`. ctx may be NULL. */
dh_status dh_ctx_fail(dh_ctx *ctx, dh_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Clears the message at the start of a call that then succeeds. */
void dh_ctx_clear(dh_ctx *ctx);

#endif /* DH_PLUGIN_CONTEXT_H */
