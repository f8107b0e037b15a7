// SPDX-License-Identifier: MIT
/*
 * dicom_metadata.cpp: everything about an image besides its pixels: rescale, window, position,
 * orientation, pixel spacing, UIDs and instance number. Classic images keep these at the top
 * level; enhanced multi-frame images keep them in the Shared and Per-frame Functional Groups
 * Sequences, where a per-frame macro overrides the shared one. DCMTK's findAndGet writes 0 when
 * a tag is missing, so every value is read only after its presence is known, and the defaults
 * (slope 1, intercept 0) are applied here.
 */
#include "dicom_internal.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

namespace dh_dicom_impl {

/* Reads the first `count` values of a numeric attribute (DS, FD, ...). Returns false when the
 * attribute is absent or empty; fails when it holds fewer values or something not a number,
 * because a wrong rescale or position silently corrupts everything computed from it. */
static bool get_numbers(DcmItem &item, const DcmTagKey &tag, unsigned long count, double *out)
{
    DcmElement *el = nullptr;
    if (item.findAndGetElement(tag, el).bad() || el == nullptr || el->getLength() == 0)
        return false;
    OFString text;
    el->getOFStringArray(text);
    if (el->getVM() < count)
        fail(DH_DICOM_ERR_MALFORMED, "%s '%s' has %lu value(s), %lu expected",
             DcmTag(tag).getTagName(), text.c_str(), el->getVM(), count);
    for (unsigned long i = 0; i < count; i++) {
        Float64 v = 0;
        if (el->getFloat64(v, i).bad() || !std::isfinite(v))
            fail(DH_DICOM_ERR_MALFORMED, "%s '%s' is not a number", DcmTag(tag).getTagName(),
                 text.c_str());
        out[i] = v;
    }
    return true;
}

static void get_string(DcmItem &item, const DcmTagKey &tag, char *out, size_t cap)
{
    OFString s;
    if (item.findAndGetOFString(tag, s).good())
        copy_field(out, cap, s.c_str());
}

/* Where enhanced multi-frame images keep their functional group macros, the per-frame items
 * listed once (items_in: calling getItem(i) for every frame made a file of 40,000 frames take a
 * minute). */
struct functional_groups {
    DcmItem *shared = nullptr;
    std::vector<DcmItem *> per_frame;
};

static functional_groups find_groups(DcmDataset &ds)
{
    functional_groups g;
    if (ds.findAndGetSequenceItem(DCM_SharedFunctionalGroupsSequence, g.shared, 0).bad())
        g.shared = nullptr;
    DcmSequenceOfItems *seq = nullptr;
    if (ds.findAndGetSequence(DCM_PerFrameFunctionalGroupsSequence, seq).good() &&
        seq != nullptr)
        g.per_frame = items_in<DcmItem>(*seq);
    return g;
}

/* The item of macro sequence `seq` that applies to `frame`: per-frame first, then shared. */
static DcmItem *macro(const functional_groups &g, unsigned long frame, const DcmTagKey &seq)
{
    DcmItem *item = nullptr;
    if (frame < g.per_frame.size()) {
        DcmItem *frame_item = g.per_frame[frame];
        if (frame_item != nullptr && frame_item->findAndGetSequenceItem(seq, item, 0).good() &&
            item != nullptr)
            return item;
    }
    if (g.shared != nullptr && g.shared->findAndGetSequenceItem(seq, item, 0).good() &&
        item != nullptr)
        return item;
    return nullptr;
}

/* Slope and intercept of one item, defaults applied; returns whether either was present. */
static bool read_rescale(DcmItem &item, double &slope, double &intercept)
{
    slope = 1.0;
    intercept = 0.0;
    bool has_slope = get_numbers(item, DCM_RescaleSlope, 1, &slope);
    bool has_intercept = get_numbers(item, DCM_RescaleIntercept, 1, &intercept);
    return has_slope || has_intercept;
}

static void read_image_rescale(DcmDataset &ds, const functional_groups &g, dh_dicom_image &img)
{
    if (read_rescale(ds, img.format.rescale_slope, img.format.rescale_intercept)) {
        img.has_rescale = 1;
        get_string(ds, DCM_RescaleType, img.rescale_type, sizeof img.rescale_type);
        return;
    }
    /* Enhanced: the pixels of all frames go into one volume with one rescale, so frames whose
     * rescale differs cannot be represented truthfully and are refused. */
    for (uint32_t f = 0; f < img.frames; f++) {
        DcmItem *m = macro(g, f, DCM_PixelValueTransformationSequence);
        double slope = 1.0, intercept = 0.0;
        bool has = (m != nullptr) && read_rescale(*m, slope, intercept);
        if (f == 0) {
            img.has_rescale = has;
            img.format.rescale_slope = slope;
            img.format.rescale_intercept = intercept;
            if (m != nullptr)
                get_string(*m, DCM_RescaleType, img.rescale_type, sizeof img.rescale_type);
        } else if (slope != img.format.rescale_slope || intercept != img.format.rescale_intercept) {
            fail(DH_DICOM_ERR_UNSUPPORTED,
                 "frames with different rescale are not supported (frame 1: slope %g intercept "
                 "%g; frame %u: slope %g intercept %g)",
                 img.format.rescale_slope, img.format.rescale_intercept, f + 1, slope, intercept);
        }
    }
}

static void read_window(DcmDataset &ds, const functional_groups &g, dh_dicom_image &img)
{
    DcmItem *source = &ds;
    if (!ds.tagExistsWithValue(DCM_WindowCenter))
        source = macro(g, 0, DCM_FrameVOILUTSequence);
    double center = 0, width = 0;
    if (source == nullptr || !get_numbers(*source, DCM_WindowCenter, 1, &center) ||
        !get_numbers(*source, DCM_WindowWidth, 1, &width))
        return;
    DcmElement *el = nullptr;
    img.window_count = (source->findAndGetElement(DCM_WindowCenter, el).good() && el != nullptr)
                           ? (uint32_t)el->getVM()
                           : 1;
    img.has_window = 1;
    OFString explanation;
    if (source->findAndGetOFString(DCM_WindowCenterWidthExplanation, explanation, 0).good())
        copy_field(img.window_explanation, sizeof img.window_explanation, explanation.c_str());
    img.window_center = center;
    img.window_width = width;
}

static void read_geometry(DcmDataset &ds, const functional_groups &g, dh_dicom_image &img)
{
    if (get_numbers(ds, DCM_ImageOrientationPatient, 6, img.orientation)) {
        img.has_orientation = 1;
    } else if (DcmItem *m = macro(g, 0, DCM_PlaneOrientationSequence)) {
        img.has_orientation = get_numbers(*m, DCM_ImageOrientationPatient, 6, img.orientation);
    }
    if (get_numbers(ds, DCM_PixelSpacing, 2, img.pixel_spacing)) {
        img.has_pixel_spacing = 1;
    } else if (DcmItem *m = macro(g, 0, DCM_PixelMeasuresSequence)) {
        img.has_pixel_spacing = get_numbers(*m, DCM_PixelSpacing, 2, img.pixel_spacing);
    }

    if (get_numbers(ds, DCM_ImagePositionPatient, 3, img.position))
        img.has_position = 1;
    if (g.per_frame.empty() && g.shared == nullptr)
        return;
    /* Enhanced: one position per frame, kept only when every frame has one. frames is already
     * bounded by the real length of PixelData, so this allocation is too. */
    double *positions = static_cast<double *>(malloc(sizeof(double) * 3 * img.frames));
    if (positions == nullptr)
        throw std::bad_alloc();
    /* Owned by img at once: get_numbers throws on a garbled position, and img is freed then. */
    img.frame_positions = positions;
    for (uint32_t f = 0; f < img.frames; f++) {
        DcmItem *m = macro(g, f, DCM_PlanePositionSequence);
        if (m == nullptr || !get_numbers(*m, DCM_ImagePositionPatient, 3, positions + 3 * f)) {
            free(positions);
            img.frame_positions = nullptr;
            return;
        }
    }
    if (!img.has_position) {
        img.has_position = 1;
        for (int i = 0; i < 3; i++)
            img.position[i] = positions[i];
    }
}

static void read_identification(DcmDataset &ds, dh_dicom_image &img)
{
    get_string(ds, DCM_Modality, img.modality, sizeof img.modality);
    get_string(ds, DCM_SOPClassUID, img.sop_class_uid, sizeof img.sop_class_uid);
    get_string(ds, DCM_SOPInstanceUID, img.sop_instance_uid, sizeof img.sop_instance_uid);
    get_string(ds, DCM_StudyInstanceUID, img.study_uid, sizeof img.study_uid);
    get_string(ds, DCM_SeriesInstanceUID, img.series_uid, sizeof img.series_uid);
    get_string(ds, DCM_FrameOfReferenceUID, img.frame_of_reference_uid,
               sizeof img.frame_of_reference_uid);
    /* Only a fallback for ordering slices: a garbled value is ignored rather than fatal. */
    Sint32 number = 0;
    if (ds.tagExistsWithValue(DCM_InstanceNumber) &&
        ds.findAndGetSint32(DCM_InstanceNumber, number).good()) {
        img.has_instance_number = 1;
        img.instance_number = number;
    }
}

void read_metadata(DcmDataset &ds, dh_dicom_image &img)
{
    const functional_groups g = find_groups(ds);
    read_image_rescale(ds, g, img);
    read_modality_lut(ds, img);
    read_voi_lut(ds, img);
    read_lossy(ds, img);
    read_window(ds, g, img);
    read_geometry(ds, g, img);
    read_identification(ds, img);
}

} // namespace dh_dicom_impl
