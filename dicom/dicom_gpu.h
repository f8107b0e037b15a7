// SPDX-License-Identifier: MIT
/*
 * dicom_gpu.h: NVIDIA's GPU decoders (nvJPEG2000 for JPEG 2000 and HTJ2K, nvJPEG's lossless
 * backend for JPEG lossless SV1), as the pixel decoders of this layer use them. Optional twice
 * over: built only where CMake found their headers (DH_GPU_CODECS), and used only where the
 * process can load them (dlopen) and a GPU answers. Every refusal or failure is a reason in
 * words, never an exception: the caller then decodes on the CPU, so a GPU problem can cost time
 * but never give a different image. Nothing here is seen from C.
 */
#ifndef DH_DICOM_GPU_H
#define DH_DICOM_GPU_H

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "dh_dicom.h"

namespace dh_dicom_impl {

/* One frame's code stream, already checked against the dataset by the CPU side. */
struct gpu_frame {
    const uint8_t *bytes;
    uint64_t length;
};

/* Whether the GPU decoders can run in this process; when not, why (a sentence). The libraries
 * are looked for once per process, the first time this is asked. */
bool gpu_decoders_usable(std::string &reason);

/* Whether that one look has finished (found or not); never waits for it and never starts it. */
bool gpu_decoders_settled();

/* Decodes every frame through nvJPEG2000 into cells (frames x rows x columns, each sample's low
 * 16 bits, as the OpenJPEG path leaves them), all frames into one device buffer (up to four in
 * flight), then one copy to the host. Returns false with the reason when it refused or failed;
 * cells are then undefined and the caller decodes on the CPU. */
bool gpu_decode_jpeg2000(const std::vector<gpu_frame> &frames, const dh_dicom_image &img,
                         uint16_t *cells, std::string &reason);

/* The same for JPEG lossless SV1 streams through nvJPEG's lossless backend, in one batch
 * (nvJPEG before 13.0.2 is refused for 9 to 15-bit samples: it returned zero-filled images). */
bool gpu_decode_jpeg_lossless(const std::vector<gpu_frame> &frames, const dh_dicom_image &img,
                              uint16_t *cells, std::string &reason);

/* ---- The batch across files (dicom_gpu_batch.cpp drives it, dicom_gpu_jpeg2000_batch.cpp) --- */

/* A device address (CUdeviceptr) as a plain integer, so this header needs no CUDA header. */
using device_ptr = unsigned long long;

/* One JPEG 2000 / HTJ2K frame of a batch: its checked code stream, its image, and where its
 * rows * columns stored values go in device memory. */
struct gpu_batch_frame {
    gpu_frame stream;
    const dh_dicom_image *img;
    uint32_t index; /* the frame's number in its file, for messages */
    device_ptr cells;
    /* A CUevent on the caller's stream after which cells exist (allocated there, or the caller's
     * work on its own memory done): the decode waits for it. Null: nothing to wait for. */
    void *ready = nullptr;
    bool decoded = false; /* nvJPEG2000 decoded it and the GPU finished without an error */
    std::string refusal;  /* otherwise why: the CPU then reads it */
};

/* The frames of a batch as they become ready: the threads parsing the files push each file's
 * frames as soon as that file is parsed, the GPU workers take them in that order, so the GPU
 * decodes the first files while the next ones are parsed. The frames must stay where they are
 * until the workers are done. */
class gpu_frame_feed {
public:
    void push(gpu_batch_frame *first, size_t n)
    {
        {
            std::lock_guard<std::mutex> hold(lock_);
            for (size_t i = 0; i < n; i++)
                queue_.push_back(first + i);
        }
        ready_.notify_all();
    }
    /* No frame comes any more: workers drain what is queued, then stop. */
    void close()
    {
        {
            std::lock_guard<std::mutex> hold(lock_);
            closed_ = true;
        }
        ready_.notify_all();
    }
    /* The next frame, waiting for one; null once closed and empty. */
    gpu_batch_frame *take()
    {
        std::unique_lock<std::mutex> hold(lock_);
        ready_.wait(hold, [this] { return closed_ || !queue_.empty(); });
        if (queue_.empty())
            return nullptr;
        gpu_batch_frame *f = queue_.front();
        queue_.pop_front();
        return f;
    }

private:
    std::mutex lock_;
    std::condition_variable ready_;
    std::deque<gpu_batch_frame *> queue_;
    bool closed_ = false;
};

/* Decodes every frame the feed brings with `workers` host threads, each parsing its next frame
 * while its previous one decodes (two lanes each: stream, decode state, parsed stream); each
 * decode waits for its frame's `ready` event. A frame whose code stream has another depth or sign
 * than the dataset's stored values is refused (its values would need the bit layout applied).
 * Returns once the feed is closed and drained and the GPU has finished; false with the reason
 * only when no worker could start (then it returns at once and takes nothing: frames left in the
 * feed are the caller's to refuse); each frame's own outcome is in the frame. */
bool gpu_decode_jpeg2000_batch(gpu_frame_feed &feed, unsigned workers, std::string &reason);

/* An event recorded on `stream` now (ready, for gpu_batch_frame), and its release. False with
 * the reason when it cannot be made. */
bool gpu_event_now(void *stream, void *&event, std::string &reason);
void gpu_event_free(void *event);

/* Decodes the JPEG lossless SV1 frames of a batch through nvJPEG's lossless backend, many frames
 * per call, into their cells, ordered on `stream` (the caller's) and finished on return. Each
 * frame is first checked (gpu_jpeg_lossless_admits, as stored values): one refused keeps its
 * reason and stays undecoded, for DCMTK. False with the reason only when nothing could start. */
bool gpu_decode_jpeg_lossless_batch(std::vector<gpu_batch_frame *> &frames, void *stream,
                                    std::string &reason);

/* Device memory on the caller's stream (stream-ordered, the device's default pool), its release,
 * and copies either way ordered on that stream (to the host: waited for). False with the
 * reason on failure. */
bool gpu_device_alloc(size_t bytes, void *stream, device_ptr &out, std::string &reason);
void gpu_device_free(device_ptr p, void *stream);
bool gpu_copy_to_device(device_ptr dst, const void *src, size_t bytes, void *stream,
                        std::string &reason);
bool gpu_copy_from_device(void *dst, device_ptr src, size_t bytes, void *stream,
                          std::string &reason);

} // namespace dh_dicom_impl

#endif /* DH_DICOM_GPU_H */
