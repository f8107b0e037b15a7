#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""batch_rounds.py: `dicomhist equalize --stats` of several builds and devices over one archive,
interleaved round by round, each run's wall (the parent's view), its batch elapsed and its
workers' split by stage (issue 24, session 20). Standard library only: it runs on a bare GPU host,
which has neither `bc` nor the shim process_split.py preloads. Each run's output folder is
removed and the file systems synced before it starts.

Usage: batch_rounds.py ARCHIVE OUTDIR ROUNDS JOBS NAME=[ENV=VALUE:]DICOMHIST:DEVICE[:JOBS]...
  e.g. mine=/tmp/f/mine:cuda off=DICOMHIST_BATCH_WRITERS=0:/tmp/f/mine:cuda main=/tmp/f/main:cpu
  (a spec's own JOBS replaces the common one: cpu32=/tmp/f/mine:cpu:32)
Prints one line per run and, at the end, min-max per NAME of the wall, the batch elapsed and each
stage's share; exits 1 when a run fails.
"""
import os
import re
import shutil
import subprocess
import sys
import time

STAGES = ("read", "decode", "compute", "write", "other")


def parse(spec):
    name, rest = spec.split("=", 1)
    env = {}
    parts = rest.split(":")
    while "=" in parts[0]:
        key, value = parts.pop(0).split("=", 1)
        env[key] = value
    return name, env, parts[0], parts[1], int(parts[2]) if len(parts) > 2 else None


def run(archive, out, jobs, env, binary, device):
    # The previous run's outputs removed and flushed first, as bench_batch.sh does: without the
    # sync the deletion's writes land inside the next run (session 20 batch2: HTJ2K 1.28-1.43 s
    # into fresh folders, 1.54-1.71 s right after an unsynced removal of 1 GB).
    shutil.rmtree(out, ignore_errors=True)
    os.sync()
    args = [binary, "equalize", "--jobs", str(jobs), "--device", device, "--stats", "-o", out,
            archive]
    t0 = time.time()
    p = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       env=dict(os.environ, SOURCE_DATE_EPOCH="1700000000", **env))
    wall = time.time() - t0
    err = p.stderr.decode(errors="replace")
    if p.returncode != 0:
        sys.exit(f"batch_rounds: {' '.join(args)} exited {p.returncode}: {err[-600:]}")
    m = re.search(r"stats: ([\d.]+) s elapsed", err)
    split = {s: float(v) for s, v in re.findall(r"stats: (\w+) +([\d.]+) s wall", err)}
    extra = [l.split("stats: ", 1)[1] for l in err.splitlines()
             if "stats:" in l and ("writers busy" in l or "waiting for a GPU" in l)]
    return wall, float(m.group(1)) if m else float("nan"), split, extra


def main():
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    archive, outdir, rounds, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    specs = [parse(s) for s in sys.argv[5:]]
    seen = {}
    for r in range(rounds):
        for name, env, binary, device, own_jobs in specs:
            wall, elapsed, split, extra = run(archive, os.path.join(outdir, name),
                                              own_jobs or jobs, env, binary, device)
            seen.setdefault(name, []).append((wall, elapsed, split))
            busy = sum(split.get(s, 0) for s in STAGES) or 1
            shares = " ".join(f"{s} {split.get(s, 0):.2f}" for s in STAGES)
            print(f"round {r + 1} {name:10s} {device:5s} wall {wall:.3f} s batch {elapsed:.3f} s "
                  f"| {shares} (sum {busy:.2f}) | {'; '.join(extra)}", flush=True)
        shutil.rmtree(outdir, ignore_errors=True)
    print("summary (min-max over rounds):")
    for name, runs in seen.items():
        walls = [w for w, _, _ in runs]
        batches = [e for _, e, _ in runs]
        shares = []
        for s in ("decode", "compute", "write"):
            pct = [100 * sp.get(s, 0) / (sum(sp.get(x, 0) for x in STAGES) or 1)
                   for _, _, sp in runs]
            shares.append(f"{s} {min(pct):.0f}-{max(pct):.0f}%")
        print(f"  {name:10s} wall {min(walls):.3f}-{max(walls):.3f} s, batch "
              f"{min(batches):.3f}-{max(batches):.3f} s, {', '.join(shares)}")


if __name__ == "__main__":
    main()
