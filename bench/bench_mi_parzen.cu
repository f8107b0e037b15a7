// SPDX-License-Identifier: MIT
/*
 * bench_mi_parzen.cu: Parzen-window (Mattes) MI with its gradient on the GPU (issue 22's
 * performance targets), Markdown tables named by GPU for docs/performance.md:
 *   1. batched value + gradient, 256 x 256 float32 pairs (a radiograph against B DRRs), 64 bins,
 *      box and cubic fixed windows, range found and given: us per call, evaluations/s, and the
 *      workspace's device memory (O(pixels + batch x bins^2));
 *   2. the same batch of 1024 pairs on smooth images and on noise (uniform over the range: no two
 *      neighbours share a histogram cell), box window (range found and given) and cubic (found),
 *      so that a histogram that gains on smooth images is seen not to lose on noise;
 *   3. a 512^3 volume pair, value + gradient, against the floor of reading both volumes and
 *      writing the gradient once (16-byte loads and stores), measured in the same run.
 * Every configuration is first checked bit for bit against the CPU twin (dh_parzen_mi_cpu) on a
 * few items (the volume: on a 512 x 512 x 48 slab, same kernels); a mismatch prints MISMATCH and
 * the program exits 1. Usage: bench_mi_parzen [--quick | --headline | --profile [noise]]
 * (--quick: batches up to 1024; --headline: tables 2 and 3 alone, the volume at 64 bins only, to
 * compare builds of the kernels in one run; --profile: a few calls of the two headline shapes
 * alone, for nsys or ncu, on the noise table's images with `noise`)
 */
#define BENCH_CUDA_ERROR_EXIT 2
#include "bench_common.cuh"

#include <math.h>
#include <string.h>

#include <vector>

#include "mi_parzen.h"
#include "mi_parzen_cuda.h"

static int g_failed = 0;

/* A smooth phantom (two blobs and a ramp on a slab), shifted by (dx, dy) and with noise of
 * amplitude `noise`: voxel i of a side x side x depth float volume (depth 1: an image). */
__global__ static void phantom_kernel(float *out, size_t side, size_t n, float dx, float dy,
                                      float noise, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const float x = (float)(i % side) / side + dx, y = (float)((i / side) % side) / side + dy;
        const float z = (float)(i / (side * side)) / side;
        const float b1 = __expf(-((x - 0.4f) * (x - 0.4f) + (y - 0.55f) * (y - 0.55f)) * 18.0f);
        const float r2 = (x - 0.7f) * (x - 0.7f) + (y - 0.3f) * (y - 0.3f) + z * z;
        const float b2 = __expf(-r2 * 30.0f);
        const float v = 1200.0f * b1 + 600.0f * b2 + 300.0f * x + 100.0f * z;
        const float r = (float)(bench_mix32(i * 2654435761ull + seed) % 1000) / 1000.0f - 0.5f;
        out[i] = v + noise * r;
    }
}

/* Noise: uniform over -200..2200 (the benchmark's given range), independent per pixel. */
__global__ static void noise_kernel(float *out, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = -200.0f + 2400.0f * (float)(bench_mix32(i * 2654435761ull + seed) % 65536) /
                               65536.0f;
}

/* Table 2's noise: a fixed image and `count` moving ones of n pixels, each its own seed. */
static void noise_images(float *d_fixed, float *d_moving, size_t n, uint32_t count, cudaStream_t s)
{
    noise_kernel<<<1024, 256, 0, s>>>(d_fixed, n, 1);
    noise_kernel<<<4096, 256, 0, s>>>(d_moving, (size_t)count * n, 7);
    CK(cudaGetLastError());
}

static void phantom(float *d, size_t side, size_t n, float dx, float dy, float noise,
                    uint32_t seed, cudaStream_t s)
{
    phantom_kernel<<<1024, 256, 0, s>>>(d, side, n, dx, dy, noise, seed);
    CK(cudaGetLastError());
}

/* The floor of the volume row: read both volumes, write the gradient once. */
__global__ static void floor_kernel(const float4 *f, const float4 *m, float4 *g, size_t n4)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4;
         i += (size_t)gridDim.x * blockDim.x) {
        const float4 a = __ldcs(f + i), b = __ldcs(m + i);
        __stcs(g + i, make_float4(a.x - b.x, a.y - b.y, a.z - b.z, a.w - b.w));
    }
}

static dh_parzen_params params_of(uint32_t bins, uint32_t window, int given)
{
    dh_parzen_params p{};
    p.bins = bins, p.fixed_window = window, p.gradient_of = DH_PARZEN_GRAD_MI;
    if (given) {
        p.fixed_range_given = p.moving_range_given = 1;
        p.fixed_lo = p.moving_lo = -200.0;
        p.fixed_hi = p.moving_hi = 2200.0;
    }
    return p;
}

static void call(dh_parzen_cuda_workspace *ws, const dh_parzen_params &p, size_t n,
                 const float *d_fixed, const float *d_moving, uint32_t count, dh_mi_values *d_out,
                 float *d_grad, cudaStream_t s)
{
    dh_parzen_image f = {d_fixed, DH_PARZEN_FLOAT32, nullptr};
    dh_parzen_image m = {d_moving, DH_PARZEN_FLOAT32, nullptr};
    char msg[512];
    if (dh_parzen_mi_cuda(ws, &p, n, &f, &m, count, d_out, d_grad, s, msg, sizeof msg) != 0) {
        fprintf(stderr, "%s\n", msg);
        exit(2);
    }
}

/* The first `items` items of a call against the CPU twin, records and gradients bit for bit. */
static bool check(dh_parzen_cuda_workspace *ws, const dh_parzen_params &p, size_t n,
                  const float *d_fixed, const float *d_moving, uint32_t items, cudaStream_t s)
{
    dh_mi_values *d_out;
    float *d_grad;
    CK(cudaMalloc(&d_out, items * sizeof *d_out));
    CK(cudaMalloc(&d_grad, (size_t)items * n * 4));
    call(ws, p, n, d_fixed, d_moving, items, d_out, d_grad, s);
    std::vector<float> fixed(n), moving((size_t)items * n), grad((size_t)items * n),
        want_grad((size_t)items * n);
    std::vector<dh_mi_values> out(items), want(items);
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(fixed.data(), d_fixed, n * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(moving.data(), d_moving, (size_t)items * n * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(out.data(), d_out, items * sizeof *d_out, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(grad.data(), d_grad, (size_t)items * n * 4, cudaMemcpyDeviceToHost));
    dh_parzen_image f = {fixed.data(), DH_PARZEN_FLOAT32, nullptr};
    dh_parzen_image m = {moving.data(), DH_PARZEN_FLOAT32, nullptr};
    bool ok = dh_parzen_mi_cpu(&p, n, &f, &m, items, want.data(), want_grad.data()) == 0 &&
              memcmp(out.data(), want.data(), items * sizeof *d_out) == 0 &&
              memcmp(grad.data(), want_grad.data(), (size_t)items * n * 4) == 0;
    CK(cudaFree(d_out));
    CK(cudaFree(d_grad));
    if (!ok)
        g_failed = 1;
    return ok;
}

static size_t free_bytes(void)
{
    size_t fr, total;
    CK(cudaMemGetInfo(&fr, &total));
    return fr;
}

/* Table 1: batches of 256 x 256 pairs. */
static void batches(cudaStream_t s, bool quick, const char *gpu)
{
    const size_t side = 256, n = side * side;
    const uint32_t most = quick ? 1024 : 4096;
    float *d_fixed, *d_moving, *d_grad;
    dh_mi_values *d_out;
    CK(cudaMalloc(&d_fixed, n * 4));
    CK(cudaMalloc(&d_moving, (size_t)most * n * 4));
    CK(cudaMalloc(&d_grad, (size_t)most * n * 4));
    CK(cudaMalloc(&d_out, most * sizeof *d_out));
    phantom(d_fixed, side, n, 0.0f, 0.0f, 20.0f, 1, s);
    for (uint32_t b = 0; b < most; b++)
        phantom(d_moving + (size_t)b * n, side, n, 0.002f * (b % 17), -0.001f * (b % 13),
                20.0f, 100 + b, s);
    printf("\n### Parzen MI value + gradient, 256x256 float32 pairs, 64 bins (%s)\n\n", gpu);
    printf("| fixed window | range | batch | check | us per call | evaluations/s | value only, us "
           "| workspace MiB |\n|---|---|---|---|---|---|---|---|\n");
    const uint32_t sizes[] = {1, 16, 64, 256, 1024, 4096};
    for (uint32_t window = 0; window < 2; window++)
        for (int given = 0; given < 2; given++) {
            const dh_parzen_params p = params_of(64, window, given);
            dh_parzen_cuda_workspace *chk = dh_parzen_cuda_workspace_new();
            const bool ok = check(chk, p, n, d_fixed, d_moving, 4, s);
            dh_parzen_cuda_workspace_free(chk);
            for (uint32_t count : sizes) {
                if (count > most)
                    continue;
                dh_parzen_cuda_workspace *ws = dh_parzen_cuda_workspace_new();
                const size_t before = free_bytes();
                call(ws, p, n, d_fixed, d_moving, count, d_out, d_grad, s);
                CK(cudaStreamSynchronize(s));
                const double ws_mib = (double)(before - free_bytes()) / (1 << 20);
                const int reps = count >= 1024 ? 20 : 100;
                const double ms = bench_median_ms(s, reps, [&](int) {
                    call(ws, p, n, d_fixed, d_moving, count, d_out, d_grad, s);
                });
                const double value_ms = bench_median_ms(s, reps, [&](int) {
                    call(ws, p, n, d_fixed, d_moving, count, d_out, nullptr, s);
                });
                printf("| %s | %s | %u | %s | %.1f | %.3g | %.1f | %.1f |\n",
                       window ? "cubic" : "box", given ? "given" : "found", count,
                       ok ? "ok" : "MISMATCH", ms * 1000.0, count / (ms * 1e-3),
                       value_ms * 1000.0, ws_mib);
                dh_parzen_cuda_workspace_free(ws);
            }
        }
    CK(cudaFree(d_fixed));
    CK(cudaFree(d_moving));
    CK(cudaFree(d_grad));
    CK(cudaFree(d_out));
}

/* Table 2: 1024 pairs, box window, smooth images against noise; the cubic window on both. */
static void data_kinds(cudaStream_t s, const char *gpu)
{
    const size_t side = 256, n = side * side;
    const uint32_t count = 1024;
    float *d_fixed, *d_moving, *d_grad;
    dh_mi_values *d_out;
    CK(cudaMalloc(&d_fixed, n * 4));
    CK(cudaMalloc(&d_moving, (size_t)count * n * 4));
    CK(cudaMalloc(&d_grad, (size_t)count * n * 4));
    CK(cudaMalloc(&d_out, count * sizeof *d_out));
    printf("\n### Parzen MI value + gradient by image content, %u pairs of 256x256 float32, 64 "
           "bins (%s)\n\n",
           count, gpu);
    printf("| images | fixed window | range | check | us per call | evaluations/s | value only, "
           "us |\n|---|---|---|---|---|---|---|\n");
    for (int noise = 0; noise < 2; noise++) {
        if (noise) {
            noise_images(d_fixed, d_moving, n, count, s);
        } else {
            phantom(d_fixed, side, n, 0.0f, 0.0f, 20.0f, 1, s);
            for (uint32_t b = 0; b < count; b++)
                phantom(d_moving + (size_t)b * n, side, n, 0.002f * (b % 17), -0.001f * (b % 13),
                        20.0f, 100 + b, s);
        }
        for (int config = 0; config < 3; config++) { /* box found, box given, cubic found */
            const int given = config == 1, window = config == 2;
            const dh_parzen_params p = params_of(64, (uint32_t)window, given);
            dh_parzen_cuda_workspace *ws = dh_parzen_cuda_workspace_new();
            const bool ok = check(ws, p, n, d_fixed, d_moving, 2, s);
            const double ms = bench_median_ms(s, 20, [&](int) {
                call(ws, p, n, d_fixed, d_moving, count, d_out, d_grad, s);
            });
            const double value_ms = bench_median_ms(s, 20, [&](int) {
                call(ws, p, n, d_fixed, d_moving, count, d_out, nullptr, s);
            });
            printf("| %s | %s | %s | %s | %.1f | %.3g | %.1f |\n",
                   noise ? "noise" : "smooth (table 1's)", window ? "cubic" : "box",
                   given ? "given" : "found",
                   ok ? "ok" : "MISMATCH", ms * 1000.0, count / (ms * 1e-3), value_ms * 1000.0);
            dh_parzen_cuda_workspace_free(ws);
        }
    }
    CK(cudaFree(d_fixed));
    CK(cudaFree(d_moving));
    CK(cudaFree(d_grad));
    CK(cudaFree(d_out));
}

/* Table 3: a 512^3 float32 volume pair against the floor (headline: 64 bins only). */
static void volume(cudaStream_t s, const char *gpu, bool headline)
{
    const size_t side = 512, n = side * side * side;
    float *d_fixed, *d_moving, *d_grad;
    dh_mi_values *d_out;
    CK(cudaMalloc(&d_fixed, n * 4));
    CK(cudaMalloc(&d_moving, n * 4));
    CK(cudaMalloc(&d_grad, n * 4));
    CK(cudaMalloc(&d_out, sizeof *d_out));
    phantom(d_fixed, side, n, 0.0f, 0.0f, 20.0f, 1, s);
    phantom(d_moving, side, n, 0.01f, -0.005f, 20.0f, 2, s);
    const double floor_ms = bench_median_ms(s, 10, [&](int) {
        floor_kernel<<<4096, 256, 0, s>>>((const float4 *)d_fixed, (const float4 *)d_moving,
                                         (float4 *)d_grad, n / 4);
    });
    const double gb = 3.0 * n * 4 / 1e9;
    printf("\n### Parzen MI value + gradient, a 512^3 float32 volume pair (%s)\n\n", gpu);
    printf("| what | bins | fixed window | range | check (512x512x48 slab) | ms | vs floor |\n"
           "|---|---|---|---|---|---|---|\n");
    printf("| floor: read both volumes, write the gradient once (%.2f GB) | - | - | - | - | %.2f | "
           "1.00 |\n",
           gb, floor_ms);
    const uint32_t bins[] = {64, 256};
    for (uint32_t b : bins)
        for (uint32_t window = 0; window < 2; window++)
            for (int given = 0; given < 2; given++) {
                if (headline && (b != 64 || (window && given)))
                    continue;
                const dh_parzen_params p = params_of(b, window, given);
                dh_parzen_cuda_workspace *ws = dh_parzen_cuda_workspace_new();
                const bool ok = check(ws, p, side * side * 48, d_fixed, d_moving, 1, s);
                const double ms = bench_median_ms(s, 5, [&](int) {
                    call(ws, p, n, d_fixed, d_moving, 1, d_out, d_grad, s);
                });
                printf("| Parzen MI + gradient | %u | %s | %s | %s | %.2f | %.2f |\n", b,
                       window ? "cubic" : "box", given ? "given" : "found",
                       ok ? "ok" : "MISMATCH", ms, ms / floor_ms);
                dh_parzen_cuda_workspace_free(ws);
            }
    CK(cudaFree(d_fixed));
    CK(cudaFree(d_moving));
    CK(cudaFree(d_grad));
    CK(cudaFree(d_out));
}

/* --profile: a few calls of the two headline shapes alone, for a profiler's per-kernel times;
 * `noise`: the 1024 pairs are table 2's noise. */
static void profile(cudaStream_t s, bool noise)
{
    const size_t side = 256, n = side * side, vn = (size_t)512 * 512 * 512;
    const uint32_t count = 1024;
    float *d_fixed, *d_moving, *d_grad;
    dh_mi_values *d_out;
    CK(cudaMalloc(&d_fixed, vn * 4));
    CK(cudaMalloc(&d_moving, vn * 4));
    CK(cudaMalloc(&d_grad, vn * 4));
    CK(cudaMalloc(&d_out, count * sizeof *d_out));
    if (noise) {
        noise_images(d_fixed, d_moving, n, count, s);
    } else {
        phantom(d_fixed, side, vn, 0.0f, 0.0f, 20.0f, 1, s);
        phantom(d_moving, side, vn, 0.002f, -0.001f, 20.0f, 2, s);
    }
    dh_parzen_cuda_workspace *ws = dh_parzen_cuda_workspace_new();
    const dh_parzen_params p = params_of(64, 0, 0);
    for (int i = 0; i < 3; i++)
        call(ws, p, n, d_fixed, d_moving, count, d_out, d_grad, s);
    phantom(d_fixed, 512, vn, 0.0f, 0.0f, 20.0f, 1, s);
    phantom(d_moving, 512, vn, 0.01f, -0.005f, 20.0f, 2, s);
    for (int i = 0; i < 3; i++)
        call(ws, p, vn, d_fixed, d_moving, 1, d_out, d_grad, s);
    CK(cudaStreamSynchronize(s));
    dh_parzen_cuda_workspace_free(ws);
    CK(cudaFree(d_fixed));
    CK(cudaFree(d_moving));
    CK(cudaFree(d_grad));
    CK(cudaFree(d_out));
}

int main(int argc, char **argv)
{
    const bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    const bool headline = argc > 1 && strcmp(argv[1], "--headline") == 0;
    const cudaDeviceProp prop = bench_device();
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    if (argc > 1 && strcmp(argv[1], "--profile") == 0) {
        profile(s, argc > 2 && strcmp(argv[2], "noise") == 0);
        return 0;
    }
    if (!headline)
        batches(s, quick, prop.name);
    data_kinds(s, prop.name);
    volume(s, prop.name, headline);
    CK(cudaStreamDestroy(s));
    if (g_failed)
        fprintf(stderr, "bench_mi_parzen: GPU results differ from the CPU twin\n");
    return g_failed;
}
