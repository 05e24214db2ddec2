"""The adaboost and samme defaults (trees) against their paper preset (stumps) and LightGBM's defaults.

Binary: a9a (a9a / a9a.t), ijcnn1 (ijcnn1.bz2 / ijcnn1.tst.bz2) and cod-rna (a seeded 4/5-1/5 split of the
training part). Multiclass: balance-scale and car (seeded 4/5-1/5 splits), satimage (sat.trn / sat.tst). At ``--rounds`` 100 and 1,000 (no early
stopping for anyone: the rounds a user gives); one split per set unless ``--seeds``. Test error %, in-process
through the public API, one rank.

    MPIBOOST_DATASETS=/path/to/datasets python scripts/experiments/defaults_check.py
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
DATASETS = Path(os.environ.get("MPIBOOST_DATASETS") or REPO / "datasets")


def _svm(path: Path, n_features: int):
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(str(path), n_features=n_features)
    return X.toarray(), y


def load(name: str, seed: int):
    if name == "a9a":
        (X, y), (Xt, yt) = _svm(DATASETS / "a9a" / "a9a", 123), _svm(DATASETS / "a9a" / "a9a.t", 123)
        return X, y, Xt, yt
    if name == "ijcnn1":
        (X, y), (Xt, yt) = _svm(DATASETS / "ijcnn1" / "ijcnn1.bz2", 22), _svm(DATASETS / "ijcnn1" / "ijcnn1.tst.bz2", 22)
        return X, y, Xt, yt
    if name == "satimage":
        tr, te = (np.loadtxt(DATASETS / "satimage" / f) for f in ("sat.trn", "sat.tst"))
        # a copy may start with a row of column numbers (1 .. 37): not a pixel row
        tr, te = (a[1:] if a[0, -1] == a.shape[1] else a for a in (tr, te))
        return tr[:, :-1], tr[:, -1].astype(int), te[:, :-1], te[:, -1].astype(int)
    if name == "cod-rna":
        raw = np.loadtxt(DATASETS / "cod-rna" / "cod-rna.txt")
        X, y = raw[:, 1:], raw[:, 0]
    elif name == "balance-scale":
        rows = [line.strip().split(",") for line in open(DATASETS / "balance-scale" / "balance-scale.data")
                if line.strip()]
        X = np.array([[float(v) for v in r[1:]] for r in rows])
        y = np.unique([r[0] for r in rows], return_inverse=True)[1]
    elif name == "car":
        rows = [line.strip().split(",") for line in open(DATASETS / "car" / "car.data") if line.strip()]
        cols = list(zip(*rows))
        X = np.column_stack([np.unique(c, return_inverse=True)[1] for c in cols[:-1]]).astype(float)
        y = np.unique(cols[-1], return_inverse=True)[1]
    else:
        raise ValueError(name)
    perm = np.random.default_rng(1000 + seed).permutation(len(y))
    cut = int(0.8 * len(y))
    return X[perm[:cut]], y[perm[:cut]], X[perm[cut:]], y[perm[cut:]]


def main(argv=None) -> int:
    import lightgbm as lgb

    import mpiboost

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", nargs="+", default=["a9a", "ijcnn1", "cod-rna", "balance-scale", "car", "satimage"])
    ap.add_argument("--rounds", nargs="+", type=int, default=[100, 1000])
    ap.add_argument("--seeds", type=int, default=1)
    args = ap.parse_args(argv)
    print("| set | rounds | algorithm | default (trees) | --preset paper (stumps) | LightGBM defaults | seconds (trees / stumps) |")
    print("|---|---:|---|---:|---:|---:|---|")
    for name in args.sets:
        algo = "samme" if name in ("balance-scale", "car", "satimage") else "adaboost"
        for rounds in args.rounds:
            errs = {"tree": [], "stump": [], "lgb": []}
            secs = {"tree": [], "stump": []}
            for seed in range(args.seeds):
                X, y, Xt, yt = load(name, seed)
                for key, extra in (("tree", {}), ("stump", {"preset": "paper"})):
                    t0 = time.perf_counter()
                    m = mpiboost.train({"algo": algo, "rounds": rounds, "seed": seed, **extra}, X, y)
                    secs[key].append(time.perf_counter() - t0)
                    errs[key].append(100 * float(np.mean(m.predict(Xt) != yt)))
                K = len(np.unique(y))
                params = {"verbose": -1, "seed": seed, "num_threads": 2,
                          **({"objective": "multiclass", "num_class": K} if K > 2 else {"objective": "binary"})}
                classes, yi = np.unique(y, return_inverse=True)
                b = lgb.train(params, lgb.Dataset(X, yi), rounds)
                p = b.predict(Xt)
                pred = classes[p.argmax(axis=1)] if K > 2 else classes[(p > 0.5).astype(int)]
                errs["lgb"].append(100 * float(np.mean(pred != yt)))
            print(f"| {name} | {rounds} | {algo} | {np.mean(errs['tree']):.2f} | {np.mean(errs['stump']):.2f} | "
                  f"{np.mean(errs['lgb']):.2f} | {np.median(secs['tree']):.1f} / {np.median(secs['stump']):.1f} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
