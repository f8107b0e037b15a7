// SPDX-License-Identifier: MIT
/*
 * test_dicom_jpeg2000.c: JPEG 2000 and HTJ2K pixel data (dicom/dicom_jpeg2000.cpp). Classic J2K
 * code streams are made here with OpenJPEG's own encoder (signed and unsigned, 8 to 16 bits,
 * several tiles, progression orders, a JP2 wrapper some writers leave on), HTJ2K ones with
 * OpenJPH's ojph_compress (skipped where it is absent; OpenJPEG cannot encode HTJ2K), and placed
 * in fragments every way PS3.5 A.4 allows; each must decode back to the very values encoded.
 * Streams that disagree with the dataset follow the dataset's bit layout or are refused before
 * decoding; corrupt and truncated ones are errors naming the frame, each well under a second.
 * Real files (../shared/dicom-jpeg2000) are read in test_dicom.c and against pydicom in
 * tests/cli/test_cli_real_files.py.
 */
#define _POSIX_C_SOURCE 200809L
#include "dh_dicom.h"
#include "dicom_bytes.h"
#include "test_support.h"

#include <openjpeg.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TS_J2K_ANY "1.2.840.10008.1.2.4.91"
#define TS_HTJ2K_LOSSLESS "1.2.840.10008.1.2.4.201"
#define TS_HTJ2K_RPCL "1.2.840.10008.1.2.4.202"

enum { ROWS = 40, COLUMNS = 56, FRAME = ROWS * COLUMNS };

/* ---------------------------------------------------------------------------------------------
 * Code streams made by OpenJPEG's encoder, into memory
 * ------------------------------------------------------------------------------------------- */
typedef struct sink {
    buf b;
    size_t at;
} sink;

/* Makes the first `end` bytes exist (zeros where nothing was written yet). */
static void sink_reach(sink *s, size_t end)
{
    if (end <= s->b.n)
        return;
    static const uint8_t zeros[256];
    while (s->b.n < end) {
        size_t k = end - s->b.n < sizeof zeros ? end - s->b.n : sizeof zeros;
        put(&s->b, zeros, k);
    }
}

static OPJ_SIZE_T sink_write(void *data, OPJ_SIZE_T n, void *user)
{
    sink *s = user;
    sink_reach(s, s->at + n);
    memcpy(s->b.p + s->at, data, n);
    s->at += n;
    return n;
}

static OPJ_OFF_T sink_skip(OPJ_OFF_T n, void *user)
{
    sink *s = user;
    s->at += (size_t)n;
    return n;
}

static OPJ_BOOL sink_seek(OPJ_OFF_T to, void *user)
{
    ((sink *)user)->at = (size_t)to;
    return OPJ_TRUE;
}

typedef struct stream_options {
    uint32_t tile;   /* 0: one tile */
    int resolutions; /* wavelet levels + 1 */
    OPJ_PROG_ORDER order;
    int jp2;        /* a JP2 file around the code stream */
    int components; /* 0: one */
} stream_options;

static const stream_options plain = {0, 4, OPJ_LRCP, 0, 0};

/* A lossless (reversible 5/3) code stream of samples[w * h] (each component the same). */
static buf encode_opj(const int32_t *samples, uint32_t w, uint32_t h, int precision, int sgnd,
                      const stream_options *o)
{
    opj_cparameters_t p;
    opj_set_default_encoder_parameters(&p);
    p.tcp_numlayers = 1;
    p.tcp_rates[0] = 0;
    p.cp_disto_alloc = 1;
    p.numresolution = o->resolutions;
    p.prog_order = o->order;
    if (o->tile) {
        p.tile_size_on = OPJ_TRUE;
        p.cp_tdx = p.cp_tdy = (int)o->tile;
    }
    const uint32_t comps = o->components ? (uint32_t)o->components : 1;
    opj_image_cmptparm_t cp[3];
    memset(cp, 0, sizeof cp);
    for (uint32_t c = 0; c < comps; c++) {
        cp[c].dx = cp[c].dy = 1;
        cp[c].w = w;
        cp[c].h = h;
        cp[c].prec = (OPJ_UINT32)precision;
        cp[c].sgnd = (OPJ_UINT32)sgnd;
    }
    opj_image_t *img = opj_image_create(comps, cp, comps == 1 ? OPJ_CLRSPC_GRAY : OPJ_CLRSPC_SRGB);
    ck_assert_ptr_nonnull(img);
    img->x1 = w;
    img->y1 = h;
    for (uint32_t c = 0; c < comps; c++)
        memcpy(img->comps[c].data, samples, (size_t)w * h * sizeof(int32_t));
    opj_codec_t *codec = opj_create_compress(o->jp2 ? OPJ_CODEC_JP2 : OPJ_CODEC_J2K);
    ck_assert(opj_setup_encoder(codec, &p, img));
    sink s = {{NULL, 0, 0}, 0};
    opj_stream_t *st = opj_stream_create(1 << 16, OPJ_FALSE);
    opj_stream_set_user_data(st, &s, NULL);
    opj_stream_set_write_function(st, sink_write);
    opj_stream_set_skip_function(st, sink_skip);
    opj_stream_set_seek_function(st, sink_seek);
    ck_assert(opj_start_compress(codec, img, st));
    ck_assert(opj_encode(codec, st));
    ck_assert(opj_end_compress(codec, st));
    opj_stream_destroy(st);
    opj_destroy_codec(codec);
    opj_image_destroy(img);
    return s.b;
}

/* Noise over a `precision`-bit range, signed or not. */
static void fill_noise(int32_t *out, size_t n, int precision, int sgnd, uint64_t seed)
{
    dh_test_rng rng;
    dh_test_rng_seed(&rng, seed);
    const int32_t offset = sgnd ? -(1 << (precision - 1)) : 0;
    for (size_t i = 0; i < n; i++)
        out[i] = (int32_t)dh_test_rng_below(&rng, 1u << precision) + offset;
}

/* ---------------------------------------------------------------------------------------------
 * HTJ2K code streams made by OpenJPH's ojph_compress from a PGM file
 * ------------------------------------------------------------------------------------------- */
/* The whole of a file the test made (asserted). */
static buf file_bytes(const char *path)
{
    buf out = {NULL, 0, 0};
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    uint8_t chunk[4096];
    size_t k;
    while ((k = fread(chunk, 1, sizeof chunk, f)) > 0)
        put(&out, chunk, k);
    fclose(f);
    return out;
}

/* A code stream of unsigned samples of `precision` bits made by a command-line encoder: OpenJPH's
 * ojph_compress (HTJ2K, from a PGM file) or OpenJPEG's opj_compress (J2K, from raw little-endian
 * words), with `options` added. */
static buf encode_with_tool(const char *tool, const int32_t *samples, uint32_t w, uint32_t h,
                            int precision, const char *options)
{
    dh_test_need_tool(tool);
    const int pgm = strcmp(tool, "ojph_compress") == 0;
    char *dir = dh_test_temp_dir("/tmp/dh_j2k_tool");
    char in[256], out[256], cmd[900];
    snprintf(in, sizeof in, "%s/%s", dir, pgm ? "in.pgm" : "in.rawl");
    snprintf(out, sizeof out, "%s/%s", dir, pgm ? "out.j2c" : "out.j2k");
    FILE *f = fopen(in, "wb");
    ck_assert_ptr_nonnull(f);
    if (pgm)
        fprintf(f, "P5\n%u %u\n%u\n", w, h, (1u << precision) - 1u);
    for (size_t i = 0; i < (size_t)w * h; i++) {
        const uint8_t hi = (uint8_t)(samples[i] >> 8), lo = (uint8_t)samples[i];
        if (pgm) { /* PGM: big-endian words above 255 */
            if (precision > 8)
                fputc(hi, f);
            fputc(lo, f);
        } else {
            fputc(lo, f);
            fputc(hi, f);
        }
    }
    fclose(f);
    if (pgm)
        snprintf(cmd, sizeof cmd, "%s -i %s -o %s %s >/dev/null 2>&1", tool, in, out, options);
    else
        snprintf(cmd, sizeof cmd, "%s -i %s -o %s -F %u,%u,1,%d,u %s >/dev/null 2>&1", tool, in,
                 out, w, h, precision, options);
    ck_assert_msg(system(cmd) == 0, "'%s' failed", cmd);
    buf stream = file_bytes(out);
    dh_test_remove_tree(dir);
    free(dir);
    ck_assert_uint_gt(stream.n, 40);
    return stream;
}

/* HTJ2K, lossless, from OpenJPH. */
static buf encode_ojph(const int32_t *samples, uint32_t w, uint32_t h, int precision)
{
    return encode_with_tool("ojph_compress", samples, w, h, precision,
                            "-reversible true -num_decomps 3");
}

/* ---------------------------------------------------------------------------------------------
 * Reading
 * ------------------------------------------------------------------------------------------- */
static synth j2k_synth(const char *ts, uint16_t allocated, uint16_t stored, int is_signed,
                       const char *frames, const encapsulated *e)
{
    synth s = synth_default(ROWS, COLUMNS, allocated, stored, (uint16_t)(stored - 1),
                            (uint16_t)is_signed);
    s.ts = ts;
    s.frames = frames;
    s.pixels = 3;
    s.encapsulated = e;
    return s;
}

/* The image of `s` read with pixels, which must succeed. */
static dh_dicom_image *read_ok(const synth *s)
{
    buf b = synth_build(s);
    char msg[DH_DICOM_MSG_LEN];
    dh_dicom_image *img = read_buf(&b, 1, DH_OK, msg);
    free(b.p);
    return img;
}

/* Asserts every sample of img equals want[] interpreted by the standard's rule on the dataset's
 * BitsStored and signedness (the low bits of each encoded value). */
static void assert_values(const dh_dicom_image *img, const int32_t *want, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const int32_t expect = reference_value((uint32_t)want[i] & 0xffffu, img->format.bits_stored,
                                               img->format.high_bit, img->format.is_signed);
        ck_assert_msg(sample(img, i) == expect, "sample %zu: %d, expected %d", i,
                      sample(img, i), expect);
    }
}

static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------------------------------------------
 * Valid streams
 * ------------------------------------------------------------------------------------------- */
START_TEST(decodes_every_fragment_layout)
{
    enum { FRAMES = 3 };
    const enum fragment_layout how = (enum fragment_layout)_i;
    static int32_t values[FRAMES * FRAME];
    fill_noise(values, FRAMES * FRAME, 16, 0, 21 + (uint64_t)_i);
    static const stream_options tiled = {32, 3, OPJ_RPCL, 0, 0}; /* four tiles */
    static const stream_options pcrl = {0, 2, OPJ_PCRL, 0, 0};
    const stream_options *options[FRAMES] = {&plain, &tiled, &pcrl};
    buf streams[FRAMES];
    for (int f = 0; f < FRAMES; f++)
        streams[f] = encode_opj(values + f * FRAME, COLUMNS, ROWS, 16, 0, options[f]);
    placed p;
    place(&p, streams, FRAMES, how);
    synth s = j2k_synth(TS_J2K, 16, 16, 0, "3", &p.e);
    dh_dicom_image *img = read_ok(&s);
    ck_assert_uint_eq(img->frames, FRAMES);
    assert_values(img, values, FRAMES * FRAME);
    dh_dicom_image_free(img);
    for (int f = 0; f < FRAMES; f++)
        free(streams[f].p);
}
END_TEST

/* More OpenJPEG workers per frame decode the same values (four tiles, so there is work to
 * share); a count over 64 is refused before anything is read. */
START_TEST(decodes_the_same_with_more_codec_threads)
{
    static int32_t values[FRAME];
    fill_noise(values, FRAME, 12, 1, 31);
    static const stream_options tiled = {32, 3, OPJ_LRCP, 0, 0};
    buf stream = encode_opj(values, COLUMNS, ROWS, 12, 1, &tiled);
    placed p;
    place(&p, &stream, 1, ONE_FRAGMENT_EACH);
    synth s = j2k_synth(TS_J2K, 16, 12, 1, NULL, &p.e);
    buf b = synth_build(&s);
    char msg[DH_DICOM_MSG_LEN];
    dh_dicom_image *img = NULL;
    dh_dicom_read_options options = {.codec_threads = 3};
    ck_assert_msg(dh_dicom_read_memory_with(b.p, b.n, 1, &options, &img, msg, sizeof msg) ==
                      DH_OK, "%s", msg);
    for (size_t i = 0; i < FRAME; i++)
        ck_assert_int_eq(sample(img, i), values[i]);
    dh_dicom_image_free(img);
    options.codec_threads = 65;
    ck_assert_int_eq(dh_dicom_read_memory_with(b.p, b.n, 1, &options, &img, msg, sizeof msg),
                     DH_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(msg, "codec threads must be 0..64, not 65");
    ck_assert_ptr_null(img);
    free(b.p);
    free(stream.p);
}
END_TEST

/* Signed and unsigned, 8 (in 8- and 16-bit cells), 10, 12 and 16 bits: bit-exact. */
START_TEST(round_trips_every_depth_and_sign)
{
    static const struct {
        uint16_t allocated, stored;
        int sgnd;
    } formats[] = {{8, 8, 0}, {8, 8, 1}, {16, 8, 0}, {16, 10, 0}, {16, 10, 1},
                   {16, 12, 0}, {16, 12, 1}, {16, 16, 0}, {16, 16, 1}};
    for (size_t k = 0; k < sizeof formats / sizeof formats[0]; k++) {
        static int32_t values[2 * FRAME];
        fill_noise(values, 2 * FRAME, formats[k].stored, formats[k].sgnd, 100 + k);
        buf streams[2];
        for (int f = 0; f < 2; f++)
            streams[f] = encode_opj(values + f * FRAME, COLUMNS, ROWS, formats[k].stored,
                                    formats[k].sgnd, &plain);
        placed p;
        place(&p, streams, 2, k % 2 ? SPLIT_WITH_TABLE : ONE_FRAGMENT_EACH);
        synth s = j2k_synth(k % 3 ? TS_J2K : TS_J2K_ANY, formats[k].allocated, formats[k].stored,
                            formats[k].sgnd, "2", &p.e);
        dh_dicom_image *img = read_ok(&s);
        assert_values(img, values, 2 * FRAME);
        for (size_t i = 0; i < 2 * FRAME; i++) /* and the values are the very ones encoded */
            ck_assert_int_eq(sample(img, i), values[i]);
        dh_dicom_image_free(img);
        free(streams[0].p);
        free(streams[1].p);
    }
}
END_TEST

/* HTJ2K streams from OpenJPH, unsigned 8 to 16 bits, and signed data written as its two's
 * complement bit pattern in an unsigned stream (OpenJPH 0.9's signed raw input does not round
 * trip), which the dataset's PixelRepresentation turns back into the signed values. */
START_TEST(decodes_htj2k_from_openjph)
{
    dh_test_need_tool("ojph_compress");
    static const struct {
        uint16_t allocated, stored;
        int sgnd;
        const char *ts;
    } formats[] = {{8, 8, 0, TS_HTJ2K_LOSSLESS}, {16, 10, 0, TS_HTJ2K_RPCL},
                   {16, 12, 0, TS_HTJ2K_LOSSLESS}, {16, 12, 1, TS_HTJ2K_LOSSLESS},
                   {16, 16, 0, TS_HTJ2K_RPCL}, {16, 16, 1, TS_HTJ2K_LOSSLESS}};
    for (size_t k = 0; k < sizeof formats / sizeof formats[0]; k++) {
        enum { FRAMES = 3 };
        static int32_t values[FRAMES * FRAME], patterns[FRAMES * FRAME];
        fill_noise(values, FRAMES * FRAME, formats[k].stored, formats[k].sgnd, 200 + k);
        const uint32_t mask = (1u << formats[k].stored) - 1u;
        for (size_t i = 0; i < FRAMES * FRAME; i++)
            patterns[i] = (int32_t)((uint32_t)values[i] & mask);
        buf streams[FRAMES];
        for (int f = 0; f < FRAMES; f++)
            streams[f] = encode_ojph(patterns + f * FRAME, COLUMNS, ROWS, formats[k].stored);
        placed p;
        place(&p, streams, FRAMES, (enum fragment_layout)(k % LAYOUTS));
        synth s = j2k_synth(formats[k].ts, formats[k].allocated, formats[k].stored,
                            formats[k].sgnd, "3", &p.e);
        dh_dicom_image *img = read_ok(&s);
        ck_assert_str_eq(img->transfer_syntax_uid, formats[k].ts);
        for (size_t i = 0; i < FRAMES * FRAME; i++)
            ck_assert_int_eq(sample(img, i), values[i]);
        dh_dicom_image_free(img);
        for (int f = 0; f < FRAMES; f++)
            free(streams[f].p);
    }
}
END_TEST

/* The project's own stored values: the sample X-ray and three slices of the sample CT, coded
 * by OpenJPEG's library (J2K) and by OpenJPH (HTJ2K), decode back to the values read from the
 * uncompressed files. */
START_TEST(round_trips_the_sample_data)
{
    static const char *const names[] = {"xray_projection.dcm", "ct_phantom/IM0001.dcm",
                                        "ct_phantom/IM0002.dcm", "ct_phantom/IM0003.dcm"};
    enum { FILES = 4 };
    dh_dicom_image *images[FILES];
    char msg[DH_DICOM_MSG_LEN], path[512];
    for (int k = 0; k < FILES; k++) {
        snprintf(path, sizeof path, "%s/%s", DH_SAMPLE_DATA, names[k]);
        ck_assert_msg(dh_dicom_read_file(path, 1, &images[k], msg, sizeof msg) == DH_OK, "%s",
                      msg);
    }
    for (int htj2k = 0; htj2k <= 1; htj2k++) {
        for (int first = 0; first < 2; first++) { /* the X-ray, then the CT slices */
            const int frames = first ? 3 : 1;
            const dh_dicom_image *im = images[first];
            const size_t cells = (size_t)im->format.rows * im->format.columns;
            int32_t *values = malloc(cells * frames * sizeof *values);
            ck_assert_ptr_nonnull(values);
            buf streams[3];
            for (int f = 0; f < frames; f++) {
                const uint16_t *src = images[first + f]->pixels;
                for (size_t i = 0; i < cells; i++)
                    values[f * cells + i] = src[i];
                streams[f] =
                    htj2k ? encode_ojph(values + f * cells, im->format.columns, im->format.rows,
                                        (int)im->format.bits_stored)
                          : encode_opj(values + f * cells, im->format.columns, im->format.rows,
                                       (int)im->format.bits_stored, 0, &plain);
            }
            placed p;
            place(&p, streams, (size_t)frames, frames > 1 ? SPLIT_WITH_TABLE : ONE_FRAGMENT_EACH);
            synth s = j2k_synth(htj2k ? TS_HTJ2K_LOSSLESS : TS_J2K, 16,
                                (uint16_t)im->format.bits_stored, 0, frames > 1 ? "3" : NULL, &p.e);
            s.rows = (uint16_t)im->format.rows;
            s.columns = (uint16_t)im->format.columns;
            dh_dicom_image *back = read_ok(&s);
            ck_assert_uint_eq(back->frames, (uint32_t)frames);
            for (size_t i = 0; i < cells * frames; i++)
                ck_assert_int_eq(sample(back, i), values[i]);
            dh_dicom_image_free(back);
            for (int f = 0; f < frames; f++)
                free(streams[f].p);
            free(values);
        }
    }
    for (int k = 0; k < FILES; k++)
        dh_dicom_image_free(images[k]);
}
END_TEST

/* Where stream and dataset disagree on depth or sign, the dataset's rule holds (GDCM, pydicom):
 * an unsigned 13-bit stream in a signed 13-bit dataset (as a real CT has), a signed 14-bit
 * stream in a signed 16-bit dataset, a signed stream in an unsigned dataset. */
START_TEST(the_dataset_rules_where_the_stream_disagrees)
{
    static const struct {
        int precision, stream_signed;
        uint16_t stored;
        int dataset_signed;
    } cases[] = {{13, 0, 13, 1}, {14, 1, 16, 1}, {12, 1, 12, 0}, {12, 0, 16, 0}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        static int32_t values[FRAME];
        fill_noise(values, FRAME, cases[k].precision, cases[k].stream_signed, 300 + k);
        buf stream = encode_opj(values, COLUMNS, ROWS, cases[k].precision,
                                cases[k].stream_signed, &plain);
        placed p;
        place(&p, &stream, 1, ONE_FRAGMENT_EACH);
        synth s = j2k_synth(TS_J2K, 16, cases[k].stored, cases[k].dataset_signed, NULL, &p.e);
        dh_dicom_image *img = read_ok(&s);
        assert_values(img, values, FRAME);
        dh_dicom_image_free(img);
        free(stream.p);
    }
}
END_TEST

/* Padding after the end of the code stream (several bytes, not only the one that makes the
 * length even), and a whole JP2 file where the code stream belongs. */
START_TEST(tolerates_padding_and_a_jp2_wrapper)
{
    static int32_t values[FRAME];
    fill_noise(values, FRAME, 12, 0, 400);
    buf stream = encode_opj(values, COLUMNS, ROWS, 12, 0, &plain);
    put(&stream, "\0\0\0\0\0", 5);
    placed p;
    place(&p, &stream, 1, ONE_FRAGMENT_EACH);
    synth s = j2k_synth(TS_J2K, 16, 12, 0, NULL, &p.e);
    dh_dicom_image *img = read_ok(&s);
    assert_values(img, values, FRAME);
    dh_dicom_image_free(img);
    free(stream.p);

    static const stream_options jp2 = {0, 4, OPJ_LRCP, 1, 0};
    stream = encode_opj(values, COLUMNS, ROWS, 12, 0, &jp2);
    ck_assert_int_eq(memcmp(stream.p + 4, "jP  ", 4), 0);
    place(&p, &stream, 1, ONE_FRAGMENT_EACH);
    img = read_ok(&s);
    assert_values(img, values, FRAME);
    dh_dicom_image_free(img);
    free(stream.p);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Streams that cannot be right
 * ------------------------------------------------------------------------------------------- */
START_TEST(refuses_streams_that_do_not_fit_the_dataset)
{
    static int32_t values[3 * FRAME];
    fill_noise(values, 3 * FRAME, 16, 0, 500);
    placed p;
    synth s;

    /* Three frames declared, two streams cut into three fragments with no table. */
    buf two[2] = {encode_opj(values, COLUMNS, ROWS, 16, 0, &plain),
                  encode_opj(values + FRAME, COLUMNS, ROWS, 16, 0, &plain)};
    place(&p, two, 2, SPLIT_WITHOUT_TABLE);
    s = j2k_synth(TS_J2K, 16, 16, 0, "3", &p.e);
    expect_malformed(&s, "cannot tell which of the 6 JPEG 2000 fragments belong to which of "
                         "the 3 frames (no usable offset table, 2 start with SOC)");
    s.ts = TS_HTJ2K_LOSSLESS;
    expect_malformed(&s, "cannot tell which of the 6 HTJ2K fragments");
    free(two[0].p);
    free(two[1].p);

    /* Other dimensions, three components, more bits than the cells hold, tiny tiles. */
    buf other = encode_opj(values, ROWS, COLUMNS, 16, 0, &plain); /* transposed */
    place(&p, &other, 1, ONE_FRAGMENT_EACH);
    s = j2k_synth(TS_J2K, 16, 16, 0, NULL, &p.e);
    expect_malformed(&s, "JPEG 2000 frame 1 is 40x56 with 1 component(s), the dataset says "
                         "56x40 grayscale");
    free(other.p);
    static const stream_options rgb_options = {0, 4, OPJ_LRCP, 0, 3};
    buf rgb = encode_opj(values, COLUMNS, ROWS, 16, 0, &rgb_options);
    place(&p, &rgb, 1, ONE_FRAGMENT_EACH);
    expect_malformed(&s, "with 3 component(s)");
    free(rgb.p);
    buf deep = encode_opj(values, COLUMNS, ROWS, 12, 0, &plain);
    place(&p, &deep, 1, ONE_FRAGMENT_EACH);
    s = j2k_synth(TS_J2K, 8, 8, 0, NULL, &p.e);
    expect_malformed(&s, "JPEG 2000 frame 1 has 12-bit samples, more than BitsAllocated 8");
    free(deep.p);
    static const stream_options tiny_tiles = {4, 1, OPJ_LRCP, 0, 0};
    buf tiles = encode_opj(values, COLUMNS, ROWS, 16, 0, &tiny_tiles);
    place(&p, &tiles, 1, ONE_FRAGMENT_EACH);
    s = j2k_synth(TS_J2K, 16, 16, 0, NULL, &p.e);
    expect_malformed(&s, "JPEG 2000 frame 1 claims 140 tiles for 56x40 pixels");
    free(tiles.p);
}
END_TEST

/* A marker code (FF90..FFFF) inside a tile-part's packet data can only be damage; in an HT code
 * block's MEL segment it made Debian's OpenJPEG 2.5.0 abort the process (the fuzz corpus keeps the
 * two inputs that did), so it is refused before OpenJPEG sees the stream. SOP and EPH markers,
 * which do sit in packet data when the coding style asks for them, still read. */
START_TEST(refuses_marker_codes_inside_packet_data)
{
    static int32_t values[FRAME];
    fill_noise(values, FRAME, 12, 0, 600);
    buf stream = encode_ojph(values, COLUMNS, ROWS, 12);
    size_t sod = 0;
    for (size_t i = 0; i + 1 < stream.n && !sod; i++)
        if (stream.p[i] == 0xff && stream.p[i + 1] == 0x93)
            sod = i;
    ck_assert_uint_gt(sod, 0);
    const size_t at = sod + 2 + (stream.n - sod) / 2;
    stream.p[at] = 0xff;
    stream.p[at + 1] = 0xf4;
    placed p;
    place(&p, &stream, 1, ONE_FRAGMENT_EACH);
    synth s = j2k_synth(TS_HTJ2K_LOSSLESS, 16, 12, 0, NULL, &p.e);
    expect_malformed(&s, "HTJ2K frame 1: corrupt code stream: marker code FFF4 inside the data "
                         "of tile-part 1");
    free(stream.p);

    buf sop = encode_with_tool("opj_compress", values, COLUMNS, ROWS, 12, "-n 3 -SOP -EPH");
    int markers = 0; /* SOP and EPH markers in the packet data */
    for (size_t i = 0; i + 1 < sop.n; i++)
        markers += sop.p[i] == 0xff && (sop.p[i + 1] == 0x91 || sop.p[i + 1] == 0x92);
    ck_assert_int_gt(markers, 2);
    place(&p, &sop, 1, ONE_FRAGMENT_EACH);
    s = j2k_synth(TS_J2K, 16, 12, 0, NULL, &p.e);
    dh_dicom_image *img = read_ok(&s);
    assert_values(img, values, FRAME);
    dh_dicom_image_free(img);
    free(sop.p);
}
END_TEST

/* A 12-bit CT-like frame of `side` pixels a side, as a J2K (OpenJPEG) or HTJ2K (OpenJPH) stream;
 * HTJ2K gives an empty buffer where ojph_compress is absent. */
static buf ct_like_stream(int htj2k, uint32_t side, uint64_t seed)
{
    int32_t *values = malloc((size_t)side * side * sizeof *values);
    uint16_t *cells = malloc((size_t)side * side * sizeof *cells);
    ck_assert(values && cells);
    dh_test_fill_ct_like(cells, (size_t)side * side, seed);
    for (size_t i = 0; i < (size_t)side * side; i++)
        values[i] = cells[i];
    buf out = htj2k ? encode_ojph(values, side, side, 12) :
                      encode_opj(values, side, side, 12, 0, &plain);
    free(values);
    free(cells);
    return out;
}

/* Random corruptions of a J2K and an HTJ2K stream: each an error naming the codec and the frame
 * or, where the stream still parses, some image; never a crash; each read well under a second. */
START_TEST(corrupt_streams_are_errors_not_crashes)
{
    const int htj2k = _i;
    buf stream = ct_like_stream(htj2k, 64, 9);
    placed p;
    place(&p, &stream, 1, ONE_FRAGMENT_EACH);
    synth s = j2k_synth(htj2k ? TS_HTJ2K_LOSSLESS : TS_J2K, 16, 12, 0, NULL, &p.e);
    s.rows = s.columns = 64;
    const char *codec = htj2k ? "HTJ2K frame 1" : "JPEG 2000 frame 1";

    buf clean = synth_build(&s);
    const size_t start = clean.n - stream.n - (stream.n & 1) - 8; /* the fragment's bytes */
    char msg[DH_DICOM_MSG_LEN];
    dh_dicom_image *original = read_buf(&clean, 1, DH_OK, msg);
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 2026 + (uint64_t)htj2k);
    int failed = 0, changed = 0;
    double slowest = 0;
    for (int trial = 0; trial < 400; trial++) {
        buf b = {malloc(clean.n), clean.n, clean.n};
        ck_assert_ptr_nonnull(b.p);
        memcpy(b.p, clean.p, clean.n);
        for (uint32_t k = dh_test_rng_below(&rng, 4); k < 4; k++)
            b.p[start + dh_test_rng_below(&rng, (uint32_t)stream.n)] =
                (uint8_t)dh_test_rng_next(&rng);
        dh_dicom_image *img = NULL;
        const double t0 = seconds_now();
        dh_status st = dh_dicom_read_memory(b.p, b.n, 1, &img, msg, sizeof msg);
        const double took = seconds_now() - t0;
        slowest = took > slowest ? took : slowest;
        ck_assert_msg(st == DH_OK || st == DH_ERR_MALFORMED, "trial %d: status %d: %s", trial,
                      (int)st, msg);
        if (st == DH_OK) {
            changed += memcmp(img->pixels, original->pixels, 64 * 64 * 2) != 0;
            dh_dicom_image_free(img);
        } else {
            ck_assert_msg(strstr(msg, codec) != NULL, "trial %d: %s", trial, msg);
            failed++;
        }
        free(b.p);
    }
    /* The mutations do reach the decoder: most are refused or change the image (J2K's coding
     * passes are resilient, most damage only changes values; HTJ2K's is refused more often). */
    ck_assert_int_gt(failed, 0);
    ck_assert_msg(failed + changed > 300, "%d refused, %d changed of 400", failed, changed);
    dh_dicom_image_free(original);
    ck_assert_msg(slowest < 1.0, "slowest corrupt read took %.3f s", slowest);
    free(clean.p);
    free(stream.p);
}
END_TEST

/* Cut at many points, a 512x512 frame fails at once, the codec and OpenJPEG's reason named. */
START_TEST(truncated_streams_fail_at_once)
{
    const int htj2k = _i;
    buf stream = ct_like_stream(htj2k, 512, 10);
    const size_t whole = stream.n;
    placed p;
    double slowest = 0;
    for (size_t keep = 2; keep < whole - 2; keep += whole / 29 + 1) {
        stream.n = keep;
        place(&p, &stream, 1, ONE_FRAGMENT_EACH);
        synth s = j2k_synth(htj2k ? TS_HTJ2K_LOSSLESS : TS_J2K, 16, 12, 0, NULL, &p.e);
        s.rows = s.columns = 512;
        const double t0 = seconds_now();
        expect_malformed(&s, htj2k ? "HTJ2K frame 1" : "JPEG 2000 frame 1");
        const double took = seconds_now() - t0;
        slowest = took > slowest ? took : slowest;
    }
    /* Only the end-of-code-stream marker missing: strict decoding refuses that too. */
    stream.n = whole - 2;
    place(&p, &stream, 1, ONE_FRAGMENT_EACH);
    synth s = j2k_synth(htj2k ? TS_HTJ2K_LOSSLESS : TS_J2K, 16, 12, 0, NULL, &p.e);
    s.rows = s.columns = 512;
    expect_malformed(&s, htj2k ? "HTJ2K frame 1: corrupt code stream"
                               : "JPEG 2000 frame 1: corrupt code stream");
    ck_assert_msg(slowest < 1.0, "slowest truncated read took %.3f s", slowest);
    free(stream.p);
}
END_TEST

static Suite *jpeg2000_suite(void)
{
    const dh_test valid[] = {DH_TEST_LOOP(decodes_every_fragment_layout, LAYOUTS),
                             DH_TEST(round_trips_every_depth_and_sign),
                             DH_TEST(decodes_the_same_with_more_codec_threads),
                             DH_TEST(decodes_htj2k_from_openjph),
                             DH_TEST(round_trips_the_sample_data),
                             DH_TEST(the_dataset_rules_where_the_stream_disagrees),
                             DH_TEST(tolerates_padding_and_a_jp2_wrapper)};
    const dh_test bad[] = {DH_TEST(refuses_streams_that_do_not_fit_the_dataset),
                           DH_TEST(refuses_marker_codes_inside_packet_data),
                           DH_TEST_LOOP(corrupt_streams_are_errors_not_crashes, 2),
                           DH_TEST_LOOP(truncated_streams_fail_at_once, 2)};
    Suite *s = suite_create("dicom_jpeg2000");
    dh_test_add_case(s, "valid", 60, DH_TESTS(valid));
    dh_test_add_case(s, "bad", 120, DH_TESTS(bad));
    return s;
}

int main(void) { return dh_test_run(jpeg2000_suite()); }
