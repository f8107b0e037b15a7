// SPDX-License-Identifier: MIT
/*
 * dh_dicom_gsps.h: writing a Grayscale Softcopy Presentation State (PS3.3 A.33.1) over DCMTK:
 * lookup tables that a viewer applies to the untouched source images, instead of a derived copy
 * of their pixels. dicom_gsps.cpp reads each source's header (never its pixels) for the UIDs
 * and geometry it references, keeps the patient and study of the first, and writes the IOD's
 * mandatory modules with one Softcopy VOI LUT item per table. Saving goes through
 * dh_dicom_dataset_save (dh_dicom_write.h): atomic, never replacing a file unless asked.
 * Internal.
 *
 * The tables apply to stored values: wherever a source has a Modality LUT or a rescale, the
 * presentation state carries an identity rescale (slope 1, intercept 0, type US), which replaces
 * the image's (PS3.3 C.11.1), so that entry i of a table maps stored value first_mapped + i.
 * The Presentation LUT is IDENTITY, or INVERSE for MONOCHROME1 sources, so that the state shows
 * the table's output as a derived image of the same photometric interpretation shows its pixels.
 */
#ifndef DH_DICOM_GSPS_H
#define DH_DICOM_GSPS_H

#include <stddef.h>
#include <stdint.h>

#include "dh_dicom.h" /* statuses */

#ifdef __cplusplus
extern "C" {
#endif

/* One VOI LUT and the images (or frames) it applies to. */
typedef struct dh_dicom_gsps_lut {
    int32_t first_mapped;   /* the stored value of entry 0 (LUT Descriptor's second value) */
    uint32_t entries;       /* 1 .. 65536 */
    uint32_t bits;          /* 8 .. 16: each entry is 0 .. 2^bits - 1 */
    const uint16_t *data;   /* entries values */
    /* The images it applies to, as indexes into dh_dicom_gsps.images with a frame number
     * (1-based; 0 = every frame); ref_count 0 = every referenced image (one shared table). */
    size_t ref_count;
    const uint32_t *ref_image;
    const uint32_t *ref_frame; /* NULL: 0 for each */
} dh_dicom_gsps_lut;

typedef struct dh_dicom_gsps {
    const char *output_path;
    int replace;                /* non-zero: an existing output_path is replaced */
    const char *const *images;  /* the source files referenced, one study; image_count >= 1 */
    size_t image_count;
    const dh_dicom_gsps_lut *luts;
    size_t lut_count;           /* >= 1 */
    const char *series_uid;     /* the presentation state's own series and instance */
    const char *sop_instance_uid;
    const char *content_label;       /* CS: A-Z, 0-9, '_' and space, at most 16 characters */
    const char *content_description; /* LO, cut to 64 characters */
    const char *lut_explanation;     /* LO, cut to 64 characters */
    /* Presentation creation time: `created` seconds since 1970 written as UTC when has_created,
     * else now in local time. */
    int has_created;
    int64_t created;
    /* Sources held in memory: image_data[i] (image_size[i] bytes) is images[i]'s file, which then
     * only names it; NULL (the array or an entry): read the file images[i]. */
    const void *const *image_data;
    const size_t *image_size;
    /* When not NULL: nothing is written; the state's bytes go into a malloc'd *out_data of
     * *out_size bytes (free() it) and output_path only names it in messages. */
    void **out_data;
    size_t *out_size;
} dh_dicom_gsps;

/* Writes the presentation state. Returns DH_DICOM_OK, or the status with the reason in msg:
 * DH_DICOM_ERR_INVALID_ARGUMENT (an incomplete request, a table out of bounds or referencing
 * an image or frame that is not there), DH_DICOM_ERR_IO (a source unreadable, the output exists
 * or cannot be written), DH_DICOM_ERR_MALFORMED (a source without the UIDs to reference),
 * DH_DICOM_ERR_MISMATCH (sources of different studies). */
dh_dicom_status dh_dicom_gsps_write(const dh_dicom_gsps *request, char *msg, size_t msg_len);

/* 1 when path is a presentation state (of any kind) whose SOPInstanceUID is uid, else 0: for
 * keeping an output that a resumed run would write again. */
int dh_dicom_gsps_is_instance(const char *path, const char *uid);

#ifdef __cplusplus
}
#endif
#endif /* DH_DICOM_GSPS_H */
