// SPDX-License-Identifier: MIT
/*
 * bench_clahe_split.c: the whole CPU twin against its blend alone, per build (bench_clahe_split.h).
 * The blend alone is clahe_cpu.c's 2D path for one slice, written out here from the kernels' own
 * pieces: the tiles' tables from their histograms (dh_clahe_table_from_halves, as the tile pass
 * builds them, untimed), then, timed, per row its band's quads when the band changes and the row
 * blend by the build asked for. Its output must equal the call's, so what is timed is the work
 * the call does. The build is forced through DH_CLAHE_CPU_PATH, which the library reads per call.
 * Whatever the call spends beyond the blend is the tile pass (bounds, histograms, tables) and
 * the per-call set-up (the bin table, the columns' weights).
 */
#define _POSIX_C_SOURCE 200809L
#include "bench_clahe_split.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_cpu_common.h"
#include "clahe.h"
#include "clahe_cpu.h"
#include "clahe_cpu_path.h"
#include "clahe_rows_cpu.h"
#include "clahe_table_cpu.h"

#define TILES 8
#define LEVELS 65536
#define CLIP 2.0

/* What the blend reads: the tiles' tables (tile (ix, iy) at (iy TILES + ix) bins), the bins each
 * tile reaches, the bin of every sample, the columns' weights and one band's quads. */
typedef struct blend_input {
    uint32_t n, bins;
    uint16_t *tables;
    uint32_t *reach, *bin_of;
    dh_clahe_columns columns;
    uint64_t *quads;
} blend_input;

static void input_free(blend_input *in)
{
    free(in->tables);
    free(in->reach);
    free(in->bin_of);
    free(in->quads);
    dh_clahe_columns_free(&in->columns);
}

/* The tables as the tile pass builds them: per tile its two half histograms (even and odd
 * columns) over the full window, the bins reached, dh_clahe_table_from_halves. */
static int input_init(blend_input *in, const uint16_t *img, uint32_t n, uint32_t bins)
{
    memset(in, 0, sizeof *in);
    in->n = n;
    in->bins = bins = dh_clahe_bins_used(bins, 65536);
    in->tables = malloc((size_t)TILES * TILES * bins * sizeof *in->tables);
    in->reach = malloc(2 * TILES * TILES * sizeof *in->reach);
    in->bin_of = malloc(65536 * sizeof *in->bin_of);
    in->quads = malloc((size_t)dh_clahe_segments(TILES) * bins * sizeof *in->quads);
    uint32_t *h0 = calloc(bins, sizeof *h0), *h1 = calloc(bins, sizeof *h1);
    int ok = in->tables && in->reach && in->bin_of && in->quads && h0 && h1 &&
             dh_clahe_columns_init(&in->columns, n, TILES, bins) == 0;
    for (uint32_t v = 0; ok && v < 65536; v++)
        in->bin_of[v] = dh_clahe_bin((int32_t)v, 0, 65535, bins);
    for (uint32_t k = 0; ok && k < TILES * TILES; k++) {
        const uint32_t ix = k % TILES, iy = k / TILES;
        uint32_t lo = bins, hi = 0;
        memset(h0, 0, bins * sizeof *h0);
        memset(h1, 0, bins * sizeof *h1);
        for (uint32_t y = dh_clahe_tile_start(n, TILES, iy); y < dh_clahe_tile_start(n, TILES, iy + 1); y++)
            for (uint32_t x = dh_clahe_tile_start(n, TILES, ix); x < dh_clahe_tile_start(n, TILES, ix + 1); x++) {
                const uint32_t b = in->bin_of[img[(size_t)y * n + x]];
                (x % 2 ? h1 : h0)[b]++;
                lo = b < lo ? b : lo;
                hi = b > hi ? b : hi;
            }
        dh_clahe_table_from_halves(h0, h1, bins, lo, hi, LEVELS, CLIP, in->tables + (size_t)k * bins);
        in->reach[2 * k] = lo;
        in->reach[2 * k + 1] = hi;
    }
    free(h0);
    free(h1);
    if (!ok)
        input_free(in);
    return ok ? 0 : -1;
}

/* The blend of the whole image by build `path`, as clahe_cpu.c's rows do it on one thread. */
static void blend_all(const blend_input *in, const uint16_t *img, uint16_t *out, int path)
{
    const size_t tile_row = (size_t)TILES * in->bins;
    uint32_t band = UINT32_MAX;
    for (uint32_t y = 0; y < in->n; y++) {
        const dh_clahe_segment_weight wy = dh_clahe_segment_at(in->n, TILES, y);
        if (wy.s != band) {
            const uint16_t *row0 = in->tables + wy.s * tile_row;
            const uint32_t *reach0 = in->reach + 2 * (size_t)wy.s * TILES;
            dh_clahe_quads_build_reached(in->quads, row0, row0 + tile_row, TILES, in->bins,
                                         reach0, reach0 + 2 * TILES);
            band = wy.s;
        }
        dh_clahe_row job = {img + (size_t)y * in->n, out + (size_t)y * in->n, 0, 0, 65535,
                            in->bins, in->bin_of, LEVELS - 1, in->quads, wy.w0, wy.w1, wy.den};
        dh_clahe_row_blend(&job, &in->columns, path);
    }
}

/* One whole call on one thread, its processor time in ms (-1 when it fails). */
static double whole_call(const uint16_t *img, uint16_t *out, uint32_t n, uint32_t bins)
{
    const dh_clahe_shape shape = {n, n, 1, TILES, TILES, 1, 0};
    const dh_eq_window w = {0, 65535};
    const double t0 = bench_cpu_seconds();
    if (dh_clahe_cpu(img, 0, 0, 65536, &shape, &w, bins, LEVELS, CLIP, 1, out) != 0)
        return -1;
    return (bench_cpu_seconds() - t0) * 1e3;
}

/* Per build up to `best`, the fastest whole call and blend of `runs`, alternating. */
static int measure(const blend_input *in, const uint16_t *img, uint16_t *out, uint16_t *want,
                   int best, int runs, double *call, double *blend)
{
    const uint32_t n = in->n;
    for (int p = 0; p <= best; p++)
        call[p] = blend[p] = 1e30;
    for (int r = -1; r < runs; r++) /* run -1: untimed, the pages faulted in */
        for (int p = 0; p <= best; p++) {
            setenv("DH_CLAHE_CPU_PATH", dh_clahe_path_name((dh_clahe_path)p), 1);
            const double t = whole_call(img, out, n, in->bins);
            if (t < 0 || memcmp(out, want, (size_t)n * n * sizeof *out) != 0) {
                fprintf(stderr, "bench_clahe_split: the %s call failed or differs\n",
                        dh_clahe_path_name((dh_clahe_path)p));
                return 1;
            }
            memset(out, 0, (size_t)n * n * sizeof *out);
            const double t0 = bench_cpu_seconds();
            blend_all(in, img, out, p);
            const double b = (bench_cpu_seconds() - t0) * 1e3;
            if (memcmp(out, want, (size_t)n * n * sizeof *out) != 0) {
                fprintf(stderr, "bench_clahe_split: the %s blend alone differs from the call\n",
                        dh_clahe_path_name((dh_clahe_path)p));
                return 1;
            }
            if (r >= 0) {
                call[p] = t < call[p] ? t : call[p];
                blend[p] = b < blend[p] ? b : blend[p];
            }
        }
    return 0;
}

int bench_clahe_split(const uint16_t *img, uint16_t *out, uint32_t n, int runs)
{
    const char *was = getenv("DH_CLAHE_CPU_PATH");
    char *saved = was ? strdup(was) : NULL;
    uint16_t *want = malloc((size_t)n * n * sizeof *want);
    int rc = want ? 0 : 1;
    const double pixels = (double)n * n;
    printf("| build | bins | whole call ms | blend alone ms | the rest ms | blend ns a pixel |\n");
    printf("| --- | --- | --- | --- | --- | --- |\n");
    static const uint32_t bin_counts[] = {4096, 65536};
    for (int i = 0; i < 2 && rc == 0; i++) {
        blend_input in;
        if (input_init(&in, img, n, bin_counts[i]) != 0) {
            rc = 1;
            break;
        }
        unsetenv("DH_CLAHE_CPU_PATH");
        const int best = dh_clahe_rows_fast(&in.columns, dh_clahe_segment_at(n, TILES, n / 2).den);
        double call[DH_CLAHE_PATHS], blend[DH_CLAHE_PATHS];
        rc = whole_call(img, want, n, bin_counts[i]) < 0 ||
             measure(&in, img, out, want, best, runs, call, blend);
        for (int p = 0; p <= best && rc == 0; p++)
            printf("| %s | %u | %.2f | %.2f | %.2f | %.2f |\n", dh_clahe_path_name((dh_clahe_path)p),
                   in.bins, call[p], blend[p], call[p] - blend[p], blend[p] * 1e6 / pixels);
        input_free(&in);
    }
    if (saved)
        setenv("DH_CLAHE_CPU_PATH", saved, 1);
    else
        unsetenv("DH_CLAHE_CPU_PATH");
    free(saved);
    free(want);
    return rc;
}
