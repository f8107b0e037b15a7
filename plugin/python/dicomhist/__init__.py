# SPDX-License-Identifier: MIT
"""dicomhist: histograms, equalization and mutual information of 12/16-bit DICOM, on the CPU or
a CUDA GPU, from NumPy arrays, CuPy arrays and PyTorch tensors (docs/python.md).

    vol = dicomhist.read("xray.dcm")               # Volume: .pixels, metadata, .info()
    counts, edges = dicomhist.histogram(vol, bins=256)
    eq = dicomhist.equalize(vol, window="minmax")
    ad = dicomhist.clahe(vol, tiles=8, clip_limit=2)  # NumPy, CuPy or PyTorch in, the same out
    dicomhist.write_derived(vol, "out", operation="clahe", png="previews", clip_limit=2)
    fixed = dicomhist.MIFixed(xray, bins=64, range_moving=(0.0, 1.0))
    scores = fixed.scores(drr_batch)               # a torch CUDA (B, H, W) float32 batch
    mi, grad = dicomhist.parzen_mi(xray, drr, gradient=True)  # Mattes MI and d MI / d drr
    loss = dicomhist.torch.MattesMI(loss=True)(xray_t, drr_t)  # the same as a torch loss
"""
from . import errors
from ._core import cuda_available, version as _version
from .equalize import equalize
from .errors import (CudaError, DicomhistError, DicomIOError, InternalError, InvalidArgumentError,
                     MalformedError, MismatchError, NoDeviceError, OutOfMemoryError,
                     UnsupportedError)
from .histogram import Histogram, histogram
from .mi import (EMPTY, SCORE_DTYPE, ZERO_JOINT_ENTROPY, DeviceScores, MIFixed, joint_histogram,
                 mi_scores, mutual_information, normalized_mutual_information)
from .parzen import ParzenMI, parzen_mi, parzen_mi_value_and_grad
from .volume import ReadResult, Volume, from_array, read, read_all

from .equalize import clahe, window  # noqa: E402  (enhancement, issue 21)
from .derived import Derived, write_derived  # noqa: E402

__version__ = _version()

__all__ = ["read", "read_all", "from_array", "Volume", "ReadResult", "histogram", "Histogram",
           "equalize", "mutual_information", "mi_scores", "joint_histogram", "MIFixed",
           "DeviceScores", "normalized_mutual_information", "SCORE_DTYPE", "EMPTY",
           "ZERO_JOINT_ENTROPY", "ParzenMI", "parzen_mi", "parzen_mi_value_and_grad", "cuda_available", "errors", "DicomhistError",
           "InvalidArgumentError", "DicomIOError", "MalformedError", "UnsupportedError",
           "MismatchError", "OutOfMemoryError", "NoDeviceError", "CudaError", "InternalError"]
__all__ += ["clahe", "window", "write_derived", "Derived"]
