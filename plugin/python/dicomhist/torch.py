# SPDX-License-Identifier: MIT
"""dicomhist.torch: Parzen-window (Mattes) mutual information as a PyTorch module, for
gradient-based registration (a differentiable DRR renderer upstream, an optimizer downstream).

    mi = dicomhist.torch.MattesMI(bins=64, loss=True)     # -MI per batch item
    loss = mi(xray, drr_batch).sum()                       # drr_batch (B, H, W), requires grad
    loss.backward()                                        # d loss / d drr, from the library

Forward: one fixed image against one moving image or a batch (B, *fixed.shape); the score of
each item (MI, NMI, or their negative with loss=True) as float64, computed by the library where
the tensors are (the CPU twin for CPU tensors, the CUDA twin on the current stream for CUDA
tensors: the same bits). Backward: the library's analytic gradient of that score with respect to
every moving pixel, computed in the same call as the forward and kept, times the incoming
gradient: no second pass, no synchronization, no allocation beyond the outputs, so the module
runs inside torch.cuda.graph after one warm-up call. On CUDA tensors the forward's signed scores
and the backward's product are the library's own launches on the current stream (read as a raw
handle), so a call makes no PyTorch operation beyond allocating its outputs. The kinds of the tensors (shapes, dtypes,
device) are checked once and the check kept while they repeat (an optimizer's loop); the C call
runs on the tensors' memory (data_ptr), and a call whose moving images need no gradient skips
the gradient pass.

Reference mode (reference=True): the same definition evaluated in float64 by PyTorch operations
(real-valued B-spline weights, no integer quantization, torch.log), with the same analytic
gradient formula in float64 as a custom backward: what torch.autograd.gradcheck checks against
finite differences, and what the library's float32 gradient and quantized histogram are measured
against (docs/registration.md). Ranges must be given for gradcheck: a range taken from the
data moves with its extreme pixels, which the definition (ITK's) holds constant.
"""
import math

import torch

from . import _core
from .parzen import ParzenMI, _batch_of

_TORCH_TYPES = {torch.float32: _core.SAMPLE_FLOAT32, torch.int16: _core.SAMPLE_INT16}
if hasattr(torch, "uint16"):
    _TORCH_TYPES[torch.uint16] = _core.SAMPLE_UINT16
_COLUMN = {"mi": 0, "nmi": 1}  # float64 fields of the record
# The current stream's cudaStream_t as an int in one C call (what torch.cuda.current_stream()
# .cuda_stream gives after building a Stream object: several us per call, issue 22).
_RAW_STREAM = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _current_stream(index):
    if _RAW_STREAM is not None:
        return _RAW_STREAM(index)
    return torch.cuda.current_stream(index).cuda_stream


def _mask_tensor(m, like, name):
    if m is None:
        return None
    if m.device != like.device:
        raise ValueError(f"{name}: on {m.device}, the images on {like.device}")
    if m.numel() != like.numel():
        raise ValueError(f"{name}: {m.numel()} values, expected {like.numel()}")
    if m.dtype not in (torch.uint8, torch.bool):
        m = m != 0
    return m.contiguous()


class _Plan:
    """What one (fixed, moving) pairing of shapes, dtypes and device needs on every call,
    checked once: an optimizer calls the module with the same kinds of tensors each step, so
    what a call costs beyond the C call is two allocations and the autograd node."""
    __slots__ = ("key", "pixels", "count", "ftype", "mtype", "value_like", "grad_like",
                 "scale_shape", "cuda", "device_index", "native", "engine", "dtype")

    def __init__(self, key, fixed, moving, engine):
        if fixed.device != moving.device:
            raise ValueError(f"fixed on {fixed.device}, moving on {moving.device}: put both on "
                             "one device")
        for name, dtype in (("fixed", fixed.dtype), ("moving", moving.dtype)):
            if dtype not in _TORCH_TYPES and not dtype.is_floating_point:
                raise TypeError(f"{name}: {dtype} is not float32, int16 or uint16")
        self.key = key
        self.pixels = fixed.numel()
        self.count, single = _batch_of(moving.shape, fixed.shape, self.pixels, "moving")
        # other floats are read as float32 (converted on each call)
        self.ftype = _TORCH_TYPES.get(fixed.dtype, _core.SAMPLE_FLOAT32)
        self.mtype = _TORCH_TYPES.get(moving.dtype, _core.SAMPLE_FLOAT32)
        # both read as they are (no conversion): a compact pair without masks goes straight on
        self.native = fixed.dtype in _TORCH_TYPES and moving.dtype in _TORCH_TYPES
        self.engine, self.dtype = engine, moving.dtype
        device = moving.device
        self.cuda = device.type == "cuda"
        self.device_index = device.index if self.cuda else None
        self.value_like = torch.empty(() if single else (self.count,), dtype=torch.float64,
                                      device=device)
        self.grad_like = torch.empty(moving.shape, dtype=torch.float32, device=device)
        self.scale_shape = (self.count,) + (1,) * fixed.dim()

    @staticmethod
    def of(module, fixed, moving):
        """The module's plan for these tensors: the last one when its key matches."""
        key = (fixed.shape, fixed.dtype, moving.shape, moving.dtype, moving.get_device(),
               fixed.get_device())  # device numbers: cheaper than torch.device objects
        plan = module._plan
        if plan is None or plan.key != key:
            plan = module._plan = _Plan(key, fixed, moving, module._engine)
        return plan


def _as_read(x, sample_type):
    """x as a compact tensor of the type the plan reads (a copy only where needed)."""
    if _TORCH_TYPES.get(x.dtype) != sample_type:
        x = x.to(torch.float32)
    return x if x.is_contiguous() else x.contiguous()


def _mask_address(m, like, name):
    """A mask's address (0 for none) and the compact tensor that holds it."""
    if m is None:
        return 0, None
    m = _mask_tensor(m, like, name)
    return m.data_ptr(), m


class _LibraryFunction(torch.autograd.Function):
    """Scores and the gradient from one library call; backward scales the kept gradient."""

    @staticmethod
    def forward(ctx, moving, fixed, fixed_mask, moving_mask, module):
        plan = _Plan.of(module, fixed, moving)
        if plan.native and fixed_mask is None and moving_mask is None and \
                fixed.is_contiguous() and moving.is_contiguous():  # an optimizer's call
            f, m, fmp, fm, mmp, mm = fixed, moving, 0, None, 0, None
        else:
            f, m = _as_read(fixed, plan.ftype), _as_read(moving, plan.mtype)
            fmp, fm = _mask_address(fixed_mask, f, "fixed_mask")
            mmp, mm = _mask_address(moving_mask, m, "moving_mask")
        want_grad = ctx.needs_input_grad[0]  # no gradient pass for a value-only call
        grad = torch.empty_like(plan.grad_like) if want_grad else None
        gptr = grad.data_ptr() if want_grad else 0
        engine, sign = plan.engine, module._sign
        value = torch.empty_like(plan.value_like)
        if plan.cuda:  # enqueued on the current stream: the signed scores written by the library
            with engine._lock:
                _core.parzen_evaluate_device_signed(
                    engine._handle, plan.pixels, f.data_ptr(), plan.ftype, fmp, m.data_ptr(),
                    plan.mtype, mmp, plan.count, _current_stream(plan.device_index), sign,
                    value.data_ptr(), gptr)
            ctx.sign = sign  # the gradient is of the unsigned score: backward signs it
        else:  # the C call straight on the tensors' memory; it writes the signed scores
            with engine._lock:
                _core.parzen_evaluate_pointers(
                    engine._handle, plan.pixels, f.data_ptr(), plan.ftype, fmp, m.data_ptr(),
                    plan.mtype, mmp, plan.count, value.data_ptr(), _COLUMN[module.score], sign,
                    gptr)
            ctx.sign = 1.0  # the gradient is already that of the signed score
        del fm, mm  # the masks' compact copies, kept alive until the call has them
        if want_grad:
            ctx.save_for_backward(grad)
            ctx.plan = plan
        return value

    @staticmethod
    def backward(ctx, grad_output):
        (grad,) = ctx.saved_tensors
        plan = ctx.plan
        if plan.cuda and grad_output.dtype == torch.float64 and grad_output.dim() <= 1:
            # one launch of the library's: grad * (float)(sign * grad_output[item]), the bits of
            # the PyTorch expression below, with no operation of PyTorch's but the output
            g = torch.empty_like(grad)
            stride = grad_output.stride(0) if grad_output.dim() else 0
            with plan.engine._lock:
                _core.parzen_scale_gradient_device(
                    plan.engine._handle, grad.data_ptr(), plan.pixels, plan.count,
                    grad_output.data_ptr(), stride, ctx.sign, g.data_ptr(),
                    _current_stream(plan.device_index))
        else:
            scale = (grad_output * ctx.sign if ctx.sign != 1.0 else grad_output).float()
            g = grad * (scale if scale.dim() == 0 else scale.reshape(plan.scale_shape))
        return (g if g.dtype == plan.dtype else g.to(plan.dtype)), None, None, None, None


class MattesMI(torch.nn.Module):
    """Parzen-window (Mattes) MI between a fixed image and moving images, differentiable with
    respect to the moving images.

    bins: 5..256. score: 'mi' or 'nmi'. loss: return the negative (a loss to minimize).
    fixed_window: 'box' (ITK's) or 'cubic'. range_fixed / range_moving: (lo, hi) in the
    images' values, or None for each image's own min..max over its valid pixels (ITK's choice,
    held constant by the gradient; give the ranges when the images' extremes move, e.g. DRRs in
    a known intensity range). log2: bits instead of nats. reference: evaluate the float64
    PyTorch reference of the same definition instead of the library (slow; for tests).

    forward(fixed, moving, fixed_mask=None, moving_mask=None): fixed (H, W) or any shape,
    moving the same shape or (B, *fixed.shape) on the same device; masks non-zero = valid.
    Returns float64: a 0-d tensor for one image, (B,) for a batch.
    """

    def __init__(self, bins=64, *, score="mi", loss=False, fixed_window="box",
                 range_fixed=None, range_moving=None, log2=False, reference=False):
        super().__init__()
        self.bins, self.score, self.loss, self.fixed_window = int(bins), score, bool(loss), \
            fixed_window
        self.range_fixed, self.range_moving, self.log2 = range_fixed, range_moving, bool(log2)
        self.reference = bool(reference)
        self._sign = -1.0 if loss else 1.0
        self._plan = None  # the last tensors' checked kinds (_Plan)
        # checks every parameter now (and holds the scratch the library reuses)
        self._engine = ParzenMI(bins, fixed_window=fixed_window, score=score,
                                range_fixed=range_fixed, range_moving=range_moving, log2=log2)

    def forward(self, fixed, moving, fixed_mask=None, moving_mask=None):
        if self.reference:
            value = mattes_mi_reference(fixed, moving, self.bins, score=self.score,
                                        fixed_window=self.fixed_window,
                                        range_fixed=self.range_fixed,
                                        range_moving=self.range_moving, fixed_mask=fixed_mask,
                                        moving_mask=moving_mask, log2=self.log2)
            return value * self._sign
        return _LibraryFunction.apply(moving, fixed, fixed_mask, moving_mask, self)

    def extra_repr(self):
        return (f"bins={self.bins}, score={self.score!r}, loss={self.loss}, "
                f"fixed_window={self.fixed_window!r}, reference={self.reference}")


# --- The float64 reference ------------------------------------------------------------------

def _bspline(f):
    """The cubic B-spline's weights of bins i - 1 .. i + 2 and their slopes, at fraction f."""
    g = 1.0 - f
    w = torch.stack([g ** 3 / 6, 2.0 / 3 - f ** 2 + f ** 3 / 2, 2.0 / 3 - g ** 2 + g ** 3 / 2,
                     f ** 3 / 6], -1)
    d = torch.stack([-g ** 2 / 2, 1.5 * f ** 2 - 2 * f, 2 * g - 1.5 * g ** 2, f ** 2 / 2], -1)
    return w, d


def _axis(values, valid, bins, rng):
    """(lo, width, constant) of one image: the given range or its min..max over valid pixels."""
    if rng is not None:
        lo, hi = float(rng[0]), float(rng[1])
    elif bool(valid.any()):
        v = values[valid]
        lo, hi = float(v.min()), float(v.max())
    else:
        lo = hi = 0.0
    constant = hi == lo
    return lo, hi, (1.0 if constant else (hi - lo) / (bins - 4)), constant


def _position(values, lo, hi, width, bins):
    """t = (clamp(v) - lo) / width + 2, i = clamp(floor(t), 2, B - 3), f = t - i; `inside`
    marks values within the range (outside ones sit at an end and move nothing)."""
    c = values.clamp(lo, hi)
    t = (c - lo) / width + 2.0
    i = torch.floor(t).clamp(2, bins - 3)
    return i.long(), t - i, (values >= lo) & (values <= hi)


class _ReferenceFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, moving, fixed, fixed_mask, moving_mask, opts):
        bins, score, cubic, rf, rm, log2 = opts
        f64, m64 = fixed.detach().double().reshape(-1), moving.detach().double()
        pixels = f64.numel()
        count, single = _batch_of(m64.shape, fixed.shape, pixels, "moving")
        m64 = m64.reshape(count, pixels)
        fvalid = torch.isfinite(f64)
        if fixed_mask is not None:
            fvalid &= fixed_mask.reshape(-1) != 0
        flo, fhi, fw, _ = _axis(f64, fvalid, bins, rf)
        fi, ff, _ = _position(torch.where(fvalid, f64, flo), flo, fhi, fw, bins)
        if cubic:
            a, _ = _bspline(ff)
            rows = fi.unsqueeze(-1) - 1 + torch.arange(4, device=fi.device)
        else:
            a = torch.ones(pixels, 1, dtype=torch.float64, device=f64.device)
            rows = fi.unsqueeze(-1)
        values, grads = [], []
        for b in range(count):
            mv = m64[b]
            valid = fvalid & torch.isfinite(mv)
            if moving_mask is not None:
                valid &= moving_mask.reshape(count, pixels)[b] != 0
            lo, hi, w, constant = _axis(mv, valid, bins, rm)
            mi_, mf, inside = _position(torch.where(valid, mv, lo), lo, hi, w, bins)
            bw, bd = _bspline(mf)
            cols = mi_.unsqueeze(-1) - 1 + torch.arange(4, device=mv.device)
            # joint W[row, col] = sum over valid pixels of a_row b_col
            cell = (rows.unsqueeze(-1) * bins + cols.unsqueeze(-2))[valid].reshape(-1)
            weight = (a.unsqueeze(-1) * bw.unsqueeze(-2))[valid].reshape(-1)
            joint = torch.zeros(bins * bins, dtype=torch.float64, device=mv.device)
            joint.index_add_(0, cell, weight)
            joint = joint.reshape(bins, bins)
            n = float(valid.sum())
            if n == 0:
                values.append(torch.tensor(math.nan, dtype=torch.float64))
                grads.append(torch.zeros(pixels, dtype=torch.float64))
                continue
            p = joint / n
            pf, pm = p.sum(1), p.sum(0)

            def entropy(q):
                q = q[q > 0]
                return -(q * torch.log(q)).sum()

            hf, hm, hj = entropy(pf), entropy(pm), entropy(p.reshape(-1))
            mi_value = hf + hm - hj
            nmi_value = (hf + hm) / hj
            unit = 1.0 / math.log(2.0) if log2 else 1.0
            values.append(mi_value * unit if score == "mi" else nmi_value)
            # gradient: d p_ij / d v_k = a_i(k) b'_j(k) / (n w); the cell factors
            ln_p = torch.where(p > 0, torch.log(p.clamp_min(1e-300)), torch.zeros_like(p))
            ln_pm = torch.where(pm > 0, torch.log(pm.clamp_min(1e-300)), torch.zeros_like(pm))
            if score == "mi":
                factor = torch.where(p > 0, ln_p - ln_pm.unsqueeze(0), torch.zeros_like(p)) * unit
            else:
                factor = torch.where(p > 0, ((hf + hm) * ln_p - hj * ln_pm.unsqueeze(0)) / hj ** 2,
                                     torch.zeros_like(p))
            g = torch.zeros(pixels, dtype=torch.float64, device=mv.device)
            if not constant:
                fac = factor.reshape(-1)[rows.unsqueeze(-1) * bins + cols.unsqueeze(-2)]
                per_pixel = (a.unsqueeze(-1) * fac * bd.unsqueeze(-2)).sum((-1, -2)) / (n * w)
                g = torch.where(valid & inside, per_pixel, g)
            grads.append(g)
        value = torch.stack(values).to(moving.device)
        grad = torch.stack(grads).reshape(moving.shape).to(moving.device)
        ctx.save_for_backward(grad)
        return value.reshape(()) if single else value

    @staticmethod
    def backward(ctx, grad_output):
        (grad,) = ctx.saved_tensors
        g = grad_output.reshape((-1,) + (1,) * (grad.dim() - (1 if grad_output.dim() else 0)))
        g = g.reshape(()) if grad_output.dim() == 0 else g
        return (grad * g).to(grad.dtype), None, None, None, None


def mattes_mi_reference(fixed, moving, bins=64, *, score="mi", fixed_window="box",
                        range_fixed=None, range_moving=None, fixed_mask=None, moving_mask=None,
                        log2=False):
    """The float64 reference of the library's definition (see the module's text): MI or NMI per
    item, differentiable in float64 with respect to moving by the analytic formula."""
    if fixed_window not in ("box", "cubic") or score not in ("mi", "nmi"):
        raise ValueError("fixed_window 'box' or 'cubic', score 'mi' or 'nmi'")
    opts = (int(bins), score, fixed_window == "cubic", range_fixed, range_moving, bool(log2))
    return _ReferenceFunction.apply(moving, fixed, fixed_mask, moving_mask, opts)
