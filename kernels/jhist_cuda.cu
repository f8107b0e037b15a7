/*
 * jhist_cuda.cu: joint histograms and mutual-information scores on the GPU (jhist_cuda.cuh), the
 * twin of jhist_cpu.c + mi_scores.c. One evaluation of K moving images is, on one stream:
 *   1. (only without an explicit moving range) one block per image finds its min..max over the
 *      valid pixels;
 *   2. a memset of the K joint histograms (a graph node like any other);
 *   3. the counting kernel: a grid of (blocks per image) x K; each block counts chunks of at most
 *      CHUNK pixels into 16-bit counters packed two per word in shared memory (256 x 256 bins fit
 *      in 128 KB), then adds the non-zero ones to the global uint32 histogram. A chunk is smaller
 *      than 65536, so no 16-bit counter can wrap however large the background bin is;
 *   4. the score kernel: one 256-thread block per image: integer row and column sums, then the
 *      entropy terms summed in mi_scores.h's lane-and-tree order with its logarithm, so the
 *      record equals dh_mi_scores_from_joint's bit for bit.
 * Counts are integers added by atomics, so any scheduling gives the same histogram. Nothing here
 * allocates or synchronizes during an evaluation (the host path excepted).
 */
#include <cuda_runtime.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "jhist.h"
#include "jhist_cuda.cuh"
#include "mi_scores.h"

namespace {

constexpr int COUNT_THREADS = 512;
constexpr uint32_t CHUNK = 32768; /* pixels per block between flushes: < 65536 per counter */
constexpr int SCORE_THREADS = DH_MI_LANES;
constexpr int RANGE_THREADS = 512;

int fail(char *msg, size_t len, const char *what, cudaError_t err)
{
    if (msg && len)
        snprintf(msg, len, "%s: %s", what, cudaGetErrorString(err));
    return -1;
}

struct range_args {
    const uint16_t *moving;
    size_t stride;
    const uint8_t *valid;
    size_t valid_stride;
    size_t n;
    int is_signed;
    int2 *ranges;
};

/* Min..max of image blockIdx.x over its valid pixels ({0, 0} when none is valid: then nothing
 * counts anyway). */
__global__ void range_kernel(range_args a)
{
    __shared__ int smin[RANGE_THREADS], smax[RANGE_THREADS];
    const uint16_t *img = a.moving + blockIdx.x * a.stride;
    const uint8_t *val = a.valid ? a.valid + blockIdx.x * a.valid_stride : nullptr;
    int mn = INT_MAX, mx = INT_MIN;
    for (size_t i = threadIdx.x; i < a.n; i += blockDim.x) {
        if (val && !val[i])
            continue;
        int v = a.is_signed ? (int)(int16_t)img[i] : (int)img[i];
        mn = min(mn, v);
        mx = max(mx, v);
    }
    smin[threadIdx.x] = mn;
    smax[threadIdx.x] = mx;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) {
            smin[threadIdx.x] = min(smin[threadIdx.x], smin[threadIdx.x + s]);
            smax[threadIdx.x] = max(smax[threadIdx.x], smax[threadIdx.x + s]);
        }
        __syncthreads();
    }
    if (threadIdx.x == 0)
        a.ranges[blockIdx.x] = smin[0] > smax[0] ? make_int2(0, 0) : make_int2(smin[0], smax[0]);
}

struct count_args {
    const uint16_t *fixed_bins;
    const uint16_t *moving;
    size_t stride;
    const uint8_t *valid;
    size_t valid_stride;
    size_t n;
    int is_signed;
    uint32_t bins_fixed, bins_moving;
    int has_range;
    int32_t lo, hi;      /* when has_range */
    const int2 *ranges;  /* otherwise, per image */
    uint32_t *joint;     /* K histograms of bins_fixed * bins_moving, zeroed */
};

__global__ void __launch_bounds__(COUNT_THREADS) count_kernel(count_args a)
{
    extern __shared__ uint32_t packed[]; /* cell c: half (c & 1) of word c >> 1 */
    const uint32_t k = blockIdx.y;
    const uint32_t cells = a.bins_fixed * a.bins_moving, words = (cells + 1) / 2;
    const uint16_t *img = a.moving + k * a.stride;
    const uint8_t *val = a.valid ? a.valid + k * a.valid_stride : nullptr;
    uint32_t *out = a.joint + (size_t)k * cells;
    int32_t lo = a.lo, hi = a.hi;
    if (!a.has_range) {
        int2 r = a.ranges[k];
        lo = r.x;
        hi = r.y;
    }
    const uint32_t bm = a.bins_moving, width = (uint32_t)(hi - lo + 1);
    const uint32_t magic = width == 1 ? 0u : (uint32_t)((1ull << 32) / width);

    for (size_t start = (size_t)blockIdx.x * CHUNK; start < a.n;
         start += (size_t)gridDim.x * CHUNK) {
        for (uint32_t w = threadIdx.x; w < words; w += blockDim.x)
            packed[w] = 0;
        __syncthreads();
        size_t end = start + CHUNK < a.n ? start + CHUNK : a.n;
        for (size_t i = start + threadIdx.x; i < end; i += blockDim.x) {
            uint32_t f = a.fixed_bins[i];
            if (f == DH_JHIST_SKIP || (val && !val[i]))
                continue;
            int32_t v = a.is_signed ? (int32_t)(int16_t)img[i] : (int32_t)img[i];
            uint32_t m = dh_jaxis_bin_fast(bm, lo, width, magic, v);
            if (m == DH_JHIST_SKIP)
                continue;
            uint32_t c = f * bm + m;
            atomicAdd(&packed[c >> 1], 1u << ((c & 1u) * 16u));
        }
        __syncthreads();
        for (uint32_t w = threadIdx.x; w < words; w += blockDim.x) {
            uint32_t x = packed[w];
            if (x & 0xFFFFu)
                atomicAdd(&out[2 * w], x & 0xFFFFu);
            if (x >> 16)
                atomicAdd(&out[2 * w + 1], x >> 16);
        }
        __syncthreads();
    }
}

struct score_args {
    const uint32_t *joint;
    uint32_t bins_fixed, bins_moving;
    uint64_t fixed_valid;
    double fixed_sum;
    int log2;
    int has_range;
    int32_t lo, hi;
    const int2 *ranges;
    dh_mi_values *out;
};

/* The tree half of mi_scores.h's order over lane[0..255]. */
__device__ double lane_tree(double *lane)
{
    __syncthreads();
    for (int s = DH_MI_LANES / 2; s >= 1; s >>= 1) {
        if ((int)threadIdx.x < s)
            lane[threadIdx.x] = __dadd_rn(lane[threadIdx.x], lane[threadIdx.x + s]);
        __syncthreads();
    }
    double r = lane[0];
    __syncthreads();
    return r;
}

__global__ void __launch_bounds__(SCORE_THREADS) score_kernel(score_args a)
{
    __shared__ double lane[DH_MI_LANES];
    __shared__ unsigned long long total;
    const uint32_t k = blockIdx.x, t = threadIdx.x;
    const uint32_t bf = a.bins_fixed, bm = a.bins_moving;
    const uint32_t *h = a.joint + (size_t)k * bf * bm;
    uint64_t row = 0, col = 0;
    if (t < bf)
        for (uint32_t m = 0; m < bm; m++)
            row += h[t * bm + m];
    if (t < bm)
        for (uint32_t f = 0; f < bf; f++)
            col += h[f * bm + t];
    if (t == 0)
        total = 0;
    __syncthreads();
    if (t < bf)
        atomicAdd(&total, (unsigned long long)row);
    __syncthreads();
    const uint64_t n = total;
    const double ln_n = n ? dh_mi_log((double)n) : 0.0;

    double sf;
    if (n == a.fixed_valid) {
        sf = a.fixed_sum;
    } else {
        lane[t] = t < bf ? __dadd_rn(0.0, dh_mi_term(row, n, ln_n)) : 0.0;
        sf = lane_tree(lane);
    }
    lane[t] = t < bm ? __dadd_rn(0.0, dh_mi_term(col, n, ln_n)) : 0.0;
    double sm = lane_tree(lane);
    double acc = 0.0;
    for (uint32_t i = t; i < bf * bm; i += DH_MI_LANES)
        acc = __dadd_rn(acc, dh_mi_term(h[i], n, ln_n));
    lane[t] = acc;
    double sj = lane_tree(lane);
    if (t == 0) {
        dh_mi_values r;
        dh_mi_finish(n, sf, sm, sj, a.log2, &r);
        if (a.has_range) {
            r.moving_lo = a.lo;
            r.moving_hi = a.hi;
        } else {
            r.moving_lo = a.ranges[k].x;
            r.moving_hi = a.ranges[k].y;
        }
        r.reserved = 0;
        a.out[k] = r;
    }
}

} // namespace

struct dh_jhist_gpu {
    size_t n;
    uint32_t bins_fixed, bins_moving, max_batch;
    uint64_t fixed_valid;
    double fixed_sum;
    int blocks_per_image; /* of the counting kernel */
    size_t shared_bytes;
    uint16_t *d_fixed_bins;
    uint32_t *d_joint;
    int2 *d_ranges;
    /* host path staging, grown on demand */
    void *d_stage;
    size_t stage_bytes;
};

extern "C" int dh_jhist_gpu_create(const uint16_t *fixed_bins, size_t n, uint32_t bins_fixed,
                                   uint32_t bins_moving, uint32_t max_batch, uint64_t fixed_valid,
                                   double fixed_sum, dh_jhist_gpu **out, char *msg,
                                   size_t msg_len)
{
    *out = nullptr;
    dh_jhist_gpu *g = new (std::nothrow) dh_jhist_gpu();
    if (!g) {
        snprintf(msg, msg_len, "out of host memory");
        return -1;
    }
    g->n = n;
    g->bins_fixed = bins_fixed;
    g->bins_moving = bins_moving;
    g->max_batch = max_batch;
    g->fixed_valid = fixed_valid;
    g->fixed_sum = fixed_sum;
    size_t cells = (size_t)bins_fixed * bins_moving;
    g->shared_bytes = (cells + 1) / 2 * sizeof(uint32_t);
    cudaError_t err;
    int dev = 0, sms = 0;
    if ((err = cudaGetDevice(&dev)) != cudaSuccess ||
        (err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess ||
        (err = cudaFuncSetAttribute(count_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    (int)g->shared_bytes)) != cudaSuccess) {
        delete g;
        return fail(msg, msg_len, "querying the device", err);
    }
    /* Enough blocks per image to fill the GPU once for one image, never more than it has
     * chunks; a batch multiplies the grid by K. */
    size_t chunks = (n + CHUNK - 1) / CHUNK;
    int per_sm = g->shared_bytes > 100 * 1024 ? 1 : 2;
    size_t want = (size_t)sms * per_sm;
    g->blocks_per_image = (int)(chunks < want ? chunks : want);
    if ((err = cudaMalloc(&g->d_fixed_bins, n * sizeof(uint16_t))) != cudaSuccess ||
        (err = cudaMalloc(&g->d_joint, (size_t)max_batch * cells * sizeof(uint32_t))) !=
            cudaSuccess ||
        (err = cudaMalloc(&g->d_ranges, (size_t)max_batch * sizeof(int2))) != cudaSuccess ||
        (err = cudaMemcpy(g->d_fixed_bins, fixed_bins, n * sizeof(uint16_t),
                          cudaMemcpyHostToDevice)) != cudaSuccess ||
        (err = cudaMemset(g->d_joint, 0, (size_t)max_batch * cells * sizeof(uint32_t))) !=
            cudaSuccess) {
        dh_jhist_gpu_free(g);
        return fail(msg, msg_len, "allocating the fixed image on the GPU", err);
    }
    *out = g;
    return 0;
}

extern "C" void dh_jhist_gpu_free(dh_jhist_gpu *g)
{
    if (!g)
        return;
    cudaFree(g->d_fixed_bins);
    cudaFree(g->d_joint);
    cudaFree(g->d_ranges);
    cudaFree(g->d_stage);
    delete g;
}

extern "C" int dh_jhist_gpu_evaluate(dh_jhist_gpu *g, const void *d_moving, int is_signed,
                                     size_t stride, uint32_t count, const uint8_t *d_valid,
                                     size_t valid_stride, int has_range, int32_t lo, int32_t hi,
                                     int log2, dh_mi_values *d_out, void *stream, char *msg,
                                     size_t msg_len)
{
    cudaStream_t s = (cudaStream_t)stream;
    const size_t cells = (size_t)g->bins_fixed * g->bins_moving;
    cudaError_t err;
    if (!has_range) {
        range_args ra{(const uint16_t *)d_moving, stride, d_valid, valid_stride, g->n, is_signed,
                      g->d_ranges};
        range_kernel<<<count, RANGE_THREADS, 0, s>>>(ra);
        if ((err = cudaGetLastError()) != cudaSuccess)
            return fail(msg, msg_len, "launching the range kernel", err);
    }
    if ((err = cudaMemsetAsync(g->d_joint, 0, (size_t)count * cells * sizeof(uint32_t), s)) !=
        cudaSuccess)
        return fail(msg, msg_len, "clearing the joint histograms", err);
    count_args ca{g->d_fixed_bins, (const uint16_t *)d_moving, stride, d_valid, valid_stride,
                  g->n, is_signed, g->bins_fixed, g->bins_moving, has_range, lo, hi,
                  g->d_ranges, g->d_joint};
    dim3 grid((unsigned)g->blocks_per_image, count);
    count_kernel<<<grid, COUNT_THREADS, g->shared_bytes, s>>>(ca);
    if ((err = cudaGetLastError()) != cudaSuccess)
        return fail(msg, msg_len, "launching the joint-histogram kernel", err);
    score_args sa{g->d_joint, g->bins_fixed, g->bins_moving, g->fixed_valid, g->fixed_sum, log2,
                  has_range, lo, hi, g->d_ranges, d_out};
    score_kernel<<<count, SCORE_THREADS, 0, s>>>(sa);
    if ((err = cudaGetLastError()) != cudaSuccess)
        return fail(msg, msg_len, "launching the score kernel", err);
    return 0;
}

extern "C" int dh_jhist_gpu_evaluate_host(dh_jhist_gpu *g, const void *moving, int is_signed,
                                          size_t stride, uint32_t count, const uint8_t *valid,
                                          size_t valid_stride, int has_range, int32_t lo,
                                          int32_t hi, int log2, dh_mi_values *out, char *msg,
                                          size_t msg_len)
{
    /* Packed staging: images back to back (stride n), masks after them, records last. */
    size_t img_bytes = (size_t)count * g->n * sizeof(uint16_t);
    size_t mask_bytes = valid ? (size_t)count * g->n : 0;
    size_t rec_off = (img_bytes + mask_bytes + 15) / 16 * 16;
    size_t need = rec_off + (size_t)count * sizeof(dh_mi_values);
    cudaError_t err;
    if (need > g->stage_bytes) {
        cudaFree(g->d_stage);
        g->d_stage = nullptr;
        g->stage_bytes = 0;
        if ((err = cudaMalloc(&g->d_stage, need)) != cudaSuccess)
            return fail(msg, msg_len, "allocating staging memory", err);
        g->stage_bytes = need;
    }
    char *base = (char *)g->d_stage;
    uint16_t *d_img = (uint16_t *)base;
    uint8_t *d_mask = valid ? (uint8_t *)(base + img_bytes) : nullptr;
    dh_mi_values *d_out = (dh_mi_values *)(base + rec_off);
    if ((err = cudaMemcpy2D(d_img, g->n * sizeof(uint16_t), moving,
                            (count > 1 ? stride : g->n) * sizeof(uint16_t),
                            g->n * sizeof(uint16_t), count, cudaMemcpyHostToDevice)) !=
        cudaSuccess)
        return fail(msg, msg_len, "copying the moving images", err);
    if (valid && (err = cudaMemcpy2D(d_mask, g->n, valid, count > 1 ? valid_stride : g->n, g->n,
                                     count, cudaMemcpyHostToDevice)) != cudaSuccess)
        return fail(msg, msg_len, "copying the validity masks", err);
    if (dh_jhist_gpu_evaluate(g, d_img, is_signed, g->n, count, d_mask, g->n, has_range, lo, hi,
                              log2, d_out, nullptr, msg, msg_len))
        return -1;
    if ((err = cudaMemcpy(out, d_out, (size_t)count * sizeof(dh_mi_values),
                          cudaMemcpyDeviceToHost)) != cudaSuccess)
        return fail(msg, msg_len, "evaluating", err);
    return 0;
}

extern "C" int dh_jhist_gpu_read_joint(dh_jhist_gpu *g, uint32_t item, uint32_t *counts,
                                       char *msg, size_t msg_len)
{
    size_t cells = (size_t)g->bins_fixed * g->bins_moving;
    cudaError_t err;
    if ((err = cudaDeviceSynchronize()) != cudaSuccess ||
        (err = cudaMemcpy(counts, g->d_joint + item * cells, cells * sizeof(uint32_t),
                          cudaMemcpyDeviceToHost)) != cudaSuccess)
        return fail(msg, msg_len, "reading the joint histogram", err);
    return 0;
}
