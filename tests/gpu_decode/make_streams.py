#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make_streams.py DEST: multi-frame DICOM files for the GPU decode test (test_dicom_gpu_decode
--gpu), each beside its uncompressed twin (X.dcm and X.native.dcm: the values the encoder was
given), made by the encoders archives use: OpenJPEG's opj_compress (JPEG 2000, lossless .90 and
lossy .91), OpenJPH's ojph_compress (HTJ2K .201) and DCMTK's dcmcjpeg (JPEG lossless SV1 .70).
Depths 8 to 16 bits (J2K: 8, 10, 12, 14, 16; opj_compress reads no raw 13 or 15-bit input),
signed and unsigned (HTJ2K unsigned only: OpenJPH's raw reader clips negative samples), several frames of an odd size (so no row is a multiple
of a tile or block), each frame holding the extremes of its range; and CT-like 512x512 frames.
Run on a machine with the tools (tools/install-deps) and pydicom; the GPU machine reads the result.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import pydicom
from pydicom.dataset import Dataset, FileMetaDataset
from pydicom.encaps import encapsulate
from pydicom.uid import ExplicitVRLittleEndian, generate_uid

ROOT = "2.25.136441711287616915122970018367938058752.2.24"  # the project's seeded root, issue 24


def values(frames, rows, cols, bits, signed, seed):
    """Smooth ramps plus noise over the whole range; every frame holds its minimum and maximum."""
    rng = np.random.default_rng(seed)
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    y, x = np.mgrid[0:rows, 0:cols]
    out = np.empty((frames, rows, cols), np.int64)
    for f in range(frames):
        ramp = lo + (hi - lo) * ((x + y * 3 + f * 7) % (cols + rows)) / (cols + rows)
        noise = rng.integers(-(1 << max(bits - 4, 1)), 1 << max(bits - 4, 1), (rows, cols))
        out[f] = np.clip(ramp + noise, lo, hi)
        out[f, 0, 0], out[f, -1, -1] = lo, hi
    return out


def ct_like(frames, seed):
    """12-bit CT-like slices: air, fat, soft tissue and bone (the mix docs/performance.md uses)."""
    rng = np.random.default_rng(seed)
    kind = rng.choice(4, (frames, 512, 512), p=[0.4, 0.15, 0.3, 0.15])
    centre = np.array([24, 924, 1064, 1700])[kind]
    spread = np.array([10, 20, 30, 300])[kind]
    return np.clip(rng.normal(centre, spread), 0, 4095).astype(np.int64)


def dataset(pixels, bits, signed, allocated, syntax, name):
    frames, rows, cols = pixels.shape
    ds = Dataset()
    ds.file_meta = FileMetaDataset()
    ds.file_meta.TransferSyntaxUID = syntax
    ds.file_meta.MediaStorageSOPClassUID = "1.2.840.10008.5.1.4.1.1.7"
    ds.file_meta.MediaStorageSOPInstanceUID = generate_uid(ROOT + ".", [name, syntax])
    ds.SOPClassUID = ds.file_meta.MediaStorageSOPClassUID
    ds.SOPInstanceUID = ds.file_meta.MediaStorageSOPInstanceUID
    ds.StudyInstanceUID = generate_uid(ROOT + ".", ["study"])
    ds.SeriesInstanceUID = generate_uid(ROOT + ".", [name])
    ds.Modality = "OT"
    ds.PatientName = "GPU^Decode"
    ds.PatientID = "issue24"
    ds.SamplesPerPixel = 1
    ds.PhotometricInterpretation = "MONOCHROME2"
    ds.Rows, ds.Columns = rows, cols
    ds.NumberOfFrames = frames
    ds.BitsAllocated, ds.BitsStored, ds.HighBit = allocated, bits, bits - 1
    ds.PixelRepresentation = 1 if signed else 0
    return ds


def native(pixels, bits, signed, allocated):
    dtype = {(8, 0): np.uint8, (8, 1): np.int8, (16, 0): np.uint16, (16, 1): np.int16}
    return pixels.astype(dtype[(allocated, int(signed))]).tobytes()


def save(ds, path):
    ds.save_as(path, enforce_file_format=True)


def encode_frame(tool, frame, bits, signed, work, extra):
    rows, cols = frame.shape
    raw = os.path.join(work, "in.rawl" if tool == "opj_compress" else "in.yuv")
    out = os.path.join(work, "out.j2k" if tool == "opj_compress" else "out.j2c")
    # Little-endian words above 8 bits, bytes up to 8, two's complement when signed.
    frame.astype("<i2" if bits > 8 and signed else "<u2" if bits > 8 else
                  "i1" if signed else "u1").tofile(raw)
    if tool == "opj_compress":
        cmd = [tool, "-i", raw, "-o", out, "-F",
               f"{cols},{rows},1,{bits},{'s' if signed else 'u'}"] + extra
    else:
        cmd = [tool, "-i", raw, "-o", out, "-dims", f"{{{cols},{rows}}}", "-num_comps", "1",
               "-signed", "true" if signed else "false", "-bit_depth", str(bits),
               "-downsamp", "{1,1}", "-reversible", "true", "-num_decomps", "3"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out, "rb") as f:
        return f.read()


def write_pair(dest, name, pixels, bits, signed, syntax, encode):
    allocated = 8 if bits <= 8 else 16
    twin = dataset(pixels, bits, signed, allocated, ExplicitVRLittleEndian, name)
    twin.PixelData = native(pixels, bits, signed, allocated)
    save(twin, os.path.join(dest, name + ".native.dcm"))
    if syntax == "1.2.840.10008.1.2.4.70":
        subprocess.run(["dcmcjpeg", "+e1", os.path.join(dest, name + ".native.dcm"),
                        os.path.join(dest, name + ".dcm")], check=True)
        return
    ds = dataset(pixels, bits, signed, allocated, syntax, name)
    ds.PixelData = encapsulate([encode(frame) for frame in pixels], has_bot=True)
    if syntax == "1.2.840.10008.1.2.4.91":
        ds.LossyImageCompression = "01"
    save(ds, os.path.join(dest, name + ".dcm"))


def jpll_p12(dest, name, ct):
    """The same frames as JPEG lossless SV1 whose frame header says 12 bits (as scanners write
    it; dcmcjpeg writes 16), which the batch may hand to nvJPEG as they stand (issue 24)."""
    from sv1_encoder import check_with_dcmtk, encode_sv1
    ds = dataset(ct, 12, False, 16, "1.2.840.10008.1.2.4.70", name)
    ds.PixelData = encapsulate([encode_sv1(frame, 12, 0) for frame in ct], has_bot=True)
    path = os.path.join(dest, name + ".dcm")
    save(ds, path)
    check_with_dcmtk(path, ct)


def jpll_p16_dirty(dest, name, ct):
    """The frames as JPEG lossless SV1 whose header says 16 bits (as dcmcjpeg writes 12-bit data)
    with bits above BitsStored set at random in the words: the CPU read masks them away, so the
    batch's nvJPEG path must mask them on the GPU too (dicom_gpu_mask.cpp, issue 24)."""
    from sv1_encoder import encode_sv1
    rng = np.random.default_rng(12)
    words = ct | (rng.integers(0, 16, ct.shape) << 12)
    ds = dataset(ct, 12, False, 16, "1.2.840.10008.1.2.4.70", name)
    ds.PixelData = encapsulate([encode_sv1(frame, 16, 0) for frame in words], has_bot=True)
    path = os.path.join(dest, name + ".dcm")
    save(ds, path)
    with tempfile.TemporaryDirectory() as work:  # DCMTK decodes the words; masked, they are ct
        back = os.path.join(work, "back.dcm")
        subprocess.run(["dcmdjpeg", path, back], check=True)
        got = np.frombuffer(pydicom.dcmread(back).PixelData, np.uint16).reshape(ct.shape)
    if not np.array_equal(got, words) or not np.array_equal(got & 0xFFF, ct):
        raise SystemExit(f"make_streams: {path}: the stream does not decode to its words")


def bench(dest, frames):
    """bench_ct_{j2k,htj2k,jpll,jpll_p12}.dcm: `frames` CT-like 512x512 12-bit frames in one file
    each, for bench_decode --gpu and --batch (no twins)."""
    ct = ct_like(frames, 11)
    with tempfile.TemporaryDirectory() as work:
        write_pair(work, "bench_ct_j2k", ct, 12, False, "1.2.840.10008.1.2.4.90",
                   lambda f: encode_frame("opj_compress", f, 12, False, work, []))
        write_pair(work, "bench_ct_htj2k", ct, 12, False, "1.2.840.10008.1.2.4.201",
                   lambda f: encode_frame("ojph_compress", f, 12, False, work, []))
        write_pair(work, "bench_ct_jpll", ct, 12, False, "1.2.840.10008.1.2.4.70", None)
        for name in ("bench_ct_j2k", "bench_ct_htj2k", "bench_ct_jpll"):
            os.replace(os.path.join(work, name + ".dcm"), os.path.join(dest, name + ".dcm"))
    jpll_p12(dest, "bench_ct_jpll_p12", ct)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--bench":
        os.makedirs(sys.argv[2], exist_ok=True)
        return bench(sys.argv[2], int(sys.argv[3]))
    if len(sys.argv) != 2:
        sys.exit("usage: make_streams.py DEST | make_streams.py --bench DEST FRAMES")
    dest = sys.argv[1]
    os.makedirs(dest, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        j2k = lambda b, s, extra: (lambda f: encode_frame("opj_compress", f, b, s, work, extra))
        htj = lambda b, s: (lambda f: encode_frame("ojph_compress", f, b, s, work, []))
        seed = 24
        for bits in (8, 10, 12, 13, 14, 15, 16):
            for signed in (False, True):
                seed += 1
                px = values(3, 61, 97, bits, signed, seed)
                tag = f"{bits}{'s' if signed else 'u'}"
                if bits not in (13, 15):  # opj_compress refuses raw input of odd depths above 12
                    write_pair(dest, f"gen_j2k_{tag}", px, bits, signed,
                               "1.2.840.10008.1.2.4.90", j2k(bits, signed, []))
                if not signed:  # ojph_compress 0.10 mangles signed raw input (negatives clipped)
                    write_pair(dest, f"gen_htj2k_{tag}", px, bits, signed,
                               "1.2.840.10008.1.2.4.201", htj(bits, signed))
                write_pair(dest, f"gen_jpll_{tag}", px, bits, signed, "1.2.840.10008.1.2.4.70",
                           None)
        ct = ct_like(2, 7)
        write_pair(dest, "gen_ct_j2k", ct, 12, False, "1.2.840.10008.1.2.4.90", j2k(12, False, []))
        write_pair(dest, "gen_ct_htj2k", ct, 12, False, "1.2.840.10008.1.2.4.201", htj(12, False))
        write_pair(dest, "gen_ct_jpll", ct, 12, False, "1.2.840.10008.1.2.4.70", None)
        jpll_p16_dirty(dest, "gen_ct_jpll_p16_dirty", ct)
        # Lossy (irreversible 9/7, 20:1 and 8:1): compared with OpenJPEG within a measured bound.
        write_pair(dest, "lossy_ct_j2k_r20", ct, 12, False, "1.2.840.10008.1.2.4.91",
                   j2k(12, False, ["-I", "-r", "20"]))
        px = values(3, 61, 97, 16, True, 99)
        write_pair(dest, "lossy_16s_j2k_r8", px, 16, True, "1.2.840.10008.1.2.4.91",
                   j2k(16, True, ["-I", "-r", "8"]))
    # Single SV1 frames on both sides of where nvJPEG's lossless backend is exact (issue 24).
    from make_sv1_sweep import sweep
    sweep(os.path.join(dest, "sv1_sweep"))


if __name__ == "__main__":
    main()
