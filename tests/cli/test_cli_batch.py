#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_cli_batch.py: dicomhist over a generated archive export, as a PACS team runs it.

Thirty studies whose series folders are all named SE0001; broken and foreign files inside the
tree; a run killed at a random moment and resumed; shards against the unsharded run; --jobs
against --jobs 1 byte for byte; --force; --dry-run; --modality; memory of a 3- and a 30-series tree;
output folders inside an input refused. Images are small so the whole test takes seconds.

Usage: test_cli_batch.py DICOMHIST_BINARY SHARED_DICOM_DIR (the second is not used)
"""
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import cli_testlib as t

MANIFEST = "dicomhist-manifest.jsonl"
EPOCH = {"SOURCE_DATE_EPOCH": "1700000000"}  # fixed creation time: runs repeat byte for byte


def manifest(outdir, name=MANIFEST):
    with open(os.path.join(outdir, name)) as f:
        return [json.loads(line) for line in f]


def last_status(lines):
    """path -> its last manifest line."""
    out = {}
    for rec in lines:
        out[rec["path"]] = rec
    return out


def tree_digest(root, skip_hidden=True):
    """relative path -> sha256 of every regular file under root (manifests left out)."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in files:
            if name.startswith("dicomhist-manifest") or (skip_hidden and name.startswith(".")):
                continue
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, root)] = hashlib.sha256(f.read()).hexdigest()
    return out


def inputs_of(export):
    files = []
    for dirpath, _, names in os.walk(export):
        files += [os.path.join(dirpath, n) for n in names]
    return sorted(files)


def check_collisions(c, binary, tmp, export):
    """30 studies, every series in SE0001: one output per input, placed as cp -r would."""
    out = os.path.join(tmp, "collide")
    r = t.run(binary, "equalize", "--json", "--jobs", "2", "-o", out, export, env=EPOCH)
    c.equal(r.rc, 0, "30 SE0001 series: exit 0")
    recs = r.json_lines()
    c.equal(len(recs), 30, "30 SE0001 series: one JSON line each")
    c.equal([rec["path"] for rec in recs], sorted(rec["path"] for rec in recs),
            "JSON lines in plan order")
    want = {os.path.join("EXPORT", os.path.relpath(p, export)) for p in inputs_of(export)}
    c.equal(set(tree_digest(out)), want, "outputs mirror the inputs (cp -r placement)")
    lines = manifest(out)
    c.equal(len(lines), len(want), "one manifest line per input file")
    c.check(all(rec["status"] == "done" and len(rec["outputs"]) == 1 and rec["series_uid"]
                and isinstance(rec["seconds"], float) for rec in lines),
            "manifest lines: done, one output, series_uid, seconds")
    c.check(f"{len(want)} files done, 0 failed, 0 skipped" in r.err and MANIFEST in r.err,
            f"summary line on stderr ({r.err.strip()!r})")
    # Name-based UIDs: UUID version 5 in dicomhist's namespace, checked with Python's uuid.
    import uuid
    import pydicom
    ns = uuid.UUID(int=136441711287616915122970018367938058752)
    rec = lines[0]
    src, dst = pydicom.dcmread(rec["path"]), pydicom.dcmread(rec["outputs"][0])
    name = f"instance\0{src.SOPInstanceUID}\0{dst.DerivationDescription}"
    c.equal(dst.SOPInstanceUID, f"2.25.{uuid.uuid5(ns, name).int}", "SOPInstanceUID: UUID v5")
    name = f"series\0{src.SeriesInstanceUID}\0{dst.DerivationDescription}"
    c.equal(dst.SeriesInstanceUID, f"2.25.{uuid.uuid5(ns, name).int}",
            "SeriesInstanceUID: UUID v5")
    c.equal((dst.ContentDate, dst.ContentTime), ("20231114", "221320"),
            "SOURCE_DATE_EPOCH is the content date and time (UTC)")
    return out


def check_bad_files(c, binary, tmp, export):
    """A truncated file, a non-DICOM file, a DICOMDIR and a repeated instance inside the tree."""
    tree = os.path.join(tmp, "bad", "EXPORT")
    shutil.copytree(export, tree)
    series = os.path.join(tree, "PATIENT000", "STUDY1", "SE0001")
    with open(os.path.join(series, "IM0002"), "rb") as f:
        data = f.read()
    with open(os.path.join(series, "IM0002"), "wb") as f:
        f.write(data[: len(data) // 2])  # truncated inside the pixel data
    with open(os.path.join(tree, "README.txt"), "w") as f:
        f.write("export notes, not an image\n")
    with open(os.path.join(tree, "DICOMDIR"), "wb") as f:
        f.write(b"\0" * 128 + b"DICM" + b"\0" * 64)
    shutil.copy(os.path.join(series, "IM0001"), os.path.join(series, "IM0001-copy"))
    out = os.path.join(tmp, "bad-out")
    r = t.run(binary, "equalize", "-o", out, tree)
    c.equal(r.rc, 1, "tree with a truncated file: exit 1")
    c.check(f"dicomhist: {os.path.join(series, 'IM0002')}: " in r.err,
            "the truncated file is named on stderr")
    last = last_status(manifest(out))
    c.equal(last[os.path.join(series, "IM0002")]["status"], "failed", "truncated: failed")
    c.check(last[os.path.join(series, "IM0002")].get("error"), "truncated: with its error")
    c.equal((last[os.path.join(tree, "README.txt")]["status"],
             last[os.path.join(tree, "README.txt")].get("reason")), ("skipped", "not DICOM"),
            "non-DICOM: skipped, not DICOM")
    c.check(last[os.path.join(tree, "DICOMDIR")]["status"] == "skipped" and
            "DICOMDIR" in last[os.path.join(tree, "DICOMDIR")]["reason"], "DICOMDIR: skipped")
    rep = last[os.path.join(series, "IM0001-copy")]
    c.check(rep["status"] == "skipped" and rep["reason"].startswith("repeated instance of "),
            f"repeated instance: skipped ({rep})")
    done = [p for p, rec in last.items() if rec["status"] == "done"]
    c.equal(len(done), len(inputs_of(export)) - 1, "every other file done")
    c.check(os.path.isfile(os.path.join(out, "EXPORT", "PATIENT000", "STUDY1", "SE0001",
                                        "IM0001")), "the series with the bad slice is written")
    c.check("1 failed, 3 skipped" in r.err, f"summary counts ({r.err.strip().splitlines()[-1]!r})")


def check_jobs_identical(c, binary, tmp, export):
    outs = {}
    for jobs in ("1", "2", "3"):
        out = os.path.join(tmp, f"jobs{jobs}")
        png = os.path.join(tmp, f"jobs{jobs}-png")
        r = t.run(binary, "equalize", "--json", "--jobs", jobs, "--png", png, "-o", out, export,
                  env=EPOCH)
        c.equal(r.rc, 0, f"--jobs {jobs}: exit 0")
        json_out = r.out.replace(out, "OUT").replace(png, "PNG")
        outs[jobs] = (tree_digest(out), tree_digest(png), json_out)
    n = len(inputs_of(export))
    c.check(len(outs["1"][0]) == n and len(outs["1"][1]) == n, "a DICOM and a PNG output each")
    for jobs in ("2", "3"):
        c.check(outs[jobs] == outs["1"], f"--jobs {jobs}: outputs and stdout identical to --jobs 1")
    for cmd in (["info", "--json"], ["histogram", "--json", "--bins", "64"], ["info"]):
        one = t.run(binary, *cmd, "--jobs", "1", export)
        two = t.run(binary, *cmd, "--jobs", "2", export)
        c.check(one.rc == 0 and one.out == two.out and one.out,
                f"{' '.join(cmd)}: --jobs 2 prints what --jobs 1 prints")


def check_no_lost_wakeup(c, binary, export, runs=20, timeout=30):
    """The workers, the output window and the main thread hand each other the work through one
    condition variable; a wait that misses a broadcast (session 17: a worker dropped the lock to
    look for GPU files to help with, then waited for an announcement already made) hangs some
    runs only: 1 in 10 to 20 of these on a loaded 2-core host, 1 in 13 to 254 elsewhere. So the
    cheapest command, many times with 2 and 3 workers (about 4 s, 10 s in the sanitizer build):
    each run ends within the timeout and prints what --jobs 1 prints."""
    one = t.run(binary, "info", "--json", "--jobs", "1", export)
    c.check(one.rc == 0 and one.out, "info --json --jobs 1: the reference")
    for jobs in ("2", "3"):
        hung = differed = 0
        for _ in range(runs):
            try:
                r = t.run(binary, "info", "--json", "--jobs", jobs, export, timeout=timeout)
            except subprocess.TimeoutExpired:
                hung += 1
                break  # one hang is the finding; the rest would only wait as long again
            differed += r.rc != 0 or r.out != one.out
        c.check(hung == 0 and differed == 0,
                f"info --json --jobs {jobs}, {runs} runs: none hung past {timeout} s, each printed "
                f"what --jobs 1 prints ({hung} hung, {differed} differed)")


def check_stats(c, binary, tmp, export):
    """--stats (issue 24): the stage split after the summary, with sane numbers, and the same
    outputs as without it (each file is then read whole before it is parsed)."""
    outs = {}
    for stats in ([], ["--stats"]):
        out = os.path.join(tmp, "stats" + "".join(stats))
        r = t.run(binary, "equalize", "--jobs", "3", *stats, "-o", out, export, env=EPOCH)
        c.equal(r.rc, 0, f"equalize {' '.join(stats)}: exit 0")
        outs[bool(stats)] = (tree_digest(out), r.out.replace(out, "OUT"), r.err)
    c.check(outs[True][:2] == outs[False][:2], "--stats: the same outputs and stdout as without")
    c.check("stats:" not in outs[False][2], "no stage split without --stats")
    err = outs[True][2]
    stage = {}
    for name in ("read", "decode", "compute", "write"):
        m = re.search(rf"stats: {name} +([0-9.]+) s wall +([0-9.]+) s CPU +([0-9.]+)%", err)
        c.check(m is not None, f"--stats: a line for {name} ({err[-400:]!r})")
        if m:
            stage[name] = float(m.group(1))
    busy = re.search(r"workers busy ([0-9.]+) s, waiting for the output order ([0-9.]+) s", err)
    writers = re.search(r"writers busy ([0-9.]+) s \(inside the stages above\), workers waiting "
                        r"for their writer ([0-9.]+) s", err)
    c.check(writers is not None, f"--stats: the writers' line ({err[-400:]!r})")
    head = re.search(r"stats: ([0-9.]+) s elapsed, 3 workers .*, scan ([0-9.]+) s", err)
    cpu = re.search(r"process CPU ([0-9.]+) s: stages on the worker threads ([0-9.]+) s", err)
    c.check(busy and head and cpu, f"--stats: elapsed, busy and CPU lines ({err[-400:]!r})")
    if busy and head and cpu and len(stage) == 4:
        # The stages are the workers' and their writers' time: up to 2 x 3 threads busy.
        elapsed = float(head.group(1))
        worked = float(busy.group(1)) + (float(writers.group(1)) if writers else 0)
        c.check(stage["decode"] > 0 and stage["write"] > 0 and stage["compute"] > 0,
                f"--stats: decode, compute and write took time ({stage})")
        c.check(sum(stage.values()) <= worked + 0.01 <= 6 * elapsed + 0.05,
                f"--stats: stages {sum(stage.values()):.3f} s within the workers' and writers' "
                f"busy {worked:.3f} s, within 2 x 3 threads x {elapsed:.3f} s")
        c.check(float(cpu.group(2)) <= float(cpu.group(1)) + 0.01,
                "--stats: the worker threads' CPU within the process's")
    r = t.run(binary, "histogram", "--json", "--stats", export)
    c.check(r.rc == 0 and "stats: compute" in r.err and "stats: write" in r.err,
            "histogram --stats: the split too (write: nothing written, so zero)")


def check_writers(c, binary, tmp, export, runs=3, timeout=30):
    """Each worker's writer (issue 24, session 20): a series' outputs are written on the
    worker's writer thread while the worker reads and computes the next. Against the same
    command with DICOMHIST_BATCH_WRITERS=0 (each worker writes its own series, the code before):
    the same outputs, PNGs, stdout, stderr and manifest at --jobs 1, 2 and 3; a write that fails
    (an output already there, not replaced) is reported for its file, in its series' turn, as
    without writers; and the hand-over between worker, writer and output order loses no wakeup
    (runs with 2 and 3 workers end within the timeout, printing the same)."""
    def equalize(out, jobs, writers, *extra, check_rc=True):
        png = out + "-png"
        env = dict(EPOCH)
        if not writers:
            env["DICOMHIST_BATCH_WRITERS"] = "0"
        r = t.run(binary, "equalize", "--json", "--jobs", jobs, "--png", png, *extra, "-o", out,
                  export, env=env, timeout=timeout)
        lines = [{k: v for k, v in rec.items() if k != "seconds"} for rec in manifest(out)]
        return (r.rc, tree_digest(out), tree_digest(png), r.out.replace(out, "OUT").replace(
            png, "PNG"), r.err.replace(out, "OUT"), json.dumps(lines).replace(out, "OUT"))

    ref = equalize(os.path.join(tmp, "writers-off-1"), "1", False)
    c.equal(ref[0], 0, "writers off, --jobs 1: exit 0 (the reference)")
    for jobs in ("1", "2", "3"):
        got = equalize(os.path.join(tmp, f"writers-on-{jobs}"), jobs, True)
        c.check(got == ref, f"writers on, --jobs {jobs}: outputs, PNGs, stdout, stderr and "
                            "manifest identical to writers off at --jobs 1")
    # A write that fails: one series' first output taken by a foreign file beforehand.
    failing = {}
    for writers in (False, True):
        out = os.path.join(tmp, f"writers-fail-{int(writers)}")
        first = sorted(inputs_of(export))[4]
        taken = os.path.join(out, "EXPORT", os.path.relpath(first, export))
        os.makedirs(os.path.dirname(taken))
        with open(taken, "wb") as f:
            f.write(b"not the derived instance")
        failing[writers] = equalize(out, "3", writers)
        rc, _, _, _, err, lines = failing[writers]
        state = "on" if writers else "off"
        c.equal(rc, 1, f"writers {state}: an output taken: exit 1")
        named = os.path.join("OUT", os.path.relpath(taken, out)) + ": already exists (not replaced)"
        c.check(f"dicomhist: {os.path.dirname(first)}: {named}" in err,
                f"writers {state}: the failed write names its series and file "
                f"({err.strip()[:300]!r})")
        recs = {rec["path"]: rec for rec in json.loads(lines)}
        c.check(recs[first]["status"] == "failed" and "not replaced" in recs[first]["error"],
                f"writers {state}: the manifest says why ({recs[first]})")
        c.equal(sum(rec["status"] == "done" for rec in recs.values()),
                len(inputs_of(export)) - 2, f"writers {state}: the other series done")
    c.check(failing[True] == failing[False],
            "an output taken: writers on report, write and record what writers off do")
    # The hand-over under load: many short runs; one hang is the finding.
    for jobs in ("2", "3"):
        hung = differed = 0
        for k in range(runs):
            out = os.path.join(tmp, f"writers-wake-{jobs}-{k}")
            try:
                got = equalize(out, jobs, True)
            except subprocess.TimeoutExpired:
                hung += 1
                break
            differed += got[1:4] != ref[1:4] or got[0] != 0
            shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(out + "-png", ignore_errors=True)
        c.check(hung == 0 and differed == 0,
                f"writers on, --jobs {jobs}, {runs} runs: none hung past {timeout} s, each wrote "
                f"what writers off write ({hung} hung, {differed} differed)")


def check_resume(c, binary, tmp, export, rounds=2):
    """A run killed with SIGKILL at a random moment, then run again: everything done once."""
    ref = os.path.join(tmp, "resume-ref")
    start = time.monotonic()
    r = t.run(binary, "equalize", "--jobs", "1", "-o", ref, export, env=EPOCH)
    full = time.monotonic() - start
    c.equal(r.rc, 0, "reference run for resume")
    reference = tree_digest(ref)
    rng = random.Random(int(os.environ.get("DH_TEST_SEED", "11")))
    for k in range(rounds):
        out = os.path.join(tmp, f"resume{k}")
        env = dict(os.environ, **EPOCH)
        # A moment inside the run: tried again sooner when the run finished before it.
        for fraction in (rng.uniform(0.2, 0.8), 0.3, 0.15, 0.05):
            shutil.rmtree(out, ignore_errors=True)
            p = subprocess.Popen([binary, "equalize", "--jobs", "1", "-o", out, export],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
            time.sleep(fraction * full)
            p.send_signal(signal.SIGKILL)
            p.wait()
            first = tree_digest(out)
            if len(first) < len(reference):
                break
        print(f"round {k}: killed with {len(first)} of {len(reference)} outputs written")
        c.check(all(reference.get(name) == digest for name, digest in first.items()),
                f"round {k}: every file under a final name is complete ({len(first)} of "
                f"{len(reference)})")
        inodes = {}
        for name in first:
            st = os.stat(os.path.join(out, name))
            inodes[name] = (st.st_ino, st.st_mtime_ns)
        r = t.run(binary, "equalize", "--jobs", "2", "-o", out, export, env=EPOCH)
        c.equal(r.rc, 0, f"round {k}: the resumed run succeeds ({r.err.strip()[-200:]!r})")
        c.equal(tree_digest(out), reference, f"round {k}: resumed outputs equal an uninterrupted run")
        unchanged = all((os.stat(os.path.join(out, n)).st_ino,
                         os.stat(os.path.join(out, n)).st_mtime_ns) == v for n, v in inodes.items())
        c.check(unchanged, f"round {k}: outputs finished before the kill were not rewritten")
        last = last_status(manifest(out))
        c.check(len(last) == len(reference) and
                all(rec["status"] == "done" for rec in last.values()),
                f"round {k}: every input done in the manifest")
        r = t.run(binary, "equalize", "--json", "-o", out, export, env=EPOCH)
        c.check(r.rc == 0 and r.out == "" and f"{len(reference)} done before" in r.err,
                f"round {k}: a third run does nothing ({r.err.strip()!r})")


def check_shards(c, binary, tmp, export):
    whole = os.path.join(tmp, "unsharded")
    c.equal(t.run(binary, "equalize", "-o", whole, export, env=EPOCH).rc, 0, "unsharded run")
    shared = os.path.join(tmp, "sharded")
    n = 3
    per_shard = []
    for i in range(n):
        r = t.run(binary, "equalize", "--shard", f"{i}/{n}", "-o", shared, export, env=EPOCH)
        c.equal(r.rc, 0, f"shard {i}/{n}: exit 0")
        lines = manifest(shared, f"dicomhist-manifest-{i}-of-{n}.jsonl")
        per_shard.append({rec["path"] for rec in lines})
    c.equal(tree_digest(shared), tree_digest(whole), "shards 0..2 together: the unsharded outputs")
    c.check(all(not (per_shard[i] & per_shard[j]) for i in range(n) for j in range(i + 1, n)),
            "shards are disjoint")
    c.equal(set().union(*per_shard), {rec["path"] for rec in manifest(whole)},
            "the shards' manifests cover every input once")
    c.check(all(per_shard), "every shard got some work")
    # --shard auto: Slurm array variables, and Kubernetes' index with --shard-count.
    slurm = os.path.join(tmp, "slurm")
    for task in range(n):
        env = dict(EPOCH, SLURM_ARRAY_TASK_ID=str(task + 5), SLURM_ARRAY_TASK_MIN="5",
                   SLURM_ARRAY_TASK_MAX=str(5 + n - 1), SLURM_ARRAY_TASK_COUNT=str(n))
        c.equal(t.run(binary, "equalize", "--shard", "auto", "-o", slurm, export, env=env).rc, 0,
                f"Slurm task {task + 5}: exit 0")
    c.equal(tree_digest(slurm), tree_digest(whole), "Slurm array: the unsharded outputs")
    c.check(os.path.isfile(os.path.join(slurm, f"dicomhist-manifest-2-of-{n}.jsonl")),
            "Slurm task 7 of 5..7 is shard 2")
    # An array with steps (0-4:2) or a list (1,4,9): ID - MIN is no index, refused.
    for what, env in (("steps", dict(SLURM_ARRAY_TASK_ID="2", SLURM_ARRAY_TASK_MIN="0",
                                     SLURM_ARRAY_TASK_MAX="4", SLURM_ARRAY_TASK_COUNT="3",
                                     SLURM_ARRAY_TASK_STEP="2")),
                      ("a list", dict(SLURM_ARRAY_TASK_ID="1", SLURM_ARRAY_TASK_MIN="1",
                                      SLURM_ARRAY_TASK_MAX="9", SLURM_ARRAY_TASK_COUNT="3"))):
        r = t.run(binary, "equalize", "--shard", "auto", "-o", os.path.join(tmp, "x"), export,
                  env=env)
        c.check(r.rc == 2 and "--shard I/N" in r.err, f"Slurm array with {what}: usage error")
    k8s = os.path.join(tmp, "k8s")
    for index in range(n):
        env = dict(EPOCH, JOB_COMPLETION_INDEX=str(index))
        c.equal(t.run(binary, "equalize", "--shard", "auto", "--shard-count", str(n), "-o", k8s,
                      export, env=env).rc, 0, f"Kubernetes index {index}: exit 0")
    c.equal(tree_digest(k8s), tree_digest(whole), "Kubernetes Indexed Job: the unsharded outputs")
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith("SLURM_") and k != "JOB_COMPLETION_INDEX"}
    p = subprocess.run([binary, "equalize", "--shard", "auto", "-o", os.path.join(tmp, "x"),
                        export], env=dict(clean, JOB_COMPLETION_INDEX="1"), capture_output=True)
    c.check(p.returncode == 2 and b"--shard-count" in p.stderr,
            "Kubernetes index without --shard-count: usage error")
    p = subprocess.run([binary, "equalize", "--shard", "auto", "--shard-count", "2", "-o",
                        os.path.join(tmp, "x"), export],
                       env=dict(clean, JOB_COMPLETION_INDEX="x"), capture_output=True)
    c.check(p.returncode == 2 and b"JOB_COMPLETION_INDEX is 'x', not a whole number" in p.stderr,
            "a scheduler variable that is not a number: named as such, not taken for unset")
    for bad in ("3/3", "1", "a/2", "-1/2"):
        r = t.run(binary, "equalize", "--shard", bad, "-o", os.path.join(tmp, "x"), export)
        c.equal(r.rc, 2, f"--shard {bad}: usage error")


def check_dry_run_and_modality(c, binary, tmp):
    mixed = os.path.join(tmp, "mixed")
    import archive_maker
    export = archive_maker.make_archive(mixed, 6, 3, 32, ("CT", "CR", "DX"))
    out = os.path.join(tmp, "dry")
    r = t.run(binary, "equalize", "--dry-run", "-o", out, export)
    c.equal((r.rc, r.out), (0, ""), "--dry-run: exit 0, nothing on stdout")
    c.equal(sorted(os.listdir(out)), [MANIFEST], "--dry-run writes only the manifest")
    lines = manifest(out)
    c.check(len(lines) == 10 and all(rec["status"] == "planned" and rec["outputs"] for rec in lines),
            "--dry-run: a planned line with its output for every file")
    out = os.path.join(tmp, "modality")
    r = t.run(binary, "equalize", "--modality", "CR,dx", "-o", out, export)
    c.equal(r.rc, 0, "--modality CR,dx: exit 0")
    last = last_status(manifest(out))
    chosen = {p for p, rec in last.items() if rec["status"] == "done"}
    skipped = {p: rec["reason"] for p, rec in last.items() if rec["status"] == "skipped"}
    c.equal(len(chosen), 4, "--modality CR,dx: the CR and DX series done")
    c.check(len(skipped) == 6 and all("CT" in why for why in skipped.values()),
            "--modality: CT files skipped with the reason")
    c.equal(sum(1 for _ in tree_digest(out)), 4, "--modality: only CR and DX written")
    r = t.run(binary, "info", "--json", "--modality", "CT", export)
    c.check(r.rc == 0 and {rec["modality"] for rec in r.json_lines()} == {"CT"},
            "info --modality CT: CT volumes only")
    r = t.run(binary, "equalize", "--modality", "CR,,DX", "-o", out, export)
    c.equal(r.rc, 2, "--modality with an empty code: usage error")


def check_force(c, binary, tmp, export):
    """--force replaces what is there, a stale file included, and leaves no temporary behind."""
    out = os.path.join(tmp, "force")
    r = t.run(binary, "equalize", "--jobs", "2", "-o", out, export, env=EPOCH)
    c.equal(r.rc, 0, "--force: first run exits 0")
    first = tree_digest(out)
    victim = sorted(first)[0]
    with open(os.path.join(out, victim), "wb") as f:
        f.write(b"stale, not the derived instance")
    for k in range(2):
        r = t.run(binary, "equalize", "--jobs", "2", "--force", "-o", out, export, env=EPOCH)
        c.equal(r.rc, 0, f"--force run {k + 1}: exit 0")
        c.check(tree_digest(out) == first, f"--force run {k + 1}: every output as first written")
        hidden = [rel for rel in tree_digest(out, skip_hidden=False) if rel not in first]
        c.check(hidden == [], f"--force run {k + 1}: no temporary file left ({hidden[:3]})")


def check_outdir_inside_input(c, binary, tmp, export):
    for option, args in (("-o", ["-o", os.path.join(export, "PATIENT001", "out")]),
                         ("-o", ["-o", export]),
                         ("--png", ["-o", os.path.join(tmp, "fine"), "--png",
                                    os.path.join(export, "png")])):
        before = inputs_of(export)
        r = t.run(binary, "equalize", *args, export)
        c.check(r.rc == 2 and "inside the input" in r.err,
                f"{option} inside the input: refused ({r.err.strip()!r})")
        c.equal(inputs_of(export), before, f"{option} inside the input: nothing written")
    parent = os.path.dirname(export)
    r = t.run(binary, "equalize", "-o", parent, export)
    c.check(r.rc == 2 and "over the input itself" in r.err, "-o the input's parent: refused")
    import archive_maker
    a = archive_maker.make_archive(os.path.join(tmp, "dup", "a"), 2, 1, 16, tag="a")
    b = archive_maker.make_archive(os.path.join(tmp, "dup", "b"), 2, 1, 16, tag="b")
    r = t.run(binary, "equalize", "-o", os.path.join(tmp, "dup-out"), a, b)
    c.check(r.rc == 2 and "would both be written" in r.err, "two inputs named EXPORT: refused")


def peak_rss_kib(binary, *args):
    """The command's peak resident memory, from a fresh process's view of its one child."""
    code = ("import resource, subprocess, sys\n"
            "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    # AddressSanitizer keeps freed memory in quarantine; without it the sanitizer build shows
    # the program's own peak (still inflated by shadow memory, which grows with the peak too).
    asan = os.environ.get("ASAN_OPTIONS", "")
    asan = (asan + ":" if asan else "") + "quarantine_size_mb=0:thread_local_quarantine_size_kb=0"
    p = subprocess.run([sys.executable, "-c", code, binary, *args], capture_output=True,
                       text=True, env=dict(os.environ, ASAN_OPTIONS=asan, **EPOCH))
    return int(p.stdout.strip())


def check_memory(c, binary, tmp):
    import archive_maker
    small = archive_maker.make_archive(os.path.join(tmp, "mem3"), 3, 8, 256)
    large = archive_maker.make_archive(os.path.join(tmp, "mem30"), 30, 8, 256)
    # 30 series of 8 x 256 x 256 x 2 bytes: 31 MB of pixels; one series is 1 MB.
    for cmd in (["equalize", "-o"], ["histogram", "--json"], ["info", "--json"]):
        rss = []
        for tree, name in ((small, "3"), (large, "30")):
            args = cmd + ([os.path.join(tmp, f"mem-out-{name}")] if cmd[-1] == "-o" else [])
            rss.append(peak_rss_kib(binary, cmd[0], "--jobs", "1", *args[1:], tree))
        print(f"{cmd[0]}: peak RSS {rss[0]} KiB for 3 series, {rss[1]} KiB for 30")
        c.check(rss[1] <= rss[0] * 1.3 + 2048,
                f"{cmd[0]} --jobs 1: peak RSS of 30 series {rss[1]} KiB vs 3 series {rss[0]} KiB")


def check_progress(c, binary, tmp, export):
    r = t.run(binary, "histogram", "--json", "--progress", "--bins", "16", export)
    c.check(r.rc == 0 and "files" in r.err and "series" in r.err and "MB/s" in r.err,
            f"--progress: the progress on stderr ({r.err.strip()[-120:]!r})")
    c.equal(len(r.json_lines()), 30, "--progress: stdout stays JSON lines")
    # On a terminal the line is redrawn in place (and cleared), without --progress.
    import pty
    master, slave = pty.openpty()
    p = subprocess.run([binary, "histogram", "--json", "--bins", "16", export],
                       stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    c.check(p.returncode == 0 and b"\r\x1b[K" in shown and b"files" in shown,
            f"stderr a terminal: progress redrawn in place ({shown[-120:]!r})")
    c.equal(len([l for l in p.stdout.decode().splitlines() if l.startswith("{")]), 30,
            "stderr a terminal: stdout stays JSON lines")


def main():
    binary, _ = t.parse_argv()
    try:
        import numpy  # noqa: F401
        import pydicom  # noqa: F401
    except ImportError as e:
        t.skip(f"Python module missing: {e.name}")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import archive_maker
    c = t.Checks()
    tmp = tempfile.mkdtemp(prefix="dicomhist-batch-")
    try:
        export = archive_maker.make_archive(os.path.join(tmp, "archive"), 30, 2, 32, ("CT", "CR"))
        check_collisions(c, binary, tmp, export)
        check_bad_files(c, binary, tmp, export)
        check_jobs_identical(c, binary, tmp, export)
        check_no_lost_wakeup(c, binary, export)
        check_stats(c, binary, tmp, export)
        check_writers(c, binary, tmp, export)
        check_resume(c, binary, tmp, export)
        check_shards(c, binary, tmp, export)
        check_dry_run_and_modality(c, binary, tmp)
        check_outdir_inside_input(c, binary, tmp, export)
        check_force(c, binary, tmp, export)
        check_memory(c, binary, tmp)
        check_progress(c, binary, tmp, export)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c.finish()


if __name__ == "__main__":
    main()
