#!/usr/bin/env python
"""Per-element cost of the boosting kernels at n = 1.6M (Long-Servedio, d = 21).

Prints the median of --repeat runs, with 1 thread and with all cores:
histogram build (ns per row x feature; row-major and column-major layouts),
weight update (ns per row), exact sum (ns per row), fixed-point conversion,
sampling by prefix sums, and the smooth projection (ns per row, single rank,
with clipping active).

    python scripts/bench/bench_kernels.py [--n 1600000] [--repeat 5]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import median_time  # noqa: E402

from mpiboost._ext import _exact, _histogram, _openmp, _weights
from mpiboost.comm import single
from mpiboost.data.synth import longservedio
from mpiboost.protocol import Protocol, fixed_point


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_600_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    n, r = args.n, args.repeat
    data = longservedio.generate(n, noise=0.1, seed=0)
    X = np.ascontiguousarray((data.X > 0).astype(np.uint8))
    XT = np.ascontiguousarray(X.T)
    y = data.y
    d = X.shape[1]
    rng = np.random.default_rng(0)
    w = rng.dirichlet(np.full(n, 0.5))
    q = fixed_point(w)
    g = q * y
    hist = np.zeros((d, 256), dtype=np.int64)
    margin = np.zeros(n)
    proto = Protocol(single())
    cap = 1.0 / (0.1 * n)
    cores = len(os.sched_getaffinity(0))
    print(f"kernel benchmark: n = {n:,}, d = {d}, median of {r} runs")
    print(f"{'kernel':<44}" + "".join(f"{t} thread(s)".rjust(14) for t in sorted({1, cores})))
    rows = []

    def add(name, unit, fn, per, setup=None):
        vals = []
        for t in sorted({1, cores}):
            _openmp.set_num_threads(t)
            vals.append(median_time(fn, r, setup) / per * 1e9)
        rows.append((name, unit, vals))
        print(f"{name + ' (' + unit + ')':<44}" + "".join(f"{v:14.3f}" for v in vals))

    flags = _histogram.binary_columns(XT)
    add("histogram (feature-major, blocked)", "ns/row/feature", lambda: _histogram.build_histogram(XT, g, hist), n * d)
    add("histogram, 0/1 columns as masked sums", "ns/row/feature",
        lambda: _histogram.build_histogram(XT, g, hist, flags), n * d)
    add("histogram, plain row-major loop", "ns/row/feature", lambda: _histogram.build_histogram_row_major(X, g, hist), n * d)
    wcopy = w.copy()
    add("exact error masses of a stump", "ns/row", lambda: _weights.error_terms(XT[3], y, w, 0, 1, False), n)
    add(
        "weight update + margin + train error",
        "ns/row",
        lambda: _weights.apply_stump(wcopy, margin, XT[3], y, 0, 1, False, 0.85, 1.0, 1.0),
        n,
    )
    add("exact sum (superaccumulator)", "ns/row", lambda: _exact.partials(w), n)
    qq = np.empty(n, dtype=np.int64)
    add("fixed-point conversion", "ns/row", lambda: _exact.to_fixed(w, 60, qq), n)
    pts = np.sort(rng.integers(0, int(q.sum()), 845)).astype(np.int64)
    out = np.empty(845, dtype=np.intp)
    add("sampling: prefix sums + 845 draws", "ns/row", lambda: _weights.rows_for_points(np.cumsum(q), pts, 0, out), n)
    # a weight vector that needs clipping: the heavy tail goes above the cap
    heavy = w * (1 + 50 * (rng.random(n) < 0.01))
    heavy /= heavy.sum()
    work = heavy.copy()
    add(
        "smooth projection (1 rank)",
        "ns/row",
        lambda: proto.smooth_projection(work, cap),
        n,
        setup=lambda: np.copyto(work, heavy),
    )


if __name__ == "__main__":
    main()
