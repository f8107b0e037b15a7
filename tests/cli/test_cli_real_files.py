#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_cli_real_files.py: `dicomhist info` and `dicomhist histogram` on every file and series
in ../shared/dicom and ../shared/dicom-jpeg2000 against an independent decode (pydicom + pylibjpeg, masking and sign
extension applied here, exact rational binning).

For each readable volume: geometry, bits, signedness, photometric, rescale, transfer syntax,
stored and modality min/max, spacing and warnings from `info --json`; exact counts, underflow
and overflow from `histogram --json` with the default binning and with explicit --bins/--range
in stored and modality units; per-slice counts, sources and order for multi-slice volumes.
Each malformed or unsupported file must fail with exit status 1 and a message naming it, and a
directory holding bad files must still report its good series.

Usage: test_cli_real_files.py DICOMHIST_BINARY SHARED_DICOM_DIR   (exit 77 when either the
folder or a Python module it needs is absent)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_testlib as t  # noqa: E402

BAD_FOLDERS = ("malformed", "unsupported")


def discover(shared):
    """Readable inputs (single files, and series folders as one input each) and bad files."""
    readable, bad = [], []
    for name in sorted(os.listdir(shared)):
        path = os.path.join(shared, name)
        if name in BAD_FOLDERS:
            bad += [os.path.join(path, f) for f in sorted(os.listdir(path))]
        elif name == "series":
            for series in sorted(os.listdir(path)):
                folder = os.path.join(path, series)
                files = [os.path.join(folder, f) for f in sorted(os.listdir(folder))]
                readable.append((folder, files))
        elif os.path.isdir(path):  # cr/: one-file series, each its own input
            for f in sorted(os.listdir(path)):
                readable.append((os.path.join(path, f), [os.path.join(path, f)]))
        elif not name.endswith((".md", ".tsv")):
            readable.append((path, [path]))
    return readable, bad


def check_info(c, binary, target, ref):
    r = t.run(binary, "info", "--json", target)
    if not c.equal(r.rc, 0, f"info {target}: exit status (stderr: {r.err.strip()})"):
        return
    records = r.json_lines()
    if not c.equal(len(records), 1, f"info {target}: number of volumes"):
        return
    got = records[0]
    expected_keys = ["path", "series_uid", "modality", "rows", "columns", "slices",
                     "bits_allocated", "bits_stored", "signed", "photometric", "rescale_slope",
                     "rescale_intercept", "modality_lut", "transfer_syntax", "lossy",
                     "lossy_method", "decoder", "decoder_note", "stored_min", "stored_max",
                     "modality_min", "modality_max", "spacing", "warnings"]
    c.equal(list(got.keys()), expected_keys, f"info {target}: fields")
    for key, want in [("series_uid", ref.series_uid), ("modality", ref.modality),
                      ("rows", ref.rows), ("columns", ref.columns), ("slices", ref.slices),
                      ("bits_allocated", ref.bits_allocated), ("bits_stored", ref.bits_stored),
                      ("signed", ref.signed), ("photometric", ref.photometric),
                      ("transfer_syntax", ref.transfer_syntax), ("lossy", ref.lossy),
                      ("stored_min", ref.stored_min), ("stored_max", ref.stored_max)]:
        c.equal(got.get(key), want, f"info {target}: {key}")
    c.close(got.get("rescale_slope"), ref.slope, f"info {target}: rescale_slope")
    c.close(got.get("rescale_intercept"), ref.intercept, f"info {target}: rescale_intercept")
    if ref.lut is not None:
        n, first, bits = ref.lut_descriptor
        want = {"entries": n or 65536, "first_mapped": first, "bits": bits}
        c.equal(got.get("modality_lut"), want, f"info {target}: modality_lut")
    else:
        c.equal(got.get("modality_lut"), None, f"info {target}: modality_lut")
    c.close(got.get("modality_min"), ref.modality_min, f"info {target}: modality_min")
    c.close(got.get("modality_max"), ref.modality_max, f"info {target}: modality_max")
    if ref.spacing is not None:
        c.close(got.get("spacing"), abs(ref.spacing), f"info {target}: spacing", rel=1e-6,
                abs_tol=1e-6)
    c.check(isinstance(got.get("warnings"), list), f"info {target}: warnings is a list")
    if os.path.basename(target) == "ct2_uneven":
        c.check(len(got.get("warnings", [])) >= 1, f"info {target}: uneven spacing warned")
    if os.path.basename(target) == "ct5n":
        c.equal(got.get("warnings"), [], f"info {target}: no warnings on even spacing")


def histogram_cases(ref):
    """(arguments, units, bins, (lo, hi) or None for the range the command reports)."""
    smin, smax = ref.stored_min, ref.stored_max
    mlo, mhi = ref.modality_min, ref.modality_max
    lo, hi = ref.default_stored_range()
    cases = [
        ([], "stored", min(1 << ref.bits_stored, 65536), (lo, hi)),
        (["--bins", "7"], "stored", 7, (lo, hi)),
        (["--bins", "256", "--range", f"{smin}:{smax + 1}"], "stored", 256, (smin, smax + 1)),
        # Fractional ends, and a range that cuts the data so both underflow and overflow occur.
        (["--bins", "100", "--range", f"{smin + 0.5}:{smax - 0.25}"], "stored", 100,
         (smin + 0.5, smax - 0.25)),
        (["--bins", "65536", "--range", f"{smin}:{smax + 1}"], "stored", 65536,
         (smin, smax + 1)),
        (["--units", "modality"], "modality", ref.default_modality_bins(),
         ref.default_modality_range()),
        (["--units", "modality", "--bins", "64", "--range", f"{mlo!r}:{mhi + 1!r}"], "modality",
         64, (mlo, mhi + 1)),
        (["--units", "modality", "--bins", "4096", "--range",
          f"{mlo + (mhi - mlo) / 3!r}:{mhi - (mhi - mlo) / 5!r}"], "modality", 4096,
         (mlo + (mhi - mlo) / 3, mhi - (mhi - mlo) / 5)),
    ]
    if smin == smax:  # a constant image: keep the cut range non-empty
        cases = [case for case in cases if "100" not in case[0] and "4096" not in case[0]]
    return cases


def check_histograms(c, binary, target, ref):
    for args, units, bins, rng in histogram_cases(ref):
        label = f"histogram {' '.join(args)} {target}"
        per_slice = ref.slices > 1
        extra = ["--per-slice"] if per_slice else []
        r = t.run(binary, "histogram", "--json", *args, *extra, target)
        if not c.equal(r.rc, 0, f"{label}: exit status (stderr: {r.err.strip()})"):
            continue
        records = r.json_lines()
        if not c.equal(len(records), 1, f"{label}: number of volumes"):
            continue
        got = records[0]
        c.equal(got.get("units"), units, f"{label}: units")
        if bins is not None:
            c.equal(got.get("bins"), bins, f"{label}: bins")
        if rng is not None:
            c.equal(got.get("range"), [float(rng[0]), float(rng[1])], f"{label}: range")
        gbins, (glo, ghi) = got["bins"], got["range"]
        default_modality = units == "modality" and "--range" not in args
        if default_modality:
            counts, under, over = ref.default_modality_histogram(gbins)
        else:
            counts, under, over = ref.histogram(units, gbins, glo, ghi)
        c.equal(got.get("total"), ref.data.size, f"{label}: total")
        c.equal(got.get("underflow"), under, f"{label}: underflow")
        c.equal(got.get("overflow"), over, f"{label}: overflow")
        if got.get("counts") != counts:
            diffs = [i for i, (a, b) in enumerate(zip(got.get("counts", []), counts)) if a != b]
            c.check(False, f"{label}: counts differ (length {len(got.get('counts', []))} vs "
                           f"{len(counts)}; first differing bins {diffs[:5]})")
        else:
            c.check(True, "")
        if per_slice:
            check_slices(c, label, got, ref, units, gbins, glo, ghi, default_modality)


def check_slices(c, label, got, ref, units, bins, lo, hi, default_modality):
    slices = got.get("slices")
    if not c.check(isinstance(slices, list) and len(slices) == ref.slices,
                   f"{label}: {ref.slices} slices listed"):
        return
    for k, s in enumerate(slices):
        c.equal(s.get("index"), k, f"{label}: slice {k} index")
        c.equal(os.path.realpath(s.get("source", "")), os.path.realpath(ref.sources[k]),
                f"{label}: slice {k} source")
        c.equal(s.get("frame"), ref.frames[k], f"{label}: slice {k} frame")
        if default_modality:
            counts, under, over = ref.default_modality_histogram(bins, slice_index=k)
        else:
            counts, under, over = ref.histogram(units, bins, lo, hi, slice_index=k)
        c.equal(s.get("total"), ref.rows * ref.columns, f"{label}: slice {k} total")
        c.check(s.get("counts") == counts, f"{label}: slice {k} counts")
        if len(ref.locations) == ref.slices and ref.locations[k] is not None:
            c.close(s.get("position"), ref.locations[k], f"{label}: slice {k} position",
                    rel=1e-6, abs_tol=1e-6)


def linear_voi(x, center, width, ymax):
    """PS3.3 C.11.2.1.2.1 LINEAR with ymin 0, truncated, on a numpy array."""
    import numpy as np
    y = ((x - (center - 0.5)) / (width - 1) + 0.5) * ymax
    y = np.where(x <= center - 0.5 - (width - 1) / 2, 0, y)
    y = np.where(x > center - 0.5 + (width - 1) / 2, ymax, y)
    return np.clip(np.floor(y), 0, ymax).astype(np.int64)


def check_lut_windows(c, binary, target, ref):
    """Windows in modality units through the Modality LUT: pixels of `window` against LINEAR on
    pydicom's apply_modality_lut, and a percentile window against numpy's ranks of them."""
    import numpy as np
    import tempfile
    modality = np.vectorize(lambda s: ref.lut[int(s)])(ref.data).astype(np.float64)
    lo, hi = float(modality.min()), float(modality.max())
    center, width = (lo + hi) / 2 + 1000, (hi - lo) / 3
    flat = np.sort(modality.ravel())
    k = int(np.floor(flat.size * 5 / 100))
    for args, want in ((["--window", f"{center!r}:{width!r}"], (center, width)),
                       (["--window", "percentile:5"], None)):
        label = f"window {' '.join(args)} {target}"
        with tempfile.TemporaryDirectory() as out:
            r = t.run(binary, "window", *args, "--bits", "16", "--json", "-o", out, target)
            if not c.equal(r.rc, 0, f"{label}: exit status (stderr: {r.err.strip()})"):
                continue
            got = r.json_lines()[0]
            if want is None:
                wlo, whi = flat[k], flat[flat.size - 1 - k]
                c.equal(got["windows"][0]["lo"], wlo, f"{label}: window low end")
                c.equal(got["windows"][0]["hi"], whi, f"{label}: window high end")
                want = ((wlo + whi + 1) / 2, whi - wlo + 1)
            derived = t.read_dataset(got["outputs"][0])
            c.check("ModalityLUTSequence" not in derived, f"{label}: no Modality LUT left")
            pixels = np.asarray(derived.pixel_array).reshape(ref.data.shape).astype(np.int64)
            expected = linear_voi(modality, want[0], want[1], 65535)
            c.check(np.array_equal(pixels, expected),
                    f"{label}: pixels are LINEAR of the LUT output "
                    f"({int(np.sum(pixels != expected))} differ)")


def check_bad_files(c, binary, bad):
    for path in bad:
        for args in (["info", "--json"], ["histogram", "--json"]):
            r = t.run(binary, *args, path)
            c.equal(r.rc, 1, f"{' '.join(args)} {path}: exit status")
            c.check(f"dicomhist: {path}: " in r.err,
                    f"{' '.join(args)} {path}: stderr names the file: {r.err.strip()!r}")
            c.equal(r.out, "", f"{' '.join(args)} {path}: no output")
            if os.path.basename(os.path.dirname(path)) == "unsupported":  # said as such
                c.check("not supported" in r.err or "unsupported" in r.err,
                        f"{' '.join(args)} {path}: says unsupported: {r.err.strip()!r}")


# Inputs the whole-folder check looks for among the folder's volumes.
WHOLE_FOLDER_TARGETS = ("ct5n", "ct2_uneven", "pydicom_CT_small.dcm", "pylibjpeg-data_RG2_JPLL.dcm")


def check_whole_folder(c, binary, shared, expected, bad):
    """The shared folder as one input: bad files reported, good series still there. `expected`
    maps each target to (series UID, slices, stored min, stored max) from its reference."""
    r = t.run(binary, "info", "--json", shared)
    c.equal(r.rc, 1, f"info {shared}: exit status with bad files inside")
    for path in bad:
        name = os.path.relpath(path, shared)
        c.check(name in r.err, f"info {shared}: stderr names {name}")
    records = r.json_lines()
    by_uid = {}
    for rec in records:
        by_uid.setdefault(rec.get("series_uid"), []).append(rec)
    for target, (uid, slices, lo, hi) in expected.items():
        found = [rec for rec in by_uid.get(uid, [])
                 if rec.get("slices") == slices and rec.get("stored_min") == lo
                 and rec.get("stored_max") == hi]
        c.check(len(found) == 1, f"info {shared}: reports {target} once "
                                 f"({len(found)} matching volumes)")


def main():
    binary, shared = t.parse_argv()
    t.require_shared(shared)
    t.import_reference_modules()
    c = t.Checks()
    readable, bad = discover(shared)
    c.check(len(readable) >= 15 and len(bad) >= 5,
            f"found the real files ({len(readable)} readable inputs, {len(bad)} bad files)")
    # JPEG 2000 files sit beside the folder (../shared/dicom-jpeg2000), read by the same rules.
    jpeg2000 = os.path.normpath(shared) + "-jpeg2000"
    if os.path.isdir(jpeg2000):
        more, more_bad = discover(jpeg2000)
        c.check(len(more) >= 4, f"found the JPEG 2000 files ({len(more)} in {jpeg2000})")
        readable += more
        bad += more_bad
    expected = {}  # each reference decoded once, its summary kept for the whole-folder check
    for target, files in readable:
        print(f"-- {target}", flush=True)
        ref = t.RefVolume(files)
        check_info(c, binary, target, ref)
        check_histograms(c, binary, target, ref)
        if ref.lut is not None:
            check_lut_windows(c, binary, target, ref)
        if os.path.basename(target) in WHOLE_FOLDER_TARGETS:
            expected[target] = (ref.series_uid, ref.slices, ref.stored_min, ref.stored_max)
    print("-- bad files", flush=True)
    check_bad_files(c, binary, bad)
    print("-- the whole folder", flush=True)
    c.equal(len(expected), len(WHOLE_FOLDER_TARGETS), "whole-folder targets found")
    check_whole_folder(c, binary, shared, expected, bad)
    c.finish()


if __name__ == "__main__":
    main()
