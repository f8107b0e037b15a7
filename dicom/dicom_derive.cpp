// SPDX-License-Identifier: MIT
/*
 * dicom_derive.cpp: derived images (dh_dicom_derive.h). The source dataset is loaded whole but
 * for its pixels, which are dropped unread and replaced, and every tag that describes the old
 * pixels or the old instance is rewritten or removed; everything else (patient, study, equipment, geometry,
 * InstanceNumber, photometric interpretation) is kept as it was. Saving is dicom_write.cpp's
 * atomic, never-replacing save.
 */
#include "dcmtk/config/osconfig.h" /* must come first */
#include "dcmtk/dcmdata/dctk.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <new>
#include <string>
#include <vector>

#include "dh_dicom_derive.h"
#include "dh_dicom_write.h"
#include "dicom_internal.h"

namespace {

using dh_dicom_impl::failure;
using dh_dicom_impl::cut;
using dh_dicom_impl::fail;

/* Tags that describe the old pixel values and would lie about the new ones. */
const DcmTagKey stale_tags[] = {
    DCM_SmallestImagePixelValue, DCM_LargestImagePixelValue, DCM_SmallestPixelValueInSeries,
    DCM_LargestPixelValueInSeries, DCM_PixelPaddingValue, DCM_PixelPaddingRangeLimit,
    DCM_WindowCenter, DCM_WindowWidth, DCM_WindowCenterWidthExplanation, DCM_VOILUTFunction,
    DCM_VOILUTSequence, DCM_ModalityLUTSequence, DCM_IconImageSequence,
    DCM_RescaleSlope, DCM_RescaleIntercept, DCM_RescaleType,
};

void check(const OFCondition &c, const char *what)
{
    if (c.bad())
        fail(DH_DICOM_ERR_INTERNAL, "cannot set %s: %s", what, c.text());
}

void put(DcmItem *item, const DcmTagKey &tag, const std::string &value, const char *what)
{
    check(item->putAndInsertString(tag, value.c_str()), what);
}

std::string get_string(DcmItem *item, const DcmTagKey &tag)
{
    OFString s;
    if (item->findAndGetOFStringArray(tag, s).good())
        return std::string(s.c_str());
    return std::string();
}

/* Enhanced multi-frame images keep rescale and VOI inside functional groups. */
void fix_functional_groups(DcmDataset *ds, bool set_rescale)
{
    for (const DcmTagKey &seq_tag :
         {DCM_SharedFunctionalGroupsSequence, DCM_PerFrameFunctionalGroupsSequence}) {
        DcmSequenceOfItems *seq = nullptr;
        if (ds->findAndGetSequence(seq_tag, seq).bad() || !seq)
            continue;
        for (DcmItem *item : dh_dicom_impl::items_in<DcmItem>(*seq)) {
            item->findAndDeleteElement(DCM_FrameVOILUTSequence);
            DcmItem *pvt = nullptr;
            if (item->findAndGetSequenceItem(DCM_PixelValueTransformationSequence, pvt).good() &&
                pvt) {
                pvt->findAndDeleteElement(DCM_ModalityLUTSequence);
                if (set_rescale) {
                    put(pvt, DCM_RescaleSlope, "1", "RescaleSlope");
                    put(pvt, DCM_RescaleIntercept, "0", "RescaleIntercept");
                    put(pvt, DCM_RescaleType, "US", "RescaleType");
                }
            }
        }
    }
}

/* Once lossy, always lossy (PS3.3 C.7.6.1.1.5): the source's LossyImageCompression, ratio and
 * method are kept as written, and a source stored in a lossy syntax without saying so makes
 * the derived image say "01" with the syntax's method. */
void keep_lossy(DcmFileFormat &file, DcmDataset *ds)
{
    OFString uid;
    DcmMetaInfo *meta = file.getMetaInfo();
    if (meta == nullptr || meta->findAndGetOFString(DCM_TransferSyntaxUID, uid).bad() ||
        uid.empty())
        uid = DcmXfer(ds->getOriginalXfer()).getXferID();
    const char *method = dh_dicom_impl::lossy_method_of_syntax(uid.c_str());
    if (method == nullptr)
        return;
    put(ds, DCM_LossyImageCompression, "01", "LossyImageCompression");
    if (!ds->tagExistsWithValue(DCM_LossyImageCompressionMethod))
        put(ds, DCM_LossyImageCompressionMethod, method, "LossyImageCompressionMethod");
}

void derive(const dh_dicom_derive *r, dh_dicom_dataset *d)
{
    dh_dicom_impl::held_bytes held; /* a deflated source's inflated dataset, until loaded */
    dh_dicom_impl::load_source(d->file, r->source_path, r->source_data, r->source_size, held);
    DcmDataset *ds = d->file.getDataset();
    /* The source's pixels are replaced, so they are never decoded (nor, for a large file, read). */
    ds->findAndDeleteElement(DCM_PixelData);
    /* Everything else is loaded now: the dataset outlives the source's bytes (held, or the
     * caller's buffer). */
    OFCondition c = ds->loadAllDataIntoMemory();
    if (c.bad())
        fail(DH_DICOM_ERR_IO, "%s: cannot read the source: %s", r->source_path, c.text());

    Uint16 rows = 0, columns = 0;
    Sint32 frames = 1;
    ds->findAndGetUint16(DCM_Rows, rows);
    ds->findAndGetUint16(DCM_Columns, columns);
    if (ds->findAndGetSint32(DCM_NumberOfFrames, frames).bad() || frames < 1)
        frames = 1;
    if (rows != r->rows || columns != r->columns || (uint32_t)frames != r->frames)
        fail(DH_DICOM_ERR_MISMATCH,
             "%s: the source is %ux%u with %d frames, the result %ux%u with %u", r->source_path,
             rows, columns, (int)frames, r->rows, r->columns, r->frames);

    std::string sop_class = get_string(ds, DCM_SOPClassUID);
    std::string sop_instance = get_string(ds, DCM_SOPInstanceUID);
    if (sop_class.empty() || sop_instance.empty())
        fail(DH_DICOM_ERR_MALFORMED,
             "%s: the source has no SOPClassUID or SOPInstanceUID to reference", r->source_path);
    std::string modality = get_string(ds, DCM_Modality);
    bool had_rescale = ds->tagExists(DCM_RescaleSlope) || ds->tagExists(DCM_RescaleIntercept);
    bool needs_rescale = had_rescale || modality == "CT" || modality == "DX" || modality == "PT";

    /* Pixels and the pixel module. */
    size_t count = (size_t)r->rows * r->columns * r->frames;
    uint16_t top = (uint16_t)((1u << r->bits_stored) - 1);
    for (size_t i = 0; i < count; i++)
        if (r->pixels[i] > top)
            fail(DH_DICOM_ERR_INVALID_ARGUMENT, "%s: value %u at sample %zu exceeds %u bits",
                 r->output_path, r->pixels[i], i, r->bits_stored);
    check(ds->putAndInsertUint16Array(DCM_PixelData, r->pixels, (unsigned long)count),
          "PixelData");
    check(ds->putAndInsertUint16(DCM_BitsAllocated, 16), "BitsAllocated");
    check(ds->putAndInsertUint16(DCM_BitsStored, (Uint16)r->bits_stored), "BitsStored");
    check(ds->putAndInsertUint16(DCM_HighBit, (Uint16)(r->bits_stored - 1)), "HighBit");
    check(ds->putAndInsertUint16(DCM_PixelRepresentation, 0), "PixelRepresentation");
    for (const DcmTagKey &tag : stale_tags)
        ds->findAndDeleteElement(tag); /* top level; functional groups just below */
    if (needs_rescale) {
        put(ds, DCM_RescaleIntercept, "0", "RescaleIntercept");
        put(ds, DCM_RescaleSlope, "1", "RescaleSlope");
        put(ds, DCM_RescaleType, "US", "RescaleType");
    }
    fix_functional_groups(ds, needs_rescale);
    keep_lossy(d->file, ds);

    /* Identity: a new instance in a new series of the same study. */
    put(ds, DCM_SOPInstanceUID, r->sop_instance_uid, "SOPInstanceUID");
    put(ds, DCM_SeriesInstanceUID, r->series_uid, "SeriesInstanceUID");
    OFString image_type_value;
    /* Enhanced (functional group) IODs allow only PRIMARY as the second value. */
    bool enhanced = ds->tagExists(DCM_SharedFunctionalGroupsSequence);
    for (const char *uid : {UID_EnhancedCTImageStorage, UID_EnhancedMRImageStorage,
                            UID_EnhancedMRColorImageStorage, UID_EnhancedXAImageStorage,
                            UID_EnhancedXRFImageStorage, UID_LegacyConvertedEnhancedCTImageStorage,
                            UID_LegacyConvertedEnhancedMRImageStorage, UID_EnhancedPETImageStorage,
                            UID_LegacyConvertedEnhancedPETImageStorage})
        enhanced = enhanced || sop_class == uid;
    std::string image_type = enhanced ? "DERIVED\\PRIMARY" : "DERIVED\\SECONDARY";
    for (unsigned long k = 2; ds->findAndGetOFString(DCM_ImageType, image_type_value, k).good();
         k++)
        image_type += "\\" + std::string(image_type_value.c_str());
    put(ds, DCM_ImageType, image_type, "ImageType");
    put(ds, DCM_DerivationDescription, cut(r->derivation_description, 1024),
        "DerivationDescription");
    std::string description = get_string(ds, DCM_SeriesDescription);
    std::string suffix = r->series_suffix;
    if (description.empty()) /* no leading blank when there is nothing to suffix */
        suffix.erase(0, suffix.find_first_not_of(' '));
    put(ds, DCM_SeriesDescription, cut(description, 64 - suffix.size()) + suffix,
        "SeriesDescription");
    char date[16], tm_text[16];
    dh_dicom_impl::creation_date_time(r->has_created, r->created, date, tm_text);
    put(ds, DCM_ContentDate, date, "ContentDate");
    put(ds, DCM_ContentTime, tm_text, "ContentTime");
    put(ds, DCM_InstanceCreationDate, date, "InstanceCreationDate");
    put(ds, DCM_InstanceCreationTime, tm_text, "InstanceCreationTime");
    ds->findAndDeleteElement(DCM_InstanceCreatorUID); /* the source's creator, not ours */

    /* The reference to the source, replacing any the source had. */
    ds->findAndDeleteElement(DCM_SourceImageSequence);
    DcmItem *ref = nullptr;
    check(ds->findOrCreateSequenceItem(DCM_SourceImageSequence, ref, -2), "SourceImageSequence");
    put(ref, DCM_ReferencedSOPClassUID, sop_class, "ReferencedSOPClassUID");
    put(ref, DCM_ReferencedSOPInstanceUID, sop_instance, "ReferencedSOPInstanceUID");
    put(ref, DCM_SpatialLocationsPreserved, "YES", "SpatialLocationsPreserved");
    DcmItem *purpose = nullptr;
    check(ref->findOrCreateSequenceItem(DCM_PurposeOfReferenceCodeSequence, purpose, -2),
          "PurposeOfReferenceCodeSequence");
    put(purpose, DCM_CodeValue, "121322", "CodeValue");
    put(purpose, DCM_CodingSchemeDesignator, "DCM", "CodingSchemeDesignator");
    put(purpose, DCM_CodeMeaning, "Source image for image processing operation", "CodeMeaning");
}

dh_dicom_status report(char *msg, size_t msg_len, dh_dicom_status status, const std::string &reason)
{
    if (msg && msg_len)
        snprintf(msg, msg_len, "%s", reason.c_str());
    return status;
}

} // namespace

extern "C" dh_dicom_status dh_dicom_derive_write(const dh_dicom_derive *r, char *msg,
                                                 size_t msg_len)
{
    if (!r || !r->source_path || !r->output_path || !r->series_uid || !r->sop_instance_uid ||
        !r->pixels || !r->derivation_description || !r->series_suffix || r->bits_stored < 1 ||
        r->bits_stored > 16 || r->frames < 1 || strlen(r->series_suffix) > 32)
        return report(msg, msg_len, DH_DICOM_ERR_INVALID_ARGUMENT, "incomplete derive request");
    if ((r->source_data == nullptr && r->source_size > 0) || (r->out_data && !r->out_size))
        return report(msg, msg_len, DH_DICOM_ERR_INVALID_ARGUMENT, "incomplete derive request");
    return dh_dicom_impl::build_and_save(r->output_path, r->replace, !r->defer_folder_sync,
                                         r->out_data, r->out_size,
                                         [r](dh_dicom_dataset *d) { derive(r, d); }, msg,
                                         msg_len);
}
