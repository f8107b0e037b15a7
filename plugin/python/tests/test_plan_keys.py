# SPDX-License-Identifier: MIT
"""The device plan's keys (dicomhist/_device_plan.py), on the CPU: the signature that decides
whether a device call may skip its checks changes with every kind of change the general path
checks (shape, strides, dtype, device, an array present or absent, the flags), and arrays the
plan cannot read (NumPy, tensor subclasses, other libraries) get no key. The GPU half
(test_device_plan.py) checks the calls themselves."""
import numpy as np
import pytest

from dicomhist import _device_plan

torch = pytest.importorskip("torch")


def kinds():
    if not hasattr(torch._C, "_cuda_getDevice"):
        pytest.skip("a PyTorch build without CUDA functions")
    k = _device_plan.kinds_of(torch.empty(1))
    assert k is not None and k.array_type is torch.Tensor
    return k


def test_every_change_of_kind_changes_the_key():
    k = kinds()
    f, m = torch.zeros((8, 9), dtype=torch.int16), torch.zeros((3, 8, 9))
    key = _device_plan.signature_key(k, (f, m, None, None), True)
    assert key == _device_plan.signature_key(k, (f.clone(), m.clone(), None, None), True)
    wide = torch.zeros((3, 8, 12))[:, :, :9]  # the same shape and dtype, other strides
    mask = torch.ones((3, 8, 9), dtype=torch.uint8)
    others = [
        (f, m[:2], None, None, True),                 # another batch size
        (f, m[0], None, None, True),                  # one image
        (f, m.to(torch.int16), None, None, True),     # another dtype
        (f.to(torch.float32), m, None, None, True),   # the fixed image's dtype
        (f, wide, None, None, True),                  # strides
        (f, m.transpose(1, 2).contiguous().transpose(1, 2), None, None, True),
        (f, m, None, mask, True),                     # a mask added
        (f, m, mask[0], None, True),
        (f, m, None, None, False),                    # no gradient
    ]
    keys = {_device_plan.signature_key(k, arrays[:4], arrays[4]) for arrays in others}
    assert key not in keys and len(keys) == len(others)


def test_arrays_the_plan_cannot_read_get_no_key():
    k = kinds()
    p = torch.nn.Parameter(torch.zeros(4))
    assert _device_plan.kinds_of(p) is None
    assert _device_plan.kinds_of(np.zeros(4)) is None
    assert _device_plan.signature_key(k, (torch.zeros(4), p), None) is None
    assert _device_plan.signature_key(k, (torch.zeros(4), np.zeros(4)), None) is None
    assert _device_plan.make((torch.zeros(4), None), None, (), (), False) is None
