# SPDX-License-Identifier: MIT
"""cli_testlib.py: what the dicomhist command tests share.

Running the command, collecting failures without stopping at the first, skipping (exit 77) when
something the test needs is absent, and an independent reference: pydicom (with pylibjpeg for
JPEG lossless and JPEG-LS) decodes the pixels, the standard's masking and sign extension are
applied here, and histograms are binned with exact rational arithmetic.
"""
import json
import os
import subprocess
import sys
from fractions import Fraction

SKIP = 77


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(SKIP)


def parse_argv():
    """argv: the dicomhist binary, then the folder of real files (DH_SHARED_DICOM)."""
    if len(sys.argv) != 3:
        print(f"usage: {sys.argv[0]} DICOMHIST_BINARY SHARED_DICOM_DIR", file=sys.stderr)
        sys.exit(2)
    binary, shared = sys.argv[1], sys.argv[2]
    if not os.access(binary, os.X_OK):
        print(f"FAIL: {binary} is not an executable", file=sys.stderr)
        sys.exit(1)
    return binary, shared


def require_shared(shared):
    if not os.path.isfile(os.path.join(shared, "MANIFEST.tsv")):
        skip(f"{shared} (../shared/dicom) is absent")


class Checks:
    """Records failed expectations and carries on, so one run shows every problem."""

    def __init__(self):
        self.failures = []
        self.passed = 0

    def check(self, condition, what):
        if condition:
            self.passed += 1
        else:
            self.failures.append(what)
            print(f"FAIL: {what}", flush=True)
        return condition

    def equal(self, got, want, what):
        return self.check(got == want, f"{what}: got {short(got)}, want {short(want)}")

    def close(self, got, want, what, rel=1e-9, abs_tol=1e-9):
        ok = isinstance(got, (int, float)) and abs(got - want) <= max(abs_tol, rel * abs(want))
        return self.check(ok, f"{what}: got {short(got)}, want {short(want)}")

    def finish(self):
        print(f"{self.passed} checks passed, {len(self.failures)} failed")
        sys.exit(1 if self.failures else 0)


def short(value, limit=300):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


class Run:
    def __init__(self, args, rc, out, err):
        self.args, self.rc, self.out, self.err = args, rc, out, err

    def json_lines(self):
        return [json.loads(line) for line in self.out.splitlines() if line.strip()]

    def __repr__(self):
        return f"dicomhist {' '.join(self.args)} (exit {self.rc})"


def run(binary, *args, env=None, timeout=300):
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    p = subprocess.run([binary, *args], capture_output=True, env=full_env, timeout=timeout)
    return Run(list(args), p.returncode, p.stdout.decode("utf-8", "replace"),
               p.stderr.decode("utf-8", "replace"))


# --------------------------------------------------------------------------- reference decode

def import_reference_modules():
    try:
        import numpy  # noqa: F401
        import pydicom  # noqa: F401
    except ImportError as e:
        skip(f"Python module missing: {e.name}")
    try:
        import pylibjpeg  # noqa: F401
        import libjpeg  # noqa: F401  (pylibjpeg-libjpeg: JPEG lossless and JPEG-LS)
    except ImportError as e:
        skip(f"Python module missing: {e.name} (pylibjpeg-libjpeg decodes the JPEG files)")
    try:
        import openjpeg  # noqa: F401  (pylibjpeg-openjpeg: JPEG 2000 and HTJ2K)
    except ImportError as e:
        skip(f"Python module missing: {e.name} (pylibjpeg-openjpeg decodes the JPEG 2000 files)")


def read_dataset(path):
    import pydicom
    ds = pydicom.dcmread(path, force=True)
    if "TransferSyntaxUID" not in getattr(ds, "file_meta", {}):
        # A bare dataset without a meta header (fo-dicom_CR-MONO1-10-chest) is implicit LE.
        ds.file_meta = getattr(ds, "file_meta", None) or pydicom.dataset.FileMetaDataset()
        ds.file_meta.TransferSyntaxUID = pydicom.uid.ImplicitVRLittleEndian
    return ds


def stored_values(ds):
    """Stored values as int64 (frames, rows, columns), by the standard's rule applied here, not
    trusted to the decoder: shift down to HighBit, mask to BitsStored, sign-extend."""
    import numpy as np
    bits_allocated = int(ds.BitsAllocated)
    bits_stored = int(ds.BitsStored)
    high_bit = int(ds.get("HighBit", bits_stored - 1))
    signed = int(ds.PixelRepresentation) == 1
    a = np.asarray(ds.pixel_array)
    frames = int(ds.get("NumberOfFrames", 1) or 1)
    a = a.reshape(frames, int(ds.Rows), int(ds.Columns))
    raw = a.astype(np.int64) & ((1 << bits_allocated) - 1)  # the bits as stored
    v = (raw >> (high_bit + 1 - bits_stored)) & ((1 << bits_stored) - 1)
    if signed:
        v = np.where(v >= (1 << (bits_stored - 1)), v - (1 << bits_stored), v)
    return v


def slice_location(ds):
    """Position along the slice normal, or None without position/orientation."""
    ipp, iop = ds.get("ImagePositionPatient"), ds.get("ImageOrientationPatient")
    if ipp is None or iop is None:
        return None
    r, c = [float(x) for x in iop[:3]], [float(x) for x in iop[3:]]
    n = (r[1] * c[2] - r[2] * c[1], r[2] * c[0] - r[0] * c[2], r[0] * c[1] - r[1] * c[0])
    return sum(float(p) * k for p, k in zip(ipp, n))


class RefVolume:
    """One volume decoded independently: a single file (its frames) or a series of files."""

    def __init__(self, files):
        import numpy as np
        datasets = [(f, read_dataset(f)) for f in files]
        if len(datasets) > 1:
            locations = [slice_location(ds) for _, ds in datasets]
            if all(loc is not None for loc in locations):
                key = lambda i: (locations[i], datasets[i][0])
            else:
                key = lambda i: (int(datasets[i][1].get("InstanceNumber", 0)), datasets[i][0])
            order = sorted(range(len(datasets)), key=key)
            datasets = [datasets[i] for i in order]
            self.locations = [locations[i] for i in order]
        else:
            loc = slice_location(datasets[0][1])
            self.locations = [loc]
        self.sources = []
        self.frames = []
        arrays = []
        for f, ds in datasets:
            v = stored_values(ds)
            arrays.append(v)
            for k in range(v.shape[0]):
                self.sources.append(f)
                self.frames.append(k)
        self.data = np.concatenate(arrays)
        ds = datasets[0][1]
        self.ds = ds
        self.rows, self.columns = int(ds.Rows), int(ds.Columns)
        self.slices = self.data.shape[0]
        self.bits_allocated = int(ds.BitsAllocated)
        self.bits_stored = int(ds.BitsStored)
        self.signed = int(ds.PixelRepresentation) == 1
        self.photometric = str(ds.PhotometricInterpretation).strip()
        slope, intercept = ds.get("RescaleSlope"), ds.get("RescaleIntercept")
        self.slope = float(slope) if slope not in (None, "") else 1.0
        self.intercept = float(intercept) if intercept not in (None, "") else 0.0
        self.transfer_syntax = str(ds.file_meta.TransferSyntaxUID)
        # Lossy: a lossy syntax (PS3.5 A.4: JPEG processes other than the lossless ones,
        # JPEG-LS near-lossless, JPEG 2000 and HTJ2K that allow irreversible coding, MPEG and
        # its kin) or LossyImageCompression "01" in any of the volume's files.
        lossless_jpeg = {"57", "58", "65", "66", "70"}
        def lossy(d):
            uid = str(d.file_meta.TransferSyntaxUID)
            tail = uid.rsplit(".", 1)[-1]
            jpeg = uid.startswith("1.2.840.10008.1.2.4.") and 50 <= int(tail) <= 70
            return ((jpeg and tail not in lossless_jpeg)
                    or tail in {"81", "91", "93", "203"} and uid.startswith("1.2.840.10008.1.2.4.")
                    or uid.startswith("1.2.840.10008.1.2.4.10")
                    or str(d.get("LossyImageCompression", "")).strip() == "01")
        self.lossy = any(lossy(d) for _, d in datasets)
        self.series_uid = str(ds.get("SeriesInstanceUID", ""))
        self.modality = str(ds.get("Modality", ""))
        self.stored_min, self.stored_max = int(self.data.min()), int(self.data.max())
        a = self.slope * self.stored_min + self.intercept
        b = self.slope * self.stored_max + self.intercept
        self.modality_min, self.modality_max = min(a, b), max(a, b)
        # A Modality LUT Sequence replaces the rescale: modality values are pydicom's
        # apply_modality_lut of every representable stored value.
        self.lut = None
        if "ModalityLUTSequence" in ds:
            from pydicom.pixels import apply_modality_lut
            slo, shi = self.default_stored_range()
            stored = np.arange(slo, shi, dtype=np.int64)
            out = apply_modality_lut(stored, ds)
            self.lut = {int(s): int(m) for s, m in zip(stored, out)}
            item = ds.ModalityLUTSequence[0]
            self.lut_descriptor = [int(x) for x in item.LUTDescriptor]
            present = [self.lut[int(s)] for s in np.unique(self.data)]
            self.modality_min, self.modality_max = min(present), max(present)
        if len(datasets) > 1 and all(loc is not None for loc in self.locations):
            self.spacing = (self.locations[-1] - self.locations[0]) / (len(self.locations) - 1)
        elif self.slices == 1:
            self.spacing = 0.0
        else:
            self.spacing = None  # multi-frame: not asserted here

    def default_stored_range(self):
        bs = self.bits_stored
        return (-(1 << (bs - 1)), 1 << (bs - 1)) if self.signed else (0, 1 << bs)

    def unique_counts(self, slice_index=None):
        import numpy as np
        data = self.data if slice_index is None else self.data[slice_index]
        values, counts = np.unique(data, return_counts=True)
        return [(int(v), int(c)) for v, c in zip(values, counts)]

    def value(self, stored, units):
        if units == "stored":
            return Fraction(stored)
        if self.lut is not None:
            return Fraction(self.lut[stored])
        # slope * stored + intercept exactly, on the double values of slope and intercept
        # (the header promises the binning "computed exactly", not a rounded modality value).
        return Fraction(self.slope) * stored + Fraction(self.intercept)

    def default_modality_range(self):
        """The default modality range: the image of the representable stored values, one
        |slope|-wide step per stored value, [m(first), m(last) + |slope|) in modality order."""
        if self.lut is not None:  # the LUT's outputs, one bin per integer
            return (min(self.lut.values()), max(self.lut.values()) + 1)
        slo, shi = self.default_stored_range()
        m = lambda s: self.slope * s + self.intercept
        return (m(slo), m(shi)) if self.slope > 0 else (m(shi - 1), m(slo - 1))

    def default_modality_bins(self):
        if self.lut is not None:
            lo, hi = self.default_modality_range()
            return hi - lo
        return min(1 << self.bits_stored, 65536)

    def default_modality_histogram(self, bins, slice_index=None):
        """Default modality binning goes through the stored value itself (its step in modality
        order), so no rounded edge can move a value: bin = step * bins // steps. Through a
        Modality LUT the outputs are integers, binned like any range."""
        if self.lut is not None:
            lo, hi = self.default_modality_range()
            return self.histogram("modality", bins, lo, hi, slice_index)
        slo, shi = self.default_stored_range()
        span = shi - slo
        counts = [0] * bins
        for stored, c in self.unique_counts(slice_index):
            step = stored - slo if self.slope > 0 else shi - 1 - stored
            counts[step * bins // span] += c
        return counts, 0, 0

    def histogram(self, units, bins, lo, hi, slice_index=None):
        """(counts, underflow, overflow) by bin = floor((v - lo) * bins / (hi - lo)), exact."""
        flo, fhi = Fraction(lo), Fraction(hi)
        width = fhi - flo
        counts = [0] * bins
        under = over = 0
        for stored, c in self.unique_counts(slice_index):
            x = self.value(stored, units)
            if x < flo:
                under += c
            elif x >= fhi:
                over += c
            else:
                counts[(x - flo) * bins // width] += c
        return counts, under, over


def begin_real_file_test():
    """The start of a script over the real files: (binary, shared folder, Checks), after
    skipping (exit 77) where the folder or a reference module is absent."""
    binary, shared = parse_argv()
    require_shared(shared)
    import_reference_modules()
    return binary, shared, Checks()


def one_record(c, r, what):
    """The one JSON record of a run that must succeed, or None (the failure recorded in c)."""
    if not c.equal(r.rc, 0, f"{what}: exit status (stderr: {r.err.strip()})"):
        return None
    records = r.json_lines()
    if not c.equal(len(records), 1, f"{what}: number of records"):
        return None
    return records[0]
