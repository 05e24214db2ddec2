#!/usr/bin/env python
"""SAMME against LightGBM and XGBoost multiclass on the same data, side by side.

Data: ``mpiboost synth multiclass`` with --n training rows (1,000,000) x 20
features, K = --classes (10) classes (seed 1), and a 100,000-row test set
(seed 2), generated into --workdir (outside the repository; reused when there).

Configurations, T = --rounds (100), the same 2 cores in total:

* mpiboost ``samme`` (histogram and sample weak learner) as ``mpiexec -n 2 ...
  --threads 1`` (and histogram as ``-n 1 --threads 2``, and with K x T rounds:
  as many stumps as the peers fit, K per round), a subprocess with
  ``--quiet --metrics FILE``: "train" is the summary's ``seconds.total`` (load,
  binning and rounds), "process" the whole subprocess;
* LightGBM (``objective=multiclass``, ``num_leaves=2``: stumps, K trees per
  round) and XGBoost (``multi:softprob``, hist, ``max_depth=1``), each in a
  fresh Python subprocess with 2 threads that reads X, y from the same HDF5
  file: "train" is load + dataset construction + rounds.

Every figure is the median of --repeat runs, the configurations run
round-robin; ratios are to LightGBM's train time (the target: SAMME histogram
on ``-n 2`` x 1 thread <= 0.5x). Test accuracy is printed beside.

    python scripts/bench/bench_samme.py [--n 1000000] [--classes 10] [--rounds 100] [--repeat 3] [--json out.json]
    python scripts/bench/bench_samme.py --n 100000 --repeat 1        # quick check
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import find_mpiexec, load_line, make_workdir, run_cmd  # noqa: E402

TEST_ROWS = 100_000
TARGET = 0.5


def peer_worker(args: argparse.Namespace) -> None:
    """Body of one peer subprocess: prints one JSON line with its timings and accuracy."""
    import h5py

    clock = time.perf_counter
    if args.peer_worker == "lightgbm":
        import lightgbm as lgb
    else:
        import xgboost as xgb
    t0 = clock()
    with h5py.File(args.train, "r") as f:
        X, y = f["X"][...], f["y"][...].astype(np.int32)
    K = int(y.max()) + 1
    if args.peer_worker == "lightgbm":
        params = {"objective": "multiclass", "num_class": K, "num_leaves": 2, "max_bin": 255,
                  "num_threads": 2, "verbose": -1, "seed": 0}
        ds = lgb.Dataset(X, label=y, params=params, free_raw_data=True)
        booster = lgb.train(params, ds, num_boost_round=args.rounds)
        version = lgb.__version__
    else:
        params = {"objective": "multi:softprob", "num_class": K, "tree_method": "hist", "max_depth": 1,
                  "max_bin": 256, "nthread": 2, "verbosity": 0, "seed": 0}
        ds = xgb.QuantileDMatrix(X, label=y, max_bin=256, nthread=2)
        booster = xgb.train(params, ds, num_boost_round=args.rounds)
        version = xgb.__version__
    seconds = clock() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    with h5py.File(args.test, "r") as f:
        Xt, yt = f["X"][...], f["y"][...]
    p = booster.predict(Xt) if args.peer_worker == "lightgbm" else booster.predict(xgb.DMatrix(Xt, nthread=2))
    acc = float(np.mean(np.argmax(p, axis=1) == yt))
    print(json.dumps({"version": version, "seconds": seconds, "peak_rss_bytes": peak, "accuracy": acc}), flush=True)


def mpiboost(args, mpiexec: str, ranks: int, threads: int, weak: str, tag: str, rounds: int) -> dict:
    model = os.path.join(args.workdir, f"samme-{tag}.h5")
    metrics = os.path.join(args.workdir, f"samme-{tag}.jsonl")
    cmd = [mpiexec, "-n", str(ranks), sys.executable, "-m", "mpiboost", "train", "--algo", "samme",
           "--weak-learner", weak, "--data", args.train, "--rounds", str(rounds), "--model", model,
           "--threads", str(threads), "--quiet", "--metrics", metrics]
    wall, out, err, code = run_cmd(cmd, timeout=3600)
    if code != 0:
        sys.exit(f"mpiboost failed: {err[-2000:]}")
    with open(metrics) as f:
        summary = json.loads(f.read().splitlines()[-1])["summary"]
    _, out, err, code = run_cmd([sys.executable, "-m", "mpiboost", "evaluate", "--model", model, "--data", args.test],
                                timeout=600)
    if code != 0:
        sys.exit(f"evaluate failed: {err[-2000:]}")
    return {"seconds": summary["seconds"]["total"], "rounds_seconds": summary["seconds"]["rounds"], "process": wall,
            "accuracy": json.loads(out)["accuracy"], "peak_rss_bytes": max(summary["peak_rss_bytes"]["per_rank"]),
            "bytes_per_round": summary["bytes_rounds_all_ranks"] / max(summary["rounds"], 1)}


def peer(args, name: str) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--peer-worker", name, "--train", args.train, "--test",
           args.test, "--rounds", str(args.rounds)]
    env = dict(os.environ, OMP_NUM_THREADS="2")
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, timeout=7200)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"{name} failed: {p.stderr[-2000:]}")
    out = json.loads(p.stdout.strip().splitlines()[-1])
    out["process"] = wall
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", default="/tmp/mpiboost-bench-samme")
    ap.add_argument("--mpiexec")
    ap.add_argument("--peers", nargs="*", default=["lightgbm", "xgboost"])
    ap.add_argument("--json", help="write the raw runs and medians here")
    ap.add_argument("--peer-worker", choices=("lightgbm", "xgboost"), help=argparse.SUPPRESS)
    ap.add_argument("--train", help=argparse.SUPPRESS)
    ap.add_argument("--test", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.peer_worker:
        peer_worker(args)
        return
    make_workdir(args.workdir)
    mpiexec = find_mpiexec(args.mpiexec)
    args.train = os.path.join(args.workdir, f"train-{args.n}-{args.classes}.h5")
    args.test = os.path.join(args.workdir, f"test-{args.classes}.h5")
    for path, n, seed in ((args.train, args.n, 1), (args.test, TEST_ROWS, 2)):
        if not os.path.exists(path):
            subprocess.run([sys.executable, "-m", "mpiboost", "synth", "multiclass", "--n", str(n), "--classes",
                            str(args.classes), "--seed", str(seed), "--out", path], check=True, stdout=subprocess.DEVNULL)
    T, KT = args.rounds, args.rounds * args.classes
    configs = {
        "samme histogram -n 2 x 1": lambda: mpiboost(args, mpiexec, 2, 1, "histogram", "h2", T),
        "samme histogram -n 1 x 2": lambda: mpiboost(args, mpiexec, 1, 2, "histogram", "h1", T),
        "samme sample -n 2 x 1": lambda: mpiboost(args, mpiexec, 2, 1, "sample", "s2", T),
        # LightGBM and XGBoost fit K trees (stumps) per round: SAMME with as many stumps in all
        f"samme histogram -n 2, T={KT}": lambda: mpiboost(args, mpiexec, 2, 1, "histogram", "hK", KT),
        **{f"{p} (2 threads)": (lambda p=p: peer(args, p)) for p in args.peers},
    }
    print(f"# {args.n:,} x 20, K = {args.classes}, T = {args.rounds}, {args.repeat} repeat(s); {load_line()}", flush=True)
    runs: dict = {k: [] for k in configs}
    for r in range(args.repeat):
        for name, fn in configs.items():
            res = fn()
            runs[name].append(res)
            print(f"  run {r + 1} {name}: {res['seconds']:.2f} s (process {res['process']:.2f} s), "
                  f"accuracy {res['accuracy']:.4f}", flush=True)
    med = {k: {f: float(np.median([x[f] for x in v])) for f in ("seconds", "process", "accuracy")}
           for k, v in runs.items()}
    ref = next((k for k in med if k.startswith("lightgbm")), None)
    print(f"\n{'configuration':<30}{'train s':>9}{'process s':>11}{'accuracy':>10}{'x LightGBM':>12}")
    for k, m in med.items():
        ratio = m["seconds"] / med[ref]["seconds"] if ref else float("nan")
        mark = ""
        if ref and k == "samme histogram -n 2 x 1":
            mark = "  PASS" if ratio <= TARGET else "  MISS"
            mark += f" (target <= {TARGET}x)"
        print(f"{k:<30}{m['seconds']:>9.2f}{m['process']:>11.2f}{m['accuracy']:>10.4f}{ratio:>12.3f}{mark}")
    h2 = runs["samme histogram -n 2 x 1"][0]
    print(f"\nsamme histogram -n 2: {h2['bytes_per_round']:,.0f} bytes sent per round (all ranks), "
          f"peak RSS {h2['peak_rss_bytes'] / 1e6:.0f} MB per rank; {load_line()}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": runs, "medians": med}, f, indent=1)


if __name__ == "__main__":
    main()
