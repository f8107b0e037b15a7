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

#include <cstddef>
#include <cstdint>
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

} // namespace dh_dicom_impl

#endif /* DH_DICOM_GPU_H */
