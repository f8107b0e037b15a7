#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_cli_no_dictionary.py: reading does not depend on DCMTK's data dictionary file.

Debian's DCMTK loads /usr/share/libdcmtk17/dicom.dic at run time (or what DCMDICTPATH names)
and has no built-in copy; a host without the file parsed implicit VR files into nonsense. Here
every sample and real file (implicit VR ones among them) is read twice, once as usual and once
with DCMDICTPATH naming a file that does not exist, and `info`, `histogram` (stored and
modality units) and the derived file of `equalize` must come out the same, refusals included.

Usage: test_cli_no_dictionary.py DICOMHIST_BINARY SHARED_DICOM_DIR [--real-files]
Without --real-files the sample data (found beside this script) is read, with it the real files
of SHARED_DICOM_DIR; exit 77 when that folder is absent, so a run without it says skipped.
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_testlib as t  # noqa: E402

HIDDEN = {"DCMDICTPATH": "/nonexistent/dicom.dic"}
SAMPLE_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sample_data")


def inputs(folder):
    """Every DICOM input below folder: files, and series folders as one input each."""
    found = []
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        dicom = sorted(f for f in files if not f.endswith((".md", ".tsv", ".txt", ".py", ".c",
                                                             ".cmake")) and f != "CMakeLists.txt")
        if os.path.basename(root).startswith(("ct_phantom", "ct5n", "ct2_uneven")):
            found.append(root)
        else:
            found += [os.path.join(root, f) for f in dicom]
    return found


def same(c, binary, args, label):
    usual = t.run(binary, *args)
    hidden = t.run(binary, *args, env=HIDDEN)
    c.equal(hidden.rc, usual.rc, f"{label}: exit status (stderr {hidden.err.strip()!r})")
    c.equal(hidden.out, usual.out, f"{label}: output")
    c.equal(hidden.err, usual.err, f"{label}: messages")
    return usual


def main():
    real_files = sys.argv[3:] == ["--real-files"]
    if real_files:
        del sys.argv[3]
    binary, shared = t.parse_argv()
    if real_files:
        t.require_shared(shared)
        targets = inputs(shared)
    elif os.path.isdir(SAMPLE_DATA):
        targets = inputs(SAMPLE_DATA)
    else:
        t.skip(f"{SAMPLE_DATA} is absent")
    c = t.Checks()
    implicit = 0
    for target in targets:
        r = same(c, binary, ["info", "--json", target], f"info {target}")
        implicit += '"transfer_syntax":"1.2.840.10008.1.2"' in r.out
        if r.rc != 0:
            continue
        same(c, binary, ["histogram", "--json", target], f"histogram {target}")
        same(c, binary, ["histogram", "--json", "--units", "modality", target],
             f"histogram --units modality {target}")
    # sample_data holds one implicit VR file, the shared real files more
    c.check(implicit >= 1,
            f"implicit VR files among the inputs ({implicit})")

    # A derived file written without the dictionary reads back with the same values.
    source = os.path.join(SAMPLE_DATA, "xray_projection_implicit.dcm")
    if not real_files and os.path.isfile(source):
        with tempfile.TemporaryDirectory() as usual_dir, tempfile.TemporaryDirectory() as hidden_dir:
            a = t.run(binary, "equalize", "-o", usual_dir, source)
            b = t.run(binary, "equalize", "-o", hidden_dir, source, env=HIDDEN)
            c.equal((a.rc, b.rc), (0, 0), f"equalize {source}: exit status ({b.err.strip()!r})")
            name = os.path.basename(source)
            for env in (None, HIDDEN):
                ha = t.run(binary, "histogram", "--json", os.path.join(usual_dir, name), env=env)
                hb = t.run(binary, "histogram", "--json", os.path.join(hidden_dir, name), env=env)
                c.equal(hb.out.replace(hidden_dir, usual_dir), ha.out,
                        f"equalize {source}: derived pixels (read {'without' if env else 'with'} "
                        "the dictionary)")
    c.finish()


if __name__ == "__main__":
    main()
