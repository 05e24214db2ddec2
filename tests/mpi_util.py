"""Launch mpiboost (or a Python snippet) under mpiexec from the tests.

Works with the MPICH and Open MPI wheels from pip and with a system MPI: the
mpiexec next to the test interpreter is preferred (a venv's pip-installed
MPI), then the one on PATH. Every launch has a timeout, so a hang fails the
test instead of blocking the suite.
"""
from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Optional, Sequence

ROOT = Path(__file__).resolve().parent.parent


def find_datasets() -> Path:
    """The public data sets the real-data tests read (docs/data.md lists them).

    ``$MPIBOOST_DATASETS`` if set; else ``datasets/`` in the checkout; else
    the shared data folder beside the checkout (``../shared/datasets``,
    where CI lays it out). The first candidate is returned when none exists,
    so the skip or failure names where the data were looked for.
    """
    given = os.environ.get("MPIBOOST_DATASETS")
    if given:
        return Path(given)
    candidates = (ROOT / "datasets", ROOT.parent / "shared" / "datasets")
    return next((c for c in candidates if c.is_dir()), candidates[0])


DATASETS = find_datasets()
# Set by .ci/run: a missing data folder fails the real-data tests instead of skipping them.
REQUIRE_DATASETS = os.environ.get("MPIBOOST_REQUIRE_DATASETS") == "1"


@functools.lru_cache(maxsize=None)
def mpiexec() -> Optional[str]:
    local = Path(sys.executable).parent / "mpiexec"
    if local.exists():
        return str(local)
    return shutil.which("mpiexec") or shutil.which("mpirun")


@functools.lru_cache(maxsize=None)
def flavour() -> str:
    """'openmpi', 'mpich' or 'other', from ``mpiexec --version``."""
    exe = mpiexec()
    if exe is None:
        return "none"
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "other"
    low = out.lower()
    if "open mpi" in low or "open-mpi" in low or "openrte" in low or "prrte" in low:
        return "openmpi"
    if "hydra" in low or "mpich" in low:
        return "mpich"
    return "other"


def mpi_env(extra: Optional[dict] = None) -> dict:
    """Environment for a spawned job: one thread per rank, Open MPI allowed as root/oversubscribed."""
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    env["PYTHONUNBUFFERED"] = "1"
    if flavour() == "openmpi":
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
        env.setdefault("PRTE_MCA_rmaps_default_mapping_policy", ":oversubscribe")
    if extra:
        env.update(extra)
    return env


def mpiexec_cmd(n: int, args: Sequence[str]) -> list[str]:
    exe = mpiexec()
    if exe is None:
        raise RuntimeError("no mpiexec found")
    return [exe, "-n", str(n), *args]


def run_mpi(
    n: int,
    args: Sequence[str],
    *,
    timeout: float = 180,
    env: Optional[dict] = None,
    cwd: Optional[str] = None,
) -> subprocess.CompletedProcess:
    """Run ``args`` on ``n`` ranks; a hang past ``timeout`` seconds raises ``TimeoutExpired``.

    The job runs in a session of its own, and a timeout kills that whole
    session: no rank of a hung job outlives the test, still spinning in its
    collective.
    """
    return run_killing_session(mpiexec_cmd(n, args), timeout=timeout, env=mpi_env(env), cwd=cwd)


def run_killing_session(cmd: Sequence[str], *, timeout: float, env: dict, cwd=None) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd, capture_output=True, text=True)``, killing the command's whole session on timeout."""
    proc = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
        raise subprocess.TimeoutExpired(proc.args, timeout, output=out, stderr=err) from None
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def run_cli(args: Sequence[str], *, n: int = 0, timeout: float = 180, env: Optional[dict] = None, cwd=None):
    """``mpiboost ARGS`` as a plain process (``n == 0``) or under ``mpiexec -n n``."""
    cmd = [sys.executable, "-m", "mpiboost", *args]
    if n:
        return run_mpi(n, cmd, timeout=timeout, env=env, cwd=cwd)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=mpi_env(env), cwd=cwd)


def run_script(code: str, n: int, *, timeout: float = 180, env: Optional[dict] = None, cwd=None):
    """Run a Python snippet on ``n`` ranks."""
    return run_mpi(n, [sys.executable, "-c", code], timeout=timeout, env=env, cwd=cwd)
