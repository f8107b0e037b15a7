// SPDX-License-Identifier: MIT
/*
 * test_dicom.c: the DICOM layer (dicom/dh_dicom.h). Synthetic files are built byte by byte here
 * (explicit VR little endian, written by dicom_bytes.c) to pin down the decoding rules:
 * masking below HighBit, sign extension for several BitsStored/HighBit, 8-bit data, enhanced
 * functional groups, lying headers and every refusal. The real files of ../shared/dicom are
 * checked against facts known independently: their raw words read straight from the file, and
 * sums and ranges that pydicom + numpy give. DCMTK's command-line tools, when installed, convert
 * synthetic files into every other transfer syntax, which must decode to the same values.
 */
#define _POSIX_C_SOURCE 200809L
#include "dh_dicom.h"
#include "dicom_bytes.h"
#include "test_support.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zlib.h>

/* ---------------------------------------------------------------------------------------------
 * Decoding rules on synthetic data
 * ------------------------------------------------------------------------------------------- */
static const struct layout {
    unsigned allocated, stored, high;
} layouts[] = {{16, 16, 15}, {16, 12, 11}, {16, 12, 15}, {16, 10, 9},  {16, 10, 13},
               {16, 14, 13}, {16, 1, 0},   {16, 8, 11},  {8, 8, 7},    {8, 7, 6},
               {8, 6, 7},    {8, 4, 3},    {16, 15, 15}, {16, 13, 14}, {8, 1, 7}};

START_TEST(masks_and_sign_extends_every_layout)
{
    const struct layout *l = &layouts[_i / 2];
    const int is_signed = _i % 2;
    const uint16_t rows = 7, columns = 9; /* odd: 8-bit data gets a pad byte */
    const size_t n = (size_t)rows * columns;
    uint8_t raw[7 * 9 * 2];
    dh_test_rng rng;
    dh_test_rng_seed(&rng, 1000 + (uint64_t)_i);
    for (size_t i = 0; i < sizeof raw; i++)
        raw[i] = (uint8_t)dh_test_rng_next(&rng); /* garbage in every unused bit too */
    synth s = synth_default(rows, columns, (uint16_t)l->allocated, (uint16_t)l->stored,
                            (uint16_t)l->high, (uint16_t)is_signed);
    s.data = raw;
    s.bytes = n * l->allocated / 8;
    buf b = synth_build(&s);
    char msg[DH_DICOM_MSG_LEN];
    dh_dicom_image *img = read_buf(&b, 1, DH_OK, msg);
    ck_assert_uint_eq(img->format.bits_allocated, l->allocated);
    ck_assert_uint_eq(img->format.bits_stored, l->stored);
    ck_assert_uint_eq(img->format.high_bit, l->high);
    ck_assert_int_eq(img->format.is_signed, is_signed);
    int saw_negative = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t cell = l->allocated == 16 ? (uint32_t)raw[2 * i] | (uint32_t)raw[2 * i + 1] << 8
                                           : raw[i];
        int32_t want = reference_value(cell, l->stored, l->high, is_signed);
        ck_assert_msg(sample(img, i) == want, "layout %u/%u/%u signed %d pixel %zu: %d != %d",
                      l->allocated, l->stored, l->high, is_signed, i, (int)sample(img, i),
                      (int)want);
        saw_negative |= want < 0;
    }
    if (is_signed)
        ck_assert_msg(saw_negative, "random data must exercise the sign bit");
    dh_dicom_image_free(img);
    free(b.p);
}
END_TEST

START_TEST(reads_the_same_from_a_file)
{
    uint16_t raw[64];
    for (int i = 0; i < 64; i++)
        raw[i] = (uint16_t)(0xF000 | (i * 61));
    synth s = synth_default(8, 8, 16, 12, 11, 1);
    s.data = raw;
    s.bytes = sizeof raw;
    s.slope = "2.5";
    s.intercept = "-1024";
    s.window_center = "40\\400";
    s.window_width = "350\\1500";
    buf b = synth_build(&s);
    char path[] = "/tmp/dh_test_dicom_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq((int)write(fd, b.p, b.n), (int)b.n);
    close(fd);
    char msg[DH_DICOM_MSG_LEN];
    dh_dicom_image *a = NULL, *m = read_buf(&b, 1, DH_OK, msg);
    ck_assert_int_eq(dh_dicom_read_file(path, 1, &a, msg, sizeof msg), DH_OK);
    unlink(path);
    ck_assert_mem_eq(a->pixels, m->pixels, sizeof raw);
    for (int i = 0; i < 64; i++)
        ck_assert_int_eq(sample(a, (size_t)i), reference_value(raw[i], 12, 11, 1));
    ck_assert_double_eq(a->format.rescale_slope, 2.5);
    ck_assert_double_eq(a->format.rescale_intercept, -1024);
    ck_assert_int_eq(a->has_rescale, 1);
    ck_assert_int_eq(a->has_window, 1);
    ck_assert_uint_eq(a->window_count, 2);
    ck_assert_double_eq(a->window_center, 40);
    ck_assert_double_eq(a->window_width, 350);
    ck_assert_str_eq(a->modality, "CT");
    ck_assert_str_eq(a->series_uid, "1.2.3.4.1");
    ck_assert_str_eq(a->transfer_syntax_uid, TS_EXPLICIT_LE);
    ck_assert_int_eq(a->has_instance_number, 1);
    ck_assert_int_eq(a->instance_number, 7);
    dh_dicom_image_free(a);
    dh_dicom_image_free(m);
    free(b.p);
}
END_TEST

START_TEST(applies_defaults_when_tags_are_missing)
{
    uint16_t raw[4] = {1, 2, 3, 4};
    synth s = synth_default(2, 2, 16, NONE, NONE, NONE);
    s.photometric = NULL;
    s.samples = NONE;
    s.data = raw;
    s.bytes = sizeof raw;
    buf b = synth_build(&s);
    char msg[DH_DICOM_MSG_LEN];
    dh_dicom_image *img = read_buf(&b, 1, DH_OK, msg);
    ck_assert_double_eq(img->format.rescale_slope, 1.0); /* not DCMTK's 0 for a missing tag */
    ck_assert_double_eq(img->format.rescale_intercept, 0.0);
    ck_assert_int_eq(img->has_rescale, 0);
    ck_assert_uint_eq(img->frames, 1);
    ck_assert_uint_eq(img->format.bits_stored, 16);
    ck_assert_uint_eq(img->format.high_bit, 15);
    ck_assert_int_eq(img->format.is_signed, 0);
    ck_assert_int_eq(img->format.photometric, DH_MONOCHROME2);
    ck_assert_int_eq(img->has_window, 0);
    ck_assert_int_eq(img->has_position, 0);
    ck_assert_ptr_null(img->frame_positions);
    ck_assert_int_eq(sample(img, 3), 4);
    dh_dicom_image_free(img);
    free(b.p);
}
END_TEST

START_TEST(infers_the_syntax_when_the_meta_header_lacks_it)
{
    uint16_t raw[6] = {0x8001, 2, 0xffff, 4, 5, 0x0fff};
    synth s = synth_default(2, 3, 16, 12, 11, 1);
    s.ts = NULL;
    s.data = raw;
    s.bytes = sizeof raw;
    buf b = synth_build(&s);
    char msg[DH_DICOM_MSG_LEN];
    dh_dicom_image *img = read_buf(&b, 1, DH_OK, msg);
    ck_assert_str_eq(img->transfer_syntax_uid, TS_EXPLICIT_LE); /* detected from the data */
    ck_assert_int_eq(sample(img, 0), 1);
    ck_assert_int_eq(sample(img, 2), -1);
    ck_assert_int_eq(sample(img, 5), -1);
    dh_dicom_image_free(img);
    free(b.p);
}
END_TEST

/* Enhanced CT: orientation and pixel measures shared, position and rescale per frame. */
static const char *enhanced_slope = "2";
static const char *enhanced_last_intercept = "-100";
static void enhanced_groups(buf *b)
{
    sq_begin(b, 0x5200, 0x9229);
    item_begin(b);
    sq_begin(b, 0x0020, 0x9116);
    item_begin(b);
    el_str(b, 0x0020, 0x0037, "DS", "1\\0\\0\\0\\1\\0");
    item_end(b);
    sq_end(b);
    sq_begin(b, 0x0028, 0x9110);
    item_begin(b);
    el_str(b, 0x0028, 0x0030, "DS", "0.5\\0.75");
    item_end(b);
    sq_end(b);
    sq_begin(b, 0x0028, 0x9132);
    item_begin(b);
    el_str(b, 0x0028, 0x1050, "DS", "50");
    el_str(b, 0x0028, 0x1051, "DS", "500");
    item_end(b);
    sq_end(b);
    item_end(b);
    sq_end(b);

    sq_begin(b, 0x5200, 0x9230);
    for (int f = 0; f < 3; f++) {
        char z[32];
        snprintf(z, sizeof z, "-10\\20.5\\%g", 10.0 + 2.5 * f);
        item_begin(b);
        sq_begin(b, 0x0020, 0x9113);
        item_begin(b);
        el_str(b, 0x0020, 0x0032, "DS", z);
        item_end(b);
        sq_end(b);
        sq_begin(b, 0x0028, 0x9145);
        item_begin(b);
        el_str(b, 0x0028, 0x1052, "DS", f == 2 ? enhanced_last_intercept : "-100");
        el_str(b, 0x0028, 0x1053, "DS", enhanced_slope);
        el_str(b, 0x0028, 0x1054, "LO", "HU");
        item_end(b);
        sq_end(b);
        item_end(b);
    }
    sq_end(b);
}

START_TEST(reads_enhanced_functional_groups)
{
    uint16_t raw[3 * 4 * 5];
    for (int i = 0; i < 60; i++)
        raw[i] = (uint16_t)(i * 50);
    synth s = synth_default(4, 5, 16, 12, 11, 0);
    s.frames = "3";
    s.groups = enhanced_groups;
    s.data = raw;
    s.bytes = sizeof raw;
    enhanced_last_intercept = "-100";
    buf b = synth_build(&s);
    char msg[DH_DICOM_MSG_LEN];
    dh_dicom_image *img = read_buf(&b, 1, DH_OK, msg);
    ck_assert_uint_eq(img->frames, 3);
    ck_assert_int_eq(img->has_rescale, 1);
    ck_assert_double_eq(img->format.rescale_slope, 2.0);
    ck_assert_double_eq(img->format.rescale_intercept, -100.0);
    ck_assert_str_eq(img->rescale_type, "HU");
    ck_assert_int_eq(img->has_orientation, 1);
    ck_assert_double_eq(img->orientation[4], 1.0);
    ck_assert_int_eq(img->has_pixel_spacing, 1);
    ck_assert_double_eq(img->pixel_spacing[1], 0.75);
    ck_assert_int_eq(img->has_window, 1);
    ck_assert_double_eq(img->window_width, 500);
    ck_assert_ptr_nonnull(img->frame_positions);
    for (int f = 0; f < 3; f++) {
        ck_assert_double_eq(img->frame_positions[3 * f + 0], -10.0);
        ck_assert_double_eq(img->frame_positions[3 * f + 1], 20.5);
        ck_assert_double_eq(img->frame_positions[3 * f + 2], 10.0 + 2.5 * f);
    }
    ck_assert_int_eq(img->has_position, 1);
    ck_assert_double_eq(img->position[2], 10.0);
    ck_assert_int_eq(sample(img, 59), 59 * 50);
    dh_dicom_image_free(img);
    free(b.p);

    /* One frame with another intercept: one rescale cannot describe the volume. */
    enhanced_last_intercept = "-1024";
    b = synth_build(&s);
    read_buf(&b, 1, DH_ERR_UNSUPPORTED, msg);
    ck_assert_ptr_nonnull(strstr(msg, "different rescale"));
    free(b.p);
    enhanced_last_intercept = "-100";
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Refusals: every one with its status and a reason a person can act on
 * ------------------------------------------------------------------------------------------- */
static void expect_refusal(synth s, dh_status status, const char *reason)
{
    buf b = synth_build(&s);
    char msg[DH_DICOM_MSG_LEN];
    for (int want = 0; want <= 1; want++) { /* the metadata-only scan refuses it as well */
        read_buf(&b, want, status, msg);
        ck_assert_msg(strstr(msg, reason) != NULL, "message '%s' lacks '%s'", msg, reason);
    }
    free(b.p);
}

START_TEST(refuses_lying_headers_before_allocating)
{
    static uint8_t nine_kb[9216];
    synth s = synth_default(46341, 46341, 16, 16, 15, 0); /* 4.3 GB claimed */
    s.data = nine_kb;
    s.bytes = sizeof nine_kb;
    expect_refusal(s, DH_ERR_MALFORMED, "PixelData too short");

    s = synth_default(48, 48, 16, 16, 15, 0); /* one frame present, five claimed */
    s.frames = "5";
    s.data = nine_kb;
    s.bytes = 48 * 48 * 2;
    expect_refusal(s, DH_ERR_MALFORMED, "5 frame(s)");

    s = synth_default(46341, 46341, 16, 16, 15, 0); /* compressed: bounded by the ratio */
    s.ts = TS_RLE;
    s.pixels = 2;
    s.data = nine_kb;
    s.bytes = sizeof nine_kb;
    expect_refusal(s, DH_ERR_MALFORMED, "implausible geometry");

    s = synth_default(16, 16, 16, 16, 15, 0); /* compressed: fewer fragments than frames */
    s.ts = TS_RLE;
    s.frames = "4";
    s.pixels = 2;
    s.data = nine_kb;
    s.bytes = 600;
    expect_refusal(s, DH_ERR_MALFORMED, "only 1 fragment");

    /* Fragments under a native syntax: the undefined length (FFFFFFFF) is no length at all, and
     * once passed for 4 GB of native pixels (1.1 GB allocated from 816 bytes: fuzzing). */
    s = synth_default(53768, 10240, 16, 12, 11, 1);
    s.pixels = 2;
    s.data = nine_kb;
    s.bytes = 126;
    expect_refusal(s, DH_ERR_MALFORMED, "PixelData is encapsulated (undefined length) although "
                                        "Little Endian Explicit is a native transfer syntax");
}
END_TEST

START_TEST(refuses_missing_empty_and_short_pixel_data)
{
    static uint16_t raw[64];
    synth s = synth_default(8, 8, 16, 12, 11, 0);
    s.pixels = 0;
    expect_refusal(s, DH_ERR_MALFORMED, "no pixel data");
    s.pixels = 1;
    s.data = raw;
    s.bytes = 0;
    expect_refusal(s, DH_ERR_MALFORMED, "present but empty");
    s.bytes = 100;
    expect_refusal(s, DH_ERR_MALFORMED, "PixelData too short: it holds 100 bytes");

    /* A buffer cut inside PixelData: the value ends before its declared length. */
    s.bytes = sizeof raw;
    buf b = synth_build(&s);
    char msg[DH_DICOM_MSG_LEN];
    dh_dicom_image *img = NULL;
    ck_assert_int_eq(dh_dicom_read_memory(b.p, b.n - 20, 1, &img, msg, sizeof msg),
                     DH_ERR_MALFORMED);
    ck_assert_ptr_null(img);
    ck_assert_ptr_nonnull(strstr(msg, "truncated"));
    /* Cut inside the header, and not DICOM at all. */
    ck_assert_int_eq(dh_dicom_read_memory(b.p, 200, 1, &img, msg, sizeof msg), DH_ERR_MALFORMED);
    ck_assert_int_eq(dh_dicom_read_memory("hello, world", 12, 1, &img, msg, sizeof msg),
                     DH_ERR_MALFORMED);
    ck_assert_ptr_nonnull(strstr(msg, "not a DICOM file"));
    ck_assert_int_eq(dh_dicom_read_memory(b.p, 0, 1, &img, msg, sizeof msg), DH_ERR_MALFORMED);
    ck_assert_int_eq(dh_dicom_read_memory(NULL, 5, 1, &img, msg, sizeof msg),
                     DH_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(dh_dicom_read_file("/nonexistent/x.dcm", 1, &img, msg, sizeof msg),
                     DH_ERR_IO);
    ck_assert_ptr_nonnull(strstr(msg, "No such file"));
    free(b.p);
}
END_TEST

/* Caps this test's address space 1 GiB above what the process maps now, so that allocating a
 * length a header merely claims fails loudly (DCMTK's "Virtual Memory exhausted", or ASan's
 * report) instead of passing unnoticed on an overcommitting host. Only in Check's fork mode,
 * where the cap ends with the test's own process. */
static void cap_address_space(void)
{
    const char *fork_mode = getenv("CK_FORK");
    if (fork_mode && strcmp(fork_mode, "no") == 0)
        return;
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (!f)
        return;
    if (fscanf(f, "%lu", &pages) != 1)
        pages = 0;
    fclose(f);
    struct rlimit r;
    if (pages == 0 || getrlimit(RLIMIT_AS, &r) != 0)
        return;
    rlim_t cap = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + ((rlim_t)1 << 30);
    if (r.rlim_max != RLIM_INFINITY && cap > r.rlim_max)
        return;
    r.rlim_cur = cap;
    setrlimit(RLIMIT_AS, &r);
}

/* The same file with its dataset deflated (raw RFC 1951, as the standard says). */
static buf deflate_file(const buf *plain)
{
    const uint8_t *p = plain->p;
    uint32_t meta_len = p[140] | (uint32_t)p[141] << 8 | (uint32_t)p[142] << 16 |
                        (uint32_t)p[143] << 24;
    size_t start = 144 + meta_len;
    uLong room = compressBound((uLong)(plain->n - start)) + 64;
    uint8_t *z = malloc(room);
    ck_assert_ptr_nonnull(z);
    z_stream zs = {0};
    ck_assert_int_eq(deflateInit2(&zs, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
    zs.next_in = (Bytef *)(p + start);
    zs.avail_in = (uInt)(plain->n - start);
    zs.next_out = z;
    zs.avail_out = (uInt)room;
    ck_assert_int_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
    buf d = {0};
    file_begin(&d, TS_DEFLATED);
    put(&d, z, zs.total_out);
    deflateEnd(&zs);
    free(z);
    return d;
}

/* Found by fuzzing: a length field far beyond the bytes that follow it was allocated by DCMTK
 * before the read failed, from memory (DCMTK's buffer stream cannot defer long values) and from
 * deflated datasets, file or memory (nor can its zlib filter). */
START_TEST(refuses_lengths_beyond_the_data_without_allocating_them)
{
    static uint16_t raw[64];
    for (size_t i = 0; i < 64; i++)
        raw[i] = (uint16_t)(i * 1031u);
    synth s = synth_default(8, 8, 16, 16, 15, 0);
    s.data = raw;
    s.bytes = sizeof raw;
    buf plain = synth_build(&s);
    const uint32_t claim = 0xfffffff0u; /* PixelData claims 4 GB and carries 128 bytes */
    uint8_t *len_field = plain.p + plain.n - sizeof raw - 4;
    for (int k = 0; k < 4; k++)
        len_field[k] = (uint8_t)(claim >> (8 * k));
    buf deflated = deflate_file(&plain);

    char path[] = "/tmp/dh_test_deflated_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, deflated.p, deflated.n), (ssize_t)deflated.n);
    close(fd);

    cap_address_space();
    char msg[DH_DICOM_MSG_LEN];
    for (int want = 0; want <= 1; want++) {
        const buf *inputs[2] = {&plain, &deflated};
        for (int i = 0; i < 2; i++) {
            read_buf(inputs[i], want, DH_ERR_MALFORMED, msg);
            ck_assert_msg(strstr(msg, "truncated") && !strstr(msg, "exhausted"),
                          "input %d: '%s'", i, msg);
        }
        dh_dicom_image *img = NULL;
        ck_assert_int_eq(dh_dicom_read_file(path, want, &img, msg, sizeof msg),
                         DH_ERR_MALFORMED);
        ck_assert_ptr_null(img);
        ck_assert_msg(strstr(msg, "truncated") && !strstr(msg, "exhausted"), "file: '%s'", msg);
    }
    unlink(path);

    /* The deflated file with an honest length still reads, from memory and from disk. */
    for (int k = 0; k < 4; k++)
        len_field[k] = (uint8_t)(sizeof raw >> (8 * k));
    free(deflated.p);
    deflated = deflate_file(&plain);
    dh_dicom_image *img = read_buf(&deflated, 1, DH_OK, msg);
    ck_assert_str_eq(img->transfer_syntax_uid, TS_DEFLATED);
    ck_assert_int_eq(memcmp(img->pixels, raw, sizeof raw), 0);
    dh_dicom_image_free(img);
    free(plain.p);
    free(deflated.p);
}
END_TEST

START_TEST(refuses_layouts_it_does_not_read)
{
    static uint8_t raw[4 * 4 * 4 * 3];
    synth s = synth_default(4, 4, 32, 32, 31, 0);
    s.data = raw;
    s.bytes = 4 * 4 * 4;
    expect_refusal(s, DH_ERR_UNSUPPORTED, "BitsAllocated 32");
    s = synth_default(4, 4, 16, 17, 16, 0);
    s.data = raw;
    s.bytes = 32;
    expect_refusal(s, DH_ERR_MALFORMED, "BitsStored 17");
    s.bits_stored = 12;
    s.high_bit = 16;
    expect_refusal(s, DH_ERR_MALFORMED, "HighBit 16");
    s.high_bit = 9; /* the stored bits would start below bit 0 */
    expect_refusal(s, DH_ERR_MALFORMED, "HighBit 9");
    s.high_bit = 11;
    s.bits_stored = 0;
    expect_refusal(s, DH_ERR_MALFORMED, "BitsStored 0");
    s.bits_stored = 12;
    s.representation = 2;
    expect_refusal(s, DH_ERR_MALFORMED, "PixelRepresentation 2");
    s.representation = 0;
    s.rows = 0;
    expect_refusal(s, DH_ERR_MALFORMED, "Rows");
    s.rows = 4;
    s.frames = "0";
    expect_refusal(s, DH_ERR_MALFORMED, "NumberOfFrames");
    s.frames = NULL;
    s.slope = "abc";
    expect_refusal(s, DH_ERR_MALFORMED, "RescaleSlope");
    s.slope = NULL;
    s.photometric = "PALETTE COLOR";
    expect_refusal(s, DH_ERR_UNSUPPORTED, "PALETTE COLOR");
    s.photometric = "YBR_FULL";
    s.samples = 3;
    s.bits_allocated = 8;
    s.bits_stored = 8;
    s.high_bit = 7;
    s.bytes = 48;
    expect_refusal(s, DH_ERR_UNSUPPORTED, "YBR_FULL");
    s.photometric = "MONOCHROME2";
    expect_refusal(s, DH_ERR_UNSUPPORTED, "SamplesPerPixel 3");
    s = synth_default(8, 8, 1, 1, 0, 0);
    s.data = raw;
    s.bytes = 8;
    expect_refusal(s, DH_ERR_UNSUPPORTED, "1-bit");
    s = synth_default(8, 8, 16, 16, 15, 0);
    s.ts = TS_J2K;
    s.pixels = 2;
    s.data = raw;
    s.bytes = 40;
    /* JPEG 2000 is read (test_dicom_jpeg2000.c): 40 bytes of zeros are no code stream, which
     * only decoding finds out. */
    buf b = synth_build(&s);
    char msg[DH_DICOM_MSG_LEN];
    dh_dicom_image_free(read_buf(&b, 0, DH_OK, msg));
    read_buf(&b, 1, DH_ERR_MALFORMED, msg);
    ck_assert_msg(strstr(msg, "JPEG 2000 frame 1 does not start with a code stream"), "%s", msg);
    free(b.p);
    s.ts = "1.2.840.10008.1.2.4.92"; /* JPEG 2000 Part 2 multi-component: colour, never read */
    expect_refusal(s, DH_ERR_UNSUPPORTED, "unsupported transfer syntax");
    expect_refusal(s, DH_ERR_UNSUPPORTED, "(1.2.840.10008.1.2.4.92)");
    s.ts = "1.2.840.10008.1.2.4.100"; /* MPEG2 */
    expect_refusal(s, DH_ERR_UNSUPPORTED, "1.2.840.10008.1.2.4.100");
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Every other transfer syntax, made by DCMTK's tools from a synthetic file
 * ------------------------------------------------------------------------------------------- */
/* A synthetic file written as in.dcm into a fresh temporary folder, and the path out.dcm beside
 * it for a DCMTK tool to write; tool_files_remove deletes both and the folder. */
typedef struct tool_files {
    char dir[64], in[128], out[128];
} tool_files;

static void tool_files_create(tool_files *t, const char *dir_template, const buf *b)
{
    snprintf(t->dir, sizeof t->dir, "%s", dir_template);
    ck_assert_ptr_nonnull(mkdtemp(t->dir));
    snprintf(t->in, sizeof t->in, "%s/in.dcm", t->dir);
    snprintf(t->out, sizeof t->out, "%s/out.dcm", t->dir);
    FILE *f = fopen(t->in, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(b->p, 1, b->n, f), b->n);
    fclose(f);
}

static void tool_files_remove(const tool_files *t)
{
    unlink(t->in);
    unlink(t->out);
    rmdir(t->dir);
}

static const struct conversion {
    const char *tool, *args, *ts;
    int lossless_only_clean; /* 1: the codec needs values without garbage above HighBit */
} conversions[] = {
    {"dcmconv", "+ti", "1.2.840.10008.1.2", 0},
    {"dcmconv", "+tb", "1.2.840.10008.1.2.2", 0},
    {"dcmconv", "+td", "1.2.840.10008.1.2.1.99", 0},
    {"dcmcrle", "", "1.2.840.10008.1.2.5", 1},
    {"dcmcjpeg", "+e1", "1.2.840.10008.1.2.4.70", 1},
    {"dcmcjpeg", "+el", "1.2.840.10008.1.2.4.57", 1},
    {"dcmcjpls", "+el", "1.2.840.10008.1.2.4.80", 1},
};

START_TEST(decodes_every_transfer_syntax_to_the_same_values)
{
    const struct conversion *c = &conversions[_i / 3];
    dh_test_need_tool(c->tool);
    /* Three formats: 16-bit signed 12-bit, 16-bit unsigned 16-bit, 8-bit unsigned. */
    static const struct layout formats[] = {{16, 12, 11}, {16, 16, 15}, {8, 8, 7}};
    const struct layout *l = &formats[_i % 3];
    const int is_signed = (_i % 3) == 0;
    const uint16_t rows = 33, columns = 20;
    const size_t n = (size_t)rows * columns * 2; /* two frames */
    uint8_t raw[33 * 20 * 2 * 2];
    uint16_t ct[33 * 20 * 2];
    dh_test_fill_ct_like(ct, n, 77 + (uint64_t)_i);
    for (size_t i = 0; i < n; i++) {
        uint16_t v = ct[i];
        if (l->allocated == 8) {
            raw[i] = (uint8_t)(v >> 4);
            continue;
        }
        if (is_signed) { /* centred, properly sign-extended, plus garbage where allowed */
            int32_t sv = (int32_t)v - 2048;
            v = (uint16_t)(sv & 0x0fff);
            if (sv < 0)
                v |= c->lossless_only_clean ? 0xf000 : 0x0000;
            if (!c->lossless_only_clean)
                v |= (uint16_t)((i * 7919u) & 0xf000); /* garbage the reader must ignore */
        } else {
            v = (uint16_t)(v * 16 + (i & 15));
        }
        raw[2 * i] = (uint8_t)v;
        raw[2 * i + 1] = (uint8_t)(v >> 8);
    }
    synth s = synth_default(rows, columns, (uint16_t)l->allocated, (uint16_t)l->stored,
                            (uint16_t)l->high, (uint16_t)is_signed);
    s.frames = "2";
    s.data = raw;
    s.bytes = n * l->allocated / 8;
    buf b = synth_build(&s);
    tool_files t;
    tool_files_create(&t, "/tmp/dh_test_ts_XXXXXX", &b);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s %s %s %s >/dev/null 2>&1", c->tool, c->args, t.in, t.out);
    int rc = system(cmd);
    ck_assert_msg(rc == 0, "'%s' failed", cmd);

    char msg[DH_DICOM_MSG_LEN];
    dh_dicom_image *img = NULL;
    dh_status st = dh_dicom_read_file(t.out, 1, &img, msg, sizeof msg);
    ck_assert_msg(st == DH_OK, "%s %s: %s", c->tool, c->args, msg);
    ck_assert_str_eq(img->transfer_syntax_uid, c->ts);
    ck_assert_uint_eq(img->frames, 2);
    for (size_t i = 0; i < n; i++) {
        uint32_t cell = l->allocated == 16 ? (uint32_t)raw[2 * i] | (uint32_t)raw[2 * i + 1] << 8
                                           : raw[i];
        int32_t want = reference_value(cell, l->stored, l->high, is_signed);
        ck_assert_msg(sample(img, i) == want, "%s %s pixel %zu: %d != %d", c->tool, c->args, i,
                      (int)sample(img, i), (int)want);
    }
    dh_dicom_image_free(img);
    tool_files_remove(&t);
    free(b.p);
}
END_TEST

/* 12-bit JPEG extended (process 2/4) is lossy: the values come back near, not equal. */
START_TEST(decodes_12_bit_jpeg_extended)
{
    dh_test_need_tool("dcmcjpeg");
    enum { R = 64, C = 64 };
    static uint16_t smooth[R * C];
    for (int y = 0; y < R; y++)
        for (int x = 0; x < C; x++)
            smooth[y * C + x] = (uint16_t)(300 + 25 * x + 20 * y); /* 300..3135: 12 bits */
    synth s = synth_default(R, C, 16, 12, 11, 0);
    s.data = smooth;
    s.bytes = sizeof smooth;
    buf b = synth_build(&s);
    tool_files t;
    tool_files_create(&t, "/tmp/dh_test_jpeg12_XXXXXX", &b);
    char cmd[512];
    /* +sr: keep the stored range (by default dcmcjpeg stretches min..max over 12 bits) */
    snprintf(cmd, sizeof cmd, "dcmcjpeg +ee +sr %s %s >/dev/null 2>&1", t.in, t.out);
    ck_assert_int_eq(system(cmd), 0);
    char msg[DH_DICOM_MSG_LEN];
    dh_dicom_image *img = NULL;
    ck_assert_msg(dh_dicom_read_file(t.out, 1, &img, msg, sizeof msg) == DH_OK, "%s", msg);
    ck_assert_str_eq(img->transfer_syntax_uid, "1.2.840.10008.1.2.4.51");
    /* pydicom with libjpeg decodes the same file with a mean absolute error of 0.49 and at most
     * 2 against the ramp; a wrong shift or byte order would be off by hundreds. */
    double err = 0, bias = 0;
    for (int i = 0; i < R * C; i++) {
        int d = sample(img, (size_t)i) - (int)smooth[i];
        err += abs(d);
        bias += d;
    }
    ck_assert_msg(err / (R * C) < 2.0, "mean error %g on a smooth ramp", err / (R * C));
    ck_assert_msg(bias / (R * C) > -1.0 && bias / (R * C) < 1.0, "bias %g", bias / (R * C));
    dh_dicom_image_free(img);
    tool_files_remove(&t);
    free(b.p);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Real files
 * ------------------------------------------------------------------------------------------- */
static dh_dicom_image *read_shared(const char *name, int want_pixels)
{
    char msg[DH_DICOM_MSG_LEN];
    dh_dicom_image *img = NULL;
    dh_status s = dh_dicom_read_file(dh_test_shared(name), want_pixels, &img, msg, sizeof msg);
    ck_assert_msg(s == DH_OK, "%s: %s", name, msg);
    return img;
}

/* The raw little-endian words that end a file (these files end with their PixelData). */
static uint16_t *tail_words(const char *name, size_t count)
{
    FILE *f = fopen(dh_test_shared(name), "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, -(long)(count * 2), SEEK_END), 0);
    uint8_t *bytes = malloc(count * 2);
    uint16_t *words = malloc(count * 2);
    ck_assert_uint_eq(fread(bytes, 1, count * 2, f), count * 2);
    fclose(f);
    for (size_t i = 0; i < count; i++)
        words[i] = (uint16_t)(bytes[2 * i] | bytes[2 * i + 1] << 8);
    free(bytes);
    return words;
}

typedef struct facts {
    const char *name;
    uint32_t rows, columns, frames, stored;
    int is_signed;
    dh_photometric photometric;
    double slope, intercept;
    int32_t min, max;
    int64_t sum; /* pydicom + numpy: ds.pixel_array.astype(int64).sum() */
} facts;

static const facts real[] = {
    {"pydicom_CT_small.dcm", 128, 128, 1, 16, 1, DH_MONOCHROME2, 1, -1024, 128, 2191, 14826310},
    {"fo-dicom_D_CLUNIE_CT1_RLE_FRAGS.dcm", 512, 512, 1, 16, 1, DH_MONOCHROME2, 1, -1024, -2000,
     2278, 40028413},
    {"fo-dicom_IM-0001-0001-0001.dcm", 512, 512, 1, 12, 0, DH_MONOCHROME2, 1, -1024, 0, 2480,
     262529812},
    {"pylibjpeg-data_RG2_JPLL.dcm", 2140, 1760, 1, 10, 0, DH_MONOCHROME2, 1, 0, 0, 893,
     1696297313},
    {"highdicom_dx_image_8bit.dcm", 169, 211, 1, 8, 0, DH_MONOCHROME1, 1, 0, 5, 255, 5913505},
    {"fo-dicom_CR-MONO1-10-chest", 440, 440, 1, 10, 0, DH_MONOCHROME1, 1, 0, 0, 979, 97159572},
    {"cr/cr1_6154.dcm", 16, 16, 1, 12, 0, DH_MONOCHROME1, 0.684, 200, 1994, 2802, 646091},
    {"dcm_qa_12bit_12bitUnsigned.dcm", 384, 384, 1, 12, 0, DH_MONOCHROME2, 1, 0, 0, 2908,
     39116505},
    {"dcm_qa_12bit_12bitSigned_0x0F0F.dcm", 384, 384, 1, 12, 1, DH_MONOCHROME2, 1, 0, -2048,
     2047, 38125324},
    {"pydicom-data_emri_small.dcm", 64, 64, 10, 12, 0, DH_MONOCHROME2, 1, 0, 0, 467, 4493276},
    {"pydicom-data_emri_small_big_endian.dcm", 64, 64, 10, 12, 0, DH_MONOCHROME2, 1, 0, 0, 467,
     4493276},
    {"pydicom-data_emri_small_RLE.dcm", 64, 64, 10, 12, 0, DH_MONOCHROME2, 1, 0, 0, 467, 4493276},
    {"pydicom-data_emri_small_jpeg_ls_lossless.dcm", 64, 64, 10, 12, 0, DH_MONOCHROME2, 1, 0, 0,
     467, 4493276},
    /* JPEG 2000, beside ../shared/dicom (its README); sums from pydicom + pylibjpeg-openjpeg. The
     * lossy one decodes to the same values there: both are OpenJPEG 2.5. The last one's code
     * stream says unsigned, the dataset signed: the dataset wins. */
    {"../dicom-jpeg2000/pydicom-data_MR2_J2KR.dcm", 1024, 1024, 1, 12, 0, DH_MONOCHROME2,
     3.774114, 0.000061, 0, 595, 78730838},
    {"../dicom-jpeg2000/pydicom-data_MR2_J2KI.dcm", 1024, 1024, 1, 12, 0, DH_MONOCHROME2,
     3.774114, 0.000061, 0, 600, 78784483},
    {"../dicom-jpeg2000/pydicom-data_RG3_J2KR.dcm", 1760, 1760, 1, 10, 0, DH_MONOCHROME1, 1, 0, 0,
     1023, 1030616989},
    {"../dicom-jpeg2000/pydicom_J2K_pixelrep_mismatch.dcm", 512, 512, 1, 13, 1, DH_MONOCHROME2, 1,
     0, -2000, 1896, -172605258},
};

START_TEST(real_files_give_their_known_values)
{
    const facts *k = &real[_i];
    dh_dicom_image *img = read_shared(k->name, 1);
    ck_assert_uint_eq(img->format.rows, k->rows);
    ck_assert_uint_eq(img->format.columns, k->columns);
    ck_assert_uint_eq(img->frames, k->frames);
    ck_assert_uint_eq(img->format.bits_stored, k->stored);
    ck_assert_int_eq(img->format.is_signed, k->is_signed);
    ck_assert_int_eq(img->format.photometric, k->photometric);
    ck_assert_double_eq_tol(img->format.rescale_slope, k->slope, 1e-12);
    ck_assert_double_eq_tol(img->format.rescale_intercept, k->intercept, 1e-12);
    int32_t lo = INT32_MAX, hi = INT32_MIN;
    int64_t sum = 0;
    const size_t n = (size_t)img->format.rows * img->format.columns * img->frames;
    for (size_t i = 0; i < n; i++) {
        int32_t v = sample(img, i);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        sum += v;
    }
    ck_assert_int_eq(lo, k->min);
    ck_assert_int_eq(hi, k->max);
    ck_assert_int_eq(sum, k->sum);

    /* The metadata-only read agrees and loads no pixels. */
    dh_dicom_image *meta = read_shared(k->name, 0);
    ck_assert_ptr_null(meta->pixels);
    ck_assert_uint_eq(meta->format.rows, img->format.rows);
    ck_assert_uint_eq(meta->frames, img->frames);
    ck_assert_str_eq(meta->transfer_syntax_uid, img->transfer_syntax_uid);
    dh_dicom_image_free(meta);

    /* Reading the same bytes from memory gives the same image. */
    FILE *f = fopen(dh_test_shared(k->name), "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    uint8_t *bytes = malloc((size_t)size);
    ck_assert_uint_eq(fread(bytes, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    char msg[DH_DICOM_MSG_LEN];
    dh_dicom_image *mem = NULL;
    ck_assert_int_eq(dh_dicom_read_memory(bytes, (size_t)size, 1, &mem, msg, sizeof msg), DH_OK);
    free(bytes);
    ck_assert_mem_eq(mem->pixels, img->pixels, n * 2);
    ck_assert_str_eq(mem->transfer_syntax_uid, img->transfer_syntax_uid);
    ck_assert_str_eq(mem->series_uid, img->series_uid);
    ck_assert_double_eq(mem->format.rescale_slope, img->format.rescale_slope);
    ck_assert_int_eq(mem->has_position, img->has_position);
    dh_dicom_image_free(mem);
    dh_dicom_image_free(img);
}
END_TEST

START_TEST(stripes_and_high_bits_read_as_the_standard_says)
{
    static const struct {
        const char *name;
        int is_signed;
        int32_t stripe_0f0f, stripe_ffff;
        size_t min_garbage; /* pixels with bits set above HighBit */
    } cases[] = {
        {"dcm_qa_12bit_12bitUnsigned.dcm", 0, 0, 0, 42},
        {"dcm_qa_12bit_12bitUnsigned_0x0F0F.dcm", 0, 3855, 4095, 42},
        {"dcm_qa_12bit_12bitSigned_0x0F0F.dcm", 1, -241, -1, 42},
    };
    for (size_t c = 0; c < 3; c++) {
        dh_dicom_image *img = read_shared(cases[c].name, 1);
        const size_t n = (size_t)img->format.rows * img->format.columns;
        uint16_t *raw = tail_words(cases[c].name, n);
        size_t garbage = 0, stripes_0f0f = 0, stripes_ffff = 0;
        for (size_t i = 0; i < n; i++) {
            ck_assert_int_eq(sample(img, i), reference_value(raw[i], 12, 11, cases[c].is_signed));
            garbage += (raw[i] >> 12) != 0;
            if (raw[i] == 0x0F0F) {
                stripes_0f0f++;
                ck_assert_int_eq(sample(img, i), cases[c].stripe_0f0f);
            }
            if (raw[i] == 0xFFFF) {
                stripes_ffff++;
                ck_assert_int_eq(sample(img, i), cases[c].stripe_ffff);
            }
        }
        if (c == 0) {
            ck_assert_uint_eq(garbage, 42); /* the README's 42 pixels, masked */
        } else {
            ck_assert_uint_eq(stripes_0f0f, 232);
            ck_assert_uint_eq(stripes_ffff, 128);
        }
        ck_assert_uint_ge(garbage, cases[c].min_garbage);
        free(raw);
        dh_dicom_image_free(img);
    }
}
END_TEST

START_TEST(emri_small_decodes_identically_in_four_syntaxes)
{
    static const char *names[] = {"pydicom-data_emri_small.dcm",
                                  "pydicom-data_emri_small_big_endian.dcm",
                                  "pydicom-data_emri_small_RLE.dcm",
                                  "pydicom-data_emri_small_jpeg_ls_lossless.dcm"};
    static const char *syntaxes[] = {"1.2.840.10008.1.2.1", "1.2.840.10008.1.2.2",
                                     "1.2.840.10008.1.2.5", "1.2.840.10008.1.2.4.80"};
    dh_dicom_image *ref = read_shared(names[0], 1);
    const size_t n = 64 * 64 * 10;
    uint16_t *raw = tail_words(names[0], n);
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(sample(ref, i), reference_value(raw[i], 12, 11, 0));
    free(raw);
    for (int k = 0; k < 4; k++) {
        dh_dicom_image *img = read_shared(names[k], 1);
        ck_assert_str_eq(img->transfer_syntax_uid, syntaxes[k]);
        ck_assert_int_eq(img->is_encapsulated, k >= 2);
        ck_assert_mem_eq(img->pixels, ref->pixels, n * 2);
        dh_dicom_image_free(img);
    }
    dh_dicom_image_free(ref);
}
END_TEST

START_TEST(real_headers_and_special_cases)
{
    dh_dicom_image *img = read_shared("fo-dicom_CR-MONO1-10-chest", 1); /* no preamble, no meta */
    ck_assert_str_eq(img->transfer_syntax_uid, "1.2.840.10008.1.2");
    ck_assert_str_eq(img->photometric_name, "MONOCHROME1");
    uint16_t *raw = tail_words("fo-dicom_CR-MONO1-10-chest", 440 * 440);
    for (size_t i = 0; i < 440 * 440; i++)
        ck_assert_int_eq(sample(img, i), reference_value(raw[i], 10, 9, 0));
    free(raw);
    dh_dicom_image_free(img);

    img = read_shared("fo-dicom_D_CLUNIE_CT1_RLE_FRAGS.dcm", 0);
    ck_assert_int_eq(img->is_encapsulated, 1);
    ck_assert_uint_lt(img->pixel_data_bytes, 512 * 512 * 2); /* the fragments' bytes */
    ck_assert_str_eq(img->modality, "CT");
    ck_assert_int_eq(img->has_position, 1);
    dh_dicom_image_free(img);

    img = read_shared("highdicom_dx_image_8bit.dcm", 1); /* 8 bits, widened, odd length */
    ck_assert_uint_eq(img->format.bits_allocated, 8);
    FILE *f = fopen(dh_test_shared("highdicom_dx_image_8bit.dcm"), "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, -(long)(169 * 211), SEEK_END);
    for (size_t i = 0; i < 169 * 211; i++)
        ck_assert_int_eq(sample(img, i), fgetc(f));
    fclose(f);
    dh_dicom_image_free(img);

    img = read_shared("cr/cr2_6247.dcm", 1);
    ck_assert_str_eq(img->modality, "CR");
    ck_assert_int_eq(img->has_rescale, 1);
    dh_dicom_image_free(img);
}
END_TEST

START_TEST(bad_real_files_get_their_reason)
{
    static const struct {
        const char *name;
        dh_status status;
        const char *reason;
    } bad[] = {
        {"malformed/pydicom_MR_truncated.dcm", DH_ERR_MALFORMED, "pixel data truncated"},
        {"malformed/fo-dicom_GH1146.dcm", DH_ERR_MALFORMED, "present but empty"},
        {"malformed/fo-dicom_GH178.dcm", DH_ERR_MALFORMED, "no pixel data"},
        {"malformed/pydicom_meta_missing_tsyntax.dcm", DH_ERR_MALFORMED, "no BitsAllocated"},
        {"unsupported/pydicom_liver_1frame.dcm", DH_ERR_UNSUPPORTED, "1-bit"},
        {"unsupported/pydicom_SC_rgb_small_odd.dcm", DH_ERR_UNSUPPORTED, "RGB"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        for (int want = 0; want <= 1; want++) {
            char msg[DH_DICOM_MSG_LEN];
            dh_dicom_image *img = NULL;
            dh_status s = dh_dicom_read_file(dh_test_shared(bad[k].name), want, &img, msg,
                                             sizeof msg);
            ck_assert_msg(s == bad[k].status, "%s: status %d (%s)", bad[k].name, (int)s, msg);
            ck_assert_ptr_null(img);
            ck_assert_msg(strstr(msg, bad[k].reason) != NULL, "%s: '%s' lacks '%s'",
                          bad[k].name, msg, bad[k].reason);
        }
    }
}
END_TEST

/* Several threads reading different files at once give what one thread gives. */
typedef struct reader_job {
    const char *name;
    int64_t sum;
    int failed;
} reader_job;

static void *reader(void *arg)
{
    reader_job *job = arg;
    for (int round = 0; round < 4; round++) {
        char msg[DH_DICOM_MSG_LEN];
        dh_dicom_image *img = NULL;
        if (dh_dicom_read_file(dh_test_shared(job->name), 1, &img, msg, sizeof msg) != DH_OK) {
            job->failed = 1;
            return NULL;
        }
        int64_t sum = 0;
        for (size_t i = 0; i < (size_t)img->format.rows * img->format.columns * img->frames; i++)
            sum += sample(img, i);
        job->failed |= sum != job->sum;
        dh_dicom_image_free(img);
    }
    return NULL;
}

START_TEST(reads_in_parallel)
{
    reader_job jobs[] = {{real[1].name, real[1].sum, 0}, {real[2].name, real[2].sum, 0},
                         {real[12].name, real[12].sum, 0}, {real[0].name, real[0].sum, 0},
                         {real[11].name, real[11].sum, 0}, {real[5].name, real[5].sum, 0}};
    pthread_t threads[6];
    for (int t = 0; t < 6; t++)
        ck_assert_int_eq(pthread_create(&threads[t], NULL, reader, &jobs[t]), 0);
    for (int t = 0; t < 6; t++) {
        pthread_join(threads[t], NULL);
        ck_assert_msg(!jobs[t].failed, "%s read differently in a thread", jobs[t].name);
    }
}
END_TEST

static Suite *dicom_suite(void)
{
    const dh_test rules[] = {DH_TEST_LOOP(masks_and_sign_extends_every_layout,
                                          (int)(2 * sizeof layouts / sizeof layouts[0])),
                             DH_TEST(reads_the_same_from_a_file),
                             DH_TEST(applies_defaults_when_tags_are_missing),
                             DH_TEST(reads_enhanced_functional_groups),
                             DH_TEST(infers_the_syntax_when_the_meta_header_lacks_it)};
    const dh_test refusals[] = {DH_TEST(refuses_lying_headers_before_allocating),
                                DH_TEST(refuses_missing_empty_and_short_pixel_data),
                                DH_TEST(refuses_lengths_beyond_the_data_without_allocating_them),
                                DH_TEST(refuses_layouts_it_does_not_read)};
    const dh_test syntaxes[] = {{decodes_every_transfer_syntax_to_the_same_values,
                                 (int)(3 * sizeof conversions / sizeof conversions[0])},
                                DH_TEST(decodes_12_bit_jpeg_extended)};
    Suite *s = suite_create("dicom");
    dh_test_add_case(s, "decoding rules", 0, DH_TESTS(rules));
    dh_test_add_case(s, "refusals", 0, DH_TESTS(refusals));
    dh_test_add_case(s, "transfer syntaxes", 60, DH_TESTS(syntaxes));
    return s;
}

static Suite *real_file_suite(void)
{
    const dh_test files[] = {
        DH_TEST_LOOP(real_files_give_their_known_values, (int)(sizeof real / sizeof real[0])),
        DH_TEST(stripes_and_high_bits_read_as_the_standard_says),
        DH_TEST(emri_small_decodes_identically_in_four_syntaxes),
        DH_TEST(real_headers_and_special_cases),
        DH_TEST(bad_real_files_get_their_reason),
        DH_TEST(reads_in_parallel)};
    return dh_test_suite("dicom real files", 60, DH_TESTS(files));
}

int main(int argc, char **argv)
{
    return dh_test_main_suites(argc, argv, dicom_suite, real_file_suite);
}
