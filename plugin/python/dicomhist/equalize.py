# SPDX-License-Identifier: MIT
"""Histogram equalization, CLAHE and window/level (dicomhist.h section 6): the numbers
`dicomhist equalize` and `dicomhist window` write, as arrays of the kind that came in."""
import numpy as np

from . import _core
from ._context import ctx
from ._enhance import Input, axes, common_fields, function_code, on_device


def equalize_fields(window=None, clip_limit=None, per_slice=False, bits=None, device="auto"):
    fields = {"operation": _core.EQ_EQUALIZE, **common_fields(window, per_slice, bits, device)}
    if clip_limit is not None:
        fields["clip_limit"] = float(clip_limit)
    return fields


def window_fields(window, function="linear", per_slice=False, bits=None, device="auto"):
    if window is None:
        raise ValueError("window: a window is needed ('C:W', 'file', 'minmax', 'percentile:P' "
                         "or (lo, hi)), as for `dicomhist window --window`")
    return {"operation": _core.EQ_WINDOW_LEVEL, "voi": function_code(function),
            **common_fields(window, per_slice, bits, device)}


def clahe_fields(tiles=None, tile_size=None, clip_limit=None, bins=None, window=None,
                 per_slice=False, bits=None, device="auto"):
    fields = equalize_fields(window, clip_limit, per_slice, bits, device)
    fields["method"] = _core.EQ_METHOD_CLAHE
    t = axes(tiles, "tiles", "tile counts")
    if isinstance(t, int):  # along rows and columns; slices keep the default (8, at most all)
        t = (t, t, 0)
    s = axes(tile_size, "tile_size", "sizes in pixels")
    if isinstance(s, int):  # along every axis of the tiles, as `--tile-size N`
        s = (s, s, 0 if per_slice else s)
    if t is not None:
        fields["tiles"] = t
    if s is not None:
        fields["tile_size"] = s
    if bins is not None:
        if int(bins) < 1:
            raise ValueError(f"bins: 1..65536 (None: one per stored value), not {bins!r}")
        fields["bins"] = int(bins)
    return fields


def skimage_words(host):
    """An 8-bit array as the uint16 array scikit-image's img_as_uint makes of it (uint8 x 257;
    int8 x 16513 // 32, negatives 0), which the library then takes as it is: the package holds
    every array in 16-bit words, where an 8-bit dtype would otherwise be lost."""
    if host.dtype == np.uint8:
        return host.astype(np.uint16) * np.uint16(257)
    if host.dtype == np.int8:
        return np.maximum(host.astype(np.int32) * 16513 // 32, 0).astype(np.uint16)
    return host


def skimage_fields(kernel_size=None, clip_limit=None, nbins=None, per_slice=False, bits=None,
                   device="auto"):
    """The scikit-image-compatible mode (dh_equalize_params_skimage): kernel_size an int (every
    axis of the image) or one per axis in array order, None its default; clip_limit its
    fraction (default 0.01); nbins (default 256); 16-bit output unless bits says otherwise."""
    fields = equalize_fields(None, 0.01 if clip_limit is None else clip_limit, per_slice,
                             16 if bits is None else bits, device)
    fields["method"] = _core.EQ_METHOD_CLAHE_SKIMAGE
    fields["window"] = _core.WINDOW_MINMAX
    s = axes(kernel_size, "tile_size", "kernel sizes in pixels")
    if isinstance(s, int):  # as equalize_adapthist broadcasts an int to every axis
        s = (s, s, 0 if per_slice else s)
    if s is not None:
        fields["tile_size"] = s
    if nbins is not None:
        if not 1 <= int(nbins) <= 65536:
            raise ValueError(f"bins: scikit-image's nbins, 1..65536, not {nbins!r}")
        fields["bins"] = int(nbins)
    else:
        fields["bins"] = 256
    return fields


def _run(x, bits_stored, fields, convert=None):
    out = on_device(x, bits_stored, fields)
    if out is not None:
        return out
    source = Input(x, bits_stored, convert)
    r = _core.equalize(ctx(), source.volume._handle, **fields)
    return source.give_back(r["data"], r["slices"], r["rows"], r["columns"])


def equalize(x, window=None, clip_limit=None, per_slice=False, bits=None, device="auto",
             bits_stored=None):
    """Histogram equalization of a Volume or a 2D/3D integer array (NumPy, CuPy or PyTorch):
    new stored values 0 .. 2^bits - 1 (uint16; bits 8, 12 or 16, default the input's
    BitsStored) of the input's shape, per volume or per slice, inside a window (modality
    units), optionally contrast-limited (clip_limit > 0). The same numbers as `dicomhist
    equalize` writes; a CuPy or PyTorch array gives the same kind on its device."""
    return _run(x, bits_stored, equalize_fields(window, clip_limit, per_slice, bits, device))


def window(x, window, function="linear", per_slice=False, bits=None, device="auto",
           bits_stored=None):
    """Window/level: DICOM's VOI function ('linear', 'linear-exact' or 'sigmoid') over the
    window, onto 0 .. 2^bits - 1, truncated; the window in the command's spellings ('C:W',
    'file', 'minmax', 'percentile:P', or (lo, hi) for --window-range), one for the volume or
    one per slice. The same numbers as `dicomhist window` writes."""
    return _run(x, bits_stored, window_fields(window, function, per_slice, bits, device))


def clahe(x, tiles=None, tile_size=None, clip_limit=None, bins=None, window=None,
          per_slice=False, bits=None, device="auto", bits_stored=None, skimage=False):
    """Contrast-limited adaptive histogram equalization (docs/equalization.md): one clipped
    histogram and table per tile, each pixel blended between the tables of the nearest tile
    centres, in integers (the CPU and the GPU give the same bits). 2D tiles per slice with
    per_slice, else 3D tiles across the slices. tiles: an int (along rows and columns),
    (rows, columns) or (slices, rows, columns) in array order; default 8 along each axis (at
    most the pixels there); or tile_size, the most pixels per tile (an int: every axis the tiles have). bins:
    per tile over the window, 1..65536; None: one per stored value (full resolution).
    clip_limit, window, bits and device as for equalize. The same numbers as `dicomhist
    equalize --method clahe` writes.

    skimage=True: scikit-image's exposure.equalize_adapthist(x, kernel_size=tile_size,
    clip_limit=clip_limit or 0.01, nbins=bins or 256) computed as it computes it (its numbers:
    the result is round(its float64 result * (2^bits - 1)), bits 16 by default), per slice with
    per_slice, else one n-dimensional call; tiles and window do not apply; on the CPU, the
    result given back on x's device. The same numbers as `dicomhist equalize --skimage`."""
    if skimage:
        if tiles is not None or window is not None:
            raise ValueError("skimage=True takes tile_size (its kernel_size), not tiles or window")
        if getattr(x, "ndim", None) == 2:  # scikit-image's 2D algorithm: no slice axis
            per_slice = True
        return _run(x, bits_stored, skimage_fields(tile_size, clip_limit, bins, per_slice, bits,
                                                   device), skimage_words)
    return _run(x, bits_stored, clahe_fields(tiles, tile_size, clip_limit, bins, window,
                                             per_slice, bits, device))
