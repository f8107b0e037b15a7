// SPDX-License-Identifier: MIT
/*
 * dicom_gpu_batch.cpp: dh_dicom_read_batch_device, the frames of many files decoded at once into
 * device memory (dh_dicom.h says what the caller gets). Three steps, each file failing alone as
 * dh_dicom_read_memory would fail it:
 *   1. parse, on `workers` threads: the dataset, its checks and metadata as a read does them;
 *      the code stream of every JPEG 2000 / HTJ2K and JPEG lossless SV1 frame checked and
 *      gathered (in place where a frame is one fragment); any other syntax decoded on the CPU
 *      right away;
 *   2. every file's stored values allocated on the caller's stream, every gathered frame of the
 *      batch decoded into its place: JPEG 2000 by nvJPEG2000 (dicom_gpu_jpeg2000_batch.cpp), SV1
 *      by nvJPEG's lossless backend, many frames per call (dicom_gpu_jpeg_lossless_batch.cpp);
 *   3. on `workers` threads again: each J2K frame the GPU refused or failed on decoded by
 *      OpenJPEG, each SV1 file with such a frame read whole by DCMTK, and each file read on the
 *      CPU, copied to its place on the caller's stream.
 * Built with or without the GPU decoders: without them the call says so (dicom_gpu_absent.cpp).
 */
#include "dicom_internal.h"

#include "dicom_gpu.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace dh_dicom_impl {

namespace {

constexpr uint32_t default_workers = 16;
constexpr uint32_t max_workers = 32;

/* One file on its way through the batch. */
struct batch_file {
    const dh_dicom_batch_input *in = nullptr;
    dh_dicom_device_image *out = nullptr;
    held_bytes held; /* declared before ff: outlives it */
    std::unique_ptr<DcmFileFormat> ff;
    std::vector<std::vector<Uint8>> joined; /* frames of several fragments */
    std::vector<gpu_frame> frames;          /* empty: read on the CPU */
    std::string not_on_gpu;                 /* why a JPEG 2000 file was not */
    size_t first_frame = 0;                 /* its frames' place in the batch's list */
    bool lossless = false;                  /* SV1: its frames in the lossless list */
    E_TransferSyntax xfer = EXS_Unknown;
};

/* fn(i) for i in [0, n) on up to `threads` threads. */
template <class Fn> void parallel_for(size_t n, uint32_t threads, const Fn &fn)
{
    std::atomic<size_t> next{0};
    const auto run = [&] {
        for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1))
            fn(i);
    };
    std::vector<std::thread> pool;
    for (uint32_t t = 1; t < threads && t < n; t++)
        pool.emplace_back(run);
    run();
    for (std::thread &t : pool)
        t.join();
}

double seconds_since(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

size_t cells_of(const dh_dicom_image &img)
{
    return (size_t)img.format.rows * img.format.columns * img.frames;
}

/* Step 1 for one file: a failure is the file's status, as a read would give it. */
void parse(batch_file &f, bool cpu_only)
{
    dh_dicom_device_image &out = *f.out;
    out.status = run_guarded(
        [&f, &out, cpu_only] {
            codecs_init();
            out.image = new_image();
            f.ff.reset(new DcmFileFormat);
            load_memory(*f.ff, f.in->data, f.in->size, f.held);
            dh_dicom_image &img = *out.image;
            const E_TransferSyntax xfer = f.xfer = read_image_header(*f.ff, img);
            DcmDataset &ds = *f.ff->getDataset();
            if (is_jpeg2000(xfer) && !cpu_only) {
                f.frames = jpeg2000_gpu_frames(pixel_fragments(ds), img, f.joined, f.not_on_gpu);
                if (!f.frames.empty())
                    return;
            }
            if (xfer == EXS_JPEGProcess14SV1 && !cpu_only) {
                refuse_stalling_jpeg(pixel_fragments(ds), xfer); /* as DCMTK's read refuses */
                f.frames = jpeg_lossless_gpu_frames(pixel_fragments(ds), img, f.joined,
                                                    f.not_on_gpu);
                f.lossless = !f.frames.empty();
                if (f.lossless)
                    return;
            }
            const dh_dicom_read_options cpu{};
            decode_pixels(ds, xfer, cpu, img);
            if (!f.not_on_gpu.empty())
                copy_field(img.decoder_note, sizeof img.decoder_note, f.not_on_gpu.c_str());
        },
        out.msg, sizeof out.msg);
}

/* Step 3 for an SV1 file of which nvJPEG did not read every frame: DCMTK reads it whole (it
 * decodes a dataset, not a frame) and its values replace the device's. */
void complete_lossless(batch_file &f, const std::vector<gpu_batch_frame> &decoded, void *stream)
{
    dh_dicom_device_image &out = *f.out;
    dh_dicom_image &img = *out.image;
    std::string first_refusal;
    for (uint32_t k = 0; k < img.frames; k++) {
        const gpu_batch_frame &fr = decoded[f.first_frame + k];
        out.gpu_frames += fr.decoded;
        if (!fr.decoded && first_refusal.empty())
            first_refusal = fr.refusal.empty() ? "no call reached it" : fr.refusal;
    }
    if (out.gpu_frames == img.frames) {
        copy_field(img.decoder, sizeof img.decoder, "nvjpeg");
        return;
    }
    const dh_dicom_read_options cpu{};
    decode_pixels(*f.ff->getDataset(), f.xfer, cpu, img);
    std::string why;
    if (!gpu_copy_to_device(reinterpret_cast<device_ptr>(out.device_pixels), img.pixels,
                            cells_of(img) * 2, stream, why))
        fail(DH_DICOM_ERR_INTERNAL, "%s", why.c_str());
    free(img.pixels);
    img.pixels = nullptr;
    char note[DH_DICOM_MSG_LEN / 2];
    snprintf(note, sizeof note, "DCMTK read the file: nvJPEG did not read %u of %u frames: %s",
             img.frames - out.gpu_frames, img.frames, first_refusal.c_str());
    out.gpu_frames = 0;
    out.cpu_frames = img.frames;
    copy_field(img.decoder_note, sizeof img.decoder_note, note);
}

/* Step 3 for one file: its frames the GPU did not read, or all of it when read on the CPU. */
void complete(batch_file &f, const std::vector<gpu_batch_frame> &decoded,
              const std::vector<gpu_batch_frame> &lossless, void *stream)
{
    if (f.lossless) {
        f.out->status = run_guarded([&] { complete_lossless(f, lossless, stream); }, f.out->msg,
                                    sizeof f.out->msg);
        return;
    }
    dh_dicom_device_image &out = *f.out;
    dh_dicom_image &img = *out.image;
    const device_ptr base = reinterpret_cast<device_ptr>(out.device_pixels);
    out.status = run_guarded(
        [&] {
            std::string why;
            if (f.frames.empty()) { /* read on the CPU in step 1 */
                if (!gpu_copy_to_device(base, img.pixels, cells_of(img) * 2, stream, why))
                    fail(DH_DICOM_ERR_INTERNAL, "%s", why.c_str());
                free(img.pixels);
                img.pixels = nullptr;
                out.cpu_frames = img.frames;
                return;
            }
            const size_t frame_cells = (size_t)img.format.rows * img.format.columns;
            std::vector<uint16_t> cells;
            std::string first_refusal;
            for (uint32_t k = 0; k < img.frames; k++) {
                const gpu_batch_frame &fr = decoded[f.first_frame + k];
                if (fr.decoded) {
                    out.gpu_frames++;
                    continue;
                }
                if (first_refusal.empty())
                    first_refusal = fr.refusal.empty() ? "no GPU worker reached it" : fr.refusal;
                cells.resize(frame_cells);
                decode_jpeg2000_frame(f.frames[k], img, k, cells.data());
                cells_to_stored_values(cells.data(), frame_cells, img);
                if (!gpu_copy_to_device(fr.cells, cells.data(), frame_cells * 2, stream, why))
                    fail(DH_DICOM_ERR_INTERNAL, "%s", why.c_str());
                out.cpu_frames++;
            }
            if (out.cpu_frames == 0) {
                copy_field(img.decoder, sizeof img.decoder, "nvjpeg2k");
                return;
            }
            char note[DH_DICOM_MSG_LEN / 2];
            snprintf(note, sizeof note, "nvJPEG2000 read %u of %u frames; the rest: %s",
                     out.gpu_frames, img.frames, first_refusal.c_str());
            copy_field(img.decoder, sizeof img.decoder, "openjpeg");
            copy_field(img.decoder_note, sizeof img.decoder_note, note);
        },
        out.msg, sizeof out.msg);
}

void write_message(char *msg, size_t msg_len, const std::string &text)
{
    if (msg != nullptr && msg_len > 0)
        snprintf(msg, msg_len, "%s", text.c_str());
}

/* Releases what a file that failed holds; its status and message stay. */
void drop(dh_dicom_device_image &out, void *stream)
{
    dh_dicom_image_free(out.image);
    out.image = nullptr;
    gpu_device_free(reinterpret_cast<device_ptr>(out.device_pixels), stream);
    out.device_pixels = nullptr;
    out.gpu_frames = out.cpu_frames = 0;
}

dh_dicom_status read_batch(const dh_dicom_batch_input *inputs, size_t count, uint32_t workers,
                           bool cpu_only, void *stream, dh_dicom_device_image *outs, dh_dicom_batch_timing &time,
                           char *msg, size_t msg_len)
{
    std::vector<batch_file> files(count);
    for (size_t i = 0; i < count; i++) {
        files[i].in = &inputs[i];
        files[i].out = &outs[i];
    }
    auto t0 = std::chrono::steady_clock::now();
    parallel_for(count, workers, [&files, cpu_only](size_t i) { parse(files[i], cpu_only); });
    time.parse = seconds_since(t0);

    t0 = std::chrono::steady_clock::now();
    std::vector<gpu_batch_frame> frames, lossless;
    for (batch_file &f : files) {
        dh_dicom_device_image &out = *f.out;
        if (out.status != DH_DICOM_OK)
            continue;
        std::string why;
        device_ptr base = 0;
        if (!gpu_device_alloc(cells_of(*out.image) * 2, stream, base, why)) {
            out.status = DH_DICOM_ERR_NO_MEMORY;
            write_message(out.msg, sizeof out.msg, "GPU memory for the stored values: " + why);
            continue;
        }
        out.device_pixels = reinterpret_cast<void *>(base);
        std::vector<gpu_batch_frame> &list = f.lossless ? lossless : frames;
        f.first_frame = list.size();
        const size_t frame_bytes = (size_t)out.image->format.rows * out.image->format.columns * 2;
        for (uint32_t k = 0; k < f.frames.size(); k++) {
            gpu_batch_frame fr;
            fr.stream = f.frames[k];
            fr.img = out.image;
            fr.index = k;
            fr.cells = base + k * frame_bytes;
            list.push_back(std::move(fr));
        }
    }
    std::string why;
    if (!gpu_decode_jpeg2000_batch(frames, workers, stream, why))
        for (gpu_batch_frame &fr : frames)
            fr.refusal = why;
    if (!gpu_decode_jpeg_lossless_batch(lossless, stream, why))
        for (gpu_batch_frame &fr : lossless)
            fr.refusal = why;
    time.decode = seconds_since(t0);

    t0 = std::chrono::steady_clock::now();
    parallel_for(count, workers, [&](size_t i) {
        if (files[i].out->status == DH_DICOM_OK)
            complete(files[i], frames, lossless, stream);
    });
    for (batch_file &f : files)
        if (f.out->status != DH_DICOM_OK)
            drop(*f.out, stream);
    time.fallback = seconds_since(t0);
    write_message(msg, msg_len, "");
    return DH_DICOM_OK;
}

} // namespace

} // namespace dh_dicom_impl

using namespace dh_dicom_impl;

extern "C" dh_dicom_status dh_dicom_read_batch_device(const dh_dicom_batch_input *files,
                                                      size_t count,
                                                      const dh_dicom_batch_options *options,
                                                      void *cuda_stream, dh_dicom_device_image *out,
                                                      dh_dicom_batch_timing *timing, char *msg,
                                                      size_t msg_len)
{
    write_message(msg, msg_len, "");
    if ((count > 0 && (files == nullptr || out == nullptr)) ||
        (options != nullptr && options->workers > max_workers)) {
        write_message(msg, msg_len,
                      options != nullptr && options->workers > max_workers
                          ? "workers must be 0..32"
                          : "no files or no output given");
        return DH_DICOM_ERR_INVALID_ARGUMENT;
    }
    for (size_t i = 0; i < count; i++) {
        memset(&out[i], 0, sizeof out[i]);
        if (files[i].data == nullptr && files[i].size > 0) {
            write_message(msg, msg_len, "file " + std::to_string(i) + " has no data");
            return DH_DICOM_ERR_INVALID_ARGUMENT;
        }
    }
    dh_dicom_batch_timing unused;
    dh_dicom_batch_timing &time = timing != nullptr ? *timing : unused;
    time = dh_dicom_batch_timing{};
    const uint32_t workers =
        options != nullptr && options->workers > 0 ? options->workers : default_workers;
    std::string why;
    const dh_dicom_status status = run_guarded(
        [&] {
            if (!gpu_decoders_usable(why))
                fail(DH_DICOM_ERR_UNSUPPORTED, "no decoding into GPU memory: %s", why.c_str());
            read_batch(files, count, workers, options != nullptr && options->cpu_decoders_only,
                       cuda_stream, out, time, msg, msg_len);
        },
        msg, msg_len);
    return status;
}

extern "C" void dh_dicom_device_image_release(dh_dicom_device_image *image, void *cuda_stream)
{
    if (image == nullptr)
        return;
    drop(*image, cuda_stream);
    memset(image, 0, sizeof *image);
}

extern "C" void dh_dicom_device_free(void *device, void *cuda_stream)
{
    try {
        gpu_device_free(reinterpret_cast<device_ptr>(device), cuda_stream);
    } catch (...) { /* nothing to report from a release */
    }
}

extern "C" dh_dicom_status dh_dicom_device_to_host(void *host, const void *device, size_t bytes,
                                                   void *cuda_stream, char *msg, size_t msg_len)
{
    write_message(msg, msg_len, "");
    if (bytes > 0 && (host == nullptr || device == nullptr)) {
        write_message(msg, msg_len, "no host or no device memory given");
        return DH_DICOM_ERR_INVALID_ARGUMENT;
    }
    std::string why;
    if (bytes == 0)
        return DH_DICOM_OK;
    if (!gpu_decoders_usable(why)) {
        write_message(msg, msg_len, why);
        return DH_DICOM_ERR_UNSUPPORTED;
    }
    if (!gpu_copy_from_device(host, reinterpret_cast<device_ptr>(device), bytes, cuda_stream,
                              why)) {
        write_message(msg, msg_len, why);
        return DH_DICOM_ERR_INTERNAL;
    }
    return DH_DICOM_OK;
}
