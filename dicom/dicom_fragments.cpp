/*
 * dicom_fragments.cpp: which fragments of an encapsulated PixelData make which frame, for the
 * codecs decoded here rather than by DCMTK (JPEG-LS, JPEG 2000, HTJ2K). PS3.5 A.4 allows one
 * fragment per frame, a frame over several fragments located by the basic offset table, and
 * (in practice) several fragments per frame without a table, where only the first fragment of a
 * frame starts with the codec's start marker.
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
            fail(DH_ERR_MALFORMED,
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

} // namespace dh_dicom_impl
