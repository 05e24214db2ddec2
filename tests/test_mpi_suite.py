"""Re-run the collective test modules under ``mpiexec -n 2, 3, 4``.

The same test bodies pass under plain pytest (size 1) and on several ranks,
where every rank checks its part against the single-process result.
"""
import sys

import pytest

from collective import IN_MPI_RUN
from mpi_util import ROOT, run_mpi

COLLECTIVE_MODULES = ["tests/test_comm.py", "tests/test_load.py", "tests/test_protocol.py", "tests/test_algorithms.py"]

pytestmark = [
    pytest.mark.mpi,
    pytest.mark.skipif(IN_MPI_RUN, reason="already inside an mpiexec run"),
]


@pytest.mark.parametrize("n", [2, 3, 4])
def test_collective_modules(n):
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *COLLECTIVE_MODULES]
    proc = run_mpi(n, cmd, timeout=300, cwd=str(ROOT), env={"MPIBOOST_COLLECTIVE_RUN": "1"})
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert proc.stdout.count(" passed") == n, proc.stdout[-3000:]
