# SPDX-License-Identifier: MIT
"""Arrays in and out: host arrays (NumPy and anything np.asarray takes) and CUDA arrays (CuPy,
PyTorch, anything with __dlpack__ or __cuda_array_interface__), read where they are without a
copy; CUDA streams from the forms their libraries use; result buffers made by the caller's own
array library on the caller's device and stream. CuPy and PyTorch are imported only when an
array of theirs comes in."""

import warnings

import numpy as np

from . import _core

SAMPLE_UINT16, SAMPLE_INT16, SAMPLE_FLOAT32 = (_core.SAMPLE_UINT16, _core.SAMPLE_INT16,
                                               _core.SAMPLE_FLOAT32)  # dh_sample_type

_DL_CUDA, _DL_CUDA_MANAGED = _core.DL_CUDA, _core.DL_CUDA_MANAGED  # DLPack device types
_DL_KINDS = {_core.DL_INT: "int", _core.DL_UINT: "uint", _core.DL_FLOAT: "float",
             _core.DL_BOOL: "bool"}  # DLPack type codes


def _dl_dtype(code, bits, lanes):
    """The NumPy dtype of a DLPack (code, bits, lanes), or None."""
    kind = _DL_KINDS.get(code)
    if kind is None or lanes != 1:
        return None
    try:
        return np.dtype("bool" if kind == "bool" else f"{kind}{bits}")
    except TypeError:
        return None


def _detach(x):
    """PyTorch tensors that require grad refuse export; scoring needs no gradient."""
    if getattr(x, "requires_grad", False):
        return x.detach()
    return x


def _torch_cuda(x):
    """True for a PyTorch CUDA tensor (asked without DLPack: torch's __dlpack_device__ is Python)."""
    return getattr(x, "is_cuda", False) is True and library_of(x) == "torch"


def torch_module():
    """PyTorch, imported where a tensor came in (never at this module's import)."""
    import torch
    return torch


def is_torch_view(view):
    """True for a DeviceView read from a PyTorch tensor on its current stream (the fast path):
    results for it may be made by PyTorch on that stream directly."""
    return getattr(view, "torch_current", False)


def torch_current_stream(device):
    """The cudaStream_t (an int) of PyTorch's current stream on a CUDA device: one C call where
    torch has it (torch.cuda.current_stream() builds a Stream object: several us, issue 22)."""
    import torch
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    index = device.index if device.index is not None else torch.cuda.current_device()
    return raw(index) if raw is not None else torch.cuda.current_stream(index).cuda_stream


def is_device_array(x):
    """True for arrays in CUDA device (or managed) memory."""
    if isinstance(x, np.ndarray):
        return False
    if _torch_cuda(x):
        return True
    get_device = getattr(x, "__dlpack_device__", None)
    if get_device is not None:
        try:
            kind = get_device()[0]
        except Exception:  # a producer that cannot say: try the other protocol
            kind = None
        if kind is not None:
            return int(kind) in (_DL_CUDA, _DL_CUDA_MANAGED)
    return hasattr(x, "__cuda_array_interface__")


def library_of(x):
    """'torch', 'cupy' or None: whose array this is (for streams and result buffers)."""
    mod = type(x).__module__.split(".")[0]
    return mod if mod in ("torch", "cupy") else None


def to_host(x):
    """A NumPy array of x; device arrays are copied to the host (this waits for the GPU)."""
    x = _detach(x)
    if not is_device_array(x):
        return np.asarray(x)
    lib = library_of(x)
    if lib == "cupy":
        return x.get()
    if lib == "torch":
        return x.cpu().numpy()
    raise TypeError(f"cannot copy a {type(x).__name__} to the host: pass a NumPy array")


def as_samples(a, name):
    """A C-contiguous host array the MI API takes, and its dh_sample_type: uint16, int16 and
    float32 as they are; bool and 8-bit integers widened; wider integers when their values fit
    16 bits; other floats rounded to float32."""
    a = np.asarray(a)
    dt = a.dtype
    if dt == np.uint16:
        t = SAMPLE_UINT16
    elif dt == np.int16:
        t = SAMPLE_INT16
    elif dt == np.float32:
        t = SAMPLE_FLOAT32
    elif dt == np.bool_ or dt == np.uint8:
        a, t = a.astype(np.uint16), SAMPLE_UINT16
    elif dt == np.int8:
        a, t = a.astype(np.int16), SAMPLE_INT16
    elif dt.kind in "iu":
        lo, hi = (int(a.min()), int(a.max())) if a.size else (0, 0)
        if 0 <= lo and hi <= 65535:
            a, t = a.astype(np.uint16), SAMPLE_UINT16
        elif -32768 <= lo and hi <= 32767:
            a, t = a.astype(np.int16), SAMPLE_INT16
        else:
            raise ValueError(f"{name}: integer values {lo}..{hi} do not fit 16 bits")
    elif dt.kind == "f":
        a, t = a.astype(np.float32), SAMPLE_FLOAT32
    else:
        raise TypeError(f"{name}: dtype {dt} is not an image type (integers or floats)")
    return np.ascontiguousarray(a), t


def as_mask(m, shape, name):
    """A C-contiguous uint8 host mask of the given shape (non-zero = use)."""
    m = np.asarray(m)
    if m.shape != tuple(shape):
        raise ValueError(f"{name}: shape {m.shape}, expected {tuple(shape)}")
    return np.ascontiguousarray(m != 0, dtype=np.uint8) if m.dtype != np.uint8 else \
        np.ascontiguousarray(m)


def stream_handle(stream, like=None):
    """The cudaStream_t (an int) for a stream argument: an int, an object with __cuda_stream__
    (returns (version, handle)), a torch.cuda.Stream (.cuda_stream), a CuPy stream (.ptr); None
    means the current stream of the library whose array `like` is (0, the legacy default stream,
    for other arrays)."""
    if stream is None:
        lib = library_of(like) if like is not None else None
        if lib == "torch":
            return torch_current_stream(like.device)
        if lib == "cupy":
            import cupy
            return cupy.cuda.get_current_stream().ptr
        return 0
    if isinstance(stream, int):
        return stream
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    if hasattr(stream, "cuda_stream"):
        return int(stream.cuda_stream)
    if hasattr(stream, "ptr"):
        return int(stream.ptr)
    raise TypeError(f"stream: an int handle or a CUDA stream object, not {type(stream).__name__}")


def _torch_dtypes():
    """PyTorch dtypes and their NumPy ones (the types the library's device calls read)."""
    try:
        import torch
    except ImportError:
        return {}
    return {torch.uint8: np.dtype(np.uint8), torch.bool: np.dtype(np.bool_),
            torch.int16: np.dtype(np.int16), torch.float32: np.dtype(np.float32),
            **({torch.uint16: np.dtype(np.uint16)} if hasattr(torch, "uint16") else {})}


class _LazyTorchDtypes(dict):
    """_torch_dtypes() made on first use: torch is imported only when a tensor comes in."""

    def get(self, key, default=None):
        if not self:
            self.update(_torch_dtypes())
        return dict.get(self, key, default)


_TORCH_DTYPES = _LazyTorchDtypes()


class DeviceView:
    """A CUDA array as the library sees it: address, shape, strides in elements, dtype. `keep`
    holds what must stay alive until the work reading it is enqueued."""

    __slots__ = ("ptr", "shape", "strides", "dtype", "keep", "array", "torch_current")

    def __init__(self, x, stream):
        self.torch_current = _torch_cuda(x) and self._torch_same_stream(x, stream)
        if self.torch_current:
            return
        x = _detach(x)
        self.array = x
        if hasattr(x, "__dlpack__"):
            # The consumer's stream: the producer orders its pending work before it. DLPack
            # reserves 0; the legacy default stream is 1.
            s = stream if stream else 1
            try:
                capsule = x.__dlpack__(stream=s, max_version=(1, 0))
            except TypeError:  # a producer from before DLPack 1.0
                capsule = x.__dlpack__(stream=s)
            ptr, kind, _dev, shape, strides, (code, bits, lanes), _ro = _core.dlpack_view(capsule)
            if kind not in (_DL_CUDA, _DL_CUDA_MANAGED):
                raise TypeError(f"expected a CUDA array, got DLPack device type {kind}")
            dtype = _dl_dtype(code, bits, lanes)
            if dtype is None:
                raise TypeError(f"DLPack dtype (code {code}, {bits} bits, {lanes} lanes) is not "
                                "supported")
            self.keep = (x, capsule)
        else:
            cai = x.__cuda_array_interface__
            s = cai.get("stream")
            if s is not None and s != stream and not (s == 1 and stream == 0):
                raise ValueError(
                    f"the array's producer stream ({s}) differs from the stream given ({stream}): "
                    "pass stream= the producer's stream, or export through __dlpack__")
            ptr = int(cai["data"][0] or 0)
            shape = tuple(cai["shape"])
            dtype = np.dtype(cai["typestr"])
            strides = cai.get("strides")
            if strides is not None:
                if any(st % dtype.itemsize for st in strides):
                    raise ValueError("strides that are not whole elements")
                strides = tuple(st // dtype.itemsize for st in strides)
            self.keep = x
        self.ptr = ptr
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        if strides is None:  # compact row-major
            strides, acc = [], 1
            for d in reversed(self.shape):
                strides.insert(0, acc)
                acc *= d
        self.strides = tuple(int(s) for s in strides)

    def _torch_same_stream(self, x, stream):
        """A PyTorch CUDA tensor read on its device's current stream, that device current: what
        __dlpack__ would hand over with nothing to order (its cross-stream event is only for
        another stream) read from the tensor itself, without its Python-level export (tens of
        us, issue 22). False (the DLPack path) for anything else."""
        import torch
        dev = x.device
        if dev.index != torch.cuda.current_device() or stream != torch_current_stream(dev):
            return False
        dtype = _TORCH_DTYPES.get(x.dtype)
        if dtype is None:
            return False
        self.array = self.keep = x
        self.ptr = x.data_ptr()
        self.shape = tuple(x.shape)
        self.strides = tuple(x.stride())
        self.dtype = dtype
        return True

    def image_layout(self, name):
        """(count, pixels per image, stride between images in elements) of a (H, W) image or a
        (B, H, W) batch whose images are each compact; anything else is refused (no copies)."""
        shape, strides = self.shape, self.strides
        if len(shape) == 2:
            shape, strides = (1,) + shape, (0,) + strides
        elif len(shape) != 3:
            raise ValueError(f"{name}: expected (H, W) or (B, H, W), got shape {self.shape}")
        b, h, w = shape
        if (w > 1 and strides[2] != 1) or (h > 1 and strides[1] != w) or \
                (b > 1 and strides[0] < h * w):
            raise ValueError(f"{name}: each image must be compact (row-major) in memory; "
                             "call .contiguous() (PyTorch) or cupy.ascontiguousarray first")
        return b, h * w, (strides[0] if b > 1 else h * w)


def empty_device_bytes(like, shape, stream):
    """An uninitialized uint8 array of `shape` made by like's library on like's device, allocated
    in the order of `stream` (the caller's stream, where the library writes it)."""
    lib = library_of(like)
    if lib == "torch":
        import torch
        dev = like.device
        if stream and stream != torch_current_stream(dev):
            with torch.cuda.stream(torch.cuda.ExternalStream(stream, device=dev)):
                return torch.empty(shape, dtype=torch.uint8, device=dev)
        return torch.empty(shape, dtype=torch.uint8, device=dev)
    if lib == "cupy":
        import cupy
        with cupy.cuda.Device(like.device.id):
            if stream and stream != cupy.cuda.get_current_stream().ptr:
                with warnings.catch_warnings():  # CuPy 14 deprecates it for from_external,
                    warnings.simplefilter("ignore", DeprecationWarning)  # which needs an object
                    external = cupy.cuda.ExternalStream(stream)
                with external:
                    return cupy.empty(shape, dtype=cupy.uint8)
            return cupy.empty(shape, dtype=cupy.uint8)
    raise TypeError(f"results on the device are made with PyTorch or CuPy; {type(like).__name__} "
                    "is neither: pass host=True")


def device_dtype(like, np_dtype):
    """like's library's dtype for a NumPy dtype (for .view)."""
    if library_of(like) == "torch":
        import torch
        return {np.dtype(np.float64): torch.float64, np.dtype(np.float32): torch.float32,
                np.dtype(np.int64): torch.int64,
                np.dtype(np.int32): torch.int32, np.dtype(np.uint32): torch.int32}[np.dtype(np_dtype)]
    return np_dtype


def device_address(arr):
    """The device address of a PyTorch tensor or CuPy array made by empty_device_bytes."""
    if library_of(arr) == "torch":
        return int(arr.data_ptr())
    return int(arr.data.ptr)


def bytes_to_host(arr):
    """A device uint8 array's bytes as a NumPy array (waits for the GPU)."""
    if library_of(arr) == "torch":
        return arr.cpu().numpy()
    return arr.get()


