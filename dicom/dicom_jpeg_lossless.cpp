// SPDX-License-Identifier: MIT
/*
 * dicom_jpeg_lossless.cpp: the frames of JPEG lossless SV1 pixel data (1.2.840.10008.1.2.4.70)
 * gathered for the GPU decoder (dicom_gpu_jpeg_lossless.cpp); DCMTK's own decoder reads them on
 * the CPU and stays the reference. Fragments are found as for JPEG-LS (PS3.5 A.4, each frame
 * starting with SOI), and a stream must end with its EOI: DCMTK's decoder reports one cut short,
 * while a GPU decoder might fill in the missing part without a word.
 */
#include "dicom_internal.h"

#include "dicom_gpu.h"

namespace dh_dicom_impl {

namespace {
const frame_marker soi_lossless = {"JPEG lossless", "SOI", {0xff, 0xd8, 0xff}, 3};
}

std::vector<gpu_frame> jpeg_lossless_gpu_frames(DcmPixelSequence &seq, const dh_dicom_image &img,
                                                std::vector<std::vector<Uint8>> &joined,
                                                std::string &reason)
{
    const std::vector<fragment> items = fragment_list(seq);
    std::vector<size_t> starts;
    try {
        starts = frame_starts(items, img.frames, soi_lossless);
    } catch (const failure &why) { /* DCMTK finds frames its own way: let it try */
        reason = why.reason;
        return {};
    }
    joined.assign(img.frames, {});
    std::vector<gpu_frame> frames(img.frames);
    for (uint32_t f = 0; f < img.frames; f++) {
        std::vector<Uint8> &j = joined[f];
        join_fragments(items, starts[f], starts[f + 1], j);
        size_t n = j.size();
        if (n > 0 && j[n - 1] == 0x00) /* the fragment's padding to an even length */
            n--;
        if (n < 4 || j[n - 2] != 0xff || j[n - 1] != 0xd9) {
            reason = "frame " + std::to_string(f + 1) + " ends without an EOI marker";
            return {};
        }
        frames[f] = gpu_frame{j.data(), n};
    }
    return frames;
}

bool decode_jpeg_lossless_gpu(DcmPixelSequence &seq, const dh_dicom_image &img, uint16_t *cells,
                              std::string &reason)
{
    std::vector<std::vector<Uint8>> joined;
    const std::vector<gpu_frame> frames = jpeg_lossless_gpu_frames(seq, img, joined, reason);
    return !frames.empty() && gpu_decode_jpeg_lossless(frames, img, cells, reason);
}

} // namespace dh_dicom_impl
