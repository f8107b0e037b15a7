# SPDX-License-Identifier: MIT
"""bench_clahe_skimage3d.py: scikit-image's equalize_adapthist on the 512^3 CT-like volume of
bench_clahe.cu, for issue 21's ">= 1000x scikit-image" in 3D (docs/performance.md, "CLAHE on the
GPU"). The volume is made with NumPy by bench_clahe_cucim.py's formulas (the same kind of data,
not the same noise draw), kernel_size 64 (8x8x8 tiles), clip_limit 0.01, nbins 4096; one call,
wall and process CPU time (scikit-image runs on one core). The ratio is taken against
`bench_clahe`'s 3D 4096-bin figure of the same run.

Usage: python3 bench_clahe_skimage3d.py [n]   (n = 512 by default; prints one Markdown row)
"""
import sys
import time

import numpy as np
import skimage
from skimage import exposure


def ct_volume(n):
    axis = np.arange(n, dtype=np.float32) / n - 0.5
    z = (axis + 0.5)[:, None, None]
    y, x = axis[None, :, None], axis[None, None, :]
    body = x * x / 0.2 + y * y / 0.12 * (1 + 0.2 * z)
    lung = np.minimum((x + 0.2) ** 2 / 0.015 + y * y / 0.04, (x - 0.2) ** 2 / 0.015 + y * y / 0.04)
    spine = x * x + (y - 0.22) ** 2
    v = np.full((n, n, n), 1064, dtype=np.float32)
    v = np.where(np.broadcast_to(lung < 1, v.shape), 224, v)
    v = np.where(np.broadcast_to(spine < 0.004, v.shape), 1700, v)
    v = np.where(body > 0.8, 924, v)
    v = np.where(body > 1, 24, v)
    v += np.random.default_rng(2).normal(0, 10, size=v.shape).astype(np.float32)
    return np.clip(v, 0, 4095).astype(np.uint16)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 512
    vol = ct_volume(n)
    assert vol.min() < 100 and vol.max() > 1600, "the volume lacks its air or its spine"
    wall, cpu = time.perf_counter(), time.process_time()
    out = exposure.equalize_adapthist(vol, kernel_size=n // 8, clip_limit=0.01, nbins=4096)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert out.shape == vol.shape and 0 <= out.min() and out.max() <= 1
    print(f"| scikit-image {skimage.__version__} equalize_adapthist, {n}^3 12-bit CT, "
          f"8x8x8 tiles, 4096 bins, one call | {wall:.1f} s wall "
          f"| {cpu:.1f} s CPU |", flush=True)


if __name__ == "__main__":
    main()
