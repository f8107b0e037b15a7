// SPDX-License-Identifier: MIT
/*
 * core_support.c: what every part of dicomhist._core uses: the status-to-exception bridge,
 * contexts in capsules, and buffers over library-owned memory (core.h declares them). The
 * module (core_module.c) adds core_support_methods to itself.
 */
#include "core.h"

/* status code -> exception class, set once by dicomhist/errors.py (_register_errors). */
static PyObject *error_classes;

PyObject *core_raise(dh_status status, const char *message)
{
    const char *name = dh_status_name(status);
    PyObject *cls = NULL;
    if (error_classes) {
        PyObject *key = PyLong_FromLong((long)status);
        if (key) {
            cls = PyDict_GetItemWithError(error_classes, key); /* borrowed */
            Py_DECREF(key);
        }
        if (PyErr_Occurred())
            return NULL;
    }
    if (!cls)
        cls = PyExc_RuntimeError;
    PyObject *args = Py_BuildValue("(ss)", name ? name : "DH_ERR_INTERNAL", message ? message : "");
    if (!args)
        return NULL;
    PyErr_SetObject(cls, args);
    Py_DECREF(args);
    return NULL;
}

static PyObject *register_errors(PyObject *self, PyObject *mapping)
{
    (void)self;
    if (!PyDict_Check(mapping)) {
        PyErr_SetString(PyExc_TypeError, "_register_errors needs a dict");
        return NULL;
    }
    Py_XDECREF(error_classes);
    Py_INCREF(mapping);
    error_classes = mapping;
    Py_RETURN_NONE;
}

/* --- contexts ---------------------------------------------------------------------------- */
static const char CTX_NAME[] = "dicomhist.ctx";

static void ctx_destroy(PyObject *capsule)
{
    dh_ctx_free(PyCapsule_GetPointer(capsule, CTX_NAME));
}

dh_ctx *core_ctx(PyObject *capsule)
{
    return PyCapsule_GetPointer(capsule, CTX_NAME);
}

static PyObject *ctx_new(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    dh_ctx *ctx = dh_ctx_create();
    if (!ctx)
        return PyErr_NoMemory();
    PyObject *capsule = PyCapsule_New(ctx, CTX_NAME, ctx_destroy);
    if (!capsule)
        dh_ctx_free(ctx);
    return capsule;
}

/* --- buffers over library memory --------------------------------------------------------- */
typedef struct {
    PyObject_HEAD
    PyObject *owner;
    void *data;
    Py_ssize_t len;
    int readonly;
} memory_object;

static PyObject *memory_type;

static int memory_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    memory_object *m = (memory_object *)self;
    return PyBuffer_FillInfo(view, self, m->data, m->len, m->readonly, flags);
}

static void memory_dealloc(PyObject *self)
{
    memory_object *m = (memory_object *)self;
    PyTypeObject *type = Py_TYPE(self);
    Py_XDECREF(m->owner);
    freefunc tp_free = (freefunc)PyType_GetSlot(type, Py_tp_free);
    tp_free(self);
    Py_DECREF(type);
}

static PyType_Slot memory_slots[] = {
    {Py_bf_getbuffer, (void *)memory_getbuffer},
    {Py_tp_dealloc, (void *)memory_dealloc},
    {Py_tp_doc, (void *)"Memory owned by the library, exported through the buffer protocol."},
    {0, NULL},
};

static PyType_Spec memory_spec = {
    .name = "dicomhist._core.Memory",
    .basicsize = sizeof(memory_object),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = memory_slots,
};

int core_memory_type_init(PyObject *module)
{
    memory_type = PyType_FromSpec(&memory_spec);
    if (!memory_type)
        return -1;
    Py_INCREF(memory_type);
    if (PyModule_AddObject(module, "Memory", memory_type) < 0) {
        Py_DECREF(memory_type);
        return -1;
    }
    return 0;
}

PyObject *core_memory_new(PyObject *owner, void *data, Py_ssize_t len, int readonly)
{
    allocfunc alloc = (allocfunc)PyType_GetSlot((PyTypeObject *)memory_type, Py_tp_alloc);
    memory_object *m = (memory_object *)alloc((PyTypeObject *)memory_type, 0);
    if (!m)
        return NULL;
    Py_INCREF(owner);
    m->owner = owner;
    m->data = data;
    m->len = len;
    m->readonly = readonly;
    return (PyObject *)m;
}

int core_get_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t min_len, int writable,
                    const char *what)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    if (view->len < min_len) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes, %zd needed", what, view->len, min_len);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

int core_unsigned_args(PyObject *const *args, Py_ssize_t first, Py_ssize_t n,
                       unsigned long long *out, const char *who)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = PyLong_AsUnsignedLongLong(args[first + i]);
        if (out[i] == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Format(PyExc_TypeError, "%s: argument %zd must be a non-negative int", who,
                         first + i);
            return -1;
        }
    }
    return 0;
}

/* --- the module's methods of this file ----------------------------------------------------- */
PyMethodDef core_support_methods[] = {
    {"_register_errors", register_errors, METH_O, "Sets the status-code -> exception map."},
    {"ctx_new", ctx_new, METH_NOARGS, "A new dh_ctx in a capsule."},
    {NULL, NULL, 0, NULL},
};

const char **core_ctx_and_paths(PyObject *args, dh_ctx **ctx, Py_ssize_t *count)
{
    PyObject *ctx_obj, *paths;
    if (!PyArg_ParseTuple(args, "OO!", &ctx_obj, &PyTuple_Type, &paths))
        return NULL;
    if (!(*ctx = core_ctx(ctx_obj)))
        return NULL;
    *count = PyTuple_Size(paths);
    const char **cpaths = PyMem_Calloc(*count ? (size_t)*count : 1, sizeof *cpaths);
    if (!cpaths) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < *count; i++)
        if (!(cpaths[i] = PyUnicode_AsUTF8AndSize(PyTuple_GetItem(paths, i), NULL))) {
            PyMem_Free(cpaths);
            return NULL;
        }
    return cpaths;
}
