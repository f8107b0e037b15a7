#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Where a batch command's wall time goes outside its batch (issue 24, session 18): runs
`dicomhist equalize --jobs JOBS --device D --stats` over ARCHIVE for each device, ROUNDS times
interleaved, with bench/process_split_shim.c preloaded, and splits each wall into exec -> the
shim's start stamp, -> the batch's start (the `--stats` line's arrival less its elapsed seconds),
the batch, -> the shim's end stamp (after main and the libraries' destructors), -> the parent's
wait (the kernel's teardown of the process: the GPU driver's share of it).

Usage: process_split.py DICOMHIST SHIM ARCHIVE OUTDIR [DEVICES=cpu,cuda,auto] [ROUNDS=3] [JOBS=16]
DICOMHIST may be several commands, NAME=PATH,NAME=PATH (session 19: a branch against main's
build), interleaved with the devices round by round; with SPLIT_STATS=FILE in the environment
each run's `--stats` lines (the workers' time per stage and device) are appended to FILE.
"""
import os
import re
import shutil
import subprocess
import sys
import time


def split(args, shim):
    env = dict(os.environ, LD_PRELOAD=shim)
    t0 = time.time()
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    start = end = stats_at = elapsed = None
    stats = []
    for raw in p.stderr:
        arrived = time.time()
        line = raw.decode(errors="replace")
        if "stats:" in line:
            stats.append(line)
        m = re.match(r"SPLIT (start|end) ([\d.]+)", line)
        if m:
            if m.group(1) == "start":
                start = float(m.group(2))
            else:
                end = float(m.group(2))
        m = re.search(r"stats: ([\d.]+) s elapsed", line)
        if m:
            elapsed, stats_at = float(m.group(1)), arrived
    rc = p.wait()
    t1 = time.time()
    if rc != 0 or None in (start, elapsed):
        sys.exit(f"process_split: {' '.join(args)} failed (rc {rc}) or printed no stamps")
    if end is None:  # a command that leaves by _exit runs no destructor: all of it is "to end"
        end = t1
    batch_start = stats_at - elapsed
    if os.environ.get("SPLIT_STATS"):
        with open(os.environ["SPLIT_STATS"], "a") as log:
            log.write(f"## {' '.join(args)}\n" + "".join(stats))
    return (t1 - t0, start - t0, batch_start - start, elapsed, end - stats_at, t1 - end)


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    exes = [e.split("=", 1) if "=" in e else ["dicomhist", e] for e in sys.argv[1].split(",")]
    shim, archive, out = sys.argv[2:5]
    devices = (sys.argv[5] if len(sys.argv) > 5 else "cpu,cuda,auto").split(",")
    rounds = int(sys.argv[6]) if len(sys.argv) > 6 else 3
    jobs = sys.argv[7] if len(sys.argv) > 7 else "16"
    shim = os.path.abspath(shim)
    keys = [(name, d) for name, _ in exes for d in devices]
    rows = {k: [] for k in keys}
    for _ in range(rounds):
        for name, exe in exes:
            for d in devices:
                shutil.rmtree(out, ignore_errors=True)
                rows[(name, d)].append(split([exe, "equalize", "--jobs", jobs, "--device", d,
                                              "--stats", "-o", out, archive], shim))
    shutil.rmtree(out, ignore_errors=True)
    print("| command | device | wall s | exec to start | start to batch | batch (elapsed) | "
          "batch to end | end to exit |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, d in keys:
        cols = list(zip(*rows[(name, d)]))
        print(f"| {name} | {d} | " +
              " | ".join(f"{min(c):.3f}-{max(c):.3f}" for c in cols) + " |")


if __name__ == "__main__":
    main()
