// SPDX-License-Identifier: MIT
/*
 * make_sample_data.c: writes dicomhist's bundled sample data (sample_data/README.md says what
 * each file is). A torso phantom made of ellipsoids is sampled twice: as a CT series of axial
 * slices, and as a parallel-beam projection radiograph of the same body. Every coordinate and
 * value is integer arithmetic and every UID is seeded, so two runs on any machine with the same
 * DCMTK and zlib write byte-identical files (the sample_data_reproducible test checks this).
 *
 * Usage: make_sample_data OUTDIR     (existing files in OUTDIR are replaced)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dh_dicom_write.h"

/* Lengths are in quarter millimetres (Q) so that every voxel centre is an integer point. */
#define Q_PER_MM 4

#define CT_SIZE 64          /* rows and columns */
#define CT_SLICES 24
#define CT_PIXEL_MM 4       /* 256 mm field of view */
#define CT_SLICE_MM 5
#define CT_BITS_STORED 12
#define CT_INTERCEPT (-1024)

#define XR_SIZE 256         /* projection rows and columns, 1 mm pixels */
#define XR_BITS_STORED 12

#define UID_SEED 1          /* change it and every UID changes */
#define STUDY_DATE "20240102"
#define STUDY_TIME "093000"

typedef struct ellipsoid {
    int64_t cx, cy, cz; /* centre, Q */
    int64_t a, b, c;    /* semi-axes along x, y, z, Q */
    int hu;
    const char *what;
} ellipsoid;

#define E(cx, cy, cz, a, b, c, hu, what)                                                           \
    {(cx) * Q_PER_MM, (cy) * Q_PER_MM, (cz) * Q_PER_MM, (a) * Q_PER_MM, (b) * Q_PER_MM,            \
     (c) * Q_PER_MM, (hu), (what)}

/* Patient coordinates (LPS: +x patient left, +y posterior, +z head). Later entries replace
 * earlier ones where they overlap, so tissues nest like in a body. */
static const ellipsoid phantom[] = {
    E(0, 0, 0, 110, 80, 170, -100, "subcutaneous fat"),
    E(0, 0, 0, 100, 70, 165, 40, "soft tissue"),
    E(-45, -5, 25, 35, 40, 90, -850, "right lung"),
    E(45, -5, 25, 32, 40, 90, -850, "left lung"),
    E(15, -20, -10, 35, 30, 40, 50, "heart"),
    E(-45, 0, -90, 50, 45, 55, 60, "liver"),
    E(5, 25, 0, 10, 10, 170, 250, "aorta with contrast"),
    E(0, 45, 0, 16, 14, 175, 700, "vertebral cortex"),
    E(0, 45, 0, 11, 9, 175, 250, "vertebral marrow"),
    E(0, -62, 10, 10, 5, 80, 700, "sternum"),
    E(95, -20, 0, 5, 5, 5, 3000, "metal skin marker"),
};

/* HU of the phantom at a point given in Q; air outside. */
static int phantom_hu(int64_t x, int64_t y, int64_t z)
{
    int hu = -1000;
    for (size_t i = 0; i < sizeof phantom / sizeof phantom[0]; ++i) {
        const ellipsoid *e = &phantom[i];
        int64_t dx = x - e->cx, dy = y - e->cy, dz = z - e->cz;
        /* (dx/a)^2 + (dy/b)^2 + (dz/c)^2 <= 1 without division: all terms stay below 2^58. */
        int64_t bc = e->b * e->c, ac = e->a * e->c, ab = e->a * e->b;
        if (dx * dx * bc * bc + dy * dy * ac * ac + dz * dz * ab * ab <= ab * ab * e->c * e->c)
            hu = e->hu;
    }
    return hu;
}

/* xorshift64*: the same noise on every machine. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * UINT64_C(2685821657736338717);
}

/* Integer noise, roughly normal: the sum of four uniform values in [-spread, spread]. */
static int noise(uint64_t *s, int spread)
{
    int sum = 0;
    for (int i = 0; i < 4; ++i)
        sum += (int)(rng_next(s) % (uint64_t)(2 * spread + 1)) - spread;
    return sum;
}

static int clamp(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static int make_dir(const char *path)
{
    if (mkdir(path, 0755) == 0 || errno == EEXIST)
        return 0;
    fprintf(stderr, "make_sample_data: %s: %s\n", path, strerror(errno));
    return -1;
}

static char *uid(char *buf, uint32_t index)
{
    if (dh_dicom_uid_seeded(buf, UID_SEED, index) != DH_DICOM_OK) {
        fprintf(stderr, "make_sample_data: UID index %" PRIu32 " too long\n", index);
        exit(1);
    }
    return buf;
}

/* The identity every sample file shares: one phantom patient, one study, a series per variant.
 * The UID buffers are the caller's and must outlive the save. */
static void set_identity(dh_dicom_write_image *im, char *study, char *series, uint32_t variant,
                         const char *description)
{
    im->study_uid = uid(study, 1);
    im->series_uid = uid(series, 10 + variant);
    im->patient_name = "Phantom^Torso";
    im->patient_id = "DH-PHANTOM-1";
    im->study_date = STUDY_DATE;
    im->study_time = STUDY_TIME;
    im->study_id = "1";
    im->accession_number = "DH0001";
    im->series_description = description;
    im->series_number = (int32_t)(10 + variant);
}

/* Saves one dataset after adding the tags the IOD wants beyond the writer's common modules. */
static int save(const dh_dicom_write_image *im, const char *const *extra, const char *path,
                dh_dicom_syntax syntax)
{
    char msg[DH_DICOM_MSG_LEN];
    dh_dicom_dataset *ds = NULL;
    dh_dicom_status st = dh_dicom_dataset_build(im, &ds, msg, sizeof msg);
    for (size_t i = 0; st == DH_DICOM_OK && extra[i]; i += 2) {
        unsigned g, e;
        sscanf(extra[i], "%4x,%4x", &g, &e);
        st = dh_dicom_dataset_put_string(ds, (uint16_t)g, (uint16_t)e, extra[i + 1], msg,
                                         sizeof msg);
    }
    if (st == DH_DICOM_OK)
        st = dh_dicom_dataset_save(ds, path, syntax, 1, msg, sizeof msg);
    dh_dicom_dataset_free(ds);
    if (st != DH_DICOM_OK) {
        fprintf(stderr, "make_sample_data: %s: %s (status %d)\n", path, msg, (int)st);
        return -1;
    }
    return 0;
}

/* One CT variant: all slices into folder `dir` in one transfer syntax, its own series. */
static int write_ct_series(const char *out, const char *dir, dh_dicom_syntax syntax,
                           uint32_t variant, const char *description, const uint16_t *volume)
{
    char folder[4096], path[4200];
    char sop_instance[DH_DICOM_UID_LEN], study[DH_DICOM_UID_LEN], series[DH_DICOM_UID_LEN],
        frame_ref[DH_DICOM_UID_LEN];
    snprintf(folder, sizeof folder, "%s/%s", out, dir);
    if (make_dir(folder) != 0)
        return -1;

    /* File names in a shuffled order, so that only positions give the slice order. */
    uint32_t name_of[CT_SLICES];
    for (uint32_t k = 0; k < CT_SLICES; ++k)
        name_of[k] = k + 1;
    uint64_t s = UINT64_C(0x5eed5eed5eed5eed);
    for (uint32_t k = CT_SLICES - 1; k > 0; --k) {
        uint32_t j = (uint32_t)(rng_next(&s) % (k + 1));
        uint32_t t = name_of[k];
        name_of[k] = name_of[j];
        name_of[j] = t;
    }

    static const char *const extra[] = {
        "0008,0070", "dicomhist sample_data", /* Manufacturer */
        "0008,1030", "Synthetic torso phantom", /* StudyDescription */
        "0018,0060", "120",                   /* KVP */
        "0018,5100", "HFS",                   /* PatientPosition */
        "0020,0012", "1",                     /* AcquisitionNumber */
        "0018,0015", "CHEST",                 /* BodyPartExamined */
        NULL};
    for (uint32_t k = 0; k < CT_SLICES; ++k) {
        dh_dicom_write_image im;
        dh_dicom_write_image_init(&im);
        im.rows = im.columns = CT_SIZE;
        im.bits_allocated = 16;
        im.bits_stored = CT_BITS_STORED;
        im.high_bit = CT_BITS_STORED - 1;
        im.pixels = volume + (size_t)k * CT_SIZE * CT_SIZE;
        im.has_rescale = 1;
        im.rescale_slope = 1;
        im.rescale_intercept = CT_INTERCEPT;
        im.rescale_type = "HU";
        im.has_window = 1;
        im.window_center = 40;
        im.window_width = 400;
        im.sop_class_uid = "1.2.840.10008.5.1.4.1.1.2"; /* CT Image Storage */
        set_identity(&im, study, series, variant, description);
        im.sop_instance_uid = uid(sop_instance, 1000 * (variant + 1) + k);
        im.frame_of_reference_uid = uid(frame_ref, 2);
        im.modality = "CT";
        im.image_type = "ORIGINAL\\PRIMARY\\AXIAL";
        /* Acquired head first: instance numbers rise as z falls, as scanners number them. */
        im.instance_number = (int32_t)(CT_SLICES - k);
        im.has_position = 1;
        im.position[0] = -(CT_SIZE - 1) * CT_PIXEL_MM / 2.0;
        im.position[1] = -(CT_SIZE - 1) * CT_PIXEL_MM / 2.0;
        im.position[2] = ((double)k - (CT_SLICES - 1) / 2.0) * CT_SLICE_MM;
        im.has_orientation = 1;
        const double axial[6] = {1, 0, 0, 0, 1, 0};
        memcpy(im.orientation, axial, sizeof axial);
        im.has_pixel_spacing = 1;
        im.pixel_spacing[0] = im.pixel_spacing[1] = CT_PIXEL_MM;
        im.has_slice_thickness = 1;
        im.slice_thickness = CT_SLICE_MM;
        snprintf(path, sizeof path, "%s/IM%04" PRIu32 ".dcm", folder, name_of[k]);
        if (save(&im, extra, path, syntax) != 0)
            return -1;
    }
    return 0;
}

/* Stored CT values, slice k at z ascending: HU + 1024 plus noise, 12 bits. */
static void make_ct_volume(uint16_t *volume)
{
    for (uint32_t k = 0; k < CT_SLICES; ++k) {
        /* Centres in Q: slices 5 mm apart around z = 0, pixels 4 mm apart around 0. */
        int64_t z = ((int64_t)2 * k - (CT_SLICES - 1)) * CT_SLICE_MM * Q_PER_MM / 2;
        uint64_t s = UINT64_C(0x9e3779b97f4a7c15) ^ ((uint64_t)(k + 1) << 32);
        for (uint32_t r = 0; r < CT_SIZE; ++r) {
            int64_t y = ((int64_t)2 * r - (CT_SIZE - 1)) * CT_PIXEL_MM * Q_PER_MM / 2;
            for (uint32_t c = 0; c < CT_SIZE; ++c) {
                int64_t x = ((int64_t)2 * c - (CT_SIZE - 1)) * CT_PIXEL_MM * Q_PER_MM / 2;
                int hu = phantom_hu(x, y, z) + noise(&s, 6);
                volume[((size_t)k * CT_SIZE + r) * CT_SIZE + c] =
                    (uint16_t)clamp(hu - CT_INTERCEPT, 0, (1 << CT_BITS_STORED) - 1);
            }
        }
    }
}

/* A parallel-beam AP projection through the phantom on a 256 x 256 mm detector: rows run from
 * head to feet, columns from the patient's right to left. Stored values fall as attenuation
 * rises, so under MONOCHROME1 bone and metal show bright as on a film. */
static void make_projection(uint16_t *image)
{
    const int64_t step = 2;                  /* 0.5 mm along the beam */
    const int64_t y_extent = 85 * Q_PER_MM;  /* the body lies within |y| < 80 mm */
    uint64_t s = UINT64_C(0x243f6a8885a308d3);
    for (uint32_t r = 0; r < XR_SIZE; ++r) {
        int64_t z = (XR_SIZE - 1 - 2 * (int64_t)r) * Q_PER_MM / 2;
        for (uint32_t c = 0; c < XR_SIZE; ++c) {
            int64_t x = (2 * (int64_t)c - (XR_SIZE - 1)) * Q_PER_MM / 2;
            int64_t line = 0; /* sum of (HU + 1000), proportional to attenuation */
            for (int64_t y = -y_extent; y <= y_extent; y += step)
                line += phantom_hu(x, y, z) + 1000;
            int v = 4000 - (int)(line / 110) + noise(&s, 4);
            image[(size_t)r * XR_SIZE + c] = (uint16_t)clamp(v, 0, (1 << XR_BITS_STORED) - 1);
        }
    }
}

static int write_projection(const char *out, const char *name, dh_dicom_syntax syntax,
                            uint32_t variant, const char *description, const uint16_t *image)
{
    char path[4200];
    char sop_instance[DH_DICOM_UID_LEN], study[DH_DICOM_UID_LEN], series[DH_DICOM_UID_LEN];
    static const char *const extra[] = {
        "0008,0070", "dicomhist sample_data",   /* Manufacturer */
        "0008,1030", "Synthetic torso phantom", /* StudyDescription */
        "0018,0015", "CHEST",                   /* BodyPartExamined */
        "0018,5101", "AP",                      /* ViewPosition */
        "0020,0020", "L\\F",                    /* PatientOrientation: rows, columns */
        "0018,1164", "1\\1",                    /* ImagerPixelSpacing */
        NULL};
    dh_dicom_write_image im;
    dh_dicom_write_image_init(&im);
    im.rows = im.columns = XR_SIZE;
    im.bits_allocated = 16;
    im.bits_stored = XR_BITS_STORED;
    im.high_bit = XR_BITS_STORED - 1;
    im.photometric = DH_DICOM_MONOCHROME1;
    im.pixels = image;
    im.has_window = 1;
    im.window_center = 2200;
    im.window_width = 3600;
    im.sop_class_uid = "1.2.840.10008.5.1.4.1.1.1"; /* Computed Radiography Image Storage */
    set_identity(&im, study, series, variant, description);
    im.sop_instance_uid = uid(sop_instance, 1000 * (variant + 1));
    im.modality = "CR";
    im.image_type = "DERIVED\\PRIMARY";
    im.instance_number = 1;
    im.has_pixel_spacing = 1;
    im.pixel_spacing[0] = im.pixel_spacing[1] = 1;
    snprintf(path, sizeof path, "%s/%s", out, name);
    return save(&im, extra, path, syntax);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_sample_data OUTDIR\n");
        return 2;
    }
    const char *out = argv[1];
    if (make_dir(out) != 0)
        return 1;

    static uint16_t ct[CT_SLICES * CT_SIZE * CT_SIZE];
    static uint16_t xr[XR_SIZE * XR_SIZE];
    make_ct_volume(ct);
    make_projection(xr);

    /* Each variant's number seeds its UIDs: a new variant takes the next free number, so the
     * files already committed keep their bytes. */
    static const struct {
        const char *dir;
        dh_dicom_syntax syntax;
        const char *description;
        uint32_t variant;
    } ct_variants[] = {
        {"ct_phantom", DH_DICOM_EXPLICIT_LE, "CT phantom", 0},
        {"ct_phantom_jpeg_lossless", DH_DICOM_JPEG_LOSSLESS, "CT phantom, JPEG lossless SV1", 1},
        {"ct_phantom_rle", DH_DICOM_RLE, "CT phantom, RLE", 2},
        {"ct_phantom_jpeg_ls", DH_DICOM_JPEG_LS_LOSSLESS, "CT phantom, JPEG-LS lossless", 3},
        {"ct_phantom_jpeg2000", DH_DICOM_JPEG_2000_LOSSLESS, "CT phantom, JPEG 2000 lossless", 11},
    };
    static const struct {
        const char *name;
        dh_dicom_syntax syntax;
        const char *description;
        uint32_t variant;
    } xr_variants[] = {
        {"xray_projection.dcm", DH_DICOM_EXPLICIT_LE, "AP projection", 4},
        {"xray_projection_jpeg_lossless.dcm", DH_DICOM_JPEG_LOSSLESS,
         "AP projection, JPEG lossless SV1", 5},
        {"xray_projection_rle.dcm", DH_DICOM_RLE, "AP projection, RLE", 6},
        {"xray_projection_jpeg_ls.dcm", DH_DICOM_JPEG_LS_LOSSLESS,
         "AP projection, JPEG-LS lossless", 7},
        {"xray_projection_implicit.dcm", DH_DICOM_IMPLICIT_LE, "AP projection, implicit LE", 8},
        {"xray_projection_big_endian.dcm", DH_DICOM_EXPLICIT_BE, "AP projection, big endian", 9},
        {"xray_projection_deflated.dcm", DH_DICOM_DEFLATED_LE, "AP projection, deflated", 10},
    };
    for (uint32_t v = 0; v < sizeof ct_variants / sizeof ct_variants[0]; ++v)
        if (write_ct_series(out, ct_variants[v].dir, ct_variants[v].syntax,
                            ct_variants[v].variant, ct_variants[v].description, ct) != 0)
            return 1;
    for (uint32_t v = 0; v < sizeof xr_variants / sizeof xr_variants[0]; ++v)
        if (write_projection(out, xr_variants[v].name, xr_variants[v].syntax,
                             xr_variants[v].variant, xr_variants[v].description, xr) != 0)
            return 1;
    return 0;
}
