/*
 * equalize_cuda.cu: the CUDA launchers of equalize_cuda.h. Histograms come from the project's
 * histogram engine (hist_cuda.h), never a second kernel. Tables: one block per table; block
 * reductions find the window's count, span and clip excess, then a block-wide scan (CUB) runs
 * over the clipped counts and the integer formula of equalize.h (the same inline functions the
 * CPU twin calls) writes each entry. Application: one grid over all slices.
 */
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>

#include <climits>
#include <cstdio>
#include <cstdlib>

#include "equalize_cuda.h"
#include "hist_cuda.h"

namespace {

constexpr int kLutThreads = 512;

int cuda_fail(cudaError_t e, const char *what, char *msg, size_t msg_len)
{
    if (msg && msg_len)
        snprintf(msg, msg_len, "%s: %s", what, cudaGetErrorString(e));
    return -1;
}

#define DH_TRY(call, what)                                                                   \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess)                                                               \
            return cuda_fail(e_, what, msg, msg_len);                                        \
    } while (0)

struct MinMax {
    long long lo, hi;
};

struct MinMaxOp {
    __device__ MinMax operator()(const MinMax &a, const MinMax &b) const
    {
        return {a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
    }
};

__global__ void lut_kernel(const uint64_t *hist, int32_t base, uint32_t len,
                           const dh_eq_window *windows, uint32_t levels, double clip_limit,
                           uint16_t *luts)
{
    using Reduce64 = cub::BlockReduce<unsigned long long, kLutThreads>;
    using ReduceMM = cub::BlockReduce<MinMax, kLutThreads>;
    using Scan = cub::BlockScan<unsigned long long, kLutThreads>;
    __shared__ union {
        typename Reduce64::TempStorage r64;
        typename ReduceMM::TempStorage rmm;
        typename Scan::TempStorage scan;
    } tmp;
    __shared__ dh_eq_stats stats;
    __shared__ unsigned long long carry;

    const uint32_t t = blockIdx.x;
    const uint64_t *h = hist + (size_t)t * (len + 2);
    uint16_t *lut = luts + (size_t)t * len;
    const dh_eq_window w = windows[t];
    long long lo = (long long)w.lo - base, hi = (long long)w.hi - base;
    long long clo = lo < 0 ? 0 : lo, chi = hi > (long long)len - 1 ? (long long)len - 1 : hi;

    /* Count, first and last bin present inside the window. */
    unsigned long long count = 0;
    MinMax mm = {LLONG_MAX, LLONG_MIN};
    for (long long i = clo + threadIdx.x; i <= chi; i += blockDim.x) {
        uint64_t c = h[i];
        if (c) {
            count += c;
            mm.lo = i < mm.lo ? i : mm.lo;
            mm.hi = i > mm.hi ? i : mm.hi;
        }
    }
    unsigned long long total = Reduce64(tmp.r64).Sum(count);
    __syncthreads();
    MinMax span = ReduceMM(tmp.rmm).Reduce(mm, MinMaxOp());
    __syncthreads();
    if (threadIdx.x == 0) {
        stats.count = total;
        stats.excess = 0;
        if (total == 0) {
            stats.first = 1;
            stats.last = 0;
            stats.limit = 0;
        } else {
            stats.first = span.lo;
            stats.last = span.hi;
            stats.limit = dh_eq_clip_limit(clip_limit, total, (uint64_t)(span.hi - span.lo + 1));
        }
        carry = 0;
    }
    __syncthreads();
    if (stats.limit) {
        unsigned long long excess = 0;
        for (long long i = stats.first + threadIdx.x; i <= stats.last; i += blockDim.x)
            if (h[i] > stats.limit)
                excess += h[i] - stats.limit;
        unsigned long long e = Reduce64(tmp.r64).Sum(excess);
        __syncthreads();
        if (threadIdx.x == 0)
            stats.excess = e;
        __syncthreads();
    }
    const dh_eq_stats s = stats;
    const uint64_t cdf_min = s.first <= s.last ? dh_eq_clipped(h[s.first], s.first, &s) : 0;

    /* The cdf inside the window, chunk by chunk, with the running total carried over. */
    for (long long start = 0; start < (long long)len; start += blockDim.x) {
        long long i = start + threadIdx.x;
        unsigned long long c = 0;
        if (i < (long long)len && i >= lo && i <= hi)
            c = dh_eq_clipped(h[i], i, &s);
        unsigned long long prefix, chunk;
        Scan(tmp.scan).InclusiveSum(c, prefix, chunk);
        if (i < (long long)len) {
            if (i < lo)
                lut[i] = 0;
            else if (i > hi)
                lut[i] = (uint16_t)(levels - 1);
            else
                lut[i] = dh_eq_value(carry + prefix, cdf_min, s.count, levels);
        }
        __syncthreads();
        if (threadIdx.x == 0)
            carry += chunk;
        __syncthreads();
    }
}

template <typename T>
__global__ void apply_kernel(const T *data, size_t slice_len, size_t n, const uint16_t *luts,
                             int per_slice, int32_t base, uint32_t len, uint16_t *out)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const uint16_t *lut = per_slice ? luts + (i / slice_len) * len : luts;
        out[i] = lut[(int32_t)data[i] - base];
    }
}

} // namespace

struct dh_eq_cuda {
    int is_signed, per_slice;
    size_t slice_len, slices, n;
    int32_t base;
    uint32_t len, tables;
    void *d_data;
    uint64_t *d_hist;
    uint16_t *d_luts, *d_out;
    dh_eq_window *d_windows;
    cudaStream_t stream;
};

extern "C" {

int dh_eq_lut_build_cuda(const uint64_t *d_hist, uint32_t tables, int32_t base, uint32_t len,
                         const dh_eq_window *d_windows, uint32_t levels, double clip_limit,
                         uint16_t *d_luts, void *stream, char *msg, size_t msg_len)
{
    if (tables == 0)
        return 0;
    lut_kernel<<<tables, kLutThreads, 0, (cudaStream_t)stream>>>(d_hist, base, len, d_windows,
                                                                 levels, clip_limit, d_luts);
    DH_TRY(cudaGetLastError(), "equalization table kernel");
    return 0;
}

int dh_lut_apply_cuda(const void *d_data, int is_signed, size_t slice_len, size_t slices,
                      const uint16_t *d_luts, int per_slice, int32_t base, uint32_t len,
                      uint16_t *d_out, void *stream, char *msg, size_t msg_len)
{
    size_t n = slice_len * slices;
    if (n == 0)
        return 0;
    int device = 0, sms = 0;
    DH_TRY(cudaGetDevice(&device), "cudaGetDevice");
    DH_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "SM count");
    size_t blocks = (n + 255) / 256, cap = (size_t)sms * 8;
    if (blocks > cap)
        blocks = cap;
    if (is_signed)
        apply_kernel<<<(unsigned)blocks, 256, 0, (cudaStream_t)stream>>>(
            (const int16_t *)d_data, slice_len, n, d_luts, per_slice, base, len, d_out);
    else
        apply_kernel<<<(unsigned)blocks, 256, 0, (cudaStream_t)stream>>>(
            (const uint16_t *)d_data, slice_len, n, d_luts, per_slice, base, len, d_out);
    DH_TRY(cudaGetLastError(), "table application kernel");
    return 0;
}

void dh_eq_cuda_free(dh_eq_cuda *s)
{
    if (!s)
        return;
    cudaFree(s->d_data);
    cudaFree(s->d_hist);
    cudaFree(s->d_luts);
    cudaFree(s->d_out);
    cudaFree(s->d_windows);
    if (s->stream)
        cudaStreamDestroy(s->stream);
    free(s);
}

int dh_eq_cuda_begin(const void *data, int is_signed, size_t slice_len, size_t slices,
                     int per_slice, int32_t base, uint32_t len, dh_eq_cuda **out, char *msg,
                     size_t msg_len)
{
    *out = nullptr;
    dh_eq_cuda *s = (dh_eq_cuda *)calloc(1, sizeof *s);
    if (!s) {
        snprintf(msg, msg_len, "out of memory");
        return -1;
    }
    s->is_signed = is_signed;
    s->per_slice = per_slice;
    s->slice_len = slice_len;
    s->slices = slices;
    s->n = slice_len * slices;
    s->base = base;
    s->len = len;
    s->tables = per_slice ? (uint32_t)slices : 1;
    cudaError_t e = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking);
    if (e == cudaSuccess)
        e = cudaMalloc(&s->d_data, s->n * 2);
    if (e == cudaSuccess)
        e = cudaMalloc((void **)&s->d_hist, (size_t)s->tables * (len + 2) * sizeof(uint64_t));
    if (e == cudaSuccess)
        e = cudaMalloc((void **)&s->d_luts, (size_t)s->tables * len * sizeof(uint16_t));
    if (e == cudaSuccess)
        e = cudaMalloc((void **)&s->d_out, s->n * sizeof(uint16_t));
    if (e == cudaSuccess)
        e = cudaMalloc((void **)&s->d_windows, s->tables * sizeof(dh_eq_window));
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(s->d_data, data, s->n * 2, cudaMemcpyHostToDevice, s->stream);
    if (e != cudaSuccess) {
        dh_eq_cuda_free(s);
        return cuda_fail(e, "allocating and uploading the volume", msg, msg_len);
    }
    dh_bin_map map;
    dh_eq_bin_map_init(&map, base, len);
    if (dh_hist_cuda_device(s->d_data, is_signed, slice_len, slices, per_slice, &map, s->d_hist,
                            s->stream, msg, msg_len) != 0) {
        dh_eq_cuda_free(s);
        return -1;
    }
    *out = s;
    return 0;
}

int dh_eq_cuda_histograms(dh_eq_cuda *s, uint64_t *hist, char *msg, size_t msg_len)
{
    DH_TRY(cudaMemcpyAsync(hist, s->d_hist, (size_t)s->tables * (s->len + 2) * sizeof(uint64_t),
                           cudaMemcpyDeviceToHost, s->stream),
           "copying the histograms");
    DH_TRY(cudaStreamSynchronize(s->stream), "histograms");
    return 0;
}

int dh_eq_cuda_equalize(dh_eq_cuda *s, const dh_eq_window *windows, uint32_t levels,
                        double clip_limit, char *msg, size_t msg_len)
{
    DH_TRY(cudaMemcpyAsync(s->d_windows, windows, s->tables * sizeof(dh_eq_window),
                           cudaMemcpyHostToDevice, s->stream),
           "uploading the windows");
    /* The windows live in pageable host memory the caller may free: wait for the copy. */
    DH_TRY(cudaStreamSynchronize(s->stream), "uploading the windows");
    return dh_eq_lut_build_cuda(s->d_hist, s->tables, s->base, s->len, s->d_windows, levels,
                                clip_limit, s->d_luts, s->stream, msg, msg_len);
}

int dh_eq_cuda_set_tables(dh_eq_cuda *s, const uint16_t *luts, char *msg, size_t msg_len)
{
    DH_TRY(cudaMemcpyAsync(s->d_luts, luts, (size_t)s->tables * s->len * sizeof(uint16_t),
                           cudaMemcpyHostToDevice, s->stream),
           "uploading the tables");
    DH_TRY(cudaStreamSynchronize(s->stream), "uploading the tables");
    return 0;
}

int dh_eq_cuda_finish(dh_eq_cuda *s, uint16_t *out, uint16_t *luts, char *msg, size_t msg_len)
{
    if (dh_lut_apply_cuda(s->d_data, s->is_signed, s->slice_len, s->slices, s->d_luts,
                          s->per_slice, s->base, s->len, s->d_out, s->stream, msg, msg_len) != 0)
        return -1;
    DH_TRY(cudaMemcpyAsync(out, s->d_out, s->n * sizeof(uint16_t), cudaMemcpyDeviceToHost,
                           s->stream),
           "copying the output");
    DH_TRY(cudaMemcpyAsync(luts, s->d_luts, (size_t)s->tables * s->len * sizeof(uint16_t),
                           cudaMemcpyDeviceToHost, s->stream),
           "copying the tables");
    DH_TRY(cudaStreamSynchronize(s->stream), "equalization");
    return 0;
}

} // extern "C"
