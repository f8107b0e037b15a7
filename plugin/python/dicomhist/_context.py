# SPDX-License-Identifier: MIT
"""One library context per thread (a dh_ctx is used by one thread at a time), and the device
names the functions take."""
import threading

from . import _core

_local = threading.local()

DEVICES = {"auto": _core.DEVICE_AUTO, "cpu": _core.DEVICE_CPU, "cuda": _core.DEVICE_CUDA}


def ctx():
    """This thread's dh_ctx (it keeps GPU resources between calls)."""
    c = getattr(_local, "ctx", None)
    if c is None:
        c = _local.ctx = _core.ctx_new()
    return c


def device_code(device):
    try:
        return DEVICES[device]
    except (KeyError, TypeError):
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda', not {device!r}") from None
