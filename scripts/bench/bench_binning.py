#!/usr/bin/env python
"""Benchmark the binning kernel against a numpy ``searchsorted`` reference.

Data sets: Long-Servedio 1.6M x 21 (int8, as in the SmoothBoost paper) and
100k x 123 continuous float32 (every feature gets 255 bins: the worst case of
the kernel's binary search). Prints rows/s of the Cython kernel (1 thread and
all threads) and of the numpy reference, and the speed-up; median of --repeat
runs. Both produce identical bins (checked).

    python scripts/bench/bench_binning.py [--repeat 5] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import median_time  # noqa: E402

from mpiboost._ext import _openmp
from mpiboost.data.binning import MISSING_BIN, BinMapper, edges_from_counts, local_distinct, merge_distinct
from mpiboost.data.synth import longservedio


def numpy_reference(X: np.ndarray, mapper: BinMapper) -> np.ndarray:
    out = np.empty(X.shape, dtype=np.uint8)
    for j, e in enumerate(mapper.edges):
        col = X[:, j]
        out[:, j] = np.searchsorted(e, col, side="left")
        if col.dtype.kind == "f":
            out[np.isnan(col), j] = MISSING_BIN
    return out


def bench(name: str, X: np.ndarray, repeat: int, threads: list[int]) -> dict:
    sample = X[np.random.default_rng(0).choice(X.shape[0], min(X.shape[0], 200_000), replace=False)]
    mapper = BinMapper([edges_from_counts(*merge_distinct([d])) for d in local_distinct(sample)])
    out = np.empty(X.shape, dtype=np.uint8)
    ref = numpy_reference(X, mapper)
    row = {"data": name, "n": X.shape[0], "d": X.shape[1], "dtype": str(X.dtype), "bins_max": int(mapper.n_bins.max())}
    t_np = median_time(lambda: numpy_reference(X, mapper), repeat)
    row["numpy_rows_per_s"] = X.shape[0] / t_np
    for t in threads:
        _openmp.set_num_threads(t)
        mapper.transform(X, out=out)
        assert np.array_equal(out, ref), "kernel and reference disagree"
        sec = median_time(lambda: mapper.transform(X, out=out), repeat)
        row[f"kernel_{t}t_rows_per_s"] = X.shape[0] / sec
        row[f"kernel_{t}t_ns_per_value"] = sec / X.size * 1e9
        row[f"speedup_{t}t_vs_numpy"] = t_np / sec
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--n-ls", type=int, default=1_600_000, help="Long-Servedio rows")
    ap.add_argument("--n-wide", type=int, default=100_000, help="rows of the 123-feature set")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    cores = len(os.sched_getaffinity(0))
    threads = sorted({1, cores})
    rows = []
    ls = longservedio.generate(args.n_ls, noise=0.01, seed=0).X
    rows.append(bench(f"longservedio {args.n_ls}x21", ls, args.repeat, threads))
    rng = np.random.default_rng(1)
    wide = rng.standard_normal((args.n_wide, 123)).astype(np.float32)
    wide[rng.random(wide.shape) < 0.01] = np.nan
    rows.append(bench(f"continuous {args.n_wide}x123", wide, args.repeat, threads))
    print(f"binning benchmark, median of {args.repeat} runs, {cores} cores")
    for r in rows:
        print(f"\n{r['data']} ({r['dtype']}, up to {r['bins_max']} value bins)")
        print(f"  numpy searchsorted reference   {r['numpy_rows_per_s'] / 1e6:8.2f} M rows/s")
        for t in threads:
            print(
                f"  Cython kernel, {t} thread(s)      {r[f'kernel_{t}t_rows_per_s'] / 1e6:8.2f} M rows/s"
                f"  ({r[f'kernel_{t}t_ns_per_value']:.2f} ns/value, {r[f'speedup_{t}t_vs_numpy']:.1f}x numpy)"
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
