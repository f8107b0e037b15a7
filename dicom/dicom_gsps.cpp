// SPDX-License-Identifier: MIT
/*
 * dicom_gsps.cpp: Grayscale Softcopy Presentation States (dh_dicom_gsps.h). Each source's
 * header is read (its pixels stay on disk) for what the state references; the dataset is then
 * built module by module in the order of the IOD's table (PS3.3 A.33.1-1) and saved by
 * dicom_write.cpp's atomic writer.
 */
#include "dcmtk/config/osconfig.h" /* must come first */
#include "dcmtk/dcmdata/dctk.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "dh_dicom_gsps.h"
#include "dh_dicom_write.h"
#include "dicom_internal.h"

namespace {

using dh_dicom_impl::failure;
using dh_dicom_impl::cut;
using dh_dicom_impl::fail;

const char gsps_sop_class[] = "1.2.840.10008.5.1.4.1.1.11.1";

/* What the state needs to know of one referenced image. */
struct source_image {
    std::string sop_class, sop_instance, series, study;
    Uint16 rows = 0, columns = 0;
    Sint32 frames = 1;
    std::string pixel_spacing; /* "row\column" in mm, or empty */
    bool monochrome1 = false;
    bool has_modality_lut = false;
    std::string laterality; /* of the series: the presentation state's series is of it too */
};

void put(DcmItem *item, const DcmTagKey &tag, const std::string &value)
{
    OFCondition c = item->putAndInsertString(tag, value.c_str());
    if (c.bad())
        fail(DH_DICOM_ERR_INTERNAL, "cannot set %s: %s", tag.toString().c_str(), c.text());
}

std::string text_of(DcmItem *item, const DcmTagKey &tag)
{
    OFString s;
    return item->findAndGetOFStringArray(tag, s).good() ? std::string(s.c_str()) : std::string();
}

/* Reads one source's header (long values, the pixels, are not read: only the header is
 * referenced); the first one's patient and study go into `patient_study` when not NULL. */
source_image read_source(const char *path, const void *data, size_t size,
                         DcmDataset *patient_study)
{
    DcmFileFormat file;
    dh_dicom_impl::held_bytes held;
    dh_dicom_impl::load_source(file, path, data, size, held);
    DcmDataset *ds = file.getDataset();
    if (patient_study)
        dh_dicom_impl::copy_patient_study(*ds, *patient_study, path);
    source_image s;
    s.sop_class = text_of(ds, DCM_SOPClassUID);
    s.sop_instance = text_of(ds, DCM_SOPInstanceUID);
    s.series = text_of(ds, DCM_SeriesInstanceUID);
    s.study = text_of(ds, DCM_StudyInstanceUID);
    if (s.sop_class.empty() || s.sop_instance.empty() || s.series.empty() || s.study.empty())
        fail(DH_DICOM_ERR_MALFORMED,
             "%s: no SOPClassUID, SOPInstanceUID, SeriesInstanceUID or StudyInstanceUID to "
             "reference", path);
    ds->findAndGetUint16(DCM_Rows, s.rows);
    ds->findAndGetUint16(DCM_Columns, s.columns);
    if (ds->findAndGetSint32(DCM_NumberOfFrames, s.frames).bad() || s.frames < 1)
        s.frames = 1;
    if (s.rows == 0 || s.columns == 0)
        fail(DH_DICOM_ERR_MALFORMED, "%s: no image (Rows or Columns missing)", path);
    s.pixel_spacing = text_of(ds, DCM_PixelSpacing);
    s.laterality = text_of(ds, DCM_Laterality);
    s.monochrome1 = text_of(ds, DCM_PhotometricInterpretation) == "MONOCHROME1";
    s.has_modality_lut = ds->tagExists(DCM_RescaleSlope) || ds->tagExists(DCM_RescaleIntercept) ||
                         ds->tagExists(DCM_ModalityLUTSequence);
    return s;
}

void check_request(const dh_dicom_gsps *r, const std::vector<source_image> &images)
{
    for (size_t t = 0; t < r->lut_count; t++) {
        const dh_dicom_gsps_lut &lut = r->luts[t];
        if (!lut.data || lut.entries < 1 || lut.entries > 65536 || lut.bits < 8 || lut.bits > 16 ||
            lut.first_mapped < -32768 || lut.first_mapped > 65535 ||
            (lut.ref_count > 0 && !lut.ref_image))
            fail(DH_DICOM_ERR_INVALID_ARGUMENT, "%s: table %zu is incomplete or out of bounds",
                 r->output_path, t);
        for (uint32_t i = 0; i < lut.entries; i++)
            if (lut.data[i] >> lut.bits)
                fail(DH_DICOM_ERR_INVALID_ARGUMENT, "%s: table %zu entry %u exceeds %u bits",
                     r->output_path, t, i, lut.bits);
        for (size_t k = 0; k < lut.ref_count; k++) {
            uint32_t frame = lut.ref_frame ? lut.ref_frame[k] : 0;
            if (lut.ref_image[k] >= images.size() ||
                frame > (uint32_t)images[lut.ref_image[k]].frames)
                fail(DH_DICOM_ERR_INVALID_ARGUMENT,
                     "%s: table %zu references an image or frame that is not there",
                     r->output_path, t);
        }
    }
    for (const source_image &s : images)
        if (s.study != images[0].study)
            fail(DH_DICOM_ERR_MISMATCH, "%s: the sources belong to different studies",
                 r->output_path);
}

void add_image_reference(DcmItem *parent, const source_image &s, uint32_t frame)
{
    DcmItem *ref = nullptr;
    OFCondition c = parent->findOrCreateSequenceItem(DCM_ReferencedImageSequence, ref, -2);
    if (c.bad())
        fail(DH_DICOM_ERR_INTERNAL, "cannot add to ReferencedImageSequence: %s", c.text());
    put(ref, DCM_ReferencedSOPClassUID, s.sop_class);
    put(ref, DCM_ReferencedSOPInstanceUID, s.sop_instance);
    if (frame > 0)
        put(ref, DCM_ReferencedFrameNumber, std::to_string(frame));
}

/* Inserts a new element whose value was set with status `set`, or fails (deleting it). */
void insert(DcmItem *item, DcmElement *e, OFCondition set)
{
    std::string tag = e->getTag().toString().c_str();
    if (set.good())
        set = item->insert(e, OFTrue);
    if (set.bad()) {
        delete e; /* a refused insert leaves the element to its caller */
        fail(DH_DICOM_ERR_INTERNAL, "cannot set %s: %s", tag.c_str(), set.text());
    }
}

DcmItem *new_item(DcmItem *parent, const DcmTagKey &sequence)
{
    DcmItem *item = nullptr;
    OFCondition c = parent->findOrCreateSequenceItem(sequence, item, -2);
    if (c.bad())
        fail(DH_DICOM_ERR_INTERNAL, "cannot add to %s: %s", sequence.toString().c_str(), c.text());
    return item;
}

/* Patient and General Study from the first source; their type 2 attributes stay present. */
/* Type 2 attributes of the Patient and Study modules the first source lacks, present empty. */
void patient_and_study(DcmDataset *ds)
{
    for (const DcmTagKey &tag : {DCM_PatientName, DCM_PatientID, DCM_PatientBirthDate,
                                 DCM_PatientSex, DCM_StudyDate, DCM_StudyTime, DCM_StudyID,
                                 DCM_AccessionNumber, DCM_ReferringPhysicianName})
        if (!ds->tagExists(tag))
            put(ds, tag, "");
}

/* Presentation State Relationship: every referenced instance, grouped by series. */
void relationship(DcmDataset *ds, const std::vector<source_image> &images)
{
    std::map<std::string, DcmItem *> series_item;
    for (const source_image &s : images) {
        DcmItem *&item = series_item[s.series];
        if (!item) {
            item = new_item(ds, DCM_ReferencedSeriesSequence);
            put(item, DCM_SeriesInstanceUID, s.series);
        }
        add_image_reference(item, s, 0);
    }
}

/* Displayed Area: the whole image, scaled to fit; one item for all when every image has the
 * same size and spacing, else one per image. */
void displayed_area(DcmDataset *ds, const std::vector<source_image> &images)
{
    bool uniform = true;
    for (const source_image &s : images)
        uniform = uniform && s.rows == images[0].rows && s.columns == images[0].columns &&
                  s.pixel_spacing == images[0].pixel_spacing;
    for (size_t i = 0; i < (uniform ? 1 : images.size()); i++) {
        const source_image &s = images[i];
        DcmItem *item = new_item(ds, DCM_DisplayedAreaSelectionSequence);
        if (!uniform)
            add_image_reference(item, s, 0);
        put(item, DCM_DisplayedAreaTopLeftHandCorner, "1\\1");
        put(item, DCM_DisplayedAreaBottomRightHandCorner,
            std::to_string(s.columns) + "\\" + std::to_string(s.rows));
        put(item, DCM_PresentationSizeMode, "SCALE TO FIT");
        if (!s.pixel_spacing.empty())
            put(item, DCM_PresentationPixelSpacing, s.pixel_spacing);
        else
            put(item, DCM_PresentationPixelAspectRatio, "1\\1");
    }
}

/* A table as the file holds it, mapping every stored value as the caller's does:
 * - runs of equal entries at either end shrink to one entry: a VOI LUT maps inputs below its
 *   first value to its first entry and above its last to its last (PS3.3 C.11.2.1.2), so the
 *   file holds only the span where the table changes (kilobytes, not 128 KiB for 16 bits);
 * - entries are always 16 bits: a table of b < 16 bits is written with each entry shifted left
 *   by 16 - b, which keeps every entry exact and its place on the output scale (v / 2^b =
 *   (v << (16 - b)) / 2^16); 8-bit entries one per 16-bit word are what DCMTK reads but
 *   dciodvfy takes them as packed two per word, and a 12-bit width it rejects. */
struct written_table {
    int32_t first_mapped;
    std::vector<Uint16> data;
    Uint16 largest = 0;
};

written_table table_as_written(const dh_dicom_gsps_lut &lut)
{
    uint32_t lo = 0, hi = lut.entries - 1;
    while (lo < hi && lut.data[lo + 1] == lut.data[lo])
        lo++;
    while (hi > lo && lut.data[hi - 1] == lut.data[hi])
        hi--;
    written_table w;
    w.first_mapped = lut.first_mapped + (int32_t)lo;
    w.data.assign(lut.data + lo, lut.data + hi + 1);
    for (Uint16 &e : w.data) {
        e = (Uint16)(e << (16 - lut.bits));
        w.largest = e > w.largest ? e : w.largest;
    }
    return w;
}

/* The VOI of a table that maps everything to 0 (one distinct value in the image): a LINEAR
 * window of width 1 just above the largest stored value, below which everything is the
 * lowest output (PS3.3 C.11.2.1.2.1); dciodvfy rejects a 16-bit table whose largest entry is 0. */
void all_black_window(DcmItem *item, const dh_dicom_gsps_lut &lut)
{
    put(item, DCM_WindowCenter, std::to_string((int64_t)lut.first_mapped + lut.entries));
    put(item, DCM_WindowWidth, "1");
    put(item, DCM_WindowCenterWidthExplanation, cut("all values below the window: 0", 64));
}

/* Softcopy VOI LUT: one item per table, LUT Descriptor signed when its first value is. */
void voi_luts(DcmDataset *ds, const dh_dicom_gsps *r, const std::vector<source_image> &images)
{
    for (size_t t = 0; t < r->lut_count; t++) {
        const dh_dicom_gsps_lut &lut = r->luts[t];
        DcmItem *item = new_item(ds, DCM_SoftcopyVOILUTSequence);
        for (size_t k = 0; k < lut.ref_count; k++)
            add_image_reference(item, images[lut.ref_image[k]], lut.ref_frame ? lut.ref_frame[k] : 0);
        const written_table w = table_as_written(lut);
        if (w.largest == 0) {
            all_black_window(item, lut);
            continue;
        }
        DcmItem *voi = new_item(item, DCM_VOILUTSequence);
        /* 65536 entries are written as 0 (PS3.3 C.11.2.1.2). */
        size_t count = w.data.size() == 65536 ? 0 : w.data.size();
        /* SS when the first stored value mapped is negative (PS3.3 C.11.2.1.2). */
        DcmElement *descriptor =
            w.first_mapped < 0
                ? static_cast<DcmElement *>(new DcmSignedShort(DcmTag(DCM_LUTDescriptor, EVR_SS)))
                : new DcmUnsignedShort(DcmTag(DCM_LUTDescriptor, EVR_US));
        std::string text =
            std::to_string(count) + "\\" + std::to_string(w.first_mapped) + "\\16";
        insert(voi, descriptor, descriptor->putString(text.c_str()));
        put(voi, DCM_LUTExplanation, cut(r->lut_explanation, 64));
        /* OW: a US value's 16-bit length cannot hold 65536 entries. */
        DcmElement *data = new DcmOtherByteOtherWord(DcmTag(DCM_LUTData, EVR_OW));
        insert(voi, data, data->putUint16Array(w.data.data(), (unsigned long)w.data.size()));
    }
}

void build(const dh_dicom_gsps *r, dh_dicom_dataset *d)
{
    std::vector<source_image> images;
    DcmDataset *ds = d->file.getDataset();
    for (size_t i = 0; i < r->image_count; i++) {
        const void *data = r->image_data ? r->image_data[i] : nullptr;
        images.push_back(read_source(r->images[i], data, data ? r->image_size[i] : 0,
                                     i == 0 ? ds : nullptr));
    }
    check_request(r, images);
    patient_and_study(ds);

    char date[16], time_text[16];
    dh_dicom_impl::creation_date_time(r->has_created, r->created, date, time_text);

    /* SOP Common. */
    put(ds, DCM_SOPClassUID, gsps_sop_class);
    put(ds, DCM_SOPInstanceUID, r->sop_instance_uid);
    put(ds, DCM_InstanceCreationDate, date);
    put(ds, DCM_InstanceCreationTime, time_text);
    /* General Series and Presentation Series. */
    put(ds, DCM_Modality, "PR");
    put(ds, DCM_SeriesInstanceUID, r->series_uid);
    put(ds, DCM_SeriesNumber, "");
    put(ds, DCM_Laterality, images[0].laterality); /* type 2C: empty when unpaired or unknown */
    put(ds, DCM_SeriesDescription, cut(r->content_description, 64));
    /* General Equipment. */
    put(ds, DCM_Manufacturer, "dicomhist");
    /* Presentation State Identification. */
    put(ds, DCM_InstanceNumber, "1");
    put(ds, DCM_ContentLabel, r->content_label);
    put(ds, DCM_ContentDescription, cut(r->content_description, 64));
    put(ds, DCM_PresentationCreationDate, date);
    put(ds, DCM_PresentationCreationTime, time_text);
    put(ds, DCM_ContentCreatorName, "");
    relationship(ds, images);
    displayed_area(ds, images);
    /* Modality LUT: the identity, replacing the images' own, so the tables read stored values. */
    bool any_modality_lut = false;
    for (const source_image &s : images)
        any_modality_lut = any_modality_lut || s.has_modality_lut;
    if (any_modality_lut) {
        put(ds, DCM_RescaleIntercept, "0");
        put(ds, DCM_RescaleSlope, "1");
        put(ds, DCM_RescaleType, "US");
    }
    voi_luts(ds, r, images);
    /* Softcopy Presentation LUT. */
    put(ds, DCM_PresentationLUTShape, images[0].monochrome1 ? "INVERSE" : "IDENTITY");
}

bool valid_label(const char *label)
{
    size_t n = strlen(label);
    if (n == 0 || n > 16)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((label[i] >= 'A' && label[i] <= 'Z') || (label[i] >= '0' && label[i] <= '9') ||
              label[i] == '_' || label[i] == ' '))
            return false;
    return true;
}

} // namespace

extern "C" dh_dicom_status dh_dicom_gsps_write(const dh_dicom_gsps *r, char *msg, size_t msg_len)
{
    if (!r || !r->output_path || !r->images || r->image_count < 1 || !r->luts ||
        r->lut_count < 1 || !r->series_uid || !r->sop_instance_uid || !r->content_label ||
        !valid_label(r->content_label) || !r->content_description || !r->lut_explanation) {
        if (msg && msg_len)
            snprintf(msg, msg_len, "incomplete presentation state request");
        return DH_DICOM_ERR_INVALID_ARGUMENT;
    }
    if ((r->image_data && !r->image_size) || (r->out_data && !r->out_size)) {
        if (msg && msg_len)
            snprintf(msg, msg_len, "incomplete presentation state request");
        return DH_DICOM_ERR_INVALID_ARGUMENT;
    }
    return dh_dicom_impl::build_and_save(r->output_path, r->replace, true, r->out_data,
                                         r->out_size, [r](dh_dicom_dataset *d) { build(r, d); },
                                         msg, msg_len);
}

extern "C" int dh_dicom_gsps_is_instance(const char *path, const char *uid)
{
    if (!path || !uid)
        return 0;
    try {
        dh_dicom_impl::dictionary_init();
        DcmFileFormat file;
        if (file.loadFile(path, EXS_Unknown, EGL_noChange, DCM_MaxReadLength).bad())
            return 0;
        DcmDataset *ds = file.getDataset();
        return text_of(ds, DCM_Modality) == "PR" && text_of(ds, DCM_SOPInstanceUID) == uid;
    } catch (...) {
        return 0;
    }
}
