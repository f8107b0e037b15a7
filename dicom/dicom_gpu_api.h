// SPDX-License-Identifier: MIT
/*
 * dicom_gpu_api.h: the functions of the CUDA driver, nvJPEG2000 and nvJPEG that the GPU decoders
 * call, as pointers found with dlsym (dicom_gpu_load.cpp), so the library links none of them and
 * runs where they are absent. The driver API (libcuda.so.1, present wherever an NVIDIA driver
 * is) rather than the CUDA runtime: the decoders carry their own runtime statically and share the
 * device's primary context with it, so no libcudart of a matching version has to be found.
 * Built only with DH_GPU_CODECS (their headers); dicom_gpu_absent.cpp stands in otherwise.
 */
#ifndef DH_DICOM_GPU_API_H
#define DH_DICOM_GPU_API_H

#include <optional>
#include <string>
#include <vector>

#include "dicom_gpu.h"

#include <cuda.h>
#include <nvjpeg.h>
#include <nvjpeg2k.h>

namespace dh_dicom_impl {

struct gpu_api {
    /* CUDA driver */
    CUresult (*cuInit)(unsigned);
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*cuCtxPushCurrent)(CUcontext);
    CUresult (*cuCtxPopCurrent)(CUcontext *);
    CUresult (*cuStreamCreate)(CUstream *, unsigned);
    CUresult (*cuStreamDestroy)(CUstream);
    CUresult (*cuStreamSynchronize)(CUstream);
    CUresult (*cuMemAllocAsync)(CUdeviceptr *, size_t, CUstream);
    CUresult (*cuMemFreeAsync)(CUdeviceptr, CUstream);
    CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*cuGetErrorString)(CUresult, const char **);
    /* the batch (dicom_gpu_jpeg2000_batch.cpp) and nvJPEG2000's memory (dicom_gpu_memory.cpp) */
    CUresult (*cuEventCreate)(CUevent *, unsigned);
    CUresult (*cuEventDestroy)(CUevent);
    CUresult (*cuEventRecord)(CUevent, CUstream);
    CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
    CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*cuMemPoolCreate)(CUmemoryPool *, const CUmemPoolProps *);
    CUresult (*cuMemPoolSetAttribute)(CUmemoryPool, CUmemPool_attribute, void *);
    CUresult (*cuMemAllocFromPoolAsync)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
    CUresult (*cuMemHostAlloc)(void **, size_t, unsigned);
    CUresult (*cuMemFreeHost)(void *);
    /* the mask kernel (dicom_gpu_mask.cpp) */
    CUresult (*cuModuleLoadData)(CUmodule *, const void *);
    CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, unsigned, CUstream, void **, void **);

    /* nvJPEG2000 */
    nvjpeg2kStatus_t (*nvjpeg2kGetProperty)(libraryPropertyType, int *);
    nvjpeg2kStatus_t (*nvjpeg2kCreateSimple)(nvjpeg2kHandle_t *);
    nvjpeg2kStatus_t (*nvjpeg2kDecodeStateCreate)(nvjpeg2kHandle_t, nvjpeg2kDecodeState_t *);
    nvjpeg2kStatus_t (*nvjpeg2kDecodeStateDestroy)(nvjpeg2kDecodeState_t);
    nvjpeg2kStatus_t (*nvjpeg2kStreamCreate)(nvjpeg2kStream_t *);
    nvjpeg2kStatus_t (*nvjpeg2kStreamDestroy)(nvjpeg2kStream_t);
    nvjpeg2kStatus_t (*nvjpeg2kStreamParse)(nvjpeg2kHandle_t, const unsigned char *, size_t, int,
                                            int, nvjpeg2kStream_t);
    nvjpeg2kStatus_t (*nvjpeg2kStreamGetImageInfo)(nvjpeg2kStream_t, nvjpeg2kImageInfo_t *);
    nvjpeg2kStatus_t (*nvjpeg2kStreamGetImageComponentInfo)(nvjpeg2kStream_t,
                                                            nvjpeg2kImageComponentInfo_t *,
                                                            uint32_t);
    nvjpeg2kStatus_t (*nvjpeg2kDecode)(nvjpeg2kHandle_t, nvjpeg2kDecodeState_t, nvjpeg2kStream_t,
                                       nvjpeg2kImage_t *, cudaStream_t);
    nvjpeg2kStatus_t (*nvjpeg2kCreateV2)(nvjpeg2kBackend_t, nvjpeg2kDeviceAllocatorV2_t *,
                                         nvjpeg2kPinnedAllocatorV2_t *, nvjpeg2kHandle_t *);
    nvjpeg2kStatus_t (*nvjpeg2kSetDeviceMemoryPadding)(size_t, nvjpeg2kHandle_t);
    nvjpeg2kStatus_t (*nvjpeg2kSetPinnedMemoryPadding)(size_t, nvjpeg2kHandle_t);

    /* nvJPEG (lossless backend); null when libnvjpeg is absent, which only costs .70 */
    nvjpegStatus_t (*nvjpegGetProperty)(libraryPropertyType, int *);
    nvjpegStatus_t (*nvjpegCreateEx)(nvjpegBackend_t, nvjpegDevAllocator_t *,
                                     nvjpegPinnedAllocator_t *, unsigned, nvjpegHandle_t *);
    nvjpegStatus_t (*nvjpegJpegStateCreate)(nvjpegHandle_t, nvjpegJpegState_t *);
    nvjpegStatus_t (*nvjpegJpegStateDestroy)(nvjpegJpegState_t);
    nvjpegStatus_t (*nvjpegJpegStreamCreate)(nvjpegHandle_t, nvjpegJpegStream_t *);
    nvjpegStatus_t (*nvjpegJpegStreamDestroy)(nvjpegJpegStream_t);
    nvjpegStatus_t (*nvjpegJpegStreamParseHeader)(nvjpegHandle_t, const unsigned char *, size_t,
                                                  nvjpegJpegStream_t);
    nvjpegStatus_t (*nvjpegDecodeBatchedSupported)(nvjpegHandle_t, nvjpegJpegStream_t, int *);
    nvjpegStatus_t (*nvjpegDecodeBatchedInitialize)(nvjpegHandle_t, nvjpegJpegState_t, int, int,
                                                    nvjpegOutputFormat_t);
    nvjpegStatus_t (*nvjpegDecodeBatched)(nvjpegHandle_t, nvjpegJpegState_t,
                                          const unsigned char *const *, const size_t *,
                                          nvjpegImage_t *, cudaStream_t);

    /* Made once with the libraries, used by every decode (each call has its own state and
     * stream; nvJPEG2000's guide asks for one decode state and parsed stream per thread, the handle may be shared). */
    CUcontext context;
    CUdevice device;
    nvjpeg2kHandle_t j2k;
    /* How nvJPEG2000 gets its memory: "pool" (a stream-ordered device pool of our own and padded
     * pinned buffers, dicom_gpu_memory.cpp) or "default" (its cudaMalloc / cudaHostAlloc). */
    const char *j2k_memory;
    CUmemoryPool j2k_pool;
    int j2k_version[3];
    nvjpegHandle_t lossless; /* null: nvJPEG or its lossless backend is unavailable */
    CUfunction mask_u16;     /* null: the mask kernel could not be loaded (dicom_gpu_mask.cpp) */
    int jpeg_version[3];
    const char *jpeg_missing; /* why lossless is null */
};

/* Creates a.j2k, nvJPEG2000's handle, with the memory functions of dicom_gpu_memory.cpp (or
 * its own where DH_GPU_J2K_MEMORY=default asks, to measure the difference); the context current.
 * False when no handle can be made. */
bool create_j2k_handle(gpu_api &a);

/* Loads the mask kernel into a.mask_u16 (left null where the driver refuses it), the context
 * current (dicom_gpu_mask.cpp). */
void load_mask_kernel(gpu_api &a);

/* Queues cells[0..count) &= (1 << bits) - 1 on stream: 16-bit words decoded from a frame whose
 * header says 16 bits, made the stored values of BitsStored bits (as the CPU read masks them).
 * False with the reason when it cannot be queued. */
bool gpu_mask_to_bits(const gpu_api &api, CUdeviceptr cells, size_t count, unsigned bits,
                      CUstream stream, std::string &reason);

/* The loaded functions, or null with the reason (dicom_gpu_load.cpp). */
const gpu_api *gpu_api_get(std::string &reason);

/* What one JPEG 2000 frame in flight needs: a stream, nvJPEG2000's decode state and a parsed
 * stream. Creating them costs milliseconds (the state holds pinned and device buffers), more than
 * decoding a small frame, so they are kept for the next call: a process-wide, thread-safe pool
 * of idle lanes, at most kept_lanes of them, each made on first need (dicom_gpu_load.cpp). */
struct gpu_lane {
    CUstream stream = nullptr;
    nvjpeg2kDecodeState_t state = nullptr;
    nvjpeg2kStream_t parsed = nullptr;
};
constexpr size_t kept_lanes = 64;

/* Fills lanes with n lanes, idle ones first, new ones made (the primary context current) where
 * the pool has too few; false with the reason when one cannot be made (those taken go back). */
bool gpu_lanes_take(const gpu_api &api, size_t n, std::vector<gpu_lane> &lanes,
                    std::string &reason);

/* Gives lanes back once their streams are idle: to the pool when `healthy` and it has room, else
 * destroyed (a lane whose decode failed is not trusted again). Empties lanes. */
void gpu_lanes_give(const gpu_api &api, std::vector<gpu_lane> &lanes, bool healthy);

/* nvJPEG's lossless decode state and parsed stream, which the batch's SV1 calls need. Creating
 * the state costs about 270 ms on an H100 (bench/NOTES.md, session 16: more than decoding 240
 * frames), so like the lanes they are kept for the next call, in the same process-wide,
 * thread-safe pool beside nvJPEG's handle (which is the process's too), at most kept_lossless
 * idle; a call that finds none idle makes one. */
struct gpu_lossless_state {
    nvjpegJpegState_t state = nullptr;
    nvjpegJpegStream_t parsed = nullptr;
};
constexpr size_t kept_lossless = 4;

/* An idle state, or a new one (the primary context current); false with the reason when none
 * can be made. */
bool gpu_lossless_take(const gpu_api &api, gpu_lossless_state &out, std::string &reason);

/* Gives a state back (healthy: to the pool if it has room; else destroyed) and empties it; the
 * caller has waited for its work. */
void gpu_lossless_give(const gpu_api &api, gpu_lossless_state &state, bool healthy);

/* "nvJPEG2000 <what> frame <f + 1> (status <status>)". */
std::string frame_reason(uint32_t f, const char *what, int status);

/* Parses frame f into lane.parsed and checks what nvJPEG2000 read against the dataset (one
 * component of its rows and columns, 1 to 16 bits), comp then holding that component
 * (dicom_gpu_jpeg2000.cpp). False with the reason otherwise. */
bool parse_j2k_frame(const gpu_api &api, const gpu_frame &frame, uint32_t f,
                     const dh_dicom_image &img, gpu_lane &lane,
                     nvjpeg2kImageComponentInfo_t &comp, std::string &reason);

/* Whether version have (major, minor, patch) comes before want. */
inline bool version_older(const int have[3], const int want[3])
{
    for (int i = 0; i < 3; i++)
        if (have[i] != want[i])
            return have[i] < want[i];
    return false;
}

/* "name failed: driver's text" for a failed driver call. */
std::string cuda_error(const gpu_api &api, const char *what, CUresult r);

/* Copies the decoded frames (bytes from device) to host once stream's work is done, then waits:
 * false with the reason when the GPU reported a failure. */
bool copy_to_host(const gpu_api &api, void *host, CUdeviceptr device, size_t bytes, CUstream stream,
                  std::string &reason);

/* Makes the primary context current for a scope (the caller's own context comes back after). */
struct gpu_context_scope {
    const gpu_api &api;
    bool pushed;
    explicit gpu_context_scope(const gpu_api &a)
        : api(a), pushed(a.cuCtxPushCurrent(a.context) == CUDA_SUCCESS)
    {
    }
    ~gpu_context_scope()
    {
        CUcontext c;
        if (pushed)
            api.cuCtxPopCurrent(&c);
    }
};

/* The loaded functions with the primary context current while `scope` lives; null with the
 * reason when the decoders are unusable or the context cannot be made current. */
inline const gpu_api *gpu_api_current(std::optional<gpu_context_scope> &scope, std::string &reason)
{
    const gpu_api *api = gpu_api_get(reason);
    if (api == nullptr)
        return nullptr;
    scope.emplace(*api);
    if (!scope->pushed)
        reason = "the GPU's context cannot be made current";
    return scope->pushed ? api : nullptr;
}

/* Whether frame f of an SV1 image goes to nvJPEG's lossless backend: its headers checked against
 * the dataset (one component, SOF3 of the dataset's size, predictor 1, no point transform, a
 * precision nvJPEG decodes right in this version) and, unless DH_GPU_JPEG_LOSSLESS says
 * otherwise, the frame sizes measured exact (dicom_gpu_jpeg_lossless.cpp). as_stored_values: the
 * decoded samples must become the stored values on the device (precision BitsStored from bit 0,
 * or a 16-bit header over fewer stored bits with *needs_mask set: the caller then masks them
 * with gpu_mask_to_bits; unsigned), for a batch decoding straight into them. False with the
 * reason otherwise. */
bool gpu_jpeg_lossless_admits(const gpu_api &api, const gpu_frame &frame, uint32_t f,
                              const dh_dicom_image &img, bool as_stored_values,
                              std::string &reason, bool *needs_mask = nullptr);

} // namespace dh_dicom_impl

#endif /* DH_DICOM_GPU_API_H */
