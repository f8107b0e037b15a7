#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_cli_lut_series.py: a series whose slices carry a Modality LUT Sequence is one volume
when every slice has the same table, and refused as mixed (naming two files) when one slice's
table differs by a single entry: one volume cannot have two modality mappings.

Usage: test_cli_lut_series.py DICOMHIST_BINARY SHARED_DICOM_DIR   (exit 77 without pydicom or
the real file lut/pydicom-data_mlut_18.dcm)
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_testlib as t  # noqa: E402


def main():
    binary, shared = t.parse_argv()
    source = os.path.join(shared, "lut", "pydicom-data_mlut_18.dcm")
    if not os.path.isfile(source):
        t.skip(f"{source} is absent")
    try:
        import pydicom
    except ImportError:
        t.skip("Python module missing: pydicom")
    c = t.Checks()
    with tempfile.TemporaryDirectory() as folder:
        for k in range(3):
            ds = pydicom.dcmread(source)
            ds.SOPInstanceUID = f"{ds.SOPInstanceUID}.{k}"
            ds.InstanceNumber = k + 1
            ds.save_as(os.path.join(folder, f"s{k}.dcm"))
        r = t.run(binary, "info", "--json", folder)
        c.equal(r.rc, 0, f"info of three slices with one table: exit status ({r.err.strip()!r})")
        rec = r.json_lines()
        c.check(len(rec) == 1 and rec[0]["slices"] == 3 and rec[0]["modality_max"] == 65535,
                f"one volume of three slices through the table: {t.short(rec)}")
        ds = pydicom.dcmread(os.path.join(folder, "s2.dcm"))
        data = list(ds.ModalityLUTSequence[0].LUTData)
        data[5] += 1
        ds.ModalityLUTSequence[0].LUTData = data
        ds.save_as(os.path.join(folder, "s2.dcm"))
        r = t.run(binary, "info", "--json", folder)
        c.equal(r.rc, 1, "info with one slice's table changed: exit status")
        c.check("mixes slice formats" in r.err and "s2.dcm" in r.err and "Modality LUT" in r.err,
                f"the refusal names the differing file and the table: {r.err.strip()!r}")
    c.finish()


if __name__ == "__main__":
    main()
