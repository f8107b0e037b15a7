// SPDX-License-Identifier: MIT
/*
 * dicom_fragments.cpp: encapsulated PixelData both ways for the codecs run here rather than by
 * DCMTK (JPEG-LS, JPEG 2000, HTJ2K). Reading: which fragments make which frame; PS3.5 A.4 allows
 * one fragment per frame, a frame over several fragments located by the basic offset table, and
 * (in practice) several fragments per frame without a table, where only the first fragment of a
 * frame starts with the codec's start marker. Writing: each frame encoded into one fragment,
 * with a basic offset table for multi-frame images.
 */
#include "dicom_internal.h"

#include <cstring>

namespace dh_dicom_impl {

std::vector<fragment> fragment_list(DcmPixelSequence &seq)
{
    std::vector<fragment> out;
    for (DcmPixelItem *item : items_in<DcmPixelItem>(seq)) { /* item 0: the offset table */
        Uint8 *bytes = nullptr;
        fragment f;
        if (item->getLength() > 0 && item->getUint8Array(bytes).good() && bytes != nullptr) {
            f.bytes = bytes;
            f.length = item->getLength();
        }
        out.push_back(f);
    }
    return out;
}

/* The offset table's starts, or an empty list when it has not one usable entry per frame.
 * Offsets count from the first byte of the first fragment's item tag. */
static std::vector<size_t> starts_from_table(const std::vector<fragment> &items, uint32_t frames)
{
    std::vector<size_t> starts;
    const fragment &table = items[0];
    if (table.length != 4ull * frames)
        return starts;
    uint64_t at = 0;
    size_t f = 0;
    for (size_t i = 1; i < items.size() && f < frames; i++) {
        const Uint8 *o = table.bytes + 4 * f;
        const uint64_t offset = o[0] | o[1] << 8 | o[2] << 16 | (uint64_t)o[3] << 24;
        if (offset == at) {
            starts.push_back(i);
            f++;
        }
        at += 8 + items[i].length;
    }
    if (starts.size() != frames)
        starts.clear();
    return starts;
}

std::vector<size_t> frame_starts(const std::vector<fragment> &items, uint32_t frames,
                                 const frame_marker &marker)
{
    const size_t fragments = items.size() - 1;
    std::vector<size_t> starts;
    if (fragments == frames || frames == 1) {
        for (size_t f = 0; f < frames; f++)
            starts.push_back(frames == 1 ? 1 : f + 1);
        starts.push_back(items.size());
        return starts;
    }
    starts = starts_from_table(items, frames);
    if (starts.empty()) {
        for (size_t i = 1; i < items.size(); i++)
            if (items[i].length >= marker.length &&
                memcmp(items[i].bytes, marker.bytes, marker.length) == 0)
                starts.push_back(i);
        if (starts.size() != frames || (frames > 0 && starts[0] != 1))
            fail(DH_DICOM_ERR_MALFORMED,
                 "cannot tell which of the %zu %s fragments belong to which of the %u frames "
                 "(no usable offset table, %zu start with %s)",
                 fragments, marker.codec, frames, starts.size(), marker.name);
    }
    starts.push_back(items.size());
    return starts;
}

void join_fragments(const std::vector<fragment> &items, size_t first, size_t end,
                    std::vector<Uint8> &joined)
{
    joined.clear();
    for (size_t i = first; i < end; i++)
        if (items[i].bytes)
            joined.insert(joined.end(), items[i].bytes, items[i].bytes + items[i].length);
}

native_pixels native_pixels_of(DcmDataset &ds, const char *codec)
{
    native_pixels px;
    Uint16 samples = 1, representation = 0;
    Sint32 frames = 1;
    ds.findAndGetUint16(DCM_Rows, px.rows);
    ds.findAndGetUint16(DCM_Columns, px.columns);
    ds.findAndGetUint16(DCM_BitsAllocated, px.allocated);
    ds.findAndGetUint16(DCM_HighBit, px.high_bit);
    ds.findAndGetUint16(DCM_SamplesPerPixel, samples);
    ds.findAndGetUint16(DCM_PixelRepresentation, representation);
    if (ds.findAndGetSint32(DCM_NumberOfFrames, frames).bad() || frames < 1)
        frames = 1;
    px.frames = (uint32_t)frames;
    px.is_signed = representation == 1;
    if (samples != 1 || (px.allocated != 8 && px.allocated != 16) ||
        px.high_bit >= px.allocated || px.rows == 0 || px.columns == 0)
        fail(DH_DICOM_ERR_UNSUPPORTED,
             "%s is written for grayscale images of 8 or 16-bit cells only", codec);
    if (ds.findAndGetElement(DCM_PixelData, px.element).bad() || px.element == nullptr)
        fail(DH_DICOM_ERR_INTERNAL, "no PixelData to encode");
    const size_t frame_bytes = (size_t)px.rows * px.columns * (px.allocated / 8);
    Uint8 *data = nullptr;
    if (px.element->getUint8Array(data).bad() || data == nullptr ||
        px.element->getLength() < frame_bytes * px.frames)
        fail(DH_DICOM_ERR_INTERNAL, "PixelData holds fewer cells than %u frames of %ux%u",
             px.frames, px.rows, px.columns);
    px.data = data;
    return px;
}

void encapsulate_frames(const native_pixels &px, E_TransferSyntax xfer, const char *codec,
                        const std::function<std::vector<uint8_t>(const Uint8 *, uint32_t)> &encode)
{
    const size_t frame_bytes = (size_t)px.rows * px.columns * (px.allocated / 8);
    std::unique_ptr<DcmPixelSequence> seq(new DcmPixelSequence(DCM_PixelSequenceTag));
    DcmPixelItem *table = new DcmPixelItem(DCM_PixelItemTag);
    seq->insert(table);
    DcmOffsetList offsets;
    for (uint32_t f = 0; f < px.frames; f++) {
        std::vector<uint8_t> stream = encode(px.data + f * frame_bytes, f);
        stream.resize(stream.size() + (stream.size() & 1), 0); /* even, padded with 00 */
        OFCondition c = seq->storeCompressedFrame(offsets, stream.data(), (Uint32)stream.size(), 0);
        if (c.bad())
            fail(DH_DICOM_ERR_INTERNAL, "cannot store %s frame %u: %s", codec, f + 1, c.text());
    }
    if (px.frames > 1 && table->createOffsetTable(offsets).bad())
        fail(DH_DICOM_ERR_INTERNAL, "cannot build the basic offset table");
    OFstatic_cast(DcmPixelData *, px.element)->putOriginalRepresentation(xfer, nullptr,
                                                                          seq.release());
}

} // namespace dh_dicom_impl
