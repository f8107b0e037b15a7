#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_cli_clahe.py: `dicomhist equalize --method clahe` on every readable file and series of
../shared/dicom and ../shared/dicom-jpeg2000, against CLAHE computed here in NumPy from the
documented formula (clahe_numpy.py) over an independent decode (pydicom + pylibjpeg, through
cli_testlib.RefVolume).

For each input: per slice (default 8x8 tiles, full resolution, clip limit 2, with --png) and per
volume (--tiles 3x2x2 where there are two slices or more, else --tile-size 64, --bins 256, 8-bit
output, 12 for CT); the derived files' pixels equal the reference, their photometric interpretation is the
source's, one PNG per slice is written, the JSON record names the method and the derivation
names CLAHE. Then the batch and its manifest: all inputs in one run, and the same run again
skips every input (resume). Usage errors: tiles without --method clahe, NxMxK in slice mode,
malformed --tiles, --bins 0, CLAHE as a presentation state.

Usage: test_cli_clahe.py DICOMHIST_BINARY SHARED_DICOM_DIR   (exit 77 without the folder or a
module it needs)
"""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_testlib as t  # noqa: E402
import clahe_numpy  # noqa: E402
from test_cli_real_files import discover  # noqa: E402  (the readable inputs of a folder)

def derived_volume(record):
    """The derived files of a JSON record, decoded independently, in the volume's order."""
    return t.RefVolume(record["outputs"])


def check_case(c, binary, target, ref, work, args, tiles, per_slice, bins, bits):
    out, png = os.path.join(work, "out"), os.path.join(work, "png")
    r = t.run(binary, "equalize", "--method", "clahe", "--json", "-o", out, "--png", png,
              *args, target)
    what = f"{target} {' '.join(args)}"
    rec = t.one_record(c, r, what)
    if rec is None:
        return
    c.equal(rec.get("method"), "clahe", f"{what}: method")
    c.check("CLAHE" in rec["derivation"], f"{what}: derivation {rec['derivation']}")
    got = derived_volume(rec)
    c.equal(got.photometric, ref.photometric, f"{what}: photometric")
    c.equal(got.bits_stored, bits or ref.bits_stored, f"{what}: bits stored")
    want = clahe_numpy.clahe(ref.data, ref.bits_stored, ref.signed, tiles, per_slice, bins=bins,
                             levels=1 << (bits or ref.bits_stored), clip=2.0)
    diff = int((got.data != want).sum())
    c.equal(diff, 0, f"{what}: pixels unlike the NumPy reference")
    pngs = [f for _, _, files in os.walk(png) for f in files if f.endswith(".png")]
    c.equal(len(pngs), ref.slices, f"{what}: PNG previews")
    shutil.rmtree(out)
    shutil.rmtree(png)


def check_usage(c, binary, work):
    sample = os.path.join(work, "none")
    for args, needle in [(["--tiles", "8x8"], "need --method clahe"),
                         (["--method", "clahe", "--mode", "slice", "--tiles", "4x4x2"],
                          "need --mode volume"),
                         (["--method", "clahe", "--tiles", "8"], "--tiles"),
                         (["--method", "clahe", "--tiles", "8x0"], "--tiles"),
                         (["--method", "clahe", "--bins", "0"], "--bins"),
                         (["--method", "kmeans"], "--method"),
                         (["--method", "clahe", "--output-kind", "gsps"], "presentation")]:
        r = t.run(binary, "equalize", *args, "-o", sample, "x.dcm")
        c.equal(r.rc, 2, f"usage {args}: exit status")
        c.check(needle in r.err, f"usage {args}: message {r.err.strip()!r} names {needle!r}")
    r = t.run(binary, "equalize", "--help")
    for needle in ("--method global|clahe", "--tiles NxM[xK]", "--tile-size", "--bins N"):
        c.check(needle in r.out, f"--help names {needle}")


def check_batch_and_resume(c, binary, targets, work):
    out = os.path.join(work, "batch")
    args = ["equalize", "--method", "clahe", "--mode", "slice", "--tiles", "4x4", "--json",
            "-o", out, *targets]
    first = t.run(binary, *args)
    c.equal(first.rc, 0, f"batch: exit status (stderr: {first.err.strip()[-300:]})")
    c.equal(len(first.json_lines()), len(targets), "batch: one record per input")
    manifest = os.path.join(out, "dicomhist-manifest.jsonl")
    c.check(os.path.isfile(manifest), "batch: manifest written")
    again = t.run(binary, *args)
    c.equal(again.rc, 0, "resume: exit status")
    c.equal(len(again.json_lines()), 0, "resume: nothing redone")
    c.check(" done before" in again.err and "0 files done" in again.err,
            f"resume: summary {again.err.strip()!r}")
    # Other tiles are other work: not skipped, and the outputs of the first run are other
    # instances (UIDs are named after the work), so they are refused rather than replaced.
    other = t.run(binary, *[a if a != "4x4" else "2x2" for a in args])
    c.equal(other.rc, 1, "other tiles: exit status")
    c.check("already exists (not replaced)" in other.err and " done before" not in other.err,
            f"other tiles: redone, outputs kept: {other.err.strip()[-300:]!r}")


def main():
    binary, shared, c = t.begin_real_file_test()
    work = tempfile.mkdtemp(prefix="dicomhist-clahe-")
    try:
        inputs = discover(shared)[0]
        j2k = os.path.join(shared, "..", "dicom-jpeg2000")
        if os.path.isdir(j2k):
            inputs += discover(j2k)[0]
        for target, files in inputs:
            ref = t.RefVolume(files)
            check_case(c, binary, target, ref, work, ["--mode", "slice", "--clip-limit", "2"],
                       (8, 8), True, 0, 0)
            if ref.slices > 1:
                vol_args, tiles = ["--tiles", "3x2x2"], (2, 2, 3)
            else:
                tiles = tuple(max(1, -(-n // 64)) for n in (1, ref.rows, ref.columns))
                vol_args = ["--tile-size", "64"]
            bits = 12 if ref.modality == "CT" else 8  # the CT Image module wants 12 to 16
            check_case(c, binary, target, ref, work,
                       ["--mode", "volume", "--clip-limit", "2", "--bins", "256", "--bits",
                        str(bits), *vol_args], tiles, False, 256, bits)
        check_usage(c, binary, work)
        check_batch_and_resume(c, binary, [p for p, _ in inputs[:4]], work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    c.finish()


if __name__ == "__main__":
    main()
