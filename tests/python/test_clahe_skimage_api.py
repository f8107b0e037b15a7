#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_clahe_skimage_api.py: the C API of the scikit-image-compatible mode, called through
ctypes on libdicomhist.so, against scikit-image's exposure.equalize_adapthist: the float64 of
dh_equalize_skimage_float must be its result bit for bit, dh_equalize's 16-bit output
round(that * 65535), per slice and per volume, on random
uint16 and int16 volumes of sizes that are no multiple of the kernel; and the refusals (another
method for the float call, the device call, a percentile window, tables beyond 4 GiB).

Usage: test_clahe_skimage_api.py LIBDICOMHIST_SO
"""
import ctypes
import sys

SKIP = 77
INVALID_ARGUMENT, UNSUPPORTED = 1, 4
WINDOW_PERCENTILE = 5


class Params(ctypes.Structure):
    """dh_equalize_params up to per_slice (the fields this test sets), then room for the rest;
    dh_equalize_params_init fills it all."""
    _fields_ = [("struct_size", ctypes.c_uint32), ("operation", ctypes.c_int32),
                ("per_slice", ctypes.c_int32), ("window", ctypes.c_int32),
                ("rest", ctypes.c_uint8 * 1024)]


class Equalized(ctypes.Structure):
    """dh_equalized up to data."""
    _fields_ = [("rows", ctypes.c_uint32), ("columns", ctypes.c_uint32),
                ("slices", ctypes.c_uint32), ("output_bits", ctypes.c_uint32),
                ("data", ctypes.POINTER(ctypes.c_uint16))]


def load(path):
    lib = ctypes.CDLL(path)
    lib.dh_ctx_create.restype = ctypes.c_void_p
    lib.dh_ctx_free.argtypes = [ctypes.c_void_p]
    lib.dh_volume_from_samples.argtypes = [ctypes.c_void_p] + [ctypes.c_uint32] * 4 + [
        ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.dh_volume_free.argtypes = [ctypes.c_void_p]
    lib.dh_equalize_params_init.argtypes = [ctypes.POINTER(Params)]
    lib.dh_equalize_params_skimage.argtypes = [ctypes.POINTER(Params), ctypes.c_uint32,
                                               ctypes.c_double, ctypes.c_uint32]
    lib.dh_equalize_skimage_float.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                              ctypes.POINTER(Params), ctypes.c_void_p]
    lib.dh_equalize.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(Params),
                                ctypes.POINTER(ctypes.POINTER(Equalized))]
    lib.dh_equalized_free.argtypes = [ctypes.POINTER(Equalized)]
    lib.dh_equalize_device.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int] + [
        ctypes.c_uint32] * 4 + [ctypes.POINTER(Params), ctypes.c_void_p, ctypes.c_void_p]
    lib.dh_ctx_error.restype = ctypes.c_char_p
    lib.dh_ctx_error.argtypes = [ctypes.c_void_p]
    return lib


def main():
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} LIBDICOMHIST_SO", file=sys.stderr)
        return 2
    try:
        import numpy as np
        from skimage import exposure
    except ImportError as e:
        print(f"SKIP: Python module missing: {e.name}")
        return SKIP
    lib = load(sys.argv[1])
    ctx = lib.dh_ctx_create()
    failures = 0

    def check(ok, what):
        nonlocal failures
        if not ok:
            failures += 1
            print(f"FAIL: {what}")

    def params(kernel, clip, nbins, per_slice):
        p = Params()
        lib.dh_equalize_params_init(ctypes.byref(p))
        p.per_slice = per_slice
        lib.dh_equalize_params_skimage(ctypes.byref(p), kernel, clip, nbins)
        return p

    rng = np.random.default_rng(21)
    cases = [((1, 45, 61), np.uint16, 0, 0.01, 256), ((1, 45, 61), np.int16, 7, 0.05, 4096),
             ((6, 33, 20), np.int16, 0, 0.01, 256), ((6, 33, 20), np.uint16, 4, 0, 16),
             ((11, 16, 17), np.uint16, 5, 1, 16384), ((3, 9, 130), np.int16, 3, 0.02, 1000)]
    for shape, dtype, kernel, clip, nbins in cases:
        signed = dtype == np.int16
        lo, hi = (-1200, 2500) if signed else (0, 4095)
        x = np.ascontiguousarray(rng.integers(lo, hi, size=shape, endpoint=True).astype(dtype))
        vol = ctypes.c_void_p()
        st = lib.dh_volume_from_samples(ctx, shape[1], shape[2], shape[0], 16, int(signed),
                                        x.ctypes.data, ctypes.byref(vol))
        check(st == 0, f"dh_volume_from_samples {shape}: {st}")
        for per_slice in (1, 0):
            if per_slice:
                want = np.stack([exposure.equalize_adapthist(s, kernel or None, clip, nbins)
                                 for s in x])
            else:
                want = exposure.equalize_adapthist(x, kernel or None, clip, nbins)
            what = f"{shape} {np.dtype(dtype).name} kernel {kernel} clip {clip} nbins " \
                   f"{nbins} per_slice {per_slice}"
            p = params(kernel, clip, nbins, per_slice)
            f = np.zeros(shape, np.float64)
            st = lib.dh_equalize_skimage_float(ctx, vol, ctypes.byref(p), f.ctypes.data)
            check(st == 0, f"{what}: dh_equalize_skimage_float {st}")
            check(np.array_equal(f, want), f"{what}: float result differs by up to "
                  f"{np.abs(f - want).max():.3g}")
            out = ctypes.POINTER(Equalized)()
            st = lib.dh_equalize(ctx, vol, ctypes.byref(p), ctypes.byref(out))
            check(st == 0, f"{what}: dh_equalize {st}")
            if st == 0:
                e = out.contents
                got = np.ctypeslib.as_array(e.data, shape=(x.size,)).reshape(shape).copy()
                check(e.output_bits == 16, f"{what}: output bits {e.output_bits}")
                check(np.array_equal(got, np.round(want * 65535)),
                      f"{what}: dh_equalize output is not round(skimage * 65535)")
                lib.dh_equalized_free(out)
        if failures == 0 and shape == cases[0][0]:
            # Refusals: the float call for another method, the device call, a percentile window.
            p = Params()
            lib.dh_equalize_params_init(ctypes.byref(p))
            f = np.zeros(shape, np.float64)
            check(lib.dh_equalize_skimage_float(ctx, vol, ctypes.byref(p), f.ctypes.data) ==
                  INVALID_ARGUMENT, "dh_equalize_skimage_float accepts the global method")
            p = params(0, 0.01, 256, 1)
            dummy = ctypes.c_void_p(ctypes.addressof(p))
            check(lib.dh_equalize_device(ctx, dummy, 0, 16, shape[2], shape[1], shape[0],
                                         ctypes.byref(p), dummy, None) == UNSUPPORTED,
                  "dh_equalize_device accepts the scikit-image mode")
            p.window = WINDOW_PERCENTILE
            out = ctypes.POINTER(Equalized)()
            st = lib.dh_equalize(ctx, vol, ctypes.byref(p), ctypes.byref(out))
            check(st == INVALID_ARGUMENT, f"a percentile window is accepted ({st})")
            check(b"min..max" in lib.dh_ctx_error(ctx), "the refusal names the reason")
            # A kernel of 1 over 512x512 with 65536 bins: 32 GiB of tables, refused up front.
            big = np.zeros((1, 512, 512), np.uint16)
            bvol = ctypes.c_void_p()
            check(lib.dh_volume_from_samples(ctx, 512, 512, 1, 16, 0, big.ctypes.data,
                                             ctypes.byref(bvol)) == 0, "512x512 volume")
            p = params(1, 0.01, 65536, 1)
            st = lib.dh_equalize(ctx, bvol, ctypes.byref(p), ctypes.byref(out))
            check(st == UNSUPPORTED and b"GiB" in lib.dh_ctx_error(ctx),
                  f"32 GiB of tables not refused ({st})")
            lib.dh_volume_free(bvol)
        lib.dh_volume_free(vol)
    lib.dh_ctx_free(ctx)
    print(f"{len(cases)} volumes, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
