// SPDX-License-Identifier: MIT
/*
 * dicom_read.cpp: the C entry points of dh_dicom.h. Each one parses a file or a buffer with
 * DCMTK, runs the checks and the decoding of the other files of this folder in a fixed order
 * (pixel format, PixelData length, metadata, pixels), and turns whatever is thrown on the way
 * (a failure, std::bad_alloc, anything) into a status and a message: no exception reaches C.
 */
#include "dicom_internal.h"

#include "dicom_gpu.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <system_error>

#include <sys/stat.h>

namespace dh_dicom_impl {

/* Whether the first bytes look like DICOM: the "DICM" magic after the 128-byte preamble, or a
 * bare dataset starting with group 0002 or 0008 (as files without meta header do). Only used to
 * word the message of a read that failed. */
static bool looks_like_dicom(const unsigned char *head, size_t n)
{
    if (n >= 132 && memcmp(head + 128, "DICM", 4) == 0)
        return true;
    if (n < 4)
        return false;
    const unsigned group_le = head[0] | (unsigned)head[1] << 8;
    const unsigned group_be = head[1] | (unsigned)head[0] << 8;
    return group_le == 0x0002 || group_le == 0x0008 || group_be == 0x0008;
}

/* A read that stopped early: when PixelData had been reached, its value is what is missing. */
[[noreturn]] static void explain_read_failure(DcmFileFormat &ff, const OFCondition &c,
                                              bool dicom_like)
{
    DcmDataset *ds = ff.getDataset();
    DcmElement *pixels = nullptr;
    if (ds != nullptr && ds->findAndGetElement(DCM_PixelData, pixels).good() &&
        pixels != nullptr)
        fail(DH_DICOM_ERR_MALFORMED,
             "pixel data truncated: the data ends inside PixelData "
             "(7FE0,0010), which declares %lu bytes (%s)",
             (unsigned long)pixels->getLengthField(), c.text());
    if (!dicom_like)
        fail(DH_DICOM_ERR_MALFORMED,
             "not a DICOM file: no DICM magic and no dataset at the start (%s)", c.text());
    if (c == EC_StreamNotifyClient || c == EC_PrematureSequDelimitationItem)
        fail(DH_DICOM_ERR_MALFORMED, "truncated: the data ends inside an element (%s)", c.text());
    fail(DH_DICOM_ERR_MALFORMED, "not a readable DICOM file (%s)", c.text());
}

static bool says_deflated(DcmMetaInfo &meta)
{
    OFString uid;
    return meta.findAndGetOFString(DCM_TransferSyntaxUID, uid).good() &&
           DcmXfer(uid.c_str()).getXfer() == EXS_DeflatedLittleEndianExplicit;
}

/* Meta header (when there is one) from the stream, then the dataset; a deflated dataset is
 * inflated here first (dicom_inflate.cpp says why). Returns DCMTK's condition. */
static OFCondition read_memory(DcmFileFormat &ff, const unsigned char *data, size_t size,
                               held_bytes &held)
{
    /* Not DcmInputBufferStream: it cannot defer long values, so DCMTK would allocate whatever
     * length a header claims before finding the bytes missing. */
    std::unique_ptr<DcmInputStream> stream = open_memory_stream(data, size);
    DcmMetaInfo probe;
    probe.transferInit();
    OFCondition c = probe.read(*stream, EXS_Unknown, EGL_noChange, DCM_MaxReadLength);
    probe.transferEnd();
    if (c.bad() || !says_deflated(probe)) {
        stream = open_memory_stream(data, size);
        ff.transferInit();
        c = ff.read(*stream, EXS_Unknown, EGL_noChange, DCM_MaxReadLength);
        ff.transferEnd();
        return c;
    }
    const size_t start = (size_t)stream->tell();
    if (start > size)
        fail(DH_DICOM_ERR_INTERNAL, "meta header read past the end of the data");
    *ff.getMetaInfo() = probe;
    inflate_dataset(data + start, size - start, held.inflated);
    stream = open_memory_stream(held.inflated.data(), held.inflated.size());
    DcmDataset *ds = ff.getDataset();
    ds->transferInit();
    c = ds->read(*stream, EXS_LittleEndianExplicit, EGL_noChange, DCM_MaxReadLength);
    ds->transferEnd();
    return c;
}

void load_memory(DcmFileFormat &ff, const void *data, size_t size, held_bytes &held)
{
    if (size == 0)
        fail(DH_DICOM_ERR_MALFORMED, "empty buffer");
    const unsigned char *bytes = static_cast<const unsigned char *>(data);
    OFCondition c = read_memory(ff, bytes, size, held);
    if (c.bad())
        explain_read_failure(ff, c, looks_like_dicom(bytes, size));
}

static void load_file(DcmFileFormat &ff, const char *path, held_bytes &held)
{
    struct stat st;
    if (stat(path, &st) != 0)
        fail(DH_DICOM_ERR_IO, "cannot open: %s", std::generic_category().message(errno).c_str());
    if (S_ISDIR(st.st_mode))
        fail(DH_DICOM_ERR_IO, "is a directory, not a file");
    FILE *probe = fopen(path, "rb"); /* DCMTK's own message for an unreadable file is vague */
    if (probe == nullptr)
        fail(DH_DICOM_ERR_IO, "cannot open: %s", std::generic_category().message(errno).c_str());
    unsigned char head[132];
    const size_t got = fread(head, 1, sizeof head, probe);
    if (st.st_size == 0) {
        fclose(probe);
        fail(DH_DICOM_ERR_MALFORMED, "empty file");
    }
    /* Only a file with a meta header can say it is deflated: such a file is read into memory
     * (its real size) and inflated there, never through DCMTK's filter. */
    if (got == sizeof head && memcmp(head + 128, "DICM", 4) == 0) {
        DcmFileFormat meta_only;
        if (meta_only.loadFile(OFFilename(path), EXS_Unknown, EGL_noChange, DCM_MaxReadLength,
                               ERM_metaOnly).good() &&
            says_deflated(*meta_only.getMetaInfo())) {
            held.file.resize((size_t)st.st_size);
            const bool whole = fseek(probe, 0, SEEK_SET) == 0 &&
                               fread(&held.file[0], 1, held.file.size(), probe) ==
                                   held.file.size();
            fclose(probe);
            if (!whole)
                fail(DH_DICOM_ERR_IO, "cannot read: %s",
                     std::generic_category().message(errno).c_str());
            load_memory(ff, held.file.data(), held.file.size(), held);
            return;
        }
    }
    fclose(probe);
    /* Values over DCM_MaxReadLength (4 KB), PixelData among them, stay on disk until asked
     * for: a metadata-only read never loads them. */
    OFCondition c = ff.loadFile(OFFilename(path), EXS_Unknown, EGL_noChange, DCM_MaxReadLength,
                                ERM_autoDetect);
    if (c.bad())
        explain_read_failure(ff, c, looks_like_dicom(head, got));
}

/* The HTJ2K syntaxes, which DCMTK 3.6.7 does not know (3.6.8 added them): their pixel data is
 * JPEG 2000's encapsulation of HTJ2K code streams, which OpenJPEG decodes like any other, so they
 * are read as JPEG 2000 (E_TransferSyntax has no value for them). */
static const struct {
    const char *uid, *name;
} htj2k_syntaxes[] = {
    {"1.2.840.10008.1.2.4.201", "High-Throughput JPEG 2000 Image Compression (Lossless Only)"},
    {"1.2.840.10008.1.2.4.202", "High-Throughput JPEG 2000 with RPCL Options Image Compression "
                                "(Lossless Only)"},
    {"1.2.840.10008.1.2.4.203", "High-Throughput JPEG 2000 Image Compression"},
};

/* The syntax the dataset is in: the meta header's when it has one (an unknown UID there must
 * not be read as native data), else what DCMTK detected. */
static E_TransferSyntax find_transfer_syntax(DcmFileFormat &ff, dh_dicom_image &img)
{
    OFString uid;
    DcmMetaInfo *meta = ff.getMetaInfo();
    if (meta != nullptr && meta->findAndGetOFString(DCM_TransferSyntaxUID, uid).good() &&
        !uid.empty()) {
        copy_field(img.transfer_syntax_uid, sizeof img.transfer_syntax_uid, uid.c_str());
        for (const auto &ht : htj2k_syntaxes)
            if (strcmp(img.transfer_syntax_uid, ht.uid) == 0) {
                copy_field(img.transfer_syntax_name, sizeof img.transfer_syntax_name, ht.name);
                return EXS_JPEG2000;
            }
        DcmXfer x(img.transfer_syntax_uid);
        copy_field(img.transfer_syntax_name, sizeof img.transfer_syntax_name,
                   x.getXfer() == EXS_Unknown ? "unknown" : x.getXferName());
        return x.getXfer();
    }
    E_TransferSyntax xfer = ff.getDataset()->getOriginalXfer();
    DcmXfer x(xfer);
    copy_field(img.transfer_syntax_uid, sizeof img.transfer_syntax_uid, x.getXferID());
    copy_field(img.transfer_syntax_name, sizeof img.transfer_syntax_name, x.getXferName());
    return xfer;
}

E_TransferSyntax read_image_header(DcmFileFormat &ff, dh_dicom_image &img)
{
    DcmDataset *ds = ff.getDataset();
    if (ds == nullptr)
        fail(DH_DICOM_ERR_MALFORMED, "no dataset");
    E_TransferSyntax xfer = find_transfer_syntax(ff, img);
    read_pixel_format(*ds, xfer, img);
    check_pixel_data(*ds, xfer, img);
    read_metadata(*ds, img);
    return xfer;
}

static void read_image(DcmFileFormat &ff, int want_pixels, const dh_dicom_read_options &options,
                       dh_dicom_image &img)
{
    const E_TransferSyntax xfer = read_image_header(ff, img);
    if (want_pixels)
        decode_pixels(*ff.getDataset(), xfer, options, img);
}

dh_dicom_image *new_image()
{
    dh_dicom_image *img = static_cast<dh_dicom_image *>(calloc(1, sizeof *img));
    if (img == nullptr)
        throw std::bad_alloc();
    img->format.rescale_slope = 1.0;
    img->frames = 1;
    return img;
}

static void write_message(char *msg, size_t msg_len, const char *text)
{
    if (msg != nullptr && msg_len > 0)
        snprintf(msg, msg_len, "%s", text);
}

dh_dicom_status run_guarded(const std::function<void()> &read, char *msg, size_t msg_len)
{
    dh_dicom_status status = DH_DICOM_ERR_INTERNAL;
    const char *text = "unexpected exception";
    std::string reason;
    try {
        read();
        return DH_DICOM_OK;
    } catch (const failure &f) {
        status = f.status;
        reason = f.reason;
        text = reason.c_str();
    } catch (const std::bad_alloc &) {
        status = DH_DICOM_ERR_NO_MEMORY;
        text = "out of memory";
    } catch (const std::exception &e) {
        reason = e.what();
        text = reason.c_str();
    } catch (...) {
    }
    write_message(msg, msg_len, text);
    return status;
}

/* Runs one read with every exception caught. `load` fills the DcmFileFormat. */
template <typename Load>
static dh_dicom_status guarded_read(Load load, int want_pixels,
                                    const dh_dicom_read_options *options, dh_dicom_image **out,
                                    char *msg, size_t msg_len)
{
    dh_dicom_image *img = nullptr;
    const dh_dicom_status status = run_guarded(
        [&] {
            codecs_init();
            img = new_image();
            held_bytes held; /* declared before ff: outlives it */
            DcmFileFormat ff;
            load(ff, held);
            const dh_dicom_read_options defaults{};
            read_image(ff, want_pixels, options ? *options : defaults, *img);
        },
        msg, msg_len);
    if (status == DH_DICOM_OK) {
        *out = img;
        return DH_DICOM_OK;
    }
    dh_dicom_image_free(img);
    return status;
}

} // namespace dh_dicom_impl

using namespace dh_dicom_impl;

/* Options a caller may get wrong, checked before anything is read. */
static bool options_valid(const dh_dicom_read_options *options, char *msg, size_t msg_len)
{
    if (options == nullptr || options->codec_threads <= 64)
        return true;
    char text[96];
    snprintf(text, sizeof text, "codec threads must be 0..64, not %u", options->codec_threads);
    write_message(msg, msg_len, text);
    return false;
}

extern "C" dh_dicom_status dh_dicom_read_file_with(const char *path, int want_pixels,
                                                   const dh_dicom_read_options *options,
                                                   dh_dicom_image **out, char *msg, size_t msg_len)
{
    write_message(msg, msg_len, "");
    if (out == nullptr || path == nullptr) {
        write_message(msg, msg_len, "no path or no output given");
        return DH_DICOM_ERR_INVALID_ARGUMENT;
    }
    *out = nullptr;
    if (!options_valid(options, msg, msg_len))
        return DH_DICOM_ERR_INVALID_ARGUMENT;
    return guarded_read(
        [path](DcmFileFormat &ff, held_bytes &held) { load_file(ff, path, held); }, want_pixels,
        options, out, msg, msg_len);
}

extern "C" dh_dicom_status dh_dicom_read_memory_with(const void *data, size_t size, int want_pixels,
                                                     const dh_dicom_read_options *options,
                                                     dh_dicom_image **out, char *msg,
                                                     size_t msg_len)
{
    write_message(msg, msg_len, "");
    if (out == nullptr || (data == nullptr && size > 0)) {
        write_message(msg, msg_len, "no data or no output given");
        return DH_DICOM_ERR_INVALID_ARGUMENT;
    }
    *out = nullptr;
    if (!options_valid(options, msg, msg_len))
        return DH_DICOM_ERR_INVALID_ARGUMENT;
    return guarded_read(
        [data, size](DcmFileFormat &ff, held_bytes &held) { load_memory(ff, data, size, held); },
        want_pixels, options, out, msg, msg_len);
}

extern "C" dh_dicom_status dh_dicom_read_file(const char *path, int want_pixels,
                                              dh_dicom_image **out, char *msg, size_t msg_len)
{
    return dh_dicom_read_file_with(path, want_pixels, nullptr, out, msg, msg_len);
}

extern "C" dh_dicom_status dh_dicom_read_memory(const void *data, size_t size, int want_pixels,
                                                dh_dicom_image **out, char *msg, size_t msg_len)
{
    return dh_dicom_read_memory_with(data, size, want_pixels, nullptr, out, msg, msg_len);
}

extern "C" void dh_dicom_image_free(dh_dicom_image *image)
{
    if (image == nullptr)
        return;
    free(image->pixels);
    free(image->frame_positions);
    free(image->modality_lut);
    free(image->voi_lut);
    free(image);
}

extern "C" int dh_dicom_gpu_decoders_settled(void)
{
    return gpu_decoders_settled() ? 1 : 0;
}

extern "C" int dh_dicom_gpu_decoders(char *msg, size_t msg_len)
{
    try {
        std::string reason;
        const bool usable = gpu_decoders_usable(reason);
        write_message(msg, msg_len, reason.c_str());
        return usable ? 1 : 0;
    } catch (...) {
        write_message(msg, msg_len, "out of memory while looking for the GPU decoders");
        return 0;
    }
}
