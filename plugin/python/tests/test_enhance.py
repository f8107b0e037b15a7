# SPDX-License-Identifier: MIT
"""clahe() and window() (issue 21), and equalize/window/clahe on kinds of arrays: CLAHE against
tests/cli/clahe_numpy.py (the documented formula in NumPy, independent of the C code) on random,
CT-like, constant, two-value and real data, per slice and per volume, odd tile grids and tiles
of one to three pixels; window/level against the documented LINEAR and LINEAR_EXACT formulas;
both against what `dicomhist equalize --method clahe` and `dicomhist window` write."""
import math
import os
import sys

import numpy as np
import pytest

import dicomhist
from conftest import ROOT, SAMPLE, ct_like, shared

sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
import clahe_numpy  # noqa: E402


def ref_tiles(shape, per_slice, tiles=None, tile_size=None):
    """The tile grid clahe() is documented to use, in array order: tiles as given (an int along
    rows and columns), else ceil(n / size) from tile_size, else min(8, n) along each axis."""
    n = shape[-2:] if per_slice else shape
    if isinstance(tiles, int):
        tiles = (tiles, tiles) if per_slice else (min(8, shape[0]), tiles, tiles)
    if tiles is not None:
        if len(tiles) == 2 and not per_slice:
            tiles = (min(8, shape[0]),) + tuple(tiles)
        return tuple(tiles)
    if tile_size is not None:
        size = (tile_size,) * len(n) if isinstance(tile_size, int) else tile_size
        return tuple(math.ceil(a / s) for a, s in zip(n, size))
    return tuple(min(8, a) for a in n)


def data(kind, shape, rng):
    if kind == "random12":
        return rng.integers(0, 4096, size=shape).astype(np.uint16), 12, False
    if kind == "signed":
        return rng.integers(-1024, 3072, size=shape).astype(np.int16), 16, True
    if kind == "ct_like":
        return ct_like(rng, shape, 0, 4095).astype(np.uint16), 12, False
    if kind == "constant":
        return np.full(shape, 700, dtype=np.uint16), 12, False
    if kind == "two_value":
        return np.where(rng.random(shape) < 0.3, 100, 3000).astype(np.uint16), 12, False
    if kind == "uint8":
        return rng.integers(0, 256, size=shape).astype(np.uint8), 8, False
    raise AssertionError(kind)


CASES = [  # kind, shape, per_slice, options
    ("random12", (37, 53), True, {}),
    ("random12", (3, 29, 31), False, {"tiles": (2, 3, 5), "clip_limit": 2.0}),
    ("signed", (2, 24, 20), True, {"tiles": (3, 4), "bins": 256, "window": (-200, 1500)}),
    ("ct_like", (4, 33, 47), False, {"tile_size": 9, "clip_limit": 1.5, "bits": 8}),
    ("ct_like", (31, 45), True, {"tiles": 1, "clip_limit": 3.0}),   # one tile: global
    ("ct_like", (3, 30, 41), True, {"tile_size": 13, "bins": 256}),
    ("random12", (9, 10), True, {"tiles": (9, 10)}),                # tiles of one pixel
    ("random12", (2, 9, 11), False, {"tiles": (2, 4, 5), "bins": 7}),  # 2-3 pixel tiles
    ("constant", (20, 21), True, {"tiles": 3}),
    ("two_value", (3, 16, 18), False, {"tiles": (2, 2, 3), "clip_limit": 1.0}),
    ("uint8", (40, 36), True, {"tile_size": (7, 11), "bits": 16}),
    ("random12", (25, 26), True, {"window": "minmax", "bins": 4096, "bits": 12}),
]


@pytest.mark.parametrize("kind,shape,per_slice,opts", CASES)
def test_clahe_is_the_documented_formula(kind, shape, per_slice, opts):
    rng = np.random.default_rng(abs(hash((kind, shape))) % 2**32)
    x, bits, signed = data(kind, shape, rng)
    got = dicomhist.clahe(x, per_slice=per_slice, device="cpu",
                          bits_stored=None if bits in (8, 16) else bits, **opts)
    assert isinstance(got, np.ndarray) and got.dtype == np.uint16 and got.shape == x.shape
    vol = x[np.newaxis] if x.ndim == 2 else x
    window = opts.get("window")
    if window == "minmax":
        window = (int(vol.min()), int(vol.max()))
    out_bits = opts.get("bits", bits)
    want = clahe_numpy.clahe(vol.astype(np.int64), bits, signed,
                             ref_tiles(vol.shape, per_slice, opts.get("tiles"),
                                       opts.get("tile_size")),
                             per_slice, bins=opts.get("bins", 0), levels=1 << out_bits,
                             clip=opts.get("clip_limit", 0.0), window=window)
    np.testing.assert_array_equal(got, want.reshape(x.shape))


def test_clahe_one_tile_is_global_equalization():
    rng = np.random.default_rng(3)
    x = ct_like(rng, (2, 40, 44)).astype(np.uint16)
    for clip in (0.0, 2.5):
        np.testing.assert_array_equal(
            dicomhist.clahe(x, tiles=(1, 1), per_slice=True, clip_limit=clip, bits_stored=12),
            dicomhist.equalize(x, per_slice=True, clip_limit=clip, bits_stored=12))


def test_clahe_on_a_real_radiograph():
    """A CR of ../shared/dicom, as the library decodes it, against the NumPy formula."""
    vol = dicomhist.read(shared("cr/cr1_6154.dcm"))
    got = dicomhist.clahe(vol, per_slice=True, clip_limit=2.0, bins=1024)
    want = clahe_numpy.clahe(vol.pixels.astype(np.int64), vol.bits_stored, vol.signed, (8, 8),
                             True, bins=1024, clip=2.0)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("args,kwargs", [
    (["--mode", "slice"], {"per_slice": True}),
    (["--tiles", "3x2x2", "--bins", "256", "--bits", "12"],
     {"tiles": (2, 2, 3), "bins": 256, "bits": 12}),
    (["--tile-size", "16", "--clip-limit", "2", "--window", "40:400"],
     {"tile_size": 16, "clip_limit": 2, "window": "40:400"}),
    (["--mode", "slice", "--tiles", "5x3", "--window-range", "-100:200"],
     {"per_slice": True, "tiles": (3, 5), "window": (-100, 200)}),
])
def test_clahe_same_numbers_as_the_command(cli, tmp_path, args, kwargs):
    src = os.path.join(SAMPLE, "ct_phantom")
    cli("equalize", "--method", "clahe", "--json", "-o", tmp_path, *args, src)
    written = dicomhist.read(str(tmp_path))
    np.testing.assert_array_equal(dicomhist.clahe(dicomhist.read(src), **kwargs),
                                  written.pixels)


def test_clahe_errors():
    x = np.zeros((6, 7), dtype=np.uint16)
    with pytest.raises(dicomhist.InvalidArgumentError, match="tile"):
        dicomhist.clahe(x, tiles=(7, 2))  # more tiles than rows
    with pytest.raises(ValueError, match="bins"):
        dicomhist.clahe(x, bins=0)
    with pytest.raises(dicomhist.InvalidArgumentError, match="bins"):
        dicomhist.clahe(x, bins=65537)
    with pytest.raises(ValueError, match="tiles"):
        dicomhist.clahe(x, tiles=(1, 2, 3, 4))
    with pytest.raises(dicomhist.InvalidArgumentError):  # slice tiles in slice mode
        dicomhist.clahe(np.zeros((2, 6, 7), np.uint16), tiles=(2, 2, 2), per_slice=True)
    with pytest.raises(ValueError, match="bits_stored"):
        dicomhist.clahe(dicomhist.from_array(x), bits_stored=12)


def ref_linear(x, c, w, levels, exact=False):
    """DICOM's LINEAR / LINEAR_EXACT (docs/equalization.md), truncated, in float64."""
    x = x.astype(np.float64)
    if w == 1:  # LINEAR of width 1: a step at c - 0.5
        return np.where(x <= c - 0.5, 0, levels - 1).astype(np.uint16)
    if exact:
        y = ((x - c) / w + 0.5) * (levels - 1)
        y = np.where(x <= c - w / 2, 0, np.where(x > c + w / 2, levels - 1, y))
    else:
        y = ((x - (c - 0.5)) / (w - 1) + 0.5) * (levels - 1)
        y = np.where(x <= c - 0.5 - (w - 1) / 2, 0,
                     np.where(x > c - 0.5 + (w - 1) / 2, levels - 1, y))
    return np.clip(np.floor(y), 0, levels - 1).astype(np.uint16)


@pytest.mark.parametrize("function,text,c,w", [("linear", "1000:801", 1000, 801),
                                               ("linear-exact", "1500:2001", 1500, 2001),
                                               ("linear", "2048:1", 2048, 1)])
def test_window_is_the_voi_function(function, text, c, w):
    rng = np.random.default_rng(11)
    x = rng.integers(0, 4096, size=(3, 30, 41)).astype(np.uint16)
    got = dicomhist.window(x, text, function=function, bits=8, bits_stored=12)
    np.testing.assert_array_equal(got, ref_linear(x, c, w, 256, function == "linear-exact"))


def test_window_range_and_minmax_as_documented():
    rng = np.random.default_rng(12)
    x = rng.integers(-500, 1500, size=(50, 60)).astype(np.int16)
    lo, hi = -200, 900  # LINEAR: c = (LO + HI + 1) / 2, w = HI - LO + 1
    np.testing.assert_array_equal(dicomhist.window(x, (lo, hi)),
                                  ref_linear(x, (lo + hi + 1) / 2, hi - lo + 1, 1 << 16))
    lo, hi = int(x.min()), int(x.max())
    np.testing.assert_array_equal(dicomhist.window(x, "minmax", bits=12),
                                  ref_linear(x, (lo + hi + 1) / 2, hi - lo + 1, 1 << 12))


@pytest.mark.parametrize("args,kwargs", [
    (["--window", "40:400"], {"window": "40:400"}),
    (["--window", "minmax", "--mode", "slice", "--bits", "16"],
     {"window": "minmax", "per_slice": True, "bits": 16}),
    (["--window", "percentile:2", "--function", "sigmoid"],
     {"window": "percentile:2", "function": "sigmoid"}),
    (["--window-range", "-100:300", "--function", "linear-exact", "--bits", "12"],
     {"window": (-100, 300), "function": "linear-exact", "bits": 12}),
    (["--window", "file"], {"window": "file"}),
])
def test_window_same_numbers_as_the_command(cli, tmp_path, args, kwargs):
    src = os.path.join(SAMPLE, "ct_phantom")
    cli("window", "--json", "-o", tmp_path, *args, src)
    written = dicomhist.read(str(tmp_path))
    np.testing.assert_array_equal(dicomhist.window(dicomhist.read(src), **kwargs),
                                  written.pixels)


def test_window_errors():
    x = np.zeros((4, 4), dtype=np.uint16)
    with pytest.raises(ValueError, match="window"):
        dicomhist.window(x, None)
    with pytest.raises(ValueError, match="function"):
        dicomhist.window(x, "40:400", function="log")
    with pytest.raises(dicomhist.UnsupportedError):
        dicomhist.window(x, "file")  # an array has no window of its own
    with pytest.raises(dicomhist.InvalidArgumentError):
        dicomhist.window(x, "40:0")


def test_kinds_of_input():
    """2D in, 2D out; a Volume gives (slices, rows, columns); anything np.asarray takes works;
    bits_stored sets the input's BitsStored (so the default output bits)."""
    img = np.array([[0, 1, 2], [3, 4, 4095]], dtype=np.uint16)
    for f in (dicomhist.equalize, lambda x, **k: dicomhist.clahe(x, tiles=1, **k)):
        out = f(img, bits_stored=12)
        assert isinstance(out, np.ndarray) and out.shape == (2, 3) and out.max() == 4095
    vol = dicomhist.from_array(img, bits_stored=12)
    assert dicomhist.clahe(vol).shape == (1, 2, 3)
    with pytest.raises(TypeError):
        dicomhist.clahe(np.zeros((4, 4), np.float32))


def test_three_integer_fields_of_the_parameter_table():
    """tiles and tile_size reach dh_equalize_params as (columns, rows, slices): three integers,
    anything else refused before the library is called."""
    from dicomhist import _core
    from dicomhist._context import ctx
    vol = dicomhist.from_array(np.arange(60, dtype=np.uint16).reshape(6, 10), bits_stored=12)
    clahe = {"method": _core.EQ_METHOD_CLAHE}
    r = _core.equalize(ctx(), vol._handle, tiles=[5, 2, 0], **clahe)
    assert "5x2" in r["description"]
    for bad, error in [((1, 2), TypeError), (7, TypeError), ((1, 2, "3"), TypeError),
                       ((1, 2, -1), OverflowError), ((1, 2, 1 << 33), OverflowError)]:
        with pytest.raises(error):
            _core.equalize(ctx(), vol._handle, tiles=bad, **clahe)
    with pytest.raises(dicomhist.InvalidArgumentError):  # 11 tiles along 10 columns
        _core.equalize(ctx(), vol._handle, tiles=(11, 1, 0), **clahe)
