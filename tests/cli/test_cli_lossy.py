#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_cli_lossy.py: lossy images are said to be lossy, and stay so in derived files.

Files made here with DCMTK's tools from the sample data: a lossy JPEG (extended, 12-bit) as
dcmcjpeg writes it (LossyImageCompression 01, ratio, method), the same with those attributes
removed (the syntax alone must tell), a lossless file that says LossyImageCompression 01 with a
ratio and method, and the lossless original; plus the real JPEG 2000 (.91) file when present.
For each: `info --json` gives `lossy` and `lossy_method`, the text output has a `lossy` line
exactly when lossy, and the file `equalize` derives keeps LossyImageCompression 01 with the
source's ratio and method (or the syntax's method), and says nothing of the kind for a lossless
source. Attributes are read back with dcmdump, not with the library.

Usage: test_cli_lossy.py DICOMHIST_BINARY SHARED_DICOM_DIR   (exit 77 without DCMTK's tools)
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_testlib as t  # noqa: E402

SAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sample_data",
                      "xray_projection.dcm")


def tags(path):
    """LossyImageCompression, ratio and method as dcmdump prints them ('' when absent)."""
    out = subprocess.run(["dcmdump", "+P", "0028,2110", "+P", "0028,2112", "+P", "0028,2114",
                          path], capture_output=True, text=True).stdout
    found = {}
    for tag in ("2110", "2112", "2114"):
        m = re.search(r"\(0028," + tag + r"\) \w\w \[([^\]]*)\]", out)
        found[tag] = m.group(1) if m else ""
    return found["2110"], found["2112"], found["2114"]


def tool(*args):
    subprocess.run(args, check=True, capture_output=True)


def main():
    binary, shared = t.parse_argv()
    for name in ("dcmcjpeg", "dcmodify", "dcmdump"):
        if shutil.which(name) is None:
            t.skip(f"DCMTK's {name} is absent")
    if not os.path.isfile(SAMPLE):
        t.skip(f"{SAMPLE} is absent")
    c = t.Checks()
    with tempfile.TemporaryDirectory() as work:
        jpeg = os.path.join(work, "jpeg_extended.dcm")
        tool("dcmcjpeg", "+ee", SAMPLE, jpeg)
        bare = os.path.join(work, "jpeg_without_attributes.dcm")
        shutil.copy(jpeg, bare)
        tool("dcmodify", "-nb", "-ea", "(0028,2110)", "-ea", "(0028,2112)", "-ea", "(0028,2114)",
             bare)
        said = os.path.join(work, "lossless_saying_01.dcm")
        shutil.copy(SAMPLE, said)
        tool("dcmodify", "-nb", "-i", "(0028,2110)=01", "-i", "(0028,2112)=12.5\\3",
             "-i", "(0028,2114)=ISO_10918_1\\ISO_15444_1", said)
        cases = [  # (file, lossy, method said by info, attributes the derived file must carry)
            (jpeg, True, "ISO_10918_1", ("01",) + tags(jpeg)[1:]),
            (bare, True, "ISO_10918_1", ("01", "", "ISO_10918_1")),
            (said, True, "ISO_10918_1\\ISO_15444_1", ("01", "12.5\\3", "ISO_10918_1\\ISO_15444_1")),
            (SAMPLE, False, "", ("", "", "")),
        ]
        j2k = os.path.join(os.path.normpath(shared) + "-jpeg2000", "pydicom-data_MR2_J2KI.dcm")
        if os.path.isfile(j2k):
            want = tags(j2k)
            cases.append((j2k, True, want[2] or "ISO_15444_1",
                          ("01", want[1], want[2] or "ISO_15444_1")))
        c.check(tags(jpeg)[0] == "01" and tags(bare) == ("", "", ""), "test files made")
        for k, (path, lossy, method, derived_tags) in enumerate(cases):
            r = t.run(binary, "info", "--json", path)
            if not c.equal(r.rc, 0, f"info {path}: exit status ({r.err.strip()!r})"):
                continue
            got = r.json_lines()[0]
            c.equal(got.get("lossy"), lossy, f"info {path}: lossy")
            c.equal(got.get("lossy_method"), method, f"info {path}: lossy_method")
            text = t.run(binary, "info", path).out
            c.equal(bool(re.search(r"^  lossy +yes", text, re.M)), lossy,
                    f"info {path}: a 'lossy' line exactly when lossy")
            out = os.path.join(work, f"derived{k}")
            r = t.run(binary, "equalize", "-o", out, path)
            if not c.equal(r.rc, 0, f"equalize {path}: exit status ({r.err.strip()!r})"):
                continue
            derived = os.path.join(out, os.path.basename(path))
            c.equal(tags(derived), derived_tags, f"equalize {path}: lossy attributes kept")
            r = t.run(binary, "info", "--json", derived)
            c.equal(r.json_lines()[0].get("lossy") if r.rc == 0 else None, lossy,
                    f"info of the file derived from {path}: lossy")
    c.finish()


if __name__ == "__main__":
    main()
