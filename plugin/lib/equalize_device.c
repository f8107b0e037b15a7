// SPDX-License-Identifier: MIT
/*
 * equalize_device.c: dh_equalize_device (dicomhist.h section 6), equalization and CLAHE of
 * samples that already live on the GPU, for hosts whose images are device arrays (the Python
 * package's CuPy and PyTorch inputs). The samples are stored values with no rescale (modality
 * value = stored value), so the windows are the ones dh_equalize gives a volume made by
 * dh_volume_from_samples; the kernels are the ones dh_equalize runs on the GPU (equalize_cuda.h,
 * clahe_cuda.h), so the results are its bits. Nothing goes through the host but the histograms
 * of a min-max or percentile window (the call then waits for them) and the windows. Without
 * CUDA the entry point answers DH_ERR_NO_DEVICE.
 */
#include "context.h"

#include <math.h>
#include <stdlib.h>

#include "clahe_cpu.h"
#include "equalize_check.h"
#include "equalize_cpu.h"
#ifdef DH_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "equalize_cuda.h"
#include "hist_cuda.h"
#endif
#ifdef DH_HAVE_CLAHE_CUDA
#include "clahe_cuda.h"
#endif

static const char WHO[] = "device equalization";

/* dh_equalize's checks that apply to samples without a file, and the ones this path adds
 * (equalization only; no window of a file). */
static dh_status check(dh_ctx *ctx, const void *d_samples, uint32_t bits_stored, uint32_t nx,
                       uint32_t ny, uint32_t nz, const dh_equalize_params *p, const uint16_t *d_out)
{
    if (!p)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "%s: NULL parameters", WHO);
    if (!d_samples || !d_out || !nx || !ny || !nz)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "%s: NULL pointer or an empty image (%u x %u x %u)", WHO, nx, ny, nz);
    if (bits_stored < 1 || bits_stored > 16)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "%s: bits_stored must be 1..16, not %u",
                           WHO, bits_stored);
    if (p->method == DH_EQ_METHOD_CLAHE_SKIMAGE)
        return dh_ctx_fail(ctx, DH_ERR_UNSUPPORTED,
                           "%s: the scikit-image mode runs on the CPU (dh_equalize)", WHO);
    const uint32_t n[3] = {nx, ny, nz};
    dh_status st;
    if ((st = dh_eq_check_fields(ctx, p)) != DH_OK ||
        (st = dh_eq_check_clahe_extent(ctx, p, n, WHO)) != DH_OK ||
        (st = dh_eq_check_window(ctx, p)) != DH_OK)
        return st;
    if (p->operation != DH_EQ_EQUALIZE)
        return dh_ctx_fail(ctx, DH_ERR_UNSUPPORTED,
                           "%s: window/level of device samples is not supported (dh_equalize "
                           "takes it on a volume)", WHO);
    if (p->window == DH_WINDOW_FILE)
        return dh_ctx_fail(ctx, DH_ERR_UNSUPPORTED,
                           "%s: device samples have no file and so no window of their own", WHO);
    return DH_OK;
}

#ifdef DH_HAVE_CUDA
static int from_ranks(const dh_equalize_params *p)
{
    return p->window == DH_WINDOW_MINMAX || p->window == DH_WINDOW_PERCENTILE;
}

/* The window of a table that needs no histogram, as dh_equalize resolves it for a volume
 * without rescale: the stored values inside the closed modality interval. */
static int given_window(const dh_equalize_params *p, int32_t base, uint32_t len, dh_eq_window *w)
{
    w->lo = base;
    w->hi = base + (int32_t)len - 1;
    if (p->window == DH_WINDOW_CENTER_WIDTH)
        return dh_window_to_stored(p->center - 0.5 - (p->width - 1) / 2,
                                   p->center - 0.5 + (p->width - 1) / 2, 1.0, 0.0, base, len, w);
    if (p->window == DH_WINDOW_RANGE)
        return dh_window_to_stored(p->lo, p->hi, 1.0, 0.0, base, len, w);
    return 0;
}

static dh_status cuda_fail(dh_ctx *ctx, const char *what, cudaError_t e)
{
    (void)cudaGetLastError();
    return dh_ctx_fail(ctx, DH_ERR_CUDA, "%s: %s failed: %s", WHO, what, cudaGetErrorString(e));
}

/* The work of one call on the GPU; every device buffer of its own is stream-ordered on the
 * caller's stream; it waits for the copy of the histograms that a rank window needs, the upload
 * of the global tables' windows, and the end of CLAHE's workspace (freed with cudaFree). */
static dh_status run(dh_ctx *ctx, const void *d_samples, int is_signed, int32_t base,
                     uint32_t len, uint32_t levels, const dh_clahe_shape *shape,
                     const dh_equalize_params *p, uint16_t *d_out, cudaStream_t stream)
{
    const size_t slice_len = (size_t)shape->nx * shape->ny;
    const uint32_t tables = p->per_slice ? shape->nz : 1;
    const int clahe = p->method == DH_EQ_METHOD_CLAHE;
    const size_t hist_slots = (size_t)tables * (len + 2);
    char msg[512] = "";
    dh_status st = DH_OK;
    cudaError_t e;
    uint64_t *d_hist = NULL, *hist = NULL;
    dh_eq_window *windows = calloc(tables, sizeof *windows), *d_windows = NULL;
    uint16_t *d_luts = NULL;
    if (!windows)
        return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "%s: out of memory", WHO);
    const int need_hist = !clahe || from_ranks(p);
    if (need_hist) {
        dh_bin_map map;
        dh_eq_bin_map_init(&map, base, len);
        if ((e = cudaMallocAsync((void **)&d_hist, hist_slots * sizeof *d_hist, stream)) !=
            cudaSuccess) {
            st = cuda_fail(ctx, "cudaMallocAsync", e);
            goto done;
        }
        if (dh_hist_cuda_device(d_samples, is_signed, slice_len, shape->nz, tables > 1, &map,
                                d_hist, stream, msg, sizeof msg) != 0) {
            st = dh_ctx_fail(ctx, DH_ERR_CUDA, "%s: %s", WHO, msg);
            goto done;
        }
    }
    if (from_ranks(p)) {
        if (!(hist = malloc(hist_slots * sizeof *hist))) {
            st = dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "%s: out of memory", WHO);
            goto done;
        }
        if ((e = cudaMemcpyAsync(hist, d_hist, hist_slots * sizeof *hist,
                                 cudaMemcpyDeviceToHost, stream)) != cudaSuccess ||
            (e = cudaStreamSynchronize(stream)) != cudaSuccess) {
            st = cuda_fail(ctx, "the histograms' download", e);
            goto done;
        }
        const double pct = p->window == DH_WINDOW_PERCENTILE ? p->percentile : 0;
        for (uint32_t t = 0; t < tables; t++)
            if (dh_window_percentile(hist + (size_t)t * (len + 2), len, base, pct,
                                     &windows[t]) != 0) {
                st = dh_ctx_fail(ctx, DH_ERR_INTERNAL, "%s: slice %u has no pixels", WHO, t);
                goto done;
            }
    } else {
        for (uint32_t t = 0; t < tables; t++)
            if (given_window(p, base, len, &windows[t]) != 0) {
                st = dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "%s: the window cannot be mapped",
                                 WHO);
                goto done;
            }
    }
    if (clahe) {
#ifdef DH_HAVE_CLAHE_CUDA
        dh_clahe_cuda_workspace *ws = dh_clahe_cuda_workspace_new();
        if (!ws) {
            st = dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "%s: no memory for the CLAHE workspace", WHO);
            goto done;
        }
        if (dh_clahe_cuda(ws, d_samples, is_signed, base, len, shape, windows, p->bins, levels,
                          p->clip_limit, d_out, stream, msg, sizeof msg) != 0)
            st = dh_ctx_fail(ctx, DH_ERR_CUDA, "%s: %s", WHO, msg);
        dh_clahe_cuda_workspace_free(ws);
#else
        st = dh_ctx_fail(ctx, DH_ERR_NO_DEVICE, "%s: this build has no CLAHE on the GPU", WHO);
#endif
        goto done;
    }
    if ((e = cudaMallocAsync((void **)&d_windows, tables * sizeof *d_windows, stream)) !=
            cudaSuccess ||
        (e = cudaMallocAsync((void **)&d_luts, (size_t)tables * len * sizeof *d_luts, stream)) !=
            cudaSuccess) {
        st = cuda_fail(ctx, "cudaMallocAsync", e);
        goto done;
    }
    /* windows is pageable host memory freed below: wait for the copy, as dh_eq_cuda_equalize */
    if ((e = cudaMemcpyAsync(d_windows, windows, tables * sizeof *windows,
                             cudaMemcpyHostToDevice, stream)) != cudaSuccess ||
        (e = cudaStreamSynchronize(stream)) != cudaSuccess) {
        st = cuda_fail(ctx, "the windows' upload", e);
        goto done;
    }
    if (dh_eq_lut_build_cuda(d_hist, tables, base, len, d_windows, levels, p->clip_limit, d_luts,
                             stream, msg, sizeof msg) != 0 ||
        dh_lut_apply_cuda(d_samples, is_signed, slice_len, shape->nz, d_luts, tables > 1, base,
                          len, d_out, stream, msg, sizeof msg) != 0)
        st = dh_ctx_fail(ctx, DH_ERR_CUDA, "%s: %s", WHO, msg);
done:
    if (d_luts)
        (void)cudaFreeAsync(d_luts, stream);
    if (d_windows)
        (void)cudaFreeAsync(d_windows, stream);
    if (d_hist)
        (void)cudaFreeAsync(d_hist, stream);
    free(hist);
    free(windows);
    return st;
}
#endif

dh_status dh_equalize_device(dh_ctx *ctx, const void *d_samples, int is_signed,
                             uint32_t bits_stored, uint32_t columns, uint32_t rows,
                             uint32_t slices, const dh_equalize_params *params, uint16_t *d_out,
                             void *cuda_stream)
{
    dh_status st = check(ctx, d_samples, bits_stored, columns, rows, slices, params, d_out);
    if (st != DH_OK)
        return st;
    int32_t base;
    uint32_t len;
    if (dh_eq_table_range(bits_stored, is_signed ? 1 : 0, &base, &len) != 0)
        return dh_ctx_fail(ctx, DH_ERR_UNSUPPORTED, "%s: BitsStored %u", WHO, bits_stored);
    const uint32_t bits = params->output_bits ? params->output_bits : bits_stored;
    const uint32_t levels = bits >= 16 ? 65536u : 1u << bits;
    dh_clahe_shape shape = {columns, rows, slices, 1, 1, 1, !params->per_slice};
    if (params->method == DH_EQ_METHOD_CLAHE) {
        shape.tx = dh_eq_clahe_tiles_along(columns, params->tiles[0], params->tile_size[0]);
        shape.ty = dh_eq_clahe_tiles_along(rows, params->tiles[1], params->tile_size[1]);
        if (shape.volume)
            shape.tz = dh_eq_clahe_tiles_along(slices, params->tiles[2], params->tile_size[2]);
    }
#ifdef DH_HAVE_CUDA
    if (!dh_cuda_usable())
        return dh_ctx_fail(ctx, DH_ERR_NO_DEVICE, "%s: no usable CUDA device is present", WHO);
    st = run(ctx, d_samples, is_signed ? 1 : 0, base, len, levels, &shape, params, d_out,
             (cudaStream_t)cuda_stream);
    if (st == DH_OK)
        dh_ctx_clear(ctx);
    return st;
#else
    (void)levels, (void)shape, (void)cuda_stream;
    return dh_ctx_fail(ctx, DH_ERR_NO_DEVICE, "%s: this build of dicomhist has no CUDA support",
                       WHO);
#endif
}
