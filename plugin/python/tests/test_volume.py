# SPDX-License-Identifier: MIT
"""read(), Volume and its metadata against pydicom's decoding and `dicomhist info --json`."""
import os

import numpy as np
import pytest

import dicomhist
from conftest import SAMPLE, shared


def test_pixels_match_pydicom_without_copy():
    pydicom = pytest.importorskip("pydicom")
    path = os.path.join(SAMPLE, "xray_projection.dcm")
    vol = dicomhist.read(path)
    ref = pydicom.dcmread(path).pixel_array
    assert vol.pixels.shape == (1,) + ref.shape
    assert vol.pixels.dtype == np.uint16
    np.testing.assert_array_equal(vol.pixels[0], ref)
    # shared with the library: read-only, a view of the library's buffer
    assert not vol.pixels.flags.writeable
    assert not vol.pixels.flags.owndata
    with pytest.raises(ValueError):
        vol.pixels[0, 0, 0] = 1


def test_pixels_outlive_the_volume_object():
    vol = dicomhist.read(os.path.join(SAMPLE, "xray_projection.dcm"))
    pixels, want = vol.pixels, vol.pixels.copy()
    del vol
    import gc
    gc.collect()
    np.testing.assert_array_equal(pixels, want)


def test_series_is_ordered_and_info_matches_the_command(cli):
    path = os.path.join(SAMPLE, "ct_phantom")
    vol = dicomhist.read(path)
    want = cli("info", "--json", path)
    assert len(want) == 1
    assert vol.info() == want[0]
    assert vol.slices == 24 and vol.signed == want[0]["signed"]
    assert list(vol.slice_locations) == sorted(vol.slice_locations)
    hu = vol.modality_values()
    assert hu.min() == pytest.approx(want[0]["modality_min"])
    assert hu.max() == pytest.approx(want[0]["modality_max"])


def test_signed_ct_against_pydicom(cli):
    pydicom = pytest.importorskip("pydicom")
    path = shared("pydicom_CT_small.dcm")
    vol = dicomhist.read(path)
    assert vol.pixels.dtype == np.int16
    np.testing.assert_array_equal(vol.pixels[0], pydicom.dcmread(path).pixel_array)
    assert vol.info() == cli("info", "--json", path)[0]
    np.testing.assert_array_equal(vol.modality_values(), vol.pixels * 1.0 - 1024.0)


def test_read_all_keeps_failures(tmp_path):
    bad = tmp_path / "bad.dcm"
    bad.write_bytes(b"\0" * 128 + b"DICM" + b"\x02\x00\x10\x00UI\xff\xff")
    result = dicomhist.read_all([os.path.join(SAMPLE, "xray_projection.dcm"), str(bad)])
    assert len(result) == 1
    assert len(result.failures) == 1
    path, err = result.failures[0]
    assert path == str(bad)
    assert isinstance(err, dicomhist.DicomhistError) and err.status == "DH_ERR_MALFORMED"
    with pytest.raises(dicomhist.MalformedError) as info:
        dicomhist.read(str(bad))
    assert "bad.dcm" in str(info.value)


def test_errors_carry_status_and_message(tmp_path):
    with pytest.raises(dicomhist.DicomIOError) as info:
        dicomhist.read(str(tmp_path / "absent.dcm"))
    err = info.value
    assert err.status == "DH_ERR_IO"
    assert "absent.dcm" in err.message
    assert isinstance(err, OSError)
    with pytest.raises(ValueError, match="expected one volume"):
        dicomhist.read([os.path.join(SAMPLE, "xray_projection.dcm"),
                        os.path.join(SAMPLE, "ct_phantom")])


def test_from_array_checks_bits():
    img = np.arange(12, dtype=np.uint16).reshape(3, 4)
    vol = dicomhist.from_array(img, bits_stored=4)
    np.testing.assert_array_equal(vol.pixels[0], img)
    with pytest.raises(dicomhist.InvalidArgumentError, match="outside"):
        dicomhist.from_array(img, bits_stored=3)
    with pytest.raises(TypeError):
        dicomhist.from_array(img.astype(np.float32))


def test_modality_lut_against_pydicom(cli):
    pydicom = pytest.importorskip("pydicom")
    from pydicom.pixels import apply_modality_lut
    path = shared("lut/pydicom-data_mlut_18.dcm")
    vol = dicomhist.read(path)
    assert vol.info() == cli("info", "--json", path)[0]
    assert vol.modality_lut == {"entries": 4096, "first_mapped": -2048, "bits": 16}
    ds = pydicom.dcmread(path)
    want = apply_modality_lut(vol.pixels[0].astype(np.int64), ds)
    np.testing.assert_array_equal(vol.modality_values()[0], want)
    assert vol.modality_range() == (want.min(), want.max())
