#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_mi_reference.py: `dicomhist mi --json` against independent references on real image
pairs from ../shared/dicom: scikit-learn's mutual_info_score over a contingency table counted in
numpy with the project's integer binning, and scikit-image's normalized_mutual_information with
explicit float64 edges lo + k (hi - lo + 1) / B (../shared/docs/mutual-information.md).

Usage: test_mi_reference.py DICOMHIST SHARED_DICOM. Exits 77 (skipped) when the shared folder,
pydicom, scikit-learn or scikit-image is absent.
"""
import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import cli_testlib as t  # noqa: E402  (the command tests' runner and reference decode)

try:
    import numpy as np
    import pydicom
    from skimage.metrics import normalized_mutual_information
    from sklearn.metrics import mutual_info_score
except ImportError as e:  # a missing module is a skip, not a failure
    t.skip(str(e))


def stored_values(path):
    """Stored values by the standard's rule (cli_testlib), flattened frame after frame."""
    return t.stored_values(t.read_dataset(path)).ravel()


def bin_index(v, lo, hi, bins):
    return (v - lo) * bins // (hi - lo + 1)


def reference(fixed, moving, bf, bm, frange=None, mrange=None):
    flo, fhi = frange if frange else (int(fixed.min()), int(fixed.max()))
    mlo, mhi = mrange if mrange else (int(moving.min()), int(moving.max()))
    keep = (fixed >= flo) & (fixed <= fhi) & (moving >= mlo) & (moving <= mhi)
    f, m = fixed[keep], moving[keep]
    table = np.zeros((bf, bm), dtype=np.int64)
    np.add.at(table, (bin_index(f, flo, fhi, bf), bin_index(m, mlo, mhi, bm)), 1)
    mi = mutual_info_score(None, None, contingency=table)
    fedges = flo + np.arange(bf + 1, dtype=np.float64) * (fhi - flo + 1) / bf
    medges = mlo + np.arange(bm + 1, dtype=np.float64) * (mhi - mlo + 1) / bm
    nmi = normalized_mutual_information(f.astype(np.float64), m.astype(np.float64),
                                        bins=[fedges, medges])
    # The two references must agree on the counts: histogram2d with the same edges.
    h2, _, _ = np.histogram2d(f, m, bins=[fedges, medges])
    assert np.array_equal(h2.astype(np.int64), table), "numpy edges and integer bins disagree"
    return mi, nmi, int(keep.sum()), (flo, fhi), (mlo, mhi)


def run_mi(tool, args):
    r = t.run(tool, "mi", "--json", "--device", "cpu", *args)
    if r.rc != 0:
        raise AssertionError(f"dicomhist mi {args} failed ({r.rc}): {r.err}")
    return r.json_lines()


def close(a, b, tol, what):
    if not (abs(a - b) <= tol * max(1.0, abs(b))):
        raise AssertionError(f"{what}: dicomhist {a!r}, reference {b!r}")


def write_shifted(src, dst, shift):
    """A real slice moved by `shift` columns (wrapping), saved as a new DICOM file."""
    ds = pydicom.dcmread(src)
    arr = ds.pixel_array
    ds.PixelData = np.ascontiguousarray(np.roll(arr, shift, axis=1)).tobytes()
    ds.save_as(dst)


def main():
    tool, shared = t.parse_argv()
    t.require_shared(shared)
    p = lambda name: os.path.join(shared, name)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        shifted = [os.path.join(tmp, f"ct_shift{s}.dcm") for s in (1, 3, 9)]
        for s, path in zip((1, 3, 9), shifted):
            write_shifted(p("pydicom_CT_small.dcm"), path, s)
        cases = [
            # fixed, moving files, bins, extra args, explicit ranges
            (p("dcm_qa_12bit_12bitUnsigned.dcm"), [p("dcm_qa_12bit_12bitUnsigned_0x0F0F.dcm")],
             (64, 64), [], None, None),
            (p("dcm_qa_12bit_12bitUnsigned.dcm"), [p("dcm_qa_12bit_12bitUnsigned_0x0F0F.dcm")],
             (100, 37), [], None, None),
            (p("fo-dicom_IM-0001-0001-0001.dcm"), [p("fo-dicom_D_CLUNIE_CT1_RLE_FRAGS.dcm")],
             (256, 256), [], None, None),
            (p("fo-dicom_IM-0001-0001-0001.dcm"), [p("fo-dicom_D_CLUNIE_CT1_RLE_FRAGS.dcm")],
             (50, 16), [], (0, 2000), (-1000, 1500)),
            (p("pydicom_CT_small.dcm"), [p("pydicom_CT_small.dcm")] + shifted,
             (32, 32), [], None, None),
            (p("pydicom-data_emri_small.dcm"), [p("pydicom-data_emri_small_big_endian.dcm"),
                                                p("pydicom-data_emri_small_jpeg_ls_lossless.dcm")],
             (16, 64), [], None, None),
        ]
        for fixed, movings, (bf, bm), extra, fr, mr in cases:
            args = ["--bins", f"{bf}:{bm}"] + extra
            if fr:
                args += ["--range-fixed", f"{fr[0]}:{fr[1]}"]
            if mr:
                args += ["--range-moving", f"{mr[0]}:{mr[1]}"]
            records = run_mi(tool, args + [fixed] + movings)
            assert len(records) == len(movings), records
            fv = stored_values(fixed)
            mis = []
            for rec, moving in zip(records, movings):
                mi, nmi, n, frange, mrange = reference(fv, stored_values(moving), bf, bm, fr, mr)
                name = f"{os.path.basename(fixed)} vs {os.path.basename(moving)} {bf}:{bm}"
                try:
                    assert rec["status"] == "ok", rec
                    assert rec["n"] == n, (rec["n"], n)
                    assert tuple(rec["range_fixed"]) == frange, (rec["range_fixed"], frange)
                    assert tuple(rec["range_moving"]) == mrange, (rec["range_moving"], mrange)
                    close(rec["mi"], mi, 1e-10, f"{name}: MI against scikit-learn")
                    close(rec["nmi"], nmi, 1e-10, f"{name}: NMI against scikit-image")
                    close(rec["ecc"], 2 - 2 / nmi, 1e-9, f"{name}: ECC from NMI")
                    close(rec["h_fixed"] + rec["h_moving"] - rec["h_joint"], rec["mi"], 1e-12,
                          f"{name}: MI = H(F) + H(M) - H(F,M)")
                    print(f"ok   {name}: MI {rec['mi']:.6f} (sklearn {mi:.6f}), "
                          f"NMI {rec['nmi']:.6f} (skimage {nmi:.6f}), n {n}")
                except AssertionError as e:
                    failures += 1
                    print(f"FAIL {name}: {e}")
                mis.append(rec["mi"])
            if fixed.endswith("pydicom_CT_small.dcm"):  # MI falls as the shift grows
                if not all(a > b for a, b in zip(mis, mis[1:])):
                    failures += 1
                    print(f"FAIL MI does not fall with the shift: {mis}")
        # log2 gives bits: the same MI divided by ln 2.
        nats = run_mi(tool, [p("pydicom_CT_small.dcm"), shifted[1]])[0]
        bits = run_mi(tool, ["--log2", p("pydicom_CT_small.dcm"), shifted[1]])[0]
        try:
            close(bits["mi"], nats["mi"] / math.log(2), 1e-12, "MI in bits")
            assert bits["unit"] == "bits" and nats["unit"] == "nats"
        except AssertionError as e:
            failures += 1
            print(f"FAIL log2: {e}")
    print("all passed" if failures == 0 else f"{failures} failed")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
