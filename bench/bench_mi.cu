// SPDX-License-Identifier: MIT
/*
 * bench_mi.cu: mutual information on one GPU, in one run: latency of one
 * evaluation (joint histogram + scores) for 256x256 and 512x512 pairs at 32, 64 and 256 bins
 * (single launch timed with events, and CUDA-graph replay), batched throughput for 256x256 at
 * batch 64, 256, 1024, and a 512^3 volume pair at 64 bins against a read-only kernel reading
 * both volumes, plus a sweep of cluster layouts. Data: a CT-like 12-bit image and a shifted,
 * noised copy. Every configuration is first checked against the CPU twin (counts and record
 * bits); a mismatch is printed and makes the exit status 1.
 *
 * Usage: bench_mi [--quick]   (--quick: fewer repetitions, no volume)
 *        bench_mi --stages    (time split by stage, and threads per block)
 *        bench_mi --profile SIDE BINS BATCH CLUSTER   (one configuration, for ncu; with
 *                 SPREAD_P=P in the environment, the spread kernel with P blocks per image)
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define BENCH_CUDA_ERROR_EXIT 2 /* 1 says a result differs from the CPU twin */
#include "bench_common.cuh"
#include "mi_joint.h"
#include "mi_cuda.h"
#include "mi_scores.h"

static int g_failed = 0;

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = (*s += 0x9E3779B97F4A7C15ull);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* The CT mix of docs (40% air near 24, 15% fat near 924, 30% soft tissue near 1064, 15% bone
 * around 1700) laid out in smooth regions so a shifted copy is a plausible registration pair. */
static void fill_ct(uint16_t *img, size_t w, size_t h, size_t depth, uint64_t seed)
{
    uint64_t s = seed;
    for (size_t z = 0; z < depth; z++)
        for (size_t y = 0; y < h; y++)
            for (size_t x = 0; x < w; x++) {
                double dx = (double)x / w - 0.5, dy = (double)y / h - 0.5;
                double r = dx * dx * 1.3 + dy * dy;
                uint64_t u = rng_next(&s);
                int v;
                if (r > 0.2)
                    v = 24 + (int)(u % 9) - 4; /* air outside the body */
                else if (r > 0.17)
                    v = 924 + (int)(u % 21) - 10; /* fat ring */
                else if (((x / 24 + y / 24 + z / 24) % 5) == 0)
                    v = 1700 + (int)(u % 301) - 150; /* bone blocks */
                else
                    v = 1064 + (int)(u % 31) - 15; /* soft tissue */
                img[(z * h + y) * w + x] = (uint16_t)std::min(4095, std::max(0, v));
            }
}

/* moving(x, y, z) = fixed(x - dx, y - dy, z) + noise in [-8, 8], clamped. */
static void shifted_copy(const uint16_t *f, uint16_t *m, size_t w, size_t h, size_t depth, int dx,
                         int dy, uint64_t seed)
{
    uint64_t s = seed;
    for (size_t z = 0; z < depth; z++)
        for (size_t y = 0; y < h; y++)
            for (size_t x = 0; x < w; x++) {
                long sx = std::min<long>((long)w - 1, std::max<long>(0, (long)x - dx));
                long sy = std::min<long>((long)h - 1, std::max<long>(0, (long)y - dy));
                int v = f[(z * h + sy) * w + sx] + (int)(rng_next(&s) % 17) - 8;
                m[(z * h + y) * w + x] = (uint16_t)std::min(4095, std::max(0, v));
            }
}

/* A copy of `v` on the device. */
static uint16_t *upload(const std::vector<uint16_t> &v)
{
    uint16_t *d;
    CK(cudaMalloc(&d, v.size() * 2));
    CK(cudaMemcpy(d, v.data(), v.size() * 2, cudaMemcpyHostToDevice));
    return d;
}

/* A CT-like side x side fixed image and `batch` moving images, each pose a different shift and
 * noise of it; the moving images also on the device. */
struct image_batch {
    std::vector<uint16_t> fixed, movs;
    uint16_t *d_movs;
};

static image_batch make_batch(size_t side, uint32_t batch)
{
    const size_t n = side * side;
    image_batch ib;
    ib.fixed.resize(n);
    ib.movs.resize((size_t)batch * n);
    fill_ct(ib.fixed.data(), side, side, 1, 1);
    for (uint32_t k = 0; k < batch; k++)
        shifted_copy(ib.fixed.data(), ib.movs.data() + (size_t)k * n, side, side, 1,
                     (int)(k % 9) - 4, (int)(k / 9 % 7) - 3, 100 + k);
    ib.d_movs = upload(ib.movs);
    return ib;
}

struct prepared {
    std::vector<uint16_t> bins;
    uint64_t valid;
    double sum;
};

static prepared prepare(const uint16_t *fixed, size_t n, uint32_t bins)
{
    prepared p;
    int32_t lo, hi;
    dh_mi_minmax(fixed, 0, n, nullptr, &lo, &hi);
    dh_jaxis ax;
    dh_jaxis_init(&ax, bins, lo, hi);
    p.bins.resize(n);
    uint64_t marg[DH_MI_JOINT_MAX_BINS];
    p.valid = dh_mi_bin_fixed(fixed, 0, n, nullptr, &ax, p.bins.data(), marg);
    p.sum = dh_mi_sum_terms_u64(marg, bins, p.valid, dh_mi_log((double)p.valid));
    return p;
}

static dh_mi_gpu *make_gpu(const prepared &p, size_t n, uint32_t bins, uint32_t batch,
                              const dh_mi_gpu_tuning *t)
{
    dh_mi_gpu *g = nullptr;
    char msg[512];
    if (dh_mi_gpu_create(p.bins.data(), n, bins, bins, batch, p.valid, p.sum, t, &g, msg,
                            sizeof msg)) {
        fprintf(stderr, "create: %s\n", msg);
        exit(2);
    }
    return g;
}

static void evaluate(dh_mi_gpu *g, const uint16_t *d_mov, size_t stride, uint32_t count,
                     int has_range, dh_mi_values *d_out, cudaStream_t s)
{
    char msg[512];
    if (dh_mi_gpu_evaluate(g, d_mov, 0, stride, count, nullptr, 0, nullptr, has_range, 0, 4095,
                              0, d_out, s, msg, sizeof msg)) {
        fprintf(stderr, "evaluate: %s\n", msg);
        exit(2);
    }
}

/* GPU record and counts of image `item` against the CPU twin. */
static bool check(dh_mi_gpu *g, const prepared &p, const uint16_t *mov, size_t n, uint32_t bins,
                  int has_range, const dh_mi_values *d_out, uint32_t item)
{
    CK(cudaDeviceSynchronize());
    int32_t lo = 0, hi = 4095;
    if (!has_range)
        dh_mi_minmax(mov, 0, n, nullptr, &lo, &hi);
    dh_jaxis ax;
    dh_jaxis_init(&ax, bins, lo, hi);
    std::vector<uint32_t> cpu((size_t)bins * bins), gpu((size_t)bins * bins);
    dh_mi_joint_cpu(p.bins.data(), bins, mov, 0, n, nullptr, &ax, cpu.data());
    dh_mi_values want, got;
    dh_mi_scores_from_joint(cpu.data(), bins, bins, p.valid, &p.sum, 0, &want);
    want.moving_lo = lo;
    want.moving_hi = hi;
    want.reserved = 0;
    char msg[512];
    CK(cudaMemcpy(&got, d_out + item, sizeof got, cudaMemcpyDeviceToHost));
    if (dh_mi_gpu_read_joint(g, item, gpu.data(), msg, sizeof msg)) {
        fprintf(stderr, "read_joint: %s\n", msg);
        exit(2);
    }
    bool ok = cpu == gpu && memcmp(&want, &got, sizeof got) == 0;
    if (!ok) {
        fprintf(stderr, "MISMATCH n=%zu bins=%u item %u: counts %s, mi %.17g vs %.17g\n", n, bins,
                item, cpu == gpu ? "equal" : "differ", want.mi, got.mi);
        g_failed = 1;
    }
    return ok;
}

/* Median device time (us) of `reps` single evaluations, each timed alone after 10 untimed. */
static double time_single(dh_mi_gpu *g, const uint16_t *d_mov, size_t stride, uint32_t count,
                          int has_range, dh_mi_values *d_out, cudaStream_t s, int reps)
{
    return bench_median_each_us(s, 10, reps,
                                [&] { evaluate(g, d_mov, stride, count, has_range, d_out, s); });
}

/* Graph replay: one evaluation per graph (median us per replay), `chain` evaluations in one
 * graph (us per evaluation, launch cost amortized), and one replay plus the wait on the host
 * clock. */
static void time_graph(dh_mi_gpu *g, const uint16_t *d_mov, int has_range, dh_mi_values *d_out,
                       cudaStream_t s, int reps, double *one, double *chained, double *seen)
{
    const int chain = 100;
    cudaGraph_t gr1, grn;
    cudaGraphExec_t ex1, exn;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    evaluate(g, d_mov, 0, 1, has_range, d_out, s);
    CK(cudaStreamEndCapture(s, &gr1));
    CK(cudaGraphInstantiate(&ex1, gr1, 0));
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < chain; i++)
        evaluate(g, d_mov, 0, 1, has_range, d_out, s);
    CK(cudaStreamEndCapture(s, &grn));
    CK(cudaGraphInstantiate(&exn, grn, 0));
    *one = bench_median_each_us(s, 5, reps, [&] { CK(cudaGraphLaunch(ex1, s)); });
    *chained = bench_median_each_us(s, 2, 10, [&] { CK(cudaGraphLaunch(exn, s)); }) / chain;
    *seen = bench_host_us(s, reps, [&](int) { CK(cudaGraphLaunch(ex1, s)); });
    CK(cudaGraphExecDestroy(ex1));
    CK(cudaGraphExecDestroy(exn));
    CK(cudaGraphDestroy(gr1));
    CK(cudaGraphDestroy(grn));
}

__global__ void read_only(const uint4 *x, const uint4 *y, size_t units, unsigned *sink)
{
    unsigned acc = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < units;
         i += (size_t)gridDim.x * blockDim.x) {
        uint4 a = __ldg(x + i), b = __ldg(y + i);
        acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w;
    }
    if (acc == 0x12345678u) /* practically never: keeps the loads */
        sink[0] = acc;
}

/* One row "| bins | label | check | us per launch | evaluations/s |" of a table of batches: the
 * whole batch scored with the tuning `want`, its first and last records checked, median of 20. */
static void batch_row(const image_batch &ib, size_t side, uint32_t bins, uint32_t batch,
                      const dh_mi_gpu_tuning &want, const char *label, dh_mi_values *d_out,
                      cudaStream_t s)
{
    const size_t n = side * side;
    prepared p = prepare(ib.fixed.data(), n, bins);
    dh_mi_gpu *g = make_gpu(p, n, bins, batch, &want);
    evaluate(g, ib.d_movs, n, batch, 1, d_out, s);
    bool ok = check(g, p, ib.movs.data(), n, bins, 1, d_out, 0) &&
              check(g, p, ib.movs.data() + (size_t)(batch - 1) * n, n, bins, 1, d_out,
                    batch - 1);
    double us = time_single(g, ib.d_movs, n, batch, 1, d_out, s, 20);
    printf("| %u | %s | %s | %.1f | %.3g |\n", bins, label, ok ? "ok" : "MISMATCH", us,
           batch / (us * 1e-6));
    fflush(stdout);
    dh_mi_gpu_free(g);
}

/* --profile SIDE BINS BATCH CLUSTER: a few evaluations of one configuration and nothing else,
 * for a profiler (ncu -k regex:mi_kernel); checks the last one against the CPU twin. */
static int profile_one(size_t side, uint32_t bins, uint32_t batch, uint32_t cl)
{
    const size_t n = side * side;
    image_batch ib = make_batch(side, batch);
    dh_mi_values *d_out;
    CK(cudaMalloc(&d_out, batch * sizeof(dh_mi_values)));
    prepared p = prepare(ib.fixed.data(), n, bins);
    dh_mi_gpu_tuning want = {cl, 0};
    if (getenv("SPREAD_P")) want.spread_blocks = atoi(getenv("SPREAD_P"));
    dh_mi_gpu *g = make_gpu(p, n, bins, batch, &want);
    for (int i = 0; i < 4; i++)
        evaluate(g, ib.d_movs, n, batch, 1, d_out, 0);
    bool ok = check(g, p, ib.movs.data(), n, bins, 1, d_out, 0);
    dh_mi_gpu_free(g);
    CK(cudaFree(ib.d_movs));
    CK(cudaFree(d_out));
    printf("profile %zux%zu bins %u batch %u cluster %u: %s\n", side, side, bins, batch, cl,
           ok ? "ok" : "MISMATCH");
    return ok ? 0 : 1;
}

/* --stages: where the time of one evaluation goes. Each DH_MI_STAGE_* bit left out in turn
 * (the results are then wrong and not checked), for single evaluations and a batch; then the
 * threads per block. */
static void stage_split(cudaStream_t s, dh_mi_values *d_out, int reps)
{
    struct cfg_t {
        size_t side;
        uint32_t bins, batch, cluster;
    } cfgs[] = {{256, 64, 1, 0},    {256, 128, 1, 0},   {512, 64, 1, 0}, {512, 256, 1, 0},
                {256, 64, 1024, 1}, {256, 256, 1024, 0}};
    const struct {
        uint32_t bit;
        const char *name;
    } stages[] = {{0, "nothing (full evaluation)"},
                  {DH_MI_STAGE_ZERO, "zeroing"},
                  {DH_MI_STAGE_COUNT, "counting"},
                  {DH_MI_STAGE_REDUCE, "cluster reduction"},
                  {DH_MI_STAGE_TERMS, "joint entropy terms"},
                  {DH_MI_STAGE_MARGINALS, "row/column sums + their terms"},
                  {DH_MI_STAGE_TREES, "tree sums"},
                  {DH_MI_STAGE_WRITE, "joint write-back"},
                  {DH_MI_STAGE_FINISH, "record"},
                  {0xFFu, "all stages (barriers, range, launch remain)"},
                  {DH_MI_STAGE_ALL, "everything (empty kernel, same launch)"}};
    printf("\n## Stage split: device us with one stage left out (median of %d; wrong results, "
           "timing only)\n| left out |",
           reps);
    for (const cfg_t &c : cfgs)
        printf(" %zux%zu b%u K%u |", c.side, c.side, c.bins, c.batch);
    printf("\n|---|");
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++)
        printf("---|");
    printf("\n");
    std::vector<std::vector<double>> t(sizeof stages / sizeof stages[0]);
    for (const cfg_t &c : cfgs) {
        const size_t n = c.side * c.side;
        image_batch ib = make_batch(c.side, c.batch);
        prepared p = prepare(ib.fixed.data(), n, c.bins);
        for (size_t si = 0; si < sizeof stages / sizeof stages[0]; si++) {
            dh_mi_gpu_tuning want = {c.cluster, 0, 0, stages[si].bit};
            dh_mi_gpu *g = make_gpu(p, n, c.bins, c.batch, &want);
            t[si].push_back(time_single(g, ib.d_movs, n, c.batch, 1, d_out, s, reps));
            dh_mi_gpu_free(g);
        }
        CK(cudaFree(ib.d_movs));
    }
    for (size_t si = 0; si < sizeof stages / sizeof stages[0]; si++) {
        printf("| %s |", stages[si].name);
        for (size_t ci = 0; ci < t[si].size(); ci++)
            printf(" %.2f (%+.2f) |", t[si][ci], t[si][ci] - t[0][ci]);
        printf("\n");
    }

    printf("\n## Threads per block (device us, median; checked)\n| config | threads | check | us "
           "|\n|---|---|---|---|\n");
    for (const cfg_t &c : cfgs) {
        const size_t n = c.side * c.side;
        image_batch ib = make_batch(c.side, c.batch);
        const uint16_t *d_movs = ib.d_movs, *movs = ib.movs.data();
        prepared p = prepare(ib.fixed.data(), n, c.bins);
        for (uint32_t th : {256u, 512u, 1024u}) {
            dh_mi_gpu_tuning want = {c.cluster, 0, th, 0};
            dh_mi_gpu *g = make_gpu(p, n, c.bins, c.batch, &want);
            dh_mi_gpu_tuning got;
            dh_mi_gpu_get_tuning(g, &got);
            evaluate(g, d_movs, n, c.batch, 1, d_out, s);
            bool ok = check(g, p, movs, n, c.bins, 1, d_out, 0) &&
                      check(g, p, movs + (size_t)(c.batch - 1) * n, n, c.bins, 1, d_out,
                            c.batch - 1);
            printf("| %zux%zu b%u K%u C%u | %u | %s | %.2f |\n", c.side, c.side, c.bins,
                   c.batch, got.cluster, got.threads, ok ? "ok" : "MISMATCH",
                   time_single(g, d_movs, n, c.batch, 1, d_out, s, c.batch > 1 ? 20 : reps));
            fflush(stdout);
            dh_mi_gpu_free(g);
        }
        CK(cudaFree(ib.d_movs));
    }
}

/* How a call of `count` images runs (stored values, no masks). */
static std::string layout_name(const dh_mi_gpu *g, uint32_t count)
{
    dh_mi_gpu_tuning t;
    dh_mi_gpu_get_tuning(g, &t);
    char b[64];
    switch (dh_mi_gpu_layout(g, count, 0, 0)) {
    case DH_MI_LAYOUT_SPREAD:
        snprintf(b, sizeof b, "spread");
        break;
    case DH_MI_LAYOUT_BATCH:
        snprintf(b, sizeof b, "one block per image");
        break;
    case DH_MI_LAYOUT_SOLO:
        snprintf(b, sizeof b, "one block per image (solo)");
        break;
    default:
        snprintf(b, sizeof b, "%u x %u clusters", t.cluster, t.clusters_per_image);
    }
    return b;
}

/* Calls of fewer images than SMs: the automatic layout, the spread kernel forced and the cluster
 * layout (tuning no_spread) in the same run, device time and, for one image, a graph replay plus
 * its wait on the host clock; then the spread kernel's blocks per image. */
static void few_images(cudaStream_t s, dh_mi_values *d_out, int reps)
{
    printf("\n## Few images: spread kernel and cluster layout (range given; device us per "
           "launch, median of %d; checked)\n",
           reps);
    printf("| size | bins | images | layout | check | us per launch | graph replay + wait, host "
           "clock |\n|---|---|---|---|---|---|---|\n");
    for (size_t side : {256, 512}) {
        const size_t n = side * side;
        const uint32_t most = 64;
        image_batch ib = make_batch(side, most);
        for (uint32_t bins : {32u, 64u, 128u}) {
            prepared p = prepare(ib.fixed.data(), n, bins);
            /* automatic; the spread kernel forced (one vector per thread); clusters */
            for (uint32_t mode : {0u, 1u, 2u}) {
                dh_mi_gpu_tuning want = {};
                want.spread_blocks = mode == 1 ? (uint32_t)((n + 8191) / 8192) : 0;
                want.no_spread = mode == 2;
                dh_mi_gpu *g = make_gpu(p, n, bins, most, &want);
                for (uint32_t count : {1u, 4u, 16u, 64u}) {
                    evaluate(g, ib.d_movs, n, count, 1, d_out, s);
                    bool ok = check(g, p, ib.movs.data(), n, bins, 1, d_out, 0) &&
                              check(g, p, ib.movs.data() + (size_t)(count - 1) * n, n, bins, 1,
                                    d_out, count - 1);
                    double us = time_single(g, ib.d_movs, n, count, 1, d_out, s, reps);
                    char seen_s[32] = "-";
                    if (count == 1) {
                        double one, chained, seen;
                        time_graph(g, ib.d_movs, 1, d_out, s, reps, &one, &chained, &seen);
                        snprintf(seen_s, sizeof seen_s, "%.2f", seen);
                    }
                    printf("| %zux%zu | %u | %u | %s%s | %s | %.2f | %s |\n", side, side, bins,
                           count, mode == 0 ? "auto: " : "", layout_name(g, count).c_str(),
                           ok ? "ok" : "MISMATCH", us, seen_s);
                    fflush(stdout);
                }
                dh_mi_gpu_free(g);
            }
        }
        if (side == 512) {
            printf("\n| 512x512, 64 bins, one image | blocks per image | check | us per launch "
                   "| graph replay + wait, host clock |\n|---|---|---|---|---|\n");
            prepared p = prepare(ib.fixed.data(), n, 64);
            for (uint32_t P : {8u, 16u, 32u, 64u, 96u, 128u}) {
                dh_mi_gpu_tuning want = {};
                want.spread_blocks = P;
                dh_mi_gpu *g = make_gpu(p, n, 64, 1, &want);
                evaluate(g, ib.d_movs, n, 1, 1, d_out, s);
                bool ok = check(g, p, ib.movs.data(), n, 64, 1, d_out, 0);
                evaluate(g, ib.d_movs, n, 1, 0, d_out, s);
                ok = check(g, p, ib.movs.data(), n, 64, 0, d_out, 0) && ok;
                double us = time_single(g, ib.d_movs, n, 1, 1, d_out, s, reps);
                double one, chained, seen;
                time_graph(g, ib.d_movs, 1, d_out, s, reps, &one, &chained, &seen);
                printf("| spread | %u | %s | %.2f | %.2f |\n", P, ok ? "ok" : "MISMATCH", us,
                       seen);
                fflush(stdout);
                dh_mi_gpu_free(g);
            }
        }
        CK(cudaFree(ib.d_movs));
    }
}

int main(int argc, char **argv)
{
    if (argc == 6 && !strcmp(argv[1], "--profile"))
        return profile_one((size_t)atoi(argv[2]), (uint32_t)atoi(argv[3]), (uint32_t)atoi(argv[4]),
                           (uint32_t)atoi(argv[5]));
    const bool quick = argc > 1 && !strcmp(argv[1], "--quick");
    const bool stages = argc > 1 && !strcmp(argv[1], "--stages");
    const int reps = quick ? 50 : 300;
    const cudaDeviceProp prop = bench_device();
    printf("# bench_mi on %s (%d SMs, sm_%d%d), CT-like 12-bit pair (fixed, shifted+noised "
           "copy)\n",
           prop.name, prop.multiProcessorCount, prop.major, prop.minor);
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    dh_mi_values *d_out;
    CK(cudaMalloc(&d_out, 1024 * sizeof(dh_mi_values)));
    if (stages) {
        stage_split(s, d_out, 100);
        CK(cudaFree(d_out));
        CK(cudaStreamDestroy(s));
        printf("\n%s\n", g_failed ? "RESULT: MISMATCH against the CPU twin" : "RESULT: all checks ok");
        return g_failed;
    }

    /* 1. latency of one evaluation */
    printf("\n## One evaluation (device us, median of %d; range given = one launch; found = "
           "the image's min..max, still one launch)\n",
           reps);
    double floor_kernel, floor_graph;
    bench_launch_floor(s, reps, &floor_kernel, &floor_graph);
    printf("floor as a caller sees it (host clock, launch + wait): empty kernel %.2f us, empty "
           "one-node graph %.2f us\n",
           floor_kernel, floor_graph);
    printf("| size | bins | layout | check | single, range given | single, range found | graph "
           "replay | graph, 100 chained (per eval) | graph replay + wait, host clock |\n"
           "|---|---|---|---|---|---|---|---|---|\n");
    const uint32_t bins_list[] = {32, 64, 256};
    for (size_t side : {256, 512}) {
        size_t n = side * side;
        std::vector<uint16_t> fixed(n), mov(n);
        fill_ct(fixed.data(), side, side, 1, 1);
        shifted_copy(fixed.data(), mov.data(), side, side, 1, 3, 2, 2);
        uint16_t *d_mov = upload(mov);
        for (uint32_t bins : bins_list) {
            prepared p = prepare(fixed.data(), n, bins);
            dh_mi_gpu *g = make_gpu(p, n, bins, 1, nullptr);
            dh_mi_gpu_tuning t;
            dh_mi_gpu_get_tuning(g, &t);
            evaluate(g, d_mov, 0, 1, 1, d_out, s);
            bool ok = check(g, p, mov.data(), n, bins, 1, d_out, 0);
            evaluate(g, d_mov, 0, 1, 0, d_out, s);
            ok = check(g, p, mov.data(), n, bins, 0, d_out, 0) && ok;
            double given = time_single(g, d_mov, 0, 1, 1, d_out, s, reps);
            double found = time_single(g, d_mov, 0, 1, 0, d_out, s, reps);
            double one, chained, seen;
            time_graph(g, d_mov, 1, d_out, s, reps, &one, &chained, &seen);
            printf("| %zux%zu | %u | %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f |\n", side,
                   side, bins, layout_name(g, 1).c_str(), ok ? "ok" : "MISMATCH", given, found, one,
                   chained, seen);
            fflush(stdout);
            dh_mi_gpu_free(g);
        }
        CK(cudaFree(d_mov));
    }

    few_images(s, d_out, reps);

    /* 2. batched throughput, 256x256 */
    printf("\n## Batched 256x256 pairs (range given; evaluations per second, median of 20 "
           "launches)\n");
    printf("| bins | batch | C x G | check | us per launch | evaluations/s |\n"
           "|---|---|---|---|---|---|\n");
    {
        const size_t side = 256, n = side * side;
        const uint32_t max_batch = 1024;
        image_batch ib = make_batch(side, max_batch);
        const uint16_t *d_movs = ib.d_movs, *movs = ib.movs.data();
        for (uint32_t bins : {64u, 256u}) {
            prepared p = prepare(ib.fixed.data(), n, bins);
            for (uint32_t cl : {0u, 1u, 2u, 4u, 8u, 16u}) {
                dh_mi_gpu_tuning want = {cl, 0};
                dh_mi_gpu *g = make_gpu(p, n, bins, max_batch, &want);
                dh_mi_gpu_tuning got;
                dh_mi_gpu_get_tuning(g, &got);
                if (cl && got.cluster != cl) { /* does not fit: the size above it is measured */
                    dh_mi_gpu_free(g);
                    continue;
                }
                dh_mi_gpu_tuning t;
                dh_mi_gpu_get_tuning(g, &t);
                for (uint32_t batch : {64u, 256u, 1024u}) {
                    evaluate(g, d_movs, n, batch, 1, d_out, s);
                    bool ok = check(g, p, movs, n, bins, 1, d_out, 0) &&
                              check(g, p, movs + (size_t)(batch - 1) * n, n, bins, 1, d_out,
                                    batch - 1);
                    double us = time_single(g, d_movs, n, batch, 1, d_out, s, 20);
                    printf("| %u | %u | %u x %u%s | %s | %.1f | %.3g |\n", bins, batch, t.cluster,
                           t.clusters_per_image, cl ? "" : " (auto)", ok ? "ok" : "MISMATCH", us,
                           batch / (us * 1e-6));
                    fflush(stdout);
                }
                dh_mi_gpu_free(g);
            }
        }
        /* blocks per SM for one-block images (dh_mi_gpu_tuning.blocks_per_sm) */
        printf("\n## Blocks per SM, 256x256 batches, one block of 512 threads per image "
               "(evaluations per second, median of 20 launches)\n");
        printf("| bins | batch | blocks per SM | check | us per launch | evaluations/s |\n"
               "|---|---|---|---|---|---|\n");
        for (uint32_t bins : {32u, 64u})
            for (uint32_t bp : {2u, 3u, 4u, 8u}) { /* 8: blocks of 256 threads */
                prepared p = prepare(ib.fixed.data(), n, bins);
                dh_mi_gpu_tuning want = {1, 0, bp == 8 ? 256u : 512u, 0, bp};
                dh_mi_gpu *g = make_gpu(p, n, bins, max_batch, &want);
                for (uint32_t batch : {256u, 1024u}) {
                    evaluate(g, d_movs, n, batch, 1, d_out, s);
                    bool ok = check(g, p, movs, n, bins, 1, d_out, 0) &&
                              check(g, p, movs + (size_t)(batch - 1) * n, n, bins, 1, d_out,
                                    batch - 1);
                    double us = time_single(g, d_movs, n, batch, 1, d_out, s, 20);
                    printf("| %u | %u | %u | %s | %.1f | %.3g |\n", bins, batch, bp,
                           ok ? "ok" : "MISMATCH", us, batch / (us * 1e-6));
                    fflush(stdout);
                }
                dh_mi_gpu_free(g);
            }
        /* The count loops: the branch-free one (default for 32-bit counters without a mask),
         * the run-merging one (classic_count) with one shared atomic per run or per pixel
         * (no_run_merge). */
        printf("\n## Count loop, 256x256 batch 1024 (us per launch, median of 20; automatic "
               "layout)\n| bins | loop | check | us per launch | evaluations/s |\n"
               "|---|---|---|---|---|\n");
        for (uint32_t bins : {64u, 256u})
            for (uint32_t nm : {0u, 2u, 3u}) {
                dh_mi_gpu_tuning want = {0, 0, 0, 0, 0, nm & 1u, nm >> 1};
                batch_row(ib, side, bins, max_batch, want,
                          nm == 0 ? "default" : nm == 2 ? "classic, per run" : "classic, per pixel",
                          d_out, s);
            }
        /* The entropy terms: logarithms of counts read from the table (default) or computed
         * for every non-zero cell (direct_terms). */
        printf("\n## Entropy terms, 256x256 batch 1024 (us per launch, median of 20; automatic "
               "layout)\n| bins | logarithms | check | us per launch | evaluations/s |\n"
               "|---|---|---|---|---|\n");
        for (uint32_t bins : {64u, 128u, 256u})
            for (uint32_t direct : {0u, 1u}) {
                dh_mi_gpu_tuning want = {};
                want.direct_terms = direct;
                batch_row(ib, side, bins, max_batch, want, direct ? "computed" : "table", d_out,
                          s);
            }
        CK(cudaFree(ib.d_movs));
    }
    /* 512x512 pairs in batches: the automatic layout (one block per image from one image per
     * SM on) against a cluster of 16 per image (the layout of one evaluation) */
    printf("\n## Batched 512x512 pairs, batch 256 (range given; median of 20 launches)\n"
           "| bins | layout | check | us per launch | evaluations/s |\n|---|---|---|---|---|\n");
    {
        const size_t side = 512;
        const uint32_t batch = 256;
        image_batch ib = make_batch(side, batch);
        for (uint32_t bins : {64u, 256u})
            for (uint32_t cl : {0u, 16u}) {
                dh_mi_gpu_tuning want = {cl, 0};
                batch_row(ib, side, bins, batch, want, cl ? "cluster of 16" : "auto", d_out, s);
            }
        CK(cudaFree(ib.d_movs));
    }

    /* 3. layouts for one 512x512 evaluation */
    printf("\n## Layout sweep, one 512x512 evaluation, range given (device us, median; "
           "\"pixel\": one atomic per pixel)\n");
    printf("| bins | C | G | check | us |\n|---|---|---|---|---|\n");
    {
        const size_t side = 512, n = side * side;
        std::vector<uint16_t> fixed(n), mov(n);
        fill_ct(fixed.data(), side, side, 1, 1);
        shifted_copy(fixed.data(), mov.data(), side, side, 1, 3, 2, 2);
        uint16_t *d_mov = upload(mov);
        for (uint32_t bins : {64u, 256u}) {
            prepared p = prepare(fixed.data(), n, bins);
            for (uint32_t cl : {2u, 4u, 8u, 16u})
                for (uint32_t gc : {1u, 2u, 4u, 8u, 101u}) {
                    /* 101: one cluster per image, one atomic per pixel */
                    dh_mi_gpu_tuning want = {cl, gc % 100, 0, 0, 0, gc / 100};
                    dh_mi_gpu *g = make_gpu(p, n, bins, 1, &want);
                    dh_mi_gpu_tuning t;
                    dh_mi_gpu_get_tuning(g, &t);
                    evaluate(g, d_mov, 0, 1, 1, d_out, s);
                    bool ok = check(g, p, mov.data(), n, bins, 1, d_out, 0);
                    evaluate(g, d_mov, 0, 1, 0, d_out, s); /* G > 1: the range kernel too */
                    ok = check(g, p, mov.data(), n, bins, 0, d_out, 0) && ok;
                    printf("| %u | %u | %u%s | %s | %.2f |\n", bins, t.cluster,
                           t.clusters_per_image, gc > 100 ? " pixel" : "", ok ? "ok" : "MISMATCH",
                           time_single(g, d_mov, 0, 1, 1, d_out, s, reps / 2));
                    fflush(stdout);
                    dh_mi_gpu_free(g);
                }
        }
        CK(cudaFree(d_mov));
    }

    /* 4. the 512^3 volume pair at 64 bins against reading both volumes */
    if (!quick) {
        const size_t side = 512, n = side * side * side;
        std::vector<uint16_t> fixed(n), mov(n);
        fill_ct(fixed.data(), side, side, side, 1);
        shifted_copy(fixed.data(), mov.data(), side, side, side, 2, 1, 2);
        prepared p = prepare(fixed.data(), n, 64);
        uint16_t *d_mov, *d_fixed_copy;
        unsigned *d_sink;
        CK(cudaMalloc(&d_mov, n * 2));
        CK(cudaMalloc(&d_fixed_copy, n * 2));
        CK(cudaMalloc(&d_sink, 4));
        CK(cudaMemcpy(d_mov, mov.data(), n * 2, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(d_fixed_copy, p.bins.data(), n * 2, cudaMemcpyHostToDevice));
        printf("\n## 512^3 volume pair, 64 bins (two 256 MiB volumes; median of 20)\n");
        printf("| what | C x G | check | us | GB/s (both volumes) | vs read-only |\n"
               "|---|---|---|---|---|---|\n");
        double ro = bench_median_each_us(s, 3, 20, [&] {
            read_only<<<prop.multiProcessorCount * 4, 512, 0, s>>>(
                (const uint4 *)d_fixed_copy, (const uint4 *)d_mov, n / 8, d_sink);
            CK(cudaGetLastError());
        });
        const double gb = 4.0 * n / 1e9;
        printf("| read-only kernel, 16-byte loads | - | - | %.1f | %.0f | 1.00 |\n", ro, gb / (ro * 1e-6));
        for (uint32_t cl : {0u, 8u, 16u}) {
            dh_mi_gpu_tuning want = {cl, 0};
            dh_mi_gpu *g = make_gpu(p, n, 64, 1, &want);
            dh_mi_gpu_tuning t;
            dh_mi_gpu_get_tuning(g, &t);
            evaluate(g, d_mov, 0, 1, 1, d_out, s);
            bool ok = check(g, p, mov.data(), n, 64, 1, d_out, 0);
            double us = time_single(g, d_mov, 0, 1, 1, d_out, s, 20);
            printf("| MI, range given%s | %u x %u | %s | %.1f | %.0f | %.3f |\n",
                   cl ? "" : " (auto)", t.cluster, t.clusters_per_image, ok ? "ok" : "MISMATCH",
                   us, gb / (us * 1e-6), us / ro);
            if (!cl) {
                double found = time_single(g, d_mov, 0, 1, 0, d_out, s, 20);
                printf("| MI, range found (+ range kernel) | %u x %u | - | %.1f | %.0f | %.3f |\n",
                       t.cluster, t.clusters_per_image, found, gb / (found * 1e-6), found / ro);
            }
            fflush(stdout);
            dh_mi_gpu_free(g);
        }
        CK(cudaFree(d_mov));
        CK(cudaFree(d_fixed_copy));
        CK(cudaFree(d_sink));
    }
    CK(cudaFree(d_out));
    CK(cudaStreamDestroy(s));
    printf("\n%s\n", g_failed ? "RESULT: MISMATCH against the CPU twin" : "RESULT: all checks ok");
    return g_failed;
}
