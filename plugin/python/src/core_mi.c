// SPDX-License-Identifier: MIT
/*
 * core_mi.c: mutual information (dicomhist.h section 5) for dicomhist/mi.py: a prepared fixed
 * image with its own context, evaluations from host buffers or device pointers on a caller's
 * stream, joint histograms; and the reading of DLPack capsules (device arrays in).
 */
#include "core.h"
#include "dlpack_abi.h"

#include <string.h>

static const char FIXED_NAME[] = "dicomhist.mi_fixed";

/* A prepared fixed image and the context its calls report into (one thread at a time: the
 * Python class holds a lock). */
typedef struct {
    dh_ctx *ctx;
    dh_mi_fixed *fixed;
} mi_fixed_box;

static void fixed_destroy(PyObject *capsule)
{
    mi_fixed_box *box = PyCapsule_GetPointer(capsule, FIXED_NAME);
    if (box) {
        dh_mi_fixed_free(box->fixed);
        dh_ctx_free(box->ctx);
        PyMem_Free(box);
    }
}

static mi_fixed_box *box_of(PyObject *capsule)
{
    return PyCapsule_GetPointer(capsule, FIXED_NAME);
}

/* mi_fixed_new(fixed, sample_type, n, mask or None, **fields of dh_mi_params) -> capsule */
static PyObject *py_fixed_new(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    PyObject *data, *mask;
    int sample_type;
    Py_ssize_t n;
    dh_mi_params p;
    if (!PyArg_ParseTuple(args, "OinO", &data, &sample_type, &n, &mask) ||
        core_mi_params(kwargs, &p) < 0)
        return NULL;
    const Py_ssize_t sample = sample_type == DH_SAMPLE_FLOAT32 ? 4 : 2;
    Py_buffer dv, mv;
    if (core_get_buffer(data, &dv, n * sample, 0, "fixed image") < 0)
        return NULL;
    int have_mask = mask != Py_None;
    if (have_mask && core_get_buffer(mask, &mv, n, 0, "fixed mask") < 0) {
        PyBuffer_Release(&dv);
        return NULL;
    }
    mi_fixed_box *box = PyMem_Calloc(1, sizeof *box);
    PyObject *capsule = NULL;
    if (!box || !(box->ctx = dh_ctx_create())) {
        PyErr_NoMemory();
        goto done;
    }
    dh_status st;
    Py_BEGIN_ALLOW_THREADS
    st = dh_mi_fixed_create(box->ctx, dv.buf, sample_type, (size_t)n,
                            have_mask ? mv.buf : NULL, &p, &box->fixed);
    Py_END_ALLOW_THREADS
    if (st != DH_OK) {
        core_raise(st, dh_ctx_error(box->ctx));
        goto done;
    }
    if ((capsule = PyCapsule_New(box, FIXED_NAME, fixed_destroy)))
        box = NULL;
done:
    if (box) {
        dh_mi_fixed_free(box->fixed);
        dh_ctx_free(box->ctx);
        PyMem_Free(box);
    }
    PyBuffer_Release(&dv);
    if (have_mask)
        PyBuffer_Release(&mv);
    return capsule;
}

static PyObject *py_fixed_info(PyObject *self, PyObject *capsule)
{
    (void)self;
    mi_fixed_box *box = box_of(capsule);
    if (!box)
        return NULL;
    dh_mi_fixed_info i;
    dh_mi_fixed_get_info(box->fixed, &i);
    return Py_BuildValue("{s:s,s:n,s:I,s:I,s:i,s:i,s:K,s:d,s:I}", "device",
                         i.device == DH_DEVICE_CUDA ? "cuda" : "cpu", "pixels", (Py_ssize_t)i.pixels,
                         "bins_fixed", i.bins_fixed, "bins_moving", i.bins_moving, "fixed_lo",
                         i.fixed_lo, "fixed_hi", i.fixed_hi, "fixed_valid",
                         (unsigned long long)i.fixed_valid, "h_fixed", i.h_fixed, "max_batch",
                         i.max_batch);
}

/* mi_evaluate(fixed, moving, sample_type, stride, count, valid or None, valid_stride, out) */
static PyObject *py_evaluate(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *capsule, *moving, *valid, *out;
    int sample_type;
    Py_ssize_t stride, valid_stride;
    unsigned count;
    if (!PyArg_ParseTuple(args, "OOinIOnO", &capsule, &moving, &sample_type, &stride, &count,
                          &valid, &valid_stride, &out))
        return NULL;
    mi_fixed_box *box = box_of(capsule);
    if (!box)
        return NULL;
    dh_mi_fixed_info info;
    dh_mi_fixed_get_info(box->fixed, &info);
    if (count < 1 || stride < 0 || valid_stride < 0) {
        PyErr_SetString(PyExc_ValueError, "mi_evaluate: count >= 1 and strides >= 0 needed");
        return NULL;
    }
    /* the last image ends at (count - 1) * stride + pixels samples: the buffers must hold it */
    const Py_ssize_t sample = sample_type == DH_SAMPLE_FLOAT32 ? 4 : 2;
    const Py_ssize_t images = ((Py_ssize_t)count - 1) * stride + (Py_ssize_t)info.pixels;
    const Py_ssize_t masks = ((Py_ssize_t)count - 1) * valid_stride + (Py_ssize_t)info.pixels;
    Py_buffer mv, vv, ov;
    if (core_get_buffer(moving, &mv, images * sample, 0, "moving images") < 0)
        return NULL;
    int have_valid = valid != Py_None;
    if (have_valid && core_get_buffer(valid, &vv, masks, 0, "validity masks") < 0) {
        PyBuffer_Release(&mv);
        return NULL;
    }
    if (core_get_buffer(out, &ov, (Py_ssize_t)count * (Py_ssize_t)sizeof(dh_mi_scores), 1,
                        "score records") < 0) {
        PyBuffer_Release(&mv);
        if (have_valid)
            PyBuffer_Release(&vv);
        return NULL;
    }
    dh_status st;
    Py_BEGIN_ALLOW_THREADS
    st = dh_mi_evaluate(box->ctx, box->fixed, mv.buf, sample_type, (size_t)stride, count,
                        have_valid ? vv.buf : NULL, (size_t)valid_stride, ov.buf);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&mv);
    if (have_valid)
        PyBuffer_Release(&vv);
    PyBuffer_Release(&ov);
    if (st != DH_OK)
        return core_raise(st, dh_ctx_error(box->ctx));
    Py_RETURN_NONE;
}

/* mi_evaluate_device(fixed, moving_ptr, sample_type, stride, count, valid_ptr, valid_stride,
 *                    stream, out_ptr): device pointers and a cudaStream_t as integers; only
 * enqueues. The GIL is kept: the call returns as soon as the launch is queued. A fast call
 * (positional integers, no tuple, no format string): MIFixed.scores' per-call entry. */
static PyObject *py_evaluate_device(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    static const char who[] = "mi_evaluate_device";
    if (nargs != 9) {
        PyErr_Format(PyExc_TypeError, "%s takes 9 arguments, not %zd", who, nargs);
        return NULL;
    }
    mi_fixed_box *box = box_of(args[0]);
    if (!box)
        return NULL;
    unsigned long long a[8]; /* moving, sample_type, stride, count, valid, valid_stride, stream,
                                out */
    if (core_unsigned_args(args, 1, 8, a, who) < 0)
        return NULL;
    if (a[1] > 16 || a[3] > UINT32_MAX) {
        PyErr_Format(PyExc_ValueError, "%s: count or the sample type out of range", who);
        return NULL;
    }
    dh_status st = dh_mi_evaluate_device(box->ctx, box->fixed, (const void *)(uintptr_t)a[0],
                                         (int)a[1], (size_t)a[2], (uint32_t)a[3],
                                         (const uint8_t *)(uintptr_t)a[4], (size_t)a[5],
                                         (void *)(uintptr_t)a[6],
                                         (dh_mi_scores *)(uintptr_t)a[7]);
    if (st != DH_OK)
        return core_raise(st, dh_ctx_error(box->ctx));
    Py_RETURN_NONE;
}

/* mi_joint(fixed, item, out): the joint histogram of image `item` of the last evaluation */
static PyObject *py_joint(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *capsule, *out;
    unsigned item;
    if (!PyArg_ParseTuple(args, "OIO", &capsule, &item, &out))
        return NULL;
    mi_fixed_box *box = box_of(capsule);
    if (!box)
        return NULL;
    dh_mi_fixed_info info;
    dh_mi_fixed_get_info(box->fixed, &info);
    Py_buffer ov;
    if (core_get_buffer(out, &ov, (Py_ssize_t)info.bins_fixed * info.bins_moving * 4, 1,
                        "joint histogram") < 0)
        return NULL;
    dh_status st;
    Py_BEGIN_ALLOW_THREADS
    st = dh_mi_joint_histogram(box->ctx, box->fixed, item, ov.buf);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&ov);
    if (st != DH_OK)
        return core_raise(st, dh_ctx_error(box->ctx));
    Py_RETURN_NONE;
}

/* dlpack_view(capsule) -> (address, device_type, device_id, shape, strides or None,
 * (code, bits, lanes), read_only): the tensor a "dltensor" or "dltensor_versioned" capsule
 * describes. The capsule is not consumed: its producer frees it when it is collected, and the
 * caller keeps it until the work that reads the memory is enqueued. */
static PyObject *py_dlpack_view(PyObject *self, PyObject *capsule)
{
    (void)self;
    const dh_dl_tensor *t = NULL;
    int read_only = 0;
    if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
        dh_dl_managed_versioned *m = PyCapsule_GetPointer(capsule, "dltensor_versioned");
        if (m->version.major < 1 || m->version.major > 1) {
            PyErr_Format(PyExc_BufferError, "DLPack version %u.%u is not supported (1.x is)",
                         m->version.major, m->version.minor);
            return NULL;
        }
        t = &m->dl_tensor;
        read_only = (m->flags & DH_DL_FLAG_READ_ONLY) != 0;
    } else if (PyCapsule_IsValid(capsule, "dltensor")) {
        t = &((dh_dl_managed *)PyCapsule_GetPointer(capsule, "dltensor"))->dl_tensor;
    } else {
        PyErr_SetString(PyExc_TypeError, "not an unused DLPack capsule");
        return NULL;
    }
    PyObject *shape = PyTuple_New(t->ndim), *strides = NULL;
    if (!shape)
        return NULL;
    for (int32_t i = 0; i < t->ndim; i++)
        PyTuple_SetItem(shape, i, PyLong_FromLongLong(t->shape[i]));
    if (t->strides) {
        if (!(strides = PyTuple_New(t->ndim))) {
            Py_DECREF(shape);
            return NULL;
        }
        for (int32_t i = 0; i < t->ndim; i++)
            PyTuple_SetItem(strides, i, PyLong_FromLongLong(t->strides[i]));
    } else {
        strides = Py_NewRef(Py_None);
    }
    if (PyErr_Occurred()) {
        Py_DECREF(shape), Py_DECREF(strides);
        return NULL;
    }
    return Py_BuildValue("(KiiNN(iii)O)",
                         (unsigned long long)((uintptr_t)t->data + t->byte_offset),
                         (int)t->device.device_type, (int)t->device.device_id, shape, strides,
                         (int)t->dtype.code, (int)t->dtype.bits, (int)t->dtype.lanes,
                         read_only ? Py_True : Py_False);
}

PyMethodDef core_mi_methods[] = {
    {"mi_fixed_new", (PyCFunction)(void (*)(void))py_fixed_new, METH_VARARGS | METH_KEYWORDS,
     "dh_mi_fixed_create; keyword arguments are dh_mi_params fields."},
    {"mi_fixed_info", py_fixed_info, METH_O, "dh_mi_fixed_get_info."},
    {"mi_evaluate", py_evaluate, METH_VARARGS, "dh_mi_evaluate."},
    {"mi_evaluate_device", (PyCFunction)(void (*)(void))py_evaluate_device, METH_FASTCALL,
     "dh_mi_evaluate_device."},
    {"mi_joint", py_joint, METH_VARARGS, "dh_mi_joint_histogram."},
    {"dlpack_view", py_dlpack_view, METH_O, "The tensor a DLPack capsule describes."},
    {NULL, NULL, 0, NULL},
};
