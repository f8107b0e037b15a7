#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""batch_archives.py: the archives bench_batch.sh times on the GPU machine (issue 24), made there
by the project's own generator and the encoders archives use, on every core.

WORKDIR/uncompressed/EXPORT: STUDIES CT series of SLICES SIZE x SIZE 12-bit slices in explicit
VR little endian (tests/cli/archive_maker.py's slices, one seeded generator per study so the
studies can be written in parallel); then each KIND a copy of it with the same pixels encoded:
  j2k    JPEG 2000 lossless (.90) by OpenJPEG's opj_compress
  htj2k  HTJ2K lossless (.201) by OpenJPH's ojph_compress
  jpll   JPEG lossless SV1 (.70) by DCMTK's dcmcjpeg +e1
(the encoders' options are tests/gpu_decode/make_streams.py's). An archive already complete is
kept; each is made beside and renamed, so a killed run leaves no half.

Usage: batch_archives.py WORKDIR STUDIES SLICES SIZE [KIND...]
Needs numpy and pydicom (PYTHONPATH may point at a carried copy) and the encoders on PATH.
"""
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pydicom
from pydicom.encaps import encapsulate

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "cli"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "gpu_decode"))
import archive_maker  # noqa: E402
from make_streams import encode_frame  # noqa: E402

SYNTAX = {"j2k": "1.2.840.10008.1.2.4.90", "htj2k": "1.2.840.10008.1.2.4.201",
          "jpll": "1.2.840.10008.1.2.4.70"}
TOOL = {"j2k": "opj_compress", "htj2k": "ojph_compress"}


def write_study(args):
    export, study, slices, size = args
    rng = np.random.default_rng((1434, study))
    folder = os.path.join(export, f"PATIENT{study:03d}", "STUDY1", "SE0001")
    os.makedirs(folder, exist_ok=True)
    for z in range(slices):
        archive_maker.write_slice(os.path.join(folder, f"IM{z + 1:04d}"), study, 0, z, size, "CT",
                                  rng, slices)


def encode_file(args):
    kind, src, dst = args
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    if kind == "jpll":
        subprocess.run(["dcmcjpeg", "+e1", src, dst], check=True)
        return
    ds = pydicom.dcmread(src)
    frame = ds.pixel_array.astype(np.int64)
    with tempfile.TemporaryDirectory() as work:
        code = encode_frame(TOOL[kind], frame, int(ds.BitsStored), False, work, [])
    ds.file_meta.TransferSyntaxUID = SYNTAX[kind]
    ds.PixelData = encapsulate([code], has_bot=True)
    ds["PixelData"].VR = "OB"
    ds["PixelData"].is_undefined_length = True
    ds.save_as(dst, enforce_file_format=True)


def made(folder, make):
    """Runs make(partial folder) unless folder/EXPORT exists, then renames the result."""
    if os.path.isdir(os.path.join(folder, "EXPORT")):
        return
    partial = folder + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    make(os.path.join(partial, "EXPORT"))
    os.makedirs(folder, exist_ok=True)
    os.replace(os.path.join(partial, "EXPORT"), os.path.join(folder, "EXPORT"))
    os.rmdir(partial)


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    work, studies, slices, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    kinds = sys.argv[5:]
    for k in kinds:
        if k not in SYNTAX:
            sys.exit(f"batch_archives.py: unknown kind {k} (j2k, htj2k, jpll)")
    with multiprocessing.Pool(os.cpu_count()) as pool:
        made(os.path.join(work, "uncompressed"), lambda export: pool.map(
            write_study, [(export, s, slices, size) for s in range(studies)]))
        source = os.path.join(work, "uncompressed", "EXPORT")
        files = sorted(os.path.relpath(os.path.join(r, n), source)
                       for r, _, names in os.walk(source) for n in names)
        for kind in kinds:
            made(os.path.join(work, kind), lambda export: pool.map(
                encode_file, [(kind, os.path.join(source, f), os.path.join(export, f))
                              for f in files], chunksize=8))


if __name__ == "__main__":
    main()
