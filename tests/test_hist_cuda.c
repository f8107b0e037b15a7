// SPDX-License-Identifier: MIT
/*
 * test_hist_cuda.c: the CUDA histogram (kernels/hist_cuda.h, plugin/lib/histogram_device.c) against
 * its CPU twin dh_hist_cpu, which test_hist_cpu checks against the naive loop. Every kernel path
 * (shift, division and table maps; wide counters with many copies and with one, in blocks of
 * 512 and 1024 threads; guarded packed 16-bit counters, their count pairs flushed or not;
 * clusters of 2 and 4 blocks sharing 32-bit or packed counters), both entry points
 * (host buffers, device pointers on a stream) and the public device-pointer API must give
 * identical counts on random, CT-like, constant, one-value-per-slice and extreme-value data,
 * at awkward sizes and alignments, per slice and beyond 2^31 samples.
 *
 * Exits 77 (ctest SKIP) where no GPU is usable. Runs in CK_NOFORK mode: CUDA does not survive
 * Check's fork.
 */
#include "test_support.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dicomhist.h"
#include "hist.h"
#include "hist_cuda.h"

enum data_kind { RANDOM, CT_LIKE, CONSTANT, EXTREMES, PER_SLICE_VALUE };

static const uint32_t BIN_COUNTS[] = {1, 7, 255, 256, 4096, 4097, 65535, 65536};
#define NBINS (sizeof BIN_COUNTS / sizeof BIN_COUNTS[0])

static void fill(uint16_t *d, size_t n, size_t slice_len, enum data_kind kind, int is_signed,
                 uint64_t seed)
{
    dh_test_rng rng;
    dh_test_rng_seed(&rng, seed);
    switch (kind) {
    case RANDOM:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint16_t)dh_test_rng_next(&rng);
        break;
    case CT_LIKE:
        dh_test_fill_ct_like(d, n, seed);
        if (is_signed) /* as signed CT stores it: HU + 1024 shifted back by 1024 */
            for (size_t i = 0; i < n; i++)
                d[i] = (uint16_t)(int16_t)((int32_t)d[i] - 1024);
        break;
    case CONSTANT: {
        const uint16_t v = (uint16_t)dh_test_rng_next(&rng);
        for (size_t i = 0; i < n; i++)
            d[i] = v;
        break;
    }
    case EXTREMES: /* the type's min and max, in runs and alone */
        for (size_t i = 0; i < n; i++) {
            uint32_t r = dh_test_rng_below(&rng, 4);
            uint16_t lo = is_signed ? 0x8000 : 0, hi = is_signed ? 0x7fff : 0xffff;
            d[i] = (i / 64) % 2 ? (r ? hi : lo) : (r ? lo : hi);
        }
        break;
    case PER_SLICE_VALUE:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint16_t)((i / slice_len) * 2654435761u >> 7);
        break;
    }
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    ck_assert_ptr_nonnull(p);
    return p;
}

#define CUDA_OK(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        ck_assert_msg(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));                 \
    } while (0)

static void assert_same(const uint64_t *ref, const uint64_t *got, size_t len, const char *what)
{
    for (size_t i = 0; i < len; i++)
        if (ref[i] != got[i])
            ck_abort_msg("%s: slot %zu differs: CPU %llu, GPU %llu", what, i,
                         (unsigned long long)ref[i], (unsigned long long)got[i]);
}

/* Runs one case through every GPU path and compares each with the CPU twin. `offset` samples
 * shift the device copy off the 16-byte grid. */
static void check_case(const uint16_t *data, int is_signed, size_t slice_len, size_t slices,
                       int per_slice, const dh_bin_map *map, unsigned offset, const char *label)
{
    const size_t n = slice_len * slices;
    const size_t len = (per_slice ? slices : 1) * ((size_t)map->bins + 2);
    uint64_t *ref = xmalloc(len * sizeof *ref), *got = xmalloc(len * sizeof *got);
    char msg[512] = "", what[256];
    ck_assert_int_eq(dh_hist_cpu(data, is_signed, slice_len, slices, per_slice, map, 0, ref), 0);

    memset(got, 0xa5, len * sizeof *got);
    int rc = dh_hist_cuda_host(data, is_signed, slice_len, slices, per_slice, map, got, msg,
                               sizeof msg);
    ck_assert_msg(rc == 0, "%s host: %s", label, msg);
    snprintf(what, sizeof what, "%s host path", label);
    assert_same(ref, got, len, what);

    uint16_t *d_buf = NULL;
    uint64_t *d_out = NULL;
    uint32_t *d_lut = NULL;
    CUDA_OK(cudaMalloc((void **)&d_buf, (n + 8) * sizeof *d_buf));
    CUDA_OK(cudaMalloc((void **)&d_out, len * sizeof *d_out));
    CUDA_OK(cudaMemcpy(d_buf + offset, data, n * sizeof *data, cudaMemcpyHostToDevice));
    dh_bin_map dmap = *map;
    if (map->lut) {
        CUDA_OK(cudaMalloc((void **)&d_lut, 65536 * sizeof *d_lut));
        CUDA_OK(cudaMemcpy(d_lut, map->lut, 65536 * sizeof *d_lut, cudaMemcpyHostToDevice));
        dmap.lut = d_lut;
    }
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreate(&stream));

    /* Default shape (pair map; per-slice histograms stored by the blocks that end them, else
     * zeroing inside the kernel or a memset), then one wide copy with the per-sample map and a separate memset, then packed
     * 16-bit counters at any bin count, with each map and zeroing, then clusters of 2 and 4
     * blocks (32-bit counters) and of 2 blocks with packed counters, at any bin count. */
    const dh_cuda_tuning shapes[] = {
        {0},
        {.smem_target = 1, .max_copies = 1, .classic_map = 1, .zero_mode = 1},
        {.force_packed = 1, .zero_mode = 2, .cluster_size = 1},
        {.force_packed = 1, .classic_map = 1, .zero_mode = 1, .cluster_size = 1},
        {.cluster_size = 2, .zero_mode = 2},
        {.cluster_size = 4, .classic_map = 1, .zero_mode = 1},
        {.cluster_size = 2, .force_packed = 1},
        {.zero_mode = 2, .small_cluster = 1},
        {.zero_mode = 3, .small_cluster = 1},
        {.zero_mode = 3, .smem_target = 40000, .classic_map = 1, .small_cluster = 1},
        {.small_cluster = 8, .classic_map = 1},
        {.small_cluster = 16, .smem_target = 40000},
        {.force_packed = 1, .classic_map = 1, .zero_mode = 2, .pair_flush = 1},
        {.wide_threads = 1024, .zero_mode = 2},
        {.wide_threads = 1024, .zero_mode = 3, .classic_map = 1},
        {.wide_threads = 512, .zero_mode = 1}};
    const char *names[] = {"default", "one copy, per-sample map, memset", "packed",
                           "packed, per-sample map, memset", "cluster of 2",
                           "cluster of 4, per-sample map, memset", "cluster of 2, packed",
                           "zeroed in the kernel, no small cluster",
                           "stored by the blocks that end each histogram",
                           "stored, several copies, per-sample map",
                           "small cluster of 8 (any size), per-sample map",
                           "small cluster of 16 (any size), several copies",
                           "packed, per-sample map, one add per count, zeroed in the kernel",
                           "wide, 1024 threads, zeroed in the kernel",
                           "wide, 1024 threads, stored, per-sample map",
                           "wide, 512 threads, memset"};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        CUDA_OK(cudaMemsetAsync(d_out, 0xff, len * sizeof *d_out, stream)); /* poison */
        rc = dh_hist_cuda_device_tuned(d_buf + offset, is_signed, slice_len, slices, per_slice,
                                       &dmap, d_out, stream, &shapes[k], 1, msg, sizeof msg);
        ck_assert_msg(rc == 0, "%s %s: %s", label, names[k], msg);
        CUDA_OK(cudaStreamSynchronize(stream));
        CUDA_OK(cudaMemcpy(got, d_out, len * sizeof *got, cudaMemcpyDeviceToHost));
        snprintf(what, sizeof what, "%s device path, %s", label, names[k]);
        assert_same(ref, got, len, what);
    }
    CUDA_OK(cudaStreamDestroy(stream));
    cudaFree(d_buf);
    cudaFree(d_out);
    cudaFree(d_lut);
    free(ref);
    free(got);
}

static void map_or_die(dh_bin_map *map, uint32_t bins, int64_t lo, int64_t hi)
{
    ck_assert_int_eq(dh_bin_map_init_affine(map, bins, lo, hi), 0);
}

/* Every bin count, every data kind, over the full type range and over a range that leaves
 * samples below and above (underflow and overflow). */
START_TEST(test_bins_and_data)
{
    const size_t n = ((size_t)1 << 20) + 5;
    uint16_t *data = xmalloc(n * sizeof *data);
    const enum data_kind kinds[] = {RANDOM, CT_LIKE, CONSTANT, EXTREMES};
    const char *kind_names[] = {"random", "CT-like", "constant", "extremes"};
    for (int is_signed = 0; is_signed <= 1; is_signed++) {
        for (size_t k = 0; k < 4; k++) {
            fill(data, n, n, kinds[k], is_signed, 100 + k);
            for (size_t b = 0; b < NBINS; b++) {
                const int64_t full_lo = is_signed ? -32768 : 0;
                const int64_t ranges[2][2] = {{full_lo, full_lo + 65536},
                                              {is_signed ? -1000 : 20, is_signed ? 700 : 1800}};
                for (int r = 0; r < 2; r++) {
                    dh_bin_map map;
                    map_or_die(&map, BIN_COUNTS[b], ranges[r][0], ranges[r][1]);
                    char label[128];
                    snprintf(label, sizeof label, "%s %s, %u bins, range %d", kind_names[k],
                             is_signed ? "int16" : "uint16", BIN_COUNTS[b], r);
                    check_case(data, is_signed, n, 1, 0, &map, (unsigned)(b % 8), label);
                }
            }
        }
    }
    free(data);
}
END_TEST

/* Bin counts around the limit of one block's 32-bit counters (about 58000 slots on Hopper) and
 * beyond, where the default takes a cluster: every data kind, unsigned and signed, an odd length
 * at an odd offset, full and partial ranges (the latter with under- and overflow). */
START_TEST(test_large_bins)
{
    static const uint32_t bins[] = {32768, 50000, 58000, 60001, 65535, 65536};
    const size_t n = 3 * 65536 + 77;
    uint16_t *data = xmalloc(n * sizeof *data);
    const enum data_kind kinds[] = {RANDOM, CT_LIKE, CONSTANT, EXTREMES};
    for (int is_signed = 0; is_signed <= 1; is_signed++) {
        for (size_t k = 0; k < 4; k++) {
            fill(data, n, n, kinds[k], is_signed, 300 + k);
            for (size_t b = 0; b < sizeof bins / sizeof bins[0]; b++) {
                const int64_t lo = (is_signed ? -32768 : 0) + (b % 2 ? 0 : 3000);
                dh_bin_map map;
                map_or_die(&map, bins[b], lo, lo + (b % 2 ? 65536 : 61000));
                char label[128];
                snprintf(label, sizeof label, "data kind %zu %s, %u bins, lo %lld", k,
                         is_signed ? "int16" : "uint16", bins[b], (long long)lo);
                check_case(data, is_signed, n, 1, 0, &map, (unsigned)(b + k) % 8, label);
            }
        }
    }
    free(data);
}
END_TEST

/* Power-of-two maps at random offsets and shifts (the pair form's constants are derived per
 * map, with clamps, carries and offsets that differ by case), on every 16-bit value and on
 * random data, unsigned and signed. */
START_TEST(test_shift_maps)
{
    const size_t n = 2 * 65536 + 3;
    uint16_t *data = xmalloc(n * sizeof *data);
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 2024);
    for (size_t i = 0; i < n; i++)
        data[i] = i < 65536 ? (uint16_t)i : (uint16_t)dh_test_rng_next(&rng);
    for (int m = 0; m < 120; m++) {
        const int is_signed = m % 2;
        const uint32_t bins = 1u << dh_test_rng_below(&rng, 17);
        const uint32_t shift = dh_test_rng_below(&rng, 18);
        const int64_t span = (int64_t)bins << shift;
        /* lo from well below to well above the type's range, often near its ends */
        const int64_t type_lo = is_signed ? -32768 : 0;
        int64_t lo = type_lo - 70000 + (int64_t)dh_test_rng_below(&rng, 205536);
        if (m % 4 == 1)
            lo = type_lo - (int64_t)dh_test_rng_below(&rng, 40);
        if (m % 4 == 3)
            lo = type_lo + 65536 - span + (int64_t)dh_test_rng_below(&rng, 40) - 20;
        if (lo + span > INT32_MAX || lo < INT32_MIN)
            continue;
        dh_bin_map map;
        map_or_die(&map, bins, lo, lo + span);
        ck_assert_int_eq(map.shift, (int)shift);
        char label[128];
        snprintf(label, sizeof label, "shift map %u bins, shift %u, lo %lld, %s", bins, shift,
                 (long long)lo, is_signed ? "int16" : "uint16");
        check_case(data, is_signed, n, 1, 0, &map, (unsigned)m % 8, label);
    }
    free(data);
}
END_TEST

/* One pixel, odd lengths around the 8-sample vector, every misalignment. */
START_TEST(test_sizes_and_alignment)
{
    static const size_t sizes[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 511, 4097, 65537,
                                   262147};
    static const uint32_t bins[] = {256, 4097, 65536};
    uint16_t *data = xmalloc(262147 * sizeof *data);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        fill(data, sizes[s], sizes[s], RANDOM, 0, 7 + s);
        for (unsigned offset = 0; offset < 8; offset++) {
            dh_bin_map map;
            map_or_die(&map, bins[(s + offset) % 3], 0, 65536);
            char label[128];
            snprintf(label, sizeof label, "%zu samples at offset %u", sizes[s], offset);
            check_case(data, 0, sizes[s], 1, 0, &map, offset, label);
        }
    }
    free(data);

    /* No samples at all: the (per-slice) outputs are still zeroed, by either zeroing. */
    dh_bin_map map;
    map_or_die(&map, 256, 0, 4096);
    uint64_t *d_out = NULL, got[3 * 258];
    char msg[512] = "";
    CUDA_OK(cudaMalloc((void **)&d_out, sizeof got));
    for (int mode = 0; mode <= 3; mode++) {
        const dh_cuda_tuning t = {.zero_mode = mode};
        CUDA_OK(cudaMemset(d_out, 0xff, sizeof got));
        ck_assert_msg(dh_hist_cuda_device_tuned(NULL, 0, 0, 3, 1, &map, d_out, NULL, &t, 1, msg,
                                                sizeof msg) == 0,
                      "no samples: %s", msg);
        CUDA_OK(cudaMemcpy(got, d_out, sizeof got, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < 3 * 258; i++)
            ck_assert_msg(got[i] == 0, "no samples, zero mode %d: slot %zu is %llu", mode, i,
                          (unsigned long long)got[i]);
    }
    cudaFree(d_out);
}
END_TEST

/* Per-slice batches of 1..1000 slices, including slices shorter than a vector and slices that
 * start off the 16-byte grid. */
START_TEST(test_per_slice)
{
    static const size_t slice_counts[] = {1, 2, 3, 17, 256, 1000};
    static const size_t slice_lens[] = {1, 7, 37, 1537};
    static const uint32_t bins[] = {7, 256, 4096, 65536};
    uint16_t *data = xmalloc(1000 * 1537 * sizeof *data);
    for (size_t c = 0; c < 6; c++) {
        for (size_t l = 0; l < 4; l++) {
            const size_t slices = slice_counts[c], len = slice_lens[l];
            for (size_t b = 0; b < 4; b++) {
                if (bins[b] == 65536 && slices > 17)
                    continue; /* 1000 x 65538 counts: slow on the CPU side, nothing new */
                fill(data, slices * len, len, (c + b) % 2 ? PER_SLICE_VALUE : CT_LIKE, 0,
                     c * 16 + l);
                dh_bin_map map;
                map_or_die(&map, bins[b], bins[b] == 7 ? 100 : 0, bins[b] == 7 ? 4000 : 65536);
                char label[128];
                snprintf(label, sizeof label, "%zu slices of %zu, %u bins", slices, len,
                         bins[b]);
                check_case(data, 0, len, slices, 1, &map, (unsigned)(c + l) % 8, label);
            }
        }
    }
    /* Slices longer than a block's range (each spans many blocks, so most blocks end inside a
     * slice and add to a histogram another block stores), odd lengths. */
    static const size_t long_counts[] = {1, 2, 3, 5};
    const size_t long_len = 300007;
    free(data);
    data = xmalloc(5 * long_len * sizeof *data);
    for (size_t c = 0; c < 4; c++) {
        const int is_signed = c >= 2;
        fill(data, long_counts[c] * long_len, long_len, c % 2 ? PER_SLICE_VALUE : CT_LIKE,
             is_signed, 900 + c);
        dh_bin_map map;
        map_or_die(&map, c < 2 ? 4096 : 256, 0, 4096);
        char label[128];
        snprintf(label, sizeof label, "%zu slices of %zu, %u bins, %s", long_counts[c], long_len,
                 map.bins, is_signed ? "int16" : "uint16");
        check_case(data, is_signed, long_len, long_counts[c], 1, &map, (unsigned)(c * 3) % 8, label);
    }
    free(data);
}
END_TEST

/* The guarded packed counters (hist_cuda_big.cuh) where its guard has work to do: one block (or
 * a few) counts millions of samples, so hot slots pass 16384 many times (drains), a constant
 * volume keeps a run in registers, and uniform warps taking turns between two slots spill short
 * runs into shared memory. Whole and per slice, pairs flushed and not, against the CPU twin. */
START_TEST(test_packed_guard)
{
    const size_t n = ((size_t)3 << 20) + 11;
    uint16_t *data = xmalloc(n * sizeof *data);
    uint64_t *ref = xmalloc(3 * 65538 * sizeof *ref), *got = xmalloc(3 * 65538 * sizeof *got);
    uint16_t *d_buf = NULL;
    uint64_t *d_out = NULL;
    CUDA_OK(cudaMalloc((void **)&d_buf, n * sizeof *d_buf));
    CUDA_OK(cudaMalloc((void **)&d_out, 3 * 65538 * sizeof *d_out));
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 5150);
    const char *kinds[] = {"two values", "uniform warps of two slots", "constant",
                           "runs of 1..600 of three values", "CT-like", "extremes"};
    static const uint32_t bins[] = {65536, 32768, 4096};
    for (int k = 0; k < 6; k++) {
        const int is_signed = k % 2;
        if (k == 4) {
            fill(data, n, n, CT_LIKE, is_signed, 61);
        } else if (k == 5) {
            fill(data, n, n, EXTREMES, is_signed, 62);
        } else {
            const uint16_t v[3] = {(uint16_t)dh_test_rng_next(&rng),
                                   (uint16_t)dh_test_rng_next(&rng),
                                   (uint16_t)dh_test_rng_next(&rng)};
            size_t i = 0;
            while (i < n) {
                /* k 0: each sample one of two values; 1: 256-sample runs (a warp's vector
                 * group at 16-byte alignment) taking turns; 2: one value; 3: runs of any length */
                const size_t len = k == 3 ? 1 + dh_test_rng_below(&rng, 600) : k == 1 ? 256 : 1;
                const uint16_t val = k == 2   ? v[0]
                                     : k == 1 ? v[(i / 256) % 2]
                                     : k == 0 ? v[dh_test_rng_below(&rng, 2)]
                                              : v[dh_test_rng_below(&rng, 3)];
                for (size_t j = 0; j < len && i < n; j++)
                    data[i++] = val;
            }
        }
        CUDA_OK(cudaMemcpy(d_buf, data, n * sizeof *data, cudaMemcpyHostToDevice));
        for (size_t b = 0; b < 3; b++) {
            dh_bin_map map;
            const int64_t lo = is_signed ? -32768 : 0;
            map_or_die(&map, bins[b], lo, lo + 65536);
            for (int per_slice = 0; per_slice <= 1; per_slice++) {
                const size_t slices = per_slice ? 3 : 1, slice_len = n / slices;
                const size_t len = slices * (bins[b] + 2);
                ck_assert_int_eq(dh_hist_cpu(data, is_signed, slice_len, slices, per_slice, &map,
                                             0, ref),
                                 0);
                /* one block, then four; both packed kernels; zeroed each way */
                const dh_cuda_tuning shapes[] = {
                    {.force_packed = 1, .min_samples_per_block = (uint64_t)1 << 30},
                    {.force_packed = 1, .min_samples_per_block = (uint64_t)1 << 30,
                     .zero_mode = 2, .classic_map = 1},
                    {.force_packed = 1, .min_samples_per_block = (uint64_t)1 << 20,
                     .pair_flush = 1},
                    {.force_packed = 1, .min_samples_per_block = (uint64_t)1 << 21,
                     .pair_flush = 1, .zero_mode = 2}};
                for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
                    char msg[512] = "";
                    CUDA_OK(cudaMemset(d_out, 0xff, len * sizeof *d_out)); /* poison */
                    ck_assert_msg(dh_hist_cuda_device_tuned(d_buf, is_signed, slice_len, slices,
                                                            per_slice, &map, d_out, NULL,
                                                            &shapes[t], 1, msg, sizeof msg) == 0,
                                  "%s: %s", kinds[k], msg);
                    CUDA_OK(cudaMemcpy(got, d_out, len * sizeof *got, cudaMemcpyDeviceToHost));
                    char what[160];
                    snprintf(what, sizeof what, "%s, %s, %u bins, %zu slices, shape %zu",
                             kinds[k], is_signed ? "int16" : "uint16", bins[b], slices, t);
                    assert_same(ref, got, len, what);
                }
            }
        }
    }
    free(data);
    free(ref);
    free(got);
    cudaFree(d_buf);
    cudaFree(d_out);
}
END_TEST

/* Table maps (the lut on the device), unsigned and signed. */
START_TEST(test_table_maps)
{
    static const uint32_t bins[] = {7, 4097, 65536};
    const size_t n = 300001;
    uint16_t *data = xmalloc(n * sizeof *data);
    uint32_t *lut = xmalloc(65536 * sizeof *lut);
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 42);
    for (int is_signed = 0; is_signed <= 1; is_signed++) {
        fill(data, n, n, is_signed ? RANDOM : CT_LIKE, is_signed, 5);
        for (size_t b = 0; b < 3; b++) {
            for (uint32_t i = 0; i < 65536; i++) /* any slot, underflow and overflow included */
                lut[i] = dh_test_rng_below(&rng, bins[b] + 2);
            dh_bin_map map = {.bins = bins[b], .lut = lut, .lut_base = is_signed ? -32768 : 0,
                              .lut_len = 65536, .shift = -1};
            char label[128];
            snprintf(label, sizeof label, "table map, %u bins, %s", bins[b],
                     is_signed ? "int16" : "uint16");
            check_case(data, is_signed, n, 1, b % 2, &map, 3, label);
        }
    }
    free(lut);
    free(data);
}
END_TEST

/* More than 2^31 samples: 64-bit indices and counts, and the host path's chunking. */
START_TEST(test_beyond_2g_samples)
{
    const size_t n = ((size_t)1 << 31) + 13;
    uint16_t *data = malloc(n * sizeof *data);
    if (!data)
        return; /* not enough host memory for this case on this machine */
    for (size_t i = 0; i < n; i++) /* mostly 3 values with a spread tail, no RNG cost */
        data[i] = (uint16_t)(i % 3 ? 1000 + (i % 3) : (i * 2654435761u) >> 20);
    dh_bin_map map;
    map_or_die(&map, 65536, 0, 65536);
    check_case(data, 0, n, 1, 0, &map, 1, "2^31 + 13 samples, 65536 bins");
    free(data);
}
END_TEST

/* The public device-pointer entry point on a stream, a volume's default bins and range. */
START_TEST(test_public_device_api)
{
    const size_t slice_len = 515, slices = 9, n = slice_len * slices;
    uint16_t *data = xmalloc(n * sizeof *data);
    fill(data, n, slice_len, CT_LIKE, 0, 77);
    dh_ctx *ctx = dh_ctx_create();
    ck_assert_ptr_nonnull(ctx);
    dh_hist_params params;
    dh_hist_params_init(&params);
    params.per_slice = 1;
    const size_t slots = 4096 + 2;
    uint64_t *ref = xmalloc(slots * (slices + 1) * sizeof *ref);
    uint64_t *got = xmalloc(slots * (slices + 1) * sizeof *got);
    dh_bin_map map;
    map_or_die(&map, 4096, 0, 4096);
    ck_assert_int_eq(dh_hist_cpu(data, 0, n, 1, 0, &map, 1, ref), 0);
    ck_assert_int_eq(dh_hist_cpu(data, 0, slice_len, slices, 1, &map, 1, ref + slots), 0);

    uint16_t *d_data;
    uint64_t *d_out;
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreate(&stream));
    CUDA_OK(cudaMalloc((void **)&d_data, (n + 1) * sizeof *d_data));
    CUDA_OK(cudaMalloc((void **)&d_out, slots * (slices + 1) * sizeof *d_out));
    CUDA_OK(cudaMemcpy(d_data + 1, data, n * sizeof *data, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(d_out, 0xff, slots * (slices + 1) * sizeof *d_out));
    dh_status st = dh_hist_compute_device(ctx, d_data + 1, 0, 12, slice_len, slices, &params,
                                          d_out, stream);
    ck_assert_msg(st == DH_OK, "%s: %s", dh_status_name(st), dh_ctx_error(ctx));
    CUDA_OK(cudaStreamSynchronize(stream));
    CUDA_OK(cudaMemcpy(got, d_out, slots * (slices + 1) * sizeof *got, cudaMemcpyDeviceToHost));
    assert_same(ref, got, slots * (slices + 1), "dh_hist_compute_device");

    /* Refusals carry a message. */
    params.bins = 70000;
    ck_assert_int_eq(dh_hist_compute_device(ctx, d_data, 0, 12, slice_len, slices, &params, d_out,
                                            stream),
                     DH_ERR_INVALID_ARGUMENT);
    ck_assert_str_ne(dh_ctx_error(ctx), "");
    CUDA_OK(cudaStreamDestroy(stream));
    cudaFree(d_data);
    cudaFree(d_out);
    dh_ctx_free(ctx);
    free(ref);
    free(got);
    free(data);
}
END_TEST

/* Errors come back as -1 with a message naming the cause, CUDA's own text included. */
START_TEST(test_errors)
{
    char msg[512] = "";
    dh_bin_map map;
    map_or_die(&map, 256, 0, 65536);
    uint64_t out[258];
    uint16_t one = 5;
    /* A per-slice output no GPU can hold: the allocation fails and says so. */
    int rc = dh_hist_cuda_host(&one, 0, 1, (size_t)1 << 42, 1, &map, out, msg, sizeof msg);
    ck_assert_int_eq(rc, -1);
    ck_assert_msg(strstr(msg, "cudaMalloc") != NULL, "message: %s", msg);
    ck_assert_int_eq(cudaGetLastError(), cudaSuccess);
    /* A pointer that is not 2-byte aligned. */
    msg[0] = '\0';
    rc = dh_hist_cuda_device((const void *)(uintptr_t)1, 0, 4, 1, 0, &map, (uint64_t *)out, NULL, msg,
                             sizeof msg);
    ck_assert_int_eq(rc, -1);
    ck_assert_str_ne(msg, "");
    dh_bin_map bad = map;
    bad.bins = 0;
    ck_assert_int_eq(dh_hist_cuda_host(&one, 0, 1, 1, 0, &bad, out, msg, sizeof msg), -1);
    /* The engine still works afterwards. */
    ck_assert_int_eq(dh_hist_cuda_host(&one, 0, 1, 1, 0, &map, out, msg, sizeof msg), 0);
    ck_assert_uint_eq(out[0], 1);
}
END_TEST

int main(void)
{
    if (!dh_cuda_usable()) {
        printf("no usable CUDA GPU: skipped\n");
        return DH_TEST_SKIP;
    }
    const dh_test tests[] = {DH_TEST(test_errors),
                             DH_TEST(test_sizes_and_alignment),
                             DH_TEST(test_bins_and_data),
                             DH_TEST(test_large_bins),
                             DH_TEST(test_shift_maps),
                             DH_TEST(test_per_slice),
                             DH_TEST(test_table_maps),
                             DH_TEST(test_packed_guard),
                             DH_TEST(test_public_device_api),
                             DH_TEST(test_beyond_2g_samples)};
    dh_test_in_one_process();
    return dh_test_run(dh_test_suite("hist_cuda", 600, DH_TESTS(tests)));
}
