// SPDX-License-Identifier: MIT
/*
 * core_enhance.c: an enhancement written as `dicomhist equalize` and `dicomhist window` write it,
 * for dicomhist/derived.py: dh_equalize, then dh_equalized_write_dicom_with (a derived series)
 * and, when asked, dh_equalized_write_png_with (8-bit previews), from one result, so the files
 * hold exactly the numbers returned beside them. And dh_equalize_device for dicomhist/_enhance.py:
 * equalization and CLAHE of CuPy and PyTorch CUDA arrays where they are.
 */
#include "core.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The PNG files the writer reports through dh_derive_params.written, gathered without the GIL
 * (the callback runs inside the call) and turned into a list afterwards. */
typedef struct {
    char **names;
    size_t count, capacity;
    int failed; /* out of memory while gathering: reported once the GIL is back */
} written_list;

static void gather_written(void *user, const char *source, const char *output)
{
    (void)source;
    written_list *w = user;
    if (w->failed)
        return;
    if (w->count == w->capacity) {
        size_t cap = w->capacity ? 2 * w->capacity : 16;
        char **grown = realloc(w->names, cap * sizeof *grown);
        if (!grown) {
            w->failed = 1;
            return;
        }
        w->names = grown, w->capacity = cap;
    }
    if (!(w->names[w->count] = strdup(output)))
        w->failed = 1;
    else
        w->count++;
}

static void written_list_free(written_list *w)
{
    for (size_t i = 0; i < w->count; i++)
        free(w->names[i]);
    free(w->names);
}

static PyObject *string_list(char *const *items, size_t count)
{
    PyObject *list = PyList_New((Py_ssize_t)count);
    for (size_t i = 0; list && i < count; i++) {
        PyObject *s = PyUnicode_DecodeFSDefault(items[i]);
        if (!s) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SetItem(list, (Py_ssize_t)i, s);
    }
    return list;
}

/* The keywords of write_derived that are not dh_equalize_params fields, taken out of kwargs
 * (a copy) before the rest goes to core_equalize_params. */
typedef struct {
    const char *png;   /* NULL: no previews */
    int uids, existing;
    long long created;
} derive_options;

static int pop_derive_options(PyObject *kwargs, derive_options *o, PyObject **png_owner)
{
    o->png = NULL, o->uids = DH_UIDS_RANDOM, o->existing = DH_EXISTING_FAIL, o->created = -1;
    *png_owner = NULL;
    if (!kwargs)
        return 0;
    PyObject *v;
    if ((v = PyDict_GetItemString(kwargs, "png")) && v != Py_None) { /* borrowed */
        if (!PyUnicode_FSConverter(v, png_owner))
            return -1;
        o->png = PyBytes_AsString(*png_owner);
    }
    if ((v = PyDict_GetItemString(kwargs, "uids")) && (o->uids = (int)PyLong_AsLong(v)) == -1 &&
        PyErr_Occurred())
        return -1;
    if ((v = PyDict_GetItemString(kwargs, "existing")) &&
        (o->existing = (int)PyLong_AsLong(v)) == -1 && PyErr_Occurred())
        return -1;
    if ((v = PyDict_GetItemString(kwargs, "created")) && v != Py_None &&
        (o->created = PyLong_AsLongLong(v)) == -1 && PyErr_Occurred())
        return -1;
    const char *mine[] = {"png", "uids", "existing", "created"};
    for (size_t i = 0; i < sizeof mine / sizeof mine[0]; i++)
        if (PyDict_GetItemString(kwargs, mine[i]) && PyDict_DelItemString(kwargs, mine[i]) < 0)
            return -1;
    return 0;
}

static PyObject *result_dict(const dh_equalized *r, const dh_derived_series *d,
                             const written_list *pngs)
{
    const size_t n = (size_t)r->rows * r->columns * r->slices;
    return Py_BuildValue(
        "{s:I,s:I,s:I,s:I,s:y#,s:s,s:s,s:s,s:N,s:N,s:N,s:N}", "rows", r->rows, "columns",
        r->columns, "slices", r->slices, "output_bits", r->output_bits, "data",
        (const char *)r->data, (Py_ssize_t)(n * 2), "description", r->description, "device",
        r->device_used == DH_DEVICE_CUDA ? "cuda" : "cpu", "series_uid", d->series_uid, "files",
        string_list(d->files, d->file_count), "sop_uids", string_list(d->sop_uids, d->file_count),
        "sources", string_list(d->sources, d->file_count), "pngs",
        string_list(pngs->names, pngs->count));
}

/* write_derived(ctx, volume, output_dir, png=None, uids=, existing=, created=, **fields of
 * dh_equalize_params) -> dict: the new stored values and what was written. */
static PyObject *py_write_derived(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    PyObject *ctx_obj, *vol_obj, *dir_owner = NULL, *png_owner = NULL, *rest = NULL;
    if (!PyArg_ParseTuple(args, "OOO&", &ctx_obj, &vol_obj, PyUnicode_FSConverter, &dir_owner))
        return NULL;
    dh_ctx *ctx = core_ctx(ctx_obj);
    const dh_volume *v = core_volume(vol_obj);
    derive_options o;
    dh_equalize_params p;
    PyObject *result = NULL;
    if (!ctx || !v || !(rest = kwargs ? PyDict_Copy(kwargs) : PyDict_New()) ||
        pop_derive_options(rest, &o, &png_owner) < 0 || core_equalize_params(rest, &p) < 0)
        goto done;
    const char *dir = PyBytes_AsString(dir_owner);
    written_list pngs = {NULL, 0, 0, 0};
    dh_derive_params wp;
    dh_derive_params_init(&wp);
    wp.uids = (dh_uids)o.uids, wp.existing = (dh_existing)o.existing, wp.created = o.created;
    wp.written = gather_written, wp.user = &pngs;
    dh_equalized *r = NULL;
    dh_derived_series *d = NULL;
    dh_status st;
    Py_BEGIN_ALLOW_THREADS
    st = dh_equalize(ctx, v, &p, &r);
    if (st == DH_OK)
        st = dh_equalized_write_dicom_with(ctx, v, r, dir, &wp, &d);
    if (st == DH_OK) {
        written_list_free(&pngs); /* the DICOM files are in *d; gather the PNGs alone */
        memset(&pngs, 0, sizeof pngs);
        if (o.png)
            st = dh_equalized_write_png_with(ctx, v, r, o.png, &wp);
    }
    Py_END_ALLOW_THREADS
    if (st != DH_OK)
        core_raise(st, dh_ctx_error(ctx));
    else if (pngs.failed)
        PyErr_NoMemory();
    else
        result = result_dict(r, d, &pngs);
    written_list_free(&pngs);
    dh_equalized_free(r);
    dh_derived_series_free(d);
done:
    Py_XDECREF(rest);
    Py_XDECREF(png_owner);
    Py_XDECREF(dir_owner);
    return result;
}

/* equalize_device(ctx, d_samples, is_signed, bits_stored, columns, rows, slices, d_out, stream,
 * **fields of dh_equalize_params) -> None: dh_equalize_device on device addresses (ints). */
static PyObject *py_equalize_device(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    PyObject *ctx_obj;
    unsigned long long samples, out, stream;
    int is_signed;
    unsigned bits, columns, rows, slices;
    if (!PyArg_ParseTuple(args, "OKpIIIIKK", &ctx_obj, &samples, &is_signed, &bits, &columns,
                          &rows, &slices, &out, &stream))
        return NULL;
    dh_ctx *ctx = core_ctx(ctx_obj);
    dh_equalize_params p;
    if (!ctx || core_equalize_params(kwargs, &p) < 0)
        return NULL;
    dh_status st;
    Py_BEGIN_ALLOW_THREADS
    st = dh_equalize_device(ctx, (const void *)(uintptr_t)samples, is_signed, bits, columns, rows,
                            slices, &p, (uint16_t *)(uintptr_t)out, (void *)(uintptr_t)stream);
    Py_END_ALLOW_THREADS
    if (st != DH_OK)
        return core_raise(st, dh_ctx_error(ctx));
    Py_RETURN_NONE;
}

PyMethodDef core_enhance_methods[] = {
    {"equalize_device", (PyCFunction)(void (*)(void))py_equalize_device,
     METH_VARARGS | METH_KEYWORDS, "dh_equalize_device; keyword arguments are "
     "dh_equalize_params fields."},
    {"write_derived", (PyCFunction)(void (*)(void))py_write_derived, METH_VARARGS | METH_KEYWORDS,
     "dh_equalize, then dh_equalized_write_dicom_with and dh_equalized_write_png_with."},
    {NULL, NULL, 0, NULL},
};
