"""Small helpers shared by the benchmark scripts (run as ``python scripts/bench/X.py``)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time


def run_cmd(cmd: list, timeout: float) -> tuple:
    """Run ``cmd``; return (wall seconds, stdout, stderr, returncode)."""
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        return time.perf_counter() - t0, exc.stdout or "", f"timed out after {timeout} s", -1
    return time.perf_counter() - t0, p.stdout, p.stderr, p.returncode


def load_line() -> str:
    """The machine's load (``uptime``), to print beside the timings."""
    try:
        return subprocess.run(["uptime"], stdout=subprocess.PIPE, text=True).stdout.strip()
    except OSError:
        return "load average: %.2f, %.2f, %.2f" % os.getloadavg()


def find_mpiexec(given: str | None) -> str:
    """``given``, else the mpiexec next to this Python, else the one on PATH; exits if none."""
    mpiexec = given
    if mpiexec is None:
        here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
        mpiexec = here if os.access(here, os.X_OK) else shutil.which("mpiexec")
    if not mpiexec:
        sys.exit("no mpiexec found (pass --mpiexec)")
    return mpiexec


def make_workdir(workdir: str) -> None:
    """Create the work directory; refuse one inside the repository (data and models stay out of it)."""
    workdir_abs = os.path.abspath(workdir)
    repo = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    if workdir_abs == repo or workdir_abs.startswith(repo + os.sep):
        sys.exit(f"--workdir {workdir} is inside the repository; use a directory outside it")
    os.makedirs(workdir, exist_ok=True)


def median_time(fn, repeat: int, setup=None, warm: bool = False) -> float:
    """Median wall time of ``fn()`` over ``repeat`` calls (``setup()`` untimed before each; ``warm``: one untimed call first)."""
    import time

    import numpy as np

    if warm:
        fn()
    times = []
    for _ in range(repeat):
        if setup:
            setup()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def round_robin(configs: list, repeat: int, run, status) -> None:
    """``repeat`` passes over ``configs`` (dicts with a ``runs`` list), one ``run(cfg, k)`` each, so that a change
    in the machine's load hits every configuration alike; prints ``status(run)`` (or the failure) per run."""
    import sys

    for k in range(repeat):
        for cfg in configs:
            result = run(cfg, k)
            cfg["runs"].append(result)
            text = "FAILED " + result["error"].splitlines()[-1] if "error" in result else status(result)
            print(f"[{k + 1}/{repeat}] {cfg['name']}: {text}", file=sys.stderr, flush=True)


def add_run_options(ap, workdir_name: str) -> None:
    """The options of a benchmark that runs ``mpiexec -n R mpiboost train`` per configuration (run_one's)."""
    import os
    import tempfile

    ap.add_argument("--repeat", type=int, default=3, help="runs per configuration (median reported)")
    ap.add_argument("--ranks", type=int, default=2, help="MPI ranks (default 2)")
    ap.add_argument("--threads", type=int, default=1, help="OpenMP threads per rank (default 1)")
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), workdir_name),
                    help="generated data, models and metrics go here (default: under the system temp dir)")
    ap.add_argument("--mpiexec", default=None, help="mpiexec to use (default: next to this Python, else on PATH)")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds allowed per run")
    ap.add_argument("--json", help="also write every number here")
