// SPDX-License-Identifier: MIT
/*
 * dicom_write.cpp: writes grayscale DICOM images with DCMTK behind the C interface of
 * dh_dicom_write.h: UIDs under the project's root, a dataset built from an image description,
 * tags copied from a source file, and atomic saving in any of seven lossless transfer syntaxes.
 * Every entry point catches every exception; nothing here prints or exits.
 */
#include "dcmtk/config/osconfig.h" /* must come first */

#include "dcmtk/dcmdata/dcdeftag.h"
#include "dcmtk/dcmdata/dcfilefo.h"
#include "dcmtk/dcmdata/dcpixel.h"
#include "dcmtk/dcmdata/dcpixseq.h"
#include "dcmtk/dcmdata/dcpxitem.h"
#include "dcmtk/dcmdata/dcrlerp.h"
#include "dcmtk/dcmdata/dcuid.h"
#include "dcmtk/dcmdata/dcostrmb.h"
#include "dcmtk/dcmjpeg/djrplol.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstring>
#include <ctime>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "dh_dicom_write.h"
#include "dicom_internal.h"

namespace {

dh_dicom_status fail(char *msg, size_t msg_len, dh_dicom_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

dh_dicom_status fail(char *msg, size_t msg_len, dh_dicom_status status, const char *fmt, ...)
{
    if (msg && msg_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, msg_len, fmt, ap);
        va_end(ap);
    }
    return status;
}

void clear(char *msg, size_t msg_len)
{
    if (msg && msg_len)
        msg[0] = '\0';
}

/* A decimal string (VR DS, at most 16 characters) that round-trips as closely as 16 allows. */
std::string format_ds(double v)
{
    char buf[40];
    for (int precision = 16; precision >= 1; --precision) {
        snprintf(buf, sizeof buf, "%.*g", precision, v);
        if (strlen(buf) <= 16)
            break;
    }
    /* A host that called setlocale(LC_NUMERIC) may have turned the point into a comma. */
    for (char *c = buf; *c; ++c)
        if (*c == ',')
            *c = '.';
    return buf;
}

std::string format_ds_list(const double *v, int n)
{
    std::string s;
    for (int i = 0; i < n; ++i) {
        if (i)
            s += '\\';
        s += format_ds(v[i]);
    }
    return s;
}

struct syntax_info {
    E_TransferSyntax xfer;
    const char *uid;
};

bool syntax_lookup(dh_dicom_syntax syntax, syntax_info *out)
{
    static const syntax_info table[] = {
        /* In the order of dh_dicom_syntax. */
        {EXS_LittleEndianExplicit, UID_LittleEndianExplicitTransferSyntax},
        {EXS_LittleEndianImplicit, UID_LittleEndianImplicitTransferSyntax},
        {EXS_BigEndianExplicit, UID_BigEndianExplicitTransferSyntax},
        {EXS_DeflatedLittleEndianExplicit, UID_DeflatedExplicitVRLittleEndianTransferSyntax},
        {EXS_RLELossless, UID_RLELosslessTransferSyntax},
        {EXS_JPEGProcess14SV1, UID_JPEGProcess14SV1TransferSyntax},
        {EXS_JPEGLSLossless, UID_JPEGLSLosslessTransferSyntax},
        {EXS_JPEG2000LosslessOnly, UID_JPEG2000LosslessOnlyTransferSyntax},
    };
    if ((int)syntax < 0 || (size_t)syntax >= sizeof table / sizeof table[0])
        return false;
    *out = table[syntax];
    return true;
}

/* Inserts a string tag; NULL value with type2 inserts it empty, NULL without type2 leaves it out. */
OFCondition put(DcmDataset *ds, const DcmTagKey &key, const char *value, bool type2 = false)
{
    if (value)
        return ds->putAndInsertString(key, value);
    if (type2)
        return ds->insertEmptyElement(key);
    return EC_Normal;
}

bool valid_uid(const char *uid) { return dh_dicom_uid_valid(uid) != 0; }

/* Checks the pixel format of an image description before anything is built from it. */
dh_dicom_status check_image(const dh_dicom_write_image *im, char *msg, size_t msg_len)
{
    if (im->rows == 0 || im->columns == 0 || im->frames == 0 || im->rows > 65535 ||
        im->columns > 65535)
        return fail(msg, msg_len, DH_DICOM_ERR_INVALID_ARGUMENT,
                    "image size %" PRIu32 " x %" PRIu32 " x %" PRIu32 " frames is not writable",
                    im->rows, im->columns, im->frames);
    if (im->bits_allocated != 8 && im->bits_allocated != 16)
        return fail(msg, msg_len, DH_DICOM_ERR_INVALID_ARGUMENT,
                    "BitsAllocated %" PRIu32 " (the writer handles 8 and 16)", im->bits_allocated);
    if (im->bits_stored < 1 || im->high_bit >= im->bits_allocated ||
        im->bits_stored > im->high_bit + 1)
        return fail(msg, msg_len, DH_DICOM_ERR_INVALID_ARGUMENT,
                    "BitsStored %" PRIu32 " with HighBit %" PRIu32 " does not fit in %" PRIu32
                    " bits allocated",
                    im->bits_stored, im->high_bit, im->bits_allocated);
    if (im->photometric != DH_DICOM_MONOCHROME1 && im->photometric != DH_DICOM_MONOCHROME2)
        return fail(msg, msg_len, DH_DICOM_ERR_INVALID_ARGUMENT, "photometric %d is not grayscale",
                    (int)im->photometric);
    if (!im->pixels)
        return fail(msg, msg_len, DH_DICOM_ERR_INVALID_ARGUMENT, "no pixels given");
    const struct {
        const char *name, *value;
    } uids[] = {{"SOPClassUID", im->sop_class_uid},
                {"SOPInstanceUID", im->sop_instance_uid},
                {"StudyInstanceUID", im->study_uid},
                {"SeriesInstanceUID", im->series_uid}};
    for (const auto &u : uids)
        if (!valid_uid(u.value))
            return fail(msg, msg_len, DH_DICOM_ERR_INVALID_ARGUMENT, "%s \"%s\" is not a valid UID",
                        u.name, u.value ? u.value : "(null)");
    if (im->frame_of_reference_uid && !valid_uid(im->frame_of_reference_uid))
        return fail(msg, msg_len, DH_DICOM_ERR_INVALID_ARGUMENT,
                    "FrameOfReferenceUID \"%s\" is not a valid UID", im->frame_of_reference_uid);
    if (!im->modality || !*im->modality)
        return fail(msg, msg_len, DH_DICOM_ERR_INVALID_ARGUMENT, "no Modality given");
    if (im->has_rescale && !(im->rescale_slope != 0.0))
        return fail(msg, msg_len, DH_DICOM_ERR_INVALID_ARGUMENT, "RescaleSlope must not be zero");
    uint64_t samples = (uint64_t)im->rows * im->columns * im->frames;
    if (samples * (im->bits_allocated / 8) > 0xFFFFFFF0u)
        return fail(msg, msg_len, DH_DICOM_ERR_INVALID_ARGUMENT,
                    "%" PRIu64 " samples do not fit in one PixelData element", samples);
    return DH_DICOM_OK;
}

dh_dicom_status put_pixels(DcmDataset *ds, const dh_dicom_write_image *im, char *msg,
                           size_t msg_len)
{
    const size_t n = (size_t)im->rows * im->columns * im->frames;
    const unsigned shift = im->high_bit + 1 - im->bits_stored;
    const int32_t lo = im->is_signed ? -(INT32_C(1) << (im->bits_stored - 1)) : 0;
    const int32_t hi = im->is_signed ? (INT32_C(1) << (im->bits_stored - 1)) - 1
                                     : (INT32_C(1) << im->bits_stored) - 1;
    const uint32_t word_mask = (UINT32_C(1) << im->bits_allocated) - 1;
    std::string bytes; /* the element's value, built in host order */
    bytes.resize(n * (im->bits_allocated / 8));
    for (size_t i = 0; i < n; ++i) {
        int32_t v = im->is_signed ? (int32_t)((const int16_t *)im->pixels)[i]
                                  : (int32_t)((const uint16_t *)im->pixels)[i];
        if (v < lo || v > hi)
            return fail(msg, msg_len, DH_DICOM_ERR_INVALID_ARGUMENT,
                        "sample %zu is %" PRId32 ", outside the %" PRIu32 "-bit %s range", i, v,
                        im->bits_stored, im->is_signed ? "signed" : "unsigned");
        /* Two's complement truncated to the word: the bits above HighBit repeat the sign. */
        uint32_t word = ((uint32_t)v << shift) & word_mask;
        if (im->bits_allocated == 16) {
            uint16_t w = (uint16_t)word;
            memcpy(&bytes[2 * i], &w, 2);
        } else {
            bytes[i] = (char)(uint8_t)word;
        }
    }
    OFCondition c =
        im->bits_allocated == 16
            ? ds->putAndInsertUint16Array(DCM_PixelData, (const Uint16 *)bytes.data(),
                                          (unsigned long)n)
            : ds->putAndInsertUint8Array(DCM_PixelData, (const Uint8 *)bytes.data(),
                                         (unsigned long)n);
    if (c.bad())
        return fail(msg, msg_len, DH_DICOM_ERR_INTERNAL, "cannot store PixelData: %s", c.text());
    return DH_DICOM_OK;
}

dh_dicom_status build(const dh_dicom_write_image *im, DcmDataset *ds, char *msg, size_t msg_len)
{
    dh_dicom_status st = check_image(im, msg, msg_len);
    if (st != DH_DICOM_OK)
        return st;
    char num[32];
    OFCondition c;
#define DH_PUT(expr)                                                                               \
    do {                                                                                           \
        c = (expr);                                                                                \
        if (c.bad())                                                                               \
            return fail(msg, msg_len, DH_DICOM_ERR_INTERNAL, "cannot set %s: %s", #expr,           \
                        c.text());                                                                 \
    } while (0)

    /* SOP Common, General Study, Patient. */
    DH_PUT(put(ds, DCM_ImageType, im->image_type));
    DH_PUT(put(ds, DCM_SOPClassUID, im->sop_class_uid));
    DH_PUT(put(ds, DCM_SOPInstanceUID, im->sop_instance_uid));
    DH_PUT(put(ds, DCM_StudyDate, im->study_date, true));
    DH_PUT(put(ds, DCM_ContentDate, im->study_date, true));
    DH_PUT(put(ds, DCM_StudyTime, im->study_time, true));
    DH_PUT(put(ds, DCM_ContentTime, im->study_time, true));
    DH_PUT(put(ds, DCM_AccessionNumber, im->accession_number, true));
    DH_PUT(put(ds, DCM_Modality, im->modality));
    DH_PUT(put(ds, DCM_Manufacturer, nullptr, true));
    DH_PUT(put(ds, DCM_ReferringPhysicianName, nullptr, true));
    DH_PUT(put(ds, DCM_SeriesDescription, im->series_description));
    DH_PUT(put(ds, DCM_PatientName, im->patient_name, true));
    DH_PUT(put(ds, DCM_PatientID, im->patient_id, true));
    DH_PUT(put(ds, DCM_PatientBirthDate, nullptr, true));
    DH_PUT(put(ds, DCM_PatientSex, nullptr, true));
    if (im->has_slice_thickness)
        DH_PUT(put(ds, DCM_SliceThickness, format_ds(im->slice_thickness).c_str()));
    DH_PUT(put(ds, DCM_StudyInstanceUID, im->study_uid));
    DH_PUT(put(ds, DCM_SeriesInstanceUID, im->series_uid));
    DH_PUT(put(ds, DCM_StudyID, im->study_id, true));
    snprintf(num, sizeof num, "%" PRId32, im->series_number);
    DH_PUT(put(ds, DCM_SeriesNumber, num));
    snprintf(num, sizeof num, "%" PRId32, im->instance_number);
    DH_PUT(put(ds, DCM_InstanceNumber, num));

    /* Image plane; PatientOrientation is required (empty allowed) when the plane is unknown. */
    if (!im->has_orientation || !im->has_position)
        DH_PUT(put(ds, DCM_PatientOrientation, nullptr, true));
    if (im->has_position)
        DH_PUT(put(ds, DCM_ImagePositionPatient, format_ds_list(im->position, 3).c_str()));
    if (im->has_orientation)
        DH_PUT(put(ds, DCM_ImageOrientationPatient, format_ds_list(im->orientation, 6).c_str()));
    if (im->frame_of_reference_uid) {
        DH_PUT(put(ds, DCM_FrameOfReferenceUID, im->frame_of_reference_uid));
        DH_PUT(put(ds, DCM_PositionReferenceIndicator, nullptr, true));
    }

    /* Image pixel. */
    DH_PUT(ds->putAndInsertUint16(DCM_SamplesPerPixel, 1));
    DH_PUT(put(ds, DCM_PhotometricInterpretation,
               im->photometric == DH_DICOM_MONOCHROME1 ? "MONOCHROME1" : "MONOCHROME2"));
    if (im->frames > 1) {
        snprintf(num, sizeof num, "%" PRIu32, im->frames);
        DH_PUT(put(ds, DCM_NumberOfFrames, num));
    }
    DH_PUT(ds->putAndInsertUint16(DCM_Rows, (Uint16)im->rows));
    DH_PUT(ds->putAndInsertUint16(DCM_Columns, (Uint16)im->columns));
    if (im->has_pixel_spacing)
        DH_PUT(put(ds, DCM_PixelSpacing, format_ds_list(im->pixel_spacing, 2).c_str()));
    DH_PUT(ds->putAndInsertUint16(DCM_BitsAllocated, (Uint16)im->bits_allocated));
    DH_PUT(ds->putAndInsertUint16(DCM_BitsStored, (Uint16)im->bits_stored));
    DH_PUT(ds->putAndInsertUint16(DCM_HighBit, (Uint16)im->high_bit));
    DH_PUT(ds->putAndInsertUint16(DCM_PixelRepresentation, im->is_signed ? 1 : 0));
    if (im->has_window) {
        DH_PUT(put(ds, DCM_WindowCenter, format_ds(im->window_center).c_str()));
        DH_PUT(put(ds, DCM_WindowWidth, format_ds(im->window_width).c_str()));
    }
    if (im->has_rescale) {
        DH_PUT(put(ds, DCM_RescaleIntercept, format_ds(im->rescale_intercept).c_str()));
        DH_PUT(put(ds, DCM_RescaleSlope, format_ds(im->rescale_slope).c_str()));
        DH_PUT(put(ds, DCM_RescaleType, im->rescale_type));
    }
#undef DH_PUT
    return put_pixels(ds, im, msg, msg_len);
}

/* The pixels in the representation of the transfer syntax: DCMTK's encoders for RLE and JPEG
 * lossless, CharLS 2 for JPEG-LS, OpenJPEG for JPEG 2000, nothing to do for the native syntaxes. */
dh_dicom_status encode_pixels(DcmDataset *ds, E_TransferSyntax xfer, const char *path, char *msg,
                              size_t msg_len)
{
    const char *uid = DcmXfer(xfer).getXferID();
    if (xfer == EXS_JPEGLSLossless || xfer == EXS_JPEG2000LosslessOnly) {
        try {
            if (xfer == EXS_JPEGLSLossless)
                dh_dicom_impl::encode_jpegls_pixels(*ds);
            else
                dh_dicom_impl::encode_jpeg2000_pixels(*ds);
        } catch (const dh_dicom_impl::failure &f) {
            return fail(msg, msg_len, f.status, "%s: cannot encode the pixels as %s: %s", path,
                        uid, f.reason.c_str());
        }
        return DH_DICOM_OK;
    }
    DJ_RPLossless jpeg_param(1, 0); /* process 14, selection value 1, no point transform */
    DcmRLERepresentationParameter rle_param;
    const DcmRepresentationParameter *param = nullptr;
    if (xfer == EXS_JPEGProcess14SV1)
        param = &jpeg_param;
    else if (xfer == EXS_RLELossless)
        param = &rle_param;
    OFCondition c = ds->chooseRepresentation(param ? xfer : EXS_LittleEndianExplicit, param);
    if (c.bad() || !ds->canWriteXfer(xfer))
        return fail(msg, msg_len, DH_DICOM_ERR_UNSUPPORTED,
                    "%s: cannot encode the pixels as %s: %s", path, uid,
                    c.bad() ? c.text() : "encoder refused the image");
    return DH_DICOM_OK;
}

/* The folder part of a path ("." when it has none). */
std::string folder_of(const std::string &path)
{
    size_t slash = path.find_last_of('/');
    if (slash == std::string::npos)
        return ".";
    if (slash == 0)
        return "/";
    return path.substr(0, slash);
}

/* Moves tmp to path, refusing to replace an existing file unless asked. */
int publish(const char *tmp, const char *path, int replace)
{
    if (replace)
        return rename(tmp, path);
#ifdef RENAME_NOREPLACE
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -1;
#endif
    /* Filesystems without RENAME_NOREPLACE: a hard link also fails when path exists. */
    if (link(tmp, path) != 0)
        return -1;
    unlink(tmp);
    return 0;
}

/* The folder's entries flushed, so that names renamed into it survive a crash. Errors are not
 * reported: some file systems refuse fsync on a folder (EINVAL), and the files themselves are
 * already flushed. */
void sync_folder(const std::string &folder)
{
    int dfd = open(folder.c_str(), O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
}

dh_dicom_status save(dh_dicom_dataset *dataset, const char *path, dh_dicom_syntax syntax,
                     int replace, bool flush_folder, char *msg, size_t msg_len)
{
    syntax_info info;
    if (!dataset || !path || !*path)
        return fail(msg, msg_len, DH_DICOM_ERR_INVALID_ARGUMENT, "no dataset or no path");
    if (!syntax_lookup(syntax, &info))
        return fail(msg, msg_len, DH_DICOM_ERR_INVALID_ARGUMENT, "%s: unknown transfer syntax %d",
                    path, (int)syntax);
    if (!replace && access(path, F_OK) == 0)
        return fail(msg, msg_len, DH_DICOM_ERR_IO, "%s: already exists (not replaced)", path);
    dh_dicom_impl::encoders_init();

    /* Encode a copy so the caller's dataset keeps only its uncompressed representation (the
     * encoders also add tags such as DerivationDescription that must not leak into a later save
     * in another syntax). */
    DcmFileFormat copy(dataset->file);
    DcmDataset *ds = copy.getDataset();
    dh_dicom_status st = encode_pixels(ds, info.xfer, path, msg, msg_len);
    if (st != DH_DICOM_OK)
        return st;

    std::string tmp = folder_of(path) + "/.dicomhist-XXXXXX";
    int fd = mkstemp(&tmp[0]);
    if (fd < 0)
        return fail(msg, msg_len, DH_DICOM_ERR_IO, "%s: cannot create a temporary file in %s: %s",
                    path, folder_of(path).c_str(), strerror(errno));
    close(fd);
    OFCondition c = copy.saveFile(tmp.c_str(), info.xfer, EET_ExplicitLength, EGL_recalcGL, EPD_noChange, 0,
                      0, EWM_createNewMeta);
    if (c.bad()) {
        unlink(tmp.c_str());
        return fail(msg, msg_len, DH_DICOM_ERR_IO, "%s: cannot write: %s", path, c.text());
    }
    /* mkstemp made the file 0600; a DICOM file is meant to be read by others (PACS, viewers). */
    fd = open(tmp.c_str(), O_RDWR);
    if (fd < 0 || fchmod(fd, 0644) != 0 || fsync(fd) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        unlink(tmp.c_str());
        return fail(msg, msg_len, DH_DICOM_ERR_IO, "%s: cannot flush the written file: %s", path,
                    strerror(e));
    }
    close(fd);
    if (publish(tmp.c_str(), path, replace) != 0) {
        int e = errno;
        unlink(tmp.c_str());
        if (e == EEXIST)
            return fail(msg, msg_len, DH_DICOM_ERR_IO, "%s: already exists (not replaced)", path);
        return fail(msg, msg_len, DH_DICOM_ERR_IO,
                    "%s: cannot move the written file into place: %s", path, strerror(e));
    }
    /* The rename itself is durable only once the folder is flushed (or, unflushed here, once the
     * caller flushes it: dh_dicom_dataset_save_unsynced, dh_dicom_sync_folder_of). */
    if (flush_folder)
        sync_folder(folder_of(path));
    return DH_DICOM_OK;
}

/* The dataset encoded as a whole file (meta header and dataset) into a malloc'd buffer: the
 * same bytes save() writes, with no file anywhere. */
dh_dicom_status encode(dh_dicom_dataset *dataset, const char *name, dh_dicom_syntax syntax,
                       void **data, size_t *size, char *msg, size_t msg_len)
{
    syntax_info info;
    if (!dataset || !name || !data || !size)
        return fail(msg, msg_len, DH_DICOM_ERR_INVALID_ARGUMENT, "no dataset, name or buffer");
    *data = nullptr;
    *size = 0;
    if (!syntax_lookup(syntax, &info))
        return fail(msg, msg_len, DH_DICOM_ERR_INVALID_ARGUMENT, "%s: unknown transfer syntax %d",
                    name, (int)syntax);
    dh_dicom_impl::encoders_init();
    DcmFileFormat copy(dataset->file); /* as in save(): the caller's dataset stays native */
    dh_dicom_status st = encode_pixels(copy.getDataset(), info.xfer, name, msg, msg_len);
    if (st != DH_DICOM_OK)
        return st;
    /* DCMTK writes into a fixed window and says EC_StreamNotifyClient when it is full: each
     * window's bytes are appended and writing goes on. */
    std::string bytes;
    std::vector<char> window(1 << 20);
    DcmOutputBufferStream out(window.data(), (offile_off_t)window.size());
    OFCondition c;
    copy.transferInit();
    do {
        c = copy.write(out, info.xfer, EET_ExplicitLength, nullptr, EGL_recalcGL, EPD_noChange, 0,
                       0, 0, EWM_createNewMeta);
        void *chunk = nullptr;
        offile_off_t n = 0;
        out.flushBuffer(chunk, n);
        bytes.append(static_cast<const char *>(chunk), (size_t)n);
    } while (c == EC_StreamNotifyClient);
    copy.transferEnd();
    if (c.bad())
        return fail(msg, msg_len, DH_DICOM_ERR_INTERNAL, "%s: cannot encode: %s", name, c.text());
    void *buf = malloc(bytes.size() ? bytes.size() : 1);
    if (!buf)
        return fail(msg, msg_len, DH_DICOM_ERR_NO_MEMORY, "%s: out of memory encoding", name);
    memcpy(buf, bytes.data(), bytes.size());
    *data = buf;
    *size = bytes.size();
    return DH_DICOM_OK;
}

} // namespace

extern "C" {

int dh_dicom_uid_valid(const char *uid)
{
    if (!uid || !*uid || strlen(uid) > 64)
        return 0;
    for (const char *c = uid; *c; ++c)
        if (!((*c >= '0' && *c <= '9') || *c == '.'))
            return 0;
    return 1;
}

dh_dicom_status dh_dicom_uid_random(char uid[DH_DICOM_UID_LEN])
{
    try {
        std::random_device rd;
        uint64_t r = ((uint64_t)rd() << 32) ^ (uint64_t)rd();
        r &= (UINT64_C(1) << 56) - 1; /* 17 digits at most: the UID stays within 64 characters */
        if (r == 0)
            r = 1;
        snprintf(uid, DH_DICOM_UID_LEN, "%s.1.%" PRIu64, DH_DICOM_UID_ROOT, r);
        return DH_DICOM_OK;
    } catch (...) {
        uid[0] = '\0';
        return DH_DICOM_ERR_INTERNAL;
    }
}

dh_dicom_status dh_dicom_uid_seeded(char uid[DH_DICOM_UID_LEN], uint32_t seed, uint32_t index)
{
    char buf[96];
    int n = snprintf(buf, sizeof buf, "%s.2.%" PRIu32 ".%" PRIu32, DH_DICOM_UID_ROOT, seed, index);
    if (n < 0 || n > 64) {
        uid[0] = '\0';
        return DH_DICOM_ERR_INVALID_ARGUMENT;
    }
    memcpy(uid, buf, (size_t)n + 1);
    return DH_DICOM_OK;
}

const char *dh_dicom_syntax_uid(dh_dicom_syntax syntax)
{
    syntax_info info;
    return syntax_lookup(syntax, &info) ? info.uid : "";
}

void dh_dicom_write_image_init(dh_dicom_write_image *image)
{
    memset(image, 0, sizeof *image);
    image->frames = 1;
    image->bits_allocated = 16;
    image->bits_stored = 16;
    image->high_bit = 15;
    image->photometric = DH_DICOM_MONOCHROME2;
    image->rescale_slope = 1.0;
    image->series_number = 1;
    image->instance_number = 1;
}

dh_dicom_status dh_dicom_dataset_build(const dh_dicom_write_image *image, dh_dicom_dataset **out,
                                       char *msg, size_t msg_len)
{
    if (!out)
        return fail(msg, msg_len, DH_DICOM_ERR_INVALID_ARGUMENT, "no output given");
    *out = nullptr;
    if (!image)
        return fail(msg, msg_len, DH_DICOM_ERR_INVALID_ARGUMENT, "no image given");
    dh_dicom_dataset *d = nullptr;
    try {
        dh_dicom_impl::dictionary_init();
        d = new dh_dicom_dataset;
        dh_dicom_status st = build(image, d->file.getDataset(), msg, msg_len);
        if (st != DH_DICOM_OK) {
            delete d;
            return st;
        }
        *out = d;
        clear(msg, msg_len);
        return DH_DICOM_OK;
    } catch (const std::bad_alloc &) {
        delete d;
        return fail(msg, msg_len, DH_DICOM_ERR_NO_MEMORY, "out of memory building the dataset");
    } catch (...) {
        delete d;
        return fail(msg, msg_len, DH_DICOM_ERR_INTERNAL,
                    "unexpected exception building the dataset");
    }
}

dh_dicom_status dh_dicom_dataset_copy_patient_study(dh_dicom_dataset *dataset,
                                                    const char *source_path, char *msg,
                                                    size_t msg_len)
{
    if (!dataset || !source_path)
        return fail(msg, msg_len, DH_DICOM_ERR_INVALID_ARGUMENT, "no dataset or no source");
    try {
        dh_dicom_impl::dictionary_init();
        DcmFileFormat source;
        /* Large elements (the pixels) stay on disk: only the header is wanted. */
        OFCondition c = source.loadFile(source_path, EXS_Unknown, EGL_noChange, DCM_MaxReadLength);
        if (c.bad())
            return fail(msg, msg_len, DH_DICOM_ERR_MALFORMED, "%s: cannot read: %s", source_path,
                        c.text());
        dh_dicom_impl::copy_patient_study(*source.getDataset(), *dataset->file.getDataset(),
                                          source_path);
        clear(msg, msg_len);
        return DH_DICOM_OK;
    } catch (const dh_dicom_impl::failure &f) {
        return fail(msg, msg_len, f.status, "%s", f.reason.c_str());
    } catch (const std::bad_alloc &) {
        return fail(msg, msg_len, DH_DICOM_ERR_NO_MEMORY, "%s: out of memory", source_path);
    } catch (...) {
        return fail(msg, msg_len, DH_DICOM_ERR_INTERNAL, "%s: unexpected exception", source_path);
    }
}

dh_dicom_status dh_dicom_dataset_put_string(dh_dicom_dataset *dataset, uint16_t group,
                                            uint16_t element, const char *value, char *msg,
                                            size_t msg_len)
{
    if (!dataset)
        return fail(msg, msg_len, DH_DICOM_ERR_INVALID_ARGUMENT, "no dataset");
    try {
        dh_dicom_impl::dictionary_init();
        DcmTagKey key(group, element);
        DcmDataset *ds = dataset->file.getDataset();
        if (!value) {
            ds->findAndDeleteElement(key);
            clear(msg, msg_len);
            return DH_DICOM_OK;
        }
        OFCondition c = ds->putAndInsertString(key, value);
        if (c.bad())
            return fail(msg, msg_len, DH_DICOM_ERR_INVALID_ARGUMENT,
                        "cannot set (%04x,%04x) to \"%s\": %s", group, element, value, c.text());
        clear(msg, msg_len);
        return DH_DICOM_OK;
    } catch (const std::bad_alloc &) {
        return fail(msg, msg_len, DH_DICOM_ERR_NO_MEMORY, "out of memory setting a tag");
    } catch (...) {
        return fail(msg, msg_len, DH_DICOM_ERR_INTERNAL, "unexpected exception setting a tag");
    }
}

static dh_dicom_status save_checked(dh_dicom_dataset *dataset, const char *path,
                                    dh_dicom_syntax syntax, int replace, bool flush_folder,
                                    char *msg, size_t msg_len)
{
    try {
        dh_dicom_impl::dictionary_init();
        dh_dicom_status st = save(dataset, path, syntax, replace, flush_folder, msg, msg_len);
        if (st == DH_DICOM_OK)
            clear(msg, msg_len);
        return st;
    } catch (const std::bad_alloc &) {
        return fail(msg, msg_len, DH_DICOM_ERR_NO_MEMORY, "%s: out of memory writing", path);
    } catch (...) {
        return fail(msg, msg_len, DH_DICOM_ERR_INTERNAL, "%s: unexpected exception writing", path);
    }
}

dh_dicom_status dh_dicom_dataset_save(dh_dicom_dataset *dataset, const char *path,
                                      dh_dicom_syntax syntax, int replace, char *msg,
                                      size_t msg_len)
{
    return save_checked(dataset, path, syntax, replace, true, msg, msg_len);
}

dh_dicom_status dh_dicom_dataset_save_unsynced(dh_dicom_dataset *dataset, const char *path,
                                               dh_dicom_syntax syntax, int replace, char *msg,
                                               size_t msg_len)
{
    return save_checked(dataset, path, syntax, replace, false, msg, msg_len);
}

void dh_dicom_sync_folder_of(const char *path)
{
    if (!path || !*path)
        return;
    try {
        sync_folder(folder_of(path));
    } catch (...) {
        /* std::string's allocation: nothing flushed, as for a folder that cannot be opened */
    }
}

dh_dicom_status dh_dicom_dataset_encode(dh_dicom_dataset *dataset, const char *name,
                                        dh_dicom_syntax syntax, void **data, size_t *size,
                                        char *msg, size_t msg_len)
{
    try {
        dh_dicom_impl::dictionary_init();
        dh_dicom_status st = encode(dataset, name ? name : "(dataset)", syntax, data, size, msg,
                                    msg_len);
        if (st == DH_DICOM_OK)
            clear(msg, msg_len);
        return st;
    } catch (const std::bad_alloc &) {
        return fail(msg, msg_len, DH_DICOM_ERR_NO_MEMORY, "%s: out of memory encoding", name);
    } catch (...) {
        return fail(msg, msg_len, DH_DICOM_ERR_INTERNAL, "%s: unexpected exception encoding",
                    name);
    }
}

void dh_dicom_dataset_free(dh_dicom_dataset *dataset)
{
    delete dataset;
}

dh_dicom_status dh_dicom_write_file(const dh_dicom_write_image *image, const char *path,
                                    dh_dicom_syntax syntax, int replace, char *msg, size_t msg_len)
{
    dh_dicom_dataset *d = nullptr;
    dh_dicom_status st = dh_dicom_dataset_build(image, &d, msg, msg_len);
    if (st != DH_DICOM_OK)
        return st;
    st = dh_dicom_dataset_save(d, path, syntax, replace, msg, msg_len);
    dh_dicom_dataset_free(d);
    return st;
}

} // extern "C"

namespace dh_dicom_impl {

std::string cut(std::string s, size_t n)
{
    if (s.size() <= n)
        return s;
    size_t k = n;
    while (k > 0 && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80)
        k--;
    return s.substr(0, k);
}

void creation_date_time(bool has_created, int64_t created, char date[16], char time_text[16])
{
    time_t now = has_created ? (time_t)created : time(nullptr);
    struct tm when;
    if (has_created)
        gmtime_r(&now, &when);
    else
        localtime_r(&now, &when);
    strftime(date, 16, "%Y%m%d", &when);
    strftime(time_text, 16, "%H%M%S", &when);
}

void copy_patient_study(DcmDataset &src, DcmDataset &dst, const char *source_name)
{
    static const DcmTagKey keys[] = {
        DCM_PatientName,      DCM_PatientID,       DCM_PatientBirthDate,
        DCM_PatientSex,       DCM_StudyInstanceUID, DCM_StudyDate,
        DCM_StudyTime,        DCM_StudyID,         DCM_AccessionNumber,
        DCM_ReferringPhysicianName, DCM_StudyDescription,
    };
    for (const DcmTagKey &key : keys) {
        DcmElement *e = nullptr;
        if (src.findAndGetElement(key, e).good() && e) {
            DcmElement *copy = OFstatic_cast(DcmElement *, e->clone());
            if (!copy || dst.insert(copy, OFTrue).bad()) {
                delete copy;
                fail(DH_DICOM_ERR_INTERNAL, "cannot copy %s from %s", key.toString().c_str(),
                     source_name);
            }
        } else {
            dst.findAndDeleteElement(key);
        }
    }
}

void load_source(DcmFileFormat &ff, const char *name, const void *data, size_t size,
                 held_bytes &held)
{
    if (data == nullptr) {
        OFCondition c = ff.loadFile(name, EXS_Unknown, EGL_noChange, DCM_MaxReadLength);
        if (c.bad())
            fail(DH_DICOM_ERR_IO, "%s: cannot read the source: %s", name, c.text());
        return;
    }
    try {
        load_memory(ff, data, size, held);
    } catch (const failure &f) {
        fail(f.status, "%s: cannot read the source: %s", name, f.reason.c_str());
    }
}

dh_dicom_status build_and_save(const char *path, int replace, bool flush_folder, void **out_data,
                               size_t *out_size,
                               const std::function<void(dh_dicom_dataset *)> &build, char *msg,
                               size_t msg_len)
{
    std::unique_ptr<dh_dicom_dataset> d;
    try {
        dictionary_init();
        d.reset(new dh_dicom_dataset);
        build(d.get());
        if (out_data)
            return dh_dicom_dataset_encode(d.get(), path, DH_DICOM_EXPLICIT_LE, out_data,
                                           out_size, msg, msg_len);
        return save_checked(d.get(), path, DH_DICOM_EXPLICIT_LE, replace, flush_folder, msg,
                            msg_len);
    } catch (const failure &f) {
        return ::fail(msg, msg_len, f.status, "%s", f.reason.c_str());
    } catch (const std::bad_alloc &) {
        return ::fail(msg, msg_len, DH_DICOM_ERR_NO_MEMORY, "%s: out of memory", path);
    } catch (...) {
        return ::fail(msg, msg_len, DH_DICOM_ERR_INTERNAL, "%s: unexpected exception", path);
    }
}

} // namespace dh_dicom_impl
