# SPDX-License-Identifier: MIT
"""equalize() gives the numbers `dicomhist equalize` writes."""
import os

import numpy as np
import pytest

import dicomhist
from conftest import SAMPLE


@pytest.mark.parametrize("args,kwargs", [
    ([], {}),
    (["--window", "minmax", "--bits", "16"], {"window": "minmax", "bits": 16}),
    (["--window", "40:400", "--mode", "slice"], {"window": "40:400", "per_slice": True}),
    (["--window-range", "-200:300", "--clip-limit", "2.5"], {"window": (-200, 300),
                                                             "clip_limit": 2.5}),
    (["--window", "percentile:1.5", "--bits", "12"], {"window": "percentile:1.5", "bits": 12}),
])
def test_same_numbers_as_the_command(cli, tmp_path, args, kwargs):
    src = os.path.join(SAMPLE, "ct_phantom")
    cli("equalize", "--json", "-o", tmp_path, *args, src)
    written = dicomhist.read(str(tmp_path))
    got = dicomhist.equalize(dicomhist.read(src), **kwargs)
    assert got.dtype == np.uint16 and got.shape == written.pixels.shape
    np.testing.assert_array_equal(got, written.pixels)


def test_two_d_array_and_the_definition():
    rng = np.random.default_rng(5)
    img = rng.integers(0, 256, size=(40, 50)).astype(np.uint8)
    out = dicomhist.equalize(img)
    assert out.shape == img.shape
    # out(v) = floor((cdf(v) - cdf_min) * (L - 1) / (N - cdf_min)), L = 256
    hist = np.bincount(img.reshape(-1), minlength=256)
    cdf = np.cumsum(hist)
    cdf_min = cdf[hist > 0][0]
    table = (cdf - cdf_min) * 255 // (img.size - cdf_min)
    np.testing.assert_array_equal(out, table[img])


def test_window_errors():
    img = np.zeros((4, 4), dtype=np.uint16)
    with pytest.raises(ValueError, match="window"):
        dicomhist.equalize(img, window="wide")
    with pytest.raises(dicomhist.UnsupportedError):
        dicomhist.equalize(img, window="file")
    with pytest.raises(dicomhist.InvalidArgumentError):
        dicomhist.equalize(img, bits=9)
