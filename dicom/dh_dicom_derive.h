// SPDX-License-Identifier: MIT
/*
 * dh_dicom_derive.h: writing a derived image over DCMTK. The source file's whole dataset is
 * loaded and kept (patient, study, equipment, geometry, InstanceNumber, photometric
 * interpretation), its pixels are replaced and every tag that would now lie is rewritten or
 * removed; see dh_equalized_write_dicom in dicomhist.h for the list. Saving goes through
 * dh_dicom_dataset_save (dh_dicom_write.h): atomic, never replacing a file. Internal.
 */
#ifndef DH_DICOM_DERIVE_H
#define DH_DICOM_DERIVE_H

#include <stddef.h>
#include <stdint.h>

#include "dh_dicom.h" /* DH_DICOM_UID_LEN, statuses */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dh_dicom_derive {
    const char *source_path; /* the original file (read only) */
    const char *output_path; /* must not exist, unless replace */
    int replace;             /* non-zero: an existing output_path is replaced */
    const char *series_uid;  /* the derived series' SeriesInstanceUID, shared by its files */
    const char *sop_instance_uid; /* this file's new SOPInstanceUID */
    uint32_t rows, columns, frames; /* must match the source */
    uint32_t bits_stored;           /* 1..16 of 16 allocated; values unsigned */
    const uint16_t *pixels;         /* rows * columns * frames, frame after frame */
    const char *derivation_description; /* DerivationDescription (ST, cut to 1024 characters) */
    const char *series_suffix;          /* appended to SeriesDescription (LO, cut to 64) */
    /* Content and instance creation time: `created` seconds since 1970 written as UTC when
     * has_created, else now in local time (reproducible runs give a fixed time). */
    int has_created;
    int64_t created;
    /* The source held in memory (source_path then only names it in messages); NULL: read the
     * file source_path. */
    const void *source_data;
    size_t source_size;
    /* When not NULL: nothing is written; the file's bytes go into a malloc'd *out_data of
     * *out_size bytes (free() it) and output_path only names it in messages. */
    void **out_data;
    size_t *out_size;
    /* Non-zero: the output's folder is not flushed after the file is renamed into it
     * (dh_dicom_dataset_save_unsynced); the caller flushes it (dh_dicom_sync_folder_of) once
     * its files are all written, before it reports them written. */
    int defer_folder_sync;
} dh_dicom_derive;

/* Writes one derived file. Returns DH_DICOM_OK, or the status with the reason in msg (the paths
 * are named there): DH_DICOM_ERR_IO (source unreadable, output exists or cannot be written),
 * DH_DICOM_ERR_MALFORMED / DH_DICOM_ERR_UNSUPPORTED (source cannot be decoded),
 * DH_DICOM_ERR_MISMATCH (the source's geometry differs from the request),
 * DH_DICOM_ERR_INVALID_ARGUMENT. */
dh_dicom_status dh_dicom_derive_write(const dh_dicom_derive *request, char *msg, size_t msg_len);

#ifdef __cplusplus
}
#endif
#endif /* DH_DICOM_DERIVE_H */
