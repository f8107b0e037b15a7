#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench_mi_python.py: batched mutual information from PyTorch CUDA tensors through the Python
package, against the same library call without the binding and against plain PyTorch.

For each image size, bin count and moving dtype: a CT-like uint16 fixed image, a batch of
float32 DRR-like moving images in [0, 1] (or 12-bit stored values, the C benchmark's case) on
the GPU, range given, scored
  - package:  MIFixed.scores(batch, out=out) (the whole binding: DLPack export, stream lookup,
              checks, the C call), on torch's current stream;
  - raw:      _core.mi_evaluate_device with the pointers computed once (the C call alone: the
              floor the binding adds to);
  - torch:    plain PyTorch (bins by the same float32 formula, torch.bincount of the joint
              cells, entropies in float64), the way one would write it without dicomhist;
every configuration first checked: the package's records equal the CPU path's bit for bit and
torch's MI equals ours to 1e-9. Device time from CUDA events around `reps` back-to-back calls
(median of `trials`), host time per call from the wall clock of the same loops.
Prints a Markdown table. Usage: bench_mi_python.py [--quick]

With --host-cost (no GPU, no PyTorch needed): the host cost of a package call on the CPU path
with NumPy arrays, for MIFixed.scores and ParzenMI.evaluate (with and without the gradient),
against the same _core call with its arguments made once (the C call alone): one 8x8 image at
8 bins (so the C work is small) scored `reps` times, the per-call time the fastest of `trials`
loops in this thread's CPU time, package and bare call taking turns (the machine's other load
only adds), and the difference, which issue 22 wants within 5 us. Where PyTorch is importable,
dicomhist.torch.MattesMI on CPU (and CUDA) tensors against its C call and PyTorch's floor; on a
GPU also the split of the CUDA call's host cost piece by piece (cuda_host_split: session 15's
forward kept beside this one) and MIFixed.scores / ParzenMI.evaluate on PyTorch and CuPy device
arrays against their bare C calls; the C calls also through ctypes and from a C loop
(bench/libbench_host_loop.so under the working directory, or DH_BENCH_HOST_LOOP).
"""
import ctypes
import os
import statistics
import sys
import time

import numpy as np

import dicomhist
from dicomhist import _core

try:
    import torch
except ImportError:  # --host-cost needs no PyTorch
    torch = None


def ct_like(rng, shape):
    yy, xx = np.mgrid[0:shape[-2], 0:shape[-1]]
    base = (np.sin(xx / 7.0) + np.cos(yy / 11.0)) * 0.25 + 0.5
    return np.clip(base * 4095 + rng.normal(0, 200, size=shape), 0, 4095)


def timed(fn, reps, trials):
    """(device us per call, host us per call): median over trials of reps back-to-back calls."""
    dev, host = [], []
    for _ in range(trials):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        start.record()
        for _ in range(reps):
            fn()
        stop.record()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        dev.append(start.elapsed_time(stop) * 1e3 / reps)
        host.append((t1 - t0) * 1e6 / reps)
    return statistics.median(dev), statistics.median(host)


def torch_mi(fixed_bins, x, bins_f, bins_m, lo, hi):
    """MI (nats, float64) of each image of x against the fixed bins, plain PyTorch, with the
    library's binning: the float32 formula for floats, the exact integer one for integers."""
    b = x.shape[0]
    cells = bins_f * bins_m
    xf = x.reshape(b, -1)
    if xf.dtype == torch.float32:
        q = ((xf - lo) * float(bins_m)) / (hi - lo)  # float32 steps, each rounded (no fusion)
        mb = q.long().clamp_(0, bins_m - 1)
    else:
        xf = xf.int()
        mb = ((xf - lo) * bins_m) // (hi - lo + 1)
    ok = (xf >= lo) & (xf <= hi) & (fixed_bins >= 0)
    idx = fixed_bins * bins_m + mb + torch.arange(b, device=x.device).unsqueeze(1) * cells
    idx = torch.where(ok, idx, torch.full_like(idx, b * cells))
    joint = torch.bincount(idx.reshape(-1), minlength=b * cells + 1)[:-1]
    joint = joint.reshape(b, bins_f, bins_m).double()
    n = joint.sum(dim=(1, 2))

    def h(c):
        p = c / n.reshape(-1, *([1] * (c.dim() - 1)))
        return -(torch.where(p > 0, p * torch.log(p), torch.zeros_like(p))).reshape(b, -1).sum(1)

    return h(joint.sum(2)) + h(joint.sum(1)) - h(joint)


def run(side, bins, batch, dtype, reps, trials):
    rng = np.random.default_rng(side + bins)
    fixed = ct_like(rng, (side, side)).astype(np.uint16)
    if dtype == "float32":  # DRRs as rendered
        drr, rng_m, code = (ct_like(rng, (batch, side, side)) / 4095.0).astype(np.float32), \
            (0.0, 1.0), 2
    else:  # 12-bit stored values, the C benchmark's case (int16: torch has no uint16 arithmetic)
        drr, rng_m, code = ct_like(rng, (batch, side, side)).astype(np.int16), (0, 4095), 1
    x = torch.as_tensor(drr, device="cuda")
    f = dicomhist.MIFixed(fixed, bins=bins, range_moving=rng_m, device="cuda",
                          max_batch=batch)
    out = f.scores(x)
    torch.cuda.synchronize()
    # checks: the CPU path's records, bit for bit; plain torch's MI to 1e-9
    cpu = dicomhist.MIFixed(fixed, bins=bins, range_moving=rng_m, device="cpu",
                            max_batch=batch)
    same = out.to_host().tobytes() == cpu.scores(drr).tobytes()
    lo_f, hi_f = int(fixed.min()), int(fixed.max())
    fb = (fixed.astype(np.int64) - lo_f) * bins // (hi_f - lo_f + 1)
    fixed_bins = torch.as_tensor(fb.reshape(-1), device="cuda")
    mi_torch = torch_mi(fixed_bins, x, bins, bins, *rng_m)
    diff = float((mi_torch - out.mi).abs().max())

    stream = torch.cuda.current_stream().cuda_stream
    ptr, optr = x.data_ptr(), out.raw.data_ptr()
    handle = f._handle
    n = side * side
    pkg = timed(lambda: f.scores(x, out=out), reps, trials)
    raw = timed(lambda: _core.mi_evaluate_device(handle, ptr, code, n, batch, 0, 0, stream,
                                                 optr), reps, trials)
    tor = timed(lambda: torch_mi(fixed_bins, x, bins, bins, *rng_m), max(1, reps // 10), trials)
    return {"side": side, "bins": bins, "batch": batch, "same_bits": same, "torch_diff": diff,
            "pkg": pkg, "raw": raw, "torch": tor}


def per_call_us(fns, reps, trials, settle=None):
    """For each function, the fastest over trials of the CPU time of this thread per call of
    reps back-to-back calls, in us (CPU time, not wall time: on a shared machine the time spent
    waiting for a core is not the call's); the functions take turns within each trial, so that
    the machine's changing load touches them alike. settle() runs before each timed loop,
    outside the timing (a GPU synchronization: each loop then enqueues on an empty queue)."""
    best = [float("inf")] * len(fns)
    for _ in range(trials):
        for k, fn in enumerate(fns):
            if settle:
                settle()
            t0 = time.thread_time()
            for _ in range(reps):
                fn()
            best[k] = min(best[k], (time.thread_time() - t0) * 1e6 / reps)
    return best


def host_cost(reps, trials):
    """The package's host cost on the CPU path: each entry's package call against its bare
    _core call (arguments made once), on one 8x8 image at few bins, so that the C work is
    small and its noise does not hide the difference."""
    rng = np.random.default_rng(7)
    fixed = ct_like(rng, (8, 8)).astype(np.uint16)
    drr = (ct_like(rng, (8, 8)) / 4095.0).astype(np.float32)
    n = fixed.size
    mf = dicomhist.MIFixed(fixed, bins=8, range_moving=(0.0, 1.0), device="cpu")
    rec = np.empty(1, dicomhist.SCORE_DTYPE)
    pm = dicomhist.ParzenMI(8)
    grad = np.empty(drr.shape, np.float32)
    cases = [
        ("MIFixed.scores", lambda: mf.scores(drr),
         lambda: _core.mi_evaluate(mf._handle, drr, _core.SAMPLE_FLOAT32, n, 1, None, n, rec)),
        ("ParzenMI.evaluate, value", lambda: pm.evaluate(fixed, drr, gradient=False),
         lambda: _core.parzen_evaluate(pm._handle, n, fixed, _core.SAMPLE_UINT16, None, drr,
                                       _core.SAMPLE_FLOAT32, None, 1, rec, None)),
        ("ParzenMI.evaluate, value + gradient", lambda: pm.evaluate(fixed, drr),
         lambda: _core.parzen_evaluate(pm._handle, n, fixed, _core.SAMPLE_UINT16, None, drr,
                                       _core.SAMPLE_FLOAT32, None, 1, rec, grad)),
    ]
    print(f"host cost on the CPU path, one 8x8 image at 8 bins, {reps} calls x {trials} "
          f"trials (fastest), dicomhist {dicomhist.__version__}")
    print("| call | package us/call | bare C call us/call | host cost us |")
    print("|---|---|---|---|")
    for name, pkg, raw in cases:
        p, r = per_call_us([pkg, raw], reps, trials)
        print(f"| {name} | {p:.2f} | {r:.2f} | {p - r:.2f} |", flush=True)
    if torch is not None:
        torch_host_cost(fixed, drr, reps, trials, "cpu")
        if torch.cuda.is_available():  # 40 calls a loop: far from filling the launch queue
            torch_host_cost(fixed, drr, 40, trials * 20, "cuda")
            cuda_host_split(fixed, drr, 40, trials * 20)
    return 0


class _EmptyFunction(torch.autograd.Function if torch else object):
    """PyTorch's floor for a module like MattesMI: an autograd.Function that does no work but
    make what any such function must hand back (a float64 score, a float32 gradient kept for
    backward) and scale it in backward, as MattesMI's does."""

    @staticmethod
    def forward(ctx, moving, value_like, grad_like):
        grad = torch.empty_like(grad_like)
        ctx.save_for_backward(grad)
        return torch.empty_like(value_like)

    @staticmethod
    def backward(ctx, grad_output):
        (grad,) = ctx.saved_tensors
        return grad * grad_output.float(), None, None


class _EmptyModule(torch.nn.Module if torch else object):
    def __init__(self, value_like, grad_like):
        super().__init__()
        self.value_like, self.grad_like = value_like, grad_like

    def forward(self, fixed, moving):
        return _EmptyFunction.apply(moving, self.value_like, self.grad_like)


def torch_host_cost(fixed, drr, reps, trials, device):
    """dicomhist.torch.MattesMI on one 8x8 pair on `device`: forward alone and forward +
    backward, against the C call it makes (parzen_evaluate_pointers on the CPU,
    parzen_evaluate_device on the current stream on the GPU, arguments made once) and against
    PyTorch's floor (_EmptyModule: the same calls of an autograd.Function that does nothing)."""
    import dicomhist.torch as dt
    mattes = dt.MattesMI(8)
    ft = torch.from_numpy(fixed.astype(np.int16)).to(device)
    mt = torch.from_numpy(drr).to(device).requires_grad_(True)
    mattes(ft, mt).backward()  # the plan made, mt.grad allocated: steady state from here
    plan, h, n = mattes._plan, mattes._engine._handle, fixed.size
    value = torch.empty_like(plan.value_like)
    grad = torch.empty_like(plan.grad_like)
    fp, mp, vp, gp = ft.data_ptr(), mt.data_ptr(), value.data_ptr(), grad.data_ptr()
    i16, f32 = _core.SAMPLE_INT16, _core.SAMPLE_FLOAT32
    if device == "cuda":
        raw = torch.empty((1, dicomhist.SCORE_DTYPE.itemsize // 8), dtype=torch.float64,
                          device=device)
        rp, stream = raw.data_ptr(), torch.cuda.current_stream().cuda_stream
        bare = lambda: _core.parzen_evaluate_device(h, n, fp, i16, 0, mp, f32, 0, 1, stream, rp,
                                                    gp)
        settle = torch.cuda.synchronize
    else:
        bare = lambda: _core.parzen_evaluate_pointers(h, n, fp, i16, 0, mp, f32, 0, 1, vp, 0, 1.0,
                                                      gp)
        settle = None
    empty = _EmptyModule(plan.value_like, plan.grad_like)
    fns = [lambda: mattes(ft, mt), lambda: mattes(ft, mt).backward(), bare,
           lambda: empty(ft, mt), lambda: empty(ft, mt).backward()]
    fwd, both, c_call, floor_fwd, floor_both = per_call_us(fns, reps, trials, settle)
    where = torch.cuda.get_device_name() if device == "cuda" else "CPU"
    print(f"\nMattesMI on {device} tensors ({where}), one 8x8 pair at 8 bins, {reps} calls x "
          f"{trials} trials (fastest), torch {torch.__version__}: the module, the C call it "
          f"makes, and PyTorch's floor (an autograd.Function doing no work)")
    print("| call | module us/call | C call us/call | PyTorch floor us/call | host cost us | "
          "ours beyond the floor us |")
    print("|---|---|---|---|---|---|")
    for name, mod, fl in (("forward", fwd, floor_fwd), ("forward + backward", both, floor_both)):
        print(f"| {name} | {mod:.2f} | {c_call:.2f} | {fl:.2f} | {mod - c_call:.2f} | "
              f"{mod - c_call - fl:.2f} |", flush=True)


class _Session15Function(torch.autograd.Function if torch else object):
    """MattesMI's CUDA forward as session 15 made it (commit e1ec43e), kept here to time the
    before and the after in one run: torch.cuda.current_stream(), a record buffer from
    torch.empty, the C call writing records, then the score column sliced and negated (or
    cloned) by PyTorch, and a backward of PyTorch operations."""

    @staticmethod
    def forward(ctx, moving, fixed, module):
        from dicomhist.torch import _Plan, _as_read
        plan = _Plan.of(module, fixed, moving)
        f, m = _as_read(fixed, plan.ftype), _as_read(moving, plan.mtype)
        grad = torch.empty_like(plan.grad_like) if ctx.needs_input_grad[0] else None
        gptr = grad.data_ptr() if grad is not None else 0
        engine, sign = module._engine, module._sign
        raw = torch.empty((plan.count, dicomhist.SCORE_DTYPE.itemsize // 8), dtype=torch.float64,
                          device=m.device)
        stream = torch.cuda.current_stream(m.device).cuda_stream
        with engine._lock:
            _core.parzen_evaluate_device(engine._handle, plan.pixels, f.data_ptr(), plan.ftype, 0,
                                         m.data_ptr(), plan.mtype, 0, plan.count, stream,
                                         raw.data_ptr(), gptr)
        value = raw[:, 0]
        value = (torch.neg(value) if sign != 1.0 else value.clone()).reshape(
            plan.value_like.shape)
        ctx.sign = sign
        if grad is not None:
            ctx.save_for_backward(grad)
            ctx.scale_shape = plan.scale_shape
        return value

    @staticmethod
    def backward(ctx, grad_output):
        (grad,) = ctx.saved_tensors
        scale = (grad_output * ctx.sign if ctx.sign != 1.0 else grad_output).float()
        g = grad * (scale if scale.dim() == 0 else scale.reshape(ctx.scale_shape))
        return g, None, None


def cuda_host_split(fixed, drr, reps, trials):
    """Issue 22's split of MattesMI's host cost on CUDA tensors: each host-side piece of a
    forward (and backward) timed alone, in this thread's CPU time per call (the launches are
    asynchronous: a launch's host cost, not the GPU's time), session 15's forward and this
    one's, the floor beside them; then MIFixed.scores and ParzenMI.evaluate on PyTorch (and
    CuPy, where importable) CUDA arrays against their bare C calls. One 8x8 pair at 8 bins, a
    loss (sign -1) as an optimizer uses it. The C call is also timed through ctypes and from a
    tiny C loop (bench_host_loop, where built), and the forward against the floor and the C call
    composed in one function (what is ours beyond both); the device-array rows run on each
    engine's plan (one engine per kind of call) and list the results' allocation (what any call
    returning new arrays pays) beside the host cost."""
    import dicomhist.torch as dt
    dev = torch.device("cuda", torch.cuda.current_device())
    mattes = dt.MattesMI(8, loss=True)
    ft = torch.from_numpy(fixed.astype(np.int16)).to(dev)
    mt = torch.from_numpy(drr).to(dev).requires_grad_(True)
    mattes(ft, mt).backward()
    _Session15Function.apply(mt, ft, mattes).backward()
    torch.cuda.synchronize()
    plan, h, n, idx = mattes._plan, mattes._engine._handle, fixed.size, dev.index
    raw = torch.empty((1, dicomhist.SCORE_DTYPE.itemsize // 8), dtype=torch.float64, device=dev)
    value = torch.empty_like(plan.value_like)
    grad = torch.empty_like(plan.grad_like)
    out = torch.empty_like(plan.grad_like)
    go = torch.ones((), dtype=torch.float64, device=dev)
    fp, mp, rp, vp, gp = ft.data_ptr(), mt.data_ptr(), raw.data_ptr(), value.data_ptr(), \
        grad.data_ptr()
    i16, f32 = _core.SAMPLE_INT16, _core.SAMPLE_FLOAT32
    stream = torch.cuda.current_stream().cuda_stream
    empty = _EmptyModule(plan.value_like, plan.grad_like)
    mf = dicomhist.MIFixed(fixed, bins=8, range_moving=(0.0, 1.0), device="cuda")
    mi_rec = torch.empty((1, dicomhist.SCORE_DTYPE.itemsize), dtype=torch.uint8, device=dev)
    mi_out = mf.scores(mt.detach())
    # one engine per kind of call: each keeps the plan of its last call's kinds (an optimizer
    # repeats one kind), so no timed loop starts on the general path
    pm, pm_v = dicomhist.ParzenMI(8), dicomhist.ParzenMI(8)
    md = mt.detach()
    pm_v.evaluate(ft, md, gradient=False)
    pm_out = pm.evaluate(ft, md)
    pieces = [
        ("torch.cuda.current_stream(dev).cuda_stream (session 15)",
         lambda: torch.cuda.current_stream(dev).cuda_stream),
        ("torch._C._cuda_getCurrentRawStream(index) (now)", lambda: dt._current_stream(idx)),
        ("_Plan.of: the kinds' key built and compared", lambda: dt._Plan.of(mattes, ft, mt)),
        ("tensor.data_ptr()", lambda: mt.data_ptr()),
        ("torch.empty((1, 9), float64, cuda): the record buffer (session 15)",
         lambda: torch.empty((1, 9), dtype=torch.float64, device=dev)),
        ("torch.empty_like(value_like): the 0-d score", lambda: torch.empty_like(plan.value_like)),
        ("torch.empty_like(grad_like): the gradient", lambda: torch.empty_like(plan.grad_like)),
        ("raw[:, 0]: the score column (session 15)", lambda: raw[:, 0]),
        ("torch.neg(raw[:, 0]).reshape(()): the sign as a kernel (session 15)",
         lambda: torch.neg(raw[:, 0]).reshape(())),
        ("C call, records (parzen_evaluate_device, session 15)",
         lambda: _core.parzen_evaluate_device(h, n, fp, i16, 0, mp, f32, 0, 1, stream, rp, gp)),
        ("C call, signed scores (parzen_evaluate_device_signed, now)",
         lambda: _core.parzen_evaluate_device_signed(h, n, fp, i16, 0, mp, f32, 0, 1, stream,
                                                     -1.0, vp, gp)),
        ("backward's product, PyTorch: grad * (go * -1).float() (session 15)",
         lambda: grad * (go * -1.0).float()),
        ("backward's product, one launch: parzen_scale_gradient_device (now)",
         lambda: _core.parzen_scale_gradient_device(h, gp, n, 1, go.data_ptr(), 0, -1.0,
                                                    out.data_ptr(), stream)),
        ("floor: empty autograd.Function forward", lambda: empty(ft, mt)),
        ("floor: empty autograd.Function forward + backward", lambda: empty(ft, mt).backward()),
        ("MattesMI forward, session 15's function", lambda: _Session15Function.apply(mt, ft, mattes)),
        ("MattesMI forward, now", lambda: mattes(ft, mt)),
        ("MattesMI forward + backward, session 15's function",
         lambda: _Session15Function.apply(mt, ft, mattes).backward()),
        ("MattesMI forward + backward, now", lambda: mattes(ft, mt).backward()),
        ("floor forward, then the C call (signed), composed",
         lambda: (empty(ft, mt), _core.parzen_evaluate_device_signed(
             h, n, fp, i16, 0, mp, f32, 0, 1, stream, -1.0, vp, gp))),
        ("tensor.__dlpack__(stream=current): DLPack export (the device path before)",
         lambda: md.__dlpack__(stream=stream or 1, max_version=(1, 0))),
        ("MIFixed.scores(cuda tensor)", lambda: mf.scores(md)),
        ("MIFixed.scores(cuda tensor, out=)", lambda: mf.scores(md, out=mi_out)),
        ("C call: mi_evaluate_device", lambda: _core.mi_evaluate_device(
            mf._handle, mp, f32, n, 1, 0, 0, stream, mi_rec.data_ptr())),
        ("ParzenMI.evaluate(cuda tensors), value + gradient", lambda: pm.evaluate(ft, md)),
        ("ParzenMI.evaluate(cuda tensors), value", lambda: pm_v.evaluate(ft, md, gradient=False)),
        ("ParzenMI.evaluate(cuda tensors, out=), value + gradient",
         lambda: pm.evaluate(ft, md, out=pm_out)),
        ("C call: parzen_evaluate_device, value", lambda: _core.parzen_evaluate_device(
            pm_v._handle, n, fp, i16, 0, mp, f32, 0, 1, stream, rp, 0)),
    ]
    # session 19: the steady state's pieces one by one (the plan's checks, the out= addresses,
    # the lock, session 18's route through the array-kind dispatch), and the ways to allocate
    # both results (scores and gradient) that the array library offers
    pm_plan = pm._plan
    lock = pm._lock
    sig = pm_plan.kinds.signature
    arrays4 = (ft, md, None, None)

    def locked():
        with lock:
            pass

    both_bytes = torch.empty((), dtype=torch.uint8, device=dev).expand((80 + md.numel() * 4,))
    npix = md.numel()

    def one_torch_allocation():
        buf = torch.empty_like(both_bytes)
        r, g = buf.split_with_sizes([80, npix * 4])
        return r[:72].view(1, 72), g.view(torch.float32).view(md.shape)

    pieces += [
        ("session 19: plan.stream_for (4 arrays' signatures compared, device, stream)",
         lambda: pm_plan.stream_for(arrays4, True)),
        ("session 19: a tensor's signature (shape, stride(), dtype, get_device())",
         lambda: sig(md)),
        ("session 19: the engine's lock, taken and released", locked),
        ("results: torch.empty_like of the gradient's template alone",
         lambda: torch.empty_like(pm_templates[1])),
        ("results: torch.empty(shape, dtype=float32, device=dev) (the gradient)",
         lambda: torch.empty(md.shape, dtype=torch.float32, device=dev)),
        ("results: one torch.empty_like for both, split into two views", one_torch_allocation),
    ]
    session19 = hasattr(type(pm_plan), "own")  # else an older package, timed beside
    if session19:
        pieces += [
            ("session 19: plan.own(tensor): type check + data_ptr()", lambda: pm_plan.own(md)),
            ("session 19: ParzenMI(out=) entered below the new dispatch (_evaluate_device: "
             "session 18's entry)",
             lambda: pm._evaluate_device(ft, md, None, None, True, None, pm_out)),
            ("session 19: MIFixed.scores(out=) entered below the new dispatch (_scores_device)",
             lambda: mf._scores_device(md, None, None, False, mi_out)),
        ]
    api = _c_api()
    # what the plans allocate from (dicomhist/_device_plan.py): 0-d tensors expanded to the
    # results' shapes, made here so that an older package can be timed by the same script
    mi_template = torch.empty((), dtype=torch.uint8, device=dev).expand((1, 72))
    pm_templates = (mi_template, torch.empty((), dtype=torch.float32, device=dev).expand(md.shape))
    mbox, mattes_box = _box(mf._handle, b"dicomhist.mi_fixed"), _box(h, b"dicomhist.parzen_mi")
    signed, mi_dev = api.dh_parzen_mi_evaluate_device_signed, api.dh_mi_evaluate_device
    pieces += [
        ("ctypes: dh_parzen_mi_evaluate_device_signed", lambda: signed(
            *mattes_box, n, fp, i16, None, mp, f32, None, 1, stream, -1.0, vp, gp)),
        ("ctypes: dh_mi_evaluate_device", lambda: mi_dev(
            *mbox, mp, f32, n, 1, None, 0, stream, mi_rec.data_ptr())),
        ("results: torch.empty_like of the plan's template (scores)",
         lambda: torch.empty_like(mi_template)),
        ("results: torch.empty_like of the plan's templates (scores, gradient)",
         lambda: (torch.empty_like(pm_templates[0]), torch.empty_like(pm_templates[1]))),
    ]
    try:
        import cupy
        fc, mc = cupy.asarray(fixed.astype(np.int16)), cupy.asarray(drr)
        cstream = cupy.cuda.get_current_stream().ptr
        mf_c = dicomhist.MIFixed(fixed, bins=8, range_moving=(0.0, 1.0), device="cuda")
        pm_c, pm_cv = dicomhist.ParzenMI(8), dicomhist.ParzenMI(8)
        cpm_out = pm_c.evaluate(fc, mc)
        cmi_out = mf_c.scores(mc)
        pm_cv.evaluate(fc, mc, gradient=False)
        pieces += [
            ("CuPy: MIFixed.scores", lambda: mf_c.scores(mc)),
            ("CuPy: C call mi_evaluate_device", lambda: _core.mi_evaluate_device(
                mf_c._handle, mc.data.ptr, f32, n, 1, 0, 0, cstream, mi_rec.data_ptr())),
            ("CuPy: ParzenMI.evaluate, value + gradient", lambda: pm_c.evaluate(fc, mc)),
            ("CuPy: C call parzen_evaluate_device + gradient", lambda: _core.parzen_evaluate_device(
                pm_c._handle, n, fc.data.ptr, i16, 0, mc.data.ptr, f32, 0, 1, cstream, rp, gp)),
            ("CuPy: MIFixed.scores(out=)", lambda: mf_c.scores(mc, out=cmi_out)),
            ("CuPy: ParzenMI.evaluate, value", lambda: pm_cv.evaluate(fc, mc, gradient=False)),
            ("CuPy: C call parzen_evaluate_device, value", lambda: _core.parzen_evaluate_device(
                pm_cv._handle, n, fc.data.ptr, i16, 0, mc.data.ptr, f32, 0, 1, cstream, rp, 0)),
            ("CuPy: ParzenMI.evaluate(out=), value + gradient",
             lambda: pm_c.evaluate(fc, mc, out=cpm_out)),
            ("results: cupy.empty (scores)", lambda: cupy.empty((1, 72), cupy.uint8)),
            ("results: cupy.cuda.alloc alone (the pool's allocation, no array)",
             lambda: cupy.cuda.alloc(72)),
            ("results: one cupy.cuda.alloc for both, two cupy.ndarray on it",
             lambda: (lambda mem: (cupy.ndarray((1, 72), cupy.uint8, mem),
                                   cupy.ndarray(mc.shape, cupy.float32, mem + 80)))(
                 cupy.cuda.alloc(80 + mc.size * 4))),

            ("results: cupy.empty (scores, gradient)",
             lambda: (cupy.empty((1, 72), cupy.uint8), cupy.empty(mc.shape, cupy.float32))),
        ]
        if session19:
            pieces.append(("session 19: CuPy ParzenMI(out=) entered below the new dispatch "
                           "(_evaluate_device)",
                           lambda: pm_c._evaluate_device(fc, mc, None, None, True, None,
                                                         cpm_out)))
    except ImportError:
        pass
    torch.cuda.synchronize()
    times = per_call_us([f for _, f in pieces], reps, trials, torch.cuda.synchronize)
    t = dict(zip((name for name, _ in pieces), times))
    print(f"\nThe host cost on CUDA tensors, split ({torch.cuda.get_device_name()}, torch "
          f"{torch.__version__}): each piece alone, {reps} calls x {trials} trials (fastest), "
          "this thread's CPU time per call")
    print("| piece | us/call |")
    print("|---|---|")
    for name, us in t.items():
        print(f"| {name} | {us:.2f} |")
    floor_f = t["floor: empty autograd.Function forward"]
    floor_b = t["floor: empty autograd.Function forward + backward"]
    c15 = t["C call, records (parzen_evaluate_device, session 15)"]
    cnow = t["C call, signed scores (parzen_evaluate_device_signed, now)"]
    print("\n| MattesMI on CUDA tensors | module us | its C call us | floor us | "
          "ours beyond C call and floor us |")
    print("|---|---|---|---|---|")
    for name, c, fl in (("forward, session 15's function", c15, floor_f),
                        ("forward, now", cnow, floor_f),
                        ("forward + backward, session 15's function", c15, floor_b),
                        ("forward + backward, now", cnow, floor_b)):
        mod = t["MattesMI " + name]
        print(f"| {name} | {mod:.2f} | {c:.2f} | {fl:.2f} | {mod - c - fl:.2f} |")
    loops = c_loops(api, mattes_box, mbox, (n, fp, i16, mp, f32, stream, vp, gp),
                    mi_rec.data_ptr(), reps, trials)
    composed = t["floor forward, then the C call (signed), composed"]
    print("\n| MattesMI forward on CUDA tensors, the C call from each side | us per call |")
    print("|---|---|")
    for name, us in (("the module's forward", t["MattesMI forward, now"]),
                     ("PyTorch's floor (an empty autograd.Function)", floor_f),
                     ("the floor, then the C call through the extension (composed)", composed),
                     ("the C call through the extension (METH_FASTCALL)", cnow),
                     ("the C call through ctypes", t["ctypes: dh_parzen_mi_evaluate_device_signed"]),
                     ("the C call from a C loop (bench_host_loop)", loops.get("signed"))):
        print(f"| {name} | {'-' if us is None else f'{us:.2f}'} |")
    print(f"| ours beyond the composed floor + C call | {t['MattesMI forward, now'] - composed:.2f} |")
    print("\n| device-array call | package us | bare C call us | host cost us | results' "
          "allocation us | host cost beyond the allocation us |")
    print("|---|---|---|---|---|---|")
    alloc_s = t["results: torch.empty_like of the plan's template (scores)"]
    alloc_sg = t["results: torch.empty_like of the plan's templates (scores, gradient)"]
    pairs = [("MIFixed.scores(cuda tensor)", "C call: mi_evaluate_device", alloc_s),
             ("MIFixed.scores(cuda tensor, out=)", "C call: mi_evaluate_device", 0.0),
             ("ParzenMI.evaluate(cuda tensors), value", "C call: parzen_evaluate_device, value",
              alloc_s),
             ("ParzenMI.evaluate(cuda tensors), value + gradient",
              "C call, records (parzen_evaluate_device, session 15)", alloc_sg),
             ("ParzenMI.evaluate(cuda tensors, out=), value + gradient",
              "C call, records (parzen_evaluate_device, session 15)", 0.0),
             ("CuPy: MIFixed.scores", "CuPy: C call mi_evaluate_device",
              t.get("results: cupy.empty (scores)")),
             ("CuPy: MIFixed.scores(out=)", "CuPy: C call mi_evaluate_device", 0.0),
             ("CuPy: ParzenMI.evaluate, value", "CuPy: C call parzen_evaluate_device, value",
              t.get("results: cupy.empty (scores)")),
             ("CuPy: ParzenMI.evaluate, value + gradient",
              "CuPy: C call parzen_evaluate_device + gradient",
              t.get("results: cupy.empty (scores, gradient)")),
             ("CuPy: ParzenMI.evaluate(out=), value + gradient",
              "CuPy: C call parzen_evaluate_device + gradient", 0.0)]
    pairs += [("session 19: ParzenMI(out=) entered below the new dispatch (_evaluate_device: "
               "session 18's entry)",
               "C call, records (parzen_evaluate_device, session 15)", 0.0),
              ("session 19: MIFixed.scores(out=) entered below the new dispatch (_scores_device)",
               "C call: mi_evaluate_device", 0.0),
              ("session 19: CuPy ParzenMI(out=) entered below the new dispatch (_evaluate_device)",
               "CuPy: C call parzen_evaluate_device + gradient", 0.0)]
    for pkg, bare, alloc in pairs:
        if pkg in t:
            cost = t[pkg] - t[bare]
            print(f"| {pkg} | {t[pkg]:.2f} | {t[bare]:.2f} | {cost:.2f} | {alloc:.2f} | "
                  f"{cost - alloc:.2f} |", flush=True)
    print("\n| the library call from | mi_evaluate_device us | "
          "parzen_evaluate_device_signed us |")
    print("|---|---|---|")
    print(f"| the extension (METH_FASTCALL) | {t['C call: mi_evaluate_device']:.2f} | "
          f"{cnow:.2f} |")
    print(f"| ctypes | {t['ctypes: dh_mi_evaluate_device']:.2f} | "
          f"{t['ctypes: dh_parzen_mi_evaluate_device_signed']:.2f} |")
    if loops:
        print(f"| a C loop (bench_host_loop) | {loops['mi']:.2f} | {loops['signed']:.2f} |",
              flush=True)


def _c_api():
    """The C API through ctypes: dicomhist._core links the library and exports its functions."""
    api = ctypes.CDLL(_core.__file__)
    p, i, u, z, d = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_size_t, \
        ctypes.c_double
    api.dh_parzen_mi_evaluate_device_signed.argtypes = [p, p, z, p, i, p, p, i, p, u, p, d, p, p]
    api.dh_mi_evaluate_device.argtypes = [p, p, p, i, z, u, p, z, p, p]
    for fn in (api.dh_parzen_mi_evaluate_device_signed, api.dh_mi_evaluate_device):
        fn.restype = i
    return api


def _box(capsule, name):
    """(ctx, object) of one of the extension's capsules (its box: two pointers, core_*.c)."""
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    pair = (ctypes.c_void_p * 2).from_address(get(capsule, name))
    return pair[0], pair[1]


def c_loops(api, pbox, mbox, args, mi_out, reps, trials):
    """The same library calls from bench_host_loop's C loops (no Python between calls): per-call
    thread CPU time, fastest of `trials` loops of `reps` calls each after a synchronization.
    {} where the loop library is not built (bench/libbench_host_loop.so under the build)."""
    path = os.environ.get("DH_BENCH_HOST_LOOP", os.path.join("bench", "libbench_host_loop.so"))
    if not os.path.exists(path):
        print(f"\n(no {path}: the C loop rows are left out)")
        return {}
    lib = ctypes.CDLL(os.path.abspath(path))
    p, i, u, z, d = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_size_t, \
        ctypes.c_double
    lib.dh_bench_loop_parzen_signed.argtypes = [p, p, p, z, p, i, p, i, u, p, d, p, p, i]
    lib.dh_bench_loop_mi_device.argtypes = [p, p, p, p, i, z, u, p, p, i]
    lib.dh_bench_loop_parzen_signed.restype = lib.dh_bench_loop_mi_device.restype = d
    n, fp, ftype, mp, mtype, stream, vp, gp = args
    addr = lambda fn: ctypes.cast(fn, ctypes.c_void_p).value
    best = {"signed": float("inf"), "mi": float("inf")}
    for _ in range(trials):
        torch.cuda.synchronize()
        us = lib.dh_bench_loop_parzen_signed(addr(api.dh_parzen_mi_evaluate_device_signed),
                                             *pbox, n, fp, ftype, mp, mtype, 1, stream, -1.0,
                                             vp, gp, reps)
        torch.cuda.synchronize()
        mi = lib.dh_bench_loop_mi_device(addr(api.dh_mi_evaluate_device), *mbox, mp, mtype, n,
                                         1, stream, mi_out, reps)
        if us < 0 or mi < 0:
            raise RuntimeError("bench_host_loop: a library call failed")
        best["signed"], best["mi"] = min(best["signed"], us), min(best["mi"], mi)
    return best


def main():
    quick = "--quick" in sys.argv[1:]
    if "--host-cost" in sys.argv[1:]:
        return host_cost(2000 if quick else 20000, 5 if quick else 11)
    reps, trials = (20, 5) if quick else (50, 11)
    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"dicomhist {dicomhist.__version__}")
    print("| image | moving | bins | batch | records == CPU | torch MI diff | package evals/s | "
          "raw C call evals/s | binding cost | host us/call pkg / raw | plain torch evals/s | "
          "dicomhist / torch |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    ok = True
    for side, batch in ((256, 1024), (512, 256)):
        for bins in (64, 256):
            for dtype in ("float32", "int16"):
                r = run(side, bins, batch, dtype, reps, trials)
                ok &= r["same_bits"] and r["torch_diff"] < 1e-9
                eps = lambda us: batch / (us * 1e-6)
                print(f"| {side}x{side} | {dtype} | {bins} | {batch} | "
                      f"{'yes' if r['same_bits'] else 'NO'} | {r['torch_diff']:.1e} | "
                      f"{eps(r['pkg'][0]):.3g} | {eps(r['raw'][0]):.3g} | "
                      f"{(r['pkg'][0] / r['raw'][0] - 1) * 100:+.1f}% | "
                      f"{r['pkg'][1]:.1f} / {r['raw'][1]:.1f} | {eps(r['torch'][0]):.3g} | "
                      f"{r['torch'][0] / r['pkg'][0]:.1f}x |", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
