# SPDX-License-Identifier: MIT
"""write_derived(): enhancement written as derived DICOM and PNG from Python is what the command
writes, byte for byte (same UIDs with uids='derived', same creation time), the files hold the
numbers returned, the derived tags are there, and existing outputs are handled as asked."""
import os
import subprocess

import numpy as np
import pytest

import dicomhist
from conftest import SAMPLE, shared

EPOCH = 1700000000


def files_under(folder):
    return sorted(os.path.relpath(os.path.join(d, f), folder)
                  for d, _, names in os.walk(folder) for f in names
                  if f != "dicomhist-manifest.jsonl")


def same_bytes(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()


@pytest.mark.parametrize("src,command,operation,args,kwargs", [
    ("ct_phantom", "equalize", "clahe", ["--method", "clahe", "--tiles", "4x3x2",
                                         "--clip-limit", "2"],
     {"tiles": (2, 3, 4), "clip_limit": 2}),
    ("ct_phantom", "window", "window", ["--window", "40:400", "--mode", "slice"],
     {"window": "40:400", "per_slice": True}),
    ("xray_projection.dcm", "equalize", "equalize", ["--window", "percentile:1", "--bits", "8"],
     {"window": "percentile:1", "bits": 8}),
])
def test_byte_for_byte_what_the_command_writes(cli, tmp_path, src, command, operation, args,
                                               kwargs):
    path = os.path.join(SAMPLE, src)
    by_cli, by_py = tmp_path / "cli", tmp_path / "py"
    subprocess.run([cli.binary, command, "-o", by_cli, "--png", by_cli / "png", *args, path],
                   check=True, capture_output=True, env={**os.environ,
                                                         "SOURCE_DATE_EPOCH": str(EPOCH)})
    d = dicomhist.write_derived(dicomhist.read(path), by_py, operation=operation,
                                png=by_py / "png", uids="derived", created=EPOCH, **kwargs)
    names = files_under(by_cli)
    assert names == files_under(by_py) and len(names) == 2 * len(d.files)
    for name in names:
        assert same_bytes(by_cli / name, by_py / name), name
    assert sorted(os.path.relpath(p, by_py) for p in d.files + d.pngs) == names
    # the files hold the numbers returned, which are the array function's
    np.testing.assert_array_equal(dicomhist.read(str(by_py / src)).pixels
                                  if os.path.isdir(path) else
                                  dicomhist.read(d.files[0]).pixels, d.pixels)
    f = getattr(dicomhist, operation)
    np.testing.assert_array_equal(f(dicomhist.read(path), **kwargs), d.pixels)


def test_derived_tags_on_a_real_monochrome1_radiograph(tmp_path):
    pydicom = pytest.importorskip("pydicom")
    src = dicomhist.read(shared("fo-dicom_CR-MONO1-10-chest"))
    d = dicomhist.write_derived(src, tmp_path, operation="clahe", png=tmp_path / "png",
                                clip_limit=3, bins=1024)
    assert len(d.files) == 1 and len(d.pngs) == 1 and d.sources == [src.slice_sources[0]]
    ds = pydicom.dcmread(d.files[0])
    assert ds.PhotometricInterpretation == "MONOCHROME1" == src.photometric
    assert list(ds.ImageType)[:2] == ["DERIVED", "SECONDARY"]
    assert ds.SeriesInstanceUID == d.series_uid and ds.SOPInstanceUID == d.sop_uids[0]
    assert ds.SourceImageSequence[0].ReferencedSOPInstanceUID != ds.SOPInstanceUID
    assert ds.DerivationDescription == d.description and "CLAHE" in d.description
    np.testing.assert_array_equal(ds.pixel_array, d.pixels[0])
    np.testing.assert_array_equal(d.pixels, dicomhist.clahe(src, clip_limit=3, bins=1024))
    with open(d.pngs[0], "rb") as png:
        assert png.read(8) == b"\x89PNG\r\n\x1a\n"


def test_existing_outputs(tmp_path):
    vol = dicomhist.read(os.path.join(SAMPLE, "xray_projection.dcm"))
    first = dicomhist.write_derived(vol, tmp_path, uids="derived", operation="clahe")
    with pytest.raises(dicomhist.DicomIOError, match="exists"):
        dicomhist.write_derived(vol, tmp_path, uids="derived", operation="clahe")
    kept = dicomhist.write_derived(vol, tmp_path, uids="derived", operation="clahe",
                                   existing="keep")
    assert kept.files == first.files and kept.sop_uids == first.sop_uids
    with pytest.raises(dicomhist.DicomIOError):  # another work is not "this very output"
        dicomhist.write_derived(vol, tmp_path, uids="derived", operation="clahe", bins=64,
                                existing="keep")
    replaced = dicomhist.write_derived(vol, tmp_path, operation="clahe", bins=64,
                                       existing="replace")
    assert replaced.sop_uids != first.sop_uids
    assert dicomhist.read(replaced.files[0]).pixels.tolist() == replaced.pixels.tolist()


def test_errors(tmp_path):
    vol = dicomhist.read(os.path.join(SAMPLE, "xray_projection.dcm"))
    with pytest.raises(TypeError, match="Volume"):
        dicomhist.write_derived(np.zeros((4, 4), np.uint16), tmp_path)
    with pytest.raises(ValueError, match="operation"):
        dicomhist.write_derived(vol, tmp_path, operation="sharpen")
    with pytest.raises(ValueError, match="uids"):
        dicomhist.write_derived(vol, tmp_path, uids="sequential")
    with pytest.raises(TypeError):  # an option of another operation
        dicomhist.write_derived(vol, tmp_path, operation="equalize", tiles=4)
    with pytest.raises(dicomhist.DicomIOError):  # never over its own input
        dicomhist.write_derived(vol, SAMPLE)
    assert not os.listdir(tmp_path)
