// SPDX-License-Identifier: MIT
/*
 * core.h: what the files of the extension module dicomhist._core share. The module is a thin
 * layer over the public C API (dicomhist.h) in the limited API of Python 3.11 (one abi3 build for
 * every later Python): it turns Python buffers and integers into the API's pointers, keyword
 * arguments into its parameter structs and its statuses into exceptions, and exports the API's
 * enum values; arrays, the public names and their defaults live in the Python package around it.
 */
#ifndef DH_PYTHON_CORE_H
#define DH_PYTHON_CORE_H

#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "dicomhist.h"

/* Raises the exception class registered for `status` (dicomhist.errors) with the status name and
 * message; returns NULL for `return core_raise(...)`. */
PyObject *core_raise(dh_status status, const char *message);

/* The dh_ctx inside a context capsule (core_ctx_new), or NULL with a TypeError. */
dh_ctx *core_ctx(PyObject *capsule);

/* A read-only or writable buffer over memory owned by `owner` (kept alive as long as any view of
 * the buffer is): how volume pixels reach NumPy without a copy. */
PyObject *core_memory_new(PyObject *owner, void *data, Py_ssize_t len, int readonly);

/* The arguments (ctx, paths) of the calls that read paths: the context, and the tuple of str
 * paths as UTF-8 strings (valid while the tuple lives), a PyMem_Free'd array; NULL with an
 * exception set. */
const char **core_ctx_and_paths(PyObject *args, dh_ctx **ctx, Py_ssize_t *count);

/* A C buffer of an object exporting the buffer protocol, contiguous, at least min_len bytes;
 * writable when asked. Returns 0, or -1 with an exception set. */
int core_get_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t min_len, int writable,
                    const char *what);

/* The unsigned integers (addresses, sizes, handles, enum values) args[first .. first + n - 1]
 * of a METH_FASTCALL entry into out: the per-call entries of the device paths take positional
 * integers without a tuple or a format string parsed (issue 22's host cost). Returns 0, or -1
 * with a TypeError naming `who`. */
int core_unsigned_args(PyObject *const *args, Py_ssize_t first, Py_ssize_t n,
                       unsigned long long *out, const char *who);

/* A call's parameter struct: the struct's *_init defaults, then each keyword argument of
 * `kwargs` (NULL: none) onto the field of its name (core_params.c); a keyword that names no
 * field is a TypeError. Return 0, or -1 with an exception set. */
int core_hist_params(PyObject *kwargs, dh_hist_params *p);
int core_equalize_params(PyObject *kwargs, dh_equalize_params *p);
int core_mi_params(PyObject *kwargs, dh_mi_params *p);
int core_parzen_params(PyObject *kwargs, dh_parzen_mi_params *p);

/* The values of the API's enums as module constants, their names without "DH_"
 * (DEVICE_CUDA, WINDOW_MINMAX, ...), for the Python side (core_constants.c). */
int core_constants_add(PyObject *module);

/* Registration of each file's functions into the module's method table. */
extern PyMethodDef core_support_methods[];
extern PyMethodDef core_volume_methods[];
extern PyMethodDef core_mi_methods[];
extern PyMethodDef core_parzen_methods[];
extern PyMethodDef core_params_methods[];
int core_memory_type_init(PyObject *module);

/* The dh_volume inside a volume capsule (core_volume.c), or NULL with an exception set; and the
 * derived output's table (core_enhance.c). */
const dh_volume *core_volume(PyObject *capsule);
/* A failed input as the package lists it: (path, status name, status code, message). */
PyObject *core_status_tuple(const char *path, dh_status st, const char *msg);
extern PyMethodDef core_enhance_methods[];
/* Series read straight into GPU memory (core_device.c). */
extern PyMethodDef core_device_methods[];

#endif /* DH_PYTHON_CORE_H */
