#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_cli_skimage.py: `dicomhist equalize --skimage` (scikit-image's parameters mapped onto our
CLAHE) against scikit-image's exposure.equalize_adapthist with the same defaults (kernel_size
1/8 of each axis, clip_limit 0.01, nbins 256), slice by slice, on every readable file and
series of ../shared/dicom (decoded independently by pydicom). For each input: the largest and
the mean |ours / 65535 - skimage|, the share of pixels where it passes 1/256, and the
correlation of the two pictures; the largest, the mean and the correlation must stay within the
bound docs/equalization.md states ("scikit-image parameters", measured: the mapping gives a
picture of the same kind, not scikit-image's numbers). With --table, the figures are printed
as that table's Markdown rows.

Usage: test_cli_skimage.py DICOMHIST_BINARY SHARED_DICOM_DIR [--table]
"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_testlib as t  # noqa: E402
from test_cli_real_files import discover  # noqa: E402

# The documented bound (docs/equalization.md): every file.
MAX_DIFF = 0.85
MAX_MEAN_DIFF = 0.20
MIN_CORRELATION = 0.55


def skimage_reference(data):
    """equalize_adapthist of every slice, on the stored values made unsigned (it rescales each
    image's min..max, so a shift changes nothing)."""
    import numpy as np
    from skimage import exposure
    out = []
    for s in data:
        img = (s - s.min()).astype(np.uint16)
        out.append(exposure.equalize_adapthist(img, clip_limit=0.01, nbins=256))
    return np.stack(out)


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
        for target, files in discover(shared)[0]:
            ref = t.RefVolume(files)
            out = os.path.join(work, "out")
            r = t.run(binary, "equalize", "--skimage", "--mode", "slice", "--json", "-o", out,
                      target)
            rec = t.one_record(c, r, target)
            if rec is None:
                continue
            got = t.RefVolume(rec["outputs"]).data.astype(np.float64) / 65535
            want = skimage_reference(ref.data)
            diff = np.abs(got - want)
            worst, share = float(diff.max()), float((diff > 1 / 256).mean())
            mean = float(diff.mean())
            corr = float(np.corrcoef(got.ravel(), want.ravel())[0, 1])
            name = os.path.relpath(target, shared)
            rows.append(f"| `{name}` | {ref.columns}x{ref.rows}x{ref.slices} | {worst:.3f} | "
                        f"{mean:.3f} | {100 * share:.1f}% | {corr:.3f} |")
            c.check(worst <= MAX_DIFF, f"{name}: max |ours - skimage| {worst:.4f} > {MAX_DIFF}")
            c.check(mean <= MAX_MEAN_DIFF, f"{name}: mean |ours - skimage| {mean:.4f}")
            c.check(corr >= MIN_CORRELATION, f"{name}: correlation {corr:.3f}")
            shutil.rmtree(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if table:
        print("\n".join(rows))
    c.finish()


if __name__ == "__main__":
    main()
