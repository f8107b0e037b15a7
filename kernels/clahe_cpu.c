// SPDX-License-Identifier: MIT
/*
 * clahe_cpu.c: the CPU twin of CLAHE (clahe_cpu.h). One equalization unit at a time (a slice in
 * 2D, the volume in 3D): the tables of its tiles in parallel over tiles, each from a histogram of
 * the tile's pixels inside the window by dh_eq_lut_build, then the blend in parallel over rows.
 * Only one unit's tables are held, so 65536 bins per tile over many slices stay bounded.
 */
#define _POSIX_C_SOURCE 200809L
#include "clahe_cpu.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "equalize_cpu.h"

uint32_t dh_clahe_tiles_for_size(uint32_t n, uint32_t size)
{
    if (n == 0 || size == 0)
        return 0;
    return (uint32_t)(((uint64_t)n + size - 1) / size);
}

/* One equalization unit: slices z0 .. z0 + nz - 1 with their window, clamped to the table. */
typedef struct unit {
    const void *data;
    int is_signed;
    const dh_clahe_shape *shape;
    uint32_t z0, nz, tz; /* tz: tiles across the unit's slices (1 in 2D) */
    int32_t lo, hi;      /* lo > hi: empty window */
    uint32_t bins, levels;
    double clip_limit;
    uint16_t *tables; /* tiles * bins */
    const dh_clahe_axis_weight *wx; /* per column */
    uint16_t *out;
    int failed;
} unit;

static int32_t sample_at(const unit *u, size_t i)
{
    return u->is_signed ? ((const int16_t *)u->data)[i] : ((const uint16_t *)u->data)[i];
}

/* The table of tile k (x fastest, then y, then z). A tile with no pixel inside the window gets the
 * table of a flat histogram (the linear ramp over the bins), so its neighbours blend with a
 * neutral map rather than with black. */
static int tile_table(unit *u, uint32_t k, uint64_t *hist)
{
    const dh_clahe_shape *s = u->shape;
    uint32_t ix = k % s->tx, iy = k / s->tx % s->ty, iz = k / s->tx / s->ty;
    uint32_t x0 = dh_clahe_tile_start(s->nx, s->tx, ix), x1 = dh_clahe_tile_start(s->nx, s->tx, ix + 1);
    uint32_t y0 = dh_clahe_tile_start(s->ny, s->ty, iy), y1 = dh_clahe_tile_start(s->ny, s->ty, iy + 1);
    uint32_t z0 = dh_clahe_tile_start(u->nz, u->tz, iz), z1 = dh_clahe_tile_start(u->nz, u->tz, iz + 1);
    memset(hist, 0, u->bins * sizeof *hist);
    uint64_t count = 0;
    for (uint32_t z = z0; z < z1; z++)
        for (uint32_t y = y0; y < y1; y++) {
            size_t row = ((size_t)(u->z0 + z) * s->ny + y) * s->nx;
            for (uint32_t x = x0; x < x1; x++) {
                int32_t v = sample_at(u, row + x);
                if (v < u->lo || v > u->hi)
                    continue;
                hist[dh_clahe_bin(v, u->lo, u->hi, u->bins)]++;
                count++;
            }
        }
    if (count == 0)
        for (uint32_t b = 0; b < u->bins; b++)
            hist[b] = 1;
    dh_eq_window all = {0, (int32_t)u->bins - 1};
    return dh_eq_lut_build(hist, 0, u->bins, all, u->levels, u->clip_limit,
                           u->tables + (size_t)k * u->bins);
}

static void tables_range(unit *u, size_t begin, size_t end)
{
    uint64_t *hist = malloc(u->bins * sizeof *hist);
    if (!hist) {
        u->failed = 1;
        return;
    }
    for (size_t k = begin; k < end; k++)
        if (tile_table(u, (uint32_t)k, hist) != 0)
            u->failed = 1;
    free(hist);
}

/* Row r of the unit (r = z * ny + y), blended between the tables of the nearest tile centres. */
static void blend_row(const unit *u, size_t r)
{
    const dh_clahe_shape *s = u->shape;
    uint32_t y = (uint32_t)(r % s->ny), z = (uint32_t)(r / s->ny);
    dh_clahe_axis_weight ay = dh_clahe_axis_at(s->ny, s->ty, y);
    dh_clahe_axis_weight az = dh_clahe_axis_at(u->nz, u->tz, z);
    size_t row = ((size_t)(u->z0 + z) * s->ny + y) * s->nx;
    size_t plane = (size_t)s->tx * s->ty, bins = u->bins;
    const uint16_t *t[8]; /* the rows of tiles (y, z) the row blends, x added per pixel */
    for (int k = 0; k < 8; k++) {
        uint32_t iy = k & 2 ? ay.i1 : ay.i0, iz = k & 4 ? az.i1 : az.i0;
        t[k] = u->tables + ((size_t)iz * plane + (size_t)iy * s->tx) * bins;
    }
    uint16_t top = (uint16_t)(u->levels - 1);
    for (uint32_t x = 0; x < s->nx; x++) {
        int32_t v = sample_at(u, row + x);
        if (v < u->lo) {
            u->out[row + x] = 0;
            continue;
        }
        if (v > u->hi) {
            u->out[row + x] = top;
            continue;
        }
        dh_clahe_axis_weight ax = u->wx[x];
        size_t b = dh_clahe_bin(v, u->lo, u->hi, u->bins);
        size_t c0 = ax.i0 * bins + b, c1 = ax.i1 * bins + b;
        if (u->tz == 1) {
            u->out[row + x] = dh_clahe_blend2(ax, ay, t[0][c0], t[0][c1], t[2][c0], t[2][c1]);
        } else {
            uint32_t e[8];
            for (int k = 0; k < 8; k += 2) {
                e[k] = t[k][c0];
                e[k + 1] = t[k][c1];
            }
            u->out[row + x] = dh_clahe_blend3(ax, ay, az, e);
        }
    }
}

static void rows_range(unit *u, size_t begin, size_t end)
{
    for (size_t r = begin; r < end; r++)
        blend_row(u, r);
}

/* ---- work split over threads ---- */

typedef void (*range_fn)(unit *u, size_t begin, size_t end);

typedef struct share {
    unit *u;
    range_fn fn;
    size_t begin, end;
} share;

static void *share_thread(void *arg)
{
    share *s = arg;
    s->fn(s->u, s->begin, s->end);
    return NULL;
}

/* fn over [0, n) in `threads` contiguous shares, the last one on the calling thread. */
static int run_shared(unit *u, range_fn fn, size_t n, int threads)
{
    if ((size_t)threads > n)
        threads = (int)n;
    if (threads <= 1) {
        fn(u, 0, n);
        return 0;
    }
    share *shares = calloc((size_t)threads, sizeof *shares);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    if (!shares || !tid) {
        free(shares);
        free(tid);
        return -1;
    }
    int started = 0;
    for (int t = 0; t < threads; t++) {
        share s = {u, fn, n * t / threads, n * (t + 1) / threads};
        shares[t] = s;
    }
    for (; started < threads - 1; started++)
        if (pthread_create(&tid[started], NULL, share_thread, &shares[started]) != 0)
            break;
    /* Whatever could not be started runs here. */
    for (int t = started; t < threads; t++)
        share_thread(&shares[t]);
    for (int t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
    free(shares);
    free(tid);
    return 0;
}

/* The window clamped to the table range; lo > hi when nothing is left. */
static void clamp_window(dh_eq_window w, int32_t base, uint32_t len, int32_t *lo, int32_t *hi)
{
    int64_t top = (int64_t)base + len - 1;
    *lo = w.lo < base ? base : w.lo;
    *hi = (int64_t)w.hi > top ? (int32_t)top : w.hi;
}

static int shape_ok(const dh_clahe_shape *s)
{
    if (!s || !s->nx || !s->ny || !s->nz || s->nx > 65535 || s->ny > 65535 || s->nz > 65535)
        return 0;
    if (!s->tx || !s->ty || s->tx > s->nx || s->ty > s->ny)
        return 0;
    return !s->volume || (s->tz && s->tz <= s->nz);
}

static int equalize_unit(unit *u, int threads)
{
    const dh_clahe_shape *s = u->shape;
    size_t rows = (size_t)u->nz * s->ny;
    if (u->lo > u->hi) { /* every pixel is below or above the window */
        u->bins = 1;
        u->tables = NULL;
    } else {
        u->bins = dh_clahe_bins_used(u->bins, (uint32_t)((int64_t)u->hi - u->lo + 1));
    }
    size_t tiles = (size_t)s->tx * s->ty * u->tz;
    uint16_t *tables = malloc(tiles * u->bins * sizeof *tables);
    if (!tables)
        return -1;
    u->tables = tables;
    if (u->lo <= u->hi && run_shared(u, tables_range, tiles, threads) != 0)
        u->failed = 1;
    if (!u->failed && run_shared(u, rows_range, rows, threads) != 0)
        u->failed = 1;
    free(tables);
    return u->failed ? -1 : 0;
}

int dh_clahe_cpu(const void *data, int is_signed, int32_t base, uint32_t len,
                 const dh_clahe_shape *shape, const dh_eq_window *windows, uint32_t bins,
                 uint32_t levels, double clip_limit, int threads, uint16_t *out)
{
    if (!data || !windows || !out || !shape_ok(shape) || len == 0 || len > 65536 ||
        bins > 65536 || levels < 2 || levels > 65536 || !(clip_limit >= 0))
        return -1;
    if (threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (int)n : 1;
    }
    dh_clahe_axis_weight *wx = malloc(shape->nx * sizeof *wx);
    if (!wx)
        return -1;
    for (uint32_t x = 0; x < shape->nx; x++)
        wx[x] = dh_clahe_axis_at(shape->nx, shape->tx, x);
    uint32_t units = shape->volume ? 1 : shape->nz;
    int rc = 0;
    for (uint32_t k = 0; k < units && rc == 0; k++) {
        unit u = {data, is_signed, shape, shape->volume ? 0 : k, shape->volume ? shape->nz : 1,
                  shape->volume ? shape->tz : 1, 0, 0, bins, levels, clip_limit, NULL, wx, out,
                  0};
        clamp_window(windows[k], base, len, &u.lo, &u.hi);
        rc = equalize_unit(&u, threads);
    }
    free(wx);
    return rc;
}
