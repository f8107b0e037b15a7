# SPDX-License-Identifier: MIT
"""Histogram equalization and windowing (dicomhist.h section 6): the numbers `dicomhist
equalize` writes, as arrays."""
import numpy as np

from . import _core
from ._context import ctx, device_code
from .volume import as_volume

_EQUALIZE, _WINDOW_LEVEL = 0, 1
_NONE, _CENTER_WIDTH, _RANGE, _FILE, _MINMAX, _PERCENTILE = 0, 1, 2, 3, 4, 5


def _window(window):
    """(source, center, width, lo, hi, percentile) from the command's spellings: None, 'C:W',
    'file', 'minmax', 'percentile:P', or a (lo, hi) tuple (--window-range)."""
    if window is None:
        return _NONE, 0.0, 0.0, 0.0, 0.0, 0.0
    if isinstance(window, (tuple, list)):
        lo, hi = window
        return _RANGE, 0.0, 0.0, float(lo), float(hi), 0.0
    if not isinstance(window, str):
        raise TypeError("window: None, 'C:W', 'file', 'minmax', 'percentile:P' or (lo, hi)")
    if window == "file":
        return _FILE, 0.0, 0.0, 0.0, 0.0, 0.0
    if window == "minmax":
        return _MINMAX, 0.0, 0.0, 0.0, 0.0, 0.0
    if window.startswith("percentile:"):
        return _PERCENTILE, 0.0, 0.0, 0.0, 0.0, float(window.split(":", 1)[1])
    try:
        c, w = window.split(":")
        return _CENTER_WIDTH, float(c), float(w), 0.0, 0.0, 0.0
    except ValueError:
        raise ValueError(f"window {window!r}: expected 'C:W', 'file', 'minmax', "
                         "'percentile:P' or (lo, hi)") from None


def equalize(x, window=None, clip_limit=None, per_slice=False, bits=None, device="auto"):
    """Histogram equalization of a Volume or a 2D/3D integer array: new stored values
    0 .. 2^bits - 1 (uint16; bits 8, 12 or 16, default the input's BitsStored) of the input's
    shape, per volume or per slice, inside a window (modality units), optionally
    contrast-limited (clip_limit > 0). The same numbers as `dicomhist equalize` writes."""
    vol, two_d = as_volume(x)
    source, c, w, lo, hi, p = _window(window)
    r = _core.equalize(ctx(), vol._handle, _EQUALIZE, bool(per_slice), source, c, w, lo, hi, p,
                       0, 0.0 if clip_limit is None else float(clip_limit),
                       0 if bits is None else int(bits), device_code(device))
    out = np.frombuffer(r["data"], dtype=np.uint16).reshape(r["slices"], r["rows"], r["columns"])
    return out[0] if two_d else out
