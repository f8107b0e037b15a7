// SPDX-License-Identifier: MIT
/*
 * dicom_gpu_jpeg2000_batch.cpp: the frames of a whole batch of files through nvJPEG2000 at once.
 * The one-file path (dicom_gpu_jpeg2000.cpp) keeps at most four frames of one file in flight and
 * parses each on the calling thread between decodes; a series of small frames then leaves the
 * GPU idle most of the time (bench/NOTES.md, session 15). Here `workers` host threads share one
 * queue of every frame of the batch, fed while the files are still being parsed (gpu_frame_feed,
 * dicom_gpu.h), so the first files decode during the parse of the next. Each owns two lanes (stream, decode state, parsed stream,
 * from the pool of dicom_gpu_load.cpp) and alternates between them: it parses frame n+1 on the
 * CPU while frame n decodes on the GPU, and waits for a lane only before reusing it (nvJPEG2000
 * reads the state and the parsed stream while its work is queued). nvJPEG2000's handle is shared
 * (thread-safe by its guide); its memory comes from dicom_gpu_memory.cpp's pool, so no worker's
 * allocation waits for the whole device.
 */
#include "dicom_gpu.h"
#include "dicom_gpu_api.h"

#include <system_error>
#include <thread>

namespace dh_dicom_impl {

namespace {

constexpr size_t lanes_per_worker = 2;

/* What all workers share: the feed of frames. */
struct batch_queue {
    const gpu_api &api;
    gpu_frame_feed &feed;
};

/* A frame decodes straight into its stored values only when the code stream's samples are the
 * dataset's: BitsStored bits from bit 0 (HighBit = BitsStored - 1), of its sign. Anything else
 * needs the bit layout applied (dicom_pixels.cpp) and is left to the CPU. */
bool stored_values_as_decoded(const nvjpeg2kImageComponentInfo_t &comp, const dh_dicom_image &img)
{
    return comp.precision == img.format.bits_stored &&
           img.format.high_bit + 1 == img.format.bits_stored &&
           (comp.sgn != 0) == (img.format.is_signed != 0);
}

/* Waits for the lane's frame in flight, if any, and records its outcome: false when the GPU
 * reported a failure. */
bool finish(const gpu_api &api, gpu_lane &lane, gpu_batch_frame *&in_flight)
{
    if (in_flight == nullptr)
        return true;
    const CUresult r = api.cuStreamSynchronize(lane.stream);
    in_flight->decoded = r == CUDA_SUCCESS;
    if (r != CUDA_SUCCESS)
        in_flight->refusal = cuda_error(api, "decoding on the GPU", r);
    in_flight = nullptr;
    return r == CUDA_SUCCESS;
}

/* Queues frame fr on lane. False with fr.refusal set when nvJPEG2000 refused it; `broken` too
 * when the decode itself failed (the lane's state is then not trusted again). */
bool start(const gpu_api &api, gpu_batch_frame &fr, gpu_lane &lane, bool &broken)
{
    if (fr.ready != nullptr) {
        const CUresult r = api.cuStreamWaitEvent(lane.stream, static_cast<CUevent>(fr.ready), 0);
        if (r != CUDA_SUCCESS) {
            fr.refusal = cuda_error(api, "cuStreamWaitEvent", r);
            broken = true;
            return false;
        }
    }
    nvjpeg2kImageComponentInfo_t comp;
    if (!parse_j2k_frame(api, fr.stream, fr.index, *fr.img, lane, comp, fr.refusal))
        return false;
    if (!stored_values_as_decoded(comp, *fr.img)) {
        fr.refusal = frame_reason(fr.index, "holds another depth or sign than the dataset in", 0);
        return false;
    }
    void *plane = reinterpret_cast<void *>(fr.cells);
    size_t pitch = (size_t)fr.img->format.columns * sizeof(uint16_t);
    nvjpeg2kImage_t out;
    out.pixel_data = &plane;
    out.pitch_in_bytes = &pitch;
    out.pixel_type = comp.sgn != 0 ? NVJPEG2K_INT16 : NVJPEG2K_UINT16;
    out.num_components = 1;
    const nvjpeg2kStatus_t s = api.nvjpeg2kDecode(api.j2k, lane.state, lane.parsed, &out,
                                                  reinterpret_cast<cudaStream_t>(lane.stream));
    if (s != NVJPEG2K_STATUS_SUCCESS) {
        fr.refusal = frame_reason(fr.index, "failed on", s);
        broken = true;
        return false;
    }
    return true;
}

/* One worker: it takes frames from the feed until it is closed and empty or one of its lanes
 * failed (then it stops, its lanes are destroyed rather than pooled, and the others take the
 * rest; frames no worker took stay undecoded, for the CPU). */
void work(batch_queue &q, std::vector<gpu_lane> lanes)
{
    const gpu_api &api = q.api;
    gpu_context_scope scope(api);
    gpu_batch_frame *in_flight[lanes_per_worker] = {};
    bool healthy = scope.pushed;
    for (size_t turn = 0; healthy; turn++) {
        const size_t l = turn % lanes_per_worker;
        if (!(healthy = finish(api, lanes[l], in_flight[l])))
            break;
        gpu_batch_frame *fr = q.feed.take();
        if (fr == nullptr)
            break;
        bool broken = false;
        if (start(api, *fr, lanes[l], broken))
            in_flight[l] = fr;
        healthy = !broken;
    }
    for (size_t l = 0; l < lanes.size(); l++)
        healthy = finish(api, lanes[l], in_flight[l]) && healthy;
    gpu_lanes_give(api, lanes, healthy);
}

} // namespace

bool gpu_decode_jpeg2000_batch(gpu_frame_feed &feed, unsigned workers, std::string &reason)
{
    std::optional<gpu_context_scope> scope;
    const gpu_api *api = gpu_api_current(scope, reason);
    if (api == nullptr)
        return false;
    batch_queue q{*api, feed};
    std::vector<std::vector<gpu_lane>> lanes(workers);
    for (unsigned w = 0; w < workers; w++)
        if (!gpu_lanes_take(*api, lanes_per_worker, lanes[w], reason)) {
            workers = w; /* fewer workers: the lanes there are */
            break;
        }
    std::vector<std::thread> threads;
    threads.reserve(workers);
    /* The lanes move into a worker only once its thread runs: one that cannot start (EAGAIN)
     * gives its lanes back, and the workers started take its frames (an exception out of here
     * would destroy them joinable, and std::terminate end the host). */
    for (unsigned w = 0; w < workers; w++) {
        try {
            threads.emplace_back([&q, &lanes, w] { work(q, std::move(lanes[w])); });
        } catch (const std::system_error &e) {
            reason = std::string("cannot start a GPU decode thread: ") + e.what();
            for (unsigned rest = w; rest < workers; rest++)
                gpu_lanes_give(*api, lanes[rest], true);
            break;
        }
    }
    for (std::thread &t : threads)
        t.join();
    return !threads.empty();
}

bool gpu_event_now(void *stream, void *&event, std::string &reason)
{
    event = nullptr;
    std::optional<gpu_context_scope> scope;
    const gpu_api *api = gpu_api_current(scope, reason);
    if (api == nullptr)
        return false;
    CUevent e = nullptr;
    CUresult r = api->cuEventCreate(&e, CU_EVENT_DISABLE_TIMING);
    if (r == CUDA_SUCCESS)
        r = api->cuEventRecord(e, static_cast<CUstream>(stream));
    if (r != CUDA_SUCCESS) {
        if (e != nullptr)
            api->cuEventDestroy(e);
        reason = cuda_error(*api, "cuEventRecord on the caller's stream", r);
        return false;
    }
    event = e;
    return true;
}

void gpu_event_free(void *event)
{
    std::string reason;
    std::optional<gpu_context_scope> scope;
    const gpu_api *api = event != nullptr ? gpu_api_current(scope, reason) : nullptr;
    if (api != nullptr)
        api->cuEventDestroy(static_cast<CUevent>(event)); /* released once it has completed */
}

bool gpu_device_alloc(size_t bytes, void *stream, device_ptr &out, std::string &reason)
{
    std::optional<gpu_context_scope> scope;
    const gpu_api *api = gpu_api_current(scope, reason);
    if (api == nullptr)
        return false;
    CUdeviceptr p = 0;
    const CUresult r = api->cuMemAllocAsync(&p, bytes, static_cast<CUstream>(stream));
    if (r != CUDA_SUCCESS) {
        reason = cuda_error(*api, "cuMemAllocAsync", r);
        return false;
    }
    out = p;
    return true;
}

void gpu_device_free(device_ptr p, void *stream)
{
    std::string reason;
    std::optional<gpu_context_scope> scope;
    const gpu_api *api = p != 0 ? gpu_api_current(scope, reason) : nullptr;
    if (api == nullptr)
        return;
    api->cuMemFreeAsync(p, static_cast<CUstream>(stream));
}

bool gpu_copy_to_device(device_ptr dst, const void *src, size_t bytes, void *stream,
                        std::string &reason)
{
    std::optional<gpu_context_scope> scope;
    const gpu_api *api = gpu_api_current(scope, reason);
    if (api == nullptr)
        return false;
    /* From pageable memory: returns once src is staged, so the caller may free it. */
    const CUresult r = api->cuMemcpyHtoDAsync(dst, src, bytes, static_cast<CUstream>(stream));
    if (r != CUDA_SUCCESS)
        reason = cuda_error(*api, "copying to the GPU", r);
    return r == CUDA_SUCCESS;
}

bool gpu_copy_from_device(void *dst, device_ptr src, size_t bytes, void *stream,
                          std::string &reason)
{
    std::optional<gpu_context_scope> scope;
    const gpu_api *api = gpu_api_current(scope, reason);
    if (api == nullptr)
        return false;
    return copy_to_host(*api, dst, src, bytes, static_cast<CUstream>(stream), reason);
}

} // namespace dh_dicom_impl
