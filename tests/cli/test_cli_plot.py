#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_cli_plot.py: `dicomhist histogram --plot FILE.svg|FILE.png` read back.

For each case the plot's SVG is parsed (plot_svg.py) and compared with what the documented
geometry makes of the counts of `histogram --json` with the same options:
- every bar (linear, and the log-scale silhouette) at the right place and height;
- the percentile lines at the left edge of the bin holding each nearest-rank percentile;
- the window band at the window's ends (a center/width window by DICOM's LINEAR edges);
- the equalization curve through points of a table recomputed here with numpy from the
  documented formula over pydicom's pixels, and the window curve through DICOM's LINEAR VOI
  function;
- per-slice small multiples: one panel per slice, each drawn from that slice's counts;
- the PNG decodes (Pillow), has the plot's size, and its bars are painted in the bar colour.
Cases: sample_data, every real file of ../shared/dicom (top level and cr/) and its series
folders; usage errors. Real files are skipped (exit 77 for the whole run only when nothing
else ran) where absent.

Usage: test_cli_plot.py DICOMHIST_BINARY SHARED_DICOM_DIR
"""
import bisect
import glob
import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_testlib as t  # noqa: E402
import plot_svg as ps  # noqa: E402

SAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sample_data")


def histogram_json(c, binary, path, *args):
    r = t.run(binary, "histogram", "--json", *args, path)
    if not c.equal(r.rc, 0, f"{r}: exit status ({r.err.strip()})"):
        return None
    return r.json_lines()[0]


def plot(c, binary, tmp, path, name, *args):
    out = os.path.join(tmp, name)
    r = t.run(binary, "histogram", "--plot", out, *args, path)
    if not c.equal(r.rc, 0, f"{r}: exit status ({r.err.strip()})"):
        return None
    return out


def check_bars(c, plot, h, what, window=None, scale="both"):
    first, count = ps.plotted_bins(h["counts"], *h["range"], window)
    if scale != "log":
        ps.compare_rects(c, plot.rects(ps.COLOURS["linear"]),
                         ps.expected_bars(h["counts"], first, count), f"{what}: linear bars")
    if scale != "linear":
        ps.compare_rects(c, plot.rects(ps.COLOURS["log"]),
                         ps.expected_bars(h["counts"], first, count, log=True),
                         f"{what}: log-scale bars")
    want = []
    for k in ps.percentile_bins(h["counts"], h["underflow"], h["total"]):
        if first <= k < first + count:
            want.append(ps.bin_x(k, first, count))
    got = plot.vertical_lines(ps.COLOURS["percentile"])
    c.check(len(got) == len(want) and all(abs(a - b) < ps.TOL for a, b in zip(got, sorted(want))),
            f"{what}: percentile lines at {got}, want {sorted(want)}")
    frames = plot.frames()
    c.check(frames and max(abs(a - b) for a, b in zip(frames[0], (
        ps.AREA[0], ps.AREA[1], ps.AREA[0] + ps.AREA[2], ps.AREA[1] + ps.AREA[3]))) < ps.TOL,
        f"{what}: the plot area's frame at the documented place ({frames[:1]})")
    return first, count


def check_file(c, binary, tmp, path, what):
    """Default bins, both scales: bars, percentiles; and the PNG of the same."""
    h = histogram_json(c, binary, path)
    svg = plot(c, binary, tmp, path, "p.svg")
    if h is None or svg is None:
        return
    p = ps.Plot(open(svg).read())
    c.equal((p.width, p.height), (ps.WIDTH, ps.HEIGHT), f"{what}: SVG size")
    first, count = check_bars(c, p, h, what)
    png = plot(c, binary, tmp, path, "p.png", "--plot-scale", "linear")
    if png:
        check_png(c, png, h, first, count, what)


def check_png(c, path, h, first, count, what):
    from PIL import Image
    with Image.open(path) as im:
        im.load()
        c.equal(im.size, (ps.WIDTH, ps.HEIGHT), f"{what}: PNG size")
        rgb = im.convert("RGB")
        bars = ps.expected_bars(h["counts"], first, count)
        # Lines drawn over the bars (the frame, the percentiles) are not the bars' colour.
        lines = [ps.AREA[0], ps.AREA[0] + ps.AREA[2]] + [
            ps.bin_x(k, first, count)
            for k in ps.percentile_bins(h["counts"], h["underflow"], h["total"])]
        tall = sorted((b for b in bars if b[3] - b[1] >= 3 and
                       all(x < b[0] - 2 or x > b[2] + 2 for x in lines)),
                      key=lambda b: b[1])[:5]
        want = ps.COLOURS["linear"]
        want = ((want >> 16) & 255, (want >> 8) & 255, want & 255)
        # A pixel a bar covers whole is the bar colour; a narrower bar blends it with white
        # (antialiasing), which still leaves the pixel clearly blue.
        good = 0
        for x0, y0, x1, y1 in tall:
            y = int(y1 - 2)
            if math.ceil(x0) + 1 <= x1:
                px = rgb.getpixel((math.ceil(x0), y))
                good += max(abs(a - b) for a, b in zip(px, want)) <= 40
            else:
                px = rgb.getpixel((int((x0 + x1) / 2), y))
                good += px[2] - px[0] >= 20
        c.check(len(tall) > 0 and good == len(tall),
                f"{what}: PNG bars painted in the bar colour ({good} of {len(tall)})")


def equalization_table(values, lo_hi=None, bits=None):
    """out(v) = floor((cdf(v) - cdf_min) * (L - 1) / (N - cdf_min)) over one bin per value, of
    the values inside the window [lo, hi] (all when None); L = 2^bits."""
    import numpy as np
    v = values.ravel()
    inside = v if lo_hi is None else v[(v >= lo_hi[0]) & (v <= lo_hi[1])]
    u, n = np.unique(inside, return_counts=True)
    cdf = np.cumsum(n)
    top = (1 << bits) - 1
    cdf_min, total = cdf[0], cdf[-1]
    return {int(a): int((int(cf) - int(cdf_min)) * top // (int(total) - int(cdf_min)))
            for a, cf in zip(u, cdf)}, top


def check_curve_equalize(c, binary, tmp, path, what):
    """Stored units: the curve at each stored value present is table(v) / (2^bits - 1)."""
    ds = t.read_dataset(path)
    values = t.stored_values(ds)
    bits = int(ds.BitsStored)
    table, top = equalization_table(values, bits=bits)
    h = histogram_json(c, binary, path)
    svg = plot(c, binary, tmp, path, "eq.svg", "--plot-curve", "equalize")
    if h is None or svg is None:
        return
    p = ps.Plot(open(svg).read())
    first, count = ps.plotted_bins(h["counts"], *h["range"])
    lo, hi, bins = h["range"][0], h["range"][1], h["bins"]
    pts = sorted(p.polyline(ps.COLOURS["curve"]))
    xs = [x for x, _ in pts]
    misses = 0
    for v, out in table.items():
        x = ps.bin_x((v - lo) * bins / (hi - lo), first, count)
        y = ps.AREA[1] + ps.AREA[3] * (1 - out / top)
        # cairo merges consecutive collinear segments, so the value is read off the polyline
        # where it passes x.
        i = bisect.bisect_left(xs, x - 0.01)
        if i >= len(xs) or (xs[i] > x + 0.01 and i == 0):
            misses += 1
            continue
        tol = 0.02
        if xs[i] <= x + 0.01:
            near = [pts[k][1] for k in range(i, bisect.bisect_right(xs, x + 0.01))]
        else:
            (xa, ya), (xb, yb) = pts[i - 1], pts[i]
            near = [ya + (yb - ya) * (x - xa) / (xb - xa)]
            tol += abs((yb - ya) / (xb - xa)) * 0.004  # the ends' x rounded to 1/256 pixel
        if min(abs(g - y) for g in near) > tol:
            misses += 1
    c.equal(misses, 0, f"{what}: equalization curve points off the numpy table "
                       f"({len(table)} values)")


def check_window(c, binary, tmp, path, what):
    """Modality units, --plot-window C:W: the band's ends are DICOM LINEAR's edges; the window
    curve is LINEAR's y at each plotted point."""
    ds = t.read_dataset(path)
    center, width = 40.0, 400.0
    lo_edge = center - 0.5 - (width - 1) / 2
    hi_edge = center - 0.5 + (width - 1) / 2
    h = histogram_json(c, binary, path, "--units", "modality")
    svg = plot(c, binary, tmp, path, "win.svg", "--units", "modality", "--plot-window",
               f"{center:g}:{width:g}", "--plot-curve", "window")
    if h is None or svg is None:
        return
    p = ps.Plot(open(svg).read())
    first, count = check_bars(c, p, h, what, window=(lo_edge, hi_edge))
    lo, hi, bins = h["range"][0], h["range"][1], h["bins"]
    want = [ps.bin_x((e - lo) * bins / (hi - lo), first, count) for e in (lo_edge, hi_edge)]
    got = p.vertical_lines(ps.COLOURS["window"])
    c.check(len(got) == 2 and all(abs(a - b) < ps.TOL for a, b in zip(got, want)),
            f"{what}: window edges at {got}, want {want}")
    band = p.rects(ps.COLOURS["window"])
    c.check(len(band) == 1 and abs(band[0][0] - want[0]) < ps.TOL and
            abs(band[0][2] - want[1]) < ps.TOL, f"{what}: window band {band}")
    # LINEAR (PS3.3 C.11.2.1.2.1) with ymin 0, ymax 2^bits - 1, truncated, on modality values.
    bits = int(ds.BitsStored)
    top = (1 << bits) - 1
    bad = 0
    curve = p.polyline(ps.COLOURS["curve"])
    for x, y in curve:
        b = first + (x - ps.AREA[0]) * count / ps.AREA[2]
        m = lo + b * (hi - lo) / bins  # the modality value plotted there
        if m <= center - 0.5 - (width - 1) / 2:
            out = 0
        elif m > center - 0.5 + (width - 1) / 2:
            out = top
        else:
            out = math.floor(((m - (center - 0.5)) / (width - 1) + 0.5) * top)
        yw = ps.AREA[1] + ps.AREA[3] * (1 - out / top)
        # x is rounded to 1/256 pixel in the SVG, so m is known to dm; LINEAR's slope is
        # top / (width - 1) output steps per unit, and truncation adds one step.
        dm = 0.005 * count / ps.AREA[2] * (hi - lo) / bins
        if abs(yw - y) > ps.AREA[3] * (dm / (width - 1) + 1.0 / top) + 0.02:
            bad += 1
    c.check(len(curve) > 10 and bad == 0,
            f"{what}: window curve follows LINEAR ({bad} of {len(curve)} points off)")


def check_slices(c, binary, tmp, path, what):
    h = histogram_json(c, binary, path, "--per-slice")
    svg = plot(c, binary, tmp, path, "slices.svg", "--plot-slices", "--plot-scale", "linear")
    if h is None or svg is None:
        return
    p = ps.Plot(open(svg).read())
    n = len(h["slices"])
    rows = (n + 4) // 5
    c.equal(p.height, ps.HEIGHT + 8 + rows * ps.PANEL_H + 16, f"{what}: height with {n} panels")
    ps.compare_panels(c, p, h, what)
    c.equal(len(p.frames()), 1 + n, f"{what}: one frame per panel")


def check_usage(c, binary, tmp, path):
    for args, why in (
            (["--plot", os.path.join(tmp, "x.txt")], ".svg or .png"),
            (["--plot-window", "40:400"], "need --plot"),
            (["--plot", os.path.join(tmp, "x.svg"), "--plot-curve", "window"], "needs"),
            (["--plot", os.path.join(tmp, "x.svg"), "--plot-scale", "square"], "--plot-scale"),
            (["--plot", os.path.join(tmp, "x.svg"), "--plot-window", "1:2",
              "--plot-window-range", "1:2"], "one --plot-window")):
        r = t.run(binary, "histogram", *args, path)
        c.check(r.rc == 2 and why in r.err, f"{r}: usage error naming {why!r} ({r.err.strip()})")
    other = os.path.join(SAMPLE, "xray_projection.dcm")
    r = t.run(binary, "histogram", "--plot", os.path.join(tmp, "two.svg"), path, other)
    c.check(r.rc != 0 and "one volume" in r.err and not os.path.exists(
        os.path.join(tmp, "two.svg")), f"{r}: two volumes refused ({r.err.strip()})")
    r = t.run(binary, "histogram", "--plot", os.path.join(tmp, "no", "such", "dir.svg"), path)
    c.check(r.rc == 1 and "dir.svg" in r.err, f"{r}: unwritable plot reported ({r.err.strip()})")


def main():
    binary, shared = t.parse_argv()
    t.import_reference_modules()
    try:
        import PIL  # noqa: F401
    except ImportError:
        t.skip("Python module missing: PIL (Pillow decodes the PNG plots)")
    c = t.Checks()
    with tempfile.TemporaryDirectory() as tmp:
        ct = os.path.join(SAMPLE, "ct_phantom")
        first = sorted(glob.glob(os.path.join(ct, "*.dcm")))[0]
        check_usage(c, binary, tmp, first)
        check_file(c, binary, tmp, first, "sample ct_phantom slice")
        check_curve_equalize(c, binary, tmp, first, "sample ct_phantom slice")
        check_window(c, binary, tmp, first, "sample ct_phantom slice")
        check_slices(c, binary, tmp, ct, "sample ct_phantom series")
        if os.path.isfile(os.path.join(shared, "MANIFEST.tsv")):
            files = sorted(glob.glob(os.path.join(shared, "*.dcm")) +
                           glob.glob(os.path.join(shared, "cr", "*.dcm")))
            for path in files:
                name = os.path.relpath(path, shared)
                check_file(c, binary, tmp, path, name)
                check_curve_equalize(c, binary, tmp, path, name)
            check_window(c, binary, tmp, os.path.join(shared, "pydicom_CT_small.dcm"),
                         "pydicom_CT_small")
            for series in sorted(glob.glob(os.path.join(shared, "series", "*"))):
                check_slices(c, binary, tmp, series, os.path.relpath(series, shared))
        else:
            print("note: ../shared/dicom absent, real files not checked")
    c.finish()


if __name__ == "__main__":
    main()
