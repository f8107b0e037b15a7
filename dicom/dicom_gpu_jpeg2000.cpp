// SPDX-License-Identifier: MIT
/*
 * dicom_gpu_jpeg2000.cpp: JPEG 2000 and HTJ2K frames through nvJPEG2000. The CPU side
 * (dicom_jpeg2000.cpp) has already checked every code stream's SIZ header against the dataset and
 * scanned its packet data; here each is parsed again by nvJPEG2000, held to the same geometry,
 * and decoded into its place in one device buffer holding every frame, up to four frames in
 * flight on their own streams, then copied to the host once. The output type follows the stream's
 * sign (INT16 for signed samples, UINT16 otherwise), so each cell holds the sample's low 16 bits
 * exactly as OpenJPEG's path leaves them, for the dataset's bit layout to interpret the same way.
 */
#include "dicom_gpu.h"
#include "dicom_gpu_api.h"

#include <cstdio>
#include <memory>

namespace dh_dicom_impl {

namespace {

/* Frames in flight at once: each lane has its own stream, decode state and parsed stream, and a
 * lane is reused only after its previous frame finished (nvJPEG2000 reads its state and the
 * parsed stream while its work is queued), so up to this many frames overlap on the GPU. */
constexpr size_t lanes = 4;

/* The objects of one call, released whatever happens. */
struct j2k_call {
    const gpu_api &api;
    CUdeviceptr device = 0;
    CUstream stream[lanes] = {};
    nvjpeg2kDecodeState_t state[lanes] = {};
    nvjpeg2kStream_t parsed[lanes] = {};
    explicit j2k_call(const gpu_api &a) : api(a)
    {
    }
    ~j2k_call()
    {
        for (size_t i = 0; i < lanes; i++) {
            if (stream[i] != nullptr)
                api.cuStreamSynchronize(stream[i]);
            if (parsed[i] != nullptr)
                api.nvjpeg2kStreamDestroy(parsed[i]);
            if (state[i] != nullptr)
                api.nvjpeg2kDecodeStateDestroy(state[i]);
            if (stream[i] != nullptr)
                api.cuStreamDestroy(stream[i]);
        }
        if (device != 0)
            api.cuMemFree(device);
    }
};

std::string frame_reason(uint32_t f, const char *what, int status)
{
    char text[160];
    snprintf(text, sizeof text, "nvJPEG2000 %s frame %u (status %d)", what, f + 1, status);
    return text;
}

} // namespace

bool gpu_decode_jpeg2000(const std::vector<gpu_frame> &frames, const dh_dicom_image &img,
                         uint16_t *cells, std::string &reason)
{
    const gpu_api *api = gpu_api_get(reason);
    if (api == nullptr)
        return false;
    gpu_context_scope scope(*api);
    if (!scope.pushed) {
        reason = "the GPU's context cannot be made current";
        return false;
    }
    const size_t frame_cells = (size_t)img.format.rows * img.format.columns;
    const size_t bytes = frame_cells * frames.size() * sizeof(uint16_t);
    const size_t used = frames.size() < lanes ? frames.size() : lanes;
    j2k_call call(*api);
    CUresult r = api->cuMemAlloc(&call.device, bytes);
    for (size_t i = 0; i < used && r == CUDA_SUCCESS; i++)
        r = api->cuStreamCreate(&call.stream[i], CU_STREAM_NON_BLOCKING);
    if (r != CUDA_SUCCESS) {
        reason = cuda_error(*api, "cuMemAlloc/cuStreamCreate", r);
        return false;
    }
    for (size_t i = 0; i < used; i++)
        if (api->nvjpeg2kDecodeStateCreate(api->j2k, &call.state[i]) != NVJPEG2K_STATUS_SUCCESS ||
            api->nvjpeg2kStreamCreate(&call.parsed[i]) != NVJPEG2K_STATUS_SUCCESS) {
            reason = "nvJPEG2000's decode state cannot be created";
            return false;
        }
    for (uint32_t f = 0; f < frames.size(); f++) {
        const size_t lane = f % lanes;
        r = api->cuStreamSynchronize(call.stream[lane]); /* its previous frame is done */
        if (r != CUDA_SUCCESS) {
            reason = cuda_error(*api, "decoding on the GPU", r);
            return false;
        }
        nvjpeg2kStatus_t s = api->nvjpeg2kStreamParse(api->j2k, frames[f].bytes, frames[f].length,
                                                      0, 0, call.parsed[lane]);
        if (s != NVJPEG2K_STATUS_SUCCESS) {
            reason = frame_reason(f, "cannot parse", s);
            return false;
        }
        nvjpeg2kImageInfo_t info;
        nvjpeg2kImageComponentInfo_t comp;
        if (api->nvjpeg2kStreamGetImageInfo(call.parsed[lane], &info) != NVJPEG2K_STATUS_SUCCESS ||
            info.num_components != 1 ||
            api->nvjpeg2kStreamGetImageComponentInfo(call.parsed[lane], &comp, 0) !=
                NVJPEG2K_STATUS_SUCCESS ||
            comp.component_width != img.format.columns ||
            comp.component_height != img.format.rows || comp.precision == 0 ||
            comp.precision > 16) {
            reason = frame_reason(f, "reads another geometry or depth in", 0);
            return false;
        }
        void *plane = reinterpret_cast<void *>(call.device + f * frame_cells * sizeof(uint16_t));
        size_t pitch = (size_t)img.format.columns * sizeof(uint16_t);
        nvjpeg2kImage_t out;
        out.pixel_data = &plane;
        out.pitch_in_bytes = &pitch;
        out.pixel_type = comp.sgn ? NVJPEG2K_INT16 : NVJPEG2K_UINT16;
        out.num_components = 1;
        s = api->nvjpeg2kDecode(api->j2k, call.state[lane], call.parsed[lane], &out,
                                call.stream[lane]);
        if (s != NVJPEG2K_STATUS_SUCCESS) {
            reason = frame_reason(f, "failed on", s);
            return false;
        }
    }
    for (size_t i = 0; i < used; i++)
        if ((r = api->cuStreamSynchronize(call.stream[i])) != CUDA_SUCCESS) {
            reason = cuda_error(*api, "decoding on the GPU", r);
            return false;
        }
    return copy_to_host(*api, cells, call.device, bytes, call.stream[0], reason);
}

} // namespace dh_dicom_impl
