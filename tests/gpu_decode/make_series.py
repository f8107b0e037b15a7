#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make_series.py DEST: series of single-frame DICOM files for test_plan_device --gpu (a whole
series decoded into GPU memory, issue 24), made by the encoders archives use (opj_compress for
JPEG 2000 .90, ojph_compress for HTJ2K .201; make_streams.py's helpers): a 12-bit CT-like J2K
series with a rescale, a 16-bit signed J2K series, a 12-bit HTJ2K series, and an HTJ2K series
with one damaged file (its code stream cut short) that the host and the device read must both
leave out. Slices are positioned along z and written under shuffled file names, so the plan's
order is not the files' order."""
import os
import sys
import tempfile

import numpy as np
from pydicom.encaps import encapsulate
from pydicom.uid import generate_uid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_streams import ROOT, ct_like, dataset, encode_frame, save, values  # noqa: E402

J2K, HTJ2K = "1.2.840.10008.1.2.4.90", "1.2.840.10008.1.2.4.201"


def series(dest, name, pixels, bits, signed, syntax, encode, damaged=None, intercept=None):
    folder = os.path.join(dest, name)
    os.makedirs(folder, exist_ok=True)
    slices = len(pixels)
    rng = np.random.default_rng(len(name))
    names = rng.permutation(slices)  # file k holds slice names[k]'s place in z order
    for k in range(slices):
        z = int(names[k])
        ds = dataset(pixels[z:z + 1], bits, signed, 16, syntax, f"{name}-{z}")
        ds.SeriesInstanceUID = generate_uid(ROOT + ".", [name, "series"])
        del ds.NumberOfFrames
        ds.ImageOrientationPatient = [1, 0, 0, 0, 1, 0]
        ds.ImagePositionPatient = [0, 0, 2.5 * z]
        ds.InstanceNumber = z + 1
        if intercept is not None:
            ds.Modality = "CT"
            ds.RescaleSlope, ds.RescaleIntercept = 1, intercept
        stream = encode(pixels[z])
        if damaged is not None and z == damaged:
            stream = stream[:len(stream) // 2]  # no EOC: both decoders must refuse it
        ds.PixelData = encapsulate([stream], has_bot=True)
        save(ds, os.path.join(folder, f"IM{k + 1:04d}.dcm"))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_series.py DEST")
    dest = sys.argv[1]
    os.makedirs(dest, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        def opj(bits, signed):
            return lambda f: encode_frame("opj_compress", f, bits, signed, work, [])

        def ojph(bits):
            return lambda f: encode_frame("ojph_compress", f, bits, False, work, [])
        ct = ct_like(7, 31)[:, :160, :128]
        series(dest, "j2k_ct12", ct, 12, False, J2K, opj(12, False), intercept=-1024)
        series(dest, "j2k_16s", values(5, 61, 97, 16, True, 32), 16, True, J2K, opj(16, True))
        series(dest, "htj2k_ct12", ct, 12, False, HTJ2K, ojph(12), intercept=-1024)
        series(dest, "htj2k_damaged", values(6, 61, 97, 12, False, 33), 12, False, HTJ2K,
               ojph(12), damaged=3)


if __name__ == "__main__":
    main()
