#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_mi_parzen_sitk.py: the Parzen-window (Mattes) MI CPU twin (kernels/mi_parzen.h, box
fixed window, ranges from the data, every pixel) against SimpleITK's Mattes metric
(ImageRegistrationMethod.SetMetricAsMattesMutualInformation, no sampling, identity transform)
on real image pairs of ../shared/dicom, as stored values in 16 bits and as float32. ITK's value
is -MI; the two agree within 1e-9 relative (measured: 2e-11 or less; docs/registration.md).

Usage: test_mi_parzen_sitk.py MODULE SHARED_DICOM, MODULE the ctypes build of the twin
(tests/mi_parzen_ctypes.c). Exits 77 (skipped) when the shared folder, numpy, pydicom or
SimpleITK is absent.
"""
import ctypes
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import cli_testlib as t  # noqa: E402  (skip, checks, the reference decode of stored values)

try:
    import numpy as np
    import pydicom  # noqa: F401  (cli_testlib reads through it)
    import SimpleITK as sitk
except ImportError as e:  # a missing module is a skip, not a failure
    t.skip(str(e))

from parzen_ctypes import Image, Params, Values  # noqa: E402  (beside this script)

SAMPLE = {np.float32: 0, np.uint16: 1, np.int16: 2}


def ours(lib, fixed, moving, bins, dtype):
    """MI (nats) of the twin, box fixed window, ranges from the data."""
    f = np.ascontiguousarray(fixed, dtype)
    m = np.ascontiguousarray(moving, dtype)
    params, out = Params(bins=bins), Values()
    grad = np.zeros(m.size, np.float32)
    rc = lib.dh_test_parzen_mi(ctypes.byref(params), ctypes.c_size_t(f.size),
                               ctypes.byref(Image(f.ctypes.data, SAMPLE[dtype], None)),
                               ctypes.byref(Image(m.ctypes.data, SAMPLE[dtype], None)), 1,
                               ctypes.byref(out), grad.ctypes.data_as(ctypes.c_void_p))
    if rc != 0:
        raise RuntimeError(f"dh_parzen_mi_cpu returned {rc}")
    return out, grad


def simpleitk_mattes(fixed, moving, bins):
    """SimpleITK's Mattes MI over every pixel at the identity (its value is -MI)."""
    reg = sitk.ImageRegistrationMethod()
    reg.SetMetricAsMattesMutualInformation(numberOfHistogramBins=bins)
    reg.SetMetricSamplingStrategy(reg.NONE)
    reg.SetInterpolator(sitk.sitkLinear)
    reg.SetInitialTransform(sitk.TranslationTransform(2))
    f = sitk.GetImageFromArray(np.asarray(fixed, np.float32))
    m = sitk.GetImageFromArray(np.asarray(moving, np.float32))
    return -reg.MetricEvaluate(f, m)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    module, shared = sys.argv[1], sys.argv[2]
    t.require_shared(shared)
    lib = ctypes.CDLL(module)
    stored = {name: t.stored_values(t.read_dataset(os.path.join(shared, name)))
              for name in ("dcm_qa_12bit_12bitUnsigned.dcm",
                           "dcm_qa_12bit_12bitUnsigned_0x0F0F.dcm",
                           "pydicom-data_emri_small.dcm", "pydicom_CT_small.dcm")}
    ct = stored["pydicom_CT_small.dcm"][0]
    emri = stored["pydicom-data_emri_small.dcm"]
    pairs = [  # (name, fixed, moving, 16-bit type of the stored values)
        ("MR 384x384 vs the same scan with stripes", stored["dcm_qa_12bit_12bitUnsigned.dcm"][0],
         stored["dcm_qa_12bit_12bitUnsigned_0x0F0F.dcm"][0], np.uint16),
        ("MR 64x64 frame 0 vs frame 5", emri[0], emri[5], np.uint16),
        ("CT 128x128 vs itself 3 columns over", ct[:, 3:], ct[:, :-3], np.int16),
    ]
    checks = t.Checks()
    for name, fixed, moving, int_type in pairs:
        for bins in (16, 32, 50, 64, 128):
            want = simpleitk_mattes(fixed, moving, bins)
            for dtype in (np.float32, int_type):
                got, grad = ours(lib, fixed, moving, bins, dtype)
                what = f"{name}, {bins} bins, {np.dtype(dtype).name}"
                checks.equal(got.n, fixed.size, f"{what}: pixels counted")
                checks.close(got.mi, want, f"{what}: MI vs SimpleITK", rel=1e-9, abs_tol=0.0)
                checks.check(bool(np.isfinite(grad).all()) and bool(np.any(grad != 0)),
                             f"{what}: gradient finite and not all zero")
            print(f"{name}, {bins} bins: MI {got.mi:.12f}, SimpleITK {want:.12f}, "
                  f"relative difference {abs(got.mi - want) / want:.2g}")
    checks.finish()


if __name__ == "__main__":
    main()
