# SPDX-License-Identifier: MIT
"""plot_svg.py: reads a dicomhist histogram plot (plugin/report/report_plot.h) back out of its
SVG, and says what the bars must be from a histogram's counts, written here from the documented
geometry (docs/command-line.md, "Plots"), not from the drawing code.

cairo writes each filled or stroked path as <path style="...fill:rgb(R%,G%,B%)..." d="M x y L
...">; a rectangle is "M x0 y0 L x1 y0 L x1 y1 L x0 y1 Z". Coordinates are cairo's 24.8 fixed
point, so positions are compared within 0.01 pixel. The command's and Orthanc's tests use it.
"""
import math
import re

WIDTH, HEIGHT = 960, 480
LEFT, RIGHT, TOP, BOTTOM = 80, 70, 56, 56
AREA = (LEFT, TOP, WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM)  # x0, y0, w, h
PANEL_W, PANEL_H = 192, 120
COLOURS = {"linear": 0x1f77b4, "log": 0xaec7e8, "window": 0xff7f0e, "percentile": 0x555555,
           "curve": 0xd62728, "frame": 0x222222}
PERCENTILES = (1, 5, 50, 95, 99)
TOL = 0.01

_PATH = re.compile(r'<path style="([^"]*)" d="([^"]*)"')
_RGB = re.compile(r"(fill|stroke):rgb\(([\d.]+)%,([\d.]+)%,([\d.]+)%\)")


def _colour(style, kind):
    for m in _RGB.finditer(style):
        if m.group(1) == kind:
            r, g, b = (round(float(v) * 255 / 100) for v in m.groups()[1:])
            return (r << 16) | (g << 8) | b
    return None


def _subpaths(d):
    """The subpaths of a path as lists of (x, y), each with whether it was closed."""
    out, cur = [], None
    tokens = d.split()
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t == "M":
            cur = [(float(tokens[i + 1]), float(tokens[i + 2]))]
            out.append([cur, False])
            i += 3
        elif t == "L":
            cur.append((float(tokens[i + 1]), float(tokens[i + 2])))
            i += 3
        elif t == "Z":
            out[-1][1] = True
            i += 1
        elif t == "C":
            cur.append((float(tokens[i + 5]), float(tokens[i + 6])))
            i += 7
        else:
            raise ValueError(f"unexpected path token {t!r}")
    return out


def _rects(subpaths):
    rects = []
    for pts, closed in subpaths:
        if closed and len(pts) == 4:
            xs, ys = [p[0] for p in pts], [p[1] for p in pts]
            rects.append((min(xs), min(ys), max(xs), max(ys)))
    return rects


class Plot:
    """The elements of one plot SVG, by colour."""

    def __init__(self, text):
        self.text = text
        m = re.search(r'<svg[^>]*width="(\d+)(?:pt)?" height="(\d+)(?:pt)?"', text)
        self.width, self.height = int(m.group(1)), int(m.group(2))
        self.fills, self.strokes = [], []  # (colour, style, subpaths)
        for style, d in _PATH.findall(text):
            if "glyph" in style:
                continue
            sub = _subpaths(d)
            if _colour(style, "fill") is not None:
                self.fills.append((_colour(style, "fill"), style, sub))
            if _colour(style, "stroke") is not None:
                self.strokes.append((_colour(style, "stroke"), style, sub))

    def rects(self, colour, box=AREA):
        """Filled rectangles of a colour inside box (x0, y0, w, h), sorted by x."""
        x0, y0, w, h = box
        out = []
        for c, _, sub in self.fills:
            if c != colour:
                continue
            for r in _rects(sub):
                if r[0] >= x0 - TOL and r[2] <= x0 + w + TOL and r[1] >= y0 - TOL and \
                        r[3] <= y0 + h + TOL:
                    out.append(r)
        return sorted(out)

    def frames(self):
        """Stroked frame rectangles (the main area first, then one per small panel)."""
        out = []
        for c, _, sub in self.strokes:
            if c == COLOURS["frame"]:
                out.extend(_rects(sub))
        return out

    def vertical_lines(self, colour, box=AREA):
        """x of the stroked vertical lines of a colour spanning box's height."""
        x0, y0, w, h = box
        xs = []
        for c, _, sub in self.strokes:
            if c != colour:
                continue
            for pts, _closed in sub:
                if len(pts) == 2 and abs(pts[0][0] - pts[1][0]) < TOL and \
                        abs(abs(pts[1][1] - pts[0][1]) - h) < 0.05:
                    xs.append(pts[0][0])
        return sorted(xs)

    def polyline(self, colour):
        """The points of the longest stroked open path of a colour (the mapping curve)."""
        best = []
        for c, _, sub in self.strokes:
            if c != colour:
                continue
            for pts, closed in sub:
                if not closed and len(pts) > len(best):
                    best = pts
        return best


# --------------------------------------------------------------------------- what it must be

def plotted_bins(counts, lo, hi, window=None):
    """[first, first + count): the occupied bins widened to hold the window (every bin when none
    is occupied)."""
    bins = len(counts)
    occupied = [i for i, n in enumerate(counts) if n]
    first, last = (occupied[0], occupied[-1]) if occupied else (0, bins - 1)
    if window:
        def bin_of(v):
            b = math.floor((v - lo) * bins / (hi - lo))
            return min(max(b, 0), bins - 1)
        first, last = min(first, bin_of(window[0])), max(last, bin_of(window[1]))
    return first, last - first + 1


def expected_bars(counts, first, count, box=AREA, log=False):
    """The rectangles (x0, y0, x1, y1) the bars of counts over [first, first + count) must be."""
    x0, y0, w, h = box
    columns = min(count, int(w))
    sums = []
    for c in range(columns):
        b0, b1 = first + count * c // columns, first + count * (c + 1) // columns
        sums.append((b0, b1, sum(counts[b0:b1])))
    top = max(s for _, _, s in sums)
    out = []
    if top == 0:
        return out
    for b0, b1, s in sums:
        if s == 0:
            continue
        f = math.log1p(s) / math.log1p(top) if log else s / top
        out.append((x0 + (b0 - first) * w / count, y0 + h * (1 - f),
                    x0 + (b1 - first) * w / count, y0 + h))
    return out


def bin_x(b, first, count, box=AREA):
    return box[0] + (b - first) * box[2] / count


def percentile_bins(counts, underflow, total):
    """Nearest-rank percentiles over every value: the bin holding each (-1 underflow, len(counts)
    overflow)."""
    out = []
    for p in PERCENTILES:
        rank = max(1, math.ceil(p / 100 * total))
        if rank <= underflow:
            out.append(-1)
            continue
        seen, k = underflow, len(counts)
        for i, n in enumerate(counts):
            seen += n
            if seen >= rank:
                k = i
                break
        out.append(k)
    return out


def compare_rects(c, got, want, what):
    """Checks two lists of rectangles agree within TOL, reporting the first difference."""
    if not c.equal(len(got), len(want), f"{what}: number of bars"):
        return
    for i, (g, w) in enumerate(zip(got, want)):
        if max(abs(a - b) for a, b in zip(g, w)) > TOL:
            c.check(False, f"{what}: bar {i} is {g}, want {w}")
            return
    c.check(True, what)


def panel_box(k):
    """The plot area of slice k's small panel (5 a row below the main plot)."""
    px, py = (k % 5) * PANEL_W, HEIGHT + 8 + (k // 5) * PANEL_H
    return (px + 16, py + 20, PANEL_W - 28, PANEL_H - 34)


def compare_panels(c, plot, record, what):
    """Each slice's panel (linear bars) against that slice's counts, over the volume's span."""
    first, count = plotted_bins(record["counts"], *record["range"])
    for k, s in enumerate(record["slices"]):
        box = panel_box(k)
        compare_rects(c, plot.rects(COLOURS["linear"], box),
                      expected_bars(s["counts"], first, count, box=box), f"{what}: slice {k} panel")
