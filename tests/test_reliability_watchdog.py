"""No rank waits forever: every multi-rank command runs the watchdog, and it names the rank that stopped.

A rank is made to stop through ``tests/probe.py`` (``PROBE_STALL``): once its
watchdog runs it keeps making progress for a while, then sleeps for ever
outside MPI, as a rank stuck in a read would. The other ranks wait for it in
a collective, from the start: were waiting in a collective counted as a
stall, they would pass the bound first and be named instead. The bounds are
scaled to the machine's speed (``tests/machine_speed.py``); the launches'
timeouts are hang guards only. Stopped processes (SIGSTOP) and killed ones
are in ``tests/test_faults.py``.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import probe
from machine_speed import seconds as scaled
from mpi_util import run_cli
from mpiboost.data import format as fmt

pytestmark = pytest.mark.mpi


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    w = tmp_path_factory.mktemp("watchdog")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3000, 5)).astype(np.float32)
    fmt.write_dataset(w / "d.h5", X, np.where(X[:, 0] > 0, 1, -1))
    proc = run_cli(["train", "--algo", "adaboost", "--data", str(w / "d.h5"), "--rounds", "5", "--quiet",
                    "--model", str(w / "m.h5")])
    assert proc.returncode == 0, proc.stderr
    return w


def _command(name: str, w, tmp_path) -> list:
    return {
        "train": ["train", "--algo", "adaboost", "--data", str(w / "d.h5"), "--rounds", "1000", "--quiet",
                  "--model", str(tmp_path / "m.h5")],
        "predict": ["predict", "--model", str(w / "m.h5"), "--data", str(w / "d.h5"), "--out", str(tmp_path / "p.npy")],
        "evaluate": ["evaluate", "--model", str(w / "m.h5"), "--data", str(w / "d.h5")],
        "validate": ["validate", str(w / "d.h5")],
    }[name]


def _stalled(args: list, rank: int, bound: int, *, env=None):
    stall = {"PROBE_STALL": f"{rank}:{bound / 2}", **(env or {})}
    return probe.run(args, n=3, env=stall, timeout=bound * 3 + scaled(60))  # a hang guard


@pytest.mark.parametrize("command", ["train", "predict", "evaluate", "validate"])
def test_a_rank_stuck_outside_mpi_is_named_and_the_job_ends(files, tmp_path, command):
    bound = scaled(3)
    proc = _stalled([*_command(command, files, tmp_path), "--stall-timeout", str(bound)], rank=2, bound=bound)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert len(probe.lines(proc.stdout, f"watchdog on {bound}")) == 3  # every rank ran one
    assert probe.lines(proc.stdout, "rank 2: stuck")
    assert "mpiboost: error: rank 2 (an entity, host " in proc.stderr, proc.stderr[-2000:]
    assert "outside MPI without progress (stuck in I/O or a call)" in proc.stderr
    assert f"ending the job (rank 0 noticed; --stall-timeout {bound})" in proc.stderr
    for other in (0, 1):  # they waited in a collective the whole time: not stalls
        assert f"error: rank {other} " not in proc.stderr, proc.stderr[-2000:]
    assert probe.exits(proc.stdout) == {}  # ended by the watchdog, not by returning


def test_a_stuck_center_is_named_by_itself(files, tmp_path):
    bound = scaled(3)
    proc = _stalled([*_command("train", files, tmp_path), "--stall-timeout", str(bound)], rank=0, bound=bound)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "mpiboost: error: rank 0 (the center, host " in proc.stderr, proc.stderr[-2000:]
    assert "outside MPI without progress" in proc.stderr and "rank 0 noticed" in proc.stderr
    assert "error: rank 1 " not in proc.stderr and "error: rank 2 " not in proc.stderr


def test_the_bound_comes_from_the_option_the_environment_or_the_default(files, tmp_path):
    """Default 300 s; $MPIBOOST_STALL_TIMEOUT overrides it, --stall-timeout overrides both; 0 turns it off."""
    base = _command("evaluate", files, tmp_path)
    for extra, env, expect in [
        ([], {}, "watchdog on 300"),
        ([], {"MPIBOOST_STALL_TIMEOUT": "7"}, "watchdog on 7"),
        (["--stall-timeout", "11"], {"MPIBOOST_STALL_TIMEOUT": "7"}, "watchdog on 11"),
        ([], {"MPIBOOST_STALL_TIMEOUT": "0"}, "watchdog off"),
        (["--stall-timeout", "0"], {}, "watchdog off"),
    ]:
        proc = probe.run([*base, *extra], n=2, env={"MPIBOOST_STALL_TIMEOUT": "", **env}, timeout=scaled(120))
        assert proc.returncode == 0, proc.stderr
        assert len(probe.lines(proc.stdout, expect)) == 2, (extra, env, probe.lines(proc.stdout, "watchdog"))
    # the environment's value is checked like the option's
    proc = probe.run(base, n=2, env={"MPIBOOST_STALL_TIMEOUT": "soon"}, timeout=scaled(120))
    assert proc.returncode == 2 and "MPIBOOST_STALL_TIMEOUT='soon'" in proc.stderr
    assert not probe.worked(proc.stdout)


def test_the_process_exits_even_when_the_abort_cannot_reach_the_launcher(tmp_path):
    """The watchdog calls MPI_Abort; should that never return (a cut network), the process exits 2 anyway."""
    script = textwrap.dedent("""
        import threading, time, types

        def abort_that_never_returns(code):
            print("abort called", flush=True)
            while True:
                time.sleep(3600)

        from mpiboost import watchdog

        w = watchdog.Watchdog.__new__(watchdog.Watchdog)
        w.hosts, w.rank, w.option, w.timeout = ["here", "there"], 0, "--stall-timeout", 9.0
        w.job = types.SimpleNamespace(Abort=abort_that_never_returns)  # the job's communicator
        w._stall(1, "no heartbeat from it for 9 s")
        print("not reached", flush=True)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=scaled(60))  # a hang guard: without the hard exit it would wait for ever
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stdout.splitlines() == ["abort called"], proc.stdout  # exited while the abort still hung
    from mpiboost import watchdog

    assert watchdog.GRACE == 5.0  # the grace the docs give the abort before the hard exit
    assert "mpiboost: error: rank 1 (an entity, host there) stopped making progress" in proc.stderr
