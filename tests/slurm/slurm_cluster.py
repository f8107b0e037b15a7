# SPDX-License-Identifier: MIT
"""slurm_cluster.py: a real one-node Slurm cluster for a test, from Debian's packages.

munged, slurmctld and slurmd run as children of the test, in the foreground, with everything
under one temporary folder: their own munge key and socket, slurm.conf (free loopback ports for
SlurmctldPort and SlurmdPort, state, spool, pid and log files), NodeName=localhost with this
machine's CPUs and memory as `slurmd -C` measures them. Process tracking by /proc
(proctrack/linuxproc) and no task plugin (task/none): no cgroups, no systemd; the machine's
/etc/slurm and /etc/munge (and any munged or Slurm already running there) are left alone. The clients (sbatch, squeue, scancel,
scontrol, sinfo) find the cluster through SLURM_CONF in `env()`.

stop() always leaves nothing behind: it cancels every job, stops the daemons (SIGTERM, then
SIGKILL), kills any process of this cluster still alive and removes the folder. A process is
the cluster's when it has the marker variable DH_SLURM_CLUSTER=<folder>, which every job
inherits, or an open file under the folder (slurmstepd keeps slurmd's log open). Each daemon
also gets SIGKILL if the test process dies first. Needs root (slurmd starts job steps as the
submitting user) and the binaries; where either is missing, `missing()` says why and the test
skips.
"""
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

BINARIES = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "scancel",
            "scontrol", "sinfo")
SBIN = "/usr/sbin"


def which(name):
    return shutil.which(name) or shutil.which(name, path=SBIN + os.pathsep + "/usr/bin")


def missing():
    """Why a cluster cannot start here (a text), or None."""
    if os.geteuid() != 0:
        return "not root (slurmd must run as root to start job steps)"
    absent = [b for b in BINARIES if not which(b)]
    if absent:
        return f"not installed: {' '.join(absent)} (Debian: slurmctld slurmd slurm-client munge)"
    return None


def free_ports(count):
    """Ports nobody listens on now, on 127.0.0.1 (bound to 0 together, then released)."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _die_with_parent():
    """In the daemon before exec: SIGKILL when the test dies first (a ctest timeout, say)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class SlurmCluster:
    def __init__(self):
        # Its own folder in the system's temporary folder: munged wants every folder above its
        # socket searchable by all, which a test's private (0700) folder is not.
        self.dir = tempfile.mkdtemp(prefix="dicomhist-slurm-cluster-")
        os.chmod(self.dir, 0o755)
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.socket = os.path.join(self.dir, "munge", "munge.socket")
        self.logs = os.path.join(self.dir, "log")
        self.daemons = {}  # name -> Popen

    # ------------------------------------------------------------------ clients

    def env(self, extra=None):
        env = dict(os.environ, SLURM_CONF=self.conf, DH_SLURM_CLUSTER=self.dir)
        env.update(extra or {})
        return env

    def run(self, *args, check=True, timeout=120, **kw):
        p = subprocess.run([which(args[0]), *args[1:]], capture_output=True, text=True,
                           env=kw.pop("env", None) or self.env(), timeout=timeout, **kw)
        if check and p.returncode != 0:
            raise RuntimeError(f"{' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
        return p

    def job_states(self, job):
        """array task id -> state (COMPLETED, CANCELLED, FAILED, ...) of an array job."""
        out = self.run("scontrol", "-o", "show", "job", str(job)).stdout
        states = {}
        for line in out.splitlines():
            fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
            if "ArrayTaskId" in fields:
                states[int(fields["ArrayTaskId"])] = fields["JobState"]
        return states

    def settled_job_states(self, job, timeout=60):
        """job_states once no task is COMPLETING. A cancelled task shows COMPLETING until slurmd
        reports its processes gone, and only then does Slurm record its state and exit code."""
        end = time.monotonic() + timeout
        while True:
            states = self.job_states(job)
            if not any("COMPLETING" in s for s in states.values()) or time.monotonic() > end:
                return states
            time.sleep(0.2)

    # ------------------------------------------------------------------ life

    def start(self, timeout=60):
        for sub in ("munge", "state", "spool", "log"):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        # munged wants its socket folder searchable by all, its key readable by itself only.
        os.chmod(os.path.join(self.dir, "munge"), 0o755)
        key = os.path.join(self.dir, "munge", "munge.key")
        subprocess.run([which("mungekey"), "--create", f"--keyfile={key}"], check=True)
        self._spawn("munged", [which("munged"), "--foreground", f"--socket={self.socket}",
                               f"--key-file={key}",
                               f"--pid-file={os.path.join(self.dir, 'munge', 'munged.pid')}",
                               f"--seed-file={os.path.join(self.dir, 'munge', 'munged.seed')}"])
        self._wait(lambda: os.path.exists(self.socket), 10, "munged did not create its socket")
        with open(self.conf, "w") as f:
            f.write(self.config(*free_ports(2)))
        self._spawn("slurmctld", [which("slurmctld"), "-D", "-f", self.conf])
        self._spawn("slurmd", [which("slurmd"), "-D", "-N", "localhost", "-f", self.conf])
        self._wait(self._node_idle, timeout, "the node did not become idle")
        return self

    def node_line(self):
        """This machine's NodeName line as slurmd measures it, named localhost."""
        out = subprocess.run([which("slurmd"), "-C"], capture_output=True, text=True,
                             check=True).stdout.split("\n")[0]
        fields = [f for f in out.split() if not f.startswith("NodeName=")]
        return " ".join(["NodeName=localhost", "NodeAddr=127.0.0.1", *fields, "State=UNKNOWN"])

    def config(self, ctld_port, slurmd_port):
        d = self.dir
        return "\n".join([
            "# A one-node test cluster (tests/slurm/slurm_cluster.py); everything under " + d,
            "ClusterName=dicomhist-test",
            "SlurmctldHost=localhost(127.0.0.1)",
            f"SlurmctldPort={ctld_port}",
            f"SlurmdPort={slurmd_port}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.socket}",
            f"StateSaveLocation={d}/state",
            f"SlurmdSpoolDir={d}/spool",
            f"SlurmctldPidFile={d}/slurmctld.pid",
            f"SlurmdPidFile={d}/slurmd.pid",
            f"SlurmctldLogFile={d}/log/slurmctld.log",
            f"SlurmdLogFile={d}/log/slurmd.log",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "MpiDefault=none",
            "SchedulerType=sched/backfill",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory",
            "ReturnToService=2",
            "KillWait=5",
            "MailProg=/bin/true",
            self.node_line(),
            "PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP",
            ""])

    def _spawn(self, name, argv):
        log = open(os.path.join(self.logs, f"{name}.out"), "w")
        self.daemons[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                              stdin=subprocess.DEVNULL, cwd=self.dir,
                                              env=self.env(), preexec_fn=_die_with_parent)
        log.close()

    def _node_idle(self):
        for name, p in self.daemons.items():
            if p.poll() is not None:
                raise RuntimeError(f"{name} exited with {p.returncode}:\n{self.log_tail()}")
        p = self.run("sinfo", "-h", "-N", "-o", "%T", check=False, timeout=10)
        return p.returncode == 0 and p.stdout.strip() == "idle"

    def _wait(self, ready, timeout, what):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if ready():
                return
            time.sleep(0.2)
        raise RuntimeError(f"{what} within {timeout} s:\n{self.log_tail()}")

    def log_tail(self, lines=25):
        out = []
        for name in sorted(os.listdir(self.logs)) if os.path.isdir(self.logs) else []:
            with open(os.path.join(self.logs, name), errors="replace") as f:
                tail = f.read().splitlines()[-lines:]
            out.append(f"--- {name}\n" + "\n".join(tail))
        return "\n".join(out)

    def stop(self):
        """Cancels the jobs, stops the daemons, kills what is left of this cluster."""
        ctld = self.daemons.get("slurmctld")
        if ctld and ctld.poll() is None:
            try:
                self.run("scancel", "--full", "--user=root", check=False, timeout=20)
                end = time.monotonic() + 20
                while time.monotonic() < end and self.run(
                        "squeue", "-h", "-t", "PD,R,CG,S", check=False, timeout=10).stdout.strip():
                    time.sleep(0.2)
            except (OSError, subprocess.SubprocessError):
                pass
        for name in ("slurmd", "slurmctld", "munged"):
            p = self.daemons.get(name)
            if p and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self._kill_leftovers()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _kill_leftovers(self):
        """SIGKILL to every process (but this one) that carries this cluster's marker or holds
        a file under its folder: job scripts, dicomhist, slurmstepd."""
        marker = f"DH_SLURM_CLUSTER={self.dir}".encode()
        for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
            if pid == os.getpid():
                continue
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    ours = marker in f.read().split(b"\0")
                if not ours:
                    fds = f"/proc/{pid}/fd"
                    ours = any(os.readlink(os.path.join(fds, fd)).startswith(self.dir + "/")
                               for fd in os.listdir(fds))
                if ours:
                    os.kill(pid, signal.SIGKILL)
            except (OSError, ValueError):
                continue  # gone meanwhile, or not ours to read
