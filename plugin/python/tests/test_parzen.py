# SPDX-License-Identifier: MIT
"""Parzen-window (Mattes) MI from NumPy (dicomhist.parzen_mi, ParzenMI): the same bits as the C
API called directly (ctypes on this build's libdicomhist.so), batches equal to single calls,
masks, the three sample types and converted ones, constant and two-value images (never NaN),
bad arguments, and SimpleITK's Mattes metric on real pairs of ../shared/dicom."""
import ctypes
import os

import numpy as np
import pytest

import dicomhist
from conftest import ct_like, shared


@pytest.fixture(scope="module")
def pair():
    rng = np.random.default_rng(22)
    fixed = ct_like(rng, (37, 41)).astype(np.float32) / 4095
    moving = np.stack([np.roll(fixed, k, axis=1) * 0.8 + 0.1 + rng.normal(0, 0.02, fixed.shape)
                       for k in range(4)]).astype(np.float32)
    return fixed, moving


# --- the C API itself, through ctypes ---------------------------------------------------------

class _Params(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("bins", ctypes.c_uint32),
                ("fixed_window", ctypes.c_int32), ("gradient_of", ctypes.c_int32),
                ("log2", ctypes.c_int32), ("has_range_fixed", ctypes.c_int32),
                ("has_range_moving", ctypes.c_int32), ("fixed_lo", ctypes.c_double),
                ("fixed_hi", ctypes.c_double), ("moving_lo", ctypes.c_double),
                ("moving_hi", ctypes.c_double)]


@pytest.fixture(scope="module")
def capi():
    """This build's shared library (beside the package in a build tree), or a skip."""
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(dicomhist.__file__))))
    path = os.path.join(build, "plugin", "lib", "libdicomhist.so")
    if not os.path.exists(path):
        pytest.skip("libdicomhist.so of this build is not beside the package")
    lib = ctypes.CDLL(path)
    lib.dh_ctx_create.restype = ctypes.c_void_p
    lib.dh_ctx_error.restype = ctypes.c_char_p
    lib.dh_ctx_error.argtypes = [ctypes.c_void_p]
    lib.dh_parzen_mi_create.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.dh_parzen_mi_free.argtypes = [ctypes.c_void_p]
    lib.dh_ctx_free.argtypes = [ctypes.c_void_p]
    lib.dh_parzen_mi_evaluate.argtypes = [
        ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_int,
        ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_uint32,
        ctypes.c_void_p, ctypes.c_void_p]
    assert ctypes.sizeof(_Params) == 64
    return lib


def c_call(lib, fixed, moving, count, bins, window, score, ranges, fmask, mmask):
    types = {np.dtype(np.uint16): 0, np.dtype(np.int16): 1, np.dtype(np.float32): 2}
    p = _Params(struct_size=ctypes.sizeof(_Params))
    lib.dh_parzen_mi_params_init(ctypes.byref(p))
    p.bins, p.fixed_window, p.gradient_of = bins, window, score
    if ranges:
        p.has_range_fixed = p.has_range_moving = 1
        (p.fixed_lo, p.fixed_hi), (p.moving_lo, p.moving_hi) = ranges
    ctx = lib.dh_ctx_create()
    handle = ctypes.c_void_p()
    assert lib.dh_parzen_mi_create(ctx, ctypes.byref(p), ctypes.byref(handle)) == 0
    rec = np.zeros(count, dicomhist.SCORE_DTYPE)
    grad = np.zeros(moving.size, np.float32)
    ptr = lambda a: None if a is None else a.ctypes.data
    st = lib.dh_parzen_mi_evaluate(ctx, handle, fixed.size, ptr(fixed), types[fixed.dtype],
                                   ptr(fmask), ptr(moving), types[moving.dtype], ptr(mmask),
                                   count, ptr(rec), ptr(grad))
    assert st == 0, lib.dh_ctx_error(ctx)
    lib.dh_parzen_mi_free(handle)
    lib.dh_ctx_free(ctx)
    return rec, grad


@pytest.mark.parametrize("dtype", [np.float32, np.uint16, np.int16])
@pytest.mark.parametrize("window,score,ranged,masked",
                         [("box", "mi", False, False), ("cubic", "nmi", True, True),
                          ("box", "nmi", True, False), ("cubic", "mi", False, True)])
def test_same_bits_as_the_c_api(capi, pair, dtype, window, score, ranged, masked):
    fixed, moving = pair
    scale = 1.0 if dtype == np.float32 else 3000.0
    f = (fixed * scale).astype(dtype)
    m = (moving * scale).astype(dtype)
    ranges = ((0.0, 0.9 * scale), (0.05 * scale, 0.95 * scale)) if ranged else None
    rng = np.random.default_rng(5)
    fm = (rng.random(f.shape) > 0.1).astype(np.uint8) if masked else None
    mm = (rng.random(m.shape) > 0.2).astype(np.uint8) if masked else None
    want_rec, want_grad = c_call(capi, f, m, len(m), 48, window == "cubic", score == "nmi",
                                 ranges, fm, mm)
    kwargs = dict(fixed_window=window, score=score, fixed_mask=fm, moving_mask=mm)
    if ranges:
        kwargs.update(range_fixed=ranges[0], range_moving=ranges[1])
    value, grad = dicomhist.parzen_mi(f, m, 48, gradient=True, **kwargs)
    assert value.tobytes() == np.ascontiguousarray(want_rec[score]).tobytes()
    assert grad.shape == m.shape and grad.tobytes() == want_grad.tobytes()
    scores, _ = dicomhist.ParzenMI(48, fixed_window=window, score=score,
                                   **({} if not ranges else dict(range_fixed=ranges[0],
                                                                 range_moving=ranges[1]))
                                   ).evaluate(f, m, fixed_mask=fm, moving_mask=mm,
                                              gradient=False)
    assert scores.tobytes() == want_rec.tobytes()


def test_batch_equals_single_calls(pair):
    fixed, moving = pair
    engine = dicomhist.ParzenMI(32, score="nmi")
    rec, grad = engine.evaluate(fixed, moving)
    for b in range(len(moving)):
        one, g = engine.evaluate(fixed, moving[b])
        assert one.ndim == 0 and one.tobytes() == rec[b].tobytes()
        assert g.tobytes() == grad[b].tobytes()
    # repeated calls: the same bits
    again, grad2 = engine.evaluate(fixed, moving)
    assert again.tobytes() == rec.tobytes() and grad2.tobytes() == grad.tobytes()
    assert float(dicomhist.parzen_mi(fixed, moving[1], 32, score="nmi")) == rec["nmi"][1]


def test_converted_types_match_native(pair):
    fixed, moving = pair
    want = dicomhist.parzen_mi(fixed, moving, 40)
    got = dicomhist.parzen_mi(fixed.astype(np.float64), moving.astype(np.float64), 40)
    assert np.array_equal(want, got)  # float64 is rounded to float32, as documented
    # a strided view takes the copying path: the same bits
    assert np.array_equal(dicomhist.parzen_mi(fixed.T.copy().T, moving[:, ::1, :], 40), want)
    assert dicomhist.parzen_mi(np.asfortranarray(fixed), np.asfortranarray(moving[0]), 40) == \
        want[0]
    ints = (moving * 4000).astype(np.int64)
    assert np.array_equal(dicomhist.parzen_mi(fixed, ints, 40),
                          dicomhist.parzen_mi(fixed, ints.astype(np.uint16), 40))


def test_masks_leave_masked_pixels_out(pair):
    fixed, moving = pair
    mask = np.ones(moving[0].shape, np.uint8)
    mask[::3] = 0
    v1, g1 = dicomhist.parzen_mi(fixed, moving[0], 32, gradient=True, moving_mask=mask,
                                 range_moving=(0.0, 1.0))
    changed = moving[0].copy()
    changed[::3] = 0.5  # masked pixels: any value
    v2, g2 = dicomhist.parzen_mi(fixed, changed, 32, gradient=True, moving_mask=mask.astype(bool),
                                 range_moving=(0.0, 1.0))
    assert v1 == v2 and g1.tobytes() == g2.tobytes()
    assert not g1[::3].any() and g1[1::3].any()
    rec, _ = dicomhist.ParzenMI(32).evaluate(fixed, moving[0], fixed_mask=mask, gradient=False)
    assert int(rec["n"]) == int(mask.sum())


def test_constant_and_two_value_images_are_defined():
    fixed = np.arange(400, dtype=np.float32).reshape(20, 20) % 17
    for moving in (np.full((20, 20), 3.0, np.float32),
                   (np.arange(400).reshape(20, 20) % 2).astype(np.float32)):
        for score in ("mi", "nmi"):
            for window in ("box", "cubic"):
                v, g = dicomhist.parzen_mi(fixed, moving, 16, gradient=True, score=score,
                                           fixed_window=window)
                assert np.isfinite(v) and np.isfinite(g).all()
    v, g = dicomhist.parzen_mi(fixed, np.full((20, 20), 3.0, np.float32), 16, gradient=True)
    assert v == pytest.approx(0.0, abs=1e-12) and not g.any()  # constant moving: MI 0, grad 0
    v = dicomhist.parzen_mi(fixed, fixed, 16, score="nmi")
    assert v > 1.0
    # a constant fixed image with the box window: MI 0
    assert dicomhist.parzen_mi(np.ones((20, 20), np.float32), fixed, 16) == pytest.approx(0.0,
                                                                                          abs=1e-12)
    # nothing valid: NaN flagged empty, gradient 0
    rec, g = dicomhist.ParzenMI(16).evaluate(fixed, fixed, fixed_mask=np.zeros((20, 20)))
    assert np.isnan(rec["mi"]) and int(rec["status"]) & dicomhist.EMPTY and not g.any()


def test_bad_arguments(pair):
    fixed, moving = pair
    with pytest.raises(dicomhist.InvalidArgumentError, match="bins must be 5..256"):
        dicomhist.parzen_mi(fixed, moving, 4)
    with pytest.raises(dicomhist.InvalidArgumentError, match="moving range"):
        dicomhist.parzen_mi(fixed, moving, 32, range_moving=(1.0, 0.0))
    with pytest.raises(ValueError, match="fixed_window"):
        dicomhist.ParzenMI(32, fixed_window="gauss")
    with pytest.raises(ValueError, match="score"):
        dicomhist.ParzenMI(32, score="ecc")
    with pytest.raises(ValueError, match="neither the fixed image"):
        dicomhist.parzen_mi(fixed, moving[:, :-1], 32)
    with pytest.raises(ValueError, match="moving_mask"):
        dicomhist.parzen_mi(fixed, moving, 32, moving_mask=np.ones(3))
    with pytest.raises(TypeError):
        dicomhist.parzen_mi(fixed, moving.astype(np.complex64), 32)


def test_against_simpleitk_on_real_files():
    """MI of real pairs as SimpleITK's Mattes metric computes it (every pixel, identity
    transform; ITK's value is -MI): within 1e-9 relative, as the twin's own test holds."""
    sitk = pytest.importorskip("SimpleITK")
    pydicom = pytest.importorskip("pydicom")
    a = pydicom.dcmread(shared("dcm_qa_12bit_12bitUnsigned.dcm")).pixel_array
    b = pydicom.dcmread(shared("dcm_qa_12bit_12bitUnsigned_0x0F0F.dcm")).pixel_array
    ct = pydicom.dcmread(shared("pydicom_CT_small.dcm")).pixel_array.astype(np.int16)
    for fixed, moving in ((a, b), (ct[:, 3:], ct[:, :-3])):
        fixed, moving = np.ascontiguousarray(fixed), np.ascontiguousarray(moving)
        for bins in (32, 64):
            reg = sitk.ImageRegistrationMethod()
            reg.SetMetricAsMattesMutualInformation(numberOfHistogramBins=bins)
            reg.SetMetricSamplingStrategy(reg.NONE)
            reg.SetInterpolator(sitk.sitkLinear)
            reg.SetInitialTransform(sitk.TranslationTransform(2))
            want = -reg.MetricEvaluate(sitk.GetImageFromArray(fixed.astype(np.float32)),
                                       sitk.GetImageFromArray(moving.astype(np.float32)))
            for dtype in (np.float32, fixed.dtype):
                got = dicomhist.parzen_mi(fixed.astype(dtype), moving.astype(dtype), bins)
                assert got == pytest.approx(want, rel=1e-9, abs=0)
