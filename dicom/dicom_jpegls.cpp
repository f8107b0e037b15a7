// SPDX-License-Identifier: MIT
/*
 * dicom_jpegls.cpp: JPEG-LS through CharLS 2 (Debian's libcharls), in both directions.
 *
 * Why not DCMTK's dcmjpls: it carries its own copy of an old CharLS that checks corrupt or merely
 * unusual streams with assert(), so one bad fragment (a RESET value above 255 is enough, and the
 * standard allows up to MAXVAL) aborts the whole host process. CharLS 2 returns an error code
 * instead. dcmjpls is not linked at all: its bundled CharLS exports symbols of the same names as
 * CharLS 2's, and with both in one process DCMTK's encoder bound to the wrong ones and crashed.
 * So the writer encodes JPEG-LS here too.
 */
#include "dicom_internal.h"

#include <charls/charls.h>

#include <cstring>
#include <memory>
#include <vector>

namespace dh_dicom_impl {

namespace {

struct decoder_free {
    void operator()(charls_jpegls_decoder *d) const { charls_jpegls_decoder_destroy(d); }
};
struct encoder_free {
    void operator()(charls_jpegls_encoder *e) const { charls_jpegls_encoder_destroy(e); }
};

/* A frame starts with its SOI marker. */
const frame_marker jpegls_soi = {"JPEG-LS", "SOI", {0xff, 0xd8}, 2};

/* One frame's code stream: its fragments joined, then an EOI marker. CharLS 2.4 decodes a stream
 * that stops short (a truncated file) slowly when the stream's bytes end before the image does:
 * 7 s for a 256 x 256 frame cut anywhere, minutes for a large X-ray, a hang to the caller. A
 * marker past the end makes it stop there and report the stream as corrupt in microseconds; a
 * complete stream has ended at its own EOI before and never sees the extra one. */
const Uint8 *frame_stream(const std::vector<fragment> &items, size_t first, size_t end,
                          std::vector<Uint8> &joined, uint64_t &length)
{
    join_fragments(items, first, end, joined);
    joined.push_back(0xff);
    joined.push_back(0xd9);
    length = joined.size();
    return joined.data();
}

[[noreturn]] void fail_charls(uint32_t frame, const char *step, charls_jpegls_errc e)
{
    fail(DH_DICOM_ERR_MALFORMED, "JPEG-LS frame %u: %s: %s", frame + 1, step,
         charls_get_error_message(e));
}

/* Decodes one frame into cells[rows * columns]: 8-bit samples widen, 9..16-bit ones are copied. */
void decode_frame(const Uint8 *stream, uint64_t length, const dh_dicom_image &img,
                  uint32_t frame, uint16_t *cells)
{
    if (length <= 2) /* the guard marker alone */
        fail(DH_DICOM_ERR_MALFORMED, "JPEG-LS frame %u has no bytes", frame + 1);
    std::unique_ptr<charls_jpegls_decoder, decoder_free> d(charls_jpegls_decoder_create());
    if (!d)
        throw std::bad_alloc();
    charls_jpegls_errc e = charls_jpegls_decoder_set_source_buffer(d.get(), stream, length);
    if (e == charls::jpegls_errc::success)
        e = charls_jpegls_decoder_read_header(d.get());
    if (e != charls::jpegls_errc::success)
        fail_charls(frame, "unreadable header", e);
    charls_frame_info info{};
    e = charls_jpegls_decoder_get_frame_info(d.get(), &info);
    if (e != charls::jpegls_errc::success)
        fail_charls(frame, "unreadable frame header", e);
    if (info.width != img.format.columns || info.height != img.format.rows ||
        info.component_count != 1)
        fail(DH_DICOM_ERR_MALFORMED,
             "JPEG-LS frame %u is %ux%u with %d component(s), the dataset "
             "says %ux%u grayscale",
             frame + 1, info.width, info.height, info.component_count, img.format.columns,
             img.format.rows);
    if (info.bits_per_sample > (int32_t)img.format.bits_allocated)
        fail(DH_DICOM_ERR_MALFORMED,
             "JPEG-LS frame %u has %d-bit samples, more than BitsAllocated %u", frame + 1,
             info.bits_per_sample, img.format.bits_allocated);

    const size_t n = (size_t)img.format.rows * img.format.columns;
    if (info.bits_per_sample > 8) {
        e = charls_jpegls_decoder_decode_to_buffer(d.get(), cells, n * 2, 0);
    } else {
        std::vector<uint8_t> bytes(n);
        e = charls_jpegls_decoder_decode_to_buffer(d.get(), bytes.data(), n, 0);
        for (size_t i = 0; i < n; i++)
            cells[i] = bytes[i];
    }
    if (e != charls::jpegls_errc::success)
        fail_charls(frame, "corrupt code stream", e);
}

/* Encodes one frame of masked cells losslessly. */
std::vector<uint8_t> encode_frame(const void *cells, size_t cells_bytes, uint32_t rows,
                                  uint32_t columns, int precision, uint32_t frame)
{
    std::unique_ptr<charls_jpegls_encoder, encoder_free> e(charls_jpegls_encoder_create());
    if (!e)
        throw std::bad_alloc();
    charls_frame_info info{};
    info.width = columns;
    info.height = rows;
    info.bits_per_sample = precision;
    info.component_count = 1;
    size_t capacity = 0;
    std::vector<uint8_t> out;
    charls_jpegls_errc err = charls_jpegls_encoder_set_frame_info(e.get(), &info);
    if (err == charls::jpegls_errc::success)
        err = charls_jpegls_encoder_get_estimated_destination_size(e.get(), &capacity);
    if (err == charls::jpegls_errc::success) {
        out.resize(capacity);
        err = charls_jpegls_encoder_set_destination_buffer(e.get(), out.data(), out.size());
    }
    if (err == charls::jpegls_errc::success)
        err = charls_jpegls_encoder_encode_from_buffer(e.get(), cells, cells_bytes, 0);
    size_t written = 0;
    if (err == charls::jpegls_errc::success)
        err = charls_jpegls_encoder_get_bytes_written(e.get(), &written);
    if (err != charls::jpegls_errc::success)
        fail(DH_DICOM_ERR_INTERNAL, "JPEG-LS encoding of frame %u failed: %s", frame + 1,
             charls_get_error_message(err));
    out.resize(written);
    return out;
}

} // namespace

void decode_jpegls(DcmPixelSequence &seq, const dh_dicom_image &img, uint16_t *cells)
{
    const std::vector<fragment> items = fragment_list(seq);
    const std::vector<size_t> starts = frame_starts(items, img.frames, jpegls_soi);
    const size_t frame_cells = (size_t)img.format.rows * img.format.columns;
    std::vector<Uint8> joined;
    for (uint32_t f = 0; f < img.frames; f++) {
        uint64_t length = 0;
        const Uint8 *stream = frame_stream(items, starts[f], starts[f + 1], joined, length);
        decode_frame(stream, length, img, f, cells + f * frame_cells);
    }
}

void encode_jpegls_pixels(DcmDataset &ds)
{
    const native_pixels px = native_pixels_of(ds, "JPEG-LS");
    /* The precision of the stream is the cell up to HighBit; CharLS takes 2 to 16 bits. */
    const int precision = px.high_bit + 1;
    if (precision < 2)
        fail(DH_DICOM_ERR_UNSUPPORTED, "JPEG-LS is written for HighBit 1 or above only");
    /* Two's complement samples repeat their sign above HighBit; JPEG-LS takes the bits up to
     * HighBit as an unsigned sample and the reader sign-extends them again. */
    const uint16_t mask = (uint16_t)((1u << precision) - 1u);
    const size_t frame_cells = (size_t)px.rows * px.columns;
    std::vector<uint16_t> words(px.allocated == 16 ? frame_cells : 0);
    std::vector<uint8_t> bytes(px.allocated == 8 ? frame_cells : 0);
    encapsulate_frames(px, EXS_JPEGLSLossless, "JPEG-LS", [&](const Uint8 *cells, uint32_t f) {
        const void *masked;
        if (px.allocated == 16) {
            memcpy(words.data(), cells, frame_cells * 2); /* host order, as DCMTK keeps it */
            for (uint16_t &w : words)
                w &= mask;
            masked = words.data();
        } else {
            for (size_t i = 0; i < frame_cells; i++)
                bytes[i] = (uint8_t)(cells[i] & mask);
            masked = bytes.data();
        }
        return encode_frame(masked, frame_cells * (px.allocated / 8), px.rows, px.columns,
                            precision, f);
    });
}

} // namespace dh_dicom_impl
