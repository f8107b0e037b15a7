#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""batch_reference.py: the home-made answer a PACS team writes today, for bench_batch.sh: a
pydicom + scikit-image script that equalizes every series of a tree with multiprocessing.

Each worker process takes one series folder, decodes its slices with pydicom (pylibjpeg for
JPEG lossless), equalizes the volume with skimage.exposure.equalize_hist over 4096 bins, and
writes each slice back as DICOM (12 bits stored) into OUTDIR, mirroring the tree.

Usage: batch_reference.py INDIR OUTDIR [PROCESSES=2]
"""
import os
import sys
from multiprocessing import Pool

import numpy as np
import pydicom
from skimage import exposure


def series_folders(root):
    return sorted(d for d, _, files in os.walk(root) if files)


def equalize_series(args):
    folder, indir, outdir = args
    paths = sorted(os.path.join(folder, f) for f in os.listdir(folder))
    datasets = [pydicom.dcmread(p) for p in paths]
    volume = np.stack([ds.pixel_array for ds in datasets])
    equalized = exposure.equalize_hist(volume, nbins=4096)
    out = np.rint(equalized * 4095).astype(np.uint16)
    target = os.path.join(outdir, os.path.relpath(folder, os.path.dirname(indir)))
    os.makedirs(target, exist_ok=True)
    for ds, path, pixels in zip(datasets, paths, out):
        ds.file_meta.TransferSyntaxUID = pydicom.uid.ExplicitVRLittleEndian
        ds.PixelData = pixels.tobytes()
        ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 12, 11, 0
        ds.save_as(os.path.join(target, os.path.basename(path)), enforce_file_format=True)
    return len(paths)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    indir, outdir = sys.argv[1].rstrip("/"), sys.argv[2]
    processes = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    jobs = [(f, indir, outdir) for f in series_folders(indir)]
    with Pool(processes) as pool:
        files = sum(pool.map(equalize_series, jobs, chunksize=1))
    print(f"{files} files in {len(jobs)} series")


if __name__ == "__main__":
    main()
