// SPDX-License-Identifier: MIT
/*
 * dicom_bytes.c: the test files' byte writer (dicom_bytes.h).
 */
#include "dicom_bytes.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * A tiny explicit VR little endian writer
 * ------------------------------------------------------------------------------------------- */

void put(buf *b, const void *data, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 256;
        b->p = realloc(b->p, b->cap);
        ck_assert_ptr_nonnull(b->p);
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
}
void put16(buf *b, uint16_t v)
{
    uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    put(b, x, 2);
}
void put32(buf *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(b, x, 4);
}

void el_header(buf *b, uint16_t g, uint16_t e, const char *vr, uint32_t len)
{
    put16(b, g);
    put16(b, e);
    put(b, vr, 2);
    if (strstr("OB OW SQ UN UT OF OD OL", vr)) {
        put16(b, 0);
        put32(b, len);
    } else {
        put16(b, (uint16_t)len);
    }
}
/* A string value, padded to even length (UI with NUL, the others with a space). */
void el_str(buf *b, uint16_t g, uint16_t e, const char *vr, const char *s)
{
    size_t n = strlen(s);
    el_header(b, g, e, vr, (uint32_t)(n + (n & 1)));
    put(b, s, n);
    if (n & 1)
        put(b, strcmp(vr, "UI") == 0 ? "\0" : " ", 1);
}
void el_us(buf *b, uint16_t g, uint16_t e, uint16_t v)
{
    el_header(b, g, e, "US", 2);
    put16(b, v);
}
void el_bytes(buf *b, uint16_t g, uint16_t e, const char *vr, const void *d, size_t n)
{
    el_header(b, g, e, vr, (uint32_t)(n + (n & 1)));
    put(b, d, n);
    if (n & 1)
        put(b, "\0", 1);
}
/* Sequences and items of undefined length. */
void sq_begin(buf *b, uint16_t g, uint16_t e) { el_header(b, g, e, "SQ", 0xffffffffu); }
void item_begin(buf *b)
{
    put16(b, 0xfffe);
    put16(b, 0xe000);
    put32(b, 0xffffffffu);
}
void item_end(buf *b)
{
    put16(b, 0xfffe);
    put16(b, 0xe00d);
    put32(b, 0);
}
void sq_end(buf *b)
{
    put16(b, 0xfffe);
    put16(b, 0xe0dd);
    put32(b, 0);
}


/* Preamble, magic and a meta header naming the transfer syntax. */
void file_begin(buf *b, const char *ts)
{
    buf meta = {0};
    el_bytes(&meta, 0x0002, 0x0001, "OB", "\0\1", 2);
    el_str(&meta, 0x0002, 0x0002, "UI", SC_CT);
    el_str(&meta, 0x0002, 0x0003, "UI", "1.2.3.4.5");
    if (ts != NULL) /* NULL: a meta header without TransferSyntaxUID */
        el_str(&meta, 0x0002, 0x0010, "UI", ts);
    uint8_t preamble[128] = {0};
    put(b, preamble, sizeof preamble);
    put(b, "DICM", 4);
    el_header(b, 0x0002, 0x0000, "UL", 4);
    put32(b, (uint32_t)meta.n);
    put(b, meta.p, meta.n);
    free(meta.p);
}


synth synth_default(uint16_t rows, uint16_t columns, uint16_t bits, uint16_t stored,
                    uint16_t high, uint16_t representation)
{
    synth s = {TS_EXPLICIT_LE, rows, columns, bits, stored, high, representation, 1,
               "MONOCHROME2", NULL, NULL, NULL, NULL, NULL, NULL, 1, NULL, 0, NULL};
    return s;
}

/* PixelData of undefined length: the offset table item, the fragments, the delimiter. */
static void put_encapsulated(buf *b, const encapsulated *e)
{
    el_header(b, 0x7fe0, 0x0010, "OB", 0xffffffffu);
    put16(b, 0xfffe);
    put16(b, 0xe000);
    put32(b, (uint32_t)(4 * e->table_entries));
    for (size_t i = 0; i < e->table_entries; i++)
        put32(b, e->table[i]);
    for (size_t i = 0; i < e->count; i++) {
        const buf *f = &e->fragments[i];
        put16(b, 0xfffe);
        put16(b, 0xe000);
        put32(b, (uint32_t)(f->n + (f->n & 1)));
        put(b, f->p, f->n);
        if (f->n & 1)
            put(b, "\0", 1);
    }
    sq_end(b);
}

buf synth_build(const synth *s)
{
    buf b = {0};
    file_begin(&b, s->ts);
    el_str(&b, 0x0008, 0x0016, "UI", SC_CT);
    el_str(&b, 0x0008, 0x0018, "UI", "1.2.3.4.5");
    el_str(&b, 0x0008, 0x0060, "CS", "CT");
    el_str(&b, 0x0020, 0x000d, "UI", "1.2.3.4");
    el_str(&b, 0x0020, 0x000e, "UI", "1.2.3.4.1");
    el_str(&b, 0x0020, 0x0013, "IS", "7");
    if (s->samples != NONE)
        el_us(&b, 0x0028, 0x0002, s->samples);
    if (s->photometric)
        el_str(&b, 0x0028, 0x0004, "CS", s->photometric);
    if (s->frames)
        el_str(&b, 0x0028, 0x0008, "IS", s->frames);
    if (s->rows != NONE)
        el_us(&b, 0x0028, 0x0010, s->rows);
    if (s->columns != NONE)
        el_us(&b, 0x0028, 0x0011, s->columns);
    if (s->bits_allocated != NONE)
        el_us(&b, 0x0028, 0x0100, s->bits_allocated);
    if (s->bits_stored != NONE)
        el_us(&b, 0x0028, 0x0101, s->bits_stored);
    if (s->high_bit != NONE)
        el_us(&b, 0x0028, 0x0102, s->high_bit);
    if (s->representation != NONE)
        el_us(&b, 0x0028, 0x0103, s->representation);
    if (s->window_center)
        el_str(&b, 0x0028, 0x1050, "DS", s->window_center);
    if (s->window_width)
        el_str(&b, 0x0028, 0x1051, "DS", s->window_width);
    if (s->intercept)
        el_str(&b, 0x0028, 0x1052, "DS", s->intercept);
    if (s->slope)
        el_str(&b, 0x0028, 0x1053, "DS", s->slope);
    if (s->groups)
        s->groups(&b);
    if (s->pixels == 1) {
        el_bytes(&b, 0x7fe0, 0x0010, s->bits_allocated == 8 ? "OB" : "OW", s->data, s->bytes);
    } else if (s->pixels == 2) {
        const buf fragment = {(uint8_t *)s->data, s->bytes, s->bytes};
        const encapsulated one = {NULL, 0, &fragment, 1};
        put_encapsulated(&b, &one);
    } else if (s->pixels == 3) {
        put_encapsulated(&b, s->encapsulated);
    }
    return b;
}

/* Reads a buffer and checks the status; returns the image (NULL on failure). */
dh_dicom_image *read_buf(const buf *b, int want_pixels, dh_status expect, char *msg)
{
    dh_dicom_image *img = NULL;
    dh_status s = dh_dicom_read_memory(b->p, b->n, want_pixels, &img, msg, DH_DICOM_MSG_LEN);
    ck_assert_msg(s == expect, "status %d, expected %d: %s", (int)s, (int)expect, msg);
    if (expect != DH_OK)
        ck_assert_ptr_null(img);
    return img;
}

/* The standard's rule written independently of the library: arithmetic, not shifts. */
int32_t reference_value(uint32_t raw, unsigned stored, unsigned high, int is_signed)
{
    uint32_t field = (raw / (1u << (high + 1 - stored))) % (1u << stored);
    if (is_signed && field >= (1u << (stored - 1)))
        return (int32_t)field - (int32_t)(1u << stored);
    return (int32_t)field;
}

int32_t sample(const dh_dicom_image *img, size_t i)
{
    return img->format.is_signed ? ((const int16_t *)img->pixels)[i]
                                 : ((const uint16_t *)img->pixels)[i];
}

void expect_malformed(const synth *s, const char *reason)
{
    buf b = synth_build(s);
    char msg[DH_DICOM_MSG_LEN];
    read_buf(&b, 1, DH_ERR_MALFORMED, msg);
    ck_assert_msg(strstr(msg, reason) != NULL, "'%s' does not say '%s'", msg, reason);
    free(b.p);
}

/* ---------------------------------------------------------------------------------------------
 * Code streams in fragments
 * ------------------------------------------------------------------------------------------- */

void place(placed *p, buf *streams, size_t frames, enum fragment_layout how)
{
    memset(p, 0, sizeof *p);
    ck_assert_uint_le(frames, 5);
    size_t count = 0, at = 0;
    for (size_t f = 0; f < frames; f++) {
        const size_t parts = how == ONE_FRAGMENT_EACH ? 1 : 3;
        p->table[f] = (uint32_t)at; /* item tag to item tag, 8 bytes of header each */
        for (size_t k = 0; k < parts; k++) {
            /* Only a frame's last fragment may carry a pad byte. */
            size_t from = k ? (streams[f].n * k / parts + 4) & ~(size_t)1 : 0;
            size_t to = k + 1 == parts ? streams[f].n
                                       : (streams[f].n * (k + 1) / parts + 4) & ~(size_t)1;
            buf *part = &p->fragments[count++];
            part->p = streams[f].p + from;
            part->n = to - from;
            at += 8 + part->n + (part->n & 1);
        }
    }
    p->e.fragments = p->fragments;
    p->e.count = count;
    p->e.table = p->table;
    p->e.table_entries = how == SPLIT_WITH_TABLE ? frames : 0;
}
