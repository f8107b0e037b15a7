# SPDX-License-Identifier: MIT
"""Volumes read straight into GPU memory (read(..., device="cuda")): each series' buffer made by
the caller's array library (CuPy, else PyTorch; or like's) on its current device and stream, the
library's batch decode writing into it (dh_plan_load_series_device), the host record kept beside
it as a Volume's metadata. The array library owns the memory: the Volume's `pixels` lives as
long as the caller keeps it, whatever becomes of the Volume."""
import numpy as np

from . import _core
from ._arrays import device_address, empty_device_bytes, library_of, stream_handle
from ._context import ctx
from .errors import NoDeviceError, error_for


def _default_like():
    """A zero-size array of the library the result is made with: CuPy when importable, else
    PyTorch with CUDA, on the current device."""
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None:
        try:
            return cupy.empty(0, dtype=cupy.uint8)
        except Exception as e:  # CuPy without a usable device or driver
            raise NoDeviceError("DH_ERR_NO_DEVICE", f"read(device='cuda'): CuPy: {e}") from e
    try:
        import torch
    except ImportError:
        raise NoDeviceError("DH_ERR_NO_DEVICE", "read(device='cuda') makes its arrays with CuPy or "
                            "PyTorch: neither is importable") from None
    if not torch.cuda.is_available():
        raise NoDeviceError("DH_ERR_NO_DEVICE", "read(device='cuda'): PyTorch sees no CUDA device")
    return torch.empty(0, dtype=torch.uint8, device="cuda")


def _typed(raw, signed, shape):
    """The uint8 buffer as (slices, rows, columns) stored values of the volume's dtype."""
    if library_of(raw) == "torch":
        import torch
        dtype = torch.int16 if signed else getattr(torch, "uint16", None)
        if dtype is None:  # PyTorch before 2.3 has no uint16: int32 holds every value
            return raw.view(torch.int16).to(torch.int32).bitwise_and_(0xFFFF).reshape(shape)
        return raw.view(dtype).reshape(shape)
    import cupy
    return raw.view(cupy.int16 if signed else cupy.uint16).reshape(shape)


def stream_of(array):
    """The current stream of array's library (where its work on array is ordered)."""
    return stream_handle(None, array)


def usable():
    """Whether this process reads into GPU memory, and if not why (the library's reason)."""
    if not _core.cuda_available():
        return False, "no usable GPU, or dicomhist was built without CUDA"
    return _core.gpu_decoders()


def read_all(paths, like):
    from .volume import ReadResult, Volume  # volume.py imports this module last
    ok, why = usable()
    if not ok:
        raise NoDeviceError("DH_ERR_NO_DEVICE", f"read(device='cuda'): {why}")
    like = _default_like() if like is None else like
    if library_of(like) is None:
        raise TypeError(f"like: a CuPy array or PyTorch CUDA tensor, not {type(like).__name__}")
    index = like.device.index if library_of(like) == "torch" else like.device.id
    if index not in (None, 0):
        raise ValueError(f"read(device='cuda'): the GPU decoders run on CUDA device 0; like is "
                         f"on device {index}")
    stream = stream_of(like)
    plan, failures, skipped, sizes = _core.plan_scan(ctx(), paths)
    volumes = []
    for k, size in enumerate(sizes):
        raw = empty_device_bytes(like, (max(int(size), 1),), stream)
        handle, series_failures, _gpu, _cpu = _core.plan_load_device(
            ctx(), plan, k, device_address(raw), int(size), stream)
        failures += series_failures
        if handle is None:
            continue
        info = _core.volume_info(handle)
        count = info["slices"] * info["rows"] * info["columns"]
        shape = (info["slices"], info["rows"], info["columns"])
        volumes.append(Volume(handle, _typed(raw[:2 * count], info["signed"], shape)))
    return ReadResult(volumes,
                      [(p, error_for(code, name, msg)) for p, name, code, msg in failures],
                      skipped)


def _lut_values(volume, stored):
    """The Modality LUT's entries for stored values on the device (clamped as the host does)."""
    table = np.frombuffer(volume.modality_lut_table, dtype=np.uint16)
    first = volume.modality_lut["first_mapped"]
    if library_of(stored) == "torch":
        import torch
        t = torch.as_tensor(table.astype(np.int32), device=stored.device)
        index = (stored.to(torch.int64) - first).clamp_(0, len(table) - 1)
        return t[index]
    import cupy
    t = cupy.asarray(table.astype(np.int32))
    return t[cupy.clip(stored.astype(cupy.int64) - first, 0, len(table) - 1)]


def _as_float(x, dtype):
    if library_of(x) == "torch":
        import torch
        return x.to(torch.int32).to({np.dtype(np.float64): torch.float64,  # uint16: via int32
                                     np.dtype(np.float32): torch.float32}[np.dtype(dtype)])
    return x.astype(dtype)


def modality_values(volume, dtype=np.float64):
    """Volume.modality_values on the device, in the pixels' library."""
    x = volume.pixels
    if volume.modality_lut is not None:
        return _as_float(_lut_values(volume, x), dtype)
    return _as_float(x, dtype) * float(dtype(volume.rescale_slope)) + \
        float(dtype(volume.rescale_intercept))


def ranges(volume):
    """The stored and modality ranges of the values present, computed where they are (the
    library's host record has none: its samples never were on the host)."""
    x = volume.pixels
    if library_of(x) == "torch":
        import torch
        x = x.to(torch.int32)  # PyTorch 2.11 has no min/max of uint16 on CUDA
    if x.numel() if library_of(x) == "torch" else x.size:
        smin, smax = int(x.min()), int(x.max())
        if volume.modality_lut is not None:
            m = _lut_values(volume, x)
            mmin, mmax = float(m.min()), float(m.max())
        else:
            a = smin * volume.rescale_slope + volume.rescale_intercept
            b = smax * volume.rescale_slope + volume.rescale_intercept
            mmin, mmax = min(a, b), max(a, b)
    else:
        smin = smax = 0
        mmin = mmax = 0.0
    return {"stored_min": smin, "stored_max": smax, "modality_min": mmin, "modality_max": mmax}
