// SPDX-License-Identifier: MIT
/*
 * histogram.c: dh_hist_compute, the public histogram of section 4: checks the parameters, turns
 * the requested bins and range into one dh_bin_map (kernels/hist.h) that the CPU twin and the
 * CUDA kernels both read, runs the chosen device, and lays the result out for the caller.
 *
 * How a value becomes a bin, exactly:
 * - Stored units, integer range ends inside int32: the integer affine map, exact by construction.
 * - Default range in modality units: the ideal range of one |slope|-wide step per stored value
 *   (see range_default), binned through the stored value itself, so bin i holds exactly the
 *   stored values whose ideal position is in it; no rounded edge can move a value.
 * - Any other range (modality units, fractional ends): a table over all 65536 possible stored
 *   values, each binned with v = slope * s + intercept and bin = floor((v - lo) * bins /
 *   (hi - lo)) evaluated in exact rational arithmetic on the double values of slope, intercept,
 *   lo and hi (128-bit integers after aligning their binary exponents). When those four numbers
 *   differ by more than about 2^36 in magnitude (e.g. a range end of 1e-30 beside 4095; never
 *   for real rescales and ranges) the same formula is evaluated in IEEE double as written.
 * The table is evaluated once on the host and both devices use it, so CPU and GPU agree.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "hist.h"
#include "modality.h"
#include "volume.h"
#ifdef DH_HAVE_CUDA
#include "hist_cuda.h"
#endif

/* Size of the exact path's terms in units of the smallest binary exponent: each term below
 * 2^106, the sum of three below 2^108, times bins <= 2^16 (and k * D likewise): below 2^125, in
 * a signed 128-bit integer. */
#define RATIONAL_MAX_BITS 106

void dh_hist_params_init(dh_hist_params *params)
{
    if (!params)
        return;
    memset(params, 0, sizeof *params);
    params->struct_size = sizeof *params;
    params->units = DH_UNITS_STORED;
    params->device = DH_DEVICE_AUTO;
}

/* The stored values a volume's BitsStored can represent: [lo, hi). */
static void representable(const dh_volume *v, int64_t *lo, int64_t *hi)
{
    int64_t span = (int64_t)1 << v->format.bits_stored;
    *lo = v->format.is_signed ? -span / 2 : 0;
    *hi = *lo + span;
}

static int is_integer(double x)
{
    return x == floor(x) && fabs(x) < 9007199254740992.0; /* 2^53: exact in double */
}

#ifdef __SIZEOF_INT128__
typedef __int128 wide;

/* x = m * 2^e with m an odd integer (or 0, e 0). */
static void split_double(double x, int64_t *m, int *e)
{
    if (x == 0) {
        *m = 0, *e = 0;
        return;
    }
    int exp;
    double frac = frexp(x, &exp); /* x = frac * 2^exp, 0.5 <= |frac| < 1 */
    int64_t mant = (int64_t)ldexp(frac, 53);
    exp -= 53;
    while ((mant & 1) == 0) {
        mant /= 2;
        exp++;
    }
    *m = mant, *e = exp;
}

/* Fills table[i] with the slot of stored value base + i, exactly (see the file comment).
 * Returns 0, or -1 when the exponents spread too far for 128-bit integers. */
static int table_exact(uint32_t *table, int32_t base, uint32_t bins, double slope,
                       double intercept, double lo, double hi)
{
    int64_t m[4];
    int e[4];
    double x[4] = {slope, intercept, lo, hi};
    int emin = 0, any = 0;
    for (int i = 0; i < 4; i++) {
        split_double(x[i], &m[i], &e[i]);
        if (m[i] != 0 && (!any || e[i] < emin))
            emin = e[i], any = 1;
    }
    wide term[4];
    for (int i = 0; i < 4; i++) {
        if (m[i] == 0) {
            term[i] = 0;
            continue;
        }
        /* Bits of |term|, with 17 more for the slope's factor s (|s| <= 65536). */
        int bits = e[i] - emin + (i == 0 ? 17 : 0);
        for (uint64_t a = (uint64_t)(m[i] < 0 ? -m[i] : m[i]); a; a >>= 1)
            bits++;
        if (bits > RATIONAL_MAX_BITS)
            return -1;
        term[i] = (wide)m[i] * ((wide)1 << (e[i] - emin));
    }
    /* In units of 2^emin: N(s) = (slope * s + intercept - lo) * bins, D = hi - lo; then
     * underflow when N < 0, overflow when N >= bins * D, else bin floor(N / D). */
    const wide d = term[3] - term[2];
    const wide bd = d * bins;
    const wide step = term[0] * bins;
    wide n = (term[0] * base + term[1] - term[2]) * bins;
    /* N is monotone in s, so the bin follows it with a running multiple of D. */
    uint32_t k = 0;
    wide kd = 0;
    for (uint32_t i = 0; i < 65536; i++, n += step) {
        if (n < 0) {
            table[i] = bins;
        } else if (n >= bd) {
            table[i] = bins + 1;
        } else {
            while (kd > n)
                k--, kd -= d;
            while (kd + d <= n)
                k++, kd += d;
            table[i] = k;
        }
    }
    return 0;
}
#else
static int table_exact(uint32_t *table, int32_t base, uint32_t bins, double slope,
                       double intercept, double lo, double hi)
{
    (void)table, (void)base, (void)bins, (void)slope, (void)intercept, (void)lo, (void)hi;
    return -1;
}
#endif

/* The documented fallback: the formula in IEEE double as written. */
static void table_double(uint32_t *table, int32_t base, uint32_t bins, double slope,
                         double intercept, double lo, double hi)
{
    for (uint32_t i = 0; i < 65536; i++) {
        double v = slope * (double)((int32_t)i + base) + intercept;
        if (v < lo) {
            table[i] = bins;
        } else if (v >= hi) {
            table[i] = bins + 1;
        } else {
            double t = floor((v - lo) * bins / (hi - lo));
            table[i] = t >= bins ? bins - 1 : t < 0 ? 0 : (uint32_t)t;
        }
    }
}

/* The default range: the representable stored values in stored units; in modality units the
 * ideal image of that range, one |slope|-wide step per stored value:
 * [m(first), m(last) + |slope|) with first/last the representable values in modality order;
 * with a Modality LUT, [smallest, largest + 1) of the entries those stored values reach. */
static void range_default(const dh_volume *v, dh_units units, double *lo, double *hi)
{
    int64_t slo, shi;
    representable(v, &slo, &shi);
    if (units == DH_UNITS_STORED) {
        *lo = (double)slo, *hi = (double)shi;
        return;
    }
    if (v->has_modality_lut) { /* one bin per integer the LUT can give */
        int32_t a, b;
        dh_modality_lut_span(v, &a, &b);
        *lo = a, *hi = (double)b + 1;
        return;
    }
    double a = v->format.rescale_slope, b = v->format.rescale_intercept;
    if (a > 0)
        *lo = a * (double)slo + b, *hi = a * (double)shi + b;
    else
        *lo = a * (double)(shi - 1) + b, *hi = a * (double)(slo - 1) + b;
}

/* Modality units through a Modality LUT: its outputs are integers 0..65535, so each is binned
 * once, exactly, by the same rational arithmetic as a rescale (slope 1, intercept 0), and every
 * stored value takes the slot of its entry. A host-built table like the others: the GPU reads
 * it as it is. */
static dh_status build_lut_map(dh_ctx *ctx, const dh_volume *v, uint32_t bins, double lo,
                               double hi, dh_bin_map *map, uint32_t **table)
{
    const int32_t base = v->format.is_signed ? -32768 : 0;
    uint32_t *by_output = malloc(65536 * sizeof *by_output);
    uint32_t *t = malloc(65536 * sizeof *t);
    if (!by_output || !t) {
        free(by_output), free(t);
        return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "out of memory for a bin table");
    }
    if (table_exact(by_output, 0, bins, 1, 0, lo, hi) != 0)
        table_double(by_output, 0, bins, 1, 0, lo, hi);
    for (uint32_t i = 0; i < 65536; i++)
        t[i] = by_output[dh_modality_lut_entry(v, (int32_t)i + base)];
    free(by_output);
    *map = (dh_bin_map){.bins = bins, .lut = t, .lut_base = base, .lut_len = 65536, .shift = -1};
    *table = t;
    return DH_OK;
}

/* Builds the map; *table receives the lut to free (or NULL). */
static dh_status build_map(dh_ctx *ctx, const dh_volume *v, uint32_t bins, int has_range,
                           double lo, double hi, dh_units units, dh_bin_map *map,
                           uint32_t **table)
{
    *table = NULL;
    int64_t slo, shi;
    representable(v, &slo, &shi);
    double slope = v->format.rescale_slope, intercept = v->format.rescale_intercept;
    int32_t base = v->format.is_signed ? -32768 : 0;

    if (units == DH_UNITS_MODALITY && v->has_modality_lut)
        return build_lut_map(ctx, v, bins, lo, hi, map, table);
    if (units == DH_UNITS_MODALITY && !has_range && slope < 0) {
        /* Reversed ideal range: stored s sits at step shi - 1 - s. */
        uint32_t *t = malloc(65536 * sizeof *t);
        if (!t)
            return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "out of memory for a bin table");
        uint64_t span = (uint64_t)(shi - slo);
        for (uint32_t i = 0; i < 65536; i++) {
            int64_t s = (int64_t)i + base;
            if (s >= shi)
                t[i] = bins; /* above the representable range: below lo in modality order */
            else if (s < slo)
                t[i] = bins + 1;
            else
                t[i] = (uint32_t)((uint64_t)(shi - 1 - s) * bins / span);
        }
        *map = (dh_bin_map){.bins = bins, .lut = t, .lut_base = base, .lut_len = 65536,
                            .shift = -1};
        *table = t;
        return DH_OK;
    }
    if (units == DH_UNITS_MODALITY && !has_range) {
        dh_bin_map_init_affine(map, bins, slo, shi); /* positive slope: same order as stored */
        return DH_OK;
    }

    /* An integer range in stored units (directly, or through slope 1 and integer intercept). */
    double slo_d = lo, shi_d = hi;
    int integer = is_integer(lo) && is_integer(hi);
    if (units == DH_UNITS_MODALITY) {
        integer = integer && slope == 1 && is_integer(intercept);
        slo_d = lo - intercept, shi_d = hi - intercept;
    }
    if (integer && slo_d >= INT32_MIN && shi_d <= INT32_MAX) {
        dh_bin_map_init_affine(map, bins, (int64_t)slo_d, (int64_t)shi_d);
        return DH_OK;
    }

    uint32_t *t = malloc(65536 * sizeof *t);
    if (!t)
        return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "out of memory for a bin table");
    double a = units == DH_UNITS_MODALITY ? slope : 1, b = units == DH_UNITS_MODALITY ? intercept : 0;
    if (table_exact(t, base, bins, a, b, lo, hi) != 0)
        table_double(t, base, bins, a, b, lo, hi);
    *map = (dh_bin_map){.bins = bins, .lut = t, .lut_base = base, .lut_len = 65536, .shift = -1};
    *table = t;
    return DH_OK;
}

static dh_status check_params(dh_ctx *ctx, const dh_volume *v, const dh_hist_params *p)
{
    if (p->struct_size != sizeof(dh_hist_params))
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "histogram parameters: struct_size is %u, expected %zu (initialize "
                           "them with dh_hist_params_init)",
                           p->struct_size, sizeof(dh_hist_params));
    if (p->bins > DH_HIST_MAX_BINS)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "histogram parameters: bins must be 1..65536 (0 for the default), "
                           "not %u",
                           p->bins);
    if (p->units != DH_UNITS_STORED && p->units != DH_UNITS_MODALITY)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "histogram parameters: units must be stored or modality, not %d",
                           (int)p->units);
    if (p->device != DH_DEVICE_AUTO && p->device != DH_DEVICE_CPU && p->device != DH_DEVICE_CUDA)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "histogram parameters: device must be auto, cpu or cuda, not %d",
                           (int)p->device);
    if (p->has_range) {
        if (!isfinite(p->lo) || !isfinite(p->hi))
            return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                               "histogram parameters: range ends must be finite, not [%g, %g)",
                               p->lo, p->hi);
        if (!(p->lo < p->hi))
            return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                               "histogram parameters: range [%g, %g) is empty: lo must be "
                               "below hi",
                               p->lo, p->hi);
    }
    if (p->units == DH_UNITS_MODALITY && !v->has_modality_lut &&
        (!isfinite(v->format.rescale_slope) || v->format.rescale_slope == 0 ||
         !isfinite(v->format.rescale_intercept)))
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "%s: rescale slope %g and intercept %g give no modality units",
                           v->path[0] ? v->path : "volume", v->format.rescale_slope,
                           v->format.rescale_intercept);
    return DH_OK;
}

/* Runs the map over the volume on the chosen device into raw ((bins + 2) slots per histogram). */
static dh_status run_device(dh_ctx *ctx, const dh_volume *v, dh_device device, int per_slice,
                            const dh_bin_map *map, uint64_t *raw, dh_device *used)
{
    size_t slice_len = (size_t)v->format.rows * v->format.columns;
    int use_cuda;
    dh_status st = dh_ctx_use_cuda(ctx, device, "histogram", &use_cuda);
    if (st != DH_OK)
        return st;
#ifdef DH_HAVE_CUDA
    if (use_cuda) {
        /* The context's GPU resources (streams, pinned staging) are reused between calls; with
         * no context (or no memory for one) a per-call state does the same work. */
        char msg[512] = "";
        struct dh_cuda_state *state = dh_ctx_cuda(ctx);
        const int rc =
            state ? dh_hist_cuda_host_state(state, v->data, v->format.is_signed, slice_len,
                                            v->slices, per_slice, map, raw, msg, sizeof msg)
                  : dh_hist_cuda_host(v->data, v->format.is_signed, slice_len, v->slices, per_slice,
                                      map, raw, msg, sizeof msg);
        if (rc != 0)
            return dh_ctx_fail(ctx, DH_ERR_CUDA, "%s: CUDA histogram failed: %s",
                               v->path[0] ? v->path : "volume", msg);
        *used = DH_DEVICE_CUDA;
        return DH_OK;
    }
#endif
    if (dh_hist_cpu(v->data, v->format.is_signed, slice_len, v->slices, per_slice, map,
                    ctx ? ctx->threads : 0, raw) != 0)
        return dh_ctx_fail(ctx, DH_ERR_NO_MEMORY,
                           "%s: CPU histogram: out of memory or no thread could start",
                           v->path[0] ? v->path : "volume");
    *used = DH_DEVICE_CPU;
    return DH_OK;
}

void dh_histogram_free(dh_histogram *h)
{
    if (!h)
        return;
    free(h->counts);
    free(h->slice_counts);
    free(h->slice_total);
    free(h->slice_underflow);
    free(h->slice_overflow);
    free(h);
}

/* Splits the per-slice raw output (bins + 2 slots per slice) into the public layout in place:
 * the under/overflow slots move to their own arrays and the rows close up (each row moves to a
 * lower address, so memmove row by row is safe); the whole-volume histogram is their sum. */
static int lay_out_per_slice(dh_histogram *h, uint64_t *raw)
{
    const uint32_t bins = h->bins, n = h->slices;
    const size_t slots = (size_t)bins + 2;
    h->slice_total = malloc(n * sizeof(uint64_t));
    h->slice_underflow = malloc(n * sizeof(uint64_t));
    h->slice_overflow = malloc(n * sizeof(uint64_t));
    if (!h->slice_total || !h->slice_underflow || !h->slice_overflow)
        return -1;
    for (uint32_t s = 0; s < n; s++) {
        uint64_t *row = raw + s * slots, total = row[bins] + row[bins + 1];
        for (uint32_t b = 0; b < bins; b++) {
            h->counts[b] += row[b];
            total += row[b];
        }
        h->slice_underflow[s] = row[bins];
        h->slice_overflow[s] = row[bins + 1];
        h->slice_total[s] = total;
        h->underflow += row[bins];
        h->overflow += row[bins + 1];
        h->total += total;
        memmove(raw + (size_t)s * bins, row, bins * sizeof *raw);
    }
    uint64_t *shrunk = realloc(raw, (size_t)n * bins * sizeof *raw);
    h->slice_counts = shrunk ? shrunk : raw;
    return 0;
}

dh_status dh_hist_compute(dh_ctx *ctx, const dh_volume *v, const dh_hist_params *params,
                          dh_histogram **out)
{
    if (!out)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "dh_hist_compute: out is NULL");
    *out = NULL;
    if (!v)
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT, "dh_hist_compute: volume is NULL");
    if (!v->data) /* a dh_device_volume's: its samples are on the GPU */
        return dh_ctx_fail(ctx, DH_ERR_INVALID_ARGUMENT,
                           "dh_hist_compute: %s has its samples on the GPU "
                           "(dh_device_volume_download, or dh_hist_compute_device)", v->path);
    dh_hist_params defaults;
    dh_hist_params_init(&defaults);
    const dh_hist_params *p = params ? params : &defaults;
    dh_status st = check_params(ctx, v, p);
    if (st != DH_OK)
        return st;

    double lo = p->lo, hi = p->hi;
    if (!p->has_range)
        range_default(v, p->units, &lo, &hi);
    uint32_t bins = p->bins ? p->bins : (uint32_t)1 << v->format.bits_stored;
    if (!p->bins && !p->has_range && p->units == DH_UNITS_MODALITY && v->has_modality_lut)
        bins = (uint32_t)(hi - lo); /* one per possible output: at most 65536 */

    dh_bin_map map;
    uint32_t *table = NULL;
    if ((st = build_map(ctx, v, bins, p->has_range, lo, hi, p->units, &map, &table)) != DH_OK)
        return st;

    const int per_slice = p->per_slice != 0;
    const size_t slots = (size_t)bins + 2, hists = per_slice ? v->slices : 1;
    dh_histogram *h = calloc(1, sizeof *h);
    uint64_t *raw = malloc(hists * slots * sizeof *raw);
    if (h)
        h->counts = calloc(bins, sizeof *h->counts);
    if (!h || !raw || !h->counts) {
        st = dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "%s: out of memory for %zu histogram(s) of %u bins",
                         v->path[0] ? v->path : "volume", hists, bins);
        goto fail;
    }
    h->bins = bins;
    h->lo = lo, h->hi = hi;
    h->units = p->units;
    if ((st = run_device(ctx, v, p->device, per_slice, &map, raw, &h->device_used)) != DH_OK)
        goto fail;

    if (per_slice) {
        h->slices = v->slices;
        if (lay_out_per_slice(h, raw) != 0) {
            st = dh_ctx_fail(ctx, DH_ERR_NO_MEMORY, "out of memory for per-slice totals");
            goto fail;
        }
        raw = NULL; /* now h->slice_counts */
    } else {
        memcpy(h->counts, raw, bins * sizeof *raw);
        h->underflow = raw[bins];
        h->overflow = raw[bins + 1];
        h->total = dh_volume_sample_count(v);
        free(raw);
        raw = NULL;
    }
    free(table);
    dh_ctx_clear(ctx);
    *out = h;
    return DH_OK;

fail:
    if (h && raw == h->slice_counts)
        raw = NULL;
    free(raw);
    free(table);
    dh_histogram_free(h);
    return st;
}

double dh_histogram_edge(const dh_histogram *h, uint32_t i)
{
    if (i >= h->bins)
        return h->hi;
    return h->lo + (h->hi - h->lo) * ((double)i / h->bins);
}
