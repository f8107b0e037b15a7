#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_cli_gpu.py: the command on the GPU gives what it gives on the CPU, on every real file.

For every file and series folder of ../shared/dicom and ../shared/dicom-jpeg2000:
- `histogram` with several option sets: --device cuda prints byte for byte what --device cpu
  prints, with the same exit status (lossy inputs decoded by the CPU decoders on both sides:
  --device cpu keeps the decoders on the CPU, and a lossy stream's GPU decode is held to its
  bound by test_dicom_gpu_decode, not to the same bits);
- `equalize` and `window` (per volume and per slice, several windows and clip limits): the
  derived files' pixel data is identical (the UIDs differ by design, so only PixelData is
  compared, read straight from the explicit little endian files written);
- `equalize` of the whole folder as one batch on 8 workers sharing the GPU (cuda also with one
  GPU decode slot and back threads; auto also with the GPU decoders asked for): --device cuda
  and auto write the pixels --device cpu writes;
- generated JPEG 2000 and HTJ2K series (one with a damaged file) as one batch: --device cuda
  reading them into GPU memory (shared, with back threads, whole) or to the host, and auto,
  write the pixels --device cpu writes, with its exit status;
- the JPEG lossless SV1 series of both folders and of the build's generated streams as one batch:
  --device cuda (nvJPEG into GPU memory) and DH_GPU_JPEG_LOSSLESS=0 (DCMTK) write the pixels
  --device cpu writes;
- `mi` between images of the same shape: identical JSON records but for the `device` field
  (the GPU promises the same bits).
A run in which too few inputs could be read at all fails: comparing two identical errors proves
nothing (a GPU host without DCMTK's data dictionary reads no file).

Usage: test_cli_gpu.py DICOMHIST SHARED_DICOM. Exits 77 (skipped) where no GPU is usable or the
folder is absent. Needs no module beyond the standard library (cli_testlib imports numpy and
pydicom only for its reference decode, unused here), so it runs on a bare GPU host.
"""
import json
import os
import shutil
import struct
import tempfile

import cli_testlib as t


def inputs(shared):
    """Every DICOM file (any name) and every folder holding a series."""
    files, folders = [], []
    for root, dirs, names in os.walk(shared):
        dirs.sort()
        for n in sorted(names):
            if n.endswith((".md", ".tsv")):
                continue
            files.append(os.path.join(root, n))
        if root != shared and any(n.endswith(".dcm") for n in names) and os.path.basename(
                os.path.dirname(root)) == "series":
            folders.append(root)
    return files + folders


def pixel_data(path):
    """PixelData of an explicit little endian file with a defined length (what dicomhist
    writes): the bytes after the last (7FE0,0010) OW/OB header."""
    with open(path, "rb") as f:
        b = f.read()
    for vr in (b"OW", b"OB"):
        i = b.rfind(b"\xe0\x7f\x10\x00" + vr + b"\x00\x00")
        if i >= 0:
            (length,) = struct.unpack_from("<I", b, i + 8)
            return b[i + 12:i + 12 + length]
    raise ValueError(f"{path}: no PixelData found")


def derived_pixels(folder):
    out = {}
    for root, _, names in os.walk(folder):
        for n in names:
            # PNG previews and the batch manifest (its seconds differ by design) hold no pixels.
            if n.endswith(".png") or n.startswith("dicomhist-manifest"):
                continue
            p = os.path.join(root, n)
            out[os.path.relpath(p, folder)] = pixel_data(p)
    return out


_lossy = {}


def same_decoder(exe, p):
    """Options that make both devices decode p with the same decoder. A lossy stream decodes to
    values within a stated bound, not to the same values, on nvJPEG2000 and on OpenJPEG (that
    bound is test_dicom_gpu_decode's to check); what this test holds the GPU to is the same bits
    from the same stored values, so a lossy input is decoded on the CPU for both devices."""
    if p not in _lossy:
        _lossy[p] = '"lossy":true' in t.run(exe, "info", "--json", "--decode", "cpu", p).out
    return ["--decode", "cpu"] if _lossy[p] else []


def compare_histograms(c, exe, paths):
    readable = 0
    for opts in (["--json"], ["--json", "--per-slice", "--bins", "7"],
                 ["--json", "--per-slice", "--units", "modality", "--bins", "4097"],
                 ["--json", "--bins", "65536"], ["--json", "--bins", "256", "--range", "0:4096"]):
        for p in paths:
            same = same_decoder(exe, p)
            cpu = t.run(exe, "histogram", *opts, *same, "--device", "cpu", p)
            gpu = t.run(exe, "histogram", *opts, *same, "--device", "cuda", p)
            c.check(cpu.rc == gpu.rc and cpu.out == gpu.out,
                    f"histogram {' '.join(opts)} {p}: cpu rc {cpu.rc}, cuda rc {gpu.rc} "
                    f"{gpu.err[:200]!r}")
            readable += cpu.rc == 0 and len(cpu.out) > 0
    return readable


def compare_derived(c, exe, paths, tmp):
    jobs = [["equalize"], ["equalize", "--mode", "slice"], ["equalize", "--window", "minmax"],
            ["equalize", "--mode", "slice", "--window", "percentile:2", "--clip-limit", "3"],
            ["equalize", "--bits", "16", "--window", "percentile:0.5"],
            ["window", "--window", "minmax"], ["window", "--mode", "slice", "--window",
                                                "percentile:1", "--function", "sigmoid"]]
    written = 0
    for j, job in enumerate(jobs):
        for i, p in enumerate(paths):
            outs = {}
            for dev in ("cpu", "cuda"):
                d = os.path.join(tmp, f"{j}_{i}_{dev}")
                r = t.run(exe, *job, *same_decoder(exe, p), "--device", dev, "-o", d, p)
                outs[dev] = (r.rc, derived_pixels(d) if r.rc == 0 and os.path.isdir(d) else None,
                             r.err)
            (rc1, px1, _), (rc2, px2, err2) = outs["cpu"], outs["cuda"]
            c.check(rc1 == rc2 and px1 == px2,
                    f"{' '.join(job)} {p}: cpu rc {rc1}, cuda rc {rc2}, pixels "
                    f"{'equal' if px1 == px2 else 'differ'} {err2[:200]!r}")
            written += rc1 == 0 and bool(px1)
    return written


def compare_batch(c, exe, shared, tmp):
    """The whole folder as one batch on 8 workers, each with its own GPU stream and staging and
    no lock between them (issue 24): --device cuda and auto write the pixels --device cpu
    writes, with the same exit status (the folder holds files that fail on purpose). "cuda1":
    cuda with one GPU decode slot (DICOMHIST_GPU_DECODE_SLOTS=1) and two back threads
    (DICOMHIST_BACK_THREADS=2); "autog": auto with the GPU decoders loaded whatever the batch's
    size (DICOMHIST_AUTO_DECODERS=gpu): the same pixels. ../shared/dicom holds no JPEG 2000 or
    HTJ2K series, so the GPU decoders' scheduling is compare_j2k_batch's (session 23 found this
    batch had never exercised it)."""
    outs = {}
    envs = {"cuda1": {"DICOMHIST_GPU_DECODE_SLOTS": "1", "DICOMHIST_BACK_THREADS": "2"},
            "autog": {"DICOMHIST_AUTO_DECODERS": "gpu"}}
    for dev in ("cpu", "cuda", "auto", "cuda1", "autog"):
        d = os.path.join(tmp, f"batch_{dev}")
        for job in (["equalize"], ["equalize", "--mode", "slice", "--window", "percentile:1"]):
            r = t.run(exe, *job, "--jobs", "8", "--device", dev.rstrip("1g"), "-o", d, shared,
                      env=envs.get(dev))
            outs[(dev, job[-1])] = (r.rc, derived_pixels(d) if os.path.isdir(d) else {})
            shutil.rmtree(d, ignore_errors=True)
    for dev in ("cuda", "auto", "cuda1", "autog"):
        for job in ("equalize", "percentile:1"):
            c.check(outs[(dev, job)] == outs[("cpu", job)],
                    f"batch {job} --jobs 8 --device {dev}: rc {outs[(dev, job)][0]} against "
                    f"{outs[('cpu', job)][0]}, {len(outs[(dev, job)][1])} against "
                    f"{len(outs[('cpu', job)][1])} files, pixels "
                    f"{'equal' if outs[(dev, job)][1] == outs[('cpu', job)][1] else 'differ'}")
    return len(outs[("cpu", "equalize")][1])


def compare_j2k_batch(c, exe, series, tmp):
    """Generated lossless JPEG 2000 and HTJ2K series, one with a damaged file (make_series.py,
    DH_PLAN_DEVICE_SERIES), as one batch on one worker that takes no series before the GPU
    decoders have loaded (DICOMHIST_GPU_DECODE_WAIT=1; else this small batch ends on the cores
    while they load), so each goes to the GPU: --device cuda reads such a series into GPU memory
    through
    its share and equalizes it there (session 23), "cudab" with two back threads of the feeder's
    own copying files in too (DICOMHIST_BACK_THREADS=2), "cudad" whole in one call, "cudah" to
    the host as before, auto (decoders on) to the host: the pixels and exit status --device cpu
    gives, and --stats says cuda read all four series into GPU memory (none for the host read
    and auto)."""
    if not series or not os.path.isdir(series):
        print("note: no generated JPEG 2000 series (DH_PLAN_DEVICE_SERIES): J2K batch not run")
        return 0
    outs, device = {}, {}
    wait = {"DICOMHIST_GPU_DECODE_WAIT": "1"}
    for key, dev, env in (("cpu", "cpu", None), ("cuda", "cuda", {}),
                          ("cudab", "cuda", {"DICOMHIST_BACK_THREADS": "2"}),
                          ("cudad", "cuda", {"DICOMHIST_DEVICE_SERIES": "whole"}),
                          ("cudah", "cuda", {"DICOMHIST_DEVICE_SERIES": "0"}),
                          ("auto", "auto", {"DICOMHIST_AUTO_DECODERS": "gpu"})):
        d = os.path.join(tmp, f"j2k_{key}")
        r = t.run(exe, "equalize", "--jobs", "1", "--stats", "--device", dev, "-o", d, series,
                  env=None if env is None else {**wait, **env})
        outs[key] = (r.rc, derived_pixels(d) if os.path.isdir(d) else {})
        lines = [line for line in r.err.splitlines() if "into device memory" in line]
        device[key] = lines[0].split("stats: ")[-1] if lines else ""
        print(f"J2K batch {key}: rc {r.rc}, {len(outs[key][1])} files; "
              f"{device[key] or 'no series into device memory'}")
        shutil.rmtree(d, ignore_errors=True)
    for key in ("cuda", "cudab", "cudad"):
        c.check(device[key].startswith("series read into device memory: 4, 0 "),
                f"J2K batch --device {key}: '{device[key]}', not the 4 series into GPU memory")
    for key in ("cpu", "cudah", "auto"):
        c.check(not device[key], f"J2K batch {key}: '{device[key]}' into device memory")
    for key in ("cuda", "cudab", "cudad", "cudah", "auto"):
        c.check(outs[key] == outs["cpu"],
                f"J2K batch --device {key}: rc {outs[key][0]} against {outs['cpu'][0]}, "
                f"{len(outs[key][1])} against {len(outs['cpu'][1])} files, pixels "
                f"{'equal' if outs[key][1] == outs['cpu'][1] else 'differ'}")
    c.check(outs["cpu"][0] == 1, f"J2K batch: rc {outs['cpu'][0]}, not 1 for the damaged file")
    return len(outs["cpu"][1])


def sv1_archive(shared, streams, dest):
    """An archive of JPEG lossless SV1 series (links, nothing copied): the SV1 files of the
    shared folder (a 2140x1760 CR, a 512x512 CT) and the generated multi-frame SV1 streams of
    the build (DH_GPU_DECODE_STREAMS, made by dcmcjpeg and sv1_encoder.py) where present."""
    names = [os.path.join(shared, n) for n in ("pylibjpeg-data_RG2_JPLL.dcm",
                                               "fo-dicom_IM-0001-0001-0001.dcm")]
    if streams and os.path.isdir(streams):
        names += [os.path.join(streams, n) for n in sorted(os.listdir(streams))
                  if "jpll" in n and n.endswith(".dcm") and not n.endswith(".native.dcm")]
    os.makedirs(dest)
    for i, src in enumerate(n for n in names if os.path.isfile(n)):
        os.symlink(os.path.abspath(src), os.path.join(dest, f"{i:02d}_{os.path.basename(src)}"))
    return dest


def compare_sv1_batch(c, exe, shared, tmp):
    """JPEG lossless SV1 series in a batch (issue 24): --device cuda with DH_GPU_JPEG_LOSSLESS=1
    reads each into GPU memory with nvJPEG's lossless backend (dh_plan_load_series_device,
    cli_decode_device_sv1) and writes the pixels --device cpu (DCMTK) writes; without it (the
    default) or with =0, DCMTK, with the same pixels again. nvJPEG must have read some series
    (the manifest's decoder), else the test proved only the fallback."""
    archive = sv1_archive(shared, os.environ.get("DH_GPU_DECODE_STREAMS"),
                          os.path.join(tmp, "sv1_archive"))
    outs, decoders, stats = {}, {}, {}
    for key, dev, env in (("cpu", "cpu", None), ("cuda", "cuda", {"DH_GPU_JPEG_LOSSLESS": "1"}),
                          ("cuda-dcmtk", "cuda", {"DH_GPU_JPEG_LOSSLESS": "0"}),
                          ("cuda-default", "cuda", None)):
        d = os.path.join(tmp, f"sv1_{key}")
        r = t.run(exe, "equalize", "--jobs", "4", "--stats", "--device", dev, "-o", d, archive,
                  env=env)
        stats[key] = [line for line in r.err.splitlines() if "into device memory" in line]
        outs[key] = (r.rc, derived_pixels(d) if os.path.isdir(d) else {})
        man = os.path.join(d, "dicomhist-manifest.jsonl")
        decoders[key] = []
        if os.path.isfile(man):
            with open(man) as f:
                decoders[key] = [json.loads(line).get("decoder") or "" for line in f]
        shutil.rmtree(d, ignore_errors=True)
    for key in ("cuda", "cuda-dcmtk", "cuda-default"):
        c.check(outs[key] == outs["cpu"],
                f"SV1 batch --device {key}: rc {outs[key][0]} against {outs['cpu'][0]}, "
                f"{len(outs[key][1])} against {len(outs['cpu'][1])} files, pixels "
                f"{'equal' if outs[key][1] == outs['cpu'][1] else 'differ'}")
    c.check(any("nvjpeg" in d for d in decoders["cuda"]),
            f"SV1 batch --device cuda: no series read by nvJPEG (decoders {decoders['cuda']})")
    c.check(len(stats["cuda"]) == 1 and ": 0," not in stats["cuda"][0]
            and not stats["cpu"] and not stats["cuda-dcmtk"] and not stats["cuda-default"],
            f"SV1 batch --stats: cuda {stats['cuda']}, cpu {stats['cpu']}, "
            f"DH_GPU_JPEG_LOSSLESS=0 {stats['cuda-dcmtk']}")
    for key in ("cuda-dcmtk", "cuda-default"):
        c.check(not any("nvjpeg" in d for d in decoders[key]),
                f"SV1 batch --device {key}: nvJPEG read some ({decoders[key]})")
    return len(outs["cpu"][1])


def records_but_device(run):
    """The JSON records with the field that names the device taken out; every other value must
    match exactly (numbers are printed so that they read back to the same double)."""
    records = run.json_lines()
    for r in records:
        r.pop("device", None)
    return records


def compare_mi(c, exe, shared):
    groups = [["dcm_qa_12bit_12bitUnsigned.dcm", "dcm_qa_12bit_12bitUnsigned_0x0F0F.dcm",
               "dcm_qa_12bit_12bitSigned_0x0F0F.dcm"],
              ["pydicom-data_emri_small.dcm", "pydicom-data_emri_small_RLE.dcm",
               "pydicom-data_emri_small_jpeg_ls_lossless.dcm"],
              ["cr/cr1_6154.dcm", "cr/cr2_6247.dcm", "cr/cr3_6278.dcm"]]
    scored = 0
    for g in groups:
        files = [os.path.join(shared, f) for f in g]
        for opts in (["--bins", "64"], ["--bins", "256"], ["--bins", "7:256", "--log2"],
                     ["--bins", "32", "--range-fixed", "0:4095", "--range-moving", "100:3000"]):
            cpu = t.run(exe, "mi", "--json", *opts, "--device", "cpu", *files)
            gpu = t.run(exe, "mi", "--json", *opts, "--device", "cuda", *files)
            c.check(cpu.rc == gpu.rc and records_but_device(cpu) == records_but_device(gpu),
                    f"mi {' '.join(opts)} {g[0]}...: cpu rc {cpu.rc}, cuda rc {gpu.rc} "
                    f"{gpu.err[:200]!r}")
            scored += cpu.out.count("\n")
    return scored


def main():
    exe, shared = t.parse_argv()
    t.require_shared(shared)
    if "CUDA available" not in t.run(exe, "--version").out:
        t.skip("this dicomhist has no usable CUDA GPU")
    c = t.Checks()
    paths = inputs(shared)
    # The JPEG 2000 / HTJ2K files live beside ../shared/dicom (../shared/dicom-jpeg2000).
    j2k = os.path.join(os.path.dirname(os.path.abspath(shared)), "dicom-jpeg2000")
    if os.path.isdir(j2k):
        paths += inputs(j2k)
    readable = compare_histograms(c, exe, paths)
    c.check(readable >= 5 * 20, f"only {readable} histogram outputs were produced at all")
    real = [os.path.join(shared, f) for f in (
        "pylibjpeg-data_RG2_JPLL.dcm", "pydicom_CT_small.dcm", "fo-dicom_CR-MONO1-10-chest",
        "fo-dicom_IM-0001-0001-0001.dcm", "fo-dicom_D_CLUNIE_CT1_RLE_FRAGS.dcm",
        "pydicom-data_emri_small.dcm", "series/ct5n", "cr/cr1_6154.dcm")]
    with tempfile.TemporaryDirectory() as tmp:
        written = compare_derived(c, exe, real, tmp)
    c.check(written >= 40, f"only {written} derived outputs were written at all")
    with tempfile.TemporaryDirectory() as tmp:
        batch = compare_batch(c, exe, shared, tmp)
    c.check(batch >= 20, f"only {batch} files were written by the batch at all")
    with tempfile.TemporaryDirectory() as tmp:
        j2k_batch = compare_j2k_batch(c, exe, os.environ.get("DH_PLAN_DEVICE_SERIES"), tmp)
    if os.environ.get("DH_PLAN_DEVICE_SERIES"):
        c.check(j2k_batch >= 20, f"only {j2k_batch} files were written by the J2K batch at all")
    with tempfile.TemporaryDirectory() as tmp:
        sv1 = compare_sv1_batch(c, exe, shared, tmp)
    c.check(sv1 >= 2, f"only {sv1} files were written by the SV1 batch at all")
    scored = compare_mi(c, exe, shared)
    c.check(scored >= 20, f"only {scored} MI records were produced at all")
    print(f"compared {readable} histograms, {written} derived series, a batch of {batch} files, "
          f"a JPEG 2000 batch of {j2k_batch} files, an SV1 batch of {sv1} files and {scored} MI "
          f"records")
    c.finish()


if __name__ == "__main__":
    main()
