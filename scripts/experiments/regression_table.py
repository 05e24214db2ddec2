"""Regression: mpiboost's gbdt defaults against LightGBM's defaults, the same rows, 5 random splits.

Sets: abalone (rings as a number, the sex one-hot; the UCI file), and three generated ones that part the
objectives: scikit-learn's Friedman #1 (smooth, Gaussian noise), Friedman #1 with Student-t (3) noise
(outliers: where L1 and Huber earn their place), and a sparse-interaction set (y = x0 x1 + 2 [x2 > 0] + noise,
20 features). For each objective (squared error, L1, Huber) both libraries run their defaults (100 rounds,
31 leaves, learning rate 0.1; Huber's alpha 0.9 both), and mpiboost also at 300 rounds against LightGBM at
300 ("good at any --rounds"). Held-out RMSE (and MAE for L1), mean and standard error over the splits, and
the paired difference. Runs in-process through the public API, one rank.

    python scripts/experiments/regression_table.py                # prints Markdown
    python scripts/experiments/regression_table.py --quick        # 2 splits, two sets
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
DATASETS = Path(os.environ.get("MPIBOOST_DATASETS") or REPO / "datasets")


def abalone():
    path = DATASETS / "abalone" / "abalone.data"
    rows = [line.strip().split(",") for line in open(path) if line.strip()]
    sex = np.array([r[0] for r in rows])
    X = np.column_stack([(sex == s).astype(float) for s in ("M", "F", "I")] +
                        [np.array([float(r[j]) for r in rows]) for j in range(1, 8)])
    y = np.array([float(r[8]) for r in rows])
    return X, y


def friedman(noise: str, n: int = 4000, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 10))
    y = 10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2 + 10 * X[:, 3] + 5 * X[:, 4]
    e = rng.standard_normal(n) if noise == "gauss" else rng.standard_t(3, size=n)
    return X, y + e


def interactions(n: int = 4000, seed: int = 1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 20))
    return X, X[:, 0] * X[:, 1] + 2.0 * (X[:, 2] > 0) + 0.5 * rng.standard_normal(n)


SETS = {"abalone": abalone, "friedman1": lambda: friedman("gauss"), "friedman1-t3": lambda: friedman("t3"),
        "interactions": interactions}


def run(name: str, X, y, seeds, objectives, rounds_list):
    import lightgbm as lgb

    import mpiboost

    out = []
    for seed in seeds:
        rng = np.random.default_rng(1000 + seed)
        perm = rng.permutation(len(y))
        cut = int(0.7 * len(y))
        tr, te = perm[:cut], perm[cut:]
        for obj in objectives:
            for rounds in rounds_list:
                ours = mpiboost.train({"algo": "gbdt", "rounds": rounds, "objective": obj, "seed": seed},
                                      X[tr], y[tr]).predict(X[te])
                theirs = lgb.train({"objective": obj, "verbose": -1, "seed": seed, "num_threads": 2},
                                   lgb.Dataset(X[tr], y[tr]), rounds).predict(X[te])
                for lib, p in (("mpiboost", ours), ("lightgbm", theirs)):
                    d = p - y[te]
                    out.append({"set": name, "seed": seed, "objective": obj, "rounds": rounds, "lib": lib,
                                "rmse": float(np.sqrt(np.mean(d * d))), "mae": float(np.mean(np.abs(d)))})
    return out


def table(results) -> str:
    lines = ["| set | objective | rounds | metric | mpiboost | LightGBM | mpiboost − LightGBM (paired) |",
             "|---|---|---:|---|---:|---:|---:|"]
    keys = sorted({(r["set"], r["objective"], r["rounds"]) for r in results}, key=lambda k: (list(SETS).index(k[0]),
                                                                                             k[1], k[2]))
    for s, obj, rounds in keys:
        for metric in (("rmse", "mae") if obj == "regression_l1" else ("rmse",)):
            a = {r["seed"]: r[metric] for r in results if (r["set"], r["objective"], r["rounds"], r["lib"])
                 == (s, obj, rounds, "mpiboost")}
            b = {r["seed"]: r[metric] for r in results if (r["set"], r["objective"], r["rounds"], r["lib"])
                 == (s, obj, rounds, "lightgbm")}
            seeds = sorted(a)
            x, z = np.array([a[k] for k in seeds]), np.array([b[k] for k in seeds])
            d = x - z
            se = lambda v: v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else float("nan")  # noqa: E731
            lines.append(f"| {s} | {obj} | {rounds} | {metric.upper()} | {x.mean():.4f} ± {se(x):.4f} | "
                         f"{z.mean():.4f} ± {se(z):.4f} | {d.mean():+.4f} ± {se(d):.4f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    ap.add_argument("--objectives", nargs="+", default=["regression", "regression_l1", "huber"])
    ap.add_argument("--rounds", nargs="+", type=int, default=[100, 300])
    ap.add_argument("--quick", action="store_true", help="2 splits of friedman1 and interactions, 100 rounds")
    args = ap.parse_args(argv)
    if args.quick:
        args.seeds, args.sets, args.rounds = 2, ["friedman1", "interactions"], [100]
    results = []
    for name in args.sets:
        if name == "abalone" and not (DATASETS / "abalone" / "abalone.data").exists():
            print(f"note: {DATASETS}/abalone/abalone.data not found: abalone skipped", file=sys.stderr)
            continue
        X, y = SETS[name]()
        results += run(name, X, y, range(args.seeds), args.objectives, args.rounds)
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
