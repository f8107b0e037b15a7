// SPDX-License-Identifier: MIT
/*
 * core_parzen.c: Parzen-window (Mattes) MI and its gradient (dicomhist.h section 5b) for
 * dicomhist/parzen.py: a checked parameter set with its own context and device scratch, and
 * evaluations from host buffers (the GIL released while the CPU works) or device pointers on a
 * caller's stream (only enqueued, so the GIL is kept).
 */
#include "core.h"

static const char PARZEN_NAME[] = "dicomhist.parzen_mi";

/* A dh_parzen_mi and the context its calls report into (one thread at a time: the Python
 * class holds a lock). */
typedef struct {
    dh_ctx *ctx;
    dh_parzen_mi *parzen;
} parzen_box;

static void parzen_destroy(PyObject *capsule)
{
    parzen_box *box = PyCapsule_GetPointer(capsule, PARZEN_NAME);
    if (box) {
        dh_parzen_mi_free(box->parzen);
        dh_ctx_free(box->ctx);
        PyMem_Free(box);
    }
}

/* parzen_new(**fields of dh_parzen_mi_params) -> capsule */
static PyObject *py_parzen_new(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    dh_parzen_mi_params p;
    if (PyTuple_Size(args) != 0) {
        PyErr_SetString(PyExc_TypeError, "parzen_new takes keyword arguments only");
        return NULL;
    }
    if (core_parzen_params(kwargs, &p) < 0)
        return NULL;
    parzen_box *box = PyMem_Calloc(1, sizeof *box);
    if (!box || !(box->ctx = dh_ctx_create())) {
        PyMem_Free(box);
        return PyErr_NoMemory();
    }
    dh_status st = dh_parzen_mi_create(box->ctx, &p, &box->parzen);
    PyObject *capsule = NULL;
    if (st != DH_OK)
        core_raise(st, dh_ctx_error(box->ctx));
    else if ((capsule = PyCapsule_New(box, PARZEN_NAME, parzen_destroy)))
        return capsule;
    dh_parzen_mi_free(box->parzen);
    dh_ctx_free(box->ctx);
    PyMem_Free(box);
    return NULL;
}

/* Releases the buffers of one host call that were acquired (obj non-NULL). */
static void release_all(Py_buffer *views, PyObject **objs, int n)
{
    for (int i = 0; i < n; i++)
        if (objs[i])
            PyBuffer_Release(&views[i]);
}

static Py_ssize_t sample_size(int sample_type)
{
    return sample_type == DH_SAMPLE_FLOAT32 ? 4 : 2;
}

/* parzen_evaluate(parzen, pixels, fixed, fixed_type, fixed_mask or None, moving, moving_type,
 *                 moving_masks or None, count, out, gradient or None): host buffers, each
 * checked to hold what the call reads or writes. */
static PyObject *py_parzen_evaluate(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *capsule, *obj[6];
    Py_ssize_t pixels;
    int ftype, mtype;
    unsigned count;
    if (!PyArg_ParseTuple(args, "OnOiOOiOIOO", &capsule, &pixels, &obj[0], &ftype, &obj[1],
                          &obj[2], &mtype, &obj[3], &count, &obj[4], &obj[5]))
        return NULL;
    parzen_box *box = PyCapsule_GetPointer(capsule, PARZEN_NAME);
    if (!box)
        return NULL;
    if (pixels < 1 || count < 1) {
        PyErr_SetString(PyExc_ValueError, "parzen_evaluate: pixels >= 1 and count >= 1 needed");
        return NULL;
    }
    const Py_ssize_t batch = pixels * (Py_ssize_t)count;
    const Py_ssize_t need[6] = {pixels * sample_size(ftype), pixels, batch * sample_size(mtype),
                                batch, (Py_ssize_t)count * (Py_ssize_t)sizeof(dh_mi_scores),
                                batch * 4};
    static const char *const what[6] = {"fixed image", "fixed mask", "moving images",
                                         "moving masks", "score records", "gradient"};
    Py_buffer view[6];
    for (int i = 0; i < 6; i++) {
        int optional = i == 1 || i == 3 || i == 5;
        if (optional && obj[i] == Py_None) {
            obj[i] = NULL;
            continue;
        }
        if (core_get_buffer(obj[i], &view[i], need[i], i >= 4, what[i]) < 0) {
            release_all(view, obj, i);
            return NULL;
        }
    }
    dh_status st;
    Py_BEGIN_ALLOW_THREADS
    st = dh_parzen_mi_evaluate(box->ctx, box->parzen, (size_t)pixels, view[0].buf, ftype,
                               obj[1] ? view[1].buf : NULL, view[2].buf, mtype,
                               obj[3] ? view[3].buf : NULL, count, view[4].buf,
                               obj[5] ? view[5].buf : NULL);
    Py_END_ALLOW_THREADS
    release_all(view, obj, 6);
    if (st != DH_OK)
        return core_raise(st, dh_ctx_error(box->ctx));
    Py_RETURN_NONE;
}

/* parzen_evaluate_device(parzen, pixels, fixed_ptr, fixed_type, fixed_mask_ptr, moving_ptr,
 *                        moving_type, moving_masks_ptr, count, stream, out_ptr, gradient_ptr):
 * device pointers (0 for none) and a cudaStream_t as integers; only enqueues (the GIL is
 * kept). A fast call (positional integers, no tuple): ParzenMI.evaluate's per-call entry. */
static PyObject *py_parzen_evaluate_device(PyObject *self, PyObject *const *args,
                                           Py_ssize_t nargs)
{
    (void)self;
    static const char who[] = "parzen_evaluate_device";
    if (nargs != 12) {
        PyErr_Format(PyExc_TypeError, "%s takes 12 arguments, not %zd", who, nargs);
        return NULL;
    }
    parzen_box *box = PyCapsule_GetPointer(args[0], PARZEN_NAME);
    if (!box)
        return NULL;
    /* pixels, fixed, ftype, fmask, moving, mtype, mmask, count, stream, out, gradient */
    unsigned long long a[11];
    if (core_unsigned_args(args, 1, 11, a, who) < 0)
        return NULL;
    if (a[0] < 1 || a[7] > UINT32_MAX || a[2] > 16 || a[5] > 16) {
        PyErr_Format(PyExc_ValueError, "%s: pixels >= 1 needed; count or a sample type out of "
                     "range", who);
        return NULL;
    }
    dh_status st = dh_parzen_mi_evaluate_device(
        box->ctx, box->parzen, (size_t)a[0], (const void *)(uintptr_t)a[1], (int)a[2],
        (const uint8_t *)(uintptr_t)a[3], (const void *)(uintptr_t)a[4], (int)a[5],
        (const uint8_t *)(uintptr_t)a[6], (uint32_t)a[7], (void *)(uintptr_t)a[8],
        (dh_mi_scores *)(uintptr_t)a[9], (float *)(uintptr_t)a[10]);
    if (st != DH_OK)
        return core_raise(st, dh_ctx_error(box->ctx));
    Py_RETURN_NONE;
}

/* Records of a call that fit on the stack; a larger batch takes them from the heap. */
#define STACK_RECORDS 16

/* parzen_evaluate_pointers(parzen, pixels, fixed_addr, fixed_type, fixed_mask_addr, moving_addr,
 *                          moving_type, moving_masks_addr, count, value_addr, column, sign,
 *                          gradient_addr): host memory by address (0 for none), for
 * dicomhist.torch, whose per-call cost this is: that module has checked that each tensor holds
 * what the call reads or writes (shapes, dtypes, compact memory), so no buffer is exported and
 * no result object is made here. Writes value[i] = sign * (record i's mi, column 0, or nmi,
 * column 1) as float64 and, with a gradient, the gradient of that signed score (negation is
 * exact: the same bits as the records' and the gradient's, signed). The GIL is released. */
static PyObject *py_parzen_evaluate_pointers(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *capsule;
    Py_ssize_t pixels;
    unsigned long long fixed, fmask, moving, mmask, value, grad;
    int ftype, mtype, column;
    unsigned count;
    double sign;
    if (!PyArg_ParseTuple(args, "OnKiKKiKIKidK", &capsule, &pixels, &fixed, &ftype, &fmask,
                          &moving, &mtype, &mmask, &count, &value, &column, &sign, &grad))
        return NULL;
    parzen_box *box = PyCapsule_GetPointer(capsule, PARZEN_NAME);
    if (!box)
        return NULL;
    if (pixels < 1 || count < 1 || !value || (column != 0 && column != 1)) {
        PyErr_SetString(PyExc_ValueError, "parzen_evaluate_pointers: pixels >= 1, count >= 1, "
                                          "a value buffer and column 0 (mi) or 1 (nmi) needed");
        return NULL;
    }
    dh_mi_scores stack[STACK_RECORDS];
    dh_mi_scores *rec = count <= STACK_RECORDS ? stack : PyMem_Malloc(count * sizeof *rec);
    if (!rec)
        return PyErr_NoMemory();
    double *values = (double *)(uintptr_t)value;
    float *gradient = (float *)(uintptr_t)grad;
    dh_status st;
    Py_BEGIN_ALLOW_THREADS
    st = dh_parzen_mi_evaluate(box->ctx, box->parzen, (size_t)pixels,
                               (const void *)(uintptr_t)fixed, ftype,
                               (const uint8_t *)(uintptr_t)fmask, (const void *)(uintptr_t)moving,
                               mtype, (const uint8_t *)(uintptr_t)mmask, count, rec, gradient);
    if (st == DH_OK) {
        for (unsigned i = 0; i < count; i++)
            values[i] = sign * (column ? rec[i].nmi : rec[i].mi);
        if (gradient && sign != 1.0)
            for (size_t k = 0, n = (size_t)pixels * count; k < n; k++)
                gradient[k] = (float)sign * gradient[k];
    }
    Py_END_ALLOW_THREADS
    if (rec != stack)
        PyMem_Free(rec);
    if (st != DH_OK)
        return core_raise(st, dh_ctx_error(box->ctx));
    Py_RETURN_NONE;
}

/* parzen_evaluate_device_signed(parzen, pixels, fixed_ptr, fixed_type, fixed_mask_ptr,
 *                               moving_ptr, moving_type, moving_masks_ptr, count, stream, sign,
 *                               values_ptr, gradient_ptr): dh_parzen_mi_evaluate_device_signed,
 * for dicomhist.torch on CUDA tensors (only enqueues, so the GIL is kept). A fast call
 * (positional arguments, no tuple, no format string parsed): this is per optimizer step. */
static PyObject *py_parzen_evaluate_device_signed(PyObject *self, PyObject *const *args,
                                                  Py_ssize_t nargs)
{
    (void)self;
    static const char who[] = "parzen_evaluate_device_signed";
    if (nargs != 13) {
        PyErr_Format(PyExc_TypeError, "%s takes 13 arguments, not %zd", who, nargs);
        return NULL;
    }
    parzen_box *box = PyCapsule_GetPointer(args[0], PARZEN_NAME);
    if (!box)
        return NULL;
    unsigned long long a[9]; /* pixels, fixed, ftype, fmask, moving, mtype, mmask, count, stream */
    unsigned long long v[2]; /* values, gradient */
    if (core_unsigned_args(args, 1, 9, a, who) < 0 || core_unsigned_args(args, 11, 2, v, who) < 0)
        return NULL;
    const double sign = PyFloat_AsDouble(args[10]);
    if (sign == -1.0 && PyErr_Occurred())
        return NULL;
    if (a[7] > UINT32_MAX || a[2] > 16 || a[5] > 16) {
        PyErr_Format(PyExc_ValueError, "%s: count or a sample type out of range", who);
        return NULL;
    }
    dh_status st = dh_parzen_mi_evaluate_device_signed(
        box->ctx, box->parzen, (size_t)a[0], (const void *)(uintptr_t)a[1], (int)a[2],
        (const uint8_t *)(uintptr_t)a[3], (const void *)(uintptr_t)a[4], (int)a[5],
        (const uint8_t *)(uintptr_t)a[6], (uint32_t)a[7], (void *)(uintptr_t)a[8], sign,
        (double *)(uintptr_t)v[0], (float *)(uintptr_t)v[1]);
    if (st != DH_OK)
        return core_raise(st, dh_ctx_error(box->ctx));
    Py_RETURN_NONE;
}

/* parzen_scale_gradient_device(parzen, gradient_ptr, pixels, count, factors_ptr, factor_stride,
 *                              sign, out_ptr, stream): dh_parzen_mi_scale_gradient_device (the
 * parzen handle for its context's message), a fast call as above. */
static PyObject *py_parzen_scale_gradient_device(PyObject *self, PyObject *const *args,
                                                 Py_ssize_t nargs)
{
    (void)self;
    static const char who[] = "parzen_scale_gradient_device";
    if (nargs != 9) {
        PyErr_Format(PyExc_TypeError, "%s takes 9 arguments, not %zd", who, nargs);
        return NULL;
    }
    parzen_box *box = PyCapsule_GetPointer(args[0], PARZEN_NAME);
    if (!box)
        return NULL;
    unsigned long long a[5]; /* gradient, pixels, count, factors, factor_stride */
    unsigned long long b[2]; /* out, stream */
    if (core_unsigned_args(args, 1, 5, a, who) < 0 || core_unsigned_args(args, 7, 2, b, who) < 0)
        return NULL;
    const double sign = PyFloat_AsDouble(args[6]);
    if (sign == -1.0 && PyErr_Occurred())
        return NULL;
    if (a[2] > UINT32_MAX) {
        PyErr_Format(PyExc_ValueError, "%s: count out of range", who);
        return NULL;
    }
    dh_status st = dh_parzen_mi_scale_gradient_device(
        box->ctx, (const float *)(uintptr_t)a[0], (size_t)a[1], (uint32_t)a[2],
        (const double *)(uintptr_t)a[3], (size_t)a[4], sign, (float *)(uintptr_t)b[0],
        (void *)(uintptr_t)b[1]);
    if (st != DH_OK)
        return core_raise(st, dh_ctx_error(box->ctx));
    Py_RETURN_NONE;
}

PyMethodDef core_parzen_methods[] = {
    {"parzen_new", (PyCFunction)(void (*)(void))py_parzen_new, METH_VARARGS | METH_KEYWORDS,
     "dh_parzen_mi_create; keyword arguments are dh_parzen_mi_params fields."},
    {"parzen_evaluate", py_parzen_evaluate, METH_VARARGS, "dh_parzen_mi_evaluate."},
    {"parzen_evaluate_device", (PyCFunction)(void (*)(void))py_parzen_evaluate_device,
     METH_FASTCALL, "dh_parzen_mi_evaluate_device."},
    {"parzen_evaluate_pointers", py_parzen_evaluate_pointers, METH_VARARGS,
     "dh_parzen_mi_evaluate on host addresses, one score column signed (dicomhist.torch)."},
    {"parzen_evaluate_device_signed", (PyCFunction)(void (*)(void))py_parzen_evaluate_device_signed,
     METH_FASTCALL, "dh_parzen_mi_evaluate_device_signed (dicomhist.torch on CUDA tensors)."},
    {"parzen_scale_gradient_device", (PyCFunction)(void (*)(void))py_parzen_scale_gradient_device,
     METH_FASTCALL, "dh_parzen_mi_scale_gradient_device (dicomhist.torch's backward on CUDA)."},
    {NULL, NULL, 0, NULL},
};
