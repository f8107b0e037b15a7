// SPDX-License-Identifier: MIT
/*
 * equalize_cpu.c: the CPU twin of the lookup tables of kernels/equalize_cpu.h (equalization, clip
 * limit, VOI window/level, window sources) and of their application. The CUDA launchers must
 * produce exactly these tables and outputs.
 */
#define _POSIX_C_SOURCE 200809L
#include "equalize_cpu.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int dh_eq_table_range(uint32_t bits_stored, int is_signed, int32_t *base, uint32_t *len)
{
    if (bits_stored < 1 || bits_stored > 16)
        return -1;
    *len = 1u << bits_stored;
    *base = is_signed ? -(int32_t)(*len / 2) : 0;
    return 0;
}

int dh_eq_bin_map_init(dh_bin_map *map, int32_t base, uint32_t len)
{
    return dh_bin_map_init_affine(map, len, base, (int64_t)base + len);
}

/* The window as table indices, clamped to the table; lo > hi when nothing is left. */
static void window_indices(dh_eq_window w, int32_t base, uint32_t len, int64_t *lo, int64_t *hi)
{
    *lo = (int64_t)w.lo - base;
    *hi = (int64_t)w.hi - base;
    if (*lo < 0)
        *lo = 0;
    if (*hi > (int64_t)len - 1)
        *hi = (int64_t)len - 1;
}

void dh_eq_stats_gather(const uint64_t *hist, uint32_t len, int32_t base, dh_eq_window w,
                        double clip_limit, dh_eq_stats *s)
{
    int64_t lo, hi;
    window_indices(w, base, len, &lo, &hi);
    memset(s, 0, sizeof *s);
    s->first = 1;
    s->last = 0;
    int found = 0;
    for (int64_t i = lo; i <= hi; i++) {
        if (!hist[i])
            continue;
        s->count += hist[i];
        if (!found)
            s->first = i;
        s->last = i;
        found = 1;
    }
    if (!found)
        return;
    s->limit = dh_eq_clip_limit(clip_limit, s->count, (uint64_t)(s->last - s->first + 1));
    if (s->limit)
        for (int64_t i = s->first; i <= s->last; i++)
            if (hist[i] > s->limit)
                s->excess += hist[i] - s->limit;
}

int dh_eq_lut_build(const uint64_t *hist, int32_t base, uint32_t len, dh_eq_window w,
                    uint32_t levels, double clip_limit, uint16_t *lut)
{
    if (!hist || !lut || len == 0 || levels < 2 || levels > 65536 || clip_limit < 0 ||
        isnan(clip_limit))
        return -1;
    dh_eq_stats s;
    dh_eq_stats_gather(hist, len, base, w, clip_limit, &s);
    int64_t lo = (int64_t)w.lo - base, hi = (int64_t)w.hi - base;
    uint64_t cdf = 0, cdf_min = 0;
    if (s.first <= s.last)
        cdf_min = dh_eq_clipped(hist[s.first], s.first, &s);
    for (int64_t i = 0; i < (int64_t)len; i++) {
        if (i < lo) {
            lut[i] = 0;
        } else if (i > hi) {
            lut[i] = (uint16_t)(levels - 1);
        } else {
            cdf += dh_eq_clipped(hist[i], i, &s);
            lut[i] = dh_eq_value(cdf, cdf_min, s.count, levels);
        }
    }
    return 0;
}

uint16_t dh_voi_value(double x, double c, double w, dh_eq_voi function, uint32_t levels)
{
    double ymax = (double)(levels - 1), y;
    switch (function) {
    case DH_EQ_VOI_LINEAR:
        if (x <= c - 0.5 - (w - 1) / 2)
            y = 0;
        else if (x > c - 0.5 + (w - 1) / 2)
            y = ymax;
        else
            y = ((x - (c - 0.5)) / (w - 1) + 0.5) * ymax;
        break;
    case DH_EQ_VOI_LINEAR_EXACT:
        if (x <= c - w / 2)
            y = 0;
        else if (x > c + w / 2)
            y = ymax;
        else
            y = ((x - c) / w + 0.5) * ymax;
        break;
    default: /* DH_EQ_VOI_SIGMOID */
        y = ymax / (1 + exp(-4 * (x - c) / w));
        break;
    }
    if (!(y > 0)) /* also NaN, from a width-1 LINEAR window of one value */
        return 0;
    if (y >= ymax)
        return (uint16_t)(levels - 1);
    return (uint16_t)floor(y);
}

int dh_voi_lut_build(int32_t base, uint32_t len, double slope, double intercept, double center,
                     double width, dh_eq_voi function, uint32_t levels, uint16_t *lut)
{
    if (!lut || len == 0 || levels < 2 || levels > 65536 || !isfinite(center) ||
        !isfinite(width) || !isfinite(slope) || !isfinite(intercept))
        return -1;
    if (function == DH_EQ_VOI_LINEAR ? width < 1 : !(width > 0))
        return -1;
    if (function != DH_EQ_VOI_LINEAR && function != DH_EQ_VOI_LINEAR_EXACT &&
        function != DH_EQ_VOI_SIGMOID)
        return -1;
    for (uint32_t i = 0; i < len; i++)
        lut[i] = dh_voi_value(slope * ((double)base + i) + intercept, center, width, function,
                              levels);
    return 0;
}

int dh_window_minmax(const uint64_t *hist, uint32_t len, int32_t base, dh_eq_window *w)
{
    return dh_window_percentile(hist, len, base, 0.0, w);
}

int dh_window_percentile(const uint64_t *hist, uint32_t len, int32_t base, double p,
                         dh_eq_window *w)
{
    if (!(p >= 0 && p < 50))
        return -1;
    uint64_t n = 0;
    for (uint32_t i = 0; i < len; i++)
        n += hist[i];
    if (n == 0)
        return -1;
    uint64_t k = (uint64_t)floor((double)n * p / 100.0);
    if (k > (n - 1) / 2) /* rounding of a p just below 50 */
        k = (n - 1) / 2;
    /* Pixel ranks are 0-based: the low end is the pixel of rank k, the high end rank n-1-k. */
    uint64_t cdf = 0;
    int have_lo = 0;
    for (uint32_t i = 0; i < len; i++) {
        cdf += hist[i];
        if (!have_lo && cdf > k) {
            w->lo = base + (int32_t)i;
            have_lo = 1;
        }
        if (cdf > n - 1 - k) {
            w->hi = base + (int32_t)i;
            return 0;
        }
    }
    return -1; /* unreachable: the cdf reaches n */
}

typedef struct linear {
    double slope, intercept;
} linear;

static double linear_value(const void *arg, int32_t s)
{
    const linear *l = arg;
    return l->slope * (double)s + l->intercept;
}

int dh_window_to_stored(double lo, double hi, double slope, double intercept, int32_t base,
                        uint32_t len, dh_eq_window *w)
{
    if (!(slope > 0) || !isfinite(intercept))
        return -1;
    const linear l = {slope, intercept};
    return dh_window_to_stored_by(lo, hi, linear_value, &l, base, len, w);
}

int dh_window_to_stored_by(double lo, double hi, dh_modality_fn m, const void *arg,
                           int32_t base, uint32_t len, dh_eq_window *w)
{
    if (isnan(lo) || isnan(hi))
        return -1;
    /* m is non-decreasing in s (for a rescale even after rounding), so binary searches on the
     * very expression the rest of the library evaluates find the exact ends. */
    int64_t a = 0, b = len; /* first index with value >= lo */
    while (a < b) {
        int64_t mid = (a + b) / 2;
        if (m(arg, base + (int32_t)mid) >= lo)
            b = mid;
        else
            a = mid + 1;
    }
    int64_t first = a;
    a = 0;
    b = len; /* first index with value > hi */
    while (a < b) {
        int64_t mid = (a + b) / 2;
        if (m(arg, base + (int32_t)mid) > hi)
            b = mid;
        else
            a = mid + 1;
    }
    int64_t last = a - 1;
    if (first > last) { /* empty: keep lo > hi but inside int32 */
        w->lo = base + 1;
        w->hi = base;
        if (first >= (int64_t)len) { /* everything below the window */
            w->lo = base + (int32_t)len;
            w->hi = base + (int32_t)len - 1;
        }
        return 0;
    }
    w->lo = base + (int32_t)first;
    w->hi = base + (int32_t)last;
    return 0;
}

/* ---- application ---- */

typedef struct apply_job {
    const void *data;
    int is_signed;
    size_t slice_len, slice_begin, slice_end;
    const uint16_t *luts;
    int per_slice;
    int32_t base;
    uint32_t len;
    uint16_t *out;
} apply_job;

static void apply_range(const apply_job *j)
{
    for (size_t z = j->slice_begin; z < j->slice_end; z++) {
        const uint16_t *lut = j->luts + (j->per_slice ? z * j->len : 0);
        size_t off = z * j->slice_len;
        uint16_t *o = j->out + off;
        if (j->is_signed) {
            const int16_t *d = (const int16_t *)j->data + off;
            for (size_t i = 0; i < j->slice_len; i++)
                o[i] = lut[d[i] - j->base];
        } else {
            const uint16_t *d = (const uint16_t *)j->data + off;
            for (size_t i = 0; i < j->slice_len; i++)
                o[i] = lut[d[i] - j->base];
        }
    }
}

static void *apply_thread(void *arg)
{
    apply_range(arg);
    return NULL;
}

int dh_lut_apply_cpu(const void *data, int is_signed, size_t slice_len, size_t slices,
                     const uint16_t *luts, int per_slice, int32_t base, uint32_t len,
                     int threads, uint16_t *out)
{
    if (threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (int)n : 1;
    }
    /* Work is split by slice; a single big slice is split into rows of itself by treating it
     * as several shorter slices when the table is shared. */
    size_t unit_len = slice_len, units = slices;
    if (!per_slice && slices < (size_t)threads && slice_len >= (size_t)threads * 4096) {
        size_t total = slice_len * slices;
        units = (size_t)threads;
        unit_len = total / units;
        if (unit_len * units != total) {
            unit_len = slice_len;
            units = slices;
        }
    }
    if ((size_t)threads > units)
        threads = (int)units;
    if (threads <= 1 || unit_len * units < 65536) {
        apply_job j = {data, is_signed, unit_len, 0, units, luts, per_slice, base, len, out};
        apply_range(&j);
        return 0;
    }
    apply_job *jobs = calloc((size_t)threads, sizeof *jobs);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    if (!jobs || !tid) {
        free(jobs);
        free(tid);
        return -1;
    }
    int started = 0, rc = 0;
    for (int t = 0; t < threads; t++) {
        apply_job j = {data, is_signed, unit_len, units * t / threads,
                       units * (t + 1) / threads, luts, per_slice, base, len, out};
        jobs[t] = j;
        if (t == threads - 1 || pthread_create(&tid[t], NULL, apply_thread, &jobs[t]) != 0) {
            if (t != threads - 1)
                rc = -1;
            break;
        }
        started++;
    }
    if (rc == 0)
        apply_range(&jobs[threads - 1]);
    for (int t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
    free(jobs);
    free(tid);
    return rc;
}
