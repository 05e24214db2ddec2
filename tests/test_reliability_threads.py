"""Threads that behave on shared nodes.

OpenMP's idle threads wait passively unless the user chose otherwise (the
runtime's own report, ``OMP_DISPLAY_ENV``, says which policy it read), and
each rank takes its threads from the launcher's allocation: OMP_NUM_THREADS,
else SLURM_CPUS_PER_TASK, else the cores it is pinned to, else the node's
cores divided by the job's ranks on it (``mpiboost doctor`` prints every
rank's count).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from machine_speed import seconds as scaled
from mpi_util import mpi_env, mpiexec_cmd

pytestmark = pytest.mark.mpi

CMD = [sys.executable, "-m", "mpiboost", "doctor"]
CORES = len(os.sched_getaffinity(0))


def _env(**values) -> dict:
    env = mpi_env()
    for var in ("OMP_NUM_THREADS", "SLURM_CPUS_PER_TASK", "OMP_WAIT_POLICY", "OMP_DISPLAY_ENV"):
        env.pop(var, None)
    env.update({k: str(v) for k, v in values.items()})
    return env


def _doctor(ranks: int = 0, preexec_fn=None, **values):
    cmd = mpiexec_cmd(ranks, CMD) if ranks else CMD
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(**values), preexec_fn=preexec_fn,
                          timeout=scaled(120))  # a hang guard
    assert proc.returncode == 0, proc.stderr
    return proc


def _threads(proc) -> list:
    return [int(t) for t in re.findall(r"^rank +\d+ .* threads (\d+) ", proc.stdout, re.M)]


def _policy(proc) -> str:
    """The wait policy the OpenMP runtime read: GNU's reports its spin count (0: idle threads sleep at once;
    its policy line reads PASSIVE when nothing was set, yet it spins first then), others their policy."""
    text = proc.stderr + proc.stdout
    spins = re.findall(r"GOMP_SPINCOUNT\s*=\s*'(\d+)'", text)
    if spins:
        return "PASSIVE" if int(spins[0]) == 0 else "SPINNING"
    found = re.findall(r"OMP_WAIT_POLICY\s*=\s*'(\w+)'", text)
    assert found, text[-2000:]
    return found[0].upper()


def test_openmp_threads_wait_passively_unless_the_user_says_otherwise():
    assert _policy(_doctor(OMP_DISPLAY_ENV="VERBOSE")) == "PASSIVE"
    assert _policy(_doctor(OMP_DISPLAY_ENV="VERBOSE", OMP_WAIT_POLICY="active")) in ("ACTIVE", "SPINNING")


def test_threads_per_rank_come_from_the_launchers_allocation():
    a, b = CORES + 2, CORES + 3  # counts the node's cores cannot give
    assert _threads(_doctor(OMP_NUM_THREADS=a)) == [a]  # PBS sets it to the job's ncpus
    assert _threads(_doctor(OMP_NUM_THREADS=a, SLURM_CPUS_PER_TASK=b)) == [a]
    assert _threads(_doctor(SLURM_CPUS_PER_TASK=b)) == [b]
    restricted = CORES < (os.cpu_count() or CORES)  # this process may already run on some of the cores only
    # neither: one rank takes the cores it may run on; two ranks share them
    assert _threads(_doctor()) == [CORES]
    assert _threads(_doctor(2)) == [CORES if restricted else max(1, CORES // 2)] * 2
    if CORES >= 2:  # pinned by the launcher to one core: one thread, not the node's count
        one = min(os.sched_getaffinity(0))
        assert _threads(_doctor(preexec_fn=lambda: os.sched_setaffinity(0, {one}))) == [1]
