# SPDX-License-Identifier: MIT
"""Histogram equalization and windowing (dicomhist.h section 6): the numbers `dicomhist
equalize` writes, as arrays."""
import numpy as np

from . import _core
from ._context import ctx, device_code
from .volume import as_volume


def _window(window):
    """The dh_equalize_params fields of a window in the command's spellings: None (no window),
    'C:W', 'file', 'minmax', 'percentile:P' (read by the command's own parser of --window), or
    a (lo, hi) tuple (--window-range)."""
    if window is None:
        return {}
    if isinstance(window, (tuple, list)):
        lo, hi = window
        return {"window": _core.WINDOW_RANGE, "lo": float(lo), "hi": float(hi)}
    if not isinstance(window, str):
        raise TypeError("window: None, 'C:W', 'file', 'minmax', 'percentile:P' or (lo, hi)")
    return _core.parse_window(window)


def equalize(x, window=None, clip_limit=None, per_slice=False, bits=None, device="auto"):
    """Histogram equalization of a Volume or a 2D/3D integer array: new stored values
    0 .. 2^bits - 1 (uint16; bits 8, 12 or 16, default the input's BitsStored) of the input's
    shape, per volume or per slice, inside a window (modality units), optionally
    contrast-limited (clip_limit > 0). The same numbers as `dicomhist equalize` writes."""
    vol, two_d = as_volume(x)
    # dh_equalize_params by field name; what is not given keeps dh_equalize_params_init's
    # default (no window, no clipping, the input's BitsStored)
    params = {"operation": _core.EQ_EQUALIZE, "per_slice": bool(per_slice),
              "device": device_code(device), **_window(window)}
    if clip_limit is not None:
        params["clip_limit"] = float(clip_limit)
    if bits is not None:
        params["output_bits"] = int(bits)
    r = _core.equalize(ctx(), vol._handle, **params)
    out = np.frombuffer(r["data"], dtype=np.uint16).reshape(r["slices"], r["rows"], r["columns"])
    return out[0] if two_d else out
