#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""write_floor.py: the file system's floor under `dicomhist equalize`'s writes (issue 24,
session 20): FOLDERS x FILES files of BYTES each, written by THREADS threads as dicomhist writes a
derived file (dicom/dicom_write.cpp: a temporary file in the destination folder, fsync, rename,
then the folder fsynced), with no DICOM encoding and no computation; the same without the
folder's fsync, and with neither fsync. Prints the wall of each mode (best of ROUNDS, each after
the previous tree is removed and the file systems synced). Standard library only.

Usage: write_floor.py OUTDIR FOLDERS FILES BYTES THREADS [ROUNDS=2]
  e.g. write_floor.py /tmp/wf 52 40 524800 16     (the 52 x 40 x 512^2 archives' outputs)
"""
import os
import shutil
import sys
import tempfile
import threading
import time


def write_one(folder, name, data, mode):
    fd, tmp = tempfile.mkstemp(prefix=".dicomhist-", dir=folder)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fchmod(f.fileno(), 0o644)
        if mode != "none":
            os.fsync(f.fileno())
    os.rename(tmp, os.path.join(folder, name))
    if mode == "full":
        dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        os.fsync(dfd)
        os.close(dfd)


def one_round(out, folders, files, data, threads, mode):
    shutil.rmtree(out, ignore_errors=True)
    os.sync()
    paths = [os.path.join(out, f"SE{k:04d}") for k in range(folders)]
    for p in paths:
        os.makedirs(p)
    jobs = [(paths[k], f"IM{i:04d}") for k in range(folders) for i in range(files)]
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                if not jobs:
                    return
                folder, name = jobs.pop(0)
            write_one(folder, name, data, mode)

    t0 = time.time()
    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return time.time() - t0


def main():
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    out, folders, files, size, threads = sys.argv[1], *map(int, sys.argv[2:6])
    rounds = int(sys.argv[6]) if len(sys.argv) > 6 else 2
    data = os.urandom(size)
    total = folders * files * size / 1e6
    for mode, what in (("full", "fsync + rename + folder fsync (as dicomhist)"),
                       ("file", "fsync + rename, no folder fsync"),
                       ("none", "rename, no fsync")):
        walls = [one_round(out, folders, files, data, threads, mode) for _ in range(rounds)]
        print(f"write_floor: {folders * files} files, {total:.1f} MB, {threads} threads, {what}: "
              f"{min(walls):.3f}-{max(walls):.3f} s", flush=True)
    shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
