# SPDX-License-Identifier: MIT
"""What equalize, window, clahe and write_derived share: the caller's array (NumPy, CuPy,
PyTorch, or a Volume) made into a volume, the parameters of dh_equalize from the command's
spellings, and the result given back as the kind of array that came in, on its device.

Equalization and CLAHE of a compact uint16 or int16 CuPy array or PyTorch CUDA tensor (or of a
Volume read with device='cuda', without a window) run where it lives (dh_equalize_device, on the array library's current stream; the result is made by that
library on that device). Window/level, a window of the file, device='cpu', other dtypes or
layouts, and builds without CUDA (with device='auto') go through the host: the array is copied
there, computed, and the result copied back to the array's device."""
import numpy as np

from . import _core
from ._arrays import (DeviceView, device_address, empty_device_bytes, is_device_array,
                      library_of, stream_handle, to_host)
from ._context import ctx, device_code
from .errors import NoDeviceError
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

    def __init__(self, x, bits_stored=None, convert=None):
        self.like = None
        if isinstance(x, Volume):
            if bits_stored is not None:
                raise ValueError("bits_stored is for arrays; a Volume has its own")
            self.volume, self.two_d = x, False
            if x.device == "cuda":  # computed on its host copy, given back on its device
                x.host_handle()
                self.like = x.pixels
            return
        if library_of(x) is not None or is_device_array(x):
            self.like = x
        host = to_host(x)
        if convert is not None:  # an array the operation defines its input by (the host copy)
            host = convert(host)
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


def _compact(view):
    expected, acc = [], 1
    for d in reversed(view.shape):
        expected.insert(0, acc)
        acc *= d
    return all(d == 1 or st == e for d, st, e in zip(view.shape, view.strides, expected))


def on_device(x, bits_stored, fields):
    """The result of dh_equalize_device for a CUDA array, the same kind on its device, or None
    where that path does not apply (see the module's text). A Volume read with device='cuda'
    computes on its GPU samples where no window is asked for (a window is in modality units,
    which only the host path applies); else through the host."""
    if isinstance(x, Volume):
        if x.device != "cuda" or "window" in fields:
            return None
        if bits_stored is not None:
            raise ValueError("bits_stored is for arrays; a Volume has its own")
        return on_device(x.pixels, x.bits_stored, fields)
    lib = library_of(x)
    if lib is None or not is_device_array(x) or fields["operation"] != _core.EQ_EQUALIZE or \
            fields["device"] == _core.DEVICE_CPU or fields.get("window") == _core.WINDOW_FILE or \
            fields.get("method") == _core.EQ_METHOD_CLAHE_SKIMAGE:  # a CPU mode
        return None
    if lib == "torch":
        import torch
        if not hasattr(torch, "uint16"):  # PyTorch before 2.3 cannot hold the result
            return None
    stream = stream_handle(None, x)
    view = DeviceView(x, stream)
    if view.dtype not in (np.uint16, np.int16) or len(view.shape) not in (2, 3) or \
            not _compact(view) or 0 in view.shape:
        return None
    slices, rows, columns = view.shape if len(view.shape) == 3 else (1,) + view.shape
    bits = int(bits_stored) if bits_stored is not None else 16
    raw = empty_device_bytes(x, (slices * rows * columns * 2,), stream)
    try:
        _core.equalize_device(ctx(), view.ptr, view.dtype == np.int16, bits, columns, rows,
                              slices, device_address(raw), stream, **fields)
    except NoDeviceError:
        if fields["device"] == _core.DEVICE_AUTO:  # a build without CUDA: through the host
            return None
        raise
    if lib == "torch":
        import torch
        return raw.view(torch.uint16).reshape(view.shape)
    import cupy
    return raw.view(cupy.uint16).reshape(view.shape)
