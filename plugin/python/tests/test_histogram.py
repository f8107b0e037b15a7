# SPDX-License-Identifier: MIT
"""histogram() against exact NumPy references and the command's JSON."""
import os
from fractions import Fraction

import numpy as np
import pytest

import dicomhist
from conftest import SAMPLE, shared


def exact_histogram(values, lo, hi, bins):
    """Counts, underflow, overflow of the half-open [lo, hi) with exact rational bins."""
    lo, hi = Fraction(lo), Fraction(hi)
    counts = np.zeros(bins, dtype=np.int64)
    under = over = 0
    for v, n in zip(*np.unique(values, return_counts=True)):
        v = Fraction(int(v))
        if v < lo:
            under += n
        elif v >= hi:
            over += n
        else:
            counts[int((v - lo) * bins / (hi - lo))] += n
    return counts, under, over


@pytest.mark.parametrize("dtype,bits", [(np.uint16, 12), (np.int16, 16), (np.uint8, 8)])
def test_random_arrays_against_exact_binning(dtype, bits):
    rng = np.random.default_rng(bits)
    info = np.iinfo(dtype)
    lo_v, hi_v = max(info.min, -(1 << (bits - 1)) if info.min < 0 else 0), \
        min(info.max, (1 << bits) - 1 if info.min == 0 else (1 << (bits - 1)) - 1)
    img = rng.integers(lo_v, hi_v + 1, size=(3, 37, 41)).astype(dtype)
    for bins, rng_ in [(7, (lo_v + 5, hi_v - 20)), (100, (-3.5, 200.25)), (1, (0, 1))]:
        h = dicomhist.histogram(img, bins=bins, range=rng_, device="cpu")
        counts, edges = h
        want, under, over = exact_histogram(img, Fraction(rng_[0]), Fraction(rng_[1]), bins)
        np.testing.assert_array_equal(counts, want)
        assert (h.underflow, h.overflow, h.total) == (under, over, img.size)
        np.testing.assert_allclose(edges, np.linspace(rng_[0], rng_[1], bins + 1), rtol=1e-12)


def test_defaults_are_one_bin_per_stored_value():
    img = np.array([[0, 1, 1, 255]], dtype=np.uint8)
    counts, edges = dicomhist.histogram(img)
    assert counts.shape == (256,) and edges[0] == 0 and edges[-1] == 256
    assert counts[1] == 2 and counts[255] == 1 and counts.sum() == 4
    np.testing.assert_array_equal(counts, np.bincount(img.reshape(-1), minlength=256))


def test_per_slice_and_numpy_histogram():
    rng = np.random.default_rng(3)
    img = rng.integers(0, 4096, size=(4, 20, 30)).astype(np.uint16)
    h = dicomhist.histogram(img, bins=64, range=(0, 4096), per_slice=True)
    assert h.counts.shape == (4, 64)
    for s in range(4):  # 4096 / 64 is exact: numpy's float edges agree here
        want, _ = np.histogram(img[s], bins=64, range=(0, 4096))
        np.testing.assert_array_equal(h.counts[s], want)
    np.testing.assert_array_equal(h.counts.sum(axis=0),
                                  dicomhist.histogram(img, bins=64, range=(0, 4096)).counts)


def test_against_the_command(cli):
    path = os.path.join(SAMPLE, "ct_phantom")
    for args in (["--bins", "64", "--range", "-1024:3072", "--units", "modality"],
                 ["--bins", "16"], ["--bins", "10", "--range", "0:1000", "--per-slice"]):
        want = cli("histogram", "--json", *args, path)[0]
        kw = {"bins": int(args[1])}
        if "--range" in args:
            lo, hi = args[args.index("--range") + 1].split(":")
            kw["range"] = (float(lo), float(hi))
        if "--units" in args:
            kw["units"] = "modality"
        vol = dicomhist.read(path)
        h = dicomhist.histogram(vol, **kw)
        assert h.counts.tolist() == want["counts"]
        assert [h.edges[0], h.edges[-1]] == want["range"]
        assert (h.underflow, h.overflow, h.total) == (want["underflow"], want["overflow"],
                                                      want["total"])
        if "--per-slice" in args:
            hs = dicomhist.histogram(vol, per_slice=True, **kw)
            assert hs.counts.tolist() == [s["counts"] for s in want["slices"]]


def test_modality_units_on_a_real_ct(cli):
    path = shared("pydicom_CT_small.dcm")
    want = cli("histogram", "--json", "--units", "modality", "--bins", "50", "--range",
               "-1000:1000", path)[0]
    h = dicomhist.histogram(dicomhist.read(path), bins=50, range=(-1000, 1000),
                            units="modality")
    assert h.counts.tolist() == want["counts"]


def test_bad_arguments():
    img = np.zeros((2, 2), dtype=np.uint16)
    with pytest.raises(dicomhist.InvalidArgumentError) as info:
        dicomhist.histogram(img, bins=10, range=(5, 5))
    assert info.value.status == "DH_ERR_INVALID_ARGUMENT"
    with pytest.raises(ValueError):
        dicomhist.histogram(img, units="hounsfield")
    with pytest.raises(ValueError):
        dicomhist.histogram(img, device="gpu")
