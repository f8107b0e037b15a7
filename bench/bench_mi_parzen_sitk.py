#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench_mi_parzen_sitk.py: the Parzen MI CPU twin (dh_parzen_mi_cpu, value + gradient w.r.t.
every moving pixel) against SimpleITK's Mattes metric value + derivative, one core each, on a
512 x 512 float32 pair, 64 bins, every pixel sampled (issue 22: >= 10x per core).

What is compared: SimpleITK's ImageRegistrationMethod with SetMetricAsMattesMutualInformation
(64 bins, sampling NONE: all pixels), a 2D TranslationTransform, and a regular-step gradient
descent that runs exactly N iterations; each iteration is one metric GetValueAndDerivative
(joint PDF, its derivative w.r.t. the transform's parameters) plus a trivial transform update.
Its per-evaluation cost is (t(2N) - t(N)) / N, which cancels the setup. Ours: one call per
evaluation (the joint histogram, the scores and the gradient of all 262144 pixels); the
translation derivative ITK computes is the image-gradient-weighted sum of exactly such per-pixel
terms, so the two do the same work per pixel. Both on one thread, timed in process CPU time
(time.process_time), so that other work on a shared machine does not enter the figures.

Each figure is the fastest of several rounds, the three measurements (SimpleITK at N and 2N
iterations, ten calls of ours) taking turns within each round: on a shared machine other work
only adds CPU time (caches, a sibling hyperthread), so the fastest round is the one least
disturbed, and taking turns gives both sides the same chances.

Usage: bench_mi_parzen_sitk.py MODULE [ROUNDS], MODULE the ctypes build of the twin
(build/tests/libmi_parzen_ctypes.so), ROUNDS 9 unless given. Prints a Markdown table; exits 77
without SimpleITK (on a machine without it: `pip install --target DIR SimpleITK`, then
PYTHONPATH=DIR).
"""
import ctypes
import os
import platform
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "python"))
from parzen_ctypes import Image, Params, Values  # noqa: E402  (the C structures, one copy)

try:
    import numpy as np
    import SimpleITK as sitk
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)


def pair(side):
    """A smooth phantom and a shifted, noisier copy, float32."""
    y, x = np.mgrid[0:side, 0:side] / side
    rng = np.random.default_rng(5)

    def phantom(dx, dy):
        b1 = np.exp(-((x - 0.4 - dx) ** 2 + (y - 0.55 - dy) ** 2) * 18)
        b2 = np.exp(-((x - 0.7 - dx) ** 2 + (y - 0.3 - dy) ** 2) * 30)
        return 1200 * b1 + 600 * b2 + 300 * x
    fixed = phantom(0, 0) + rng.normal(0, 10, (side, side))
    moving = phantom(0.01, -0.005) + rng.normal(0, 10, (side, side))
    return fixed.astype(np.float32), moving.astype(np.float32)


def ours_per_eval(lib, fixed, moving, bins, calls):
    """Process CPU seconds per value + gradient call, over `calls` back-to-back calls."""
    params, out = Params(bins=bins), Values()
    grad = np.zeros(moving.size, np.float32)
    f = Image(fixed.ctypes.data, 0, None)
    m = Image(moving.ctypes.data, 0, None)
    t0 = time.process_time()
    for _ in range(calls):
        rc = lib.dh_test_parzen_mi(ctypes.byref(params), ctypes.c_size_t(fixed.size),
                                   ctypes.byref(f), ctypes.byref(m), 1, ctypes.byref(out),
                                   grad.ctypes.data_as(ctypes.c_void_p))
        assert rc == 0
    return (time.process_time() - t0) / calls, out.mi


def sitk_run(fixed, moving, bins, iterations):
    reg = sitk.ImageRegistrationMethod()
    reg.SetMetricAsMattesMutualInformation(numberOfHistogramBins=bins)
    reg.SetMetricSamplingStrategy(reg.NONE)
    reg.SetInterpolator(sitk.sitkLinear)
    # a tiny fixed step and no stopping rule: exactly `iterations` value + derivative calls
    reg.SetOptimizerAsRegularStepGradientDescent(learningRate=1e-6, minStep=1e-12,
                                                 numberOfIterations=iterations,
                                                 gradientMagnitudeTolerance=1e-300)
    reg.SetInitialTransform(sitk.TranslationTransform(2), inPlace=False)
    reg.SetNumberOfThreads(1) if hasattr(reg, "SetNumberOfThreads") else None
    t0 = time.process_time()
    reg.Execute(fixed, moving)
    elapsed = time.process_time() - t0
    return elapsed, reg.GetOptimizerIteration()


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__)
        return 2
    lib = ctypes.CDLL(os.path.abspath(sys.argv[1]))
    sitk.ProcessObject.SetGlobalDefaultNumberOfThreads(1)
    side, bins = 512, 64
    fixed, moving = pair(side)
    f_img, m_img = sitk.GetImageFromArray(fixed), sitk.GetImageFromArray(moving)
    n, rounds = 20, int(sys.argv[2]) if len(sys.argv) > 2 else 9
    # Rounds interleave the three measurements, so that a change of the machine's load touches
    # them alike; each figure is the fastest of its rounds (other load only adds CPU time, by
    # cache and core sharing), and the per-round ratios show the spread.
    t1s, t2s, ours, ratios = [], [], [], []
    for _ in range(rounds):
        t1, it1 = sitk_run(f_img, m_img, bins, n)
        t2, it2 = sitk_run(f_img, m_img, bins, 2 * n)
        if it1 != n or it2 != 2 * n:
            print(f"SimpleITK stopped early ({it1}, {it2} iterations): the figure would be wrong")
            return 1
        o, mi = ours_per_eval(lib, fixed, moving, bins, 10)
        t1s.append(t1)
        t2s.append(t2)
        ours.append(o)
        ratios.append((t2 - t1) / n / o)
    per_sitk = (min(t2s) - min(t1s)) / n
    per_ours = min(ours)
    cpu = platform.processor() or platform.machine()
    try:  # the processor's name where Linux says it
        with open("/proc/cpuinfo") as info:
            cpu = next(line.split(":", 1)[1].strip() for line in info
                       if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    print(f"\n### Parzen MI value + gradient on one core, 512x512 float32 pair, 64 bins ({cpu}, "
          f"SimpleITK {sitk.Version_VersionString()})\n")
    print("| what | ms per evaluation | vs SimpleITK |\n|---|---|---|")
    print(f"| SimpleITK Mattes value + derivative (translation), all pixels | "
          f"{per_sitk * 1e3:.2f} | 1.0 |")
    print(f"| dh_parzen_mi_cpu value + gradient of every pixel | {per_ours * 1e3:.2f} | "
          f"{per_sitk / per_ours:.1f}x |")
    ratios.sort()
    print(f"\n(MI {mi:.6f} nats; SimpleITK per evaluation from {n} and {2 * n} iterations; the "
          f"fastest of {rounds} interleaved rounds each, process CPU time; per-round ratios "
          f"{ratios[0]:.1f}x to {ratios[-1]:.1f}x, median {ratios[len(ratios) // 2]:.1f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
