// SPDX-License-Identifier: MIT
/*
 * dlpack_abi.h: the DLPack structures the extension reads, declared from the DLPack 1.x
 * specification (dmlc/dlpack, "Python specification for DLPack"). Only the layout is needed:
 * the module reads a producer's tensor description and calls its deleter; it never makes one.
 * Debian 12 ships DLPack 0.6 (no versioned tensor), hence this copy of the ABI.
 */
#ifndef DH_PYTHON_DLPACK_ABI_H
#define DH_PYTHON_DLPACK_ABI_H

#include <stdint.h>

enum { DH_DL_CPU = 1, DH_DL_CUDA = 2, DH_DL_CUDA_HOST = 3, DH_DL_CUDA_MANAGED = 13 };
enum { DH_DL_INT = 0, DH_DL_UINT = 1, DH_DL_FLOAT = 2, DH_DL_BOOL = 6 };
#define DH_DL_FLAG_READ_ONLY 1ull

typedef struct {
    int32_t device_type;
    int32_t device_id;
} dh_dl_device;

typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} dh_dl_dtype;

typedef struct {
    void *data;
    dh_dl_device device;
    int32_t ndim;
    dh_dl_dtype dtype;
    int64_t *shape;
    int64_t *strides; /* in elements; NULL = compact row-major */
    uint64_t byte_offset;
} dh_dl_tensor;

/* "dltensor" capsules (DLPack < 1.0) */
typedef struct dh_dl_managed {
    dh_dl_tensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct dh_dl_managed *self);
} dh_dl_managed;

/* "dltensor_versioned" capsules (DLPack >= 1.0) */
typedef struct dh_dl_managed_versioned {
    struct {
        uint32_t major, minor;
    } version;
    void *manager_ctx;
    void (*deleter)(struct dh_dl_managed_versioned *self);
    uint64_t flags;
    dh_dl_tensor dl_tensor;
} dh_dl_managed_versioned;

#endif /* DH_PYTHON_DLPACK_ABI_H */
