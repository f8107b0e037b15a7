/*
 * dicomhist.h: the public C API of dicomhist, read top to bottom as the table of contents.
 *
 *   1. Version
 *   2. Status codes and the context (errors, options, GPU resources)
 *   3. Volumes: DICOM files, memory buffers and series read into stored values
 *   4. Histograms: whole volume or per slice, stored or modality units, CPU or CUDA
 *
 * Rules that hold everywhere: nothing here exits or prints; every call that can fail returns a
 * dh_status and leaves a message in its context (dh_ctx_error); a context is used by one thread
 * at a time, and different contexts may be used from different threads at once; every *_free
 * accepts NULL. Structs passed in carry their own size first so they can grow without breaking
 * callers compiled against an older header.
 */
#ifndef DICOMHIST_H
#define DICOMHIST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#  define DH_API __declspec(dllexport)
#elif defined(__GNUC__)
#  define DH_API __attribute__((visibility("default")))
#else
#  define DH_API
#endif

/* ---------------------------------------------------------------------------------------------
 * 1. Version
 * ------------------------------------------------------------------------------------------- */
#define DH_VERSION_MAJOR 0
#define DH_VERSION_MINOR 1
#define DH_VERSION_PATCH 0
#define DH_VERSION_NUMBER (DH_VERSION_MAJOR * 10000 + DH_VERSION_MINOR * 100 + DH_VERSION_PATCH)
#define DH_VERSION_STRING "0.1.0"

/* The version of the library actually loaded (may differ from the header's). */
DH_API unsigned dh_version_number(void);
DH_API const char *dh_version_string(void);

/* ---------------------------------------------------------------------------------------------
 * 2. Status codes and the context
 * ------------------------------------------------------------------------------------------- */
typedef enum dh_status {
    DH_OK = 0,
    DH_ERR_INVALID_ARGUMENT = 1, /* a parameter out of its documented bounds */
    DH_ERR_IO = 2,               /* a file could not be opened, read or written */
    DH_ERR_MALFORMED = 3,        /* not DICOM, truncated, lying header, missing pixel data */
    DH_ERR_UNSUPPORTED = 4,      /* valid DICOM we do not handle: RGB, 1-bit, JPEG 2000, ... */
    DH_ERR_MISMATCH = 5,         /* slices of one series that do not fit together */
    DH_ERR_NO_MEMORY = 6,
    DH_ERR_NO_DEVICE = 7,        /* CUDA asked for, but no usable GPU or not built with CUDA */
    DH_ERR_CUDA = 8,             /* a CUDA call failed; the message has CUDA's own text */
    DH_ERR_INTERNAL = 9,
    DH_STATUS_FORCE_INT32 = 0x7fffffff
} dh_status;

/* A constant name for a status ("DH_ERR_MALFORMED"). */
DH_API const char *dh_status_name(dh_status status);

typedef enum dh_device {
    DH_DEVICE_AUTO = 0, /* the GPU when one is usable, else the CPU, silently */
    DH_DEVICE_CPU = 1,
    DH_DEVICE_CUDA = 2, /* the GPU or DH_ERR_NO_DEVICE */
    DH_DEVICE_FORCE_INT32 = 0x7fffffff
} dh_device;

/* A context holds the last error message, options, and (when CUDA is used) the GPU resources
 * reused between calls: streams, pinned staging buffers and device scratch. */
typedef struct dh_ctx dh_ctx;

/* Returns a new context, or NULL when out of memory. */
DH_API dh_ctx *dh_ctx_create(void);
DH_API void dh_ctx_free(dh_ctx *ctx);
/* The message of the last failed call on this context ("" after success); valid until the next
 * call on the context. */
DH_API const char *dh_ctx_error(const dh_ctx *ctx);
/* Worker threads for CPU paths; 0 (the default) means one per online processor. */
DH_API dh_status dh_ctx_set_threads(dh_ctx *ctx, int threads);
/* Returns 1 when this build has CUDA and a usable GPU is present, else 0 (never fails). */
DH_API int dh_cuda_available(void);

/* ---------------------------------------------------------------------------------------------
 * 3. Volumes
 *
 * A volume is one series (or one multi-frame file) as a stack of slices of stored values, each
 * held in 16 bits: uint16_t when unsigned, int16_t when signed (8-bit data is widened). Stored
 * values follow the standard exactly: masked to BitsStored below HighBit, sign-extended when
 * PixelRepresentation is 1. Slices are ordered along the slice normal, ascending.
 * ------------------------------------------------------------------------------------------- */
typedef struct dh_volume dh_volume;

typedef enum dh_photometric {
    DH_MONOCHROME2 = 0, /* low values dark */
    DH_MONOCHROME1 = 1, /* low values bright; stored values are never inverted by the library */
    DH_PHOTOMETRIC_FORCE_INT32 = 0x7fffffff
} dh_photometric;

/* Reads one file (single or multi-frame) into a volume. */
DH_API dh_status dh_volume_read_file(dh_ctx *ctx, const char *path, dh_volume **out);
/* Reads a DICOM file held in memory (with or without preamble and meta header); name is used in
 * messages and as the slice source. */
DH_API dh_status dh_volume_read_memory(dh_ctx *ctx, const void *data, size_t size,
                                       const char *name, dh_volume **out);
DH_API void dh_volume_free(dh_volume *volume);

/* A set of volumes loaded from files and directories, grouped by SeriesInstanceUID, with the
 * inputs that failed kept beside them: one bad file never stops the others. */
typedef struct dh_volume_set dh_volume_set;

/* Loads every path (a file or a directory, read recursively); returns DH_OK even when some
 * inputs failed (see dh_volume_set_failure_*), and an error only when nothing could be tried. */
DH_API dh_status dh_volume_set_load(dh_ctx *ctx, const char *const *paths, size_t count,
                                    dh_volume_set **out);
DH_API void dh_volume_set_free(dh_volume_set *set);
DH_API size_t dh_volume_set_count(const dh_volume_set *set);
/* The i-th volume, owned by the set. */
DH_API const dh_volume *dh_volume_set_volume(const dh_volume_set *set, size_t i);
DH_API size_t dh_volume_set_failure_count(const dh_volume_set *set);
DH_API const char *dh_volume_set_failure_path(const dh_volume_set *set, size_t i);
DH_API dh_status dh_volume_set_failure_status(const dh_volume_set *set, size_t i);
DH_API const char *dh_volume_set_failure_message(const dh_volume_set *set, size_t i);

/* Geometry and pixel format. */
DH_API uint32_t dh_volume_rows(const dh_volume *v);
DH_API uint32_t dh_volume_columns(const dh_volume *v);
DH_API uint32_t dh_volume_slices(const dh_volume *v);
DH_API uint32_t dh_volume_bits_allocated(const dh_volume *v);
DH_API uint32_t dh_volume_bits_stored(const dh_volume *v);
DH_API int dh_volume_is_signed(const dh_volume *v);
DH_API dh_photometric dh_volume_photometric(const dh_volume *v);
/* Modality value = slope * stored + intercept (1 and 0 when the file has no rescale). */
DH_API double dh_volume_rescale_slope(const dh_volume *v);
DH_API double dh_volume_rescale_intercept(const dh_volume *v);
/* The file's first WindowCenter/Width; returns 0 when it has none. */
DH_API int dh_volume_window(const dh_volume *v, double *center, double *width);
/* Distance between consecutive slices along the normal (mean; 0 for one slice). */
DH_API double dh_volume_spacing(const dh_volume *v);

/* Identification; strings are owned by the volume and never NULL ("" when absent). */
DH_API const char *dh_volume_path(const dh_volume *v); /* the file, or the series' folder */
DH_API const char *dh_volume_series_uid(const dh_volume *v);
DH_API const char *dh_volume_study_uid(const dh_volume *v);
DH_API const char *dh_volume_modality(const dh_volume *v);
DH_API const char *dh_volume_transfer_syntax(const dh_volume *v); /* UID of the first slice */

/* Per slice, in volume order: the file it came from, its frame in that file (0-based), its
 * position along the slice normal, and its ImagePositionPatient (returns 0 when unknown). */
DH_API const char *dh_volume_slice_source(const dh_volume *v, uint32_t slice);
DH_API uint32_t dh_volume_slice_frame(const dh_volume *v, uint32_t slice);
DH_API double dh_volume_slice_location(const dh_volume *v, uint32_t slice);
DH_API int dh_volume_slice_position(const dh_volume *v, uint32_t slice, double xyz[3]);

/* Warnings found while assembling the volume (uneven spacing, ...). */
DH_API size_t dh_volume_warning_count(const dh_volume *v);
DH_API const char *dh_volume_warning(const dh_volume *v, size_t i);

/* The stored values: rows * columns * slices samples, slice after slice, row after row;
 * uint16_t when unsigned, int16_t when signed. */
DH_API const void *dh_volume_data(const dh_volume *v);
DH_API size_t dh_volume_sample_count(const dh_volume *v);
/* Smallest and largest stored value present. */
DH_API void dh_volume_stored_range(const dh_volume *v, int32_t *min, int32_t *max);

/* ---------------------------------------------------------------------------------------------
 * 4. Histograms
 *
 * Bins 1..65536 over a half-open range [lo, hi): bin = floor((v - lo) * bins / (hi - lo)),
 * computed exactly; values below lo count as underflow and values at or above hi as overflow
 * (never clamped into the edge bins). Counts are 64-bit. The defaults: stored units, one bin per
 * possible stored value (2^BitsStored, at most 65536) over the full representable range.
 * ------------------------------------------------------------------------------------------- */
typedef enum dh_units {
    DH_UNITS_STORED = 0,
    DH_UNITS_MODALITY = 1, /* slope * stored + intercept: HU for CT */
    DH_UNITS_FORCE_INT32 = 0x7fffffff
} dh_units;

typedef struct dh_hist_params {
    uint32_t struct_size; /* sizeof(dh_hist_params), set by dh_hist_params_init */
    uint32_t bins;        /* 1..65536; 0 = the default for the volume */
    int32_t has_range;    /* 0 = the default range for the volume */
    double lo, hi;        /* in `units`; lo < hi */
    dh_units units;
    int32_t per_slice; /* also one histogram per slice, all in one pass */
    dh_device device;
} dh_hist_params;

DH_API void dh_hist_params_init(dh_hist_params *params);

/* A computed histogram. counts has `bins` entries; with per_slice, slice_counts holds `slices`
 * rows of `bins` entries and the slice_* arrays one entry per slice. */
typedef struct dh_histogram {
    uint32_t bins;
    double lo, hi;
    dh_units units;
    uint64_t total, underflow, overflow;
    uint64_t *counts;
    uint32_t slices; /* 0 without per_slice */
    uint64_t *slice_counts;
    uint64_t *slice_total, *slice_underflow, *slice_overflow;
    dh_device device_used; /* DH_DEVICE_CPU or DH_DEVICE_CUDA */
} dh_histogram;

/* Computes the histogram of a volume; *out is freed with dh_histogram_free. */
DH_API dh_status dh_hist_compute(dh_ctx *ctx, const dh_volume *volume,
                                 const dh_hist_params *params, dh_histogram **out);
DH_API void dh_histogram_free(dh_histogram *hist);

/* Left edge of bin i (i = bins gives hi), in the histogram's units. */
DH_API double dh_histogram_edge(const dh_histogram *hist, uint32_t i);

#ifdef __cplusplus
}
#endif
#endif /* DICOMHIST_H */
