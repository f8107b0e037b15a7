# SPDX-License-Identifier: MIT
"""Parzen-window (Mattes) mutual information and its gradient (dicomhist.h section 5b) for
NumPy, CuPy and PyTorch: one fixed image against one moving image or a batch (B, ...) of them,
scores and d(score)/d(moving pixel) computed where the arrays are (host arrays on the CPU, CUDA
arrays on the GPU, on the caller's stream), the same bits on both.

The definition is ITK's MattesMutualInformationImageToImageMetricv4 (docs/registration.md,
"Parzen-window MI"): B bins (5..256) on both axes with two padding bins at each end, each
image's range given or its min..max over its valid pixels, a cubic B-spline window on the moving
image and a box (or cubic) window on the fixed one. MI is returned as computed; a loss is its
negative (dicomhist.torch.MattesMI(loss=True) does that).
"""
import threading

import numpy as np

from . import _arrays, _core, _device_plan
from .mi import SCORE_DTYPE, DeviceScores

_WINDOWS = {"box": _core.PARZEN_WINDOW_BOX, "cubic": _core.PARZEN_WINDOW_CUBIC}
_SCORES = {"mi": _core.PARZEN_SCORE_MI, "nmi": _core.PARZEN_SCORE_NMI}
_TYPES = {np.dtype(np.uint16): _arrays.SAMPLE_UINT16, np.dtype(np.int16): _arrays.SAMPLE_INT16,
          np.dtype(np.float32): _arrays.SAMPLE_FLOAT32}
_RECORD = SCORE_DTYPE.itemsize


def _range_fields(name, rng):
    if rng is None:
        return {}
    lo, hi = (float(v) for v in rng)
    return {f"has_range_{name}": True, f"{name}_lo": lo, f"{name}_hi": hi}


def _host_image(a, name):
    """A C-contiguous host array of a type the API reads (uint16, int16, float32 as they are;
    other types converted as MIFixed converts them) and its dh_sample_type."""
    if type(a) is np.ndarray and a.flags.c_contiguous:
        t = _TYPES.get(a.dtype)
        if t is not None:
            return a, t
    return _arrays.as_samples(_arrays.to_host(a), name)


def _host_mask(m, size, name):
    if m is None:
        return None
    m = np.asarray(_arrays.to_host(m))
    if m.size != size:
        raise ValueError(f"{name}: {m.size} values, expected {size}")
    if m.dtype == np.uint8 and m.flags.c_contiguous:
        return m
    return np.ascontiguousarray(m != 0, dtype=np.uint8)


class ParzenMI:
    """Checked parameters with the scratch their evaluations reuse (an optimizer creates one and
    calls evaluate every step).

    bins: 5..256 on both axes. fixed_window: 'box' (ITK's) or 'cubic'. score: 'mi' or 'nmi',
    what the gradient is of. range_fixed / range_moving: (lo, hi) in the images' values, or None
    for each image's own min..max over its valid pixels (ITK's choice; the gradient then holds
    the range constant, as ITK's does). log2: bits instead of nats.
    One thread at a time uses a ParzenMI (a lock makes others wait).
    """

    def __init__(self, bins=64, *, fixed_window="box", score="mi", range_fixed=None,
                 range_moving=None, log2=False):
        if fixed_window not in _WINDOWS:
            raise ValueError(f"fixed_window must be 'box' or 'cubic', not {fixed_window!r}")
        if score not in _SCORES:
            raise ValueError(f"score must be 'mi' or 'nmi', not {score!r}")
        self.bins, self.fixed_window, self.score = int(bins), fixed_window, score
        self.log2 = bool(log2)
        self._handle = _core.parzen_new(bins=self.bins, fixed_window=_WINDOWS[fixed_window],
                                        gradient_of=_SCORES[score], log2=self.log2,
                                        **_range_fields("fixed", range_fixed),
                                        **_range_fields("moving", range_moving))
        self._lock = threading.Lock()
        self._plan = None  # the last device call's checked kinds (_device_plan.DevicePlan)

    def evaluate(self, fixed, moving, *, fixed_mask=None, moving_mask=None, gradient=True,
                 stream=None, out=None):
        """Scores one moving image (the fixed image's shape) or a batch (B, *fixed.shape).

        Returns (scores, grad). Host arrays: scores a NumPy structured array of SCORE_DTYPE
        records (0-d for one image), grad float32 shaped like moving, or None with
        gradient=False. CUDA arrays (CuPy, PyTorch; fixed, moving and masks all on the GPU):
        scores a DeviceScores and grad a float32 array of the moving array's library on its
        device, enqueued on `stream` (default: that library's current stream) without waiting.
        out: (scores, grad) of an earlier device call of the same shape, written again (no
        allocation, what a CUDA graph capture wants). Masks: non-zero = valid; fixed_mask shaped
        like fixed, moving_mask like moving."""
        plan = self._plan
        if plan is not None and stream is None and type(moving) is plan.array_type:
            # an optimizer's step on the kinds of the last device call: straight to the plan
            # (no array-kind dispatch below; session 19, issue 22's host cost)
            arrays = (fixed, moving, fixed_mask, moving_mask)
            s = plan.stream_for(arrays, gradient)
            if s is not None:
                return self._evaluate_planned(plan, arrays, gradient, s, out)
        if type(moving) is np.ndarray and type(fixed) is np.ndarray:
            # NumPy images of types the library reads, compact, no masks: straight to the C call
            ftype, mtype = _TYPES.get(fixed.dtype), _TYPES.get(moving.dtype)
            if ftype is not None and mtype is not None and fixed_mask is None and \
                    moving_mask is None and fixed.flags.c_contiguous and \
                    moving.flags.c_contiguous:
                shape = moving.shape
                count, single = (1, True) if shape == fixed.shape else \
                    _batch_of(shape, fixed.shape, fixed.size, "moving")
                rec = np.empty(count, SCORE_DTYPE)
                grad = np.empty(shape, np.float32) if gradient else None
                with self._lock:
                    _core.parzen_evaluate(self._handle, fixed.size, fixed, ftype, None, moving,
                                          mtype, None, count, rec, grad)
                return (rec[0] if single else rec), grad
        elif _arrays.is_device_array(moving):
            return self._evaluate_device(fixed, moving, fixed_mask, moving_mask, gradient,
                                         stream, out)
        f, ftype = _host_image(fixed, "fixed")
        m, mtype = _host_image(moving, "moving")
        pixels = f.size
        count, single = _batch_of(m.shape, f.shape, pixels, "moving")
        fm = _host_mask(fixed_mask, pixels, "fixed_mask")
        mm = _host_mask(moving_mask, m.size, "moving_mask")
        rec = np.empty(count, SCORE_DTYPE)
        grad = np.empty(m.shape, np.float32) if gradient else None
        with self._lock:
            _core.parzen_evaluate(self._handle, pixels, f, ftype, fm, m, mtype, mm, count, rec,
                                  grad)
        return (rec[0] if single else rec), grad

    def _evaluate_device(self, fixed, moving, fixed_mask, moving_mask, gradient, stream, out):
        arrays = (fixed, moving, fixed_mask, moving_mask)
        plan = self._plan
        if plan is not None and stream is None:  # an optimizer's step: the kinds seen before
            s = plan.stream_for(arrays, gradient)
            if s is not None:
                return self._evaluate_planned(plan, arrays, gradient, s, out)
        s = _arrays.stream_handle(stream, moving)
        fv, mv = _arrays.DeviceView(fixed, s), _arrays.DeviceView(moving, s)
        ftype, mtype = _device_type(fv, "fixed"), _device_type(mv, "moving")
        pixels = _compact_size(fv, "fixed")
        count, _single = _batch_of(mv.shape, fv.shape, pixels, "moving")
        _compact_size(mv, "moving")
        views = [fv, mv]
        fmp = mmp = 0
        if fixed_mask is not None:
            views.append(_mask_view(fixed_mask, s, fv.shape, "fixed_mask"))
            fmp = views[-1].ptr
        if moving_mask is not None:
            views.append(_mask_view(moving_mask, s, mv.shape, "moving_mask"))
            mmp = views[-1].ptr
        if out is not None:
            scores, grad = out
            _check_out(scores, grad, count, mv.shape, gradient)
        elif _arrays.is_torch_view(mv):  # on the tensor's current stream: PyTorch allocates
            torch = _arrays.torch_module()
            dev = mv.array.device
            scores = DeviceScores(torch.empty((count, _RECORD), dtype=torch.uint8, device=dev))
            grad = torch.empty(mv.shape, dtype=torch.float32, device=dev) if gradient else None
        else:
            raw = _arrays.empty_device_bytes(moving, (count, _RECORD), s)
            scores = DeviceScores(raw)
            grad = None
            if gradient:
                g = _arrays.empty_device_bytes(moving, (count * pixels * 4,), s)
                grad = g.view(_arrays.device_dtype(g, np.float32)).reshape(mv.shape)
        gptr = _arrays.device_address(grad) if gradient else 0
        with self._lock:
            _core.parzen_evaluate_device(self._handle, pixels, fv.ptr, ftype, fmp, mv.ptr, mtype,
                                         mmp, count, s, _arrays.device_address(scores.raw), gptr)
        # the plan serves calls on the current stream (PyTorch: read from the tensors directly)
        on_current = stream is None and (_arrays.library_of(moving) != "torch" or
                                         all(_arrays.is_torch_view(v) for v in views))
        del views, fv, mv  # the producers' capsules: the work reading them is enqueued
        plan = _device_plan.make(
            arrays, gradient, (pixels, ftype, mtype, count, tuple(moving.shape)),
            (((count, _RECORD), "uint8"), (tuple(moving.shape), "float32")), on_current)
        if plan is not None:  # a call the plan cannot serve keeps the last one
            self._plan = plan
        return scores, grad

    def _evaluate_planned(self, plan, arrays, gradient, stream, out):
        """A call whose arrays' kinds the plan has checked: addresses, results, the C call."""
        pixels, ftype, mtype, count, shape = plan.consts
        kinds = plan.kinds
        address = kinds.address
        fixed, moving, fixed_mask, moving_mask = arrays
        if out is None:
            if gradient and plan.pair is not None:
                raw, grad = kinds.empty_pair(plan.pair)
            else:
                raw = kinds.empty(plan.templates[0])
                grad = kinds.empty(plan.templates[1]) if gradient else None
            scores, sp, gp = DeviceScores(raw), address(raw), address(grad) if gradient else 0
        else:
            scores, grad = out
            raw = getattr(scores, "raw", None)
            sp = plan.own(raw)
            gp = plan.own(grad) if gradient else 0
            # arrays of the plan's library (the usual out=): their sizes compared in place
            if sp is None or gp is None or raw.shape[0] != count or \
                    (gradient and grad.shape != shape):
                _check_out(scores, grad, count, shape, gradient)
                sp = _arrays.device_address(scores.raw)
                gp = _arrays.device_address(grad) if gradient else 0
        with self._lock:
            _core.parzen_evaluate_device(
                self._handle, pixels, address(fixed), ftype,
                0 if fixed_mask is None else address(fixed_mask), address(moving), mtype,
                0 if moving_mask is None else address(moving_mask), count, stream, sp, gp)
        return scores, grad


def _check_out(scores, grad, count, shape, gradient):
    """out=: the (scores, grad) of an earlier call of the same batch."""
    if len(scores) != count or (gradient and tuple(grad.shape) != tuple(shape)):
        raise ValueError(f"out: the (scores, grad) of a batch of {count} images shaped "
                         f"{tuple(shape)}")


def _batch_of(shape, fixed_shape, pixels, name):
    """(count, single) of moving images shaped like the fixed image or (B, *fixed shape)."""
    shape, fixed_shape = tuple(shape), tuple(fixed_shape)
    if shape == fixed_shape:
        return 1, True
    if len(shape) == len(fixed_shape) + 1 and shape[1:] == fixed_shape and shape[0] >= 1:
        return int(shape[0]), False
    raise ValueError(f"{name}: shape {shape} is neither the fixed image's {fixed_shape} nor a "
                     f"batch (B, {', '.join(map(str, fixed_shape))}) of them")


def _device_type(view, name):
    t = _TYPES.get(view.dtype)
    if t is None:
        raise TypeError(f"{name}: device arrays must be uint16, int16 or float32, not "
                        f"{view.dtype} (convert on the device first)")
    return t


def _compact_size(view, name):
    """The element count of a device array that is compact row-major (anything else would need
    a copy: refused)."""
    expect, size = 1, 1
    for d, st in zip(reversed(view.shape), reversed(view.strides)):
        if d > 1 and st != expect:
            raise ValueError(f"{name}: must be compact (row-major) in memory; call "
                             ".contiguous() (PyTorch) or cupy.ascontiguousarray first")
        expect *= d
        size *= d
    return size


def _mask_view(mask, stream, shape, name):
    v = _arrays.DeviceView(mask, stream)
    if v.dtype not in (np.uint8, np.bool_) or v.shape != tuple(shape):
        raise ValueError(f"{name}: a uint8 or bool device array of shape {tuple(shape)}")
    _compact_size(v, name)
    return v


def parzen_mi(fixed, moving, bins=64, *, score="mi", gradient=False, fixed_window="box",
              range_fixed=None, range_moving=None, fixed_mask=None, moving_mask=None,
              log2=False, stream=None):
    """The Parzen-window MI (score='mi') or NMI (score='nmi') of a moving image against `fixed`
    (a float, or for a CUDA array a 0-d float64 array on its device), or of each image of a batch
    (B, ...) (an array of B); with gradient=True, (value, d value / d moving) with the gradient
    float32 shaped like moving, on the moving array's device. One call prepares its parameters
    anew: use ParzenMI in loops."""
    engine = ParzenMI(bins, fixed_window=fixed_window, score=score, range_fixed=range_fixed,
                      range_moving=range_moving, log2=log2)
    scores, grad = engine.evaluate(fixed, moving, fixed_mask=fixed_mask, moving_mask=moving_mask,
                                   gradient=gradient, stream=stream)
    if isinstance(scores, DeviceScores):
        value = getattr(scores, score)
        if tuple(getattr(moving, "shape", ())) == tuple(getattr(fixed, "shape", ())):
            value = value[0]
    else:
        value = float(scores[score]) if scores.ndim == 0 else np.ascontiguousarray(scores[score])
    return (value, grad) if gradient else value


def parzen_mi_value_and_grad(fixed, moving, bins=64, **kwargs):
    """(value, gradient) of parzen_mi(..., gradient=True): the function a CuPy (or NumPy)
    optimizer calls each step; the gradient is d value / d moving pixel, on moving's device."""
    return parzen_mi(fixed, moving, bins, gradient=True, **kwargs)
