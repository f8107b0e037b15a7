# SPDX-License-Identifier: MIT
"""read(..., device="cuda") (issue 24): series decoded straight into GPU memory give the values,
metadata and failures of read() on the host, sample for sample, on real JPEG 2000 files of
../shared/dicom-jpeg2000, the sample data and generated J2K / HTJ2K series
(tests/gpu_decode/make_series.py, a damaged file among them); the array is CuPy's or PyTorch's on
the current device; clahe and equalize chain on it without a host round trip and give the host
path's numbers; write_derived writes what the host volume writes. Without a GPU (CI) the call
raises NoDeviceError with the library's reason."""
import os
import subprocess
import sys

import numpy as np
import pytest

import dicomhist
from conftest import ROOT, SAMPLE

JPEG2000 = os.path.join(os.environ.get("DH_SHARED_DICOM", os.path.join(ROOT, "..", "shared",
                                                                       "dicom")),
                        "..", "dicom-jpeg2000")


def _gpu_reads():
    from dicomhist import _device_volume
    return _device_volume.usable()[0]


def test_device_argument_is_checked():
    with pytest.raises(ValueError, match="device must be 'cpu' or 'cuda'"):
        dicomhist.read(os.path.join(SAMPLE, "xray_projection.dcm"), device="gpu")


@pytest.mark.skipif(_gpu_reads(), reason="a GPU decodes here: the tests below check the reads")
def test_no_gpu_raises_no_device_with_the_reason():
    with pytest.raises(dicomhist.NoDeviceError) as e:
        dicomhist.read(os.path.join(SAMPLE, "ct_phantom_jpeg2000"), device="cuda")
    assert e.value.status == "DH_ERR_NO_DEVICE"
    assert "read(device='cuda'): " in e.value.message and len(e.value.message) > 30
    # The host read is unchanged.
    assert dicomhist.read(os.path.join(SAMPLE, "ct_phantom_jpeg2000")).device == "cpu"


# ---- on a GPU ---------------------------------------------------------------------------------
class CuPy:
    def __init__(self):
        self.cp = pytest.importorskip("cupy")

    def like(self):
        return self.cp.empty(0, dtype=self.cp.uint8)

    def host(self, x):
        return x.get()

    def is_mine(self, x):
        return isinstance(x, self.cp.ndarray) and x.device.id == 0

    def stream(self):
        return self.cp.cuda.Stream(non_blocking=True)


class Torch:
    def __init__(self):
        self.t = pytest.importorskip("torch")
        if not self.t.cuda.is_available():
            pytest.skip("PyTorch sees no GPU")

    def like(self):
        return self.t.empty(0, dtype=self.t.uint8, device="cuda")

    def host(self, x):
        return x.cpu().numpy()

    def is_mine(self, x):
        return isinstance(x, self.t.Tensor) and x.is_cuda and x.device.index == 0

    def stream(self):
        return self.t.cuda.Stream()


@pytest.fixture(params=[CuPy, Torch], ids=["cupy", "torch"])
def lib(request):
    if not _gpu_reads():
        pytest.skip("no GPU decoding into device memory here")
    return request.param()


def _series_dir(tmp_path_factory):
    """make_series.py's series: the carried copy (DH_PLAN_DEVICE_SERIES) or made here."""
    carried = os.environ.get("DH_PLAN_DEVICE_SERIES")
    if carried and os.path.isdir(carried):
        return carried
    dest = str(tmp_path_factory.mktemp("series"))
    maker = os.path.join(ROOT, "tests", "gpu_decode", "make_series.py")
    try:
        subprocess.run([sys.executable, maker, dest], check=True, capture_output=True)
    except (subprocess.CalledProcessError, OSError) as e:
        pytest.skip(f"make_series.py could not run here ({e}); set DH_PLAN_DEVICE_SERIES")
    return dest


@pytest.fixture(scope="module")
def series_dir(tmp_path_factory):
    return _series_dir(tmp_path_factory)


def _inputs(series_dir):
    paths = [os.path.join(SAMPLE, "ct_phantom_jpeg2000"), os.path.join(SAMPLE, "ct_phantom"),
             os.path.join(SAMPLE, "xray_projection_jpeg_lossless.dcm"), series_dir]
    if os.path.isdir(JPEG2000):
        paths.append(JPEG2000)
    return paths


def _same(host, dev, lib):
    assert dev.device == "cuda" and host.device == "cpu"
    assert lib.is_mine(dev.pixels), type(dev.pixels)
    got = lib.host(dev.pixels)
    assert got.shape == host.pixels.shape and got.dtype == host.pixels.dtype, dev.path
    assert np.array_equal(got, host.pixels), f"{dev.path}: values differ"
    for key in ("path", "series_uid", "rows", "columns", "slices", "bits_stored", "signed",
                "rescale_slope", "rescale_intercept", "spacing", "window", "transfer_syntax",
                "slice_sources", "slice_locations", "slice_positions", "warnings",
                "stored_min", "stored_max", "modality_min", "modality_max", "modality_lut"):
        assert getattr(dev, key) == getattr(host, key), f"{dev.path}: {key}"
    # Modality values computed on the device: the same float64 arithmetic, the same numbers.
    assert np.array_equal(lib.host(dev.modality_values()), host.modality_values()), dev.path


def test_read_all_equals_the_host_read(lib, series_dir):
    for path in _inputs(series_dir):
        host = dicomhist.read_all(path)
        dev = dicomhist.read_all(path, device="cuda", like=lib.like())
        assert [v.path for v in dev] == [v.path for v in host], path
        assert [(p, type(e), e.status) for p, e in dev.failures] == \
            [(p, type(e), e.status) for p, e in host.failures], path
        assert dev.skipped == host.skipped
        for h, d in zip(host, dev):
            _same(h, d, lib)
    damaged = dicomhist.read_all(os.path.join(series_dir, "htj2k_damaged"), device="cuda",
                                 like=lib.like())
    assert len(damaged) == 1 and len(damaged.failures) == 1
    assert damaged.failures[0][0].endswith(".dcm") and damaged[0].slices == 5


def test_default_array_library_and_stream(lib, series_dir):
    """Without like: CuPy where importable, else PyTorch; on a non-default stream of the
    library, the values are the same once that stream is waited for."""
    path = os.path.join(series_dir, "htj2k_ct12")
    host = dicomhist.read(path)
    dev = dicomhist.read(path, device="cuda")
    assert dev.pixels.__class__.__module__.split(".")[0] in ("cupy", "torch")
    s = lib.stream()
    if hasattr(lib, "cp"):
        with s:
            d2 = dicomhist.read(path, device="cuda", like=lib.like())
            got = lib.host(d2.pixels)
    else:
        with lib.t.cuda.stream(s):
            d2 = dicomhist.read(path, device="cuda", like=lib.like())
            got = lib.host(d2.pixels)
    assert np.array_equal(got, host.pixels)


def test_chains_into_clahe_and_equalize_on_the_device(lib, series_dir):
    for name in ("j2k_ct12", "htj2k_ct12", "j2k_16s"):
        path = os.path.join(series_dir, name)
        host = dicomhist.read(path)
        dev = dicomhist.read(path, device="cuda", like=lib.like())
        for f, kw in ((dicomhist.equalize, {}), (dicomhist.clahe, {}),
                      (dicomhist.clahe, {"per_slice": True, "tiles": 4}),
                      (dicomhist.equalize, {"clip_limit": 2})):
            want = f(host, **kw)
            got = f(dev, **kw)
            assert lib.is_mine(got), f"{name} {f.__name__} {kw}: not on the device"
            assert np.array_equal(lib.host(got), want), f"{name} {f.__name__} {kw}"
        # A window in modality units goes through the host copy; same numbers, on the device.
        got = dicomhist.window(dev, window="minmax")
        assert lib.is_mine(got)
        assert np.array_equal(lib.host(got), dicomhist.window(host, window="minmax"))


def test_histogram_and_write_derived(lib, series_dir, tmp_path):
    path = os.path.join(series_dir, "j2k_ct12")
    host = dicomhist.read(path)
    dev = dicomhist.read(path, device="cuda", like=lib.like())
    h, d = dicomhist.histogram(host, bins=64), dicomhist.histogram(dev, bins=64)
    assert np.array_equal(h.counts, d.counts) and np.array_equal(h.edges, d.edges)
    a = dicomhist.write_derived(host, tmp_path / "host", operation="clahe", uids="derived",
                                created=0)
    b = dicomhist.write_derived(dev, tmp_path / "dev", operation="clahe", uids="derived",
                                created=0)
    assert np.array_equal(a.pixels, b.pixels) and a.sop_uids == b.sop_uids
    for fa, fb in zip(a.files, b.files):
        with open(fa, "rb") as x, open(fb, "rb") as y:
            assert x.read() == y.read(), (fa, fb)
    # The device array is untouched by the host copy.
    assert np.array_equal(lib.host(dev.pixels), host.pixels)
