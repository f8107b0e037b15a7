#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Load and soak of the plugin against a real Orthanc on loopback: for SOAK_SECONDS (120) one
client uploads a few hundred instances (copies of ../shared/dicom's series/ct5n and CT/DX files
with new UIDs, paced over the run) while 32 clients ask, at random, for series and instance
histograms and infos, histogram plots where the plugin serves them (GET .../histogram.svg, from
another part of issue 23: left out of the mix while it answers 404), and derives (equalize and
window, derived series and presentation states, synchronous and as jobs) of series already
complete. Then:
- every answer is right: histograms and infos equal the command's (dicomhist histogram|info
  --json) on the file the copy was made from, field for field but the names; a derived series
  holds one instance per source instance, and sampled derived instances hold the command's
  pixels for the same parameters; a state is one PR instance;
- no answer is a 5xx, and no request fails at the socket;
- every job ends Success, or Failure with an error and a reason, within a minute of the end;
- Orthanc's resident memory is flat after warm-up: sampled every second, its peak over the last
  half of the run is at most RSS_SLACK_MIB (32 MiB) above its peak over the first quarter after
  warm-up (the first 30 s: Orthanc's and the plugin's caches, SQLite's, allocator arenas of the
  32 HTTP threads); leaking one series' bytes per request would pass that within seconds.
Orthanc is always stopped (orthanc_testlib). The figures (requests by kind, RSS) are printed.

argv: ORTHANC PLUGIN DICOMHIST SHARED_DICOM (see orthanc_testlib.parse_argv)."""

import io
import os
import random
import threading
import time

from orthanc_testlib import command_json, run_against_orthanc
from orthanc_server import HttpError

SOAK_SECONDS = 120
WARM_UP = 30
CLIENTS = 32
SERIES_COPIES = 56             # of ct5n: 280 instances
SINGLE_COPIES = 24             # of the CT and DX files: 24 more
RSS_SLACK_MIB = 32
# Every job kept in the history, to be checked; four at a time, so the queue drains.
CONFIG = {"StableAge": 1, "HttpThreadsCount": 64, "JobsHistorySize": 100000,
          "ConcurrentJobs": 4}
ORTHANC_STORAGE_RACE = b"Error while accessing the filesystem"
# The plugin's answer when Orthanc refused a derived instance twice (derive.c retries once)
ORTHANC_REFUSED_TWICE = b"Orthanc refused the derived instance"
ASYNC_UNTIL = 0.85             # of the run: jobs submitted later would outlast it
DERIVES = [("equalize", {"Bits": 12}), ("equalize", {"Bits": 12, "Output": "gsps"}),
           ("window", {"Window": "40:400", "Bits": 12}),
           ("equalize", {"Mode": "slice", "Bits": 12, "Asynchronous": True}),
           ("equalize", {"Bits": 16, "Output": "gsps", "Asynchronous": True})]


def main():
    run_against_orthanc(run_checks, CONFIG, "dh_orthanc_soak_")


# ------------------------------------------------------------------------------ inputs

def templates(shared):
    """name -> list of source files: a 5-file CT series and two single files."""
    ct5n = os.path.join(shared, "series", "ct5n")
    return {"ct5n": sorted(os.path.join(ct5n, f) for f in os.listdir(ct5n)),
            "ct_small": [os.path.join(shared, "pydicom_CT_small.dcm")],
            "dx": [os.path.join(shared, "highdicom_dx_image_8bit.dcm")]}


def copies(files, tag):
    """The files as one new series (new series and instance UIDs), as bytes."""
    import pydicom
    out = []
    for k, path in enumerate(files):
        ds = pydicom.dcmread(path)
        ds.SeriesInstanceUID = f"1.2.826.0.1.3680043.10.543.77.{tag}"
        ds.SOPInstanceUID = f"1.2.826.0.1.3680043.10.543.77.{tag}.{k + 1}"
        buf = io.BytesIO()
        ds.save_as(buf)
        out.append(buf.getvalue())
    return out


def expected(cli, files):
    """The command's histogram (128 bins over 0..4096) and info of the template, without the names."""
    target = files[0] if len(files) == 1 else os.path.dirname(files[0])
    hist = command_json(cli, "histogram", "--bins", "128", "--range", "0:4096", target)[0]
    info = command_json(cli, "info", target)[0]
    return unnamed(hist), unnamed(info)


def unnamed(record):
    out = {k: v for k, v in record.items() if k not in ("path", "warnings", "series_uid")}
    if isinstance(out.get("slices"), list):
        out["slices"] = [{k: v for k, v in s.items() if k != "source"} for s in out["slices"]]
    return out


def derived_pixels(cli, work, files, route, body):
    """The command's derived stored values for the template, by source SOPInstanceUID... of the
    template; the copies keep each file's pixels, so instance k of a copy matches file k."""
    import pydicom
    args = [route]
    if body.get("Mode") == "slice":
        args += ["--mode", "slice"]
    if "Window" in body:
        args += ["--window", body["Window"]]
    args += ["--bits", str(body["Bits"])]
    out = os.path.join(work, "reference", route + "-" + "-".join(f"{k}{v}" for k, v in
                                                                 sorted(body.items())))
    target = files[0] if len(files) == 1 else os.path.dirname(files[0])
    records = command_json(cli, *args, "-o", out, target)
    by_source = {}
    for path in records[0]["outputs"]:
        ds = pydicom.dcmread(path)
        src = ds.SourceImageSequence[0].ReferencedSOPInstanceUID
        by_source[src] = ds.pixel_array.copy()
    return [by_source[pydicom.dcmread(f, stop_before_pixels=True).SOPInstanceUID] for f in files]


# ------------------------------------------------------------------------------ the run

class Soak:
    def __init__(self, server, shared, cli, work):
        self.server = server
        self.templates = templates(shared)
        self.want = {name: expected(cli, files) for name, files in self.templates.items()}
        self.cli, self.work = cli, work
        self.lock = threading.Lock()
        self.ready = []          # (series ID, template name): complete series
        self.errors = []         # what went wrong, in words
        self.storage_races = []  # Orthanc's own filesystem errors (see call)
        self.counts = {}         # requests by kind
        self.jobs = []           # (job ID, template, route, body)
        self.derived = []        # (derived series ID, template, route, body, answer)
        self.rss = []            # (seconds since start, KiB)
        self.stop = threading.Event()
        self.plots = False

    def note(self, kind):
        with self.lock:
            self.counts[kind] = self.counts.get(kind, 0) + 1

    def fail(self, text):
        with self.lock:
            if len(self.errors) < 200:
                self.errors.append(text)

    def call(self, kind, method, uri, body=None, raw=False):
        """One request; None when it failed (recorded). A 4xx with a reason is an answer."""
        self.note(kind)
        try:
            return self.server.request(method, uri, body, raw=raw, timeout=120)
        except HttpError as e:
            if e.status == 500 and (ORTHANC_STORAGE_RACE in e.body and b'"Method"' in e.body
                                    or ORTHANC_REFUSED_TWICE in e.body):
                # Orthanc's own answer, not the plugin's: its file storage lost a race between a
                # store and a delete pruning the same folder (seen once in the ~19,000 requests
                # of one run on a 2-core machine), or a store refused twice for it. Counted
                # apart (the plugin retries a store once); what the plugin must do then, give
                # up the derive's claim so that the next request of the same result runs, is
                # checked by every later request answering in time.
                with self.lock:
                    self.storage_races.append(f"{kind} {uri}")
            elif e.status >= 500:
                self.fail(f"{kind} {uri}: HTTP {e.status}: {e.body[:300]!r}")
            else:
                self.fail(f"{kind} {uri}: unexpected HTTP {e.status}: {e.body[:300]!r}")
        except OSError as e:
            self.fail(f"{kind} {uri}: {type(e).__name__}: {e}")
        return None

    # ---- the clients

    def uploader(self, batches, t0):
        """Batch i is sent at t0 + i * span / n (or as soon as the one before is in), so the
        uploads spread over the first 70% of the run whatever the load does to their pace."""
        span = SOAK_SECONDS * 0.7
        for i, (name, data) in enumerate(batches):
            wait = t0 + i * span / len(batches) - time.monotonic()
            if self.stop.wait(max(wait, 0)):
                return
            series = None
            for blob in data:
                a = self.call("upload", "POST", "/instances", blob)
                series = a["ParentSeries"] if a else None
            if series:
                with self.lock:
                    self.ready.append((series, name))

    def client(self, seed, t0):
        rng = random.Random(seed)
        while not self.stop.is_set():
            late = time.monotonic() - t0 > SOAK_SECONDS * ASYNC_UNTIL
            with self.lock:
                series, name = rng.choice(self.ready)
            pick = rng.random()
            if pick < 0.35:
                self.histogram(series, name)
            elif pick < 0.5:
                self.info(series, name)
            elif pick < 0.6:
                self.instance_histogram(series, name, rng)
            elif pick < 0.7 and self.plots:
                svg = self.call("plot", "GET", f"/series/{series}/histogram.svg", raw=True)
                if svg is not None and b"<svg" not in svg[:2000]:
                    self.fail(f"plot of {series}: not an SVG")
            else:
                route, body = rng.choice(DERIVES)
                if late and body.get("Asynchronous"):
                    body = {k: v for k, v in body.items() if k != "Asynchronous"}
                self.derive(series, name, route, body)

    def histogram(self, series, name):
        a = self.call("series histogram", "GET",
                      f"/series/{series}/histogram?bins=128&range=0:4096")
        if a is not None and unnamed(a) != self.want[name][0]:
            self.fail(f"histogram of {series} ({name}) differs from the command's")

    def info(self, series, name):
        a = self.call("series info", "GET", f"/series/{series}/info")
        if a is not None and unnamed(a) != self.want[name][1]:
            self.fail(f"info of {series} ({name}) differs from the command's")

    def instance_histogram(self, series, name, rng):
        if len(self.templates[name]) != 1:
            return self.histogram(series, name)
        instances = self.call("listing", "GET", f"/series/{series}/instances")
        if instances:
            a = self.call("instance histogram", "GET",
                          f"/instances/{instances[0]['ID']}/histogram?bins=128&range=0:4096")
            if a is not None and unnamed(a) != self.want[name][0]:
                self.fail(f"histogram of instance {instances[0]['ID']} differs from the command's")

    def derive(self, series, name, route, body):
        a = self.call(f"{route} {body.get('Output', 'series')}", "POST",
                      f"/series/{series}/{route}", body)
        if a is None:
            return
        if body.get("Asynchronous"):
            if "ID" not in a:
                self.fail(f"{route} job on {series}: no job ID: {a}")
            else:
                with self.lock:
                    self.jobs.append((a["ID"], name, route, body))
            return
        self.check_derived(a, name, route, body, series)

    def check_derived(self, a, name, route, body, series):
        want = 1 if body.get("Output") == "gsps" else len(self.templates[name])
        if len(a.get("Instances", [])) != want:
            self.fail(f"{route} {body} of {series}: {len(a.get('Instances', []))} instances, "
                      f"not {want}: {a}")
            return
        with self.lock:
            self.derived.append((a["ID"], name, route, body, a))

    # ---- memory

    def sampler(self, t0):
        pid = self.server.proc.pid
        while not self.stop.is_set():
            try:
                with open(f"/proc/{pid}/status") as f:
                    kib = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
                self.rss.append((time.monotonic() - t0, kib))
            except (OSError, StopIteration):
                pass
            self.stop.wait(1.0)


def run_checks(c, server, cli, shared, work):
    setup = time.monotonic()
    soak = Soak(server, shared, cli, work)
    # Series to work on from the start: one copy of each template.
    for i, (name, files) in enumerate(soak.templates.items()):
        series = [server.post("/instances", b)["ParentSeries"] for b in copies(files, 9000 + i)]
        soak.ready.append((series[-1], name))
    try:
        server.get(f"/series/{soak.ready[0][0]}/histogram.svg", raw=True)
        soak.plots = True
    except HttpError:
        soak.plots = False
    batches = [("ct5n", copies(soak.templates["ct5n"], k)) for k in range(SERIES_COPIES)]
    batches += [("ct_small" if k % 2 else "dx", copies(soak.templates["ct_small" if k % 2 else
                                                                      "dx"], 1000 + k))
                for k in range(SINGLE_COPIES)]
    random.Random(5).shuffle(batches)
    uploaded = sum(len(d) for _, d in batches)

    t0 = time.monotonic()
    threads = [threading.Thread(target=soak.sampler, args=(t0,)),
               threading.Thread(target=soak.uploader, args=(batches, t0))]
    threads += [threading.Thread(target=soak.client, args=(k, t0)) for k in range(CLIENTS)]
    for t in threads:
        t.start()
    time.sleep(SOAK_SECONDS)
    soak.stop.set()
    for t in threads:
        t.join(180)
    elapsed = time.monotonic() - t0

    # Jobs: each finished, or failed with a reason, within a minute.
    print(f"soak: setup {t0 - setup:.0f} s, run {elapsed:.0f} s")
    end = time.monotonic() + 60
    ours = {job[0]: job for job in soak.jobs}
    finished = 0
    while True:
        states = {j["ID"]: j for j in server.get("/jobs?expand") if j["ID"] in ours}
        pending = [i for i in ours if states.get(i, {}).get("State") not in ("Success", "Failure")]
        if not pending or time.monotonic() > end:
            break
        time.sleep(0.5)
    c.equal(pending, [], "every job ended within a minute of the run")
    for job_id, j in states.items():
        job = ours[job_id]
        if j["State"] == "Success":
            finished += 1
            soak.check_derived(j["Content"], job[1], job[2], job[3], j["Content"]["Source"])
        elif j["State"] == "Failure":
            content = j.get("Content") or {}
            c.check(bool(content.get("Reason")) and bool(content.get("Error")),
                    f"job {job_id} failed with a reason: {content}")

    # Sampled derived instances hold the command's pixels.
    import pydicom
    rng = random.Random(11)
    checked = 0
    reference = {}
    for series, name, route, body, answer in rng.sample(soak.derived, min(8, len(soak.derived))):
        if body.get("Output") == "gsps":
            tags = server.get(f"/instances/{answer['Instances'][0]}/tags?simplify")
            c.equal(tags.get("Modality"), "PR", f"{series}: a presentation state")
            continue
        key = (name, route, tuple(sorted((k, v) for k, v in body.items()
                                         if k != "Asynchronous")))
        if key not in reference:
            reference[key] = derived_pixels(cli, work, soak.templates[name], route, body)
        for k, inst in enumerate(answer["Instances"]):
            ds = pydicom.dcmread(io.BytesIO(server.get(f"/instances/{inst}/file", raw=True)))
            number = int(ds.SourceImageSequence[0].ReferencedSOPInstanceUID.rsplit(".", 1)[1])
            c.check((ds.pixel_array == reference[key][number - 1]).all(),
                    f"{series} instance {inst}: the command's pixels ({route} {body})")
            checked += 1

    for e in soak.errors[:20]:
        print("error:", e)
    if soak.storage_races:
        print(f"soak: Orthanc's file storage failed {len(soak.storage_races)} request(s) on its "
              f"own (a store racing a delete): {soak.storage_races[:5]}")
    c.check(len(soak.storage_races) <= 3, "Orthanc's own storage races stay rare")
    c.equal(len(soak.errors), 0, "every answer right, no 5xx, no failed request")
    print(f"soak: checks after the run {time.monotonic() - t0 - elapsed:.0f} s")
    print(f"soak: {elapsed:.0f} s, {CLIENTS} clients, {uploaded} instances uploaded, requests "
          f"{dict(sorted(soak.counts.items()))}, {len(soak.jobs)} jobs ({finished} succeeded), "
          f"{len(soak.derived)} derives checked, {checked} derived instances compared, plots "
          f"{'on' if soak.plots else 'absent'}")
    c.check(soak.counts.get("upload", 0) >= uploaded, f"all {uploaded} instances uploaded")
    c.check(sum(v for k, v in soak.counts.items() if k != "upload") > 1000,
            f"the clients made more than 1000 requests: {soak.counts}")

    # Memory after warm-up.
    after = [kib for t, kib in soak.rss if t >= WARM_UP]
    early = [kib for t, kib in soak.rss if WARM_UP <= t < WARM_UP + SOAK_SECONDS / 4]
    late = [kib for t, kib in soak.rss if t >= SOAK_SECONDS / 2]
    if c.check(bool(early) and bool(late), "resident memory sampled"):
        print(f"Orthanc RSS: {soak.rss[0][1] // 1024} MiB at start, peak {max(early) // 1024} MiB "
              f"over {WARM_UP}-{WARM_UP + SOAK_SECONDS // 4} s, peak {max(late) // 1024} MiB over "
              f"the last half, {after[-1] // 1024} MiB at the end")
        c.check(max(late) <= max(early) + RSS_SLACK_MIB * 1024,
                f"RSS flat after warm-up: last half's peak {max(late) // 1024} MiB <= "
                f"{max(early) // 1024} + {RSS_SLACK_MIB} MiB")


if __name__ == "__main__":
    main()
