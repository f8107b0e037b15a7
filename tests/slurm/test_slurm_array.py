#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_slurm_array.py: `dicomhist equalize --shard auto` as a Slurm array job under a real Slurm.

Starts a one-node Slurm on loopback (slurm_cluster.py), takes the sbatch script from
docs/batch.md as it stands and submits it with `sbatch --array=0-3 --wait` over a generated
export, then checks that the union of the four shards' outputs and manifests is one unsharded
run, file for file; then kills the largest shard's task mid-run with scancel, resubmits the
array and checks that it finishes without rewriting what was finished. Skipped (77) where Slurm
cannot start (not root, binaries absent). docs/batch.md says what may differ and why.

Usage: test_slurm_array.py DICOMHIST_BINARY DOCS_BATCH_MD
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
sys.path.insert(0, HERE)
import cli_testlib as t  # noqa: E402
import slurm_cluster  # noqa: E402

SHARDS = 4
MARKER = "<!-- tests/slurm/test_slurm_array.py submits the block below"
# What two runs of the same work write differently: when each file was made.
WHEN_MADE = ("ContentDate", "ContentTime", "InstanceCreationDate", "InstanceCreationTime")


def docs_show_command(md, argv):
    """Whether docs/batch.md shows this sbatch command line (continuation lines joined)."""
    with open(md) as f:
        text = " ".join(f.read().replace("\\\n", " ").split())
    return " ".join(argv) in text


def script_from_docs(md):
    """The ```sh block right after the marker comment in docs/batch.md."""
    with open(md) as f:
        lines = f.read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(MARKER))
    if lines[start + 1] != "```sh":
        raise ValueError(f"{md}: no ```sh block after the marker")
    end = lines.index("```", start + 2)
    return "\n".join(lines[start + 2:end]) + "\n"


def outputs(root):
    """Relative names of the files under final names (manifests and hidden temporaries left out)."""
    names = set()
    for dirpath, _, files in os.walk(root):
        for name in files:
            if not name.startswith(".") and not name.startswith("dicomhist-manifest"):
                names.add(os.path.relpath(os.path.join(dirpath, name), root))
    return names


def manifest_lines(path):
    """The manifest's whole lines. A task killed in the middle of a write may leave a cut-short
    last line, which the next run ends with a newline; such a line is reported, not parsed."""
    records = []
    with open(path) as f:
        for line in f:
            try:
                records.append(json.loads(line))
            except ValueError:
                if line.endswith("\n"):
                    print(f"note: {path}: a cut-short line {line.strip()[:80]!r}")
    return records


def whole_lines(path):
    """How many lines of a manifest being written are whole (end with a newline)."""
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0


def comparable(rec, out):
    """A manifest line as it must be in any run of the same work: outputs relative to OUT,
    `seconds` (timing) left out."""
    rec = dict(rec)
    rec.pop("seconds", None)
    rec["outputs"] = [os.path.relpath(p, out) for p in rec.get("outputs", [])]
    return rec


def dataset_without_time(path):
    import pydicom
    ds = pydicom.dcmread(path)
    missing = [k for k in WHEN_MADE if k not in ds]
    for k in WHEN_MADE:
        if k in ds:
            del ds[k]
    return ds, missing


def same_as_unsharded(c, out, whole, what):
    """Outputs file for file (names, pixel data, every element but WHEN_MADE) and manifests."""
    names = outputs(out)
    c.equal(sorted(names), sorted(outputs(whole)), f"{what}: the unsharded run's file names")
    differing = []
    for name in sorted(names & outputs(whole)):
        a, missing_a = dataset_without_time(os.path.join(out, name))
        b, missing_b = dataset_without_time(os.path.join(whole, name))
        if (missing_a or missing_b or a.PixelData != b.PixelData or a != b
                or a.file_meta != b.file_meta):
            differing.append(name)
    c.equal(differing, [], f"{what}: files equal to the unsharded run's but for {WHEN_MADE}")
    union = {}
    for i in range(SHARDS):
        for rec in manifest_lines(os.path.join(out, f"dicomhist-manifest-{i}-of-{SHARDS}.jsonl")):
            union[rec["path"]] = comparable(rec, out)  # the last line for a path counts
    want = {rec["path"]: comparable(rec, whole)
            for rec in manifest_lines(os.path.join(whole, "dicomhist-manifest.jsonl"))}
    c.equal(union, want, f"{what}: the shards' manifests are the unsharded manifest")


def shard_paths(out):
    paths = []
    for i in range(SHARDS):
        name = os.path.join(out, f"dicomhist-manifest-{i}-of-{SHARDS}.jsonl")
        paths.append({r["path"] for r in manifest_lines(name)} if os.path.exists(name) else set())
    return paths


class Submission:
    def __init__(self, cluster, tmp, script, export, binary):
        self.cluster, self.tmp, self.script = cluster, tmp, script
        self.export = export
        self.env = cluster.env({"PATH": os.path.dirname(os.path.abspath(binary)) + os.pathsep
                                + os.environ.get("PATH", "")})
        self.env.pop("SOURCE_DATE_EPOCH", None)  # as users run it

    def argv(self, out, export=None, script=None):
        return ["sbatch", f"--array=0-{SHARDS - 1}", "--cpus-per-task=1", "--mem=256M",
                "--wait", f"--export=ALL,EXPORT={export or self.export},OUT={out}",
                script or self.script]

    def start(self, out):
        return subprocess.Popen([slurm_cluster.which("sbatch"), *self.argv(out)[1:]],
                                cwd=self.tmp, env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def finish(self, p, timeout=300):
        out, err = p.communicate(timeout=timeout)
        job = int(out.split()[-1]) if out.startswith("Submitted batch job") else None
        return p.returncode, job, err

    def log(self, job, task):
        with open(os.path.join(self.tmp, "logs", f"equalize-{job}_{task}.log")) as f:
            return f.read()


def check_array(c, sub, cluster, out, whole):
    t0 = time.monotonic()
    rc, job, err = sub.finish(sub.start(out))
    print(f"array run: sbatch exit {rc} in {time.monotonic() - t0:.1f} s", flush=True)
    c.equal(rc, 0, f"sbatch --array=0-3 --wait exits 0 ({err.strip()})")
    c.equal(cluster.settled_job_states(job), {i: "COMPLETED" for i in range(SHARDS)},
            "every array task COMPLETED")
    paths = shard_paths(out)
    c.check(all(paths), f"every task did a shard of its own ({[len(p) for p in paths]} files)")
    c.check(all(not (paths[i] & paths[j]) for i in range(SHARDS) for j in range(i)),
            "the shards are disjoint")
    for i in range(SHARDS):
        log = sub.log(job, i)
        c.check(f"manifest {out}/dicomhist-manifest-{i}-of-{SHARDS}.jsonl" in log,
                f"task {i}'s log ends with shard {i}'s summary ({log.strip()[-200:]!r})")
    same_as_unsharded(c, out, whole, "array run")
    return [len(p) for p in paths]


def kill_one_task(c, sub, cluster, out, victim, expected):
    """Submits the array into out and cancels task `victim` once its manifest has some but not
    all of its `expected` lines. Returns the lines it had, or None when the task was too fast."""
    p = sub.start(out)
    name = os.path.join(out, f"dicomhist-manifest-{victim}-of-{SHARDS}.jsonl")
    had = None
    job = None
    end = time.monotonic() + 240
    while p.poll() is None and time.monotonic() < end:
        if job is None:  # the array's job id, from the private cluster's queue
            ids = cluster.run("squeue", "-h", "-r", "-o", "%F", check=False).stdout.split()
            job = int(ids[0]) if ids else None
        lines = whole_lines(name)
        if job is not None and 0 < lines < expected:
            cluster.run("scancel", f"{job}_{victim}")
            had = lines
            break
        time.sleep(0.02)
    rc, job, err = sub.finish(p)
    if had is None:
        return None, job
    lines = whole_lines(name)
    # Not sbatch's exit status: sbatch --wait counts a cancelled task as finished while it is
    # still COMPLETING, before slurmd has reported its processes gone and Slurm has set its exit
    # code, and then reads exit code 0 (seen once in CI: "sbatch exit 0", task 3 COMPLETING).
    # The settled state is what Slurm keeps and what the docs promise.
    at_return = cluster.job_states(job)
    states = cluster.settled_job_states(job)
    print(f"killed task {victim} with {had} of {expected} manifest lines ({lines} when it died); "
          f"sbatch exit {rc}; states {at_return} when sbatch returned, then {states}", flush=True)
    if lines >= expected:
        return None, job  # scancel came after its last series: not a mid-run kill
    c.equal(states, {i: ("CANCELLED" if i == victim else "COMPLETED") for i in range(SHARDS)},
            f"task {victim} CANCELLED mid-run, the others COMPLETED")
    return lines, job


def check_kill_and_resubmit(c, sub, cluster, tmp, whole, sizes):
    victim = max(range(SHARDS), key=lambda i: sizes[i])
    for attempt in range(3):
        out = os.path.join(tmp, f"out-killed{attempt}")
        lines, _ = kill_one_task(c, sub, cluster, out, victim, sizes[victim])
        if lines is not None:
            break
        print(f"attempt {attempt}: task {victim} finished before scancel reached it; again")
    else:
        c.check(False, f"task {victim} was never killed mid-run in 3 attempts")
        return
    done = {r["path"] for r in manifest_lines(
        os.path.join(out, f"dicomhist-manifest-{victim}-of-{SHARDS}.jsonl"))
        if r["status"] == "done"}
    before = {}
    for name in outputs(out):
        st = os.stat(os.path.join(out, name))
        before[name] = (st.st_ino, st.st_mtime_ns)
    c.check(len(before) < len(outputs(whole)), f"outputs missing after the kill "
                                               f"({len(before)} of {len(outputs(whole))})")
    rc, job, err = sub.finish(sub.start(out))
    c.equal(rc, 0, f"the array resubmitted: sbatch exit 0 ({err.strip()})")
    c.equal(cluster.settled_job_states(job), {i: "COMPLETED" for i in range(SHARDS)},
            "resubmitted: every task COMPLETED")
    after = {}
    for name in before:
        st = os.stat(os.path.join(out, name))
        after[name] = (st.st_ino, st.st_mtime_ns)
    c.equal(after, before, "outputs finished before the kill were not rewritten (inode, mtime)")
    log = sub.log(job, victim)
    c.check(f", {len(done)} done before;" in log,
            f"the killed task's rerun counts its {len(done)} finished files as done before "
            f"({log.strip()[-200:]!r})")
    for i in range(SHARDS):
        if i != victim:
            log = sub.log(job, i)
            c.check("0 files done, 0 failed, 0 skipped," in log,
                    f"task {i} had finished: its rerun writes nothing ({log.strip()[-160:]!r})")
    same_as_unsharded(c, out, whole, "killed and resubmitted")


def main():
    if len(sys.argv) != 3:
        sys.exit(f"usage: {sys.argv[0]} DICOMHIST_BINARY DOCS_BATCH_MD")
    binary, md = os.path.abspath(sys.argv[1]), sys.argv[2]
    why = slurm_cluster.missing()
    if why:
        t.skip(f"Slurm cannot start here: {why}")
    try:
        import numpy  # noqa: F401
        import pydicom  # noqa: F401
    except ImportError as e:
        t.skip(f"Python module missing: {e.name}")
    import archive_maker
    # SIGTERM (ctest stopped, a CI job cancelled) unwinds through the finally below, which stops
    # the cluster; SIGKILL cannot be caught, but the daemons die with this process (PDEATHSIG).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    c = t.Checks()
    tmp = tempfile.mkdtemp(prefix="dicomhist-slurm-")
    cluster = slurm_cluster.SlurmCluster()
    try:
        script = os.path.join(tmp, "dicomhist-equalize.sbatch")
        with open(script, "w") as f:
            f.write(script_from_docs(md))
        os.makedirs(os.path.join(tmp, "logs"))
        t0 = time.monotonic()
        export = archive_maker.make_archive(os.path.join(tmp, "archive"), 16, 24, 256,
                                            ("CT", "CR"))
        whole = os.path.join(tmp, "unsharded")
        env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
        r = subprocess.run([binary, "equalize", "--window", "percentile:1", "--jobs", "1",
                            "-o", whole, export], env=env, capture_output=True, text=True)
        c.equal(r.returncode, 0, f"the unsharded run ({r.stderr.strip()[-200:]})")
        t1 = time.monotonic()
        cluster.start()
        print(f"archive and unsharded run {t1 - t0:.1f} s; Slurm up in "
              f"{time.monotonic() - t1:.1f} s", flush=True)
        sub = Submission(cluster, tmp, script, export, binary)
        shown = sub.argv("$TMP/out", "$TMP/archive/EXPORT", "dicomhist-equalize.sbatch")
        c.check(docs_show_command(md, shown), f"{md} shows the command: {' '.join(shown)}")
        sizes = check_array(c, sub, cluster, os.path.join(tmp, "out"), whole)
        check_kill_and_resubmit(c, sub, cluster, tmp, whole, sizes)
    except Exception:
        print(cluster.log_tail(), file=sys.stderr)
        raise
    finally:
        cluster.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    c.finish()


if __name__ == "__main__":
    main()
