# SPDX-License-Identifier: MIT
"""The steady state of a device-array call (issue 22's host cost): an optimizer scores arrays of
the same kind on every step, so what does not change between its calls is checked once, by the
general path of MIFixed.scores or ParzenMI.evaluate, and kept in a DevicePlan: the arrays'
library, shapes, strides, dtypes and device, and what follows from them (sample types, image
count, pixels, strides, the result buffers' kinds). A later call whose arrays have the same
kinds, on their library's current stream and device, then costs their signatures compared, their
addresses read, the stream handle, the result allocations and the C call: no __dlpack__ capsule,
no __cuda_array_interface__ dict, no DeviceView.

Only torch.Tensor and cupy.ndarray themselves take it (their kinds and addresses are plain
attributes: data_ptr(), .data.ptr); subclasses and other producers keep the general path. The
stream is read on every call (the current stream can change between calls), never kept.
Results are allocated on every call (a call's results are the caller's to keep); `out=` is the
call without allocation."""

import numpy as np

from . import _arrays


class _TorchKinds:
    """PyTorch's side of a plan: the tensor type, a tensor's signature and address, the current
    device and stream (one C call each), and results made by torch.empty_like of a template."""

    def __init__(self):
        import torch
        self.array_type = torch.Tensor
        self.current_device = torch._C._cuda_getDevice
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        self.current_stream = raw if raw is not None else \
            (lambda index: torch.cuda.current_stream(index).cuda_stream)
        self.empty = torch.empty_like
        self._torch = torch

    @staticmethod
    def signature(x):
        return (x.shape, x.stride(), x.dtype, x.get_device())

    @staticmethod
    def address(x):
        return x.data_ptr()

    @staticmethod
    def device_of(x):
        return x.get_device()

    def template(self, like, shape, dtype_name):
        """What empty() copies the kind of: a 0-d tensor expanded to `shape` (compact results
        of any size from one element held, torch.empty_like's cheapest form: 1.5-1.9 us against
        2.8-3.5 for torch.empty with a shape)."""
        return self._torch.empty((), dtype=getattr(self._torch, dtype_name),
                                 device=like.device).expand(shape)


class _CupyKinds:
    """CuPy's side: ndarray, its signature and address, the current device and stream, results
    by cupy.empty (from the current device's memory pool, in the current stream's order)."""

    def __init__(self):
        import cupy
        self.array_type = cupy.ndarray
        self.current_device = cupy.cuda.runtime.getDevice
        get_stream = cupy.cuda.get_current_stream
        self.current_stream = lambda _device: get_stream().ptr
        self._cupy = cupy
        self._alloc = cupy.cuda.alloc

    @staticmethod
    def signature(x):
        return (x.shape, x.strides, x.dtype, x.data.device_id)

    @staticmethod
    def address(x):
        return x.data.ptr

    @staticmethod
    def device_of(x):
        return x.data.device_id

    @staticmethod
    def template(like, shape, dtype_name):
        return (shape, dtype_name)

    def empty(self, template):
        return self._cupy.empty(*template)

    def pair_layout(self, templates):
        """How empty_pair lays two results out in one allocation: (bytes, the second's offset,
        each one's (shape, dtype)); the offset a multiple of 256, as the pool aligns a block."""
        parts = [(tuple(shape), np.dtype(name)) for shape, name in templates]
        sizes = [int(np.prod(shape, dtype=np.int64)) * dt.itemsize for shape, dt in parts]
        offset = (sizes[0] + 255) // 256 * 256
        return offset + sizes[1], offset, parts[0], parts[1]

    def empty_pair(self, layout):
        """Two results from one pool allocation (session 20: one cupy.cuda.alloc and two
        ndarrays on it cost 3.2-3.5 us where two cupy.empty cost 4.2-4.4). Each array holds the
        allocation, so it stays until both are gone."""
        total, offset, (s0, d0), (s1, d1) = layout
        mem = self._alloc(total)
        ndarray = self._cupy.ndarray
        return ndarray(s0, d0, mem), ndarray(s1, d1, mem + offset)


_KINDS = {}


def kinds_of(x):
    """The plan side of x's library when a plan can serve x, else None."""
    lib = _arrays.library_of(x)
    if lib not in ("torch", "cupy"):
        return None
    kinds = _KINDS.get(lib)
    if kinds is None:
        kinds = _KINDS[lib] = _TorchKinds() if lib == "torch" else _CupyKinds()
    return kinds if type(x) is kinds.array_type else None


def signature_key(kinds, arrays, flags):
    """The key of a call: its flags and each array's signature (None for an absent one); None
    when an array is not of the plan's library (the general path takes the call)."""
    array_type, signature = kinds.array_type, kinds.signature
    key = [flags]
    for a in arrays:
        if a is None:
            key.append(None)
        elif type(a) is array_type:
            key.append(signature(a))
        else:
            return None
    return tuple(key)


class DevicePlan:
    """One kind of call, checked: `key` (signature_key of its arrays and flags), the device its
    arrays are on, `consts` (what the caller derived from them: sample types, counts, strides)
    and `templates` of its results (kinds.empty(template) makes one)."""

    __slots__ = ("kinds", "key", "device", "consts", "templates", "array_type", "pair")

    def __init__(self, kinds, key, device, consts, templates):
        self.kinds, self.key, self.device = kinds, key, device
        self.consts, self.templates = consts, templates
        # what the public methods compare first, before any other check (session 19: an
        # optimizer's step goes straight to the plan)
        self.array_type = kinds.array_type
        # two results from one allocation where the library's allocations allow it (CuPy's
        # pool), else None: each result from its own template
        layout = getattr(kinds, "pair_layout", None)
        self.pair = layout(templates) if layout is not None and len(templates) == 2 else None

    def own(self, x):
        """x's device address when x is an array of the plan's library (what `out=` holds on
        an optimizer's step), else None (the caller's general check takes it)."""
        return self.kinds.address(x) if type(x) is self.array_type else None

    def stream_for(self, arrays, flags):
        """The current stream's handle when these arrays match the plan and their device is
        the current one; None otherwise (the general path takes the call)."""
        kinds = self.kinds
        if signature_key(kinds, arrays, flags) != self.key or \
                kinds.current_device() != self.device:
            return None
        return kinds.current_stream(self.device)


def make(arrays, flags, consts, results, on_current_stream):
    """A plan for a call the general path has just made, or None where none can serve it:
    arrays (the call's device arrays, None for absent ones; the first one's library decides),
    results: (shape, dtype name: 'uint8', 'float32') per result buffer; on_current_stream: the general path
    ran on the library's current stream of the arrays' device, that device current."""
    if not on_current_stream:
        return None
    first = next(a for a in arrays if a is not None)
    kinds = kinds_of(first)
    if kinds is None:
        return None
    key = signature_key(kinds, arrays, flags)
    if key is None:
        return None
    device = kinds.device_of(first)
    if any(a is not None and kinds.device_of(a) != device for a in arrays):
        return None
    if kinds.current_device() != device:
        return None
    templates = tuple(kinds.template(first, shape, name) for shape, name in results)
    return DevicePlan(kinds, key, device, consts, templates)
