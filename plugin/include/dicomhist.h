// SPDX-License-Identifier: MIT
/*
 * dicomhist.h: the public C API of dicomhist, read top to bottom as the table of contents.
 *
 *   1. Version
 *   2. Status codes and the context (errors, options, GPU resources)
 *   3. Volumes: DICOM files, memory buffers and series read into stored values
 *   4. Histograms: whole volume or per slice, stored or modality units, CPU or CUDA
 *   5. Joint histograms and mutual information: prepared fixed image, batched GPU scoring
 *   5b. Parzen-window (Mattes) MI and its gradient, batched, host or device, for optimizers
 *   6. Equalization and windowing: tables per volume or slice, derived DICOM and PNG out
 *   7. Batches: a plan from headers alone, then one series at a time, in parallel
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
    DH_ERR_UNSUPPORTED = 4,      /* valid DICOM we do not handle: RGB, 1-bit, MPEG, ... */
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
/* Codec threads for each JPEG 2000 / HTJ2K frame that dh_volume_read_file and
 * dh_volume_read_memory decode: 0 or 1 (the default) means one, as batch work wants (it reads
 * files in parallel); more, up to 64, only pays for one huge image. */
DH_API dh_status dh_ctx_set_codec_threads(dh_ctx *ctx, int threads);
/* Returns 1 when this build has CUDA and a usable GPU is present, else 0 (never fails). */
DH_API int dh_cuda_available(void);
/* Writes the name of the GPU the library uses (the current CUDA device, as CUDA names it) into
 * name, cut to size - 1 characters; returns 1, or 0 with name "" when dh_cuda_available is 0. */
DH_API int dh_cuda_device_name(char *name, size_t size);

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
/* Copies caller samples into a new volume, for hosts that hold their own pixels: rows * columns
 * * slices values, slice after slice, uint16_t when is_signed is 0 and int16_t when it is 1,
 * each of which must fit bits_stored (1..16) bits; a value that does not is refused
 * (DH_ERR_INVALID_ARGUMENT naming it). The volume is MONOCHROME2 with slope 1, intercept 0, no
 * geometry (locations are slice indices, spacing 0) and empty strings for path and UIDs. */
DH_API dh_status dh_volume_from_samples(dh_ctx *ctx, uint32_t rows, uint32_t columns,
                                        uint32_t slices, uint32_t bits_stored, int is_signed,
                                        const void *samples, dh_volume **out);
DH_API void dh_volume_free(dh_volume *volume);

/* A set of volumes loaded from files and directories, grouped by SeriesInstanceUID, with the
 * inputs that failed kept beside them: one bad file never stops the others. */
typedef struct dh_volume_set dh_volume_set;

/* Loads every path (a file or a directory, read recursively in byte order of names); returns
 * DH_OK even when some inputs failed (see dh_volume_set_failure_*), and an error only when
 * nothing could be tried (no paths, out of memory).
 *
 * Files are grouped by SeriesInstanceUID (a file without one, and every multi-frame file, is a
 * volume of its own); volumes come in the order of their first file. Slices are ordered by
 * ImagePositionPatient projected on the normal of ImageOrientationPatient, ascending; when a
 * slice lacks either, the whole series falls back to InstanceNumber; file name and frame break
 * ties. Slices of a series must agree on rows, columns, BitsAllocated, BitsStored, HighBit,
 * signedness, photometric, rescale and Modality LUT, else the series fails with
 * DH_ERR_MISMATCH naming two files that differ. Uneven spacing and distinct slices sharing one position are warnings on
 * the volume; the same SOPInstanceUID read twice is kept once, with a warning. A file that
 * cannot be read is a failure of its own and its series is built from the others (with a
 * warning naming it). Inside directories, hidden files, DICOMDIR and files that do not look like
 * DICOM (no "DICM" marker and no plausible first tag) are skipped and listed as skipped; a file
 * named explicitly is always read and reported. */
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
/* Files found in directories and left aside as not images (see dh_volume_set_load). */
DH_API size_t dh_volume_set_skipped_count(const dh_volume_set *set);
DH_API const char *dh_volume_set_skipped_path(const dh_volume_set *set, size_t i);

/* Geometry and pixel format. */
DH_API uint32_t dh_volume_rows(const dh_volume *v);
DH_API uint32_t dh_volume_columns(const dh_volume *v);
DH_API uint32_t dh_volume_slices(const dh_volume *v);
DH_API uint32_t dh_volume_bits_allocated(const dh_volume *v);
DH_API uint32_t dh_volume_bits_stored(const dh_volume *v);
DH_API int dh_volume_is_signed(const dh_volume *v);
DH_API dh_photometric dh_volume_photometric(const dh_volume *v);
/* Modality value = slope * stored + intercept (1 and 0 when the file has no rescale), unless
 * the file has a Modality LUT Sequence, which then replaces the rescale (see below). */
DH_API double dh_volume_rescale_slope(const dh_volume *v);
DH_API double dh_volume_rescale_intercept(const dh_volume *v);
/* The Modality LUT Sequence's table when the file has one (returns 1; 0 without one): `entries`
 * values (1..65536, from LUTDescriptor, 0 there meaning 65536), the first stored value mapped
 * (signed when the pixels are), the bits per entry; any pointer may be NULL. The modality value
 * of stored s is then data[clamp(s - first_mapped, 0, entries - 1)]: values below or above the
 * mapped range take the first or last entry. A LUTDescriptor that disagrees with its LUTData is
 * refused when the file is read (DH_ERR_MALFORMED). */
DH_API int dh_volume_modality_lut(const dh_volume *v, int32_t *first_mapped, uint32_t *entries,
                                  uint32_t *bits, const uint16_t **data);
/* The modality value of a stored value: through the Modality LUT, else the rescale. */
DH_API double dh_volume_modality_value(const dh_volume *v, int32_t stored);
/* The file's first WindowCenter/Width; returns 0 when it has none (a VOI LUT Sequence, below,
 * takes precedence for DH_WINDOW_FILE). */
DH_API int dh_volume_window(const dh_volume *v, double *center, double *width);
/* The file's VOI LUT Sequence (of the first slice): returns 1 and its first item's table, 0
 * without one. count is the number of items (alternative views; the first is used); entries
 * 1..65536 map modality values from first_mapped (signed when the descriptor is SS or the
 * modality values can be negative, PS3.3 C.11.2.1.1) to 0 .. 2^bits - 1: output of modality
 * value x = data[clamp(floor(x) - first_mapped, 0, entries - 1)]. Any pointer may be NULL. */
DH_API int dh_volume_voi_lut(const dh_volume *v, uint32_t *count, int32_t *first_mapped,
                             uint32_t *entries, uint32_t *bits, const uint16_t **data);
/* Distance between consecutive slices along the normal (mean; 0 for one slice). */
DH_API double dh_volume_spacing(const dh_volume *v);

/* Identification; strings are owned by the volume and never NULL ("" when absent). */
DH_API const char *dh_volume_path(const dh_volume *v); /* the file, or the series' folder */
DH_API const char *dh_volume_series_uid(const dh_volume *v);
DH_API const char *dh_volume_study_uid(const dh_volume *v);
DH_API const char *dh_volume_modality(const dh_volume *v);
DH_API const char *dh_volume_transfer_syntax(const dh_volume *v); /* UID of the first slice */
/* Returns 1 when some slice went through lossy compression: a lossy transfer syntax (JPEG
 * baseline/extended, JPEG-LS near-lossless, JPEG 2000 .91, HTJ2K .203, ...) or
 * LossyImageCompression "01"; *method (may be NULL) gets LossyImageCompressionMethod as written,
 * else the syntax's defined term ("ISO_10918_1", "ISO_15444_1", ...), else "". Derived files
 * keep saying so (dh_equalized_write_dicom). */
DH_API int dh_volume_lossy(const dh_volume *v, const char **method);

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
/* Smallest and largest modality value of the stored values present. */
DH_API void dh_volume_modality_range(const dh_volume *v, double *min, double *max);

/* ---------------------------------------------------------------------------------------------
 * 4. Histograms
 *
 * Bins 1..65536 over a half-open range [lo, hi): bin = floor((v - lo) * bins / (hi - lo)),
 * computed exactly; values below lo count as underflow and values at or above hi as overflow
 * (never clamped into the edge bins). Counts are 64-bit. The defaults: stored units, one bin per
 * possible stored value (2^BitsStored, at most 65536) over the full representable range:
 * [0, 2^b) unsigned, [-2^(b-1), 2^(b-1)) signed; in modality units that range mapped through
 * slope and intercept, one |slope|-wide step per stored value (reversed for a negative slope),
 * and each stored value binned by its step so no rounded edge moves it; through a Modality LUT,
 * [smallest, largest + 1) of the entries the representable stored values reach, one bin per
 * integer output (those outputs are binned exactly like a range given with slope 1). Other modality ranges:
 * v = slope * stored + intercept and the formula above are evaluated in exact rational
 * arithmetic on the double values of slope, intercept, lo and hi, once per possible stored value
 * into a table that the CPU and the GPU both use, so both give identical counts.
 * ------------------------------------------------------------------------------------------- */
typedef enum dh_units {
    DH_UNITS_STORED = 0,
    DH_UNITS_MODALITY = 1, /* slope * stored + intercept (HU for CT), or the Modality LUT's */
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
    uint64_t total;                /* every sample: in range, underflow and overflow */
    uint64_t underflow, overflow; /* below lo; at or above hi */
    uint64_t *counts;
    uint32_t slices; /* 0 without per_slice */
    uint64_t *slice_counts;
    uint64_t *slice_total, *slice_underflow, *slice_overflow;
    dh_device device_used; /* DH_DEVICE_CPU or DH_DEVICE_CUDA */
} dh_histogram;

/* Computes the histogram of a volume; *out is freed with dh_histogram_free. params NULL means
 * the defaults. Fails with DH_ERR_INVALID_ARGUMENT for parameters out of bounds (struct_size
 * other than sizeof(dh_hist_params), bins above 65536, a range that is empty or not finite,
 * modality units with slope 0), DH_ERR_NO_DEVICE for DH_DEVICE_CUDA where no GPU can run,
 * DH_ERR_CUDA when the GPU fails (never a partial result). */
DH_API dh_status dh_hist_compute(dh_ctx *ctx, const dh_volume *volume,
                                 const dh_hist_params *params, dh_histogram **out);
DH_API void dh_histogram_free(dh_histogram *hist);

/* Left edge of bin i (i = bins gives hi), in the histogram's units. */
DH_API double dh_histogram_edge(const dh_histogram *hist, uint32_t i);

/* --- Device-resident samples (registration pipelines whose data is already on the GPU) --------
 * Histograms of slices x slice_len 16-bit stored values at the device pointer d_samples
 * (uint16_t, or int16_t when is_signed; any 2-byte alignment) with bits_stored 1..16 giving the
 * defaults as above. Stored units only, with integer range ends (DH_ERR_UNSUPPORTED otherwise);
 * params->device is ignored. d_counts (device memory) receives (bins + 2) uint64 slots per
 * histogram: counts[0..bins-1], underflow, overflow; the volume's histogram first, then with
 * per_slice one per slice (all from one pass). The work is enqueued on cuda_stream (a
 * cudaStream_t; NULL for the default stream) and the call returns without waiting; a fault
 * inside the kernel surfaces at the caller's next synchronization. Returns DH_ERR_NO_DEVICE in
 * builds without CUDA, DH_ERR_CUDA with CUDA's text when a CUDA call fails. */
DH_API dh_status dh_hist_compute_device(dh_ctx *ctx, const void *d_samples, int is_signed,
                                        uint32_t bits_stored, size_t slice_len, size_t slices,
                                        const dh_hist_params *params, uint64_t *d_counts,
                                        void *cuda_stream);

/* ---------------------------------------------------------------------------------------------
 * 5. Joint histograms and mutual information
 *
 * For intensity-based registration: a fixed image is prepared once (binned, its marginal and
 * entropy cached, resident on the GPU when it runs there), then batches of moving images of the
 * same number of pixels are scored against it, from host or device memory.
 *
 * Binning, per image: an inclusive range [lo, hi] of stored values and B bins (2..256; fixed and
 * moving may differ), bin(v) = floor((v - lo) * B / (hi - lo + 1)), exact in integers. The range
 * is given, or it is that image's min..max over its valid pixels.
 * Float32 images (DH_SAMPLE_FLOAT32: DRRs as rendered) are binned over their given float range
 * [lo, hi] (finite, lo < hi, (hi - lo) * B finite in float32): v counts when lo <= v <= hi (never
 * NaN, nor an infinity) and bin(v) = min(B - 1, floor(fl(fl(fl(v - lo) * B) / fl(hi - lo))))
 * where each fl() is one float32 operation rounded to nearest, never fused: the CPU and the GPU
 * give the same bins. Integer-valued floats with the range [l, h + 1] get the integer binning of
 * [l, h] exactly (when (h + 1 - l) * B < 2^24). A pixel counts when its fixed
 * value lies in the fixed range and the fixed mask, and its moving value in the moving range and
 * the moving validity mask; N is the number of pixels that count.
 *
 * Scores, from the joint counts (0 log 0 = 0), in nats, or bits with log2:
 *   H = -sum p log p,  MI = H(F) + H(M) - H(F,M),  NMI = (H(F) + H(M)) / H(F,M)  (Studholme),
 *   ECC = 2 MI / (H(F) + H(M)).
 * MI is returned as computed, never negated or clamped. Counts are integers and sums run in one
 * fixed order, so results are the same bits run after run and on the CPU and the GPU.
 * ------------------------------------------------------------------------------------------- */
#define DH_MI_MIN_BINS 2
#define DH_MI_MAX_BINS 256
#define DH_MI_DEFAULT_BINS 64

/* Sample types of the images of this section (the `sample_type` arguments); 0 and 1 are what
 * dh_volume_is_signed returns. */
typedef enum dh_sample_type {
    DH_SAMPLE_UINT16 = 0,  /* stored values, unsigned */
    DH_SAMPLE_INT16 = 1,   /* stored values, signed */
    DH_SAMPLE_FLOAT32 = 2, /* float images, binned over the params' float range */
    DH_SAMPLE_TYPE_FORCE_INT32 = 0x7fffffff
} dh_sample_type;

/* Bits of dh_mi_scores.status; undefined values are NaN, never 0 or a made-up number. */
typedef enum dh_mi_flag {
    DH_MI_EMPTY = 1,              /* no pixel counted: every score and entropy is NaN */
    DH_MI_ZERO_JOINT_ENTROPY = 2, /* one joint bin holds every pixel: NMI and ECC are NaN */
    DH_MI_FLAG_FORCE_INT32 = 0x7fffffff
} dh_mi_flag;

/* The score record of one moving image (72 bytes, the same on host and device). */
typedef struct dh_mi_scores {
    double mi, nmi, ecc;
    double h_fixed, h_moving, h_joint;
    uint64_t n;                   /* pixels counted */
    uint32_t status;              /* 0, or dh_mi_flag bits */
    int32_t moving_lo, moving_hi; /* the moving range used (given or found); 0 for float32 */
    uint32_t reserved;
} dh_mi_scores;

typedef struct dh_mi_params {
    uint32_t struct_size;               /* sizeof(dh_mi_params), set by dh_mi_params_init */
    uint32_t bins_fixed, bins_moving;   /* 2..256 each; default 64 */
    int32_t has_range_fixed;            /* 0: the fixed image's min..max over its mask */
    int32_t fixed_lo, fixed_hi;         /* inclusive stored values */
    int32_t has_range_moving;           /* 0: each moving image's min..max over its valid pixels */
    int32_t moving_lo, moving_hi;
    int32_t log2;                       /* entropies and MI in bits instead of nats */
    dh_device device;                   /* where the fixed image lives and evaluations run */
    uint32_t max_batch;                 /* moving images per evaluation call, 1..65536; default 1 */
    /* The ranges of float32 images, [lo, hi] (always given; has_range_* are for stored values).
     * The fixed one is checked when a float32 fixed image is prepared, the moving one when float32
     * moving images are evaluated. */
    float fixed_lo_f32, fixed_hi_f32;
    float moving_lo_f32, moving_hi_f32;
} dh_mi_params;

DH_API void dh_mi_params_init(dh_mi_params *params);

/* A prepared fixed image with the buffers its evaluations need (on the GPU when it runs there).
 * Used by one thread at a time; several may share one dh_ctx only from one thread. */
typedef struct dh_mi_fixed dh_mi_fixed;

/* What a prepared fixed image holds. */
typedef struct dh_mi_fixed_info {
    dh_device device;         /* DH_DEVICE_CPU or DH_DEVICE_CUDA */
    size_t pixels;            /* n, the size of every moving image */
    uint32_t bins_fixed, bins_moving;
    int32_t fixed_lo, fixed_hi; /* 0 for a float32 fixed image (its range is in the params) */
    uint64_t fixed_valid;     /* fixed pixels in the mask and the range */
    double h_fixed;           /* the fixed image's entropy over them, in the params' unit */
    uint32_t max_batch;
} dh_mi_fixed_info;

/* Prepares the fixed image: n samples of sample_type (a dh_sample_type), an optional mask of n
 * bytes (non-zero = use; NULL = every pixel). The data is not kept. Fails with
 * DH_ERR_INVALID_ARGUMENT on bins or ranges out of bounds, an unknown sample type, a float32 image
 * without a valid float range or more than 2^32 - 1 pixels, and with DH_ERR_NO_DEVICE when the
 * GPU is asked for but absent. *out is freed with dh_mi_fixed_free. */
DH_API dh_status dh_mi_fixed_create(dh_ctx *ctx, const void *fixed, int sample_type, size_t n,
                                    const uint8_t *mask, const dh_mi_params *params,
                                    dh_mi_fixed **out);
DH_API void dh_mi_fixed_free(dh_mi_fixed *fixed);
DH_API void dh_mi_fixed_get_info(const dh_mi_fixed *fixed, dh_mi_fixed_info *info);

/* Scores `count` (1..max_batch) moving images in host memory: image k is the n samples at
 * moving + k * stride (stride in samples, >= n; of sample_type, a dh_sample_type), with an
 * optional validity mask of n bytes at valid + k * valid_stride (NULL: every pixel valid).
 * Writes out[count]. Runs where the fixed image lives (copying through the GPU when it is there).
 * Returns DH_OK even when records carry DH_MI_* flags. */
DH_API dh_status dh_mi_evaluate(dh_ctx *ctx, dh_mi_fixed *fixed, const void *moving,
                                int sample_type, size_t stride, uint32_t count,
                                const uint8_t *valid, size_t valid_stride, dh_mi_scores *out);

/* The same for images already in GPU memory: device pointers, out a device array of count
 * records, everything enqueued on `stream` (a cudaStream_t; NULL = the default stream). Neither
 * allocates nor synchronizes, so it can be captured in a CUDA graph; records are ready when the
 * stream reaches them. Needs a fixed image prepared on the GPU (DH_ERR_NO_DEVICE otherwise).
 * Float32 images may sit at any 4-byte alignment (16 bytes with a stride that is a multiple of
 * 4 samples reads fastest). */
DH_API dh_status dh_mi_evaluate_device(dh_ctx *ctx, dh_mi_fixed *fixed, const void *d_moving,
                                       int sample_type, size_t stride, uint32_t count,
                                       const uint8_t *d_valid, size_t valid_stride, void *stream,
                                       dh_mi_scores *d_out);

/* Copies the joint histogram of image `item` of the last evaluation into
 * counts[bins_fixed * bins_moving] (host memory; row = fixed bin, column = moving bin), waiting
 * for the GPU when it is there. */
DH_API dh_status dh_mi_joint_histogram(dh_ctx *ctx, const dh_mi_fixed *fixed, uint32_t item,
                                       uint32_t *counts);

/* ---------------------------------------------------------------------------------------------
 * 5b. Parzen-window (Mattes) mutual information and its gradient
 *
 * For gradient-based registration (differentiable DRRs): a smooth MI whose derivative with
 * respect to every moving pixel is defined, one fixed image against a batch of moving images,
 * from host memory (the CPU twin) or device memory (CUDA, on a caller's stream), with the same
 * bits on both. The definition is ITK's MattesMutualInformationImageToImageMetricv4 (docs/
 * registration.md, "Parzen-window MI", has the formulas): B bins on both axes with two padding
 * bins at each end, each image's range [lo, hi] (given, or its min..max over its valid pixels)
 * over the B - 4 middle bins, a cubic B-spline window on the moving image and a zero-order (or
 * cubic) window on the fixed one, the joint histogram as integer sums of quantized weights.
 * Scores come in dh_mi_scores records (MI, NMI, ECC, the entropies, n; moving_lo/hi are 0; no
 * valid pixel gives NaN scores with DH_MI_EMPTY); the gradient is d(MI or NMI)/d(moving pixel)
 * as float32, 0 for pixels that do not count, outside a given moving range, or of a constant
 * moving image. MI is returned as computed: a loss to minimize is its negative, the caller's.
 * ------------------------------------------------------------------------------------------- */
#define DH_PARZEN_MI_MIN_BINS 5
#define DH_PARZEN_MI_MAX_BINS 256
#define DH_PARZEN_MI_DEFAULT_BINS 64

/* The fixed image's window. */
typedef enum dh_parzen_window {
    DH_PARZEN_WINDOW_BOX = 0,   /* zero order, ITK's: each pixel in its own bin (the default) */
    DH_PARZEN_WINDOW_CUBIC = 1, /* the cubic B-spline, as on the moving image */
    DH_PARZEN_WINDOW_FORCE_INT32 = 0x7fffffff
} dh_parzen_window;

/* The score the gradient is of. */
typedef enum dh_parzen_score {
    DH_PARZEN_SCORE_MI = 0,
    DH_PARZEN_SCORE_NMI = 1, /* (H(f) + H(m)) / H(f, m) */
    DH_PARZEN_SCORE_FORCE_INT32 = 0x7fffffff
} dh_parzen_score;

typedef struct dh_parzen_mi_params {
    uint32_t struct_size;          /* sizeof(dh_parzen_mi_params), set by the _init function */
    uint32_t bins;                 /* 5..256, both axes; default 64 */
    dh_parzen_window fixed_window; /* default DH_PARZEN_WINDOW_BOX */
    dh_parzen_score gradient_of;   /* default DH_PARZEN_SCORE_MI */
    int32_t log2;                  /* scores and gradient in bits instead of nats */
    int32_t has_range_fixed;       /* 0: the fixed image's min..max over its valid pixels */
    int32_t has_range_moving;      /* 0: each moving image's own min..max (ITK's choice) */
    double fixed_lo, fixed_hi;     /* finite, lo <= hi, in the images' values */
    double moving_lo, moving_hi;
} dh_parzen_mi_params;

DH_API void dh_parzen_mi_params_init(dh_parzen_mi_params *params);

/* The parameters checked once, with the device scratch that evaluations reuse (an optimizer
 * loop creates one and calls it every step). Used by one thread at a time. */
typedef struct dh_parzen_mi dh_parzen_mi;

/* Checks params (NULL: the defaults) and makes *out, freed with dh_parzen_mi_free. Fails with
 * DH_ERR_INVALID_ARGUMENT on bins, window, gradient kind or a given range out of bounds. */
DH_API dh_status dh_parzen_mi_create(dh_ctx *ctx, const dh_parzen_mi_params *params,
                                     dh_parzen_mi **out);
DH_API void dh_parzen_mi_free(dh_parzen_mi *parzen);

/* Scores `count` (>= 1) moving images against one fixed image, all of `pixels` pixels (1 ..
 * 2^32 - 1), in host memory, on the CPU: the fixed image of fixed_type (a dh_sample_type) with
 * an optional mask of `pixels` bytes (non-zero: valid; NULL: all), the moving images compact one
 * after the other (image b at moving + b * pixels samples) of moving_type, with optional masks
 * likewise (count * pixels bytes). A float32 value that is NaN or infinite is not valid. A pixel
 * counts when it is valid in both. Writes out[count] and, when gradient is not NULL,
 * gradient[b * pixels + k] = d score_b / d moving pixel k (count * pixels floats). */
DH_API dh_status dh_parzen_mi_evaluate(dh_ctx *ctx, dh_parzen_mi *parzen, size_t pixels,
                                       const void *fixed, int fixed_type,
                                       const uint8_t *fixed_mask, const void *moving,
                                       int moving_type, const uint8_t *moving_masks,
                                       uint32_t count, dh_mi_scores *out, float *gradient);

/* The same with every pointer in GPU memory (out: count records, gradient: count * pixels
 * floats or NULL), enqueued on `stream` (a cudaStream_t; NULL = the default stream); results
 * are ready when the stream reaches them, with the bits of dh_parzen_mi_evaluate. The device
 * scratch grows on the first call of a larger size (which allocates); calls that need no more
 * neither allocate nor synchronize, so they can be captured in a CUDA graph after one warm-up
 * call. DH_ERR_NO_DEVICE in builds without CUDA or without a usable GPU, DH_ERR_CUDA with CUDA's
 * text when a CUDA call fails. */
DH_API dh_status dh_parzen_mi_evaluate_device(dh_ctx *ctx, dh_parzen_mi *parzen, size_t pixels,
                                              const void *d_fixed, int fixed_type,
                                              const uint8_t *d_fixed_mask, const void *d_moving,
                                              int moving_type, const uint8_t *d_moving_masks,
                                              uint32_t count, void *stream, dh_mi_scores *d_out,
                                              float *d_gradient);

/* For autograd hosts (dicomhist.torch.MattesMI; issue 22, session 16): the call above writing one
 * signed float64 per image instead of records, so that the host adds no operation of its own:
 * d_values[i] = sign * the score the gradient is of (params.gradient_of: MI or NMI), sign any
 * finite number (-1 for a loss). The records go to scratch the dh_parzen_mi keeps on the device
 * (grown on a larger count, which allocates). d_gradient (or NULL) gets d score / d moving as
 * above, unsigned: the sign belongs with the incoming gradient, see the next function. The same
 * bits as the records' field times sign; enqueued on `stream` like the call above. */
DH_API dh_status dh_parzen_mi_evaluate_device_signed(dh_ctx *ctx, dh_parzen_mi *parzen,
                                                     size_t pixels, const void *d_fixed,
                                                     int fixed_type, const uint8_t *d_fixed_mask,
                                                     const void *d_moving, int moving_type,
                                                     const uint8_t *d_moving_masks,
                                                     uint32_t count, void *stream, double sign,
                                                     double *d_values, float *d_gradient);

/* An autograd backward in one launch on `stream`: d_out[b * pixels + k] = d_gradient[b * pixels
 * + k] * (float)(sign * d_factors[b * factor_stride]) for count images of `pixels` floats (device
 * memory; d_out may be d_gradient), factor_stride 0 for one factor shared by all (an expanded or
 * 0-d incoming gradient). Rounds as PyTorch's (grad_output * sign).float() * gradient does. */
DH_API dh_status dh_parzen_mi_scale_gradient_device(dh_ctx *ctx, const float *d_gradient,
                                                    size_t pixels, uint32_t count,
                                                    const double *d_factors, size_t factor_stride,
                                                    double sign, float *d_out, void *stream);

/* ---------------------------------------------------------------------------------------------
 * 6. Equalization and windowing
 *
 * Contrast enhancement into new stored values 0 .. 2^output_bits - 1 (L levels), per volume (one
 * histogram and table for all slices) or per slice, then written back as derived DICOM.
 * docs/equalization.md has the formulas; in short, over one bin per stored value:
 *   equalize:  out(v) = floor((cdf(v) - cdf_min) * (L - 1) / (N - cdf_min)) inside the window,
 *              0 below it, L - 1 above it; cdf, cdf_min and N count only pixels inside the
 *              window; a window with fewer than two distinct values present maps to 0.
 *   clip:      clip_limit x > 0 caps every bin at max(1, floor(x * N / span)), span the bins
 *              from the lowest to the highest value present, and spreads the excess evenly
 *              over that span before the cdf is taken.
 *   window/level: DICOM's LINEAR, LINEAR_EXACT or SIGMOID VOI function on modality values,
 *              ymin 0, ymax L - 1, truncated.
 * Windows are in modality units (through the Modality LUT when the volume has one). A
 * center/width window covers [c - 0.5 - (w-1)/2, c - 0.5 + (w-1)/2] (LINEAR's edges); a range LO:HI is that interval itself, and for
 * window/level becomes c = (LO + HI + 1) / 2, w = HI - LO + 1 under LINEAR, c = (LO + HI) / 2,
 * w = max(HI - LO, 1) otherwise. Min-max and percentile windows are rank statistics of the
 * pixels (per slice in slice mode): percentile p cuts k = floor(N * p / 100) pixels at each end.
 * DH_WINDOW_FILE with a VOI LUT Sequence (dh_volume_voi_lut) uses its first table: window/level
 * gives each pixel its entry scaled to the output, floor(entry * (L - 1) / (2^bits - 1)), with
 * center and width NaN; equalization's window is the table's input range.
 * The photometric interpretation is kept, so MONOCHROME1 stays MONOCHROME1 with its meaning.
 * ------------------------------------------------------------------------------------------- */
typedef enum dh_eq_operation {
    DH_EQ_EQUALIZE = 0,     /* histogram equalization (windowed, contrast-limited) */
    DH_EQ_WINDOW_LEVEL = 1, /* a VOI function alone */
    DH_EQ_OPERATION_FORCE_INT32 = 0x7fffffff
} dh_eq_operation;

/* How equalization tables are made: one per volume or slice, or one per tile (CLAHE). */
typedef enum dh_eq_method {
    DH_EQ_METHOD_GLOBAL = 0, /* one histogram and table per volume (or slice) */
    DH_EQ_METHOD_CLAHE = 1,  /* contrast-limited adaptive: one per tile, blended */
    DH_EQ_METHOD_CLAHE_SKIMAGE = 2, /* scikit-image's equalize_adapthist, its numbers (below) */
    DH_EQ_METHOD_FORCE_INT32 = 0x7fffffff
} dh_eq_method;

typedef enum dh_window_source {
    DH_WINDOW_NONE = 0,         /* equalize over every representable value (not for window/level) */
    DH_WINDOW_CENTER_WIDTH = 1, /* center and width given */
    DH_WINDOW_RANGE = 2,        /* lo and hi given */
    DH_WINDOW_FILE = 3,         /* the file's first VOI LUT, else first WindowCenter/Width */
    DH_WINDOW_MINMAX = 4,       /* lowest to highest value present */
    DH_WINDOW_PERCENTILE = 5,   /* percentile p cut at each end, 0 <= p < 50 */
    DH_WINDOW_SOURCE_FORCE_INT32 = 0x7fffffff
} dh_window_source;

typedef enum dh_voi_function {
    DH_VOI_LINEAR = 0,
    DH_VOI_LINEAR_EXACT = 1,
    DH_VOI_SIGMOID = 2,
    DH_VOI_FUNCTION_FORCE_INT32 = 0x7fffffff
} dh_voi_function;

typedef struct dh_equalize_params {
    uint32_t struct_size; /* sizeof(dh_equalize_params), set by dh_equalize_params_init */
    dh_eq_operation operation;
    int32_t per_slice;       /* one table per slice (or frame) instead of one per volume */
    dh_window_source window;
    double center, width;    /* DH_WINDOW_CENTER_WIDTH; width >= 1 */
    double lo, hi;           /* DH_WINDOW_RANGE; lo <= hi */
    double percentile;       /* DH_WINDOW_PERCENTILE */
    dh_voi_function voi;     /* DH_EQ_WINDOW_LEVEL */
    double clip_limit;       /* DH_EQ_EQUALIZE; 0 = no clipping */
    uint32_t output_bits;    /* 0 = the input's BitsStored; else 8, 12 or 16 */
    dh_device device;
    /* Adaptive equalization (CLAHE, issue 21; docs/equalization.md "Adaptive equalization"):
     * method DH_EQ_METHOD_CLAHE with DH_EQ_EQUALIZE gives every tile its own table (the window
     * and clip_limit as above, per tile), each pixel blended between the tables of the nearest
     * tile centres: 2D tiles per slice with per_slice, 3D tiles across the slices without. */
    dh_eq_method method;     /* DH_EQ_METHOD_GLOBAL (default) or DH_EQ_METHOD_CLAHE */
    uint32_t tiles[3];       /* CLAHE: tiles along columns, rows, slices (slices: per volume
                              * only); 0 = from tile_size, else 8 (at most the pixels there) */
    uint32_t tile_size[3];   /* CLAHE: where tiles[i] is 0, tiles of at most this many pixels */
    uint32_t bins;           /* CLAHE: bins per tile over the window, 1..65536; 0 = one per
                              * stored value (full resolution) */
} dh_equalize_params;

/* Defaults: equalize per volume over the whole range, no clip, input bits, device auto. */
DH_API void dh_equalize_params_init(dh_equalize_params *params);

/* CLAHE as scikit-image's exposure.equalize_adapthist(image, kernel_size, clip_limit, nbins)
 * computes it, for users migrating from it (docs/equalization.md, "scikit-image-compatible
 * mode"): method DH_EQ_METHOD_CLAHE_SKIMAGE, which reproduces its algorithm step by step on the
 * stored values as the array pydicom's pixel_array gives (uint8, int8, uint16 or int16 by
 * BitsAllocated and PixelRepresentation: its img_as_uint clips negative values to 0), and writes
 * round-half-even(f * (L - 1)), f its float64 result. In that method tile_size[] holds its
 * kernel_size along columns, rows, slices (0: its default, max(n // 8, 1)), clip_limit its
 * fraction (0: none), bins its nbins (1..65536; 0: 256), window DH_WINDOW_MINMAX or NONE (it
 * always rescales the image's min..max), tiles all 0; per_slice is one call per slice (2D), else
 * one 3D call for the volume. It runs on the CPU on every device setting (device_used says so);
 * DH_ERR_UNSUPPORTED where one image's tables (one per kernel, nbins each) would pass 4 GiB.
 * This sets method, window (min-max), bins (nbins, 0: 256), tiles (0), tile_size (kernel_size
 * along rows and columns, and along the slices unless per_slice is already set), clip_limit and
 * output_bits (16); the other fields are left as they are. It used to map these parameters
 * onto DH_EQ_METHOD_CLAHE (a picture of the same kind, not its numbers). */
DH_API void dh_equalize_params_skimage(dh_equalize_params *params, uint32_t kernel_size,
                                       double clip_limit, uint32_t nbins);

/* The result: new stored values (unsigned) and the tables that made them (CLAHE: no table,
 * tables NULL and table_len 0; table_count and the windows are one per slice or one). */
typedef struct dh_equalized {
    uint32_t rows, columns, slices;
    uint32_t output_bits;  /* the values are 0 .. 2^output_bits - 1 */
    uint16_t *data;        /* rows * columns * slices, in the volume's slice order */
    uint32_t table_count;  /* 1, or slices in slice mode */
    int32_t table_base;    /* entry i of a table maps stored value table_base + i */
    uint32_t table_len;    /* 2^BitsStored of the input */
    uint16_t *tables;      /* table_count * table_len */
    double *window_lo, *window_hi; /* per table, modality units; NaN when no window was used */
    double *center, *width;        /* per table, the VOI window (window/level; else NaN) */
    char description[512];         /* DerivationDescription: the operation and its parameters */
    dh_device device_used;
} dh_equalized;

/* Equalizes or windows a volume. Fails with DH_ERR_INVALID_ARGUMENT for parameters out of
 * bounds (naming the field), DH_ERR_UNSUPPORTED for DH_WINDOW_FILE on a volume with neither a
 * VOI LUT nor a window,
 * for equalization inside a modality window with a non-positive RescaleSlope or a Modality LUT
 * that decreases somewhere, and for an equalization rank window with a LUT that folds back, DH_ERR_NO_DEVICE for DH_DEVICE_CUDA without a GPU, DH_ERR_CUDA
 * when the GPU fails. *out is freed with dh_equalized_free.
 * CLAHE (method DH_EQ_METHOD_CLAHE) takes every window source; a window is one per slice with
 * per_slice (2D tiles) or one for the volume (3D tiles); more tiles than pixels along an axis,
 * slice tiles with per_slice, bins above 65536 and CLAHE for window/level are
 * DH_ERR_INVALID_ARGUMENT. A dh_device_volume's volume (samples on the GPU, none on the host)
 * is computed where its samples are, with no copy up, for params->device DH_DEVICE_CUDA and
 * method DH_EQ_METHOD_GLOBAL (the result is the one its downloaded volume gives): the call waits
 * on the stream the load was given, which must still exist, and reads the device buffer, which
 * must hold what the load left until dh_device_volume_release. For anything else it is
 * DH_ERR_INVALID_ARGUMENT (dh_device_volume_download first). */
DH_API dh_status dh_equalize(dh_ctx *ctx, const dh_volume *volume,
                             const dh_equalize_params *params, dh_equalized **out);

/* scikit-image's float64 result itself for method DH_EQ_METHOD_CLAHE_SKIMAGE (what
 * equalize_adapthist returns, bit for bit): out gets rows * columns * slices doubles, in the
 * volume's order. Costs what dh_equalize does; fails as it does, and with
 * DH_ERR_INVALID_ARGUMENT for another method or a NULL out. */
DH_API dh_status dh_equalize_skimage_float(dh_ctx *ctx, const dh_volume *volume,
                                           const dh_equalize_params *params, double *out);
DH_API void dh_equalized_free(dh_equalized *result);

/* The files of one derived series as written. */
typedef struct dh_derived_series {
    char series_uid[65];
    size_t file_count;
    char **files;    /* written DICOM files, in the order of the volume's first slice in each */
    char **sop_uids; /* their SOPInstanceUIDs */
    char **sources;  /* the file each was derived from */
    /* Written to memory (dh_equalized_encode_*): files[i] is the name the file would have below
     * the output folder, data[i] its sizes[i] bytes; NULL for files written to disk. */
    unsigned char **data;
    size_t *sizes;
} dh_derived_series;

/* Writes the result as one derived series beside nothing else: for every source file of the
 * volume, a file of the same name in output_dir (in output_dir/<series folder name>/ when the
 * volume is a series of several files) with all the source's tags except: new SeriesInstanceUID
 * (one for the series) and SOPInstanceUIDs under dicomhist's UID root, ImageType
 * DERIVED\SECONDARY followed by the source's values from the third on, DerivationDescription,
 * SourceImageSequence naming the source, SeriesDescription suffixed, a pixel module for the new
 * data (unsigned, BitsStored = output_bits, BitsAllocated 16), no window, VOI LUT or modality
 * LUT, and a rescale of slope 1, intercept 0, type US where the source had a rescale or the
 * modality needs one (CT, DX); a lossy source (dh_volume_lossy) keeps LossyImageCompression "01"
 * with its ratio and method, the method of its lossy syntax where it names none. Multi-frame sources give multi-frame files. Files are written
 * atomically; an existing file is never replaced and a path that is one of the volume's inputs
 * is refused (DH_ERR_IO); a CT result of fewer than 12 bits is refused (DH_ERR_UNSUPPORTED: the
 * CT Image module allows 12 to 16); on failure, files already written by this call are removed. */
DH_API dh_status dh_equalized_write_dicom(dh_ctx *ctx, const dh_volume *volume,
                                          const dh_equalized *result, const char *output_dir,
                                          dh_derived_series **out);
DH_API void dh_derived_series_free(dh_derived_series *series);

/* Writes one 8-bit grayscale PNG per slice into dir (same naming as the DICOM files, ".png",
 * "_fNNNN" before it for frames of multi-frame files): round(v * 255 / (2^output_bits - 1)),
 * inverted for MONOCHROME1 so the picture looks as a viewer shows it. Never replaces a file. */
DH_API dh_status dh_equalized_write_png(dh_ctx *ctx, const dh_volume *volume,
                                        const dh_equalized *result, const char *dir);

/* What the writers do with an output that exists already. */
typedef enum dh_existing {
    DH_EXISTING_FAIL = 0,    /* the call fails (DH_ERR_IO, "already exists (not replaced)") */
    DH_EXISTING_REPLACE = 1, /* replaced atomically */
    DH_EXISTING_KEEP = 2,    /* kept untouched when it is this very output already (a DICOM file
                              * with the SOPInstanceUID this call would give it, a PNG with the
                              * same bytes), else a failure as with DH_EXISTING_FAIL: for
                              * resuming a run that was interrupted */
    DH_EXISTING_FORCE_INT32 = 0x7fffffff
} dh_existing;

/* Where derived UIDs come from when the caller gives none. */
typedef enum dh_uids {
    DH_UIDS_RANDOM = 0,  /* new random UIDs on every call */
    DH_UIDS_DERIVED = 1, /* name-based (UUID version 5 under 2.25, in dicomhist's namespace): the
                          * SeriesInstanceUID from the source series' UID and the derivation
                          * description, each SOPInstanceUID from the source's SOPInstanceUID and
                          * the description, so the same work on the same source gives the same
                          * UIDs */
    DH_UIDS_FORCE_INT32 = 0x7fffffff
} dh_uids;

/* How a derived series is named, identified and placed, for hosts that must be able to write
 * the same derived series again without duplicating it (a PACS plugin that re-runs after a
 * restart, a batch resumed after a kill) or that place outputs themselves. */
typedef struct dh_derive_params {
    uint32_t struct_size;   /* sizeof(dh_derive_params), set by dh_derive_params_init */
    const char *series_uid; /* the derived SeriesInstanceUID; NULL = as `uids` says */
    /* Writes into uid (at most 64 characters and the NUL) the SOPInstanceUID of the file derived
     * from `source`, one of the volume's slice sources (dh_volume_slice_source); returns 0, or
     * non-zero to fail the call (DH_ERR_INVALID_ARGUMENT). NULL = as `uids` says. */
    int (*instance_uid)(void *user, const char *source, char uid[65]);
    void *user; /* passed to every callback */
    dh_uids uids;         /* default DH_UIDS_RANDOM */
    dh_existing existing; /* default DH_EXISTING_FAIL */
    /* Content and instance creation date and time in seconds since 1970, written as UTC (for
     * runs that repeat byte for byte); -1, the default, means now in local time. */
    int64_t created;
    /* Where the output of a source file goes, relative to the output folder ("a/b/IM1"; missing
     * folders are created; absolute names and ".." are refused): writes it into name[size] and
     * returns 0, or non-zero to fail the call. NULL: one file per source in the output folder,
     * or in <output folder>/<series folder name> for a series of several files. PNG names add
     * ".png" (after removing ".dcm"), or "_fNNNN.png" per frame. */
    int (*output_name)(void *user, const char *source, char *name, size_t size);
    /* Called once per file written or kept (DICOM and PNG), with its source; may be NULL. */
    void (*written)(void *user, const char *source, const char *output);
} dh_derive_params;

/* Defaults: those of dh_equalized_write_dicom and dh_equalized_write_png. */
DH_API void dh_derive_params_init(dh_derive_params *params);
/* dh_equalized_write_dicom and dh_equalized_write_png as params say (NULL = the defaults). A
 * UID that is not 1..64 digits and dots is refused (DH_ERR_INVALID_ARGUMENT naming it) before
 * anything is written. */
DH_API dh_status dh_equalized_write_dicom_with(dh_ctx *ctx, const dh_volume *volume,
                                               const dh_equalized *result,
                                               const char *output_dir,
                                               const dh_derive_params *params,
                                               dh_derived_series **out);
DH_API dh_status dh_equalized_write_png_with(dh_ctx *ctx, const dh_volume *volume,
                                             const dh_equalized *result, const char *dir,
                                             const dh_derive_params *params);

/* Creates the folder path with its missing parents (mode 0755), as the writers create their
 * output folders, for hosts that write files of their own beside them (a batch's manifest).
 * Returns 0 when it was created or exists already, or -1 with errno set. */
DH_API int dh_folder_create(const char *path);

/* Writes the result as a Grayscale Softcopy Presentation State (PS3.3 A.33.1) instead of new
 * pixels: the sources stay as they are and a viewer applies the result's tables to them. One
 * file per call, placed where dh_equalized_write_dicom_with would put the derived file of the
 * volume's first source, named after it with ".gsps.dcm" in place of ".dcm" (or added): the
 * Softcopy VOI LUT Module holds one item for every image when the result has one table, else
 * one per slice referencing its file (and frame of a multi-frame file). Each table is written
 * with 16-bit entries, v << (16 - output_bits), its runs of equal entries at both ends written
 * once (a VOI LUT maps inputs outside its range to its end entries): LUT Descriptor (entries,
 * first stored value mapped, SS when negative; 16); a table of zeros alone (one distinct value)
 * becomes a LINEAR window of width 1 above every stored value. An identity rescale (slope 1,
 * intercept 0, US) replaces the sources' Modality LUT or rescale where they have one, so the
 * tables read stored values; the Presentation LUT Shape is IDENTITY, INVERSE for MONOCHROME1,
 * so the state shows what the derived series of the same result shows. Referenced Series Sequence with every
 * source instance; patient and study of the first source; ContentLabel EQUALIZED or WINDOWED;
 * ContentDescription and LUT Explanation the derivation description without the program's name
 * and version (Manufacturer "dicomhist"), cut to 64 characters; Displayed Area the whole image
 * scaled to fit. UIDs as params say (series_uid, instance_uid asked for the first source, or
 * `uids`: DH_UIDS_DERIVED names them after the source series and the description, never equal
 * to the derived series' UIDs); `existing`, `created`, `output_name` and `written` (called for
 * every source with the one file) as for the DICOM writer. The file is written atomically.
 * *out lists that one file (file_count 1, sources[0] the first source) and the state's
 * SeriesInstanceUID; free it with dh_derived_series_free. A CLAHE result (no tables) is refused
 * with DH_ERR_UNSUPPORTED. */
DH_API dh_status dh_equalized_write_gsps(dh_ctx *ctx, const dh_volume *volume,
                                         const dh_equalized *result, const char *output_dir,
                                         const dh_derive_params *params,
                                         dh_derived_series **out);

/* Equalization and CLAHE of samples already in GPU memory (issue 21; the Python package's CuPy
 * and PyTorch inputs): columns * rows * slices 16-bit stored values at the device pointer
 * d_samples (uint16, int16 when is_signed; BitsStored bits_stored), compact, slice after slice,
 * with no rescale (a modality value is the stored value), into d_out (device memory, the same
 * count of uint16), exactly the values dh_equalize gives the volume dh_volume_from_samples makes
 * of the same samples. params as dh_equalize's, operation DH_EQ_EQUALIZE, method global or
 * CLAHE, window none, center/width, range, min-max or percentile; params->device is ignored.
 * The work is enqueued on cuda_stream (a cudaStream_t; NULL for the default stream) and d_out is
 * ready when the stream is; the call may wait for the stream (to read the histograms of a
 * min-max or percentile window, to upload the windows, to free CLAHE's scratch). Returns DH_ERR_UNSUPPORTED for window/level and for DH_WINDOW_FILE (no file),
 * DH_ERR_INVALID_ARGUMENT as dh_equalize, DH_ERR_NO_DEVICE without a usable GPU or CUDA build,
 * DH_ERR_CUDA when the GPU fails, DH_ERR_UNSUPPORTED for DH_EQ_METHOD_CLAHE_SKIMAGE (CPU only). */
DH_API dh_status dh_equalize_device(dh_ctx *ctx, const void *d_samples, int is_signed,
                                    uint32_t bits_stored, uint32_t columns, uint32_t rows,
                                    uint32_t slices, const dh_equalize_params *params,
                                    uint16_t *d_out, void *cuda_stream);

/* ---------------------------------------------------------------------------------------------
 * 7. Batches
 *
 * An archive is too large to hold at once: dh_plan_scan reads the headers of every file under
 * the inputs (never the pixels) and groups them into series exactly as dh_volume_set_load does;
 * then each series is read on its own with dh_plan_load_series, used and freed before the next,
 * so memory follows the series in hand, not the archive. A plan is read only after the scan:
 * several threads may load different series from one plan at once, each with its own context.
 * dh_volume_set_load is a scan followed by every series loaded in order.
 * ------------------------------------------------------------------------------------------- */
typedef struct dh_plan dh_plan;

typedef enum dh_plan_file_state {
    DH_PLAN_FILE_SERIES = 0,   /* part of a series (dh_plan_file_series) */
    DH_PLAN_FILE_FAILED = 1,   /* could not be read (dh_plan_file_status, dh_plan_file_message) */
    DH_PLAN_FILE_SKIPPED = 2,  /* found in a folder and not an image: DICOMDIR, not DICOM, not a
                                * regular file (the reason in dh_plan_file_message) */
    DH_PLAN_FILE_REPEATED = 3, /* repeats an instance of an earlier file of its series, which is
                                * read once (the message names that file) */
    DH_PLAN_FILE_STATE_FORCE_INT32 = 0x7fffffff
} dh_plan_file_state;

/* Scans every path (a file, or a folder walked recursively in byte order of names, hidden files
 * left out) with up to dh_ctx_set_threads threads. Returns DH_OK even when files failed (they
 * are in the plan), an error only when nothing could be tried (no paths, out of memory). */
DH_API dh_status dh_plan_scan(dh_ctx *ctx, const char *const *paths, size_t count,
                              dh_plan **out);
DH_API void dh_plan_free(dh_plan *plan);

/* Every file found, in scan order (inputs in the order given, folders in byte order). */
DH_API size_t dh_plan_file_count(const dh_plan *plan);
DH_API const char *dh_plan_file_path(const dh_plan *plan, size_t file);
/* Where `cp -r PATH... DIR` would put the file, relative to DIR: "<name of PATH>/<path below
 * PATH>" for a file found in the folder PATH, "<name of PATH>" for a file given directly. */
DH_API const char *dh_plan_file_output_name(const dh_plan *plan, size_t file);
DH_API dh_plan_file_state dh_plan_file_state_of(const dh_plan *plan, size_t file);
DH_API dh_status dh_plan_file_status(const dh_plan *plan, size_t file); /* DH_OK unless failed */
/* The failure, skip or repeat reason ("" for files of a series). */
DH_API const char *dh_plan_file_message(const dh_plan *plan, size_t file);
/* The series the file belongs to (repeats included), or SIZE_MAX. */
DH_API size_t dh_plan_file_series(const dh_plan *plan, size_t file);
/* Size in bytes and modification time (nanoseconds since 1970) when scanned. */
DH_API uint64_t dh_plan_file_size(const dh_plan *plan, size_t file);
DH_API int64_t dh_plan_file_mtime_ns(const dh_plan *plan, size_t file);

/* The series, in the order of their first file; each becomes one volume. */
DH_API size_t dh_plan_series_count(const dh_plan *plan);
/* Its files in volume order (repeats left out): file indices of the plan. */
DH_API size_t dh_plan_series_file_count(const dh_plan *plan, size_t series);
DH_API size_t dh_plan_series_file(const dh_plan *plan, size_t series, size_t k);
/* What dh_volume_path, dh_volume_series_uid and dh_volume_modality will say. */
DH_API const char *dh_plan_series_path(const dh_plan *plan, size_t series);
DH_API const char *dh_plan_series_uid(const dh_plan *plan, size_t series);
DH_API const char *dh_plan_series_modality(const dh_plan *plan, size_t series);
/* Bytes of its files on disk, and of its decoded samples. */
DH_API uint64_t dh_plan_series_file_bytes(const dh_plan *plan, size_t series);
DH_API uint64_t dh_plan_series_sample_bytes(const dh_plan *plan, size_t series);

/* Reads one series into a set of at most one volume, with the failures of its files (a file
 * that cannot be decoded, slices that do not fit together) kept as in dh_volume_set_load.
 * Slices are decoded by up to dh_ctx_set_threads threads at once, each straight into its place;
 * the result does not depend on the number of threads. */
DH_API dh_status dh_plan_load_series(dh_ctx *ctx, const dh_plan *plan, size_t series,
                                     dh_volume_set **out);

/* ---- GPU decoding of compressed pixel data (issue 24) -------------------------------------
 * JPEG 2000 (.90, .91) and HTJ2K (.201-.203) through NVIDIA's nvJPEG2000, JPEG lossless SV1 (.70)
 * through nvJPEG's lossless backend, where the build found their headers (DH_GPU_CODECS) and the
 * process can load them (docs/batch.md): each image's frames are decoded together on the GPU,
 * each stream checked on the CPU first, and anything the GPU refuses or fails on is decoded by
 * the CPU decoders, so the values never depend on where they were decoded. */

/* Whether reads on this context may use the GPU decoders: 1 (the default) or 0 (CPU only). */
DH_API dh_status dh_ctx_set_gpu_decode(dh_ctx *ctx, int enabled);
/* Whether this process can decode on the GPU: 1, or 0 with the reason (libraries absent or too
 * old, no GPU, a build without them) written into reason. */
DH_API int dh_gpu_decoders_available(char *reason, size_t reason_len);
/* The decoders that read the volume's slices ("native", "dcmtk", "charls", "openjpeg",
 * "nvjpeg2k", "nvjpeg"; several joined by '+'), and in *note (when not NULL) why a slice the GPU
 * could have decoded was decoded on the CPU ("" when none was). */
DH_API const char *dh_volume_decoder(const dh_volume *v, const char **note);
/* ---------------------------------------------------------------------------------------------
 * 8. Series and derived output in memory
 *
 * Hosts whose DICOM files are not on disk (a PACS plugin handed instances by its server) plan
 * and load series from memory, and get derived output as buffers, so that nothing is staged in
 * a temporary folder and read back.
 * ------------------------------------------------------------------------------------------- */

/* One DICOM file held in memory (with or without preamble and meta header). */
typedef struct dh_memory_item {
    const void *bytes;
    size_t size;
    const char *name; /* names it in every message, and is its slice source and plan path */
} dh_memory_item;

/* dh_plan_scan over items instead of paths: each item is a file of the plan (path and output
 * name its name, mtime 0), grouped and ordered exactly as files are. A NULL or empty name, or
 * bytes NULL with a size, fails the call (DH_ERR_INVALID_ARGUMENT naming the item's index); an
 * item whose name an earlier item has is a failed file of its own (DH_ERR_INVALID_ARGUMENT), as
 * is an empty or unreadable item (with the reader's reason). The bytes are borrowed, never
 * copied: they must stay valid and unchanged until the plan is freed and, since the writers of
 * derived output read the sources' tags from them (dh_equalized_write_*, dh_equalized_encode_*),
 * for as long as a volume loaded from the plan is written from. */
DH_API dh_status dh_plan_scan_memory(dh_ctx *ctx, const dh_memory_item *items, size_t count,
                                     dh_plan **out);
/* dh_volume_set_load over items: dh_plan_scan_memory followed by every series loaded in order;
 * the same lifetime of the bytes (the set's volumes borrow them for derived output). */
DH_API dh_status dh_volume_set_load_memory(dh_ctx *ctx, const dh_memory_item *items,
                                           size_t count, dh_volume_set **out);

/* dh_equalized_write_dicom_with, dh_equalized_write_gsps and dh_equalized_write_png_with with no
 * folder and no file: *out lists each output by the name it would have below the output folder
 * ("<series folder>/<source name>" for a series of several files, the source's name for one,
 * params->output_name's name when given; ".gsps.dcm" and ".png" as there) with its bytes in
 * data[i] (sizes[i] bytes), equal byte for byte to the file the writer would write with the
 * same params (the same UIDs and `created`). `existing` does not apply; `written` is called with
 * the names. Sources are read from the bytes of a volume loaded from memory, else from their
 * files. PNG outputs have one entry per slice (sources[i] its source, sop_uids[i] ""). Memory:
 * the encoded outputs, plus one source's header at a time. Free with dh_derived_series_free. */
DH_API dh_status dh_equalized_encode_dicom(dh_ctx *ctx, const dh_volume *volume,
                                           const dh_equalized *result,
                                           const dh_derive_params *params,
                                           dh_derived_series **out);
DH_API dh_status dh_equalized_encode_gsps(dh_ctx *ctx, const dh_volume *volume,
                                          const dh_equalized *result,
                                          const dh_derive_params *params,
                                          dh_derived_series **out);
DH_API dh_status dh_equalized_encode_png(dh_ctx *ctx, const dh_volume *volume,
                                         const dh_equalized *result,
                                         const dh_derive_params *params,
                                         dh_derived_series **out);


/* ---- Decoding into GPU memory, many files at once (issue 24) ---------------------------------
 * The frames of DICOM files held in memory decoded together straight into GPU memory, for work
 * whose next step runs there (dh_hist_compute_device, dh_equalize_device, dh_mi_evaluate_device).
 * The JPEG 2000 and HTJ2K frames of all the items go to nvJPEG2000 at once (dh_ctx_set_threads
 * worker threads, each parsing its next frame while the last decodes; 0 means 16, at most 32);
 * JPEG lossless SV1 frames of the kind nvJPEG's lossless backend was measured exact on go to it
 * in a few batched calls, only where the environment asks (DH_GPU_JPEG_LOSSLESS=1); every other
 * syntax, every frame the GPU refuses or fails on, and everything when the context's
 * GPU decoders are off (dh_ctx_set_gpu_decode), is read by the CPU decoders and copied in: the
 * stored values are always those dh_volume_read_memory would give (docs/batch.md). */

/* One item's result. */
typedef struct dh_device_image {
    dh_status status;   /* the item's own: DH_OK, or what reading it alone would return */
    char message[512];  /* the reason, naming the item, when status is not DH_OK */
    uint32_t columns, rows, frames;
    uint32_t bits_stored;
    int is_signed;      /* samples int16_t when 1, uint16_t when 0 */
    double rescale_slope, rescale_intercept;
    /* columns * rows * frames stored values (frame after frame, row after row) in GPU memory of
     * the current device, ready on the stream given; NULL when status is not DH_OK. Released by
     * dh_device_image_release (stream-ordered; cudaFreeAsync does it too). */
    void *d_samples;
    uint32_t gpu_frames, cpu_frames; /* frames read by nvJPEG2000 / nvJPEG, by the CPU decoders */
    char decoder[16]; /* "nvjpeg2k" ("nvjpeg": SV1) when the GPU read every frame, else the CPU's */
    char decoder_note[256]; /* why frames the GPU could read were read on the CPU ("" if none) */
} dh_device_image;

/* Reads items[0..count) into out[0..count), on cuda_stream (a cudaStream_t of the current
 * device, NULL for the legacy default stream); the decoding is finished when the call returns.
 * DH_OK when the batch ran (each item's own status in out: a bad item fails alone); DH_ERR_NO_DEVICE
 * with the reason when this process cannot decode into GPU memory (built without the GPU
 * decoders, libraries absent or too old, no GPU: docs/batch.md); DH_ERR_INVALID_ARGUMENT. The
 * items' bytes are only read during the call. Memory: the items' datasets and the decoded
 * values on the GPU; on the host, frames the CPU reads. */
DH_API dh_status dh_decode_to_device(dh_ctx *ctx, const dh_memory_item *items, size_t count,
                                     void *cuda_stream, dh_device_image *out);
/* Releases out[i]'s GPU memory on cuda_stream and zeroes it; NULL is ignored. */
DH_API void dh_device_image_release(dh_device_image *image, void *cuda_stream);
/* ---- Where reads spend their time (issue 24: the batch's stage split) --------------------
 * With timing on, dh_plan_load_series reads each file of a series whole into memory (the read
 * stage: open, read, close) before parsing and decoding it from there (the decode stage, GPU
 * decoders included), and adds both stages' wall and CPU time of the thread that did them to
 * the context. A multi-frame file read on its own counts wholly as decode. Off by default: the
 * reads then stream from the file as before. */
typedef struct dh_read_times {
    double read_seconds, read_cpu_seconds;     /* summed over the threads that read */
    double decode_seconds, decode_cpu_seconds; /* the same for parsing and decoding */
    uint64_t files;                            /* files read with pixels */
    uint64_t bytes;                            /* their bytes as read */
} dh_read_times;

/* Turns the timing on (1) or off (0) and zeroes the sums. */
DH_API dh_status dh_ctx_set_read_timing(dh_ctx *ctx, int enabled);
/* The sums since dh_ctx_set_read_timing; all zero when it is off. */
DH_API dh_status dh_ctx_read_times(const dh_ctx *ctx, dh_read_times *out);

/* ---- A series straight into GPU memory (issue 24) ---------------------------------------
 * One planned series (or multi-frame file) decoded into ONE contiguous buffer of GPU memory,
 * slice after slice in the plan's volume order, for work whose next step runs there. All its
 * files go to dh_decode_to_device's batch together (every JPEG 2000 / HTJ2K frame of the series
 * in one nvJPEG2000 queue; other syntaxes read by the CPU decoders and copied in), each file's
 * values decoded straight into its slice's place: the stored values are always those
 * dh_plan_load_series gives. The host keeps what a host volume says beside its samples (geometry,
 * rescale, LUTs, window, UIDs, slice sources, decoders, warnings) as a dh_volume without samples,
 * and the slices left out as failures naming their files, exactly as dh_plan_load_series records
 * them. Why one buffer rather than dh_decode_to_device's one per file: the device functions
 * (dh_hist_compute_device, dh_equalize_device, CLAHE in 3D, a DLPack array in Python) take a volume
 * as one compact array. Why a buffer the caller may give: an array library (CuPy, PyTorch) then
 * owns the memory, its pool and lifetime (docs/batch.md). Needs the GPU decoders and CUDA
 * (DH_ERR_NO_DEVICE, with the reason, where either is absent). Memory: the series' files on the
 * host during the call; on the GPU its samples once (a multi-frame file whose frames are not in
 * volume order: twice while the call reorders them), beside nvJPEG2000's working buffers. */
typedef struct dh_device_volume {
    /* The host side: dh_volume_set_volume(set, 0) is the volume's metadata (the set holds no
     * volume when every slice failed), dh_volume_set_failure_* the slices left out. That volume
     * has no samples on the host: dh_volume_data is NULL, its stored and modality ranges 0, and
     * dh_hist_compute refuses it (dh_equalize computes it on the GPU where asked to, below),
     * until dh_device_volume_download copies them down;
     * the derived writers (dh_equalized_write_dicom and kin) take it as it is. */
    dh_volume_set *set;
    /* columns * rows * slices stored values (uint16_t, int16_t when is_signed), slice after slice
     * in the volume's order, ready on the stream given; NULL when no slice was read. */
    void *d_samples;
    int owns_samples; /* 1: allocated by the call (released by dh_device_volume_release) */
    uint32_t columns, rows, slices, bits_stored;
    int is_signed;
    double rescale_slope, rescale_intercept;
    uint32_t gpu_frames, cpu_frames; /* frames read by nvJPEG2000 and by the CPU decoders */
} dh_device_volume;

/* Loads series `series` of plan into out on cuda_stream (a cudaStream_t of the current device,
 * NULL for the legacy default stream); the decode is finished when the call returns, the copies
 * into place are ordered on the stream. d_samples: NULL, and the call allocates the buffer on
 * the stream; or the caller's device memory of `capacity` bytes, at least
 * dh_plan_series_sample_bytes(plan, series) (the slices kept come first). DH_OK whenever the
 * series was tried (slices that fail are left out, each a failure of out->set; a series that
 * cannot be built is one failure and no volume); DH_ERR_NO_DEVICE where this process cannot
 * decode into GPU memory (no CUDA build, GPU decoders absent or too old, no GPU; the reason in
 * the message); DH_ERR_INVALID_ARGUMENT; DH_ERR_NO_MEMORY; DH_ERR_CUDA for a failed copy. On
 * failure out is zeroed. The plan must outlive out (its items' bytes, for the writers). */
DH_API dh_status dh_plan_load_series_device(dh_ctx *ctx, const dh_plan *plan, size_t series,
                                            void *cuda_stream, void *d_samples, size_t capacity,
                                            dh_device_volume *out);
/* Copies v's samples to the host (waiting for cuda_stream) into its set's volume, which from then
 * on is a whole host volume (dh_volume_data, its ranges, dh_equalize, dh_hist_compute); for work
 * that runs on the host, such as a histogram in modality units. DH_ERR_CUDA on a failed copy. */
DH_API dh_status dh_device_volume_download(dh_ctx *ctx, dh_device_volume *v, void *cuda_stream);
/* Frees v's set and, when the call allocated them, its samples (stream-ordered on cuda_stream);
 * zeroes v. NULL is ignored. */
DH_API void dh_device_volume_release(dh_device_volume *v, void *cuda_stream);
/* ---- A planned file's transfer syntax (issue 24: the batch picks its decoder early) ----------
 * The transfer syntax UID its header named (inferred where the meta lacks it), read at the scan:
 * a batch can tell which series the GPU decoders would read before reading any pixels, and leave
 * the GPU alone for the others. "" for a file that could not be read or an index out of range. */
DH_API const char *dh_plan_file_transfer_syntax(const dh_plan *plan, size_t file);

/* ---- One series' files shared between decoders (issue 24: the GPU and idle cores) ---------
 * dh_plan_load_series_shared reads a series as dh_plan_load_series does, except that while it
 * runs other threads may decode files of the same series through dh_plan_share_help, each with
 * its own context (typically the GPU decoding from the front, cores with the CPU decoders from the
 * back). Each file is decoded once, by whoever claims it, into its own slice: the volume, its
 * failures and its values are those of dh_plan_load_series (lossless decoders agree; the volume's
 * decoder then names both). The call returns once every file is decoded, helpers' included. One
 * share serves one load at a time; helpers may call at any time, before, during or after it. */
typedef struct dh_plan_share dh_plan_share;
/* NULL when out of memory. */
DH_API dh_plan_share *dh_plan_share_create(void);
/* No load or helper may be using it. NULL is ignored. */
DH_API void dh_plan_share_free(dh_plan_share *share);
DH_API dh_status dh_plan_load_series_shared(dh_ctx *ctx, const dh_plan *plan, size_t series,
                                            dh_plan_share *share, dh_volume_set **out);
/* dh_plan_load_series_device (section 7) through a share: the owner's files go to the GPU's
 * decoders one at a time from the front, straight into their places in the series' buffer, while
 * helpers (dh_plan_share_help) decode files from the back with their own decoders and copy the
 * values into theirs, on cuda_stream from their own threads. The device volume is the one
 * dh_plan_load_series_device gives (a lossy file a helper decodes is its CPU decoder's, within
 * one stored unit of the GPU's; the volume's decoder then names both). For a caller whose next
 * step runs on the GPU (dh_equalize on CUDA) and whose idle cores help the GPU decode (the batch
 * of docs/batch.md). DH_ERR_INVALID_ARGUMENT for a NULL share or for cudaStreamPerThread (each
 * thread's own: the helpers' copies would not be ordered with the owner's stream). */
DH_API dh_status dh_plan_load_series_device_shared(dh_ctx *ctx, const dh_plan *plan,
                                                   size_t series, dh_plan_share *share,
                                                   void *cuda_stream, void *d_samples,
                                                   size_t capacity, dh_device_volume *out);
/* Decodes one file of the load now running on share, from the back, with ctx's decoders (its
 * dh_ctx_set_gpu_decode, codec threads and read timing); 1 when it decoded one (the file's
 * failure, if any, is the load's), 0 when none was left or no load runs. */
DH_API int dh_plan_share_help(dh_ctx *ctx, dh_plan_share *share);
/* Files of the running load not yet claimed by anyone; 0 when no load runs. */
DH_API size_t dh_plan_share_left(dh_plan_share *share);
/* Threads the load itself adds, while its context decodes on the GPU, to decode files from the
 * back with the CPU decoders (default 0, at most 64): a thread feeding the GPU mostly waits for
 * it, so its core is free for them (docs/batch.md). */
DH_API void dh_plan_share_set_back_threads(dh_plan_share *share, int threads);

/* Threads the load adds, while its context decodes on the GPU and the GPU decoders are still
 * loading, to decode files from the back with the CPU decoders (default 0, at most 64). Each
 * stops once the load has settled (usable or not); none start after. The owner's first GPU frame
 * waits for that load (dh_gpu_decoders_available, 0.6 s on an H100 host), so its core is free
 * meanwhile (docs/batch.md). Set them for a series in a syntax the GPU decoders read: a load
 * that never asks for the decoders never settles their load, and its load threads then decode
 * beside the owner to the end (the same values, more threads than asked for the GPU's sake). */
DH_API void dh_plan_share_set_load_threads(dh_plan_share *share, int threads);

/* ---- CUDA started ahead of the first GPU call (issue 24) ----------------------------------
 * dh_cuda_available, and where it returns 1 the GPU's CUDA context also exists afterwards (made
 * once per process and kept by CUDA until the process ends; later calls cost nothing), so the
 * process's first GPU computation does not pay for it (CUDA's start, driver and context, took
 * 0.34 s on an H100 host: docs/performance.md, session 19). Thread-safe; a host calls it on a
 * thread of its own to overlap CUDA's start with its other work (the dicomhist command does,
 * under --device cuda). 0 also when the context cannot be made (a GPU taken by another process
 * in exclusive mode). Never fails. */
DH_API int dh_cuda_prepare(void);

/* How this process's threads wait for the GPU (device 0's primary context, shared with every
 * other CUDA user in the process: CUDA's own process-wide setting, so the library never changes
 * it on its own; a host that owns the process chooses). CUDA's default with fewer contexts than
 * cores is to spin, which takes a core from the host's other threads for every thread waiting:
 * in a batch, the GPU decoders' feeders. The values are CUDA's (cudaDeviceScheduleAuto, Spin,
 * Yield, BlockingSync). Returns 1 when set (before or after the context was made), 0 where no
 * CUDA GPU is usable or for another value. The dicomhist command keeps CUDA's default unless
 * DICOMHIST_CUDA_WAIT asks (docs/batch.md: session 22 found no clear gain in a batch). */
typedef enum dh_cuda_wait {
    DH_CUDA_WAIT_AUTO = 0,
    DH_CUDA_WAIT_SPIN = 1,
    DH_CUDA_WAIT_YIELD = 2,
    DH_CUDA_WAIT_BLOCK = 4,
} dh_cuda_wait;
DH_API int dh_cuda_set_wait(dh_cuda_wait mode);

#ifdef __cplusplus
}
#endif
#endif /* DICOMHIST_H */
