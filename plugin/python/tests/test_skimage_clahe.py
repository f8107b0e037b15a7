# SPDX-License-Identifier: MIT
"""dicomhist.clahe(..., skimage=True) against scikit-image's exposure.equalize_adapthist itself:
the mode reproduces its algorithm, so on every case our 16-bit output must be round(its float64
result * 65535) exactly (round half to even, as NumPy rounds), on random uint16, int16 (whose
negatives img_as_uint clips), uint8 and int8 images, odd and tiny sizes, sizes that are no multiple
of the kernel, several kernel sizes, clip limits 0, 0.01, 0.05 and 1, nbins 16 to 16384,
constant and two-value images, 2D, 3D per volume and 3D per slice."""
import numpy as np
import pytest

import dicomhist

exposure = pytest.importorskip("skimage.exposure")


def expected(x, kernel, clip, nbins, per_slice=False):
    if per_slice and x.ndim == 3:
        f = np.stack([exposure.equalize_adapthist(s, kernel, clip, nbins) for s in x])
    else:
        f = exposure.equalize_adapthist(x, kernel, clip, nbins)
    return np.round(f * 65535).astype(np.uint16)


def image(rng, shape, dtype, kind):
    info = np.iinfo(dtype)
    if kind == "full":
        return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
    if kind == "ct":  # 12-bit values with a skewed histogram, signed ones around 0
        v = rng.gamma(2.0, 300.0, size=shape) + (-1024 if info.min < 0 else 0)
        return np.clip(v, info.min, min(info.max, 4095)).astype(dtype)
    if kind == "constant":
        return np.full(shape, rng.integers(max(info.min, -2000), min(info.max, 2000)), dtype)
    return np.where(rng.random(shape) < 0.3, 7, 900 if info.max > 900 else 200).astype(dtype)


CASES_2D = [(shape, dtype, kind) for shape in [(1, 1), (1, 9), (5, 3), (37, 53), (101, 80)]
            for dtype in (np.uint16, np.int16, np.uint8, np.int8)
            for kind in ("full", "ct", "constant", "two")
            if np.prod(shape) < 1000 or kind != "two" or dtype in (np.uint16, np.int16)]


PAIRS_LARGE = {(16, 0), (4096, 0), (256, 0.01), (16384, 0.01), (16, 0.05), (4096, 0.05),
               (256, 1), (16384, 1)}


@pytest.mark.parametrize("shape,dtype,kind", CASES_2D)
def test_2d_against_skimage(shape, dtype, kind):
    rng = np.random.default_rng(abs(hash((shape, np.dtype(dtype).name, kind))) % 2**32)
    x = image(rng, shape, dtype, kind)
    for kernel in (None, 3, (5, 7)):
        for clip in (0, 0.01, 0.05, 1):
            for nbins in (16, 256, 4096, 16384):
                # Every pair on small images; on large ones (where scikit-image is slow) each
                # clip limit with two bin counts, every bin count still met.
                if x.size > 1000 and ((nbins, clip) not in PAIRS_LARGE or kernel == 3):
                    continue  # (kernel 3 is met on the small images)
                got = dicomhist.clahe(x, tile_size=kernel, clip_limit=clip, bins=nbins,
                                      skimage=True)
                want = expected(x, kernel, clip, nbins)
                assert np.array_equal(got, want), (kernel, clip, nbins)


@pytest.mark.parametrize("shape,dtype", [((3, 17, 23), np.uint16), ((9, 20, 31), np.int16),
                                         ((16, 16, 16), np.uint16)])
def test_3d_against_skimage(shape, dtype):
    rng = np.random.default_rng(shape[0] * 1000 + np.dtype(dtype).itemsize)
    x = image(rng, shape, dtype, "ct")
    for kernel in (None, 4, (2, 5, 8)):
        for clip, nbins in ((0.01, 256), (0, 4096), (0.05, 16), (1, 16384)):
            got = dicomhist.clahe(x, tile_size=kernel, clip_limit=clip, bins=nbins,
                                  skimage=True)
            assert np.array_equal(got, expected(x, kernel, clip, nbins)), (kernel, clip, nbins)
            if kernel is None or isinstance(kernel, int):
                got = dicomhist.clahe(x, tile_size=kernel, clip_limit=clip, bins=nbins,
                                      skimage=True, per_slice=True)
                want = expected(x, kernel, clip, nbins, per_slice=True)
                assert np.array_equal(got, want), ("slice", kernel, clip, nbins)


def test_defaults_and_bits():
    rng = np.random.default_rng(5)
    x = image(rng, (120, 90), np.uint16, "ct")
    f = exposure.equalize_adapthist(x)
    assert np.array_equal(dicomhist.clahe(x, skimage=True), np.round(f * 65535))
    assert np.array_equal(dicomhist.clahe(x, skimage=True, bits=8), np.round(f * 255))


def test_refusals():
    x = np.zeros((8, 8), np.uint16)
    with pytest.raises(ValueError):
        dicomhist.clahe(x, tiles=2, skimage=True)
    with pytest.raises(ValueError):
        dicomhist.clahe(x, window="minmax", skimage=True)
    with pytest.raises(ValueError):
        dicomhist.clahe(x, bins=70000, skimage=True)
