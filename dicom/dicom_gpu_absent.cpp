// SPDX-License-Identifier: MIT
/*
 * dicom_gpu_absent.cpp: the GPU decoders of a build configured without NVIDIA's headers
 * (DH_GPU_CODECS unset): every read decodes on the CPU, and this is the reason it reports.
 */
#include "dicom_gpu.h"

namespace dh_dicom_impl {

namespace {
const char *const not_built = "built without GPU decoders (configure with "
                              "-DDH_GPU_CODECS=<folder from tools/fetch-gpu-codecs>)";
}

bool gpu_decoders_usable(std::string &reason)
{
    reason = not_built;
    return false;
}

bool gpu_decoders_settled()
{
    return true; /* nothing to load */
}

bool gpu_decode_jpeg2000(const std::vector<gpu_frame> &, const dh_dicom_image &, uint16_t *,
                         std::string &reason)
{
    return gpu_decoders_usable(reason);
}

bool gpu_decode_jpeg_lossless(const std::vector<gpu_frame> &, const dh_dicom_image &, uint16_t *,
                              std::string &reason)
{
    return gpu_decoders_usable(reason);
}

bool gpu_decode_jpeg2000_batch(gpu_frame_feed &, unsigned, std::string &reason)
{
    return gpu_decoders_usable(reason);
}

bool gpu_decode_jpeg_lossless_batch(std::vector<gpu_batch_frame *> &, void *, std::string &reason)
{
    return gpu_decoders_usable(reason);
}

bool gpu_event_now(void *, void *&event, std::string &reason)
{
    event = nullptr;
    return gpu_decoders_usable(reason);
}

void gpu_event_free(void *) {}

bool gpu_device_alloc(size_t, void *, device_ptr &, std::string &reason)
{
    return gpu_decoders_usable(reason);
}

void gpu_device_free(device_ptr, void *) {}

bool gpu_copy_to_device(device_ptr, const void *, size_t, void *, std::string &reason)
{
    return gpu_decoders_usable(reason);
}

bool gpu_copy_from_device(void *, device_ptr, size_t, void *, std::string &reason)
{
    return gpu_decoders_usable(reason);
}

} // namespace dh_dicom_impl
