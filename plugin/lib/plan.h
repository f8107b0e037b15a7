// SPDX-License-Identifier: MIT
/*
 * plan.h: what a dh_plan holds, for the library's own files: plan_scan.c fills it from the
 * headers of the inputs, plan_load.c reads one series of it with its pixels.
 */
#ifndef DH_PLUGIN_PLAN_H
#define DH_PLUGIN_PLAN_H

#include <stdint.h>

#include "dh_dicom.h"
#include "dicomhist.h"

/* The header fields that must agree across the slices of a series, and where a slice lies. */
typedef struct dh_plan_slice {
    dh_image_format format; /* as the file has it (dh_dicom.h) */
    uint32_t frames;
    int is_lossy;
    char lossy_method[DH_DICOM_UID_LEN];
    int has_modality_lut;
    uint64_t modality_lut_hash; /* of the Modality LUT (dh_modality_lut_hash), to compare */
    int has_position, has_orientation, has_instance_number;
    double position[3];
    double orientation[6];
    int32_t instance_number;
    double location; /* along the series' normal, once grouped */
    char transfer_syntax[DH_DICOM_UID_LEN]; /* the file's, so a batch knows its decoder early */
} dh_plan_slice;

typedef struct dh_plan_file {
    char *path;        /* the file, or the name of an item held in memory */
    const void *bytes; /* an item held in memory (dh_plan_scan_memory): the caller's, borrowed */
    char *output_name;
    uint64_t size;
    int64_t mtime_ns;
    dh_plan_file_state state;
    dh_status status;
    char *message; /* NULL: "" */
    size_t series; /* SIZE_MAX: none */
    dh_plan_slice slice;
    /* Only during the scan (freed once the series are formed). */
    char *series_uid, *sop_uid, *modality;
    int explicit_input;
} dh_plan_file;

typedef struct dh_plan_series {
    size_t *files; /* volume order, repeats left out */
    size_t count, cap;
    int single;    /* a multi-frame or UID-less file: read as one file */
    int by_location;
    char *path;
    char series_uid[DH_DICOM_UID_LEN];
    char modality[DH_DICOM_CS_LEN];
    dh_status status; /* not DH_OK: the series cannot be built (message says why) */
    char *message;
    size_t repeats, repeat_file, repeat_of; /* repeated instances and the first example */
    uint64_t file_bytes, sample_bytes;
} dh_plan_series;

struct dh_plan {
    dh_plan_file *files;
    size_t file_count;
    dh_plan_series *series;
    size_t series_count;
};

/* Compares the format fields that the slices of one series must share. */
int dh_plan_same_format(const dh_plan_slice *a, const dh_plan_slice *b);
/* The format as text for messages. */
void dh_plan_describe_format(char *buf, size_t len, const dh_plan_slice *s);
/* The slice record of a header just read. */
void dh_plan_slice_from_image(dh_plan_slice *s, const dh_dicom_image *m);
/* Reads one planned file, from its bytes or its path: its header only, or with its pixels
 * (want_pixels) decoded as options say (NULL: the defaults). */
dh_status dh_plan_file_read(const dh_plan_file *f, int want_pixels,
                            const dh_dicom_read_options *options, dh_dicom_image **out, char *msg,
                            size_t msg_len);
/* The second half of a scan, once p->files lists the inputs: every header read (on up to
 * dh_ctx_set_threads threads), the series formed and ordered. Returns 0, or -1 when out of
 * memory (p is then freed by the caller). */
int dh_plan_finish(dh_ctx *ctx, dh_plan *p);
/* Every series of a plan loaded in order into one set, with the scan's failures and skips
 * first (dh_volume_set_load). Does not free the plan. */
dh_status dh_volume_set_from_plan(dh_ctx *ctx, const dh_plan *plan, const char *what,
                                  dh_volume_set **out);
/* The end of dh_volume_set_load and its memory twin: when the scan succeeded, its plan loaded
 * (dh_volume_set_from_plan, messages naming "<count> <what>") and freed. */
dh_status dh_volume_set_from_scan(dh_ctx *ctx, dh_status scanned, dh_plan *plan,
                                  const char *what, size_t count, dh_volume_set **out);
/* The whole file at path into *bytes (malloc'ed) and *size; -1 when it cannot be read so (the
 * caller then reads it the usual way, for the usual message). plan_load.c. */
int dh_plan_read_whole(const char *path, unsigned char **bytes, size_t *size);
/* Slice `kept` of v recorded from planned file f of series g (source, position, location,
 * instance number; the volume marked lossy when f is), as plan_load.c and plan_load_device.c
 * keep it. Returns 0, or -1 when out of memory. */
int dh_plan_slice_record(dh_volume *v, uint32_t kept, const dh_plan_series *g,
                         const dh_plan_file *f);
/* Worker threads for ctx: its setting, 0 meaning one per online processor; at most `work`. */
int dh_ctx_worker_threads(const dh_ctx *ctx, size_t work);

#endif /* DH_PLUGIN_PLAN_H */
