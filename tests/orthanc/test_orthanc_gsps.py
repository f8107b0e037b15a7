#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Presentation states from Orthanc, and series read without touching the disk, against a real
Orthanc with the plugin:
- `POST /series/{id}/equalize` (and `/window`) with "Output": "gsps" stores one Grayscale
  Softcopy Presentation State per series, in a series of its own in the source's study, and
  auto-equalization with "Output": "gsps" does the same for every new series of its modalities;
  each state passes dciodvfy, and DCMTK's dcmp2pgm renders every source image (every frame)
  through it equal to its rendering of the derived series the same parameters make, and to the
  derived stored values' top 8 bits (tests/cli/test_cli_gsps.py's checks, reused); a repeat is
  "AlreadyStored", never a second state.
- The series routes write nothing: Orthanc runs under strace while the plugin reads series
  (histogram, info) and derives them (series and states, synchronous and as jobs), and no file
  is created, opened for writing, renamed, linked or removed anywhere but in Orthanc's own
  storage folder (where the stored results go); the TemporaryDirectory stays empty.
Cases: every CR, DX and CT file of ../shared/dicom, series/ct5n per volume and per slice (as a
job), a window, a multi-frame MR per frame.

argv: ORTHANC PLUGIN DICOMHIST SHARED_DICOM (see orthanc_testlib.parse_argv)."""

import os
import re
import shutil
import signal
import subprocess
import time

from orthanc_testlib import run_against_orthanc, skip  # puts tests/cli on the path
import test_cli_gsps as g  # noqa: E402 (tests/cli)

AUTO = {"Output": "gsps", "Modalities": ["DX"], "Bits": 8, "Window": "percentile:1"}
CONFIG = {"StableAge": 1, "DicomHist": {"AutoEqualize": dict(AUTO, Enable=True)}}


def main():
    for tool in ("dciodvfy", "dcmp2pgm", "strace"):
        if shutil.which(tool) is None:
            skip(f"{tool} is not installed")
    run_against_orthanc(run_checks, CONFIG, "dh_orthanc_gsps_")


# ------------------------------------------------------------------------------ cases

def cases(shared):
    """(name, path, route, body) for every case; path is a file or a series folder."""
    out = []
    with open(os.path.join(shared, "MANIFEST.tsv")) as manifest:
        for row in list(manifest)[1:]:
            f = row.split("\t")
            if f[3] in ("CR", "CT") and not f[0].startswith(("malformed/", "unsupported/",
                                                             "series/")):
                out.append((f[0].replace("/", "_"), os.path.join(shared, f[0]), "equalize", {}))
    ct5n = os.path.join(shared, "series", "ct5n")
    out += [
        ("ct5n_volume", ct5n, "equalize", {"Bits": 12}),
        ("ct5n_slice_job", ct5n, "equalize", {"Mode": "slice", "Asynchronous": True}),
        ("ct5n_window", ct5n, "window", {"Window": "40:400", "Bits": 12}),
        ("emri_frames_slice", os.path.join(shared, "pydicom-data_emri_small.dcm"), "equalize",
         {"Mode": "slice"}),
    ]
    return out


def files_of(path):
    return g.source_files(path)


def upload(server, path):
    return [server.upload(f) for f in files_of(path)][-1]["ParentSeries"]


def derive(server, series, route, body):
    """The answer of a derive, waiting for the job when it is one."""
    a = server.post(f"/series/{series}/{route}", body)
    if not body.get("Asynchronous"):
        return a
    end = time.monotonic() + 120
    while time.monotonic() < end:
        job = server.get(a["Path"])
        if job["State"] in ("Success", "Failure"):
            return job["Content"]
        time.sleep(0.2)
    raise TimeoutError(f"job {a['ID']} did not finish")


# ------------------------------------------------------------------------------ no disk

FILE_CALLS = "openat,open,creat,mkdir,mkdirat,rename,renameat,renameat2,unlink,unlinkat," \
             "link,linkat,symlink,symlinkat,truncate"
WRITE_OPEN = re.compile(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC")


def start_trace(server, work):
    log = os.path.join(work, "strace.txt")
    proc = subprocess.Popen(["strace", "-f", "-qq", "-e", "trace=" + FILE_CALLS, "-o", log,
                             "-p", str(server.proc.pid)], stderr=subprocess.PIPE)
    time.sleep(1.0)  # attached to every thread before the first request
    if proc.poll() is not None:
        skip(f"strace cannot attach here: {proc.stderr.read().decode(errors='replace')}")
    return proc, log


def stop_trace(proc):
    proc.send_signal(signal.SIGINT)  # detaches, Orthanc goes on
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def disk_writes(log, allowed):
    """Every traced call that changes the file system outside `allowed`: (call, path); and how
    many did inside it (Orthanc storing the results: the proof that the trace saw the work)."""
    out, inside = [], 0
    call = re.compile(r"^\d+\s+(\w+)\((.*)")
    with open(log, errors="replace") as f:
        for line in f:
            m = call.match(line)
            if not m or "= -1" in line:  # a call that failed changed nothing
                continue
            name, args = m.group(1), m.group(2)
            if name in ("open", "openat") and not WRITE_OPEN.search(args):
                continue
            for path in re.findall(r'"([^"]*)"', args):
                real = os.path.realpath(path) if path.startswith("/") else path
                if not real.startswith(allowed):
                    out.append((name, path))
                else:
                    inside += 1
    return out, inside


# ------------------------------------------------------------------------------ checks

def check_state(c, server, work, name, path, state_answer, derived_answer, bits):
    """The stored state: valid, and rendering each source as the derived series renders."""
    import numpy as np
    states = state_answer["Instances"]
    if not c.equal(len(states), 1, f"{name}: one presentation state stored"):
        return
    tmp = os.path.join(work, "render", name)
    os.makedirs(tmp, exist_ok=True)
    pstate = os.path.join(tmp, "state.dcm")
    with open(pstate, "wb") as f:
        f.write(server.get(f"/instances/{states[0]}/file", raw=True))
    tags = g.t.read_dataset(pstate)
    c.equal(str(tags.Modality), "PR", f"{name}: the state's modality")
    c.equal(tags.SOPClassUID, "1.2.840.10008.5.1.4.1.1.11.1", f"{name}: GSPS SOP class")
    v = subprocess.run(["dciodvfy", pstate], capture_output=True, text=True)
    errors = [line for line in (v.stdout + v.stderr).splitlines() if line.startswith("Error")]
    c.equal(errors, [], f"{name}: dciodvfy errors")
    source_series = server.get(f"/series/{state_answer['Source']}") \
        if "Source" in state_answer else None
    study = server.get(f"/series/{state_answer['ID']}")["ParentStudy"]
    if source_series:
        c.equal(study, source_series["ParentStudy"], f"{name}: the state is in the source's study")
    # Derived instances by the source they name, downloaded.
    derived = {}
    for inst in derived_answer["Instances"]:
        out = os.path.join(tmp, f"derived-{inst}.dcm")
        with open(out, "wb") as f:
            f.write(server.get(f"/instances/{inst}/file", raw=True))
        ds = g.t.read_dataset(out)
        derived[ds.SourceImageSequence[0].ReferencedSOPInstanceUID] = out
    state = g.renderable_state(tmp, pstate)
    for src in files_of(path):
        ds = g.t.read_dataset(src)
        frames = int(ds.get("NumberOfFrames", 1) or 1)
        out = derived.get(ds.SOPInstanceUID)
        if not c.check(out is not None, f"{name}: a derived instance for {src}"):
            continue
        stored = np.asarray(g.t.read_dataset(out).pixel_array).reshape(frames, ds.Rows,
                                                                        ds.Columns)
        image = g.renderable(tmp, src, g.t.read_dataset(src))
        mono1 = ds.PhotometricInterpretation == "MONOCHROME1"
        for frame in range(1, frames + 1):
            what = f"{name}: {os.path.basename(src)} frame {frame}"
            got, err = g.render(tmp, image, frame, state)
            if not c.check(got is not None, f"{what}: dcmp2pgm renders through the state: {err}"):
                continue
            want, err = g.render(tmp, out, frame)
            if c.check(want is not None, f"{what}: dcmp2pgm renders the derived instance"):
                c.check(np.array_equal(got, want), f"{what}: state's rendering == derived "
                        f"instance's rendering ({int((got != want).sum())} pixels differ)")
            g.check_mapping(c, what, stored[frame - 1].astype(np.int64), bits,
                            got.astype(np.int64), mono1)


def output_bits(server, derived_answer):
    tags = server.get(f"/instances/{derived_answer['Instances'][0]}/tags?simplify")
    return int(tags["BitsStored"])


def run_checks(c, server, cli, shared, work):
    g.t.import_reference_modules()
    todo = []
    for name, path, route, body in cases(shared):
        todo.append((name, path, route, body, upload(server, path)))
    dx = os.path.join(shared, "highdicom_dx_image_8bit.dcm")
    dx_series = upload(server, dx)

    tracer, log = start_trace(server, work)
    answers = []
    try:
        for name, path, route, body, series in todo:
            server.get(f"/series/{series}/histogram?bins=64")
            server.get(f"/series/{series}/info")
            state = derive(server, series, route, dict(body, Output="gsps"))
            again = derive(server, series, route, dict(body, Output="gsps"))
            derived = derive(server, series, route, body)
            answers.append((name, path, state, again, derived, series))
        # Auto-equalization's state of the DX series, and the derived series it stands for.
        end = time.monotonic() + 60
        while time.monotonic() < end and not auto_state(server, dx_series):
            time.sleep(0.5)
        auto = derive(server, dx_series, "equalize", {k: v for k, v in AUTO.items()
                                                     if k not in ("Modalities",)})
        auto_derived = derive(server, dx_series, "equalize",
                              {k: v for k, v in AUTO.items() if k not in ("Modalities", "Output")})
    finally:
        stop_trace(tracer)
    writes, stored = disk_writes(log, os.path.realpath(os.path.join(work, "db")))
    c.check(stored > 0, f"the trace saw Orthanc store the results ({stored} calls in its storage)")
    c.equal(writes[:10], [], "nothing written outside Orthanc's storage while the plugin read "
            f"and derived series ({len(writes)} calls)")
    c.equal(os.listdir(os.path.join(work, "tmp")), [], "the TemporaryDirectory stays empty")

    for name, path, state, again, derived, series in answers:
        if not c.check("ID" in state and "ID" in derived, f"{name}: both derives succeed: "
                       f"{state} {derived}"):
            continue
        c.equal(again["AlreadyStored"], 1, f"{name}: a repeat is AlreadyStored")
        c.equal(again["Instances"], state["Instances"], f"{name}: a repeat is the same state")
        state["Source"] = series
        check_state(c, server, work, name, path, state, derived, output_bits(server, derived))

    # Auto-equalization stored the very state the route makes with the same parameters.
    found = auto_state(server, dx_series)
    c.equal(found, auto.get("Instances", [None])[0],
            f"auto-equalization stored one state for the DX series: {found}")
    if "ID" in auto and "ID" in auto_derived:
        c.equal(auto["AlreadyStored"], 1, "the route finds auto-equalization's state stored")
        auto["Source"] = dx_series
        check_state(c, server, work, "auto_dx", dx, auto, auto_derived,
                    output_bits(server, auto_derived))


def auto_state(server, source_series):
    """The ID of the one presentation state referencing the series' first instance, or None."""
    src = server.get(f"/series/{source_series}/instances")[0]["MainDicomTags"]["SOPInstanceUID"]
    found = []
    for s in server.get("/series?expand"):
        if s["MainDicomTags"].get("Modality") != "PR":
            continue
        for inst in s["Instances"]:
            tags = server.get(f"/instances/{inst}/tags?simplify")
            refs = [r["ReferencedSOPInstanceUID"]
                    for ser in tags.get("ReferencedSeriesSequence", [])
                    for r in ser.get("ReferencedImageSequence", [])]
            if src in refs and str(tags.get("ContentLabel", "")) == "EQUALIZED":
                found.append(inst)
    return found[0] if len(found) == 1 else None


if __name__ == "__main__":
    main()
