/*
 * dicom_modality_lut.cpp: the Modality LUT Sequence (0028,3000), which replaces RescaleSlope and
 * RescaleIntercept when present (PS3.3 C.11.1). Its first item's LUTDescriptor gives the number
 * of entries (0 meaning 65536), the first stored value mapped (signed when the pixels are) and
 * the bits per entry; LUTData holds the entries, one per 16-bit word or, for 8-bit entries, two
 * per word (low byte first), as DCMTK also accepts. A descriptor that disagrees with its data is
 * refused before anything is copied, so no lie makes the reader look past the values it has.
 */
#include "dicom_internal.h"

#include <cstdlib>
#include <new>

namespace dh_dicom_impl {

/* Value i of a US or SS element as its 16 raw bits (SS -1 is 0xffff). */
static bool raw16(DcmElement &el, unsigned long i, uint16_t &out)
{
    Uint16 u = 0;
    if (el.getUint16(u, i).good()) {
        out = u;
        return true;
    }
    Sint16 s = 0;
    if (el.getSint16(s, i).good()) {
        out = static_cast<uint16_t>(s);
        return true;
    }
    return false;
}

/* The three values of LUTDescriptor. */
static void read_descriptor(DcmItem &item, const dh_dicom_image &img, uint32_t &entries,
                            int32_t &first, uint32_t &bits)
{
    DcmElement *el = nullptr;
    if (item.findAndGetElement(DCM_LUTDescriptor, el).bad() || el == nullptr)
        fail(DH_ERR_MALFORMED, "Modality LUT Sequence without LUTDescriptor (0028,3002)");
    uint16_t v[3];
    for (unsigned long i = 0; i < 3; i++)
        if (el->getVM() != 3 || !raw16(*el, i, v[i]))
            fail(DH_ERR_MALFORMED, "Modality LUT Sequence: LUTDescriptor (0028,3002) must hold "
                                   "three 16-bit values (it holds %lu)", el->getVM());
    entries = v[0] == 0 ? 65536u : v[0];
    first = img.is_signed ? static_cast<int16_t>(v[1]) : static_cast<int32_t>(v[1]);
    bits = v[2];
    if (bits < 8 || bits > 16)
        fail(DH_ERR_MALFORMED, "Modality LUT Sequence: LUTDescriptor says %u bits per entry, "
                               "8 to 16 expected", bits);
}

/* LUTData's 16-bit words, whatever its VR (US, OW; or OB/UN when read without its VR known),
 * in host order; the element's length is checked before its value is loaded. */
static std::vector<uint16_t> read_words(DcmItem &item, uint32_t entries, uint32_t bits)
{
    DcmElement *el = nullptr;
    if (item.findAndGetElement(DCM_LUTData, el).bad() || el == nullptr || el->getLength() == 0)
        fail(DH_ERR_MALFORMED, "Modality LUT Sequence without LUTData (0028,3006)");
    const unsigned long bytes = el->getLength();
    const unsigned long packed = (entries + 1) / 2;
    if (bytes % 2 != 0 || (bytes / 2 != entries && !(bits == 8 && bytes / 2 == packed)))
        fail(DH_ERR_MALFORMED, "Modality LUT Sequence: LUTData holds %lu bytes, but "
                               "LUTDescriptor says %u entries of %u bits",
             bytes, entries, bits);
    std::vector<uint16_t> words(bytes / 2);
    Uint16 *w = nullptr;
    Uint8 *b = nullptr;
    if (el->getUint16Array(w).good() && w != nullptr) {
        std::copy(w, w + words.size(), words.begin());
    } else if (el->getUint8Array(b).good() && b != nullptr) {
        /* Bytes as found in a little endian dataset (an implicit VR file read without the
         * dictionary keeps LUTData as raw bytes). */
        for (size_t i = 0; i < words.size(); i++)
            words[i] = static_cast<uint16_t>(b[2 * i] | b[2 * i + 1] << 8);
    } else {
        fail(DH_ERR_MALFORMED, "Modality LUT Sequence: LUTData (0028,3006) cannot be read");
    }
    return words;
}

void read_modality_lut(DcmDataset &ds, dh_dicom_image &img)
{
    DcmItem *item = nullptr;
    if (!ds.tagExists(DCM_ModalityLUTSequence))
        return;
    if (ds.findAndGetSequenceItem(DCM_ModalityLUTSequence, item, 0).bad() || item == nullptr)
        fail(DH_ERR_MALFORMED, "Modality LUT Sequence (0028,3000) has no item");
    uint32_t entries = 0, bits = 0;
    int32_t first = 0;
    read_descriptor(*item, img, entries, first, bits);
    const std::vector<uint16_t> words = read_words(*item, entries, bits);
    const uint16_t mask = static_cast<uint16_t>((1u << bits) - 1);
    uint16_t *lut = static_cast<uint16_t *>(malloc(sizeof(uint16_t) * entries));
    if (lut == nullptr)
        throw std::bad_alloc();
    const bool two_per_word = words.size() != entries;
    for (uint32_t i = 0; i < entries; i++) {
        const uint16_t w = two_per_word ? words[i / 2] : words[i];
        lut[i] = two_per_word ? static_cast<uint16_t>((i % 2 ? w >> 8 : w) & 0xff) : w & mask;
    }
    img.has_modality_lut = 1;
    img.modality_lut = lut;
    img.modality_lut_entries = entries;
    img.modality_lut_first = first;
    img.modality_lut_bits = bits;
}

} // namespace dh_dicom_impl
