// SPDX-License-Identifier: MIT
/*
 * dicom_bytes.h: DICOM files built byte by byte for the tests of the DICOM layer: a tiny explicit
 * VR little endian writer, synthetic images described field by field (any of them may lie or be
 * missing), and the standard's rule for stored values written independently of the library.
 */
#ifndef DH_TEST_DICOM_BYTES_H
#define DH_TEST_DICOM_BYTES_H

#include <stddef.h>
#include <stdint.h>

#include "dh_dicom.h"
#include "dicomhist.h"

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

#define TS_EXPLICIT_LE "1.2.840.10008.1.2.1"
#define TS_RLE "1.2.840.10008.1.2.5"
#define TS_DEFLATED "1.2.840.10008.1.2.1.99"
#define TS_J2K "1.2.840.10008.1.2.4.90"
#define SC_CT "1.2.840.10008.5.1.4.1.1.2"

/* Encapsulated pixel data item by item: a basic offset table of `table_entries` offsets (0: an
 * empty one) and the fragments, each padded to even length as written. */
typedef struct encapsulated {
    const uint32_t *table;
    size_t table_entries;
    const buf *fragments;
    size_t count;
} encapsulated;

/* Frames' code streams (one per frame) in fragments laid out as PS3.5 A.4 allows: one fragment
 * per frame, or each frame cut into three fragments with or without a basic offset table. */
enum fragment_layout { ONE_FRAGMENT_EACH, SPLIT_WITH_TABLE, SPLIT_WITHOUT_TABLE, LAYOUTS };

typedef struct placed {
    buf fragments[16];
    uint32_t table[8];
    encapsulated e;
} placed;

/* Points p's fragments into the streams (which must outlive p) for up to 5 frames; cuts fall at
 * even offsets past each stream's first 4 bytes, so later parts never start with a start marker. */
void place(placed *p, buf *streams, size_t frames, enum fragment_layout how);

/* What a synthetic image says about itself; NULL strings and 0xffff numbers are left out. */
typedef struct synth {
    const char *ts;
    uint16_t rows, columns, bits_allocated, bits_stored, high_bit, representation, samples;
    const char *photometric, *frames, *slope, *intercept, *window_center, *window_width;
    void (*groups)(buf *b); /* writes (5200,9229)/(5200,9230) when set */
    int pixels; /* 0: no PixelData; 1: native; 2: data as one fragment; 3: `encapsulated` */
    const void *data;
    size_t bytes;
    const struct encapsulated *encapsulated;
} synth;

#define NONE 0xffff

/* Appends bytes, little-endian words and elements (string values padded to even length, UI with
 * NUL, the others with a space); sequences and items of undefined length. */
void put(buf *b, const void *data, size_t n);
void put16(buf *b, uint16_t v);
void put32(buf *b, uint32_t v);
void el_header(buf *b, uint16_t g, uint16_t e, const char *vr, uint32_t len);
void el_str(buf *b, uint16_t g, uint16_t e, const char *vr, const char *s);
void el_us(buf *b, uint16_t g, uint16_t e, uint16_t v);
void el_bytes(buf *b, uint16_t g, uint16_t e, const char *vr, const void *d, size_t n);
void sq_begin(buf *b, uint16_t g, uint16_t e);
void item_begin(buf *b);
void item_end(buf *b);
void sq_end(buf *b);

/* Preamble, magic and a meta header naming the transfer syntax (NULL: none named). */
void file_begin(buf *b, const char *ts);

/* A MONOCHROME2 single-sample image in explicit VR little endian, native pixels not yet set. */
synth synth_default(uint16_t rows, uint16_t columns, uint16_t bits, uint16_t stored,
                    uint16_t high, uint16_t representation);

/* The whole file a synth describes; free b.p after use. */
buf synth_build(const synth *s);

/* Reads a buffer with dh_dicom_read_memory and asserts the status; the image (NULL on failure). */
dh_dicom_image *read_buf(const buf *b, int want_pixels, dh_status expect, char *msg);

/* Builds s, reads it with pixels and asserts DH_ERR_MALFORMED with `reason` in the message. */
void expect_malformed(const synth *s, const char *reason);

/* The standard's rule written independently of the library: arithmetic, not shifts. */
int32_t reference_value(uint32_t raw, unsigned stored, unsigned high, int is_signed);

/* Sample i of a read image, signed or not as the image says. */
int32_t sample(const dh_dicom_image *img, size_t i);

#endif /* DH_TEST_DICOM_BYTES_H */
