// SPDX-License-Identifier: MIT
/*
 * core_volume.c: volumes (read from files or made from caller samples), their metadata and
 * pixels, histograms and equalization, for dicomhist/volume.py, histogram.py and equalize.py.
 */
#include "core.h"

#include <string.h>

static const char VOLUME_NAME[] = "dicomhist.volume";
static const char SET_NAME[] = "dicomhist.volume_set";

/* A volume capsule either owns its volume (made from samples) or keeps the set that owns it
 * alive through its context. */
static void volume_destroy(PyObject *capsule)
{
    PyObject *set = PyCapsule_GetContext(capsule);
    if (set)
        Py_DECREF(set);
    else
        dh_volume_free(PyCapsule_GetPointer(capsule, VOLUME_NAME));
}

static void set_destroy(PyObject *capsule)
{
    dh_volume_set_free(PyCapsule_GetPointer(capsule, SET_NAME));
}

static const dh_volume *volume_of(PyObject *capsule)
{
    return PyCapsule_GetPointer(capsule, VOLUME_NAME);
}

const dh_volume *core_volume(PyObject *capsule)
{
    return volume_of(capsule);
}

PyObject *core_status_tuple(const char *path, dh_status st, const char *msg)
{
    return Py_BuildValue("(ssis)", path, dh_status_name(st), (int)st, msg);
}

/* read(ctx, paths) -> (volumes, failures [(path, status name, code, message)], skipped) */
static PyObject *py_read(PyObject *self, PyObject *args)
{
    (void)self;
    dh_ctx *ctx;
    Py_ssize_t count;
    const char **cpaths = core_ctx_and_paths(args, &ctx, &count);
    if (!cpaths)
        return NULL;
    dh_volume_set *set = NULL;
    dh_status st;
    Py_BEGIN_ALLOW_THREADS
    st = dh_volume_set_load(ctx, cpaths, (size_t)count, &set);
    Py_END_ALLOW_THREADS
    PyMem_Free(cpaths);
    if (st != DH_OK)
        return core_raise(st, dh_ctx_error(ctx));
    PyObject *set_capsule = PyCapsule_New(set, SET_NAME, set_destroy);
    if (!set_capsule) {
        dh_volume_set_free(set);
        return NULL;
    }
    PyObject *volumes = PyList_New(0), *failures = PyList_New(0), *skipped = PyList_New(0);
    PyObject *result = NULL;
    if (!volumes || !failures || !skipped)
        goto done;
    for (size_t i = 0; i < dh_volume_set_count(set); i++) {
        PyObject *v = PyCapsule_New((void *)dh_volume_set_volume(set, i), VOLUME_NAME,
                                    volume_destroy);
        if (!v)
            goto done;
        Py_INCREF(set_capsule);
        PyCapsule_SetContext(v, set_capsule);
        int bad = PyList_Append(volumes, v);
        Py_DECREF(v);
        if (bad)
            goto done;
    }
    for (size_t i = 0; i < dh_volume_set_failure_count(set); i++) {
        PyObject *t = core_status_tuple(dh_volume_set_failure_path(set, i),
                                   dh_volume_set_failure_status(set, i),
                                   dh_volume_set_failure_message(set, i));
        if (!t || PyList_Append(failures, t)) {
            Py_XDECREF(t);
            goto done;
        }
        Py_DECREF(t);
    }
    for (size_t i = 0; i < dh_volume_set_skipped_count(set); i++) {
        PyObject *s = PyUnicode_FromString(dh_volume_set_skipped_path(set, i));
        if (!s || PyList_Append(skipped, s)) {
            Py_XDECREF(s);
            goto done;
        }
        Py_DECREF(s);
    }
    result = PyTuple_Pack(3, volumes, failures, skipped);
done:
    Py_XDECREF(volumes), Py_XDECREF(failures), Py_XDECREF(skipped);
    Py_DECREF(set_capsule);
    return result;
}

/* from_samples(ctx, buffer, rows, columns, slices, bits_stored, is_signed) -> volume (copied) */
static PyObject *py_from_samples(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *ctx_obj, *data;
    unsigned rows, columns, slices, bits;
    int is_signed;
    if (!PyArg_ParseTuple(args, "OOIIIIp", &ctx_obj, &data, &rows, &columns, &slices, &bits,
                          &is_signed))
        return NULL;
    dh_ctx *ctx = core_ctx(ctx_obj);
    if (!ctx)
        return NULL;
    Py_buffer view;
    if (core_get_buffer(data, &view, (Py_ssize_t)rows * columns * slices * 2, 0, "samples") < 0)
        return NULL;
    dh_volume *v = NULL;
    dh_status st = dh_volume_from_samples(ctx, rows, columns, slices, bits, is_signed, view.buf, &v);
    PyBuffer_Release(&view);
    if (st != DH_OK)
        return core_raise(st, dh_ctx_error(ctx));
    PyObject *capsule = PyCapsule_New(v, VOLUME_NAME, volume_destroy);
    if (!capsule)
        dh_volume_free(v);
    return capsule;
}

static int set_item(PyObject *dict, const char *key, PyObject *value)
{
    if (!value)
        return -1;
    int r = PyDict_SetItemString(dict, key, value);
    Py_DECREF(value);
    return r;
}

/* volume_info(volume) -> dict of everything the API says about a volume */
static PyObject *py_volume_info(PyObject *self, PyObject *capsule)
{
    (void)self;
    const dh_volume *v = volume_of(capsule);
    if (!v)
        return NULL;
    PyObject *d = PyDict_New();
    if (!d)
        return NULL;
    int32_t smin = 0, smax = 0;
    dh_volume_stored_range(v, &smin, &smax);
    double center = 0, width = 0;
    int has_window = dh_volume_window(v, &center, &width);
    double mmin = 0, mmax = 0;
    dh_volume_modality_range(v, &mmin, &mmax);
    int32_t lut_first = 0;
    uint32_t lut_entries = 0, lut_bits = 0;
    const uint16_t *lut = NULL;
    const int has_lut = dh_volume_modality_lut(v, &lut_first, &lut_entries, &lut_bits, &lut);
    const char *lossy_method = "";
    const int lossy = dh_volume_lossy(v, &lossy_method);
    const char *decoder_note = "";
    const char *decoder = dh_volume_decoder(v, &decoder_note);
    const uint32_t n = dh_volume_slices(v);
    PyObject *sources = PyList_New(n), *frames = PyList_New(n), *locations = PyList_New(n),
             *positions = PyList_New(n), *warnings = PyList_New(0);
    if (!sources || !frames || !locations || !positions || !warnings)
        goto fail_lists;
    for (uint32_t s = 0; s < n; s++) {
        double xyz[3];
        PyList_SetItem(sources, s, PyUnicode_FromString(dh_volume_slice_source(v, s)));
        PyList_SetItem(frames, s, PyLong_FromUnsignedLong(dh_volume_slice_frame(v, s)));
        PyList_SetItem(locations, s, PyFloat_FromDouble(dh_volume_slice_location(v, s)));
        if (dh_volume_slice_position(v, s, xyz))
            PyList_SetItem(positions, s, Py_BuildValue("(ddd)", xyz[0], xyz[1], xyz[2]));
        else
            PyList_SetItem(positions, s, Py_NewRef(Py_None));
    }
    for (size_t i = 0; i < dh_volume_warning_count(v); i++) {
        PyObject *w = PyUnicode_FromString(dh_volume_warning(v, i));
        if (!w || PyList_Append(warnings, w)) {
            Py_XDECREF(w);
            goto fail_lists;
        }
        Py_DECREF(w);
    }
    if (PyErr_Occurred())
        goto fail_lists;
    if (set_item(d, "path", PyUnicode_FromString(dh_volume_path(v))) ||
        set_item(d, "series_uid", PyUnicode_FromString(dh_volume_series_uid(v))) ||
        set_item(d, "study_uid", PyUnicode_FromString(dh_volume_study_uid(v))) ||
        set_item(d, "modality", PyUnicode_FromString(dh_volume_modality(v))) ||
        set_item(d, "rows", PyLong_FromUnsignedLong(dh_volume_rows(v))) ||
        set_item(d, "columns", PyLong_FromUnsignedLong(dh_volume_columns(v))) ||
        set_item(d, "slices", PyLong_FromUnsignedLong(n)) ||
        set_item(d, "bits_allocated", PyLong_FromUnsignedLong(dh_volume_bits_allocated(v))) ||
        set_item(d, "bits_stored", PyLong_FromUnsignedLong(dh_volume_bits_stored(v))) ||
        set_item(d, "signed", PyBool_FromLong(dh_volume_is_signed(v))) ||
        set_item(d, "photometric", PyUnicode_FromString(dh_volume_photometric(v) == DH_MONOCHROME1
                                                            ? "MONOCHROME1"
                                                            : "MONOCHROME2")) ||
        set_item(d, "rescale_slope", PyFloat_FromDouble(dh_volume_rescale_slope(v))) ||
        set_item(d, "rescale_intercept", PyFloat_FromDouble(dh_volume_rescale_intercept(v))) ||
        set_item(d, "modality_lut",
                 has_lut ? Py_BuildValue("{s:I,s:i,s:I}", "entries", (unsigned)lut_entries,
                                         "first_mapped", (int)lut_first, "bits",
                                         (unsigned)lut_bits)
                         : Py_NewRef(Py_None)) ||
        set_item(d, "modality_lut_table",
                 has_lut ? PyBytes_FromStringAndSize((const char *)lut,
                                                     (Py_ssize_t)lut_entries * 2)
                         : Py_NewRef(Py_None)) ||
        set_item(d, "transfer_syntax", PyUnicode_FromString(dh_volume_transfer_syntax(v))) ||
        set_item(d, "lossy", PyBool_FromLong(lossy)) ||
        set_item(d, "lossy_method", PyUnicode_FromString(lossy_method)) ||
        set_item(d, "decoder", PyUnicode_FromString(decoder)) ||
        set_item(d, "decoder_note", PyUnicode_FromString(decoder_note)) ||
        set_item(d, "modality_min", PyFloat_FromDouble(mmin)) ||
        set_item(d, "modality_max", PyFloat_FromDouble(mmax)) ||
        set_item(d, "stored_min", PyLong_FromLong(smin)) ||
        set_item(d, "stored_max", PyLong_FromLong(smax)) ||
        set_item(d, "spacing", PyFloat_FromDouble(dh_volume_spacing(v))) ||
        set_item(d, "window", has_window ? Py_BuildValue("(dd)", center, width)
                                         : Py_NewRef(Py_None)) ||
        set_item(d, "slice_sources", sources) || set_item(d, "slice_frames", frames) ||
        set_item(d, "slice_locations", locations) || set_item(d, "slice_positions", positions) ||
        set_item(d, "warnings", warnings)) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
fail_lists:
    Py_XDECREF(sources), Py_XDECREF(frames), Py_XDECREF(locations), Py_XDECREF(positions),
        Py_XDECREF(warnings);
    Py_DECREF(d);
    return NULL;
}

/* volume_pixels(volume) -> a read-only buffer over the stored values (no copy) */
static PyObject *py_volume_pixels(PyObject *self, PyObject *capsule)
{
    (void)self;
    const dh_volume *v = volume_of(capsule);
    if (!v)
        return NULL;
    return core_memory_new(capsule, (void *)dh_volume_data(v),
                           (Py_ssize_t)(dh_volume_sample_count(v) * 2), 1);
}

static PyObject *bytes_of(const void *data, size_t len)
{
    return PyByteArray_FromStringAndSize(data ? (const char *)data : "", data ? (Py_ssize_t)len : 0);
}

/* The two positional arguments of the calls over one volume: a context capsule and a volume. */
static int ctx_and_volume(PyObject *args, dh_ctx **ctx, const dh_volume **v)
{
    PyObject *ctx_obj, *vol_obj;
    if (!PyArg_ParseTuple(args, "OO", &ctx_obj, &vol_obj))
        return -1;
    *ctx = core_ctx(ctx_obj);
    *v = volume_of(vol_obj);
    return *ctx && *v ? 0 : -1;
}

/* histogram(ctx, volume, **fields of dh_hist_params) -> dict */
static PyObject *py_histogram(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    dh_ctx *ctx;
    const dh_volume *v;
    dh_hist_params p;
    if (ctx_and_volume(args, &ctx, &v) < 0 || core_hist_params(kwargs, &p) < 0)
        return NULL;
    dh_histogram *h = NULL;
    dh_status st;
    Py_BEGIN_ALLOW_THREADS
    st = dh_hist_compute(ctx, v, &p, &h);
    Py_END_ALLOW_THREADS
    if (st != DH_OK)
        return core_raise(st, dh_ctx_error(ctx));
    PyObject *edges = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(h->bins + 1) * 8);
    if (edges) {
        double *e = (double *)PyByteArray_AsString(edges);
        for (uint32_t i = 0; i <= h->bins; i++)
            e[i] = dh_histogram_edge(h, i);
    }
    const size_t s = h->slices;
    PyObject *d = edges ? Py_BuildValue(
        "{s:I,s:d,s:d,s:K,s:K,s:K,s:N,s:N,s:I,s:N,s:N,s:N,s:N,s:s}", "bins", h->bins, "lo", h->lo,
        "hi", h->hi, "total", (unsigned long long)h->total, "underflow",
        (unsigned long long)h->underflow, "overflow", (unsigned long long)h->overflow, "counts",
        bytes_of(h->counts, (size_t)h->bins * 8), "edges", edges, "slices", h->slices,
        "slice_counts", bytes_of(h->slice_counts, s * h->bins * 8), "slice_total",
        bytes_of(h->slice_total, s * 8), "slice_underflow", bytes_of(h->slice_underflow, s * 8),
        "slice_overflow", bytes_of(h->slice_overflow, s * 8), "device",
        h->device_used == DH_DEVICE_CUDA ? "cuda" : "cpu") : NULL;
    dh_histogram_free(h);
    return d;
}

/* equalize(ctx, volume, **fields of dh_equalize_params) -> dict */
static PyObject *py_equalize(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    dh_ctx *ctx;
    const dh_volume *v;
    dh_equalize_params p;
    if (ctx_and_volume(args, &ctx, &v) < 0 || core_equalize_params(kwargs, &p) < 0)
        return NULL;
    dh_equalized *r = NULL;
    dh_status st;
    Py_BEGIN_ALLOW_THREADS
    st = dh_equalize(ctx, v, &p, &r);
    Py_END_ALLOW_THREADS
    if (st != DH_OK)
        return core_raise(st, dh_ctx_error(ctx));
    const size_t n = (size_t)r->rows * r->columns * r->slices, t = r->table_count;
    PyObject *d = Py_BuildValue(
        "{s:I,s:I,s:I,s:I,s:N,s:I,s:i,s:I,s:N,s:N,s:N,s:N,s:N,s:s,s:s}", "rows", r->rows,
        "columns", r->columns, "slices", r->slices, "output_bits", r->output_bits, "data",
        bytes_of(r->data, n * 2), "table_count", r->table_count, "table_base", r->table_base,
        "table_len", r->table_len, "tables", bytes_of(r->tables, t * r->table_len * 2),
        "window_lo", bytes_of(r->window_lo, t * 8), "window_hi", bytes_of(r->window_hi, t * 8),
        "center", bytes_of(r->center, t * 8), "width", bytes_of(r->width, t * 8), "description",
        r->description, "device", r->device_used == DH_DEVICE_CUDA ? "cuda" : "cpu");
    dh_equalized_free(r);
    return d;
}

PyMethodDef core_volume_methods[] = {
    {"read", py_read, METH_VARARGS, "dh_volume_set_load."},
    {"from_samples", py_from_samples, METH_VARARGS, "dh_volume_from_samples."},
    {"volume_info", py_volume_info, METH_O, "Everything the API says about a volume."},
    {"volume_pixels", py_volume_pixels, METH_O, "The stored values, as a read-only buffer."},
    {"histogram", (PyCFunction)(void (*)(void))py_histogram, METH_VARARGS | METH_KEYWORDS,
     "dh_hist_compute; keyword arguments are dh_hist_params fields."},
    {"equalize", (PyCFunction)(void (*)(void))py_equalize, METH_VARARGS | METH_KEYWORDS,
     "dh_equalize; keyword arguments are dh_equalize_params fields."},
    {NULL, NULL, 0, NULL},
};
