#!/usr/bin/env python
"""Cost of the multiclass histogram, ns per (row, feature), beside the binary one.

n rows x d features of random bins (255 value bins, and a few-bin case), 5%
missing, classes uniform or 90% in one class; for K = 3, 10, 28 and each
thread count, the median of --repeat runs of:

  auto    _multiclass.build_class_histogram (what training calls)
  keyed   the keyed pass forced (class-major counters, four features a pass)
  sorted  the class-sorted pass forced (each block's rows sorted by class)
  binary  _histogram.build_histogram on the same bins (the yardstick)

and the ratio auto / binary. Also the per-row passes of a round at K = 10
(ns per row).

    python scripts/bench/bench_multiclass_kernels.py [--n 1000000] [--d 20] [--repeat 5] [--threads 1,2]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from benchutil import load_line, median_time as _median  # noqa: E402


def median_time(fn, repeat: int) -> float:
    return _median(fn, repeat, warm=True)  # warm: page in the locals and the inputs


from mpiboost._ext import _histogram, _multiclass, _openmp  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--d", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--classes", type=lambda s: [int(k) for k in s.split(",")], default=[3, 10, 28])
    ap.add_argument("--bins", type=lambda s: [int(k) for k in s.split(",")], default=[255, 8])
    args = ap.parse_args()
    n, d, r = args.n, args.d, args.repeat
    threads = [int(t) for t in args.threads.split(",")]
    rng = np.random.default_rng(0)
    g = rng.integers(0, 2**40, n).astype(np.int64)
    before = _openmp.get_max_threads()
    print(f"multiclass histogram: n = {n:,}, d = {d}, median of {r} runs, ns per (row, feature)")
    print(load_line())
    head = f"{'bins':>4} {'K':>3} {'classes':<8}"
    for t in threads:
        head += f" | {t} thr: {'auto':>6} {'keyed':>6} {'sorted':>6} {'binary':>6} {'ratio':>5}"
    print(head)
    per = n * d / 1e9
    for nb in args.bins:
        XT = rng.integers(0, nb, (d, n)).astype(np.uint8)
        XT[rng.random((d, n)) < 0.05] = 255
        hb = np.zeros((d, 256), dtype=np.int64)
        for K in args.classes:
            hist = np.zeros((d, 256, K), dtype=np.int64)
            for skewed in (False, True):
                cls = rng.integers(0, K, n).astype(np.int32)
                if skewed:
                    cls[rng.random(n) < 0.9] = 0
                line = f"{nb:>4} {K:>3} {'skewed' if skewed else 'uniform':<8}"
                for t in threads:
                    _openmp.set_num_threads(t)
                    auto = median_time(lambda: _multiclass.build_class_histogram(XT, g, cls, hist), r) / per
                    keyed = median_time(lambda: _multiclass._class_histogram(XT, g, cls, hist, 0, -1, 1), r) / per
                    srt = median_time(lambda: _multiclass._class_histogram(XT, g, cls, hist, 0, -1, 2), r) / per
                    binary = median_time(lambda: _histogram.build_histogram(XT, g, hb), r) / per
                    line += f" | {'':6} {auto:6.3f} {keyed:6.3f} {srt:6.3f} {binary:6.3f} {auto / binary:5.2f}"
                print(line, flush=True)

    K = 10
    col = XT[3]
    cls = rng.integers(0, K, n).astype(np.int32)
    w = rng.random(n)
    scores = rng.standard_normal((n, K))
    T = 20
    feat = rng.integers(0, d, T).astype(np.int32)
    bins = rng.integers(0, 8, T).astype(np.int32)
    left = rng.integers(0, K, T).astype(np.int32)
    right = rng.integers(0, K, T).astype(np.int32)
    ml = np.zeros(T, dtype=np.uint8)
    coef = rng.random(T)
    out = np.empty(n, dtype=np.int32)
    print(f"\nper-row passes, K = {K}, ns per row" + "".join(f"{t} thr".rjust(10) for t in threads))
    passes = [
        ("class_error_terms", lambda: _multiclass.class_error_terms(col, cls, w, 3, 1, 2, False), n),
        ("apply_class_stump",
         lambda: _multiclass.apply_class_stump(w, scores, col, cls, 3, 1, 2, False, 1.0, 1.0, 0.0), n),
        ("class_stump_predict", lambda: _multiclass.class_stump_predict(col, 3, 1, 2, False, out), n),
        (f"add_class_stumps (per stump, T = {T})",
         lambda: _multiclass.add_class_stumps(XT, feat, bins, left, right, ml, coef, scores), n * T),
        ("argmax_classes", lambda: _multiclass.argmax_classes(scores, out), n),
    ]
    for name, fn, count in passes:
        vals = []
        for t in threads:
            _openmp.set_num_threads(t)
            vals.append(median_time(fn, r) / count * 1e9)
        print(f"{name:<36}" + "".join(f"{v:10.3f}" for v in vals), flush=True)
    _openmp.set_num_threads(before)


if __name__ == "__main__":
    main()
