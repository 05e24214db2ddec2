"""Small helpers shared by the benchmark scripts (run as ``python scripts/bench/X.py``)."""
from __future__ import annotations

import os
import subprocess
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
