# SPDX-License-Identifier: MIT
"""Histograms of volumes and integer arrays with the library's semantics (dicomhist.h section 4):
half-open range [lo, hi), bin = floor((v - lo) * bins / (hi - lo)) computed exactly, values
outside counted as underflow and overflow (never folded into the edge bins)."""
import numpy as np

from . import _core
from ._context import ctx, device_code
from .volume import as_volume

_UNITS = {"stored": _core.UNITS_STORED, "modality": _core.UNITS_MODALITY}


class Histogram(tuple):
    """(counts, edges) like numpy.histogram, with the rest of the result as attributes:
    underflow, overflow, total (ints; per slice arrays with per_slice=True), units, device."""

    def __new__(cls, counts, edges, **extra):
        self = super().__new__(cls, (counts, edges))
        for key, value in extra.items():
            setattr(self, key, value)
        return self

    @property
    def counts(self):
        return self[0]

    @property
    def edges(self):
        return self[1]


def histogram(x, bins=None, range=None, units="stored", per_slice=False, device="auto"):
    """The histogram of a Volume or a 2D/3D integer array (see volume.from_array).

    bins: 1..65536, default one per possible stored value (2^BitsStored); range: (lo, hi) in
    `units`, half-open, default the full representable range; units: 'stored' or 'modality'
    (slope * stored + intercept); per_slice: counts of shape (slices, bins) instead of (bins,).
    Returns Histogram (counts int64, edges float64 of bins + 1)."""
    vol, _ = as_volume(x)
    if units not in _UNITS:
        raise ValueError(f"units must be 'stored' or 'modality', not {units!r}")
    # dh_hist_params by field name; what is not given keeps dh_hist_params_init's default
    params = {"units": _UNITS[units], "per_slice": bool(per_slice), "device": device_code(device)}
    if bins is not None:
        params["bins"] = int(bins)
    if range is not None:
        params.update(has_range=True, lo=float(range[0]), hi=float(range[1]))
    r = _core.histogram(ctx(), vol._handle, **params)
    edges = np.frombuffer(r["edges"], dtype=np.float64)
    if per_slice:
        counts = np.frombuffer(r["slice_counts"], dtype=np.uint64).astype(np.int64).reshape(
            r["slices"], r["bins"])
        under = np.frombuffer(r["slice_underflow"], dtype=np.uint64).astype(np.int64)
        over = np.frombuffer(r["slice_overflow"], dtype=np.uint64).astype(np.int64)
        total = np.frombuffer(r["slice_total"], dtype=np.uint64).astype(np.int64)
    else:
        counts = np.frombuffer(r["counts"], dtype=np.uint64).astype(np.int64)
        under, over, total = r["underflow"], r["overflow"], r["total"]
    return Histogram(counts, edges, underflow=under, overflow=over, total=total, units=units,
                     device=r["device"], volume_underflow=r["underflow"],
                     volume_overflow=r["overflow"], volume_total=r["total"])
