// SPDX-License-Identifier: MIT
/*
 * test_clahe.c: CLAHE through the public API (dh_equalize with method DH_EQ_METHOD_CLAHE) on
 * random, CT-like and constant volumes made by dh_volume_from_samples and on every readable real
 * file of ../shared/dicom and ../shared/dicom-jpeg2000 (the --real-files entry). Outputs are
 * compared with the naive reference of clahe_reference.h, fed with windows found here from the
 * samples; one tile must give what global equalization gives through the same API for every
 * window source; tiles, bins and devices out of bounds are refused with the field named.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clahe_forced_build.h"
#include "clahe_reference.h"
#include "dicomhist.h"
#include "test_support.h"

/* The table range of a volume's format, as docs/equalization.md states it. */
static void table_range(const dh_volume *v, int32_t *base, uint32_t *len)
{
    uint32_t bits = dh_volume_bits_stored(v);
    *len = 1u << bits;
    *base = dh_volume_is_signed(v) ? -(int32_t)(*len / 2) : 0;
}

/* The expected tiles along an axis: given, else from the size, else min(8, n). */
static uint32_t expected_tiles(uint32_t n, uint32_t tiles, uint32_t size)
{
    return tiles ? tiles : size ? (n + size - 1) / size : n < 8 ? n : 8;
}

/* dh_equalize's CLAHE against the reference, with the window of each table given in stored
 * values by `windows` (NULL: the whole range). */
static void check_against_reference(dh_ctx *ctx, const dh_volume *v, const dh_equalize_params *p,
                                    const dh_eq_window *windows, const char *what)
{
    dh_equalized *r = NULL;
    ck_assert_msg(dh_equalize(ctx, v, p, &r) == DH_OK, "%s: %s", what, dh_ctx_error(ctx));
    uint32_t nx = dh_volume_columns(v), ny = dh_volume_rows(v), nz = dh_volume_slices(v);
    dh_test_clahe_case c = {dh_volume_data(v), dh_volume_is_signed(v), 0, 0,
                            {nx, ny, nz, expected_tiles(nx, p->tiles[0], p->tile_size[0]),
                             expected_tiles(ny, p->tiles[1], p->tile_size[1]), 1, !p->per_slice},
                            NULL, p->bins, 0, p->clip_limit};
    if (!p->per_slice)
        c.s.tz = expected_tiles(nz, p->tiles[2], p->tile_size[2]);
    table_range(v, &c.base, &c.len);
    uint32_t bits = p->output_bits ? p->output_bits : dh_volume_bits_stored(v);
    c.levels = 1u << bits;
    uint32_t units = p->per_slice ? nz : 1;
    dh_eq_window *w = malloc(units * sizeof *w);
    for (uint32_t k = 0; k < units; k++)
        w[k] = windows ? windows[k] : (dh_eq_window){c.base, c.base + (int32_t)c.len - 1};
    c.windows = w;
    size_t n = (size_t)nx * ny * nz;
    uint16_t *want = malloc(n * sizeof *want);
    dh_test_clahe_reference(&c, want);
    ck_assert_uint_eq(r->output_bits, bits);
    ck_assert_uint_eq(r->table_count, units);
    ck_assert_ptr_null(r->tables);
    ck_assert_uint_eq(r->table_len, 0);
    ck_assert_msg(strstr(r->description, "CLAHE") != NULL, "%s: %s", what, r->description);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(r->data[i] == want[i], "%s: pixel %zu (x %zu y %zu z %zu): %u != %u", what,
                      i, i % nx, i / nx % ny, i / nx / ny, r->data[i], want[i]);
    free(want);
    free(w);
    dh_equalized_free(r);
}

/* CLAHE with one tile equals global equalization through the API, window source and all. */
static void check_one_tile_is_global(dh_ctx *ctx, const dh_volume *v, dh_equalize_params p,
                                     const char *what)
{
    dh_equalized *global = NULL, *clahe = NULL;
    p.method = DH_EQ_METHOD_GLOBAL;
    ck_assert_msg(dh_equalize(ctx, v, &p, &global) == DH_OK, "%s: %s", what, dh_ctx_error(ctx));
    p.method = DH_EQ_METHOD_CLAHE;
    p.tiles[0] = p.tiles[1] = p.tiles[2] = 1;
    p.bins = 0;
    ck_assert_msg(dh_equalize(ctx, v, &p, &clahe) == DH_OK, "%s: %s", what, dh_ctx_error(ctx));
    size_t n = dh_volume_sample_count(v);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(clahe->data[i] == global->data[i], "%s: pixel %zu: %u != %u", what, i,
                      clahe->data[i], global->data[i]);
    for (uint32_t t = 0; t < global->table_count; t++) {
        ck_assert_msg(clahe->window_lo[t] == global->window_lo[t] ||
                          (isnan(clahe->window_lo[t]) && isnan(global->window_lo[t])),
                      "%s: window", what);
        ck_assert_msg(clahe->window_hi[t] == global->window_hi[t] ||
                          (isnan(clahe->window_hi[t]) && isnan(global->window_hi[t])),
                      "%s: window", what);
    }
    dh_equalized_free(global);
    dh_equalized_free(clahe);
}

/* Every window source with one tile, per slice and per volume. */
static void check_window_sources(dh_ctx *ctx, const dh_volume *v, const char *name)
{
    int32_t smin, smax;
    dh_volume_stored_range(v, &smin, &smax);
    double mlo = dh_volume_modality_value(v, smin), mhi = dh_volume_modality_value(v, smax);
    if (mlo > mhi) {
        double t = mlo;
        mlo = mhi;
        mhi = t;
    }
    for (int per_slice = 0; per_slice < 2; per_slice++)
        for (int source = 0; source < 5; source++) {
            dh_equalize_params p;
            dh_equalize_params_init(&p);
            p.device = DH_DEVICE_CPU;
            p.per_slice = per_slice;
            p.clip_limit = source % 2 ? 2.5 : 0;
            static const dh_window_source sources[] = {DH_WINDOW_NONE, DH_WINDOW_RANGE,
                                                       DH_WINDOW_CENTER_WIDTH, DH_WINDOW_MINMAX,
                                                       DH_WINDOW_PERCENTILE};
            p.window = sources[source];
            p.lo = mlo + (mhi - mlo) / 5;
            p.hi = mhi - (mhi - mlo) / 4;
            p.center = (mlo + mhi) / 2;
            p.width = (mhi - mlo) / 2 + 1;
            p.percentile = 1.5;
            char what[256];
            snprintf(what, sizeof what, "%s per %s window source %d", name,
                     per_slice ? "slice" : "volume", (int)p.window);
            check_one_tile_is_global(ctx, v, p, what);
        }
}

/* CLAHE's parameters on the CPU, per slice or per volume, everything else the default. */
static dh_equalize_params clahe_params(int per_slice)
{
    dh_equalize_params p;
    dh_equalize_params_init(&p);
    p.method = DH_EQ_METHOD_CLAHE;
    p.device = DH_DEVICE_CPU;
    p.per_slice = per_slice;
    return p;
}

/* A volume of the given samples (uint16_t bit patterns; int16_t when signed). */
static dh_volume *volume_of(dh_ctx *ctx, uint32_t nx, uint32_t ny, uint32_t nz, uint32_t bits,
                            int is_signed, const uint16_t *samples)
{
    dh_volume *v = NULL;
    ck_assert_msg(dh_volume_from_samples(ctx, ny, nx, nz, bits, is_signed, samples, &v) == DH_OK,
                  "%s", dh_ctx_error(ctx));
    return v;
}

static void fill_random(uint16_t *d, size_t n, uint32_t bits, int is_signed, int kind,
                        dh_test_rng *rng)
{
    uint32_t len = 1u << bits;
    int32_t base = is_signed ? -(int32_t)(len / 2) : 0;
    if (kind == 1) {
        dh_test_fill_ct_like(d, n, dh_test_rng_next(rng));
        for (size_t i = 0; i < n; i++)
            d[i] = (uint16_t)(base + (int32_t)(d[i] % len));
        return;
    }
    int32_t a = base + (int32_t)dh_test_rng_below(rng, len);
    for (size_t i = 0; i < n; i++)
        d[i] = (uint16_t)(kind == 2 ? a : base + (int32_t)dh_test_rng_below(rng, len));
}

START_TEST(api_matches_reference_on_synthetic_volumes)
{
    dh_ctx *ctx = dh_ctx_create();
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 21);
    static const struct {
        uint32_t nx, ny, nz, bits;
        int sign;
    } shapes[] = {{67, 45, 3, 12, 0}, {40, 40, 5, 16, 1}, {9, 13, 2, 10, 0}, {30, 17, 9, 16, 0}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int kind = 0; kind < 3; kind++) {
            size_t n = (size_t)shapes[s].nx * shapes[s].ny * shapes[s].nz;
            uint16_t *d = malloc(n * sizeof *d);
            fill_random(d, n, shapes[s].bits, shapes[s].sign, kind, &rng);
            dh_volume *v = volume_of(ctx, shapes[s].nx, shapes[s].ny, shapes[s].nz,
                                     shapes[s].bits, shapes[s].sign, d);
            for (int round = 0; round < 6; round++) {
                dh_equalize_params p = clahe_params(round % 2);
                p.clip_limit = round % 3 == 0 ? 0 : 1.5 * round;
                p.bins = (uint32_t[]){0, 256, 4096, 7, 65536, 1}[round];
                p.output_bits = round == 3 ? 8 : 0;
                if (round == 2) { /* by size: tiles of at most 16 x 10 pixels */
                    p.tile_size[0] = 16;
                    p.tile_size[1] = 10;
                    p.tile_size[2] = p.per_slice ? 0 : 2;
                } else if (round >= 4) {
                    p.tiles[0] = round == 4 ? 3 : shapes[s].nx; /* down to 1-pixel tiles */
                    p.tiles[1] = 2;
                }
                char what[160];
                snprintf(what, sizeof what, "shape %zu kind %d round %d", s, kind, round);
                check_against_reference(ctx, v, &p, NULL, what);
            }
            /* A range window in stored units (slope 1, intercept 0), per slice. */
            dh_equalize_params p = clahe_params(1);
            p.window = DH_WINDOW_RANGE;
            int32_t base;
            uint32_t len;
            table_range(v, &base, &len);
            p.lo = base + (int32_t)(len / 5);
            p.hi = base + (int32_t)(len / 2);
            p.clip_limit = 2;
            dh_eq_window *w = malloc(shapes[s].nz * sizeof *w);
            for (uint32_t z = 0; z < shapes[s].nz; z++)
                w[z] = (dh_eq_window){(int32_t)p.lo, (int32_t)p.hi};
            check_against_reference(ctx, v, &p, w, "range window");
            free(w);
            check_window_sources(ctx, v, "synthetic");
            dh_volume_free(v);
            free(d);
        }
    dh_ctx_free(ctx);
}
END_TEST

START_TEST(bad_parameters_are_refused)
{
    dh_ctx *ctx = dh_ctx_create();
    uint16_t d[6 * 4 * 2] = {0};
    dh_volume *v = volume_of(ctx, 6, 4, 2, 12, 0, d);
    dh_equalized *r = NULL;
    dh_equalize_params p;
    dh_equalize_params_init(&p);
    ck_assert_int_eq(p.method, DH_EQ_METHOD_GLOBAL); /* the default keeps global equalization */
    p = clahe_params(0);
    p.tiles[1] = 5;
    ck_assert_int_eq(dh_equalize(ctx, v, &p, &r), DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "rows"));
    p.tiles[1] = 0;
    p.tiles[2] = 3;
    ck_assert_int_eq(dh_equalize(ctx, v, &p, &r), DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "slices"));
    p.tiles[2] = 2;
    p.per_slice = 1;
    ck_assert_int_eq(dh_equalize(ctx, v, &p, &r), DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "per-volume"));
    p.tiles[2] = 0;
    p.bins = 65537;
    ck_assert_int_eq(dh_equalize(ctx, v, &p, &r), DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "bins"));
    p.bins = 0;
    p.operation = DH_EQ_WINDOW_LEVEL;
    p.window = DH_WINDOW_MINMAX;
    ck_assert_int_eq(dh_equalize(ctx, v, &p, &r), DH_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "CLAHE"));
    p.operation = DH_EQ_EQUALIZE;
    p.method = (dh_eq_method)7;
    ck_assert_int_eq(dh_equalize(ctx, v, &p, &r), DH_ERR_INVALID_ARGUMENT);
    p.method = DH_EQ_METHOD_CLAHE;
    ck_assert_int_eq(dh_equalize(ctx, v, &p, &r), DH_OK);
    /* A constant volume maps to 0 everywhere (the constant-image rule, per tile). */
    for (size_t i = 0; i < 48; i++)
        ck_assert_uint_eq(r->data[i], 0);
    /* CLAHE has no table per slice: a presentation state cannot hold it. */
    char *dir = dh_test_temp_dir("clahe-gsps");
    dh_derived_series *s = NULL;
    ck_assert_int_eq(dh_equalized_write_gsps(ctx, v, r, dir, NULL, &s), DH_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(dh_ctx_error(ctx), "CLAHE"));
    dh_test_remove_tree(dir);
    free(dir);
    dh_equalized_free(r);
    dh_volume_free(v);
    dh_ctx_free(ctx);
}
END_TEST

/* ---- real files ---- */

/* CLAHE written as derived DICOM keeps the source's photometric interpretation (MONOCHROME1
 * stays MONOCHROME1: the tables never decrease, so low values stay bright). */
static void check_written_keeps_photometric(dh_ctx *ctx, const dh_volume *v)
{
    dh_equalize_params p = clahe_params(1);
    p.window = DH_WINDOW_PERCENTILE;
    p.percentile = 1;
    p.clip_limit = 3;
    dh_equalized *r = NULL;
    ck_assert_msg(dh_equalize(ctx, v, &p, &r) == DH_OK, "%s", dh_ctx_error(ctx));
    char *dir = dh_test_temp_dir("clahe-real");
    dh_derived_series *s = NULL;
    ck_assert_msg(dh_equalized_write_dicom(ctx, v, r, dir, &s) == DH_OK, "%s: %s",
                  dh_volume_path(v), dh_ctx_error(ctx));
    dh_volume *back = NULL;
    ck_assert_int_eq(dh_volume_read_file(ctx, s->files[0], &back), DH_OK);
    ck_assert_int_eq(dh_volume_photometric(back), dh_volume_photometric(v));
    dh_volume_free(back);
    dh_derived_series_free(s);
    dh_test_remove_tree(dir);
    free(dir);
    dh_equalized_free(r);
}

/* Every volume of both shared folders: CLAHE per slice and per volume against the reference
 * (full range, default 8 x 8 tiles, full resolution), MONOCHROME1 kept in the derived files, and
 * one tile equal to global equalization for every window source (on volumes of at most 600000
 * samples: every format is among them). */
static void check_real_folder(const char *relative)
{
    const char *root = dh_test_shared(relative);
    if (!root)
        return;
    char *path = strdup(root);
    dh_ctx *ctx = dh_ctx_create();
    dh_volume_set *set = NULL;
    ck_assert_int_eq(dh_volume_set_load(ctx, (const char *[]){path}, 1, &set), DH_OK);
    ck_assert_uint_ge(dh_volume_set_count(set), 3);
    for (size_t i = 0; i < dh_volume_set_count(set); i++) {
        const dh_volume *v = dh_volume_set_volume(set, i);
        for (int per_slice = 0; per_slice < 2; per_slice++) {
            dh_equalize_params p = clahe_params(per_slice);
            p.clip_limit = 2;
            p.bins = per_slice ? 0 : 4096;
            char what[600];
            snprintf(what, sizeof what, "%s per %s", dh_volume_path(v),
                     per_slice ? "slice" : "volume");
            check_against_reference(ctx, v, &p, NULL, what);
        }
        if (dh_volume_sample_count(v) <= 600000) /* the large ones cost minutes, same code */
            check_window_sources(ctx, v, dh_volume_path(v));
        check_written_keeps_photometric(ctx, v);
    }
    dh_volume_set_free(set);
    dh_ctx_free(ctx);
    free(path);
}

START_TEST(real_files_match_reference)
{
    check_real_folder(".");
}
END_TEST

START_TEST(real_jpeg2000_files_match_reference)
{
    check_real_folder("../dicom-jpeg2000");
}
END_TEST

int main(int argc, char **argv)
{
    const dh_test synthetic[] = {DH_TEST(api_matches_reference_on_synthetic_volumes),
                                 DH_TEST(bad_parameters_are_refused)};
    const dh_test real_files[] = {DH_TEST(real_files_match_reference),
                                  DH_TEST(real_jpeg2000_files_match_reference)};
    if (dh_test_clahe_build_missing())
        return DH_TEST_SKIP;
    return dh_test_main(argc, argv, "clahe", 600, DH_TESTS(synthetic), DH_TESTS(real_files));
}
