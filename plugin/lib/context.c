// SPDX-License-Identifier: MIT
/*
 * context.c: version, status names, and the context that carries error messages and options.
 */
#include "context.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dh_dicom.h" /* its statuses, checked against dh_status below */
#ifdef DH_HAVE_CUDA
#include "hist_cuda.h"
#endif

/* The DICOM layer reports in the numbers of dh_status and dh_photometric (dh_dicom.h), which
 * the library passes on as they are. */
_Static_assert((int)DH_DICOM_OK == DH_OK &&
                   (int)DH_DICOM_ERR_INVALID_ARGUMENT == DH_ERR_INVALID_ARGUMENT &&
                   (int)DH_DICOM_ERR_IO == DH_ERR_IO &&
                   (int)DH_DICOM_ERR_MALFORMED == DH_ERR_MALFORMED &&
                   (int)DH_DICOM_ERR_UNSUPPORTED == DH_ERR_UNSUPPORTED &&
                   (int)DH_DICOM_ERR_MISMATCH == DH_ERR_MISMATCH &&
                   (int)DH_DICOM_ERR_NO_MEMORY == DH_ERR_NO_MEMORY &&
                   (int)DH_DICOM_ERR_INTERNAL == DH_ERR_INTERNAL,
               "dh_dicom_status and dh_status must agree");
_Static_assert((int)DH_DICOM_MONOCHROME1 == DH_MONOCHROME1 &&
                   (int)DH_DICOM_MONOCHROME2 == DH_MONOCHROME2,
               "dh_dicom_photometric and dh_photometric must agree");

unsigned dh_version_number(void)
{
    return DH_VERSION_NUMBER;
}

const char *dh_version_string(void)
{
    return DH_VERSION_STRING;
}

const char *dh_status_name(dh_status status)
{
    switch (status) {
    case DH_OK: return "DH_OK";
    case DH_ERR_INVALID_ARGUMENT: return "DH_ERR_INVALID_ARGUMENT";
    case DH_ERR_IO: return "DH_ERR_IO";
    case DH_ERR_MALFORMED: return "DH_ERR_MALFORMED";
    case DH_ERR_UNSUPPORTED: return "DH_ERR_UNSUPPORTED";
    case DH_ERR_MISMATCH: return "DH_ERR_MISMATCH";
    case DH_ERR_NO_MEMORY: return "DH_ERR_NO_MEMORY";
    case DH_ERR_NO_DEVICE: return "DH_ERR_NO_DEVICE";
    case DH_ERR_CUDA: return "DH_ERR_CUDA";
    case DH_ERR_INTERNAL: return "DH_ERR_INTERNAL";
    default: return "DH_ERR_UNKNOWN";
    }
}

dh_ctx *dh_ctx_create(void)
{
    return calloc(1, sizeof(dh_ctx));
}

void dh_ctx_free(dh_ctx *ctx)
{
    dh_ctx_cuda_free(ctx);
    free(ctx);
}

const char *dh_ctx_error(const dh_ctx *ctx)
{
    return ctx ? ctx->message : "no context";
}

/* Sets *field to value when it lies in 0..max, else fails naming `what`. */
static dh_status set_count(dh_ctx *ctx, int *field, int value, int max, const char *what)
{
    if (!ctx)
        return DH_ERR_INVALID_ARGUMENT;
    if (value < 0 || value > max)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "%s must be 0..%d, not %d", what, max,
                           value);
    *field = value;
    dh_ctx_clear(ctx);
    return DH_OK;
}

dh_status dh_ctx_set_threads(dh_ctx *ctx, int threads)
{
    return set_count(ctx, ctx ? &ctx->threads : NULL, threads, 4096, "threads");
}

dh_status dh_ctx_set_gpu_decode(dh_ctx *ctx, int enabled)
{
    if (!ctx)
        return DH_ERR_INVALID_ARGUMENT;
    ctx->cpu_decode_only = !enabled;
    dh_ctx_clear(ctx);
    return DH_OK;
}

dh_status dh_ctx_set_read_timing(dh_ctx *ctx, int enabled)
{
    if (!ctx)
        return DH_ERR_INVALID_ARGUMENT;
    ctx->read_timing = enabled != 0;
    memset(&ctx->read_times, 0, sizeof ctx->read_times);
    dh_ctx_clear(ctx);
    return DH_OK;
}

dh_status dh_ctx_read_times(const dh_ctx *ctx, dh_read_times *out)
{
    if (!ctx || !out)
        return DH_ERR_INVALID_ARGUMENT;
    *out = ctx->read_times;
    return DH_OK;
}

int dh_gpu_decoders_available(char *reason, size_t reason_len)
{
    return dh_dicom_gpu_decoders(reason, reason_len);
}

dh_dicom_read_options dh_ctx_read_options(const dh_ctx *ctx)
{
    dh_dicom_read_options o = {0};
    o.codec_threads = (uint32_t)(ctx ? ctx->codec_threads : 0);
    o.gpu_decode = !(ctx && ctx->cpu_decode_only);
    return o;
}

dh_status dh_ctx_set_codec_threads(dh_ctx *ctx, int threads)
{
    return set_count(ctx, ctx ? &ctx->codec_threads : NULL, threads, 64, "codec threads");
}

int dh_cuda_available(void)
{
#ifdef DH_HAVE_CUDA
    return dh_cuda_usable();
#else
    return 0;
#endif
}

int dh_cuda_prepare(void)
{
#ifdef DH_HAVE_CUDA
    return dh_cuda_open_context();
#else
    return 0;
#endif
}

int dh_cuda_set_wait(dh_cuda_wait mode)
{
#ifdef DH_HAVE_CUDA
    return dh_cuda_schedule((unsigned)mode);
#else
    (void)mode;
    return 0;
#endif
}

int dh_cuda_device_name(char *name, size_t size)
{
    if (!name || size == 0)
        return 0;
    name[0] = '\0';
#ifdef DH_HAVE_CUDA
    return dh_cuda_name(name, size);
#else
    return 0;
#endif
}

dh_status dh_ctx_use_cuda(dh_ctx *ctx, dh_device requested, const char *who, int *use_cuda)
{
    /* The CPU asked for: CUDA is not asked anything. Its first question starts the driver
     * (cudaGetDeviceCount: tenths of a second of a core on a GPU host, with every other
     * thread's first CUDA call waiting on it), which a caller that chose the CPU, or a batch
     * worker computing a small series there under --device auto, should not pay. */
    if (requested == DH_DEVICE_CPU) {
        *use_cuda = 0;
        return DH_OK;
    }
    const int usable = dh_cuda_available();
    *use_cuda = requested == DH_DEVICE_CUDA || (requested == DH_DEVICE_AUTO && usable);
    if (*use_cuda && !usable)
        return dh_ctx_fail(ctx, DH_ERR_NO_DEVICE, "%s: CUDA requested, but %s", who,
#ifdef DH_HAVE_CUDA
                           "no usable CUDA device is present"
#else
                           "this build of dicomhist has no CUDA support"
#endif
        );
    return DH_OK;
}

dh_status dh_ctx_fail(dh_ctx *ctx, dh_status status, const char *fmt, ...)
{
    if (ctx) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ctx->message, sizeof ctx->message, fmt, ap);
        va_end(ap);
    }
    return status;
}

void dh_ctx_clear(dh_ctx *ctx)
{
    if (ctx)
        ctx->message[0] = '\0';
}
