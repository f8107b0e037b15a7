# SPDX-License-Identifier: MIT
"""Exceptions: every library status becomes one class, carrying the status name and message.

All derive from DicomhistError; each also derives from the built-in exception a Python caller
would catch for that kind of failure (ValueError for bad arguments or bad files, OSError for I/O,
MemoryError, RuntimeError for GPU failures).
"""
from . import _core


class DicomhistError(Exception):
    """A failed library call: `status` is the dh_status name ("DH_ERR_MALFORMED"), `message`
    the library's message (it names the file and the reason)."""

    def __init__(self, status, message):
        super().__init__(status, message)
        self.status = status
        self.message = message

    def __str__(self):
        return f"{self.message} ({self.status})"


class InvalidArgumentError(DicomhistError, ValueError):
    """DH_ERR_INVALID_ARGUMENT: a parameter out of its documented bounds."""


class DicomIOError(DicomhistError, OSError):
    """DH_ERR_IO: a file could not be opened, read or written."""

    def __init__(self, status, message):  # OSError's own two-argument form does not apply
        DicomhistError.__init__(self, status, message)

    __str__ = DicomhistError.__str__


class MalformedError(DicomhistError, ValueError):
    """DH_ERR_MALFORMED: not DICOM, truncated, lying header, missing pixel data."""


class UnsupportedError(DicomhistError):
    """DH_ERR_UNSUPPORTED: valid DICOM or a request the library does not handle."""


class MismatchError(DicomhistError, ValueError):
    """DH_ERR_MISMATCH: slices of one series that do not fit together."""


class OutOfMemoryError(DicomhistError, MemoryError):
    """DH_ERR_NO_MEMORY."""


class NoDeviceError(DicomhistError, RuntimeError):
    """DH_ERR_NO_DEVICE: CUDA asked for, but no usable GPU or not built with CUDA."""


class CudaError(DicomhistError, RuntimeError):
    """DH_ERR_CUDA: a CUDA call failed; the message has CUDA's own text."""


class InternalError(DicomhistError, RuntimeError):
    """DH_ERR_INTERNAL."""


_BY_STATUS = {
    _core.ERR_INVALID_ARGUMENT: InvalidArgumentError,
    _core.ERR_IO: DicomIOError,
    _core.ERR_MALFORMED: MalformedError,
    _core.ERR_UNSUPPORTED: UnsupportedError,
    _core.ERR_MISMATCH: MismatchError,
    _core.ERR_NO_MEMORY: OutOfMemoryError,
    _core.ERR_NO_DEVICE: NoDeviceError,
    _core.ERR_CUDA: CudaError,
    _core.ERR_INTERNAL: InternalError,
}
_core._register_errors(_BY_STATUS)


def error_for(status_code, status_name, message):
    """The exception the library raises for a status (for failures reported in lists)."""
    return _BY_STATUS.get(status_code, DicomhistError)(status_name, message)
