// SPDX-License-Identifier: MIT
/*
 * dicom_lossy.cpp: whether an image's pixels went through lossy compression: its transfer
 * syntax is a lossy one (JPEG baseline and extended, JPEG-LS near-lossless, JPEG 2000 and HTJ2K
 * that allow irreversible coding, MPEG and its kin), or LossyImageCompression (0028,2110) says
 * "01" (it was lossy compressed before, whatever syntax it is in now). PS3.3 C.7.6.1.1.5 names
 * the methods; a derived image must keep saying so (dicom_derive.cpp).
 */
#include "dicom_internal.h"

#include <cstring>

namespace dh_dicom_impl {

namespace {

struct lossy_syntax {
    const char *uid;
    const char *method; /* Lossy Image Compression Method defined term */
};

const lossy_syntax lossy_syntaxes[] = {
    {"1.2.840.10008.1.2.4.50", "ISO_10918_1"},  /* JPEG baseline */
    {"1.2.840.10008.1.2.4.51", "ISO_10918_1"},  /* JPEG extended */
    {"1.2.840.10008.1.2.4.52", "ISO_10918_1"},  /* retired lossy JPEG processes */
    {"1.2.840.10008.1.2.4.53", "ISO_10918_1"},
    {"1.2.840.10008.1.2.4.54", "ISO_10918_1"},
    {"1.2.840.10008.1.2.4.55", "ISO_10918_1"},
    {"1.2.840.10008.1.2.4.56", "ISO_10918_1"},
    {"1.2.840.10008.1.2.4.59", "ISO_10918_1"},
    {"1.2.840.10008.1.2.4.60", "ISO_10918_1"},
    {"1.2.840.10008.1.2.4.61", "ISO_10918_1"},
    {"1.2.840.10008.1.2.4.62", "ISO_10918_1"},
    {"1.2.840.10008.1.2.4.63", "ISO_10918_1"},
    {"1.2.840.10008.1.2.4.64", "ISO_10918_1"},
    {"1.2.840.10008.1.2.4.81", "ISO_14495_1"},  /* JPEG-LS near-lossless */
    {"1.2.840.10008.1.2.4.91", "ISO_15444_1"},  /* JPEG 2000 */
    {"1.2.840.10008.1.2.4.93", "ISO_15444_2"},  /* JPEG 2000 Part 2 */
    {"1.2.840.10008.1.2.4.203", "ISO_15444_15"}, /* HTJ2K */
    {"1.2.840.10008.1.2.4.100", "ISO_13818_2"}, /* MPEG-2 */
    {"1.2.840.10008.1.2.4.101", "ISO_13818_2"},
    {"1.2.840.10008.1.2.4.102", "ISO_14496_10"}, /* MPEG-4 AVC */
    {"1.2.840.10008.1.2.4.103", "ISO_14496_10"},
    {"1.2.840.10008.1.2.4.104", "ISO_14496_10"},
    {"1.2.840.10008.1.2.4.105", "ISO_14496_10"},
    {"1.2.840.10008.1.2.4.106", "ISO_14496_10"},
    {"1.2.840.10008.1.2.4.107", "ISO_23008_2"}, /* HEVC */
    {"1.2.840.10008.1.2.4.108", "ISO_23008_2"},
};

} // namespace

const char *lossy_method_of_syntax(const char *uid)
{
    for (const lossy_syntax &s : lossy_syntaxes)
        if (strcmp(s.uid, uid) == 0)
            return s.method;
    return nullptr;
}

void read_lossy(DcmDataset &ds, dh_dicom_image &img)
{
    OFString flag, method;
    const bool said = ds.findAndGetOFString(DCM_LossyImageCompression, flag).good() &&
                      flag == "01";
    const char *by_syntax = lossy_method_of_syntax(img.transfer_syntax_uid);
    if (!said && by_syntax == nullptr)
        return;
    img.is_lossy = 1;
    if (ds.findAndGetOFStringArray(DCM_LossyImageCompressionMethod, method).good() &&
        !method.empty())
        copy_field(img.lossy_method, sizeof img.lossy_method, method.c_str());
    else if (by_syntax != nullptr)
        copy_field(img.lossy_method, sizeof img.lossy_method, by_syntax);
}

} // namespace dh_dicom_impl
