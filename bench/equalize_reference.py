#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""equalize_reference.py: the job of `dicomhist equalize --mode volume` done the way a Python
user would, timed against it by bench/bench_equalize_host.sh: read a DICOM series with pydicom,
equalize the whole volume with skimage.exposure.equalize_hist, write a derived series with
pydicom (new series and instance UIDs, DERIVED\\SECONDARY, references to the sources, window and
rescale tags of the new pixels).

equalize_hist on integer input uses one bin per stored value and returns the cdf in [0, 1]; the
output levels are floor(cdf * (L - 1)) with L = 2^BitsStored, the levels dicomhist writes by
default. The two differ slightly in definition (skimage interpolates the cdf at bin centres and
does not subtract cdf_min), which --compare reports; the timing is about the same amount of work.

Usage: equalize_reference.py OUTDIR INPUT_FILE...
       equalize_reference.py --compare DIR_A DIR_B   (largest level difference, same file order)
Prints the seconds of read, equalize and write on stderr.
"""
import os
import sys
import time

import numpy as np
import pydicom
from pydicom.dataset import Dataset
from pydicom.sequence import Sequence
from pydicom.uid import generate_uid
from skimage import exposure


def read_series(paths):
    datasets = [pydicom.dcmread(p) for p in paths]
    datasets.sort(key=lambda d: int(d.InstanceNumber))
    volume = np.stack([d.pixel_array for d in datasets])
    return datasets, volume


def derive(ds, pixels, series_uid, bits):
    out = ds.copy()
    out.SOPInstanceUID = generate_uid()
    out.file_meta.MediaStorageSOPInstanceUID = out.SOPInstanceUID
    out.SeriesInstanceUID = series_uid
    out.ImageType = ["DERIVED", "SECONDARY"] + list(ds.ImageType)[2:]
    out.DerivationDescription = "histogram equalization per volume (skimage equalize_hist)"
    source = Dataset()
    source.ReferencedSOPClassUID = ds.SOPClassUID
    source.ReferencedSOPInstanceUID = ds.SOPInstanceUID
    out.SourceImageSequence = Sequence([source])
    out.SeriesDescription = f"{ds.get('SeriesDescription', '')} equalized".strip()
    for kw in ("WindowCenter", "WindowWidth", "VOILUTSequence", "ModalityLUTSequence"):
        if kw in out:
            delattr(out, kw)
    out.BitsStored = bits
    out.HighBit = bits - 1
    out.PixelRepresentation = 0
    out.RescaleIntercept = 0
    out.RescaleSlope = 1
    out.RescaleType = "US"
    out.PixelData = pixels.astype(np.uint16).tobytes()
    return out


def compare(dir_a, dir_b):
    def load(d):
        files = sorted(os.path.join(d, f) for f in os.listdir(d))
        return read_series(files)[1].astype(np.int32)

    a, b = load(dir_a), load(dir_b)
    diff = np.abs(a - b)
    print(f"largest difference {diff.max()} levels, mean {diff.mean():.3f}, "
          f"{(diff > 1).mean() * 100:.2f}% of pixels differ by more than 1")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--compare":
        compare(sys.argv[2], sys.argv[3])
        return
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    outdir, paths = sys.argv[1], sys.argv[2:]
    t0 = time.perf_counter()
    datasets, volume = read_series(paths)
    t1 = time.perf_counter()
    bits = int(datasets[0].BitsStored)
    levels = 1 << bits
    equalized = exposure.equalize_hist(volume)
    out = np.floor(equalized * (levels - 1)).astype(np.uint16)
    t2 = time.perf_counter()
    os.makedirs(outdir, exist_ok=True)
    series_uid = generate_uid()
    for ds, pixels in zip(datasets, out):
        path = os.path.join(outdir, os.path.basename(ds.filename))
        if os.path.exists(path):
            sys.exit(f"{path}: exists, not replaced")
        derive(ds, pixels, series_uid, bits).save_as(path, enforce_file_format=True)
    t3 = time.perf_counter()
    print(f"read {t1 - t0:.3f} s, equalize {t2 - t1:.3f} s, write {t3 - t2:.3f} s",
          file=sys.stderr)


if __name__ == "__main__":
    main()
