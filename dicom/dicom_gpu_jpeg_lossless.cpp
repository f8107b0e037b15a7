// SPDX-License-Identifier: MIT
/*
 * dicom_gpu_jpeg_lossless.cpp: JPEG lossless SV1 frames (1.2.840.10008.1.2.4.70) through nvJPEG's
 * lossless backend: which frames it may have (gpu_jpeg_lossless_admits, for this one-image path
 * and the batch of dicom_gpu_jpeg_lossless_batch.cpp), and one image's frames in one batched call
 * into one device buffer, then one copy to the host. Only what that backend was measured to
 * decode exactly is handed to it, and only in the batch into device memory with the nvJPEG
 * release measured there, or where DH_GPU_JPEG_LOSSLESS=1 asks (mode_asked): one component, a
 * lossless frame header (SOF3) of the dataset's size and a precision BitsAllocated holds, one scan
 * with predictor 1, no point transform and no restart interval, at least 64 KiB of code stream;
 * and precisions 9 to 15 only from nvJPEG 13.0.2 on, since earlier versions return zero-filled
 * images for them without an error. Everything else stays with DCMTK's decoder.
 */
#include "dicom_gpu.h"
#include "dicom_gpu_api.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dh_dicom_impl {

namespace {

/* DH_GPU_JPEG_LOSSLESS: "1" hands nvJPEG the frames measured exact (measured_exact); "0" keeps
 * JPEG lossless with DCMTK; "all" every frame the header checks pass, whatever its size or
 * restart interval, only to map a newer nvJPEG with bench/probe_sv1. Unset (or anything else):
 * measured_exact in the batch into device memory with the nvJPEG version measured there (the
 * batch read 240 frames at 3.4x to 3.8x DCMTK on 16 threads once its decode state was pooled,
 * bench/NOTES.md session 17), DCMTK otherwise (the one-file path, one call per file, and
 * versions not measured: refused_by_default). */
enum class lossless_mode { off, measured_exact, all };

/* The nvJPEG release whose lossless backend probe_sv1 mapped (13.3.2, sessions 16 and 17). */
constexpr int measured_release[2] = {13, 3};

lossless_mode mode_asked(const gpu_api &api, bool batch)
{
    const char *v = getenv("DH_GPU_JPEG_LOSSLESS");
    if (v != nullptr && strcmp(v, "1") == 0)
        return lossless_mode::measured_exact;
    if (v != nullptr && strcmp(v, "all") == 0)
        return lossless_mode::all;
    if (v != nullptr && strcmp(v, "0") == 0)
        return lossless_mode::off;
    const bool measured = api.jpeg_version[0] == measured_release[0] &&
                          api.jpeg_version[1] == measured_release[1];
    return batch && measured ? lossless_mode::measured_exact : lossless_mode::off;
}

/* nvJPEG versions before this decode 9 to 15-bit lossless streams to zeros. */
constexpr int twelve_bit_fix[3] = {13, 0, 2};

/* One call's stream, memory and decode state (from dicom_gpu_load.cpp's pool: making one costs
 * about 270 ms; given back once the stream is idle, or destroyed when the decode failed). */
struct lossless_call {
    const gpu_api &api;
    CUstream stream = nullptr;
    CUdeviceptr device = 0;
    gpu_lossless_state pooled;
    bool healthy = false;
    explicit lossless_call(const gpu_api &a) : api(a)
    {
    }
    ~lossless_call()
    {
        if (stream != nullptr)
            api.cuStreamSynchronize(stream);
        gpu_lossless_give(api, pooled, healthy);
        if (device != 0)
            api.cuMemFreeAsync(device, stream);
        if (stream != nullptr) {
            api.cuStreamSynchronize(stream);
            api.cuStreamDestroy(stream);
        }
    }
};

/* What the frame and scan headers of a JPEG stream say (zeros where absent). */
struct jpeg_header {
    unsigned sof = 0, precision = 0, rows = 0, columns = 0, components = 0;
    unsigned scans = 0, predictor = 0, point_transform = 0, scan_components = 0;
    unsigned restart_interval = 0; /* DRI before the scan; 0: none */
};

/* Walks the marker segments up to the first scan's data. */
jpeg_header read_header(const uint8_t *d, uint64_t n)
{
    jpeg_header h;
    uint64_t at = 2; /* after SOI */
    if (n < 4 || d[0] != 0xff || d[1] != 0xd8)
        return h;
    while (at + 4 <= n) {
        if (d[at] != 0xff)
            return h;
        const unsigned marker = d[at + 1];
        if (marker == 0xff) {
            at++;
            continue;
        }
        const uint64_t length = (uint64_t)d[at + 2] << 8 | d[at + 3];
        const uint8_t *seg = d + at + 4;
        if (length < 2 || at + 2 + length > n)
            return h;
        if (marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 &&
            marker != 0xcc && length >= 8) {
            h.sof = marker;
            h.precision = seg[0];
            h.rows = (unsigned)seg[1] << 8 | seg[2];
            h.columns = (unsigned)seg[3] << 8 | seg[4];
            h.components = seg[5];
        } else if (marker == 0xdd && length >= 4) {
            h.restart_interval = (unsigned)seg[0] << 8 | seg[1];
        } else if (marker == 0xda && length >= 6) {
            h.scans++;
            h.scan_components = seg[0];
            const uint64_t k = 1 + 2 * (uint64_t)seg[0];
            if (length >= 2 + k + 3) {
                h.predictor = seg[k];
                h.point_transform = seg[k + 2] & 0x0f;
            }
            return h; /* the entropy-coded data follows */
        }
        at += 2 + length;
    }
    return h;
}

std::string refusal(uint32_t f, const char *what)
{
    char text[200];
    snprintf(text, sizeof text, "nvJPEG lossless: frame %u %s", f + 1, what);
    return text;
}

/* nvJPEG 13.3.2's lossless backend on an H100 (bench/probe_sv1, 144 SV1 streams, each alone and
 * all in one batch; bench/NOTES.md "Session 16, sv1"): every stream with a restart interval came
 * out wrong without an error (zeros or garbage from the first sample on, 16x16 to 512x512), and
 * so did every stream without one in files up to 20.2 KB (16x16 to 100x100 at 8 and 16 bits,
 * 16x512, 97x61 12-bit: wrong from about the 20th to 50th sample on), and one of 24.2 KB inside
 * the batch (exact alone); every one in files from 24.9 KB on (160x160 8-bit to 2140x1760) was
 * exact, alone and in the batch. 64 KiB of code stream keeps a margin of 2.6 times the largest
 * failure. */
constexpr uint64_t smallest_exact_stream = 64 * 1024;

/* The one-file path (one call per file: 45 to 79 MB/s against DCMTK's 1058 to 1112 on 16 threads,
 * sessions 16 and 17) and nvJPEG versions not mapped keep JPEG lossless on DCMTK by default. */
const char *const refused_by_default =
    "JPEG lossless stays with DCMTK: nvJPEG's lossless backend is measured faster only in the "
    "batch into device memory with nvJPEG 13.3 (docs/batch.md; DH_GPU_JPEG_LOSSLESS=1 asks for it "
    "on the frames it decodes exactly)";

/* Whether nvJPEG's lossless backend was measured exact on frames like this one; false with the
 * reason otherwise. */
bool measured_exact(const jpeg_header &h, uint64_t length, uint32_t f, std::string &reason)
{
    if (h.restart_interval != 0)
        reason = refusal(f, "has restart intervals, which nvJPEG 13.3 decodes wrong");
    else if (length < smallest_exact_stream)
        reason = refusal(f, "is under 64 KiB of code stream, where nvJPEG 13.3 decodes wrong");
    return reason.empty();
}

/* A 16-bit frame header over fewer stored bits in 16-bit words, as DCMTK's dcmcjpeg writes for
 * 9 to 15-bit data: nvJPEG decodes such frames exactly (probe_sv1, session 17) to 16-bit words
 * whose bits above BitsStored the CPU read masks away, so the batch takes them only with the
 * mask kernel (dicom_gpu_mask.cpp) to do the same on the device. */
bool wide_header(const jpeg_header &h, const dh_dicom_image &img)
{
    return h.precision == 16 && img.format.bits_allocated == 16 && img.format.bits_stored < 16;
}

} // namespace

bool gpu_jpeg_lossless_admits(const gpu_api &api, const gpu_frame &frame, uint32_t f,
                              const dh_dicom_image &img, bool as_stored_values,
                              std::string &reason, bool *needs_mask)
{
    const lossless_mode mode = mode_asked(api, as_stored_values);
    if (needs_mask != nullptr)
        *needs_mask = false;
    if (mode == lossless_mode::off) {
        reason = refused_by_default;
        return false;
    }
    reason.clear();
    const jpeg_header h = read_header(frame.bytes, frame.length);
    if (h.sof != 0xc3 || h.scans != 1)
        reason = refusal(f, "is not a lossless (SOF3) stream with a scan header");
    else if (h.components != 1 || h.scan_components != 1)
        reason = refusal(f, "has more than one component");
    else if (h.rows != img.format.rows || h.columns != img.format.columns)
        reason = refusal(f, "has another size than the dataset");
    else if (h.precision < 2 || h.precision > 16 || h.precision > img.format.bits_allocated)
        reason = refusal(f, "has a precision BitsAllocated does not hold");
    else if (as_stored_values &&
             ((h.precision != img.format.bits_stored &&
               !(wide_header(h, img) && api.mask_u16 != nullptr && needs_mask != nullptr)) ||
              img.format.high_bit + 1 != img.format.bits_stored))
        reason = refusal(f, "needs the bit layout applied (precision not BitsStored, or HighBit "
                            "not BitsStored - 1)");
    else if (as_stored_values && img.format.is_signed)
        reason = refusal(f, "is signed (nvJPEG gives samples without their sign extended)");
    else if (h.predictor != 1 || h.point_transform != 0)
        reason = refusal(f, "is not first-order prediction without point transform");
    else if (h.precision > 8 && h.precision < 16 &&
             version_older(api.jpeg_version, twelve_bit_fix))
        reason = "nvJPEG before 13.0.2 returns zeros for 9 to 15-bit lossless JPEG";
    if (!reason.empty())
        return false;
    if (needs_mask != nullptr)
        *needs_mask = as_stored_values && h.precision != img.format.bits_stored;
    return mode == lossless_mode::all || measured_exact(h, frame.length, f, reason);
}

bool gpu_decode_jpeg_lossless(const std::vector<gpu_frame> &frames, const dh_dicom_image &img,
                              uint16_t *cells, std::string &reason)
{
    const gpu_api *api = gpu_api_get(reason);
    if (api == nullptr)
        return false;
    if (api->lossless == nullptr) {
        reason = api->jpeg_missing;
        return false;
    }
    for (uint32_t f = 0; f < frames.size(); f++)
        if (!gpu_jpeg_lossless_admits(*api, frames[f], f, img, false, reason))
            return false;
    gpu_context_scope scope(*api);
    if (!scope.pushed) {
        reason = "the GPU's context cannot be made current";
        return false;
    }
    const size_t frame_cells = (size_t)img.format.rows * img.format.columns;
    const size_t bytes = frame_cells * frames.size() * sizeof(uint16_t);
    lossless_call call(*api);
    CUresult r = api->cuStreamCreate(&call.stream, CU_STREAM_NON_BLOCKING);
    if (r == CUDA_SUCCESS)
        r = api->cuMemAllocAsync(&call.device, bytes, call.stream);
    if (r != CUDA_SUCCESS) {
        reason = cuda_error(*api, "cuStreamCreate/cuMemAllocAsync", r);
        return false;
    }
    if (!gpu_lossless_take(*api, call.pooled, reason))
        return false;
    std::vector<const unsigned char *> data(frames.size());
    std::vector<size_t> lengths(frames.size());
    std::vector<nvjpegImage_t> out(frames.size());
    for (uint32_t f = 0; f < frames.size(); f++) {
        int unsupported = 1;
        if (api->nvjpegJpegStreamParseHeader(api->lossless, frames[f].bytes, frames[f].length,
                                             call.pooled.parsed) != NVJPEG_STATUS_SUCCESS ||
            api->nvjpegDecodeBatchedSupported(api->lossless, call.pooled.parsed, &unsupported) !=
                NVJPEG_STATUS_SUCCESS ||
            unsupported != 0) {
            reason = refusal(f, "is not supported by nvJPEG's lossless backend");
            return false;
        }
        data[f] = frames[f].bytes;
        lengths[f] = frames[f].length;
        out[f] = nvjpegImage_t{};
        out[f].channel[0] =
            reinterpret_cast<unsigned char *>(call.device + f * frame_cells * sizeof(uint16_t));
        out[f].pitch[0] = (size_t)img.format.columns * sizeof(uint16_t);
    }
    nvjpegStatus_t s = api->nvjpegDecodeBatchedInitialize(
        api->lossless, call.pooled.state, (int)frames.size(), 1, NVJPEG_OUTPUT_UNCHANGEDI_U16);
    if (s == NVJPEG_STATUS_SUCCESS)
        s = api->nvjpegDecodeBatched(api->lossless, call.pooled.state, data.data(),
                                     lengths.data(), out.data(), call.stream);
    if (s != NVJPEG_STATUS_SUCCESS) {
        char text[96];
        snprintf(text, sizeof text, "nvJPEG's batched lossless decode failed (status %d)", (int)s);
        reason = text;
        return false;
    }
    call.healthy = copy_to_host(*api, cells, call.device, bytes, call.stream, reason);
    return call.healthy;
}

} // namespace dh_dicom_impl
