// SPDX-License-Identifier: MIT
/*
 * dicom_internal.h: what the C++ files of the DCMTK wrapper share. Inside the wrapper a failure
 * is thrown as dh_dicom_failure and caught at the C entry points (dicom_read.cpp), so every
 * check reads as one line; nothing here is seen from C.
 */
#ifndef DH_DICOM_INTERNAL_H
#define DH_DICOM_INTERNAL_H

#include "dcmtk/config/osconfig.h" /* must come first */
#include "dcmtk/dcmdata/dctk.h"
#include "dcmtk/dcmdata/dccodec.h"
#include "dcmtk/dcmdata/dcpixseq.h"
#include "dcmtk/dcmdata/dcpxitem.h"

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dh_dicom.h"

/* The dataset behind the C handle of dh_dicom_write.h: built there, or loaded from a source
 * file by dicom_derive.cpp, and saved by the one atomic writer of dicom_write.cpp. */
struct dh_dicom_dataset {
    DcmFileFormat file;
};

namespace dh_dicom_impl {

/* A failure with the status the C caller gets and the reason for its message. */
struct failure {
    dh_dicom_status status;
    std::string reason;
};

/* Throws a failure with a printf-style reason (dicom_failure.cpp). */
[[noreturn]] void fail(dh_dicom_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The items of a sequence, in order (pixel fragments with the offset table first, or the items
 * of a sequence of items). DCMTK's getItem(i) walks its list from the start on every call, so a
 * loop over it is quadratic: seconds for the 40,000 frames of one enhanced file. */
template <class Item, class Sequence> std::vector<Item *> items_in(Sequence &seq)
{
    std::vector<Item *> items;
    items.reserve(seq.card());
    for (DcmObject *o = seq.nextInContainer(nullptr); o != nullptr; o = seq.nextInContainer(o))
        items.push_back(static_cast<Item *>(o));
    return items;
}

/* Adds to DCMTK's data dictionary, once per process, the entries of the attributes this library
 * uses that it lacks, so reading never depends on the dictionary file (dicom_dictionary.cpp). */
void dictionary_init();

/* Registers DCMTK's RLE and JPEG decoders once per process (dicom_codecs.cpp); JPEG-LS is
 * decoded by decode_jpegls instead. */
void codecs_init();

/* Registers DCMTK's RLE and JPEG encoders once per process, for the writer (dicom_codecs.cpp);
 * JPEG-LS is encoded by encode_jpegls_pixels instead. */
void encoders_init();

/* Checks the pixel module (presence of PixelData, colour model, bit layout, geometry, transfer
 * syntax) and fills the pixel format fields of img (dicom_pixel_format.cpp). */
void read_pixel_format(DcmDataset &ds, E_TransferSyntax xfer, dh_dicom_image &img);

/* Fills rescale, window, position, orientation, spacing, UIDs and identification, from the top
 * level or from enhanced multi-frame functional groups (dicom_metadata.cpp). */
void read_metadata(DcmDataset &ds, dh_dicom_image &img);

/* Reads the Modality LUT Sequence, when there is one, into img's modality_lut fields; a
 * descriptor that disagrees with its data fails DH_DICOM_ERR_MALFORMED (dicom_luts.cpp). */
void read_modality_lut(DcmDataset &ds, dh_dicom_image &img);

/* Reads the first item of the VOI LUT Sequence, when there is one, into img's voi_lut fields,
 * after the rescale and Modality LUT (which decide whether its inputs are signed); the same
 * checks (dicom_luts.cpp). */
void read_voi_lut(DcmDataset &ds, dh_dicom_image &img);

/* The Lossy Image Compression Method of a lossy transfer syntax, or NULL for a lossless one
 * (dicom_lossy.cpp). */
const char *lossy_method_of_syntax(const char *uid);

/* Sets img.is_lossy and img.lossy_method from the transfer syntax already in img and the
 * dataset's LossyImageCompression (dicom_lossy.cpp). */
void read_lossy(DcmDataset &ds, dh_dicom_image &img);

/* Checks the length of PixelData against the geometry already in img, before anything is
 * loaded or decompressed, and records pixel_data_bytes (dicom_pixels.cpp). */
void check_pixel_data(DcmDataset &ds, E_TransferSyntax xfer, dh_dicom_image &img);

/* Decompresses when needed and writes img.pixels: masked, sign-extended stored values;
 * codec threads and GPU decoding as dh_dicom_read_options says; sets img.decoder and
 * img.decoder_note (dicom_pixels.cpp). */
void decode_pixels(DcmDataset &ds, E_TransferSyntax xfer, const dh_dicom_read_options &options,
                   dh_dicom_image &img);

/* One item of an encapsulated pixel sequence, with its bytes (none when DCMTK cannot give
 * them). */
struct fragment {
    const Uint8 *bytes = nullptr;
    uint64_t length = 0;
};

/* The bytes that open a frame's code stream, and names for messages. */
struct frame_marker {
    const char *codec; /* "JPEG-LS" */
    const char *name;  /* "SOI" */
    Uint8 bytes[4];
    size_t length;
};

/* The items of a pixel sequence, the basic offset table first (dicom_fragments.cpp). */
std::vector<fragment> fragment_list(DcmPixelSequence &seq);

/* The first item of each frame, plus one past the last item at the end. PS3.5 A.4: one fragment
 * per frame when the counts agree; a single frame spans every fragment; otherwise the basic
 * offset table says where frames start, and without one each frame starts with `marker`. Fails
 * DH_DICOM_ERR_MALFORMED when none of these tells (dicom_fragments.cpp). */
std::vector<size_t> frame_starts(const std::vector<fragment> &items, uint32_t frames,
                                 const frame_marker &marker);

/* The bytes of items [first, end) one after the other in `joined`. */
void join_fragments(const std::vector<fragment> &items, size_t first, size_t end,
                    std::vector<Uint8> &joined);

/* The native pixels of a grayscale dataset about to be encoded: its geometry and cells (host
 * order for 16-bit cells, as DCMTK keeps them). */
struct native_pixels {
    Uint16 rows = 0, columns = 0, allocated = 0, high_bit = 0;
    bool is_signed = false;
    uint32_t frames = 1;
    DcmElement *element = nullptr;
    const Uint8 *data = nullptr;
};

/* The native pixels of ds; fails DH_DICOM_ERR_UNSUPPORTED, naming `codec`, for anything but one
 * sample of 8 or 16-bit cells (dicom_fragments.cpp). */
native_pixels native_pixels_of(DcmDataset &ds, const char *codec);

/* Replaces the native PixelData by one fragment per frame, each what `encode` makes of the
 * frame's cells (padded to even length), with a basic offset table for multi-frame images. */
void encapsulate_frames(const native_pixels &px, E_TransferSyntax xfer, const char *codec,
                        const std::function<std::vector<uint8_t>(const Uint8 *, uint32_t)> &encode);

/* JPEG-LS, lossless or near-lossless: decoded here, not by a DCMTK codec. */
inline bool is_jpegls(E_TransferSyntax xfer)
{
    return xfer == EXS_JPEGLSLossless || xfer == EXS_JPEGLSLossy;
}

/* Decodes every frame of a JPEG-LS pixel sequence with CharLS 2 into cells, one per pixel,
 * frames * rows * columns in all; corrupt or mismatched streams fail DH_DICOM_ERR_MALFORMED
 * (dicom_jpegls.cpp). */
void decode_jpegls(DcmPixelSequence &seq, const dh_dicom_image &img, uint16_t *cells);

/* JPEG 2000 (lossless only, or either): decoded here through OpenJPEG, DCMTK 3.6.7 has no
 * decoder. HTJ2K, which DCMTK 3.6.7 does not know, is read as JPEG 2000 (find_transfer_syntax in
 * dicom_read.cpp): the same fragments, the same decoder. */
inline bool is_jpeg2000(E_TransferSyntax xfer)
{
    return xfer == EXS_JPEG2000LosslessOnly || xfer == EXS_JPEG2000;
}

/* Decodes every frame of a JPEG 2000 or HTJ2K pixel sequence with OpenJPEG into cells, one per
 * pixel, frames * rows * columns in all: each sample's low 16 bits, for the dataset's bit layout
 * to interpret. A code stream whose header disagrees with the dataset on size, components or
 * depth, or that does not decode, fails DH_DICOM_ERR_MALFORMED naming the frame and OpenJPEG's
 * reason. `threads` OpenJPEG workers per frame, one when 0 (dicom_jpeg2000.cpp). */
void decode_jpeg2000(DcmPixelSequence &seq, const dh_dicom_image &img, uint32_t threads,
                     uint16_t *cells);

/* The same through nvJPEG2000 on the GPU (dicom_gpu_jpeg2000.cpp), every frame's stream checked
 * here on the CPU first exactly as decode_jpeg2000 does (a malformed one fails the same way):
 * returns false with the reason when the GPU refused or failed, leaving cells for the CPU to
 * fill (dicom_jpeg2000.cpp). */
bool decode_jpeg2000_gpu(DcmPixelSequence &seq, const dh_dicom_image &img, uint16_t *cells,
                         std::string &reason);

/* JPEG lossless SV1 through nvJPEG on the GPU (dicom_gpu_jpeg_lossless.cpp), the frames found as
 * for the other codecs decoded outside DCMTK: false with the reason when refused or failed,
 * DCMTK then decodes (dicom_jpeg_lossless.cpp). */
bool decode_jpeg_lossless_gpu(DcmPixelSequence &seq, const dh_dicom_image &img, uint16_t *cells,
                              std::string &reason);

/* Replaces the native PixelData of a grayscale dataset by its lossless JPEG 2000 encoding
 * (reversible 5/3 wavelet, one tile, one quality layer) through OpenJPEG, one fragment per frame
 * and a basic offset table for multi-frame images; the same input always gives the same bytes
 * (dicom_jpeg2000_encode.cpp). */
void encode_jpeg2000_pixels(DcmDataset &ds);

/* Replaces the native PixelData of a grayscale dataset by its lossless JPEG-LS encoding, one
 * fragment per frame and a basic offset table for multi-frame images; throws a failure when the
 * image cannot be encoded (dicom_jpegls.cpp). */
void encode_jpegls_pixels(DcmDataset &ds);

/* A stream over a caller's whole file in memory that DCMTK reads like a file: values over the
 * read limit are skipped and loaded later through a factory, so a length beyond the data is
 * refused instead of allocated (dicom_memory_stream.cpp). The buffer must outlive the dataset
 * read from it. */
std::unique_ptr<DcmInputStream> open_memory_stream(const void *data, size_t size);

/* Inflates the deflated dataset data[0..size) into out; fails DH_DICOM_ERR_MALFORMED when it
 * does not inflate (dicom_inflate.cpp). */
void inflate_dataset(const unsigned char *data, size_t size, std::string &out);

/* Copies a string into a fixed field, truncating, without the trailing spaces and NULs DICOM
 * pads values with. */
inline void copy_field(char *dst, size_t cap, const char *src)
{
    if (cap == 0)
        return;
    size_t n = strlen(src);
    while (n > 0 && (src[n - 1] == ' ' || src[n - 1] == '\0'))
        n--;
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* At most n bytes of s, stepping back so as never to end inside a UTF-8 sequence: values cut
 * to their VR's length (dicom_write.cpp). */
std::string cut(std::string s, size_t n);

/* A creation date ("YYYYMMDD") and time ("HHMMSS"): `created` seconds since 1970 as UTC when
 * has_created (runs that repeat byte for byte), else now in local time (dicom_write.cpp). */
void creation_date_time(bool has_created, int64_t created, char date[16], char time_text[16]);

/* The one-file writers' frame (dicom_derive.cpp, dicom_gsps.cpp): a new dataset filled by `build`,
 * then saved to path in explicit little endian by dh_dicom_dataset_save (atomic, replacing only
 * when asked; dh_dicom_dataset_save_unsynced where flush_folder is false), or, when out_data is
 * not NULL, encoded into a malloc'd buffer (*out_data, *out_size) by dh_dicom_dataset_encode with
 * path only naming it. Every failure, thrown or returned, becomes the status and its reason in
 * msg, the path named where the reason would not say it (dicom_write.cpp).
 */
dh_dicom_status build_and_save(const char *path, int replace, bool flush_folder, void **out_data,
                               size_t *out_size,
                               const std::function<void(dh_dicom_dataset *)> &build, char *msg,
                               size_t msg_len);

/* Bytes that must outlive the dataset read from them, since DCMTK loads deferred values from
 * them later: a deflated file's own bytes and its inflated dataset. std::string rather than a
 * vector: libstdc++ instantiates its members itself, so none leak out of the shared library. */
struct held_bytes {
    std::string file, inflated;
};

/* Reads a whole DICOM file held in memory into ff (meta header when there is one, a deflated
 * dataset inflated into held); throws a failure that does not name the data (dicom_read.cpp). */
void load_memory(DcmFileFormat &ff, const void *data, size_t size, held_bytes &held);

/* A writer's source: from data (size bytes, which must outlive ff, as must held) when not NULL,
 * else from the file `name`; values longer than 4 KB (the pixels) are left unread until asked
 * for. Throws a failure naming `name` (dicom_write.cpp). */
void load_source(DcmFileFormat &ff, const char *name, const void *data, size_t size,
                 held_bytes &held);

/* Copies the Patient and General Study modules from src into dst, removing from dst what src
 * lacks (dicom_write.cpp). */
void copy_patient_study(DcmDataset &src, DcmDataset &dst, const char *source_name);

/* ---- For the batched GPU decode (dicom_gpu_batch.cpp, issue 24) ---------------------------- */

struct gpu_frame; /* dicom_gpu.h */

/* Runs `read` with every exception caught: DH_DICOM_OK, or the status of the failure thrown with
 * its reason in msg (what every C entry of this layer returns) (dicom_read.cpp). */
dh_dicom_status run_guarded(const std::function<void()> &read, char *msg, size_t msg_len);

/* A new image with the defaults a read starts from (calloc'd, dh_dicom_image_free frees it). */
dh_dicom_image *new_image();

/* What a read with want_pixels does before decoding: the transfer syntax, pixel format,
 * PixelData length and metadata checked into img; returns the syntax (dicom_read.cpp). */
E_TransferSyntax read_image_header(DcmFileFormat &ff, dh_dicom_image &img);

/* The checked code stream of every frame of a JPEG 2000 / HTJ2K pixel sequence, as
 * decode_jpeg2000_gpu gives them to the GPU: a frame of one fragment points into the dataset's
 * own bytes, one of several is joined into `joined` (which must outlive the result). Malformed
 * streams fail as decode_jpeg2000 fails them; a stream without EOC is refused with the reason
 * (empty result) (dicom_jpeg2000.cpp). */
std::vector<gpu_frame> jpeg2000_gpu_frames(DcmPixelSequence &seq, const dh_dicom_image &img,
                                                  std::vector<std::vector<Uint8>> &joined,
                                                  std::string &reason);

/* One frame of such a list decoded by OpenJPEG into cells[rows * columns] (the fallback of a
 * frame the GPU did not read) (dicom_jpeg2000.cpp). */
void decode_jpeg2000_frame(const gpu_frame &frame, const dh_dicom_image &img, uint32_t index,
                           uint16_t *cells);

/* Fails a JPEG pixel sequence (.50 to .70) with a fragment DCMTK's decoder never gets past, as
 * its read does, so a GPU decoder is never handed it (dicom_pixels.cpp). */
void refuse_stalling_jpeg(DcmPixelSequence &seq, E_TransferSyntax xfer);

/* The code stream of every frame of a JPEG lossless SV1 pixel sequence, each ending with its EOI
 * (frames found by their SOI as DCMTK finds them), joined into `joined` (which must outlive the
 * result); empty with the reason where a frame cannot be found or is cut short: DCMTK then reads
 * the file (dicom_jpeg_lossless.cpp). */
std::vector<gpu_frame> jpeg_lossless_gpu_frames(DcmPixelSequence &seq, const dh_dicom_image &img,
                                                std::vector<std::vector<Uint8>> &joined,
                                                std::string &reason);

/* Decoded cells (each sample's low 16 bits) made stored values in place: the dataset's bit
 * layout applied as every decoder's output gets it (dicom_pixels.cpp). */
void cells_to_stored_values(uint16_t *cells, size_t n, const dh_dicom_image &img);

/* The encapsulated pixel sequence of a dataset whose PixelData check_pixel_data passed
 * (dicom_pixels.cpp). */
DcmPixelSequence &pixel_fragments(DcmDataset &ds);

} // namespace dh_dicom_impl

#endif /* DH_DICOM_INTERNAL_H */
