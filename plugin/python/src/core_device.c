// SPDX-License-Identifier: MIT
/*
 * core_device.c: series read straight into GPU memory, for dicomhist/volume.py's
 * read(..., device="cuda"): a plan scanned (its failures, skips and each series' size, so that
 * Python can allocate each series' buffer with CuPy or PyTorch), then each series loaded into that
 * buffer (dh_plan_load_series_device), its host record a volume capsule like core_volume.c's.
 */
#include "core.h"

static const char PLAN_NAME[] = "dicomhist.plan";
static const char DEVICE_NAME[] = "dicomhist.device_volume";
/* core_volume.c's name: its functions take these capsules as they take a host volume's. */
static const char VOLUME_NAME[] = "dicomhist.volume";

static void plan_destroy(PyObject *capsule)
{
    dh_plan_free(PyCapsule_GetPointer(capsule, PLAN_NAME));
}

/* The device volume's samples are the caller's array (not owned): only its set is freed. */
static void device_destroy(PyObject *capsule)
{
    dh_device_volume *dv = PyCapsule_GetPointer(capsule, DEVICE_NAME);
    dh_device_volume_release(dv, NULL);
    PyMem_Free(dv);
}

/* A volume capsule keeps its device volume capsule alive through its context. */
static void volume_destroy(PyObject *capsule)
{
    Py_XDECREF((PyObject *)PyCapsule_GetContext(capsule));
}

static int append(PyObject *list, PyObject *item)
{
    int bad = !item || PyList_Append(list, item);
    Py_XDECREF(item);
    return bad ? -1 : 0;
}

/* plan_scan(ctx, paths) -> (plan, failures [(path, name, code, message)], skipped [path],
 * series sizes in bytes [int]) */
static PyObject *py_plan_scan(PyObject *self, PyObject *args)
{
    (void)self;
    dh_ctx *ctx;
    Py_ssize_t count;
    const char **cpaths = core_ctx_and_paths(args, &ctx, &count);
    if (!cpaths)
        return NULL;
    dh_plan *plan = NULL;
    dh_status st;
    Py_BEGIN_ALLOW_THREADS
    st = dh_plan_scan(ctx, cpaths, (size_t)count, &plan);
    Py_END_ALLOW_THREADS
    PyMem_Free(cpaths);
    if (st != DH_OK)
        return core_raise(st, dh_ctx_error(ctx));
    PyObject *capsule = PyCapsule_New(plan, PLAN_NAME, plan_destroy);
    if (!capsule) {
        dh_plan_free(plan);
        return NULL;
    }
    PyObject *failures = PyList_New(0), *skipped = PyList_New(0), *sizes = PyList_New(0);
    PyObject *result = NULL;
    if (!failures || !skipped || !sizes)
        goto done;
    /* The scan's failures and skips in the order found, as dh_volume_set_load lists them. */
    for (size_t i = 0; i < dh_plan_file_count(plan); i++) {
        const dh_plan_file_state state = dh_plan_file_state_of(plan, i);
        const char *path = dh_plan_file_path(plan, i);
        if (state == DH_PLAN_FILE_FAILED) {
            const char *m = dh_plan_file_message(plan, i);
            PyObject *msg = PyUnicode_FromFormat("%s: %s", path, m[0] ? m : "failed");
            const char *text = msg ? PyUnicode_AsUTF8AndSize(msg, NULL) : NULL;
            int bad = !text || append(failures, core_status_tuple(
                                                    path, dh_plan_file_status(plan, i), text));
            Py_XDECREF(msg);
            if (bad)
                goto done;
        } else if (state == DH_PLAN_FILE_SKIPPED && append(skipped, PyUnicode_FromString(path))) {
            goto done;
        }
    }
    for (size_t k = 0; k < dh_plan_series_count(plan); k++)
        if (append(sizes, PyLong_FromUnsignedLongLong(dh_plan_series_sample_bytes(plan, k))))
            goto done;
    result = PyTuple_Pack(4, capsule, failures, skipped, sizes);
done:
    Py_XDECREF(failures), Py_XDECREF(skipped), Py_XDECREF(sizes);
    Py_DECREF(capsule);
    return result;
}

/* plan_load_device(ctx, plan, series, address, capacity, stream) -> (volume or None, failures,
 * gpu_frames, cpu_frames): the series' samples written at address (device memory of capacity
 * bytes, the caller's array) on stream. */
static PyObject *py_plan_load_device(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *ctx_obj, *plan_obj;
    Py_ssize_t series;
    unsigned long long address, capacity, stream;
    if (!PyArg_ParseTuple(args, "OOnKKK", &ctx_obj, &plan_obj, &series, &address, &capacity,
                          &stream))
        return NULL;
    dh_ctx *ctx = core_ctx(ctx_obj);
    const dh_plan *plan = PyCapsule_GetPointer(plan_obj, PLAN_NAME);
    if (!ctx || !plan)
        return NULL;
    dh_device_volume *dv = PyMem_Calloc(1, sizeof *dv);
    if (!dv)
        return PyErr_NoMemory();
    dh_status st;
    Py_BEGIN_ALLOW_THREADS
    st = dh_plan_load_series_device(ctx, plan, (size_t)series, (void *)(uintptr_t)stream,
                                    (void *)(uintptr_t)address, (size_t)capacity, dv);
    Py_END_ALLOW_THREADS
    if (st != DH_OK) {
        PyMem_Free(dv);
        return core_raise(st, dh_ctx_error(ctx));
    }
    PyObject *owner = PyCapsule_New(dv, DEVICE_NAME, device_destroy);
    if (!owner) {
        dh_device_volume_release(dv, NULL);
        PyMem_Free(dv);
        return NULL;
    }
    PyObject *volume = Py_NewRef(Py_None), *failures = PyList_New(0), *result = NULL;
    if (!failures)
        goto done;
    for (size_t i = 0; i < dh_volume_set_failure_count(dv->set); i++)
        if (append(failures, core_status_tuple(dh_volume_set_failure_path(dv->set, i),
                                               dh_volume_set_failure_status(dv->set, i),
                                               dh_volume_set_failure_message(dv->set, i))))
            goto done;
    if (dh_volume_set_count(dv->set) == 1) {
        Py_DECREF(volume);
        volume = PyCapsule_New((void *)dh_volume_set_volume(dv->set, 0), VOLUME_NAME,
                               volume_destroy);
        if (!volume)
            goto done;
        Py_INCREF(owner);
        PyCapsule_SetContext(volume, owner);
    }
    result = Py_BuildValue("(OOII)", volume, failures, dv->gpu_frames, dv->cpu_frames);
done:
    Py_XDECREF(volume), Py_XDECREF(failures);
    Py_DECREF(owner);
    return result;
}

/* device_volume_download(ctx, volume, stream): the samples of a volume read by
 * plan_load_device copied into its host record (dh_device_volume_download), which from then on
 * is a whole host volume. */
static PyObject *py_device_volume_download(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *ctx_obj, *volume;
    unsigned long long stream;
    if (!PyArg_ParseTuple(args, "OOK", &ctx_obj, &volume, &stream))
        return NULL;
    dh_ctx *ctx = core_ctx(ctx_obj);
    if (!ctx || !PyCapsule_GetPointer(volume, VOLUME_NAME))
        return NULL;
    PyObject *owner = PyCapsule_GetContext(volume);
    dh_device_volume *dv = owner ? PyCapsule_GetPointer(owner, DEVICE_NAME) : NULL;
    if (!dv)
        return PyErr_Format(PyExc_TypeError, "not a volume read with device='cuda'");
    dh_status st;
    Py_BEGIN_ALLOW_THREADS
    st = dh_device_volume_download(ctx, dv, (void *)(uintptr_t)stream);
    Py_END_ALLOW_THREADS
    if (st != DH_OK)
        return core_raise(st, dh_ctx_error(ctx));
    Py_RETURN_NONE;
}

/* gpu_decoders() -> (usable, reason): dh_gpu_decoders_available */
static PyObject *py_gpu_decoders(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    char reason[512] = "";
    int usable = dh_gpu_decoders_available(reason, sizeof reason);
    return Py_BuildValue("(Ns)", PyBool_FromLong(usable), reason);
}

PyMethodDef core_device_methods[] = {
    {"gpu_decoders", py_gpu_decoders, METH_NOARGS, "dh_gpu_decoders_available: (usable, reason)."},
    {"plan_scan", py_plan_scan, METH_VARARGS, "dh_plan_scan: the plan, failures, skips, sizes."},
    {"plan_load_device", py_plan_load_device, METH_VARARGS,
     "dh_plan_load_series_device into the caller's device memory."},
    {"device_volume_download", py_device_volume_download, METH_VARARGS,
     "dh_device_volume_download."},
    {NULL, NULL, 0, NULL},
};
