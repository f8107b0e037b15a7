# SPDX-License-Identifier: MIT
"""The extension's parameters: keyword arguments by the names of the C parameter structs'
fields, over the structs' *_init defaults, and the API's enum values as module constants."""
import numpy as np
import pytest

import dicomhist
from dicomhist import _core
from dicomhist._context import ctx


@pytest.fixture
def volume():
    return dicomhist.from_array(np.arange(64, dtype=np.uint16).reshape(8, 8), bits_stored=12)


def test_unknown_fields_are_a_type_error_naming_the_struct(volume):
    with pytest.raises(TypeError, match=r"dh_hist_params has no field 'bin'.*: bins, "):
        _core.histogram(ctx(), volume._handle, bin=4)
    with pytest.raises(TypeError, match=r"dh_equalize_params has no field 'struct_size'"):
        _core.equalize(ctx(), volume._handle, struct_size=0)
    img = np.zeros((4, 4), dtype=np.uint16)
    with pytest.raises(TypeError, match=r"dh_mi_params has no field 'bins'.*bins_fixed"):
        _core.mi_fixed_new(img, _core.SAMPLE_UINT16, img.size, None, bins=8)


def test_fields_not_given_keep_the_init_defaults(volume):
    """No keyword: dh_hist_params_init's histogram (one bin per stored value of 12 bits)."""
    r = _core.histogram(ctx(), volume._handle)
    assert (r["bins"], r["lo"], r["hi"], r["total"]) == (4096, 0.0, 4096.0, 64)
    r = _core.histogram(ctx(), volume._handle, bins=4, has_range=True, lo=0, hi=64,
                        device=_core.DEVICE_CPU)
    assert (r["bins"], r["device"]) == (4, "cpu")
    assert np.frombuffer(r["counts"], dtype=np.uint64).tolist() == [16, 16, 16, 16]


def test_values_convert_as_the_field_kinds_say(volume):
    with pytest.raises(TypeError):  # a double field takes numbers only
        _core.histogram(ctx(), volume._handle, lo="0")
    with pytest.raises(OverflowError):  # an enum field is 32 bits
        _core.histogram(ctx(), volume._handle, device=1 << 40)
    with pytest.raises(dicomhist.InvalidArgumentError):  # the library checks the values
        _core.histogram(ctx(), volume._handle, units=7)


def test_enum_constants_are_the_ones_the_package_uses():
    assert dicomhist.EMPTY == _core.MI_EMPTY
    assert dicomhist.ZERO_JOINT_ENTROPY == _core.MI_ZERO_JOINT_ENTROPY
    assert dicomhist.errors._BY_STATUS[_core.ERR_MALFORMED] is dicomhist.MalformedError
    assert len({_core.WINDOW_NONE, _core.WINDOW_CENTER_WIDTH, _core.WINDOW_RANGE,
                _core.WINDOW_FILE, _core.WINDOW_MINMAX, _core.WINDOW_PERCENTILE}) == 6
