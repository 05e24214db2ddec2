"""A real two-host MPI job on one machine: two network namespaces joined by a veth pair.

``scripts/lib/netns-hosts.sh`` makes host A (10.213.0.1) and host B
(10.213.0.2), each with its own network stack and host name; Hydra (MPICH's
mpiexec) runs inside A and starts B's proxy through the script, used as its
ssh. Between the hosts MPI then has nothing but TCP over the veth pair, as
between two machines; the two ranks on each host still share memory.

* the TCP path is real: a message between the hosts shows up in the veth
  counters, MPI sees two nodes of two ranks;
* 2 hosts x 2 ranks give the same model, byte for byte, as ``mpiexec -n 4``
  and ``-n 1`` on one host (AdaBoost, SmoothBoost with sampling), over UCX and
  over libfabric;
* cutting the cable mid-run ends the whole job (``--stall-timeout``) with exit
  code 2 and a message, leaving no process behind.

Needs root (network namespaces) and Hydra; skipped otherwise. Every process
has a timeout; on a timeout its process group (and whatever is left in the
namespaces) is killed and the test fails.
"""
from __future__ import annotations

import ast
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

import pytest

import machine_speed
from mpi_util import ROOT, mpi_env, mpiexec

pytestmark = pytest.mark.mpi

NETNS = ROOT / "scripts" / "lib" / "netns-hosts.sh"
HOST_A, HOST_B = "10.213.0.1", "10.213.0.2"
IFACE = "mb0"
HOSTS = f"{HOST_A}:2,{HOST_B}:2"
# What makes MPICH talk TCP over the veth pair between the two hosts. Without
# it UCX (MPICH's default netmod) sees one machine (same boot id), and moves
# the data between the hosts through shared memory: nothing would cross.
TRANSPORTS = {
    "ucx": {"UCX_TLS": "tcp,self", "UCX_NET_DEVICES": IFACE},
    "ofi": {"MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": "tcp", "FI_TCP_IFACE": IFACE},
}
TIMEOUT = 60  # seconds, any one process
STALL_BASE = 5  # --stall-timeout of the link-down test on a machine of CI's speed (machine_speed scales it)


# ------------------------------------------------------------------ processes
def _kill_group(proc: subprocess.Popen) -> None:
    """End a process started in its own session, and everything in its process group."""
    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):  # SIGTERM first: mpiexec then ends its ranks
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run(cmd: Sequence[str], *, timeout: float = TIMEOUT, env: Optional[dict] = None, cwd=None):
    """Run ``cmd`` in a session of its own; past ``timeout`` kill its process group and fail."""
    proc = subprocess.Popen(
        [str(c) for c in cmd],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env if env is not None else mpi_env(),
        cwd=str(cwd or ROOT),
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        pytest.fail(f"timed out after {timeout} s: {' '.join(map(str, cmd))}\n{out[-2000:]}\n{err[-3000:]}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def ok(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    cmd = " ".join(proc.args)
    assert proc.returncode == 0, f"exit {proc.returncode}: {cmd}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


def mpiboost(*args) -> list[str]:
    return [sys.executable, "-m", "mpiboost", *map(str, args)]


# ------------------------------------------------------------------ hosts
class Hosts:
    """The two namespaces of one test session (names carry a unique id)."""

    def __init__(self) -> None:
        self.id = f"t{os.getpid()}"
        self.ns = [f"mpiboost-hA-{self.id}", f"mpiboost-hB-{self.id}"]
        self.env_id = {"MPIBOOST_NETNS_ID": self.id}

    def script(self, *args, timeout: float = 30) -> subprocess.CompletedProcess:
        return run(["bash", NETNS, *args], timeout=timeout, env={**os.environ, **self.env_id})

    def bytes(self) -> tuple[int, int]:
        """Bytes received and sent by host A's interface (all of them cross to B)."""
        fields = dict(kv.split("=") for kv in ok(self.script("bytes")).stdout.split())
        return int(fields["rx_bytes"]), int(fields["tx_bytes"])

    def pids(self) -> list[int]:
        """Live processes in either namespace (zombies waiting for their parent not counted)."""
        live = []
        for ns in self.ns:
            proc = run(["ip", "netns", "pids", ns], timeout=10)
            for pid in proc.stdout.split():
                try:
                    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
                except (OSError, IndexError):
                    continue
                if state != "Z":
                    live.append(int(pid))
        return live

    def exists(self) -> list[str]:
        listed = run(["ip", "netns", "list"], timeout=10).stdout.split()
        return [ns for ns in self.ns if ns in listed]

    def mpiexec_cmd(self, args: Sequence[str], *, extra: Sequence[str] = ()) -> list[str]:
        """``mpiexec`` run on host A over both hosts, 2 ranks each, B started through the script."""
        return [
            "bash", NETNS, "exec", "a", mpiexec(),
            "-launcher", "ssh", "-launcher-exec", NETNS,
            "-hosts", HOSTS, "-n", "4", *extra, *args,
        ]  # fmt: skip

    def env(self, transport: str) -> dict:
        return mpi_env({**self.env_id, **TRANSPORTS[transport]})


def _skip_reason() -> Optional[str]:
    if not sys.platform.startswith("linux"):
        return "network namespaces are Linux only"
    if os.geteuid() != 0:
        return "needs root: network namespaces (scripts/lib/netns-hosts.sh)"
    for tool in ("ip", "unshare", "bash"):
        if shutil.which(tool) is None:
            return f"'{tool}' not found"
    exe = mpiexec()
    if exe is None:
        return "no mpiexec"
    try:
        version = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{exe} --version failed: {exc}"
    if "HYDRA" not in version.upper():
        return f"{exe} is not Hydra (MPICH's mpiexec); the two-host rehearsal uses Hydra's ssh launcher"
    return None


@pytest.fixture(scope="module")
def hosts():
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    h = Hosts()
    proc = h.script("up")
    if proc.returncode != 0:
        h.script("down")
        pytest.skip(f"cannot make network namespaces here (`netns-hosts.sh up`: {proc.stderr.strip()[-500:]})")
    yield h
    h.script("down")
    left = h.exists()
    assert not left, f"namespaces left after `netns-hosts.sh down`: {left}"


@pytest.fixture
def link_up(hosts):
    """The cable is plugged in before and after the test."""
    ok(hosts.script("link", "up"))
    yield hosts
    ok(hosts.script("link", "up"))


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = tmp_path_factory.mktemp("two_hosts") / "lsd.h5"
    ok(run(mpiboost("synth", "longservedio", "--n", 20000, "--seed", 1, "--out", path)))
    return path


def export(model: Path) -> str:
    return ok(run(mpiboost("export", "--model", model, "--format", "json"))).stdout


# ------------------------------------------------------------------ tests
PROBE = """
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
node = comm.Split_type(MPI.COMM_TYPE_SHARED)
buf = np.full(1 << 20, comm.rank, dtype=np.float64)   # 8 MiB
if comm.rank == 0:
    comm.Send(buf, dest=2); comm.Recv(buf, source=2); assert buf[0] == 2
elif comm.rank == 2:
    other = np.empty_like(buf); comm.Recv(other, source=0); assert other[0] == 0; comm.Send(buf, dest=0)
names = comm.gather((MPI.Get_processor_name(), node.size))
if comm.rank == 0:
    print(names)
"""


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
def test_tcp_between_the_hosts(link_up, transport):
    """8 MiB each way between rank 0 (host A) and rank 2 (host B) cross the veth pair; MPI sees two nodes."""
    hosts = link_up
    rx0, tx0 = hosts.bytes()
    proc = ok(run(hosts.mpiexec_cmd([sys.executable, "-c", PROBE]), env=hosts.env(transport)))
    rx1, tx1 = hosts.bytes()
    names = ast.literal_eval(proc.stdout.strip().splitlines()[-1])  # [(host, ranks on its node)] per rank
    assert names == [("mpiboost-hA", 2)] * 2 + [("mpiboost-hB", 2)] * 2, names
    print(f"{transport}: veth of host A received {rx1 - rx0:,} bytes, sent {tx1 - tx0:,}")
    assert rx1 - rx0 >= 8 << 20 and tx1 - tx0 >= 8 << 20, (rx1 - rx0, tx1 - tx0)


TRAIN = {
    "adaboost": ["--algo", "adaboost", "--rounds", 20],
    "smoothboost-sample": ["--algo", "smoothboost", "--weak-learner", "sample", "--rounds", 20],
}


@pytest.mark.parametrize("algo", sorted(TRAIN))
def test_two_hosts_give_the_same_model(link_up, data, tmp_path, algo):
    """2 hosts x 2 ranks (UCX and libfabric over TCP) == mpiexec -n 4 == -n 1, byte for byte."""
    hosts = link_up
    train = ["train", *TRAIN[algo], "--data", data, "--seed", 1, "--quiet"]
    models = {}
    for n in (1, 4):
        models[f"local-{n}"] = tmp_path / f"local{n}.h5"
        ok(run([mpiexec(), "-n", n, *mpiboost(*train, "--model", models[f"local-{n}"])]))
    for transport in sorted(TRANSPORTS):
        model = models[f"2x2-{transport}"] = tmp_path / f"two-{transport}.h5"
        before = hosts.bytes()
        ok(run(hosts.mpiexec_cmd(mpiboost(*train, "--model", model)), env=hosts.env(transport)))
        after = hosts.bytes()
        print(f"{algo} 2x2 {transport}: veth rx {after[0] - before[0]:,} tx {after[1] - before[1]:,} bytes")
        assert after[0] > before[0] and after[1] > before[1]
    exported = {name: export(path) for name, path in models.items()}
    reference = exported["local-1"]
    assert json.loads(reference)
    for name, text in exported.items():
        assert text == reference, f"{name} differs from mpiexec -n 1"


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
def test_link_down_mid_run_ends_the_job(link_up, data, tmp_path, transport):
    """The cable is cut while training: every process of the job ends, mpiexec with exit code 2 and a message."""
    hosts = link_up
    metrics = tmp_path / "m.jsonl"
    rcdir = tmp_path / "rc"
    rcdir.mkdir()
    # A slow or loaded machine gets a longer stall bound (a busy rank must not pass for a cut one) and
    # longer hang guards; the promise checked is the exit, the message and that no process is left.
    stall, start_guard = machine_speed.seconds(STALL_BASE), machine_speed.seconds(30)
    train = mpiboost(
        "train", "--algo", "adaboost", "--rounds", 20000, "--data", data, "--model", tmp_path / "cut.h5",
        "--metrics", metrics, "--stall-timeout", stall, "--quiet",
    )  # fmt: skip
    # Each rank's own exit code, when it ends by itself (a rank its launcher kills
    # leaves no file, or a .tmp one: written, then renamed).
    record = f'"$@"; rc=$?; f={rcdir}/rank$PMI_RANK; echo $rc > $f.tmp && mv $f.tmp $f'
    wrapped = ["/bin/sh", "-c", record, "rank", *train]
    # Output to files, not pipes: a process left on host B must not hold mpiexec's output open.
    out_path, err_path = tmp_path / "stdout", tmp_path / "stderr"
    with open(out_path, "w") as out_f, open(err_path, "w") as err_f:
        proc = subprocess.Popen(
            hosts.mpiexec_cmd(wrapped),
            stdout=out_f,
            stderr=err_f,
            env=hosts.env(transport),
            cwd=str(ROOT),
            start_new_session=True,
        )
    err = lambda: err_path.read_text(errors="replace")[-3000:]  # noqa: E731
    try:
        deadline = time.monotonic() + start_guard
        while time.monotonic() < deadline and proc.poll() is None:
            if metrics.exists() and len(metrics.read_bytes().splitlines()) >= 3:
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"training did not start within {start_guard} s (exit {proc.poll()}):\n{err()}")
        ok(hosts.script("link", "down"))
        cut = time.monotonic()
        limit = stall + start_guard
        try:
            proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            pytest.fail(f"mpiexec still running {limit} s after the link went down:\n{err()}")
        ended = time.monotonic() - cut
        left = hosts.pids()
        while left and time.monotonic() - cut < limit:
            time.sleep(0.2)
            left = hosts.pids()
    finally:
        if proc.poll() is None:
            _kill_group(proc)
    print(f"link down after {len(metrics.read_bytes().splitlines())} rounds logged; mpiexec ended {ended:.1f} s later")
    assert proc.returncode == 2, (proc.returncode, err())
    assert "stopped making progress" in err(), err()
    assert not left, f"processes still running in the namespaces {limit} s after the cut: {left}"
    codes = {p.name: p.read_text().strip() for p in rcdir.iterdir() if p.suffix != ".tmp"}
    # The ranks the launcher could not reach (host B) end by themselves, with exit code 2.
    assert codes and set(codes.values()) == {"2"}, codes
    assert {"rank2", "rank3"} & set(codes), codes
