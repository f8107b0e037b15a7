#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make_sv1_sweep.py DEST: single-frame JPEG lossless SV1 (1.2.840.10008.1.2.4.70) DICOM files
for bench/probe_sv1 (issue 24): where nvJPEG's lossless backend decodes exactly. Axes:
- frame size, 16 to 512 and beyond, square and not, widths that are no multiple of 8 or 16;
- precision 2 to 16 bits;
- content: CT-like noise, a smooth ramp, a constant frame (almost no coded data);
- encoder: DCMTK's dcmcjpeg (+e1, what archives hold) and the minimal encoder below, which adds
  restart intervals (DRI, RSTn markers every k rows) that dcmcjpeg cannot write.
Names say the case: sv1_<rows>x<cols>_<bits>b_<content>_<encoder>[_ri<rows>].dcm. Each file's
reference values are DCMTK's CPU read (the probe compares against it); this script checks its own
encoder's output with dcmdjpeg before writing a file.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import pydicom
from pydicom.encaps import encapsulate

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_streams import ct_like, dataset, native, save  # noqa: E402
from sv1_encoder import check_with_dcmtk, encode_sv1  # noqa: E402
from pydicom.uid import ExplicitVRLittleEndian  # noqa: E402

SV1 = "1.2.840.10008.1.2.4.70"


def content(kind, rows, cols, bits, seed):
    rng = np.random.default_rng(seed)
    top = (1 << bits) - 1
    if kind == "const":
        return np.full((rows, cols), top // 3, np.int64)
    y, x = np.mgrid[0:rows, 0:cols]
    if kind == "ramp":
        return (x * 7 + y * 3) % (top + 1)
    ct = ct_like(1, seed)[0]  # 512x512 12-bit
    reps = (-(-rows // 512), -(-cols // 512))
    ct = np.tile(ct, reps)[:rows, :cols]
    scaled = ct * top // 4095 if bits >= 12 else ct >> (12 - bits)
    return np.clip(scaled + rng.integers(-1, 2, (rows, cols)), 0, top)


def write_case(dest, work, px, bits, kind, encoder, restart_rows=0):
    rows, cols = px.shape
    name = f"sv1_{rows}x{cols}_{bits}b_{kind}_{encoder}" + (f"_ri{restart_rows}" if restart_rows else "")
    allocated = 8 if bits <= 8 else 16
    pixels = px[None]
    twin = dataset(pixels, bits, False, allocated, ExplicitVRLittleEndian, name)
    twin.PixelData = native(pixels, bits, False, allocated)
    native_path = os.path.join(work, name + ".native.dcm")
    save(twin, native_path)
    path = os.path.join(dest, name + ".dcm")
    if encoder == "dcmtk":
        subprocess.run(["dcmcjpeg", "+e1", native_path, path], check=True)
        return
    ds = dataset(pixels, bits, False, allocated, SV1, name)
    ds.PixelData = encapsulate([encode_sv1(px, bits, restart_rows)], has_bot=True)
    save(ds, path)
    check_with_dcmtk(path, px[None])  # our encoder must give back what it was given


def sweep(dest):
    os.makedirs(dest, exist_ok=True)
    sizes = [(16, 16), (17, 23), (24, 24), (32, 32), (48, 48), (61, 97), (64, 64), (97, 61),
             (96, 96), (100, 100), (127, 129), (128, 128), (160, 160), (192, 192), (200, 301),
             (224, 224), (255, 257), (256, 256), (300, 200), (320, 320), (384, 384), (512, 512),
             (16, 512), (512, 16), (1024, 64), (64, 1024)]
    seed = 160
    with tempfile.TemporaryDirectory() as work:
        for rows, cols in sizes:
            for bits in (8, 12, 16):
                seed += 1
                write_case(dest, work, content("ct", rows, cols, bits, seed), bits, "ct", "dcmtk")
        for bits in range(2, 17):
            for rows, cols in ((64, 64),):
                if bits in (8, 12, 16):
                    continue
                seed += 1
                write_case(dest, work, content("ct", rows, cols, bits, seed), bits, "ct", "dcmtk")
        for kind in ("ramp", "const"):
            for rows, cols in ((64, 64), (128, 128), (256, 256), (512, 512)):
                seed += 1
                write_case(dest, work, content(kind, rows, cols, 12, seed), 12, kind, "dcmtk")
        for rows, cols in ((16, 16), (64, 64), (97, 61), (128, 128), (256, 256), (512, 512)):
            for ri in (0, 1, 8):
                seed += 1
                write_case(dest, work, content("ct", rows, cols, 12, seed), 12, "ct", "ours", ri)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_sv1_sweep.py DEST")
    sweep(sys.argv[1])


if __name__ == "__main__":
    main()
