#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench_jpeg2000.py: JPEG 2000 and HTJ2K decode throughput per core, dicomhist beside
OpenJPEG's own opj_decompress on the same code streams (the decode floor: OpenJPEG alone,
reading a bare code stream file, no DICOM).

Inputs: the real JPEG 2000 lossless files of ../shared/dicom-jpeg2000 (and the lossy one), and
HTJ2K lossless re-encodings of their pixels made here with OpenJPH's ojph_compress. For each:
`bench_decode RUNS FILE` (dh_dicom_read_memory with pixels, one thread) and opj_decompress run
RUNS times on the extracted code stream with one thread (its own "decode time", which covers
header, tiles and end of decompression, not the output file). MB/s counts decoded pixels at 2
bytes each (10^6 bytes). Prints a Markdown table for docs/performance.md.

Usage: bench_jpeg2000.py BENCH_DECODE_BINARY JPEG2000_DIR [RUNS]   (needs pydicom, numpy,
pylibjpeg-openjpeg, opj_decompress, ojph_compress)
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import pydicom
from pydicom.encaps import encapsulate, generate_frames

FILES = ["pydicom-data_RG3_J2KR.dcm", "pydicom-data_MR2_J2KR.dcm", "pydicom-data_MR2_J2KI.dcm",
         "pydicom_J2K_pixelrep_mismatch.dcm"]
HTJ2K_LOSSLESS = "1.2.840.10008.1.2.4.201"


def code_stream(path):
    ds = pydicom.dcmread(path)
    return next(generate_frames(ds.PixelData, number_of_frames=1))


def htj2k_copy(path, tmp):
    """The file's stored values re-encoded losslessly by ojph_compress, as (dicom, code stream)."""
    ds = pydicom.dcmread(path)
    bits = int(ds.BitsStored)
    values = ds.pixel_array.astype(np.int64) & ((1 << bits) - 1)  # the bit pattern, unsigned
    pgm, j2c = os.path.join(tmp, "in.pgm"), os.path.join(tmp, os.path.basename(path) + ".j2c")
    with open(pgm, "wb") as f:
        f.write(b"P5\n%d %d\n%d\n" % (values.shape[1], values.shape[0], (1 << bits) - 1))
        f.write(values.astype(">u2").tobytes())
    subprocess.run(["ojph_compress", "-i", pgm, "-o", j2c, "-reversible", "true"], check=True,
                   stdout=subprocess.DEVNULL)
    stream = open(j2c, "rb").read()
    ds.PixelData = encapsulate([stream])
    ds["PixelData"].VR = "OB"
    ds["PixelData"].is_undefined_length = True
    ds.file_meta.TransferSyntaxUID = HTJ2K_LOSSLESS
    out = os.path.join(tmp, os.path.basename(path).replace(".dcm", "_htj2k.dcm"))
    ds.save_as(out)
    return out, j2c


def ours(binary, path, runs):
    out = subprocess.run([binary, str(runs), path], check=True, capture_output=True,
                         text=True).stdout
    fields = out.strip().split("\t")
    megabytes = float(fields[1].split()[0])
    best, median = float(fields[2].split()[1]), float(fields[4].split()[1])
    return megabytes, best, median


def floor(stream_path, runs, tmp):
    env = {k: v for k, v in os.environ.items() if k != "OPJ_NUM_THREADS"}
    times = []
    for _ in range(runs):
        out = subprocess.run(["opj_decompress", "-i", stream_path, "-o",
                              os.path.join(tmp, "out.raw"), "-threads", "1"],
                             check=True, capture_output=True, text=True, env=env).stdout
        times.append(float(re.search(r"decode time: (\d+) ms", out).group(1)))
    return min(times), statistics.median(times)


def main():
    binary, folder = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 7
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in FILES:
            path = os.path.join(folder, name)
            j2k = os.path.join(tmp, name + ".j2k")
            with open(j2k, "wb") as f:
                f.write(code_stream(path))
            cases = [("JPEG 2000" + (" lossy" if "J2KI" in name else ""), path, j2k)]
            if "J2KI" not in name:
                cases.append(("HTJ2K",) + htj2k_copy(path, tmp))
            for codec, dicom, stream in cases:
                mb, best, median = ours(binary, dicom, runs)
                fbest, fmedian = floor(stream, runs, tmp)
                rows.append((name, codec, mb, os.path.getsize(stream), best, median, fbest,
                             fmedian))
    print("| file | codec | pixels MB | stream bytes | dicomhist ms, best / median "
          "| dicomhist MB/s, best (median) | opj_decompress ms, best / median "
          "| opj_decompress MB/s, best (median) | dicomhist / floor, best |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, codec, mb, size, best, median, fbest, fmedian in rows:
        print(f"| {name} | {codec} | {mb:.2f} | {size} | {best:.1f} / {median:.1f} "
              f"| {mb / best * 1e3:.0f} ({mb / median * 1e3:.0f}) | {fbest:.0f} / {fmedian:.0f} "
              f"| {mb / fbest * 1e3:.0f} ({mb / fmedian * 1e3:.0f}) | {fbest / best:.2f} |")

if __name__ == "__main__":
    main()
