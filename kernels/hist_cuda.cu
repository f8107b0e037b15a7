// SPDX-License-Identifier: MIT
/*
 * hist_cuda.cu: the CUDA launchers of the 1D histogram (kernels/hist_cuda.h): the launch shape
 * chosen from the bin count and the device, the device-pointer entry, and the host path that
 * streams a host volume through pinned staging buffers in chunks. The kernel is in
 * hist_cuda_kernel.cuh (hist_cuda_cluster.cuh for bins beyond one block's shared memory), the
 * counting pieces in hist_cuda_count.cuh, the CPU twin in hist_cpu.c.
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
 * ceiling at 65536 bins on an H100, against 44% for the earlier kernel that repaired wraps from
 * returned words, bench/NOTES.md run 20); a cluster of 2 or 4 blocks sharing 32-bit counters is
 * there only when dh_cuda_tuning asks for it: its distributed-shared-memory atomics cost about 12
 * times a local one (run 9). */
/* One cluster storing a small single histogram (hist_cuda_small.cuh) lost on one 512x512 slice
 * at 4096 bins: 10.0 us (8 blocks) and 10.4 us (16) against 8.5 us for the whole device zeroing
 * in the kernel (bench/NOTES.md, run 13), so it is off by default (0) and taken only when
 * dh_cuda_tuning.small_cluster asks; SMALL_MAX_SAMPLES is where a default would apply. */
const uint64_t SMALL_MAX_SAMPLES = (uint64_t)1 << 19;
const uint32_t DEFAULT_SMALL_CLUSTER = 0;
/* Wide counters take one block of 1024 threads per SM (hist_cuda_big.cuh) from this many
 * samples on, or wherever two blocks' counters do not fit an SM; two blocks of 512 threads
 * otherwise (1024 threads: CT-like 4096 bins 90.3% of the read ceiling against 85.2%, per-slice
 * 87.3% against 81.4%; bench/NOTES.md runs 19-20). */
const uint64_t WIDE_1024_MIN_SAMPLES = (uint64_t)1 << 22;
/* Guarded packed counters of one histogram: 2 = flush count pairs (hist_args.pairs: uniform
 * 65536 bins 66.6% against 60.2%, run 20), 1 = one add per count. */
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

/* Counts n samples at d_data (index `first` of the volume) into d_out: adding to it (zero =
 * ZERO_NONE), or overwriting d_out (out_len counts) and d_total the way `zero` says (a way the
 * shape cannot take becomes a memset). `small` (8 or 16) asks for the one-cluster kernel where
 * it applies. A table map's lut must already be on the device. */
int launch(const void *d_data, int is_signed, uint64_t n, uint64_t first, uint64_t seg_len,
           const dh_bin_map *map, unsigned long long *d_out, unsigned long long *d_total,
           int zero, uint32_t small, uint64_t out_len, cudaStream_t stream,
           const dh_cuda_tuning *tuning, char *msg, size_t msg_len)
{
    if (n == 0 && zero == ZERO_NONE)
        return 0;
    if ((uintptr_t)d_data & 1)
        return fail_text(msg, msg_len, "16-bit samples must be 2-byte aligned");

    int dev = 0, sms = 0, optin = 0;
    DH_CUDA_CK(cudaGetDevice(&dev), "cudaGetDevice");
    DH_CUDA_CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev),
               "cudaDeviceGetAttribute(multiprocessors)");
    DH_CUDA_CK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev),
               "cudaDeviceGetAttribute(shared memory per block)");

    const uint32_t smem_target =
        tuning && tuning->smem_target ? tuning->smem_target : DEFAULT_SMEM_TARGET;
    const uint32_t max_copies =
        tuning && tuning->max_copies ? tuning->max_copies : DEFAULT_MAX_COPIES;
    const uint64_t min_per_block = tuning && tuning->min_samples_per_block
                                       ? tuning->min_samples_per_block
                                       : DEFAULT_MIN_SAMPLES_PER_BLOCK;

    hist_args a;
    memset(&a, 0, sizeof a);
    a.data = (const uint16_t *)d_data;
    a.n = n;
    a.first = first;
    a.seg_len = seg_len ? seg_len : 1;
    a.out = d_out;
    a.total = d_total;
    a.bins = map->bins;
    a.slots = map->bins + 2;
    a.lo = map->lo;
    a.hi = map->hi;
    a.shift = map->shift;
    a.width = (uint64_t)((int64_t)map->hi - map->lo);
    a.inv_width = a.width ? 1.0 / (double)a.width : 0.0;
    a.lut = map->lut;
    a.lut_base = map->lut_base;
    a.head = (uint32_t)(((16 - ((uintptr_t)d_data & 15)) & 15) / 2);
    a.out_len = out_len;

    /* The shift kernel computes s - lo in int32: fine for any |lo| <= 2^30 (s is 16-bit);
     * beyond that the division kernel, exact for any range, takes the map. The pair form of the
     * shift map is preferred wherever it applies. */
    const int shift_ok = map->shift >= 0 && map->lo >= -(1 << 30) && map->lo <= (1 << 30);
    int kind = map->lut ? MAP_LUT : shift_ok ? MAP_SHIFT : MAP_DIV;
    if (kind == MAP_SHIFT && !(tuning && tuning->classic_map) && pair_params(a, is_signed))
        kind = MAP_PAIR;

    /* Wide 32-bit counters whenever one copy fits; as many copies as the target allows. Beyond
     * that packed 16-bit counters in one block, or where asked a cluster sharing the counters
     * over distributed shared memory (Hopper on). */
    const uint32_t stride = a.slots | 1u;
    int packed = tuning && tuning->force_packed;
    const uint32_t cluster = tuning ? tuning->cluster_size : 0; /* 0 or 1: one block */
    if (cluster != 0 && cluster != 1 && cluster != 2 && cluster != 4)
        return fail_text(msg, msg_len, "cluster size must be 1, 2 or 4");
    if (cluster == 4 && packed)
        return fail_text(msg, msg_len, "packed counters in a cluster take 2 blocks");
    const int variant = cluster == 4 ? 1 : packed ? 2 : 0;
    size_t smem = 0;
    if (cluster >= 2) {
        /* Keys (internal slot less post) run below slots - post; block rank k % cluster keeps
         * key k at index k / cluster (hist_cuda_cluster.cuh). */
        const int64_t post = kind == MAP_PAIR ? a.pair_post : 0;
        int64_t keys = (int64_t)a.slots - post;
        if (keys < (int64_t)cluster)
            keys = cluster;
        const uint32_t per_block = (uint32_t)((keys + cluster - 1) / cluster);
        a.words = packed ? (per_block + 1) / 2 : per_block;
        smem = (size_t)a.words * 4;
    } else if (!packed && (size_t)stride * 4 <= (size_t)optin) {
        uint32_t copies = 1;
        while (copies * 2 <= max_copies && (size_t)copies * 2 * stride * 4 <= smem_target)
            copies *= 2;
        a.copies = copies;
        a.stride = stride;
        smem = (size_t)copies * stride * 4;
    } else {
        packed = 1;
    }
    if (packed && cluster < 2) {
        /* The pair map's keys are 16-bit: word and half straight from the key (hist_args). */
        a.words = kind == MAP_PAIR ? 32768u : (a.slots + 1) / 2;
        a.half_lo = kind == MAP_PAIR ? a.pair_post : 0;
        a.half_hi = kind == MAP_PAIR ? 32768 + a.pair_post : (int32_t)a.words;
        smem = (size_t)a.words * 4;
    }
    if (smem > (size_t)optin)
        return fail_text(msg, msg_len, "the device's shared memory is too small for the bins");

    /* Where the whole input is one small histogram of wide counters, one cluster counts it and
     * stores the output (hist_cuda_small.cuh); the output needs no zeroing. */
    const int wide = cluster < 2 && !packed;
    if ((small == 8 || small == 16) && wide && zero != ZERO_NONE && n > 0 &&
        n <= DH_CUDA_PIECE_MAX && seg_len >= n && first == 0 && !d_total) {
        int can = 0;
        DH_CUDA_CK(cudaDeviceGetAttribute(&can, cudaDevAttrClusterLaunch, dev),
                   "cudaDeviceGetAttribute(cluster launch)");
        if (can) {
            const kernel_fn kernel = SMALL_KERNELS[kind][is_signed ? 1 : 0][small == 16];
            if (small == 16)
                DH_CUDA_CK(cudaFuncSetAttribute((const void *)kernel,
                                                cudaFuncAttributeNonPortableClusterSizeAllowed, 1),
                           "cudaFuncSetAttribute(cluster size)");
            if (smem > 48 * 1024)
                DH_CUDA_CK(cudaFuncSetAttribute((const void *)kernel,
                                                cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                (int)smem),
                           "cudaFuncSetAttribute(shared memory)");
            cudaLaunchAttribute attr;
            cudaLaunchConfig_t cfg = cluster_config(
                &attr, small, small == 16 ? small_shape<16>::threads : small_shape<8>::threads,
                smem, stream);
            cfg.gridDim = dim3(small);
            a.blocks = small;
            /* 16 blocks is beyond the portable cluster size: a device whose processing clusters
             * cannot hold it counts on the whole device instead (asked for only by tuning). */
            int most = 1;
            if (small == 16)
                DH_CUDA_CK(cudaOccupancyMaxActiveClusters(&most, kernel, &cfg),
                           "cudaOccupancyMaxActiveClusters");
            if (most >= 1) {
                DH_CUDA_CK(cudaLaunchKernelEx(&cfg, kernel, a),
                           "histogram kernel launch (small cluster)");
                return 0;
            }
        }
    }
    /* Whether this call overwrites its outputs (before the memset below turns that into
     * ZERO_NONE): pairs (hist_args.pairs) need outputs that start at zero. */
    const int overwrites = zero != ZERO_NONE;
    /* Storing needs pieces cut only at histogram and block ends, wide counters, no total. */
    if (zero == ZERO_STORE && (!wide || d_total || n == 0 || first != 0 ||
                               seg_len > DH_CUDA_PIECE_MAX))
        zero = ZERO_MEMSET;
    if (zero == ZERO_MEMSET || (cluster >= 2 && zero != ZERO_NONE)) {
        /* A cluster launch cannot be cooperative: zero with memsets first. */
        DH_CUDA_CK(cudaMemsetAsync(d_out, 0, out_len * sizeof(uint64_t), stream),
                   "cudaMemsetAsync(counts)");
        if (d_total)
            DH_CUDA_CK(cudaMemsetAsync(d_total, 0, (size_t)a.slots * sizeof(uint64_t), stream),
                       "cudaMemsetAsync(counts)");
        zero = ZERO_NONE;
    }
    if (n == 0 && zero == ZERO_NONE)
        return 0;
    a.zero = zero == ZERO_KERNEL;
    a.store = zero == ZERO_STORE;

    if (cluster >= 2) {
        const kernel_fn kernel = CLUSTER_KERNELS[kind][is_signed ? 1 : 0][variant];
        const int threads = CLUSTER_THREADS[variant];
        if (smem > 48 * 1024)
            DH_CUDA_CK(cudaFuncSetAttribute((const void *)kernel,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem),
                       "cudaFuncSetAttribute(shared memory)");
        cudaLaunchAttribute attr;
        cudaLaunchConfig_t cfg = cluster_config(&attr, cluster, threads, smem, stream);
        /* Clusters: one per `cluster` x min_per_block samples, at most as many as the device
         * holds at once (asked only when more than the multiprocessors are wanted). */
        const uint64_t by_size = n ? (n + min_per_block - 1) / min_per_block : 1;
        uint64_t clusters = (by_size + cluster - 1) / cluster;
        if (clusters * cluster > (uint64_t)sms) {
            int most = 0;
            cfg.gridDim = dim3((unsigned)(clusters * cluster < (uint64_t)sms * 4
                                              ? clusters * cluster
                                              : (uint64_t)sms * 4 / cluster * cluster));
            DH_CUDA_CK(cudaOccupancyMaxActiveClusters(&most, kernel, &cfg),
                       "cudaOccupancyMaxActiveClusters");
            if (most < 1)
                return fail_text(msg, msg_len, "the cluster kernel does not fit on this device");
            if (clusters > (uint64_t)most)
                clusters = (uint64_t)most;
        }
        a.blocks = (uint32_t)(clusters * cluster);
        cfg.gridDim = dim3(a.blocks);
        DH_CUDA_CK(cudaLaunchKernelEx(&cfg, kernel, a), "histogram kernel launch (cluster)");
        return 0;
    }

    /* Packed counters: the guarded kernel (hist_cuda_big.cuh). Wide counters: one block of
     * 1024 threads per SM for large inputs and where two blocks' counters would not fit an SM,
     * else two blocks of 512 threads. */
    int per_sm_smem = 0;
    DH_CUDA_CK(cudaDeviceGetAttribute(&per_sm_smem, cudaDevAttrMaxSharedMemoryPerMultiprocessor,
                                      dev),
               "cudaDeviceGetAttribute(shared memory per multiprocessor)");
    const uint32_t wide_threads =
        tuning && tuning->wide_threads ? tuning->wide_threads
        : n >= WIDE_1024_MIN_SAMPLES || 2 * (smem + 1024) > (size_t)per_sm_smem ? 1024u
                                                                                : 512u;
    if (!packed && wide_threads != 512 && wide_threads != 1024)
        return fail_text(msg, msg_len, "wide counters take 512 or 1024 threads");
    const int big = packed || wide_threads == 1024;
    const kernel_fn kernel =
        big ? BIG_KERNELS[kind][is_signed ? 1 : 0][packed] : KERNELS[kind][is_signed ? 1 : 0];
    if (smem > 48 * 1024)
        DH_CUDA_CK(cudaFuncSetAttribute((const void *)kernel,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem),
                   "cudaFuncSetAttribute(shared memory)");
    const int threads = big ? DH_CUDA_BIG_THREADS : DH_CUDA_THREADS;
    /* A grid no larger than the multiprocessors needs no occupancy query (one block of any of
     * our shapes fits an SM: launch bounds cap the registers, smem was checked above); small
     * inputs, where the query's host time would show, take this way. */
    const uint64_t by_size = n ? (n + min_per_block - 1) / min_per_block : 1;
    uint64_t blocks = by_size;
    if (blocks > (uint64_t)sms) {
        int per_sm = 0;
        DH_CUDA_CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem),
                   "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
        if (per_sm < 1)
            return fail_text(msg, msg_len, "the kernel does not fit on this device");
        if (blocks > (uint64_t)sms * per_sm)
            blocks = (uint64_t)sms * per_sm;
    }
    /* Guarded packed counters of one overwritten histogram flush count pairs (hist_args.pairs):
     * an even slot count, every block given two or more words to spread, a cooperative launch. */
    const int pair_flush = tuning && tuning->pair_flush ? tuning->pair_flush : DEFAULT_PAIR_FLUSH;
    const int pairs_fit = kind == MAP_PAIR ? a.bins == 65536 && a.pair_post == 1
                                           : a.slots % 2 == 0; /* spread_pairs says why */
    if (pair_flush == 2 && packed && overwrites && n > 0 && n < ((uint64_t)1 << 32) &&
        seg_len >= n && first == 0 && !d_total && pairs_fit && blocks * 2 <= a.words) {
        int coop = 0;
        DH_CUDA_CK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev),
                   "cudaDeviceGetAttribute(cooperative launch)");
        a.pairs = coop != 0;
    }
    a.blocks = (uint32_t)blocks;

    if (a.zero || a.store || a.pairs) {
        /* Every block is resident at once (the grid fits the device), as the grid-wide barrier
         * requires; the cooperative launch checks that. */
        void *args[] = {&a};
        DH_CUDA_CK(cudaLaunchCooperativeKernel((const void *)kernel, dim3(a.blocks), dim3(threads),
                                               args, smem, stream),
                   "histogram kernel launch (cooperative)");
        return 0;
    }
    kernel<<<a.blocks, threads, smem, stream>>>(a);
    DH_CUDA_CK(cudaGetLastError(), "histogram kernel launch");
    return 0;
}

/* Overwrites the outputs with the counts, in one launch where the device can: per-slice
 * histograms stored by the blocks that end them (ZERO_STORE: 94% of the whole-volume rate at 4096
 * bins against 89% with a memset of the 16 MB of counts); other small inputs zeroed inside the
 * kernel; anything else after a memset.
 * tuning->zero_mode and small_cluster force a way (bench/NOTES.md has the measurements). */
int zero_and_count(const void *d_data, int is_signed, uint64_t n, uint64_t seg_len,
                   const dh_bin_map *map, unsigned long long *d_out, uint64_t out_len,
                   unsigned long long *d_total, cudaStream_t stream, const dh_cuda_tuning *tuning,
                   char *msg, size_t msg_len)
{
    const int mode = tuning ? tuning->zero_mode : 0;
    const uint32_t asked = tuning ? tuning->small_cluster : 0;
    const uint32_t small =
        asked == 8 || asked == 16 ? asked
        : asked == 0 && n <= SMALL_MAX_SAMPLES && seg_len >= n ? DEFAULT_SMALL_CLUSTER
                                                               : 0;
    int zero = mode == 1   ? ZERO_MEMSET
               : mode == 2 ? ZERO_KERNEL
               : mode == 3 ? ZERO_STORE
               : seg_len < n && !d_total ? ZERO_STORE
               : n <= ZERO_IN_KERNEL_MAX_SAMPLES && out_len <= ZERO_IN_KERNEL_MAX_COUNTS
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
    return launch(d_data, is_signed, n, 0, seg_len, map, d_out, d_total, zero, small, out_len,
                  stream, tuning, msg, msg_len);
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
    cudaStream_t st = (cudaStream_t)stream;
    const size_t hists = per_slice ? slices : 1;
    const uint64_t seg_len = per_slice ? slice_len : n;
    if (zero_output)
        return zero_and_count(d_data, is_signed, n, seg_len, map, (unsigned long long *)d_out,
                              hists * (map->bins + 2), NULL, st, tuning, msg, msg_len);
    return launch(d_data, is_signed, n, 0, seg_len, map, (unsigned long long *)d_out, NULL,
                  ZERO_NONE, 0, 0, st, tuning, msg, msg_len);
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
    cudaStream_t st = (cudaStream_t)stream;
    const size_t slots = (size_t)map->bins + 2;
    return zero_and_count(d_data, is_signed, n, slice_len, map, (unsigned long long *)d_slices,
                          slices * slots, (unsigned long long *)d_total, st, NULL, msg, msg_len);
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
        if (launch(s->dbuf[b], is_signed, len, off, seg_len, &dmap, s->d_out, NULL, ZERO_NONE, 0,
                   0, s->stream[b], NULL, msg, msg_len))
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
