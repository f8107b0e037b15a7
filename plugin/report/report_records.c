/* SPDX-License-Identifier: MIT */
/*
 * report_records.c: the info, histogram and mutual-information records of report_records.h.
 */
#include "report_records.h"

const char *report_photometric_name(dh_photometric p) {
    return p == DH_MONOCHROME1 ? "MONOCHROME1" : "MONOCHROME2";
}

const char *report_units_name(dh_units u) { return u == DH_UNITS_MODALITY ? "modality" : "stored"; }

const char *report_mi_status_name(uint32_t status) {
    if (status & DH_MI_EMPTY)
        return "empty";
    if (status & DH_MI_ZERO_JOINT_ENTROPY)
        return "zero_joint_entropy";
    return "ok";
}

void report_modality_range(const dh_volume *v, double *lo, double *hi) {
    dh_volume_modality_range(v, lo, hi);
}

static const char *volume_name(const report_names *names, const dh_volume *v) {
    return names && names->path ? names->path : dh_volume_path(v);
}

static const char *source_name(const report_names *names, const char *file) {
    return names && names->source ? names->source(names->arg, file) : file;
}

void report_info_record(report_json *j, const dh_volume *v, const report_names *names) {
    int32_t smin = 0, smax = 0;
    double mmin, mmax;
    dh_volume_stored_range(v, &smin, &smax);
    report_modality_range(v, &mmin, &mmax);
    report_json_begin_object(j);
    report_json_key(j, "path"), report_json_string(j, volume_name(names, v));
    report_json_key(j, "series_uid"), report_json_string(j, dh_volume_series_uid(v));
    report_json_key(j, "modality"), report_json_string(j, dh_volume_modality(v));
    report_json_key(j, "rows"), report_json_u64(j, dh_volume_rows(v));
    report_json_key(j, "columns"), report_json_u64(j, dh_volume_columns(v));
    report_json_key(j, "slices"), report_json_u64(j, dh_volume_slices(v));
    report_json_key(j, "bits_allocated"), report_json_u64(j, dh_volume_bits_allocated(v));
    report_json_key(j, "bits_stored"), report_json_u64(j, dh_volume_bits_stored(v));
    report_json_key(j, "signed"), report_json_bool(j, dh_volume_is_signed(v));
    report_json_key(j, "photometric"), 
        report_json_string(j, report_photometric_name(dh_volume_photometric(v)));
    report_json_key(j, "rescale_slope"), report_json_double(j, dh_volume_rescale_slope(v));
    report_json_key(j, "rescale_intercept"), report_json_double(j, dh_volume_rescale_intercept(v));
    int32_t lut_first = 0;
    uint32_t lut_entries = 0, lut_bits = 0;
    report_json_key(j, "modality_lut");
    if (dh_volume_modality_lut(v, &lut_first, &lut_entries, &lut_bits, NULL)) {
        report_json_begin_object(j);
        report_json_key(j, "entries"), report_json_u64(j, lut_entries);
        report_json_key(j, "first_mapped"), report_json_i64(j, lut_first);
        report_json_key(j, "bits"), report_json_u64(j, lut_bits);
        report_json_end_object(j);
    } else {
        report_json_null(j);
    }
    report_json_key(j, "transfer_syntax"), report_json_string(j, dh_volume_transfer_syntax(v));
    const char *lossy_method = "";
    report_json_key(j, "lossy"), report_json_bool(j, dh_volume_lossy(v, &lossy_method));
    report_json_key(j, "lossy_method"), report_json_string(j, lossy_method);
    const char *decoder_note = "";
    report_json_key(j, "decoder"), report_json_string(j, dh_volume_decoder(v, &decoder_note));
    if (!*decoder_note && names && names->decoder_note)
        decoder_note = names->decoder_note;
    report_json_key(j, "decoder_note"), report_json_string(j, decoder_note);
    report_json_key(j, "stored_min"), report_json_i64(j, smin);
    report_json_key(j, "stored_max"), report_json_i64(j, smax);
    report_json_key(j, "modality_min"), report_json_double(j, mmin);
    report_json_key(j, "modality_max"), report_json_double(j, mmax);
    report_json_key(j, "spacing"), report_json_double(j, dh_volume_spacing(v));
    report_json_key(j, "warnings");
    report_json_begin_array(j);
    for (size_t i = 0; i < dh_volume_warning_count(v); i++) {
        char text[2048];
        if (names && names->warning) {
            names->warning(names->arg, dh_volume_warning(v, i), text, sizeof text);
            report_json_string(j, text);
        } else {
            report_json_string(j, dh_volume_warning(v, i));
        }
    }
    report_json_end_array(j);
    report_json_end_object(j);
}

static void json_counts(report_json *j, const uint64_t *counts, uint32_t bins) {
    report_json_begin_array(j);
    for (uint32_t i = 0; i < bins; i++)
        report_json_u64(j, counts[i]);
    report_json_end_array(j);
}

void report_histogram_record(report_json *j, const dh_volume *v, const dh_histogram *h,
                             const report_names *names) {
    report_json_begin_object(j);
    report_json_key(j, "path"), report_json_string(j, volume_name(names, v));
    report_json_key(j, "units"), report_json_string(j, report_units_name(h->units));
    report_json_key(j, "bins"), report_json_u64(j, h->bins);
    report_json_key(j, "range");
    report_json_begin_array(j);
    report_json_double(j, h->lo);
    report_json_double(j, h->hi);
    report_json_end_array(j);
    report_json_key(j, "total"), report_json_u64(j, h->total);
    report_json_key(j, "underflow"), report_json_u64(j, h->underflow);
    report_json_key(j, "overflow"), report_json_u64(j, h->overflow);
    report_json_key(j, "counts"), json_counts(j, h->counts, h->bins);
    if (h->slices > 0) {
        report_json_key(j, "slices");
        report_json_begin_array(j);
        for (uint32_t s = 0; s < h->slices; s++) {
            double xyz[3];
            report_json_begin_object(j);
            report_json_key(j, "index"), report_json_u64(j, s);
            report_json_key(j, "source");
            report_json_string(j, source_name(names, dh_volume_slice_source(v, s)));
            report_json_key(j, "frame"), report_json_u64(j, dh_volume_slice_frame(v, s));
            report_json_key(j, "position");
            if (dh_volume_slice_position(v, s, xyz))
                report_json_double(j, dh_volume_slice_location(v, s));
            else
                report_json_null(j);
            report_json_key(j, "total"), report_json_u64(j, h->slice_total[s]);
            report_json_key(j, "underflow"), report_json_u64(j, h->slice_underflow[s]);
            report_json_key(j, "overflow"), report_json_u64(j, h->slice_overflow[s]);
            report_json_key(j, "counts");
            json_counts(j, h->slice_counts + (size_t)s * h->bins, h->bins);
            report_json_end_object(j);
        }
        report_json_end_array(j);
    }
    report_json_end_object(j);
}

void report_mi_record(report_json *j, const char *fixed, const char *moving,
                      const dh_mi_fixed_info *info, int log2, const dh_mi_scores *s) {
    report_json_begin_object(j);
    report_json_key(j, "fixed"), report_json_string(j, fixed);
    report_json_key(j, "moving"), report_json_string(j, moving);
    report_json_key(j, "bins");
    report_json_begin_array(j);
    report_json_u64(j, info->bins_fixed);
    report_json_u64(j, info->bins_moving);
    report_json_end_array(j);
    report_json_key(j, "unit"), report_json_string(j, log2 ? "bits" : "nats");
    report_json_key(j, "mi"), report_json_double(j, s->mi);
    report_json_key(j, "nmi"), report_json_double(j, s->nmi);
    report_json_key(j, "ecc"), report_json_double(j, s->ecc);
    report_json_key(j, "h_fixed"), report_json_double(j, s->h_fixed);
    report_json_key(j, "h_moving"), report_json_double(j, s->h_moving);
    report_json_key(j, "h_joint"), report_json_double(j, s->h_joint);
    report_json_key(j, "n"), report_json_u64(j, s->n);
    report_json_key(j, "range_fixed");
    report_json_begin_array(j);
    report_json_i64(j, info->fixed_lo);
    report_json_i64(j, info->fixed_hi);
    report_json_end_array(j);
    report_json_key(j, "range_moving");
    report_json_begin_array(j);
    report_json_i64(j, s->moving_lo);
    report_json_i64(j, s->moving_hi);
    report_json_end_array(j);
    report_json_key(j, "device");
    report_json_string(j, info->device == DH_DEVICE_CUDA ? "cuda" : "cpu");
    report_json_key(j, "status"), report_json_string(j, report_mi_status_name(s->status));
    report_json_end_object(j);
}
