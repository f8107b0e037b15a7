// SPDX-License-Identifier: MIT
/*
 * core_params.c: the parameters of a call, from Python into the C API's parameter structs:
 * keyword arguments mapped by name onto a struct's fields (one table per struct, over the
 * struct's *_init defaults), and window text read by the command's own parser
 * (plugin/report/text_values.c), so that the package takes exactly the command's spellings.
 */
#include "core.h"
#include "text_values.h"

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* How a keyword's value is stored: each kind converts as the PyArg format in its comment. */
typedef enum {
    FIELD_U32,    /* "I": an integer, wrapped to 32 bits (the library then checks the bounds) */
    FIELD_I32,    /* "i": an integer within int32 */
    FIELD_ENUM,   /* "i": an enum value (the API's enums are 32-bit: *_FORCE_INT32) */
    FIELD_FLAG,   /* "p": any object, by its truth value, as 0 or 1 */
    FIELD_DOUBLE, /* "d" */
    FIELD_FLOAT,  /* "f" */
    FIELD_U32_3,  /* a sequence of three integers into uint32_t[3] (CLAHE's tiles, tile_size) */
} field_kind;

typedef struct {
    const char *name; /* the keyword: the field's own name */
    size_t offset;
    field_kind kind;
} param_field;

#define FIELD(type, field, kind) {#field, offsetof(type, field), kind}

_Static_assert(sizeof(dh_device) == 4 && sizeof(dh_units) == 4 &&
                   sizeof(dh_eq_operation) == 4 && sizeof(dh_window_source) == 4 &&
                   sizeof(dh_voi_function) == 4,
               "FIELD_ENUM stores an int32_t");
_Static_assert(sizeof(dh_eq_method) == 4, "FIELD_ENUM stores an int32_t");

/* A field added to a parameter struct is one line here (struct_size is the library's). */
static const param_field HIST_FIELDS[] = {
    FIELD(dh_hist_params, bins, FIELD_U32),
    FIELD(dh_hist_params, has_range, FIELD_FLAG),
    FIELD(dh_hist_params, lo, FIELD_DOUBLE),
    FIELD(dh_hist_params, hi, FIELD_DOUBLE),
    FIELD(dh_hist_params, units, FIELD_ENUM),
    FIELD(dh_hist_params, per_slice, FIELD_FLAG),
    FIELD(dh_hist_params, device, FIELD_ENUM),
    {NULL, 0, 0},
};

static const param_field EQUALIZE_FIELDS[] = {
    FIELD(dh_equalize_params, operation, FIELD_ENUM),
    FIELD(dh_equalize_params, per_slice, FIELD_FLAG),
    FIELD(dh_equalize_params, window, FIELD_ENUM),
    FIELD(dh_equalize_params, center, FIELD_DOUBLE),
    FIELD(dh_equalize_params, width, FIELD_DOUBLE),
    FIELD(dh_equalize_params, lo, FIELD_DOUBLE),
    FIELD(dh_equalize_params, hi, FIELD_DOUBLE),
    FIELD(dh_equalize_params, percentile, FIELD_DOUBLE),
    FIELD(dh_equalize_params, voi, FIELD_ENUM),
    FIELD(dh_equalize_params, clip_limit, FIELD_DOUBLE),
    FIELD(dh_equalize_params, output_bits, FIELD_U32),
    FIELD(dh_equalize_params, device, FIELD_ENUM),
    FIELD(dh_equalize_params, method, FIELD_ENUM),
    FIELD(dh_equalize_params, tiles, FIELD_U32_3),
    FIELD(dh_equalize_params, tile_size, FIELD_U32_3),
    FIELD(dh_equalize_params, bins, FIELD_U32),
    {NULL, 0, 0},
};

static const param_field MI_FIELDS[] = {
    FIELD(dh_mi_params, bins_fixed, FIELD_U32),
    FIELD(dh_mi_params, bins_moving, FIELD_U32),
    FIELD(dh_mi_params, has_range_fixed, FIELD_FLAG),
    FIELD(dh_mi_params, fixed_lo, FIELD_I32),
    FIELD(dh_mi_params, fixed_hi, FIELD_I32),
    FIELD(dh_mi_params, has_range_moving, FIELD_FLAG),
    FIELD(dh_mi_params, moving_lo, FIELD_I32),
    FIELD(dh_mi_params, moving_hi, FIELD_I32),
    FIELD(dh_mi_params, log2, FIELD_FLAG),
    FIELD(dh_mi_params, device, FIELD_ENUM),
    FIELD(dh_mi_params, max_batch, FIELD_U32),
    FIELD(dh_mi_params, fixed_lo_f32, FIELD_FLOAT),
    FIELD(dh_mi_params, fixed_hi_f32, FIELD_FLOAT),
    FIELD(dh_mi_params, moving_lo_f32, FIELD_FLOAT),
    FIELD(dh_mi_params, moving_hi_f32, FIELD_FLOAT),
    {NULL, 0, 0},
};

static const param_field PARZEN_FIELDS[] = {
    FIELD(dh_parzen_mi_params, bins, FIELD_U32),
    FIELD(dh_parzen_mi_params, fixed_window, FIELD_ENUM),
    FIELD(dh_parzen_mi_params, gradient_of, FIELD_ENUM),
    FIELD(dh_parzen_mi_params, log2, FIELD_FLAG),
    FIELD(dh_parzen_mi_params, has_range_fixed, FIELD_FLAG),
    FIELD(dh_parzen_mi_params, has_range_moving, FIELD_FLAG),
    FIELD(dh_parzen_mi_params, fixed_lo, FIELD_DOUBLE),
    FIELD(dh_parzen_mi_params, fixed_hi, FIELD_DOUBLE),
    FIELD(dh_parzen_mi_params, moving_lo, FIELD_DOUBLE),
    FIELD(dh_parzen_mi_params, moving_hi, FIELD_DOUBLE),
    {NULL, 0, 0},
};
_Static_assert(sizeof(dh_parzen_window) == 4 && sizeof(dh_parzen_score) == 4,
               "FIELD_ENUM stores an int32_t");

/* The TypeError for a keyword that is no field of `type`, naming the ones there are. */
static int unknown_field(const char *type, const param_field *fields, PyObject *key)
{
    PyObject *names = PyUnicode_FromString("");
    for (const param_field *f = fields; names && f->name; f++) {
        PyObject *joined = PyUnicode_FromFormat("%U%s%s", names, f == fields ? "" : ", ",
                                                f->name);
        Py_DECREF(names);
        names = joined;
    }
    if (names) {
        PyErr_Format(PyExc_TypeError, "%s has no field %R (its fields: %U)", type, key, names);
        Py_DECREF(names);
    }
    return -1;
}

static int int_in_range(PyObject *value, long *out)
{
    *out = PyLong_AsLong(value);
    if (*out == -1 && PyErr_Occurred())
        return -1;
    if (*out < INT32_MIN || *out > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, *out < 0 ? "signed integer is less than minimum"
                                                       : "signed integer is greater than maximum");
        return -1;
    }
    return 0;
}

/* Three integers (a tuple or list, each 0..2^32 - 1; the library checks the bounds) into
 * out[0..2]; returns 0, or -1 with an exception set. */
static int store_u32_3(PyObject *value, uint32_t out[3])
{
    if (!PySequence_Check(value) || PySequence_Size(value) != 3) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError, "expected a sequence of three integers");
        return -1;
    }
    for (Py_ssize_t i = 0; i < 3; i++) {
        PyObject *item = PySequence_GetItem(value, i);
        if (!item)
            return -1;
        unsigned long u = PyLong_AsUnsignedLong(item);
        Py_DECREF(item);
        if (u == (unsigned long)-1 && PyErr_Occurred())
            return -1;
        if (u > UINT32_MAX) {
            PyErr_SetString(PyExc_OverflowError, "an axis count above 2^32 - 1");
            return -1;
        }
        out[i] = (uint32_t)u;
    }
    return 0;
}

/* Stores value into the field at `at`; returns 0, or -1 with an exception set. */
static int store_field(const param_field *f, PyObject *value, char *at)
{
    long l;
    double d;
    switch (f->kind) {
    case FIELD_U32: {
        unsigned long u = PyLong_AsUnsignedLongMask(value);
        if (u == (unsigned long)-1 && PyErr_Occurred())
            return -1;
        *(uint32_t *)at = (uint32_t)u;
        return 0;
    }
    case FIELD_I32:
    case FIELD_ENUM:
        if (int_in_range(value, &l) < 0)
            return -1;
        *(int32_t *)at = (int32_t)l;
        return 0;
    case FIELD_FLAG: {
        int truth = PyObject_IsTrue(value);
        if (truth < 0)
            return -1;
        *(int32_t *)at = truth;
        return 0;
    }
    case FIELD_DOUBLE:
    case FIELD_FLOAT:
        d = PyFloat_AsDouble(value);
        if (d == -1.0 && PyErr_Occurred())
            return -1;
        if (f->kind == FIELD_FLOAT)
            *(float *)at = (float)d;
        else
            *(double *)at = d;
        return 0;
    case FIELD_U32_3:
        return store_u32_3(value, (uint32_t *)at);
    }
    PyErr_SetString(PyExc_SystemError, "parameter table: unknown field kind");
    return -1;
}

/* Every keyword of `kwargs` (NULL: none) onto its field of `params`; an unknown keyword is a
 * TypeError. Returns 0, or -1 with an exception set. */
static int read_fields(const char *type, const param_field *fields, PyObject *kwargs,
                       void *params)
{
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (kwargs && PyDict_Next(kwargs, &pos, &key, &value)) {
        const char *name = PyUnicode_AsUTF8AndSize(key, NULL);
        if (!name)
            return -1;
        const param_field *f = fields;
        while (f->name && strcmp(f->name, name) != 0)
            f++;
        if (!f->name)
            return unknown_field(type, fields, key);
        if (store_field(f, value, (char *)params + f->offset) < 0)
            return -1;
    }
    return 0;
}

int core_hist_params(PyObject *kwargs, dh_hist_params *p)
{
    dh_hist_params_init(p);
    return read_fields("dh_hist_params", HIST_FIELDS, kwargs, p);
}

int core_equalize_params(PyObject *kwargs, dh_equalize_params *p)
{
    dh_equalize_params_init(p);
    return read_fields("dh_equalize_params", EQUALIZE_FIELDS, kwargs, p);
}

int core_mi_params(PyObject *kwargs, dh_mi_params *p)
{
    dh_mi_params_init(p);
    return read_fields("dh_mi_params", MI_FIELDS, kwargs, p);
}

int core_parzen_params(PyObject *kwargs, dh_parzen_mi_params *p)
{
    dh_parzen_mi_params_init(p);
    return read_fields("dh_parzen_mi_params", PARZEN_FIELDS, kwargs, p);
}

/* parse_window(text) -> the dh_equalize_params fields a window sets (window, center, width,
 * percentile), read by text_parse_window as `dicomhist equalize --window` reads it; text it
 * refuses is an InvalidArgumentError naming the text and the command's reason. */
static PyObject *py_parse_window(PyObject *self, PyObject *text)
{
    (void)self;
    Py_ssize_t len;
    const char *c = PyUnicode_AsUTF8AndSize(text, &len);
    if (!c)
        return NULL;
    dh_equalize_params p;
    dh_equalize_params_init(&p);
    const char *why = "expected C:W, file, minmax or percentile:P";
    if (strlen(c) != (size_t)len || text_parse_window(c, &p, &why) != 0) {
        PyObject *message = PyUnicode_FromFormat("window %R: %s", text, why);
        const char *m = message ? PyUnicode_AsUTF8AndSize(message, NULL) : NULL;
        if (m)
            core_raise(DH_ERR_INVALID_ARGUMENT, m);
        Py_XDECREF(message);
        return NULL;
    }
    return Py_BuildValue("{s:i,s:d,s:d,s:d}", "window", (int)p.window, "center", p.center,
                         "width", p.width, "percentile", p.percentile);
}

PyMethodDef core_params_methods[] = {
    {"parse_window", py_parse_window, METH_O, "text_parse_window: the command's --window."},
    {NULL, NULL, 0, NULL},
};
