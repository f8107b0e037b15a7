// SPDX-License-Identifier: MIT
/*
 * mi.c: the public mutual-information API (dicomhist.h section 5): checks arguments, prepares the
 * fixed image once (binned, marginal term sum cached), and runs evaluations on the CPU twin
 * (kernels/mi_joint_cpu.c, kernels/mi_scores.c) or on the GPU (kernels/mi_cuda.cu), which gives
 * the same bits.
 */
#include "mi_internal.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#ifdef DH_HAVE_CUDA
#include "mi_cuda.h"
#endif

/* The kernels write dh_mi_values into the caller's dh_mi_scores array: one layout. */
_Static_assert(sizeof(dh_mi_values) == sizeof(dh_mi_scores), "score record layout");
_Static_assert(offsetof(dh_mi_values, n) == offsetof(dh_mi_scores, n), "score record layout");
_Static_assert(offsetof(dh_mi_values, status) == offsetof(dh_mi_scores, status),
               "score record layout");
_Static_assert(offsetof(dh_mi_values, moving_hi) == offsetof(dh_mi_scores, moving_hi),
               "score record layout");
_Static_assert(DH_MI_EMPTY == DH_MI_FLAG_EMPTY &&
                   DH_MI_ZERO_JOINT_ENTROPY == DH_MI_FLAG_ZERO_JOINT_ENTROPY,
               "status bits");

void dh_mi_params_init(dh_mi_params *params)
{
    if (!params)
        return;
    memset(params, 0, sizeof *params);
    params->struct_size = sizeof *params;
    params->bins_fixed = DH_MI_DEFAULT_BINS;
    params->bins_moving = DH_MI_DEFAULT_BINS;
    params->device = DH_DEVICE_AUTO;
    params->max_batch = 1;
}

static dh_status check_params(dh_ctx *ctx, const dh_mi_params *p)
{
    if (p->struct_size < sizeof *p)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "mi: params.struct_size %u is not sizeof(dh_mi_params) (%zu); "
                           "call dh_mi_params_init first", p->struct_size, sizeof *p);
    if (p->bins_fixed < DH_MI_MIN_BINS || p->bins_fixed > DH_MI_MAX_BINS ||
        p->bins_moving < DH_MI_MIN_BINS || p->bins_moving > DH_MI_MAX_BINS)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "mi: bins must be %d..%d per image, not %u:%u", DH_MI_MIN_BINS,
                           DH_MI_MAX_BINS, p->bins_fixed, p->bins_moving);
    if (p->max_batch < 1 || p->max_batch > 65536)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "mi: max_batch must be 1..65536, not %u",
                           p->max_batch);
    dh_jaxis probe;
    if (p->has_range_fixed && dh_jaxis_init(&probe, p->bins_fixed, p->fixed_lo, p->fixed_hi))
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "mi: fixed range %d:%d is not an inclusive range of 16-bit stored "
                           "values (lo <= hi, within -32768..65535, at most 65536 wide)",
                           p->fixed_lo, p->fixed_hi);
    if (p->has_range_moving && dh_jaxis_init(&probe, p->bins_moving, p->moving_lo, p->moving_hi))
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "mi: moving range %d:%d is not an inclusive range of 16-bit stored "
                           "values (lo <= hi, within -32768..65535, at most 65536 wide)",
                           p->moving_lo, p->moving_hi);
    if (p->device != DH_DEVICE_AUTO && p->device != DH_DEVICE_CPU && p->device != DH_DEVICE_CUDA)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "mi: unknown device %d", (int)p->device);
    return DH_OK;
}

/* Bytes of one sample, or 0 for an unknown type. */
static size_t sample_bytes(int sample_type)
{
    switch (sample_type) {
    case DH_SAMPLE_UINT16:
    case DH_SAMPLE_INT16:
        return 2;
    case DH_SAMPLE_FLOAT32:
        return 4;
    default:
        return 0;
    }
}

static dh_status check_sample_type(dh_ctx *ctx, int sample_type, const char *which)
{
    if (sample_bytes(sample_type))
        return DH_OK;
    return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                       "mi: %s sample type %d is not DH_SAMPLE_UINT16 (0), DH_SAMPLE_INT16 (1) "
                       "or DH_SAMPLE_FLOAT32 (2)", which, sample_type);
}

static dh_status bad_float_range(dh_ctx *ctx, const char *which, float lo, float hi,
                                 uint32_t bins)
{
    return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                       "mi: float32 %s images need %s_lo_f32 < %s_hi_f32, both finite, with "
                       "(hi - lo) * bins finite; got %.9g:%.9g with %u bins",
                       which, which, which, (double)lo, (double)hi, bins);
}

dh_status dh_mi_fixed_create(dh_ctx *ctx, const void *fixed, int sample_type, size_t n,
                             const uint8_t *mask, const dh_mi_params *params, dh_mi_fixed **out)
{
    if (!out)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "mi: out is NULL");
    *out = NULL;
    if (!fixed || n == 0)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "mi: the fixed image is empty");
    if (n > DH_MI_JOINT_MAX_PIXELS)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "mi: %zu pixels per image, more than the 2^32 - 1 supported", n);
    dh_mi_params defaults;
    dh_mi_params_init(&defaults);
    const dh_mi_params *p = params ? params : &defaults;
    dh_status st = check_params(ctx, p);
    if (st != DH_OK || (st = check_sample_type(ctx, sample_type, "fixed")) != DH_OK)
        return st;
    dh_faxis fixed_faxis;
    if (sample_type == DH_SAMPLE_FLOAT32 &&
        dh_faxis_init(&fixed_faxis, p->bins_fixed, p->fixed_lo_f32, p->fixed_hi_f32))
        return bad_float_range(ctx, "fixed", p->fixed_lo_f32, p->fixed_hi_f32, p->bins_fixed);

    int use_cuda;
    if ((st = dh_ctx_use_cuda(ctx, p->device, "mi", &use_cuda)) != DH_OK)
        return st;
    const dh_device device = use_cuda ? DH_DEVICE_CUDA : DH_DEVICE_CPU;

    dh_mi_fixed *f = calloc(1, sizeof *f);
    if (!f)
        return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "mi: out of memory");
    f->params = *p;
    f->params.struct_size = sizeof f->params;
    f->sample_type = sample_type;
    f->moving_faxis_ok =
        dh_faxis_init(&f->moving_faxis, p->bins_moving, p->moving_lo_f32, p->moving_hi_f32) == 0;
    f->info.device = device;
    f->info.pixels = n;
    f->info.bins_fixed = p->bins_fixed;
    f->info.bins_moving = p->bins_moving;
    f->info.max_batch = p->max_batch;

    /* The fixed range: given, or min..max over the mask. An empty mask leaves nothing to count:
     * every evaluation then reports DH_MI_EMPTY, which is an answer, not an error. */
    int32_t lo = p->fixed_lo, hi = p->fixed_hi;
    if (sample_type == DH_SAMPLE_FLOAT32) /* its range is the float one; this axis is unused */
        lo = hi = 0;
    else if (!p->has_range_fixed && dh_mi_minmax(fixed, sample_type, n, mask, &lo, &hi) == 0)
        lo = hi = 0;
    if (dh_jaxis_init(&f->axis_fixed, p->bins_fixed, lo, hi)) {
        dh_mi_fixed_free(f);
        return dh_ctx_fail(ctx, DH_ERR_INTERNAL, "mi: fixed range %d:%d rejected", lo, hi);
    }
    f->info.fixed_lo = lo;
    f->info.fixed_hi = hi;

    uint64_t marginal[DH_MI_JOINT_MAX_BINS];
    f->bins = malloc(n * sizeof *f->bins);
    if (device == DH_DEVICE_CPU) /* the GPU keeps its joint histograms itself */
        f->joint = calloc((size_t)p->max_batch * p->bins_fixed * p->bins_moving,
                          sizeof *f->joint);
    if (!f->bins || (device == DH_DEVICE_CPU && !f->joint)) {
        dh_mi_fixed_free(f);
        return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "mi: out of memory for %zu pixels", n);
    }
    uint64_t valid =
        sample_type == DH_SAMPLE_FLOAT32
            ? dh_mi_bin_fixed_f32(fixed, n, mask, &fixed_faxis, f->bins, marginal)
            : dh_mi_bin_fixed(fixed, sample_type, n, mask, &f->axis_fixed, f->bins, marginal);
    f->info.fixed_valid = valid;
    f->fixed_sum = valid ? dh_mi_sum_terms_u64(marginal, p->bins_fixed, valid,
                                                  dh_mi_log((double)valid))
                         : 0.0;
    double h = valid ? f->fixed_sum / (double)valid : (double)NAN;
    f->info.h_fixed = p->log2 ? h * 1.44269504088896340736 : h;

#ifdef DH_HAVE_CUDA
    if (device == DH_DEVICE_CUDA) {
        if (dh_mi_gpu_create(f->bins, n, p->bins_fixed, p->bins_moving, p->max_batch, valid,
                                f->fixed_sum, NULL, &f->gpu, f->msg, sizeof f->msg)) {
            dh_status cuda_status = DH_ERR_CUDA;
            dh_ctx_fail(ctx, cuda_status, "mi: preparing the fixed image on the GPU: %s", f->msg);
            dh_mi_fixed_free(f);
            return cuda_status;
        }
        /* The GPU holds the bins now; the host copy is kept for nothing else. */
        free(f->bins);
        f->bins = NULL;
    }
#endif
    dh_ctx_clear(ctx);
    *out = f;
    return DH_OK;
}

void dh_mi_fixed_free(dh_mi_fixed *fixed)
{
    if (!fixed)
        return;
#ifdef DH_HAVE_CUDA
    dh_mi_gpu_free(fixed->gpu);
#endif
    free(fixed->bins);
    free(fixed->joint);
    free(fixed);
}

void dh_mi_fixed_get_info(const dh_mi_fixed *fixed, dh_mi_fixed_info *info)
{
    if (fixed && info)
        *info = fixed->info;
}

static dh_status check_batch(dh_ctx *ctx, const dh_mi_fixed *fixed, const void *moving,
                             int sample_type, size_t stride, uint32_t count,
                             const uint8_t *valid, size_t valid_stride, const void *out)
{
    if (!fixed || !moving || !out)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "mi: fixed, moving and out are required");
    dh_status st = check_sample_type(ctx, sample_type, "moving");
    if (st != DH_OK)
        return st;
    if (sample_type == DH_SAMPLE_FLOAT32 && !fixed->moving_faxis_ok)
        return bad_float_range(ctx, "moving", fixed->params.moving_lo_f32,
                               fixed->params.moving_hi_f32, fixed->params.bins_moving);
    if (count < 1 || count > fixed->info.max_batch)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "mi: %u moving images in one call; this fixed image was prepared for "
                           "1..%u (max_batch)", count, fixed->info.max_batch);
    if (count > 1 && stride < fixed->info.pixels)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "mi: stride %zu samples is shorter than an image (%zu pixels)", stride,
                           fixed->info.pixels);
    if (valid && count > 1 && valid_stride < fixed->info.pixels)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "mi: valid_stride %zu is shorter than an image (%zu pixels)",
                           valid_stride, fixed->info.pixels);
    return DH_OK;
}

/* One moving image on the CPU: its range, its joint histogram into `joint`, its record. */
static void evaluate_one_cpu(const dh_mi_fixed *f, const void *moving, int sample_type,
                             const uint8_t *valid, uint32_t *joint, dh_mi_values *rec)
{
    const dh_mi_params *p = &f->params;
    int32_t lo = p->moving_lo, hi = p->moving_hi;
    if (sample_type == DH_SAMPLE_FLOAT32) {
        lo = hi = 0; /* the record's integer range: unused for floats */
        dh_mi_joint_cpu_f32(f->bins, p->bins_fixed, moving, f->info.pixels, valid, &f->moving_faxis,
                         joint);
    } else {
        if (!p->has_range_moving && dh_mi_minmax(moving, sample_type, f->info.pixels, valid,
                                                    &lo, &hi) == 0)
            lo = hi = 0; /* no valid pixel: nothing counts, the record says DH_MI_EMPTY */
        dh_jaxis axis;
        dh_jaxis_init(&axis, p->bins_moving, lo, hi); /* cannot fail: checked or a 16-bit min..max */
        dh_mi_joint_cpu(f->bins, p->bins_fixed, moving, sample_type, f->info.pixels, valid, &axis,
                     joint);
    }
    dh_mi_scores_from_joint(joint, p->bins_fixed, p->bins_moving, f->info.fixed_valid,
                            &f->fixed_sum, p->log2, rec);
    rec->moving_lo = lo;
    rec->moving_hi = hi;
    rec->reserved = 0;
}

#ifdef DH_HAVE_CUDA
/* The float axis handed to the GPU for float32 moving images, else NULL. */
static const dh_faxis *moving_float_axis(const dh_mi_fixed *fixed, int sample_type)
{
    return sample_type == DH_SAMPLE_FLOAT32 ? &fixed->moving_faxis : NULL;
}
#endif

dh_status dh_mi_evaluate(dh_ctx *ctx, dh_mi_fixed *fixed, const void *moving, int sample_type,
                         size_t stride, uint32_t count, const uint8_t *valid, size_t valid_stride,
                         dh_mi_scores *out)
{
    dh_status st =
        check_batch(ctx, fixed, moving, sample_type, stride, count, valid, valid_stride, out);
    if (st != DH_OK)
        return st;
    const size_t sample = sample_bytes(sample_type);
#ifdef DH_HAVE_CUDA
    if (fixed->gpu) {
        if (dh_mi_gpu_evaluate_host(fixed->gpu, moving, sample_type == DH_SAMPLE_INT16, stride,
                                       count, valid, valid_stride,
                                       moving_float_axis(fixed, sample_type),
                                       fixed->params.has_range_moving, fixed->params.moving_lo,
                                       fixed->params.moving_hi, fixed->params.log2,
                                       (dh_mi_values *)out, fixed->msg, sizeof fixed->msg))
            return dh_ctx_fail(ctx, DH_ERR_CUDA, "mi: evaluating on the GPU: %s", fixed->msg);
        fixed->last_count = count;
        dh_ctx_clear(ctx);
        return DH_OK;
    }
#endif
    const size_t cells = (size_t)fixed->info.bins_fixed * fixed->info.bins_moving;
    for (uint32_t k = 0; k < count; k++)
        evaluate_one_cpu(fixed, (const char *)moving + k * stride * sample, sample_type,
                         valid ? valid + k * valid_stride : NULL, fixed->joint + k * cells,
                         (dh_mi_values *)&out[k]);
    fixed->last_count = count;
    dh_ctx_clear(ctx);
    return DH_OK;
}

dh_status dh_mi_evaluate_device(dh_ctx *ctx, dh_mi_fixed *fixed, const void *d_moving,
                                int sample_type, size_t stride, uint32_t count,
                                const uint8_t *d_valid, size_t valid_stride, void *stream,
                                dh_mi_scores *d_out)
{
    dh_status st = check_batch(ctx, fixed, d_moving, sample_type, stride, count, d_valid,
                               valid_stride, d_out);
    if (st != DH_OK)
        return st;
#ifdef DH_HAVE_CUDA
    if (fixed->gpu) {
        if (dh_mi_gpu_evaluate(fixed->gpu, d_moving, sample_type == DH_SAMPLE_INT16, stride,
                                  count, d_valid, valid_stride,
                                  moving_float_axis(fixed, sample_type),
                                  fixed->params.has_range_moving,
                                  fixed->params.moving_lo, fixed->params.moving_hi,
                                  fixed->params.log2, (dh_mi_values *)d_out, stream, fixed->msg,
                                  sizeof fixed->msg))
            return dh_ctx_fail(ctx, DH_ERR_CUDA, "mi: enqueuing the evaluation: %s", fixed->msg);
        fixed->last_count = count;
        dh_ctx_clear(ctx);
        return DH_OK;
    }
#endif
    (void)stream;
    return dh_ctx_fail(ctx, DH_ERR_NO_DEVICE,
                       "mi: device pointers need a fixed image prepared on the GPU; this one is "
                       "on the CPU");
}

dh_status dh_mi_joint_histogram(dh_ctx *ctx, const dh_mi_fixed *fixed, uint32_t item,
                                uint32_t *counts)
{
    if (!fixed || !counts)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "mi: fixed and counts are required");
    if (item >= fixed->last_count)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "mi: no joint histogram %u: the last evaluation scored %u images", item,
                           fixed->last_count);
#ifdef DH_HAVE_CUDA
    if (fixed->gpu) {
        dh_mi_fixed *f = (dh_mi_fixed *)fixed; /* only its message buffer is written */
        if (dh_mi_gpu_read_joint(f->gpu, item, counts, f->msg, sizeof f->msg))
            return dh_ctx_fail(ctx, DH_ERR_CUDA, "mi: reading the joint histogram: %s", f->msg);
        dh_ctx_clear(ctx);
        return DH_OK;
    }
#endif
    const size_t cells = (size_t)fixed->info.bins_fixed * fixed->info.bins_moving;
    memcpy(counts, fixed->joint + item * cells, cells * sizeof *counts);
    dh_ctx_clear(ctx);
    return DH_OK;
}
