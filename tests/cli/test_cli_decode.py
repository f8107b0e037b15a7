#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_cli_decode.py: the command says which decoder read each series, and --decode chooses.

On the sample data (JPEG 2000, JPEG lossless SV1, JPEG-LS, RLE, uncompressed series): `info
--json` names the decoder of each (`openjpeg` or, where NVIDIA's nvJPEG2000 runs, `nvjpeg2k`;
`dcmtk`, `charls`, `native`) with `decoder_note` saying why not the GPU exactly when a GPU
decoder existed for the syntax and the CPU read it; `--decode cpu` gives the CPU decoders with
no note; the stored values (stored_min/max) do not depend on the choice; `equalize`'s manifest
carries the same two fields on its `done` lines and writes the same pixels either way; a bad
`--decode` value is a usage error (exit 2).

Usage: test_cli_decode.py DICOMHIST_BINARY SHARED_DICOM_DIR   (the folder is not used)
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_testlib as t  # noqa: E402

try:
    import pydicom
except ImportError:
    t.skip("pydicom is not installed")

SAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sample_data")
# series folder -> (the CPU decoder, the GPU decoder used by default or None)
SERIES = {"ct_phantom_jpeg2000": ("openjpeg", "nvjpeg2k"),
          "ct_phantom_jpeg_lossless": ("dcmtk", None),  # nvJPEG lossless is off by default
          "ct_phantom_jpeg_ls": ("charls", None),
          "ct_phantom_rle": ("dcmtk", None),
          "ct_phantom": ("native", None)}
GPU_SYNTAXES = ("ct_phantom_jpeg2000", "ct_phantom_jpeg_lossless")


def info(binary, c, *args):
    r = t.run(binary, "info", "--json", *args)
    c.equal(r.rc, 0, f"info {args}: exit status ({r.err.strip()!r})")
    return r.json_lines()[0] if r.rc == 0 else {}


def main():
    binary, _ = t.parse_argv()
    c = t.Checks()
    for name, (cpu, gpu) in SERIES.items():
        path = os.path.join(SAMPLE, name)
        forced = info(binary, c, "--decode", "cpu", path)
        c.equal(forced.get("decoder"), cpu, f"{name} --decode cpu: decoder")
        c.equal(forced.get("decoder_note"), "", f"{name} --decode cpu: decoder_note")
        auto = info(binary, c, path)
        on_gpu = gpu is not None and auto.get("decoder") == gpu
        c.check(auto.get("decoder") in (cpu, gpu), f"{name}: decoder {auto.get('decoder')!r}")
        note = auto.get("decoder_note", "")
        if name in GPU_SYNTAXES and not on_gpu:
            c.check(len(note) > 10, f"{name}: read on the CPU, the reason given ({note!r})")
        else:
            c.equal(note, "", f"{name}: no note")
        for key in ("stored_min", "stored_max", "modality_min", "modality_max"):
            c.equal(auto.get(key), forced.get(key), f"{name}: {key} whatever the decoder")
    r = t.run(binary, "info", "--decode", "gpu", SAMPLE)
    c.equal(r.rc, 2, "--decode gpu: a usage error")
    c.check("expected cpu or auto" in r.err, f"--decode gpu: says what it takes ({r.err!r})")

    with tempfile.TemporaryDirectory() as work:
        series = os.path.join(SAMPLE, "ct_phantom_jpeg2000")
        outs = {}
        for mode in ("cpu", "auto"):
            out = os.path.join(work, mode)
            r = t.run(binary, "equalize", "--decode", mode, "-o", out, series)
            c.equal(r.rc, 0, f"equalize --decode {mode}: exit status ({r.err.strip()!r})")
            with open(os.path.join(out, "dicomhist-manifest.jsonl")) as f:
                lines = [json.loads(line) for line in f if line.strip()]
            done = [x for x in lines if x.get("status") == "done"]
            c.check(len(done) > 1, f"equalize --decode {mode}: files done")
            decoders = {x.get("decoder") for x in done}
            c.check(decoders <= ({"openjpeg"} if mode == "cpu" else {"openjpeg", "nvjpeg2k"})
                    and len(decoders) == 1, f"--decode {mode}: manifest decoders {decoders}")
            notes = {x.get("decoder_note") for x in done}
            c.check(notes == {""} if mode == "cpu" or decoders == {"nvjpeg2k"} else "" not in notes,
                    f"--decode {mode}: manifest notes {notes}")
            outs[mode] = out
        a, b = (os.path.join(outs[m], "ct_phantom_jpeg2000") for m in ("cpu", "auto"))
        names = sorted(os.listdir(a))
        c.equal(names, sorted(os.listdir(b)), "the same files written either way")
        for n in names:  # new UIDs and times differ; the pixels must not
            pa, pb = (pydicom.dcmread(os.path.join(d, n)).PixelData for d in (a, b))
            c.check(pa == pb, f"{n}: the same pixels written either way")
    c.finish()


if __name__ == "__main__":
    main()
