#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench_clahe_opencv.py: OpenCV's 16-bit CLAHE (cv2.createCLAHE on CV_16UC1: 65536 bins per
tile, 8x8 tiles, its default clip 40) on the image bench_clahe_cpu wrote, on one thread and on
all, the median and fastest of several runs, in milliseconds of processor time (summed over
threads, as bench_clahe_cpu reports it); scikit-image's equalize_adapthist
once for scale with --skimage. OpenCV is not a project dependency: pip install
opencv-python-headless (a venv is enough).

Usage: bench_clahe_opencv.py image.raw [--skimage]
"""
import os
import sys
import time

import numpy as np


def timed(fn, reps=9):
    fn()
    t = []
    for _ in range(reps):
        t0 = time.process_time()
        fn()
        t.append(time.process_time() - t0)
    t.sort()
    return t[len(t) // 2] * 1e3, t[0] * 1e3


def main():
    import cv2
    img = np.fromfile(sys.argv[1], dtype=np.uint16).reshape(3000, 3000)
    clahe = cv2.createCLAHE(clipLimit=40.0, tileGridSize=(8, 8))
    for threads in (1, os.cpu_count()):
        cv2.setNumThreads(threads)
        med, best = timed(lambda: clahe.apply(img))
        print(f"OpenCV {cv2.__version__} CLAHE CPU, 3000x3000 uint16, 8x8 tiles, 65536 bins, "
              f"{threads} thread{'s' if threads > 1 else ''}: median {med:.1f} ms, "
              f"fastest {best:.1f} ms of CPU time")
    if "--skimage" in sys.argv:
        import skimage
        from skimage import exposure
        t0 = time.process_time()
        exposure.equalize_adapthist(img, kernel_size=375, clip_limit=0.01, nbins=4096)
        print(f"scikit-image {skimage.__version__} equalize_adapthist, 3000x3000, 4096 bins: "
              f"{(time.process_time() - t0) * 1e3:.0f} ms of CPU time (once)")


if __name__ == "__main__":
    main()
