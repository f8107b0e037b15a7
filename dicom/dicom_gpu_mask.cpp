// SPDX-License-Identifier: MIT
/*
 * dicom_gpu_mask.cpp: the one kernel the DICOM layer runs itself, stored values masked to
 * BitsStored in device memory. DCMTK's dcmcjpeg writes JPEG lossless frames of 9 to 15-bit data
 * in 16-bit words with a 16-bit frame header; nvJPEG decodes those to the 16-bit words, whose bits
 * above BitsStored the CPU read masks away (dicom_pixels.cpp). So that nvJPEG may read such
 * frames straight into stored values, the batch masks them on the GPU after the decode, on the
 * same stream. This layer links no CUDA runtime and compiles no CUDA (dicom_gpu_api.h), so the
 * kernel is PTX text the driver compiles once per process (cuModuleLoadData); where that fails
 * the batch leaves such frames to DCMTK, as before session 17.
 */
#include "dicom_gpu_api.h"

namespace dh_dicom_impl {

namespace {

/* cells[i] &= mask for i < count, a grid-stride loop (checked with ptxas -arch sm_90). */
const char mask_ptx[] = R"(
.version 6.0
.target sm_50
.address_size 64

.visible .entry dh_mask_u16(.param .u64 dh_cells, .param .u64 dh_count, .param .u32 dh_mask)
{
    .reg .pred %past;
    .reg .b16 %v, %m16;
    .reg .b32 %m, %block, %width, %lane, %blocks;
    .reg .b64 %base, %n, %i, %step, %at, %t;

    ld.param.u64 %base, [dh_cells];
    ld.param.u64 %n, [dh_count];
    ld.param.u32 %m, [dh_mask];
    cvt.u16.u32 %m16, %m;
    cvta.to.global.u64 %base, %base;
    mov.u32 %block, %ctaid.x;
    mov.u32 %width, %ntid.x;
    mov.u32 %lane, %tid.x;
    mov.u32 %blocks, %nctaid.x;
    mul.wide.u32 %i, %block, %width;
    cvt.u64.u32 %t, %lane;
    add.u64 %i, %i, %t;
    mul.wide.u32 %step, %blocks, %width;
NEXT:
    setp.ge.u64 %past, %i, %n;
    @%past bra DONE;
    shl.b64 %t, %i, 1;
    add.u64 %at, %base, %t;
    ld.global.u16 %v, [%at];
    and.b16 %v, %v, %m16;
    st.global.u16 [%at], %v;
    add.u64 %i, %i, %step;
    bra NEXT;
DONE:
    ret;
}
)";

constexpr unsigned threads_per_block = 256;
constexpr unsigned most_blocks = 1024;

} // namespace

void load_mask_kernel(gpu_api &a)
{
    CUmodule module = nullptr;
    a.mask_u16 = nullptr;
    if (a.cuModuleLoadData(&module, mask_ptx) != CUDA_SUCCESS ||
        a.cuModuleGetFunction(&a.mask_u16, module, "dh_mask_u16") != CUDA_SUCCESS)
        a.mask_u16 = nullptr; /* the module stays loaded for the process, like the handles */
}

bool gpu_mask_to_bits(const gpu_api &api, CUdeviceptr cells, size_t count, unsigned bits,
                      CUstream stream, std::string &reason)
{
    if (api.mask_u16 == nullptr) {
        reason = "no mask kernel";
        return false;
    }
    unsigned long long n = count;
    unsigned mask = bits >= 16 ? 0xffffu : (1u << bits) - 1u;
    void *args[] = {&cells, &n, &mask};
    size_t blocks = (count + threads_per_block - 1) / threads_per_block;
    blocks = blocks < 1 ? 1 : blocks > most_blocks ? most_blocks : blocks;
    const CUresult r = api.cuLaunchKernel(api.mask_u16, (unsigned)blocks, 1, 1, threads_per_block,
                                          1, 1, 0, stream, args, nullptr);
    if (r != CUDA_SUCCESS) { /* not cuda_error: dicom_gpu_load.cpp calls this file already */
        const char *text = nullptr;
        api.cuGetErrorString(r, &text);
        reason = std::string("masking the decoded values to BitsStored failed: ") +
                 (text != nullptr ? text : "unknown error");
    }
    return r == CUDA_SUCCESS;
}

} // namespace dh_dicom_impl
