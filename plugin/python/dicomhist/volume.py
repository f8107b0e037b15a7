# SPDX-License-Identifier: MIT
"""Volumes: DICOM files, multi-frame files and series read into stored values, or arrays made
into volumes for the histogram and equalization functions."""
import os

import numpy as np

from . import _core
from ._context import ctx
from .errors import error_for

# info --json's fields, in its order
_INFO_KEYS = ("path", "series_uid", "modality", "rows", "columns", "slices", "bits_allocated",
              "bits_stored", "signed", "photometric", "rescale_slope", "rescale_intercept",
              "modality_lut", "transfer_syntax", "lossy", "lossy_method", "decoder",
              "decoder_note", "stored_min", "stored_max", "modality_min", "modality_max",
              "spacing", "warnings")


class Volume:
    """One series or multi-frame file: `pixels` is the (slices, rows, columns) NumPy array of
    stored values (uint16, or int16 when signed), read-only and shared with the library (no
    copy); read with device='cuda', a CuPy array or PyTorch CUDA tensor in GPU memory instead
    (`device` says which: 'cpu' or 'cuda'). Metadata are attributes: rows, columns, slices, bits_allocated, bits_stored, signed,
    photometric, rescale_slope, rescale_intercept, modality_lut (None, or entries, first_mapped
    and bits of the Modality LUT Sequence that replaces the rescale; its table as
    modality_lut_table bytes of uint16), window ((center, width) or None), spacing, path,
    series_uid, study_uid, modality, transfer_syntax, lossy, lossy_method, decoder (which
    decoders read it: "openjpeg", "nvjpeg2k", ...), decoder_note (why not the GPU), stored_min,
    stored_max, modality_min, modality_max, warnings, slice_sources, slice_frames,
    slice_locations, slice_positions."""

    def __init__(self, handle, device_pixels=None):
        self._handle = handle
        self._meta = _core.volume_info(handle)
        for key, value in self._meta.items():
            setattr(self, key, value)
        if device_pixels is not None:  # read(..., device="cuda"): the samples stay on the GPU
            self.device = "cuda"
            self.pixels = device_pixels
            self._meta.update(_device.ranges(self))
            for key in ("stored_min", "stored_max", "modality_min", "modality_max"):
                setattr(self, key, self._meta[key])
            return
        self.device = "cpu"
        dtype = np.int16 if self.signed else np.uint16
        self.pixels = np.frombuffer(_core.volume_pixels(handle), dtype=dtype).reshape(
            self.slices, self.rows, self.columns)

    @property
    def shape(self):
        return self.pixels.shape

    def modality_values(self, dtype=np.float64):
        """Modality values for every pixel, a new array: slope * stored + intercept (Hounsfield
        units for CT), or the Modality LUT's entry, stored values below or above its mapped
        range taking the first or last one. On the GPU for a volume read with device='cuda'."""
        if self.device == "cuda":
            return _device.modality_values(self, dtype)
        if self.modality_lut is not None:
            table = np.frombuffer(self.modality_lut_table, dtype=np.uint16)
            index = np.clip(self.pixels.astype(np.int64) - self.modality_lut["first_mapped"], 0,
                            len(table) - 1)
            return table[index].astype(dtype)
        return self.pixels.astype(dtype) * dtype(self.rescale_slope) + \
            dtype(self.rescale_intercept)

    def modality_range(self):
        """Smallest and largest modality value of the stored values present."""
        return self.modality_min, self.modality_max

    def info(self):
        """The dict `dicomhist info --json` prints for this volume."""
        return {k: self._meta[k] for k in _INFO_KEYS}

    def host_handle(self):
        """The library's volume with its samples on the host, for the functions that compute
        there (histogram, window/level, write_derived): a volume read with device='cuda' copies
        its samples down once (the GPU array stays as it is)."""
        if self.device == "cuda" and not getattr(self, "_downloaded", False):
            _core.device_volume_download(ctx(), self._handle, _device.stream_of(self.pixels))
            self._downloaded = True
        return self._handle

    def __repr__(self):
        return (f"<dicomhist.Volume {self.path!r}: {self.slices}x{self.rows}x{self.columns} "
                f"{self.modality or '?'} {self.bits_stored}-bit "
                f"{'signed' if self.signed else 'unsigned'}"
                f"{' on cuda' if self.device == 'cuda' else ''}>")


class ReadResult(list):
    """read_all's list of Volumes, with `failures` (path, exception) and `skipped` paths."""

    def __init__(self, volumes, failures, skipped):
        super().__init__(volumes)
        self.failures = failures
        self.skipped = skipped


def _paths(path_or_paths):
    if isinstance(path_or_paths, (str, bytes, os.PathLike)):
        path_or_paths = [path_or_paths]
    return tuple(os.fsdecode(p) for p in path_or_paths)


def read_all(path_or_paths, device="cpu", like=None):
    """Every volume in the files and directories given (series grouped by SeriesInstanceUID,
    slices ordered along their normal), with the inputs that failed kept beside them.

    device='cuda': each series decoded straight into GPU memory (dh_plan_load_series_device:
    JPEG 2000 / HTJ2K by nvJPEG2000, all frames of a series in one batch; other syntaxes by the
    CPU decoders, copied in), its `pixels` a CuPy array, or a PyTorch CUDA tensor where CuPy is
    not importable, or of like's library and device when `like` (a CuPy array or PyTorch CUDA
    tensor) is given; made on that library's current stream and device. The values, metadata
    and failures are those of device='cpu'. NoDeviceError (with the reason) where no GPU
    decodes."""
    if device == "cuda":
        return _device.read_all(_paths(path_or_paths), like)
    if device != "cpu":
        raise ValueError(f"device must be 'cpu' or 'cuda', not {device!r}")
    handles, failures, skipped = _core.read(ctx(), _paths(path_or_paths))
    return ReadResult([Volume(h) for h in handles],
                      [(p, error_for(code, name, msg)) for p, name, code, msg in failures],
                      skipped)


def read(path_or_paths, device="cpu", like=None):
    """The one volume in a file, a series folder, or a list of files: raises the library's
    error when an input fails, and ValueError when the inputs hold several series. device and
    like as for read_all."""
    result = read_all(path_or_paths, device, like)
    if result.failures:
        raise result.failures[0][1]
    if len(result) != 1:
        names = ", ".join(v.path for v in result) or "none"
        raise ValueError(f"expected one volume, found {len(result)} ({names}): use read_all")
    return result[0]


def from_array(x, bits_stored=None):
    """A volume (a copy) of a 2D (rows, columns) or 3D (slices, rows, columns) integer array:
    uint8/uint16 unsigned, int8/int16 signed, BitsStored the dtype's width unless given."""
    a = np.asarray(x)
    if a.ndim == 2:
        a = a[np.newaxis]
    if a.ndim != 3:
        raise ValueError(f"expected a 2D or 3D image, got shape {np.shape(x)}")
    if a.dtype in (np.uint8, np.uint16, np.bool_):
        signed, width, a = False, 8 * a.dtype.itemsize, a.astype(np.uint16, copy=False)
    elif a.dtype in (np.int8, np.int16):
        signed, width, a = True, 8 * a.dtype.itemsize, a.astype(np.int16, copy=False)
    else:
        raise TypeError(f"dtype {a.dtype}: stored values are 8- or 16-bit integers")
    bits = int(bits_stored) if bits_stored is not None else width
    a = np.ascontiguousarray(a)
    return Volume(_core.from_samples(ctx(), a, a.shape[1], a.shape[2], a.shape[0], bits, signed))


def as_volume(x):
    """x itself when it is a Volume, else from_array(x); and whether x was 2D."""
    if isinstance(x, Volume):
        x.host_handle()  # a volume on the GPU computes here on its host copy
        return x, False
    return from_array(x), np.ndim(x) == 2


from . import _device_volume as _device  # noqa: E402  (it builds Volumes: imported last)
