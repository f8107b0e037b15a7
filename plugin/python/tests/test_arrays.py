# SPDX-License-Identifier: MIT
"""How arrays come in, without a GPU: the DLPack capsule reader against NumPy's own capsules
(versioned and not), __cuda_array_interface__ layouts and the refusal of images that are not
compact, stream arguments in their several forms."""
import numpy as np
import pytest

from dicomhist import _arrays, _core


@pytest.mark.parametrize("versioned", [True, False])
def test_dlpack_capsules_are_read_right(versioned):
    a = np.arange(2 * 3 * 8, dtype=np.float32).reshape(2, 3, 8)[:, :, ::2]
    cap = a.__dlpack__(max_version=(1, 0)) if versioned else a.__dlpack__()
    ptr, kind, dev, shape, strides, dtype, read_only = _core.dlpack_view(cap)
    assert ptr == a.__array_interface__["data"][0]
    assert (kind, dev) == (1, 0)  # kDLCPU
    assert shape == (2, 3, 4)
    assert strides == tuple(s // 4 for s in a.strides)
    assert dtype == (2, 32, 1)
    assert read_only is False
    ro = np.arange(6, dtype=np.uint16)
    ro.flags.writeable = False
    if versioned:
        assert _core.dlpack_view(ro.__dlpack__(max_version=(1, 0)))[-1] is True
    with pytest.raises(TypeError):
        _core.dlpack_view(object())


class FakeCuda:
    """An array that only speaks __cuda_array_interface__ (as Numba's do)."""

    def __init__(self, shape, typestr="<f4", strides=None, stream=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "version": 3,
                                         "data": (0x10000, False), "strides": strides,
                                         "stream": stream}


def test_cuda_array_interface_layouts():
    assert _arrays.is_device_array(FakeCuda((2, 3)))
    assert not _arrays.is_device_array(np.zeros(3))
    v = _arrays.DeviceView(FakeCuda((5, 6, 7)), 0)
    assert (v.ptr, v.shape, v.strides, v.dtype) == (0x10000, (5, 6, 7), (42, 7, 1),
                                                    np.dtype(np.float32))
    assert v.image_layout("x") == (5, 42, 42)
    # a padded batch stride is fine, images themselves must be compact
    v = _arrays.DeviceView(FakeCuda((5, 6, 7), "<u2", strides=(2 * 50, 2 * 7, 2)), 0)
    assert v.image_layout("x") == (5, 42, 50)
    assert _arrays.DeviceView(FakeCuda((6, 7)), 0).image_layout("x") == (1, 42, 42)
    with pytest.raises(ValueError, match="compact"):
        _arrays.DeviceView(FakeCuda((5, 6, 7), strides=(4 * 42, 4, 4 * 6)), 0).image_layout("x")
    with pytest.raises(ValueError, match="compact"):
        _arrays.DeviceView(FakeCuda((5, 6, 7), strides=(4 * 40, 4 * 7, 4)), 0).image_layout("x")
    with pytest.raises(ValueError, match=r"\(H, W\)"):
        _arrays.DeviceView(FakeCuda((7,)), 0).image_layout("x")
    # a producer stream other than ours needs ordering we do not do silently
    with pytest.raises(ValueError, match="stream"):
        _arrays.DeviceView(FakeCuda((2, 3), stream=1234), 5678)
    assert _arrays.DeviceView(FakeCuda((2, 3), stream=1), 0).ptr == 0x10000


def test_stream_arguments():
    class TorchLike:
        cuda_stream = 11

    class CupyLike:
        ptr = 12

    class Protocol:
        def __cuda_stream__(self):
            return (0, 13)

    assert _arrays.stream_handle(7) == 7
    assert _arrays.stream_handle(TorchLike()) == 11
    assert _arrays.stream_handle(CupyLike()) == 12
    assert _arrays.stream_handle(Protocol()) == 13
    assert _arrays.stream_handle(None, FakeCuda((2, 2))) == 0  # legacy default stream
    with pytest.raises(TypeError):
        _arrays.stream_handle("default")


def test_host_sample_types():
    for dt, want in ((np.uint16, 0), (np.int16, 1), (np.float32, 2), (np.uint8, 0), (np.int8, 1),
                     (np.bool_, 0), (np.float64, 2)):
        a, t = _arrays.as_samples(np.zeros((2, 2), dtype=dt), "x")
        assert t == want and a.flags.c_contiguous
    a, t = _arrays.as_samples(np.array([-5, 30000], dtype=np.int64), "x")
    assert (a.dtype, t) == (np.int16, 1)
    a, t = _arrays.as_samples(np.array([0, 60000], dtype=np.int32), "x")
    assert (a.dtype, t) == (np.uint16, 0)
    with pytest.raises(TypeError):
        _arrays.as_samples(np.zeros(2, dtype=np.complex64), "x")
