// SPDX-License-Identifier: MIT
/*
 * clahe_cpu.c: the CPU twin of CLAHE (clahe_cpu.h). One equalization unit at a time (a slice in
 * 2D, the volume in 3D): the tables of its tiles in parallel over tiles, each from a histogram of
 * the tile's pixels inside the window by dh_eq_lut_build, then the blend in parallel over rows.
 * Only one unit's tables are held, so 65536 bins per tile over many slices stay bounded.
 *
 * What makes it fast, with the bits of clahe.h unchanged: a bin table indexed by the raw 16-bit
 * sample (the bin, or a mark for below / above the window) replaces a division per pixel in both
 * passes and is rebuilt only when the window changes; the tables of one row of tiles are
 * interleaved bin by bin (entry b of tiles ix and ix + 1 side by side), so the four entries a 2D
 * pixel blends lie in two cache lines; a 2D row is blended stretch by stretch (the columns
 * between two tile centres, and the clamped borders), where the tiles and the denominator are
 * fixed and the weight moves by 2 per pixel; and the one rounding of a stretch divides by a
 * multiply-and-shift exact for every numerator the blend can make, so it is the same
 * floor((2 num + den) / (2 den)) as dh_clahe_round.
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
    uint16_t *tables; /* per row of tiles (z, y): bins x tx entries, entry b of tile ix at
                       * b * tx + ix */
    const dh_clahe_axis_weight *wx; /* per column */
    const struct stretch *stretches; /* the columns in runs of the same two tiles */
    uint32_t stretch_count;
    const uint32_t *bin_of;         /* per raw 16-bit sample: its bin, bins (below the window)
                                     * or bins + 1 (above) */
    uint16_t *out;
    int failed;
} unit;

/* A run of columns x0 .. x1 - 1 that blend tiles i0 and i1 over the denominator den: column x
 * weighs tile i1 by w1 + step * (x - x0) (step 2 between centres, 0 at the clamped borders). */
typedef struct stretch {
    uint32_t x0, x1, i0, i1, w1, step, den;
} stretch;

/* The columns of an axis of n pixels and `tiles` tiles as stretches; returns how many (at most
 * tiles + 1). */
static uint32_t column_stretches(uint32_t n, uint32_t tiles, stretch *out)
{
    uint32_t count = 0;
    for (uint32_t x = 0; x < n;) {
        dh_clahe_axis_weight a = dh_clahe_axis_at(n, tiles, x);
        stretch st = {x, x + 1, a.i0, a.i1, a.w1, a.i0 == a.i1 ? 0 : 2, a.den};
        while (st.x1 < n) {
            dh_clahe_axis_weight b = dh_clahe_axis_at(n, tiles, st.x1);
            if (b.i0 != a.i0 || b.i1 != a.i1 || b.den != a.den)
                break;
            st.x1++;
        }
        out[count++] = st;
        x = st.x1;
    }
    return count;
}

/* Division of every n < 2^52 by d (2 <= d < 2^41) as a multiply and shifts: with
 * 2^(L-1) < d <= 2^L, k = max(64, 52 + L) and m = ceil(2^k / d) < 2^64, the error m d - 2^k is
 * below d, so n times it is below 2^k (2^(52+L) >= 2^52 d, or 2^64 > 2^52 * 2^11 when L <= 11)
 * and floor(n m / 2^k) is the exact quotient (the round-up method of Granlund and Montgomery).
 * k >= 64 keeps the shift on the high word of the product. */
typedef struct divisor {
    uint64_t m;
    unsigned shift; /* k - 64 */
} divisor;

static divisor divisor_of(uint64_t d)
{
    unsigned l = 0;
    while (((uint64_t)1 << l) < d)
        l++;
    unsigned k = 52 + l > 64 ? 52 + l : 64;
    divisor q = {0, k - 64};
    unsigned __int128 p = (unsigned __int128)1 << k;
    q.m = (uint64_t)((p + d - 1) / d);
    return q;
}

static inline uint64_t divide(uint64_t n, divisor q)
{
    return (uint64_t)(((unsigned __int128)n * q.m) >> 64) >> q.shift;
}

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
    uint32_t bins = u->bins;
    memset(hist, 0, (bins + 2) * sizeof *hist); /* bins and bins + 1: below and above */
    const uint16_t *raw = raw_samples(u);
    for (uint32_t z = z0; z < z1; z++)
        for (uint32_t y = y0; y < y1; y++) {
            const uint16_t *row = raw + ((size_t)(u->z0 + z) * s->ny + y) * s->nx;
            for (uint32_t x = x0; x < x1; x++)
                hist[u->bin_of[row[x]]]++;
        }
    uint64_t count = 0;
    for (uint32_t b = 0; b < bins; b++)
        count += hist[b];
    if (count == 0)
        for (uint32_t b = 0; b < bins; b++)
            hist[b] = 1;
    dh_eq_window all = {0, (int32_t)bins - 1};
    uint16_t *table = (uint16_t *)(hist + bins + 2); /* scratch after the counts */
    if (dh_eq_lut_build(hist, 0, bins, all, u->levels, u->clip_limit, table) != 0)
        return -1;
    uint16_t *dst = u->tables + ((size_t)iz * s->ty + iy) * bins * s->tx + ix;
    for (uint32_t b = 0; b < bins; b++)
        dst[(size_t)b * s->tx] = table[b];
    return 0;
}

static void tables_range(unit *u, size_t begin, size_t end)
{
    /* bins + 2 counts, then the tile's table (uint16_t) in the same block */
    uint64_t *hist = malloc((u->bins + 2) * sizeof *hist + u->bins * sizeof(uint16_t));
    if (!hist) {
        u->failed = 1;
        return;
    }
    for (size_t k = begin; k < end; k++)
        if (tile_table(u, (uint32_t)k, hist) != 0)
            u->failed = 1;
    free(hist);
}

/* A 2D row, stretch by stretch: per pixel the bin, two entries from each of the two tile rows
 * (t0: tiles i0 along y, t1: i1), and num = w0 A + w1 B with A, B the rows blended along y, which
 * is dh_clahe_blend2's numerator regrouped; the rounding floor((2 num + den) / (2 den)) by the
 * stretch's divisor. Numerators stay below 2^51 (den < 2^34 times a table entry < 2^16). */
static void blend_row_2d(const unit *u, const uint16_t *raw, uint16_t *out,
                         dh_clahe_axis_weight ay, const uint16_t *t0, const uint16_t *t1)
{
    const uint32_t bins = u->bins, tx = u->shape->tx;
    const uint16_t top = (uint16_t)(u->levels - 1);
    const uint64_t wy0 = ay.den - ay.w1, wy1 = ay.w1;
    for (uint32_t k = 0; k < u->stretch_count; k++) {
        const stretch st = u->stretches[k];
        const uint64_t den = (uint64_t)st.den * ay.den;
        const divisor q = divisor_of(2 * den);
        uint64_t w1 = st.w1, w0 = st.den - st.w1;
        for (uint32_t x = st.x0; x < st.x1; x++, w1 += st.step, w0 -= st.step) {
            const uint32_t b = u->bin_of[raw[x]];
            if (b >= bins) {
                out[x] = b == bins ? 0 : top;
                continue;
            }
            const size_t at = (size_t)b * tx;
            const uint64_t a0 = wy0 * t0[at + st.i0] + wy1 * t1[at + st.i0];
            const uint64_t a1 = wy0 * t0[at + st.i1] + wy1 * t1[at + st.i1];
            out[x] = (uint16_t)divide(2 * (w0 * a0 + w1 * a1) + den, q);
        }
    }
}

/* Row r of the unit (r = z * ny + y), blended between the tables of the nearest tile centres. */
static void blend_row(const unit *u, size_t r)
{
    const dh_clahe_shape *s = u->shape;
    uint32_t y = (uint32_t)(r % s->ny), z = (uint32_t)(r / s->ny);
    dh_clahe_axis_weight ay = dh_clahe_axis_at(s->ny, s->ty, y);
    dh_clahe_axis_weight az = dh_clahe_axis_at(u->nz, u->tz, z);
    size_t row = ((size_t)(u->z0 + z) * s->ny + y) * s->nx;
    size_t tile_row = (size_t)u->bins * s->tx; /* entries of one row of tiles */
    const uint16_t *t[4]; /* the tile rows (y, z) the row blends: k = dy + 2 dz */
    for (int k = 0; k < 4; k++) {
        uint32_t iy = k & 1 ? ay.i1 : ay.i0, iz = k & 2 ? az.i1 : az.i0;
        t[k] = u->tables + ((size_t)iz * s->ty + iy) * tile_row;
    }
    const uint16_t *raw = raw_samples(u) + row;
    if (u->tz == 1) {
        blend_row_2d(u, raw, u->out + row, ay, t[0], t[1]);
        return;
    }
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
    uint16_t *tables = calloc(tiles * u->bins, sizeof *tables);
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
    stretch *stretches = malloc(((size_t)shape->tx + 1) * sizeof *stretches);
    uint32_t *bin_of = malloc(65536 * sizeof *bin_of);
    if (!wx || !stretches || !bin_of) {
        free(wx);
        free(stretches);
        free(bin_of);
        return -1;
    }
    for (uint32_t x = 0; x < shape->nx; x++)
        wx[x] = dh_clahe_axis_at(shape->nx, shape->tx, x);
    uint32_t stretch_count = column_stretches(shape->nx, shape->tx, stretches);
    uint32_t units = shape->volume ? 1 : shape->nz;
    int rc = 0;
    int32_t built_lo = 1, built_hi = 0; /* the window bin_of holds (none yet) */
    uint32_t built_bins = 0;
    for (uint32_t k = 0; k < units && rc == 0; k++) {
        unit u = {data, is_signed, shape, shape->volume ? 0 : k, shape->volume ? shape->nz : 1,
                  shape->volume ? shape->tz : 1, 0, 0, bins, levels, clip_limit, NULL, wx,
                  stretches, stretch_count, bin_of, out, 0};
        clamp_window(windows[k], base, len, &u.lo, &u.hi);
        uint32_t used = u.lo > u.hi ? 1
                                    : dh_clahe_bins_used(bins, (uint32_t)((int64_t)u.hi - u.lo + 1));
        if (u.lo != built_lo || u.hi != built_hi || used != built_bins) {
            build_bin_of(bin_of, is_signed, u.lo, u.hi, used);
            built_lo = u.lo;
            built_hi = u.hi;
            built_bins = used;
        }
        rc = equalize_unit(&u, threads);
    }
    free(wx);
    free(stretches);
    free(bin_of);
    return rc;
}
