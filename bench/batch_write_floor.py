#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""batch_write_floor.py: the write stage's floor on this machine's disk, for the batch's
durability choices (issue 24, session 17). Writes SERIES folders of SLICES files of BYTES each
(random bytes, as a derived CT slice is to the disk) on THREADS threads, a series per thread at
a time, the way `dicomhist equalize` writes its outputs, under three policies:

  per-file    what dicomhist did until session 21 (dicom/dicom_write.cpp): each file written
              under a hidden temporary name, fchmod, fsync, linked into place, then its folder
              fsync'ed;
  per-series  every file of a series written under its temporary name, then each fsync'ed, then
              all linked into place and the folder fsync'ed once (the same guarantee: a file under
              its final name is complete and durable once the series is reported); dicomhist
              since session 21 is between the two: each file fsync'ed and renamed as it is
              written, the folder fsync'ed once after the series' last file;
  none        written and renamed, nothing flushed (what `cp -r` does; not durable).

Prints the seconds of each (median of REPEAT, the policies interleaved run by run) and its MB/s.
Usage: batch_write_floor.py DIR [SERIES SLICES BYTES THREADS REPEAT]
"""
import os
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor


def write_series(folder, slices, payload, policy):
    os.makedirs(folder, exist_ok=True)
    temps = []
    for i in range(slices):
        fd, tmp = tempfile.mkstemp(prefix=".dicomhist-", dir=folder)
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            os.fchmod(f.fileno(), 0o644)
            if policy == "per-file":
                f.flush()
                os.fsync(f.fileno())
        final = os.path.join(folder, "IM%04d" % i)
        if policy == "per-file":
            os.link(tmp, final)
            os.unlink(tmp)
            dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
            os.fsync(dfd)
            os.close(dfd)
        else:
            temps.append((tmp, final))
    if policy == "per-series":
        for tmp, _ in temps:
            fd = os.open(tmp, os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)
    for tmp, final in temps:
        os.link(tmp, final)
        os.unlink(tmp)
    if policy == "per-series":
        dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        os.fsync(dfd)
        os.close(dfd)


def run(root, series, slices, payload, threads, policy):
    shutil.rmtree(root, ignore_errors=True)
    os.sync()
    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda s: write_series(os.path.join(root, "SE%04d" % s), slices, payload,
                                             policy), range(series)))
    return time.perf_counter() - start


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    root = os.path.join(sys.argv[1], "write-floor")
    series, slices, size, threads, repeat = ([int(a) for a in sys.argv[2:7]] +
                                             [52, 40, 512 * 512 * 2 + 1800, 16, 3][len(sys.argv) - 2:])
    payload = os.urandom(size)
    policies = ["per-file", "per-series", "none"]
    times = {p: [] for p in policies}
    for _ in range(repeat):
        for p in policies:
            times[p].append(run(root, series, slices, payload, threads, p))
    shutil.rmtree(root, ignore_errors=True)
    total = series * slices * size
    print("write floor: %d series x %d files x %d bytes on %d threads (%.0f MB), median of %d"
          % (series, slices, size, threads, total / 1e6, repeat))
    for p in policies:
        t = statistics.median(times[p])
        print("write floor: %-10s %7.3f s %8.1f MB/s  (runs: %s)"
              % (p, t, total / t / 1e6, " ".join("%.3f" % x for x in times[p])))


if __name__ == "__main__":
    main()
