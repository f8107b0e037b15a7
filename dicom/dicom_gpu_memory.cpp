// SPDX-License-Identifier: MIT
/*
 * dicom_gpu_memory.cpp: where nvJPEG2000 takes its memory from. Made with nvjpeg2kCreateSimple
 * it calls cudaMalloc / cudaFree and cudaHostAlloc / cudaFreeHost whenever a decode state's
 * buffers grow or go: cudaFree and cudaFreeHost wait for the whole device, so one host thread's
 * allocation stalls every other thread's decode. Here its device memory comes stream-ordered
 * from a pool of our own (cuMemAllocFromPoolAsync / cuMemFreeAsync on the stream nvJPEG2000
 * names: no device-wide wait), kept when freed (release threshold unbounded, so a second batch
 * reuses the first's memory; the pool is the process's, as the handle is), and both kinds are
 * padded so a state grows rarely. The pool is ours, not the device's default one, so the
 * application's own cudaMallocAsync keeps its settings. DH_GPU_J2K_MEMORY=default falls back to
 * nvJPEG2000's own functions, for bench_decode to measure the difference.
 */
#include "dicom_gpu_api.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace dh_dicom_impl {

namespace {

/* Rounding of nvJPEG2000's buffers: a 512x512 16-bit frame's largest are about 1 MB, so a
 * decode state grows about once, not on every slightly larger frame. */
constexpr size_t device_padding = 2u << 20;
constexpr size_t pinned_padding = 1u << 20;

/* Each function's context is the process's gpu_api (it outlives the handle). */
const gpu_api &api_of(void *context)
{
    return *static_cast<const gpu_api *>(context);
}

int device_malloc(void *context, void **ptr, size_t size, cudaStream_t stream)
{
    const gpu_api &a = api_of(context);
    CUdeviceptr p = 0;
    const CUresult r =
        a.cuMemAllocFromPoolAsync(&p, size, a.j2k_pool, reinterpret_cast<CUstream>(stream));
    *ptr = reinterpret_cast<void *>(p);
    return r == CUDA_SUCCESS ? 0 : 1;
}

int device_free(void *context, void *ptr, size_t, cudaStream_t stream)
{
    return api_of(context).cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(ptr),
                                      reinterpret_cast<CUstream>(stream)) == CUDA_SUCCESS
               ? 0
               : 1;
}

int pinned_malloc(void *context, void **ptr, size_t size, cudaStream_t)
{
    return api_of(context).cuMemHostAlloc(ptr, size, 0) == CUDA_SUCCESS ? 0 : 1;
}

int pinned_free(void *context, void *ptr, size_t, cudaStream_t)
{
    return api_of(context).cuMemFreeHost(ptr) == CUDA_SUCCESS ? 0 : 1;
}

/* A device pool on a.device whose freed memory stays with it. */
bool create_pool(gpu_api &a)
{
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = a.device;
    if (a.cuMemPoolCreate(&a.j2k_pool, &props) != CUDA_SUCCESS)
        return false;
    cuuint64_t keep = UINT64_MAX;
    a.cuMemPoolSetAttribute(a.j2k_pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
    return true;
}

} // namespace

bool create_j2k_handle(gpu_api &a)
{
    const char *asked = getenv("DH_GPU_J2K_MEMORY");
    if (asked == nullptr || strcmp(asked, "default") != 0) {
        nvjpeg2kDeviceAllocatorV2_t device{device_malloc, device_free, &a};
        nvjpeg2kPinnedAllocatorV2_t pinned{pinned_malloc, pinned_free, &a};
        if (create_pool(a)) {
            if (a.nvjpeg2kCreateV2(NVJPEG2K_BACKEND_DEFAULT, &device, &pinned, &a.j2k) ==
                NVJPEG2K_STATUS_SUCCESS) {
                a.nvjpeg2kSetDeviceMemoryPadding(device_padding, a.j2k);
                a.nvjpeg2kSetPinnedMemoryPadding(pinned_padding, a.j2k);
                a.j2k_memory = "pool";
                return true;
            }
        }
    }
    /* Asked for, or the pool could not be made: nvJPEG2000's own allocation. */
    a.j2k_memory = "default";
    return a.nvjpeg2kCreateSimple(&a.j2k) == NVJPEG2K_STATUS_SUCCESS;
}

} // namespace dh_dicom_impl
