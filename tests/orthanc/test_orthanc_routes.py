#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Orthanc plugin's routes against a real Orthanc: every answer equals the command's --json
output on the same file or series (paths renamed to Orthanc IDs), equalize and window through
REST give the command's pixels (synchronously and as a job), errors are JSON naming the
resource and the reason, 16 concurrent histogram requests all answer right, and a truncated
instance is refused while Orthanc keeps serving.

argv: ORTHANC PLUGIN DICOMHIST SHARED_DICOM (see orthanc_testlib.parse_argv)."""

import concurrent.futures
import os
import time

from orthanc_server import HttpError
from orthanc_testlib import command_json, renamed, run_against_orthanc

SINGLE_FILES = [
    "cr/cr1_6154.dcm",                        # CR, MONOCHROME1, non-integer slope
    "pylibjpeg-data_RG2_JPLL.dcm",            # real CR, JPEG lossless
    "fo-dicom_IM-0001-0001-0001.dcm",         # CT, JPEG lossless SV1
    "fo-dicom_D_CLUNIE_CT1_RLE_FRAGS.dcm",    # CT, signed, RLE fragments
    "dcm_qa_12bit_12bitUnsigned.dcm",         # bits above HighBit to mask
    "pydicom-data_emri_small.dcm",            # multi-frame
    "highdicom_dx_image_8bit.dcm",            # DX, 8 bits
    "pydicom_CT_small.dcm",                   # CT, signed
]
SERIES = ["series/ct5n", "series/ct2_uneven"]
HIST_QUERIES = [
    ("", []),
    ("?bins=64", ["--bins", "64"]),
    ("?bins=100&range=-1024:3072&units=modality", ["--bins", "100", "--range", "-1024:3072",
                                                   "--units", "modality"]),
    ("?bins=16&per-slice=true&device=cpu", ["--bins", "16", "--per-slice", "--device", "cpu"]),
]


def pixels(path):
    import pydicom
    return pydicom.dcmread(path).pixel_array


def main():
    run_against_orthanc(run_checks, {"DicomHist": {"Device": "auto"}}, "dh_orthanc_routes_")


def run_checks(c, server, cli, shared, work):
    names = {}      # file or folder -> Orthanc ID
    instance_of = {}
    for rel in SINGLE_FILES:
        path = os.path.join(shared, rel)
        r = server.upload(path)
        names[path] = r["ID"]
        instance_of[rel] = r
    series_of = {}
    for rel in SERIES:
        folder = os.path.join(shared, rel)
        sid = None
        for f in sorted(os.listdir(folder)):
            r = server.upload(os.path.join(folder, f))
            names[os.path.join(folder, f)] = r["ID"]
            sid = r["ParentSeries"]
        names[folder] = sid
        series_of[rel] = sid

    # ---------------------------------------------------------------- info and histogram
    for rel in SINGLE_FILES:
        path, iid = os.path.join(shared, rel), instance_of[rel]["ID"]
        want = renamed(command_json(cli, "info", path)[0], names)
        c.equal(server.get(f"/instances/{iid}/info"), want, f"{rel}: /instances/info")
        for query, args in HIST_QUERIES:
            want = renamed(command_json(cli, "histogram", *args, path)[0], names)
            c.equal(server.get(f"/instances/{iid}/histogram{query}"), want,
                    f"{rel}: /instances/histogram{query}")
        # The single instance's series is the same volume, named by the series' ID.
        sid = instance_of[rel]["ParentSeries"]
        names_series = dict(names, **{path: sid})
        want = renamed(command_json(cli, "info", path)[0], names_series)
        c.equal(server.get(f"/series/{sid}/info"), want, f"{rel}: /series/info")
    for rel in SERIES:
        folder, sid = os.path.join(shared, rel), series_of[rel]
        want = renamed(command_json(cli, "info", folder)[0], names)
        c.equal(server.get(f"/series/{sid}/info"), want, f"{rel}: /series/info")
        for query, args in HIST_QUERIES:
            want = renamed(command_json(cli, "histogram", *args, folder)[0], names)
            c.equal(server.get(f"/series/{sid}/histogram{query}"), want,
                    f"{rel}: /series/histogram{query}")

    # ---------------------------------------------------------------- errors
    check_error(c, server, "/instances/0000dead-beef/info", 404, "Instance")
    check_error(c, server, "/series/0000dead-beef/histogram", 404, "Series")
    iid = instance_of["cr/cr1_6154.dcm"]["ID"]
    for query, arg in [("?bins=0", "bins"), ("?bins=70000", "bins"), ("?range=5:1", "range"),
                       ("?units=hu", "units"), ("?device=gpu", "device"),
                       ("?per-slice=maybe", "per-slice"), ("?colour=red", "colour")]:
        check_error(c, server, f"/instances/{iid}/histogram{query}", 400, "Argument", arg)
    check_error(c, server, f"/series/{series_of['series/ct5n']}/equalize", 400, "Argument",
                "ClipLimit", method="POST", body={"ClipLimit": -1})
    check_error(c, server, f"/series/{series_of['series/ct5n']}/window", 400, "Argument",
                "Window", method="POST", body={})
    check_error(c, server, f"/series/{series_of['series/ct5n']}/equalize", 400, "Argument",
                "Windw", method="POST", body={"Windw": "minmax"})
    check_error(c, server, "/tools/dicomhist/mutual-information", 400, "Argument", "Moving",
                method="POST", body={"Fixed": iid})

    # A truncated instance: pixel data cut to half of what Rows x Columns need (a file whose
    # header still parses, so Orthanc stores it; Orthanc refuses pydicom_MR_truncated.dcm
    # itself), and one with an empty PixelData. The plugin refuses each with a 4xx naming it,
    # and Orthanc keeps serving.
    import pydicom
    ds = pydicom.dcmread(os.path.join(shared, "cr/cr2_6247.dcm"))
    ds.PixelData = ds.PixelData[: len(ds.PixelData) // 2]
    ds.SOPInstanceUID = ds.SOPInstanceUID + ".9"
    ds.SeriesInstanceUID = ds.SeriesInstanceUID + ".9"
    truncated = os.path.join(work, "truncated.dcm")
    ds.save_as(truncated)
    for label, path in [("truncated pixel data", truncated),
                        ("empty pixel data", os.path.join(shared, "malformed/fo-dicom_GH1146.dcm"))]:
        bad = server.upload(path)
        for uri in (f"/instances/{bad['ID']}/histogram", f"/series/{bad['ParentSeries']}/info",
                    f"/instances/{bad['ID']}/info"):
            body = check_error(c, server, uri, None, "Instance", bad["ID"])
            if body:
                c.check(400 <= body["HttpStatus"] < 500, f"{label}: {uri} is a 4xx: {body}")
                c.check(body["Error"] == "DH_ERR_MALFORMED" and bad["ID"] in body["Reason"],
                        f"{label}: {uri} names the status and the instance: {body}")
        check_error(c, server, f"/series/{bad['ParentSeries']}/equalize", 422, "Instance",
                    bad["ID"], method="POST", body={})
        c.check(server.get("/system") is not None, f"{label}: Orthanc serves on after it")

    # ---------------------------------------------------------------- 16 at once
    big = "pylibjpeg-data_RG2_JPLL.dcm"
    big_id = instance_of[big]["ID"]
    want = renamed(command_json(cli, "histogram", "--bins", "256",
                                os.path.join(shared, big))[0], names)
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda _: server.get(f"/instances/{big_id}/histogram?bins=256"),
                                range(16)))
    print(f"16 concurrent histograms of a 2140x1760 CR: {time.monotonic() - t0:.2f} s")
    c.check(all(a == want for a in answers), "16 concurrent histogram answers equal the command's")

    # ---------------------------------------------------------------- mutual information
    crs = [os.path.join(shared, "cr", f) for f in sorted(os.listdir(os.path.join(shared, "cr")))]
    ids = [server.upload(p)["ID"] for p in crs]
    for p, i in zip(crs, ids):
        names[p] = i
    want = [renamed(r, names) for r in command_json(cli, "mi", "--bins", "32", crs[0], *crs)]
    got = server.post("/tools/dicomhist/mutual-information",
                      {"Fixed": ids[0], "Moving": ids, "Bins": 32})
    c.equal(got, want, "mutual-information equals mi --json")
    want = [renamed(r, names) for r in command_json(cli, "mi", "--bins", "16:24", "--log2",
                                                    "--range-fixed", "1900:2900", crs[1], crs[2])]
    got = server.post("/tools/dicomhist/mutual-information",
                      {"Fixed": ids[1], "Moving": [ids[2]], "Bins": [16, 24], "Log2": True,
                       "RangeFixed": "1900:2900"})
    c.equal(got, want, "mutual-information with bins, range and log2 equals mi --json")
    check_error(c, server, "/tools/dicomhist/mutual-information", 422, "Instance", big_id,
                method="POST", body={"Fixed": ids[0], "Moving": [big_id]})

    # ---------------------------------------------------------------- equalize and window
    out = os.path.join(work, "command")
    check_derive(c, server, cli, "equalize",
                 ["--window", "percentile:1", "--clip-limit", "3", "--bits", "12"],
                 {"Window": "percentile:1", "ClipLimit": 3, "Bits": 12},
                 os.path.join(shared, big), instance_of[big]["ParentSeries"],
                 instance_of[big]["ParentStudy"], out)
    check_derive(c, server, cli, "window", ["--window", "40:400", "--mode", "slice"],
                 {"Window": "40:400", "Mode": "slice"},
                 os.path.join(shared, "series/ct5n"), series_of["series/ct5n"], None, out)
    check_derive(c, server, cli, "equalize", ["--window-range", "-200:300", "--mode", "slice",
                                              "--bits", "16"],
                 {"WindowRange": "-200:300", "Mode": "slice", "Bits": 16, "Asynchronous": True},
                 os.path.join(shared, "series/ct5n"), series_of["series/ct5n"], None, out)
    # CLAHE (issue 21): per slice on the large file, per volume with 3D tiles on the series.
    check_derive(c, server, cli, "equalize",
                 ["--method", "clahe", "--mode", "slice", "--clip-limit", "2", "--bits", "12"],
                 {"Method": "clahe", "Mode": "slice", "ClipLimit": 2, "Bits": 12},
                 os.path.join(shared, big), instance_of[big]["ParentSeries"],
                 instance_of[big]["ParentStudy"], out)
    check_derive(c, server, cli, "equalize",
                 ["--method", "clahe", "--tiles", "4x4x2", "--bins", "256", "--clip-limit", "2"],
                 {"Method": "clahe", "Tiles": "4x4x2", "Bins": 256, "ClipLimit": 2},
                 os.path.join(shared, "series/ct5n"), series_of["series/ct5n"], None, out)

    ct5n_count = len(os.listdir(os.path.join(shared, "series/ct5n")))
    check_concurrent_derive(c, server, series_of["series/ct5n"], ct5n_count)
    check_cancelled_job(c, server, series_of["series/ct5n"], ct5n_count)

    status = server.get("/dicomhist/status")
    c.equal(status["Version"], server.get("/plugins/dicomhist")["Version"], "status: version")
    c.check(status["Device"] == "cpu" if not status["CudaAvailable"] else
            status["Device"] not in ("", "cpu"), f"status names the device: {status}")
    c.check(status["AutoEqualize"]["Enabled"] is False, f"auto-equalization off here: {status}")
    c.equal(status["AutoEqualize"].get("InProgress"), 0, "status: nothing in progress when off")
    # No staging folder, the finished and cancelled jobs' included: the plugin reads series in
    # memory and makes none (test_orthanc_gsps.py traces every file it could touch). Waited
    # for a moment all the same: a cancelled job is stopped by Orthanc after its state reads
    # Failure.
    end = time.monotonic() + 15
    while True:
        left = [f for f in os.listdir(os.path.join(work, "tmp")) if f.startswith("dicomhist-")]
        if not left or time.monotonic() > end:
            break
        time.sleep(0.1)
    c.equal(left, [], "no staging folder left behind")
    # Orthanc is still serving after everything above, bad requests included.
    c.check(server.get("/system")["Version"] != "", "Orthanc still answers /system")


def check_error(c, server, uri, status, kind, ident=None, method="GET", body=None):
    """Asserts a JSON error answer; returns its body (None when the call succeeded)."""
    try:
        server.request(method, uri, body if body is not None else
                       (b"" if method == "POST" else None))
    except HttpError as e:
        try:
            err = e.json()
        except ValueError:
            c.check(False, f"{method} {uri}: error body is not JSON: {e.body!r}")
            return None
        if status is not None:
            c.equal(e.status, status, f"{method} {uri}: status")
        c.check(kind in err and (ident is None or err[kind] == ident) and err.get("Reason"),
                f"{method} {uri}: body names {kind} {ident} and a reason: {err}")
        return err
    c.check(False, f"{method} {uri}: succeeded, expected an error")
    return None


def check_derive(c, server, cli, op, args, body, source, series_id, study_id, out):
    """The derived series through REST has the command's pixels, in the same study."""
    dest = os.path.join(out, f"{op}-{len(os.listdir(out)) if os.path.isdir(out) else 0}")
    records = command_json(cli, op, *args, "-o", dest, source)
    want_files = {os.path.basename(f): f for f in records[0]["outputs"]}
    answer = server.post(f"/series/{series_id}/{op}", body)
    if body.get("Asynchronous"):
        job = wait_job(c, server, answer)
        if job is None:
            return
        answer = job["Content"]
    c.check(answer.get("ID") and answer.get("Path") == f"/series/{answer['ID']}",
            f"{op}: answer has ID and Path: {answer}")
    derived = server.get(f"/series/{answer['ID']}")
    if study_id:
        c.equal(derived["ParentStudy"], study_id, f"{op}: derived series in the source's study")
    c.equal(len(answer["Instances"]), len(want_files), f"{op}: one derived instance per source")
    import numpy
    sources = server.get(f"/series/{series_id}/instances")
    sop_to_name = {}
    for s in sources:
        sop_to_name[s["MainDicomTags"]["SOPInstanceUID"]] = s["ID"]
    tmp = os.path.join(out, "fetched.dcm")
    import pydicom
    matched = 0
    for iid in answer["Instances"]:
        with open(tmp, "wb") as f:
            f.write(server.get(f"/instances/{iid}/file", raw=True))
        ds = pydicom.dcmread(tmp)
        c.check(str(ds.DerivationDescription).startswith("dicomhist "),
                f"{op}: derived file carries dicomhist's marker")
        ref = ds.SourceImageSequence[0].ReferencedSOPInstanceUID
        # The command's file derived from the same source.
        for name, path in want_files.items():
            if pydicom.dcmread(path).SourceImageSequence[0].ReferencedSOPInstanceUID == ref:
                c.check(numpy.array_equal(ds.pixel_array, pixels(path)),
                        f"{op} {body}: pixels of {iid} equal the command's {name}")
                c.equal(str(ds.DerivationDescription),
                        str(pydicom.dcmread(path).DerivationDescription),
                        f"{op}: DerivationDescription")
                matched += 1
    c.equal(matched, len(want_files), f"{op}: every derived instance matched a command output")
    # The same request again changes nothing: same UIDs, AlreadyStored.
    again = server.post(f"/series/{series_id}/{op}", dict(body, Asynchronous=False))
    c.equal((again["ID"], again["AlreadyStored"]), (answer["ID"], len(want_files)),
            f"{op}: a repeat is AlreadyStored in the same series")


def check_concurrent_derive(c, server, series_id, count):
    """The same derive asked 8 times at once (the same derived UIDs): one derived series, whole,
    and every answer's instances are in it (none deleted by a concurrent replacement)."""
    body = {"Window": "minmax", "Bits": 12, "ClipLimit": 2}
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: server.post(f"/series/{series_id}/equalize", body),
                                range(8)))
    c.equal(len({a["ID"] for a in answers}), 1, "8 concurrent derives: one derived series")
    kept = {i["ID"] for i in server.get(f"/series/{answers[0]['ID']}/instances")}
    c.equal(len(kept), count, "8 concurrent derives: the derived series is whole")
    c.check(all(set(a["Instances"]) == kept for a in answers),
            f"8 concurrent derives: every answer names the stored instances: {answers} {kept}")


def check_cancelled_job(c, server, series_id, count):
    """A job cancelled at once (whatever step it had reached) leaves nothing half done: the same
    request afterwards gives the whole derived series (and the staging folder is checked gone at
    the end of the test)."""
    body = {"Window": "minmax", "Bits": 16, "ClipLimit": 4}
    job = server.post(f"/series/{series_id}/equalize", dict(body, Asynchronous=True))
    try:
        server.post(f"/jobs/{job['ID']}/cancel", {})
    except HttpError:
        pass  # already finished: nothing to cancel
    end = time.monotonic() + 30
    while time.monotonic() < end and server.get(job["Path"])["State"] not in ("Success",
                                                                               "Failure"):
        time.sleep(0.05)
    state = server.get(job["Path"])["State"]
    print(f"a job cancelled at once ended in {state}")
    c.check(state in ("Success", "Failure"), f"cancelled job settles: {state}")
    again = server.post(f"/series/{series_id}/equalize", body)
    c.equal(len(server.get(f"/series/{again['ID']}/instances")), count,
            f"after a cancelled job ({state}), the derived series is whole")


def wait_job(c, server, answer, timeout=60):
    c.check(answer.get("Path") == f"/jobs/{answer.get('ID')}", f"job answer: {answer}")
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        job = server.get(answer["Path"])
        if job["State"] in ("Success", "Failure"):
            c.equal(job["State"], "Success", f"job {job['Type']}")
            c.equal(job["Progress"], 100, "job progress at the end")
            c.check(job["Type"].startswith("DicomHist"), f"job type: {job['Type']}")
            return job if job["State"] == "Success" else None
        time.sleep(0.1)
    c.check(False, "job did not finish in time")
    return None


if __name__ == "__main__":
    main()
