# SPDX-License-Identifier: MIT
"""Joint histograms and mutual information (dicomhist.h section 5) for NumPy, CuPy and PyTorch.

Binning is the C API's: an integer image over an inclusive integer range [lo, hi] (default: its
min..max over the pixels that count), bin(v) = floor((v - lo) * B / (hi - lo + 1)); a float32
image over a given float range [lo, hi] with the rounded formula of docs/registration.md.
Entropies and MI are in nats (bits with log2=True); records are bit-identical on CPU and GPU.
"""
import threading

import numpy as np

from . import _arrays, _core, _device_plan
from ._context import device_code

#: One score record (dh_mi_scores), 72 bytes.
SCORE_DTYPE = np.dtype([("mi", "<f8"), ("nmi", "<f8"), ("ecc", "<f8"), ("h_fixed", "<f8"),
                        ("h_moving", "<f8"), ("h_joint", "<f8"), ("n", "<u8"), ("status", "<u4"),
                        ("moving_lo", "<i4"), ("moving_hi", "<i4"), ("reserved", "<u4")])
assert SCORE_DTYPE.itemsize == _core.SCORE_RECORD_SIZE

#: Bits of the status field (dh_mi_flag).
EMPTY, ZERO_JOINT_ENTROPY = _core.MI_EMPTY, _core.MI_ZERO_JOINT_ENTROPY

_DEFAULT_MAX_BATCH = 64
# dtypes the library reads as they are (dh_sample_type)
_FAST_TYPES = {np.dtype(np.uint16): _arrays.SAMPLE_UINT16, np.dtype(np.int16): _arrays.SAMPLE_INT16,
               np.dtype(np.float32): _arrays.SAMPLE_FLOAT32}


def _bins_pair(bins):
    if isinstance(bins, (tuple, list)):
        if len(bins) != 2:
            raise ValueError("bins: one number, or (fixed, moving)")
        return int(bins[0]), int(bins[1])
    return int(bins), int(bins)


def _fixed_range_fields(rng, is_float):
    """The dh_mi_params fields of range_fixed: a float range for a float32 fixed image, else
    an inclusive range of stored values; none without a range (the image's own min..max)."""
    if rng is None:
        return {}
    lo, hi = rng
    if is_float:
        return {"fixed_lo_f32": float(lo), "fixed_hi_f32": float(hi)}
    if int(lo) != lo or int(hi) != hi:
        raise ValueError("range_fixed: an integer image's range is inclusive stored values, "
                         f"not {lo!r}:{hi!r}")
    return {"has_range_fixed": True, "fixed_lo": int(lo), "fixed_hi": int(hi)}


def _moving_range_fields(rng):
    """The dh_mi_params fields of range_moving, which serves integer and float32 moving images
    alike (each reads its kind): always the float range, and the stored values' range when both
    ends are whole numbers."""
    if rng is None:
        return {}
    lo, hi = rng
    fields = {"moving_lo_f32": float(lo), "moving_hi_f32": float(hi)}
    if int(lo) == lo and int(hi) == hi:
        fields.update(has_range_moving=True, moving_lo=int(lo), moving_hi=int(hi))
    return fields


def _finite_range(a, name):
    """min..max of the finite values of a float host array (the default float range)."""
    finite = a[np.isfinite(a)]
    if finite.size == 0:
        raise ValueError(f"{name}: no finite value to take a range from; give the range")
    lo, hi = float(finite.min()), float(finite.max())
    if lo == hi:  # a constant image: one value, one bin (the range must not be empty)
        hi = float(np.nextafter(np.float32(lo), np.float32(np.inf)))
    return lo, hi


class DeviceScores:
    """Score records of a batch on the GPU, as views of one device buffer of the caller's array
    library: float64 mi, nmi, ecc, h_fixed, h_moving, h_joint; int64 n; int32 status, moving_lo,
    moving_hi (each of shape (B,)); `raw` is the (B, 72) byte buffer. Nothing here waits for
    the GPU except to_host()."""

    # field: (element type, column in units of it); each view is made on first use (ten views
    # made per call were most of a device call's host cost, issue 22)
    _FIELDS = {"mi": (np.float64, 0), "nmi": (np.float64, 1), "ecc": (np.float64, 2),
               "h_fixed": (np.float64, 3), "h_moving": (np.float64, 4),
               "h_joint": (np.float64, 5), "n": (np.int64, 6), "status": (np.int32, 14),
               "moving_lo": (np.int32, 15), "moving_hi": (np.int32, 16)}

    def __init__(self, raw):
        self.raw = raw

    def __getattr__(self, name):
        field = DeviceScores._FIELDS.get(name)
        if field is None:
            raise AttributeError(f"DeviceScores has no field {name!r}")
        dtype, column = field
        view = self.raw.view(_arrays.device_dtype(self.raw, dtype))[:, column]
        setattr(self, name, view)  # kept: the next access is a plain attribute
        return view

    def __len__(self):
        return int(self.raw.shape[0])

    def to_host(self):
        """The records as a NumPy structured array (SCORE_DTYPE); waits for the GPU."""
        return np.ascontiguousarray(_arrays.bytes_to_host(self.raw)).view(SCORE_DTYPE).reshape(-1)


class MIFixed:
    """A prepared fixed image: binned once, its entropy cached, resident on the GPU when it runs
    there (device memory kept between calls), then scored against batches of moving images.

    fixed: a 2D (or any-shaped) image, host or device (device arrays are copied to the host once,
    here); mask: optional, same shape, non-zero = use. bins: B or (B_fixed, B_moving), 2..256.
    range_fixed / range_moving: inclusive integer ranges of stored values, or for float32
    images their float ranges (a float32 moving image needs range_moving; a float32 fixed image
    defaults to its finite min..max). log2: bits instead of nats. device: 'auto', 'cpu', 'cuda'.
    max_batch: images per library call (larger batches are split, in order).
    One thread at a time uses an MIFixed (a lock makes others wait).
    """

    def __init__(self, fixed, mask=None, *, bins=64, range_fixed=None, range_moving=None,
                 log2=False, device="auto", max_batch=_DEFAULT_MAX_BATCH):
        host = _arrays.to_host(fixed)
        self.shape = host.shape
        samples, ftype = _arrays.as_samples(host, "fixed")
        if ftype == _arrays.SAMPLE_FLOAT32 and range_fixed is None:
            range_fixed = _finite_range(samples, "fixed")
        bf, bm = _bins_pair(bins)
        fixed_fields = _fixed_range_fields(range_fixed, ftype == _arrays.SAMPLE_FLOAT32)
        moving_fields = _moving_range_fields(range_moving)
        self.range_moving = range_moving
        m = None if mask is None else _arrays.as_mask(_arrays.to_host(mask), host.shape, "mask")
        # dh_mi_params by field name; what is not given keeps dh_mi_params_init's default
        params = {"bins_fixed": bf, "bins_moving": bm, "log2": bool(log2),
                  "device": device_code(device), "max_batch": int(max_batch), **fixed_fields,
                  **moving_fields}
        self._handle = _core.mi_fixed_new(samples, ftype, samples.size, m, **params)
        self.info = _core.mi_fixed_info(self._handle)
        self._pixels = self.info["pixels"]
        self.bins = (bf, bm)
        self.device = self.info["device"]
        self.max_batch = int(max_batch)
        self._moving_range_is_integer = "has_range_moving" in moving_fields
        self._lock = threading.Lock()
        self._plan = None  # the last device call's checked kinds (_device_plan.DevicePlan)

    @property
    def h_fixed(self):
        return self.info["h_fixed"]

    def _check_moving_type(self, mtype):
        """An integer moving image with a range that is not integers would silently fall back
        to its own min..max: refuse it instead."""
        if (mtype != _arrays.SAMPLE_FLOAT32 and self.range_moving is not None
                and not self._moving_range_is_integer):
            raise ValueError(f"range_moving {self.range_moving!r} is not an integer range, "
                             "but the moving images hold integers (stored values)")

    def _check_pixels(self, pixels, name):
        if pixels != self.info["pixels"]:
            raise ValueError(f"{name}: {pixels} pixels per image; the fixed image has "
                             f"{self.info['pixels']}")

    def scores(self, moving, valid=None, *, stream=None, host=False, out=None):
        """Scores one moving image (shape of the fixed image) or a batch (B, ...) of them.

        Host arrays give a NumPy structured array of SCORE_DTYPE records (a 0-d one for a
        single image). CUDA arrays (CuPy, PyTorch) are read in place, on `stream` (default: the
        current stream of the array's library), and give DeviceScores on the same device
        without waiting for the GPU; host=True copies them to the host instead. out: the
        DeviceScores of an earlier call of the same batch size, whose buffer is written again
        (no allocation: what a CUDA graph capture wants)."""
        plan = self._plan
        if plan is not None and stream is None and not host and type(moving) is plan.array_type:
            # an optimizer's step on the kinds of the last device call: straight to the plan
            # (session 19, issue 22's host cost)
            s = plan.stream_for((moving, valid), None)
            if s is not None:
                return self._scores_planned(plan, moving, valid, s, out)[0]
        if _arrays.is_device_array(moving):
            return self._scores_device(moving, valid, stream, host, out)
        return self._scores_host(moving, valid)

    # -- host memory
    def _scores_host(self, moving, valid):
        # The common case first, with nothing to convert or split: one compact NumPy image of
        # a type the library reads, no mask (an optimizer's loop; issue 22's host cost).
        if (valid is None and type(moving) is np.ndarray and moving.shape == self.shape
                and moving.flags.c_contiguous):
            mtype = _FAST_TYPES.get(moving.dtype)
            if mtype is not None:
                self._check_moving_type(mtype)
                rec = np.empty(1, dtype=SCORE_DTYPE)
                pixels = self._pixels
                with self._lock:
                    _core.mi_evaluate(self._handle, moving, mtype, pixels, 1, None, pixels, rec)
                    self._last = (1, self.max_batch)
                return rec[0]
        a, mtype = _arrays.as_samples(moving, "moving")
        self._check_moving_type(mtype)
        single = a.shape == self.shape
        batch = a.reshape((1,) + a.shape) if single else a
        if batch.ndim < 2:
            raise ValueError(f"moving: shape {a.shape} is neither the fixed image's "
                             f"{self.shape} nor a batch of them")
        count, pixels = batch.shape[0], batch[0].size
        self._check_pixels(pixels, "moving")
        v = None
        if valid is not None:
            v = _arrays.as_mask(_arrays.to_host(valid), a.shape, "valid")
        out = np.empty(count, dtype=SCORE_DTYPE)
        flat = batch.reshape(count, pixels)
        vflat = None if v is None else v.reshape(count, pixels)
        with self._lock:
            for start in range(0, count, self.max_batch):
                k = min(self.max_batch, count - start)
                _core.mi_evaluate(self._handle, flat[start:start + k], mtype, pixels, k,
                                  None if vflat is None else vflat[start:start + k], pixels,
                                  out[start:start + k])
            self._last = (count, self.max_batch)
        return out[0] if single else out

    # -- device memory
    def _scores_device(self, moving, valid, stream, host, out):
        if self.device != "cuda":
            raise ValueError("device arrays need a fixed image prepared on the GPU "
                             "(MIFixed(..., device='cuda' or 'auto' on a GPU host))")
        plan = self._plan
        s = None
        if plan is not None and stream is None:  # an optimizer's step: the kinds seen before
            s = plan.stream_for((moving, valid), None)
        if s is not None:
            scores, single = self._scores_planned(plan, moving, valid, s, out)
        else:
            scores, single = self._scores_general(moving, valid, stream, out)
        if host:
            rec = scores.to_host()
            return rec[0] if single else rec
        return scores  # for a single image a batch of one: .mi[0] etc. are its scalars

    def _scores_general(self, moving, valid, stream, out):
        """Any device array on any stream: checked, read through DLPack (or the tensor itself
        on PyTorch's current stream), scored; the checked kinds kept as the plan."""
        s = _arrays.stream_handle(stream, moving)
        view = _arrays.DeviceView(moving, s)
        if view.dtype == np.uint16:
            mtype = _arrays.SAMPLE_UINT16
        elif view.dtype == np.int16:
            mtype = _arrays.SAMPLE_INT16
        elif view.dtype == np.float32:
            mtype = _arrays.SAMPLE_FLOAT32
        else:
            raise TypeError(f"moving: device arrays must be uint16, int16 or float32, not "
                            f"{view.dtype} (convert on the device first)")
        self._check_moving_type(mtype)
        single = view.shape == tuple(self.shape)
        count, pixels, stride = view.image_layout("moving")
        self._check_pixels(pixels, "moving")
        vptr, vstride, vview = 0, 0, None
        if valid is not None:
            vview = _arrays.DeviceView(valid, s)
            if vview.dtype not in (np.uint8, np.bool_) or vview.shape != view.shape:
                raise ValueError("valid: a uint8 or bool device array shaped like moving")
            _, _, vstride = vview.image_layout("valid")
            vptr = vview.ptr
        if out is not None:
            if not isinstance(out, DeviceScores) or len(out) != count:
                raise ValueError(f"out: the DeviceScores of a batch of {count}")
            raw = out.raw
        elif _arrays.is_torch_view(view):  # on the tensor's current stream: PyTorch allocates
            torch = _arrays.torch_module()
            raw = torch.empty((count, SCORE_DTYPE.itemsize), dtype=torch.uint8,
                              device=view.array.device)
        else:
            raw = _arrays.empty_device_bytes(moving, (count, SCORE_DTYPE.itemsize), s)
        # the library calls of the batch: (moving offset, images, valid offset, records offset)
        # in bytes, max_batch images each
        calls = tuple((start * stride * view.dtype.itemsize, min(self.max_batch, count - start),
                       start * vstride, start * SCORE_DTYPE.itemsize)
                      for start in range(0, count, self.max_batch))
        self._evaluate_calls(view.ptr, mtype, stride, vptr, vstride, s,
                             _arrays.device_address(raw), calls, count)
        on_current = stream is None and (_arrays.library_of(moving) != "torch" or (
            _arrays.is_torch_view(view) and (vview is None or _arrays.is_torch_view(vview))))
        del view, vview  # the producers' capsules: the work reading them is enqueued
        plan = _device_plan.make((moving, valid), None,
                                 (mtype, stride, vstride, count, single, calls),
                                 (((count, SCORE_DTYPE.itemsize), "uint8"),), on_current)
        if plan is not None:  # a call the plan cannot serve keeps the last one
            self._plan = plan
        return (out if out is not None else DeviceScores(raw)), single

    def _scores_planned(self, plan, moving, valid, stream, out):
        """A call whose arrays' kinds the plan has checked: addresses, records, the C calls."""
        mtype, stride, vstride, count, single, calls = plan.consts
        address = plan.kinds.address
        if out is None:
            raw = plan.kinds.empty(plan.templates[0])
            scores, base = DeviceScores(raw), address(raw)
        else:
            raw = out.raw if isinstance(out, DeviceScores) else None
            base = plan.own(raw)
            if base is None or raw.shape[0] != count:  # not the plan's library: the full check
                if raw is None or len(out) != count:
                    raise ValueError(f"out: the DeviceScores of a batch of {count}")
                base = _arrays.device_address(raw)
            scores = out
        self._evaluate_calls(address(moving), mtype, stride,
                             0 if valid is None else address(valid), vstride, stream, base,
                             calls, count)
        return scores, single

    def _evaluate_calls(self, mptr, mtype, stride, vptr, vstride, stream, base, calls, count):
        """The library calls of one batch, enqueued in order on `stream`."""
        with self._lock:
            for moff, k, voff, ooff in calls:
                _core.mi_evaluate_device(self._handle, mptr + moff, mtype, stride, k,
                                         vptr + voff if vptr else 0, vstride, stream,
                                         base + ooff)
            self._last = (count, self.max_batch)

    def joint_histogram(self, item=0):
        """The joint histogram (B_fixed, B_moving) uint32 of image `item` of the last batch
        (rows: fixed bins); waits for the GPU when it is there."""
        last = getattr(self, "_last", None)
        if last is None:
            raise ValueError("no evaluation yet")
        count, per_call = last
        if not 0 <= item < count:
            raise IndexError(f"item {item}: the last batch had {count} images")
        if item < (count - 1) // per_call * per_call:
            raise ValueError(f"item {item} was scored in an earlier library call of the batch "
                             f"(max_batch {per_call}); only the last {per_call}-image call's "
                             "histograms are kept")
        out = np.empty(self.bins, dtype=np.uint32)
        with self._lock:
            _core.mi_joint(self._handle, item % per_call, out)
        return out


def _prepare(fixed, moving, bins, range_fixed, range_moving, mask, log2, device, count):
    """A one-shot MIFixed: float32 moving host images without a range get the finite min..max
    of the whole batch; on the device a float range must be given (finding it would wait)."""
    if range_moving is None and not _arrays.is_device_array(moving):
        m = np.asarray(_arrays._detach(moving))
        if m.dtype.kind == "f":
            range_moving = _finite_range(m.astype(np.float32), "moving")
    elif range_moving is None:
        if getattr(moving, "dtype", None) is not None and "float" in str(moving.dtype):
            raise ValueError("float32 device images need range_moving: finding their min..max "
                             "would wait for the GPU")
    if _arrays.is_device_array(moving) and device == "auto":
        device = "cuda"
    return MIFixed(fixed, mask, bins=bins, range_fixed=range_fixed, range_moving=range_moving,
                   log2=log2, device=device, max_batch=max(1, min(count, 4096)))


def _count(moving, fixed_shape):
    shape = tuple(getattr(moving, "shape", np.shape(moving)))
    return 1 if shape == tuple(fixed_shape) else (shape[0] if shape else 1)


def mi_scores(fixed, moving, bins=64, *, range_fixed=None, range_moving=None, mask=None,
              valid=None, log2=False, device="auto", stream=None, host=False):
    """Every score of the C record for one moving image or a batch (see MIFixed.scores).
    Prepares the fixed image on each call (which allocates and, on the GPU, waits): use MIFixed
    in loops."""
    fshape = tuple(getattr(fixed, "shape", np.shape(fixed)))
    f = _prepare(fixed, moving, bins, range_fixed, range_moving, mask, log2, device,
                 _count(moving, fshape))
    return f.scores(moving, valid, stream=stream, host=host)


def mutual_information(fixed, moving, bins=64, *, range_fixed=None, range_moving=None,
                       mask=None, valid=None, log2=False, device="auto", stream=None,
                       host=False):
    """MI of a moving image (a float) or of each image of a batch (B, ...) (an array of B), in
    nats (bits with log2=True), against `fixed`. CUDA arrays give device arrays (a 0-d one for
    one image) unless host=True."""
    rec = mi_scores(fixed, moving, bins, range_fixed=range_fixed, range_moving=range_moving,
                    mask=mask, valid=valid, log2=log2, device=device, stream=stream, host=host)
    if isinstance(rec, DeviceScores):
        single = tuple(getattr(moving, "shape", ())) == \
            tuple(getattr(fixed, "shape", np.shape(fixed)))
        return rec.mi[0] if single else rec.mi
    if rec.ndim == 0:
        return float(rec["mi"])
    return np.ascontiguousarray(rec["mi"])


def _edges(lo, hi, bins, is_float):
    """Bin edges as float64: lo + k (hi - lo + 1) / B for integer ranges, lo + k (hi - lo) / B
    for float ones (the float formula's exact edges, before float32 rounding)."""
    width = (hi - lo) if is_float else (hi - lo + 1)
    return lo + np.arange(bins + 1, dtype=np.float64) * (width / bins)


def joint_histogram(fixed, moving, bins=64, *, range_fixed=None, range_moving=None, mask=None,
                    valid=None, device="auto"):
    """(counts, fixed_edges, moving_edges) like numpy.histogram2d(fixed, moving): counts
    (B_fixed, B_moving) uint32 of one moving image, with the library's binning (each image's
    min..max by default). Host arrays; device arrays are copied."""
    fixed_h, moving_h = _arrays.to_host(fixed), _arrays.to_host(moving)
    if moving_h.shape != fixed_h.shape:
        raise ValueError("joint_histogram: one moving image shaped like the fixed one")
    f = _prepare(fixed_h, moving_h, bins, range_fixed, range_moving, mask, False, device, 1)
    rec = f.scores(moving_h, valid)
    counts = f.joint_histogram(0)
    bf, bm = f.bins
    if f.info["fixed_lo"] == 0 and f.info["fixed_hi"] == 0 and fixed_h.dtype.kind == "f":
        flo, fhi = range_fixed if range_fixed is not None else _finite_range(
            fixed_h.astype(np.float32), "fixed")
        fixed_edges = _edges(float(np.float32(flo)), float(np.float32(fhi)), bf, True)
    else:
        fixed_edges = _edges(f.info["fixed_lo"], f.info["fixed_hi"], bf, False)
    if moving_h.dtype.kind == "f":
        mlo, mhi = f.range_moving
        moving_edges = _edges(float(np.float32(mlo)), float(np.float32(mhi)), bm, True)
    else:
        moving_edges = _edges(int(rec["moving_lo"]), int(rec["moving_hi"]), bm, False)
    return counts, fixed_edges, moving_edges


def normalized_mutual_information(image0, image1, *, bins=100):
    """scikit-image's normalized_mutual_information: (H0 + H1) / H01 over numpy.histogramdd's
    bins (bins equal steps over each image's min..max in the images' common dtype, the last bin
    closed, a constant image widened by 0.5 each side) and its density, whose bin widths differ
    in the last bits of float32 edges: the same numbers as scikit-image, to rounding. The bins
    are found with NumPy exactly as histogramdd finds them, the joint histogram is counted by
    the library (2..256 bins), the entropies follow scikit-image's formula."""
    a, b = np.asarray(_arrays.to_host(image0)), np.asarray(_arrays.to_host(image1))
    if a.ndim != b.ndim:
        raise ValueError(f"Cannot compute NMI of images of different dimensionality: "
                         f"{a.ndim} and {b.ndim}")
    if a.size != b.size:
        raise ValueError("images of different sizes")
    # histogramdd sees both images as columns of one array of their common dtype, as skimage
    # passes them
    sample = np.atleast_2d([a.reshape(-1), b.reshape(-1)]).T
    (ia, ea), (ib, eb) = (_histogramdd_bins(sample[:, 0], bins),
                          _histogramdd_bins(sample[:, 1], bins))
    f = MIFixed(ia, bins=bins, range_fixed=(0, bins - 1), range_moving=(0, bins - 1),
                device="cpu")
    f.scores(ib)
    # numpy's density: counts / bin area / total; scipy's entropy normalizes what it is given
    hist = f.joint_histogram(0).astype(np.float64)
    hist = hist / np.diff(ea).reshape(-1, 1) / np.diff(eb).reshape(1, -1) / hist.sum()
    return (_entropy(hist.sum(axis=0)) + _entropy(hist.sum(axis=1))) / _entropy(hist.reshape(-1))


def _entropy(pk):
    """scipy.stats.entropy(pk): -sum p ln p of pk normalized to sum 1."""
    p = pk / pk.sum()
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def _histogramdd_bins(x, bins):
    """The bin (0..bins-1) numpy.histogramdd gives each value of x over x's own range, and its
    edges: numpy.linspace between min and max in their dtype, searchsorted to the right, the
    last edge closed."""
    lo, hi = x.min(), x.max()
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError(f"autodetected range of [{lo}, {hi}] is not finite")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    edges = np.linspace(lo, hi, bins + 1)
    idx = np.searchsorted(edges, x, side="right")
    idx[x == edges[-1]] -= 1
    return (idx - 1).astype(np.uint16), edges
