#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_cli_behaviour.py: how the dicomhist command behaves, apart from the numbers.

Exit statuses 0/1/2 and usage errors, --help and --version, JSON lines that parse and carry
exactly the documented fields (also for file names with quotes, backslashes, control characters
and non-ASCII), CSV written atomically whose content equals the JSON counts (also per slice),
per-slice totals and counts that add up to the volume, the text output for people (sparkline
in UTF-8 or ASCII), and `--device cuda` without a GPU as a clear error. The same conventions
for mi, equalize and window (usage errors, one stderr line per failed input, the documented JSON
fields), and stdout that cannot be written (/dev/full) as exit 1 with a message.

Usage: test_cli_behaviour.py DICOMHIST_BINARY SHARED_DICOM_DIR   (exit 77 when the folder of
real files is absent; the real files are the inputs)
"""
import csv
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_testlib as t  # noqa: E402


def check_usage(c, binary, ct):
    r = t.run(binary)
    c.equal(r.rc, 2, "no arguments: exit status")
    r = t.run(binary, "--version")
    c.equal(r.rc, 0, "--version: exit status")
    c.check(r.out.startswith("dicomhist 0.1.0"), f"--version names the version: {r.out!r}")
    r = t.run(binary, "--help")
    c.equal(r.rc, 0, "--help: exit status")
    c.check("info" in r.out and "histogram" in r.out, "--help lists the commands")
    r = t.run(binary, "help", "histogram")
    c.equal(r.rc, 0, "help histogram: exit status")
    for command, options in [("info", ["--json"]),
                             ("histogram", ["--bins", "--range", "--units", "--per-slice",
                                            "--device", "--json", "--output"])]:
        r = t.run(binary, command, "--help")
        c.equal(r.rc, 0, f"{command} --help: exit status")
        c.check(r.out.startswith(f"Usage: dicomhist {command}"), f"{command} --help: usage line")
        for option in options:
            c.check(option in r.out, f"{command} --help mentions {option}")
    bad = [
        ["frobnicate", ct], ["--frobnicate"], ["info"], ["histogram"],
        ["info", "--bogus", ct], ["histogram", "--bogus", ct], ["histogram", "-x", ct],
        ["info", "--json=1", ct],
        ["histogram", "--bins", "0", ct], ["histogram", "--bins", "65537", ct],
        ["histogram", "--bins", "abc", ct], ["histogram", "--bins", "-5", ct],
        ["histogram", "--bins", "12x", ct], ["histogram", "--bins", "", ct],
        ["histogram", "--range", "5:5", ct], ["histogram", "--range", "10:2", ct],
        ["histogram", "--range", "a:b", ct], ["histogram", "--range", "5", ct],
        ["histogram", "--range", "1:2:3", ct], ["histogram", "--range", "nan:5", ct],
        ["histogram", "--range", "0:inf", ct], ["histogram", "--units", "hu", ct],
        ["histogram", "--device", "gpu", ct], ["histogram", ct, "--bins"],
    ]
    for args in bad:
        r = t.run(binary, *args)
        c.equal(r.rc, 2, f"{args}: usage error exit status (stderr {r.err.strip()!r})")
        c.check(r.err.startswith("dicomhist: "), f"{args}: message on stderr")
        c.equal(r.out, "", f"{args}: nothing on stdout")
    # Accepted spellings: --opt=value, a negative range as the next word, options after paths.
    for args in (["--bins=256", ct], [ct, "--bins", "256"], ["--range", "-1024:3072", ct],
                 ["--units=modality", "--range=-1024.5:3071.25", ct], ["--", ct],
                 ["--device", "cpu", ct], ["--device", "auto", ct]):
        r = t.run(binary, "histogram", "--json", *args)
        c.equal(r.rc, 0, f"histogram {args}: accepted (stderr {r.err.strip()!r})")


INFO_FIELDS = ["path", "series_uid", "modality", "rows", "columns", "slices", "bits_allocated",
               "bits_stored", "signed", "photometric", "rescale_slope", "rescale_intercept",
               "modality_lut", "transfer_syntax", "lossy", "lossy_method", "decoder",
               "decoder_note", "stored_min", "stored_max", "modality_min", "modality_max",
               "spacing", "warnings"]
HIST_FIELDS = ["path", "units", "bins", "range", "total", "underflow", "overflow", "counts"]
SLICE_FIELDS = ["index", "source", "frame", "position", "total", "underflow", "overflow",
                "counts"]


def check_json_and_exit_statuses(c, binary, shared, tmp):
    ct = os.path.join(shared, "pydicom_CT_small.dcm")
    series = os.path.join(shared, "series", "ct5n")
    bad = os.path.join(shared, "malformed", "pydicom_MR_truncated.dcm")
    missing = os.path.join(tmp, "no-such-file.dcm")

    r = t.run(binary, "info", "--json", ct, series)
    c.equal(r.rc, 0, "info two good inputs: exit status")
    recs = r.json_lines()
    c.equal(len(recs), 2, "info two inputs: one line each")
    for rec in recs:
        c.equal(list(rec), INFO_FIELDS, "info --json: fields in the documented order")
    r = t.run(binary, "histogram", "--json", ct, series)
    for rec in r.json_lines():
        c.equal(list(rec), HIST_FIELDS, "histogram --json: fields")
        c.equal(sum(rec["counts"]) + rec["underflow"] + rec["overflow"], rec["total"],
                "histogram: counts + underflow + overflow = total")

    for command in ("info", "histogram"):
        r = t.run(binary, command, "--json", ct, bad, missing, series)
        c.equal(r.rc, 1, f"{command} with bad inputs among good: exit status 1")
        c.equal(len(r.json_lines()), 2, f"{command}: the good inputs are still reported")
        c.check(f"dicomhist: {bad}: " in r.err, f"{command}: names the truncated file")
        c.check(f"dicomhist: {missing}: " in r.err, f"{command}: names the missing file")
        r = t.run(binary, command, missing)
        c.equal(r.rc, 1, f"{command} on a missing file: exit status 1")

    # File names JSON must escape, and non-ASCII that must come through as UTF-8.
    odd_dir = os.path.join(tmp, "odd")
    os.mkdir(odd_dir)
    for name in ['quote"back\\slash.dcm', "tab\tnew\nline\x01.dcm", "Röntgen_胸部.dcm"]:
        path = os.path.join(odd_dir, name)
        shutil.copyfile(ct, path)
        r = t.run(binary, "info", "--json", path)
        c.equal(r.rc, 0, f"info {name!r}: exit status")
        try:
            rec = json.loads(r.out)
            c.equal(rec["path"], path, f"info {name!r}: path round-trips through JSON")
        except ValueError as e:
            c.check(False, f"info {name!r}: invalid JSON {e}: {r.out[:200]!r}")


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def check_csv(c, binary, shared, tmp):
    series = os.path.join(shared, "series", "ct2_uneven")
    out = os.path.join(tmp, "hist.csv")
    for args in (["--bins", "64", "--range", "-1024:3072", "--units", "modality"],
                 ["--bins", "300", "--range", "100.5:2000.25"], []):
        r = t.run(binary, "histogram", "--json", "--per-slice", "--output", out, *args, series)
        if not c.equal(r.rc, 0, f"histogram --output {args}: exit status ({r.err.strip()})"):
            continue
        rec = r.json_lines()[0]
        header, rows = read_csv(out)
        n = len(rec["slices"])
        c.equal(header, ["bin_lo", "bin_hi", "count"] + [f"slice_{k}" for k in range(n)],
                f"csv {args}: header")
        c.equal(len(rows), rec["bins"] + 2, f"csv {args}: bins + underflow + overflow rows")
        lo, hi = rec["range"]
        c.check(rows[0][0] == "-inf" and float(rows[0][1]) == lo, f"csv {args}: underflow row")
        c.check(float(rows[-1][0]) == hi and rows[-1][1] == "inf", f"csv {args}: overflow row")
        col = [int(row[2]) for row in rows]
        c.equal(col, [rec["underflow"]] + rec["counts"] + [rec["overflow"]],
                f"csv {args}: count column equals JSON")
        for k, s in enumerate(rec["slices"]):
            colk = [int(row[3 + k]) for row in rows]
            c.equal(colk, [s["underflow"]] + s["counts"] + [s["overflow"]],
                    f"csv {args}: slice_{k} column equals JSON")
        width = (hi - lo) / rec["bins"]
        edges_ok = all(math.isclose(float(rows[1 + i][0]), lo + i * width, rel_tol=1e-12,
                                    abs_tol=1e-9) and float(rows[1 + i][1]) == float(rows[2 + i][0])
                       for i in range(rec["bins"]))
        c.check(edges_ok, f"csv {args}: bin edges lo + i * (hi - lo) / bins, contiguous")
        c.equal(sorted(os.listdir(tmp)).count("hist.csv"), 1, "csv: one file, no temporaries")
    leftovers = [f for f in os.listdir(tmp) if f.startswith(".hist.csv")]
    c.equal(leftovers, [], "csv: no temporary files left")

    # Failures leave nothing: a folder that does not exist, several volumes for one file.
    r = t.run(binary, "histogram", "--output", os.path.join(tmp, "nope", "h.csv"), series)
    c.equal(r.rc, 1, "--output into a missing folder: exit status 1")
    c.check(os.path.join(tmp, "nope", "h.csv") in r.err, "--output failure names the file")
    two = os.path.join(tmp, "two.csv")
    r = t.run(binary, "histogram", "--output", two, series, os.path.join(shared, "pydicom_CT_small.dcm"))
    c.equal(r.rc, 2, "--output with two volumes: usage error")
    c.check(not os.path.exists(two), "--output with two volumes: no file written")
    # An existing file is replaced whole, never appended to or half written.
    with open(out, "w") as f:
        f.write("old content that is longer than nothing\n" * 1000)
    r = t.run(binary, "histogram", "--bins", "4", "--output", out, series)
    header, rows = read_csv(out)
    c.equal((r.rc, header, len(rows)), (0, ["bin_lo", "bin_hi", "count"], 6),
            "--output replaces an existing file")


def check_per_slice(c, binary, shared):
    for target in (os.path.join(shared, "series", "ct5n"),
                   os.path.join(shared, "pydicom-data_emri_small_RLE.dcm")):
        r = t.run(binary, "histogram", "--json", "--per-slice", "--bins", "500", target)
        if not c.equal(r.rc, 0, f"--per-slice {target}: exit status"):
            continue
        rec = r.json_lines()[0]
        slices = rec["slices"]
        for s in slices:
            c.equal(list(s), SLICE_FIELDS, "per-slice fields")
        c.equal(sum(s["total"] for s in slices), rec["total"], f"{target}: slice totals sum")
        c.equal(sum(s["underflow"] for s in slices), rec["underflow"], f"{target}: underflow sum")
        c.equal(sum(s["overflow"] for s in slices), rec["overflow"], f"{target}: overflow sum")
        summed = [sum(col) for col in zip(*(s["counts"] for s in slices))]
        c.equal(summed, rec["counts"], f"{target}: slice counts sum to the volume's")
        c.equal([s["index"] for s in slices], list(range(len(slices))), f"{target}: indices")
        positions = [s["position"] for s in slices]
        if all(p is not None for p in positions):
            c.equal(positions, sorted(positions), f"{target}: slices in ascending position")
    # 65536 bins per slice streams out whole.
    r = t.run(binary, "histogram", "--json", "--per-slice", "--bins", "65536",
              os.path.join(shared, "series", "ct5n"))
    rec = r.json_lines()[0]
    c.check(len(rec["counts"]) == 65536 and all(len(s["counts"]) == 65536 for s in rec["slices"]),
            "65536 bins per slice written whole")


def check_text(c, binary, shared):
    ct = os.path.join(shared, "pydicom_CT_small.dcm")
    r = t.run(binary, "info", ct)
    c.equal(r.rc, 0, "info text: exit status")
    for word in ("128 x 128 x 1", "16 of 16 bits, signed", "MONOCHROME2", "Explicit VR Little Endian"):
        c.check(word in r.out, f"info text shows {word!r}")
    r = t.run(binary, "info", os.path.join(shared, "series", "ct2_uneven"))
    c.check("warning" in r.out, "info text shows the uneven spacing warning")
    r = t.run(binary, "histogram", ct, env={"LC_ALL": "C.UTF-8"})
    c.equal(r.rc, 0, "histogram text: exit status")
    for word in ("p1 ", "p50 ", "p99 ", "min .. max", "\u2588"):
        c.check(word in r.out, f"histogram text (UTF-8) shows {word!r}")
    r = t.run(binary, "histogram", "--per-slice", os.path.join(shared, "series", "ct5n"),
              env={"LC_ALL": "C", "LANG": ""})
    c.check(r.rc == 0 and all(ord(ch) < 128 for ch in r.out), "histogram text in the C locale is ASCII")
    c.check("@" in r.out and r.out.count("\n") >= 5 + 6, "ASCII sparkline and one line per slice")


def check_device(c, binary, shared):
    ct = os.path.join(shared, "pydicom_CT_small.dcm")
    version = t.run(binary, "--version").out
    r = t.run(binary, "histogram", "--json", "--device", "cuda", ct)
    if "CUDA available" in version:
        cpu = t.run(binary, "histogram", "--json", "--device", "cpu", ct)
        c.equal(r.rc, 0, "--device cuda with a GPU: exit status")
        c.equal(r.out, cpu.out, "--device cuda gives the CPU's counts")
    else:
        c.equal(r.rc, 1, "--device cuda without a GPU: exit status 1")
        c.check("cuda" in r.err.lower() and r.err.startswith("dicomhist: "),
                f"--device cuda without a GPU: clear message ({r.err.strip()!r})")
        c.equal(r.out, "", "--device cuda without a GPU: no output")


MI_FIELDS = ["fixed", "moving", "bins", "unit", "mi", "nmi", "ecc", "h_fixed", "h_moving",
             "h_joint", "n", "range_fixed", "range_moving", "device", "status"]


def derived_fields(operation, window, png):
    """The documented field order of equalize/window --json (docs/command-line.md)."""
    fields = ["path", "operation", "mode", "window"]
    if window == "percentile":
        fields.append("percentile")
    fields.append("function" if operation == "window" else "clip_limit")
    fields += ["windows", "bits", "device", "derivation", "series_uid", "outputs"]
    return fields + (["png"] if png else [])


def check_usage_mi_and_derived(c, binary, ct, tmp):
    """mi, equalize and window follow info's and histogram's conventions: --help, exit 2 with a
    message on stderr and nothing on stdout for usage errors, numbers without junk."""
    out = os.path.join(tmp, "usage-out")
    for command, options in [("mi", ["--bins", "--range-fixed", "--range-moving", "--mask",
                                     "--log2", "--device", "--json"]),
                             ("equalize", ["--output", "--mode", "--window", "--window-range",
                                           "--clip-limit", "--bits", "--device", "--png",
                                           "--json"]),
                             ("window", ["--output", "--window", "--window-range", "--function",
                                         "--mode", "--bits", "--device", "--png", "--json"])]:
        r = t.run(binary, command, "--help")
        c.equal(r.rc, 0, f"{command} --help: exit status")
        c.check(r.out.startswith(f"Usage: dicomhist {command}"), f"{command} --help: usage line")
        for option in options:
            c.check(option in r.out, f"{command} --help mentions {option}")
        c.check(command in t.run(binary, "--help").out, f"--help lists {command}")
    bad = [
        ["mi"], ["mi", ct], ["mi", "--bins", "1", ct, ct], ["mi", "--bins", "257", ct, ct],
        ["mi", "--bins", "64:", ct, ct], ["mi", "--bins", ":64", ct, ct],
        ["mi", "--bins", "8:8:8", ct, ct], ["mi", "--range-fixed", "0.5:10", ct, ct],
        ["mi", "--range-moving", "10:0", ct, ct], ["mi", "--range-fixed", "0:70000", ct, ct],
        ["mi", "--device", "gpu", ct, ct], ["mi", "--mask", "", ct, ct], ["mi", "--log2=1", ct, ct],
        ["equalize", ct], ["equalize", "-o"], ["equalize", "-o", out],
        ["equalize", "-o", "", ct], ["equalize", "-ofoo", ct], ["equalize", "-x", ct],
        ["equalize", "--", "-o", out, ct],
        ["equalize", "-o", out, "--window", "40:400", "--window", "minmax", ct],
        ["equalize", "-o", out, "--window", "40:400", "--window-range", "0:10", ct],
        ["equalize", "-o", out, "--window", "40:0.5", ct],
        ["equalize", "-o", out, "--window", " 40:400", ct],
        ["equalize", "-o", out, "--window", "percentile:50", ct],
        ["equalize", "-o", out, "--window", "percentile:0x1", ct],
        ["equalize", "-o", out, "--window", "bogus", ct],
        ["equalize", "-o", out, "--clip-limit", "0", ct],
        ["equalize", "-o", out, "--clip-limit", "0x2", ct],
        ["equalize", "-o", out, "--clip-limit", " 2", ct],
        ["equalize", "-o", out, "--clip-limit", "inf", ct],
        ["equalize", "-o", out, "--bits", "10", ct], ["equalize", "-o", out, "--mode", "x", ct],
        ["equalize", "-o", out, "--function", "linear", ct],
        ["equalize", "-o", out, "--device", "gpu", ct],
        ["window", "-o", out, ct], ["window", "-o", out, "--window", "40:400", "--clip-limit", "2", ct],
        ["window", "-o", out, "--window", "40:400", "--function", "cubic", ct],
    ]
    for args in bad:
        r = t.run(binary, *args)
        c.equal(r.rc, 2, f"{args}: usage error exit status (stderr {r.err.strip()!r})")
        c.check(r.err.startswith(f"dicomhist: {args[0]}: "), f"{args}: message names the command")
        c.equal(r.out, "", f"{args}: nothing on stdout")
    c.check(not os.path.exists(out), "usage errors write no output folder")


def check_mi_and_derived(c, binary, shared, tmp):
    ct = os.path.join(shared, "pydicom_CT_small.dcm")
    emri = os.path.join(shared, "pydicom-data_emri_small.dcm")
    missing = os.path.join(tmp, "no-such-file.dcm")
    # A missing and a misshapen moving image: one line each on stderr, the good one still scored.
    r = t.run(binary, "mi", "--json", ct, ct, missing, emri, ct)
    c.equal(r.rc, 1, "mi with bad moving inputs: exit status 1")
    recs = r.json_lines()
    c.equal(len(recs), 2, "mi: the good moving inputs are still scored")
    for rec in recs:
        c.equal(list(rec), MI_FIELDS, "mi --json: fields in the documented order")
    errs = r.err.splitlines()
    c.equal(len(errs), 2, f"mi: one stderr line per bad input ({errs!r})")
    c.check(any(e.startswith(f"dicomhist: {missing}: ") for e in errs), "mi names the missing file")
    c.check(any(e.startswith(f"dicomhist: {emri}: ") and "shape" in e for e in errs),
            "mi names the image of another shape")
    r = t.run(binary, "mi", missing, ct)
    c.equal((r.rc, r.out, r.err.count("\n")), (1, "", 1), "mi with a missing FIXED: exit 1, one line")
    r = t.run(binary, "mi", "--mask", os.path.join(shared, "series", "ct5n"), ct, ct)
    c.check(r.rc == 1 and r.out == "" and "mask" in r.err, "mi with a mask of another shape")

    # --device cuda where no GPU can run: one message before anything is read, for every command.
    if "CUDA available" not in t.run(binary, "--version").out:
        for args in (["mi", ct, ct], ["equalize", "-o", os.path.join(tmp, "cuda-out"), ct],
                     ["window", "--window", "40:400", "-o", os.path.join(tmp, "cuda-out"), ct]):
            r = t.run(binary, *args[:1], "--device", "cuda", *args[1:])
            c.equal((r.rc, r.out), (1, ""), f"{args[0]} --device cuda without a GPU: exit 1")
            c.check(r.err.startswith("dicomhist: --device cuda: "),
                    f"{args[0]} --device cuda without a GPU: the same message ({r.err.strip()!r})")
        c.check(not os.path.exists(os.path.join(tmp, "cuda-out")), "--device cuda: nothing written")
        # The batch starts CUDA beside its scan (session 19) and still says this first and alone,
        # before any input's own failure.
        r = t.run(binary, "equalize", "--device", "cuda", "-o", os.path.join(tmp, "cuda-out"),
                  os.path.join(tmp, "no-such-input"))
        c.equal((r.rc, r.out, r.err.count("\n")), (1, "", 1),
                "equalize --device cuda, no GPU, a missing input: exit 1, one line")
        c.check(r.err.startswith("dicomhist: --device cuda: "),
                f"equalize --device cuda, no GPU, a missing input: the GPU's message ({r.err!r})")

    # equalize and window write derived files and report them in the documented JSON lines.
    for command, args, window in (
            ("equalize", ["--window", "percentile:1", "--clip-limit", "2"], "percentile"),
            ("equalize", [], "none"),
            ("window", ["--window=40:400", "--function", "sigmoid", "--mode", "slice"],
             "center-width")):
        outdir = os.path.join(tmp, f"{command}-{window}")
        png = os.path.join(tmp, f"{command}-{window}-png")
        r = t.run(binary, command, "--json", *args, "--png", png, "-o", outdir,
                  os.path.join(shared, "series", "ct5n"), missing)
        c.equal(r.rc, 1, f"{command} {args} with a missing input: exit status 1")
        c.check(r.err.startswith(f"dicomhist: {missing}: "), f"{command}: names the missing file")
        recs = r.json_lines()
        if not c.equal(len(recs), 1, f"{command} {args}: one record for the good input"):
            continue
        rec = recs[0]
        c.equal(list(rec), derived_fields(command, window, True), f"{command} {args}: fields")
        c.equal((rec["operation"], rec["window"]), (command, window), f"{command}: window source")
        c.equal(len(rec["outputs"]), 5, f"{command}: one output per source file")
        c.check(all(os.path.isfile(f) for f in rec["outputs"]), f"{command}: outputs exist")
        c.equal(len(rec["windows"]), 5 if "slice" in args else 1, f"{command}: one window per table")
        # Run again: the manifest says the series is done, so nothing is redone (resume).
        r = t.run(binary, command, *args, "--png", png, "-o", outdir,
                  os.path.join(shared, "series", "ct5n"))
        c.equal((r.rc, r.out), (0, ""), f"{command} again: exit 0, nothing redone")
        c.check("5 done before" in r.err, f"{command} again: says the files were done before")
        # Other work into the same outputs: existing files are never replaced (exit 1).
        r = t.run(binary, command, *args, "--bits", "12", "-o", outdir,
                  os.path.join(shared, "series", "ct5n"))
        c.equal((r.rc, r.out), (1, ""), f"{command} other work into existing outputs: exit 1")
        c.check("already exists (not replaced)" in r.err, f"{command}: says why")


def check_write_errors(c, binary, ct, tmp):
    """stdout that cannot be written (a full disk) is an error: exit 1 and a message."""
    if not os.path.exists("/dev/full"):
        return
    for args in (["--help"], ["--version"], ["histogram", "--help"], ["help", "mi"],
                 ["info", ct], ["histogram", "--json", "--bins", "65536", ct], ["mi", ct, ct],
                 ["window", "--window", "40:400", "-o", os.path.join(tmp, "full"), ct]):
        with open("/dev/full", "w") as full:
            p = subprocess.run([binary, *args], stdout=full, stderr=subprocess.PIPE)
        err = p.stderr.decode("utf-8", "replace")
        c.equal(p.returncode, 1, f"{args} > /dev/full: exit status")
        c.check(err.startswith("dicomhist: standard output: write error"),
                f"{args} > /dev/full: says so ({err.strip()!r})")


def main():
    binary, shared = t.parse_argv()
    t.require_shared(shared)
    c = t.Checks()
    tmp = tempfile.mkdtemp(prefix="dicomhist-cli-")
    try:
        check_usage(c, binary, os.path.join(shared, "pydicom_CT_small.dcm"))
        check_json_and_exit_statuses(c, binary, shared, tmp)
        check_csv(c, binary, shared, tmp)
        check_per_slice(c, binary, shared)
        check_text(c, binary, shared)
        check_device(c, binary, shared)
        check_usage_mi_and_derived(c, binary, os.path.join(shared, "pydicom_CT_small.dcm"), tmp)
        check_mi_and_derived(c, binary, shared, tmp)
        check_write_errors(c, binary, os.path.join(shared, "pydicom_CT_small.dcm"), tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c.finish()


if __name__ == "__main__":
    main()
