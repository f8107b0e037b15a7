// SPDX-License-Identifier: MIT
/*
 * volume.h: what a dh_volume holds, for the library's own files (the public header keeps it
 * opaque), and how one is assembled from decoded DICOM images: volume.c builds single volumes
 * and their geometry, volume_access.c answers the public accessors, plan_scan.c and plan_load.c
 * group files into series.
 */
#ifndef DH_PLUGIN_VOLUME_H
#define DH_PLUGIN_VOLUME_H

#include "dh_dicom.h"
#include "dicomhist.h"

/* Where one slice of a volume came from. */
typedef struct dh_slice_info {
    char *source;    /* the file, or the name of an item held in memory */
    /* An item held in memory (dh_plan_scan_memory): its bytes, the caller's, borrowed; NULL for
     * a file. The derived writers read the source's tags from them. */
    const void *source_bytes;
    size_t source_size;
    char sop_uid[DH_DICOM_UID_LEN]; /* its SOPInstanceUID, "" when it has none */
    uint32_t frame;  /* frame in that file, 0-based */
    double location; /* position along the slice normal; the slice index when unknown */
    int has_position;
    double position[3];
    int32_t instance_number;
} dh_slice_info;

struct dh_volume {
    char *path;
    dh_image_format format; /* of its first file; every slice has the same (dh_dicom.h) */
    uint32_t slices;
    int has_window;
    double window_center, window_width;
    double spacing;
    int has_orientation;
    double orientation[6];
    double normal[3];
    char series_uid[DH_DICOM_UID_LEN];
    char study_uid[DH_DICOM_UID_LEN];
    char modality[DH_DICOM_CS_LEN];
    char transfer_syntax[DH_DICOM_UID_LEN];
    dh_slice_info *slice; /* slices entries */
    char **warnings;
    size_t warning_count;
    void *data; /* rows * columns * slices samples */
    /* A dh_device_volume's samples on the GPU while data is NULL (borrowed: the device volume
     * owns them), ready once device_stream is: dh_equalize computes there without a copy. */
    const void *device_samples;
    void *device_stream;
    int32_t stored_min, stored_max;
    /* The Modality LUT that replaces slope and intercept when has_modality_lut (modality.h):
     * modality value of s = modality_lut[clamp(s - modality_lut_first, 0, entries - 1)]. */
    int has_modality_lut;
    int32_t modality_lut_first;
    uint32_t modality_lut_entries, modality_lut_bits;
    uint16_t *modality_lut; /* owned */
    double modality_min, modality_max; /* over the stored values present */
    uint32_t window_count;             /* WindowCenter values in the file (the first is used) */
    char window_explanation[DH_DICOM_UID_LEN];
    /* The first VOI LUT of the file (voi_lut_count in all; 0: none), as dh_dicom_image has it. */
    uint32_t voi_lut_count, voi_lut_entries, voi_lut_bits;
    int32_t voi_lut_first;
    uint16_t *voi_lut; /* owned */
    char voi_lut_explanation[DH_DICOM_UID_LEN];
    int is_lossy;                      /* some slice was lossy compressed */
    char lossy_method[DH_DICOM_UID_LEN]; /* the first lossy slice's method ("" unknown) */
    /* The decoders that read its slices, distinct names joined by '+' in the order first used
     * ("nvjpeg2k", "openjpeg+nvjpeg2k", dh_dicom_image.decoder), and the first slice's reason
     * for not decoding on the GPU where that was asked for ("" when none). */
    char decoders[64];
    char decoder_note[DH_DICOM_MSG_LEN / 2];
};

/* A volume with the header fields of `first` and room for `slices` slices; NULL when out of
 * memory or when the size overflows. */
/* Adds one slice's decoder (and its note, when the volume has none yet) to v's record. */
void dh_volume_note_decoder(dh_volume *v, const char *decoder, const char *note);

dh_volume *dh_volume_alloc(const dh_dicom_image *first, uint32_t slices, const char *path);

/* Marks the volume lossy when a slice is (keeping the first method seen). */
void dh_volume_note_lossy(dh_volume *v, int is_lossy, const char *method);

/* Bytes of one slice (rows * columns samples of 16 bits). */
size_t dh_volume_slice_bytes(const dh_volume *v);

/* Appends a printf-style warning; returns 0, or -1 when out of memory. */
int dh_volume_warn(dh_volume *v, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Finds the smallest and largest stored (and modality) value once the samples are in place. */
void dh_volume_update_range(dh_volume *v);

/* Once the slices are in volume order: the mean spacing along the normal, and warnings for
 * uneven spacing (listing the spacings) and for slices sharing one location. Returns 0, or -1
 * when out of memory. */
int dh_volume_finish_geometry(dh_volume *v);

/* Wraps one decoded image (all its frames) as a volume, taking its pixels. Frames are slices,
 * ordered by the per-frame positions along the normal when the file has them, else in file
 * order. */
dh_status dh_volume_from_image(dh_ctx *ctx, dh_dicom_image *image, const char *path,
                               dh_volume **out);

/* The same volume without samples (data NULL, ranges 0), for samples that live elsewhere (the
 * GPU: plan_load_device.c); order (image->frames entries, may be NULL) receives the frame
 * order: slice i is the file's frame order[i]. */
dh_status dh_volume_from_header(dh_ctx *ctx, dh_dicom_image *image, const char *path,
                                uint32_t *order, dh_volume **out);
/* dh_volume_alloc without the sample buffer (data NULL). */
dh_volume *dh_volume_alloc_header(const dh_dicom_image *first, uint32_t slices, const char *path);

/* Slice normal from an orientation (row x column cosines). */
void dh_orientation_normal(const double orientation[6], double normal[3]);

/* A position's coordinate along the slice normal: what slices are ordered by. */
double dh_project_on_normal(const double position[3], const double normal[3]);

char *dh_strdup(const char *s);

#endif /* DH_PLUGIN_VOLUME_H */
