#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_cli_skimage.py: `dicomhist equalize --skimage` (scikit-image's equalize_adapthist
reproduced, docs/equalization.md "scikit-image-compatible mode") against scikit-image itself on
every readable file and series of ../shared/dicom and ../shared/dicom-jpeg2000 (decoded
independently by pydicom, handed to equalize_adapthist as the array pydicom's pixel_array is:
uint8/int8/uint16/int16 by BitsAllocated and PixelRepresentation): --mode slice (one 2D call per
slice, its defaults) on every input, --mode volume (one 3D call) on every multi-slice input, and
--tile-size 16 --clip-limit 0.05 --bins 4096 per slice. The bound docs/equalization.md states:
the 16-bit output is round(skimage * 65535), round half to even, on every pixel, so
max |ours / 65535 - skimage| <= 0.5 / 65535 and no pixel differs by more than 1 / 65535. With
--table, the figures are printed as that table's Markdown rows.

Usage: test_cli_skimage.py DICOMHIST_BINARY SHARED_DICOM_DIR [--table]
"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_testlib as t  # noqa: E402
from test_cli_real_files import discover  # noqa: E402

RUNS = [  # (name, command-line options, skimage keyword arguments, per slice)
    ("slice", ["--mode", "slice"], {}, True),
    ("volume", ["--mode", "volume"], {}, False),
    ("slice k16 c0.05 b4096", ["--mode", "slice", "--tile-size", "16", "--clip-limit", "0.05",
                               "--bins", "4096"],
     {"kernel_size": 16, "clip_limit": 0.05, "nbins": 4096}, True),
]


def skimage_reference(ref, kwargs, per_slice):
    """equalize_adapthist of the stored values in pixel_array's dtype."""
    import numpy as np
    from skimage import exposure
    dtype = {(8, False): np.uint8, (8, True): np.int8,
             (16, False): np.uint16, (16, True): np.int16}[(ref.bits_allocated, ref.signed)]
    data = ref.data.astype(dtype)
    if per_slice:
        return np.stack([exposure.equalize_adapthist(s, **kwargs) for s in data])
    return exposure.equalize_adapthist(data, **kwargs)


def inputs(shared):
    """The readable inputs of the shared folder and of its JPEG 2000 sibling, when present."""
    found = [(target, files, shared) for target, files in discover(shared)[0]]
    j2k = os.path.join(os.path.dirname(os.path.abspath(shared)), "dicom-jpeg2000")
    if os.path.isdir(j2k):
        found += [(target, files, j2k) for target, files in discover(j2k)[0]]
    return found


def main():
    table = "--table" in sys.argv
    if table:
        sys.argv.remove("--table")
    binary, shared, c = t.begin_real_file_test()
    try:
        import numpy as np
        import skimage  # noqa: F401
    except ImportError as e:
        t.skip(f"Python module missing: {e.name}")
    work = tempfile.mkdtemp(prefix="dicomhist-skimage-")
    rows = []
    try:
        for target, files, root in inputs(shared):
            ref = t.RefVolume(files)
            name = os.path.relpath(target, shared)
            for run, options, kwargs, per_slice in RUNS:
                if not per_slice and ref.slices == 1:
                    continue
                out = os.path.join(work, "out")
                r = t.run(binary, "equalize", "--skimage", *options, "--json", "-o", out,
                          target)
                rec = t.one_record(c, r, f"{target} ({run})")
                if rec is None:
                    continue
                got = t.RefVolume(rec["outputs"]).data
                want = skimage_reference(ref, kwargs, per_slice)
                diff = np.abs(got / 65535 - want)
                worst, over = float(diff.max()), int((diff > 1 / 65535).sum())
                exact = int((got == np.round(want * 65535)).sum())
                rows.append(f"| `{name}` | {run} | {ref.columns}x{ref.rows}x{ref.slices} | "
                            f"{worst * 65535:.3f}/65535 | {over} | {exact}/{got.size} |")
                c.check(worst <= 0.5 / 65535 + 1e-12,
                        f"{name} ({run}): max |ours - skimage| {worst * 65535:.4f}/65535")
                c.equal(exact, got.size, f"{name} ({run}): pixels equal to round(skimage*65535)")
                shutil.rmtree(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if table:
        print("\n".join(rows))
    c.finish()


if __name__ == "__main__":
    main()
