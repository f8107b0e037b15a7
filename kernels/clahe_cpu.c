// SPDX-License-Identifier: MIT
/*
 * clahe_cpu.c: the CPU twin of CLAHE (clahe_cpu.h). One equalization unit at a time (a slice in
 * 2D, the volume in 3D): the tables of its tiles in parallel over tiles, each dh_eq_lut_build's
 * table of the tile's histogram inside the window, then the blend in parallel over rows.
 * Only one unit's tables are held, so 65536 bins per tile over many slices stay bounded.
 *
 * What makes it fast, with the bits of clahe.h unchanged: a bin table indexed by the raw 16-bit
 * sample (the bin, or a mark for below / above the window) replaces a division per pixel in the
 * tile pass and the portable blend (the vector blends, and the AVX-512 tile pass of
 * clahe_tiles_avx512.h, compute it) and is rebuilt only when the window changes; a tile's
 * histogram is counted in two halves
 * of 32-bit counters (even and odd pixels, so runs of one bin do not wait on each other) and its
 * table built without a division per bin (clahe_table_cpu.h); in 2D the four entries a pixel
 * blends are packed as one 8-byte quad per bin and segment, built band by band as the rows reach
 * it (only over the bins the segment's four tiles reach: the tile pass keeps each tile's range),
 * and the row blend runs 8 pixels at a time in 32-bit AVX2 lanes, or 16 in AVX-512 ones, where
 * the processor has them (clahe_rows_cpu.h, clahe_cpu_path.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "clahe_cpu.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clahe_cpu_path.h"
#include "clahe_rows_cpu.h"
#include "clahe_table_cpu.h"
#include "clahe_tiles_avx512.h"
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
    uint16_t *tables; /* 3D: per row of tiles (z, y) bins x tx entries, entry b of tile ix at
                       * b * tx + ix; 2D: tile (ix, iy)'s table at (iy * tx + ix) * bins */
    const dh_clahe_axis_weight *wx; /* per column */
    const dh_clahe_columns *columns; /* per column, for the 2D blend */
    int fast;                        /* the blend's build (clahe_cpu_path.h) */
    int count_avx512;                /* the tile pass's counting in AVX-512 */
    const uint32_t *bin_of;         /* per raw 16-bit sample: its bin, bins (below the window)
                                     * or bins + 1 (above) */
    uint32_t *reach; /* 2D: per tile k, the first and last bin its samples inside the window
                      * reach, at 2 k (first > last: none) */
    uint16_t *out;
    int failed;
} unit;

/* The raw samples as 16-bit patterns: the bin table is indexed by them, signed or not. */
static const uint16_t *raw_samples(const unit *u)
{
    return (const uint16_t *)u->data;
}

/* The bin table for window [lo, hi] and `bins` bins: dh_clahe_bin without a division,
 * floor((v - lo) * bins / W) kept as a running quotient and remainder. An empty window (lo > hi)
 * marks every value below (v < lo) or above, as the blend without tables wants. */
static void build_bin_of(uint32_t *bin_of, int is_signed, int32_t lo, int32_t hi, uint32_t bins)
{
    for (uint32_t r = 0; r < 65536; r++) {
        int32_t v = is_signed ? (int32_t)(int16_t)(uint16_t)r : (int32_t)r;
        bin_of[r] = v < lo ? bins : bins + 1; /* inside values are written below */
    }
    uint64_t width = (uint64_t)((int64_t)hi - lo + 1), rest = 0;
    uint32_t b = 0;
    for (int64_t v = lo; v <= hi; v++) {
        bin_of[(uint16_t)v] = b;
        rest += bins;
        while (rest >= width) {
            rest -= width;
            b++;
        }
    }
}

/* Per thread: the tile's two half histograms (bins + 2 counters each: below and above the
 * window last), its table, and the 64-bit histogram of a tile too big for 32-bit counters. */
typedef struct scratch {
    uint32_t *h0, *h1;
    uint16_t *table;
    uint64_t *wide;
} scratch;

/* The histogram of a tile of 2^32 pixels or more (only a 3D tile can be) and its table by
 * dh_eq_lut_build itself. */
static int wide_table(unit *u, scratch *w, uint32_t x0, uint32_t x1, uint32_t y0, uint32_t y1,
                      uint32_t z0, uint32_t z1, uint16_t *table)
{
    const dh_clahe_shape *s = u->shape;
    const uint32_t bins = u->bins;
    if (!w->wide && !(w->wide = malloc((bins + 2) * sizeof *w->wide)))
        return -1;
    memset(w->wide, 0, (bins + 2) * sizeof *w->wide);
    const uint16_t *raw = raw_samples(u);
    for (uint32_t z = z0; z < z1; z++)
        for (uint32_t y = y0; y < y1; y++) {
            const uint16_t *row = raw + ((size_t)(u->z0 + z) * s->ny + y) * s->nx;
            for (uint32_t x = x0; x < x1; x++)
                w->wide[u->bin_of[row[x]]]++;
        }
    uint64_t count = 0;
    for (uint32_t b = 0; b < bins; b++)
        count += w->wide[b];
    if (count == 0)
        for (uint32_t b = 0; b < bins; b++)
            w->wide[b] = 1;
    dh_eq_window all = {0, (int32_t)bins - 1};
    return dh_eq_lut_build(w->wide, 0, bins, all, u->levels, u->clip_limit, table);
}

/* The table of tile k (x fastest, then y, then z). A tile with no pixel inside the window gets the
 * table of a flat histogram (the linear ramp over the bins), so its neighbours blend with a
 * neutral map rather than with black. */
static int tile_table(unit *u, uint32_t k, scratch *w)
{
    const dh_clahe_shape *s = u->shape;
    uint32_t ix = k % s->tx, iy = k / s->tx % s->ty, iz = k / s->tx / s->ty;
    uint32_t x0 = dh_clahe_tile_start(s->nx, s->tx, ix), x1 = dh_clahe_tile_start(s->nx, s->tx, ix + 1);
    uint32_t y0 = dh_clahe_tile_start(s->ny, s->ty, iy), y1 = dh_clahe_tile_start(s->ny, s->ty, iy + 1);
    uint32_t z0 = dh_clahe_tile_start(u->nz, u->tz, iz), z1 = dh_clahe_tile_start(u->nz, u->tz, iz + 1);
    uint32_t bins = u->bins;
    /* 2D: the table is built in place; 3D: in the scratch, then spread bin-major. */
    uint16_t *table = u->tz > 1 ? w->table : u->tables + (size_t)k * bins;
    if ((uint64_t)(x1 - x0) * (y1 - y0) * (z1 - z0) >= ((uint64_t)1 << 32)) {
        if (wide_table(u, w, x0, x1, y0, y1, z0, z1, table) != 0)
            return -1;
    } else {
        /* The counters are all zero here (zeroed where the last tile counted, below). The
         * smallest and largest sample (as ordered values: signed patterns with the sign bit
         * flipped) bound the bins counted, since the bin grows with the value. */
        const uint16_t *raw = raw_samples(u);
        const uint32_t *bin_of = u->bin_of;
        uint32_t *h0 = w->h0, *h1 = w->h1;
        const uint16_t flip = u->is_signed ? 0x8000 : 0;
        uint16_t kmin = 0xffff, kmax = 0;
#ifdef DH_CLAHE_AVX512_BUILT
        for (uint32_t z = z0; z < z1 && u->count_avx512; z++) {
            const dh_clahe_count_job job = {raw + ((size_t)(u->z0 + z) * s->ny + y0) * s->nx,
                                            s->nx, x0, x1, y1 - y0, u->is_signed, u->lo,
                                            u->hi, bins};
            dh_clahe_count_avx512(&job, h0, h1, &kmin, &kmax);
        }
#endif
        for (uint32_t z = z0; z < z1 && !u->count_avx512; z++)
            for (uint32_t y = y0; y < y1; y++) {
                const uint16_t *row = raw + ((size_t)(u->z0 + z) * s->ny + y) * s->nx;
                /* The tile's rows are short runs a row apart, which the processor's own
                 * prefetching follows poorly: ask for the run two rows ahead. */
                if (y + 2 < y1)
                    for (uint32_t x = x0; x < x1; x += 32)
                        __builtin_prefetch(row + 2 * (size_t)s->nx + x);
                for (uint32_t x = x0; x < x1; x++) {
                    uint16_t key = row[x] ^ flip;
                    kmin = key < kmin ? key : kmin;
                    kmax = key > kmax ? key : kmax;
                }
                uint32_t x = x0;
                for (; x + 2 <= x1; x += 2) {
                    h0[bin_of[row[x]]]++;
                    h1[bin_of[row[x + 1]]]++;
                }
                if (x < x1)
                    h0[bin_of[row[x]]]++;
            }
        /* Marks: bins for below the window, bins + 1 above. */
        uint32_t blo = bin_of[(uint16_t)(kmin ^ flip)], bhi = bin_of[(uint16_t)(kmax ^ flip)];
        if (blo == bins) /* some below the window: the inside ones start at bin 0 or later */
            blo = 0;
        if (bhi == bins + 1)
            bhi = bins - 1;
        if (blo > bins || bhi == bins) { /* all above, or all below: none inside */
            blo = 1;
            bhi = 0;
        }
        dh_clahe_table_from_halves(h0, h1, bins, blo, bhi, u->levels, u->clip_limit, table);
        if (u->reach) {
            u->reach[2 * (size_t)k] = blo;
            u->reach[2 * (size_t)k + 1] = bhi;
        }
        if (blo <= bhi) {
            memset(h0 + blo, 0, (bhi - blo + 1) * sizeof *h0);
            memset(h1 + blo, 0, (bhi - blo + 1) * sizeof *h1);
        }
        h0[bins] = h0[bins + 1] = h1[bins] = h1[bins + 1] = 0;
    }
    if (u->tz > 1) {
        uint16_t *dst = u->tables + ((size_t)iz * s->ty + iy) * bins * s->tx + ix;
        for (uint32_t b = 0; b < bins; b++)
            dst[(size_t)b * s->tx] = table[b];
    }
    return 0;
}

static void tables_range(unit *u, size_t begin, size_t end)
{
    scratch w = {calloc(u->bins + 2, sizeof *w.h0), calloc(u->bins + 2, sizeof *w.h1),
                 malloc(u->bins * sizeof *w.table), NULL};
    if (!w.h0 || !w.h1 || !w.table)
        u->failed = 1;
    for (size_t k = begin; k < end && !u->failed; k++)
        if (tile_table(u, (uint32_t)k, &w) != 0)
            u->failed = 1;
    free(w.h0);
    free(w.h1);
    free(w.table);
    free(w.wide);
}

/* A thread's quads of one 2D band (clahe_rows_cpu.h), rebuilt when its rows enter another. */
typedef struct band_quads {
    uint64_t *quads;
    uint32_t band; /* UINT32_MAX: none yet */
} band_quads;

/* A 2D row: its band's quads and the row blend, or, with an empty window, only the marks. */
static void blend_row_2d(const unit *u, size_t row, uint32_t y, band_quads *bq)
{
    const dh_clahe_shape *s = u->shape;
    const uint16_t *raw = raw_samples(u) + row;
    const uint16_t top = (uint16_t)(u->levels - 1);
    if (u->lo > u->hi) {
        for (uint32_t x = 0; x < s->nx; x++)
            u->out[row + x] = u->bin_of[raw[x]] == u->bins ? 0 : top;
        return;
    }
    dh_clahe_segment_weight wy = dh_clahe_segment_at(s->ny, s->ty, y);
    if (bq->band != wy.s) {
        const size_t tile_row = (size_t)s->tx * u->bins;
        const uint16_t *row0 = u->tables + wy.s * tile_row;
        const uint32_t *reach0 = u->reach + 2 * (size_t)wy.s * s->tx;
        dh_clahe_quads_build_reached(bq->quads, row0, s->ty > 1 ? row0 + tile_row : row0, s->tx,
                                     u->bins, reach0, s->ty > 1 ? reach0 + 2 * s->tx : reach0);
        bq->band = wy.s;
    }
    dh_clahe_row job = {raw, u->out + row, u->is_signed, u->lo, u->hi, u->bins, u->bin_of,
                        top, bq->quads, wy.w0, wy.w1, wy.den};
    dh_clahe_row_blend(&job, u->columns, u->fast);
}

/* Row r of a 3D unit (r = z * ny + y), blended between the tables of the nearest tile centres. */
static void blend_row_3d(const unit *u, size_t r)
{
    const dh_clahe_shape *s = u->shape;
    uint32_t y = (uint32_t)(r % s->ny), z = (uint32_t)(r / s->ny);
    dh_clahe_axis_weight ay = dh_clahe_axis_at(s->ny, s->ty, y);
    size_t row = ((size_t)(u->z0 + z) * s->ny + y) * s->nx;
    dh_clahe_axis_weight az = dh_clahe_axis_at(u->nz, u->tz, z);
    size_t tile_row = (size_t)u->bins * s->tx; /* entries of one row of tiles */
    const uint16_t *t[4]; /* the tile rows (y, z) the row blends: k = dy + 2 dz */
    for (int k = 0; k < 4; k++) {
        uint32_t iy = k & 1 ? ay.i1 : ay.i0, iz = k & 2 ? az.i1 : az.i0;
        t[k] = u->tables + ((size_t)iz * s->ty + iy) * tile_row;
    }
    const uint16_t *raw = raw_samples(u) + row;
    uint16_t top = (uint16_t)(u->levels - 1);
    for (uint32_t x = 0; x < s->nx; x++) {
        uint32_t b = u->bin_of[raw[x]];
        if (b >= u->bins) {
            u->out[row + x] = b == u->bins ? 0 : top;
            continue;
        }
        dh_clahe_axis_weight ax = u->wx[x];
        size_t at = (size_t)b * s->tx;
        uint32_t e[8]; /* k = dx + 2 dy + 4 dz */
        for (int k = 0; k < 4; k++) {
            e[2 * k] = t[k][at + ax.i0];
            e[2 * k + 1] = t[k][at + ax.i1];
        }
        u->out[row + x] = dh_clahe_blend3(ax, ay, az, e);
    }
}

static void rows_range(unit *u, size_t begin, size_t end)
{
    const dh_clahe_shape *s = u->shape;
    if (u->tz > 1) {
        for (size_t r = begin; r < end; r++)
            blend_row_3d(u, r);
        return;
    }
    band_quads bq = {NULL, UINT32_MAX};
    if (u->lo <= u->hi &&
        !(bq.quads = malloc((size_t)dh_clahe_segments(s->tx) * u->bins * sizeof *bq.quads))) {
        u->failed = 1;
        return;
    }
    for (size_t r = begin; r < end; r++) {
        uint32_t y = (uint32_t)(r % s->ny), z = (uint32_t)(r / s->ny);
        blend_row_2d(u, ((size_t)(u->z0 + z) * s->ny + y) * s->nx, y, &bq);
    }
    free(bq.quads);
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
    if (u->tz == 1) {
        uint32_t max_den_y = 0;
        for (uint32_t y = 0; y < s->ny; y++) {
            uint32_t d = dh_clahe_segment_at(s->ny, s->ty, y).den;
            max_den_y = d > max_den_y ? d : max_den_y;
        }
        u->fast = dh_clahe_rows_fast(u->columns, max_den_y);
    }
    /* Every entry is written by the table pass before the blend reads it (and none is read
     * when the window is empty), so no zeroing: at 65536 bins the tables are megabytes. */
    uint16_t *tables = malloc(tiles * u->bins * sizeof *tables);
    u->reach = u->tz == 1 ? malloc(2 * tiles * sizeof *u->reach) : NULL;
    if (!tables || (u->tz == 1 && !u->reach)) {
        free(tables);
        free(u->reach);
        return -1;
    }
    u->tables = tables;
    if (u->lo <= u->hi && run_shared(u, tables_range, tiles, threads) != 0)
        u->failed = 1;
    if (!u->failed && run_shared(u, rows_range, rows, threads) != 0)
        u->failed = 1;
    free(tables);
    free(u->reach);
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
    uint32_t *bin_of = malloc(65536 * sizeof *bin_of);
    dh_clahe_columns columns = {0}; /* for the 2D blend: filled per bin count, below */
    if (!wx || !bin_of) {
        free(wx);
        free(bin_of);
        return -1;
    }
    for (uint32_t x = 0; x < shape->nx; x++)
        wx[x] = dh_clahe_axis_at(shape->nx, shape->tx, x);
    uint32_t units = shape->volume ? 1 : shape->nz;
    int rc = 0;
    int32_t built_lo = 1, built_hi = 0; /* the window bin_of holds (none yet) */
    uint32_t built_bins = 0;
    for (uint32_t k = 0; k < units && rc == 0; k++) {
        unit u = {data, is_signed, shape, shape->volume ? 0 : k, shape->volume ? shape->nz : 1,
                  shape->volume ? shape->tz : 1, 0, 0, bins, levels, clip_limit, NULL, wx,
                  &columns, 0, dh_clahe_cpu_path() >= DH_CLAHE_PATH_AVX512_LOADS, bin_of, NULL,
                  out, 0};
        clamp_window(windows[k], base, len, &u.lo, &u.hi);
        uint32_t used = u.lo > u.hi ? 1
                                    : dh_clahe_bins_used(bins, (uint32_t)((int64_t)u.hi - u.lo + 1));
        if (u.lo != built_lo || u.hi != built_hi || used != built_bins) {
            build_bin_of(bin_of, is_signed, u.lo, u.hi, used);
            built_lo = u.lo;
            built_hi = u.hi;
            built_bins = used;
        }
        if (!columns.w0 || columns.bins != used) { /* the quad index of a segment's bin 0 */
            dh_clahe_columns_free(&columns);
            if (dh_clahe_columns_init(&columns, shape->nx, shape->tx, used) != 0) {
                rc = -1;
                break;
            }
        }
        rc = equalize_unit(&u, threads);
    }
    dh_clahe_columns_free(&columns);
    free(wx);
    free(bin_of);
    return rc;
}
