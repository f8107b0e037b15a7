#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_sample_data.py: checks the bundled sample data with decoders that are not ours.

pydicom (with pylibjpeg for JPEG lossless and JPEG-LS) must read every compressed variant to the
same stored values as the uncompressed original, and the files must say what sample_data/README.md
promises: geometry, pixel format, rescale, photometric, series layout. dciodvfy (dicom3tools),
when installed, must find no error against the CT and CR IODs.

Usage: check_sample_data.py SAMPLE_DATA_DIR. Exits 77 (skipped) without pydicom, pylibjpeg or
pylibjpeg-openjpeg.
"""
import glob
import os
import shutil
import subprocess
import sys

SKIP = 77

try:
    import numpy as np
    import pydicom
    import pylibjpeg  # noqa: F401  (registers the JPEG and JPEG-LS decoders with pydicom)
    import openjpeg  # noqa: F401  (pylibjpeg-openjpeg: the JPEG 2000 decoder)
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(SKIP)

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)


def series(folder):
    """Datasets of a series folder, keyed by file name."""
    return {os.path.basename(p): pydicom.dcmread(p) for p in sorted(glob.glob(f"{folder}/*.dcm"))}


def main(root):
    ct = series(f"{root}/ct_phantom")
    check(len(ct) == 24, f"ct_phantom has {len(ct)} slices, expected 24")
    for name, d in ct.items():
        check(d.file_meta.TransferSyntaxUID == "1.2.840.10008.1.2.1", f"{name}: syntax")
        check((d.Rows, d.Columns, d.BitsAllocated, d.BitsStored, d.HighBit) == (64, 64, 16, 12, 11),
              f"{name}: pixel format")
        check(d.PixelRepresentation == 0 and d.PhotometricInterpretation == "MONOCHROME2",
              f"{name}: representation")
        check(float(d.RescaleIntercept) == -1024 and float(d.RescaleSlope) == 1, f"{name}: rescale")
        check(d.pixel_array.max() < 4096, f"{name}: value above 12 bits")

    # Ordering: positions 5 mm apart, and neither file names nor instance numbers ascend with z.
    by_name = [ct[n] for n in sorted(ct)]
    z = [float(d.ImagePositionPatient[2]) for d in by_name]
    check(sorted(np.diff(sorted(z))) == [5.0] * 23, f"slice positions not 5 mm apart: {sorted(z)}")
    check(z != sorted(z), "file names already in position order: shuffling lost")
    by_z = sorted(by_name, key=lambda d: float(d.ImagePositionPatient[2]))
    check([int(d.InstanceNumber) for d in by_z] == list(range(24, 0, -1)),
          "instance numbers should fall as z rises")
    check(len({d.SeriesInstanceUID for d in by_name}) == 1, "ct_phantom spans several series")

    # The phantom looks like a CT: air, fat, soft tissue, bone and a metal marker all present.
    hu = np.stack([d.pixel_array for d in by_z]).astype(np.int32) - 1024
    for lo, hi, what in [(-1100, -900, "air"), (-150, -50, "fat"), (0, 100, "soft tissue"),
                         (600, 800, "bone"), (2900, 3100, "metal")]:
        check(((hu >= lo) & (hu < hi)).sum() > 0, f"no {what} voxels in the CT phantom")

    # Every compressed series decodes to the same values, file by file.
    uids = {by_name[0].SeriesInstanceUID}
    for folder, syntax in [("ct_phantom_jpeg_lossless", "1.2.840.10008.1.2.4.70"),
                           ("ct_phantom_rle", "1.2.840.10008.1.2.5"),
                           ("ct_phantom_jpeg_ls", "1.2.840.10008.1.2.4.80"),
                           ("ct_phantom_jpeg2000", "1.2.840.10008.1.2.4.90")]:
        variant = series(f"{root}/{folder}")
        check(sorted(variant) == sorted(ct), f"{folder}: not the same file names as ct_phantom")
        for name, d in variant.items():
            check(d.file_meta.TransferSyntaxUID == syntax, f"{folder}/{name}: syntax")
            check(np.array_equal(d.pixel_array, ct[name].pixel_array),
                  f"{folder}/{name}: values differ from ct_phantom/{name}")
            check(d.ImagePositionPatient == ct[name].ImagePositionPatient, f"{folder}/{name}: position")
        uids.add(next(iter(variant.values())).SeriesInstanceUID)

    xr = pydicom.dcmread(f"{root}/xray_projection.dcm")
    check((xr.Rows, xr.Columns, xr.BitsStored, xr.Modality) == (256, 256, 12, "CR"),
          "xray_projection: geometry")
    check(xr.PhotometricInterpretation == "MONOCHROME1", "xray_projection: not MONOCHROME1")
    x = xr.pixel_array
    # Under MONOCHROME1 the spine (centre) must be brighter, i.e. lower, than the air (corner).
    check(x[128, 128] + 1000 < x[5, 5], "xray_projection: spine not brighter than air")
    uids.add(xr.SeriesInstanceUID)
    for name, syntax in [("jpeg_lossless", "1.2.840.10008.1.2.4.70"), ("rle", "1.2.840.10008.1.2.5"),
                         ("jpeg_ls", "1.2.840.10008.1.2.4.80"), ("implicit", "1.2.840.10008.1.2"),
                         ("big_endian", "1.2.840.10008.1.2.2"),
                         ("deflated", "1.2.840.10008.1.2.1.99")]:
        d = pydicom.dcmread(f"{root}/xray_projection_{name}.dcm")
        check(d.file_meta.TransferSyntaxUID == syntax, f"xray_projection_{name}: syntax")
        check(np.array_equal(d.pixel_array, x), f"xray_projection_{name}: values differ")
        uids.add(d.SeriesInstanceUID)
    check(len(uids) == 12, f"{len(uids)} series UIDs for 12 variants: a folder scan would mix them")

    dciodvfy = shutil.which("dciodvfy")
    if dciodvfy:
        for f in [f"{root}/ct_phantom/IM0001.dcm", f"{root}/xray_projection.dcm"]:
            out = subprocess.run([dciodvfy, f], capture_output=True, text=True)
            errors = [l for l in (out.stdout + out.stderr).splitlines() if l.startswith("Error")]
            check(not errors, f"dciodvfy {f}: {errors}")
    else:
        print("note: dciodvfy not installed, IOD validation not run")

    for f in failures:
        print("FAIL:", f)
    if not failures:
        print(f"sample data OK ({len(ct) * 4 + 7} files)")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: check_sample_data.py SAMPLE_DATA_DIR", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
