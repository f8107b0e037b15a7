// SPDX-License-Identifier: MIT
/*
 * bench_common.cuh: what the GPU benchmarks (bench_hist, bench_equalize, bench_mi) share: CK,
 * which stops the program on a CUDA error; the current device's properties; the CT-like 12-bit
 * sample made on the device (the mix of ../shared/docs/gpu.md); the read ceiling, a read-only
 * kernel with 16-byte loads; and the event-timed medians every figure is taken with. One copy of
 * each, so the benchmarks measure the same way and their figures stay comparable.
 */
#ifndef DH_BENCH_COMMON_CUH
#define DH_BENCH_COMMON_CUH

#include <cuda_runtime.h>

#include <algorithm>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <chrono>
#include <vector>

/* The exit status of a CUDA error; a benchmark that keeps 1 for "results differ" sets another
 * before including this header. */
#ifndef BENCH_CUDA_ERROR_EXIT
#define BENCH_CUDA_ERROR_EXIT 1
#endif

/* A benchmark has nobody to return an error to: report where and stop. */
#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                          \
                    cudaGetErrorString(e_));                                                       \
            exit(BENCH_CUDA_ERROR_EXIT);                                                           \
        }                                                                                          \
    } while (0)

/* The properties of the device the benchmark runs on (the current one). */
static inline cudaDeviceProp bench_device(void)
{
    int dev = 0;
    cudaDeviceProp prop;
    CK(cudaGetDevice(&dev));
    CK(cudaGetDeviceProperties(&prop, dev));
    return prop;
}

/* Hash of a sample index: the data depends on nothing but the index. */
__device__ static inline uint32_t bench_mix32(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return (uint32_t)x;
}

/* Roughly normal noise: the sum of four uniforms in [0, w], centred. */
__device__ static inline int32_t bench_noise(uint64_t i, uint32_t w)
{
    int32_t s = 0;
    for (int j = 0; j < 4; j++)
        s += (int32_t)(bench_mix32(i * 8 + j + 1) % (w + 1));
    return s - 2 * (int32_t)w;
}

/* Sample i of a CT-like 12-bit volume: 40% air near 24, 15% fat near 924, soft tissue near 1064
 * up to `soft_below` percent (85: 30% soft tissue, 15% bone), bone around 1700 above it. */
__device__ static inline uint16_t bench_ct_sample(uint64_t i, uint32_t soft_below)
{
    uint32_t p = bench_mix32(i) % 100;
    int32_t v = p < 40           ? 24 + bench_noise(i, 4)
                : p < 55         ? 924 + bench_noise(i, 10)
                : p < soft_below ? 1064 + bench_noise(i, 15)
                                 : 1700 + bench_noise(i, 150);
    return (uint16_t)(v < 0 ? 0 : v > 4095 ? 4095 : v);
}

/* The read ceiling: read everything with 16-byte loads, two in flight, keep one word. */
__global__ static void bench_read_kernel(const uint4 *v, size_t nv, uint32_t *sink)
{
    uint32_t acc = 0;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (; i + stride < nv; i += 2 * stride) {
        uint4 a = __ldcs(v + i), b = __ldcs(v + i + stride);
        acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w;
    }
    for (; i < nv; i += stride) {
        uint4 a = __ldcs(v + i);
        acc ^= a.x ^ a.y ^ a.z ^ a.w;
    }
    if (acc == 0x9e3779b9u)
        sink[0] = acc;
}

/* The middle element after sorting (the upper one of an even count). */
static inline double bench_median(std::vector<float> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

/* Median time (ms) of fn(i) over `reps` runs enqueued back to back on `s`, each between two
 * events, after five untimed runs. For kernels long enough that launch gaps do not count. */
template <class F> static double bench_median_ms(cudaStream_t s, int reps, F fn)
{
    for (int i = 0; i < 5; i++)
        fn(i);
    CK(cudaStreamSynchronize(s));
    std::vector<cudaEvent_t> ev(2 * reps);
    for (auto &e : ev)
        CK(cudaEventCreate(&e));
    for (int i = 0; i < reps; i++) {
        CK(cudaEventRecord(ev[2 * i], s));
        fn(i);
        CK(cudaEventRecord(ev[2 * i + 1], s));
    }
    CK(cudaStreamSynchronize(s));
    std::vector<float> t(reps);
    for (int i = 0; i < reps; i++)
        CK(cudaEventElapsedTime(&t[i], ev[2 * i], ev[2 * i + 1]));
    for (auto &e : ev)
        CK(cudaEventDestroy(e));
    return bench_median(t);
}

/* Median time (us) of fn() over `reps` runs on `s`, each alone: events around it and a wait for
 * its end before the next starts, so a short call is timed without the next one queued behind
 * it. `warm` untimed runs first. prep() runs before each, outside the events (e.g. the zeroing a
 * timed pass needs that the call it is part of does elsewhere). */
template <class P, class F>
static double bench_median_each_prepped_us(cudaStream_t s, int warm, int reps, P prep, F fn)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = 0; i < warm; i++) {
        prep();
        fn();
    }
    std::vector<float> t;
    for (int i = 0; i < reps; i++) {
        prep();
        CK(cudaEventRecord(a, s));
        fn();
        CK(cudaEventRecord(b, s));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms * 1000.0f);
    }
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return bench_median(t);
}

template <class F> static double bench_median_each_us(cudaStream_t s, int warm, int reps, F fn)
{
    return bench_median_each_prepped_us(s, warm, reps, [] {}, fn);
}

/* Median us of fn(i) followed by a wait for `s`, on the host clock (after 10 untimed): what a
 * caller that needs the result before going on sees. */
template <class F> static double bench_host_us(cudaStream_t s, int reps, F fn)
{
    std::vector<float> t;
    for (int i = 0; i < reps + 10; i++) {
        const auto t0 = std::chrono::steady_clock::now();
        fn(i);
        CK(cudaStreamSynchronize(s));
        const auto t1 = std::chrono::steady_clock::now();
        if (i >= 10)
            t.push_back(std::chrono::duration<float, std::micro>(t1 - t0).count());
    }
    return bench_median(t);
}

/* The floor under bench_host_us: an empty kernel launched, and captured as a one-node graph and
 * replayed, each timed the same way. */
static void bench_launch_floor(cudaStream_t s, int reps, double *kernel_us, double *graph_us)
{
    *kernel_us = bench_host_us(
        s, reps, [&](int) { bench_read_kernel<<<1, 32, 0, s>>>(nullptr, 0, nullptr); });
    cudaGraph_t gr;
    cudaGraphExec_t ex;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    bench_read_kernel<<<1, 32, 0, s>>>(nullptr, 0, nullptr);
    CK(cudaStreamEndCapture(s, &gr));
    CK(cudaGraphInstantiate(&ex, gr, 0));
    *graph_us = bench_host_us(s, reps, [&](int) { CK(cudaGraphLaunch(ex, s)); });
    CK(cudaGraphExecDestroy(ex));
    CK(cudaGraphDestroy(gr));
}

#endif /* DH_BENCH_COMMON_CUH */
