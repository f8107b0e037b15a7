# SPDX-License-Identifier: MIT
"""equalize, window and clahe on CuPy arrays and PyTorch CUDA tensors: the result is the same
kind of array on the same device, and its values are the NumPy path's on the CPU, bit for bit,
whether computed on the GPU (device='cuda') or the CPU; equalization and CLAHE of 16-bit arrays
without a copy through the host (dh_equalize_device), on the default and a non-default stream.
Skipped without a GPU (run_pytest.py --gpu runs it for tools/gpu-check)."""
import numpy as np
import pytest

import dicomhist
from conftest import ct_like

pytestmark = pytest.mark.skipif(not dicomhist.cuda_available(), reason="no usable GPU")


class _Entered:
    """`with xp.other_stream() as s:` makes s current inside and gives s for synchronize()."""

    def __init__(self, stream, context):
        self.stream, self.context = stream, context(stream)

    def __enter__(self):
        self.context.__enter__()
        return self.stream

    def __exit__(self, *exc):
        return self.context.__exit__(*exc)


class Torch:
    def __init__(self):
        self.t = pytest.importorskip("torch")
        if not self.t.cuda.is_available():
            pytest.skip("PyTorch sees no GPU")

    def dev(self, a):
        if a.dtype == np.uint16 and not hasattr(self.t, "uint16"):
            pytest.skip("this PyTorch has no uint16")
        return self.t.as_tensor(np.ascontiguousarray(a), device="cuda")

    def check_kind(self, out, like):
        assert isinstance(out, self.t.Tensor) and out.device == like.device

    def host(self, x):
        return x.cpu().numpy()

    def other_stream(self):
        return _Entered(self.t.cuda.Stream(), self.t.cuda.stream)


class CuPy:
    def __init__(self):
        self.cp = pytest.importorskip("cupy")

    def dev(self, a):
        return self.cp.asarray(a)

    def check_kind(self, out, like):
        assert isinstance(out, self.cp.ndarray) and out.device.id == like.device.id

    def host(self, x):
        return self.cp.asnumpy(x)

    def other_stream(self):
        s = self.cp.cuda.Stream(non_blocking=True)
        return _Entered(s, lambda stream: stream)


@pytest.fixture(params=["torch", "cupy"])
def xp(request):
    return Torch() if request.param == "torch" else CuPy()


OPERATIONS = [
    ("equalize", {"window": "minmax", "clip_limit": 2.0}),
    ("equalize", {"per_slice": True, "bits": 8}),
    ("window", {"window": (500, 3000), "function": "linear-exact"}),
    ("window", {"window": "percentile:1", "per_slice": True, "function": "sigmoid"}),
    ("clahe", {"clip_limit": 2.0}),
    ("clahe", {"tiles": (2, 3, 5), "bins": 4096, "window": (200, 3900)}),
    ("clahe", {"per_slice": True, "tile_size": 13, "bins": 256, "bits": 16}),
]


@pytest.mark.parametrize("dtype", [np.uint16, np.int16])
@pytest.mark.parametrize("name,kwargs", OPERATIONS)
@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_same_kind_same_device_same_bits(xp, dtype, name, kwargs, device):
    rng = np.random.default_rng(7)
    host = ct_like(rng, (3, 70, 90), 0, 4095).astype(dtype)
    if dtype == np.int16:
        host = (host.astype(np.int32) - 1024).astype(np.int16)
        if "window" in kwargs and isinstance(kwargs["window"], tuple):
            kwargs = {**kwargs, "window": (kwargs["window"][0] - 1024,
                                           kwargs["window"][1] - 1024)}
    f = getattr(dicomhist, name)
    want = f(host, device="cpu", **kwargs)
    x = xp.dev(host)
    got = f(x, device=device, **kwargs)
    xp.check_kind(got, x)
    assert tuple(got.shape) == host.shape
    np.testing.assert_array_equal(xp.host(got).astype(np.uint16), want)
    # a 2D image stays 2D (one slice: tiles along rows and columns only)
    if len(kwargs.get("tiles", ())) == 3:
        kwargs = {**kwargs, "tiles": kwargs["tiles"][1:]}
    got2 = f(xp.dev(host[1]), device=device, **kwargs)
    xp.check_kind(got2, x)
    np.testing.assert_array_equal(xp.host(got2).astype(np.uint16),
                                  f(host[1], device="cpu", **kwargs))


def test_clahe_cuda_equals_cpu_on_full_resolution(xp):
    """65536 bins per tile on a 16-bit image, per volume and per slice: GPU == CPU."""
    rng = np.random.default_rng(8)
    host = rng.integers(0, 65536, size=(4, 96, 80)).astype(np.uint16)
    x = xp.dev(host)
    for per_slice in (False, True):
        got = dicomhist.clahe(x, per_slice=per_slice, clip_limit=3.0, device="cuda")
        np.testing.assert_array_equal(
            xp.host(got).astype(np.uint16),
            dicomhist.clahe(host, per_slice=per_slice, clip_limit=3.0, device="cpu"))


def test_equalize_and_clahe_stay_on_the_device(xp, monkeypatch):
    """Equalization and CLAHE of a 16-bit CUDA array run where it lives (dh_equalize_device):
    nothing is copied to the host, on the default and on a non-default stream."""
    import dicomhist._enhance as enhance
    rng = np.random.default_rng(9)
    host = ct_like(rng, (3, 64, 72), 0, 4095).astype(np.uint16)
    cases = [(dicomhist.equalize, {"window": "percentile:1", "clip_limit": 2.0}),
             (dicomhist.equalize, {"per_slice": True, "window": (100, 3000)}),
             (dicomhist.clahe, {"clip_limit": 2.0, "bits_stored": 12}),
             (dicomhist.clahe, {"per_slice": True, "window": "minmax", "bins": 512})]
    wants = [f(host, device="cpu", **kw) for f, kw in cases]

    def refuse(x):
        raise AssertionError("copied to the host")

    monkeypatch.setattr(enhance, "to_host", refuse)
    x = xp.dev(host)
    for (f, kw), want in zip(cases, wants):
        got = f(x, device="cuda", **kw)
        xp.check_kind(got, x)
        np.testing.assert_array_equal(xp.host(got), want)
        with xp.other_stream() as s:
            got = f(x, device="cuda", **kw)
        s.synchronize()
        np.testing.assert_array_equal(xp.host(got), want)
