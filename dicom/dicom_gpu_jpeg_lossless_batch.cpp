// SPDX-License-Identifier: MIT
/*
 * dicom_gpu_jpeg_lossless_batch.cpp: the JPEG lossless SV1 frames of a whole batch of files
 * through nvJPEG's lossless backend, straight into their stored values in device memory. That
 * backend has only the batched API, and its throughput comes from many frames per call (one
 * file's frames per call, the one-file path, read 62 MB/s on 16 threads: bench/NOTES.md, session
 * 14), so every admitted frame of the batch goes into as few nvjpegDecodeBatched calls as its
 * size allows, ordered on the caller's stream after the allocation of the cells.
 */
#include "dicom_gpu.h"
#include "dicom_gpu_api.h"

#include <cstdio>

namespace dh_dicom_impl {

namespace {

/* Frames per nvjpegDecodeBatched call: the backend's buffers grow with the batch (its state holds
 * the whole call's coded data and intermediates), so a batch of thousands is cut into calls. */
constexpr size_t frames_per_call = 256;

/* The pooled state of dicom_gpu_load.cpp for one batch: taken on the first admitted frame, given
 * back at the end (destroyed instead when a call failed: it is not trusted again). */
struct jpeg_state {
    const gpu_api &api;
    gpu_lossless_state pooled;
    bool healthy = true;
    nvjpegJpegState_t &state = pooled.state;
    nvjpegJpegStream_t &parsed = pooled.parsed;
    explicit jpeg_state(const gpu_api &a) : api(a)
    {
    }
    ~jpeg_state()
    {
        gpu_lossless_give(api, pooled, healthy);
    }
};

std::string status_text(const char *what, int status)
{
    char text[120];
    snprintf(text, sizeof text, "nvJPEG lossless: %s (status %d)", what, status);
    return text;
}

/* One call over the frames the checks admitted; marks them decoded once the GPU finished without
 * an error, else gives each the reason. */
void decode_call(const gpu_api &api, jpeg_state &js, std::vector<gpu_batch_frame *> &call,
                 const std::vector<bool> &mask, CUstream stream)
{
    std::vector<const unsigned char *> data(call.size());
    std::vector<size_t> lengths(call.size());
    std::vector<nvjpegImage_t> out(call.size());
    for (size_t i = 0; i < call.size(); i++) {
        data[i] = call[i]->stream.bytes;
        lengths[i] = call[i]->stream.length;
        out[i] = nvjpegImage_t{};
        out[i].channel[0] = reinterpret_cast<unsigned char *>(call[i]->cells);
        out[i].pitch[0] = (size_t)call[i]->img->format.columns * sizeof(uint16_t);
    }
    nvjpegStatus_t s = api.nvjpegDecodeBatchedInitialize(api.lossless, js.state, (int)call.size(),
                                                         1, NVJPEG_OUTPUT_UNCHANGEDI_U16);
    if (s == NVJPEG_STATUS_SUCCESS)
        s = api.nvjpegDecodeBatched(api.lossless, js.state, data.data(), lengths.data(),
                                    out.data(), reinterpret_cast<cudaStream_t>(stream));
    std::string why;
    if (s != NVJPEG_STATUS_SUCCESS)
        why = status_text("the batched decode failed", (int)s);
    /* 16-bit headers over fewer stored bits: the words masked to BitsStored, as the CPU read */
    for (size_t i = 0; why.empty() && i < call.size(); i++)
        if (mask[i])
            gpu_mask_to_bits(api, call[i]->cells,
                             (size_t)call[i]->img->format.rows * call[i]->img->format.columns,
                             call[i]->img->format.bits_stored, stream, why);
    const CUresult r = api.cuStreamSynchronize(stream); /* before the state is pooled again */
    if (why.empty() && r != CUDA_SUCCESS)
        why = cuda_error(api, "decoding on the GPU", r);
    js.healthy = js.healthy && why.empty();
    for (gpu_batch_frame *fr : call) {
        fr->decoded = why.empty();
        fr->refusal = why;
    }
}

} // namespace

bool gpu_decode_jpeg_lossless_batch(std::vector<gpu_batch_frame *> &frames, void *stream,
                                    std::string &reason)
{
    if (frames.empty()) /* no SV1 in the batch: nothing of nvJPEG's to touch */
        return true;
    std::optional<gpu_context_scope> scope;
    const gpu_api *api = gpu_api_current(scope, reason);
    if (api == nullptr)
        return false;
    if (api->lossless == nullptr) {
        reason = api->jpeg_missing;
        return false;
    }
    /* A state costs about 270 ms to create (measured on an H100): taken from the pool, made
     * only once a frame is admitted and none is idle. */
    jpeg_state js(*api);
    std::string no_state;
    const auto make_state = [&] {
        return js.state != nullptr || gpu_lossless_take(*api, js.pooled, no_state);
    };
    const CUstream s = static_cast<CUstream>(stream);
    std::vector<gpu_batch_frame *> call;
    std::vector<bool> mask; /* call[i] needs its words masked to BitsStored */
    const auto flush = [&] {
        if (!call.empty())
            decode_call(*api, js, call, mask, s);
        call.clear();
        mask.clear();
    };
    for (gpu_batch_frame *frame : frames) {
        gpu_batch_frame &fr = *frame;
        int unsupported = 1;
        bool needs_mask = false;
        if (!gpu_jpeg_lossless_admits(*api, fr.stream, fr.index, *fr.img, true, fr.refusal,
                                      &needs_mask))
            continue;
        if (!make_state()) {
            fr.refusal = no_state;
            continue;
        }
        const nvjpegStatus_t p = api->nvjpegJpegStreamParseHeader(
            api->lossless, fr.stream.bytes, fr.stream.length, js.parsed);
        if (p != NVJPEG_STATUS_SUCCESS ||
            api->nvjpegDecodeBatchedSupported(api->lossless, js.parsed, &unsupported) !=
                NVJPEG_STATUS_SUCCESS ||
            unsupported != 0) {
            fr.refusal = status_text("the backend does not take this frame", (int)p);
            continue;
        }
        call.push_back(&fr);
        mask.push_back(needs_mask);
        if (call.size() == frames_per_call)
            flush();
    }
    flush();
    return true;
}

} // namespace dh_dicom_impl
