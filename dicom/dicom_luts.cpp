// SPDX-License-Identifier: MIT
/*
 * dicom_luts.cpp: the lookup tables of the pixel pipeline. The Modality LUT Sequence (0028,3000)
 * replaces RescaleSlope and RescaleIntercept when present (PS3.3 C.11.1); the VOI LUT Sequence
 * (0028,3010) holds one or more alternative windowing tables (C.11.2). Each item's LUTDescriptor
 * gives the number of entries (0 meaning 65536), the first input value mapped and the bits per
 * entry; LUTData holds the entries, one per 16-bit word or, for 8-bit entries, two per word
 * (low byte first), as DCMTK also accepts. A descriptor that disagrees with its data is refused
 * before anything is copied, so no lie makes the reader look past the values it has.
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

/* One table as read: `entries` values masked to `bits`, mapping inputs from `first`. */
struct lut_table {
    uint32_t entries = 0, bits = 0;
    int32_t first = 0;
    uint16_t *data = nullptr; /* malloc'ed; the caller takes it */
};

/* How the first mapped value is read: signed when the stored values are (the Modality LUT:
 * its VR may be either in real files), or signed when the element is SS or the inputs can be
 * negative (the VOI LUT, whose inputs are modality values). */
enum class first_mapped { as_pixels_unsigned, as_pixels_signed, by_vr_or_unsigned, by_vr_or_signed };

/* The three values of LUTDescriptor. */
static void read_descriptor(DcmItem &item, const char *what, first_mapped rule, lut_table &t)
{
    DcmElement *el = nullptr;
    if (item.findAndGetElement(DCM_LUTDescriptor, el).bad() || el == nullptr)
        fail(DH_DICOM_ERR_MALFORMED, "%s without LUTDescriptor (0028,3002)", what);
    uint16_t v[3];
    for (unsigned long i = 0; i < 3; i++)
        if (el->getVM() != 3 || !raw16(*el, i, v[i]))
            fail(DH_DICOM_ERR_MALFORMED,
                 "%s: LUTDescriptor (0028,3002) must hold three 16-bit values "
                 "(it holds %lu)",
                 what, el->getVM());
    const bool is_signed = rule == first_mapped::as_pixels_signed ||
                           rule == first_mapped::by_vr_or_signed ||
                           (rule == first_mapped::by_vr_or_unsigned && el->ident() == EVR_SS);
    t.entries = v[0] == 0 ? 65536u : v[0];
    t.first = is_signed ? static_cast<int16_t>(v[1]) : static_cast<int32_t>(v[1]);
    t.bits = v[2];
    if (t.bits < 8 || t.bits > 16)
        fail(DH_DICOM_ERR_MALFORMED, "%s: LUTDescriptor says %u bits per entry, 8 to 16 expected",
             what, t.bits);
}

/* LUTData's 16-bit words, whatever its VR (US, OW; or OB/UN when read without its VR known),
 * in host order; the element's length is checked before its value is loaded. */
static std::vector<uint16_t> read_words(DcmItem &item, const char *what, uint32_t entries,
                                        uint32_t bits)
{
    DcmElement *el = nullptr;
    if (item.findAndGetElement(DCM_LUTData, el).bad() || el == nullptr || el->getLength() == 0)
        fail(DH_DICOM_ERR_MALFORMED, "%s without LUTData (0028,3006)", what);
    const unsigned long bytes = el->getLength();
    const unsigned long packed = (entries + 1) / 2;
    if (bytes % 2 != 0 || (bytes / 2 != entries && !(bits == 8 && bytes / 2 == packed)))
        fail(DH_DICOM_ERR_MALFORMED,
             "%s: LUTData holds %lu bytes, but LUTDescriptor says %u entries "
             "of %u bits",
             what, bytes, entries, bits);
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
        fail(DH_DICOM_ERR_MALFORMED, "%s: LUTData (0028,3006) cannot be read", what);
    }
    return words;
}

/* One item's table. */
static lut_table read_table(DcmItem &item, const char *what, first_mapped rule)
{
    lut_table t;
    read_descriptor(item, what, rule, t);
    const std::vector<uint16_t> words = read_words(item, what, t.entries, t.bits);
    const uint16_t mask = static_cast<uint16_t>((1u << t.bits) - 1);
    t.data = static_cast<uint16_t *>(malloc(sizeof(uint16_t) * t.entries));
    if (t.data == nullptr)
        throw std::bad_alloc();
    const bool two_per_word = words.size() != t.entries;
    for (uint32_t i = 0; i < t.entries; i++) {
        const uint16_t w = two_per_word ? words[i / 2] : words[i];
        t.data[i] = two_per_word ? static_cast<uint16_t>((i % 2 ? w >> 8 : w) & 0xff) : w & mask;
    }
    return t;
}

void read_modality_lut(DcmDataset &ds, dh_dicom_image &img)
{
    DcmItem *item = nullptr;
    if (!ds.tagExists(DCM_ModalityLUTSequence))
        return;
    if (ds.findAndGetSequenceItem(DCM_ModalityLUTSequence, item, 0).bad() || item == nullptr)
        fail(DH_DICOM_ERR_MALFORMED, "Modality LUT Sequence (0028,3000) has no item");
    /* Its inputs are stored values: signed when the pixels are. */
    lut_table t = read_table(*item, "Modality LUT Sequence",
                             img.format.is_signed ? first_mapped::as_pixels_signed
                                                  : first_mapped::as_pixels_unsigned);
    img.has_modality_lut = 1;
    img.modality_lut = t.data;
    img.modality_lut_entries = t.entries;
    img.modality_lut_first = t.first;
    img.modality_lut_bits = t.bits;
}

/* Whether a VOI LUT's inputs, the modality values, can be negative (PS3.3 C.11.2.1.1: the
 * first mapped value is then SS): the pixels' when nothing rescales them, a Modality LUT's
 * never, a rescale's when it can give a negative value over the representable stored values. */
static bool modality_can_be_negative(const dh_dicom_image &img)
{
    if (img.has_modality_lut)
        return false;
    if (!img.has_rescale)
        return img.format.is_signed != 0;
    const double span = static_cast<double>(1u << img.format.bits_stored);
    const double lo = img.format.is_signed ? -span / 2 : 0, hi = lo + span - 1;
    const double a = img.format.rescale_slope * lo + img.format.rescale_intercept;
    const double b = img.format.rescale_slope * hi + img.format.rescale_intercept;
    return a < 0 || b < 0;
}

void read_voi_lut(DcmDataset &ds, dh_dicom_image &img)
{
    DcmSequenceOfItems *seq = nullptr;
    if (!ds.tagExists(DCM_VOILUTSequence) ||
        ds.findAndGetSequence(DCM_VOILUTSequence, seq).bad() || seq == nullptr || seq->card() == 0)
        return;
    DcmItem *item = seq->getItem(0);
    if (item == nullptr)
        return;
    lut_table t = read_table(*item, "VOI LUT Sequence",
                             modality_can_be_negative(img) ? first_mapped::by_vr_or_signed
                                                           : first_mapped::by_vr_or_unsigned);
    img.voi_lut_count = static_cast<uint32_t>(seq->card());
    img.voi_lut = t.data;
    img.voi_lut_entries = t.entries;
    img.voi_lut_first = t.first;
    img.voi_lut_bits = t.bits;
    OFString explanation;
    if (item->findAndGetOFString(DCM_LUTExplanation, explanation).good())
        copy_field(img.voi_lut_explanation, sizeof img.voi_lut_explanation, explanation.c_str());
}

} // namespace dh_dicom_impl
