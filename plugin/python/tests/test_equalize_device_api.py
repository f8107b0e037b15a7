# SPDX-License-Identifier: MIT
"""dh_equalize_device through the extension, where no GPU is needed: its refusals come before
any device work (window/level, a file window, bad tiles or bits, NULL pointers), and a build or
machine without CUDA answers NoDeviceError, which equalize/clahe on device='auto' turn into the
host path. Its numbers on a GPU are checked by test_device_enhance.py."""
import pytest

import dicomhist
from dicomhist import _core
from dicomhist._context import ctx
from dicomhist.equalize import clahe_fields, equalize_fields, window_fields

FAKE = 1 << 20  # a device address never dereferenced: every call here fails before


def call(fields, samples=FAKE, out=FAKE, bits=12, shape=(2, 30, 40)):
    slices, rows, columns = shape
    return _core.equalize_device(ctx(), samples, False, bits, columns, rows, slices, out, 0,
                                 **fields)


@pytest.mark.parametrize("fields,error,needle", [
    (window_fields("40:400"), dicomhist.UnsupportedError, "window/level"),
    (equalize_fields(window="file"), dicomhist.UnsupportedError, "no window of their own"),
    (clahe_fields(tiles=(3, 31, 2)), dicomhist.InvalidArgumentError, "along the rows"),
    (clahe_fields(tiles=(2, 2, 2), per_slice=True), dicomhist.InvalidArgumentError,
     "per-volume mode"),
    (clahe_fields(bins=70000), dicomhist.InvalidArgumentError, "bins"),
    (equalize_fields(bits=9), dicomhist.InvalidArgumentError, "output bits"),
    (equalize_fields(clip_limit=-1), dicomhist.InvalidArgumentError, "clip limit"),
    ({**equalize_fields(), "window": _core.WINDOW_PERCENTILE, "percentile": 60.0},
     dicomhist.InvalidArgumentError, "percentile"),
    (equalize_fields(window=(5, 1)), dicomhist.InvalidArgumentError, "lo <= hi"),
])
def test_refusals_before_any_device_work(fields, error, needle):
    with pytest.raises(error, match=needle):
        call(fields)


def test_null_pointers_and_bits():
    with pytest.raises(dicomhist.InvalidArgumentError, match="NULL"):
        call(equalize_fields(), samples=0)
    with pytest.raises(dicomhist.InvalidArgumentError, match="NULL"):
        call(equalize_fields(), out=0)
    with pytest.raises(dicomhist.InvalidArgumentError, match="bits_stored"):
        call(equalize_fields(), bits=17)


@pytest.mark.skipif(dicomhist.cuda_available(), reason="a GPU is usable here")
def test_no_device_without_cuda():
    for fields in (equalize_fields(), clahe_fields(clip_limit=2)):
        with pytest.raises(dicomhist.NoDeviceError):
            call(fields)
