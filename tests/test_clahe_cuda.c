// SPDX-License-Identifier: MIT
/*
 * test_clahe_cuda.c: CLAHE on the GPU (kernels/clahe_cuda.h) equals the CPU twin dh_clahe_cpu
 * bit for bit: random, CT-like, constant, two-value, extreme and radiograph-like data, uint16
 * and int16 at 12 and 16 bits; tile grids from 1x1 to tiles of one pixel, odd sizes and tiles of
 * 2-3 pixels; bins 1, 256, 4096, 65536 and 0 (one per value); clip limits and output levels;
 * per slice (with windows that differ per slice, some empty) and per volume (inside and beyond
 * the bound of the row-factored volume mapping, clahe_cuda_volume.cuh); batches of slices
 * beyond one launch's units and beyond the scratch bound; tiles larger than one histogram piece;
 * unaligned device pointers; tables built in segments (bands across segment boundaries, spikes
 * far above the clip limit); one workspace reused across every shape. The real files of
 * ../shared/dicom likewise. Every GPU output is poisoned first, so an unwritten sample fails.
 * Exits 77 (skipped) without a usable GPU. Runs in CK_NOFORK mode: CUDA and fork do not mix.
 */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clahe_cuda.h"
#include "dicomhist.h"
#include "equalize_cpu.h"
#include "hist_cuda.h"
#include "test_support.h"

#define CUDA_OK(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        ck_assert_msg(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));                 \
    } while (0)

/* One case: the samples and everything dh_clahe_cpu takes. */
typedef struct clahe_case {
    const uint16_t *data; /* int16_t when is_signed */
    int is_signed;
    int32_t base;
    uint32_t len;
    dh_clahe_shape shape;
    const dh_eq_window *windows;
    uint32_t bins, levels;
    double clip;
    size_t offset; /* samples the device copies start past a 16-byte boundary */
} clahe_case;

static dh_clahe_cuda_workspace *g_ws; /* one for the whole program: shapes change under it */

static void describe(const clahe_case *c, char *out, size_t size)
{
    const dh_clahe_shape *s = &c->shape;
    snprintf(out, size,
             "%ux%ux%u tiles %ux%ux%u %s, %s base %d len %u, bins %u, levels %u, clip %g, "
             "offset %zu",
             s->nx, s->ny, s->nz, s->tx, s->ty, s->tz, s->volume ? "volume" : "slices",
             c->is_signed ? "int16" : "uint16", c->base, c->len, c->bins, c->levels, c->clip,
             c->offset);
}

/* Runs both twins and compares every output sample. */
static void check_case(const clahe_case *c)
{
    const dh_clahe_shape *s = &c->shape;
    const size_t n = (size_t)s->nx * s->ny * s->nz;
    uint16_t *cpu = malloc(n * 2), *gpu = malloc(n * 2);
    ck_assert(cpu && gpu);
    memset(cpu, 0x5a, n * 2);
    ck_assert_int_eq(dh_clahe_cpu(c->data, c->is_signed, c->base, c->len, s, c->windows,
                                  c->bins, c->levels, c->clip, 2, cpu),
                     0);
    uint16_t *d_in = NULL, *d_out = NULL;
    CUDA_OK(cudaMalloc((void **)&d_in, (n + c->offset) * 2));
    CUDA_OK(cudaMalloc((void **)&d_out, (n + c->offset) * 2));
    CUDA_OK(cudaMemcpy(d_in + c->offset, c->data, n * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(d_out, 0xa5, (n + c->offset) * 2)); /* poison: 0xa5a5 */
    char msg[512] = "", what[256];
    describe(c, what, sizeof what);
    ck_assert_msg(dh_clahe_cuda(g_ws, d_in + c->offset, c->is_signed, c->base, c->len, s,
                                c->windows, c->bins, c->levels, c->clip, d_out + c->offset, NULL,
                                msg, sizeof msg) == 0,
                  "%s: %s", what, msg);
    CUDA_OK(cudaMemcpy(gpu, d_out + c->offset, n * 2, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaFree(d_in));
    CUDA_OK(cudaFree(d_out));
    for (size_t i = 0; i < n; i++)
        if (cpu[i] != gpu[i])
            ck_abort_msg("%s: sample %zu (x %zu y %zu z %zu) is %u on the CPU, %u on the GPU",
                         what, i, i % s->nx, i / s->nx % s->ny, i / s->nx / s->ny, cpu[i],
                         gpu[i]);
    free(cpu);
    free(gpu);
}

/* ---- data ---- */

/* PADDED_CT (after KINDS: large_images_and_batches only): CT_LIKE inside an ellipse per slice,
 * one constant value outside it (a scanner's padding), so whole vectors and warps share a bin
 * next to noise (the merged histogram adds of clahe_cuda.cu). */
enum kind { RANDOM, CT_LIKE, CONSTANT, TWO_VALUE, EXTREMES, RADIOGRAPH, KINDS, PADDED_CT };

/* n samples of `kind`, each inside the table range base .. base + len - 1, stored as the type
 * (int16 two's complement when signed). */
static void fill(uint16_t *d, size_t nx, size_t ny, size_t nz, enum kind kind, int32_t base,
                 uint32_t len, uint64_t seed)
{
    const size_t n = nx * ny * nz;
    dh_test_rng rng;
    dh_test_rng_seed(&rng, seed);
    uint32_t a = dh_test_rng_below(&rng, len), b = dh_test_rng_below(&rng, len);
    switch (kind) {
    case RANDOM:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint16_t)(base + (int32_t)dh_test_rng_below(&rng, len));
        return;
    case CT_LIKE:
        dh_test_fill_ct_like(d, n, seed);
        for (size_t i = 0; i < n; i++) /* 12-bit values into the range (as stored, shifted) */
            d[i] = (uint16_t)(base + (int32_t)(d[i] * (uint64_t)len / 4096));
        return;
    case PADDED_CT:
        fill(d, nx, ny, nz, CT_LIKE, base, len, seed);
        for (size_t z = 0; z < nz; z++)
            for (size_t y = 0; y < ny; y++)
                for (size_t x = 0; x < nx; x++) {
                    const double ex = (2.0 * x - nx) / (0.9 * nx), ey = (2.0 * y - ny) / (0.7 * ny);
                    if (ex * ex + ey * ey > 1.0)
                        d[(z * ny + y) * nx + x] = (uint16_t)(base + (int32_t)a);
                }
        return;
    case CONSTANT:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint16_t)(base + (int32_t)a);
        return;
    case TWO_VALUE:
        for (size_t i = 0; i < n; i++)
            d[i] = (uint16_t)(base + (int32_t)(dh_test_rng_below(&rng, 5) ? a : b));
        return;
    case EXTREMES: /* the range's ends, in runs and alone */
        for (size_t i = 0; i < n; i++) {
            int r = dh_test_rng_below(&rng, 4) != 0;
            int top = (i / 37) % 2 ? r : !r;
            d[i] = (uint16_t)(top ? base + (int32_t)len - 1 : base);
        }
        return;
    default: /* RADIOGRAPH: a smooth field over the range plus noise */
        for (size_t z = 0; z < nz; z++)
            for (size_t y = 0; y < ny; y++)
                for (size_t x = 0; x < nx; x++) {
                    double f = 0.5 + 0.3 * sin(6.0 * x / nx + z) * cos(4.0 * y / ny) +
                               0.1 * ((double)x / nx - (double)y / ny);
                    double noise = ((double)dh_test_rng_below(&rng, 2001) - 1000) / 40000.0;
                    double v = (f + noise) * (len - 1);
                    v = v < 0 ? 0 : v > len - 1 ? len - 1 : v;
                    d[(z * ny + y) * nx + x] = (uint16_t)(base + (int32_t)v);
                }
        return;
    }
}

/* Windows per slice: the whole range, a part, one beyond each end, and one outside it (empty). */
static void fill_windows(dh_eq_window *w, uint32_t count, int32_t base, uint32_t len,
                         dh_test_rng *rng, int round)
{
    for (uint32_t k = 0; k < count; k++) {
        int32_t top = base + (int32_t)len - 1;
        switch ((round + k) % 5) {
        case 0:
            w[k].lo = base, w[k].hi = top;
            break;
        case 1:
            w[k].lo = base + (int32_t)dh_test_rng_below(rng, len / 2);
            w[k].hi = w[k].lo + (int32_t)dh_test_rng_below(rng, len / 2);
            break;
        case 2:
            w[k].lo = base - 100, w[k].hi = base + (int32_t)dh_test_rng_below(rng, len);
            break;
        case 3:
            w[k].lo = base + (int32_t)dh_test_rng_below(rng, len), w[k].hi = top + 1000;
            break;
        default:
            w[k].lo = top + 1, w[k].hi = top + 50; /* nothing of the range is left */
            break;
        }
    }
}

static const struct format {
    uint32_t bits;
    int is_signed;
} FORMATS[] = {{16, 0}, {16, 1}, {12, 0}, {12, 1}};

/* The table range of a format. */
static void format_range(const struct format *f, int32_t *base, uint32_t *len)
{
    ck_assert_int_eq(dh_eq_table_range(f->bits, f->is_signed, base, len), 0);
}

static const uint32_t BINS[] = {1, 256, 4096, 65536, 0};
static const uint32_t LEVELS[] = {65536, 4096, 256};
static const double CLIPS[] = {0, 1, 2.5, 40};

/* Every kind of data and format, every grid of a small volume, per slice and per volume. */
START_TEST(every_kind_grid_and_bin_count)
{
    const uint32_t nx = 53, ny = 41, nz = 6;
    /* tx, ty, tz: one tile, small odd grids, tiles of 2-3 pixels, one-slice tiles */
    static const uint32_t grids[][3] = {{1, 1, 1}, {2, 3, 2}, {5, 4, 3}, {7, 9, 6},
                                        {26, 20, 3}, {17, 13, 2}};
    const size_t n = (size_t)nx * ny * nz;
    uint16_t *data = malloc(n * 2);
    dh_eq_window w[6];
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 2114);
    int round = 0;
    for (size_t f = 0; f < sizeof FORMATS / sizeof *FORMATS; f++) {
        int32_t base;
        uint32_t len;
        format_range(&FORMATS[f], &base, &len);
        for (int kind = 0; kind < KINDS; kind++) {
            fill(data, nx, ny, nz, (enum kind)kind, base, len, 77 + f * 10 + (uint64_t)kind);
            for (size_t g = 0; g < sizeof grids / sizeof *grids; g++)
                for (int volume = 0; volume < 2; volume++, round++) {
                    fill_windows(w, volume ? 1 : nz, base, len, &rng, round);
                    if (volume && round % 3 == 0) /* the whole range, most of the time */
                        w[0].lo = base, w[0].hi = base + (int32_t)len - 1;
                    clahe_case c = {data, FORMATS[f].is_signed, base, len,
                                    {nx, ny, nz, grids[g][0], grids[g][1], grids[g][2], volume},
                                    w, BINS[round % 5], LEVELS[round % 3], CLIPS[round % 4],
                                    (size_t)(round % 3)};
                    check_case(&c);
                }
        }
    }
    free(data);
}
END_TEST

/* Tiles of one pixel, every bin count (65536 tables of one pixel each: the direct path). */
START_TEST(tiles_of_one_pixel)
{
    const uint32_t nx = 9, ny = 7, nz = 3;
    uint16_t data[9 * 7 * 3];
    dh_eq_window w[3];
    int round = 0;
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 5);
    for (size_t f = 0; f < sizeof FORMATS / sizeof *FORMATS; f++) {
        int32_t base;
        uint32_t len;
        format_range(&FORMATS[f], &base, &len);
        fill(data, nx, ny, nz, (enum kind)(f % 2 ? RANDOM : RADIOGRAPH), base, len, 9 + f);
        for (size_t b = 0; b < sizeof BINS / sizeof *BINS; b++)
            for (int volume = 0; volume < 2; volume++, round++) {
                fill_windows(w, volume ? 1 : nz, base, len, &rng, round);
                clahe_case c = {data, FORMATS[f].is_signed, base, len,
                                {nx, ny, nz, nx, ny, volume ? nz : 1, volume}, w, BINS[b],
                                LEVELS[round % 3], CLIPS[round % 4], 0};
                check_case(&c);
            }
    }
}
END_TEST

/* Larger images: tiles beyond one histogram piece (1x1 of 600x400), radiograph-sized 8x8 at 65536
 * and 4096 bins, a volume of 8x8x8 tiles, many slices in several batches (more than one launch
 * holds, and 65536-bin tables beyond the scratch bound). */
START_TEST(large_images_and_batches)
{
    static const struct {
        uint32_t nx, ny, nz, tx, ty, tz;
        int volume, is_signed;
        uint32_t bits, bins;
        enum kind kind;
    } cases[] = {
        {600, 400, 1, 1, 1, 1, 0, 0, 16, 65536, RADIOGRAPH},
        {600, 400, 2, 1, 1, 1, 1, 1, 16, 4096, CT_LIKE},
        {1501, 1203, 1, 8, 8, 1, 0, 0, 16, 65536, RADIOGRAPH},
        {1501, 1203, 1, 8, 8, 1, 0, 0, 16, 4096, RADIOGRAPH},
        {96, 96, 96, 8, 8, 8, 1, 0, 12, 4096, CT_LIKE},
        {97, 95, 33, 8, 8, 8, 1, 1, 16, 65536, CT_LIKE},
        {16, 16, 150, 2, 2, 1, 0, 0, 16, 4096, RANDOM},   /* 64 slices per launch: 3 batches */
        {64, 64, 9, 8, 8, 1, 0, 1, 16, 65536, RADIOGRAPH}, /* 42 MB per slice: batches of 6 */
        /* y and z spans past clahe_cuda_blend.h's bound (300 x 300 doubled): the general 3D
         * mapping, not clahe_cuda_volume.cuh's */
        {5, 300, 300, 1, 2, 2, 1, 0, 12, 4096, CT_LIKE},
        {128, 128, 64, 8, 8, 8, 1, 0, 12, 4096, PADDED_CT},
        {128, 96, 40, 4, 4, 4, 1, 1, 16, 65536, PADDED_CT}, /* packed 16-bit counters */
        {200, 160, 3, 4, 4, 1, 0, 0, 16, 65536, PADDED_CT},
    };
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 31);
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const size_t n = (size_t)cases[k].nx * cases[k].ny * cases[k].nz;
        uint16_t *data = malloc(n * 2);
        int32_t base;
        uint32_t len;
        const struct format fmt = {cases[k].bits, cases[k].is_signed};
        format_range(&fmt, &base, &len);
        fill(data, cases[k].nx, cases[k].ny, cases[k].nz, cases[k].kind, base, len, 100 + k);
        dh_eq_window *w = malloc(cases[k].nz * sizeof *w);
        fill_windows(w, cases[k].volume ? 1 : cases[k].nz, base, len, &rng, 0);
        clahe_case c = {data, cases[k].is_signed, base, len,
                        {cases[k].nx, cases[k].ny, cases[k].nz, cases[k].tx, cases[k].ty,
                         cases[k].tz, cases[k].volume},
                        w, cases[k].bins, 65536, k % 2 ? 2.0 : 3.0, k % 2};
        check_case(&c);
        free(w);
        free(data);
    }
}
END_TEST

/* The GPU builds each table in segments of 2048 bins (kernels/clahe_cuda_tables.cuh): bands of
 * values that straddle segment boundaries, spikes far above the clip limit (their excess and its
 * remainder spread over a span that starts and ends inside segments), clip limits from one sample
 * per bin to none in effect, bin counts that are and are not multiples of 8, 2 to 65536 levels. */
START_TEST(table_segments_and_redistribution)
{
    const uint32_t nx = 203, ny = 150, nz = 4;
    const size_t n = (size_t)nx * ny * nz;
    uint16_t *data = malloc(n * 2);
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 4096);
    static const uint32_t bins[] = {65536, 0, 30001, 6000};
    static const uint32_t levels[] = {65536, 256, 2};
    static const double clips[] = {0.01, 0.3, 1, 2.5, 1e12};
    int round = 0;
    for (int layout = 0; layout < 2; layout++) {
        for (size_t i = 0; i < n; i++) {
            const uint32_t band = 2048u * (1 + dh_test_rng_below(&rng, layout ? 30 : 3));
            const uint32_t spike = dh_test_rng_below(&rng, 8) == 0;
            int32_t v = spike ? (int32_t)band + 7 : (int32_t)band - 60 +
                                                        (int32_t)dh_test_rng_below(&rng, 121);
            data[i] = (uint16_t)v;
        }
        for (size_t b = 0; b < sizeof bins / sizeof *bins; b++)
            for (size_t c = 0; c < sizeof clips / sizeof *clips; c++, round++) {
                const int volume = round % 2;
                dh_eq_window w[4];
                for (uint32_t k = 0; k < 4; k++) { /* whole range, or a window from a band */
                    w[k].lo = (round + k) % 3 ? 0 : 2048 * (int32_t)(1 + k) + 13;
                    w[k].hi = 65535 - (int32_t)(round + k) % 2 * 1000;
                }
                clahe_case cs = {data, 0, 0, 65536, {nx, ny, nz, 3, 2, volume ? 2 : 1, volume},
                                 w, bins[b], levels[round % 3], clips[c], (size_t)(round % 2)};
                check_case(&cs);
            }
    }
    free(data);
}
END_TEST

/* Bad arguments are refused with a message, as dh_clahe_cpu refuses them. */
START_TEST(bad_arguments)
{
    uint16_t *d = NULL;
    CUDA_OK(cudaMalloc((void **)&d, 64));
    dh_eq_window w = {0, 4095};
    char msg[256] = "";
    dh_clahe_shape ok = {4, 4, 1, 2, 2, 1, 0}, bad = {4, 4, 1, 5, 2, 1, 0};
    ck_assert_int_eq(dh_clahe_cuda(g_ws, d, 0, 0, 4096, &ok, &w, 256, 256, 0, d, NULL, msg,
                                   sizeof msg),
                     0);
    CUDA_OK(cudaDeviceSynchronize());
    ck_assert_int_eq(dh_clahe_cuda(g_ws, d, 0, 0, 4096, &bad, &w, 256, 256, 0, d, NULL, msg,
                                   sizeof msg),
                     -1);
    ck_assert_ptr_nonnull(strstr(msg, "CLAHE"));
    ck_assert_int_eq(dh_clahe_cuda(g_ws, d, 0, 0, 4096, &ok, &w, 65537, 256, 0, d, NULL, msg,
                                   sizeof msg),
                     -1);
    ck_assert_int_eq(dh_clahe_cuda(g_ws, d, 0, 0, 4096, &ok, &w, 256, 1, 0, d, NULL, msg,
                                   sizeof msg),
                     -1);
    ck_assert_int_eq(dh_clahe_cuda(g_ws, d, 0, 0, 4096, &ok, &w, 256, 256, NAN, d, NULL, msg,
                                   sizeof msg),
                     -1);
    CUDA_OK(cudaFree(d));
}
END_TEST

/* ---- real files ---- */

static void check_file(const char *name)
{
    dh_ctx *ctx = dh_ctx_create();
    dh_volume *v = NULL;
    ck_assert_msg(dh_volume_read_file(ctx, dh_test_shared(name), &v) == DH_OK, "%s: %s", name,
                  dh_ctx_error(ctx));
    int32_t base, smin, smax;
    uint32_t len;
    ck_assert_int_eq(dh_eq_table_range(dh_volume_bits_stored(v), dh_volume_is_signed(v), &base,
                                       &len),
                     0);
    dh_volume_stored_range(v, &smin, &smax);
    const uint32_t nx = dh_volume_columns(v), ny = dh_volume_rows(v), nz = dh_volume_slices(v);
    dh_eq_window *w = malloc(nz * sizeof *w);
    for (int round = 0; round < 4; round++) {
        int volume = round % 2 && nz > 1;
        for (uint32_t k = 0; k < nz; k++) { /* the table range, then the stored range */
            w[k].lo = round < 2 ? base : smin;
            w[k].hi = round < 2 ? base + (int32_t)len - 1 : smax;
        }
        uint32_t t = round < 2 ? 8 : 3;
        clahe_case c = {dh_volume_data(v), dh_volume_is_signed(v), base, len,
                        {nx, ny, nz, t < nx ? t : nx, t < ny ? t : ny,
                         volume ? (nz < 4 ? nz : 4) : 1, volume},
                        w, round % 2 ? 0 : 4096, round == 2 ? 256 : 65536, round < 2 ? 2.0 : 0,
                        0};
        check_case(&c);
    }
    free(w);
    dh_volume_free(v);
    dh_ctx_free(ctx);
}

START_TEST(real_files_equal_the_cpu)
{
    static const char *files[] = {"fo-dicom_CR-MONO1-10-chest", "cr/cr1_6154.dcm",
                                  "cr/cr2_6247.dcm", "cr/cr3_6278.dcm",
                                  "pylibjpeg-data_RG2_JPLL.dcm", "pydicom_CT_small.dcm",
                                  "pydicom-data_emri_small.dcm",
                                  "dcm_qa_12bit_12bitSigned_0x0F0F.dcm",
                                  "fo-dicom_D_CLUNIE_CT1_RLE_FRAGS.dcm"};
    for (size_t k = 0; k < sizeof files / sizeof *files; k++)
        check_file(files[k]);
}
END_TEST

int main(int argc, char **argv)
{
    if (!dh_cuda_usable())
        return DH_TEST_SKIP;
    g_ws = dh_clahe_cuda_workspace_new();
    if (!g_ws)
        return 1;
    const dh_test synthetic[] = {DH_TEST(every_kind_grid_and_bin_count),
                                 DH_TEST(tiles_of_one_pixel), DH_TEST(large_images_and_batches),
                                 DH_TEST(table_segments_and_redistribution),
                                 DH_TEST(bad_arguments)};
    const dh_test real_files[] = {DH_TEST(real_files_equal_the_cpu)};
    dh_test_in_one_process();
    int rc = dh_test_main(argc, argv, "clahe_cuda", 600, DH_TESTS(synthetic),
                          DH_TESTS(real_files));
    dh_clahe_cuda_workspace_free(g_ws);
    return rc;
}
