// SPDX-License-Identifier: MIT
/*
 * dh_dicom_write.h: the C interface over DCMTK for writing grayscale DICOM images, the twin of
 * dh_dicom.h's reader. Writing happens in two separate steps so that later callers can reuse
 * the first and the last alone:
 *
 *   1. build   dh_dicom_dataset_build: a dataset from a described image (pixel module, rescale,
 *              window, geometry, identity); dh_dicom_dataset_copy_patient_study and
 *              dh_dicom_dataset_put_string then add or replace tags (a derived image keeps the
 *              patient and study of its source).
 *   2. save    dh_dicom_dataset_save: in one of the transfer syntaxes below, atomically (a
 *              temporary file in the destination folder, fsync, rename), never replacing an
 *              existing file unless asked.
 *
 * UIDs come from the project's own root DH_DICOM_UID_ROOT: "2.25." followed by the decimal form of
 * a UUID generated once for dicomhist (ITU-T X.667 / DICOM PS3.5 B.2), so nobody else allocates
 * under it. Below it, arc 1 holds random UIDs and arc 2 deterministic ones (a seed and an index),
 * which make generated sample data byte-for-byte reproducible.
 *
 * Every function catches every exception and reports through its return value and message.
 * Encoders are registered once per process and never unregistered. Internal: not installed.
 */
#ifndef DH_DICOM_WRITE_H
#define DH_DICOM_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "dh_dicom.h" /* DH_DICOM_UID_LEN, DH_DICOM_MSG_LEN, statuses, photometric */

#ifdef __cplusplus
extern "C" {
#endif

/* dicomhist's UID root: 2.25.<UUID 66a5b7be-0522-4f6a-b2c5-58ceb2155a00 as a decimal>. */
#define DH_DICOM_UID_ROOT "2.25.136441711287616915122970018367938058752"

/* A new UID: DH_DICOM_UID_ROOT.1.<56 random bits from the system's random device>. Returns
 * DH_DICOM_OK, or DH_DICOM_ERR_INTERNAL when no random source could be used. */
dh_dicom_status dh_dicom_uid_random(char uid[DH_DICOM_UID_LEN]);

/* A deterministic UID: DH_DICOM_UID_ROOT.2.<seed>.<index>; the same arguments always give the
 * same UID. For generated test and sample data only. Returns DH_DICOM_OK, or
 * DH_DICOM_ERR_INVALID_ARGUMENT when the result would exceed 64 characters (seed and index both
 * below 10^6 always fit). */
dh_dicom_status dh_dicom_uid_seeded(char uid[DH_DICOM_UID_LEN], uint32_t seed, uint32_t index);

/* 1 when uid is 1..64 characters, each a digit or a dot; else 0. */
int dh_dicom_uid_valid(const char *uid);

/* Transfer syntaxes the writer can produce (every one of them lossless). */
typedef enum dh_dicom_syntax {
    DH_DICOM_EXPLICIT_LE = 0,    /* 1.2.840.10008.1.2.1 */
    DH_DICOM_IMPLICIT_LE = 1,    /* 1.2.840.10008.1.2 */
    DH_DICOM_EXPLICIT_BE = 2,    /* 1.2.840.10008.1.2.2 (retired, still met in archives) */
    DH_DICOM_DEFLATED_LE = 3,    /* 1.2.840.10008.1.2.1.99 */
    DH_DICOM_RLE = 4,            /* 1.2.840.10008.1.2.5 */
    DH_DICOM_JPEG_LOSSLESS = 5,  /* 1.2.840.10008.1.2.4.70, process 14, selection value 1 */
    DH_DICOM_JPEG_LS_LOSSLESS = 6, /* 1.2.840.10008.1.2.4.80 */
    DH_DICOM_JPEG_2000_LOSSLESS = 7, /* 1.2.840.10008.1.2.4.90, reversible 5/3 (OpenJPEG) */
    DH_DICOM_SYNTAX_FORCE_INT32 = 0x7fffffff
} dh_dicom_syntax;

/* The UID of a syntax ("" for a value outside the enum). */
const char *dh_dicom_syntax_uid(dh_dicom_syntax syntax);

/* One grayscale image to write: one or more frames of stored values. Strings may be NULL, which
 * leaves a type 2 tag empty and omits a type 3 one; has_* flags say whether a value is given. */
typedef struct dh_dicom_write_image {
    /* Pixel module. */
    uint32_t rows, columns, frames; /* frames > 1 writes NumberOfFrames */
    uint32_t bits_allocated;        /* 8 or 16 */
    uint32_t bits_stored, high_bit; /* 1 <= bits_stored <= high_bit + 1 <= bits_allocated */
    int is_signed;                  /* PixelRepresentation 1 */
    dh_dicom_photometric photometric;
    /* rows * columns * frames stored values, frame after frame, row after row, always held in
     * 16 bits: uint16_t when unsigned, int16_t when signed. Each must fit in bits_stored; it is
     * written at bit (high_bit + 1 - bits_stored) of its word, unused bits zero when unsigned and
     * copies of the sign bit when signed. */
    const void *pixels;

    /* Modality LUT (linear) and VOI window. */
    int has_rescale;
    double rescale_slope, rescale_intercept;
    const char *rescale_type; /* "HU", "US", ...; NULL omits it */
    int has_window;
    double window_center, window_width;

    /* Identity. NULL UIDs are an error: the caller decides between random and seeded UIDs. */
    const char *sop_class_uid;
    const char *sop_instance_uid;
    const char *study_uid;
    const char *series_uid;
    const char *frame_of_reference_uid; /* NULL omits the Frame of Reference module */
    const char *modality;               /* "CT", "CR", "DX", "MR", ... */
    const char *patient_name, *patient_id;
    const char *study_date, *study_time; /* "YYYYMMDD", "HHMMSS"; also used as content date */
    const char *study_id, *accession_number;
    const char *series_description;
    const char *image_type; /* "ORIGINAL\\PRIMARY\\AXIAL"; NULL omits it */
    int32_t series_number, instance_number;

    /* Image plane. */
    int has_position;
    double position[3]; /* ImagePositionPatient of the (first) frame, mm */
    int has_orientation;
    double orientation[6]; /* row then column direction cosines */
    int has_pixel_spacing;
    double pixel_spacing[2]; /* between rows, between columns, mm */
    int has_slice_thickness;
    double slice_thickness;
} dh_dicom_write_image;

/* Sets every field to its neutral value: zeros, NULL strings, one frame, 16 bits allocated, slope
 * 1, MONOCHROME2. */
void dh_dicom_write_image_init(dh_dicom_write_image *image);

/* A dataset being prepared for writing (a DCMTK DcmFileFormat inside). */
typedef struct dh_dicom_dataset dh_dicom_dataset;

/* Step 1: builds a dataset from an image description. Checks the pixel format and every stored
 * value against bits_stored before writing anything. On failure returns the status, writes the
 * reason into msg and sets *out to NULL. */
dh_dicom_status dh_dicom_dataset_build(const dh_dicom_write_image *image, dh_dicom_dataset **out,
                                       char *msg, size_t msg_len);

/* Copies the Patient and General Study modules (name, ID, birth date, sex, study UID, date, time,
 * ID, accession number, referring physician, description) from a DICOM file into the dataset,
 * replacing the values set there; tags absent from the source are removed. For derived images. */
dh_dicom_status dh_dicom_dataset_copy_patient_study(dh_dicom_dataset *dataset,
                                                    const char *source_path, char *msg,
                                                    size_t msg_len);

/* Sets one string-valued tag (any VR DCMTK can parse from text: CS, LO, DS, IS, UI, ...),
 * replacing an existing value; value NULL removes the tag. Multiple values are separated by '\'. */
dh_dicom_status dh_dicom_dataset_put_string(dh_dicom_dataset *dataset, uint16_t group,
                                            uint16_t element, const char *value, char *msg,
                                            size_t msg_len);

/* Step 2: writes the dataset to path in the given syntax, with a new file meta header. The file
 * appears complete or not at all: written to a temporary file in the same folder, flushed to disk
 * and renamed. An existing path is replaced only when replace is non-zero; otherwise the call
 * fails with DH_DICOM_ERR_IO. The dataset may be saved again (in another syntax too). */
dh_dicom_status dh_dicom_dataset_save(dh_dicom_dataset *dataset, const char *path,
                                      dh_dicom_syntax syntax, int replace, char *msg,
                                      size_t msg_len);

/* Step 2 without its last flush: the file is written, flushed and renamed into place as by
 * dh_dicom_dataset_save, but its folder is not flushed, so a crash may still lose the new name.
 * For a caller writing many files into one folder, which flushes it once (dh_dicom_sync_folder_of)
 * before it reports them written: one folder flush for a series instead of one per file. */
dh_dicom_status dh_dicom_dataset_save_unsynced(dh_dicom_dataset *dataset, const char *path,
                                               dh_dicom_syntax syntax, int replace, char *msg,
                                               size_t msg_len);

/* Flushes the entries (fsync) of the folder holding `path` ("." for a bare name), so that names
 * renamed into it survive a crash. Errors are ignored, as dh_dicom_dataset_save ignores them:
 * some file systems refuse fsync on a folder. */
void dh_dicom_sync_folder_of(const char *path);

/* Step 2 without a file: the same bytes dh_dicom_dataset_save would write (meta header and
 * dataset) in a malloc'd buffer (*data, *size; free() it), for hosts that hand files on rather
 * than store them; name only names it in messages. */
dh_dicom_status dh_dicom_dataset_encode(dh_dicom_dataset *dataset, const char *name,
                                        dh_dicom_syntax syntax, void **data, size_t *size,
                                        char *msg, size_t msg_len);

void dh_dicom_dataset_free(dh_dicom_dataset *dataset);

/* Both steps at once. */
dh_dicom_status dh_dicom_write_file(const dh_dicom_write_image *image, const char *path,
                                    dh_dicom_syntax syntax, int replace, char *msg, size_t msg_len);

#ifdef __cplusplus
}
#endif
#endif /* DH_DICOM_WRITE_H */
