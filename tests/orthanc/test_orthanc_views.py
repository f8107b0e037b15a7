#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The plugin's views against a real Orthanc on loopback, the last part in a real browser.

Routes:
- many plots at once from 16 clients, then other requests: all right, Orthanc up;
- GET /series/{id}/histogram.svg and /instances/{id}/histogram.svg: the SVG's bars (linear and
  log), per-slice panels and window band read back (tests/cli/plot_svg.py) equal what the
  documented geometry makes of the JSON histogram route's counts, which equal the command's;
  bad arguments are 400 naming them, unknown IDs 404;
- GET /instances/{id}/preview.png: the PNG (Pillow) equals, pixel for pixel, the command's
  --png preview (libpng) of the same operation and window, per frame of a multi-frame instance (`clahe` against `equalize --method clahe`), and
  /dicomhist/preview-modes lists what is drawn.
Browser (Debian's chromium, headless, through chromium-driver and Selenium; skipped as a whole,
exit 77, where they are absent): Orthanc Explorer's series page loads the panel, the inlined
plot's bars equal the JSON route's counts, every preview image decodes, a click on "Create
equalized series" runs the job to a new series equal to the command's, the GSPS button stores a
presentation state (Modality PR), the instance page draws its plot, and the browser
logged no console error. With DH_SCREENSHOT=FILE.png the series page is saved there.

argv: ORTHANC PLUGIN DICOMHIST SHARED_DICOM (see orthanc_testlib.parse_argv)."""

import io
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))

import plot_svg as ps  # noqa: E402
from orthanc_server import HttpError  # noqa: E402
from orthanc_testlib import command_json, renamed, run, run_against_orthanc, skip  # noqa: E402

SERIES = "series/ct5n"
SINGLE = ["pydicom_CT_small.dcm", "cr/cr1_6154.dcm", "pydicom-data_emri_small.dcm"]


def main():
    for module in ("PIL", "selenium"):
        try:
            __import__(module)
        except ImportError:
            skip(f"Python module missing: {module}")
    if not shutil.which("chromium") or not shutil.which("chromedriver"):
        skip("Debian's chromium and chromium-driver are not installed")
    run_against_orthanc(run_checks, {}, "dh_orthanc_views_")


def upload_all(server, shared):
    names, series_id, instances = {}, None, {}
    folder = os.path.join(shared, SERIES)
    for f in sorted(os.listdir(folder)):
        r = server.upload(os.path.join(folder, f))
        series_id = r["ParentSeries"]
    names[folder] = series_id
    for rel in SINGLE:
        path = os.path.join(shared, rel)
        r = server.upload(path)
        names[path] = instances[rel] = r["ID"]
    return names, series_id, instances


def check_svg_against_json(c, server, uri, query, what, window=None):
    record = server.get(f"{uri}/histogram{query}")
    sep = "&" if query else "?"
    extra = f"{sep}window={window[0]:g}:{window[1]:g}" if window else ""
    svg = server.get(f"{uri}/histogram.svg{query}{extra}", raw=True).decode()
    p = ps.Plot(svg)
    edges = None
    if window:
        cw = window
        edges = (cw[0] - 0.5 - (cw[1] - 1) / 2, cw[0] - 0.5 + (cw[1] - 1) / 2)
    first, count = ps.plotted_bins(record["counts"], *record["range"], edges)
    ps.compare_rects(c, p.rects(ps.COLOURS["linear"]),
                     ps.expected_bars(record["counts"], first, count), f"{what}: linear bars")
    ps.compare_rects(c, p.rects(ps.COLOURS["log"]),
                     ps.expected_bars(record["counts"], first, count, log=True),
                     f"{what}: log bars")
    if window:
        lo, hi, bins = record["range"][0], record["range"][1], record["bins"]
        want = [ps.bin_x((e - lo) * bins / (hi - lo), first, count) for e in edges]
        got = p.vertical_lines(ps.COLOURS["window"])
        c.check(len(got) == 2 and all(abs(a - b) < ps.TOL for a, b in zip(got, want)),
                f"{what}: window edges {got}, want {want}")
    return record


def check_plots(c, server, cli, shared, names, series_id, instances):
    folder = os.path.join(shared, SERIES)
    # The JSON route equals the command (what the SVG is then checked against).
    want = renamed(command_json(cli, "histogram", "--bins", "128", folder)[0], names)
    got = check_svg_against_json(c, server, f"/series/{series_id}", "?bins=128",
                                 "series histogram.svg")
    c.equal(got, want, "series histogram route == the command")
    check_svg_against_json(c, server, f"/series/{series_id}", "?units=modality&bins=512",
                           "series histogram.svg, modality, window", window=(40, 400))
    check_svg_against_json(c, server, f"/instances/{instances['cr/cr1_6154.dcm']}", "",
                           "instance histogram.svg")
    # Small multiples: one panel per slice, from the slice's counts.
    record = server.get(f"/series/{series_id}/histogram?bins=64&per-slice=true")
    p = ps.Plot(server.get(f"/series/{series_id}/histogram.svg?bins=64&slices=true&scale=linear",
                           raw=True).decode())
    ps.compare_panels(c, p, record, "series histogram.svg")
    # Errors: JSON naming the argument or the resource.
    for uri, status, key in (
            (f"/series/{series_id}/histogram.svg?bins=0", 400, "bins"),
            (f"/series/{series_id}/histogram.svg?scale=cubic", 400, "scale"),
            (f"/series/{series_id}/histogram.svg?window=1:0", 400, "window"),
            (f"/series/{series_id}/histogram.svg?colour=red", 400, "colour"),
            ("/series/0123-4567/histogram.svg", 404, None),
            ("/instances/0123-4567/histogram.svg", 404, None)):
        try:
            server.get(uri, raw=True)
            c.check(False, f"GET {uri}: answered 200, want {status}")
        except HttpError as e:
            body = e.json()
            c.check(e.status == status and (key is None or body.get("Argument") == key),
                    f"GET {uri}: {e.status} {body}, want {status} naming {key}")


def command_previews(cli, work, path, *args):
    """The command's --png previews of `args` on path, one 8-bit array per frame."""
    import numpy as np
    from PIL import Image
    out = os.path.join(work, "derived-" + str(time.monotonic_ns()))
    r = run(cli, *args, "-o", out, "--png", out + "-png", path)
    if r.rc != 0:
        raise RuntimeError(f"{r!r}: {r.err}")
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(out + "-png") for f in fs
                   if f.endswith(".png"))
    frames = []
    for f in files:
        with Image.open(f) as im:
            frames.append(np.asarray(im))
    return frames


def png_pixels(server, uri):
    import numpy as np
    from PIL import Image
    with Image.open(io.BytesIO(server.get(uri, raw=True))) as im:
        return im.mode, np.asarray(im)


def check_previews(c, server, cli, shared, work, instances):
    import numpy as np
    c.equal(server.get("/dicomhist/preview-modes"), ["original", "equalize", "window", "clahe"],
            "preview modes of this build")
    cases = [("equalize", "", ["equalize"]),
             ("equalize", "&window=40:400", ["equalize", "--window", "40:400"]),
             ("window", "&window=40:400", ["window", "--window", "40:400"]),
             ("window", "&window=percentile:1", ["window", "--window", "percentile:1"]),
             ("clahe", "", ["equalize", "--method", "clahe"]),
             ("clahe", "&window=40:400", ["equalize", "--method", "clahe", "--window", "40:400"])]
    for rel, iid in instances.items():
        path = os.path.join(shared, rel)
        for mode, query, args in cases:
            want = command_previews(cli, work, path, *args)
            c.check(len(want) > 0, f"{rel}: the command wrote its previews")
            for f, expect in enumerate(want):
                colour, got = png_pixels(server, f"/instances/{iid}/preview.png?mode={mode}"
                                                 f"{query}&frame={f}")
                c.check(colour == "L" and np.array_equal(got, expect),
                        f"{rel} preview {mode}{query} frame {f} == the command's --png")
        # original: the file's own window, else min-max (the command's window file / minmax).
        import pydicom
        ds = pydicom.dcmread(path, stop_before_pixels=True)
        spec = "file" if "WindowCenter" in ds or "VOILUTSequence" in ds else "minmax"
        want = command_previews(cli, work, path, "window", "--window", spec)
        _, got = png_pixels(server, f"/instances/{iid}/preview.png?mode=original")
        c.check(np.array_equal(got, want[0]), f"{rel} preview original == the command's "
                                               f"window {spec}")
    iid = instances["pydicom_CT_small.dcm"]
    for query, status, key in (("?mode=sharpen", 400, "mode"),
                               ("?frame=7", 400, "frame"), ("?window=0:0", 400, "window"),
                               ("?size=3", 400, "size")):
        try:
            server.get(f"/instances/{iid}/preview.png{query}", raw=True)
            c.check(False, f"preview.png{query}: answered 200, want {status}")
        except HttpError as e:
            c.check(e.status == status and e.json().get("Argument") == key,
                    f"preview.png{query}: {e.status} {e.body[:200]}, want {status} on {key}")


# --------------------------------------------------------------------------- the browser

def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium")
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1400,1800", "--no-first-run", "--disable-extensions"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)


def wait_for(driver, script, timeout=60, what="condition"):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = driver.execute_script(script)
        if value:
            return value
        time.sleep(0.2)
    raise TimeoutError(f"the page never reached: {what}")


PATHS_JS = """
const out = [];
document.querySelectorAll(arguments[0] + ' .dicomhist-plot svg path').forEach(p => {
  if (!p.closest('symbol')) out.push('<path style="' + p.getAttribute('style') + '" d="' +
                                     p.getAttribute('d') + '"');
});
const svg = document.querySelector(arguments[0] + ' .dicomhist-plot svg');
return '<svg width="' + svg.getAttribute('width') + '" height="' + svg.getAttribute('height') +
       '">' + out.join('\\n');
"""


def check_page_plot(c, server, driver, page, uri, what):
    wait_for(driver, f"return document.querySelector('#{page} .dicomhist-plot')"
                     f"?.getAttribute('data-state')", what=f"{what}: plot drawn")
    state = driver.execute_script(
        f"return document.querySelector('#{page} .dicomhist-plot').getAttribute('data-state')")
    if not c.equal(state, "drawn", f"{what}: the plot's state"):
        return
    query = driver.execute_script(
        f"return document.querySelector('#{page} .dicomhist-plot').getAttribute('data-query')")
    p = ps.Plot(driver.execute_script(PATHS_JS, f"#{page}"))
    # The plot's own arguments are not the JSON route's (slices=true is its per-slice=true).
    hist_query = "&".join("per-slice=true" if a == "slices=true" else a
                          for a in query.lstrip("?").split("&")
                          if not a.startswith(("scale=", "window=")))
    record = server.get(f"{uri}/histogram" + (f"?{hist_query}" if hist_query else ""))
    first, count = ps.plotted_bins(record["counts"], *record["range"])
    ps.compare_rects(c, p.rects(ps.COLOURS["linear"]),
                     ps.expected_bars(record["counts"], first, count),
                     f"{what}: the page's bars == the JSON route's counts")


def screenshot(driver, base, series):
    """The series page of a CT in Hounsfield units with a soft-tissue window, for the docs."""
    driver.get(f"{base}#series?uuid={series}")
    driver.refresh()
    wait_for(driver, "return document.querySelector('#series .dicomhist-plot')"
                     "?.getAttribute('data-state') === 'drawn'", what="screenshot: plot")
    driver.execute_script("""
        const box = document.querySelector('#series .dicomhist-panel');
        box.querySelector('.dicomhist-units').checked = true;
        box.querySelector('.dicomhist-window').value = '40:400';
        box.querySelector('.dicomhist-plot').removeAttribute('data-state');
        box.querySelector('.dicomhist-redraw').click();""")
    wait_for(driver, "return document.querySelector('#series .dicomhist-plot')"
                     ".getAttribute('data-state') === 'drawn' && [...document.querySelectorAll("
                     "'#series .dicomhist-preview img')].filter(i => i.complete && "
                     "i.naturalWidth > 0).length >= 3", what="screenshot: redrawn")
    driver.set_window_size(1200, 1250)
    driver.execute_script("document.querySelector('#series .dicomhist-panel').scrollIntoView()")
    driver.save_screenshot(os.environ["DH_SCREENSHOT"])


def check_browser(c, server, cli, shared, work, names, series_id, instances):
    import numpy as np
    import pydicom
    driver = browser()
    base = f"http://127.0.0.1:{server.port}/app/explorer.html"
    try:
        driver.get(f"{base}#series?uuid={series_id}")
        check_page_plot(c, server, driver, "series", f"/series/{series_id}", "series page")
        wait_for(driver, "return [...document.querySelectorAll('#series .dicomhist-preview img')]"
                         ".filter(i => i.complete && i.naturalWidth > 0).length >= 3",
                 what="three previews decoded")
        modes = driver.execute_script(
            "return [...document.querySelectorAll('#series .dicomhist-preview')]"
            ".map(d => d.getAttribute('data-mode'))")
        c.equal(modes, ["original", "equalize", "window", "clahe"],
                "series page: preview modes shown")
        # A click makes the derived series through the job; it equals the command's.
        driver.execute_script("document.querySelector('#series .dicomhist-window').value = ''")
        driver.find_element("css selector", "#series .dicomhist-make-equalized").click()
        state = wait_for(driver, "const s = document.querySelector('#series .dicomhist-job')"
                                 ".getAttribute('data-state'); return (s === 'done' || "
                                 "s === 'failed') && s", what="the job's end")
        text = driver.execute_script(
            "return document.querySelector('#series .dicomhist-job').textContent")
        if c.equal(state, "done", f"series page: equalize job ({text})"):
            made = driver.execute_script(
                "return document.querySelector('#series .dicomhist-made').getAttribute('data-id')")
            inst = server.get(f"/series/{made}")["Instances"]
            c.equal(len(inst), 5, "the series made by the click has every slice")
            folder = os.path.join(shared, SERIES)
            out = os.path.join(work, "page-equalized")
            r = run(cli, "equalize", "-o", out, folder)
            c.equal(r.rc, 0, f"{r}")
            want = {}
            for d, _, fs in os.walk(out):
                for f in fs:
                    if f.endswith(".dcm"):
                        ds = pydicom.dcmread(os.path.join(d, f))
                        want[ds.SourceImageSequence[0].ReferencedSOPInstanceUID] = ds.pixel_array
            same = 0
            for i in inst:
                ds = pydicom.dcmread(io.BytesIO(server.get(f"/instances/{i}/file", raw=True)))
                src = ds.SourceImageSequence[0].ReferencedSOPInstanceUID
                same += src in want and np.array_equal(ds.pixel_array, want[src])
            c.equal(same, 5, "the clicked series' pixels == the command's equalize")
        # The GSPS button ends with a state: made, or the route's reason on the page.
        driver.find_element("css selector", "#series .dicomhist-make-gsps").click()
        state = wait_for(driver, "const s = document.querySelector('#series .dicomhist-job');"
                                 "return s.textContent.startsWith('Presentation state') && "
                                 "(s.getAttribute('data-state') === 'done' || "
                                 "s.getAttribute('data-state') === 'failed') && "
                                 "s.textContent", what="the GSPS button's answer")
        if c.check("Presentation state: done" in state,
                   f"series page: GSPS button made the state ({state})"):
            states = server.post("/tools/find", {"Level": "Series", "Query": {"Modality": "PR"}})
            c.check(len(states) >= 1, f"the GSPS button stored a presentation state ({states})")
        # The instance page draws its own plot.
        driver.get(f"{base}#instance?uuid={instances['pydicom_CT_small.dcm']}")
        driver.refresh()
        check_page_plot(c, server, driver, "instance",
                        f"/instances/{instances['pydicom_CT_small.dcm']}", "instance page")
        if os.environ.get("DH_SCREENSHOT"):
            screenshot(driver, base, server.get(
                f"/instances/{instances['pydicom_CT_small.dcm']}")["ParentSeries"])
        errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        c.equal(errors, [], "no console errors")
    finally:
        driver.quit()


def check_concurrent(c, server, series_id, instances):
    """Plots drawn by many HTTP threads at once, then other requests on those threads: the
    first plot ever drawn once overflowed an HTTP thread's stack (fontconfig's loading) and the
    next request served beside it crashed Orthanc. Every answer must be right and Orthanc up."""
    import concurrent.futures
    import re

    def same_drawing(svg):  # cairo numbers its surfaces process-wide: id="surfaceN" differs
        return re.sub(rb"surface\d+", b"surface", svg)
    want = same_drawing(server.get(f"/series/{series_id}/histogram.svg?bins=64", raw=True))
    uris = [f"/series/{series_id}/histogram.svg?bins=64",
            f"/instances/{instances['pydicom_CT_small.dcm']}/histogram.svg",
            f"/series/{series_id}/histogram?units=modality&bins=512"] * 12

    def ask(uri):
        return uri, server.get(uri, raw=True)
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(ask, uris))
    c.check(all(same_drawing(a) == want for u, a in answers if u == uris[0]),
            "concurrent series plots all equal the first")
    c.check(all(a.startswith(b"<?xml") for u, a in answers if u == uris[1]),
            "concurrent instance plots all SVG")
    c.check(server.get("/system")["Name"] == "dicomhist-test", "Orthanc serves on")


def run_checks(c, server, cli, shared, work):
    names, series_id, instances = upload_all(server, shared)
    check_concurrent(c, server, series_id, instances)
    check_plots(c, server, cli, shared, names, series_id, instances)
    check_previews(c, server, cli, shared, work, instances)
    check_browser(c, server, cli, shared, work, names, series_id, instances)


if __name__ == "__main__":
    main()
