// SPDX-License-Identifier: MIT
/*
 * parzen_mi.c: the public Parzen-window (Mattes) MI API (dicomhist.h section 5b): checks the
 * parameters once and every call's arguments with a message naming what is wrong, then runs the
 * CPU twin (kernels/mi_parzen_cpu.c, the batch split over the context's threads) or, on device
 * pointers, the CUDA twin through parzen_mi_cuda.c. Both give the same bits.
 */
#include "parzen_mi_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "parallel.h"
#include "plan.h"

void dh_parzen_mi_params_init(dh_parzen_mi_params *params)
{
    if (!params)
        return;
    memset(params, 0, sizeof *params);
    params->struct_size = sizeof *params;
    params->bins = DH_PARZEN_MI_DEFAULT_BINS;
    params->fixed_window = DH_PARZEN_WINDOW_BOX;
    params->gradient_of = DH_PARZEN_SCORE_MI;
}

static int range_ok(double lo, double hi)
{
    return isfinite(lo) && isfinite(hi) && lo <= hi;
}

static dh_status check_params(dh_ctx *ctx, const dh_parzen_mi_params *p)
{
    if (p->struct_size < sizeof *p)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "parzen mi: params.struct_size %u is not sizeof(dh_parzen_mi_params) "
                           "(%zu); call dh_parzen_mi_params_init first", p->struct_size,
                           sizeof *p);
    if (p->bins < DH_PARZEN_MI_MIN_BINS || p->bins > DH_PARZEN_MI_MAX_BINS)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "parzen mi: bins must be %d..%d (two padding bins at each end and at "
                           "least one inside), not %u", DH_PARZEN_MI_MIN_BINS,
                           DH_PARZEN_MI_MAX_BINS, p->bins);
    if (p->fixed_window != DH_PARZEN_WINDOW_BOX && p->fixed_window != DH_PARZEN_WINDOW_CUBIC)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "parzen mi: fixed_window %d is not DH_PARZEN_WINDOW_BOX (0) or "
                           "DH_PARZEN_WINDOW_CUBIC (1)", (int)p->fixed_window);
    if (p->gradient_of != DH_PARZEN_SCORE_MI && p->gradient_of != DH_PARZEN_SCORE_NMI)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "parzen mi: gradient_of %d is not DH_PARZEN_SCORE_MI (0) or "
                           "DH_PARZEN_SCORE_NMI (1)", (int)p->gradient_of);
    if (p->has_range_fixed && !range_ok(p->fixed_lo, p->fixed_hi))
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "parzen mi: fixed range %.17g:%.17g is not finite with lo <= hi",
                           p->fixed_lo, p->fixed_hi);
    if (p->has_range_moving && !range_ok(p->moving_lo, p->moving_hi))
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "parzen mi: moving range %.17g:%.17g is not finite with lo <= hi",
                           p->moving_lo, p->moving_hi);
    return DH_OK;
}

dh_status dh_parzen_mi_create(dh_ctx *ctx, const dh_parzen_mi_params *params, dh_parzen_mi **out)
{
    if (!out)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "parzen mi: out is NULL");
    *out = NULL;
    dh_parzen_mi_params defaults;
    dh_parzen_mi_params_init(&defaults);
    const dh_parzen_mi_params *p = params ? params : &defaults;
    dh_status st = check_params(ctx, p);
    if (st != DH_OK)
        return st;
    dh_parzen_mi *pm = calloc(1, sizeof *pm);
    if (!pm)
        return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "parzen mi: out of memory");
    pm->kernel.bins = p->bins;
    pm->kernel.fixed_window =
        p->fixed_window == DH_PARZEN_WINDOW_CUBIC ? DH_PARZEN_FIXED_CUBIC : DH_PARZEN_FIXED_BOX;
    pm->kernel.gradient_of =
        p->gradient_of == DH_PARZEN_SCORE_NMI ? DH_PARZEN_GRAD_NMI : DH_PARZEN_GRAD_MI;
    pm->kernel.log2 = p->log2 != 0;
    pm->kernel.fixed_range_given = p->has_range_fixed != 0;
    pm->kernel.moving_range_given = p->has_range_moving != 0;
    pm->kernel.fixed_lo = p->fixed_lo;
    pm->kernel.fixed_hi = p->fixed_hi;
    pm->kernel.moving_lo = p->moving_lo;
    pm->kernel.moving_hi = p->moving_hi;
    dh_ctx_clear(ctx);
    *out = pm;
    return DH_OK;
}

void dh_parzen_mi_free(dh_parzen_mi *parzen)
{
    if (!parzen)
        return;
#ifdef DH_HAVE_CUDA
    dh_parzen_gpu_free(parzen->gpu);
    dh_parzen_gpu_records_free(parzen->d_records);
#endif
    free(parzen);
}

/* The kernels' sample code of a dh_sample_type, or -1. */
static int kernel_sample(int sample_type)
{
    switch (sample_type) {
    case DH_SAMPLE_UINT16:
        return DH_PARZEN_UINT16;
    case DH_SAMPLE_INT16:
        return DH_PARZEN_INT16;
    case DH_SAMPLE_FLOAT32:
        return DH_PARZEN_FLOAT32;
    default:
        return -1;
    }
}

/* The checks both evaluations share; fills the kernels' image descriptions. */
static dh_status check_call(dh_ctx *ctx, const dh_parzen_mi *pm, size_t pixels,
                            const void *fixed, int fixed_type, const uint8_t *fixed_mask,
                            const void *moving, int moving_type, const uint8_t *moving_masks,
                            uint32_t count, const void *out, dh_parzen_image *f,
                            dh_parzen_image *m)
{
    if (!pm || !fixed || !moving || !out)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "parzen mi: parzen, fixed, moving and out are required");
    if (pixels == 0 || pixels > DH_PARZEN_MAX_PIXELS)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "parzen mi: %zu pixels per image; 1 .. 2^32 - 1 are supported",
                           pixels);
    if (count < 1)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "parzen mi: no moving image (count 0)");
    const int fs = kernel_sample(fixed_type), ms = kernel_sample(moving_type);
    if (fs < 0 || ms < 0)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "parzen mi: %s sample type %d is not DH_SAMPLE_UINT16 (0), "
                           "DH_SAMPLE_INT16 (1) or DH_SAMPLE_FLOAT32 (2)",
                           fs < 0 ? "fixed" : "moving", fs < 0 ? fixed_type : moving_type);
    *f = (dh_parzen_image){fixed, (dh_parzen_sample)fs, fixed_mask};
    *m = (dh_parzen_image){moving, (dh_parzen_sample)ms, moving_masks};
    return DH_OK;
}

/* A slice of the batch for one thread of dh_parzen_mi_evaluate. */
typedef struct parzen_job {
    const dh_parzen_params *params;
    size_t pixels;
    const dh_parzen_image *fixed, *moving;
    size_t sample_bytes;
    uint32_t count, parts;
    dh_mi_scores *out;
    float *gradient;
    int *status; /* one per part */
} parzen_job;

static void evaluate_part(void *arg, size_t part)
{
    const parzen_job *job = arg;
    const uint32_t first = (uint32_t)(part * job->count / job->parts);
    const uint32_t end = (uint32_t)((part + 1) * job->count / job->parts);
    const size_t offset = (size_t)first * job->pixels;
    dh_parzen_image m = *job->moving;
    m.data = (const char *)m.data + offset * job->sample_bytes;
    if (m.mask)
        m.mask += offset;
    job->status[part] = dh_parzen_mi_cpu(job->params, job->pixels, job->fixed, &m, end - first,
                                         (dh_mi_values *)job->out + first,
                                         job->gradient ? job->gradient + offset : NULL);
}

dh_status dh_parzen_mi_evaluate(dh_ctx *ctx, dh_parzen_mi *parzen, size_t pixels,
                                const void *fixed, int fixed_type, const uint8_t *fixed_mask,
                                const void *moving, int moving_type, const uint8_t *moving_masks,
                                uint32_t count, dh_mi_scores *out, float *gradient)
{
    dh_parzen_image f, m;
    dh_status st = check_call(ctx, parzen, pixels, fixed, fixed_type, fixed_mask, moving,
                              moving_type, moving_masks, count, out, &f, &m);
    if (st != DH_OK)
        return st;
    /* Each thread takes whole images (and prepares the fixed positions itself): the records
     * and gradients do not depend on the split. */
    int parts = dh_ctx_worker_threads(ctx, count);
    int one_status, *status = parts > 1 ? calloc((size_t)parts, sizeof *status) : &one_status;
    if (!status)
        parts = 1, status = &one_status;
    parzen_job job = {&parzen->kernel, pixels, &f, &m,
                      moving_type == DH_SAMPLE_FLOAT32 ? 4u : 2u, count, (uint32_t)parts, out,
                      gradient, status};
    if (parts == 1)
        evaluate_part(&job, 0);
    else
        dh_parallel_for(parts, (size_t)parts, evaluate_part, &job);
    int rc = DH_PARZEN_OK;
    for (int i = 0; i < parts; i++)
        rc = status[i] != DH_PARZEN_OK ? status[i] : rc;
    if (status != &one_status)
        free(status);
    if (rc == DH_PARZEN_ERR_NO_MEMORY)
        return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY,
                           "parzen mi: out of memory for the scratch of %zu pixels", pixels);
    if (rc != DH_PARZEN_OK)
        return dh_ctx_fail(ctx, DH_ERR_INTERNAL, "parzen mi: the CPU twin refused checked "
                           "arguments (code %d)", rc);
    dh_ctx_clear(ctx);
    return DH_OK;
}

dh_status dh_parzen_mi_evaluate_device(dh_ctx *ctx, dh_parzen_mi *parzen, size_t pixels,
                                       const void *d_fixed, int fixed_type,
                                       const uint8_t *d_fixed_mask, const void *d_moving,
                                       int moving_type, const uint8_t *d_moving_masks,
                                       uint32_t count, void *stream, dh_mi_scores *d_out,
                                       float *d_gradient)
{
    dh_parzen_image f, m;
    dh_status st = check_call(ctx, parzen, pixels, d_fixed, fixed_type, d_fixed_mask, d_moving,
                              moving_type, d_moving_masks, count, d_out, &f, &m);
    if (st != DH_OK)
        return st;
#ifdef DH_HAVE_CUDA
    if (!parzen->gpu) { /* the first device call: is there a GPU at all? */
        int use_cuda;
        if ((st = dh_ctx_use_cuda(ctx, DH_DEVICE_CUDA, "parzen mi", &use_cuda)) != DH_OK)
            return st;
        if (!(parzen->gpu = dh_parzen_gpu_new()))
            return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "parzen mi: out of memory");
    }
    parzen->msg[0] = '\0';
    int rc = dh_parzen_gpu_evaluate(parzen->gpu, &parzen->kernel, pixels, &f, &m, count, d_out,
                                    d_gradient, stream, parzen->msg, sizeof parzen->msg);
    if (rc == DH_PARZEN_ERR_NO_MEMORY)
        return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY,
                           "parzen mi: out of device memory for %u images of %zu pixels: %s",
                           count, pixels, parzen->msg);
    if (rc == DH_PARZEN_ERR_ARGUMENT)
        return dh_ctx_fail(ctx, DH_ERR_INTERNAL, "parzen mi: the CUDA twin refused checked "
                           "arguments: %s", parzen->msg);
    if (rc != DH_PARZEN_OK)
        return dh_ctx_fail(ctx, DH_ERR_CUDA, "parzen mi: on the GPU: %s", parzen->msg);
    dh_ctx_clear(ctx);
    return DH_OK;
#else
    (void)stream, (void)d_gradient;
    return dh_ctx_fail(ctx, DH_ERR_NO_DEVICE,
                       "parzen mi: device pointers need CUDA; this build of dicomhist has no "
                       "CUDA support");
#endif
}
