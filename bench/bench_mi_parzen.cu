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
 * the program exits 1. Usage:
 * bench_mi_parzen [--quick | --headline | --profile [noise] | --floor | --floor3d | --gap3d |
 *                  --waves3d | --place3d | --fixed16]
 * (--quick: batches up to 1024; --headline: tables 2 and 3 alone, the volume at 64 bins only, to
 * compare builds of the kernels in one run; --profile: a few calls of the two headline shapes
 * alone, for nsys or ncu, on the noise table's images with `noise`; --floor: table 2's box
 * window with ranges found, pass by pass, against the floors of bench_mi_parzen_floor.cuh, on
 * the smooth pairs and on noise; --floor3d: the same for table 3's 512^3 pair, box window, 64
 * bins, ranges found, against the read floor of table 3 as well; both also time the call with
 * ranges given, the fixed pass alone in its vector and scalar forms and its read + write floor,
 * and print the given-range call's floors; --gap3d: the 512^3 call with ranges given against
 * its passes launched in its order, back to back and after idle, and alone, with the SM clock
 * after each loop: where the call's time over its passes' sum goes; --waves3d: the fixed,
 * histogram and gradient passes of the 512^3 pair with the library's grids and with grids of one
 * wave, on three fresh sets of buffers each, ranges given and found; --place3d: the smooth
 * 512^3 histogram pass over the same data in differently placed buffers and with other shared
 * carveouts, bench_mi_parzen_place3d.cuh; --fixed16: the 512^3 fixed pass on uint16 and int16
 * samples by thresholds and in the exact form, bench_mi_parzen_fixed16.cuh. --floor3d's fixed
 * pass is the library's box rows by thresholds, beside the exact FP64 form they replaced, their
 * rows checked equal)
 */
#define BENCH_CUDA_ERROR_EXIT 2
#include "bench_common.cuh"

#include <math.h>
#include <string.h>

#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "bench_mi_parzen_floor.cuh"
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

/* The batches' images (tables 1 and 2, --floor): smooth pairs (each moving image the phantom
 * shifted by its index, with its own noise), or noise. */
static void batch_images(float *d_fixed, float *d_moving, size_t side, uint32_t count, bool noise,
                         cudaStream_t s)
{
    const size_t n = side * side;
    if (noise) {
        noise_images(d_fixed, d_moving, n, count, s);
        return;
    }
    phantom(d_fixed, side, n, 0.0f, 0.0f, 20.0f, 1, s);
    for (uint32_t b = 0; b < count; b++)
        phantom(d_moving + (size_t)b * n, side, n, 0.002f * (b % 17), -0.001f * (b % 13), 20.0f,
                100 + b, s);
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
    batch_images(d_fixed, d_moving, side, most, false, s);
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
        batch_images(d_fixed, d_moving, side, count, noise != 0, s);
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

/* What --floor and --floor3d measure: `count` items of `n` pixels (phantom side `side`), checked
 * against the CPU twin on the first `check_pixels` of `check_items` items. */
struct floor_shape {
    size_t side, n;
    uint32_t count;
    size_t check_pixels;
    uint32_t check_items;
};
static const floor_shape FLOOR_BATCH = {256, 256 * 256, 1024, 256 * 256, 2};
static const floor_shape FLOOR_VOLUME = {512, (size_t)512 * 512 * 512, 1, (size_t)512 * 512 * 48,
                                         1};

/* The shape's images: table 2's batches, or table 3's volume pair (noise: table 2's noise). */
static void floor_images(const floor_shape &sh, float *d_fixed, float *d_moving, bool noise,
                         cudaStream_t s)
{
    if (sh.count > 1) {
        batch_images(d_fixed, d_moving, sh.side, sh.count, noise, s);
    } else if (noise) {
        noise_images(d_fixed, d_moving, sh.n, 1, s);
    } else {
        phantom(d_fixed, sh.side, sh.n, 0.0f, 0.0f, 20.0f, 1, s);
        phantom(d_moving, sh.side, sh.n, 0.01f, -0.005f, 20.0f, 2, s);
    }
}

/* ---- --floor, --floor3d: the passes one by one, and their floors -----------------------------
 * floor_batch launches the real kernels as dh_parzen_mi_cuda does for these shapes (box window,
 * float32, no masks, ranges found, a gradient; mi_parzen_cuda.cu's grids and block sizes), on its
 * own buffers, so that each pass is timed alone; its records and gradients are checked bit for bit
 * against the library's call first. */
struct floor_batch {
    pz_args a;
    floor_axis *d_faxes;
    unsigned long long *d_fold;
    dim3 range_grid, hist_grid, grad_grid;
    unsigned fixed_blocks;     /* pz_fixed_kernel's (the scalar path; session 18's pass) */
    unsigned fixed_vec_blocks; /* pz_fixed_vec_kernel's (the library's path for these buffers) */
    unsigned exact_vec_blocks; /* the vector kernel's exact FP64 form (session 19's box rows) */
    size_t cells;
    size_t zero16, ones16; /* 16-byte words of the counts + histograms and of the range keys */
    int sms;
    bool score_split; /* pz_score_setup's */
    bool given_set;   /* `given` holds the host's axes for the ranges in `a` (floor_prepare) */
    pz_given_axes given;
};

/* mi_parzen_cuda.cu's pz_blocks_per_item: 8 blocks per SM over the batch, at least per_block
 * pixels a block. */
static unsigned floor_blocks_per_item(int sms, size_t pixels, uint32_t count, size_t per_block)
{
    const size_t want = ((size_t)sms * 8 + count - 1) / count;
    const size_t most = (pixels + per_block - 1) / per_block;
    const size_t p = want < most ? want : most;
    return (unsigned)(p < 1 ? 1 : p > 65535 ? 65535 : p);
}

template <class T> static T *floor_alloc(size_t count)
{
    T *p;
    CK(cudaMalloc(&p, count * sizeof(T)));
    return p;
}

static floor_batch floor_setup(int sms, size_t n, uint32_t count, const float *d_fixed,
                               const float *d_moving, float *d_grad, dh_mi_values *d_out)
{
    floor_batch f;
    memset(&f, 0, sizeof f);
    pz_args &a = f.a;
    f.cells = 64 * 64;
    a.pixels = n, a.count = count, a.bins = 64;
    a.fixed_window = DH_PARZEN_FIXED_BOX, a.gradient_of = DH_PARZEN_GRAD_MI;
    a.fixed = d_fixed, a.fixed_sample = DH_PARZEN_FLOAT32, a.moving = d_moving;
    /* the keys, and the counts beside the histograms, in whole 16-byte words, as the library's
     * workspace lays them out for pz_prepare_kernel */
    const size_t keys_words = (((size_t)count + 1) * 2 + 3) / 4 * 4, n_words = (count + 1) / 2 * 2;
    a.keys = floor_alloc<uint32_t>(keys_words);
    a.n = floor_alloc<unsigned long long>(n_words + count * f.cells);
    a.joint = a.n + n_words;
    f.zero16 = (n_words + count * f.cells) / 2;
    f.ones16 = keys_words / 4;
    f.sms = sms;
    CK(pz_score_setup(&f.score_split));
    a.axes = floor_alloc<dh_parzen_axis>((size_t)count + 1);
    a.rcp = floor_alloc<double>((size_t)count + 1);
    a.thr = floor_alloc<float>(DH_PARZEN_MAX_BINS);
    a.cell = floor_alloc<double>(count * f.cells);
    a.scale = floor_alloc<double>(count);
    a.grad_zero = floor_alloc<uint32_t>(count);
    a.fixed_row = floor_alloc<uint8_t>(n);
    a.out = d_out, a.gradient = d_grad;
    a.vec_gradient = n % PZ_RUN == 0; /* cudaMalloc'd buffers: aligned */
    f.d_faxes = floor_alloc<floor_axis>(count);
    f.range_grid = dim3(count + 1, floor_blocks_per_item(sms, n, count + 1, 4096));
    const size_t hist_per_block = f.cells > 4096 ? f.cells : 4096;
    f.hist_grid = dim3(count, floor_blocks_per_item(sms, n, count, hist_per_block));
    f.grad_grid = dim3(count, floor_blocks_per_item(sms, n, count, 2048));
    int fixed_per_sm[2], exact_per_sm[2]; /* the library's grids (pz_launch_fixed) */
    CK((pz_fixed_occupancy<DH_PARZEN_FLOAT32, true>(fixed_per_sm)));
    CK((pz_fixed_occupancy<DH_PARZEN_FLOAT32, false>(exact_per_sm)));
    f.fixed_blocks = (unsigned)pz_fixed_blocks(n, false, sms, fixed_per_sm[0]);
    f.fixed_vec_blocks = (unsigned)pz_fixed_blocks(n, true, sms, fixed_per_sm[1]);
    f.exact_vec_blocks = (unsigned)pz_fixed_blocks(n, true, sms, exact_per_sm[1]);
    f.d_fold = floor_alloc<unsigned long long>((size_t)count * f.hist_grid.y * PZ_HIST_THREADS);
    return f;
}

/* The library's first step (mi_parzen_cuda.cu, pz_prepare_kernel): the counts and histograms
 * zeroed, and the range keys set (ranges found) or the axes computed (both given). */
static void floor_prepare(floor_batch &f, bool found, cudaStream_t s)
{
    if (!found && !f.given_set) { /* once, as the library's workspace keeps them */
        pz_given_axes_set(f.a, &f.given);
        f.given_set = true;
    }
    pz_launch_prepare(f.a, (uint4 *)f.a.n, f.zero16, (uint4 *)f.a.keys, found ? f.ones16 : 0,
                      f.given, (size_t)f.sms * 8, s);
}

/* A measurement's check line ("check (label): ok (why)" or FAILED, which fails the program). */
static void floor_check_line(const char *label, bool ok, const char *why)
{
    printf("\ncheck (%s): %s\n", label, ok ? why : "FAILED");
    if (!ok)
        g_failed = 1;
}

/* The floor batch's arguments with the ranges of params_of(..., given = 1), -200..2200 on both
 * axes (no range pass), for the kernels launched by hand. */
static void floor_set_given(pz_args &a)
{
    a.fixed_given = a.moving_given = 1;
    a.fixed_lo = a.moving_lo = -200.0;
    a.fixed_hi = a.moving_hi = 2200.0;
}

static void floor_free(floor_batch &f)
{
    void *p[] = {f.a.keys,  f.a.n,     f.a.axes,      f.a.rcp,       f.a.thr, /* joint: in n's */
                 f.a.cell,  f.a.scale, f.a.grad_zero, f.a.fixed_row, f.d_faxes, f.d_fold};
    for (void *x : p)
        CK(cudaFree(x));
}

/* Median ms of fn over 20 runs (after 3), each timed alone by two events, prep run before the
 * first event (the histograms' zeroing, which the call does in its memset). */
template <class P, class F> static double floor_ms(cudaStream_t s, P prep, F fn)
{
    const double us = bench_median_each_prepped_us(s, 3, 20, prep, fn);
    CK(cudaGetLastError());
    return us / 1000.0;
}

template <class T> static std::vector<T> floor_get(const T *d, size_t count)
{
    std::vector<T> h(count);
    CK(cudaMemcpy(h.data(), d, count * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
}

/* Whether two device buffers hold the same bytes. */
static bool floor_same(const void *d_x, const void *d_y, size_t bytes)
{
    const std::vector<char> x = floor_get((const char *)d_x, bytes),
                            y = floor_get((const char *)d_y, bytes);
    return memcmp(x.data(), y.data(), bytes) == 0;
}

/* The host's reference for one item of each floor that computes something (mi_parzen.h's
 * arithmetic: the CPU twin's bits, which the GPU twin equals). */
static uint64_t floor_weight_ref(const dh_parzen_axis &ax, const uint8_t *rows, const float *v,
                                 size_t n)
{
    uint64_t acc = 0;
    for (size_t k = 0; k < n; k++) {
        if (rows[k] == PZ_NO_ROW || !isfinite(v[k]))
            continue;
        double f, w[4];
        uint64_t q[4];
        const uint32_t im = dh_parzen_index(ax.bins, dh_parzen_position(&ax, v[k]), &f) - 1;
        dh_parzen_bspline(f, w);
        dh_parzen_quantize(w, DH_PARZEN_UNIT, q);
        acc += floor_fold(q, rows[k] * ax.bins + im);
    }
    return acc;
}

static float floor_arith_ref(const dh_parzen_axis &ax, double scale, uint8_t row, float x)
{
    if (row == PZ_NO_ROW || !isfinite(x) || x < ax.lo || x > ax.hi)
        return 0.0f;
    double f, slope[4], sum;
    const double wf[1] = {1.0};
    const uint32_t im = dh_parzen_index(ax.bins, dh_parzen_position(&ax, x), &f) - 1;
    dh_parzen_bspline_slope(f, slope);
    (void)im;
#define FLOOR_CELL(r, c) scale
    DH_PARZEN_PIXEL_SUM(sum, 1u, wf, slope, FLOOR_CELL, (uint32_t)row, im);
#undef FLOOR_CELL
    return (float)(sum * scale);
}

/* One data kind's row of figures (us) and whether every check passed. */
struct floor_figures {
    double call, memsets, range, axes_fixed, hist, score, grad, read, copy, hist_floor,
        hist_plain, weights, grad_loads, grad_arith;
    double pair; /* the volume: table 3's floor (read both volumes, write the gradient once) */
    /* session 19: the call with ranges given; the fixed pass alone, scalar (session 18's) and
     * vector (the library's now), and its floor (floor_fixed_kernel) */
    double call_given, fixed_scalar, fixed_vec, fixed_floor;
    /* session 20: the vector pass's exact FP64 form (session 19's box rows, the cubic window's
     * path), beside the library's box rows by thresholds */
    double fixed_exact;
    bool ok;
    char why[160];
};

static void floor_fail(floor_figures &r, const char *what)
{
    if (r.ok)
        snprintf(r.why, sizeof r.why, "%s", what);
    r.ok = false;
}

static floor_figures floor_run(cudaStream_t s, int sms, const floor_shape &sh, bool noise)
{
    const size_t n = sh.n, cells = 64 * 64;
    const uint32_t count = sh.count;
    float *d_fixed, *d_moving, *d_grad, *d_grad_lib;
    dh_mi_values *d_out, *d_out_lib;
    CK(cudaMalloc(&d_fixed, n * 4));
    CK(cudaMalloc(&d_moving, (size_t)count * n * 4));
    CK(cudaMalloc(&d_grad, (size_t)count * n * 4));
    CK(cudaMalloc(&d_grad_lib, (size_t)count * n * 4));
    CK(cudaMalloc(&d_out, count * sizeof *d_out));
    CK(cudaMalloc(&d_out_lib, count * sizeof *d_out));
    floor_images(sh, d_fixed, d_moving, noise, s);
    floor_figures r;
    memset(&r, 0, sizeof r);
    r.ok = true;
    const dh_parzen_params p = params_of(64, DH_PARZEN_FIXED_BOX, 0);
    dh_parzen_cuda_workspace *ws = dh_parzen_cuda_workspace_new();
    if (!check(ws, p, sh.check_pixels, d_fixed, d_moving, sh.check_items, s))
        floor_fail(r, "the library's call differs from the CPU twin");
    call(ws, p, n, d_fixed, d_moving, count, d_out_lib, d_grad_lib, s);
    r.call = 1000.0 * bench_median_ms(s, 20, [&](int) {
                 call(ws, p, n, d_fixed, d_moving, count, d_out_lib, d_grad_lib, s);
             });
    {
        /* ranges given (no range pass): the benchmark's -200..2200, which holds both kinds */
        const dh_parzen_params pg = params_of(64, DH_PARZEN_FIXED_BOX, 1);
        if (!check(ws, pg, sh.check_pixels, d_fixed, d_moving, sh.check_items, s))
            floor_fail(r, "the library's call with ranges given differs from the CPU twin");
        call(ws, pg, n, d_fixed, d_moving, count, d_out_lib, d_grad_lib, s);
        r.call_given = 1000.0 * bench_median_ms(s, 20, [&](int) {
                           call(ws, pg, n, d_fixed, d_moving, count, d_out_lib, d_grad_lib, s);
                       });
        call(ws, p, n, d_fixed, d_moving, count, d_out_lib, d_grad_lib, s); /* found, for below */
    }
    dh_parzen_cuda_workspace_free(ws);

    floor_batch fb = floor_setup(sms, n, count, d_fixed, d_moving, d_grad, d_out);
    const pz_args &a = fb.a;
    const size_t hist_smem = cells * 8;
    auto zero_hist = [&] {
        CK(cudaMemsetAsync(a.n, 0, count * 8, s));
        CK(cudaMemsetAsync(a.joint, 0, count * cells * 8, s));
    };
    auto zero = [&] { floor_prepare(fb, true, s); };
    auto range = [&] {
        pz_range_kernel<DH_PARZEN_FLOAT32><<<fb.range_grid, PZ_PIXEL_THREADS, 0, s>>>(a);
    };
    auto axes_fixed = [&] {
        pz_axes_kernel<<<(count + 1 + 255) / 256, 256, 0, s>>>(a);
        pz_fixed_vec_kernel<DH_PARZEN_FLOAT32, true>
            <<<fb.fixed_vec_blocks, PZ_PIXEL_THREADS, 0, s>>>(a);
    };
    auto hist = [&] {
        pz_hist_kernel<DH_PARZEN_FLOAT32, false, true, false>
            <<<fb.hist_grid, PZ_HIST_THREADS, hist_smem, s>>>(a);
    };
    auto score = [&] { CK(pz_launch_score(a, 1, fb.sms, fb.score_split, s)); };
    auto grad = [&] {
        pz_gradient_kernel<DH_PARZEN_FLOAT32, false, true>
            <<<fb.grad_grid, PZ_PIXEL_THREADS, hist_smem, s>>>(a);
    };
    auto none = [] {};
    zero(), range(), axes_fixed(), hist(), score(), grad();
    CK(cudaStreamSynchronize(s));
    CK(cudaGetLastError());
    if (!floor_same(d_out, d_out_lib, count * sizeof *d_out) ||
        !floor_same(d_grad, d_grad_lib, (size_t)count * n * 4))
        floor_fail(r, "the passes launched one by one differ from the library's call");

    r.memsets = 1000.0 * floor_ms(s, none, zero);
    r.range = 1000.0 * floor_ms(s, zero, range);
    r.axes_fixed = 1000.0 * floor_ms(s, none, axes_fixed);
    r.hist = 1000.0 * floor_ms(s, zero_hist, hist);
    {
        /* the fixed pass alone: the vector kernel (the library's: box rows by thresholds), the
         * scalar one, and the vector kernel's exact FP64 form (session 19's), the same rows byte
         * for byte, and those rows as the host computes them */
        r.fixed_vec = 1000.0 * floor_ms(s, none, [&] {
                          pz_fixed_vec_kernel<DH_PARZEN_FLOAT32, true>
                              <<<fb.fixed_vec_blocks, PZ_PIXEL_THREADS, 0, s>>>(a);
                      });
        const std::vector<uint8_t> vec_rows = floor_get(a.fixed_row, n);
        r.fixed_scalar = 1000.0 * floor_ms(s, none, [&] {
                             pz_fixed_kernel<DH_PARZEN_FLOAT32, true>
                                 <<<fb.fixed_blocks, PZ_PIXEL_THREADS, 0, s>>>(a);
                         });
        const std::vector<uint8_t> scalar_rows = floor_get(a.fixed_row, n);
        if (memcmp(vec_rows.data(), scalar_rows.data(), n) != 0)
            floor_fail(r, "the fixed pass's vector and scalar rows differ");
        r.fixed_exact = 1000.0 * floor_ms(s, none, [&] {
                            pz_fixed_vec_kernel<DH_PARZEN_FLOAT32, false>
                                <<<fb.exact_vec_blocks, PZ_PIXEL_THREADS, 0, s>>>(a);
                        });
        if (memcmp(vec_rows.data(), floor_get(a.fixed_row, n).data(), n) != 0)
            floor_fail(r, "the fixed rows by thresholds differ from the exact FP64 ones");
        const dh_parzen_axis fax = floor_get(a.axes + count, 1)[0];
        const std::vector<float> fv = floor_get(d_fixed, n);
        for (size_t k = 0; k < n; k++) {
            double f;
            const uint8_t want = isfinite(fv[k]) ? (uint8_t)dh_parzen_index(
                                                       64, dh_parzen_position(&fax, fv[k]), &f)
                                                 : PZ_NO_ROW;
            if (vec_rows[k] != want) {
                floor_fail(r, "the fixed pass's rows differ from the host's");
                break;
            }
        }
    }
    r.score = 1000.0 * floor_ms(s, none, score);
    r.grad = 1000.0 * floor_ms(s, none, grad);

    /* the floors; the host's copies for their checks */
    const std::vector<dh_parzen_axis> axes = floor_get(a.axes, count + 1);
    const std::vector<double> scale = floor_get(a.scale, count);
    const std::vector<uint8_t> rows = floor_get(a.fixed_row, n);
    const std::vector<float> first = floor_get(d_moving, n);
    const std::vector<float> last = floor_get(d_moving + (size_t)(count - 1) * n, n);
    std::vector<floor_axis> faxes(count);
    for (uint32_t b = 0; b < count; b++)
        faxes[b] = {(float)axes[b].lo, (float)axes[b].hi, (float)(1.0 / axes[b].width)};
    CK(cudaMemcpy(fb.d_faxes, faxes.data(), count * sizeof(floor_axis), cudaMemcpyHostToDevice));
    const size_t n4 = (size_t)count * n / 4;
    if (count == 1) { /* table 3's floor, which issue 22's 4x is measured against */
        r.pair = 1000.0 * floor_ms(s, none, [&] {
                     floor_kernel<<<4096, 256, 0, s>>>((const float4 *)d_fixed,
                                                       (const float4 *)d_moving, (float4 *)d_grad,
                                                       n4);
                 });
        const std::vector<float> f = floor_get(d_fixed, n), g = floor_get(d_grad, n);
        for (size_t k = 0; k < n; k++)
            if (g[k] != f[k] - first[k])
                floor_fail(r, "the read floor's output");
    }
    {
        /* the fixed pass's floor: its reads and writes alone, into a buffer of its own */
        uint32_t *d_rows = floor_alloc<uint32_t>(n / 4);
        r.fixed_floor = 1000.0 * floor_ms(s, none, [&] {
                            floor_fixed_kernel<<<fb.fixed_vec_blocks, PZ_PIXEL_THREADS, 0, s>>>(
                                (const float4 *)d_fixed, d_rows, n / 4);
                        });
        const std::vector<uint32_t> got = floor_get(d_rows, n / 4);
        const std::vector<float> fv = floor_get(d_fixed, n);
        for (size_t g = 0; g < n / 4; g++)
            if (got[g] != floor_top_bytes(fv[4 * g], fv[4 * g + 1], fv[4 * g + 2], fv[4 * g + 3])) {
                floor_fail(r, "the fixed pass floor's bytes");
                break;
            }
        CK(cudaFree(d_rows));
    }
    uint32_t *d_sink = floor_alloc<uint32_t>(1);
    r.read = 1000.0 * floor_ms(s, none, [&] {
                 bench_read_kernel<<<4096, 256, 0, s>>>((const uint4 *)d_moving, n4, d_sink);
             });
    CK(cudaFree(d_sink));
    r.copy = 1000.0 * floor_ms(s, none, [&] {
                 floor_copy_kernel<<<4096, 256, 0, s>>>((const float4 *)d_moving, (float4 *)d_grad,
                                                        n4);
             });
    {
        const std::vector<float> g = floor_get(d_grad, n);
        for (size_t k = 0; k < n; k++)
            if (g[k] != 0.5f * first[k])
                floor_fail(r, "the copy floor's output");
    }
    for (int group = 1; group >= 0; group--) {
        auto kernel = group ? floor_hist_kernel<true> : floor_hist_kernel<false>;
        const double us = 1000.0 * floor_ms(s, zero_hist, [&] {
            kernel<<<fb.hist_grid, PZ_HIST_THREADS, hist_smem, s>>>(a, fb.d_faxes);
        });
        (group ? r.hist_floor : r.hist_plain) = us;
        /* every counted pixel added exactly one unit over its four cells */
        const std::vector<unsigned long long> joint = floor_get(a.joint, count * cells);
        const std::vector<unsigned long long> counted = floor_get(a.n, count);
        for (uint32_t b = 0; b < count; b++) {
            unsigned long long total = 0;
            for (size_t c = 0; c < cells; c++)
                total += joint[b * cells + c];
            if (counted[b] != n || total != counted[b] * DH_PARZEN_UNIT)
                floor_fail(r, "the histogram floor's totals");
        }
    }
    r.weights = 1000.0 * floor_ms(s, none, [&] {
                    floor_weight_kernel<<<fb.hist_grid, PZ_HIST_THREADS, 0, s>>>(a, fb.d_fold);
                });
    {
        const size_t per_item = (size_t)fb.hist_grid.y * PZ_HIST_THREADS;
        const std::vector<unsigned long long> fold = floor_get(fb.d_fold, count * per_item);
        uint64_t got0 = 0, got1 = 0;
        for (size_t t = 0; t < per_item; t++) {
            got0 += fold[t];
            got1 += fold[(count - 1) * per_item + t];
        }
        if (got0 != floor_weight_ref(axes[0], rows.data(), first.data(), n) ||
            got1 != floor_weight_ref(axes[count - 1], rows.data(), last.data(), n))
            floor_fail(r, "the weight floor's fold");
    }
    r.grad_loads = 1000.0 * floor_ms(s, none, [&] {
                       floor_gradient_kernel<true>
                           <<<fb.grad_grid, PZ_PIXEL_THREADS, hist_smem, s>>>(a, fb.d_faxes);
                   });
    {
        const std::vector<double> table = floor_get(a.cell, cells);
        const std::vector<float> g = floor_get(d_grad, n);
        for (size_t k = 0; k < n; k++) {
            float want = 0.0f;
            if (rows[k] != PZ_NO_ROW && isfinite(first[k])) {
                const double *t = &table[rows[k] * 64u + floor_first_cell(first[k], faxes[0], 64)];
                want = (float)(((t[0] + t[1]) + t[2]) + t[3]);
            }
            if (g[k] != want)
                floor_fail(r, "the gradient loads floor's sums");
        }
    }
    r.grad_arith = 1000.0 * floor_ms(s, none, [&] {
                       floor_gradient_kernel<false><<<fb.grad_grid, PZ_PIXEL_THREADS, 0, s>>>(
                           a, fb.d_faxes);
                   });
    {
        const std::vector<float> g = floor_get(d_grad, n);
        for (size_t k = 0; k < n; k++)
            if (g[k] != floor_arith_ref(axes[0], scale[0], rows[k], first[k]))
                floor_fail(r, "the gradient arithmetic floor's values");
    }
    floor_free(fb);
    CK(cudaFree(d_fixed));
    CK(cudaFree(d_moving));
    CK(cudaFree(d_grad));
    CK(cudaFree(d_grad_lib));
    CK(cudaFree(d_out));
    CK(cudaFree(d_out_lib));
    if (!r.ok)
        g_failed = 1;
    return r;
}

/* --floor's and --floor3d's table: both data kinds, then the floor of the call: the passes that
 * have no floor kernel as measured (memsets, range, axes and fixed rows, score), each split pass
 * at the larger of its two parts (as if they overlapped perfectly: a lower bound) and at their
 * sum; against 2M evaluations/s (the batch) or 4x table 3's floor (the volume). */
static void floors(cudaStream_t s, const cudaDeviceProp &prop, const floor_shape &sh)
{
    const bool volume = sh.count == 1;
    const floor_figures f[2] = {floor_run(s, prop.multiProcessorCount, sh, false),
                                floor_run(s, prop.multiProcessorCount, sh, true)};
    if (volume)
        printf("\n### Parzen MI 512^3 pair pass by pass against its floors: one pair of 512^3 "
               "float32, 64 bins, box window, ranges found (%s)\n\n",
               prop.name);
    else
        printf("\n### Parzen MI batch pass by pass against its floors: 1024 pairs of 256x256 "
               "float32, 64 bins, box window, ranges found (%s)\n\n",
               prop.name);
    printf("| pass or floor | smooth phantom, us | noise, us |\n|---|---|---|\n");
    struct row_of {
        const char *what;
        double floor_figures::*v;
    };
    const row_of volume_rows[] = {
        {"floor: read both volumes, write the gradient once (table 3's; the target's 1x)",
         &floor_figures::pair},
        {"floor: read the moving volume once (bench_read_kernel)", &floor_figures::read},
        {"floor: read it once, write the gradient once", &floor_figures::copy},
    };
    const row_of rows[] = {
        {"the whole call (dh_parzen_mi_cuda, value + gradient)", &floor_figures::call},
        {"pz_prepare_kernel (range keys, counts, histograms)", &floor_figures::memsets},
        {"pz_range_kernel", &floor_figures::range},
        {"pz_axes_kernel + pz_fixed_vec_kernel (the library's fixed pass)",
         &floor_figures::axes_fixed},
        {"pz_fixed_vec_kernel alone (session 20: box rows by thresholds, the library's)",
         &floor_figures::fixed_vec},
        {"pz_fixed_vec_kernel's exact FP64 form alone (session 19's box rows)",
         &floor_figures::fixed_exact},
        {"pz_fixed_kernel alone (the scalar path, by thresholds)", &floor_figures::fixed_scalar},
        {"fixed pass floor: read the fixed image once, write a byte per pixel",
         &floor_figures::fixed_floor},
        {"pz_hist_kernel", &floor_figures::hist},
        {"pz_launch_score (the library's form for this batch)", &floor_figures::score},
        {"pz_gradient_kernel", &floor_figures::grad},
        {"floor: read the 1024 moving images once (bench_read_kernel)", &floor_figures::read},
        {"floor: read them once, write a gradient's worth once", &floor_figures::copy},
        {"histogram floor: loads + shared fixed-point atomics as the pass (warp sums), constant "
         "weights",
         &floor_figures::hist_floor},
        {"histogram floor: loads + 4 atomics (and carries) per pixel, no warp sums",
         &floor_figures::hist_plain},
        {"weight floor: loads + position, B-spline, quantization, no atomics",
         &floor_figures::weights},
        {"gradient floor: loads, table reads, stores, no FP64", &floor_figures::grad_loads},
        {"gradient floor: loads, FP64 arithmetic, stores, no table reads",
         &floor_figures::grad_arith},
    };
    for (const row_of &r : rows) {
        if (volume && r.v == &floor_figures::copy)
            continue; /* among volume_rows, printed in the read row's place */
        if (volume && r.v == &floor_figures::read) {
            for (const row_of &v : volume_rows)
                printf("| %s | %.1f | %.1f |\n", v.what, f[0].*v.v, f[1].*v.v);
            continue;
        }
        printf("| %s | %.1f | %.1f |\n", r.what, f[0].*r.v, f[1].*r.v);
    }
    double low[2], high[2], passes[2];
    for (int i = 0; i < 2; i++) {
        const floor_figures &x = f[i];
        const double rest = x.memsets + x.range + x.axes_fixed + x.score;
        passes[i] = rest + x.hist + x.grad;
        low[i] = rest + fmax(x.hist_floor, x.weights) + fmax(x.grad_loads, x.grad_arith);
        high[i] = rest + x.hist_floor + x.weights + x.grad_loads + x.grad_arith;
    }
    /* ranges given: no range pass; the fixed pass as measured, then at its floor */
    double given_low[2], given_floor[2];
    for (int i = 0; i < 2; i++) {
        given_low[i] = low[i] - f[i].range;
        given_floor[i] = given_low[i] - f[i].axes_fixed + f[i].fixed_floor;
    }
    printf("| the passes' sum | %.1f | %.1f |\n", passes[0], passes[1]);
    printf("| floor of the call, the split passes overlapped (max of each pair) | %.1f | %.1f |\n",
           low[0], low[1]);
    printf("| the same, the split passes' parts added | %.1f | %.1f |\n", high[0], high[1]);
    if (volume) {
        printf("| 4x table 3's floor (issue 22's target for the pair) | %.1f | %.1f |\n",
               4.0 * f[0].pair, 4.0 * f[1].pair);
        printf("| the call against table 3's floor | %.2fx | %.2fx |\n", f[0].call / f[0].pair,
               f[1].call / f[1].pair);
        printf("| floor of the call (overlapped) against table 3's floor | %.2fx | %.2fx |\n",
               low[0] / f[0].pair, low[1] / f[1].pair);
        printf("| the call with ranges given (-200..2200) | %.1f = %.2fx | %.1f = %.2fx |\n",
               f[0].call_given, f[0].call_given / f[0].pair, f[1].call_given,
               f[1].call_given / f[1].pair);
        printf("| floor of a given-range call (overlapped, no range pass, fixed pass as measured) "
               "| %.1f = %.2fx | %.1f = %.2fx |\n",
               given_low[0], given_low[0] / f[0].pair, given_low[1], given_low[1] / f[1].pair);
        printf("| the same, the fixed pass at its floor | %.1f = %.2fx | %.1f = %.2fx |\n",
               given_floor[0], given_floor[0] / f[0].pair, given_floor[1],
               given_floor[1] / f[1].pair);
    } else {
        printf("| 2M evaluations/s: 1024 pairs in | 512.0 | 512.0 |\n");
        printf("| the call with ranges given (-200..2200) | %.1f | %.1f |\n", f[0].call_given,
               f[1].call_given);
    }
    for (int i = 0; i < 2; i++)
        printf("\ncheck (%s): %s\n", i ? "noise" : "smooth",
               f[i].ok ? "ok (records and gradients of the passes one by one equal the call's; "
                         "every floor's result as the host computes it)"
                       : f[i].why);
}

/* ---- --gap3d: the 512^3 call against the sum of its passes (issue 22, session 19 parzen2) ----
 * Session 19's first run found the smooth pair's call, ranges given, 109 us over the sum of its
 * passes timed alone (the noise pair: 16 us under it). --gap3d asks where that time goes: the
 * library's call back to back (as --floor3d times it), each alone (a wait before the next), and
 * each after 5 ms of idle; the same passes launched as the call launches them (floor_batch, the
 * call's ranges), back to back with an event between passes, and each rep after 5 ms of idle;
 * each pass alone; the histogram right after the fixed pass and the gradient right after the
 * histogram and score (untimed), so that a pass slower in the call than alone is named; and the
 * SM clock (gap_clock_kernel) at the end of each loop, no wait before it. */

/* Every block spins `cycles` SM cycles between two reads of %globaltimer: its SM's clock, MHz. */
__global__ static void gap_clock_kernel(long long cycles, float *mhz)
{
    unsigned long long t0, t1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    const long long c0 = clock64();
    long long c1 = c0;
    while (c1 - c0 < cycles)
        c1 = clock64();
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    if (threadIdx.x == 0)
        mhz[blockIdx.x] = (float)(c1 - c0) * 1000.0f / (float)(t1 - t0);
}

struct gap_clock {
    int sms;
    float *d_mhz;
};

/* Enqueues a probe on s (no wait before it), then waits: the median SM clock over the SMs. */
static double gap_clock_now(const gap_clock &c, cudaStream_t s)
{
    gap_clock_kernel<<<c.sms, 32, 0, s>>>(1ll << 18, c.d_mhz);
    CK(cudaStreamSynchronize(s));
    CK(cudaGetLastError());
    std::vector<float> mhz(c.sms);
    CK(cudaMemcpy(mhz.data(), c.d_mhz, c.sms * sizeof(float), cudaMemcpyDeviceToHost));
    return bench_median(mhz);
}

/* A sequence's steps timed over `reps` runs (after 3 untimed) with an event between steps: per
 * step and whole-run medians, us; idle_ms > 0: each run starts after a wait and that much sleep,
 * else the runs go back to back. The SM clock right behind the last run (no wait). */
struct gap_steps {
    std::vector<double> step;
    double whole, mhz;
};

static gap_steps gap_time_steps(cudaStream_t s, const gap_clock &c,
                                const std::vector<std::function<void()>> &steps, int reps,
                                int idle_ms)
{
    const size_t n = steps.size();
    for (int i = 0; i < 3; i++)
        for (const auto &f : steps)
            f();
    CK(cudaStreamSynchronize(s));
    std::vector<cudaEvent_t> ev((n + 1) * reps);
    for (auto &e : ev)
        CK(cudaEventCreate(&e));
    for (int r = 0; r < reps; r++) {
        if (idle_ms > 0) {
            CK(cudaStreamSynchronize(s));
            std::this_thread::sleep_for(std::chrono::milliseconds(idle_ms));
        }
        for (size_t i = 0; i < n; i++) {
            CK(cudaEventRecord(ev[r * (n + 1) + i], s));
            steps[i]();
        }
        CK(cudaEventRecord(ev[r * (n + 1) + n], s));
    }
    gap_steps g;
    g.mhz = gap_clock_now(c, s);
    std::vector<float> whole(reps);
    std::vector<std::vector<float>> each(n, std::vector<float>(reps));
    for (int r = 0; r < reps; r++) {
        const cudaEvent_t *e = &ev[r * (n + 1)];
        for (size_t i = 0; i < n; i++)
            CK(cudaEventElapsedTime(&each[i][r], e[i], e[i + 1]));
        CK(cudaEventElapsedTime(&whole[r], e[0], e[n]));
    }
    for (auto &e : ev)
        CK(cudaEventDestroy(e));
    for (size_t i = 0; i < n; i++)
        g.step.push_back(1000.0 * bench_median(each[i]));
    g.whole = 1000.0 * bench_median(whole);
    return g;
}

static void gap_run(cudaStream_t s, const cudaDeviceProp &prop, const gap_clock &c, bool noise)
{
    const floor_shape &sh = FLOOR_VOLUME;
    const size_t n = sh.n, cells = 64 * 64;
    float *d_fixed, *d_moving, *d_grad, *d_grad_lib;
    dh_mi_values *d_out, *d_out_lib;
    CK(cudaMalloc(&d_fixed, n * 4));
    CK(cudaMalloc(&d_moving, n * 4));
    CK(cudaMalloc(&d_grad, n * 4));
    CK(cudaMalloc(&d_grad_lib, n * 4));
    CK(cudaMalloc(&d_out, sizeof *d_out));
    CK(cudaMalloc(&d_out_lib, sizeof *d_out));
    floor_images(sh, d_fixed, d_moving, noise, s);
    const dh_parzen_params pg = params_of(64, DH_PARZEN_FIXED_BOX, 1);
    dh_parzen_cuda_workspace *ws = dh_parzen_cuda_workspace_new();
    bool ok = check(ws, pg, sh.check_pixels, d_fixed, d_moving, 1, s);
    auto lib = [&] { call(ws, pg, n, d_fixed, d_moving, 1, d_out_lib, d_grad_lib, s); };
    const double idle_mhz = gap_clock_now(c, s);
    const gap_steps call_b2b = gap_time_steps(s, c, {lib}, 20, 0);
    const gap_steps call_idle = gap_time_steps(s, c, {lib}, 20, 5);
    const double call_each = bench_median_each_us(s, 3, 20, lib);

    /* the call's passes as it launches them, ranges given */
    floor_batch fb = floor_setup(prop.multiProcessorCount, n, 1, d_fixed, d_moving, d_grad, d_out);
    pz_args &a = fb.a;
    a.fixed_given = a.moving_given = 1;
    a.fixed_lo = pg.fixed_lo, a.fixed_hi = pg.fixed_hi;
    a.moving_lo = pg.moving_lo, a.moving_hi = pg.moving_hi;
    const size_t hist_smem = cells * 8;
    auto zero_hist = [&] {
        CK(cudaMemsetAsync(a.n, 0, 8, s));
        CK(cudaMemsetAsync(a.joint, 0, cells * 8, s));
    };
    auto zero = [&] { floor_prepare(fb, false, s); }; /* with ranges given: and the axes */
    auto axes_fixed = [&] {
        pz_fixed_vec_kernel<DH_PARZEN_FLOAT32, true>
            <<<fb.fixed_vec_blocks, PZ_PIXEL_THREADS, 0, s>>>(a);
    };
    auto hist = [&] {
        pz_hist_kernel<DH_PARZEN_FLOAT32, false, true, false>
            <<<fb.hist_grid, PZ_HIST_THREADS, hist_smem, s>>>(a);
    };
    auto score = [&] { CK(pz_launch_score(a, 1, fb.sms, fb.score_split, s)); };
    auto grad = [&] {
        pz_gradient_kernel<DH_PARZEN_FLOAT32, false, true>
            <<<fb.grad_grid, PZ_PIXEL_THREADS, hist_smem, s>>>(a);
    };
    lib();
    zero(), axes_fixed(), hist(), score(), grad();
    CK(cudaStreamSynchronize(s));
    CK(cudaGetLastError());
    ok = ok && floor_same(d_out, d_out_lib, sizeof *d_out) && floor_same(d_grad, d_grad_lib, n * 4);
    const std::vector<std::function<void()>> seq = {zero, axes_fixed, hist, score, grad};
    const gap_steps seq_b2b = gap_time_steps(s, c, seq, 20, 0);
    const gap_steps seq_idle = gap_time_steps(s, c, seq, 20, 5);
    auto none = [] {};
    const double alone[5] = {1000.0 * floor_ms(s, none, zero),
                             1000.0 * floor_ms(s, none, axes_fixed),
                             1000.0 * floor_ms(s, zero_hist, hist),
                             1000.0 * floor_ms(s, none, score),
                             1000.0 * floor_ms(s, none, grad)};
    const double alone_mhz = gap_clock_now(c, s);
    const double hist_after_fixed = 1000.0 * floor_ms(s, [&] { zero_hist(), axes_fixed(); }, hist);
    const double grad_after_hist =
        1000.0 * floor_ms(s, [&] { zero_hist(), hist(), score(); }, grad);
    /* the fixed pass: alone, its read + write floor, and in float32 (floor_fixed_f32_kernel):
     * how far a float32 pre-test could take it, and how many voxels lie near a bin's edge */
    const double fixed_alone = 1000.0 * floor_ms(s, none, [&] {
        pz_fixed_vec_kernel<DH_PARZEN_FLOAT32, true>
            <<<fb.fixed_vec_blocks, PZ_PIXEL_THREADS, 0, s>>>(a);
    });
    const std::vector<uint8_t> rows = floor_get(a.fixed_row, n);
    const dh_parzen_axis fax = floor_get(a.axes + 1, 1)[0];
    uint32_t *d_rows = floor_alloc<uint32_t>(n / 4);
    const double fixed_floor = 1000.0 * floor_ms(s, none, [&] {
        floor_fixed_kernel<<<fb.fixed_vec_blocks, PZ_PIXEL_THREADS, 0, s>>>(
            (const float4 *)d_fixed, d_rows, n / 4);
    });
    const float flo = (float)fax.lo, fhi = (float)fax.hi, frcp = (float)(1.0 / fax.width);
    const double fixed_f32 = 1000.0 * floor_ms(s, none, [&] {
        floor_fixed_f32_kernel<<<fb.fixed_vec_blocks, PZ_PIXEL_THREADS, 0, s>>>(
            (const float4 *)d_fixed, d_rows, n / 4, flo, fhi, frcp, 64);
    });
    size_t differ = 0, near = 0, near_warps = 0;
    {
        const std::vector<uint8_t> r32 = floor_get((const uint8_t *)d_rows, n);
        const std::vector<float> fv = floor_get(d_fixed, n);
        bool warp_near = false;
        for (size_t k = 0; k < n; k++) {
            differ += r32[k] != rows[k];
            const double t = dh_parzen_position(&fax, fv[k]);
            const bool e = fabs(t - floor(t + 0.5)) < 1e-3;
            near += e;
            warp_near = warp_near || e;
            if (k % 128 == 127) {
                near_warps += warp_near;
                warp_near = false;
            }
        }
    }
    CK(cudaFree(d_rows));
    /* the histogram alone, back to back (no wait between reps) */
    const gap_steps hist_b2b = gap_time_steps(s, c, {zero_hist, hist}, 20, 0);
    const gap_steps grad_b2b = gap_time_steps(s, c, {grad}, 20, 0);

    const char *names[5] = {"pz_prepare_kernel (histograms zeroed, axes)", "pz_fixed_vec_kernel",
                            "pz_hist_kernel", "pz_launch_score (a cluster of 8 staged blocks)",
                            "pz_gradient_kernel"};
    printf("\n#### %s pair, ranges given (-200..2200), us (%s)\n\n", noise ? "noise" : "smooth",
           prop.name);
    printf("| what | us | SM clock after, MHz |\n| --- | --- | --- |\n");
    printf("| the library's call, back to back (--floor3d's figure) | %.1f | %.0f |\n",
           call_b2b.whole, call_b2b.mhz);
    printf("| the library's call, each alone (a wait before the next) | %.1f | |\n", call_each);
    printf("| the library's call, each after 5 ms idle | %.1f | %.0f |\n", call_idle.whole,
           call_idle.mhz);
    printf("| its passes as it launches them, back to back, events between | %.1f | %.0f |\n",
           seq_b2b.whole, seq_b2b.mhz);
    printf("| the same, each run after 5 ms idle | %.1f | %.0f |\n", seq_idle.whole,
           seq_idle.mhz);
    double sum = 0;
    for (int i = 0; i < 5; i++)
        sum += alone[i];
    printf("| the passes timed alone, summed | %.1f | %.0f |\n", sum, alone_mhz);
    printf("| SM clock before the loops (idle) | | %.0f |\n", idle_mhz);
    printf("\n| pass | in the sequence, back to back | in the sequence, after idle | alone |\n"
           "| --- | --- | --- | --- |\n");
    for (int i = 0; i < 5; i++)
        printf("| %s | %.1f | %.1f | %.1f |\n", names[i], seq_b2b.step[i], seq_idle.step[i],
               alone[i]);
    printf("| pz_hist_kernel right after the fixed pass (untimed prep) | | | %.1f |\n",
           hist_after_fixed);
    printf("| pz_gradient_kernel right after the histogram and score | | | %.1f |\n",
           grad_after_hist);
    printf("| pz_hist_kernel alone, back to back (+ its memsets) | %.1f (clock %.0f) | | |\n",
           hist_b2b.whole, hist_b2b.mhz);
    printf("| pz_gradient_kernel alone, back to back | %.1f (clock %.0f) | | |\n", grad_b2b.whole,
           grad_b2b.mhz);
    printf("| the fixed pass alone (pz_fixed_vec_kernel) | | | %.1f |\n", fixed_alone);
    printf("| its floor: read the fixed volume, write a byte per voxel | | | %.1f |\n",
           fixed_floor);
    printf("| its loop with float32 rows (floor_fixed_f32_kernel; %zu of %zu rows differ from "
           "the exact ones) | | | %.1f |\n",
           differ, n, fixed_f32);
    printf("| voxels within 1e-3 of a bin's edge: %zu (%.4f%%); 128-voxel runs holding one: %zu "
           "of %zu | | | |\n",
           near, 100.0 * near / n, near_warps, n / 128);
    floor_check_line(noise ? "noise" : "smooth", ok,
                     "ok (the call equals the CPU twin on the slab; the passes launched one by "
                     "one equal the call, records and gradient)");
    floor_free(fb);
    dh_parzen_cuda_workspace_free(ws);
    void *p[] = {d_fixed, d_moving, d_grad, d_grad_lib, d_out, d_out_lib};
    for (void *x : p)
        CK(cudaFree(x));
}

static void gaps(cudaStream_t s, const cudaDeviceProp &prop)
{
    gap_clock c = {prop.multiProcessorCount, nullptr};
    CK(cudaMalloc(&c.d_mhz, c.sms * sizeof(float)));
    printf("\n### Parzen MI 512^3 pair: the call against its passes (--gap3d)\n");
    gap_run(s, prop, c, false);
    gap_run(s, prop, c, true);
    CK(cudaFree(c.d_mhz));
}

/* ---- --waves3d: the 512^3 passes with grids of one wave (issue 22, session 19 parzen2) -------
 * --gap3d found the smooth histogram pass at one of two levels (about 1310 or 1455 us) from one
 * process or set of buffers to another. The library's grids were 8 blocks per SM, but
 * pz_hist_kernel fits 3 per SM (38 registers at 512 threads) and pz_fixed_vec_kernel 5: 2.67 and
 * 1.6 waves, the last blocks placed as earlier ones finish. (Its first run, session 19: one wave
 * took the fixed pass from 290 to 265 us in every case, so the library's fixed pass is one wave
 * since; the histogram and gradient keep 8 an SM, one wave being slower or no faster there but
 * for the smooth pair with ranges found.) --waves3d times the fixed, histogram
 * and gradient passes alone with the library's grids and with grids of the blocks that fit
 * (cudaOccupancyMaxActiveBlocksPerMultiprocessor x SMs: one wave; the grid-stride loops and the
 * exact integer histograms give the same bits, checked), each on three fresh sets of buffers, and
 * the whole sequence of passes with both, ranges given and found, smooth and noise volumes. */

struct waves_grids {
    unsigned fixed, hist, grad;
};

static waves_grids waves_one(int sms, size_t hist_smem)
{
    int f = 0, h = 0, g = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &f, pz_fixed_vec_kernel<DH_PARZEN_FLOAT32, true>, PZ_PIXEL_THREADS, 0));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &h, pz_hist_kernel<DH_PARZEN_FLOAT32, false, true, false>, PZ_HIST_THREADS, hist_smem));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &g, pz_gradient_kernel<DH_PARZEN_FLOAT32, false, true>, PZ_PIXEL_THREADS, hist_smem));
    return {(unsigned)(f * sms), (unsigned)(h * sms), (unsigned)(g * sms)};
}

/* One set of buffers (fresh allocations): the passes with grids w (nullptr: the library's),
 * timed alone (us: fixed, histogram, gradient) and as the whole sequence back to back; their
 * records and gradient checked equal to the library's call's (d_out_lib, d_grad_lib: ranges as
 * `given`). */
struct waves_times {
    double fixed, hist, grad, seq;
    bool same;
};

static waves_times waves_time(cudaStream_t s, int sms, const float *d_fixed,
                              const float *d_moving, bool given, const waves_grids *w,
                              const dh_mi_values *d_out_lib, const float *d_grad_lib, size_t n)
{
    const size_t cells = 64 * 64, hist_smem = cells * 8;
    float *d_grad = floor_alloc<float>(n);
    dh_mi_values *d_out = floor_alloc<dh_mi_values>(1);
    floor_batch fb = floor_setup(sms, n, 1, d_fixed, d_moving, d_grad, d_out);
    pz_args &a = fb.a;
    if (given)
        floor_set_given(a);
    const waves_grids g = w ? *w : waves_grids{fb.fixed_vec_blocks, fb.hist_grid.y, fb.grad_grid.y};
    auto zero_hist = [&] {
        CK(cudaMemsetAsync(a.n, 0, 8, s));
        CK(cudaMemsetAsync(a.joint, 0, cells * 8, s));
    };
    auto head = [&] { /* the library's prepare, range pass and axes (ranges found) */
        floor_prepare(fb, !given, s);
        if (!given) {
            pz_range_kernel<DH_PARZEN_FLOAT32><<<fb.range_grid, PZ_PIXEL_THREADS, 0, s>>>(a);
            pz_axes_kernel<<<1, 256, 0, s>>>(a);
        }
    };
    auto fixed = [&] {
        pz_fixed_vec_kernel<DH_PARZEN_FLOAT32, true><<<g.fixed, PZ_PIXEL_THREADS, 0, s>>>(a);
    };
    auto hist = [&] {
        pz_hist_kernel<DH_PARZEN_FLOAT32, false, true, false>
            <<<dim3(1, g.hist), PZ_HIST_THREADS, hist_smem, s>>>(a);
    };
    auto score = [&] { CK(pz_launch_score(a, 1, fb.sms, fb.score_split, s)); };
    auto grad = [&] {
        pz_gradient_kernel<DH_PARZEN_FLOAT32, false, true>
            <<<dim3(1, g.grad), PZ_PIXEL_THREADS, hist_smem, s>>>(a);
    };
    head(), fixed(), hist(), score(), grad();
    CK(cudaStreamSynchronize(s));
    CK(cudaGetLastError());
    waves_times t;
    t.same = floor_same(d_out, d_out_lib, sizeof *d_out) && floor_same(d_grad, d_grad_lib, n * 4);
    auto none = [] {};
    t.fixed = 1000.0 * floor_ms(s, none, fixed);
    t.hist = 1000.0 * floor_ms(s, zero_hist, hist);
    t.grad = 1000.0 * floor_ms(s, none, grad);
    t.seq = 1000.0 * bench_median_ms(s, 20, [&](int) { head(), fixed(), hist(), score(), grad(); });
    CK(cudaStreamSynchronize(s));
    floor_free(fb);
    CK(cudaFree(d_grad));
    CK(cudaFree(d_out));
    return t;
}

static void waves_run(cudaStream_t s, const cudaDeviceProp &prop, bool noise, bool given)
{
    const floor_shape &sh = FLOOR_VOLUME;
    const size_t n = sh.n;
    const int sms = prop.multiProcessorCount;
    float *d_fixed = floor_alloc<float>(n), *d_moving = floor_alloc<float>(n),
          *d_grad_lib = floor_alloc<float>(n);
    dh_mi_values *d_out_lib = floor_alloc<dh_mi_values>(1);
    floor_images(sh, d_fixed, d_moving, noise, s);
    const dh_parzen_params p = params_of(64, DH_PARZEN_FIXED_BOX, given ? 1 : 0);
    dh_parzen_cuda_workspace *ws = dh_parzen_cuda_workspace_new();
    bool ok = check(ws, p, sh.check_pixels, d_fixed, d_moving, 1, s);
    call(ws, p, n, d_fixed, d_moving, 1, d_out_lib, d_grad_lib, s);
    const double lib = 1000.0 * bench_median_ms(s, 20, [&](int) {
        call(ws, p, n, d_fixed, d_moving, 1, d_out_lib, d_grad_lib, s);
    });
    CK(cudaStreamSynchronize(s));
    dh_parzen_cuda_workspace_free(ws);
    const waves_grids one = waves_one(sms, 64 * 64 * 8);
    printf("\n#### %s pair, ranges %s: the library's call %.1f us; one wave: fixed %u, histogram "
           "%u, gradient %u blocks (%d SMs)\n\n",
           noise ? "noise" : "smooth", given ? "given (-200..2200)" : "found", lib, one.fixed,
           one.hist, one.grad, sms);
    printf("| grids | buffers | fixed pass | histogram | gradient | the passes in sequence |\n"
           "| --- | --- | --- | --- | --- | --- |\n");
    for (int set = 1; set <= 3; set++)
        for (int w = 0; w < 2; w++) {
            const waves_times t =
                waves_time(s, sms, d_fixed, d_moving, given, w ? &one : nullptr, d_out_lib,
                           d_grad_lib, n);
            ok = ok && t.same;
            printf("| %s | set %d | %.1f | %.1f | %.1f | %.1f |\n",
                   w ? "one wave" : "the library's", set, t.fixed, t.hist, t.grad,
                   t.seq);
        }
    printf("\ncheck (%s, %s): %s\n", noise ? "noise" : "smooth", given ? "given" : "found",
           ok ? "ok (the call equals the CPU twin on the slab; every grid's passes equal the "
                "call, records and gradient)"
              : "FAILED");
    if (!ok)
        g_failed = 1;
    void *q[] = {d_fixed, d_moving, d_grad_lib, d_out_lib};
    for (void *x : q)
        CK(cudaFree(x));
}

static void waves(cudaStream_t s, const cudaDeviceProp &prop)
{
    printf("\n### Parzen MI 512^3 pair: the passes with grids of one wave (--waves3d, %s)\n",
           prop.name);
    for (int noise = 0; noise < 2; noise++)
        for (int given = 1; given >= 0; given--)
            waves_run(s, prop, noise != 0, given != 0);
}

#include "bench_mi_parzen_place3d.cuh" /* --place3d: the histogram pass against its placement */
#include "bench_mi_parzen_fixed16.cuh" /* --fixed16: the fixed pass on 16-bit samples */

int main(int argc, char **argv)
{
    const bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    const bool headline = argc > 1 && strcmp(argv[1], "--headline") == 0;
    const cudaDeviceProp prop = bench_device();
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    if (argc > 1 && (strcmp(argv[1], "--floor") == 0 || strcmp(argv[1], "--floor3d") == 0)) {
        floors(s, prop, strcmp(argv[1], "--floor") == 0 ? FLOOR_BATCH : FLOOR_VOLUME);
        CK(cudaStreamDestroy(s));
        return g_failed;
    }
    /* The 512^3 studies: one table each, checked first (a failed check fails the run). */
    static const struct {
        const char *flag;
        void (*run)(cudaStream_t, const cudaDeviceProp &);
    } studies[] = {{"--waves3d", waves}, {"--place3d", place}, {"--fixed16", fixed16},
                   {"--gap3d", gaps}};
    for (const auto &study : studies)
        if (argc > 1 && strcmp(argv[1], study.flag) == 0) {
            study.run(s, prop);
            CK(cudaStreamDestroy(s));
            return g_failed;
        }
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
