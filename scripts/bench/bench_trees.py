#!/usr/bin/env python
"""Tree training benchmark: mpiboost's logistic tree booster against LightGBM, XGBoost and scikit-learn.

Data (generated into --workdir, outside the repository, reused when there):

* ``ls``: Long-Servedio, --n-ls rows x 21 binary features, 1% label noise (``mpiboost synth longservedio``);
* ``dense``: --n-dense rows x 28 continuous N(0, 1) features, label the sign of a linear part plus
  a product of two features plus noise (float32, seed 0);

each with a 100k-row test set. Configurations, T = --rounds trees of --leaves leaves (best-first;
--depth D adds a depth limit), 255 bins, learning rate 0.1, the same --threads cores in total:

* mpiboost ``train --algo adaboost --loss logistic --weak-learner tree`` as ``-n 1 x threads``
  and ``-n 2 x threads/2`` (histograms reduced to the center, and reduce-scatter), timed from its
  metrics summary (load + binning + rounds) and as a whole process;
* the same three with ``--grad-bins 0`` (full precision) and ``--grad-bins B`` (quantized gradients,
  --grad-bins, default 4: the binary default; 0: only the full-precision runs);
* LightGBM (``num_leaves``, ``max_depth``), LightGBM with ``use_quantized_grad=True`` (its defaults
  otherwise: 4 gradient bins, no leaf renewal), XGBoost (``hist``, ``grow_policy=lossguide``,
  ``max_leaves``), scikit-learn ``HistGradientBoostingClassifier`` (``max_leaf_nodes``, no early
  stopping), each in a fresh process reading the same HDF5 file.

Printed per data set: train seconds (median of --repeat), ratio to LightGBM, peak RSS per rank,
test error, and mpiboost's bytes per tree (all ranks, both exchanges). ``--scaling`` also times
mpiboost and LightGBM on 1x, 2x and 4x --n-ls rows (how time grows with rows).

    python scripts/bench/bench_trees.py [--repeat 3] [--leaves 31] [--depth 0] [--json out.json]
    python scripts/bench/bench_trees.py --leaves 63 --depth 6
    python scripts/bench/bench_trees.py --n-ls 100000 --n-dense 100000 --repeat 1   # quick check
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_train import last_summary  # noqa: E402
from benchutil import find_mpiexec, load_line, make_workdir, run_cmd  # noqa: E402

TEST_ROWS = 100_000
PEERS = ("lightgbm", "lightgbm-q", "xgboost", "sklearn")


def _peak_rss() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def peer_worker(args) -> None:
    """One peer run in this (fresh) process: one JSON line of timings, memory and test error."""
    import h5py

    clock = time.perf_counter
    name = args.peer_worker
    if name.startswith("lightgbm"):
        import lightgbm as lib
    elif name == "xgboost":
        import xgboost as lib
    else:
        import sklearn as lib
        from sklearn.ensemble import HistGradientBoostingClassifier
    t0 = clock()
    with h5py.File(args.train, "r") as f:
        X, y = f["X"][...], f["y"][...]
    label = (y > 0).astype(np.float32)
    t1 = clock()
    if name.startswith("lightgbm"):
        params = {"objective": "binary", "num_leaves": args.leaves, "max_depth": args.depth or -1, "max_bin": 255,
                  "num_threads": args.threads, "verbose": -1, "seed": 0, "learning_rate": 0.1}
        if name == "lightgbm-q":  # quantized training with LightGBM's own defaults (4 bins, no leaf renewal)
            params["use_quantized_grad"] = True
        ds = lib.Dataset(X, label=label, params=params)
        ds.construct()
        t2 = clock()
        model = lib.train(params, ds, num_boost_round=args.rounds)
    elif name == "xgboost":
        params = {"objective": "binary:logistic", "tree_method": "hist", "grow_policy": "lossguide",
                  "max_leaves": args.leaves, "max_depth": args.depth, "max_bin": 256, "nthread": args.threads,
                  "eta": 0.1, "verbosity": 0, "seed": 0}
        ds = lib.QuantileDMatrix(X, label=label, max_bin=256, nthread=args.threads)
        t2 = clock()
        model = lib.train(params, ds, num_boost_round=args.rounds)
    else:
        from threadpoolctl import threadpool_limits

        t2 = clock()
        with threadpool_limits(args.threads):
            model = HistGradientBoostingClassifier(max_iter=args.rounds, max_leaf_nodes=args.leaves,
                                                   max_depth=args.depth or None, learning_rate=0.1,
                                                   early_stopping=False, max_bins=255, random_state=0)
            model.fit(X, label)
    t3 = clock()
    peak = _peak_rss()
    with h5py.File(args.test, "r") as f:
        Xt, yt = f["X"][...], f["y"][...]
    if name.startswith("lightgbm"):
        p = model.predict(Xt)
    elif name == "xgboost":
        p = model.predict(lib.DMatrix(Xt))
    else:
        p = model.predict_proba(Xt)[:, 1]
    print(json.dumps({"version": lib.__version__, "train_seconds": t3 - t0, "rounds_seconds": t3 - t2,
                      "construct_seconds": t2 - t1, "peak_rss_bytes": peak,
                      "test_error": float(np.mean(np.where(p > 0.5, 1, -1) != yt))}), flush=True)


def make_data(args, workdir: str, mpiboost: list) -> dict:
    """The data sets' (train, test) paths, generated when missing."""
    from mpiboost.data import format as fmt

    out = {}
    for name, n in (("ls", args.n_ls), ("dense", args.n_dense)):
        if name not in args.sets:
            continue
        paths = []
        for rows, seed, tag in ((n, 1, "train"), (TEST_ROWS, 2, "test")):
            path = os.path.join(workdir, f"{name}_{tag}_n{rows}.h5")
            paths.append(path)
            if os.path.exists(path):
                continue
            if name == "ls":
                noise = "0.01" if tag == "train" else "0"
                _, _, err, rc = run_cmd(mpiboost + ["synth", "longservedio", "--n", str(rows), "--noise", noise,
                                                    "--seed", str(seed), "--out", path], 3600)
                if rc:
                    sys.exit(err)
            else:
                rng = np.random.default_rng(seed)
                w = np.random.default_rng(0).normal(size=28)
                X = rng.normal(size=(rows, 28)).astype(np.float32)
                s = X @ w + 2.0 * X[:, 0] * X[:, 1] + rng.normal(size=rows)
                fmt.write_dataset(path, X, np.where(s > 0, 1, -1))
        out[name] = tuple(paths)
    return out


def run_ours(args, mpiexec: str, train: str, test: str, ranks: int, threads: int, exchange: str, tag: str,
             grad_bins: int = 0) -> dict:
    model = os.path.join(args.workdir, f"model_{tag}.h5")
    metrics = os.path.join(args.workdir, f"metrics_{tag}.jsonl")
    for p in (model, metrics):
        if os.path.exists(p):
            os.remove(p)
    cmd = [mpiexec, "-n", str(ranks), sys.executable, "-m", "mpiboost", "train", "--algo", "adaboost", "--loss",
           "logistic", "--weak-learner", "tree", "--max-leaves", str(args.leaves), "--max-depth", str(args.depth),
           "--tree-exchange", exchange, "--data", train, "--rounds", str(args.rounds), "--model", model,
           "--threads", str(threads), "--quiet", "--metrics", metrics, "--grad-bins", str(grad_bins)]
    wall, out, err, rc = run_cmd(cmd, args.timeout)
    if rc:
        return {"error": (err or out)[-1500:], "command": shlex.join(cmd)}
    s = last_summary(metrics)
    ev = [sys.executable, "-m", "mpiboost", "evaluate", "--model", model, "--data", test]
    _, eout, eerr, erc = run_cmd(ev, args.timeout)
    if erc:
        return {"error": f"evaluate: {(eerr or eout)[-1500:]}", "command": shlex.join(cmd)}
    rounds = max(1, s["rounds"])
    return {"train_seconds": s["seconds"]["total"], "rounds_seconds": s["seconds"]["rounds"], "process_seconds": wall,
            "peak_rss_bytes": max(s["peak_rss_bytes"]["per_rank"]),
            "bytes_per_tree": s["bytes_all_ranks"]["sent"] / rounds,
            "test_error": json.loads(eout.strip().splitlines()[-1])["error"], "command": shlex.join(cmd)}


def run_peer(args, name: str, train: str, test: str, threads: int) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--peer-worker", name, "--train", train, "--test", test,
           "--threads", str(threads), "--rounds", str(args.rounds), "--leaves", str(args.leaves), "--depth",
           str(args.depth)]
    wall, out, err, rc = run_cmd(cmd, args.timeout)
    if rc:
        return {"error": (err or out)[-1500:]}
    return {**json.loads(out.strip().splitlines()[-1]), "process_seconds": wall}


def median(runs: list, key: str):
    v = [r[key] for r in runs if key in r]
    return float(np.median(v)) if v else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-ls", type=int, default=1_600_000)
    ap.add_argument("--n-dense", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--leaves", type=int, default=31)
    ap.add_argument("--depth", type=int, default=0, help="depth limit (0: none)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--scaling", action="store_true", help="also time 1x, 2x, 4x --n-ls rows (mpiboost and LightGBM)")
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "mpiboost-bench-trees"))
    ap.add_argument("--mpiexec", default=None)
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--grad-bins", type=int, default=4,
                    help="also run mpiboost with --grad-bins this (0: only the full-precision runs)")
    ap.add_argument("--sets", nargs="+", default=["ls", "dense"], choices=["ls", "dense"])
    ap.add_argument("--only", nargs="+", default=None,
                    help="run only the configurations whose name contains one of these (LightGBM's default always)")
    ap.add_argument("--json")
    ap.add_argument("--peer-worker", choices=PEERS, help=argparse.SUPPRESS)
    ap.add_argument("--train", help=argparse.SUPPRESS)
    ap.add_argument("--test", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.peer_worker:
        peer_worker(args)
        return
    mpiexec = find_mpiexec(args.mpiexec)
    make_workdir(args.workdir)
    data = make_data(args, args.workdir, [sys.executable, "-m", "mpiboost"])
    half = max(1, args.threads // 2)
    configs = [("mpiboost -n 1", ("ours", 1, args.threads, "center", 0)),
               ("mpiboost -n 2 center", ("ours", 2, half, "center", 0)),
               ("mpiboost -n 2 reduce-scatter", ("ours", 2, half, "reduce-scatter", 0))]
    if args.grad_bins:
        q = args.grad_bins
        configs += [(f"mpiboost -n 1 q{q}", ("ours", 1, args.threads, "center", q)),
                    (f"mpiboost -n 2 center q{q}", ("ours", 2, half, "center", q)),
                    (f"mpiboost -n 2 r-s q{q}", ("ours", 2, half, "reduce-scatter", q))]
    configs += [(p, ("peer", p)) for p in PEERS]
    if args.only:
        configs = [c for c in configs if any(o in c[0] for o in args.only) or c[0] == "lightgbm"]
    report = {"load_before": load_line(), "data": {}}
    for dname, (train, test) in data.items():
        runs = {name: [] for name, _ in configs}
        for k in range(args.repeat):
            for name, cfg in configs:
                if cfg[0] == "ours":
                    r = run_ours(args, mpiexec, train, test, cfg[1], cfg[2], cfg[3],
                                 f"{dname}_{k}_{cfg[1]}_{cfg[3]}_{cfg[4]}", cfg[4])
                else:
                    r = run_peer(args, cfg[1], train, test, args.threads)
                runs[name].append(r)
                print(f"[{dname} {k + 1}/{args.repeat}] {name}: "
                      f"{r.get('train_seconds', 'FAILED ' + r.get('error', '')[-200:])}", file=sys.stderr, flush=True)
        report["data"][dname] = runs
        ref = median(runs["lightgbm"], "train_seconds")
        print(f"\n{dname}: {train} ({args.rounds} trees, {args.leaves} leaves, depth {args.depth or 'any'}, "
              f"{args.threads} threads in all, median of {args.repeat})")
        print(f"{'configuration':<30}{'train s':>9}{'xLGBM':>8}{'rounds s':>10}{'peak RSS MB':>13}{'test err%':>11}"
              f"{'bytes/tree':>12}")
        for name, _ in configs:
            rs = [r for r in runs[name] if "error" not in r]
            if not rs:
                print(f"{name:<30}  FAILED {runs[name][-1].get('error', '')[-100:]}")
                continue
            t = median(rs, "train_seconds")
            b = median(rs, "bytes_per_tree")
            print(f"{name:<30}{t:>9.2f}{(t / ref if ref else float('nan')):>8.2f}"
                  f"{median(rs, 'rounds_seconds'):>10.2f}{median(rs, 'peak_rss_bytes') / 1e6:>13.0f}"
                  f"{100 * median(rs, 'test_error'):>11.2f}{'' if b is None else f'{b:,.0f}':>12}")
    if args.scaling:
        print("\nscaling with rows (Long-Servedio, -n 1):")
        for mult in (1, 2, 4):
            n = args.n_ls * mult
            sub = argparse.Namespace(**{**vars(args), "n_ls": n, "n_dense": 1000})
            train, test = make_data(sub, args.workdir, [sys.executable, "-m", "mpiboost"])["ls"]
            ours = [run_ours(args, mpiexec, train, test, 1, args.threads, "center", f"scale{mult}_{k}", args.grad_bins)
                    for k in range(args.repeat)]
            peer = [run_peer(args, "lightgbm", train, test, args.threads) for _ in range(args.repeat)]
            report.setdefault("scaling", {})[n] = {"mpiboost": ours, "lightgbm": peer}
            print(f"  {n:>10,} rows: mpiboost rounds {median(ours, 'rounds_seconds'):.2f} s, "
                  f"LightGBM rounds {median(peer, 'rounds_seconds'):.2f} s")
    report["load_after"] = load_line()
    print(f"\nload before: {report['load_before']}\nload after:  {report['load_after']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
