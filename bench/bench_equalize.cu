// SPDX-License-Identifier: MIT
/*
 * bench_equalize.cu: equalization of a device-resident volume against the memory it must move
 * (docs/performance.md "Equalization").
 *
 * Data, made on the device: 512^3 CT-like 12-bit samples (256 MiB; the mix of
 * ../shared/docs/gpu.md: 40% air near 24, 15% fat near 924, 30% soft tissue near 1064, 15% bone
 * around 1700), far beyond L2. Equalization runs through the library's own device path, the
 * launchers dh_equalize uses on the GPU (plugin/lib/equalize.c -> kernels/equalize_cuda.cu):
 * dh_hist_cuda_device (one bin per stored value) -> dh_eq_lut_build_cuda -> dh_lut_apply_cuda,
 * per volume (one table) and per slice (512 tables), all stages enqueued on one stream.
 *
 * The target: three passes over the data at the read ceiling (histogram read, then table read of
 * the samples plus write of the output: 3 x 256 MiB), the ceiling being a read-only kernel with
 * 16-byte loads timed in the same run; equalization within 1.15x of that. A copy kernel (16-byte
 * loads and stores) is timed too: it is what the application stage could reach at best.
 *
 * Every figure is the median of event-timed repetitions after warm-up. Each configuration is
 * checked once against the CPU twin (dh_hist_cpu, dh_eq_lut_build, dh_lut_apply_cpu): tables and
 * outputs must be equal, and so must the application stage run on pointers off the 16-byte grid
 * with odd slice lengths (its scalar heads and tails), else the program exits 1.
 *
 * Usage: bench_equalize [reps]   (default 50)
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "bench_common.cuh"
#include "equalize_cpu.h"
#include "equalize_cuda.h"
#include "hist.h"
#include "hist_cuda.h"

/* The library's launchers return -1 with a message; a benchmark can only stop. */
#define LIB(call)                                                                                  \
    do {                                                                                           \
        if ((call) != 0) {                                                                         \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, msg);                    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static const size_t SLICE = 512 * 512, SLICES = 512, N = SLICE * SLICES;
static const uint32_t BITS = 12;
static int g_reps = 50;
static char msg[512];

/* CT-like tissue mix; the bone share drifts with the slice so per-slice tables differ. */
__global__ void fill_ct_kernel(uint16_t *d, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint32_t z = (uint32_t)(i / SLICE);
        d[i] = bench_ct_sample(i, 85 + (z * 10) / SLICES); /* 15% .. 5% bone along the volume */
    }
}

/* The copy ceiling: 16-byte loads and stores, what a table application could reach at best. */
__global__ void copy_kernel(const uint4 *in, uint4 *out, size_t nv)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < nv; i += stride)
        __stcs(out + i, __ldcs(in + i));
}

/* Median time (ms) of fn() over g_reps runs on `s`. */
template <class F> static double median_ms(cudaStream_t s, F fn)
{
    return bench_median_ms(s, g_reps, [&](int) { fn(); });
}

static double gbs(double bytes, double ms)
{
    return bytes / (ms * 1e-3) / 1e9;
}

struct config {
    const char *name;
    int per_slice;
    double clip_limit;
};

/* Device buffers of one configuration, sized for the per-slice case. */
struct buffers {
    const uint16_t *d_in;
    uint64_t *d_hist;
    uint16_t *d_luts, *d_out;
    dh_eq_window *d_windows;
};

/* The three stages exactly as dh_equalize enqueues them on the GPU. */
static void stage_hist(const buffers &b, const config &c, const dh_bin_map &map, cudaStream_t s)
{
    LIB(dh_hist_cuda_device(b.d_in, 0, SLICE, SLICES, c.per_slice, &map, b.d_hist, s, msg,
                            sizeof msg));
}

static void stage_lut(const buffers &b, const config &c, int32_t base, uint32_t len,
                      uint32_t levels, cudaStream_t s)
{
    uint32_t tables = c.per_slice ? (uint32_t)SLICES : 1;
    LIB(dh_eq_lut_build_cuda(b.d_hist, tables, base, len, b.d_windows, levels, c.clip_limit,
                             b.d_luts, s, msg, sizeof msg));
}

static void stage_apply(const buffers &b, const config &c, int32_t base, uint32_t len,
                        cudaStream_t s)
{
    LIB(dh_lut_apply_cuda(b.d_in, 0, SLICE, SLICES, b.d_luts, c.per_slice, base, len, b.d_out, s,
                          msg, sizeof msg));
}

/* GPU tables and output against the CPU twin on the same samples; 0 when equal. */
static int verify(const buffers &b, const config &c, const uint16_t *h_in, int32_t base,
                  uint32_t len, uint32_t levels, cudaStream_t s)
{
    uint32_t tables = c.per_slice ? (uint32_t)SLICES : 1;
    dh_bin_map map;
    dh_eq_bin_map_init(&map, base, len);
    std::vector<uint64_t> hist((size_t)tables * (len + 2));
    std::vector<uint16_t> cpu_lut((size_t)tables * len), gpu_lut(cpu_lut.size());
    std::vector<uint16_t> cpu_out(N), gpu_out(N);
    if (dh_hist_cpu(h_in, 0, SLICE, SLICES, c.per_slice, &map, 0, hist.data()) != 0) {
        fprintf(stderr, "dh_hist_cpu failed\n");
        return -1;
    }
    dh_eq_window whole = {base, base + (int32_t)len - 1};
    for (uint32_t t = 0; t < tables; t++)
        if (dh_eq_lut_build(hist.data() + (size_t)t * (len + 2), base, len, whole, levels,
                            c.clip_limit, cpu_lut.data() + (size_t)t * len) != 0) {
            fprintf(stderr, "dh_eq_lut_build failed\n");
            return -1;
        }
    if (dh_lut_apply_cpu(h_in, 0, SLICE, SLICES, cpu_lut.data(), c.per_slice, base, len, 0,
                         cpu_out.data()) != 0) {
        fprintf(stderr, "dh_lut_apply_cpu failed\n");
        return -1;
    }
    CK(cudaMemcpyAsync(gpu_lut.data(), b.d_luts, gpu_lut.size() * 2, cudaMemcpyDeviceToHost, s));
    CK(cudaMemcpyAsync(gpu_out.data(), b.d_out, N * 2, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    if (memcmp(cpu_lut.data(), gpu_lut.data(), cpu_lut.size() * 2) != 0) {
        fprintf(stderr, "%s: GPU tables differ from the CPU twin\n", c.name);
        return -1;
    }
    for (size_t i = 0; i < N; i++)
        if (cpu_out[i] != gpu_out[i]) {
            fprintf(stderr, "%s: output %zu is %u on the GPU, %u on the CPU\n", c.name, i,
                    gpu_out[i], cpu_out[i]);
            return -1;
        }
    /* Equalization must spread the values: a run that left everything 0 would also "match". */
    uint16_t hi = *std::max_element(gpu_out.begin(), gpu_out.end());
    if (hi != levels - 1) {
        fprintf(stderr, "%s: highest output %u, expected %u\n", c.name, hi, levels - 1);
        return -1;
    }
    /* The application stage on pointers and sizes off the 16-byte grid: input one sample in,
     * output three (misaligned to each other), slices of SLICE - 5 samples (per slice) or one
     * odd run (per volume); the scalar heads and tails must agree with the CPU too. */
    {
        const size_t off_in = 1, off_out = 3, slice_len = c.per_slice ? SLICE - 5 : N - 11;
        const size_t slices = c.per_slice ? SLICES - 1 : 1, m = slice_len * slices;
        CK(cudaMemsetAsync(b.d_out, 0, N * 2, s));
        LIB(dh_lut_apply_cuda(b.d_in + off_in, 0, slice_len, slices, b.d_luts, c.per_slice, base,
                              len, b.d_out + off_out, s, msg, sizeof msg));
        CK(cudaMemcpyAsync(gpu_out.data(), b.d_out + off_out, m * 2, cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
        if (dh_lut_apply_cpu(h_in + off_in, 0, slice_len, slices, cpu_lut.data(), c.per_slice,
                             base, len, 0, cpu_out.data()) != 0) {
            fprintf(stderr, "dh_lut_apply_cpu failed\n");
            return -1;
        }
        if (memcmp(cpu_out.data(), gpu_out.data(), m * 2) != 0) {
            fprintf(stderr, "%s: unaligned application differs from the CPU twin\n", c.name);
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        g_reps = atoi(argv[1]) > 0 ? atoi(argv[1]) : g_reps;
    const cudaDeviceProp prop = bench_device();
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    printf("device: %s, %d SMs, %.0f MiB L2, driver API %d, runtime %d; %zu samples (%zu MiB), "
           "median of %d\n",
           prop.name, prop.multiProcessorCount, prop.l2CacheSize / 1048576.0, driver, runtime, N,
           N * 2 >> 20, g_reps);

    int32_t base;
    uint32_t len;
    dh_eq_table_range(BITS, 0, &base, &len);
    const uint32_t levels = 1u << BITS;
    dh_bin_map map;
    dh_eq_bin_map_init(&map, base, len);

    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    uint16_t *d_in;
    uint32_t *d_sink;
    buffers b;
    CK(cudaMalloc(&d_in, N * 2));
    CK(cudaMalloc(&d_sink, 4));
    CK(cudaMalloc(&b.d_hist, SLICES * (len + 2) * sizeof(uint64_t)));
    CK(cudaMalloc(&b.d_luts, SLICES * len * sizeof(uint16_t)));
    CK(cudaMalloc(&b.d_out, N * 2));
    CK(cudaMalloc(&b.d_windows, SLICES * sizeof(dh_eq_window)));
    b.d_in = d_in;
    fill_ct_kernel<<<prop.multiProcessorCount * 8, 256, 0, s>>>(d_in, N);
    CK(cudaGetLastError());
    /* dh_equalize's default window: every stored value (the same for each table). */
    std::vector<dh_eq_window> windows(SLICES, dh_eq_window{base, base + (int32_t)len - 1});
    CK(cudaMemcpyAsync(b.d_windows, windows.data(), SLICES * sizeof(dh_eq_window),
                       cudaMemcpyHostToDevice, s));
    std::vector<uint16_t> h_in(N);
    CK(cudaMemcpyAsync(h_in.data(), d_in, N * 2, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));

    const int grid = prop.multiProcessorCount * 8;
    const size_t nv = N * 2 / sizeof(uint4);
    double t_read = median_ms(s, [&] {
        bench_read_kernel<<<grid, 256, 0, s>>>((const uint4 *)d_in, nv, d_sink);
    });
    double t_copy = median_ms(s, [&] {
        copy_kernel<<<grid, 256, 0, s>>>((const uint4 *)d_in, (uint4 *)b.d_out, nv);
    });
    const double bytes = N * 2.0, target = 3 * t_read;
    printf("read ceiling: %.4f ms (%.0f GB/s); copy: %.4f ms (%.0f GB/s read + write); "
           "target 3 x read = %.4f ms, within 1.15x = %.4f ms\n\n",
           t_read, gbs(bytes, t_read), t_copy, gbs(2 * bytes, t_copy), target, 1.15 * target);

    static const config configs[] = {
        {"volume", 0, 0},
        {"slice", 1, 0},
        {"volume clip 2", 0, 2},
        {"slice clip 2", 1, 2},
    };
    int failed = 0;
    printf("| mode | histogram ms | tables ms | apply ms | total ms | GB/s (3 x 256 MiB) | "
           "total / 3 x read | target 1.15x | GPU == CPU |\n");
    printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (const config &c : configs) {
        double th = median_ms(s, [&] { stage_hist(b, c, map, s); });
        double tl = median_ms(s, [&] { stage_lut(b, c, base, len, levels, s); });
        double ta = median_ms(s, [&] { stage_apply(b, c, base, len, s); });
        double tt = median_ms(s, [&] {
            stage_hist(b, c, map, s);
            stage_lut(b, c, base, len, levels, s);
            stage_apply(b, c, base, len, s);
        });
        /* The buffers now hold the last full run's tables and output. */
        int ok = verify(b, c, h_in.data(), base, len, levels, s) == 0;
        failed |= !ok;
        double ratio = tt / target;
        printf("| %s | %.4f | %.4f | %.4f | %.4f | %.0f | %.3fx | %s | %s |\n", c.name, th, tl,
               ta, tt, gbs(3 * bytes, tt), ratio, ratio <= 1.15 ? "met" : "**missed**",
               ok ? "equal" : "DIFFERENT");
        fflush(stdout);
    }
    CK(cudaFree(d_in));
    CK(cudaFree(d_sink));
    CK(cudaFree(b.d_hist));
    CK(cudaFree(b.d_luts));
    CK(cudaFree(b.d_out));
    CK(cudaFree(b.d_windows));
    CK(cudaStreamDestroy(s));
    if (failed)
        fprintf(stderr, "bench_equalize: GPU output differs from the CPU twin\n");
    return failed ? 1 : 0;
}
