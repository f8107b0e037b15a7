#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_cli_voi_lut.py: `--window file` through a VOI LUT Sequence, against pydicom.

A CT slice of the sample data (modality values stored - 1024) and the X-ray projection get a VOI
LUT Sequence of two items written by pydicom (first mapped value SS, 8- and 16-bit entries, a
table that rises, folds and clamps), beside their WindowCenter/Width, which the VOI LUT must win
over (as pydicom's apply_voi_lut prefers it). `dicomhist window --window file` must give the
table entry of each modality value (clamped to the table's input range) scaled to the output
bits, computed here with numpy, and for a 16-bit table with 16 output bits exactly pydicom's
apply_voi of apply_modality_lut (pydicom 3.0 indexes an 8-bit table through uint8 offsets,
which wrap beyond 255 entries, so it is no reference there). The derivation must name the item
used ("VOI LUT 1 of 2 '...'"); `equalize --window file` must report the table's input range as
its window.

Usage: test_cli_voi_lut.py DICOMHIST_BINARY SHARED_DICOM_DIR   (exit 77 without numpy/pydicom)
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_testlib as t  # noqa: E402

SAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sample_data")


def with_voi_lut(source, target, first, bits, seed):
    """source with a two-item VOI LUT Sequence; returns (first item's table, dataset)."""
    import numpy as np
    from pydicom import dcmread
    from pydicom.dataset import Dataset
    from pydicom.sequence import Sequence
    rng = np.random.default_rng(seed)
    entries = 3000
    top = (1 << bits) - 1
    x = np.arange(entries)
    table = np.clip(np.round(top * (0.5 + 0.5 * np.sin(x / 400.0))) + rng.integers(-3, 4, entries),
                    0, top).astype(np.uint16)
    ds = dcmread(source)
    items = []
    for k, name in enumerate(("BRAIN", "BONE")):
        item = Dataset()
        item.LUTDescriptor = [entries, first, bits]
        item["LUTDescriptor"].VR = "SS"
        item.LUTExplanation = name
        item.LUTData = [int(v) for v in (table if k == 0 else table[::-1])]
        item["LUTData"].VR = "US"
        items.append(item)
    ds.VOILUTSequence = Sequence(items)
    ds.save_as(target)
    return table, dcmread(target)


def main():
    binary, _ = t.parse_argv()
    try:
        import numpy as np
        import warnings
        from pydicom.pixels import apply_modality_lut, apply_voi
        warnings.simplefilter("ignore")  # apply_voi warns on the float values of a rescale
    except ImportError as e:
        t.skip(f"Python module missing: {e.name}")
    ct_folder = os.path.join(SAMPLE, "ct_phantom")
    sources = [os.path.join(SAMPLE, "xray_projection.dcm")]
    if os.path.isdir(ct_folder):
        sources.append(os.path.join(ct_folder, sorted(os.listdir(ct_folder))[0]))
    sources = [s for s in sources if os.path.isfile(s)]
    if not sources:
        t.skip("sample data absent")
    c = t.Checks()
    with tempfile.TemporaryDirectory() as work:
        for k, source in enumerate(sources):
            for bits, first, out_bits in ((16, -1024, 16), (8, 200 if k == 0 else -1000, 12)):
                path = os.path.join(work, f"voi_{k}_{bits}.dcm")
                table, ds = with_voi_lut(source, path, first, bits, seed=k * 10 + bits)
                modality = apply_modality_lut(t.stored_values(ds)[0], ds)
                index = np.clip(np.floor(modality).astype(np.int64) - first, 0, len(table) - 1)
                want = table[index].astype(np.int64) * ((1 << out_bits) - 1) // ((1 << bits) - 1)
                if bits == 16:
                    c.check(np.array_equal(want, apply_voi(modality, ds).astype(np.int64)),
                            "the numpy reference is pydicom's apply_voi for a 16-bit table")
                out = os.path.join(work, f"out_{k}_{bits}")
                label = f"window --window file {os.path.basename(source)} ({bits}-bit table)"
                r = t.run(binary, "window", "--window", "file", "--bits", str(out_bits), "--json",
                          "-o", out, path)
                if not c.equal(r.rc, 0, f"{label}: exit status ({r.err.strip()!r})"):
                    continue
                rec = r.json_lines()[0]
                c.check("VOI LUT 1 of 2 'BRAIN'" in rec["derivation"],
                        f"{label}: derivation names the item: {rec['derivation']!r}")
                c.equal(rec.get("function"), "VOI_LUT", f"{label}: function")
                got = np.asarray(t.read_dataset(rec["outputs"][0]).pixel_array)
                c.check(np.array_equal(got.astype(np.int64), want.astype(np.int64)),
                        f"{label}: pixels are the table's entries "
                        f"({int(np.sum(got != want))} differ)")
                c.check(len(np.unique(want)) > 20, f"{label}: the table is used, not a constant")
                r = t.run(binary, "equalize", "--window", "file", "--json", "-o", out + "_eq", path)
                if c.equal(r.rc, 0, f"equalize {label}: exit status ({r.err.strip()!r})"):
                    w = r.json_lines()[0]["windows"][0]
                    c.equal((w["lo"], w["hi"]), (first, first + len(table) - 1),
                            f"equalize {label}: window is the table's input range")
    c.finish()


if __name__ == "__main__":
    main()
