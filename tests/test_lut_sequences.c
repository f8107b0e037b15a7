// SPDX-License-Identifier: MIT
/*
 * test_lut_sequences.c: the Modality LUT Sequence, from the file to every use of modality values,
 * against naive loops written here from PS3.3 C.11.1: LUTDescriptor rules (entries with 0
 * meaning 65536, first mapped value signed with signed pixels, 8 to 16 bits per entry, 8-bit
 * entries one or two per word), lying descriptors refused, then on random LUTs (monotone or
 * folding, clamping below and above the mapped range) the modality values and range, histograms
 * in modality units (default and explicit ranges, per slice, the GPU too where there is one),
 * window/level on LUT outputs, percentile windows ranked by modality value, and equalization
 * windows given in modality units. Then the VOI LUT Sequence as the file's window: its table as
 * the window/level function (scaled to the output bits), its input range as the equalization
 * window, which of several items was used, and its first mapped value's sign rule.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dicom_bytes.h"
#include "dicomhist.h"
#include "test_support.h"
#include "volume.h" /* to give a test volume a LUT, as a file would */

/* ---- a LUT described field by field, and its naive application ---- */

typedef struct test_lut {
    uint32_t entries; /* 1..65536 */
    int32_t first;
    uint32_t bits;
    uint16_t *data;
} test_lut;

static uint16_t naive_lut(const test_lut *l, int32_t s)
{
    if (s < l->first)
        return l->data[0];
    if ((int64_t)s - l->first >= (int64_t)l->entries)
        return l->data[l->entries - 1];
    return l->data[s - l->first];
}

static int compare_u16(const void *a, const void *b)
{
    return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

/* A random LUT for stored values of `bits_stored` bits: its mapped range starts below, inside
 * or above the representable range so that clamping happens on either side; monotone when
 * asked (sorted entries), else random. */
static test_lut random_lut(dh_test_rng *rng, uint32_t bits_stored, int is_signed, int monotone)
{
    static const uint32_t sizes[] = {1, 2, 17, 300, 1000, 4096, 65536};
    test_lut l;
    l.entries = sizes[dh_test_rng_below(rng, 7)];
    l.bits = 8 + dh_test_rng_below(rng, 9);
    const int32_t span = 1 << bits_stored, lo = is_signed ? -span / 2 : 0;
    l.first = lo - span / 4 + (int32_t)dh_test_rng_below(rng, (uint32_t)span);
    if (!is_signed && l.first < 0)
        l.first = 0; /* an unsigned descriptor cannot say less */
    if (is_signed && l.first < -32768)
        l.first = -32768;
    l.data = malloc(l.entries * sizeof *l.data);
    for (uint32_t i = 0; i < l.entries; i++)
        l.data[i] = (uint16_t)dh_test_rng_below(rng, 1u << l.bits);
    if (monotone)
        qsort(l.data, l.entries, sizeof *l.data, compare_u16);
    return l;
}

static void attach(dh_volume *v, const test_lut *l)
{
    v->has_modality_lut = 1;
    v->modality_lut_first = l->first;
    v->modality_lut_entries = l->entries;
    v->modality_lut_bits = l->bits;
    v->modality_lut = malloc(l->entries * sizeof *v->modality_lut);
    memcpy(v->modality_lut, l->data, l->entries * sizeof *l->data);
    dh_volume_update_range(v); /* modality range from the new table */
}

static int32_t sample_of(const dh_volume *v, size_t i)
{
    return dh_volume_is_signed(v) ? ((const int16_t *)dh_volume_data(v))[i]
                                  : ((const uint16_t *)dh_volume_data(v))[i];
}

static dh_volume *random_volume(dh_ctx *ctx, dh_test_rng *rng, uint32_t rows, uint32_t cols,
                                uint32_t slices, uint32_t bits, int is_signed)
{
    size_t n = (size_t)rows * cols * slices;
    uint16_t *d = malloc(n * sizeof *d);
    for (size_t i = 0; i < n; i++) {
        uint32_t u = dh_test_rng_below(rng, 1u << bits);
        d[i] = is_signed ? (uint16_t)(int16_t)((int32_t)u - (1 << (bits - 1))) : (uint16_t)u;
    }
    dh_volume *v = NULL;
    ck_assert_int_eq(dh_volume_from_samples(ctx, rows, cols, slices, bits, is_signed, d, &v),
                     DH_OK);
    free(d);
    return v;
}

/* ---- the DICOM layer: descriptors and data as files write them ---- */

/* What the sequence written by lut_sequence holds. */
typedef struct lut_seq {
    const char *descriptor_vr; /* "US" or "SS" */
    uint16_t descriptor[3];
    int descriptor_values; /* how many of them are written */
    const uint16_t *words;  /* LUTData words (NULL: none) */
    size_t word_count;
    int items; /* 0: an empty sequence */
    uint16_t element; /* 0x3000 Modality LUT (the default), 0x3010 VOI LUT */
    const char *explanations[3]; /* LUTExplanation of each item (NULL: none) */
} lut_seq;
static lut_seq seq;

static void lut_sequence(buf *b)
{
    sq_begin(b, 0x0028, seq.element ? seq.element : 0x3000);
    for (int i = 0; i < seq.items; i++) { /* every item the same table but its explanation */
        item_begin(b);
        el_bytes(b, 0x0028, 0x3002, seq.descriptor_vr, seq.descriptor,
                 2 * (size_t)seq.descriptor_values);
        if (seq.explanations[i])
            el_str(b, 0x0028, 0x3003, "LO", seq.explanations[i]);
        if (seq.words)
            el_bytes(b, 0x0028, 0x3006, seq.word_count > 30000 ? "OW" : "US", seq.words,
                     2 * seq.word_count);
        item_end(b);
    }
    sq_end(b);
}

static buf lut_file(uint16_t bits_stored, int is_signed, const uint16_t *pixels, size_t n,
                    const char *intercept)
{
    synth s = synth_default(1, (uint16_t)n, 16, bits_stored, bits_stored - 1,
                            (uint16_t)is_signed);
    s.intercept = intercept;
    s.groups = lut_sequence;
    s.data = pixels;
    s.bytes = n * 2;
    return synth_build(&s);
}

/* Random LUTs written as files, read back through the public API: every stored value maps as
 * the naive loop says, and the volume's table and range agree. */
START_TEST(file_descriptor_rules)
{
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 1001);
    dh_ctx *ctx = dh_ctx_create();
    for (int round = 0; round < 40; round++) {
        const int is_signed = round % 2;
        const uint16_t bits_stored = round % 4 < 2 ? 12 : 16;
        test_lut l = random_lut(&rng, bits_stored, is_signed, round % 3 == 0);
        if (round % 5 == 1) { /* 8-bit entries */
            l.bits = 8;
            for (uint32_t i = 0; i < l.entries; i++)
                l.data[i] &= 0xff;
        }
        /* 8-bit entries packed two per word (low byte first) in some rounds. */
        const int packed = l.bits == 8 && round % 10 == 1 && l.entries > 1;
        size_t words = packed ? (l.entries + 1) / 2 : l.entries;
        uint16_t *w = calloc(words, sizeof *w);
        for (uint32_t i = 0; i < l.entries; i++) {
            if (packed)
                w[i / 2] |= (uint16_t)(l.data[i] << (i % 2 ? 8 : 0));
            else /* unused high bits set: the reader masks them */
                w[i] = (uint16_t)(l.data[i] | (l.bits < 16 ? 0xffffu << l.bits : 0));
        }
        seq = (lut_seq){round % 3 == 1 ? "SS" : "US",
                            {(uint16_t)(l.entries == 65536 ? 0 : l.entries), (uint16_t)l.first,
                             (uint16_t)l.bits},
                            3, w, words, 1, 0x3000, {NULL, NULL, NULL}};
        /* every representable stored value once, spread over a few pixels */
        const size_t n = 4099;
        uint16_t *px = malloc(n * 2);
        const int32_t lo = is_signed ? -(1 << (bits_stored - 1)) : 0;
        for (size_t i = 0; i < n; i++) {
            int32_t s = i < 2 ? (i ? lo + (1 << bits_stored) - 1 : lo)
                              : lo + (int32_t)dh_test_rng_below(&rng, 1u << bits_stored);
            px[i] = (uint16_t)s;
        }
        buf b = lut_file(bits_stored, is_signed, px, n, NULL);
        dh_volume *v = NULL;
        ck_assert_msg(dh_volume_read_memory(ctx, b.p, b.n, "lut.dcm", &v) == DH_OK, "%s",
                      dh_ctx_error(ctx));
        int32_t first;
        uint32_t entries, bits;
        const uint16_t *data;
        ck_assert_int_eq(dh_volume_modality_lut(v, &first, &entries, &bits, &data), 1);
        ck_assert_int_eq(first, l.first);
        ck_assert_uint_eq(entries, l.entries);
        ck_assert_uint_eq(bits, l.bits);
        ck_assert(memcmp(data, l.data, l.entries * 2) == 0);
        uint16_t mmin = UINT16_MAX, mmax = 0;
        for (size_t i = 0; i < n; i++) {
            int32_t s = sample_of(v, i);
            uint16_t m = naive_lut(&l, s);
            ck_assert_msg(dh_volume_modality_value(v, s) == m, "round %d stored %d", round, s);
            mmin = m < mmin ? m : mmin;
            mmax = m > mmax ? m : mmax;
        }
        double a, z;
        dh_volume_modality_range(v, &a, &z);
        ck_assert(a == mmin && z == mmax);
        ck_assert_uint_eq(dh_volume_warning_count(v), 0);
        dh_volume_free(v);
        free(b.p), free(px), free(w), free(l.data);
    }
    dh_ctx_free(ctx);
}
END_TEST

/* Descriptors that lie about their data, and sequences missing their parts: refused as
 * malformed, naming the problem, never read past the data. */
START_TEST(file_lying_descriptors)
{
    dh_ctx *ctx = dh_ctx_create();
    uint16_t words[16];
    for (int i = 0; i < 16; i++)
        words[i] = (uint16_t)(i * 100);
    uint16_t px[4] = {0, 1, 2, 3};
    static const struct {
        uint16_t d0, d1, d2;
        int values, have_data, items;
        size_t words;
        const char *says;
    } cases[] = {
        {17, 0, 16, 3, 1, 1, 16, "LUTDescriptor says 17 entries"}, /* one more than the data */
        {0, 0, 16, 3, 1, 1, 16, "LUTDescriptor says 65536 entries"}, /* 0 = 65536 */
        {16, 0, 16, 3, 1, 1, 15, "LUTDescriptor says 16 entries"},
        {31, 0, 8, 3, 1, 1, 15, "LUTDescriptor says 31 entries"}, /* packed needs 16 words */
        {16, 0, 20, 3, 1, 1, 16, "20 bits per entry"},
        {16, 0, 4, 3, 1, 1, 16, "4 bits per entry"},
        {16, 0, 16, 2, 1, 1, 16, "three 16-bit values"},
        {16, 0, 16, 3, 0, 1, 16, "without LUTData"},
        {16, 0, 16, 3, 1, 0, 16, "has no item"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        seq = (lut_seq){"US", {cases[k].d0, cases[k].d1, cases[k].d2}, cases[k].values,
                            cases[k].have_data ? words : NULL, cases[k].words, cases[k].items,
                            k % 2 ? 0x3010 : 0x3000, {NULL, NULL, NULL}};
        buf b = lut_file(12, 0, px, 4, NULL);
        dh_volume *v = NULL;
        ck_assert_int_eq(dh_volume_read_memory(ctx, b.p, b.n, "lying.dcm", &v),
                         DH_ERR_MALFORMED);
        ck_assert_ptr_null(v);
        ck_assert_msg(strstr(dh_ctx_error(ctx), cases[k].says) != NULL, "case %zu: %s", k,
                      dh_ctx_error(ctx));
        ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "lying.dcm"));
        free(b.p);
    }
    dh_ctx_free(ctx);
}
END_TEST

/* ---- modality values in use: histograms ---- */

/* bin = floor((v - lo) * bins / (hi - lo)) for integer v and quarter-integer ends, in exact
 * integers (everything times 4). */
static void naive_hist(const dh_volume *v, const test_lut *l, uint32_t bins, double lo,
                       double hi, size_t from, size_t count, uint64_t *c, uint64_t *under,
                       uint64_t *over)
{
    memset(c, 0, bins * sizeof *c);
    *under = *over = 0;
    const int64_t lo4 = (int64_t)(lo * 4), hi4 = (int64_t)(hi * 4);
    for (size_t i = from; i < from + count; i++) {
        int64_t x4 = 4 * (int64_t)naive_lut(l, sample_of(v, i));
        if (x4 < lo4)
            (*under)++;
        else if (x4 >= hi4)
            (*over)++;
        else
            c[(x4 - lo4) * bins / (hi4 - lo4)]++;
    }
}

static void assert_hist(const dh_histogram *h, const uint64_t *c, uint64_t u, uint64_t o)
{
    for (uint32_t b = 0; b < h->bins; b++)
        ck_assert_msg(h->counts[b] == c[b], "bin %u: %llu, expected %llu", b,
                      (unsigned long long)h->counts[b], (unsigned long long)c[b]);
    ck_assert_uint_eq(h->underflow, u);
    ck_assert_uint_eq(h->overflow, o);
}

START_TEST(histograms_in_modality_units)
{
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 2002);
    dh_ctx *ctx = dh_ctx_create();
    for (int round = 0; round < 24; round++) {
        const int is_signed = round % 2;
        const uint32_t bits_stored = round % 3 == 0 ? 16 : round % 3 == 1 ? 12 : 10;
        dh_volume *v = random_volume(ctx, &rng, 31, 29, 3, bits_stored, is_signed);
        test_lut l = random_lut(&rng, bits_stored, is_signed, round % 4 == 0);
        attach(v, &l);
        const size_t n = dh_volume_sample_count(v), slice = n / 3;

        /* The default: one bin per integer output the representable values reach. */
        int32_t slo = is_signed ? -(1 << (bits_stored - 1)) : 0;
        int32_t shi = slo + (1 << bits_stored) - 1;
        uint16_t olo = UINT16_MAX, ohi = 0;
        for (int32_t s = slo; s <= shi; s++) {
            uint16_t m = naive_lut(&l, s);
            olo = m < olo ? m : olo;
            ohi = m > ohi ? m : ohi;
        }
        dh_hist_params p;
        dh_hist_params_init(&p);
        p.units = DH_UNITS_MODALITY;
        p.device = DH_DEVICE_CPU;
        dh_histogram *h = NULL;
        ck_assert_int_eq(dh_hist_compute(ctx, v, &p, &h), DH_OK);
        ck_assert(h->lo == olo && h->hi == (double)ohi + 1);
        ck_assert_uint_eq(h->bins, (uint32_t)ohi + 1 - olo);
        uint64_t *c = malloc(65536 * sizeof *c), u, o;
        naive_hist(v, &l, h->bins, olo, (double)ohi + 1, 0, n, c, &u, &o);
        assert_hist(h, c, u, o);
        dh_histogram_free(h);

        /* Explicit ranges with fractional ends cutting the outputs, several bin counts, per
         * slice; the GPU must give the same counts where there is one. */
        static const uint32_t bins[] = {1, 7, 256, 4097, 65536};
        for (int k = 0; k < 5; k++) {
            double a = olo + (double)dh_test_rng_below(&rng, (uint32_t)(ohi - olo) * 4 + 1) / 4;
            double z = a + 0.25 + (double)dh_test_rng_below(&rng, 4 * 65536) / 4;
            p.has_range = 1, p.lo = a, p.hi = z, p.bins = bins[k], p.per_slice = 1;
            p.device = DH_DEVICE_CPU;
            ck_assert_int_eq(dh_hist_compute(ctx, v, &p, &h), DH_OK);
            naive_hist(v, &l, bins[k], a, z, 0, n, c, &u, &o);
            assert_hist(h, c, u, o);
            for (uint32_t z2 = 0; z2 < 3; z2++) {
                naive_hist(v, &l, bins[k], a, z, z2 * slice, slice, c, &u, &o);
                ck_assert(memcmp(h->slice_counts + (size_t)z2 * bins[k], c,
                                 bins[k] * sizeof *c) == 0);
                ck_assert_uint_eq(h->slice_underflow[z2], u);
                ck_assert_uint_eq(h->slice_overflow[z2], o);
            }
            if (dh_cuda_available()) {
                dh_histogram *g = NULL;
                p.device = DH_DEVICE_CUDA;
                ck_assert_int_eq(dh_hist_compute(ctx, v, &p, &g), DH_OK);
                ck_assert(memcmp(g->counts, h->counts, bins[k] * sizeof *c) == 0);
                ck_assert(memcmp(g->slice_counts, h->slice_counts,
                                 3 * (size_t)bins[k] * sizeof *c) == 0);
                dh_histogram_free(g);
            }
            dh_histogram_free(h);
        }
        free(c), free(l.data);
        dh_volume_free(v);
    }
    dh_ctx_free(ctx);
}
END_TEST

/* ---- modality values in use: windows ---- */

/* PS3.3 C.11.2.1.2.1 LINEAR, ymin 0, ymax levels - 1, truncated. */
static uint16_t naive_linear(double x, double c, double w, uint32_t levels)
{
    double ymax = levels - 1, y;
    if (x <= c - 0.5 - (w - 1) / 2)
        y = 0;
    else if (x > c - 0.5 + (w - 1) / 2)
        y = ymax;
    else
        y = ((x - (c - 0.5)) / (w - 1) + 0.5) * ymax;
    return y <= 0 ? 0 : y >= ymax ? (uint16_t)ymax : (uint16_t)floor(y);
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

START_TEST(windows_in_modality_units)
{
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 3003);
    dh_ctx *ctx = dh_ctx_create();
    for (int round = 0; round < 16; round++) {
        const int is_signed = round % 2, monotone = round % 4 < 2;
        const uint32_t bits_stored = 12;
        dh_volume *v = random_volume(ctx, &rng, 23, 19, 2, bits_stored, is_signed);
        test_lut l = random_lut(&rng, bits_stored, is_signed, monotone);
        attach(v, &l);
        const size_t n = dh_volume_sample_count(v);
        double *m = malloc(n * sizeof *m);
        for (size_t i = 0; i < n; i++)
            m[i] = naive_lut(&l, sample_of(v, i));

        /* Window/level, center/width in LUT outputs. */
        dh_equalize_params p;
        dh_equalize_params_init(&p);
        p.device = DH_DEVICE_CPU;
        p.operation = DH_EQ_WINDOW_LEVEL;
        p.window = DH_WINDOW_CENTER_WIDTH;
        p.center = 1 + dh_test_rng_below(&rng, 1u << l.bits);
        p.width = 1 + dh_test_rng_below(&rng, 1u << l.bits);
        p.output_bits = 8;
        dh_equalized *r = NULL;
        ck_assert_msg(dh_equalize(ctx, v, &p, &r) == DH_OK, "%s", dh_ctx_error(ctx));
        for (size_t i = 0; i < n; i++)
            ck_assert_uint_eq(r->data[i], naive_linear(m[i], p.center, p.width, 256));
        dh_equalized_free(r);

        /* Percentile windows rank pixels by modality value, whatever the LUT's shape. */
        double *sorted = malloc(n * sizeof *sorted);
        memcpy(sorted, m, n * sizeof *m);
        qsort(sorted, n, sizeof *sorted, compare_double);
        p.window = DH_WINDOW_PERCENTILE;
        p.percentile = round % 3 == 0 ? 0 : 2.5 * (round % 5);
        size_t k = (size_t)floor((double)n * p.percentile / 100);
        ck_assert_int_eq(dh_equalize(ctx, v, &p, &r), DH_OK);
        ck_assert_msg(r->window_lo[0] == sorted[k] && r->window_hi[0] == sorted[n - 1 - k],
                      "round %d: window %g..%g, expected %g..%g", round, r->window_lo[0],
                      r->window_hi[0], sorted[k], sorted[n - 1 - k]);
        double lo = sorted[k], hi = sorted[n - 1 - k];
        double c = (lo + hi + 1) / 2, w = hi - lo + 1;
        for (size_t i = 0; i < n; i++)
            ck_assert_uint_eq(r->data[i], naive_linear(m[i], c, w, 256));
        dh_equalized_free(r);

        /* Equalization inside a modality window: the stored values whose output lies in it,
         * which for a non-decreasing LUT is an interval; a folding LUT is refused. */
        p.operation = DH_EQ_EQUALIZE;
        p.window = DH_WINDOW_RANGE;
        p.lo = sorted[n / 4];
        p.hi = sorted[3 * n / 4];
        dh_status st = dh_equalize(ctx, v, &p, &r);
        int32_t slo = is_signed ? -2048 : 0;
        int non_decreasing = 1;
        for (int32_t s = slo + 1; s < slo + 4096; s++)
            non_decreasing &= naive_lut(&l, s) >= naive_lut(&l, s - 1);
        if (!non_decreasing) {
            ck_assert_int_eq(st, DH_ERR_UNSUPPORTED);
            ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "Modality LUT"));
        } else {
            ck_assert_int_eq(st, DH_OK);
            int32_t a = slo + 4096, z = slo - 1;
            for (int32_t s = slo; s < slo + 4096; s++)
                if (naive_lut(&l, s) >= p.lo && naive_lut(&l, s) <= p.hi) {
                    a = s < a ? s : a;
                    z = s > z ? s : z;
                }
            /* The same image without its LUT, equalized over that stored window. */
            dh_volume *plain = NULL;
            ck_assert_int_eq(dh_volume_from_samples(ctx, 23, 19, 2, 12, is_signed,
                                                    dh_volume_data(v), &plain),
                             DH_OK);
            dh_equalize_params q = p;
            q.lo = a, q.hi = z;
            dh_equalized *e = NULL;
            ck_assert_int_eq(dh_equalize(ctx, plain, &q, &e), DH_OK);
            ck_assert(memcmp(e->data, r->data, n * sizeof *r->data) == 0);
            dh_equalized_free(e);
            dh_equalized_free(r);
            dh_volume_free(plain);
        }
        free(sorted), free(m), free(l.data);
        dh_volume_free(v);
    }
    dh_ctx_free(ctx);
}
END_TEST

/* ---- the VOI LUT Sequence as the file's window ---- */

/* A file whose modality values (stored - 1024) go negative, with a VOI LUT Sequence of two items
 * whose first maps from `first`: window/level through the table, scaled to the output bits, and
 * equalization over its input range, each against the naive loop; the description says which
 * item was used. */
START_TEST(voi_lut_as_the_file_window)
{
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 4004);
    dh_ctx *ctx = dh_ctx_create();
    for (int round = 0; round < 12; round++) {
        const int explicit_ss = round % 2;
        test_lut l = random_lut(&rng, 12, 1, round % 3 == 0);
        l.first -= 1024 - 2048; /* over the modality values -1024 .. 3071, shifted at random */
        if (l.first < -32768)
            l.first = -32768;
        seq = (lut_seq){explicit_ss ? "SS" : "US",
                        {(uint16_t)(l.entries == 65536 ? 0 : l.entries), (uint16_t)l.first,
                         (uint16_t)l.bits},
                        3, l.data, l.entries, 2, 0x3010, {"SOFT TISSUE", "BONE", NULL}};
        const size_t n = 3001;
        uint16_t *px = malloc(n * 2);
        for (size_t i = 0; i < n; i++)
            px[i] = (uint16_t)dh_test_rng_below(&rng, 4096);
        buf b = lut_file(12, 0, px, n, "-1024");
        dh_volume *v = NULL;
        ck_assert_msg(dh_volume_read_memory(ctx, b.p, b.n, "voi.dcm", &v) == DH_OK, "%s",
                      dh_ctx_error(ctx));
        uint32_t count, entries, bits;
        int32_t first;
        const uint16_t *data;
        ck_assert_int_eq(dh_volume_voi_lut(v, &count, &first, &entries, &bits, &data), 1);
        /* modality values can be negative here, so the first mapped value is signed whatever
         * its VR (PS3.3 C.11.2.1.1) */
        ck_assert_int_eq(first, l.first);
        ck_assert_uint_eq(count, 2);
        ck_assert_uint_eq(entries, l.entries);
        ck_assert(memcmp(data, l.data, l.entries * 2) == 0);

        static const uint32_t out_bits[] = {8, 12, 16};
        dh_equalize_params p;
        dh_equalize_params_init(&p);
        p.device = DH_DEVICE_CPU;
        p.operation = DH_EQ_WINDOW_LEVEL;
        p.window = DH_WINDOW_FILE;
        p.output_bits = out_bits[round % 3];
        dh_equalized *r = NULL;
        ck_assert_msg(dh_equalize(ctx, v, &p, &r) == DH_OK, "%s", dh_ctx_error(ctx));
        const uint64_t levels = (uint64_t)1 << p.output_bits, top = (1u << l.bits) - 1;
        for (size_t i = 0; i < n; i++) {
            int32_t x = (int32_t)px[i] - 1024;
            uint64_t want = (uint64_t)naive_lut(&l, x) * (levels - 1) / top;
            ck_assert_msg(r->data[i] == want, "round %d pixel %zu: %u, expected %llu", round, i,
                          r->data[i], (unsigned long long)want);
        }
        ck_assert_ptr_nonnull(strstr(r->description, "VOI LUT 1 of 2 'SOFT TISSUE'"));
        ck_assert(isnan(r->center[0]) && isnan(r->width[0]));
        dh_equalized_free(r);

        /* Equalization: the window is the table's input range. */
        p.operation = DH_EQ_EQUALIZE;
        ck_assert_int_eq(dh_equalize(ctx, v, &p, &r), DH_OK);
        ck_assert(r->window_lo[0] == l.first);
        ck_assert(r->window_hi[0] == (double)l.first + l.entries - 1);
        dh_equalized_free(r);
        dh_volume_free(v);
        free(b.p), free(px), free(l.data);
    }
    /* Without the sequence and without a window, the file window is refused by name. */
    uint16_t px[4] = {1, 2, 3, 4};
    synth s = synth_default(1, 4, 16, 12, 11, 0);
    s.data = px;
    s.bytes = sizeof px;
    buf b = synth_build(&s);
    dh_volume *v = NULL;
    ck_assert_int_eq(dh_volume_read_memory(ctx, b.p, b.n, "plain.dcm", &v), DH_OK);
    ck_assert_int_eq(dh_volume_voi_lut(v, NULL, NULL, NULL, NULL, NULL), 0);
    dh_equalize_params p;
    dh_equalize_params_init(&p);
    p.window = DH_WINDOW_FILE;
    dh_equalized *r = NULL;
    ck_assert_int_eq(dh_equalize(ctx, v, &p, &r), DH_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "no VOI LUT Sequence and no WindowCenter"));
    dh_volume_free(v);
    free(b.p);
    dh_ctx_free(ctx);
}
END_TEST

int main(void)
{
    const dh_test tests[] = {DH_TEST(file_descriptor_rules), DH_TEST(file_lying_descriptors),
                             DH_TEST(histograms_in_modality_units),
                             DH_TEST(windows_in_modality_units),
                             DH_TEST(voi_lut_as_the_file_window)};
    return dh_test_run(dh_test_suite("lut_sequences", 120, DH_TESTS(tests)));
}
