#!/usr/bin/env python
"""Tree boosters against LightGBM, XGBoost and scikit-learn: accuracy, label noise, wall time.

Data (from --data-dir, default $MPIBOOST_DATASETS or datasets/ in the repository): the binary
sets a9a, ijcnn1 and cod-rna (converted and split as table2.py: random 4/5 train, 1/5 test per
seed), Adult (UCI ``adult.data`` + ``adult.test`` merged, 48,842 rows, categorical columns coded
as multiboost_tables.py converts them, the same random 4/5 / 1/5 split per seed), Long-Servedio at 0% and 10% noise (``mpiboost synth longservedio``, 20,000 training rows,
a clean 20,000-row test set), and the seven UCI multiclass sets of samme_tables.py.

For each seed, 1/5 of the training rows (a seeded draw) are held out as the validation rows of
every method: mpiboost gets them as ``--valid`` with ``--best-round`` (the round of lowest
validation error is kept), the peers as their early-stopping set (LightGBM and XGBoost: stop
after 50 rounds without improvement, best iteration kept; scikit-learn's
HistGradientBoostingClassifier: ``early_stopping=True`` on the same rows passed as its
validation fraction's complement is not offered, so it gets the train + validation rows with
its own 1/5 validation split, or, where a class of one row defeats that stratified split, the same
validation rows as the others, less those of classes it has no training row of). Every method trains at most --rounds (500) rounds.

mpiboost (``mpiexec -n 2``, one thread each): ``adaboost --loss logistic --weak-learner tree``,
``adaboost --weak-learner tree`` (exponential loss), ``smoothboost --weak-learner tree``, on the
multiclass sets ``softmax`` and ``samme --weak-learner tree``; all with their defaults (31
leaves, min 20 rows per leaf). Peers with their defaults and 2 threads.

``--noise 0.1`` flips 10% of the training and validation labels (binary sets; the test set stays
clean) and reports SmoothBoost-tree against LightGBM with the paired t-test over the seeds.

    python scripts/experiments/tree_tables.py                      # every set, 5 seeds
    python scripts/experiments/tree_tables.py --noise 0.1 --datasets a9a ijcnn1 cod-rna
    python scripts/experiments/tree_tables.py --quick              # smoke test
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402
import multiboost_tables as M  # noqa: E402
import samme_tables as S  # noqa: E402
import table2 as T2  # noqa: E402

BINARY = ["a9a", "ijcnn1", "cod-rna", "adult", "ls0", "ls10"]
MULTI = list(S.DATASETS)
OURS_BINARY = {
    "logistic": ["--algo", "adaboost", "--loss", "logistic", "--weak-learner", "tree"],
    "adaboost": ["--algo", "adaboost", "--weak-learner", "tree"],
    "smoothboost": ["--algo", "smoothboost", "--weak-learner", "tree"],
    # quantized gradients (--grad-bins): the accuracy study of the bins to default to
    "logistic-q4": ["--algo", "adaboost", "--loss", "logistic", "--weak-learner", "tree", "--grad-bins", "4"],
    "logistic-q16": ["--algo", "adaboost", "--loss", "logistic", "--weak-learner", "tree", "--grad-bins", "16"],
}
OURS_MULTI = {
    "softmax": ["--algo", "softmax"],
    "samme": ["--algo", "samme", "--weak-learner", "tree"],
    "softmax-q4": ["--algo", "softmax", "--grad-bins", "4"],
    "softmax-q16": ["--algo", "softmax", "--grad-bins", "16"],
    "softmax-q64": ["--algo", "softmax", "--grad-bins", "64"],
}
PEERS = ["lightgbm", "xgboost", "sklearn"]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=BINARY + MULTI, choices=BINARY + MULTI)
    p.add_argument("--data-dir", type=Path, default=C.DATASETS)
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    p.add_argument("--rounds", type=int, default=500)
    p.add_argument("--early-stop", type=int, default=0,
                   help="mpiboost: stop after this many rounds without a better validation error, as the peers' "
                        "50 (0: train every round, keep the best)")
    p.add_argument("--noise", type=float, default=0.0, help="fraction of training labels flipped (binary sets)")
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--peer-threads", type=int, default=2)
    p.add_argument("--methods", nargs="*", help="only these of ours (default: all)")
    p.add_argument("--peers", nargs="*", default=PEERS, choices=PEERS)
    p.add_argument("--workdir", type=Path, default=C.DEFAULT_WORKDIR)
    p.add_argument("--quick", action="store_true", help="smoke test: seed 1, 50 rounds, 3 data sets")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    args.convert_dir = args.workdir / "real"
    args.max_rows = None
    if args.quick:
        args.seeds, args.rounds = [1], 50
        args.datasets = [d for d in args.datasets if d in ("ijcnn1", "ls10", "yeast")]
        args.workdir = args.workdir / "quick"
    return args


def dataset(args, name: str):
    """(X, y, classes) of a data set: y in -1/+1 for the binary ones, class indices otherwise."""
    if name in ("ls0", "ls10"):
        return None
    if name in MULTI:
        sargs = argparse.Namespace(data_dir=args.data_dir, convert_dir=args.workdir / "samme" / "convert")
        d = S.full_dataset(sargs, name)
        y = d["y"]
        if d["classes"] is None:
            _, y = np.unique(y, return_inverse=True)
        return d["X"], y.astype(np.int32), None
    if name == "adult":
        d = M.adult(argparse.Namespace(workdir=args.workdir, data_dir=args.data_dir))
        return d["X"], np.asarray(d["y"]), None
    X, y = T2.full_dataset(args, name)
    return X, y, None


def splits(args, name: str, data, seed: int) -> dict:
    """train / valid / test files of one seed (noise flipped into train and valid only)."""
    from mpiboost.data.format import write_dataset

    base = args.workdir / "trees" / name / f"seed{seed}_noise{args.noise:g}"
    paths = {k: Path(f"{base}_{k}.h5") for k in ("train", "valid", "test")}
    if all(p.exists() for p in paths.values()):
        return paths
    base.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    if data is None:  # Long-Servedio
        from mpiboost.data.synth import longservedio

        g = longservedio.generate(n=20_000, noise=0.1 if name == "ls10" else 0.0, seed=seed)
        t = longservedio.generate(n=20_000, noise=0.0, seed=1000 + seed)
        X, y, Xte, yte = g.X, g.y, t.X, t.y
    else:
        X0, y0, _ = data
        perm = rng.permutation(len(y0))
        te, tr = np.sort(perm[: len(y0) // 5]), np.sort(perm[len(y0) // 5:])
        X, y, Xte, yte = X0[tr], y0[tr], X0[te], y0[te]
    y = y.copy()
    if args.noise > 0 and name not in MULTI:
        flip = rng.random(len(y)) < args.noise
        y[flip] = -y[flip]
    perm = rng.permutation(len(y))
    va, tr = np.sort(perm[: len(y) // 5]), np.sort(perm[len(y) // 5:])
    write_dataset(paths["train"], X[tr], y[tr])
    write_dataset(paths["valid"], X[va], y[va])
    write_dataset(paths["test"], Xte, yte)
    return paths


def run_ours(args, method: str, opts: list, paths: dict, seed: int) -> dict:
    model = paths["train"].with_name(paths["train"].stem + f"_{method}.h5")
    early = ["--early-stop", str(args.early_stop)] if args.early_stop else []
    cmd = [C.tool("mpiexec"), "-n", str(args.nproc), *C.MPIBOOST, "train", *opts, "--data", paths["train"],
           "--valid", paths["valid"], "--best-round", *early, "--rounds", str(args.rounds), "--seed", str(seed),
           "--threads", "1", "--model", model, "--quiet"]
    t0 = time.perf_counter()
    C.run(cmd)
    wall = time.perf_counter() - t0
    ev = json.loads(C.run([*C.MPIBOOST, "evaluate", "--model", model, "--data", paths["test"]]).stdout.strip()
                    .splitlines()[-1])
    from mpiboost.model import Model

    return {"error": ev["error"], "seconds": wall, "rounds": Model.load(model).n_rounds}


def run_peer(args, peer: str, paths: dict, seed: int, multi: bool) -> dict:
    Xtr, ytr = C.read_xy(paths["train"])
    Xva, yva = C.read_xy(paths["valid"])
    Xte, yte = C.read_xy(paths["test"])
    if multi:
        classes = np.unique(np.concatenate([ytr, yva]))
        code = {c: k for k, c in enumerate(classes)}
        ztr, zva = np.array([code[v] for v in ytr]), np.array([code[v] for v in yva])
    else:
        ztr, zva = (ytr > 0).astype(int), (yva > 0).astype(int)
    t0 = time.perf_counter()
    if peer == "lightgbm":
        import lightgbm as lgb

        params = {"verbose": -1, "num_threads": args.peer_threads, "seed": seed,
                  "objective": "multiclass" if multi else "binary"}
        if multi:
            params["num_class"] = len(classes)
        m = lgb.train(params, lgb.Dataset(Xtr, ztr), num_boost_round=args.rounds,
                      valid_sets=[lgb.Dataset(Xva, zva)], callbacks=[lgb.early_stopping(50, verbose=False)])
        p = m.predict(Xte, num_iteration=m.best_iteration)
        rounds = m.best_iteration
    elif peer == "xgboost":
        import xgboost as xgb

        params = {"tree_method": "hist", "nthread": args.peer_threads, "seed": seed, "verbosity": 0,
                  "objective": "multi:softprob" if multi else "binary:logistic"}
        if multi:
            params["num_class"] = len(classes)
        dtr, dva = xgb.DMatrix(Xtr, ztr), xgb.DMatrix(Xva, zva)
        m = xgb.train(params, dtr, num_boost_round=args.rounds, evals=[(dva, "valid")], early_stopping_rounds=50,
                      verbose_eval=False)
        p = m.predict(xgb.DMatrix(Xte), iteration_range=(0, m.best_iteration + 1))
        rounds = m.best_iteration + 1
    else:
        from sklearn.ensemble import HistGradientBoostingClassifier
        from threadpoolctl import threadpool_limits

        with threadpool_limits(args.peer_threads):
            m = HistGradientBoostingClassifier(max_iter=args.rounds, early_stopping=True, validation_fraction=0.2,
                                               random_state=seed)
            try:
                m.fit(np.concatenate([Xtr, Xva]), np.concatenate([ztr, zva]))
            except ValueError:  # a class of one row (abalone) defeats its stratified split: our validation rows
                seen = np.isin(zva, ztr)  # (its validation classes must be training classes)
                m.fit(Xtr, ztr, X_val=Xva[seen], y_val=zva[seen])
            p = m.predict_proba(Xte)
            if multi:  # its columns are the classes it saw in training
                full = np.zeros((p.shape[0], len(classes)))
                full[:, m.classes_] = p
                p = full
            else:
                p = p[:, 1]
        rounds = m.n_iter_
    wall = time.perf_counter() - t0
    pred = classes[np.argmax(p, axis=1)] if multi else np.where(p >= 0.5, 1, -1)
    return {"error": float(np.mean(pred != yte)), "seconds": wall, "rounds": int(rounds)}


def main(argv=None) -> int:
    args = parse_args(argv)
    rec = C.Records(args.workdir / "trees" / f"raw_noise{args.noise:g}.jsonl", fresh=not args.resume)
    for name in args.datasets:
        data = dataset(args, name)
        multi = name in MULTI
        ours = OURS_MULTI if multi else OURS_BINARY
        if args.noise > 0:
            if multi:
                continue
            ours = {"smoothboost": OURS_BINARY["smoothboost"]}
        for seed in args.seeds:
            paths = splits(args, name, data, seed)
            todo = [(m, o) for m, o in ours.items() if not args.methods or m in args.methods]
            for method, opts in todo:
                if rec.find(dataset=name, seed=seed, method=method):
                    continue
                rec.add({"dataset": name, "seed": seed, "method": method, **run_ours(args, method, opts, paths, seed)})
                C.log(f"{name} seed {seed} {method}: {rec.rows[-1]['error']:.4f}")
            for peer in args.peers if args.noise == 0 else ["lightgbm"]:
                if rec.find(dataset=name, seed=seed, method=peer):
                    continue
                rec.add({"dataset": name, "seed": seed, "method": peer, **run_peer(args, peer, paths, seed, multi)})
                C.log(f"{name} seed {seed} {peer}: {rec.rows[-1]['error']:.4f}")
    C.publish(render(args, rec), args.out)
    return 0


def render(args, rec) -> str:
    from scipy import stats

    methods = []
    for r in rec.rows:
        if r["method"] not in methods:
            methods.append(r["method"])
    lines = [f"Test error % (mean ± sd over seeds {args.seeds}; at most {args.rounds} rounds, the round of lowest "
             f"validation error kept){'; training labels flipped: ' + format(args.noise, 'g') if args.noise else ''}",
             "", "| data set | " + " | ".join(methods) + " | LightGBM - best of ours (points) |",
             "|---|" + "---|" * (len(methods) + 1)]
    for name in args.datasets:
        cells, means = [], {}
        for m in methods:
            e = [100 * r["error"] for r in rec.select(dataset=name, method=m)]
            if e:
                means[m] = float(np.mean(e))
                cells.append(f"{np.mean(e):.2f} ± {np.std(e, ddof=1) if len(e) > 1 else 0:.2f}")
            else:
                cells.append("")
        if not means:
            continue
        ours = [means[m] for m in means if m not in PEERS]
        gap = f"{means['lightgbm'] - min(ours):+.2f}" if "lightgbm" in means and ours else ""
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {gap} |")
    lines += ["", "Median wall seconds (train; ours: the whole `mpiexec -n 2` process)", "",
              "| data set | " + " | ".join(methods) + " |", "|---|" + "---|" * len(methods)]
    for name in args.datasets:
        cells = [f"{np.median([r['seconds'] for r in rec.select(dataset=name, method=m)]):.2f}"
                 if rec.select(dataset=name, method=m) else "" for m in methods]
        if any(cells):
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if args.noise > 0:
        lines += ["", "SmoothBoost-tree against LightGBM, paired over seeds:", ""]
        for name in args.datasets:
            a = {r["seed"]: r["error"] for r in rec.select(dataset=name, method="smoothboost")}
            b = {r["seed"]: r["error"] for r in rec.select(dataset=name, method="lightgbm")}
            common = sorted(set(a) & set(b))
            if len(common) > 1:
                d = [a[s] - b[s] for s in common]
                p = stats.ttest_rel([a[s] for s in common], [b[s] for s in common]).pvalue
                lines.append(f"- {name}: SmoothBoost - LightGBM = {100 * np.mean(d):+.2f} points, paired p = {p:.3g}")
    lines += ["", f"Command: `{C.command_line()}`"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
