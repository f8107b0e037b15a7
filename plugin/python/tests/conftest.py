# SPDX-License-Identifier: MIT
"""What the package's tests share: the repository's sample data, the real files of
../shared/dicom (skipped where absent), the dicomhist command for cross-checks (DICOMHIST_CLI,
set by ctest; skipped where absent), and small reference implementations written from the
documented definitions with NumPy alone."""
import json
import os
import subprocess

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SAMPLE = os.path.join(ROOT, "sample_data")
SHARED = os.environ.get("DH_SHARED_DICOM", os.path.join(ROOT, "..", "shared", "dicom"))


@pytest.fixture
def cli():
    """Runs `dicomhist ARGS...` and returns its JSON lines as dicts."""
    binary = os.environ.get("DICOMHIST_CLI")
    if not binary or not os.access(binary, os.X_OK):
        pytest.skip("DICOMHIST_CLI (the dicomhist command) is not set")

    def run(*args):
        out = subprocess.run([binary, *map(str, args)], capture_output=True, text=True,
                             check=True).stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    run.binary = binary
    return run


def shared(relative):
    path = os.path.join(SHARED, relative)
    if not os.path.exists(path):
        pytest.skip(f"{path} (../shared/dicom) is absent")
    return path


def ref_bins(v, lo, hi, bins):
    """The integer axis: floor((v - lo) * B / (hi - lo + 1)) for lo <= v <= hi, else -1."""
    v = np.asarray(v, dtype=np.int64)
    b = (v - lo) * bins // (hi - lo + 1)
    return np.where((v >= lo) & (v <= hi), b, -1)


def ref_float_bins(v, lo, hi, bins):
    """The float axis in float32 steps, each rounded once (NumPy float32 arithmetic):
    min(B - 1, floor(((v - lo) * B) / (hi - lo))) for lo <= v <= hi, else -1."""
    v = np.asarray(v, dtype=np.float32)
    lo32, hi32 = np.float32(lo), np.float32(hi)
    with np.errstate(invalid="ignore", over="ignore"):
        q = ((v - lo32) * np.float32(bins)) / (hi32 - lo32)
        inside = (v >= lo32) & (v <= hi32)
        b = np.minimum(np.where(inside, q, 0).astype(np.int64), bins - 1)
    return np.where(inside, b, -1)


def ref_joint(fb, mb, bf, bm):
    """Joint counts of two bin arrays (-1 = not counted), by a plain loop over pixels."""
    joint = np.zeros((bf, bm), dtype=np.int64)
    for a, b in zip(fb.reshape(-1).tolist(), mb.reshape(-1).tolist()):
        if a >= 0 and b >= 0:
            joint[a, b] += 1
    return joint


def ref_scores(joint):
    """MI, NMI, H(F), H(M), H(F,M) in nats from counts, in float64: -sum p ln p."""
    n = joint.sum()
    p = joint[joint > 0] / n
    pf = joint.sum(axis=1)
    pm = joint.sum(axis=0)
    h = lambda q: float(-(q * np.log(q)).sum())
    hf, hm, hj = h(pf[pf > 0] / n), h(pm[pm > 0] / n), h(p)
    return {"mi": hf + hm - hj, "nmi": (hf + hm) / hj if hj > 0 else float("nan"),
            "h_fixed": hf, "h_moving": hm, "h_joint": hj, "n": int(n)}


def ct_like(rng, shape, lo=0, hi=4095):
    """A smooth image with structure and noise, so MI is neither 0 nor H."""
    yy, xx = np.mgrid[0:shape[-2], 0:shape[-1]]
    base = (np.sin(xx / 7.0) + np.cos(yy / 11.0)) * 0.25 + 0.5
    img = base * (hi - lo) + lo + rng.normal(0, (hi - lo) * 0.05, size=shape)
    return np.clip(np.rint(img), lo, hi)
