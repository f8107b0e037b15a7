# SPDX-License-Identifier: MIT
"""What the Orthanc plugin's tests share: their arguments, skipping where Orthanc, the plugin
or the real files are absent, and the command's --json output with its file paths renamed to
the Orthanc IDs the plugin answers with, so both can be compared field for field."""

import os
import shutil
import signal
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))

import cli_testlib  # noqa: E402
from cli_testlib import Checks, run, skip  # noqa: E402,F401
from orthanc_server import Orthanc  # noqa: E402


def parse_argv():
    """argv: Orthanc's binary, the plugin, the dicomhist command, the real files' folder."""
    if len(sys.argv) != 5:
        print(f"usage: {sys.argv[0]} ORTHANC PLUGIN DICOMHIST SHARED_DICOM", file=sys.stderr)
        sys.exit(2)
    orthanc, plugin, cli, shared = sys.argv[1:]
    if not os.access(orthanc, os.X_OK):
        skip(f"no Orthanc at {orthanc} (Debian's orthanc package)")
    if not os.path.isfile(plugin):
        skip(f"the plugin {plugin} was not built")
    cli_testlib.require_shared(shared)
    return orthanc, plugin, cli, shared


def command_json(cli, *args):
    """The command's --json records (one per line)."""
    r = run(cli, *args, "--json")
    if r.rc != 0:
        raise RuntimeError(f"{r!r} failed: {r.err}")
    return r.json_lines()


def renamed(record, names):
    """A command record with every path in `names` (file or folder -> Orthanc ID) replaced."""
    out = dict(record)
    for key in ("path", "fixed", "moving"):
        if key in out and out[key] in names:
            out[key] = names[out[key]]
    if isinstance(out.get("slices"), list):  # info has a count, histogram a list
        out["slices"] = [dict(s, source=names.get(s["source"], s["source"]))
                         for s in out["slices"]]
    if "warnings" in out:
        warnings = []
        for w in out["warnings"]:
            for path in sorted(names, key=len, reverse=True):
                w = w.replace(path + "/", "").replace(path, names[path])
            warnings.append(w)
        out["warnings"] = warnings
    return out


TIME_LIMIT = 240  # seconds; ctest's TIMEOUT for these tests is 300


def run_against_orthanc(checks, config, prefix):
    """The body of every test: reads argv, starts Orthanc with the plugin and `config`, calls
    checks(c, server, cli, shared, work), and whatever happens stops Orthanc, removes the
    temporary folder and exits with the checks' verdict (0, 1, or 77 when skipped)."""
    orthanc_bin, plugin, cli, shared = parse_argv()
    try:
        import numpy  # noqa: F401
        import pydicom  # noqa: F401
    except ImportError as e:
        skip(f"Python module missing: {e.name}")
    c = Checks()
    work = tempfile.mkdtemp(prefix=prefix)

    def too_long(signum, frame):
        raise TimeoutError(f"the test ran past {TIME_LIMIT} s")
    signal.signal(signal.SIGALRM, too_long)  # under ctest's TIMEOUT, so `finally` still runs
    signal.alarm(TIME_LIMIT)
    server = Orthanc(orthanc_bin, plugin, work, config)
    try:
        server.start()
        checks(c, server, cli, shared, work)
    except Exception as e:  # a crash of the harness is a failure, shown with Orthanc's log
        traceback.print_exc()
        c.check(False, f"unexpected {type(e).__name__}: {e}\n{server.log_tail(30)}")
    finally:
        try:
            server.stop()
        finally:
            server.kill()
            shutil.rmtree(work, ignore_errors=True)
    c.finish()
