"""One rank's failure ends the whole job: exit code, message, no hang.

Every launch has a timeout that is a hang guard only (a rank left waiting in
a collective would never end); what is asserted is the exit code, the
message, and -- through ``tests/probe.py`` -- whether every rank returned
cleanly (an agreed error) or the job was aborted.
"""
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import probe
from machine_speed import seconds as scaled
from mpi_util import mpi_env, mpiexec_cmd, run_cli, run_script
from mpiboost.data import format as fmt

pytestmark = pytest.mark.mpi


def _bad_file(path, n=300, bad_row=160):
    X = np.zeros((n, 4), dtype=np.float32)
    y = np.ones(n, dtype=np.int8)
    y[bad_row] = 5  # rows 100..199 belong to rank 1 of 3; y indexes the 2 classes: 5 is out of range
    fmt.write_dataset(path, X, y, classes=["no", "yes"])


def test_bad_input_on_one_rank_ends_all_ranks(tmp_path):
    path = tmp_path / "bad.h5"
    _bad_file(path)
    proc = probe.run(["validate", str(path)], n=3, timeout=scaled(60))  # the timeout: a hang guard
    assert proc.returncode == 2, proc.stderr
    assert "bad.h5" in proc.stderr and "row 160" in proc.stderr and "5 is not an index" in proc.stderr
    assert "[rank 1]" in proc.stderr
    assert proc.stderr.count("mpiboost: error:") == 1  # printed once, by the center, naming the rank
    # the ranks check their blocks together: an agreed error, every rank returns 2
    assert probe.exits(proc.stdout) == {0: (2, True), 1: (2, True), 2: (2, True)}


def test_an_error_every_rank_sees_is_agreed(tmp_path):
    """A file schema every rank reads alike: every rank returns 2 cleanly, one message (rank 0's)."""
    junk = tmp_path / "junk.h5"
    junk.write_text("not hdf5")
    proc = probe.run(["train", "--algo", "adaboost", "--data", str(junk), "--rounds", "3", "--quiet",
                      "--model", str(tmp_path / "m.h5")], n=3, timeout=scaled(60))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("mpiboost: error:") == 1 and "junk.h5" in proc.stderr, proc.stderr
    assert probe.exits(proc.stdout) == {0: (2, True), 1: (2, True), 2: (2, True)}
    assert not probe.lines(proc.stdout, ": round ")


def test_good_input_validates(tmp_path):
    path = tmp_path / "good.h5"
    fmt.write_dataset(path, np.zeros((30, 2)), np.ones(30))
    proc = run_cli(["validate", str(path)], n=3, timeout=scaled(60))
    assert proc.returncode == 0, proc.stderr
    assert '"rows_per_rank": {"0": 10, "1": 10, "2": 10}' in proc.stdout


@pytest.mark.parametrize("kind,code", [("input", 2), ("bug", 1)])
def test_rank_local_exception_aborts_job(kind, code):
    """An error raised on one rank while the others wait in a collective ends every rank."""
    script = textwrap.dedent(
        f"""
        from mpiboost.cli import guarded
        from mpiboost.comm import world
        from mpiboost.errors import InputError

        def job():
            comm = world()
            if comm.rank == 1:
                if "{kind}" == "input":
                    raise InputError("rank-local bad input")
                raise RuntimeError("rank-local bug")
            comm.barrier()   # the others would wait here forever
            return 0

        raise SystemExit(guarded(job))
        """
    )
    proc = run_script(script, 3, timeout=scaled(60))  # the timeout: a hang guard (ranks 0 and 2 wait for ever)
    assert proc.returncode == code, (proc.returncode, proc.stderr[-2000:])
    assert "rank 1" in proc.stderr  # the MPI library's abort message names the rank that aborted
    if kind == "input":
        assert "mpiboost: error: rank-local bad input" in proc.stderr and "Traceback" not in proc.stderr
    else:  # a bug: its traceback is printed
        assert "Traceback (most recent call last)" in proc.stderr and "RuntimeError: rank-local bug" in proc.stderr


@pytest.mark.parametrize("ranks", [0, 2])
def test_an_interrupt_exits_130(tmp_path, ranks):
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it) during the rounds: exit code 130."""
    fmt.write_dataset(tmp_path / "d.h5", np.random.default_rng(0).standard_normal((2000, 4)),
                      np.where(np.arange(2000) % 2, 1, -1))
    met = tmp_path / "met.jsonl"
    args = [sys.executable, "-m", "mpiboost", "train", "--algo", "adaboost", "--data", str(tmp_path / "d.h5"),
            "--rounds", "1000000", "--model", str(tmp_path / "m.h5"), "--metrics", str(met), "--quiet"]
    cmd = mpiexec_cmd(ranks, args) if ranks else args
    # A job started in the background by a shell inherits SIGINT ignored, and Python then installs no
    # KeyboardInterrupt handler: the child gets the default disposition back, as a terminal's job has it.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=mpi_env(),
                            start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + scaled(60)  # a hang guard
        while not (met.exists() and met.read_text().count("\n") >= 5):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()[-2000:]
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=scaled(60))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130, (proc.returncode, err[-2000:])
    assert "Traceback" not in err, err[-2000:]


def test_serial_commands_exit_code_2(tmp_path):
    proc = run_cli(["info", str(tmp_path / "nope.h5")])
    assert proc.returncode == 2 and "nope.h5: no such file" in proc.stderr
    junk = tmp_path / "junk.h5"
    junk.write_text("not hdf5")
    proc = run_cli(["info", str(junk)])
    assert proc.returncode == 2 and "not a readable HDF5 file" in proc.stderr
    proc = run_cli(["synth", "longservedio", "--n", "10", "--noise", "2", "--out", str(tmp_path / "x.h5")])
    assert proc.returncode == 2 and "--noise" in proc.stderr
    proc = run_cli(["validate", str(junk), "--dedicated-coordinator"])
    assert proc.returncode == 2
