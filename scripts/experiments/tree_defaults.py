"""Stumps or trees by default? The special algorithms at their defaults with each weak learner, held-out error.

For every algorithm whose default weak learner is still the stump: its defaults with ``--weak-learner stump``
against the same defaults with ``--weak-learner tree``, at ``--rounds`` 100 and 300 (no early stopping: the
rounds a user gives), over seeds, on the sets of its setting:

* smoothboost: a9a (a seeded 10,000-row sample of its training part), ijcnn1, cod-rna (seeded 4/5-1/5 split)
  and the Long-Servedio generator, clean and with 10% of the training labels flipped (clean test rows);
* agnostic-batch: balance-scale, car, yeast (seeded splits) and satimage;
* multiboost, fedmultiboost: the multisource generator (three conflicting domains), and Adult split by sex
  is not used here (its domains agree); the mean of the domains' test errors;
* msdtra and tradaboost: the transfer generator (100 target rows, two helpful and two misleading sources),
  the target's test error;
* is-multitask: the multitask generator's Datasets 1 and 2, the mean of the tasks' test errors.

Prints one Markdown row per (algorithm, set, rounds): mean test error % of each learner over the seeds, the
paired difference tree - stump with its standard error, and the median seconds. In-process through the
public API, one rank.

    MPIBOOST_DATASETS=/path/to/datasets python scripts/experiments/tree_defaults.py [--algos ...] [--seeds 1 2 3]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from defaults_check import load as load_set  # noqa: E402  (the real sets' loaders and splits)


def _flip(y: np.ndarray, rate: float, seed: int) -> np.ndarray:
    if rate <= 0:
        return y
    rng = np.random.default_rng(7000 + seed)
    labels = np.unique(y)
    out = y.copy()
    flip = rng.random(y.size) < rate
    out[flip] = np.where(out[flip] == labels[0], labels[-1], labels[0])
    return out


def multiclass_set(name: str, seed: int):
    """(X, y, Xt, yt, None, None) of a multiclass set (yeast: a seeded 4/5-1/5 split, the name column left out)."""
    if name != "yeast":
        return (*load_set(name, seed), None, None)
    from defaults_check import DATASETS

    rows = [line.split() for line in open(DATASETS / "yeast" / "yeast.data") if line.strip()]
    X = np.array([[float(v) for v in r[1:-1]] for r in rows])
    y = np.unique([r[-1] for r in rows], return_inverse=True)[1]
    perm = np.random.default_rng(1000 + seed).permutation(len(y))
    cut = int(0.8 * len(y))
    return X[perm[:cut]], y[perm[:cut]], X[perm[cut:]], y[perm[cut:]], None, None


def binary_set(name: str, seed: int, noise: float):
    """(X, y, Xt, yt, None, None) of a binary set, the training labels flipped at ``noise``."""
    if name == "long-servedio":
        from mpiboost.data.synth import longservedio

        tr, te = longservedio.generate(5000, seed=seed), longservedio.generate(5000, seed=1000 + seed)
        X, y, Xt, yt = tr.X, tr.y, te.X, te.y
    else:
        X, y, Xt, yt = load_set(name, seed)
        if name == "a9a":
            keep = np.random.default_rng(500 + seed).choice(len(y), 10000, replace=False)
            X, y = X[keep], y[keep]
    return X, _flip(np.asarray(y), noise, seed), Xt, yt, None, None


def domain_set(name: str, seed: int):
    """(X, y, Xt, yt, domain, test domain) of a multi-domain, transfer or multi-task generator."""
    from mpiboost.data.synth import multisource, multitask, transfer

    if name == "multisource":
        tr, te = (multisource.generate(4500, seed=s, task_seed=seed) for s in (seed, 1000 + seed))
    elif name == "transfer":
        kw = dict(sources=4, related=2, target_n=100, task_seed=seed)
        tr = transfer.generate(1500, seed=seed, **kw)
        te = transfer.generate(0, seed=1000 + seed, **{**kw, "target_n": 3000})
    else:
        dataset = int(name[-1])
        tr = multitask.generate(400, seed=seed, task_seed=seed, dataset=dataset)
        te = multitask.generate(600, seed=1000 + seed, task_seed=seed, dataset=dataset)
    return tr.X, tr.y, te.X, te.y, tr.domain, te.domain


SETTINGS = {
    "smoothboost": [(s, n) for s in ("a9a", "ijcnn1", "cod-rna", "long-servedio") for n in (0.0, 0.1)],
    "agnostic-batch": [(s, 0.0) for s in ("balance-scale", "car", "yeast", "satimage")],
    "multiboost": [("multisource", 0.0)],
    "fedmultiboost": [("multisource", 0.0)],
    "msdtra": [("transfer", 0.0)],
    "tradaboost": [("transfer", 0.0)],
    "is-multitask": [("multitask1", 0.0), ("multitask2", 0.0)],
}


def error(model, Xt, yt, dt, algo: str) -> float:
    """Test error %: over the rows, the mean over domains or tasks, or the target's (domain 0)."""
    if dt is None:
        return 100 * float(np.mean(model.predict(Xt) != yt))
    pred = model.predict(Xt, dt) if algo == "is-multitask" else model.predict(Xt)
    wrong = pred != yt
    if algo in ("msdtra", "tradaboost"):
        return 100 * float(np.mean(wrong[dt == 0]))
    return 100 * float(np.mean([np.mean(wrong[dt == k]) for k in np.unique(dt)]))


def main(argv=None) -> int:
    import mpiboost

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--algos", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    ap.add_argument("--rounds", nargs="+", type=int, default=[100, 300])
    ap.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    args = ap.parse_args(argv)
    print("| algorithm | set | rounds | stumps | trees | trees − stumps (± se) | seconds (stumps / trees) |")
    print("|---|---|---:|---:|---:|---:|---|")
    for algo in args.algos:
        for name, noise in SETTINGS[algo]:
            for rounds in args.rounds:
                errs, secs = {"stump": [], "tree": []}, {"stump": [], "tree": []}
                for seed in args.seeds:
                    if algo in ("smoothboost", "agnostic-batch"):
                        X, y, Xt, yt, dom, dt = binary_set(name, seed, noise) if algo == "smoothboost" else \
                            multiclass_set(name, seed)
                    else:
                        X, y, Xt, yt, dom, dt = domain_set(name, seed)
                    for learner in ("stump", "tree"):
                        params = {"algo": algo, "rounds": rounds, "seed": seed, "weak-learner": learner}
                        t0 = time.perf_counter()
                        m = mpiboost.train(params, X, y, dom)
                        secs[learner].append(time.perf_counter() - t0)
                        errs[learner].append(error(m, Xt, yt, dt, algo))
                diff = np.array(errs["tree"]) - np.array(errs["stump"])
                se = diff.std(ddof=1) / np.sqrt(diff.size) if diff.size > 1 else float("nan")
                label = name + (f", {noise:.0%} flipped" if noise else "")
                print(f"| {algo} | {label} | {rounds} | {np.mean(errs['stump']):.2f} | {np.mean(errs['tree']):.2f} | "
                      f"{diff.mean():+.2f} ± {se:.2f} | {np.median(secs['stump']):.1f} / "
                      f"{np.median(secs['tree']):.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
