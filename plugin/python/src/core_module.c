// SPDX-License-Identifier: MIT
/*
 * core_module.c: the module dicomhist._core: its own two functions (CUDA available, version),
 * the method tables of core_support.c, core_volume.c, core_mi.c, core_parzen.c and core_params.c, and the
 * constants of core_constants.c. Only this file refers to the others' tables, and none of them
 * calls into it.
 */
#include "core.h"

static PyObject *cuda_available(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    return PyBool_FromLong(dh_cuda_available());
}

static PyObject *version(PyObject *self, PyObject *noargs)
{
    (void)self, (void)noargs;
    return PyUnicode_FromString(dh_version_string());
}

/* --- the module ---------------------------------------------------------------------------- */
static PyMethodDef module_methods[] = {
    {"cuda_available", cuda_available, METH_NOARGS, "dh_cuda_available()."},
    {"version", version, METH_NOARGS, "dh_version_string()."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "dicomhist._core", "The C layer of dicomhist (see dicomhist/__init__.py).",
    -1, module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__core(void)
{
    PyObject *m = PyModule_Create(&module_def);
    if (!m)
        return NULL;
    if (PyModule_AddFunctions(m, core_support_methods) < 0 ||
        PyModule_AddFunctions(m, core_volume_methods) < 0 ||
        PyModule_AddFunctions(m, core_mi_methods) < 0 ||
        PyModule_AddFunctions(m, core_parzen_methods) < 0 ||
        PyModule_AddFunctions(m, core_params_methods) < 0 ||
        PyModule_AddFunctions(m, core_enhance_methods) < 0 ||
        PyModule_AddFunctions(m, core_device_methods) < 0 || core_memory_type_init(m) < 0 ||
        core_constants_add(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
