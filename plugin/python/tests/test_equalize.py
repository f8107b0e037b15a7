# SPDX-License-Identifier: MIT
"""equalize() gives the numbers `dicomhist equalize` writes."""
import os
import subprocess

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


@pytest.mark.parametrize("text", ["40:400", "-1e2:4e2", "file", "minmax", "percentile:0",
                                  "percentile:49.5", "percentile:50", "percentile:x", "40:0",
                                  " 40:400", "40:400:1", "inf:400", "40", "wide", ""])
def test_window_text_as_the_command_reads_it(cli, tmp_path, text):
    """The package reads window text with the command's own parser: it refuses what the command
    refuses (a usage error, exit 2), with the same reason, and takes the rest."""
    src = os.path.join(SAMPLE, "ct_phantom")
    run = subprocess.run([cli.binary, "equalize", "-o", tmp_path, "--window", text, src],
                         capture_output=True, text=True)
    vol = dicomhist.read(src)
    if run.returncode == 2:
        with pytest.raises(dicomhist.InvalidArgumentError) as refused:
            dicomhist.equalize(vol, window=text)
        assert refused.value.message.split(": ", 1)[1] in run.stderr
    else:
        try:
            dicomhist.equalize(vol, window=text)
        except dicomhist.DicomhistError as e:  # refused by the library, as by the command
            assert run.returncode != 0 and e.message in run.stderr
