"""How much slower than a reference machine this one runs now: a factor >= 1 for the tests' timeouts.

Tests whose faults are timed (a watchdog bound, the rounds of a job to strike
in) scale those times by :func:`factor`, so a slow or loaded machine gets
longer bounds instead of false failures. It is measured once per test
session: the start of a Python process that imports the training modules,
and a fixed amount of arithmetic in it -- what the jobs of these tests
spend their time on. ``$MPIBOOST_TEST_SLOWDOWN`` sets the factor instead.
"""
from __future__ import annotations

import functools
import math
import os
import subprocess
import sys
import time

# The measurement on an idle 2-core machine (the project's CI size) was ~0.27 s; anything up to
# a little over that counts as full speed.
REFERENCE_SECONDS = 0.4

_WORK = """
import mpiboost.driver.batch, mpiboost.comm, numpy
x = 0
for i in range(2_000_000):
    x += i & 7
"""


def _measure() -> float:
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-c", _WORK], check=True, capture_output=True, timeout=600,
                   env={**os.environ, "OMP_NUM_THREADS": "1"})
    return time.monotonic() - t0


@functools.lru_cache(maxsize=None)
def factor() -> float:
    """``>= 1``: 1 on a machine as fast as the reference, k when the measurement took k times as long."""
    forced = os.environ.get("MPIBOOST_TEST_SLOWDOWN")
    if forced:
        return max(1.0, float(forced))
    seconds = sorted(_measure() for _ in range(3))[1]  # the median: one hiccup neither way decides
    return max(1.0, seconds / REFERENCE_SECONDS)


def seconds(base: float) -> int:
    """``base`` seconds on the reference machine, in whole seconds here (rounded up)."""
    return int(math.ceil(base * factor()))
