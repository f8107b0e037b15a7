#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench_mi_reference.py: the tools a registration engineer would otherwise use to score one
image pair by mutual information, timed on the same kind of data bench_mi uses (a CT-like
12-bit image and a shifted, noised copy), so docs/performance.md can set dicomhist beside them.

- scikit-image normalized_mutual_information (CPU), where scikit-image is installed;
- cupy.histogram2d plus the entropies on the GPU, where cupy and a GPU are present (the GPU
  machine's image has cupy).

Each tool that is absent is reported as such; the script never fails for that.
Usage: bench_mi_reference.py [--size 512] [--bins 64] [--reps 50]
"""
import argparse
import statistics
import time

import numpy as np


def ct_like_pair(size, seed=7):
    """40% air near 24, 15% fat near 924, 30% soft tissue near 1064, 15% bone near 1700."""
    rng = np.random.default_rng(seed)
    p = rng.random((size, size))
    img = np.where(p < 0.40, 24, np.where(p < 0.55, 924, np.where(p < 0.85, 1064, 1700)))
    img = img + rng.normal(0, 12, img.shape) * np.where(p >= 0.85, 8, 1)
    fixed = np.clip(img, 0, 4095).astype(np.uint16)
    moving = np.roll(fixed, (3, 5), axis=(0, 1)).astype(np.int32) + rng.integers(-20, 21, img.shape)
    return fixed, np.clip(moving, 0, 4095).astype(np.uint16)


def time_skimage(fixed, moving, bins, reps):
    try:
        from skimage.metrics import normalized_mutual_information
    except ImportError:
        return None, "scikit-image not installed"
    normalized_mutual_information(fixed, moving, bins=bins)
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        normalized_mutual_information(fixed, moving, bins=bins)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6, "CPU"


def time_cupy(fixed, moving, bins, reps):
    try:
        import cupy as cp
        cp.cuda.runtime.getDeviceCount()
    except Exception as e:  # no cupy, or no GPU behind it
        return None, f"cupy unavailable ({type(e).__name__})"
    a = cp.asarray(fixed.ravel())
    b = cp.asarray(moving.ravel())

    def score():
        h, _, _ = cp.histogram2d(a, b, bins=bins)
        p = h / h.sum()
        pa, pb = p.sum(axis=1), p.sum(axis=0)
        def ent(q):
            q = q[q > 0]
            return -(q * cp.log(q)).sum()
        return (ent(pa) + ent(pb)) / ent(p)

    score()
    cp.cuda.Device().synchronize()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(reps):
        start.record()
        score()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) * 1e3)
    name = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    return statistics.median(times), name


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--bins", type=int, default=64)
    ap.add_argument("--reps", type=int, default=50)
    args = ap.parse_args()
    fixed, moving = ct_like_pair(args.size)
    print(f"# one {args.size}x{args.size} CT-like pair, {args.bins} bins, median of {args.reps}")
    print("| tool | where | us per pair |")
    print("|---|---|---|")
    for name, fn in (("scikit-image normalized_mutual_information", time_skimage),
                     ("cupy.histogram2d + entropies", time_cupy)):
        us, where = fn(fixed, moving, args.bins, args.reps)
        print(f"| {name} | {where} | {'-' if us is None else f'{us:.1f}'} |")


if __name__ == "__main__":
    main()
