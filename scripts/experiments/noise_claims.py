#!/usr/bin/env python
"""The noise claim, re-checkable: SmoothBoost vs the peers with 10% of the training labels flipped.

Data: a9a, ijcnn1 and cod-rna as in ``table2.py`` (the same 4/5 - 1/5 split
per seed), and the Long-Servedio generator (``synth longservedio``). For
every seed s, 10% of the *training* labels are flipped (the rows drawn with
``numpy.random.default_rng(10_000 + s)``); the test rows stay clean (Long-Servedio:
a clean test draw with seed 1000 + s).

Methods, each on the same noisy training file:

* ``smoothboost``: SmoothBoost with its defaults (T rounds, no validation);
* ``smoothboost-auto``: ``--epsilon auto --valid-fraction 0.2`` (epsilon and
  the number of rounds chosen on 20% of the noisy training rows);
* ``adaboost``: AdaBoost, T rounds; ``adaboost-best``: AdaBoost with
  ``--valid-fraction 0.2 --best-round`` (the same choice of rounds);
* peers with their library defaults: LightGBM (``LGBMClassifier()``: 100
  trees of 31 leaves), XGBoost (``XGBClassifier()``, if installed), and
  logistic regression (liblinear, C = 1); AdaBoost-stump peers are not
  needed here (mpiboost's AdaBoost is the stump baseline);
* ``savage``: a published noise-robust booster, LightGBM's defaults with the
  Savage loss of Masnadi-Shirazi and Vasconcelos (NIPS 2008, "SavageBoost"):
  phi(v) = 1 / (1 + e^{2v})^2 of the margin v = y f, bounded, so a flipped
  row's pull on the trees is capped; a custom objective with the exact
  gradient and the curvature floored at 1e-3 where the loss is concave.

``--weak-learner tree`` runs mpiboost's algorithms with trees (31 leaves, the
tree defaults) instead of stumps; records are kept per noise level, weak
learner and T, so several settings share a work directory.

mpiboost runs as a user would: ``mpiexec -n 2 python -m mpiboost train ...``,
scored with ``mpiboost evaluate``. Errors are mean ± sample sd over the seeds;
each comparison is a paired t-test over the seeds (one-sided p for "SmoothBoost
defaults lower than the other method", and the mean paired difference).

    python scripts/experiments/noise_claims.py            # 4 data sets x 5 seeds (about 15 minutes on 2 cores)
    python scripts/experiments/noise_claims.py --quick    # smoke test: 5,000 rows, 1 seed, 200 rounds
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402
import table2  # noqa: E402

REAL = list(table2.DATASETS)
SETS = REAL + ["synth"]
OURS = {
    "smoothboost": "mpiboost SmoothBoost, defaults",
    "smoothboost-auto": "mpiboost SmoothBoost, `--epsilon auto --valid-fraction 0.2`",
    "smoothboost-paper": "mpiboost SmoothBoost, `--noise-check off` (SmoothBoost whatever the labels)",
    "adaboost": "mpiboost AdaBoost",
    "adaboost-best": "mpiboost AdaBoost, `--valid-fraction 0.2 --best-round`",
}
PEER_TITLES = {"lightgbm": "LightGBM defaults", "savage": "LightGBM, Savage loss (robust)",
               "xgboost": "XGBoost defaults", "lr": "LR (liblinear, C=1)"}
PEER_MODULES = {"lightgbm": "lightgbm", "savage": "lightgbm", "xgboost": "xgboost", "lr": "sklearn"}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=SETS, choices=SETS)
    p.add_argument("--data-dir", type=Path, default=C.DATASETS)
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    p.add_argument("--noise", type=float, default=0.1, help="fraction of training labels flipped")
    p.add_argument("--rounds", type=int, default=1000)
    p.add_argument("--weak-learner", choices=("stump", "tree"), default="stump",
                   help="mpiboost's weak learner (stump: the histogram search)")
    p.add_argument("--max-rows", type=int, help="a random subset of this many rows per real data set")
    p.add_argument("--synth-n", type=int, default=100_000, help="Long-Servedio training rows")
    p.add_argument("--synth-test-n", type=int, default=100_000)
    p.add_argument("--methods", nargs="+", default=list(OURS), choices=list(OURS))
    p.add_argument("--peers", nargs="*", default=list(PEER_TITLES), choices=list(PEER_TITLES))
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--peer-threads", type=int, default=2)
    p.add_argument("--workdir", type=Path, default=C.DEFAULT_WORKDIR)
    p.add_argument("--quick", action="store_true", help="smoke test: 5,000 rows, seed 1, 200 rounds")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--render-only", action="store_true")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    args.convert_dir = args.workdir / "real"
    if args.quick:
        args.max_rows, args.seeds, args.rounds = 5_000, [1], 200
        args.synth_n, args.synth_test_n = 5_000, 5_000
        args.workdir = args.workdir / "quick"
    return args


def flip(y: np.ndarray, noise: float, seed: int) -> np.ndarray:
    """``y`` with a ``noise`` fraction of its labels flipped (rows drawn from ``default_rng(10_000 + seed)``)."""
    out = y.copy()
    rows = np.random.default_rng(10_000 + seed).random(len(y)) < noise
    out[rows] = -out[rows]
    return out


def files(args, name: str, seed: int) -> tuple[Path, Path]:
    """(noisy training file, clean test file) of one data set and seed."""
    from mpiboost.data.format import write_dataset

    if name == "synth":
        clean = C.synth_longservedio(args.workdir, args.synth_n, 0.0, seed)
        test = C.synth_longservedio(args.workdir, args.synth_test_n, 0.0, 1000 + seed)
    else:
        X, y = table2.full_dataset(args, name)
        (args.workdir / "real" / name).mkdir(parents=True, exist_ok=True)
        clean, test = table2.split(args, name, X, y, seed)
    noisy = clean.with_name(clean.stem + f"_flip{args.noise:g}.h5")
    if not noisy.exists():
        X, y = C.read_xy(clean)
        write_dataset(noisy, X, flip(y, args.noise, seed), attrs={"flipped": args.noise, "flip_seed": 10_000 + seed})
    return noisy, test


def run_ours(args, method: str, name: str, train: Path, test: Path, seed: int) -> dict:
    algo = "smoothboost" if method.startswith("smoothboost") else "adaboost"
    extra = []
    if method == "smoothboost-auto":
        extra = ["--epsilon", "auto", "--valid-fraction", "0.2"]
    elif method == "smoothboost-paper":
        extra = ["--noise-check", "off"]
    elif method == "adaboost-best":
        extra = ["--valid-fraction", "0.2", "--best-round"]
    wl = "histogram" if args.weak_learner == "stump" else "tree"
    tag = f"noise_{name}_{method}_{args.weak_learner}_T{args.rounds}_n{args.noise:g}_s{seed}"
    res = C.train_mpiboost(args.workdir, tag, train, algo=algo, weak_learner=wl,
                           rounds=args.rounds, seed=seed, nproc=args.nproc, threads=args.threads, extra=extra)
    ev = C.evaluate_mpiboost(res["model"], test)
    s = res["summary"]
    return {"error": ev["error"], "seconds": s["seconds"]["total"], "rounds_kept": s["rounds"],
            "chosen": s.get("chosen"), "best_round": s.get("best_round"),
            "noise_check": (s.get("noise_check") or {}).get("chosen")}


def savage_objective(f: np.ndarray, data):
    """Gradient and (floored) curvature of the Savage loss 1 / (1 + e^{2 y f})^2 in the raw score f."""
    y = 2.0 * data.get_label() - 1.0
    s = 1.0 / (1.0 + np.exp(np.clip(2.0 * y * f, -50, 50)))  # sigma(-2v)
    grad = -4.0 * y * s * s * (1.0 - s)
    hess = 8.0 * s * s * (1.0 - s) * (2.0 - 3.0 * s)
    return grad, np.maximum(hess, 1e-3)


def run_savage(Xtr, ytr, Xte, yte, seed: int, threads: int) -> dict:
    import time

    import lightgbm as lgb

    t0 = time.perf_counter()
    params = {"objective": savage_objective, "num_threads": threads, "seed": seed, "verbose": -1}
    booster = lgb.train(params, lgb.Dataset(Xtr, (ytr > 0).astype(np.float64)), num_boost_round=100)
    fit_s = time.perf_counter() - t0
    pred = np.where(booster.predict(Xte, raw_score=True) > 0, 1, -1)
    return {"error": float(np.mean(pred != np.where(yte > 0, 1, -1))), "seconds": fit_s}


def run_peer(key: str, Xtr, ytr, Xte, yte, seed: int, threads: int) -> dict:
    if key == "savage":
        return run_savage(Xtr, ytr, Xte, yte, seed, threads)
    if key == "lightgbm":
        import lightgbm as lgb

        m = lgb.LGBMClassifier(n_jobs=threads, random_state=seed, verbose=-1)
    elif key == "xgboost":
        import xgboost as xgb

        m = xgb.XGBClassifier(n_jobs=threads, random_state=seed, verbosity=0)
    else:
        from sklearn.linear_model import LogisticRegression

        m = LogisticRegression(solver="liblinear", C=1.0)
    y01 = (ytr > 0).astype(np.int32)
    out = C._fit_score(m, Xtr, y01, Xte, (yte > 0).astype(np.int32))
    return out


def setting(args) -> dict:
    """What one of our records depends on besides the data set, seed and method."""
    return {"noise": args.noise, "weak_learner": args.weak_learner, "rounds": args.rounds}


def select(rec: C.Records, args, dataset: str, method: str) -> list:
    key = setting(args) if method in OURS else {"noise": args.noise}
    return [r for r in rec.select(dataset=dataset, method=method) if all(r.get(k) == v for k, v in key.items())]


def run_all(args, rec: C.Records, peers: list) -> None:
    for name in args.datasets:
        for seed in args.seeds:
            train, test = files(args, name, seed)
            for method in args.methods:
                key = dict(dataset=name, seed=seed, method=method, **setting(args))
                if rec.find(**key):
                    continue
                out = run_ours(args, method, name, train, test, seed)
                rec.add({**key, **out})
                C.log(f"{name} seed {seed} {method}: {100 * out['error']:.2f}% ({out['rounds_kept']} rounds"
                      f"{', ' + str(out['chosen']) if out.get('chosen') else ''}, {out['seconds']:.1f} s)")
            todo = [k for k in peers if not rec.find(dataset=name, seed=seed, method=k, noise=args.noise)]
            if todo:
                Xtr, ytr = C.read_xy(train)
                Xte, yte = C.read_xy(test)
                for k in todo:
                    out = run_peer(k, Xtr, ytr, Xte, yte, seed, args.peer_threads)
                    rec.add({"dataset": name, "seed": seed, "method": k, "noise": args.noise, **out})
                    C.log(f"{name} seed {seed} {k}: {100 * out['error']:.2f}%")


def paired(a: list, b: list) -> str:
    """Mean paired difference a - b in points and the one-sided paired t-test p (H1: a < b)."""
    from scipy import stats

    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) < 2 or len(a) != len(b):
        return "–"
    d = 100 * (a - b)
    if np.allclose(d, d[0]):
        return f"{d.mean():+.2f} (constant)"
    p = stats.ttest_rel(a, b, alternative="less").pvalue
    return f"{d.mean():+.2f} (p = {p:.3f})"


def render(args, rec: C.Records, peers: list, notes: list) -> str:
    methods = list(args.methods) + peers
    titles = {**OURS, **PEER_TITLES}
    head = ["method"] + [("Long–Servedio" if d == "synth" else d) for d in args.datasets]
    rows, diffs = [], []
    base = {d: {r["seed"]: r["error"] for r in select(rec, args, d, "smoothboost")} for d in args.datasets}
    for m in methods:
        cells, dcells = [], []
        for d in args.datasets:
            rs = {r["seed"]: r["error"] for r in select(rec, args, d, m) if r["seed"] in args.seeds}
            cells.append(C.pct(list(rs.values())) if rs else "–")
            common = sorted(set(rs) & set(base[d]))
            dcells.append(paired([base[d][s] for s in common], [rs[s] for s in common]) if m != "smoothboost" else "")
        rows.append([titles[m]] + cells)
        if m != "smoothboost":
            diffs.append([titles[m]] + dcells)
    chosen = []
    for d in args.datasets:
        rs = [r for r in select(rec, args, d, "smoothboost-auto") if r["seed"] in args.seeds]
        if rs:
            chosen.append(f"{d}: ε = {', '.join(str(r['chosen']['epsilon']) for r in rs)}, rounds kept "
                          f"{', '.join(str(r['rounds_kept']) for r in rs)}")
    out = [
        f"Test error (%) on clean test rows, {100 * args.noise:g}% of the training labels flipped, mean ± sd over "
        f"seeds {args.seeds}; mpiboost T = {args.rounds}, {'stumps (`histogram`)' if args.weak_learner == 'stump' else 'trees of 31 leaves'}, "
        f"{args.nproc} ranks × {args.threads} thread:",
        "",
        C.markdown_table(head, rows),
        "",
        "SmoothBoost defaults minus each method, mean paired difference in points (negative: SmoothBoost "
        "better) and one-sided paired t-test p (H1: SmoothBoost defaults lower):",
        "",
        C.markdown_table(head, diffs),
        "",
    ]
    if chosen:
        out += ["Chosen on validation by `--epsilon auto` (per seed): " + "; ".join(chosen) + ".", ""]
    if notes:
        out += ["Skipped peers: " + " ".join(notes), ""]
    return "\n".join(out)


def main(argv=None) -> int:
    args = parse_args(argv)
    peers, notes = C.importable([(k, PEER_TITLES[k], PEER_MODULES[k]) for k in args.peers])
    rec = C.Records(args.workdir / "results" / "noise_claims.jsonl", fresh=not (args.resume or args.render_only))
    # earlier records without the setting keys were T = 1000 stumps at 10%
    for r in rec.rows:
        r.setdefault("noise", 0.1)
        if r["method"] in OURS:
            r.setdefault("weak_learner", "stump")
            r.setdefault("rounds", 1000)
    if not args.render_only:
        run_all(args, rec, peers)
    C.publish(render(args, rec, peers, notes), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
