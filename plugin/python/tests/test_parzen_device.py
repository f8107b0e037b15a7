# SPDX-License-Identifier: MIT
"""Parzen-window (Mattes) MI on the GPU from CuPy arrays and PyTorch CUDA tensors: scores and
gradients equal the NumPy (CPU) path bit for bit, results on the arrays' device and library,
masks, a non-default stream, CuPy's value-and-gradient function, dicomhist.torch.MattesMI forward
and backward equal to its CPU run, and the module replayed from a torch.cuda.graph capture.
Skipped without a GPU (run_pytest.py --gpu reports that as a skip for tools/gpu-check)."""
import numpy as np
import pytest

import dicomhist
from conftest import ct_like
from test_device import CuPy, Torch

pytestmark = pytest.mark.skipif(not dicomhist.cuda_available(), reason="no usable GPU")

H, W = 64, 72


@pytest.fixture(params=["torch", "cupy"])
def xp(request):
    return Torch() if request.param == "torch" else CuPy()


def images(b, seed, dtype=np.float32):
    rng = np.random.default_rng(seed)
    fixed = ct_like(rng, (H, W)).astype(np.uint16)
    moving = ct_like(rng, (b, H, W)) / 4095.0
    moving.reshape(-1)[::977] = np.nan
    if dtype != np.float32:
        moving = np.rint(moving * 3000)
    return fixed, np.nan_to_num(moving).astype(dtype) if dtype != np.float32 else \
        moving.astype(np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.uint16, np.int16])
@pytest.mark.parametrize("score,window", [("mi", "box"), ("nmi", "cubic")])
@pytest.mark.parametrize("b", [1, 9])
def test_same_bits_as_numpy(xp, dtype, score, window, b):
    fixed, moving = images(b, b, dtype)
    engine = dicomhist.ParzenMI(64, score=score, fixed_window=window)
    want, want_grad = engine.evaluate(fixed, moving)
    scores, grad = engine.evaluate(xp.dev(fixed), xp.dev(moving))
    assert isinstance(scores, dicomhist.DeviceScores)
    assert type(grad).__module__.split(".")[0] == xp.name
    assert scores.to_host().tobytes() == want.tobytes()
    assert xp.host(grad).tobytes() == want_grad.tobytes()
    value, g = dicomhist.parzen_mi(xp.dev(fixed), xp.dev(moving[0]), 64, score=score,
                                   fixed_window=window, gradient=True)
    assert float(xp.host(value)) == float(np.atleast_1d(want[score])[0])
    assert xp.host(g).tobytes() == want_grad[0].tobytes()


def test_masks_stream_and_out(xp):
    fixed, moving = images(6, 2)
    fm = (np.random.default_rng(1).random(fixed.shape) > 0.1).astype(np.uint8)
    mm = np.random.default_rng(2).random(moving.shape) > 0.3
    engine = dicomhist.ParzenMI(48, range_moving=(0.0, 1.0))
    want, want_grad = engine.evaluate(fixed, moving, fixed_mask=fm, moving_mask=mm)
    s = xp.stream()
    with xp.using(s):
        f, m, dfm, dmm = xp.dev(fixed), xp.dev(moving), xp.dev(fm), xp.dev(mm)
        out = engine.evaluate(f, m, fixed_mask=dfm, moving_mask=dmm)
        again = engine.evaluate(f, m, fixed_mask=dfm, moving_mask=dmm, out=out)
    s.synchronize()  # results are ready when their stream is; s does not block the default one
    assert again[0] is out[0] and again[1] is out[1]
    assert out[0].to_host().tobytes() == want.tobytes()
    assert xp.host(out[1]).tobytes() == want_grad.tobytes()


def test_cupy_value_and_grad():
    cp = CuPy().cp
    fixed, moving = images(4, 8)
    value, grad = dicomhist.parzen_mi_value_and_grad(cp.asarray(fixed), cp.asarray(moving), 32,
                                                     score="nmi")
    assert isinstance(value, cp.ndarray) and isinstance(grad, cp.ndarray)
    want, want_grad = dicomhist.parzen_mi_value_and_grad(fixed, moving, 32, score="nmi")
    assert value.get().tobytes() == want.tobytes() and grad.get().tobytes() == want_grad.tobytes()


def test_torch_module_cuda_equals_cpu():
    torch = Torch().t
    import dicomhist.torch as dt
    fixed, moving = images(5, 4)
    for loss in (False, True):
        mod = dt.MattesMI(64, loss=loss)
        mc = torch.tensor(moving, requires_grad=True)
        oc = mod(torch.tensor(fixed.astype(np.int16)), mc)
        oc.sum().backward()
        mg = torch.tensor(moving, device="cuda", requires_grad=True)
        og = mod(torch.tensor(fixed.astype(np.int16), device="cuda"), mg)
        og.sum().backward()
        assert og.device.type == "cuda" and mg.grad.device.type == "cuda"
        assert og.detach().cpu().numpy().tobytes() == oc.detach().numpy().tobytes()
        assert mg.grad.cpu().numpy().tobytes() == mc.grad.numpy().tobytes()


def test_torch_module_in_cuda_graph():
    """Forward and backward captured once after a warm-up, replayed on new moving images: the
    same bits as eager calls."""
    torch = Torch().t
    import dicomhist.torch as dt
    fixed, moving = images(8, 5)
    mod = dt.MattesMI(64, loss=True, range_moving=(0.0, 1.0))
    f = torch.tensor(fixed.astype(np.int16), device="cuda")
    static = torch.tensor(moving, device="cuda", requires_grad=True)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm-up: the library's scratch is allocated here
        for _ in range(2):
            static.grad = None
            mod(f, static).sum().backward()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    static.grad = None
    with torch.cuda.graph(graph):
        out = mod(f, static)
        out.sum().backward()
    for seed in (11, 12):
        _, new = images(8, seed)
        with torch.no_grad():
            static.copy_(torch.tensor(new, device="cuda"))
        graph.replay()
        torch.cuda.synchronize()
        eager = torch.tensor(new, device="cuda", requires_grad=True)
        e = mod(f, eager)
        e.sum().backward()
        assert torch.equal(out, e.detach())
        assert torch.equal(static.grad, eager.grad)


@pytest.mark.parametrize("score", ["mi", "nmi"])
def test_torch_module_cuda_backward_shapes(score):
    """The library's one-launch backward on CUDA (session 16) against the CPU module, bit for
    bit, for every shape of incoming gradient: 0-d (one image), per item (weights), expanded
    (.sum()), through a cast to float32, and a call needing no gradient."""
    torch = Torch().t
    import dicomhist.torch as dt
    fixed, moving = images(6, 7)
    f16 = fixed.astype(np.int16)
    weights = [1.0, -2.0, 0.5, 3.0, -0.25, 1e-3]
    for loss in (False, True):
        mod = dt.MattesMI(40, score=score, loss=loss)
        runs = {}
        for dev in ("cpu", "cuda"):
            f = torch.tensor(f16, device=dev)
            one = torch.tensor(moving[2], device=dev, requires_grad=True)
            mod(f, one).backward()  # 0-d incoming gradient
            batch = torch.tensor(moving, device=dev, requires_grad=True)
            w = torch.tensor(weights, dtype=torch.float64, device=dev)
            (mod(f, batch) * w).sum().backward()  # one factor per item
            expanded = torch.tensor(moving, device=dev, requires_grad=True)
            mod(f, expanded).sum().backward()  # one factor shared (stride 0)
            as32 = torch.tensor(moving, device=dev, requires_grad=True)
            (mod(f, as32).float() * w.float()).sum().backward()  # through a float32 cast
            with torch.no_grad():
                value_only = mod(f, torch.tensor(moving, device=dev))
            runs[dev] = [t.detach().cpu().numpy().tobytes() for t in
                         (one.grad, batch.grad, expanded.grad, as32.grad, value_only)]
        assert runs["cuda"] == runs["cpu"]


def test_torch_tensors_read_without_dlpack_equal_the_dlpack_path():
    """MIFixed.scores and ParzenMI.evaluate read a CUDA tensor on its current stream from the
    tensor itself (session 16's fast path; a tensor that wants grad too); on another stream
    through DLPack. Both give the NumPy path's bits."""
    torch = Torch().t
    fixed, moving = images(3, 9)
    engine = dicomhist.ParzenMI(32)
    want, want_grad = engine.evaluate(fixed, moving)
    f = torch.tensor(fixed.astype(np.int16), device="cuda")
    m = torch.tensor(moving, device="cuda", requires_grad=True)
    f_np = fixed.astype(np.int16)
    want, want_grad = engine.evaluate(f_np, moving)
    side = torch.cuda.Stream()
    for stream in (None, side):
        scores, grad = engine.evaluate(f, m, stream=stream)
        torch.cuda.synchronize()
        assert scores.to_host().tobytes() == want.tobytes()
        assert grad.cpu().numpy().tobytes() == want_grad.tobytes()
    mf = dicomhist.MIFixed(fixed, bins=16, range_moving=(0.0, 1.0), device="cuda")
    host = mf.scores(np.nan_to_num(moving, nan=2.0))
    dev = mf.scores(torch.nan_to_num(m.detach(), nan=2.0).requires_grad_(True))
    assert dev.to_host().tobytes() == host.tobytes()
    assert torch.equal(dev.mi.cpu(), torch.tensor(host["mi"]))
    assert torch.equal(dev.moving_hi.cpu(), torch.tensor(host["moving_hi"]))
    with pytest.raises(AttributeError):
        dev.no_such_field
