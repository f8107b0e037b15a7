/*
 * dh_dicom.h: the C interface over DCMTK's dcmdata, the only door between the C library and
 * C++. One DICOM file (or buffer) in, its stored values and the metadata the library needs out.
 * Every function catches every exception and reports through its return value and message.
 * Internal to the library: not installed.
 */
#ifndef DH_DICOM_H
#define DH_DICOM_H

#include <stddef.h>
#include <stdint.h>

#include "dicomhist.h" /* dh_status */

#ifdef __cplusplus
extern "C" {
#endif

#define DH_DICOM_UID_LEN 65 /* 64 characters and the terminator */
#define DH_DICOM_CS_LEN 17  /* code strings: 16 characters */
#define DH_DICOM_MSG_LEN 512

/* One DICOM image as read: metadata plus (when asked for) all frames of stored values. */
typedef struct dh_dicom_image {
    uint32_t rows, columns, frames;
    uint32_t bits_allocated, bits_stored, high_bit;
    int is_signed; /* PixelRepresentation 1 */
    dh_photometric photometric;

    double rescale_slope, rescale_intercept; /* 1 and 0 when absent; from functional groups too */
    char rescale_type[DH_DICOM_CS_LEN];
    int has_window;
    double window_center, window_width; /* first value of each */

    int has_position, has_orientation;
    double position[3];    /* ImagePositionPatient of the first frame */
    double orientation[6]; /* ImageOrientationPatient: row then column direction cosines */
    /* Per-frame positions of enhanced multi-frame files (NULL when the file has none):
     * frames * 3 doubles. */
    double *frame_positions;
    int has_pixel_spacing;
    double pixel_spacing[2];
    int has_instance_number;
    int32_t instance_number;

    char modality[DH_DICOM_CS_LEN];
    char sop_class_uid[DH_DICOM_UID_LEN];
    char sop_instance_uid[DH_DICOM_UID_LEN];
    char study_uid[DH_DICOM_UID_LEN];
    char series_uid[DH_DICOM_UID_LEN];
    char frame_of_reference_uid[DH_DICOM_UID_LEN];
    char transfer_syntax_uid[DH_DICOM_UID_LEN]; /* as read; inferred when the meta lacks it */
    char transfer_syntax_name[64];

    /* rows * columns * frames stored values, masked and sign-extended: uint16_t when unsigned,
     * int16_t when signed. NULL when read without pixels. */
    void *pixels;
} dh_dicom_image;

/* Reads a file. With want_pixels 0 only the metadata is read (fast series scans), but the
 * geometry is still checked against the length of the pixel data. On failure returns the
 * status, writes "reason" into msg (the caller adds the file name) and sets *out to NULL. */
dh_status dh_dicom_read_file(const char *path, int want_pixels, dh_dicom_image **out, char *msg,
                             size_t msg_len);

/* The same from a buffer holding a whole file (preamble and meta header optional). */
dh_status dh_dicom_read_memory(const void *data, size_t size, int want_pixels,
                               dh_dicom_image **out, char *msg, size_t msg_len);

void dh_dicom_image_free(dh_dicom_image *image);

#ifdef __cplusplus
}
#endif
#endif /* DH_DICOM_H */
