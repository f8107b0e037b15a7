// SPDX-License-Identifier: MIT
/*
 * dicom_dictionary.cpp: the attributes the wrapper reads and writes, registered in DCMTK's data
 * dictionary on first use, so that reading does not depend on a file the host may not have.
 *
 * Debian's DCMTK loads its dictionary at run time from /usr/share/libdcmtk17/dicom.dic (or
 * DCMDICTPATH) and has no built-in copy; without the file it holds only the item and group
 * length tags, and an implicit VR file then parses into nonsense (PixelData read as a string,
 * PhotometricInterpretation as "4d"). With the entries below every attribute this library uses
 * keeps its VR, whatever the dictionary holds; attributes it does not use are read as UN and
 * kept as such.
 *
 * The dictionary is process state shared with the host (an Orthanc loads its own): an entry is
 * added only where the dictionary has none for that tag, once per process, under DCMTK's own
 * write lock, and nothing is ever removed or replaced. The table is DCMTK 3.6.7's dicom.dic for
 * these tags; tests/python/test_dictionary_table.py checks it against that file and against
 * every DCM_ constant used in dicom/.
 */
#include "dicom_internal.h"

#include <mutex>

namespace dh_dicom_impl {

namespace {

struct needed_entry {
    Uint16 group, element;
    const char *vr;
    const char *name;
    int vm_min, vm_max;
};

const needed_entry needed[] = {
    {0x0002, 0x0010, "UI", "TransferSyntaxUID", 1, 1},
    {0x0008, 0x0005, "CS", "SpecificCharacterSet", 1, DcmVariableVM},
    {0x0008, 0x0008, "CS", "ImageType", 2, DcmVariableVM},
    {0x0008, 0x0012, "DA", "InstanceCreationDate", 1, 1},
    {0x0008, 0x0013, "TM", "InstanceCreationTime", 1, 1},
    {0x0008, 0x0014, "UI", "InstanceCreatorUID", 1, 1},
    {0x0008, 0x0016, "UI", "SOPClassUID", 1, 1},
    {0x0008, 0x0018, "UI", "SOPInstanceUID", 1, 1},
    {0x0008, 0x0020, "DA", "StudyDate", 1, 1},
    {0x0008, 0x0023, "DA", "ContentDate", 1, 1},
    {0x0008, 0x0030, "TM", "StudyTime", 1, 1},
    {0x0008, 0x0033, "TM", "ContentTime", 1, 1},
    {0x0008, 0x0050, "SH", "AccessionNumber", 1, 1},
    {0x0008, 0x0060, "CS", "Modality", 1, 1},
    {0x0008, 0x0070, "LO", "Manufacturer", 1, 1},
    {0x0008, 0x0090, "PN", "ReferringPhysicianName", 1, 1},
    {0x0008, 0x0100, "SH", "CodeValue", 1, 1},
    {0x0008, 0x0102, "SH", "CodingSchemeDesignator", 1, 1},
    {0x0008, 0x0104, "LO", "CodeMeaning", 1, 1},
    {0x0008, 0x1030, "LO", "StudyDescription", 1, 1},
    {0x0008, 0x103e, "LO", "SeriesDescription", 1, 1},
    {0x0008, 0x1115, "SQ", "ReferencedSeriesSequence", 1, 1},
    {0x0008, 0x1140, "SQ", "ReferencedImageSequence", 1, 1},
    {0x0008, 0x1150, "UI", "ReferencedSOPClassUID", 1, 1},
    {0x0008, 0x1155, "UI", "ReferencedSOPInstanceUID", 1, 1},
    {0x0008, 0x1160, "IS", "ReferencedFrameNumber", 1, DcmVariableVM},
    {0x0008, 0x2111, "ST", "DerivationDescription", 1, 1},
    {0x0008, 0x2112, "SQ", "SourceImageSequence", 1, 1},
    {0x0010, 0x0010, "PN", "PatientName", 1, 1},
    {0x0010, 0x0020, "LO", "PatientID", 1, 1},
    {0x0010, 0x0030, "DA", "PatientBirthDate", 1, 1},
    {0x0010, 0x0040, "CS", "PatientSex", 1, 1},
    {0x0018, 0x0050, "DS", "SliceThickness", 1, 1},
    {0x0020, 0x000d, "UI", "StudyInstanceUID", 1, 1},
    {0x0020, 0x000e, "UI", "SeriesInstanceUID", 1, 1},
    {0x0020, 0x0010, "SH", "StudyID", 1, 1},
    {0x0020, 0x0011, "IS", "SeriesNumber", 1, 1},
    {0x0020, 0x0013, "IS", "InstanceNumber", 1, 1},
    {0x0020, 0x0020, "CS", "PatientOrientation", 2, 2},
    {0x0020, 0x0032, "DS", "ImagePositionPatient", 3, 3},
    {0x0020, 0x0037, "DS", "ImageOrientationPatient", 6, 6},
    {0x0020, 0x0052, "UI", "FrameOfReferenceUID", 1, 1},
    {0x0020, 0x0060, "CS", "Laterality", 1, 1},
    {0x0020, 0x1040, "LO", "PositionReferenceIndicator", 1, 1},
    {0x0020, 0x9113, "SQ", "PlanePositionSequence", 1, 1},
    {0x0020, 0x9116, "SQ", "PlaneOrientationSequence", 1, 1},
    {0x0028, 0x0002, "US", "SamplesPerPixel", 1, 1},
    {0x0028, 0x0004, "CS", "PhotometricInterpretation", 1, 1},
    {0x0028, 0x0008, "IS", "NumberOfFrames", 1, 1},
    {0x0028, 0x0010, "US", "Rows", 1, 1},
    {0x0028, 0x0011, "US", "Columns", 1, 1},
    {0x0028, 0x0030, "DS", "PixelSpacing", 2, 2},
    {0x0028, 0x0100, "US", "BitsAllocated", 1, 1},
    {0x0028, 0x0101, "US", "BitsStored", 1, 1},
    {0x0028, 0x0102, "US", "HighBit", 1, 1},
    {0x0028, 0x0103, "US", "PixelRepresentation", 1, 1},
    {0x0028, 0x0106, "xs", "SmallestImagePixelValue", 1, 1},
    {0x0028, 0x0107, "xs", "LargestImagePixelValue", 1, 1},
    {0x0028, 0x0108, "xs", "SmallestPixelValueInSeries", 1, 1},
    {0x0028, 0x0109, "xs", "LargestPixelValueInSeries", 1, 1},
    {0x0028, 0x0120, "xs", "PixelPaddingValue", 1, 1},
    {0x0028, 0x0121, "xs", "PixelPaddingRangeLimit", 1, 1},
    {0x0028, 0x1050, "DS", "WindowCenter", 1, DcmVariableVM},
    {0x0028, 0x1051, "DS", "WindowWidth", 1, DcmVariableVM},
    {0x0028, 0x1052, "DS", "RescaleIntercept", 1, 1},
    {0x0028, 0x1053, "DS", "RescaleSlope", 1, 1},
    {0x0028, 0x1054, "LO", "RescaleType", 1, 1},
    {0x0028, 0x1055, "LO", "WindowCenterWidthExplanation", 1, DcmVariableVM},
    {0x0028, 0x1056, "CS", "VOILUTFunction", 1, 1},
    {0x0028, 0x135a, "CS", "SpatialLocationsPreserved", 1, 1},
    {0x0028, 0x2110, "CS", "LossyImageCompression", 1, 1},
    {0x0028, 0x2112, "DS", "LossyImageCompressionRatio", 1, DcmVariableVM},
    {0x0028, 0x2114, "CS", "LossyImageCompressionMethod", 1, DcmVariableVM},
    {0x0028, 0x3000, "SQ", "ModalityLUTSequence", 1, 1},
    {0x0028, 0x3002, "xs", "LUTDescriptor", 3, 3},
    {0x0028, 0x3003, "LO", "LUTExplanation", 1, 1},
    {0x0028, 0x3004, "LO", "ModalityLUTType", 1, 1},
    {0x0028, 0x3006, "lt", "LUTData", 1, DcmVariableVM},
    {0x0028, 0x3010, "SQ", "VOILUTSequence", 1, 1},
    {0x0028, 0x3110, "SQ", "SoftcopyVOILUTSequence", 1, 1},
    {0x0028, 0x9110, "SQ", "PixelMeasuresSequence", 1, 1},
    {0x0028, 0x9132, "SQ", "FrameVOILUTSequence", 1, 1},
    {0x0028, 0x9145, "SQ", "PixelValueTransformationSequence", 1, 1},
    {0x0040, 0xa170, "SQ", "PurposeOfReferenceCodeSequence", 1, 1},
    {0x0070, 0x0052, "SL", "DisplayedAreaTopLeftHandCorner", 2, 2},
    {0x0070, 0x0053, "SL", "DisplayedAreaBottomRightHandCorner", 2, 2},
    {0x0070, 0x005a, "SQ", "DisplayedAreaSelectionSequence", 1, 1},
    {0x0070, 0x0080, "CS", "ContentLabel", 1, 1},
    {0x0070, 0x0081, "LO", "ContentDescription", 1, 1},
    {0x0070, 0x0082, "DA", "PresentationCreationDate", 1, 1},
    {0x0070, 0x0083, "TM", "PresentationCreationTime", 1, 1},
    {0x0070, 0x0084, "PN", "ContentCreatorName", 1, 1},
    {0x0070, 0x0100, "CS", "PresentationSizeMode", 1, 1},
    {0x0070, 0x0101, "DS", "PresentationPixelSpacing", 2, 2},
    {0x0070, 0x0102, "IS", "PresentationPixelAspectRatio", 2, 2},
    {0x0088, 0x0200, "SQ", "IconImageSequence", 1, 1},
    {0x2050, 0x0020, "CS", "PresentationLUTShape", 1, 1},
    {0x5200, 0x9229, "SQ", "SharedFunctionalGroupsSequence", 1, 1},
    {0x5200, 0x9230, "SQ", "PerFrameFunctionalGroupsSequence", 1, 1},
    {0x7fe0, 0x0008, "OF", "FloatPixelData", 1, 1},
    {0x7fe0, 0x0009, "OD", "DoubleFloatPixelData", 1, 1},
    {0x7fe0, 0x0010, "px", "PixelData", 1, 1},
};

} // namespace

void dictionary_init()
{
    static std::once_flag once;
    std::call_once(once, [] {
        DcmDataDictionary &dict = dcmDataDict.wrlock();
        for (const needed_entry &n : needed) {
            if (dict.findEntry(DcmTagKey(n.group, n.element), nullptr) != nullptr)
                continue; /* the host's (or the file's) entry stays */
            dict.addEntry(new DcmDictEntry(n.group, n.element, DcmVR(n.vr), n.name, n.vm_min,
                                           n.vm_max, "dicom", OFTrue, nullptr));
        }
        dcmDataDict.wrunlock();
    });
}

} // namespace dh_dicom_impl
