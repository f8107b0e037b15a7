# SPDX-License-Identifier: MIT
"""A real Orthanc for the plugin's tests: started as a child on 127.0.0.1 with a free port, a
temporary storage folder and the built plugin; always stopped (SIGTERM, then SIGKILL after a
timeout), whatever the test does. Requests go through urllib, answers are JSON."""

import ctypes
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

SKIP = 77


def free_port():
    """A port nobody listens on now (bind to 0, read it, release it); Orthanc 1.10.1 cannot be
    told to bind to a port it picks, so a start that loses the race is retried."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent():
    """In the child before exec: Orthanc gets SIGKILL if the test process dies first (killed by
    ctest's timeout, say), so no Orthanc outlives its test."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class HttpError(Exception):
    def __init__(self, status, body):
        super().__init__(f"HTTP {status}: {body[:300]!r}")
        self.status = status
        self.body = body

    def json(self):
        return json.loads(self.body)


class Orthanc:
    def __init__(self, binary, plugin, workdir, extra_config=None):
        self.binary = binary
        self.plugin = os.path.abspath(plugin)
        self.workdir = workdir
        self.extra = extra_config or {}
        self.proc = None
        self.port = None
        self.log_path = os.path.join(workdir, "orthanc.log")

    # ---------------------------------------------------------------- life

    def config(self, port):
        storage = os.path.join(self.workdir, "db")
        cfg = {
            "Name": "dicomhist-test",
            "StorageDirectory": storage,
            "IndexDirectory": storage,
            "TemporaryDirectory": os.path.join(self.workdir, "tmp"),
            "HttpPort": port,
            "RemoteAccessAllowed": False,
            "AuthenticationEnabled": False,
            "DicomServerEnabled": False,
            "WebDavEnabled": False,
            "StableAge": 1,
            "HttpDescribeErrors": True,
            "Plugins": [self.plugin],
        }
        cfg.update(self.extra)
        return cfg

    def start(self, timeout=20):
        os.makedirs(os.path.join(self.workdir, "tmp"), exist_ok=True)
        for _attempt in range(5):
            port = free_port()
            path = os.path.join(self.workdir, "orthanc.json")
            with open(path, "w") as f:
                json.dump(self.config(port), f)
            log = open(self.log_path, "a")
            self.proc = subprocess.Popen([self.binary, "--verbose", path], stdout=log,
                                         stderr=subprocess.STDOUT, cwd=self.workdir,
                                         preexec_fn=_die_with_parent)
            log.close()
            self.port = port
            if self._wait_ready(timeout):
                plugins = self.get("/plugins")
                if "dicomhist" not in plugins:
                    raise RuntimeError(f"the plugin was not loaded: /plugins = {plugins}\n"
                                       + self.log_tail())
                return self
            self.kill()  # lost the port race, or failed: try another port
        raise RuntimeError("Orthanc did not start:\n" + self.log_tail())

    def _wait_ready(self, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                return False
            try:
                self.get("/system")
                return True
            except (OSError, HttpError):
                time.sleep(0.1)
        return False

    def stop(self, timeout=20):
        """SIGTERM and wait; returns the seconds it took. Kills after timeout."""
        if not self.proc:
            return 0.0
        t0 = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                raise RuntimeError(f"Orthanc did not stop within {timeout} s; killed")
        self.proc = None
        return time.monotonic() - t0

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def log_tail(self, lines=60):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        try:
            self.stop()
        finally:
            self.kill()

    # ---------------------------------------------------------------- requests

    def request(self, method, uri, body=None, timeout=120, raw=False):
        url = f"http://127.0.0.1:{self.port}{uri}"
        data = body
        if body is not None and not isinstance(body, (bytes, bytearray)):
            data = json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                payload = r.read()
        except urllib.error.HTTPError as e:
            raise HttpError(e.code, e.read()) from None
        if raw:
            return payload
        return json.loads(payload) if payload else None

    def get(self, uri, **kw):
        return self.request("GET", uri, **kw)

    def post(self, uri, body=None, **kw):
        return self.request("POST", uri, body if body is not None else b"", **kw)

    def delete(self, uri, **kw):
        return self.request("DELETE", uri, **kw)

    def upload(self, path):
        with open(path, "rb") as f:
            return self.post("/instances", f.read())
