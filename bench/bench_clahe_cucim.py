# SPDX-License-Identifier: MIT
"""bench_clahe_cucim.py: cuCIM's equalize_adapthist (scikit-image's CLAHE on CuPy) on the data of
bench_clahe.cu, for the comparison in docs/performance.md ("CLAHE", issue 21).

Same shapes and the same kind of data, made on the GPU with the same formulas: a 3000x3000 uint16
radiograph-like image (smooth field plus noise) with 8x8 tiles (kernel_size 375), and a 512^3
12-bit CT-like volume with 8x8x8 tiles (kernel_size 64). clip_limit 0.01 and nbins 256 are
cuCIM's (and scikit-image's) defaults; nbins 4096 is timed too. Device-resident input, medians
of CUDA-event-timed calls after a warm-up call. cuCIM has no 65536-bin mode worth timing: it
rescales every image to 14 bits first.

Usage: python3 bench_clahe_cucim.py [reps]   (needs cupy and cucim; prints a Markdown table)
"""
import sys

import cupy as cp
from cucim.skimage import exposure


def radiograph(n=3000):
    y, x = cp.meshgrid(cp.arange(n, dtype=cp.float32) / n, cp.arange(n, dtype=cp.float32) / n,
                       indexing="ij")
    r2 = (x - 0.5) ** 2 + (y - 0.55) ** 2
    f = 0.45 + 0.25 * cp.cos(6 * x) * cp.sin(5 * y) + 0.2 * (x - y) + cp.where(r2 < 0.09, 0.15, 0)
    noise = cp.random.default_rng(1).integers(-300, 301, size=(n, n)).astype(cp.float32)
    return cp.clip(2000 + f * 58000 + noise, 0, 65535).astype(cp.uint16)


def ct_volume(n=512):
    z, y, x = cp.meshgrid(*(cp.arange(n, dtype=cp.float32) / n for _ in range(3)), indexing="ij")
    x, y = x - 0.5, y - 0.5
    body = x * x / 0.2 + y * y / 0.12 * (1 + 0.2 * z)
    lung = cp.minimum((x + 0.2) ** 2 / 0.015 + y * y / 0.04, (x - 0.2) ** 2 / 0.015 + y * y / 0.04)
    spine = x * x + (y - 0.22) ** 2
    del z
    v = cp.full((n, n, n), 1064, dtype=cp.float32)
    v = cp.where(lung < 1, 224, v)
    v = cp.where(spine < 0.004, 1700, v)
    v = cp.where(body > 0.8, 924, v)
    v = cp.where(body > 1, 24, v)
    del x, y, body, lung, spine
    v += cp.random.RandomState(2).normal(0, 10, size=(n, n, n), dtype=cp.float32)
    return cp.clip(v, 0, 4095).astype(cp.uint16)


def median_ms(fn, reps):
    fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(cp.cuda.get_elapsed_time(a, b))
    times.sort()
    return times[len(times) // 2]


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    name = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    import cucim
    print(f"cuCIM {cucim.__version__}, CuPy {cp.__version__} on {name}; medians of {reps} calls\n")
    print("| case | cuCIM equalize_adapthist ms |")
    print("| --- | --- |")
    img = radiograph()
    for nbins in (256, 4096):
        t = median_ms(lambda: exposure.equalize_adapthist(img, kernel_size=375, clip_limit=0.01,
                                                          nbins=nbins), reps)
        print(f"| 2D 3000x3000 uint16, 8x8 tiles, {nbins} bins | {t:.2f} |", flush=True)
    del img
    vol = ct_volume()
    for nbins in (256, 4096):
        t = median_ms(lambda: exposure.equalize_adapthist(vol, kernel_size=64, clip_limit=0.01,
                                                          nbins=nbins), max(3, reps // 2))
        print(f"| 3D 512^3 12-bit CT, 8x8x8 tiles, {nbins} bins | {t:.1f} |", flush=True)


if __name__ == "__main__":
    main()
