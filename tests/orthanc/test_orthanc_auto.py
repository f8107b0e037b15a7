#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Auto-equalization against a real Orthanc: exactly one derived series per CR/DX series (in the
source's study, the command's pixels), none for CT, none more after a restart; a series uploaded
in two bursts ends with one derived series holding both instances; a series whose StableSeries
was lost to a restart is caught up; a shutdown with work queued finishes within seconds, and the
work left is done after the next start, once. With DH_AUTO_METHOD=clahe the configuration asks
for CLAHE ("Method": "clahe") and every check holds for it.

argv: ORTHANC PLUGIN DICOMHIST SHARED_DICOM (see orthanc_testlib.parse_argv)."""

import os
import time

from orthanc_testlib import command_json, run_against_orthanc

CONFIG = {
    "StableAge": 1,
    "DicomHist": {
        "AutoEqualize": {"Enable": True, "Modalities": ["CR", "DX"], "Window": "percentile:1",
                         "ClipLimit": 3, "Mode": "volume", "Bits": 12},
        "Device": "auto",
        "Threads": 2,
    },
}
COMMAND_ARGS = ["--window", "percentile:1", "--clip-limit", "3", "--mode", "volume",
                "--bits", "12"]
# DH_AUTO_METHOD=clahe (the test_orthanc_auto_clahe entry): the same checks with
# "Method": "clahe" in the configuration (issue 21) and the command's --method clahe.
if os.environ.get("DH_AUTO_METHOD") == "clahe":
    CONFIG["DicomHist"]["AutoEqualize"].update({"Method": "clahe", "Tiles": "4x4"})
    COMMAND_ARGS += ["--method", "clahe", "--tiles", "4x4"]
X_RAYS = ["cr/cr1_6154.dcm", "cr/cr2_6247.dcm", "cr/cr3_6278.dcm",
          "fo-dicom_CR-MONO1-10-chest", "highdicom_dx_image_8bit.dcm"]
CTS = ["pydicom_CT_small.dcm", "series/ct5n"]


def main():
    run_against_orthanc(run_checks, CONFIG, "dh_orthanc_auto_")


# ------------------------------------------------------------------------------ helpers

def upload_path(server, path):
    """Uploads a file or every file of a folder; returns the series ID."""
    files = [path] if os.path.isfile(path) else \
        [os.path.join(path, f) for f in sorted(os.listdir(path))]
    return [server.upload(f) for f in files][-1]["ParentSeries"]


def wait_idle(server, timeout=90):
    """Until every series is stable and the plugin has read and handled every change, twice in
    a row (a derived series becomes stable after it is stored, and must be seen and skipped)."""
    end = time.monotonic() + timeout
    quiet = 0
    while time.monotonic() < end:
        last = server.get("/changes?last")["Last"]
        ae = server.get("/dicomhist/status")["AutoEqualize"]
        stable = all(s["IsStable"] for s in server.get("/series?expand"))
        if stable and ae["Queued"] == 0 and ae["InProgress"] == 0 and ae["LastChange"] >= last:
            quiet += 1
            if quiet == 2:
                return True
        else:
            quiet = 0
        time.sleep(0.5)
    return False


def derived_by_source(server):
    """source series ID -> [derived series IDs], from each derived series' SourceImageSequence."""
    out = {}
    for s in server.get("/series?expand"):
        first = s["Instances"][0]
        tags = server.get(f"/instances/{first}/tags?simplify")
        if not str(tags.get("DerivationDescription", "")).startswith("dicomhist "):
            continue
        ref = tags["SourceImageSequence"][0]["ReferencedSOPInstanceUID"]
        hits = [h for h in server.post("/tools/lookup", ref.encode()) if h["Type"] == "Instance"]
        source = server.get(f"/instances/{hits[0]['ID']}")["ParentSeries"] if hits else None
        out.setdefault(source, []).append(s["ID"])
    return out


def new_series(shared, rels, work, tag):
    """Copies of real files made one new series (new series and instance UIDs)."""
    import pydicom
    paths = []
    for k, rel in enumerate(rels):
        ds = pydicom.dcmread(os.path.join(shared, rel))
        ds.SeriesInstanceUID = f"1.2.826.0.1.3680043.10.543.{tag}"
        ds.SOPInstanceUID = f"1.2.826.0.1.3680043.10.543.{tag}.{k + 1}"
        ds.InstanceNumber = k + 1
        path = os.path.join(work, f"series_{tag}_{k}.dcm")
        ds.save_as(path)
        paths.append(path)
    return paths


def check_one_each(c, server, sources, cts, what):
    derived = derived_by_source(server)
    for name, sid in sources.items():
        c.equal(len(derived.get(sid, [])), 1, f"{what}: derived series of {name}")
    for name, sid in cts.items():
        c.equal(derived.get(sid, []), [], f"{what}: no derived series for CT {name}")
    c.equal(sorted(derived), sorted(sources.values()), f"{what}: only X-rays were derived")
    return derived


# ------------------------------------------------------------------------------ the checks

def run_checks(c, server, cli, shared, work):
    import numpy
    import pydicom
    sources = {rel: upload_path(server, os.path.join(shared, rel)) for rel in X_RAYS}
    cts = {rel: upload_path(server, os.path.join(shared, rel)) for rel in CTS}
    c.check(wait_idle(server), "auto-equalization settles after the first uploads")
    derived = check_one_each(c, server, sources, cts, "first uploads")

    # Same study, and the command's pixels.
    for rel in ("cr/cr1_6154.dcm", "fo-dicom_CR-MONO1-10-chest"):
        dsid = derived.get(sources[rel], [None])[0]
        if not dsid:
            continue
        d = server.get(f"/series/{dsid}")
        c.equal(d["ParentStudy"], server.get(f"/series/{sources[rel]}")["ParentStudy"],
                f"{rel}: derived series in the source's study")
        out = os.path.join(work, "command", rel.replace("/", "_"))
        rec = command_json(cli, "equalize", *COMMAND_ARGS, "-o", out, os.path.join(shared, rel))
        fetched = os.path.join(work, "fetched.dcm")
        with open(fetched, "wb") as f:
            f.write(server.get(f"/instances/{d['Instances'][0]}/file", raw=True))
        c.check(numpy.array_equal(pydicom.dcmread(fetched).pixel_array,
                                  pydicom.dcmread(rec[0]["outputs"][0]).pixel_array),
                f"{rel}: auto-equalized pixels equal the command's")

    # A series in two bursts, further apart than StableAge: one derived series, both instances.
    burst = new_series(shared, ["cr/cr1_6154.dcm", "cr/cr3_6278.dcm"], work, 1)
    sid = server.upload(burst[0])["ParentSeries"]
    c.check(wait_idle(server), "settles after the first burst")
    first = derived_by_source(server).get(sid, [])
    c.equal(len(first), 1, "two bursts: one derived series after the first")
    server.upload(burst[1])
    c.check(wait_idle(server), "settles after the second burst")
    after = derived_by_source(server).get(sid, [])
    c.equal(len(after), 1, "two bursts: still one derived series after the second")
    if after:
        c.equal(len(server.get(f"/series/{after[0]}")["Instances"]), 2,
                "two bursts: the derived series holds both instances")
    sources["two bursts"] = sid

    # A restart: nothing more.
    before = sorted(s for s in server.get("/series"))
    took = server.stop()
    server.start()
    c.check(wait_idle(server), "settles after a restart")
    c.equal(sorted(server.get("/series")), before, "a restart derives nothing more")
    print(f"stop with nothing queued: {took:.2f} s")

    # A StableSeries lost to a restart inside StableAge is caught up from /changes.
    lost = new_series(shared, ["cr/cr2_6247.dcm"], work, 2)
    sources["lost event"] = server.upload(lost[0])["ParentSeries"]
    server.stop()
    server.start()
    c.check(wait_idle(server), "settles after a restart inside StableAge")
    check_one_each(c, server, sources, cts, "after restarts")

    # Shutdown with work queued: large CR series, stop at once; done after the next start, once.
    many = {}
    for k in range(8):
        sid = server.upload(new_series(shared, ["pylibjpeg-data_RG2_JPLL.dcm"], work,
                                       100 + k)[0])["ParentSeries"]
        many[f"big {k}"] = sid
    end = time.monotonic() + 20
    while time.monotonic() < end:
        ae = server.get("/dicomhist/status")["AutoEqualize"]
        if ae["Queued"] + ae["InProgress"] > 0:
            break
        time.sleep(0.05)
    busy = server.get("/dicomhist/status")["AutoEqualize"]
    took = server.stop()
    print(f"stop with work queued ({busy['Queued']} queued, {busy['InProgress']} in progress): "
          f"{took:.2f} s")
    c.check(busy["Queued"] + busy["InProgress"] > 0, f"work was queued at the stop: {busy}")
    c.check(took < 10, f"stop with work queued took {took:.2f} s (< 10 s)")
    server.start()
    c.check(wait_idle(server, timeout=150), "settles after the restart with work left")
    sources.update(many)
    check_one_each(c, server, sources, cts, "after a stop with work queued")
    status = server.get("/dicomhist/status")["AutoEqualize"]
    c.equal(status["Failed"], 0, f"no failures: {status}")


if __name__ == "__main__":
    main()
