// SPDX-License-Identifier: MIT
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

#ifdef __cplusplus
extern "C" {
#endif

#define DH_DICOM_UID_LEN 65 /* 64 characters and the terminator */
#define DH_DICOM_CS_LEN 17  /* code strings: 16 characters */
#define DH_DICOM_MSG_LEN 512

/* How a call of this layer ends. The numbers are those of dh_status in the library's public
 * header (plugin/lib/context.c checks that they agree), so the library passes them on as they
 * are; a plain int, so that C callers keep it in a dh_status without a conversion. */
typedef int dh_dicom_status;
enum {
    DH_DICOM_OK = 0,
    DH_DICOM_ERR_INVALID_ARGUMENT = 1,
    DH_DICOM_ERR_IO = 2,
    DH_DICOM_ERR_MALFORMED = 3,
    DH_DICOM_ERR_UNSUPPORTED = 4,
    DH_DICOM_ERR_MISMATCH = 5,
    DH_DICOM_ERR_NO_MEMORY = 6,
    DH_DICOM_ERR_INTERNAL = 9
};

/* PhotometricInterpretation of a grayscale image: the numbers of dh_photometric, as above. */
typedef int dh_dicom_photometric;
enum { DH_DICOM_MONOCHROME2 = 0, DH_DICOM_MONOCHROME1 = 1 };

/* The pixel format of an image: how its stored values are laid out and what they mean. The
 * slices of one volume share it; the library carries it as it is from the file into the plan's
 * slices (plugin/lib/plan.h) and into the volume (plugin/lib/volume.h). */
typedef struct dh_image_format {
    uint32_t rows, columns;
    uint32_t bits_allocated, bits_stored, high_bit;
    int is_signed; /* PixelRepresentation 1 */
    dh_dicom_photometric photometric;
    double rescale_slope, rescale_intercept; /* 1 and 0 when absent; from functional groups too */
} dh_image_format;

/* Whether two formats are the same, field by field (rescale values compared exactly). */
static inline int dh_image_format_equal(const dh_image_format *a, const dh_image_format *b)
{
    return a->rows == b->rows && a->columns == b->columns &&
           a->bits_allocated == b->bits_allocated && a->bits_stored == b->bits_stored &&
           a->high_bit == b->high_bit && a->is_signed == b->is_signed &&
           a->photometric == b->photometric && a->rescale_slope == b->rescale_slope &&
           a->rescale_intercept == b->rescale_intercept;
}

/* One DICOM image as read: metadata plus (when asked for) all frames of stored values. */
typedef struct dh_dicom_image {
    dh_image_format format;
    uint32_t frames;

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

    /* Added after the first layout; everything above keeps its meaning. */
    char photometric_name[DH_DICOM_CS_LEN]; /* as written ("" when absent: MONOCHROME2 assumed) */
    int has_rescale;        /* 1 when the file carries RescaleSlope/Intercept (any level) */
    int has_modality_lut;   /* 1 when a Modality LUT Sequence replaces the linear rescale */
    uint32_t window_count;  /* number of WindowCenter values (0 without a window) */
    int is_encapsulated;    /* 1 when the pixel data was compressed in the file */
    uint64_t pixel_data_bytes; /* PixelData as found: value length, or the sum of fragments */

    /* The Modality LUT Sequence's first item, when has_modality_lut: it replaces the rescale
     * (slope and intercept stay 1 and 0 unless the file also has them, and are then unused).
     * Modality value of stored s = modality_lut[clamp(s - modality_lut_first, 0, entries - 1)].
     * From LUTDescriptor: entries (0 there means 65536), first mapped value (read as signed
     * when the pixels are signed), bits per entry (8..16; entries are masked to them). */
    uint32_t modality_lut_entries;
    int32_t modality_lut_first;
    uint32_t modality_lut_bits;
    uint16_t *modality_lut; /* entries values, owned by the image */

    /* Lossy compression: a lossy transfer syntax, or LossyImageCompression "01". The method is
     * LossyImageCompressionMethod as written, else the syntax's defined term ("ISO_10918_1",
     * "ISO_15444_1", ...), else "" . */
    int is_lossy;
    char lossy_method[DH_DICOM_UID_LEN];

    /* The VOI LUT Sequence's first item (voi_lut_count items in all; 0 without the sequence):
     * output of modality value x = voi_lut[clamp(floor(x) - voi_lut_first, 0, entries - 1)],
     * in 0 .. 2^voi_lut_bits - 1. The first mapped value is signed when the element is SS or the
     * modality values can be negative (PS3.3 C.11.2.1.1). */
    uint32_t voi_lut_count;
    uint32_t voi_lut_entries;
    int32_t voi_lut_first;
    uint32_t voi_lut_bits;
    uint16_t *voi_lut; /* owned by the image */
    char voi_lut_explanation[DH_DICOM_UID_LEN]; /* LUTExplanation, "" when absent */
    char window_explanation[DH_DICOM_UID_LEN];  /* the first WindowCenterWidthExplanation */

    /* Which decoder read the pixels (want_pixels only; "" otherwise): "native" (uncompressed),
     * "dcmtk" (RLE, JPEG), "charls" (JPEG-LS), "openjpeg" (JPEG 2000, HTJ2K), "nvjpeg2k"
     * (JPEG 2000, HTJ2K on the GPU), "nvjpeg" (JPEG lossless SV1 on the GPU). When the read asked
     * for GPU decoding and the syntax has a GPU decoder but the CPU read it, decoder_note says
     * why (libraries absent or too old, no GPU, a stream the GPU decoder refused or failed on);
     * "" otherwise. */
    char decoder[16];
    char decoder_note[DH_DICOM_MSG_LEN / 2];
} dh_dicom_image;

/* Bounds on compressed pixel data, checked before anything is decompressed or allocated: every
 * frame needs at least one fragment, and the decoded size (Rows x Columns x Frames x
 * BitsAllocated/8) may be at most DH_DICOM_MAX_EXPANSION times the compressed bytes, or
 * DH_DICOM_EXPANSION_FLOOR bytes, whichever is larger. Lossless JPEG cannot beat 16:1 and RLE
 * 64:1; JPEG-LS runs on blank frames reach a few thousand to one, hence the generous ratio and
 * the floor that lets any single blank frame of ordinary size through. */
#define DH_DICOM_MAX_EXPANSION 4096u
#define DH_DICOM_EXPANSION_FLOOR (64u * 1024u * 1024u)

/* Reads a file. With want_pixels 0 only the metadata is read (fast series scans; element
 * values over 4 KB, the pixel data among them, are not loaded), but the geometry is still
 * checked against the length of the pixel data. On failure returns the status, writes "reason"
 * into msg (the caller adds the file name) and sets *out to NULL:
 *   DH_DICOM_ERR_IO           the file cannot be opened
 *   DH_DICOM_ERR_MALFORMED    not DICOM, truncated, no / empty / too short PixelData, lying
 *                             geometry, inconsistent bit layout
 *   DH_DICOM_ERR_UNSUPPORTED  a transfer syntax not decoded here (MPEG, JPEG 2000 Part 2, ...),
 *                             colour, 1-bit or 32-bit data, float pixel data, frames with
 *                             different rescale
 *   DH_DICOM_ERR_NO_MEMORY    an allocation failed
 * Thread-safe: different threads may read different files at once. */
dh_dicom_status dh_dicom_read_file(const char *path, int want_pixels, dh_dicom_image **out,
                                   char *msg, size_t msg_len);

/* The same from a buffer holding a whole file (preamble and meta header optional). */
dh_dicom_status dh_dicom_read_memory(const void *data, size_t size, int want_pixels,
                                     dh_dicom_image **out, char *msg, size_t msg_len);

/* How a read decodes; a zeroed struct (or NULL) means the defaults. */
typedef struct dh_dicom_read_options {
    /* OpenJPEG worker threads for each JPEG 2000 / HTJ2K frame: 0 or 1 means one (batch work
     * runs files in parallel instead); more only pays for one huge image. At most 64. */
    uint32_t codec_threads;
    /* 1: decode JPEG 2000 (.90, .91), HTJ2K (.201-.203) and JPEG lossless SV1 (.70) on the GPU
     * through NVIDIA's nvJPEG2000 and nvJPEG where they load (dicom_gpu_load.cpp), else on the
     * CPU with the reason in decoder_note; each frame's stream is checked against the dataset on
     * the CPU first either way, and whatever the GPU refuses or fails on is decoded on the CPU.
     * 0: the CPU decoders only. */
    int gpu_decode;
} dh_dicom_read_options;

/* dh_dicom_read_file and dh_dicom_read_memory with options. */
dh_dicom_status dh_dicom_read_file_with(const char *path, int want_pixels,
                                        const dh_dicom_read_options *options, dh_dicom_image **out,
                                        char *msg, size_t msg_len);
dh_dicom_status dh_dicom_read_memory_with(const void *data, size_t size, int want_pixels,
                                          const dh_dicom_read_options *options,
                                          dh_dicom_image **out, char *msg, size_t msg_len);

void dh_dicom_image_free(dh_dicom_image *image);

/* Whether this process can decode on the GPU (NVIDIA's decoders found, recent enough, and a GPU
 * answering): 1, or 0 with the reason in msg. The libraries are looked for once per process. */
int dh_dicom_gpu_decoders(char *msg, size_t msg_len);

/* 1 once that look has finished in this process (the decoders usable or not; always 1 in a build
 * without them), else 0: it neither waits for the look nor starts it. A thread that can do other
 * work while another waits for the decoders to load asks this (dh_plan_share's load threads). */
int dh_dicom_gpu_decoders_settled(void);


/* ---- Batched decode into device memory (issue 24; dicom_gpu_batch.cpp) ----------------------
 * The frames of many files decoded at once into GPU memory, for a pipeline whose next step runs
 * on the GPU. JPEG 2000 and HTJ2K frames of every file go to nvJPEG2000 together: `workers` host
 * threads, each parsing its next frame while its previous one decodes on its own streams, all
 * frames of the batch in one queue, fed as the files are parsed (the parse of the next files
 * overlaps the decode of the first ones). JPEG lossless SV1 frames go to nvJPEG's lossless backend in
 * batched calls where DH_GPU_JPEG_LOSSLESS=1 asks and it was measured exact on such frames
 * (dicom_gpu_jpeg_lossless.cpp); an SV1 file of which it did not read every frame is read whole by
 * DCMTK. Every other syntax, and every frame nvJPEG2000 refuses or
 * fails on, or whose values would need the dataset's bit layout applied (a code stream of another
 * depth or sign than BitsStored / PixelRepresentation say), is read by the CPU decoders of
 * dh_dicom_read_memory and copied in: never a different value than the CPU read gives. */

/* One file of a batch: a whole DICOM file in memory, kept by the caller until the call returns.
 * device_dest: where its stored values go, in the caller's GPU memory (capacity bytes there), so
 * a series is decoded straight into its place (plan_load_device.c); a file whose values would
 * not fit fails alone with DH_DICOM_ERR_MISMATCH, nothing written. NULL: the batch allocates. */
typedef struct dh_dicom_batch_input {
    const void *data;
    size_t size;
    void *device_dest;
    size_t capacity;
} dh_dicom_batch_input;

/* What the batch gives back for one file. */
typedef struct dh_dicom_device_image {
    dh_dicom_status status;      /* DH_DICOM_OK, or what dh_dicom_read_memory would return */
    char msg[DH_DICOM_MSG_LEN];  /* the reason, when status is not DH_DICOM_OK */
    /* The metadata, as dh_dicom_read_memory gives it, pixels NULL; decoder "nvjpeg2k" when the
     * GPU read every frame, else the CPU decoder's name, decoder_note saying why (how many
     * frames the GPU read, the first refusal). NULL when status is not DH_DICOM_OK. */
    dh_dicom_image *image;
    /* rows * columns * frames stored values in GPU memory, laid out as image->pixels would be
     * (uint16_t, int16_t when image->format.is_signed), allocated on the caller's stream
     * (stream-ordered, CUDA's default memory pool: cudaFreeAsync releases it too). Release
     * with dh_dicom_device_image_release. NULL when status is not DH_DICOM_OK. The input's
     * device_dest when it gave one (callers_memory 1: the release leaves it alone). */
    void *device_pixels;
    int callers_memory;
    uint32_t gpu_frames, cpu_frames; /* frames read by nvJPEG2000 / nvJPEG, by the CPU decoders */
} dh_dicom_device_image;

/* How a batch runs; a zeroed struct (or NULL) means the defaults. */
typedef struct dh_dicom_batch_options {
    /* Host threads that parse the files and drive nvJPEG2000 (each with two decode lanes: a
     * stream, a decode state, a parsed stream). 0: the default, 16 (bench/NOTES.md, session 15,
     * measured 1 to 32); at most 32. */
    uint32_t workers;
    /* 1: every frame read by the CPU decoders, then copied (a caller that switched the GPU
     * decoders off, dh_ctx_set_gpu_decode); the GPU is still needed for the memory. */
    int cpu_decoders_only;
} dh_dicom_batch_options;

/* Where the time of a batch went (wall clock, seconds), for the caller to name its next wall. */
typedef struct dh_dicom_batch_timing {
    double parse;    /* DICOM parse, checks and code streams gathered, all files (parallel) */
    /* the GPU decoders, from the first frame handed over until the GPU is done: JPEG 2000 frames
     * go to nvJPEG2000 as each file is parsed, so this overlaps parse (session 17) */
    double decode;
    double fallback; /* files and frames read on the CPU, and copied to the device */
    double first_frame; /* from the call's start until the first frame reached the GPU decoders */
} dh_dicom_batch_timing;

/* Decodes files[0..count) into out[0..count) (see dh_dicom_device_image); the stored values are
 * in device memory and ordered on cuda_stream (a cudaStream_t / CUstream of the current device's
 * primary context, or NULL for the legacy default stream) when the call returns; the work on the
 * GPU is finished by then too. Returns DH_DICOM_OK when the batch ran, each file's own status in
 * out (a malformed file fails alone, as dh_dicom_read_memory would fail it); otherwise
 * DH_DICOM_ERR_UNSUPPORTED with the reason when this process cannot decode on the GPU (built
 * without the decoders, libraries absent, no GPU: then nothing is allocated), or
 * DH_DICOM_ERR_INVALID_ARGUMENT. timing may be NULL. Thread-safe. */
dh_dicom_status dh_dicom_read_batch_device(const dh_dicom_batch_input *files, size_t count,
                                           const dh_dicom_batch_options *options,
                                           void *cuda_stream, dh_dicom_device_image *out,
                                           dh_dicom_batch_timing *timing, char *msg,
                                           size_t msg_len);

/* Frees what one out[i] holds (device memory released on cuda_stream) and zeroes it. */
void dh_dicom_device_image_release(dh_dicom_device_image *image, void *cuda_stream);

/* Releases device memory the batch allocated (device_pixels), stream-ordered on cuda_stream, for
 * a caller that kept the pointer and freed the image; NULL is ignored. */
void dh_dicom_device_free(void *device, void *cuda_stream);

/* Copies bytes of device memory to host memory once cuda_stream reaches this point, and waits:
 * for callers without a CUDA runtime of their own (tests, benchmarks). DH_DICOM_OK, or
 * DH_DICOM_ERR_UNSUPPORTED / DH_DICOM_ERR_INTERNAL with the reason. */
dh_dicom_status dh_dicom_device_to_host(void *host, const void *device, size_t bytes,
                                        void *cuda_stream, char *msg, size_t msg_len);

#ifdef __cplusplus
}
#endif
#endif /* DH_DICOM_H */
