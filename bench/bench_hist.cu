// SPDX-License-Identifier: MIT
/*
 * bench_hist.cu: the GPU histogram side by side with CUB and the memory ceiling, on the same
 * device buffers in one run (docs/performance.md records the results).
 *
 * Data (made on the device, 512^3 16-bit samples = 256 MiB, far beyond L2): CT-like 12-bit
 * (the mix of ../shared/docs/gpu.md: 40% air near 24, 15% fat near 924, 30% soft tissue near
 * 1064, 15% bone around 1700), uniform 16-bit, and a constant volume. For each: the read-only
 * ceiling kernel (16-byte loads), CUB DeviceHistogram::HistogramEven, and dh_hist_cuda_device
 * (output zeroing included) at its default shape and a few others (wide counters in blocks of
 * 512 or 1024 threads, guarded packed 16-bit counters with and without count pairs, and
 * thread-block clusters of 2 blocks at every bin count; each shape's counts checked). Then
 * per-slice mode against the whole volume, and one 512x512 slice at 4096 bins (zeroing
 * included). Every figure is the median of event-timed repetitions after warm-up; GB/s counts
 * input bytes (2 per sample).
 * Our counts are checked against CUB's on every case.
 *
 * Usage: bench_hist [reps]   (default 60)
 *        bench_hist --profile DATA BINS WIDE_THREADS PACKED   (one case, 3 calls: for ncu)
 */
#include <cub/device/device_histogram.cuh>
#include <cuda_runtime.h>

#include <string>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "bench_common.cuh"
#include "hist.h"
#include "hist_cuda.h"

static const size_t SLICE = 512 * 512, SLICES = 512, N = SLICE * SLICES;
static int g_reps = 60;

/* kind 0: CT-like 12-bit, 1: uniform 16-bit, 2: constant. */
__global__ void fill_kernel(uint16_t *d, size_t n, int kind)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        if (kind == 0)
            d[i] = bench_ct_sample(i, 85);
        else if (kind == 1)
            d[i] = (uint16_t)bench_mix32(i ^ 0x5bd1e995ull);
        else
            d[i] = 1064;
    }
}

/* Median time (ms) of fn(i) on the default stream, g_reps runs unless told otherwise. */
template <class F> static double median_ms(F fn, int reps = -1)
{
    return bench_median_ms(0, reps < 0 ? g_reps : reps, fn);
}

static double gbs(size_t samples, double ms)
{
    return samples * 2.0 / (ms * 1e-3) / 1e9;
}

struct ctx {
    uint32_t *sink;
    void *cub_temp = nullptr;
    size_t cub_temp_bytes = 0;
    int *cub_hist;
    uint64_t *ours;
};

static void run_cub(ctx &c, const uint16_t *d, size_t n, uint32_t bins, int lo, int hi,
                    cudaStream_t s = 0)
{
    size_t need = 0;
    CK(cub::DeviceHistogram::HistogramEven(nullptr, need, d, c.cub_hist, (int)bins + 1, lo, hi,
                                           (int64_t)n, s));
    if (need > c.cub_temp_bytes) {
        CK(cudaDeviceSynchronize());
        if (c.cub_temp)
            CK(cudaFree(c.cub_temp));
        CK(cudaMalloc(&c.cub_temp, need));
        c.cub_temp_bytes = need;
    }
    CK(cub::DeviceHistogram::HistogramEven(c.cub_temp, need, d, c.cub_hist, (int)bins + 1, lo, hi,
                                           (int64_t)n, s));
}

static void run_ours(const uint16_t *d, size_t slice_len, size_t slices, int per_slice,
                     const dh_bin_map *map, uint64_t *out, const dh_cuda_tuning *t)
{
    char msg[512];
    if (dh_hist_cuda_device_tuned(d, 0, slice_len, slices, per_slice, map, out, NULL, t, 1, msg,
                                  sizeof msg)) {
        fprintf(stderr, "dh_hist_cuda_device: %s\n", msg);
        exit(1);
    }
}

/* run_ours for shapes that a device may refuse (a cluster of 16): false, and the reason
 * printed once, instead of stopping the benchmark. */
static bool try_ours(const uint16_t *d, size_t slice_len, size_t slices, int per_slice,
                     const dh_bin_map *map, uint64_t *out, const dh_cuda_tuning *t,
                     const char *name)
{
    char msg[512];
    if (dh_hist_cuda_device_tuned(d, 0, slice_len, slices, per_slice, map, out, NULL, t, 1, msg,
                                  sizeof msg) == 0)
        return true;
    printf("  %s: refused: %s\n", name, msg);
    cudaGetLastError();
    return false;
}

/* Our counts (without under/overflow) equal CUB's? */
static const char *agree(ctx &c, uint32_t bins)
{
    CK(cudaDeviceSynchronize());
    std::vector<int> cub(bins);
    std::vector<uint64_t> ours(bins + 2);
    CK(cudaMemcpy(cub.data(), c.cub_hist, bins * sizeof(int), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(ours.data(), c.ours, (bins + 2) * sizeof(uint64_t), cudaMemcpyDeviceToHost));
    for (uint32_t b = 0; b < bins; b++)
        if ((uint64_t)cub[b] != ours[b])
            return "DIFFER";
    return "same";
}

int main(int argc, char **argv)
{
    /* --profile DATA BINS WIDE_THREADS PACKED: three calls of one case and nothing else,
     * for a profiler (ncu) to look at one launch. */
    const bool profile = argc == 6 && !strcmp(argv[1], "--profile");
    if (argc > 1 && !profile)
        g_reps = atoi(argv[1]) > 0 ? atoi(argv[1]) : g_reps;
    const cudaDeviceProp prop = bench_device();
    int rt = 0, drv = 0;
    CK(cudaRuntimeGetVersion(&rt));
    CK(cudaDriverGetVersion(&drv));
    printf("device: %s, %d SMs, %zu MB L2, runtime %d, driver %d, CUB %d\n", prop.name,
           prop.multiProcessorCount, (size_t)prop.l2CacheSize >> 20, rt, drv, CUB_VERSION);
    printf("reps per figure: %d (median)\n\n", g_reps);

    uint16_t *vol[3];
    const char *names[3] = {"CT-like 12-bit", "uniform 16-bit", "constant"};
    for (int k = 0; k < 3; k++) {
        CK(cudaMalloc(&vol[k], N * sizeof(uint16_t)));
        fill_kernel<<<1024, 256>>>(vol[k], N, k);
        CK(cudaGetLastError());
    }
    ctx c;
    CK(cudaMalloc(&c.sink, 4));
    CK(cudaMalloc(&c.cub_hist, 65536 * sizeof(int)));
    CK(cudaMalloc(&c.ours, (size_t)SLICES * (65536 + 2) * sizeof(uint64_t)));
    CK(cudaDeviceSynchronize());
    if (profile) {
        const int data = atoi(argv[2]);
        dh_bin_map map;
        const uint32_t bins = (uint32_t)atoi(argv[3]);
        dh_bin_map_init_affine(&map, bins, 0, data == 1 || bins > 4096 ? 65536 : 4096);
        dh_cuda_tuning t;
        memset(&t, 0, sizeof t);
        t.wide_threads = (uint32_t)atoi(argv[4]);
        t.force_packed = atoi(argv[5]);
        for (int i = 0; i < 3; i++)
            run_ours(vol[data], N, 1, 0, &map, c.ours, &t);
        CK(cudaDeviceSynchronize());
        printf("profile run done\n");
        return 0;
    }

    const size_t nv = N / 8;
    const int read_blocks = prop.multiProcessorCount * 8;
    double ceiling_ms[3];
    for (int k = 0; k < 3; k++)
        ceiling_ms[k] = median_ms([&](int) {
            bench_read_kernel<<<read_blocks, 256>>>((const uint4 *)vol[k], nv, c.sink);
        });
    const double ceil_gbs = gbs(N, ceiling_ms[0]);
    printf("read ceiling (16-byte loads, 256 MiB): %.0f GB/s (%.0f / %.0f on the other buffers)\n\n",
           ceil_gbs, gbs(N, ceiling_ms[1]), gbs(N, ceiling_ms[2]));

    struct shape {
        const char *name;
        dh_cuda_tuning t;
    };
    /* dh_cuda_tuning field by field (C++17 has no designated initializers). */
    auto tune = [](uint32_t smem, int packed, int classic, int zero, uint32_t cluster,
                   uint32_t threads = 0, int pairs = 0) {
        dh_cuda_tuning t;
        memset(&t, 0, sizeof t);
        t.smem_target = smem;
        t.force_packed = packed;
        t.classic_map = classic;
        t.zero_mode = zero;
        t.cluster_size = cluster;
        t.small_cluster = 1;
        t.wide_threads = threads;
        t.pair_flush = pairs;
        return t;
    };
    const shape shapes[] = {{"default", tune(0, 0, 0, 0, 0)},
                            {"per-sample map", tune(0, 0, 1, 0, 0)},
                            {"in-kernel zeroing", tune(0, 0, 0, 2, 0)},
                            {"wide 512t", tune(0, 0, 0, 0, 0, 512)},
                            {"wide 1024t", tune(0, 0, 0, 0, 0, 1024)},
                            {"packed", tune(0, 1, 0, 0, 1)},
                            {"packed, no pairs", tune(0, 1, 0, 0, 1, 0, 1)},
                            {"cluster 2", tune(0, 0, 0, 0, 2)},
                            {"cluster 2 packed", tune(0, 1, 0, 0, 2)}};
    const size_t nshapes = sizeof shapes / sizeof shapes[0];
    std::string every; /* every shape's figure, printed after the table */
    struct bcase {
        int data;
        uint32_t bins;
        int lo, hi;
    };
    const bcase cases[] = {{0, 256, 0, 4096},     {0, 4096, 0, 4096},    {0, 16384, 0, 65536},
                           {0, 32768, 0, 65536},  {0, 65536, 0, 65536},  {1, 256, 0, 65536},
                           {1, 4096, 0, 65536},   {1, 16384, 0, 65536},  {1, 32768, 0, 65536},
                           {1, 65536, 0, 65536},  {2, 256, 0, 4096},     {2, 4096, 0, 4096},
                           {2, 16384, 0, 65536},  {2, 32768, 0, 65536},  {2, 65536, 0, 65536}};

    printf("| data | bins | ceiling GB/s | CUB GB/s | ours GB/s | ours/ceiling | ours/CUB | "
           "counts vs CUB | best other shape |\n");
    printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (const bcase &bc : cases) {
        dh_bin_map map;
        dh_bin_map_init_affine(&map, bc.bins, bc.lo, bc.hi);
        const uint16_t *d = vol[bc.data];
        const double cub_ms = median_ms([&](int) { run_cub(c, d, N, bc.bins, bc.lo, bc.hi); });
        double best = 1e30;
        const char *best_name = "";
        double def_ms = 0;
        char line[256];
        snprintf(line, sizeof line, "- %s, %u bins:", names[bc.data], bc.bins);
        every += line;
        for (const shape &s : shapes) {
            const double ms =
                median_ms([&](int) { run_ours(d, N, 1, 0, &map, c.ours, &s.t); });
            /* c.ours holds this shape's counts, c.cub_hist CUB's (from its timing above) */
            const char *shape_same = agree(c, bc.bins);
            snprintf(line, sizeof line, " %s %.1f%%%s%s", s.name,
                     100 * gbs(N, ms) / gbs(N, ceiling_ms[bc.data]),
                     strcmp(shape_same, "same") ? " (counts DIFFER from CUB)" : "",
                     &s == &shapes[nshapes - 1] ? "\n" : ",");
            every += line;
            if (&s == &shapes[0])
                def_ms = ms;
            else if (ms < best)
                best = ms, best_name = s.name;
        }
        run_cub(c, d, N, bc.bins, bc.lo, bc.hi);
        run_ours(d, N, 1, 0, &map, c.ours, nullptr);
        const char *same = agree(c, bc.bins);
        const double ceil_k = gbs(N, ceiling_ms[bc.data]);
        printf("| %s | %u | %.0f | %.0f | %.0f | %.1f%% | %.1fx | %s | %s %.0f GB/s (%.1f%%) |\n",
               names[bc.data], bc.bins, ceil_k, gbs(N, cub_ms), gbs(N, def_ms),
               100 * gbs(N, def_ms) / ceil_k, cub_ms / def_ms, same, best_name, gbs(N, best),
               100 * gbs(N, best) / ceil_k);
        fflush(stdout);
    }

    printf("\nevery shape, %% of the read ceiling:\n%s", every.c_str());

    /* Per-slice mode: 512 histograms in one launch against the whole-volume histogram. */
    printf("\n| per-slice, CT-like 12-bit | bins | whole volume GB/s | per-slice GB/s | "
           "per-slice/whole | per-slice/ceiling |\n| --- | --- | --- | --- | --- | --- |\n");
    for (uint32_t bins : {256u, 4096u}) {
        dh_bin_map map;
        dh_bin_map_init_affine(&map, bins, 0, 4096);
        const double whole = median_ms([&](int) { run_ours(vol[0], N, 1, 0, &map, c.ours, nullptr); });
        const double per =
            median_ms([&](int) { run_ours(vol[0], SLICE, SLICES, 1, &map, c.ours, nullptr); });
        printf("| 512 slices of 512x512 | %u | %.0f | %.0f | %.1f%% | %.1f%% |\n", bins,
               gbs(N, whole), gbs(N, per), 100 * whole / per, 100 * gbs(N, per) / ceil_gbs);
        for (uint32_t threads : {512u, 1024u}) {
            dh_cuda_tuning t;
            memset(&t, 0, sizeof t);
            t.wide_threads = threads;
            const double whole_t =
                median_ms([&](int) { run_ours(vol[0], N, 1, 0, &map, c.ours, &t); });
            const double per_t = median_ms(
                [&](int) { run_ours(vol[0], SLICE, SLICES, 1, &map, c.ours, &t); });
            printf("|   (wide %ut) | %u | %.0f | %.0f | %.1f%% | %.1f%% |\n", threads, bins,
                   gbs(N, whole_t), gbs(N, per_t), 100 * whole_t / per_t,
                   100 * gbs(N, per_t) / ceil_gbs);
        }
        /* The ways of treating the output, each against the default whole volume: a memset
         * first, zeroing in the kernel, stored by the blocks. */
        const char *way_names[] = {"", "memset first", "zeroed in the kernel",
                                   "stored, no zeroing"};
        for (int way = 1; way <= 3; way++) {
            const dh_cuda_tuning t = {0, 0, 0, 0, 0, way};
            const double per_w =
                median_ms([&](int) { run_ours(vol[0], SLICE, SLICES, 1, &map, c.ours, &t); });
            printf("|   (%s) | %u | %.0f | %.0f | %.1f%% | %.1f%% |\n", way_names[way], bins,
                   gbs(N, whole), gbs(N, per_w), 100 * whole / per_w,
                   100 * gbs(N, per_w) / ceil_gbs);
        }
        /* Counts of the stored per-slice histograms against the memset way's. */
        {
            const size_t len = SLICES * (size_t)(bins + 2);
            std::vector<uint64_t> a(len), b(len);
            const dh_cuda_tuning t1 = {0, 0, 0, 0, 0, 1}, t3 = {0, 0, 0, 0, 0, 3};
            run_ours(vol[0], SLICE, SLICES, 1, &map, c.ours, &t1);
            CK(cudaMemcpy(a.data(), c.ours, len * 8, cudaMemcpyDeviceToHost));
            run_ours(vol[0], SLICE, SLICES, 1, &map, c.ours, &t3);
            CK(cudaMemcpy(b.data(), c.ours, len * 8, cudaMemcpyDeviceToHost));
            printf("|   (stored vs memset counts: %s) | | | | | |\n", a == b ? "same" : "DIFFER");
        }
        fflush(stdout);
    }

    /* One 512x512 slice at 4096 bins, output zeroing included; slices rotate through the whole
     * volume so the data does not sit in L2. */
    {
        dh_bin_map map;
        dh_bin_map_init_affine(&map, 4096, 0, 4096);
        const int reps = 400;
        auto slice = [&](int i) { return vol[0] + (size_t)((i * 37) % SLICES) * SLICE; };
        const double ours_ms =
            median_ms([&](int i) { run_ours(slice(i), SLICE, 1, 0, &map, c.ours, nullptr); }, reps);
        const double cub_ms =
            median_ms([&](int i) { run_cub(c, slice(i), SLICE, 4096, 0, 4096); }, reps);
        const double empty_ms =
            median_ms([&](int) { bench_read_kernel<<<1, 32>>>(nullptr, 0, c.sink); }, reps);
        /* Back to back without events between: what a pipeline of slices costs per slice. */
        cudaEvent_t e0, e1;
        CK(cudaEventCreate(&e0));
        CK(cudaEventCreate(&e1));
        CK(cudaEventRecord(e0));
        for (int i = 0; i < reps; i++)
            run_ours(slice(i), SLICE, 1, 0, &map, c.ours, nullptr);
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float batch_ms = 0;
        CK(cudaEventElapsedTime(&batch_ms, e0, e1));
        printf("\none 512x512 slice, 4096 bins, zeroing included: ours %.2f us (median), CUB "
               "%.2f us, empty launch %.2f us; back to back %.2f us per slice\n",
               ours_ms * 1e3, cub_ms * 1e3, empty_ms * 1e3, batch_ms * 1e3 / reps);
        const dh_cuda_tuning memset_zero = {0, 0, 0, 0, 0, 1, 0, 1};
        const double memset_ms = median_ms(
            [&](int i) { run_ours(slice(i), SLICE, 1, 0, &map, c.ours, &memset_zero); }, reps);
        printf("  with a memset launch for the zeroing instead: %.2f us\n", memset_ms * 1e3);
        /* The ways of one call: one cluster that stores (8 or 16 blocks, the default 8), the
         * whole device zeroing in the kernel (the default before the cluster), the whole device
         * storing; each also back to back. */
        struct way {
            const char *name;
            dh_cuda_tuning t;
        };
        const way ways[] = {{"cluster of 8, stored", {0, 0, 0, 0, 0, 0, 0, 8}},
                            {"cluster of 16, stored", {0, 0, 0, 0, 0, 0, 0, 16}},
                            {"cluster of 8, stored, smem 40K", {40000, 0, 0, 0, 0, 0, 0, 8}},
                            {"whole device, zeroed in the kernel", {0, 0, 0, 0, 0, 2, 0, 1}},
                            {"whole device, stored", {0, 0, 0, 0, 0, 3, 0, 1}}};
        for (const way &w : ways) {
            if (!try_ours(slice(0), SLICE, 1, 0, &map, c.ours, &w.t, w.name))
                continue;
            const double ms = median_ms(
                [&](int i) { run_ours(slice(i), SLICE, 1, 0, &map, c.ours, &w.t); }, reps);
            CK(cudaEventRecord(e0));
            for (int i = 0; i < reps; i++)
                run_ours(slice(i), SLICE, 1, 0, &map, c.ours, &w.t);
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            float bb = 0;
            CK(cudaEventElapsedTime(&bb, e0, e1));
            run_cub(c, slice(reps - 1), SLICE, 4096, 0, 4096);
            run_ours(slice(reps - 1), SLICE, 1, 0, &map, c.ours, &w.t);
            printf("  %s: %.2f us, back to back %.2f us, counts vs CUB %s\n", w.name, ms * 1e3,
                   bb * 1e3 / reps, agree(c, 4096));
        }
        /* As a caller of the device entry sees one slice: on its own stream, the call and a
         * wait for it timed on the host clock; then the same call captured once into a CUDA
         * graph (one per slice of 64 spread over the volume) and replayed, launch + wait on the
         * host clock and the replay alone between events; floors: an empty kernel and an empty
         * one-node graph timed the same ways. */
        {
            cudaStream_t st;
            CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
            char msg[512];
            auto call = [&](int i) {
                if (dh_hist_cuda_device_tuned(slice(i), 0, SLICE, 1, 0, &map, c.ours, st, nullptr,
                                              1, msg, sizeof msg)) {
                    fprintf(stderr, "dh_hist_cuda_device: %s\n", msg);
                    exit(1);
                }
            };
            const double call_host = bench_host_us(st, reps, call);
            double empty_host, empty_graph_host;
            bench_launch_floor(st, reps, &empty_host, &empty_graph_host);
            const int graphs = 64;
            std::vector<cudaGraphExec_t> exec(graphs);
            bool captured = true;
            for (int g = 0; g < graphs && captured; g++) {
                cudaGraph_t graph;
                CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
                const int rc = dh_hist_cuda_device_tuned(slice(g * 8), 0, SLICE, 1, 0, &map,
                                                         c.ours, st, nullptr, 1, msg, sizeof msg);
                const cudaError_t end = cudaStreamEndCapture(st, &graph);
                if (rc || end != cudaSuccess) {
                    printf("  graph capture of one slice refused: %s\n",
                           rc ? msg : cudaGetErrorString(end));
                    cudaGetLastError();
                    captured = false;
                    break;
                }
                CK(cudaGraphInstantiate(&exec[g], graph, 0));
                CK(cudaGraphDestroy(graph));
            }
            printf("  as a caller sees it (own stream, host clock, launch + wait): call %.2f us "
                   "(empty kernel %.2f us)",
                   call_host, empty_host);
            if (captured) {
                const double graph_host = bench_host_us(
                    st, reps, [&](int i) { CK(cudaGraphLaunch(exec[i % graphs], st)); });
                int k = 0;
                const double graph_ev = bench_median_each_us(
                    st, 10, reps, [&]() { CK(cudaGraphLaunch(exec[k++ % graphs], st)); });
                CK(cudaGraphLaunch(exec[graphs - 1], st));
                CK(cudaStreamSynchronize(st));
                run_cub(c, slice((graphs - 1) * 8), SLICE, 4096, 0, 4096);
                printf("; graph replay %.2f us (empty one-node graph %.2f us), replay between "
                       "events %.2f us, counts vs CUB %s\n",
                       graph_host, empty_graph_host, graph_ev, agree(c, 4096));
                for (auto &e : exec)
                    CK(cudaGraphExecDestroy(e));
            } else {
                printf("\n");
            }
            CK(cudaStreamDestroy(st));
        }
        /* Shapes of the whole-device kernel for small inputs: samples per block and copies. */
        for (uint64_t per_block : {2048ull, 4096ull, 8192ull, 16384ull}) {
            for (uint32_t target : {1u, 40000u}) {
                dh_cuda_tuning t = {target, 0, 0, per_block, 0, 0, 0, 1};
                const double ms = median_ms(
                    [&](int i) { run_ours(slice(i), SLICE, 1, 0, &map, c.ours, &t); }, reps);
                printf("  shape: %llu samples per block, smem target %u: %.2f us\n",
                       (unsigned long long)per_block, target, ms * 1e3);
            }
        }
    }
    CK(cudaDeviceSynchronize());
    return 0;
}
