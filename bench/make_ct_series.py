#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make_ct_series.py: writes a CT-like DICOM series for the host equalization benchmark
(bench/bench_equalize_host.sh): SLICES files of SIZE x SIZE, 12 bits stored in 16 allocated,
unsigned, RescaleIntercept -1024, explicit VR little endian, one study and series.

The body is an ellipse of soft tissue with fat under the skin, two lungs, a spine and ribs
whose share changes along the series, over air, with seeded noise: a histogram with the peaks
and tails of a real CT volume, not a flat or constant one. Same arguments, same pixels.

Usage: make_ct_series.py OUTDIR [SLICES=64] [SIZE=512]
"""
import os
import sys

import numpy as np
import pydicom
from pydicom.dataset import Dataset, FileMetaDataset
from pydicom.uid import CTImageStorage, ExplicitVRLittleEndian, generate_uid

ROOT = "1.2.826.0.1.3680043.10.1433."  # any seeded prefix: these files never leave the machine


def phantom_slice(z, slices, size, rng):
    """Hounsfield units of slice z, as int32."""
    y, x = np.mgrid[0:size, 0:size].astype(np.float32) / (size / 2) - 1.0
    hu = np.full((size, size), -1000.0, dtype=np.float32)  # air
    t = z / max(slices - 1, 1)
    body = (x / 0.85) ** 2 + (y / 0.65) ** 2 <= 1
    inner = (x / 0.78) ** 2 + (y / 0.58) ** 2 <= 1
    hu[body] = -100  # fat under the skin
    hu[inner] = 40  # soft tissue
    lung_r = 0.25 + 0.1 * np.sin(np.pi * t)
    for cx in (-0.35, 0.35):
        hu[((x - cx) / lung_r) ** 2 + ((y + 0.05) / (lung_r * 1.3)) ** 2 <= 1] = -850
    hu[(x / 0.09) ** 2 + ((y - 0.42) / 0.09) ** 2 <= 1] = 700  # spine
    ring = np.abs(np.hypot(x / 0.74, y / 0.54) - 1) < 0.02 + 0.02 * t
    hu[ring & inner] = 500  # ribs
    noise = rng.normal(0.0, 12.0, size=(size, size)).astype(np.float32)
    return np.rint(hu + noise).astype(np.int32)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    slices = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    size = int(sys.argv[3]) if len(sys.argv) > 3 else 512
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(1433)
    study = generate_uid(ROOT, entropy_srcs=["study", str(slices), str(size)])
    series = generate_uid(ROOT, entropy_srcs=["series", str(slices), str(size)])
    frame = generate_uid(ROOT, entropy_srcs=["frame", str(slices), str(size)])
    for z in range(slices):
        stored = np.clip(phantom_slice(z, slices, size, rng) + 1024, 0, 4095).astype(np.uint16)
        sop = generate_uid(ROOT, entropy_srcs=["sop", str(slices), str(size), str(z)])
        meta = FileMetaDataset()
        meta.MediaStorageSOPClassUID = CTImageStorage
        meta.MediaStorageSOPInstanceUID = sop
        meta.TransferSyntaxUID = ExplicitVRLittleEndian
        ds = Dataset()
        ds.file_meta = meta
        ds.SOPClassUID = CTImageStorage
        ds.SOPInstanceUID = sop
        ds.StudyInstanceUID = study
        ds.SeriesInstanceUID = series
        ds.FrameOfReferenceUID = frame
        ds.Modality = "CT"
        ds.ImageType = ["ORIGINAL", "PRIMARY", "AXIAL"]
        ds.PatientName = "Bench^Phantom"
        ds.PatientID = "BENCH-EQ"
        ds.StudyDate = "20240101"
        ds.SeriesDescription = "CT-like benchmark series"
        ds.SeriesNumber = 1
        ds.InstanceNumber = z + 1
        ds.ImagePositionPatient = [-250.0, -250.0, -2.5 * z]
        ds.ImageOrientationPatient = [1, 0, 0, 0, 1, 0]
        ds.PixelSpacing = [500.0 / size, 500.0 / size]
        ds.SliceThickness = 2.5
        ds.SamplesPerPixel = 1
        ds.PhotometricInterpretation = "MONOCHROME2"
        ds.Rows = size
        ds.Columns = size
        ds.BitsAllocated = 16
        ds.BitsStored = 12
        ds.HighBit = 11
        ds.PixelRepresentation = 0
        ds.RescaleIntercept = -1024
        ds.RescaleSlope = 1
        ds.RescaleType = "HU"
        ds.WindowCenter = 40
        ds.WindowWidth = 400
        ds.PixelData = stored.tobytes()
        ds.save_as(os.path.join(out, f"slice{z + 1:04d}.dcm"), enforce_file_format=True)


if __name__ == "__main__":
    main()
