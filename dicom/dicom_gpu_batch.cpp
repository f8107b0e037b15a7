// SPDX-License-Identifier: MIT
/*
 * dicom_gpu_batch.cpp: dh_dicom_read_batch_device, the frames of many files decoded at once into
 * device memory (dh_dicom.h says what the caller gets). Three steps, each file failing alone as
 * dh_dicom_read_memory would fail it:
 *   1. parse, on `workers` threads: the dataset, its checks and metadata as a read does them;
 *      the code stream of every JPEG 2000 / HTJ2K and JPEG lossless SV1 frame checked and
 *      gathered (in place where a frame is one fragment); any other syntax decoded on the CPU
 *      right away;
 *   2. each file's stored values placed (the caller's memory, or allocated on the caller's
 *      stream) and, as soon as that file is parsed, its JPEG 2000 frames handed to nvJPEG2000's
 *      workers (dicom_gpu_jpeg2000_batch.cpp), which decode the first files while the next are
 *      still parsed (before session 17 the decode began after the last parse: the whole call
 *      was 0.66x nvImageCodec for HTJ2K); SV1 by nvJPEG's lossless backend once all are parsed,
 *      many frames per call (dicom_gpu_jpeg_lossless_batch.cpp);
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
#include <mutex>
#include <system_error>
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
    std::vector<gpu_batch_frame> gpu;       /* its frames on their way through a GPU decoder */
    void *ready = nullptr;                  /* the event its J2K frames wait for */
    bool lossless = false;                  /* SV1: its frames for nvJPEG's lossless batch */
    E_TransferSyntax xfer = EXS_Unknown;
};

/* The JPEG 2000 decoders of one batch: started on their own thread when the first file with
 * such frames is parsed (a batch without any touches no decode lane), fed as files are parsed. */
struct j2k_decoders {
    gpu_frame_feed feed;
    std::mutex lock; /* guards the start */
    std::thread thread;
    bool started = false;
    bool ran = false; /* false once joined: no worker could start, why says why */
    std::string why;
    std::chrono::steady_clock::time_point start_time;

    void push(std::vector<gpu_batch_frame> &frames, unsigned workers)
    {
        {
            std::lock_guard<std::mutex> hold(lock);
            if (!started) {
                started = true;
                start_time = std::chrono::steady_clock::now();
                try { /* no thread (EAGAIN): the frames stay in the feed, for the CPU, with why */
                    thread = std::thread([this, workers] {
                        ran = gpu_decode_jpeg2000_batch(feed, workers, why);
                    });
                } catch (const std::system_error &e) {
                    why = std::string("cannot start the GPU decode thread: ") + e.what();
                }
            }
        }
        feed.push(frames.data(), frames.size());
    }
    /* Every file pushed: waits for the GPU workers. */
    void finish()
    {
        feed.close();
        if (thread.joinable())
            thread.join();
    }
    ~j2k_decoders() /* an exception between the start and finish() must not leave it running */
    {
        finish();
    }
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
    /* A thread that cannot start (EAGAIN) leaves its share to the others: thrown out of here,
     * the vector's running threads would be destroyed joinable, and std::terminate end the host. */
    try {
        for (uint32_t t = 1; t < threads && t < n; t++)
            pool.emplace_back(run);
    } catch (const std::system_error &) {
    }
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

/* Where a parsed file's stored values go: the caller's memory when the input names it (checked
 * to hold them), else memory allocated on the caller's stream. */
void place(batch_file &f, void *stream)
{
    dh_dicom_device_image &out = *f.out;
    const size_t bytes = cells_of(*out.image) * 2;
    if (f.in->device_dest != nullptr) {
        if (bytes > f.in->capacity)
            fail(DH_DICOM_ERR_MISMATCH,
                 "its %u frame(s) of %ux%u need %zu bytes of GPU memory, %zu given for it",
                 out.image->frames, out.image->format.columns, out.image->format.rows, bytes,
                 f.in->capacity);
        out.device_pixels = f.in->device_dest;
        out.callers_memory = 1;
        return;
    }
    std::string why;
    device_ptr base = 0;
    if (!gpu_device_alloc(bytes, stream, base, why))
        fail(DH_DICOM_ERR_NO_MEMORY, "GPU memory for the stored values: %s", why.c_str());
    out.device_pixels = reinterpret_cast<void *>(base);
}

/* The records of a parsed file's GPU frames, each at its place in the file's stored values. */
void describe_gpu_frames(batch_file &f)
{
    const dh_dicom_image &img = *f.out->image;
    const device_ptr base = reinterpret_cast<device_ptr>(f.out->device_pixels);
    const size_t frame_bytes = (size_t)img.format.rows * img.format.columns * 2;
    f.gpu.resize(f.frames.size());
    for (uint32_t k = 0; k < f.frames.size(); k++) {
        gpu_batch_frame &fr = f.gpu[k];
        fr.stream = f.frames[k];
        fr.img = &img;
        fr.index = k;
        fr.cells = base + k * frame_bytes;
        fr.ready = f.ready;
    }
}

/* Steps 1 and 2 for one file: parsed, its memory placed, and its JPEG 2000 frames handed to the
 * GPU decoders at once (after an event on the caller's stream: the memory exists by then). */
void parse_and_feed(batch_file &f, bool cpu_only, void *stream, j2k_decoders &j2k,
                    unsigned workers)
{
    parse(f, cpu_only);
    dh_dicom_device_image &out = *f.out;
    if (out.status != DH_DICOM_OK)
        return;
    out.status = run_guarded(
        [&] {
            place(f, stream);
            if (f.frames.empty())
                return;
            if (!f.lossless) {
                std::string why;
                if (!gpu_event_now(stream, f.ready, why))
                    fail(DH_DICOM_ERR_INTERNAL, "%s", why.c_str());
            }
            describe_gpu_frames(f);
            if (!f.lossless)
                j2k.push(f.gpu, workers);
        },
        out.msg, sizeof out.msg);
}

/* Step 3 for an SV1 file of which nvJPEG did not read every frame: DCMTK reads it whole (it
 * decodes a dataset, not a frame) and its values replace the device's. */
void complete_lossless(batch_file &f, void *stream)
{
    dh_dicom_device_image &out = *f.out;
    dh_dicom_image &img = *out.image;
    std::string first_refusal;
    for (uint32_t k = 0; k < img.frames; k++) {
        const gpu_batch_frame &fr = f.gpu[k];
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
void complete(batch_file &f, void *stream)
{
    if (f.lossless) {
        f.out->status = run_guarded([&] { complete_lossless(f, stream); }, f.out->msg,
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
                const gpu_batch_frame &fr = f.gpu[k];
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
    if (!out.callers_memory)
        gpu_device_free(reinterpret_cast<device_ptr>(out.device_pixels), stream);
    out.device_pixels = nullptr;
    out.callers_memory = 0;
    out.gpu_frames = out.cpu_frames = 0;
}

dh_dicom_status read_batch(const dh_dicom_batch_input *inputs, size_t count, uint32_t workers,
                           bool cpu_only, void *stream, dh_dicom_device_image *outs,
                           dh_dicom_batch_timing &time, char *msg, size_t msg_len)
{
    std::vector<batch_file> files(count);
    for (size_t i = 0; i < count; i++) {
        files[i].in = &inputs[i];
        files[i].out = &outs[i];
    }
    /* Steps 1 and 2 overlapped: each file's JPEG 2000 frames go to the GPU once it is parsed. */
    const auto t0 = std::chrono::steady_clock::now();
    j2k_decoders j2k;
    parallel_for(count, workers, [&](size_t i) {
        parse_and_feed(files[i], cpu_only, stream, j2k, workers);
    });
    time.parse = seconds_since(t0);
    time.first_frame = j2k.started ? std::chrono::duration<double>(j2k.start_time - t0).count()
                                   : time.parse;
    const auto decode_start = j2k.started ? j2k.start_time : std::chrono::steady_clock::now();

    std::vector<gpu_batch_frame *> lossless;
    for (batch_file &f : files)
        if (f.out->status == DH_DICOM_OK && f.lossless)
            for (gpu_batch_frame &fr : f.gpu)
                lossless.push_back(&fr);
    std::string why;
    if (!gpu_decode_jpeg_lossless_batch(lossless, stream, why))
        for (gpu_batch_frame *fr : lossless)
            fr->refusal = why;
    j2k.finish();
    for (batch_file &f : files) {
        if (!j2k.ran && !f.lossless)
            for (gpu_batch_frame &fr : f.gpu)
                if (!fr.decoded && fr.refusal.empty())
                    fr.refusal = j2k.why;
        gpu_event_free(f.ready);
        f.ready = nullptr;
    }
    time.decode = seconds_since(decode_start);

    const auto t2 = std::chrono::steady_clock::now();
    parallel_for(count, workers, [&](size_t i) {
        if (files[i].out->status == DH_DICOM_OK)
            complete(files[i], stream);
    });
    for (batch_file &f : files)
        if (f.out->status != DH_DICOM_OK)
            drop(*f.out, stream);
    time.fallback = seconds_since(t2);
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
