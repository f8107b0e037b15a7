// SPDX-License-Identifier: MIT
/*
 * bench_clahe.cu: CLAHE on a device-resident image and volume (kernels/clahe_cuda.h) against
 * the memory it must move (docs/performance.md "CLAHE", issue 21).
 *
 * Data, made on the device, never zeros:
 *   2D: a 3000x3000 uint16 radiograph-like image, a smooth field over most of the 16-bit range
 *       plus noise; 8x8 tiles; 4096 and 65536 bins over the whole 16-bit table.
 *   3D: a 512^3 12-bit CT-like volume with structure (air around an elliptic body, fat at its
 *       rim, soft tissue, two lungs, a spine; noise everywhere); 8x8x8 tiles; 4096 bins over the
 *       12-bit table (one per value), and 65536 bins over a 16-bit table (one per value of the
 *       16-bit window: 64 times the tables, what a 16-bit volume costs).
 * The floors, measured in the same run: a read-only kernel with 16-byte loads, and
 * cudaMemcpyDeviceToDevice (a read and a write). CLAHE reads the samples twice (tile histograms,
 * then the mapping) and writes the output once: "3 x read" is its floor, as for global
 * equalization.
 *
 * Every configuration is first checked against the CPU twin (dh_clahe_cpu on every processor
 * of this machine): all outputs equal, else the program exits 1. Figures are medians of
 * event-timed calls (each call is what a caller gets: the scratch reused, every stage launched).
 *
 * Usage: bench_clahe [reps] [--profile | --floor3d]   (default 30; --profile: one call per case,
 * neither checked nor timed, for a profiler; --floor3d: the 3D 4096-bin case's call against its
 * mapping's memory floor, bench_clahe_floor3d.cuh)
 */
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <chrono>
#include <vector>

#include "bench_common.cuh"
#include "bench_clahe_floor3d.cuh"
#include "clahe_cpu.h"
#include "clahe_cuda.h"

static int g_reps = 30;
static char msg[512];

/* The launcher returns -1 with a message; a benchmark can only stop. */
static void lib_ok(int rc, const char *what)
{
    if (rc != 0) {
        fprintf(stderr, "bench_clahe: %s: %s\n", what, msg);
        exit(1);
    }
}

/* A radiograph-like image: a smooth field (exposure falling off across the plate, a large
 * round shape, a gentle gradient) over 2000 .. 60000, plus noise of about +-300. */
__global__ void fill_radiograph(uint16_t *d, uint32_t nx, uint32_t ny)
{
    const size_t n = (size_t)nx * ny;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const float x = (float)(i % nx) / nx, y = (float)(i / nx) / ny;
        const float r2 = (x - 0.5f) * (x - 0.5f) + (y - 0.55f) * (y - 0.55f);
        float f = 0.45f + 0.25f * __cosf(6.0f * x) * __sinf(5.0f * y) + 0.2f * (x - y) +
                  (r2 < 0.09f ? 0.15f : 0.0f);
        int32_t v = (int32_t)(2000 + f * 58000) + bench_noise(i, 150);
        d[i] = (uint16_t)(v < 0 ? 0 : v > 65535 ? 65535 : v);
    }
}

/* A CT-like 12-bit volume with structure (stored = HU + 1024). */
__global__ void fill_ct_volume(uint16_t *d, uint32_t n1)
{
    const size_t n = (size_t)n1 * n1 * n1;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const float x = (float)(i % n1) / n1 - 0.5f, y = (float)(i / n1 % n1) / n1 - 0.5f;
        const float z = (float)(i / n1 / n1) / n1;
        const float body = x * x / 0.2f + y * y / 0.12f * (1.0f + 0.2f * z);
        const float lung = fminf((x + 0.2f) * (x + 0.2f) / 0.015f + y * y / 0.04f,
                                 (x - 0.2f) * (x - 0.2f) / 0.015f + y * y / 0.04f);
        const float spine = x * x + (y - 0.22f) * (y - 0.22f);
        int32_t v;
        if (body > 1.0f)
            v = 24 + bench_noise(i, 4); /* air */
        else if (body > 0.8f)
            v = 924 + bench_noise(i, 10); /* fat */
        else if (spine < 0.004f)
            v = 1700 + bench_noise(i, 150); /* bone */
        else if (lung < 1.0f)
            v = 224 + bench_noise(i, 40); /* lung */
        else
            v = 1064 + bench_noise(i, 15); /* soft tissue */
        d[i] = (uint16_t)(v < 0 ? 0 : v > 4095 ? 4095 : v);
    }
}

struct Config {
    const char *name;
    uint32_t nx, ny, nz, t;
    int volume;
    uint32_t bits, bins;
};

/* --floor3d: the 512^3 CT volume at 8x8x8 tiles and 4096 bins (the issue's 3D target): the
 * library's call (checked against the CPU twin), the mapping's memory floor
 * (floor3d_gather_kernel over a pair table of the library's size, checked on the host for three
 * slices), one read of the volume and a D2D copy (a read and a write), medians of g_reps. */
static int floor3d(const cudaDeviceProp &prop, cudaStream_t s)
{
    const uint32_t n1 = 512, tile = 64, tiles = 8, bins = 4096;
    const size_t n = (size_t)n1 * n1 * n1, pairs_n = (size_t)tiles * tiles * tiles * bins;
    uint16_t *d_in, *d_out, *d_floor;
    uint4 *d_pairs;
    uint32_t *d_sink;
    CK(cudaMalloc(&d_in, n * 2));
    CK(cudaMalloc(&d_out, n * 2));
    CK(cudaMalloc(&d_floor, n * 2));
    CK(cudaMalloc(&d_pairs, pairs_n * 16));
    CK(cudaMalloc(&d_sink, 4));
    const int grid = 4 * prop.multiProcessorCount;
    fill_ct_volume<<<grid, 256, 0, s>>>(d_in, n1);
    floor3d_fill_pairs<<<grid, 256, 0, s>>>(d_pairs, pairs_n);
    CK(cudaGetLastError());
    dh_clahe_cuda_workspace *ws = dh_clahe_cuda_workspace_new();
    const dh_eq_window w = {0, 4095};
    const dh_clahe_shape shape = {n1, n1, n1, tiles, tiles, tiles, 1};
    auto call = [&] {
        lib_ok(dh_clahe_cuda(ws, d_in, 0, 0, 4096, &shape, &w, bins, 65536, 2.0, d_out, s, msg,
                             sizeof msg),
               "dh_clahe_cuda");
    };
    const dim3 block(64, 4), fgrid(n1 / 4, n1);
    auto gather = [&] {
        floor3d_gather_kernel<<<fgrid, block, 0, s>>>(d_in, n1, tile, tiles, d_pairs, bins,
                                                       d_floor);
    };
    call();
    gather();
    CK(cudaStreamSynchronize(s));
    CK(cudaGetLastError());
    std::vector<uint16_t> h_in(n), h_out(n), h_cpu(n), h_floor(n);
    CK(cudaMemcpy(h_in.data(), d_in, n * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(h_out.data(), d_out, n * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(h_floor.data(), d_floor, n * 2, cudaMemcpyDeviceToHost));
    bool ok = dh_clahe_cpu(h_in.data(), 0, 0, 4096, &shape, &w, bins, 65536, 2.0, 0,
                           h_cpu.data()) == 0 &&
              memcmp(h_out.data(), h_cpu.data(), n * 2) == 0;
    const uint32_t zs[3] = {0, 200, n1 - 1};
    for (uint32_t zi = 0; zi < 3 && ok; zi++)
        for (uint32_t y = 0; y < n1 && ok; y++)
            for (uint32_t x = 0; x < n1; x++) {
                const size_t i = ((size_t)zs[zi] * n1 + y) * n1 + x;
                const size_t p = (((size_t)floor3d_cell(zs[zi], tile, tiles) * tiles +
                                   floor3d_cell(y, tile, tiles)) * tiles +
                                  floor3d_cell(x, tile, tiles)) * bins + h_in[i];
                const uint4 e = make_uint4(floor3d_word(4 * p), floor3d_word(4 * p + 1),
                                           floor3d_word(4 * p + 2), floor3d_word(4 * p + 3));
                if (h_floor[i] != floor3d_mix(e)) {
                    fprintf(stderr, "floor3d: the gather floor's voxel %zu differs\n", i);
                    ok = false;
                    break;
                }
            }
    printf("check: %s (the call equals dh_clahe_cpu on every voxel; the gather floor's output "
           "equals the host's on slices 0, 200, %u)\n\n", ok ? "ok" : "FAILED", n1 - 1);
    if (!ok)
        return 1;
    const double t_call = 1000.0 * bench_median_ms(s, g_reps, [&](int) { call(); });
    const double t_gather = 1000.0 * bench_median_ms(s, g_reps, [&](int) { gather(); });
    const double t_read = 1000.0 * bench_median_ms(s, g_reps, [&](int) {
                              bench_read_kernel<<<grid, 256, 0, s>>>((const uint4 *)d_in, n / 8,
                                                                     d_sink);
                          });
    const double t_copy = 1000.0 * bench_median_ms(s, g_reps, [&](int) {
                              CK(cudaMemcpyAsync(d_floor, d_in, n * 2,
                                                 cudaMemcpyDeviceToDevice, s));
                          });
    printf("### CLAHE 3D 512^3 12-bit CT, 8x8x8 tiles, 4096 bins: the call against its mapping's "
           "memory floor (%s, medians of %d)\n\n", prop.name, g_reps);
    printf("| what | us | / 3 x read |\n| --- | --- | --- |\n");
    printf("| the library's call (dh_clahe_cuda) | %.1f | %.2fx |\n", t_call,
           t_call / (3 * t_read));
    printf("| mapping floor: sample loads, the 16-byte pair gather a voxel, output stores "
           "(floor3d_gather_kernel) | %.1f | %.2fx |\n", t_gather, t_gather / (3 * t_read));
    printf("| read the volume once | %.1f | %.2fx |\n", t_read, 1.0 / 3);
    printf("| D2D copy (a read and a write) | %.1f | %.2fx |\n", t_copy, t_copy / (3 * t_read));
    printf("| the target, 2 x three reads | %.1f | 2.00x |\n", 6 * t_read);
    dh_clahe_cuda_workspace_free(ws);
    void *bufs[] = {d_in, d_out, d_floor, d_pairs, d_sink};
    for (void *b : bufs)
        CK(cudaFree(b));
    return 0;
}

int main(int argc, char **argv)
{
    bool check = true, floor = false;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--profile") == 0)
            check = false;
        else if (strcmp(argv[a], "--floor3d") == 0)
            floor = true;
        else if (atoi(argv[a]) > 0)
            g_reps = atoi(argv[a]);
    }
    const cudaDeviceProp prop = bench_device();
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    printf("device: %s, %d SMs, %.0f MiB L2; CUDA runtime %d; %d repetitions, medians\n\n",
           prop.name, prop.multiProcessorCount, prop.l2CacheSize / 1048576.0, CUDART_VERSION,
           g_reps);
    if (floor)
        return floor3d(prop, s);

    const Config configs[] = {
        {"2D 3000x3000 uint16, 8x8 tiles, 4096 bins", 3000, 3000, 1, 8, 0, 16, 4096},
        {"2D 3000x3000 uint16, 8x8 tiles, 65536 bins", 3000, 3000, 1, 8, 0, 16, 65536},
        {"3D 512^3 12-bit CT, 8x8x8 tiles, 4096 bins", 512, 512, 512, 8, 1, 12, 4096},
        {"3D 512^3 in a 16-bit table, 8x8x8 tiles, 65536 bins", 512, 512, 512, 8, 1, 16, 65536},
    };
    const size_t ncfg = sizeof configs / sizeof *configs;
    std::vector<double> t_call(ncfg), t_read(ncfg), t_copy(ncfg);
    std::vector<int> same(ncfg);
    dh_clahe_cuda_workspace *ws = dh_clahe_cuda_workspace_new();
    uint32_t *d_sink;
    CK(cudaMalloc(&d_sink, 4));
    for (size_t k = 0; k < ncfg; k++) {
        const Config &c = configs[k];
        const size_t n = (size_t)c.nx * c.ny * c.nz;
        uint16_t *d_in, *d_out, *d_copy;
        CK(cudaMalloc(&d_in, n * 2));
        CK(cudaMalloc(&d_out, n * 2));
        CK(cudaMalloc(&d_copy, n * 2));
        if (c.nz == 1)
            fill_radiograph<<<4 * prop.multiProcessorCount, 256, 0, s>>>(d_in, c.nx, c.ny);
        else
            fill_ct_volume<<<4 * prop.multiProcessorCount, 256, 0, s>>>(d_in, c.nx);
        CK(cudaGetLastError());
        const int32_t base = 0;
        const uint32_t len = 1u << c.bits;
        const dh_eq_window w = {0, (int32_t)len - 1};
        const dh_clahe_shape shape = {c.nx, c.ny, c.nz, c.t, c.t, c.volume ? c.t : 1, c.volume};
        const uint32_t levels = 65536;
        const double clip = 2.0;
        auto call = [&] {
            lib_ok(dh_clahe_cuda(ws, d_in, 0, base, len, &shape, &w, c.bins, levels, clip, d_out,
                                 s, msg, sizeof msg),
                   "dh_clahe_cuda");
        };

        /* Checked against the CPU twin first. */
        call();
        CK(cudaStreamSynchronize(s));
        std::vector<uint16_t> h_in(n), h_gpu(n), h_cpu(n);
        CK(cudaMemcpy(h_in.data(), d_in, n * 2, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(h_gpu.data(), d_out, n * 2, cudaMemcpyDeviceToHost));
        const auto c0 = std::chrono::steady_clock::now();
        if (!check)
            h_cpu = h_gpu;
        else if (dh_clahe_cpu(h_in.data(), 0, base, len, &shape, &w, c.bins, levels, clip, 0,
                         h_cpu.data()) != 0) {
            fprintf(stderr, "dh_clahe_cpu failed\n");
            return 1;
        }
        const double cpu_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - c0)
                .count();
        same[k] = memcmp(h_gpu.data(), h_cpu.data(), n * 2) == 0;
        uint16_t lo = 65535, hi = 0;
        for (size_t i = 0; i < n; i++) {
            lo = h_gpu[i] < lo ? h_gpu[i] : lo;
            hi = h_gpu[i] > hi ? h_gpu[i] : hi;
        }
        printf("%s: GPU == CPU %s (CPU twin %.0f ms on this host), output %u .. %u\n", c.name,
               !check ? "not checked" : same[k] ? "yes" : "NO", cpu_ms, lo, hi);
        if (!same[k])
            for (size_t i = 0; i < n; i++)
                if (h_gpu[i] != h_cpu[i]) {
                    fprintf(stderr, "first difference at %zu: GPU %u, CPU %u\n", i, h_gpu[i],
                            h_cpu[i]);
                    break;
                }

        if (!check) { /* profiling: the one call above is all */
            CK(cudaFree(d_in));
            CK(cudaFree(d_out));
            CK(cudaFree(d_copy));
            continue;
        }
        t_call[k] = 1000.0 * bench_median_ms(s, g_reps, [&](int) { call(); });
        const size_t nv = n / 8;
        const int grid = 4 * prop.multiProcessorCount;
        t_read[k] = 1000.0 * bench_median_ms(s, g_reps, [&](int) {
                        bench_read_kernel<<<grid, 256, 0, s>>>((const uint4 *)d_in, nv, d_sink);
                    });
        t_copy[k] = 1000.0 * bench_median_ms(s, g_reps, [&](int) {
                        CK(cudaMemcpyAsync(d_copy, d_in, n * 2, cudaMemcpyDeviceToDevice, s));
                    });
        CK(cudaFree(d_in));
        CK(cudaFree(d_out));
        CK(cudaFree(d_copy));
    }

    printf("\nCLAHE on %s, device-resident, clip limit 2, 65536 output levels "
           "(medians of %d event-timed calls):\n\n",
           prop.name, g_reps);
    printf("| case | CLAHE us | read us | D2D copy us | 3 x read us | CLAHE / 3 x read | "
           "GPU == CPU |\n");
    printf("| --- | --- | --- | --- | --- | --- | --- |\n");
    for (size_t k = 0; k < ncfg; k++)
        printf("| %s | %.1f | %.1f | %.1f | %.1f | %.2fx | %s |\n", configs[k].name, t_call[k],
               t_read[k], t_copy[k], 3 * t_read[k], t_call[k] / (3 * t_read[k]),
               !check ? "not checked" : same[k] ? "yes" : "NO");
    dh_clahe_cuda_workspace_free(ws);
    for (size_t k = 0; k < ncfg; k++)
        if (!same[k])
            return 1;
    return 0;
}
