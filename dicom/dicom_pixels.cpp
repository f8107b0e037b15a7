// SPDX-License-Identifier: MIT
/*
 * dicom_pixels.cpp: PixelData itself. First a check of its real length against the geometry the
 * header claims, made before any value is loaded, decompressed or allocated (files in the wild
 * claim 46341 x 46341 with 9 KB of pixels); then decompression (DCMTK's codecs; CharLS 2 for
 * JPEG-LS, OpenJPEG for JPEG 2000 and HTJ2K) and the extraction of stored values exactly as the standard defines them: the
 * BitsStored bits ending at HighBit, sign-extended when PixelRepresentation is 1, whatever the
 * unused bits hold.
 */
#include "dicom_internal.h"

#include "dicom_gpu.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

namespace dh_dicom_impl {

/* Bytes the header's geometry needs. Cannot overflow: rows * columns * 2 < 2^33 and frames
 * < 2^31. */
static uint64_t needed_bytes(const dh_dicom_image &img)
{
    return (uint64_t)img.format.rows * img.format.columns * (img.format.bits_allocated / 8) *
           img.frames;
}

static DcmElement *pixel_element(DcmDataset &ds)
{
    DcmElement *el = nullptr;
    if (ds.findAndGetElement(DCM_PixelData, el).bad() || el == nullptr)
        fail(DH_DICOM_ERR_MALFORMED,
             "no pixel data: the dataset has no PixelData (7FE0,0010) element");
    return el;
}

static void check_native(DcmElement &el, E_TransferSyntax xfer, dh_dicom_image &img)
{
    if (el.getLengthField() == DCM_UndefinedLength)
        fail(DH_DICOM_ERR_MALFORMED,
             "PixelData is encapsulated (undefined length) although %s is a "
             "native transfer syntax",
             DcmXfer(xfer).getXferName());
    const uint64_t have = el.getLengthField();
    const uint64_t need = needed_bytes(img);
    img.pixel_data_bytes = have;
    if (have == 0)
        fail(DH_DICOM_ERR_MALFORMED, "PixelData (7FE0,0010) is present but empty (0 bytes)");
    if (have < need)
        fail(DH_DICOM_ERR_MALFORMED,
             "PixelData too short: it holds %llu bytes but %u rows x %u columns x %u frame(s) x "
             "%u bits need %llu",
             (unsigned long long)have, img.format.rows, img.format.columns, img.frames,
             img.format.bits_allocated, (unsigned long long)need);
}

static DcmPixelSequence *fragments_of(DcmElement &el)
{
    DcmPixelData *pd = dynamic_cast<DcmPixelData *>(&el);
    E_TransferSyntax rep = EXS_Unknown;
    const DcmRepresentationParameter *param = nullptr;
    DcmPixelSequence *seq = nullptr;
    if (pd != nullptr) {
        pd->getOriginalRepresentationKey(rep, param);
        if (pd->getEncapsulatedRepresentation(rep, param, seq).bad())
            seq = nullptr;
    }
    return seq;
}

static void check_encapsulated(DcmElement &el, E_TransferSyntax xfer, dh_dicom_image &img)
{
    DcmPixelSequence *seq = fragments_of(el);
    if (seq == nullptr) {
        if (el.getLengthField() == 0)
            fail(DH_DICOM_ERR_MALFORMED, "PixelData (7FE0,0010) is present but empty (0 bytes)");
        fail(DH_DICOM_ERR_MALFORMED,
             "PixelData is not encapsulated although %s is a compressed "
             "transfer syntax",
             DcmXfer(xfer).getXferName());
    }
    /* Item 0 is the basic offset table; the fragments follow. */
    const std::vector<DcmPixelItem *> list = items_in<DcmPixelItem>(*seq);
    const unsigned long items = list.size();
    uint64_t compressed = 0;
    for (unsigned long i = 1; i < items; i++)
        compressed += list[i]->getLengthField();
    img.pixel_data_bytes = compressed;
    if (items <= 1 || compressed == 0)
        fail(DH_DICOM_ERR_MALFORMED, "PixelData (7FE0,0010) is present but empty (no compressed "
                                     "fragment holds any byte)");
    const unsigned long fragments = items - 1;
    if (fragments < img.frames)
        fail(DH_DICOM_ERR_MALFORMED, "%u frames declared but PixelData holds only %lu fragment(s)",
             img.frames, fragments);
    const uint64_t need = needed_bytes(img);
    uint64_t allowed = compressed * DH_DICOM_MAX_EXPANSION; /* < 2^32 * 2^12: no overflow */
    if (allowed < DH_DICOM_EXPANSION_FLOOR)
        allowed = DH_DICOM_EXPANSION_FLOOR;
    if (need > allowed)
        fail(DH_DICOM_ERR_MALFORMED,
             "implausible geometry: %u rows x %u columns x %u frame(s) x %u bits would decode "
             "to %llu bytes from %llu compressed bytes (more than %u:1)",
             img.format.rows, img.format.columns, img.frames, img.format.bits_allocated,
             (unsigned long long)need, (unsigned long long)compressed, DH_DICOM_MAX_EXPANSION);
}

void check_pixel_data(DcmDataset &ds, E_TransferSyntax xfer, dh_dicom_image &img)
{
    DcmElement *el = pixel_element(ds);
    img.is_encapsulated = DcmXfer(xfer).isEncapsulated() ? 1 : 0;
    if (img.is_encapsulated)
        check_encapsulated(*el, xfer, img);
    else
        check_native(*el, xfer, img);
}

/* The standard's rule, one loop per signedness. `raw(i)` gives the i-th pixel cell. */
template <typename Raw>
static void extract(const Raw &raw, size_t n, const dh_dicom_image &img, uint16_t *out)
{
    const unsigned shift = img.format.high_bit + 1 - img.format.bits_stored;
    const uint32_t mask = (1u << img.format.bits_stored) - 1u; /* bits_stored <= 16 */
    if (!img.format.is_signed) {
        for (size_t i = 0; i < n; i++)
            out[i] = (uint16_t)((raw(i) >> shift) & mask);
        return;
    }
    const uint32_t sign = 1u << (img.format.bits_stored - 1);
    const int32_t span = (int32_t)(1u << img.format.bits_stored);
    for (size_t i = 0; i < n; i++) {
        uint32_t v = (raw(i) >> shift) & mask;
        int32_t s = (v & sign) ? (int32_t)v - span : (int32_t)v;
        int16_t s16 = (int16_t)s; /* in range: |s| <= 2^15 */
        uint16_t bits;
        memcpy(&bits, &s16, sizeof bits);
        out[i] = bits;
    }
}

/* DCMTK 3.6.7's JPEG decoder walks the markers of a fragment for its bit depth
 * (DJCodecDecoder::scanJpegDataForBitDepth) and never steps past a TEM marker (FF01): a fragment
 * with one where a marker is due hangs the process (found by fuzzing). This is the same walk;
 * it says whether DCMTK's would reach a TEM before a frame header or the end. */
static bool jpeg_marker_walk_stalls(const Uint8 *d, uint64_t n)
{
    uint64_t at = 0;
    while (at + 4 < n) {
        const unsigned marker = (unsigned)d[at] << 8 | d[at + 1];
        const uint64_t segment = ((unsigned)d[at + 2] << 8 | d[at + 3]) + 2u;
        if (marker == 0xff01)
            return true;
        if (marker >= 0xffc0 && marker <= 0xffcf && marker != 0xffc4 && marker != 0xffc8 &&
            marker != 0xffcc)
            return false; /* a frame header: DCMTK has its bit depth */
        if (marker == 0xffff)
            at += 1;
        else if (marker >= 0xffd0 && marker <= 0xffd9)
            at += 2; /* RSTn, SOI, EOI: no length */
        else if (marker >= 0xffc0)
            at += segment; /* DHT, JPG, DAC, SOS, DQT, ..., APPn, JPGn, COM */
        else if (d[at] == 0xff && d[at + 1] > 2 && d[at + 1] <= 0xbf)
            at += 2; /* reserved markers */
        else
            return false; /* not a marker: DCMTK stops */
    }
    return false;
}

void refuse_stalling_jpeg(DcmPixelSequence &seq, E_TransferSyntax xfer)
{
    if (xfer < EXS_JPEGProcess1 || xfer > EXS_JPEGProcess14SV1)
        return; /* RLE has a decoder of its own */
    const std::vector<DcmPixelItem *> items = items_in<DcmPixelItem>(seq);
    for (size_t i = 1; i < items.size(); i++) {
        Uint8 *bytes = nullptr;
        if (items[i]->getUint8Array(bytes).good() && bytes != nullptr &&
            jpeg_marker_walk_stalls(bytes, items[i]->getLength()))
            fail(DH_DICOM_ERR_MALFORMED,
                 "JPEG fragment %zu has a TEM marker (FF01) where a marker "
                 "segment is due, which DCMTK 3.6.7's decoder never gets past",
                 i);
    }
}

/* Which decoder read the pixels, and why not the GPU where it was asked for and has one. */
static void note_decoder(dh_dicom_image &img, const char *decoder, const std::string &why)
{
    copy_field(img.decoder, sizeof img.decoder, decoder);
    copy_field(img.decoder_note, sizeof img.decoder_note, why.c_str());
}

void decode_pixels(DcmDataset &ds, E_TransferSyntax xfer, const dh_dicom_read_options &options,
                   dh_dicom_image &img)
{
    const size_t n = (size_t)img.format.rows * img.format.columns * img.frames;
    const uint64_t need = needed_bytes(img);
    uint16_t *out = static_cast<uint16_t *>(malloc(n * sizeof(uint16_t)));
    if (out == nullptr)
        throw std::bad_alloc();
    img.pixels = out; /* owned by img from here on, freed with it on failure */
    note_decoder(img, "native", "");

    DcmElement *el = pixel_element(ds);
    if (img.is_encapsulated) {
        DcmPixelSequence *seq = fragments_of(*el); /* check_encapsulated made sure it exists */
        if (seq == nullptr)
            fail(DH_DICOM_ERR_INTERNAL, "encapsulated PixelData lost its fragments");
        std::string why;
        const auto in_place = [out](size_t i) { return (uint32_t)out[i]; };
        if (is_jpegls(xfer)) {
            decode_jpegls(*seq, img, out);
            note_decoder(img, "charls", "");
            extract(in_place, n, img, out); /* each cell read before its value is written */
            return;
        }
        if (is_jpeg2000(xfer)) {
            /* Usability first (known after the first read), so a machine without the GPU
             * decoders does not gather and check the streams twice. */
            if (options.gpu_decode && gpu_decoders_usable(why) &&
                decode_jpeg2000_gpu(*seq, img, out, why)) {
                note_decoder(img, "nvjpeg2k", "");
            } else {
                decode_jpeg2000(*seq, img, options.codec_threads, out);
                note_decoder(img, "openjpeg", why);
            }
            extract(in_place, n, img, out);
            return;
        }
        refuse_stalling_jpeg(*seq, xfer);
        if (xfer == EXS_JPEGProcess14SV1 && options.gpu_decode && gpu_decoders_usable(why)) {
            if (decode_jpeg_lossless_gpu(*seq, img, out, why)) {
                note_decoder(img, "nvjpeg", "");
                extract(in_place, n, img, out);
                return;
            }
        }
        OFCondition c = ds.chooseRepresentation(EXS_LittleEndianExplicit, nullptr);
        if (c.bad() || !ds.canWriteXfer(EXS_LittleEndianExplicit))
            fail(DH_DICOM_ERR_MALFORMED, "decoding %s pixel data failed: %s",
                 DcmXfer(xfer).getXferName(), c.bad() ? c.text() : "no decoded representation");
        el = pixel_element(ds); /* the decoded representation */
        note_decoder(img, "dcmtk", why);
    }

    /* DCMTK hands over 16-bit words in host order whatever the file's byte order. 8-bit cells
     * are read as bytes; where the VR is OW (implicit VR) DCMTK gives them in file order too. */
    OFCondition c;
    uint64_t have = 0;
    if (img.format.bits_allocated == 16) {
        Uint16 *words = nullptr;
        c = el->getUint16Array(words);
        have = (words != nullptr) ? (uint64_t)el->getLength() : 0;
        if (c.good() && words != nullptr && have >= need)
            extract([words](size_t i) { return (uint32_t)words[i]; }, n, img, out);
    } else {
        Uint8 *bytes = nullptr;
        c = el->getUint8Array(bytes);
        have = (bytes != nullptr) ? (uint64_t)el->getLength() : 0;
        if (c.good() && bytes != nullptr && have >= need)
            extract([bytes](size_t i) { return (uint32_t)bytes[i]; }, n, img, out);
    }
    if (c.bad())
        fail(DH_DICOM_ERR_MALFORMED, "reading PixelData failed: %s", c.text());
    if (have < need)
        fail(DH_DICOM_ERR_MALFORMED, "decoded pixel data holds %llu bytes, %llu expected",
             (unsigned long long)have, (unsigned long long)need);
}

void cells_to_stored_values(uint16_t *cells, size_t n, const dh_dicom_image &img)
{
    extract([cells](size_t i) { return (uint32_t)cells[i]; }, n, img, cells);
}

DcmPixelSequence &pixel_fragments(DcmDataset &ds)
{
    DcmPixelSequence *seq = fragments_of(*pixel_element(ds));
    if (seq == nullptr)
        fail(DH_DICOM_ERR_INTERNAL, "encapsulated PixelData lost its fragments");
    return *seq;
}

} // namespace dh_dicom_impl
