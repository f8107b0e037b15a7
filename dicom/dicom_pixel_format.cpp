// SPDX-License-Identifier: MIT
/*
 * dicom_pixel_format.cpp: the checks on the Image Pixel module that decide whether a dataset is
 * something the library reads (one sample of 8 or 16 bits, MONOCHROME1/2, a transfer syntax
 * DCMTK can decode here) and, when it is not, says precisely why. Nothing is loaded or
 * allocated here: only short header attributes are looked at.
 */
#include "dicom_internal.h"

#include <cstdint>
#include <cstring>

namespace dh_dicom_impl {

/* Reads an unsigned short attribute; returns false when it is absent or empty (DCMTK's
 * findAndGet writes 0 then, which must not be mistaken for a value). */
static bool get_us(DcmItem &item, const DcmTagKey &tag, Uint16 &out)
{
    Uint16 v = 0;
    if (!item.tagExistsWithValue(tag) || item.findAndGetUint16(tag, v).bad())
        return false;
    out = v;
    return true;
}

static void check_present_pixel_data(DcmDataset &ds)
{
    if (ds.tagExists(DCM_PixelData))
        return;
    if (ds.tagExists(DCM_FloatPixelData) || ds.tagExists(DCM_DoubleFloatPixelData))
        fail(DH_DICOM_ERR_UNSUPPORTED,
             "floating point pixel data (7FE0,0008/0009) is not supported");
    fail(DH_DICOM_ERR_MALFORMED, "no pixel data: the dataset has no PixelData (7FE0,0010) element");
}

/* Native syntaxes (little/big endian, deflated) always decode; JPEG-LS through CharLS 2, JPEG 2000
 * and HTJ2K through OpenJPEG; any other encapsulated one only when a registered DCMTK codec can
 * turn it into explicit little endian. */
static void check_transfer_syntax(E_TransferSyntax xfer, const dh_dicom_image &img)
{
    if (xfer == EXS_Unknown)
        fail(DH_DICOM_ERR_UNSUPPORTED, "unsupported transfer syntax %s (%s)",
             img.transfer_syntax_name[0] ? img.transfer_syntax_name : "unknown",
             img.transfer_syntax_uid[0] ? img.transfer_syntax_uid : "no UID");
    DcmXfer x(xfer);
    if (x.isEncapsulated() && !is_jpegls(xfer) && !is_jpeg2000(xfer) &&
        !DcmCodecList::canChangeCoding(xfer, EXS_LittleEndianExplicit))
        fail(DH_DICOM_ERR_UNSUPPORTED, "unsupported transfer syntax %s (%s)", x.getXferName(),
             x.getXferID());
}

static void check_colour_model(DcmDataset &ds, dh_dicom_image &img)
{
    OFString photometric;
    if (ds.findAndGetOFString(DCM_PhotometricInterpretation, photometric).good())
        copy_field(img.photometric_name, sizeof img.photometric_name, photometric.c_str());
    Uint16 samples = 1;
    get_us(ds, DCM_SamplesPerPixel, samples);

    const char *p = img.photometric_name;
    if (p[0] == '\0' || strcmp(p, "MONOCHROME2") == 0)
        img.format.photometric = DH_DICOM_MONOCHROME2; /* absent: the common case, assumed */
    else if (strcmp(p, "MONOCHROME1") == 0)
        img.format.photometric = DH_DICOM_MONOCHROME1;
    else if (strcmp(p, "RGB") == 0 || strncmp(p, "YBR", 3) == 0 || strcmp(p, "PALETTE COLOR") == 0)
        fail(DH_DICOM_ERR_UNSUPPORTED,
             "colour images are not supported (PhotometricInterpretation %s, SamplesPerPixel %u)",
             p, (unsigned)samples);
    else
        fail(DH_DICOM_ERR_UNSUPPORTED, "PhotometricInterpretation %s is not supported", p);
    if (samples != 1)
        fail(DH_DICOM_ERR_UNSUPPORTED, "SamplesPerPixel %u is not supported (grayscale needs 1)",
             (unsigned)samples);
}

static void check_bit_layout(DcmDataset &ds, dh_dicom_image &img)
{
    Uint16 allocated = 0, stored = 0, high = 0, representation = 0;
    if (!get_us(ds, DCM_BitsAllocated, allocated))
        fail(DH_DICOM_ERR_MALFORMED, "incomplete Image Pixel module: no BitsAllocated (0028,0100)");
    if (allocated == 1)
        fail(DH_DICOM_ERR_UNSUPPORTED,
             "1-bit images (BitsAllocated 1: segmentations, overlays) are "
             "not supported");
    if (allocated != 8 && allocated != 16)
        fail(DH_DICOM_ERR_UNSUPPORTED, "BitsAllocated %u is not supported (8 or 16)",
             (unsigned)allocated);
    /* BitsStored and HighBit are required; when a writer forgot them the full word is meant. */
    if (!get_us(ds, DCM_BitsStored, stored))
        stored = allocated;
    if (!get_us(ds, DCM_HighBit, high))
        high = (Uint16)(stored - 1);
    if (stored == 0 || stored > allocated)
        fail(DH_DICOM_ERR_MALFORMED, "BitsStored %u does not fit BitsAllocated %u",
             (unsigned)stored, (unsigned)allocated);
    if (high >= allocated || high + 1 < stored)
        fail(DH_DICOM_ERR_MALFORMED,
             "HighBit %u is inconsistent with BitsStored %u and BitsAllocated %u", (unsigned)high,
             (unsigned)stored, (unsigned)allocated);
    if (get_us(ds, DCM_PixelRepresentation, representation) && representation > 1)
        fail(DH_DICOM_ERR_MALFORMED, "PixelRepresentation %u is neither 0 nor 1",
             (unsigned)representation);
    img.format.bits_allocated = allocated;
    img.format.bits_stored = stored;
    img.format.high_bit = high;
    img.format.is_signed = representation == 1;
}

static void check_geometry(DcmDataset &ds, dh_dicom_image &img)
{
    Uint16 rows = 0, columns = 0;
    if (!get_us(ds, DCM_Rows, rows) || rows == 0)
        fail(DH_DICOM_ERR_MALFORMED, "Rows (0028,0010) is absent or 0");
    if (!get_us(ds, DCM_Columns, columns) || columns == 0)
        fail(DH_DICOM_ERR_MALFORMED, "Columns (0028,0011) is absent or 0");
    Sint32 frames = 1;
    if (ds.tagExistsWithValue(DCM_NumberOfFrames)) {
        OFString text;
        ds.findAndGetOFString(DCM_NumberOfFrames, text);
        if (ds.findAndGetSint32(DCM_NumberOfFrames, frames).bad() || frames < 1)
            fail(DH_DICOM_ERR_MALFORMED, "NumberOfFrames '%s' is not a positive number",
                 text.c_str());
    }
    img.format.rows = rows;
    img.format.columns = columns;
    img.frames = (uint32_t)frames;
}

void read_pixel_format(DcmDataset &ds, E_TransferSyntax xfer, dh_dicom_image &img)
{
    check_present_pixel_data(ds);
    check_transfer_syntax(xfer, img);
    check_colour_model(ds, img);
    check_bit_layout(ds, img);
    check_geometry(ds, img);
}

} // namespace dh_dicom_impl
