# SPDX-License-Identifier: MIT
"""Histogram equalization, CLAHE and window/level (dicomhist.h section 6): the numbers
`dicomhist equalize` and `dicomhist window` write, as arrays of the kind that came in."""
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


def _run(x, bits_stored, fields):
    out = on_device(x, bits_stored, fields)
    if out is not None:
        return out
    source = Input(x, bits_stored)
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
          per_slice=False, bits=None, device="auto", bits_stored=None):
    """Contrast-limited adaptive histogram equalization (docs/equalization.md): one clipped
    histogram and table per tile, each pixel blended between the tables of the nearest tile
    centres, in integers (the CPU and the GPU give the same bits). 2D tiles per slice with
    per_slice, else 3D tiles across the slices. tiles: an int (along rows and columns),
    (rows, columns) or (slices, rows, columns) in array order; default 8 along each axis (at
    most the pixels there); or tile_size, the most pixels per tile (an int: every axis the tiles have). bins:
    per tile over the window, 1..65536; None: one per stored value (full resolution).
    clip_limit, window, bits and device as for equalize. The same numbers as `dicomhist
    equalize --method clahe` writes."""
    return _run(x, bits_stored, clahe_fields(tiles, tile_size, clip_limit, bins, window,
                                             per_slice, bits, device))
