# SPDX-License-Identifier: MIT
"""clahe_numpy.py: CLAHE in NumPy, written from docs/equalization.md ("Adaptive equalization
(CLAHE)") for the command's tests: even tiles floor(i n / t), one histogram per tile over the
window, the contrast limit and its redistribution, the equalization table, and the blend between
doubled tile centres in exact integers (Python integers where 64 bits could overflow), rounded
half up once. Not a copy of the C code: vectorized over pixels, tables built bin by bin.
"""
import numpy as np


def tile_starts(n, tiles):
    return [i * n // tiles for i in range(tiles + 1)]


def axis_weights(n, tiles):
    """Per pixel of an axis: (i0, i1, w1, den) as arrays; the pixel takes (den - w1) / den of
    tile i0 and w1 / den of tile i1, clamped to the border tile outside the first and last
    centres."""
    s = tile_starts(n, tiles)
    centres = np.array([s[i] + s[i + 1] for i in range(tiles)], dtype=np.int64)
    p = 2 * np.arange(n, dtype=np.int64) + 1
    lo = np.searchsorted(centres, p, side="right") - 1
    inside = (lo >= 0) & (lo < tiles - 1)
    i0 = np.clip(lo, 0, tiles - 1)
    i1 = np.where(inside, lo + 1, i0)
    safe = np.clip(lo, 0, max(tiles - 2, 0))
    den = np.where(inside, centres[np.minimum(safe + 1, tiles - 1)] - centres[safe], 1)
    w1 = np.where(inside, p - centres[safe], 0)
    return i0, i1, w1, den


def clip_histogram(h, x):
    """The contrast limit of docs/equalization.md over the bins of h (int64 array)."""
    h = h.copy()
    present = np.nonzero(h)[0]
    if x <= 0 or present.size == 0:
        return h
    first, last = int(present[0]), int(present[-1])
    span = last - first + 1
    count = int(h.sum())
    limit = max(1, int(x * count / span))
    seg = h[first:last + 1]
    excess = int(np.maximum(seg - limit, 0).sum())
    seg = np.minimum(seg, limit) + excess // span
    rest = excess % span
    if rest:
        step = max(span // rest, 1)
        idx = np.arange(0, span, step)[:rest]
        seg[idx] += 1
    h[first:last + 1] = seg
    return h


def table(h, levels, clip):
    """The equalization table of one tile's histogram h (bins entries)."""
    bins = h.size
    n = int(h.sum())
    if n == 0:  # no pixel in the window: the flat histogram's ramp
        if bins == 1:
            return np.zeros(1, dtype=np.int64)
        return np.arange(bins, dtype=np.int64) * (levels - 1) // (bins - 1)
    first = int(np.nonzero(h)[0][0])
    c = clip_histogram(h, clip)
    cdf = np.cumsum(c)
    cdf_min = int(c[first])
    if n == cdf_min:
        return np.zeros(bins, dtype=np.int64)
    out = [(int(v) - cdf_min) * (levels - 1) // (n - cdf_min) if v > cdf_min else 0 for v in cdf]
    return np.array(out, dtype=np.int64)


def clahe_unit(vol, tiles, lo, hi, bins, levels, clip):
    """CLAHE of one unit, vol (nz, ny, nx) of stored values, tiles (tz, ty, tx), window lo..hi
    (stored values, already clamped to the representable ones), bins (0: one per value)."""
    nz, ny, nx = vol.shape
    tz, ty, tx = tiles
    width = hi - lo + 1
    b = width if bins == 0 or bins > width else bins
    inside = (vol >= lo) & (vol <= hi)
    binned = np.where(inside, (vol.astype(np.int64) - lo) * b // width, 0)
    sz, sy, sx = tile_starts(nz, tz), tile_starts(ny, ty), tile_starts(nx, tx)
    tabs = np.zeros((tz, ty, tx, b), dtype=np.int64)
    for iz in range(tz):
        for iy in range(ty):
            for ix in range(tx):
                part = (slice(sz[iz], sz[iz + 1]), slice(sy[iy], sy[iy + 1]),
                        slice(sx[ix], sx[ix + 1]))
                h = np.bincount(binned[part][inside[part]], minlength=b).astype(np.int64)
                tabs[iz, iy, ix] = table(h, levels, clip)
    az, ay, ax = axis_weights(nz, tz), axis_weights(ny, ty), axis_weights(nx, tx)
    z = np.arange(nz)[:, None, None]
    y = np.arange(ny)[None, :, None]
    x = np.arange(nx)[None, None, :]
    wide = nz > 1 and tz > 1  # the third product can pass 64 bits: Python integers
    num = 0
    for dz in (0, 1):
        for dy in (0, 1):
            for dx in (0, 1):
                kz, ky, kx = az[dz][z], ay[dy][y], ax[dx][x]
                wz = az[2][z] if dz else az[3][z] - az[2][z]
                wy = ay[2][y] if dy else ay[3][y] - ay[2][y]
                wx = ax[2][x] if dx else ax[3][x] - ax[2][x]
                t = tabs[kz, ky, kx, binned]
                if wide:
                    term = (wz.astype(object) * (wy * wx)) * t.astype(object)
                else:
                    term = wz * wy * wx * t
                num = num + term
    den = az[3][z] * ay[3][y] * ax[3][x]
    if wide:
        den = den.astype(object)
    out = ((2 * num + den) // (2 * den)).astype(np.int64)
    out = np.where(vol < lo, 0, np.where(vol > hi, levels - 1, out))
    return out.astype(np.uint16)


def clahe(data, bits, signed, tiles, per_slice, bins=0, levels=None, clip=0.0, window=None):
    """CLAHE of data (slices, rows, columns) of stored values with BitsStored bits, per slice
    (tiles (ty, tx)) or per volume (tiles (tz, ty, tx)), over the whole range or window
    (lo, hi) in stored values."""
    base = -(1 << (bits - 1)) if signed else 0
    top = base + (1 << bits) - 1
    lo, hi = window if window else (base, top)
    lo, hi = max(lo, base), min(hi, top)
    levels = levels or (1 << bits)
    if per_slice:
        return np.stack([clahe_unit(s[None], (1,) + tuple(tiles[-2:]), lo, hi, bins, levels,
                                    clip)[0] for s in data])
    return clahe_unit(data, tiles, lo, hi, bins, levels, clip)
