#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""batch_compare.py A B: the derived files of two dicomhist output trees hold the same pixels.

Every file of A (but the manifest and PNG previews) must exist in B with equal PixelData (read
straight from the explicit little endian files dicomhist writes; the UIDs may differ by
design), and B must hold no other file. Exits 1 naming the first differences, else prints how
many files and bytes were compared. Standard library only (it runs on a bare GPU host).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "cli"))
from test_cli_gpu import pixel_data  # noqa: E402


def files(root):
    out = set()
    for r, _, names in os.walk(root):
        for n in names:
            if not n.endswith(".png") and not n.startswith("dicomhist-manifest"):
                out.add(os.path.relpath(os.path.join(r, n), root))
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    a, b = sys.argv[1], sys.argv[2]
    fa, fb = files(a), files(b)
    bad = sorted(fa ^ fb)[:5]
    compared = 0
    for name in sorted(fa & fb):
        pa = pixel_data(os.path.join(a, name))
        if pa != pixel_data(os.path.join(b, name)):
            bad.append(name)
        compared += len(pa)
        if len(bad) >= 5:
            break
    if not fa or bad:
        sys.exit(f"batch_compare: {a} and {b} differ: {bad or 'no files'}")
    print(f"batch_compare: {len(fa)} files, {compared / 1e6:.1f} MB of pixels equal in {a} and {b}")


if __name__ == "__main__":
    main()
