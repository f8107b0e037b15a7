// SPDX-License-Identifier: MIT
/*
 * core_constants.c: the numbers the Python side shares with the C headers, as constants of
 * dicomhist._core: the values of the public API's enums (dicomhist.h) that the package passes
 * or reads, the DLPack codes of dlpack_abi.h, and the size of a score record. The Python files
 * read them from here rather than keeping copies that could drift.
 */
#include "core.h"
#include "dlpack_abi.h"

typedef struct {
    const char *name;
    long value;
} constant;

/* A constant under its C name without "DH_": DH_DEVICE_CUDA -> DEVICE_CUDA. */
#define NAMED(value) {&#value[3], (long)(value)}

static const constant CONSTANTS[] = {
    /* dh_status: the exception classes of dicomhist/errors.py */
    NAMED(DH_OK),
    NAMED(DH_ERR_INVALID_ARGUMENT),
    NAMED(DH_ERR_IO),
    NAMED(DH_ERR_MALFORMED),
    NAMED(DH_ERR_UNSUPPORTED),
    NAMED(DH_ERR_MISMATCH),
    NAMED(DH_ERR_NO_MEMORY),
    NAMED(DH_ERR_NO_DEVICE),
    NAMED(DH_ERR_CUDA),
    NAMED(DH_ERR_INTERNAL),
    /* dh_device */
    NAMED(DH_DEVICE_AUTO),
    NAMED(DH_DEVICE_CPU),
    NAMED(DH_DEVICE_CUDA),
    /* dh_units */
    NAMED(DH_UNITS_STORED),
    NAMED(DH_UNITS_MODALITY),
    /* dh_sample_type */
    NAMED(DH_SAMPLE_UINT16),
    NAMED(DH_SAMPLE_INT16),
    NAMED(DH_SAMPLE_FLOAT32),
    /* dh_mi_flag: the bits of a score record's status */
    NAMED(DH_MI_EMPTY),
    NAMED(DH_MI_ZERO_JOINT_ENTROPY),
    /* dh_parzen_window, dh_parzen_score */
    NAMED(DH_PARZEN_WINDOW_BOX),
    NAMED(DH_PARZEN_WINDOW_CUBIC),
    NAMED(DH_PARZEN_SCORE_MI),
    NAMED(DH_PARZEN_SCORE_NMI),
    NAMED(DH_PARZEN_MI_MIN_BINS),
    NAMED(DH_PARZEN_MI_MAX_BINS),
    /* dh_eq_operation */
    NAMED(DH_EQ_EQUALIZE),
    NAMED(DH_EQ_WINDOW_LEVEL),
    /* dh_window_source */
    NAMED(DH_WINDOW_NONE),
    NAMED(DH_WINDOW_CENTER_WIDTH),
    NAMED(DH_WINDOW_RANGE),
    NAMED(DH_WINDOW_FILE),
    NAMED(DH_WINDOW_MINMAX),
    NAMED(DH_WINDOW_PERCENTILE),
    /* dh_voi_function */
    NAMED(DH_VOI_LINEAR),
    NAMED(DH_VOI_LINEAR_EXACT),
    NAMED(DH_VOI_SIGMOID),
    /* DLPack device types and type codes */
    NAMED(DH_DL_CPU),
    NAMED(DH_DL_CUDA),
    NAMED(DH_DL_CUDA_HOST),
    NAMED(DH_DL_CUDA_MANAGED),
    NAMED(DH_DL_INT),
    NAMED(DH_DL_UINT),
    NAMED(DH_DL_FLOAT),
    NAMED(DH_DL_BOOL),
    /* bytes of one dh_mi_scores, which dicomhist/mi.py's SCORE_DTYPE mirrors */
    {"SCORE_RECORD_SIZE", (long)sizeof(dh_mi_scores)},
    /* dh_eq_method, dh_uids, dh_existing: CLAHE and the derived output (core_enhance.c) */
    NAMED(DH_EQ_METHOD_GLOBAL),
    NAMED(DH_EQ_METHOD_CLAHE),
    NAMED(DH_EQ_METHOD_CLAHE_SKIMAGE),
    NAMED(DH_UIDS_RANDOM),
    NAMED(DH_UIDS_DERIVED),
    NAMED(DH_EXISTING_FAIL),
    NAMED(DH_EXISTING_REPLACE),
    NAMED(DH_EXISTING_KEEP),
};

int core_constants_add(PyObject *module)
{
    for (size_t i = 0; i < sizeof CONSTANTS / sizeof CONSTANTS[0]; i++)
        if (PyModule_AddIntConstant(module, CONSTANTS[i].name, CONSTANTS[i].value) < 0)
            return -1;
    return 0;
}
