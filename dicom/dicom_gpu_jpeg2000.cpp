// SPDX-License-Identifier: MIT
/*
 * dicom_gpu_jpeg2000.cpp: JPEG 2000 and HTJ2K frames through nvJPEG2000. The CPU side
 * (dicom_jpeg2000.cpp) has already checked every code stream's SIZ header against the dataset and
 * scanned its packet data; here each is parsed again by nvJPEG2000, held to the same geometry,
 * and decoded into its place in one device buffer holding every frame, up to four frames in
 * flight on their own streams (lanes kept between calls), then copied to the host once. The output type follows the stream's
 * sign (INT16 for signed samples, UINT16 otherwise), so each cell holds the sample's low 16 bits
 * exactly as OpenJPEG's path leaves them, for the dataset's bit layout to interpret the same way.
 */
#include "dicom_gpu.h"
#include "dicom_gpu_api.h"

#include <cstdio>
#include <memory>

namespace dh_dicom_impl {

namespace {

/* Frames in flight at once: each has a lane of its own (stream, decode state, parsed stream,
 * from the pool of dicom_gpu_load.cpp), and a lane is reused only after its previous frame
 * finished (nvJPEG2000 reads its state and the parsed stream while its work is queued). */
constexpr size_t lanes_per_call = 4;

/* The lanes and the device buffer of one call, released whatever happens: lanes go back to the
 * pool only after a call that succeeded. */
struct j2k_call {
    const gpu_api &api;
    std::vector<gpu_lane> lanes;
    CUdeviceptr device = 0;
    bool healthy = false;
    explicit j2k_call(const gpu_api &a) : api(a) {}
    ~j2k_call()
    {
        for (const gpu_lane &lane : lanes) /* no frame still writing into device */
            api.cuStreamSynchronize(lane.stream);
        if (device != 0)
            api.cuMemFreeAsync(device, lanes[0].stream);
        gpu_lanes_give(api, lanes, healthy);
    }
};

} // namespace

std::string frame_reason(uint32_t f, const char *what, int status)
{
    char text[160];
    snprintf(text, sizeof text, "nvJPEG2000 %s frame %u (status %d)", what, f + 1, status);
    return text;
}

bool parse_j2k_frame(const gpu_api &api, const gpu_frame &frame, uint32_t f,
                     const dh_dicom_image &img, gpu_lane &lane,
                     nvjpeg2kImageComponentInfo_t &comp, std::string &reason)
{
    nvjpeg2kStatus_t s =
        api.nvjpeg2kStreamParse(api.j2k, frame.bytes, frame.length, 0, 0, lane.parsed);
    if (s != NVJPEG2K_STATUS_SUCCESS) {
        reason = frame_reason(f, "cannot parse", s);
        return false;
    }
    nvjpeg2kImageInfo_t info;
    if (api.nvjpeg2kStreamGetImageInfo(lane.parsed, &info) != NVJPEG2K_STATUS_SUCCESS ||
        info.num_components != 1 ||
        api.nvjpeg2kStreamGetImageComponentInfo(lane.parsed, &comp, 0) !=
            NVJPEG2K_STATUS_SUCCESS ||
        comp.component_width != img.format.columns || comp.component_height != img.format.rows ||
        comp.precision == 0 || comp.precision > 16) {
        reason = frame_reason(f, "reads another geometry or depth in", 0);
        return false;
    }
    return true;
}

bool gpu_decode_jpeg2000(const std::vector<gpu_frame> &frames, const dh_dicom_image &img,
                         uint16_t *cells, std::string &reason)
{
    std::optional<gpu_context_scope> scope;
    const gpu_api *api = gpu_api_current(scope, reason);
    if (api == nullptr)
        return false;
    const size_t frame_cells = (size_t)img.format.rows * img.format.columns;
    const size_t bytes = frame_cells * frames.size() * sizeof(uint16_t);
    j2k_call call(*api);
    const size_t used = frames.size() < lanes_per_call ? frames.size() : lanes_per_call;
    if (!gpu_lanes_take(*api, used, call.lanes, reason))
        return false;
    /* Stream-ordered: no device-wide synchronization on allocation or release. Made on lane 0
     * and waited for there, so every lane may write into it. */
    CUresult r = api->cuMemAllocAsync(&call.device, bytes, call.lanes[0].stream);
    if (r == CUDA_SUCCESS)
        r = api->cuStreamSynchronize(call.lanes[0].stream);
    if (r != CUDA_SUCCESS) {
        reason = cuda_error(*api, "cuMemAllocAsync", r);
        return false;
    }
    for (uint32_t f = 0; f < frames.size(); f++) {
        gpu_lane &lane = call.lanes[f % used];
        r = api->cuStreamSynchronize(lane.stream); /* its previous frame is done */
        if (r != CUDA_SUCCESS) {
            reason = cuda_error(*api, "decoding on the GPU", r);
            return false;
        }
        nvjpeg2kImageComponentInfo_t comp;
        if (!parse_j2k_frame(*api, frames[f], f, img, lane, comp, reason))
            return false;
        const bool is_signed = comp.sgn != 0;
        void *plane = reinterpret_cast<void *>(call.device + f * frame_cells * sizeof(uint16_t));
        size_t pitch = (size_t)img.format.columns * sizeof(uint16_t);
        nvjpeg2kImage_t out;
        out.pixel_data = &plane;
        out.pitch_in_bytes = &pitch;
        out.pixel_type = is_signed ? NVJPEG2K_INT16 : NVJPEG2K_UINT16;
        out.num_components = 1;
        const nvjpeg2kStatus_t s =
            api->nvjpeg2kDecode(api->j2k, lane.state, lane.parsed, &out, lane.stream);
        if (s != NVJPEG2K_STATUS_SUCCESS) {
            reason = frame_reason(f, "failed on", s);
            return false;
        }
    }
    for (size_t i = 1; i < used; i++)
        if ((r = api->cuStreamSynchronize(call.lanes[i].stream)) != CUDA_SUCCESS) {
            reason = cuda_error(*api, "decoding on the GPU", r);
            return false;
        }
    call.healthy = copy_to_host(*api, cells, call.device, bytes, call.lanes[0].stream, reason);
    return call.healthy;
}

} // namespace dh_dicom_impl
