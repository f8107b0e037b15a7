// SPDX-License-Identifier: MIT
/*
 * hist_cuda.cu: the CUDA launchers of the 1D histogram (kernels/hist_cuda.h): `launch`, the shape
 * chooser (map kind, counters and layout from the bin count, the input and the device), one small
 * launcher per layout (launch_small: one cluster, hist_cuda_small.cuh; launch_cluster: clusters
 * sharing counters, hist_cuda_cluster.cuh; launch_blocks: hist_cuda_kernel.cuh's two blocks of
 * 512 threads per SM or hist_cuda_big.cuh's one of 1024), the device-pointer entry, and the host
 * path that streams a host volume through pinned staging buffers in chunks. The counting pieces
 * are in hist_cuda_count.cuh, the CPU twin in hist_cpu.c.
 *
 * Nothing here keeps global mutable state: device limits are read per call (cheap attribute
 * queries the runtime caches), and reusable resources live in a dh_cuda_state owned by a context.
 * Every CUDA call is checked; the message carries CUDA's own text and nothing is printed.
 */
#include "cuda_check.h"
#include "hist_cuda.h"
#include "hist_cuda_cluster.cuh"
#include "hist_cuda_big.cuh"
#include "hist_cuda_small.cuh"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DH_CUDA_PREFIX "CUDA histogram: "

using namespace dh_cuda;

namespace {

/* Defaults of the launch shape (bench/NOTES.md has the measurements behind them). */
const uint32_t DEFAULT_SMEM_TARGET = 8000;
const uint32_t DEFAULT_MAX_COPIES = 32;
const uint64_t DEFAULT_MIN_SAMPLES_PER_BLOCK = 4096;
/* Zeroing inside the kernel saves a launch (0.7 us on one slice) but its grid-wide barrier and
 * the kernel's own zeroing cost more than a memset on large inputs and large outputs. */
const uint64_t ZERO_IN_KERNEL_MAX_SAMPLES = (uint64_t)1 << 22;
const uint64_t ZERO_IN_KERNEL_MAX_COUNTS = (uint64_t)1 << 17;
/* Bins whose 32-bit counters do not fit one block get packed 16-bit counters in one block of
 * 1024 threads whose guard proves that no counter wraps (hist_cuda_big.cuh: 67% of the read
 * ceiling at 65536 bins on an H100, against 44% for a kernel that repaired wraps from returned
 * words); a cluster of 2 or 4 blocks sharing 32-bit counters is there only when dh_cuda_tuning
 * asks for it: its distributed-shared-memory atomics cost about 12 times a local one. */
/* One cluster storing a small single histogram (hist_cuda_small.cuh) lost on one 512x512 slice
 * at 4096 bins: 10.0 us (8 blocks) and 10.4 us (16) against 8.5 us for the whole device zeroing
 * in the kernel, so it is off by default (0) and taken only when
 * dh_cuda_tuning.small_cluster asks; SMALL_MAX_SAMPLES is where a default would apply. */
const uint64_t SMALL_MAX_SAMPLES = (uint64_t)1 << 19;
const uint32_t DEFAULT_SMALL_CLUSTER = 0;
/* Wide counters take one block of 1024 threads per SM (hist_cuda_big.cuh) from this many
 * samples on, or wherever two blocks' counters do not fit an SM; two blocks of 512 threads
 * otherwise (1024 threads: CT-like 4096 bins 90.3% of the read ceiling against 85.2%, per-slice
 * 87.3% against 81.4%). */
const uint64_t WIDE_1024_MIN_SAMPLES = (uint64_t)1 << 22;
/* Guarded packed counters of one histogram: 2 = flush count pairs (hist_args.pairs: uniform
 * 65536 bins 66.6% against 60.2%), 1 = one add per count. */
const int DEFAULT_PAIR_FLUSH = 2;
/* How a launch treats its output: add to it as it is; zero it inside the kernel (cooperative,
 * a grid-wide barrier before the first flush); no zeroing, each histogram stored by the piece
 * that ends it and added to by the others after a grid-wide barrier (cooperative); or a memset
 * first. */
enum zeroing { ZERO_NONE = 0, ZERO_KERNEL = 1, ZERO_STORE = 2, ZERO_MEMSET = 3 };
/* Host path: samples per staging chunk (64 MiB of 16-bit samples), two chunks in flight. */
const size_t HOST_CHUNK_SAMPLES = (size_t)32 << 20;

int fail_text(char *msg, size_t msg_len, const char *text)
{
    if (msg && msg_len)
        snprintf(msg, msg_len, "CUDA histogram: %s", text);
    return -1;
}


typedef void (*kernel_fn)(const hist_args);

/* [kind][signed]: a constant table, not state. */
const kernel_fn KERNELS[4][2] = {
    {hist_kernel<MAP_SHIFT, 0>, hist_kernel<MAP_SHIFT, 1>},
    {hist_kernel<MAP_DIV, 0>, hist_kernel<MAP_DIV, 1>},
    {hist_kernel<MAP_LUT, 0>, hist_kernel<MAP_LUT, 1>},
    {hist_kernel<MAP_PAIR, 0>, hist_kernel<MAP_PAIR, 1>},
};

/* One block of 1024 threads per SM (hist_cuda_big.cuh), [kind][signed][0: wide, 1: guarded
 * packed counters]. */
const kernel_fn BIG_KERNELS[4][2][2] = {
    {{hist_big_kernel<MAP_SHIFT, 0, 0>, hist_big_kernel<MAP_SHIFT, 0, 1>},
     {hist_big_kernel<MAP_SHIFT, 1, 0>, hist_big_kernel<MAP_SHIFT, 1, 1>}},
    {{hist_big_kernel<MAP_DIV, 0, 0>, hist_big_kernel<MAP_DIV, 0, 1>},
     {hist_big_kernel<MAP_DIV, 1, 0>, hist_big_kernel<MAP_DIV, 1, 1>}},
    {{hist_big_kernel<MAP_LUT, 0, 0>, hist_big_kernel<MAP_LUT, 0, 1>},
     {hist_big_kernel<MAP_LUT, 1, 0>, hist_big_kernel<MAP_LUT, 1, 1>}},
    {{hist_big_kernel<MAP_PAIR, 0, 0>, hist_big_kernel<MAP_PAIR, 0, 1>},
     {hist_big_kernel<MAP_PAIR, 1, 0>, hist_big_kernel<MAP_PAIR, 1, 1>}},
};

/* Cluster kernels, [kind][signed][variant]: 0 = 2 blocks of 32-bit counters, 1 = 4 blocks of
 * 32-bit counters, 2 = 2 blocks of packed 16-bit counters. */
const kernel_fn CLUSTER_KERNELS[4][2][3] = {
    {{hist_cluster_kernel<MAP_SHIFT, 0, 2, 0>, hist_cluster_kernel<MAP_SHIFT, 0, 4, 0>,
      hist_cluster_kernel<MAP_SHIFT, 0, 2, 1>},
     {hist_cluster_kernel<MAP_SHIFT, 1, 2, 0>, hist_cluster_kernel<MAP_SHIFT, 1, 4, 0>,
      hist_cluster_kernel<MAP_SHIFT, 1, 2, 1>}},
    {{hist_cluster_kernel<MAP_DIV, 0, 2, 0>, hist_cluster_kernel<MAP_DIV, 0, 4, 0>,
      hist_cluster_kernel<MAP_DIV, 0, 2, 1>},
     {hist_cluster_kernel<MAP_DIV, 1, 2, 0>, hist_cluster_kernel<MAP_DIV, 1, 4, 0>,
      hist_cluster_kernel<MAP_DIV, 1, 2, 1>}},
    {{hist_cluster_kernel<MAP_LUT, 0, 2, 0>, hist_cluster_kernel<MAP_LUT, 0, 4, 0>,
      hist_cluster_kernel<MAP_LUT, 0, 2, 1>},
     {hist_cluster_kernel<MAP_LUT, 1, 2, 0>, hist_cluster_kernel<MAP_LUT, 1, 4, 0>,
      hist_cluster_kernel<MAP_LUT, 1, 2, 1>}},
    {{hist_cluster_kernel<MAP_PAIR, 0, 2, 0>, hist_cluster_kernel<MAP_PAIR, 0, 4, 0>,
      hist_cluster_kernel<MAP_PAIR, 0, 2, 1>},
     {hist_cluster_kernel<MAP_PAIR, 1, 2, 0>, hist_cluster_kernel<MAP_PAIR, 1, 4, 0>,
      hist_cluster_kernel<MAP_PAIR, 1, 2, 1>}},
};
const int CLUSTER_THREADS[3] = {cluster_shape<2, 0>::threads, cluster_shape<4, 0>::threads,
                                cluster_shape<2, 1>::threads};

/* One-cluster kernels for small inputs, [kind][signed][0: 8 blocks, 1: 16 blocks]. */
const kernel_fn SMALL_KERNELS[4][2][2] = {
    {{hist_small_kernel<MAP_SHIFT, 0, 8>, hist_small_kernel<MAP_SHIFT, 0, 16>},
     {hist_small_kernel<MAP_SHIFT, 1, 8>, hist_small_kernel<MAP_SHIFT, 1, 16>}},
    {{hist_small_kernel<MAP_DIV, 0, 8>, hist_small_kernel<MAP_DIV, 0, 16>},
     {hist_small_kernel<MAP_DIV, 1, 8>, hist_small_kernel<MAP_DIV, 1, 16>}},
    {{hist_small_kernel<MAP_LUT, 0, 8>, hist_small_kernel<MAP_LUT, 0, 16>},
     {hist_small_kernel<MAP_LUT, 1, 8>, hist_small_kernel<MAP_LUT, 1, 16>}},
    {{hist_small_kernel<MAP_PAIR, 0, 8>, hist_small_kernel<MAP_PAIR, 0, 16>},
     {hist_small_kernel<MAP_PAIR, 1, 8>, hist_small_kernel<MAP_PAIR, 1, 16>}},
};

/* The constants of pair_slots (hist_cuda_count.cuh) for a shift map, or 0 when the pair form
 * cannot take the map. In the unsigned sample domain u (signed samples biased by 32768) the
 * internal slot is floor((u - L) / 2^shift) for L <= u <= H, 0 below, bins + 1 above, where
 * L = lo - 2^shift and H = lo + (bins << shift). Clamping u to [A, B] = [max(L, 0),
 * min(H, 65535)] keeps those answers; adding c = -L + k 2^shift (k chosen so that A + c >= 0)
 * and subtracting k after the shift gives the same slot, and the form is usable when also
 * B + c <= 65535 (no carry between the halves) and shift < 16. */
int pair_params(hist_args &a, int is_signed)
{
    const int64_t sh = a.shift;
    if (sh < 0 || sh > 15)
        return 0;
    const int64_t lo = (int64_t)a.lo + (is_signed ? 32768 : 0);
    const int64_t L = lo - ((int64_t)1 << sh), H = lo + ((int64_t)a.bins << sh);
    const int64_t A = L > 0 ? L : 0, B = H < 65535 ? H : 65535;
    if (A > B)
        return 0;
    const int64_t k = -((A - L) >> sh); /* the smallest k with -L + k 2^sh >= -A */
    const int64_t c = -L + (k << sh);
    if (A + c < 0 || B + c > 65535)
        return 0;
    a.pair_lo = (uint32_t)(A * 65537);
    a.pair_hi = (uint32_t)(B * 65537);
    a.pair_add = (uint32_t)(c * 65537); /* c < 0: the 32-bit two's complement subtracts |c| */
    a.pair_mask = (0xffffu >> sh) * 65537u;
    a.pair_post = (int32_t)-k;
    return 1;
}

int check_map(const dh_bin_map *map, int is_signed, char *msg, size_t msg_len)
{
    if (!map || map->bins == 0 || map->bins > DH_HIST_MAX_BINS)
        return fail_text(msg, msg_len, "bins must be 1..65536");
    if (map->lut) {
        if (map->lut_len != 65536 || map->lut_base != (is_signed ? -32768 : 0))
            return fail_text(msg, msg_len, "a table map must cover the whole 16-bit sample type");
    } else if (map->lo >= map->hi) {
        return fail_text(msg, msg_len, "the range must have lo < hi");
    }
    return 0;
}

/* The launch of one 1-D grid in clusters of `cluster` blocks; the attribute lives in *attr, which
 * must outlive the launch. */
cudaLaunchConfig_t cluster_config(cudaLaunchAttribute *attr, unsigned cluster, unsigned threads,
                                  size_t smem, cudaStream_t stream)
{
    memset(attr, 0, sizeof *attr);
    attr->id = cudaLaunchAttributeClusterDimension;
    attr->val.clusterDim.x = cluster;
    attr->val.clusterDim.y = 1;
    attr->val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.blockDim = dim3(threads);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return cfg;
}

/* One launch's request: n samples at d_data (index `first` of the volume, seg_len samples per
 * histogram) counted into d_out, adding to it (zero = ZERO_NONE), or overwriting d_out (out_len
 * counts) and d_total the way `zero` says (a way the shape cannot take becomes a memset).
 * `small` (8 or 16) asks for the one-cluster kernel where it applies. A table map's lut must
 * already be on the device. */
struct launch_request {
    const void *d_data;
    int is_signed;
    uint64_t n, first, seg_len;
    const dh_bin_map *map;
    unsigned long long *d_out, *d_total;
    uint64_t out_len;
    int zero; /* enum zeroing */
    uint32_t small;
    cudaStream_t stream;
    const dh_cuda_tuning *tuning;
};

/* What the device offers a launch, read once per launch. */
struct device_limits {
    int dev, sms, optin; /* optin: shared memory per block */
};

/* The launch's shape: the kernel arguments, the map kind and the counters. */
struct launch_shape {
    hist_args a;
    int kind;         /* enum map_kind */
    int packed;       /* 16-bit counters */
    uint32_t cluster; /* 0 or 1: one block; 2 or 4: a cluster sharing the counters */
    int variant;      /* CLUSTER_KERNELS' last index */
    size_t smem;
};

int read_limits(device_limits *d, char *msg, size_t msg_len)
{
    DH_CUDA_CK(cudaGetDevice(&d->dev), "cudaGetDevice");
    DH_CUDA_CK(cudaDeviceGetAttribute(&d->sms, cudaDevAttrMultiProcessorCount, d->dev),
               "cudaDeviceGetAttribute(multiprocessors)");
    DH_CUDA_CK(cudaDeviceGetAttribute(&d->optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, d->dev),
               "cudaDeviceGetAttribute(shared memory per block)");
    return 0;
}

/* The samples per block that size a grid: the tuning's, or the default. */
uint64_t min_samples_per_block(const dh_cuda_tuning *tuning)
{
    return tuning && tuning->min_samples_per_block ? tuning->min_samples_per_block
                                                   : DEFAULT_MIN_SAMPLES_PER_BLOCK;
}

/* The kernel arguments that follow from the request alone (no shape yet). */
hist_args request_args(const launch_request &r)
{
    const dh_bin_map *map = r.map;
    hist_args a;
    memset(&a, 0, sizeof a);
    a.data = (const uint16_t *)r.d_data;
    a.n = r.n;
    a.first = r.first;
    a.seg_len = r.seg_len ? r.seg_len : 1;
    a.out = r.d_out;
    a.total = r.d_total;
    a.bins = map->bins;
    a.slots = map->bins + 2;
    a.lo = map->lo;
    a.hi = map->hi;
    a.shift = map->shift;
    a.width = (uint64_t)((int64_t)map->hi - map->lo);
    a.inv_width = a.width ? 1.0 / (double)a.width : 0.0;
    a.lut = map->lut;
    a.lut_base = map->lut_base;
    a.head = (uint32_t)(((16 - ((uintptr_t)r.d_data & 15)) & 15) / 2);
    a.out_len = r.out_len;
    return a;
}

/* The map kind: the shift kernel computes s - lo in int32, fine for any |lo| <= 2^30 (s is
 * 16-bit); beyond that the division kernel, exact for any range, takes the map. The pair form of
 * the shift map (filling a's pair fields) is preferred wherever it applies. */
int choose_kind(const launch_request &r, hist_args &a)
{
    const dh_bin_map *map = r.map;
    const int shift_ok = map->shift >= 0 && map->lo >= -(1 << 30) && map->lo <= (1 << 30);
    const int kind = map->lut ? MAP_LUT : shift_ok ? MAP_SHIFT : MAP_DIV;
    if (kind == MAP_SHIFT && !(r.tuning && r.tuning->classic_map) && pair_params(a, r.is_signed))
        return MAP_PAIR;
    return kind;
}

/* The counters: wide 32-bit counters whenever one copy fits, as many copies as the target
 * allows. Beyond that packed 16-bit counters in one block, or where asked a cluster sharing the
 * counters over distributed shared memory (Hopper on). */
int choose_counters(const launch_request &r, const device_limits &d, launch_shape &s, char *msg,
                    size_t msg_len)
{
    const dh_cuda_tuning *tuning = r.tuning;
    hist_args &a = s.a;
    const uint32_t smem_target =
        tuning && tuning->smem_target ? tuning->smem_target : DEFAULT_SMEM_TARGET;
    const uint32_t max_copies =
        tuning && tuning->max_copies ? tuning->max_copies : DEFAULT_MAX_COPIES;
    const uint32_t stride = a.slots | 1u;
    s.packed = tuning && tuning->force_packed;
    s.cluster = tuning ? tuning->cluster_size : 0;
    if (s.cluster != 0 && s.cluster != 1 && s.cluster != 2 && s.cluster != 4)
        return fail_text(msg, msg_len, "cluster size must be 1, 2 or 4");
    if (s.cluster == 4 && s.packed)
        return fail_text(msg, msg_len, "packed counters in a cluster take 2 blocks");
    s.variant = s.cluster == 4 ? 1 : s.packed ? 2 : 0;
    s.smem = 0;
    if (s.cluster >= 2) {
        /* Keys (internal slot less post) run below slots - post; block rank k % cluster keeps
         * key k at index k / cluster (hist_cuda_cluster.cuh). */
        const int64_t post = s.kind == MAP_PAIR ? a.pair_post : 0;
        int64_t keys = (int64_t)a.slots - post;
        if (keys < (int64_t)s.cluster)
            keys = s.cluster;
        const uint32_t per_block = (uint32_t)((keys + s.cluster - 1) / s.cluster);
        a.words = s.packed ? (per_block + 1) / 2 : per_block;
        s.smem = (size_t)a.words * 4;
    } else if (!s.packed && (size_t)stride * 4 <= (size_t)d.optin) {
        uint32_t copies = 1;
        while (copies * 2 <= max_copies && (size_t)copies * 2 * stride * 4 <= smem_target)
            copies *= 2;
        a.copies = copies;
        a.stride = stride;
        s.smem = (size_t)copies * stride * 4;
    } else {
        s.packed = 1;
    }
    if (s.packed && s.cluster < 2) {
        /* The pair map's keys are 16-bit: word and half straight from the key (hist_args). */
        a.words = s.kind == MAP_PAIR ? 32768u : (a.slots + 1) / 2;
        a.half_lo = s.kind == MAP_PAIR ? a.pair_post : 0;
        a.half_hi = s.kind == MAP_PAIR ? 32768 + a.pair_post : (int32_t)a.words;
        s.smem = (size_t)a.words * 4;
    }
    if (s.smem > (size_t)d.optin)
        return fail_text(msg, msg_len, "the device's shared memory is too small for the bins");
    return 0;
}

/* Lets `kernel` launch with smem bytes of dynamic shared memory where that is beyond the
 * default 48 KB. */
int allow_smem(kernel_fn kernel, size_t smem, char *msg, size_t msg_len)
{
    DH_CUDA_CK(dh_cuda_allow_smem((const void *)kernel, smem),
               "cudaFuncSetAttribute(shared memory)");
    return 0;
}

/* Whether the one-cluster kernel for small inputs (hist_cuda_small.cuh) takes this request:
 * the whole input is one small histogram of wide counters, overwritten, so one cluster counts it
 * and stores the output with no zeroing. */
int small_applies(const launch_request &r, const launch_shape &s)
{
    const int wide = s.cluster < 2 && !s.packed;
    return (r.small == 8 || r.small == 16) && wide && r.zero != ZERO_NONE && r.n > 0 &&
           r.n <= DH_CUDA_PIECE_MAX && r.seg_len >= r.n && r.first == 0 && !r.d_total;
}

/* Launches the one-cluster kernel; *launched 0 where the device cannot hold the cluster (the
 * caller then counts on the whole device). */
int launch_small(const launch_request &r, const device_limits &d, launch_shape &s, int *launched,
                 char *msg, size_t msg_len)
{
    *launched = 0;
    int can = 0;
    DH_CUDA_CK(cudaDeviceGetAttribute(&can, cudaDevAttrClusterLaunch, d.dev),
               "cudaDeviceGetAttribute(cluster launch)");
    if (!can)
        return 0;
    const uint32_t small = r.small;
    const kernel_fn kernel = SMALL_KERNELS[s.kind][r.is_signed ? 1 : 0][small == 16];
    if (small == 16)
        DH_CUDA_CK(cudaFuncSetAttribute((const void *)kernel,
                                        cudaFuncAttributeNonPortableClusterSizeAllowed, 1),
                   "cudaFuncSetAttribute(cluster size)");
    if (allow_smem(kernel, s.smem, msg, msg_len))
        return -1;
    cudaLaunchAttribute attr;
    cudaLaunchConfig_t cfg = cluster_config(
        &attr, small, small == 16 ? small_shape<16>::threads : small_shape<8>::threads, s.smem,
        r.stream);
    cfg.gridDim = dim3(small);
    s.a.blocks = small;
    /* 16 blocks is beyond the portable cluster size: a device whose processing clusters cannot
     * hold it counts on the whole device instead (asked for only by tuning). */
    int most = 1;
    if (small == 16)
        DH_CUDA_CK(cudaOccupancyMaxActiveClusters(&most, kernel, &cfg),
                   "cudaOccupancyMaxActiveClusters");
    if (most < 1)
        return 0;
    DH_CUDA_CK(cudaLaunchKernelEx(&cfg, kernel, s.a), "histogram kernel launch (small cluster)");
    *launched = 1;
    return 0;
}

/* The way the outputs get zeroed, settled: storing needs pieces cut only at histogram and block
 * ends, wide counters, no total; a cluster launch cannot be cooperative; what the kernel cannot
 * do is a memset first (after which the launch adds: ZERO_NONE). */
int settle_zeroing(const launch_request &r, const launch_shape &s, int *zero, char *msg,
                   size_t msg_len)
{
    const int wide = s.cluster < 2 && !s.packed;
    *zero = r.zero;
    if (*zero == ZERO_STORE && (!wide || r.d_total || r.n == 0 || r.first != 0 ||
                                r.seg_len > DH_CUDA_PIECE_MAX))
        *zero = ZERO_MEMSET;
    if (*zero == ZERO_MEMSET || (s.cluster >= 2 && *zero != ZERO_NONE)) {
        DH_CUDA_CK(cudaMemsetAsync(r.d_out, 0, r.out_len * sizeof(uint64_t), r.stream),
                   "cudaMemsetAsync(counts)");
        if (r.d_total)
            DH_CUDA_CK(cudaMemsetAsync(r.d_total, 0, (size_t)s.a.slots * sizeof(uint64_t),
                                       r.stream),
                       "cudaMemsetAsync(counts)");
        *zero = ZERO_NONE;
    }
    return 0;
}

/* Launches the cluster kernel (hist_cuda_cluster.cuh): one cluster per `cluster` x
 * min_per_block samples, at most as many as the device holds at once (asked only when more than
 * the multiprocessors are wanted). */
int launch_cluster(const launch_request &r, const device_limits &d, launch_shape &s, char *msg,
                   size_t msg_len)
{
    const uint32_t cluster = s.cluster;
    const kernel_fn kernel = CLUSTER_KERNELS[s.kind][r.is_signed ? 1 : 0][s.variant];
    const int threads = CLUSTER_THREADS[s.variant];
    if (allow_smem(kernel, s.smem, msg, msg_len))
        return -1;
    cudaLaunchAttribute attr;
    cudaLaunchConfig_t cfg = cluster_config(&attr, cluster, threads, s.smem, r.stream);
    const uint64_t min_per_block = min_samples_per_block(r.tuning);
    const uint64_t by_size = r.n ? (r.n + min_per_block - 1) / min_per_block : 1;
    uint64_t clusters = (by_size + cluster - 1) / cluster;
    if (clusters * cluster > (uint64_t)d.sms) {
        int most = 0;
        cfg.gridDim = dim3((unsigned)(clusters * cluster < (uint64_t)d.sms * 4
                                          ? clusters * cluster
                                          : (uint64_t)d.sms * 4 / cluster * cluster));
        DH_CUDA_CK(cudaOccupancyMaxActiveClusters(&most, kernel, &cfg),
                   "cudaOccupancyMaxActiveClusters");
        if (most < 1)
            return fail_text(msg, msg_len, "the cluster kernel does not fit on this device");
        if (clusters > (uint64_t)most)
            clusters = (uint64_t)most;
    }
    s.a.blocks = (uint32_t)(clusters * cluster);
    cfg.gridDim = dim3(s.a.blocks);
    DH_CUDA_CK(cudaLaunchKernelEx(&cfg, kernel, s.a), "histogram kernel launch (cluster)");
    return 0;
}

/* Whether guarded packed counters of one overwritten histogram flush count pairs
 * (hist_args.pairs): an even slot count, every block given two or more words to spread, a
 * cooperative launch. `overwrites`: the request's outputs start at zero. */
int choose_pairs(const launch_request &r, const device_limits &d, const launch_shape &s,
                 int overwrites, uint64_t blocks, uint32_t *pairs, char *msg, size_t msg_len)
{
    const hist_args &a = s.a;
    const int pair_flush =
        r.tuning && r.tuning->pair_flush ? r.tuning->pair_flush : DEFAULT_PAIR_FLUSH;
    const int pairs_fit = s.kind == MAP_PAIR ? a.bins == 65536 && a.pair_post == 1
                                             : a.slots % 2 == 0; /* spread_pairs says why */
    *pairs = 0;
    if (pair_flush == 2 && s.packed && overwrites && r.n > 0 && r.n < ((uint64_t)1 << 32) &&
        r.seg_len >= r.n && r.first == 0 && !r.d_total && pairs_fit && blocks * 2 <= a.words) {
        int coop = 0;
        DH_CUDA_CK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, d.dev),
                   "cudaDeviceGetAttribute(cooperative launch)");
        *pairs = coop != 0;
    }
    return 0;
}

/* Launches the one-block kernels: packed counters in the guarded kernel (hist_cuda_big.cuh);
 * wide counters in one block of 1024 threads per SM for large inputs and where two blocks'
 * counters would not fit an SM, else in two blocks of 512 threads (hist_cuda_kernel.cuh). */
int launch_blocks(const launch_request &r, const device_limits &d, launch_shape &s,
                  int overwrites, char *msg, size_t msg_len)
{
    hist_args &a = s.a;
    const dh_cuda_tuning *tuning = r.tuning;
    int per_sm_smem = 0;
    DH_CUDA_CK(cudaDeviceGetAttribute(&per_sm_smem, cudaDevAttrMaxSharedMemoryPerMultiprocessor,
                                      d.dev),
               "cudaDeviceGetAttribute(shared memory per multiprocessor)");
    const uint32_t wide_threads =
        tuning && tuning->wide_threads ? tuning->wide_threads
        : r.n >= WIDE_1024_MIN_SAMPLES || 2 * (s.smem + 1024) > (size_t)per_sm_smem ? 1024u
                                                                                    : 512u;
    if (!s.packed && wide_threads != 512 && wide_threads != 1024)
        return fail_text(msg, msg_len, "wide counters take 512 or 1024 threads");
    const int big = s.packed || wide_threads == 1024;
    const int sign = r.is_signed ? 1 : 0;
    const kernel_fn kernel = big ? BIG_KERNELS[s.kind][sign][s.packed] : KERNELS[s.kind][sign];
    if (allow_smem(kernel, s.smem, msg, msg_len))
        return -1;
    const int threads = big ? DH_CUDA_BIG_THREADS : DH_CUDA_THREADS;
    /* A grid no larger than the multiprocessors needs no occupancy query (one block of any of
     * our shapes fits an SM: launch bounds cap the registers, smem was checked before); small
     * inputs, where the query's host time would show, take this way. */
    const uint64_t min_per_block = min_samples_per_block(tuning);
    uint64_t blocks = r.n ? (r.n + min_per_block - 1) / min_per_block : 1;
    if (blocks > (uint64_t)d.sms) {
        int per_sm = 0;
        DH_CUDA_CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, s.smem),
                   "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
        if (per_sm < 1)
            return fail_text(msg, msg_len, "the kernel does not fit on this device");
        if (blocks > (uint64_t)d.sms * per_sm)
            blocks = (uint64_t)d.sms * per_sm;
    }
    if (choose_pairs(r, d, s, overwrites, blocks, &a.pairs, msg, msg_len))
        return -1;
    a.blocks = (uint32_t)blocks;

    if (a.zero || a.store || a.pairs) {
        /* Every block is resident at once (the grid fits the device), as the grid-wide barrier
         * requires; the cooperative launch checks that. */
        void *args[] = {&a};
        DH_CUDA_CK(cudaLaunchCooperativeKernel((const void *)kernel, dim3(a.blocks), dim3(threads),
                                               args, s.smem, r.stream),
                   "histogram kernel launch (cooperative)");
        return 0;
    }
    kernel<<<a.blocks, threads, s.smem, r.stream>>>(a);
    DH_CUDA_CK(cudaGetLastError(), "histogram kernel launch");
    return 0;
}

/* A request that adds n samples at d_data (the start of the volume, seg_len per histogram) into
 * d_out; callers that zero, chunk or count a total set those fields. */
launch_request counts_request(const void *d_data, int is_signed, uint64_t n, uint64_t seg_len,
                              const dh_bin_map *map, unsigned long long *d_out,
                              cudaStream_t stream, const dh_cuda_tuning *tuning)
{
    launch_request r;
    memset(&r, 0, sizeof r);
    r.d_data = d_data;
    r.is_signed = is_signed;
    r.n = n;
    r.seg_len = seg_len;
    r.map = map;
    r.d_out = d_out;
    r.zero = ZERO_NONE;
    r.stream = stream;
    r.tuning = tuning;
    return r;
}

/* The shape chooser: the map kind and counters for this input and device, then the layout (one
 * small cluster, a grid of clusters, or a grid of blocks) and its launcher. */
int launch(const launch_request &r, char *msg, size_t msg_len)
{
    if (r.n == 0 && r.zero == ZERO_NONE)
        return 0;
    if ((uintptr_t)r.d_data & 1)
        return fail_text(msg, msg_len, "16-bit samples must be 2-byte aligned");
    device_limits d;
    if (read_limits(&d, msg, msg_len))
        return -1;
    launch_shape s;
    s.a = request_args(r);
    s.kind = choose_kind(r, s.a);
    if (choose_counters(r, d, s, msg, msg_len))
        return -1;
    if (small_applies(r, s)) {
        int launched = 0;
        if (launch_small(r, d, s, &launched, msg, msg_len))
            return -1;
        if (launched)
            return 0;
    }
    /* Whether this call overwrites its outputs (before settle_zeroing's memset turns that into
     * ZERO_NONE): pairs (hist_args.pairs) need outputs that start at zero. */
    const int overwrites = r.zero != ZERO_NONE;
    int zero = ZERO_NONE;
    if (settle_zeroing(r, s, &zero, msg, msg_len))
        return -1;
    if (r.n == 0 && zero == ZERO_NONE)
        return 0;
    s.a.zero = zero == ZERO_KERNEL;
    s.a.store = zero == ZERO_STORE;
    if (s.cluster >= 2)
        return launch_cluster(r, d, s, msg, msg_len);
    return launch_blocks(r, d, s, overwrites, msg, msg_len);
}

/* Overwrites the outputs with the counts, in one launch where the device can: per-slice
 * histograms stored by the blocks that end them (ZERO_STORE: 94% of the whole-volume rate at 4096
 * bins against 89% with a memset of the 16 MB of counts); other small inputs zeroed inside the
 * kernel; anything else after a memset. r.zero and r.small are chosen here;
 * tuning->zero_mode and small_cluster force a way (bench/NOTES.md has the measurements). */
int zero_and_count(launch_request r, char *msg, size_t msg_len)
{
    const int mode = r.tuning ? r.tuning->zero_mode : 0;
    const uint32_t asked = r.tuning ? r.tuning->small_cluster : 0;
    const uint64_t n = r.n, seg_len = r.seg_len;
    r.small = asked == 8 || asked == 16 ? asked
              : asked == 0 && n <= SMALL_MAX_SAMPLES && seg_len >= n ? DEFAULT_SMALL_CLUSTER
                                                                     : 0;
    int zero = mode == 1   ? ZERO_MEMSET
               : mode == 2 ? ZERO_KERNEL
               : mode == 3 ? ZERO_STORE
               : seg_len < n && !r.d_total ? ZERO_STORE
               : n <= ZERO_IN_KERNEL_MAX_SAMPLES && r.out_len <= ZERO_IN_KERNEL_MAX_COUNTS
                   ? ZERO_KERNEL
                   : ZERO_MEMSET;
    if (zero == ZERO_KERNEL || zero == ZERO_STORE) {
        int dev = 0, coop = 0;
        DH_CUDA_CK(cudaGetDevice(&dev), "cudaGetDevice");
        DH_CUDA_CK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev),
                   "cudaDeviceGetAttribute(cooperative launch)");
        if (!coop)
            zero = ZERO_MEMSET;
    }
    r.zero = zero;
    return launch(r, msg, msg_len);
}

} // namespace

struct dh_cuda_state {
    int ready;
    int device;
    cudaStream_t stream[2];
    cudaEvent_t done[2];
    cudaEvent_t zeroed;
    void *pinned[2];
    void *dbuf[2];
    size_t chunk_samples; /* capacity of each staging and device buffer */
    unsigned long long *d_out;
    size_t out_bytes;
    uint32_t *d_lut;
};

extern "C" {

/* Cheap to call again and again: cudaGetDeviceCount initializes the runtime once (state CUDA
 * itself keeps, per process) and then only reads it; this file keeps nothing. */
int dh_cuda_usable(void)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        (void)cudaGetLastError(); /* leave no error behind for the caller's next CUDA call */
        return 0;
    }
    return count > 0;
}

int dh_cuda_open_context(void)
{
    int device = 0;
    if (!dh_cuda_usable())
        return 0;
    /* cudaFree(0) is the runtime's documented no-op that makes the device's primary context. */
    if (cudaGetDevice(&device) != cudaSuccess || cudaFree(0) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return 1;
}

int dh_cuda_schedule(unsigned flags)
{
    if (flags != cudaDeviceScheduleAuto && flags != cudaDeviceScheduleSpin &&
        flags != cudaDeviceScheduleYield && flags != cudaDeviceScheduleBlockingSync)
        return 0;
    if (!dh_cuda_usable() || cudaSetDeviceFlags(flags) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return 1;
}

int dh_cuda_name(char *name, size_t size)
{
    int device = 0;
    cudaDeviceProp props;
    if (size > 0)
        name[0] = '\0';
    if (!dh_cuda_usable() || cudaGetDevice(&device) != cudaSuccess ||
        cudaGetDeviceProperties(&props, device) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    if (size > 0)
        snprintf(name, size, "%s", props.name);
    return 1;
}

/* The entry points' shared argument check: slice_len * slices samples without overflow, and a
 * buffer to read them from where there are any. */
static int count_samples(const void *data, size_t slice_len, size_t slices, size_t *n, char *msg,
                         size_t msg_len)
{
    *n = slice_len * slices;
    if (slices && *n / slices != slice_len)
        return fail_text(msg, msg_len, "sample count overflows size_t");
    if (*n && !data)
        return fail_text(msg, msg_len, "no input buffer");
    return 0;
}

int dh_hist_cuda_device_tuned(const void *d_data, int is_signed, size_t slice_len, size_t slices,
                              int per_slice, const dh_bin_map *map, uint64_t *d_out, void *stream,
                              const dh_cuda_tuning *tuning, int zero_output, char *msg,
                              size_t msg_len)
{
    if (check_map(map, is_signed, msg, msg_len))
        return -1;
    if (!d_out)
        return fail_text(msg, msg_len, "no output buffer");
    size_t n;
    if (count_samples(d_data, slice_len, slices, &n, msg, msg_len))
        return -1;
    const size_t hists = per_slice ? slices : 1;
    launch_request r = counts_request(d_data, is_signed, n, per_slice ? slice_len : n, map,
                                      (unsigned long long *)d_out, (cudaStream_t)stream, tuning);
    if (!zero_output)
        return launch(r, msg, msg_len);
    r.out_len = hists * (map->bins + 2);
    return zero_and_count(r, msg, msg_len);
}

int dh_hist_cuda_device_with_total(const void *d_data, int is_signed, size_t slice_len,
                                   size_t slices, const dh_bin_map *map, uint64_t *d_total,
                                   uint64_t *d_slices, void *stream, char *msg, size_t msg_len)
{
    if (check_map(map, is_signed, msg, msg_len))
        return -1;
    if (!d_total || !d_slices)
        return fail_text(msg, msg_len, "no output buffer");
    size_t n;
    if (count_samples(d_data, slice_len, slices, &n, msg, msg_len))
        return -1;
    launch_request r = counts_request(d_data, is_signed, n, slice_len, map,
                                      (unsigned long long *)d_slices, (cudaStream_t)stream, NULL);
    r.d_total = (unsigned long long *)d_total;
    r.out_len = slices * ((size_t)map->bins + 2);
    return zero_and_count(r, msg, msg_len);
}

int dh_hist_cuda_device(const void *d_data, int is_signed, size_t slice_len, size_t slices,
                        int per_slice, const dh_bin_map *map, uint64_t *d_out, void *stream,
                        char *msg, size_t msg_len)
{
    return dh_hist_cuda_device_tuned(d_data, is_signed, slice_len, slices, per_slice, map, d_out,
                                     stream, NULL, 1, msg, msg_len);
}

dh_cuda_state *dh_cuda_state_create(void)
{
    return (dh_cuda_state *)calloc(1, sizeof(dh_cuda_state));
}

/* Frees every resource (errors ignored: nothing useful can be done with them here). */
static void state_release(dh_cuda_state *s)
{
    if (!s->ready)
        return;
    int current = 0;
    const bool switched = cudaGetDevice(&current) == cudaSuccess && current != s->device;
    if (switched)
        cudaSetDevice(s->device);
    for (int i = 0; i < 2; i++) {
        if (s->stream[i])
            cudaStreamSynchronize(s->stream[i]);
        if (s->pinned[i])
            cudaFreeHost(s->pinned[i]);
        if (s->dbuf[i])
            cudaFree(s->dbuf[i]);
        if (s->done[i])
            cudaEventDestroy(s->done[i]);
        if (s->stream[i])
            cudaStreamDestroy(s->stream[i]);
    }
    if (s->zeroed)
        cudaEventDestroy(s->zeroed);
    if (s->d_out)
        cudaFree(s->d_out);
    if (s->d_lut)
        cudaFree(s->d_lut);
    (void)cudaGetLastError();
    if (switched)
        cudaSetDevice(current);
    memset(s, 0, sizeof *s);
}

void dh_cuda_state_free(dh_cuda_state *state)
{
    if (!state)
        return;
    state_release(state);
    free(state);
}

/* Streams and events on the current device, made once per state. */
static int state_ready(dh_cuda_state *s, char *msg, size_t msg_len)
{
    int dev = 0;
    DH_CUDA_CK(cudaGetDevice(&dev), "cudaGetDevice");
    if (s->ready && s->device == dev)
        return 0;
    state_release(s);
    s->ready = 1;
    s->device = dev;
    for (int i = 0; i < 2; i++) {
        DH_CUDA_CK(cudaStreamCreateWithFlags(&s->stream[i], cudaStreamNonBlocking),
                   "cudaStreamCreate");
        DH_CUDA_CK(cudaEventCreateWithFlags(&s->done[i], cudaEventDisableTiming),
                   "cudaEventCreate");
    }
    DH_CUDA_CK(cudaEventCreateWithFlags(&s->zeroed, cudaEventDisableTiming), "cudaEventCreate");
    return 0;
}

/* The host path proper; on failure the caller drains the streams before anything is reused. */
static int host_run(dh_cuda_state *s, const void *data, int is_signed, size_t slice_len,
                    size_t slices, int per_slice, const dh_bin_map *map, uint64_t *out, char *msg,
                    size_t msg_len)
{
    const size_t n = slice_len * slices;
    const size_t slots = (size_t)map->bins + 2;
    const size_t out_bytes = (per_slice ? slices : 1) * slots * sizeof(uint64_t);

    size_t free_bytes = 0, total_bytes = 0;
    DH_CUDA_CK(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");

    if (s->out_bytes < out_bytes) {
        if (s->d_out)
            DH_CUDA_CK(cudaFree(s->d_out), "cudaFree");
        s->d_out = NULL;
        s->out_bytes = 0;
        DH_CUDA_CK(cudaMalloc((void **)&s->d_out, out_bytes), "cudaMalloc(counts)");
        s->out_bytes = out_bytes;
        DH_CUDA_CK(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
    }

    dh_bin_map dmap = *map;
    if (map->lut) {
        if (!s->d_lut)
            DH_CUDA_CK(cudaMalloc((void **)&s->d_lut, 65536 * sizeof(uint32_t)),
                       "cudaMalloc(table)");
        DH_CUDA_CK(cudaMemcpyAsync(s->d_lut, map->lut, 65536 * sizeof(uint32_t),
                                   cudaMemcpyHostToDevice, s->stream[0]),
                   "cudaMemcpyAsync(table)");
        dmap.lut = s->d_lut;
    }
    DH_CUDA_CK(cudaMemsetAsync(s->d_out, 0, out_bytes, s->stream[0]), "cudaMemsetAsync(counts)");
    DH_CUDA_CK(cudaEventRecord(s->zeroed, s->stream[0]), "cudaEventRecord");
    DH_CUDA_CK(cudaStreamWaitEvent(s->stream[1], s->zeroed, 0), "cudaStreamWaitEvent");

    /* Chunk: at most HOST_CHUNK_SAMPLES, and the two device buffers within a quarter of what
     * is free, so a volume larger than the GPU's memory streams through instead of failing. */
    size_t chunk = n < HOST_CHUNK_SAMPLES ? n : HOST_CHUNK_SAMPLES;
    const size_t fit = free_bytes / 8 / sizeof(uint16_t);
    if (chunk > fit)
        chunk = fit;
    chunk = (chunk + 7) / 8 * 8;
    if (n && chunk < (n < 4096 ? n : 4096))
        return fail_text(msg, msg_len, "too little free GPU memory for staging buffers");
    if (n && s->chunk_samples < chunk) {
        for (int i = 0; i < 2; i++) {
            /* Both streams are idle here (the last call synchronized), so freeing is safe. */
            if (s->pinned[i])
                DH_CUDA_CK(cudaFreeHost(s->pinned[i]), "cudaFreeHost");
            if (s->dbuf[i])
                DH_CUDA_CK(cudaFree(s->dbuf[i]), "cudaFree");
            s->pinned[i] = s->dbuf[i] = NULL;
        }
        s->chunk_samples = 0;
        for (int i = 0; i < 2; i++) {
            DH_CUDA_CK(cudaMallocHost(&s->pinned[i], chunk * sizeof(uint16_t)),
                       "cudaMallocHost(staging)");
            DH_CUDA_CK(cudaMalloc(&s->dbuf[i], chunk * sizeof(uint16_t)), "cudaMalloc(samples)");
        }
        s->chunk_samples = chunk;
    }

    /* Chunk k goes through buffer k % 2 on stream k % 2: the CPU fills one staging buffer while
     * the other is copied and counted. */
    const uint64_t seg_len = per_slice ? slice_len : n;
    size_t k = 0;
    for (size_t off = 0; off < n; off += chunk, k++) {
        const int b = (int)(k & 1);
        const size_t len = n - off < chunk ? n - off : chunk;
        if (k >= 2)
            DH_CUDA_CK(cudaEventSynchronize(s->done[b]), "cudaEventSynchronize");
        memcpy(s->pinned[b], (const uint16_t *)data + off, len * sizeof(uint16_t));
        DH_CUDA_CK(cudaMemcpyAsync(s->dbuf[b], s->pinned[b], len * sizeof(uint16_t),
                                   cudaMemcpyHostToDevice, s->stream[b]),
                   "cudaMemcpyAsync(samples)");
        launch_request r = counts_request(s->dbuf[b], is_signed, len, seg_len, &dmap, s->d_out,
                                          s->stream[b], NULL);
        r.first = off;
        if (launch(r, msg, msg_len))
            return -1;
        DH_CUDA_CK(cudaEventRecord(s->done[b], s->stream[b]), "cudaEventRecord");
    }
    if (k >= 2)
        DH_CUDA_CK(cudaStreamWaitEvent(s->stream[0], s->done[1], 0), "cudaStreamWaitEvent");
    DH_CUDA_CK(cudaMemcpyAsync(out, s->d_out, out_bytes, cudaMemcpyDeviceToHost, s->stream[0]),
               "cudaMemcpyAsync(counts)");
    DH_CUDA_CK(cudaStreamSynchronize(s->stream[0]), "histogram on the GPU");
    return 0;
}

int dh_hist_cuda_host_state(dh_cuda_state *state, const void *data, int is_signed,
                            size_t slice_len, size_t slices, int per_slice, const dh_bin_map *map,
                            uint64_t *out, char *msg, size_t msg_len)
{
    if (!state || !out)
        return fail_text(msg, msg_len, "no state or output buffer");
    if (check_map(map, is_signed, msg, msg_len))
        return -1;
    size_t n;
    if (count_samples(data, slice_len, slices, &n, msg, msg_len))
        return -1;
    if (state_ready(state, msg, msg_len))
        return -1;
    if (host_run(state, data, is_signed, slice_len, slices, per_slice, map, out, msg, msg_len)) {
        /* Leave nothing in flight that still reads our buffers; the message already says why. */
        cudaStreamSynchronize(state->stream[0]);
        cudaStreamSynchronize(state->stream[1]);
        return -1;
    }
    return 0;
}

int dh_hist_cuda_host(const void *data, int is_signed, size_t slice_len, size_t slices,
                      int per_slice, const dh_bin_map *map, uint64_t *out, char *msg,
                      size_t msg_len)
{
    dh_cuda_state *state = dh_cuda_state_create();
    if (!state)
        return fail_text(msg, msg_len, "out of memory");
    const int rc = dh_hist_cuda_host_state(state, data, is_signed, slice_len, slices, per_slice,
                                           map, out, msg, msg_len);
    dh_cuda_state_free(state);
    return rc;
}

} // extern "C"
