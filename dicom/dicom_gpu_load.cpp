// SPDX-License-Identifier: MIT
/*
 * dicom_gpu_load.cpp: finds NVIDIA's decoders at run time. Once per process (std::call_once),
 * the first time a read asks: dlopen the CUDA driver, nvJPEG2000 and nvJPEG, dlsym what
 * dicom_gpu_api.h lists, check their versions, retain device 0's primary context (the device
 * CUDA_VISIBLE_DEVICES puts first) and create the two shared handles. What was found never
 * changes afterwards; anything missing is one sentence that info --json and the tests show.
 *
 * Where the libraries are looked for, first hit wins: the folder in the environment variable
 * DH_GPU_CODECS (laid out as tools/fetch-gpu-codecs leaves it: the wheels' nvidia/ tree, or a
 * site-packages holding them), the folder the build was configured with (the same layout), then
 * the loader's own search (LD_LIBRARY_PATH, ld.so.cache).
 */
#include "dicom_gpu.h"
#include "dicom_gpu_api.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <atomic>
#include <initializer_list>
#include <mutex>
#include <string>

#ifndef DH_GPU_CODECS_DIR
#define DH_GPU_CODECS_DIR ""
#endif

namespace dh_dicom_impl {

namespace {

/* nvJPEG2000 decodes HTJ2K from 0.7 on. */
constexpr int j2k_minimum[3] = {0, 7, 0};
/* nvJPEG's lossless backend exists from 12.2 on. */
constexpr int lossless_minimum[3] = {12, 2, 0};

struct loaded {
    gpu_api api{};
    bool usable = false;
    std::string reason;
    std::mutex pool_lock; /* guards idle and idle_lossless */
    std::vector<gpu_lane> idle;
    std::vector<gpu_lossless_state> idle_lossless;
};

/* dlopen of soname in the folders tried in turn, then bare (the loader's own search). */
void *open_library(const char *subdir, const char *soname, std::string &tried)
{
    const char *env = getenv("DH_GPU_CODECS");
    const char *roots[] = {env != nullptr ? env : "", DH_GPU_CODECS_DIR};
    for (const char *root : roots) {
        if (root[0] == '\0')
            continue;
        for (const char *prefix : {"/nvidia/", "/"}) {
            const std::string path = std::string(root) + prefix + subdir + "/" + soname;
            if (void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL))
                return h;
        }
    }
    if (void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL))
        return h;
    const char *why = dlerror();
    tried = why != nullptr ? why : soname;
    return nullptr;
}

/* A function pointer of gpu_api and the symbol that fills it. */
struct symbol {
    const char *name;
    void *slot; /* the pointer's address */
    size_t size;
};
template <class F> symbol sym(const char *name, F &pointer)
{
    return {name, &pointer, sizeof pointer};
}

/* A pointer filled from the symbol of its own name. */
#define SAME(field) sym(#field, a.field)

/* Fills every slot from lib; false with the first missing name. */
bool bind(void *lib, std::initializer_list<symbol> symbols, std::string &missing)
{
    for (const symbol &s : symbols) {
        void *found = dlsym(lib, s.name);
        if (found == nullptr) {
            missing = s.name;
            return false;
        }
        memcpy(s.slot, &found, s.size); /* POSIX: a data pointer from dlsym is the function's */
    }
    return true;
}

std::string version_text(const int v[3])
{
    char text[48];
    snprintf(text, sizeof text, "%d.%d.%d", v[0], v[1], v[2]);
    return text;
}

bool load_driver(gpu_api &a, std::string &reason)
{
    std::string tried;
    void *cuda = open_library("", "libcuda.so.1", tried);
    if (cuda == nullptr) {
        reason = "no NVIDIA driver: " + tried;
        return false;
    }
    std::string missing;
    bind(cuda,
         {SAME(cuInit), SAME(cuDeviceGet), SAME(cuDevicePrimaryCtxRetain),
          sym("cuCtxPushCurrent_v2", a.cuCtxPushCurrent),
          sym("cuCtxPopCurrent_v2", a.cuCtxPopCurrent), SAME(cuStreamCreate),
          sym("cuStreamDestroy_v2", a.cuStreamDestroy), SAME(cuStreamSynchronize),
          SAME(cuMemAllocAsync), SAME(cuMemFreeAsync),
          sym("cuMemcpyDtoHAsync_v2", a.cuMemcpyDtoHAsync), SAME(cuGetErrorString),
          SAME(cuEventCreate), sym("cuEventDestroy_v2", a.cuEventDestroy), SAME(cuEventRecord),
          SAME(cuStreamWaitEvent), sym("cuMemcpyHtoDAsync_v2", a.cuMemcpyHtoDAsync),
          SAME(cuMemPoolCreate), SAME(cuMemPoolSetAttribute), SAME(cuMemAllocFromPoolAsync),
          SAME(cuMemHostAlloc), SAME(cuMemFreeHost), SAME(cuModuleLoadData),
          SAME(cuModuleGetFunction), SAME(cuLaunchKernel)},
         missing);
    if (!missing.empty()) {
        reason = "the NVIDIA driver lacks " + missing;
        return false;
    }
    CUresult r = a.cuInit(0);
    if (r == CUDA_SUCCESS)
        r = a.cuDeviceGet(&a.device, 0);
    if (r == CUDA_SUCCESS)
        r = a.cuDevicePrimaryCtxRetain(&a.context, a.device);
    if (r != CUDA_SUCCESS) {
        reason = "no usable GPU: " + cuda_error(a, "cuInit/cuDeviceGet", r);
        return false;
    }
    return true;
}

bool load_jpeg2000(gpu_api &a, std::string &reason)
{
    std::string tried;
    void *lib = open_library("nvjpeg2k/lib", "libnvjpeg2k.so.0", tried);
    if (lib == nullptr) {
        reason = "nvJPEG2000 not found (tools/fetch-gpu-codecs, then DH_GPU_CODECS): " + tried;
        return false;
    }
    std::string missing;
    bind(lib,
         {SAME(nvjpeg2kGetProperty), SAME(nvjpeg2kCreateSimple), SAME(nvjpeg2kDecodeStateCreate),
          SAME(nvjpeg2kDecodeStateDestroy), SAME(nvjpeg2kStreamCreate), SAME(nvjpeg2kStreamDestroy),
          SAME(nvjpeg2kStreamParse), SAME(nvjpeg2kStreamGetImageInfo),
          SAME(nvjpeg2kStreamGetImageComponentInfo), SAME(nvjpeg2kDecode),
          SAME(nvjpeg2kCreateV2), SAME(nvjpeg2kSetDeviceMemoryPadding),
          SAME(nvjpeg2kSetPinnedMemoryPadding)},
         missing);
    if (!missing.empty()) {
        reason = "nvJPEG2000 lacks " + missing;
        return false;
    }
    a.nvjpeg2kGetProperty(MAJOR_VERSION, &a.j2k_version[0]);
    a.nvjpeg2kGetProperty(MINOR_VERSION, &a.j2k_version[1]);
    a.nvjpeg2kGetProperty(PATCH_LEVEL, &a.j2k_version[2]);
    if (version_older(a.j2k_version, j2k_minimum)) {
        reason = "nvJPEG2000 " + version_text(a.j2k_version) + " is older than " +
                 version_text(j2k_minimum) + " (no HTJ2K)";
        return false;
    }
    gpu_context_scope scope(a);
    if (!scope.pushed || !create_j2k_handle(a)) {
        reason = "nvJPEG2000's handle cannot be created on this GPU";
        return false;
    }
    return true;
}

/* nvJPEG is optional beside nvJPEG2000: without it only JPEG lossless stays on the CPU. */
void load_lossless(gpu_api &a)
{
    std::string tried;
    void *lib = open_library("cu13/lib", "libnvjpeg.so.13", tried);
    if (lib == nullptr) {
        a.jpeg_missing = "nvJPEG not found (tools/fetch-gpu-codecs, then DH_GPU_CODECS)";
        return;
    }
    std::string missing;
    bind(lib,
         {SAME(nvjpegGetProperty), SAME(nvjpegCreateEx), SAME(nvjpegJpegStateCreate),
          SAME(nvjpegJpegStateDestroy), SAME(nvjpegJpegStreamCreate), SAME(nvjpegJpegStreamDestroy),
          SAME(nvjpegJpegStreamParseHeader), SAME(nvjpegDecodeBatchedSupported),
          SAME(nvjpegDecodeBatchedInitialize), SAME(nvjpegDecodeBatched)},
         missing);
    if (!missing.empty()) {
        a.jpeg_missing = "nvJPEG lacks a function of its batched API";
        return;
    }
    a.nvjpegGetProperty(MAJOR_VERSION, &a.jpeg_version[0]);
    a.nvjpegGetProperty(MINOR_VERSION, &a.jpeg_version[1]);
    a.nvjpegGetProperty(PATCH_LEVEL, &a.jpeg_version[2]);
    if (version_older(a.jpeg_version, lossless_minimum)) {
        a.jpeg_missing = "nvJPEG is older than 12.2 (no lossless backend)";
        return;
    }
    gpu_context_scope scope(a);
    if (!scope.pushed || a.nvjpegCreateEx(NVJPEG_BACKEND_LOSSLESS_JPEG, nullptr, nullptr, 0,
                                          &a.lossless) != NVJPEG_STATUS_SUCCESS) {
        a.lossless = nullptr;
        a.jpeg_missing = "nvJPEG's lossless backend cannot be created on this GPU";
        return;
    }
    load_mask_kernel(a);
}

/* Set once load_once's work has finished (usable or not): read without waiting on it. */
std::atomic<bool> load_settled{false};

loaded &load_once()
{
    static loaded state;
    static std::once_flag once;
    std::call_once(once, [] {
        state.usable =
            load_driver(state.api, state.reason) && load_jpeg2000(state.api, state.reason);
        if (state.usable)
            load_lossless(state.api);
        load_settled.store(true, std::memory_order_release);
    });
    return state;
}

} // namespace

std::string cuda_error(const gpu_api &api, const char *what, CUresult r)
{
    const char *text = nullptr;
    if (api.cuGetErrorString == nullptr || api.cuGetErrorString(r, &text) != CUDA_SUCCESS ||
        text == nullptr)
        text = "unknown error";
    return std::string(what) + " failed: " + text;
}

bool copy_to_host(const gpu_api &api, void *host, CUdeviceptr device, size_t bytes, CUstream stream,
                  std::string &reason)
{
    CUresult r = api.cuMemcpyDtoHAsync(host, device, bytes, stream);
    if (r == CUDA_SUCCESS)
        r = api.cuStreamSynchronize(stream);
    if (r != CUDA_SUCCESS)
        reason = cuda_error(api, "decoding on the GPU and copying the frames to the host", r);
    return r == CUDA_SUCCESS;
}

namespace {

void destroy_lane(const gpu_api &api, gpu_lane &l)
{
    if (l.parsed != nullptr)
        api.nvjpeg2kStreamDestroy(l.parsed);
    if (l.state != nullptr)
        api.nvjpeg2kDecodeStateDestroy(l.state);
    if (l.stream != nullptr)
        api.cuStreamDestroy(l.stream);
    l = gpu_lane{};
}

} // namespace

bool gpu_lanes_take(const gpu_api &api, size_t n, std::vector<gpu_lane> &lanes,
                    std::string &reason)
{
    loaded &l = load_once();
    {
        std::lock_guard<std::mutex> hold(l.pool_lock);
        while (lanes.size() < n && !l.idle.empty()) {
            lanes.push_back(l.idle.back());
            l.idle.pop_back();
        }
    }
    while (lanes.size() < n) {
        gpu_lane lane;
        const CUresult r = api.cuStreamCreate(&lane.stream, CU_STREAM_NON_BLOCKING);
        if (r != CUDA_SUCCESS ||
            api.nvjpeg2kDecodeStateCreate(api.j2k, &lane.state) != NVJPEG2K_STATUS_SUCCESS ||
            api.nvjpeg2kStreamCreate(&lane.parsed) != NVJPEG2K_STATUS_SUCCESS) {
            reason = r != CUDA_SUCCESS ? cuda_error(api, "cuStreamCreate", r)
                                       : "nvJPEG2000's decode state cannot be created";
            destroy_lane(api, lane);
            gpu_lanes_give(api, lanes, true);
            return false;
        }
        lanes.push_back(lane);
    }
    return true;
}

void gpu_lanes_give(const gpu_api &api, std::vector<gpu_lane> &lanes, bool healthy)
{
    loaded &l = load_once();
    for (gpu_lane &lane : lanes) {
        if (healthy && api.cuStreamSynchronize(lane.stream) == CUDA_SUCCESS) {
            std::lock_guard<std::mutex> hold(l.pool_lock);
            if (l.idle.size() < kept_lanes) {
                l.idle.push_back(lane);
                continue;
            }
        }
        api.cuStreamSynchronize(lane.stream);
        destroy_lane(api, lane);
    }
    lanes.clear();
}

bool gpu_lossless_take(const gpu_api &api, gpu_lossless_state &out, std::string &reason)
{
    loaded &l = load_once();
    {
        std::lock_guard<std::mutex> hold(l.pool_lock);
        if (!l.idle_lossless.empty()) {
            out = l.idle_lossless.back();
            l.idle_lossless.pop_back();
            return true;
        }
    }
    if (api.lossless != nullptr &&
        api.nvjpegJpegStateCreate(api.lossless, &out.state) == NVJPEG_STATUS_SUCCESS &&
        api.nvjpegJpegStreamCreate(api.lossless, &out.parsed) == NVJPEG_STATUS_SUCCESS)
        return true;
    gpu_lossless_give(api, out, false); /* what was made of it */
    reason = "nvJPEG's decode state cannot be created";
    return false;
}

void gpu_lossless_give(const gpu_api &api, gpu_lossless_state &state, bool healthy)
{
    loaded &l = load_once();
    if (healthy && state.state != nullptr && state.parsed != nullptr) {
        std::lock_guard<std::mutex> hold(l.pool_lock);
        if (l.idle_lossless.size() < kept_lossless) {
            l.idle_lossless.push_back(state);
            state = gpu_lossless_state{};
            return;
        }
    }
    if (state.parsed != nullptr)
        api.nvjpegJpegStreamDestroy(state.parsed);
    if (state.state != nullptr)
        api.nvjpegJpegStateDestroy(state.state);
    state = gpu_lossless_state{};
}

const gpu_api *gpu_api_get(std::string &reason)
{
    const loaded &l = load_once();
    if (!l.usable) {
        reason = l.reason;
        return nullptr;
    }
    return &l.api;
}

bool gpu_decoders_usable(std::string &reason)
{
    return gpu_api_get(reason) != nullptr;
}

bool gpu_decoders_settled()
{
    return load_settled.load(std::memory_order_acquire);
}

} // namespace dh_dicom_impl
