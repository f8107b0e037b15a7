# SPDX-License-Identifier: MIT
"""The device calls' plan (dicomhist/_device_plan.py, issue 22): after one call, MIFixed.scores
and ParzenMI.evaluate on arrays of the same kinds skip DLPack and the checks (no DeviceView is
made) and still give the NumPy path's bits on new data; any change of kind (shape, strides,
dtype, masks, gradient, another stream, a tensor subclass) is seen: the general path takes the
call, or the plan reads the stream of the moment. Skipped without a GPU."""
import numpy as np
import pytest

import dicomhist
from dicomhist import _arrays, _core
from conftest import ct_like
from test_device import CuPy, Torch

pytestmark = pytest.mark.skipif(not dicomhist.cuda_available(), reason="no usable GPU")

H, W = 40, 56


@pytest.fixture(params=["torch", "cupy"])
def xp(request):
    return Torch() if request.param == "torch" else CuPy()


@pytest.fixture
def spy(monkeypatch):
    """Counts the DeviceViews made (the general path makes them, the plan does not) and records
    the stream handle of each library call."""
    seen = {"views": 0, "streams": []}
    real_view = _arrays.DeviceView

    def view(x, stream):
        seen["views"] += 1
        return real_view(x, stream)

    def recording(name, stream_at):
        real = getattr(_core, name)

        def call(*args):
            seen["streams"].append(args[stream_at])
            return real(*args)
        monkeypatch.setattr(_core, name, call)

    monkeypatch.setattr(_arrays, "DeviceView", view)
    recording("parzen_evaluate_device", 9)
    recording("mi_evaluate_device", 7)
    return seen


def images(b, seed):
    rng = np.random.default_rng(seed)
    fixed = ct_like(rng, (H, W)).astype(np.uint16)
    moving = (ct_like(rng, (b, H, W)) / 4095.0).astype(np.float32)
    return fixed, moving


def test_parzen_plan_serves_new_data_with_the_same_bits(xp, spy):
    engine = dicomhist.ParzenMI(32, range_moving=(0.0, 1.0))
    fixed = images(1, 0)[0]
    f = xp.dev(fixed)
    for step in range(4):  # new moving images of the same kind each step, as an optimizer's
        moving = images(5, step)[1]
        want, want_grad = engine.evaluate(fixed, moving)
        views = spy["views"]
        scores, grad = engine.evaluate(f, xp.dev(moving))
        assert spy["views"] == views + (2 if step == 0 else 0)  # planned from the 2nd call on
        assert scores.to_host().tobytes() == want.tobytes()
        assert xp.host(grad).tobytes() == want_grad.tobytes()
        assert type(grad).__module__.split(".")[0] == xp.name
        assert tuple(grad.shape) == moving.shape and str(grad.dtype).endswith("float32")
        if xp.name == "cupy" and step > 0:  # the plan's one pool allocation for both results
            assert grad.data.mem is scores.raw.data.mem
            assert grad.data.ptr - scores.raw.data.ptr == 512  # 5 records of 72 bytes, aligned


def test_parzen_plan_sees_every_change_of_kind(xp, spy):
    engine = dicomhist.ParzenMI(24, range_moving=(0.0, 1.0))
    fixed, moving = images(4, 1)
    f, m = xp.dev(fixed), xp.dev(moving)
    engine.evaluate(f, m)  # the plan: 4 float32 images, no masks, with gradient

    def check(fixed_h, moving_h, dev_fixed, dev_moving, **kw):
        host_kw = {k: xp.host(v) for k, v in kw.items() if k.endswith("mask")}
        want, want_grad = engine.evaluate(fixed_h, moving_h, gradient=kw.get("gradient", True),
                                          **host_kw)
        scores, grad = engine.evaluate(dev_fixed, dev_moving, **kw)
        assert scores.to_host().tobytes() == want.tobytes()
        if want_grad is None:
            assert grad is None
        else:
            assert xp.host(grad).tobytes() == want_grad.tobytes()

    # another batch size, one image alone, a dtype, masks, no gradient: each right
    check(fixed, moving[:3], f, m[:3])
    check(fixed, moving[0], f, m[0])
    q = np.rint(moving * 3000).astype(np.uint16)
    engine_q = dicomhist.ParzenMI(24)
    want, want_grad = engine_q.evaluate(fixed, q)
    scores, grad = engine_q.evaluate(f, xp.dev(q))
    assert scores.to_host().tobytes() == want.tobytes()
    fm = (np.random.default_rng(3).random(fixed.shape) > 0.2).astype(np.uint8)
    mm = (np.random.default_rng(4).random(moving.shape) > 0.3).astype(np.uint8)
    check(fixed, moving, f, m, fixed_mask=xp.dev(fm), moving_mask=xp.dev(mm))
    check(fixed, moving, f, m, fixed_mask=xp.dev(fm), moving_mask=xp.dev(mm))  # planned
    check(fixed, moving, f, m)
    check(fixed, moving, f, m, gradient=False)
    check(fixed, moving, f, m, gradient=False)  # planned without the gradient
    # the same shape with other strides (a view of wider rows): refused, never read as compact
    wide = xp.dev(np.concatenate([moving, moving[:, :, :8]], axis=2))[:, :, :W]
    with pytest.raises(ValueError, match="compact"):
        engine.evaluate(f, wide)


def test_plan_reads_the_stream_of_each_call(xp, spy):
    fixed, moving = images(6, 7)
    engine = dicomhist.ParzenMI(32, range_moving=(0.0, 1.0))
    mf = dicomhist.MIFixed(fixed, bins=32, range_moving=(0.0, 1.0), device="cuda")
    want, want_grad = engine.evaluate(fixed, moving)
    want_mi = dicomhist.MIFixed(fixed, bins=32, range_moving=(0.0, 1.0),
                                device="cpu").scores(moving)
    f, m = xp.dev(fixed), xp.dev(moving)
    engine.evaluate(f, m)  # planned on the default stream
    mf.scores(m)
    s = xp.stream()
    with xp.using(s):  # produced on s and scored there: the plan must enqueue on s
        m2 = m * 1.0
        views = spy["views"]
        scores, grad = engine.evaluate(f, m2)
        records = mf.scores(m2)
        assert spy["views"] == views  # served by the plans
        assert spy["streams"][-2:] == [xp.handle(s)] * 2
    s.synchronize()
    assert scores.to_host().tobytes() == want.tobytes()
    assert xp.host(grad).tobytes() == want_grad.tobytes()
    assert records.to_host().tobytes() == want_mi.tobytes()
    # an explicit stream takes the general path (its ordering through DLPack)
    views = spy["views"]
    scores, _ = engine.evaluate(f, m, stream=s)
    assert spy["views"] == views + 2 and spy["streams"][-1] == xp.handle(s)
    s.synchronize()
    assert scores.to_host().tobytes() == want.tobytes()


def test_parzen_plan_out_is_checked_and_written(xp, spy):
    """out= on the planned path (session 19: the results' library and sizes compared in place):
    written again with the NumPy path's bits, no DeviceView made; results of another batch size
    or another gradient shape refused with the plan in place."""
    engine = dicomhist.ParzenMI(32, range_moving=(0.0, 1.0))
    fixed, moving = images(3, 21)
    f = xp.dev(fixed)
    out = engine.evaluate(f, xp.dev(moving))
    views = spy["views"]
    for step in range(3):
        m = images(3, 30 + step)[1]
        want, want_grad = engine.evaluate(fixed, m)
        again = engine.evaluate(f, xp.dev(m), out=out)
        assert again[0] is out[0] and again[1] is out[1]
        assert out[0].to_host().tobytes() == want.tobytes()
        assert xp.host(out[1]).tobytes() == want_grad.tobytes()
    assert spy["views"] == views
    small = engine.evaluate(f, xp.dev(moving[:2]))
    engine.evaluate(f, xp.dev(moving))  # the plan of a batch of 3 again
    views = spy["views"]
    with pytest.raises(ValueError, match="out"):
        engine.evaluate(f, xp.dev(moving), out=small)
    with pytest.raises(ValueError, match="out"):
        engine.evaluate(f, xp.dev(moving), out=(out[0], small[1]))
    assert spy["views"] == views  # refused by the planned path itself


def test_mifixed_plan_batches_masks_and_out(xp, spy):
    fixed, moving = images(37, 11)
    cpu = dicomhist.MIFixed(fixed, bins=48, range_moving=(0.0, 1.0), device="cpu")
    gpu = dicomhist.MIFixed(fixed, bins=48, range_moving=(0.0, 1.0), device="cuda",
                            max_batch=16)  # three library calls per batch
    valid = (np.random.default_rng(5).random(moving.shape) > 0.25).astype(np.uint8)
    out = None
    for step in range(3):
        batch = np.ascontiguousarray(moving[:, ::-1] if step % 2 else moving)
        for mask in (None, valid):  # each kind twice in a row: the second call is planned
            want = cpu.scores(batch, mask)
            dev_mask = None if mask is None else xp.dev(mask)
            got = gpu.scores(xp.dev(batch), dev_mask)
            views = spy["views"]
            again = gpu.scores(xp.dev(batch), dev_mask)
            assert spy["views"] == views
            assert gpu._last == (37, 16)
            assert got.to_host().tobytes() == want.tobytes()
            assert again.to_host().tobytes() == want.tobytes()
        want = cpu.scores(batch)
        out = gpu.scores(xp.dev(batch), out=out) if out is not None else gpu.scores(xp.dev(batch))
        assert out.to_host().tobytes() == want.tobytes()
        one = gpu.scores(xp.dev(batch[4]), host=True)
        assert one.tobytes() == cpu.scores(batch[4]).tobytes()
    with pytest.raises(ValueError, match="out"):
        gpu.scores(xp.dev(moving[:5]), out=out)


def test_torch_subclass_and_grad_tensors_keep_the_general_path(spy):
    torch = Torch().t
    fixed, moving = images(2, 13)
    engine = dicomhist.ParzenMI(32, range_moving=(0.0, 1.0))
    f = torch.tensor(fixed.astype(np.int16), device="cuda")
    want, want_grad = engine.evaluate(fixed.astype(np.int16), moving)
    p = torch.nn.Parameter(torch.tensor(moving, device="cuda"))
    for m in (p, p, torch.tensor(moving, device="cuda", requires_grad=True)):
        scores, grad = engine.evaluate(f, m)
        assert scores.to_host().tobytes() == want.tobytes()
        assert grad.cpu().numpy().tobytes() == want_grad.tobytes()
