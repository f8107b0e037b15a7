#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""run_pytest.py: runs the package's pytest suite for ctest, reporting "skipped" (exit 77) where
pytest or NumPy is missing. With --gpu it runs the GPU tests alone (test_device*.py and
test_parzen_device.py) and reports skipped where no GPU, or neither CuPy nor PyTorch, is usable,
so tools/gpu-check notices."""
import os
import sys

SKIP = 77


def main():
    gpu = "--gpu" in sys.argv[1:]
    try:
        import numpy  # noqa: F401
        import pytest
    except ImportError as e:
        print(f"SKIP: {e}")
        return SKIP
    here = os.path.dirname(os.path.abspath(__file__))
    if gpu:
        import dicomhist
        if not dicomhist.cuda_available():
            print("SKIP: no usable GPU (or a build without CUDA)")
            return SKIP
        libs = [m for m in ("cupy", "torch") if _importable(m)]
        if not libs:
            print("SKIP: neither CuPy nor PyTorch is installed")
            return SKIP
        args = sorted(os.path.join(here, f) for f in os.listdir(here)
                      if (f.startswith("test_device") or f == "test_parzen_device.py")
                      and f.endswith(".py"))
    else:
        args = [here]
    return pytest.main(["-q", "-p", "no:cacheprovider", "-rs", *args])


def _importable(name):
    try:
        __import__(name)
        return True
    except ImportError:
        return False


if __name__ == "__main__":
    sys.exit(main())
