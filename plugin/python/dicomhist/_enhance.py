# SPDX-License-Identifier: MIT
"""What equalize, window, clahe and write_derived share: the caller's array (NumPy, CuPy,
PyTorch, or a Volume) made into a volume, the parameters of dh_equalize from the command's
spellings, and the result given back as the kind of array that came in, on its device.

The library's equalization and CLAHE take host volumes only (dh_equalize has no device-pointer
form yet), so a CUDA array is copied to the host, computed (on the GPU when device allows: the
library uploads it again) and the result copied back to the array's device."""
import numpy as np

from . import _core
from ._arrays import is_device_array, library_of, to_host
from ._context import device_code
from .volume import Volume, from_array

FUNCTIONS = {"linear": _core.VOI_LINEAR, "linear-exact": _core.VOI_LINEAR_EXACT,
             "sigmoid": _core.VOI_SIGMOID}  # the command's --function


def window_fields(window):
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


def common_fields(window, per_slice, bits, device):
    """The fields every operation takes; what is not given keeps dh_equalize_params_init's
    default (no window, the input's BitsStored)."""
    fields = {"per_slice": bool(per_slice), "device": device_code(device), **window_fields(window)}
    if bits is not None:
        fields["output_bits"] = int(bits)
    return fields


def function_code(function):
    try:
        return FUNCTIONS[function]
    except (KeyError, TypeError):
        raise ValueError(f"function must be one of {', '.join(FUNCTIONS)}, not {function!r}") \
            from None


def axes(value, name, what):
    """CLAHE's tiles or tile_size in array order, (slices, rows, columns), as the API's
    (columns, rows, slices); an int is every axis (`axes_of_int` of them, see clahe)."""
    if value is None:
        return None
    if isinstance(value, (int, np.integer)):
        return int(value)
    value = tuple(int(v) for v in value)
    if len(value) == 2:
        return (value[1], value[0], 0)
    if len(value) == 3:
        return (value[2], value[1], value[0])
    raise ValueError(f"{name}: an int, (rows, columns) or (slices, rows, columns) {what}, "
                     f"not {value!r}")


class Input:
    """The volume to compute on, whether the caller's array was 2D, and how to give the result
    back (`give_back`)."""

    def __init__(self, x, bits_stored=None):
        self.like = None
        if isinstance(x, Volume):
            if bits_stored is not None:
                raise ValueError("bits_stored is for arrays; a Volume has its own")
            self.volume, self.two_d = x, False
            return
        if library_of(x) is not None or is_device_array(x):
            self.like = x
        host = to_host(x)
        self.volume, self.two_d = from_array(host, bits_stored), np.ndim(host) == 2

    def give_back(self, data, slices, rows, columns):
        """The library's uint16 result as the caller's kind of array on the caller's device."""
        out = np.frombuffer(data, dtype=np.uint16).reshape(slices, rows, columns)
        if self.two_d:
            out = out[0]
        like = self.like
        if like is None:
            return out
        lib = library_of(like)
        if lib == "torch":
            import torch
            if not hasattr(torch, "uint16"):  # PyTorch before 2.3: int32 holds every value
                out = out.astype(np.int32)
            return torch.from_numpy(out.copy()).to(like.device)
        if lib == "cupy":
            import cupy
            with cupy.cuda.Device(like.device.id):
                return cupy.asarray(out)
        return out
