// SPDX-License-Identifier: MIT
/*
 * test_dicom_jpegls.c: JPEG-LS pixel data (dicom/dicom_jpegls.cpp). The code streams are made here
 * with CharLS's own encoder, with parameters DCMTK's tools never write (a RESET up to MAXVAL,
 * which the CharLS copy inside DCMTK 3.6.7 met with an assert that aborted the process), and
 * placed in fragments every way PS3.5 A.4 allows: one per frame, frames split with and without
 * a basic offset table, one frame over several fragments. Corrupt, truncated and mismatched
 * streams must come back as errors naming JPEG-LS, never as a crash. Streams from an independent
 * encoder (DCMTK's dcmcjpls) are decoded in test_dicom.c; our writer's streams are decoded by
 * pylibjpeg in sample_data/check_sample_data.py and by DCMTK's dcmdjpls in test_dicom_write.c.
 */
#define _POSIX_C_SOURCE 200809L
#include "dh_dicom.h"
#include "dicomhist.h"
#include "dicom_bytes.h"
#include "test_support.h"

#include <charls/charls.h>

#include <stdlib.h>
#include <string.h>

#define TS_JPEG_LS "1.2.840.10008.1.2.4.80"

enum { ROWS = 40, COLUMNS = 56, FRAME = ROWS * COLUMNS };

/* A code stream of one frame: samples of `precision` bits (one byte each up to 8, two above),
 * `reset` 0 for CharLS's defaults or the RESET of an LSE preset-parameters segment, with the
 * thresholds DCMTK 3.6.7 writes for 16-bit data when `dcmtk_thresholds` is set. */
static buf encode_with(const void *samples, uint32_t width, uint32_t height, int precision,
                       int components, int reset, int dcmtk_thresholds)
{
    charls_jpegls_encoder *e = charls_jpegls_encoder_create();
    ck_assert_ptr_nonnull(e);
    charls_frame_info info = {width, height, precision, components};
    ck_assert_int_eq(charls_jpegls_encoder_set_frame_info(e, &info), CHARLS_JPEGLS_ERRC_SUCCESS);
    if (reset) {
        charls_jpegls_pc_parameters pc = {(1 << precision) - 1, 0, 0, 0, reset};
        if (dcmtk_thresholds) {
            pc.threshold1 = 18;
            pc.threshold2 = 67;
            pc.threshold3 = 276;
        }
        ck_assert_int_eq(charls_jpegls_encoder_set_preset_coding_parameters(e, &pc),
                         CHARLS_JPEGLS_ERRC_SUCCESS);
    }
    size_t cap = 0;
    ck_assert_int_eq(charls_jpegls_encoder_get_estimated_destination_size(e, &cap),
                     CHARLS_JPEGLS_ERRC_SUCCESS);
    cap = 2 * cap + 4096; /* noise under unusual parameters may outgrow the estimate */
    buf out = {malloc(cap), 0, cap};
    ck_assert_ptr_nonnull(out.p);
    ck_assert_int_eq(charls_jpegls_encoder_set_destination_buffer(e, out.p, cap),
                     CHARLS_JPEGLS_ERRC_SUCCESS);
    const size_t bytes = (size_t)width * height * components * (precision > 8 ? 2 : 1);
    ck_assert_int_eq(charls_jpegls_encoder_encode_from_buffer(e, samples, bytes, 0),
                     CHARLS_JPEGLS_ERRC_SUCCESS);
    ck_assert_int_eq(charls_jpegls_encoder_get_bytes_written(e, &out.n),
                     CHARLS_JPEGLS_ERRC_SUCCESS);
    charls_jpegls_encoder_destroy(e);
    return out;
}

static buf encode(const void *samples, uint32_t width, uint32_t height, int precision,
                  int components, int reset)
{
    return encode_with(samples, width, height, precision, components, reset, 0);
}

/* Noise over the whole range: the worst case for the context statistics behind that assert. */
static void fill_noise(uint16_t *cells, size_t n, int precision, uint64_t seed)
{
    dh_test_rng rng;
    dh_test_rng_seed(&rng, seed);
    for (size_t i = 0; i < n; i++)
        cells[i] = (uint16_t)dh_test_rng_below(&rng, 1u << precision);
}

static synth jpegls_synth(uint16_t allocated, uint16_t stored, int is_signed, const char *frames,
                          const encapsulated *e)
{
    synth s = synth_default(ROWS, COLUMNS, allocated, stored, (uint16_t)(stored - 1),
                            (uint16_t)is_signed);
    s.ts = TS_JPEG_LS;
    s.frames = frames;
    s.pixels = 3;
    s.encapsulated = e;
    return s;
}

/* ---------------------------------------------------------------------------------------------
 * Valid streams
 * ------------------------------------------------------------------------------------------- */
START_TEST(decodes_every_fragment_layout)
{
    enum { FRAMES = 3 };
    const enum fragment_layout how = (enum fragment_layout)_i;
    static uint16_t cells[FRAMES * FRAME];
    fill_noise(cells, FRAMES * FRAME, 16, 11 + (uint64_t)_i);
    buf streams[FRAMES];
    for (int f = 0; f < FRAMES; f++) /* one frame with non-default parameters */
        streams[f] = encode(cells + f * FRAME, COLUMNS, ROWS, 16, 1, f == 1 ? 65535 : 0);
    placed p;
    place(&p, streams, FRAMES, how);
    synth s = jpegls_synth(16, 16, 0, "3", &p.e);
    buf b = synth_build(&s);
    char msg[DH_DICOM_MSG_LEN];
    dh_dicom_image *img = read_buf(&b, 1, DH_OK, msg);
    ck_assert_uint_eq(img->frames, FRAMES);
    ck_assert_int_eq(memcmp(img->pixels, cells, sizeof cells), 0);
    dh_dicom_image_free(img);
    free(b.p);
    for (int f = 0; f < FRAMES; f++)
        free(streams[f].p);
}
END_TEST

/* One stream placed as `how` says in a single-frame file of the given format and read back,
 * which must succeed; the stream is freed. */
static dh_dicom_image *read_one_stream(buf *stream, enum fragment_layout how,
                                       uint16_t allocated, uint16_t stored, int is_signed)
{
    placed p;
    place(&p, stream, 1, how);
    synth s = jpegls_synth(allocated, stored, is_signed, NULL, &p.e);
    buf b = synth_build(&s);
    char msg[DH_DICOM_MSG_LEN];
    dh_dicom_image *img = read_buf(&b, 1, DH_OK, msg);
    free(b.p);
    free(stream->p);
    return img;
}

START_TEST(decodes_one_frame_over_several_fragments)
{
    static uint16_t cells[FRAME];
    fill_noise(cells, FRAME, 12, 5);
    buf stream = encode(cells, COLUMNS, ROWS, 12, 1, 4000);
    dh_dicom_image *img = read_one_stream(&stream, SPLIT_WITHOUT_TABLE, 16, 12, 0);
    ck_assert_int_eq(memcmp(img->pixels, cells, sizeof cells), 0);
    dh_dicom_image_free(img);
}
END_TEST

/* Signed data is coded as its BitsStored-bit pattern (no sign copies above); the reader
 * sign-extends. 8-bit streams in 16-bit cells widen. */
START_TEST(sign_extends_and_widens)
{
    static uint16_t cells[FRAME];
    fill_noise(cells, FRAME, 12, 6);
    buf stream = encode(cells, COLUMNS, ROWS, 12, 1, 0);
    dh_dicom_image *img = read_one_stream(&stream, ONE_FRAGMENT_EACH, 16, 12, 1);
    for (size_t i = 0; i < FRAME; i++)
        ck_assert_int_eq(sample(img, i), reference_value(cells[i], 12, 11, 1));
    dh_dicom_image_free(img);

    static uint8_t bytes[FRAME];
    for (size_t i = 0; i < FRAME; i++)
        bytes[i] = (uint8_t)(cells[i] * 7);
    stream = encode(bytes, COLUMNS, ROWS, 8, 1, 0);
    img = read_one_stream(&stream, ONE_FRAGMENT_EACH, 16, 8, 0);
    for (size_t i = 0; i < FRAME; i++)
        ck_assert_int_eq(sample(img, i), bytes[i]);
    dh_dicom_image_free(img);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Streams that cannot be right
 * ------------------------------------------------------------------------------------------- */
START_TEST(refuses_streams_that_do_not_fit_the_dataset)
{
    static uint16_t cells[3 * FRAME];
    fill_noise(cells, 3 * FRAME, 16, 8);
    placed p;

    /* Three frames declared, two streams cut into three fragments with no table: no way to tell. */
    buf two[2] = {encode(cells, COLUMNS, ROWS, 16, 1, 0),
                  encode(cells + FRAME, COLUMNS, ROWS, 16, 1, 0)};
    place(&p, two, 2, SPLIT_WITHOUT_TABLE);
    synth s = jpegls_synth(16, 16, 0, "3", &p.e);
    expect_malformed(&s, "cannot tell which of the 6 JPEG-LS fragments belong to which of the 3");
    free(two[0].p);
    free(two[1].p);

    /* A stream of other dimensions, of three components, of more bits than the cells hold. */
    buf other = encode(cells, ROWS, COLUMNS, 16, 1, 0); /* transposed */
    place(&p, &other, 1, ONE_FRAGMENT_EACH);
    s = jpegls_synth(16, 16, 0, NULL, &p.e);
    expect_malformed(&s, "JPEG-LS frame 1 is 40x56 with 1 component(s), the dataset says 56x40");
    free(other.p);
    buf rgb = encode(cells, COLUMNS, ROWS / 3, 16, 3, 0);
    place(&p, &rgb, 1, ONE_FRAGMENT_EACH);
    s = jpegls_synth(16, 16, 0, NULL, &p.e);
    expect_malformed(&s, "with 3 component(s)");
    free(rgb.p);
    buf deep = encode(cells, COLUMNS, ROWS, 12, 1, 0);
    place(&p, &deep, 1, ONE_FRAGMENT_EACH);
    s = jpegls_synth(8, 8, 0, NULL, &p.e);
    expect_malformed(&s, "12-bit samples, more than BitsAllocated 8");
    free(deep.p);
}
END_TEST

/* A 12-bit CT-like frame, coded with the default parameters. */
static buf ct_like_stream(uint64_t seed)
{
    static uint16_t cells[FRAME];
    dh_test_fill_ct_like(cells, FRAME, seed);
    return encode(cells, COLUMNS, ROWS, 12, 1, 0);
}

/* Where the RESET field of a stream's LSE preset-parameters segment sits. */
static size_t reset_field(const buf *stream)
{
    for (size_t i = 0; i + 14 < stream->n; i++)
        if (stream->p[i] == 0xff && stream->p[i + 1] == 0xf8 && stream->p[i + 4] == 1)
            return i + 13; /* FF F8, length, ID 1, MAXVAL, T1, T2, T3, then RESET */
    ck_abort_msg("no LSE preset-parameters segment");
    return 0;
}

/* What fuzzing found: the sample X-ray coded with DCMTK's parameters (P 16, LSE with T1 18, T2 67,
 * T3 276, RESET 64), RESET raised to 14656 afterwards. On DCMTK's own stream the CharLS inside
 * DCMTK 3.6.7 hit an assert in its context update and aborted the process. */
START_TEST(a_raised_reset_is_an_error_not_an_abort)
{
    char msg[DH_DICOM_MSG_LEN];
    dh_dicom_image *xray = NULL;
    ck_assert_int_eq(dh_dicom_read_file(DH_SAMPLE_DATA "/xray_projection.dcm", 1, &xray, msg,
                                        sizeof msg),
                     DH_OK);
    buf stream = encode_with(xray->pixels, xray->format.columns, xray->format.rows, 16, 1, 64, 1);
    const size_t reset = reset_field(&stream);
    ck_assert_uint_eq(stream.p[reset] << 8 | stream.p[reset + 1], 64);
    stream.p[reset] = 0x39;
    placed p;
    place(&p, &stream, 1, ONE_FRAGMENT_EACH);
    synth s = jpegls_synth(16, 16, 0, NULL, &p.e);
    s.rows = (uint16_t)xray->format.rows;
    s.columns = (uint16_t)xray->format.columns;
    expect_malformed(&s, "JPEG-LS frame 1: corrupt code stream");
    dh_dicom_image_free(xray);
    free(stream.p);
}
END_TEST

/* Every other corruption is an error or, where the stream still parses, some image. */
START_TEST(corrupt_streams_are_errors_not_crashes)
{
    buf stream = ct_like_stream(9);
    placed p;
    place(&p, &stream, 1, ONE_FRAGMENT_EACH);
    synth s = jpegls_synth(16, 12, 0, NULL, &p.e);

    buf clean = synth_build(&s);
    const size_t start = clean.n - stream.n - (stream.n & 1) - 8; /* the fragment's bytes */
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 2026);
    int failed = 0;
    for (int trial = 0; trial < 600; trial++) {
        buf b = {malloc(clean.n), clean.n, clean.n};
        ck_assert_ptr_nonnull(b.p);
        memcpy(b.p, clean.p, clean.n);
        for (uint32_t k = dh_test_rng_below(&rng, 4); k < 4; k++)
            b.p[start + dh_test_rng_below(&rng, (uint32_t)stream.n)] =
                (uint8_t)dh_test_rng_next(&rng);
        char msg[DH_DICOM_MSG_LEN];
        dh_dicom_image *img = NULL;
        dh_status st = dh_dicom_read_memory(b.p, b.n, 1, &img, msg, sizeof msg);
        ck_assert_msg(st == DH_OK || st == DH_ERR_MALFORMED, "trial %d: status %d: %s", trial,
                      (int)st, msg);
        if (st == DH_OK) {
            dh_dicom_image_free(img);
        } else {
            ck_assert_msg(strstr(msg, "JPEG-LS") != NULL, "trial %d: %s", trial, msg);
            failed++;
        }
        free(b.p);
    }
    ck_assert_int_gt(failed, 300); /* the mutations do reach the decoder */
    free(clean.p);
    free(stream.p);
}
END_TEST

START_TEST(truncated_streams_are_errors)
{
    buf stream = ct_like_stream(10);
    const size_t whole = stream.n;
    placed p;
    for (size_t keep = 2; keep < whole; keep += whole / 37 + 1) {
        stream.n = keep;
        place(&p, &stream, 1, ONE_FRAGMENT_EACH);
        synth s = jpegls_synth(16, 12, 0, NULL, &p.e);
        expect_malformed(&s, "JPEG-LS frame 1");
    }
    free(stream.p);
}
END_TEST

/* A stream that ends before its image does can make CharLS 2.4 crawl for about 6 s at the end of
 * its buffer (most cuts a few bytes short of the end of a low-noise frame do), whatever the frame's
 * size: a minute for ten such files, hours for a truncated multi-frame series. Each of these four
 * took 6 to 8 s; they now fail in milliseconds. The case runs under a timeout of 15 s, so the
 * crawl reads as a failure; no speed is measured. */
START_TEST(truncated_frames_fail_at_once)
{
    enum { SIDE = 128, FRAMES = 4 }; /* four single-frame files */
    static const size_t cut[FRAMES] = {3, 5, 6, 10};
    static uint16_t cells[SIDE * SIDE];
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 13);
    buf streams[FRAMES];
    for (int f = 0; f < FRAMES; f++) {
        for (size_t i = 0; i < SIDE * SIDE; i++)
            cells[i] = (uint16_t)(2000 + dh_test_rng_below(&rng, 4));
        streams[f] = encode(cells, SIDE, SIDE, 12, 1, 0);
        streams[f].n -= cut[f];
    }
    for (int f = 0; f < FRAMES; f++) {
        placed p;
        place(&p, &streams[f], 1, ONE_FRAGMENT_EACH);
        synth s = jpegls_synth(16, 12, 0, NULL, &p.e);
        s.rows = SIDE;
        s.columns = SIDE;
        expect_malformed(&s, "JPEG-LS frame 1: corrupt code stream");
    }
    for (int f = 0; f < FRAMES; f++)
        free(streams[f].p);
}
END_TEST

static Suite *jpegls_suite(void)
{
    const dh_test valid[] = {DH_TEST_LOOP(decodes_every_fragment_layout, LAYOUTS),
                             DH_TEST(decodes_one_frame_over_several_fragments),
                             DH_TEST(sign_extends_and_widens)};
    const dh_test bad[] = {DH_TEST(refuses_streams_that_do_not_fit_the_dataset),
                           DH_TEST(a_raised_reset_is_an_error_not_an_abort),
                           DH_TEST(corrupt_streams_are_errors_not_crashes),
                           DH_TEST(truncated_streams_are_errors)};
    const dh_test crawl[] = {DH_TEST(truncated_frames_fail_at_once)};
    Suite *s = suite_create("dicom_jpegls");
    dh_test_add_case(s, "valid", 0, DH_TESTS(valid));
    dh_test_add_case(s, "bad", 60, DH_TESTS(bad));
    dh_test_add_case(s, "crawl", 15, DH_TESTS(crawl));
    return s;
}

int main(void) { return dh_test_run(jpegls_suite()); }
