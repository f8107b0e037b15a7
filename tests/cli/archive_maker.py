# SPDX-License-Identifier: MIT
"""archive_maker.py: a generated PACS export for the batch tests and the batch benchmark.

EXPORT/PATIENTnnn/STUDY1/SE0001/IM0001...: every study holds one series in a folder named
SE0001, as exports from one scanner are, so output names collide unless they keep the tree.
Pixels are seeded noise over a smooth ramp (a histogram with spread, never one value), CT with
a rescale to Hounsfield units or CR/DX without, explicit VR little endian. Same arguments, same
files (UIDs are seeded too).

Usage as a script: archive_maker.py OUTDIR STUDIES SLICES SIZE [MODALITY]
"""
import os
import sys

import numpy as np
import pydicom
from pydicom.dataset import Dataset, FileMetaDataset
from pydicom.uid import ExplicitVRLittleEndian, generate_uid

ROOT = "1.2.826.0.1.3680043.10.1434."  # seeded: these files never leave the machine
SOP_CLASS = {"CT": "1.2.840.10008.5.1.4.1.1.2", "CR": "1.2.840.10008.5.1.4.1.1.1",
             "DX": "1.2.840.10008.5.1.4.1.1.1.1"}


TAG = [""]  # make_archive's tag, so that two archives can hold different instances


def uid(*parts):
    return generate_uid(ROOT, entropy_srcs=[TAG[0]] + [str(p) for p in parts])


def write_slice(path, study, series, z, size, modality, rng, slices):
    y, x = np.mgrid[0:size, 0:size]
    ramp = (x + y) * (2000.0 / (2 * size)) + 300 * np.sin(z + study)
    stored = np.clip(ramp + rng.normal(0, 40, (size, size)) + 500, 0, 4095).astype(np.uint16)
    sop = uid("sop", study, series, z)
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = SOP_CLASS[modality]
    meta.MediaStorageSOPInstanceUID = sop
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = Dataset()
    ds.file_meta = meta
    ds.SOPClassUID = SOP_CLASS[modality]
    ds.SOPInstanceUID = sop
    ds.StudyInstanceUID = uid("study", study)
    ds.SeriesInstanceUID = uid("series", study, series)
    ds.FrameOfReferenceUID = uid("frame", study)
    ds.Modality = modality
    ds.ImageType = ["ORIGINAL", "PRIMARY", "AXIAL"]
    ds.PatientName = f"Archive^Patient{study:03d}"
    ds.PatientID = f"ARCH-{study:03d}"
    ds.StudyDate = "20240101"
    ds.SeriesDescription = "generated archive series"
    ds.SeriesNumber = series + 1
    ds.InstanceNumber = z + 1
    if modality == "CT":
        ds.ImagePositionPatient = [-100.0, -100.0, -2.5 * z]
        ds.ImageOrientationPatient = [1, 0, 0, 0, 1, 0]
        ds.RescaleIntercept = -1024
        ds.RescaleSlope = 1
        ds.RescaleType = "HU"
    ds.PixelSpacing = [0.5, 0.5]
    ds.SamplesPerPixel = 1
    ds.PhotometricInterpretation = "MONOCHROME2"
    ds.Rows = size
    ds.Columns = size
    ds.BitsAllocated = 16
    ds.BitsStored = 12
    ds.HighBit = 11
    ds.PixelRepresentation = 0
    ds.PixelData = stored.tobytes()
    ds.save_as(path, enforce_file_format=True)


def make_archive(out, studies, slices, size, modalities=("CT",), seed=1434, tag=""):
    """Writes the export under out/EXPORT and returns that folder."""
    TAG[0] = tag
    export = os.path.join(out, "EXPORT")
    rng = np.random.default_rng(seed)
    for study in range(studies):
        modality = modalities[study % len(modalities)]
        folder = os.path.join(export, f"PATIENT{study:03d}", "STUDY1", "SE0001")
        os.makedirs(folder, exist_ok=True)
        count = slices if modality == "CT" else 1
        for z in range(count):
            write_slice(os.path.join(folder, f"IM{z + 1:04d}"), study, 0, z, size, modality, rng,
                        count)
    return export


if __name__ == "__main__":
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    mods = tuple(sys.argv[5].split(",")) if len(sys.argv) > 5 else ("CT",)
    print(make_archive(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), mods))
