#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_cli_gsps.py: `dicomhist equalize|window --output-kind gsps` against two independent tools.

For every case the same command is run twice, once writing the derived series and once the
Grayscale Softcopy Presentation State. Then:
- dciodvfy (dicom3tools) reports no error in the presentation state;
- dcmp2pgm (DCMTK's dcmpstat) renders each source image (each frame) through the state, and
  the 8-bit PGM equals dcmp2pgm's rendering of the derived file, and equals the derived file's
  stored values v (read by pydicom) under the bit-depth mapping DCMTK applies to a VOI LUT of
  b output bits on an 8-bit display: v >> (b - 8) (the top 8 bits), inverted (255 - x) for a
  MONOCHROME1 source, whose state says INVERSE.
Cases: every CR, DX and CT file of ../shared/dicom (skipped, exit 77, where absent or where a
tool is missing), its series folders per volume and per slice, a multi-frame MR per frame,
sample_data, 8, 12 and 16 output bits, window/level, and a constant image (one distinct value).

Usage: test_cli_gsps.py DICOMHIST_BINARY SHARED_DICOM_DIR
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_testlib as t  # noqa: E402

SAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sample_data")


def read_pgm(path):
    import numpy as np
    raw = open(path, "rb").read()
    m = re.match(rb"P5\s+(\d+)\s+(\d+)\s+(\d+)\s", raw)
    w, h, maxval = int(m.group(1)), int(m.group(2)), int(m.group(3))
    if maxval != 255:
        raise ValueError(f"{path}: maxval {maxval}")
    return np.frombuffer(raw[m.end():m.end() + w * h], dtype=np.uint8).reshape(h, w)


def render(tmp, image, frame, pstate=None):
    out = os.path.join(tmp, "render.pgm")
    args = ["dcmp2pgm", "-f", str(frame)] + (["-p", pstate] if pstate else []) + [image, out]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr.strip()
    return read_pgm(out), ""


def source_files(path):
    if os.path.isdir(path):
        return sorted(os.path.join(path, f) for f in os.listdir(path))
    return [path]


def check_case(c, binary, tmp, name, path, args):
    import numpy as np
    derived_dir = os.path.join(tmp, name, "derived")
    gsps_dir = os.path.join(tmp, name, "gsps")
    r_d = t.run(binary, *args, "--json", "-o", derived_dir, path)
    r_g = t.run(binary, *args, "--json", "--output-kind", "gsps", "-o", gsps_dir, path)
    if not c.equal((r_d.rc, r_g.rc), (0, 0), f"{name}: both runs succeed ({r_d.err}{r_g.err})"):
        return
    rec = r_g.json_lines()[0]
    c.equal(rec["output_kind"], "gsps", f"{name}: JSON output_kind")
    c.equal(len(rec["outputs"]), 1, f"{name}: one presentation state per volume")
    pstate = rec["outputs"][0]
    c.check(pstate.endswith(".gsps.dcm"), f"{name}: {pstate} is named NAME.gsps.dcm")
    v = subprocess.run(["dciodvfy", pstate], capture_output=True, text=True)
    errors = [line for line in (v.stdout + v.stderr).splitlines() if line.startswith("Error")]
    c.equal(errors, [], f"{name}: dciodvfy errors")
    bits = rec["bits"]
    pstate = renderable_state(tmp, pstate)
    derived = {os.path.basename(f): f for f in r_d.json_lines()[0]["outputs"]}
    for src in source_files(path):
        ds = t.read_dataset(src)
        frames = int(ds.get("NumberOfFrames", 1) or 1)
        mono1 = ds.PhotometricInterpretation == "MONOCHROME1"
        out = derived[os.path.basename(src)]
        stored = np.asarray(t.read_dataset(out).pixel_array).reshape(frames, ds.Rows, ds.Columns)
        image = renderable(tmp, src, t.read_dataset(src))
        for f in range(1, frames + 1):
            what = f"{name}: {os.path.basename(src)} frame {f}"
            got, err = render(tmp, image, f, pstate)
            if not c.check(got is not None, f"{what}: dcmp2pgm renders through the state: {err}"):
                continue
            want_render, err = render(tmp, out, f)
            if c.check(want_render is not None, f"{what}: dcmp2pgm renders the derived file"):
                c.check(np.array_equal(got, want_render),
                        f"{what}: state's rendering == derived file's rendering "
                        f"({int((got != want_render).sum())} pixels differ)")
            check_mapping(c, what, stored[f - 1].astype(np.int64), bits, got.astype(np.int64),
                          mono1)


def renderable_state(tmp, pstate):
    """The state as dcmpstat takes it: dcmpstat 3.6.7 refuses a presentation state whose
    PatientName is empty ("invalid data structures"), though the Patient module makes it type 2
    and the state keeps the source's (empty) name as it is; a copy with a name is rendered."""
    ds = t.read_dataset(pstate)
    if str(ds.get("PatientName", "")):
        return pstate
    ds.PatientName = "Test^Renderable"
    path = os.path.join(tmp, "renderable", "named-" + os.path.basename(pstate))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    ds.save_as(path, enforce_file_format=True)
    return path


def check_mapping(c, what, stored, bits, got, mono1):
    """MONOCHROME2: the rendering is the top 8 bits of the derived stored values exactly.
    MONOCHROME1: dcmpstat inverts with its own rounding, within 1 of 255 minus the top 8 bits
    (measured: 0 -> 255, 1 -> 254, ..., 254 -> 2, 255 -> 1 for 8 bits) and one decreasing
    function of the stored value, the same for the state and the derived file (checked above)."""
    import numpy as np
    top = stored >> (bits - 8)
    if not mono1:
        c.check(np.array_equal(got, top), f"{what}: rendering == derived stored values' top 8 "
                f"bits ({int((got != top).sum())} differ)")
        return
    c.check(int(np.abs(got - (255 - top)).max(initial=0)) <= 1,
            f"{what}: rendering within 1 of 255 - top 8 bits")
    pairs = sorted(set(zip(stored.flat, got.flat)))
    c.check(all(a[0] < b[0] and a[1] >= b[1] for a, b in zip(pairs, pairs[1:])),
            f"{what}: rendering is one non-increasing function of the stored value")


def constant_image(tmp, source):
    """A copy of source with every pixel the same value: one distinct value."""
    import numpy as np
    ds = t.read_dataset(source)
    a = np.asarray(ds.pixel_array)
    ds.PixelData = np.full_like(a, a.flat[0]).tobytes()
    ds.file_meta.TransferSyntaxUID = "1.2.840.10008.1.2.1"
    path = os.path.join(tmp, "constant.dcm")
    ds.save_as(path, enforce_file_format=True)
    return path


def renderable(tmp, source, ds):
    """The source as dcmp2pgm can render it: itself, or a copy (the same SOP instance, which the
    state references by UID) with its stored values decoded by pydicom and written uncompressed,
    and a PatientName where it has none (as for the state, renderable_state). dcmp2pgm 3.6.7
    registers no decompression codec, and its RLE decoder misreads fo-dicom's CT1_RLE_FRAGS."""
    import numpy as np
    compressed = ds.file_meta.TransferSyntaxUID.is_compressed
    if not compressed and str(ds.get("PatientName", "")):
        return source
    if compressed:
        v = t.stored_values(ds)
        ds.PixelData = v.astype(np.int16 if int(ds.PixelRepresentation) else np.uint16).tobytes()
        ds.BitsAllocated, ds.HighBit = 16, int(ds.BitsStored) - 1
        ds.file_meta.TransferSyntaxUID = "1.2.840.10008.1.2.1"
    ds.PatientName = "Test^Renderable"
    path = os.path.join(tmp, "renderable", os.path.basename(source))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    ds.save_as(path, enforce_file_format=True)
    return path


def main():
    binary, shared = t.parse_argv()
    t.require_shared(shared)
    t.import_reference_modules()
    for tool in ("dciodvfy", "dcmp2pgm"):
        if shutil.which(tool) is None:
            t.skip(f"{tool} is not installed")
    c = t.Checks()
    eq = ["equalize"]
    cases = []
    with open(os.path.join(shared, "MANIFEST.tsv")) as manifest:
        for row in list(manifest)[1:]:
            f = row.split("\t")
            if f[3] in ("CR", "DX", "CT") and not f[0].startswith(("malformed/", "unsupported/")) \
                    and not f[0].startswith("series/"):
                cases.append((f[0].replace("/", "_"), os.path.join(shared, f[0]), eq))
    cases += [
        ("ct5n_volume", os.path.join(shared, "series", "ct5n"), eq),
        ("ct5n_slice", os.path.join(shared, "series", "ct5n"), eq + ["--mode", "slice"]),
        ("ct2_uneven_window", os.path.join(shared, "series", "ct2_uneven"),
         ["window", "--window", "40:400"]),
        ("cr1_bits8", os.path.join(shared, "cr", "cr1_6154.dcm"), eq + ["--bits", "8"]),
        ("ct_bits12", os.path.join(shared, "pydicom_CT_small.dcm"),
         eq + ["--bits", "12", "--window", "percentile:1"]),
        ("cr2_window_sigmoid", os.path.join(shared, "cr", "cr2_6247.dcm"),
         ["window", "--window", "1600:2000", "--function", "sigmoid", "--bits", "8"]),
        ("sample_ct_phantom", os.path.join(SAMPLE, "ct_phantom"), eq + ["--clip-limit", "2"]),
        ("sample_xray", os.path.join(SAMPLE, "xray_projection.dcm"), eq),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        cases.append(("constant", constant_image(tmp, os.path.join(shared, "pydicom_CT_small.dcm")),
                      eq))
        # Multi-frame: one table per frame, each referenced by ReferencedFrameNumber.
        cases.append(("emri_frames_slice", os.path.join(shared, "pydicom-data_emri_small.dcm"),
                      eq + ["--mode", "slice"]))
        for name, path, args in cases:
            check_case(c, binary, tmp, name, path, args)
    c.finish()


if __name__ == "__main__":
    main()
