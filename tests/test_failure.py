"""One rank's failure ends the whole job: exit code, message, no hang."""
import sys
import textwrap
import time

import numpy as np
import pytest

from mpi_util import run_cli, run_script
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
    t0 = time.monotonic()
    proc = run_cli(["validate", str(path)], n=3, timeout=60)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 2, proc.stderr
    assert elapsed < 30
    assert "bad.h5" in proc.stderr and "row 160" in proc.stderr and "5 is not an index" in proc.stderr
    assert "[rank 1]" in proc.stderr
    assert proc.stderr.count("mpiboost: error:") == 1  # printed once, by the center


def test_good_input_validates(tmp_path):
    path = tmp_path / "good.h5"
    fmt.write_dataset(path, np.zeros((30, 2)), np.ones(30))
    proc = run_cli(["validate", str(path)], n=3, timeout=60)
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
    t0 = time.monotonic()
    proc = run_script(script, 3, timeout=60)
    assert time.monotonic() - t0 < 30
    assert proc.returncode == code, (proc.returncode, proc.stderr[-2000:])
    assert ("rank-local bad input" if kind == "input" else "RuntimeError: rank-local bug") in proc.stderr


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
