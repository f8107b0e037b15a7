# SPDX-License-Identifier: MIT
"""GPU arrays: CuPy arrays and PyTorch CUDA tensors scored in place give the same records as the
NumPy (CPU) path, bit for bit; on a non-default stream; inside captured CUDA graphs; with
validity masks, tensors that require grad, int handles and stream objects. Skipped without a
GPU (run_pytest.py --gpu reports that as a skip for tools/gpu-check)."""
import numpy as np
import pytest

import dicomhist
from conftest import ct_like

pytestmark = pytest.mark.skipif(not dicomhist.cuda_available(), reason="no usable GPU")

H, W = 96, 80


class Torch:
    name = "torch"

    def __init__(self):
        self.t = pytest.importorskip("torch")
        if not self.t.cuda.is_available():
            pytest.skip("PyTorch sees no GPU")

    def dev(self, a):
        return self.t.as_tensor(np.ascontiguousarray(a), device="cuda")

    def stream(self):
        return self.t.cuda.Stream()

    def using(self, s):
        return self.t.cuda.stream(s)

    def handle(self, s):
        return s.cuda_stream

    def host(self, x):
        return x.cpu().numpy()


class CuPy:
    name = "cupy"

    def __init__(self):
        self.cp = pytest.importorskip("cupy")

    def dev(self, a):
        return self.cp.asarray(np.ascontiguousarray(a))

    def stream(self):
        return self.cp.cuda.Stream(non_blocking=True)

    def using(self, s):
        return s

    def handle(self, s):
        return s.ptr

    def host(self, x):
        return x.get()


@pytest.fixture(params=["torch", "cupy"])
def xp(request):
    return Torch() if request.param == "torch" else CuPy()


def batch_of(kind, b, seed):
    rng = np.random.default_rng(seed)
    base = ct_like(rng, (b, H, W))
    if kind == "float32":  # a DRR-like batch in [0, 1] with specials
        x = (base / 4095.0).astype(np.float32)
        x.reshape(-1)[::997] = np.nan
        x.reshape(-1)[1::991] = np.inf
        x.reshape(-1)[2::983] = 1.25
        return x, (0.0, 1.0)
    if kind == "int16":
        return (base - 2048).astype(np.int16), None
    return base.astype(np.uint16), None


def prepared(bins, rng_moving, device, max_batch=16):
    fixed = ct_like(np.random.default_rng(1), (H, W)).astype(np.uint16)
    return dicomhist.MIFixed(fixed, bins=bins, range_moving=rng_moving, device=device,
                             max_batch=max_batch)


@pytest.mark.parametrize("kind", ["uint16", "int16", "float32"])
@pytest.mark.parametrize("bins", [64, (32, 256)])
@pytest.mark.parametrize("b", [1, 7, 40])
def test_same_records_as_numpy(xp, kind, bins, b):
    batch, rng_moving = batch_of(kind, b, b)
    want = prepared(bins, rng_moving, "cpu").scores(batch)
    gpu = prepared(bins, rng_moving, "cuda")
    got = gpu.scores(xp.dev(batch))
    assert isinstance(got, dicomhist.DeviceScores)
    assert type(got.mi).__module__.split(".")[0] == xp.name
    assert got.to_host().tobytes() == want.tobytes()
    np.testing.assert_array_equal(xp.host(got.mi), want["mi"])
    np.testing.assert_array_equal(xp.host(got.n), want["n"].astype(np.int64))
    # the GPU's host path, and one image alone, give the same bits
    assert gpu.scores(batch).tobytes() == want.tobytes()
    one = gpu.scores(xp.dev(batch[0]), host=True)
    assert one.tobytes() == want[0].tobytes()


def test_validity_masks_and_one_shot_functions(xp):
    batch, rng_moving = batch_of("float32", 5, 3)
    valid = np.random.default_rng(4).random(batch.shape) > 0.3
    want = prepared(64, rng_moving, "cpu").scores(batch, valid)
    got = prepared(64, rng_moving, "cuda").scores(xp.dev(batch), xp.dev(valid))
    assert got.to_host().tobytes() == want.tobytes()
    fixed = ct_like(np.random.default_rng(1), (H, W)).astype(np.uint16)
    mi = dicomhist.mutual_information(fixed, xp.dev(batch), range_moving=rng_moving)
    np.testing.assert_array_equal(xp.host(mi), dicomhist.mutual_information(
        fixed, batch, range_moving=rng_moving, device="cpu"))


def test_non_default_stream(xp):
    batch, rng_moving = batch_of("float32", 24, 5)
    want = prepared(64, rng_moving, "cpu").scores(batch)
    gpu = prepared(64, rng_moving, "cuda")
    s = xp.stream()
    with xp.using(s):  # produced on s, scored on s (the current stream), no wait in between
        x = xp.dev(batch) * 1.0
        got = gpu.scores(x)
    s.synchronize()
    assert got.to_host().tobytes() == want.tobytes()
    # the stream given explicitly, as an object and as an int handle
    s2 = xp.stream()
    for stream in (s2, xp.handle(s2)):
        got = gpu.scores(x, stream=stream)
        s2.synchronize()
        assert got.to_host().tobytes() == want.tobytes()


def test_torch_cuda_graph():
    tt = Torch()
    torch = tt.t
    batches = [batch_of("float32", 16, 20 + k)[0] for k in range(3)]
    cpu = prepared(64, (0.0, 1.0), "cpu")
    gpu = prepared(64, (0.0, 1.0), "cuda")
    static = torch.empty((16, H, W), dtype=torch.float32, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up outside the capture
        out = gpu.scores(static)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = gpu.scores(static, out=out)
    for batch in batches:
        static.copy_(torch.as_tensor(batch, device="cuda"))
        graph.replay()
        torch.cuda.synchronize()
        assert captured.to_host().tobytes() == cpu.scores(batch).tobytes()


def test_cupy_graph():
    cp = CuPy().cp
    batch, _ = batch_of("uint16", 8, 30)
    cpu = prepared(128, None, "cpu")
    gpu = prepared(128, None, "cuda")
    x = cp.asarray(batch)
    out = gpu.scores(x)  # warm-up; its buffer is reused inside the capture
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        gpu.scores(x, out=out)
        graph = s.end_capture()
    with s:  # the new input on the graph's stream, so the launch is ordered after it
        x[...] = cp.asarray(batch[::-1].copy())
    graph.launch(stream=s)
    s.synchronize()
    assert out.to_host().tobytes() == cpu.scores(batch[::-1]).tobytes()


def test_tensor_that_requires_grad():
    torch = Torch().t
    batch, rng_moving = batch_of("float32", 3, 8)
    batch = np.nan_to_num(batch, nan=0.5, posinf=0.5)
    x = torch.as_tensor(batch, device="cuda").requires_grad_()
    got = prepared(64, rng_moving, "cuda").scores(x * 1.0)
    assert got.to_host().tobytes() == prepared(64, rng_moving, "cpu").scores(batch).tobytes()


def test_device_errors(xp):
    batch, _ = batch_of("uint16", 4, 9)
    gpu = prepared(64, None, "cuda")
    with pytest.raises(TypeError, match="uint16, int16 or float32"):
        gpu.scores(xp.dev(batch.astype(np.int32)))
    with pytest.raises(ValueError, match="compact"):
        gpu.scores(xp.dev(batch.transpose(0, 2, 1).copy()).transpose(1, 2) if xp.name == "torch"
                   else xp.dev(batch.transpose(0, 2, 1).copy()).transpose(0, 2, 1))
    with pytest.raises(ValueError, match="range_moving"):
        dicomhist.mutual_information(batch[0], xp.dev(batch.astype(np.float32)))
    with pytest.raises(ValueError, match="prepared on the GPU"):
        prepared(64, None, "cpu").scores(xp.dev(batch))
    with pytest.raises(ValueError, match="pixels"):
        gpu.scores(xp.dev(batch[:, :10]))
