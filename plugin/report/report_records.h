/* SPDX-License-Identifier: MIT */
/*
 * report_records.h: the JSON records every host answers with, written once so that the
 * command's --json lines and the Orthanc plugin's REST answers carry the same fields: what a
 * volume is (info), its histogram, and one mutual-information score. A host names what it read
 * its own way (a file path for the command, an Orthanc ID for the plugin) through
 * report_names. Each writer writes one JSON object and no line end.
 */
#ifndef DH_REPORT_RECORDS_H
#define DH_REPORT_RECORDS_H

#include "dicomhist.h"
#include "report_json.h"

/* How a record names the volume and the source of each slice. NULL names = as the library
 * has them (dh_volume_path, dh_volume_slice_source). */
typedef struct report_names {
    const char *path; /* NULL: dh_volume_path */
    /* The name of a slice's source file; NULL: the file's path as is. */
    const char *(*source)(void *arg, const char *file);
    /* A warning as the host shows it, written into out (len bytes); NULL: as the library has
     * it. Warnings name files; a host that read them under other names renames them here. */
    void (*warning)(void *arg, const char *warning, char *out, size_t len);
    void *arg;
    /* The record's decoder_note where the library's is empty: why the host itself had a slice
     * the GPU could read decoded on the CPU (the command's batch, cli_batch_decode.h); NULL:
     * none. */
    const char *decoder_note;
} report_names;

/* `dicomhist info --json`: path, series_uid, modality, rows, columns, slices, bits_allocated,
 * bits_stored, signed, photometric, rescale_slope, rescale_intercept, modality_lut
 * ({entries, first_mapped, bits} or null), transfer_syntax, lossy, lossy_method,
 * stored_min, stored_max, modality_min, modality_max, spacing, warnings. */
void report_info_record(report_json *j, const dh_volume *v, const report_names *names);

/* `dicomhist histogram --json`: path, units, bins, range, total, underflow, overflow, counts,
 * and with per-slice counts `slices`: {index, source, frame, position, total, underflow,
 * overflow, counts} per slice. */
void report_histogram_record(report_json *j, const dh_volume *v, const dh_histogram *h,
                             const report_names *names);

/* `dicomhist mi --json`: fixed, moving, bins, unit, mi, nmi, ecc, h_fixed, h_moving, h_joint,
 * n, range_fixed, range_moving, device, status. */
void report_mi_record(report_json *j, const char *fixed, const char *moving,
                      const dh_mi_fixed_info *info, int log2, const dh_mi_scores *s);

/* Smallest and largest modality value of the stored values present (dh_volume_modality_range:
 * through the Modality LUT when the volume has one). */
void report_modality_range(const dh_volume *v, double *lo, double *hi);

const char *report_photometric_name(dh_photometric p); /* "MONOCHROME1" / "MONOCHROME2" */
const char *report_units_name(dh_units u);             /* "stored" / "modality" */
/* "ok", "empty" (no pixel counted) or "zero_joint_entropy" from dh_mi_scores.status. */
const char *report_mi_status_name(uint32_t status);

#endif /* DH_REPORT_RECORDS_H */
