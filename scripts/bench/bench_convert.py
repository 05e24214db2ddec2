"""CSV to arrays: ``mpiboost convert`` beside pandas and pyarrow reading the same file.

    python scripts/bench/bench_convert.py [--n 500000] [--d 28] [--repeat 3] [--threads 2]

Writes two generated CSV files of ``--n`` rows, a label and ``--d`` features (numbers printed
with 17 significant digits, 1% of them empty): ``numeric.csv``, and ``mixed.csv`` whose last
two features are text categories (converted naming them, and with ``--categorical auto``). Then
times, each in a fresh interpreter, the median of ``--repeat`` runs of:

* ``mpiboost convert`` to an HDF5 file (the whole command: parse, check, write), which reads a file of
  16 MiB or more with pyarrow where pyarrow is installed, and the same with mpiboost's own parser only
  (``MPIBOOST_CSV_PARSER=python``); the mixed file's categories are collected by ours in both;
* ``pandas.read_csv`` then the label and features as numpy arrays (and, for the mixed file,
  the text columns as category codes), no file written;
* ``pyarrow.csv.read_csv`` with ``--threads`` threads, then the same arrays.

The peers only parse: the ratios ``mpiboost / peer`` are an upper bound of what mpiboost spends
beyond parsing. Prints one table and a JSON line.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

PANDAS = """
import sys, numpy as np, pandas as pd
df = pd.read_csv(sys.argv[1], engine="c")
y = df.iloc[:, 0].to_numpy()
X = df.iloc[:, 1:].copy()
for c in X.columns:
    if not pd.api.types.is_numeric_dtype(X[c]):
        X[c] = X[c].astype("category").cat.codes
X = X.to_numpy(dtype=np.float32)
"""
PYARROW = """
import sys, numpy as np, pyarrow as pa, pyarrow.csv as pc
pa.set_cpu_count(int(sys.argv[2])); pa.set_io_thread_count(int(sys.argv[2]))
t = pc.read_csv(sys.argv[1])
y = t.column(0).to_numpy()
cols = []
for c in t.columns[1:]:
    if pa.types.is_string(c.type) or pa.types.is_large_string(c.type):
        c = c.dictionary_encode().combine_chunks().indices
    cols.append(c.to_numpy(zero_copy_only=False).astype(np.float32))
X = np.column_stack(cols)
"""


def write_csv(path: str, n: int, d: int, n_text: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    names = ["label"] + [f"f{j}" for j in range(d)]
    with open(path, "w") as f:
        f.write(",".join(names) + "\n")
        for lo in range(0, n, 50_000):
            m = min(50_000, n - lo)
            X = rng.normal(size=(m, d))
            y = (X[:, 0] + rng.normal(0, 1, m) > 0).astype(int)
            cells = np.char.mod("%.17g", X).astype(object)
            cells[rng.random((m, d)) < 0.01] = ""
            for j in range(d - n_text, d):
                cells[:, j] = np.asarray(["red", "green", "blue", "grey"], dtype=object)[rng.integers(0, 4, m)]
            f.write("\n".join(f"{y[i]}," + ",".join(cells[i]) for i in range(m)) + "\n")


def timed(cmd: list, env: dict) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr[-2000:]}")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=500_000)
    ap.add_argument("--d", type=int, default=28)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--workdir", default=None, help="where the CSV files go (default: a temporary folder)")
    args = ap.parse_args()
    work = args.workdir or tempfile.mkdtemp(prefix="bench_convert_")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    mpiboost = [sys.executable, "-m", "mpiboost"]
    rows = []
    for kind, n_text, auto in (("numeric", 0, False), ("mixed", 2, False), ("mixed", 2, True)):
        path = os.path.join(work, f"{kind}.csv")
        if not os.path.exists(path):
            write_csv(path, args.n, args.d, n_text)
        size = os.path.getsize(path)
        out = os.path.join(work, f"{kind}.h5")
        ours = mpiboost + ["convert", path, "--format", "csv", "--label-column", "label", "--out", out]
        if n_text:  # the text columns named, or found by --categorical auto (a first pass over every column)
            ours += ["--categorical", "auto" if auto else f"f{args.d - 2},f{args.d - 1}"]
        cases = {
            "mpiboost convert": ours,
            "mpiboost convert, own parser": ["env", "MPIBOOST_CSV_PARSER=python"] + ours,
            "pandas.read_csv": [sys.executable, "-c", PANDAS, path],
            "pyarrow.csv.read_csv": [sys.executable, "-c", PYARROW, path, str(args.threads)],
        }
        times = {k: [] for k in cases}
        for _ in range(args.repeat):  # round robin: a slow moment of the machine hits every case alike
            for k, cmd in cases.items():
                times[k].append(timed(cmd, env))
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append({"file": kind + (", --categorical auto" if auto else ""), "rows": args.n, "features": args.d, "MB": round(size / 1e6, 1),
                     **{k: round(v, 3) for k, v in med.items()},
                     "ours/pandas": round(med["mpiboost convert"] / med["pandas.read_csv"], 2),
                     "own parser/pandas": round(med["mpiboost convert, own parser"] / med["pandas.read_csv"], 2),
                     "ours/pyarrow": round(med["mpiboost convert"] / med["pyarrow.csv.read_csv"], 2)})
    keys = list(rows[0])
    print(" | ".join(keys))
    for r in rows:
        print(" | ".join(str(r[k]) for k in keys))
    print(json.dumps({"bench": "convert", "threads": args.threads, "repeat": args.repeat, "rows": rows}))


if __name__ == "__main__":
    main()
