// SPDX-License-Identifier: MIT
/*
 * mi_parzen_cuda.cu: the CUDA twin of Parzen-window (Mattes) MI and its gradient
 * (mi_parzen_cuda.h), the same bits as dh_parzen_mi_cpu. One call is a fixed sequence on the
 * caller's stream, nothing synchronized, nothing allocated once the workspace is large enough
 * (so an optimizer loop can capture it in a CUDA graph):
 *   1. pz_prepare_kernel: the per-item counts and joint histograms zeroed; the range keys set
 *      where a range is found, else (both ranges given) step 3's axes;
 *   2. pz_range_kernel (only for a range not given): min/max keys of every image's valid pixels;
 *   3. pz_axes_kernel (after step 2): every axis, with mi_parzen.h's arithmetic, and its width's
 *      reciprocal; with the box window, the fixed rows' thresholds (pz_threshold);
 *   4. pz_fixed_vec_kernel (pz_fixed_kernel where the fixed image is not aligned for vector
 *      loads): the fixed pixels' indices (by the thresholds for the box window; by the exact
 *      position, also stored, for the cubic window), once for
 *      the whole batch (a one-item call with the cubic window: in step 5 instead);
 *   5. pz_hist_kernel: the joint histograms, uint64 sums of quantized weights, privatized in
 *      shared memory where bins x bins x 8 bytes fit (then one merge of the non-zero cells), else
 *      global atomics; exact integers, so the order of the atomics changes no bit;
 *   6. pz_launch_score: records, and the cell-factor tables for the gradient;
 *   7. pz_gradient_kernel (when a gradient buffer is given): every pixel from its own cells.
 * Memory: the workspace holds 1 byte per pixel (9 with the cubic fixed window), and per item
 * 2 x bins x bins x 8 bytes: O(pixels + batch x bins^2), never O(pixels x bins).
 */
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cuda_check.h"
#include "mi_parzen_cuda.h"
#include "mi_parzen_cuda_pixels.cuh"
#include "mi_parzen_cuda_score.cuh"

#define DH_CUDA_PREFIX "dh_parzen_mi_cuda: "

struct dh_parzen_cuda_workspace {
    void *dev; /* one allocation, carved by pz_carve */
    size_t capacity;
    int device; /* the device the attributes below were read from; -1: none yet */
    int sms;
    int smem_optin; /* the most dynamic shared memory a block may ask for */
    /* Blocks of the fixed pass that fit an SM at once, per sample type (dh_parzen_sample), form
     * (0 the exact path of the cubic window, 1 the box window's thresholds) and path (0 scalar, 1
     * vector): its grid is one wave of them (pz_launch_fixed). */
    int fixed_per_sm[3][2][2];
    bool score_split; /* the score pass may run as clusters (pz_score_setup) */
    /* The axes of the last call with both ranges given (pz_given_axes_of) and the parameters
     * they came from: an optimizer's calls repeat them, so the host computes them once. */
    bool given_set;
    uint32_t given_bins, given_window;
    double given_range[4];
    pz_given_axes given;
};

namespace {

/* A failed CUDA call: the message, and DH_PARZEN_ERR_CUDA from the enclosing function. */
#define PZ_CK(call, what)                                                                          \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            dh_cuda_fail(msg, msg_len, DH_CUDA_PREFIX, what, e_);                                  \
            return DH_PARZEN_ERR_CUDA;                                                             \
        }                                                                                          \
    } while (0)

constexpr size_t PZ_ALIGN = 256;
constexpr size_t PZ_BLOCKS_PER_SM = 8; /* the grids aim at this many blocks per SM in all */

size_t pz_round(size_t x) { return (x + PZ_ALIGN - 1) / PZ_ALIGN * PZ_ALIGN; }

/* Where each region of the workspace starts; the counts and the joint histograms are adjacent
 * after the keys, each region a whole number of 16-byte words, so pz_prepare_kernel sets them
 * with plain vector stores. */
struct pz_layout {
    size_t keys, n, joint, joint_end, axes, rcp, thr, cell, scale, grad_zero, fixed_row,
        fixed_t, total;
};

pz_layout pz_plan(size_t pixels, uint32_t count, uint32_t bins, bool cubic, bool gradient)
{
    const size_t cells = (size_t)bins * bins;
    pz_layout l;
    size_t at = 0;
    l.keys = at;
    at += pz_round(((size_t)count + 1) * 2 * sizeof(uint32_t));
    l.n = at;
    at += pz_round((size_t)count * sizeof(unsigned long long));
    l.joint = at;
    at += pz_round((size_t)count * cells * sizeof(unsigned long long));
    l.joint_end = at;
    l.axes = at;
    at += pz_round(((size_t)count + 1) * sizeof(dh_parzen_axis));
    l.rcp = at;
    at += pz_round(((size_t)count + 1) * sizeof(double));
    l.thr = at;
    at += pz_round(DH_PARZEN_MAX_BINS * sizeof(float));
    l.cell = at;
    at += gradient ? pz_round((size_t)count * cells * sizeof(double)) : 0;
    l.scale = at;
    at += pz_round((size_t)count * sizeof(double));
    l.grad_zero = at;
    at += pz_round((size_t)count * sizeof(uint32_t));
    l.fixed_row = at;
    at += pz_round(pixels);
    l.fixed_t = at;
    at += cubic ? pz_round(pixels * sizeof(double)) : 0;
    l.total = at;
    return l;
}

/* Both forms' occupancies of one sample type (pz_fixed_occupancy). */
template <dh_parzen_sample S> cudaError_t pz_fixed_occupancy_all(int per_sm[2][2])
{
    const cudaError_t e = pz_fixed_occupancy<S, false>(per_sm[0]);
    return e == cudaSuccess ? pz_fixed_occupancy<S, true>(per_sm[1]) : e;
}

/* The device's SM count and shared-memory limit, read once per device. */
int pz_device(dh_parzen_cuda_workspace *ws, char *msg, size_t msg_len)
{
    int dev = 0;
    PZ_CK(cudaGetDevice(&dev), "cudaGetDevice");
    if (dev == ws->device)
        return DH_PARZEN_OK;
    if (ws->dev) { /* a workspace follows its device: the old buffer is not usable there */
        PZ_CK(cudaFree(ws->dev), "cudaFree");
        ws->dev = nullptr;
        ws->capacity = 0;
    }
    PZ_CK(cudaDeviceGetAttribute(&ws->sms, cudaDevAttrMultiProcessorCount, dev),
          "cudaDeviceGetAttribute (SM count)");
    PZ_CK(cudaDeviceGetAttribute(&ws->smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev),
          "cudaDeviceGetAttribute (shared memory)");
    PZ_CK(pz_fixed_occupancy_all<DH_PARZEN_FLOAT32>(ws->fixed_per_sm[DH_PARZEN_FLOAT32]),
          "cudaOccupancyMaxActiveBlocksPerMultiprocessor (fixed pass)");
    PZ_CK(pz_fixed_occupancy_all<DH_PARZEN_UINT16>(ws->fixed_per_sm[DH_PARZEN_UINT16]),
          "cudaOccupancyMaxActiveBlocksPerMultiprocessor (fixed pass)");
    PZ_CK(pz_fixed_occupancy_all<DH_PARZEN_INT16>(ws->fixed_per_sm[DH_PARZEN_INT16]),
          "cudaOccupancyMaxActiveBlocksPerMultiprocessor (fixed pass)");
    PZ_CK(pz_score_setup(&ws->score_split), "cudaFuncSetAttribute (score)");
    ws->device = dev;
    return DH_PARZEN_OK;
}

int pz_reserve(dh_parzen_cuda_workspace *ws, size_t bytes, char *msg, size_t msg_len)
{
    if (bytes <= ws->capacity)
        return DH_PARZEN_OK;
    if (ws->dev)
        PZ_CK(cudaFree(ws->dev), "cudaFree");
    ws->dev = nullptr;
    ws->capacity = 0;
    cudaError_t e = cudaMalloc(&ws->dev, bytes);
    if (e != cudaSuccess) {
        ws->dev = nullptr;
        dh_cuda_fail(msg, msg_len, DH_CUDA_PREFIX, "cudaMalloc (workspace)", e);
        return DH_PARZEN_ERR_NO_MEMORY;
    }
    ws->capacity = bytes;
    return DH_PARZEN_OK;
}

/* The axes of a call with both ranges given (pz_given_axes_set), kept in the workspace while the
 * parameters stay the same. */
const pz_given_axes &pz_given_axes_of(dh_parzen_cuda_workspace *ws, const pz_args &a)
{
    const double range[4] = {a.fixed_lo, a.fixed_hi, a.moving_lo, a.moving_hi};
    if (!ws->given_set || ws->given_bins != a.bins || ws->given_window != a.fixed_window ||
        memcmp(ws->given_range, range, sizeof range) != 0) {
        pz_given_axes_set(a, &ws->given);
        ws->given_set = true;
        ws->given_bins = a.bins;
        ws->given_window = a.fixed_window;
        memcpy(ws->given_range, range, sizeof range);
    }
    return ws->given;
}

/* Blocks per item along y: enough for PZ_BLOCKS_PER_SM blocks per SM over the batch, at least
 * `min_pixels` pixels per block, at most one per `per_block` pixels. */
uint32_t pz_blocks_per_item(const dh_parzen_cuda_workspace *ws, size_t pixels, uint32_t count,
                            size_t per_block)
{
    const size_t want = ((size_t)ws->sms * PZ_BLOCKS_PER_SM + count - 1) / count;
    const size_t most = (pixels + per_block - 1) / per_block;
    size_t p = want < most ? want : most;
    if (p < 1)
        p = 1;
    if (p > 65535)
        p = 65535;
    return (uint32_t)p;
}

/* Whether an item's joint histogram fits a block's shared memory (bins x bins x 8 bytes plus the
 * kernel's static words): then each block adds into a private copy (pz_hist_kernel's PRIVATE). */
bool pz_private_fits(const dh_parzen_cuda_workspace *ws, uint32_t bins)
{
    return (size_t)bins * bins * sizeof(unsigned long long) + 256 <= (size_t)ws->smem_optin;
}

/* The histogram, score and gradient passes; `fused`: a one-item call with the cubic window whose
 * histogram pass computes the fixed rows and positions itself (no pz_fixed_kernel before it). */
template <dh_parzen_sample S, bool CUBIC>
int pz_launch_pixels(const dh_parzen_cuda_workspace *ws, const pz_args &a, cudaStream_t stream,
                     bool gradient, bool fused, char *msg, size_t msg_len)
{
    const size_t cells = (size_t)a.bins * a.bins;
    const size_t hist_smem = cells * sizeof(unsigned long long);
    const bool priv = pz_private_fits(ws, a.bins);
    /* a private histogram costs two passes over its cells: give each block as many pixels */
    const size_t hist_per_block = priv ? (cells > 4096 ? cells : 4096) : 4096;
    const dim3 hist_grid(a.count, pz_blocks_per_item(ws, a.pixels, a.count, hist_per_block));
    if (priv) {
        auto k = CUBIC && fused ? pz_hist_kernel<S, CUBIC, true, CUBIC>
                                : pz_hist_kernel<S, CUBIC, true, false>;
        PZ_CK(dh_cuda_allow_smem((const void *)k, hist_smem),
              "cudaFuncSetAttribute (histogram)");
        k<<<hist_grid, PZ_HIST_THREADS, hist_smem, stream>>>(a);
    } else {
        pz_hist_kernel<S, CUBIC, false, false><<<hist_grid, PZ_HIST_THREADS, 0, stream>>>(a);
    }
    PZ_CK(cudaGetLastError(), "the histogram kernel's launch");
    PZ_CK(pz_launch_score(a, gradient ? 1 : 0, ws->sms, ws->score_split, stream),
          "the score kernel's launch");
    if (!gradient)
        return DH_PARZEN_OK;
    const size_t table = cells * sizeof(double);
    const bool shared = table <= 48 * 1024;
    const size_t grad_per_block = shared ? (cells / 2 > 2048 ? cells / 2 : 2048) : 2048;
    const dim3 grad_grid(a.count, pz_blocks_per_item(ws, a.pixels, a.count, grad_per_block));
    if (shared)
        pz_gradient_kernel<S, CUBIC, true><<<grad_grid, PZ_PIXEL_THREADS, table, stream>>>(a);
    else
        pz_gradient_kernel<S, CUBIC, false><<<grad_grid, PZ_PIXEL_THREADS, 0, stream>>>(a);
    PZ_CK(cudaGetLastError(), "the gradient kernel's launch");
    return DH_PARZEN_OK;
}

/* Whether the fixed pass can take its vector path (pz_fixed_vec_kernel): the samples 16-byte
 * (float32) or 8-byte (16-bit) aligned, the mask 4-byte aligned (the rows are: the workspace
 * is). */
bool pz_fixed_vec_fits(const pz_args &a)
{
    const uintptr_t need = a.fixed_sample == DH_PARZEN_FLOAT32 ? 16 : 8;
    return (uintptr_t)a.fixed % need == 0 && (uintptr_t)a.fixed_mask % 4 == 0;
}

template <dh_parzen_sample S, bool BOX>
void pz_launch_fixed_form(const pz_args &a, bool vec, unsigned grid, cudaStream_t stream)
{
    if (vec)
        pz_fixed_vec_kernel<S, BOX><<<grid, PZ_PIXEL_THREADS, 0, stream>>>(a);
    else
        pz_fixed_kernel<S, BOX><<<grid, PZ_PIXEL_THREADS, 0, stream>>>(a);
}

/* The box window's rows by thresholds (pz_box_row: the definition's rows without its division
 * per pixel), the cubic window's rows and positions by the exact path. */
template <dh_parzen_sample S>
void pz_launch_fixed_as(const pz_args &a, bool vec, unsigned grid, cudaStream_t stream)
{
    if (a.fixed_window == DH_PARZEN_FIXED_BOX)
        pz_launch_fixed_form<S, true>(a, vec, grid, stream);
    else
        pz_launch_fixed_form<S, false>(a, vec, grid, stream);
}

/* The fixed pass (the rows, and the positions for the cubic window), once for the batch: the
 * vector path where it fits (two groups of four pixels per thread and trip), else the scalar
 * kernel (four pixels per thread and trip); at most one wave of blocks (pz_fixed_blocks). */
void pz_launch_fixed(const dh_parzen_cuda_workspace *ws, const pz_args &a, cudaStream_t stream)
{
    const bool vec = pz_fixed_vec_fits(a);
    const int box = a.fixed_window == DH_PARZEN_FIXED_BOX ? 1 : 0;
    const size_t blocks = pz_fixed_blocks(a.pixels, vec, ws->sms,
                                          ws->fixed_per_sm[a.fixed_sample][box][vec ? 1 : 0]);
    if (a.fixed_sample == DH_PARZEN_FLOAT32)
        pz_launch_fixed_as<DH_PARZEN_FLOAT32>(a, vec, (unsigned)blocks, stream);
    else if (a.fixed_sample == DH_PARZEN_UINT16)
        pz_launch_fixed_as<DH_PARZEN_UINT16>(a, vec, (unsigned)blocks, stream);
    else
        pz_launch_fixed_as<DH_PARZEN_INT16>(a, vec, (unsigned)blocks, stream);
}

template <dh_parzen_sample S>
int pz_launch_sample(const dh_parzen_cuda_workspace *ws, const pz_args &a, cudaStream_t stream,
                     bool gradient, bool fused, char *msg, size_t msg_len)
{
    return a.fixed_window == DH_PARZEN_FIXED_CUBIC
               ? pz_launch_pixels<S, true>(ws, a, stream, gradient, fused, msg, msg_len)
               : pz_launch_pixels<S, false>(ws, a, stream, gradient, fused, msg, msg_len);
}

} // namespace

extern "C" dh_parzen_cuda_workspace *dh_parzen_cuda_workspace_new(void)
{
    dh_parzen_cuda_workspace *ws = (dh_parzen_cuda_workspace *)calloc(1, sizeof *ws);
    if (ws)
        ws->device = -1;
    return ws;
}

extern "C" void dh_parzen_cuda_workspace_free(dh_parzen_cuda_workspace *ws)
{
    if (!ws)
        return;
    if (ws->dev)
        cudaFree(ws->dev);
    free(ws);
}

extern "C" int dh_parzen_mi_cuda(dh_parzen_cuda_workspace *ws, const dh_parzen_params *params,
                                 size_t pixels, const dh_parzen_image *fixed,
                                 const dh_parzen_image *moving, uint32_t count,
                                 dh_mi_values *d_out, float *d_gradient, void *stream_ptr,
                                 char *msg, size_t msg_len)
{
    if (!ws || !dh_parzen_arguments_valid(params, pixels, fixed, moving, count, d_out)) {
        if (msg && msg_len)
            snprintf(msg, msg_len,
                     "%sinvalid arguments (a NULL pointer, bins outside %u..%u, an unknown window, "
                     "gradient or sample type, a bad given range, or 0 or more than %zu pixels)",
                     DH_CUDA_PREFIX, DH_PARZEN_MIN_BINS, DH_PARZEN_MAX_BINS,
                     (size_t)DH_PARZEN_MAX_PIXELS);
        return DH_PARZEN_ERR_ARGUMENT;
    }
    if (count == 0)
        return DH_PARZEN_OK;
    int rc = pz_device(ws, msg, msg_len);
    if (rc != DH_PARZEN_OK)
        return rc;
    const bool cubic = params->fixed_window == DH_PARZEN_FIXED_CUBIC;
    const bool gradient = d_gradient != nullptr;
    const pz_layout l = pz_plan(pixels, count, params->bins, cubic, gradient);
    if ((rc = pz_reserve(ws, l.total, msg, msg_len)) != DH_PARZEN_OK)
        return rc;
    cudaStream_t stream = (cudaStream_t)stream_ptr;
    char *base = (char *)ws->dev;

    pz_args a;
    memset(&a, 0, sizeof a);
    a.pixels = pixels;
    a.count = count;
    a.bins = params->bins;
    a.fixed_window = params->fixed_window;
    a.gradient_of = params->gradient_of;
    a.log2 = params->log2 != 0;
    a.fixed_given = params->fixed_range_given != 0;
    a.moving_given = params->moving_range_given != 0;
    a.fixed_lo = params->fixed_lo;
    a.fixed_hi = params->fixed_hi;
    a.moving_lo = params->moving_lo;
    a.moving_hi = params->moving_hi;
    a.fixed = fixed->data;
    a.fixed_mask = fixed->mask;
    a.fixed_sample = fixed->sample;
    a.moving = moving->data;
    a.moving_mask = moving->mask;
    a.keys = (uint32_t *)(base + l.keys);
    a.n = (unsigned long long *)(base + l.n);
    a.joint = (unsigned long long *)(base + l.joint);
    a.axes = (dh_parzen_axis *)(base + l.axes);
    a.rcp = (double *)(base + l.rcp);
    a.thr = (float *)(base + l.thr);
    a.cell = (double *)(base + l.cell);
    a.scale = (double *)(base + l.scale);
    a.grad_zero = (uint32_t *)(base + l.grad_zero);
    a.fixed_row = (uint8_t *)(base + l.fixed_row);
    a.fixed_t = cubic ? (double *)(base + l.fixed_t) : nullptr;
    a.out = d_out;
    a.gradient = d_gradient;
    /* the gradient's run loads and stores (pz_gradient_kernel): every item's first sample and
     * gradient 16-byte aligned, its first mask byte 8-byte aligned (the fixed rows are: the
     * workspace is) */
    a.vec_gradient = pixels % PZ_RUN == 0 && (uintptr_t)moving->data % 16 == 0 &&
                     (!moving->mask || (uintptr_t)moving->mask % 8 == 0) &&
                     (uintptr_t)d_gradient % 16 == 0;

    /* one launch before the passes (pz_prepare_kernel): the histograms zeroed, and the range
     * keys set where a range is found, else the axes the host computed (both given) */
    const bool ranges_found = !a.fixed_given || !a.moving_given;
    static const pz_given_axes none = {};
    pz_launch_prepare(a, (uint4 *)(base + l.n), (l.joint_end - l.n) / 16, (uint4 *)(base + l.keys),
                      ranges_found ? (l.n - l.keys) / 16 : 0,
                      ranges_found ? none : pz_given_axes_of(ws, a),
                      (size_t)ws->sms * PZ_BLOCKS_PER_SM, stream);
    PZ_CK(cudaGetLastError(), "the prepare kernel's launch");
    if (ranges_found) {
        const dim3 grid(count + 1, pz_blocks_per_item(ws, pixels, count + 1, 4096));
        if (moving->sample == DH_PARZEN_FLOAT32)
            pz_range_kernel<DH_PARZEN_FLOAT32><<<grid, PZ_PIXEL_THREADS, 0, stream>>>(a);
        else if (moving->sample == DH_PARZEN_UINT16)
            pz_range_kernel<DH_PARZEN_UINT16><<<grid, PZ_PIXEL_THREADS, 0, stream>>>(a);
        else
            pz_range_kernel<DH_PARZEN_INT16><<<grid, PZ_PIXEL_THREADS, 0, stream>>>(a);
        PZ_CK(cudaGetLastError(), "the range kernel's launch");
        pz_axes_kernel<<<(count + 1 + 255) / 256, 256, 0, stream>>>(a);
        PZ_CK(cudaGetLastError(), "the axes kernel's launch");
    }
    /* one item, the cubic window, a private histogram: the histogram pass computes the fixed rows
     * and positions on its way (pz_hist_kernel's FUSED says why the box window does not); else
     * the fixed pass, once for the batch */
    const bool fused = count == 1 && cubic && pz_private_fits(ws, params->bins);
    if (!fused) {
        pz_launch_fixed(ws, a, stream);
        PZ_CK(cudaGetLastError(), "the fixed kernel's launch");
    }
    switch (moving->sample) {
    case DH_PARZEN_FLOAT32:
        return pz_launch_sample<DH_PARZEN_FLOAT32>(ws, a, stream, gradient, fused, msg, msg_len);
    case DH_PARZEN_UINT16:
        return pz_launch_sample<DH_PARZEN_UINT16>(ws, a, stream, gradient, fused, msg, msg_len);
    default:
        return pz_launch_sample<DH_PARZEN_INT16>(ws, a, stream, gradient, fused, msg, msg_len);
    }
}
