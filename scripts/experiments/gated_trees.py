#!/usr/bin/env python
"""Why MultiBoost with the paper's gates falls short of a model per domain: the suspects varied one at a time.

With ``--gates paper`` each round boosts one domain's gated tree (h(x) Q(k|x), k the domain of the largest
soft-max weight), so each domain gets about a third of the trees; on ``multisource`` it erred 0.036, where
AdaBoost trees on each domain alone err 0.001. The suspects, each varied alone from the paper-gated run
(100 rounds, trees, ``--baseline-guard off``):

* **Q spills over**: a gated tree acts on every row in proportion to Q(k|x), so a domain's tree moves the
  rows of a domain whose rule conflicts with it. ``--q-temperature 0.0625`` sharpens Q toward hard gates
  (Q tells the domains apart on 98.8% of the test rows).
* **The step**: the exact line search on the soft-max of the domain losses stops a domain's step where its
  loss meets the others' (``--temperature`` 0, the exact max, and 1, softer; ``--step closed-form``,
  AdaBoost's own step of the gated tree).
* **The shrinkage**: ``--learning-rate 1`` (the default with trees is 1/sqrt(T)).
* **Leaves of little curvature**: a gated tree's rows carry the curvature ``h Q^2`` and the gradient
  ``g Q``, so a leaf of rows Q gives to other domains has a Newton value that grows as 1/Q;
  ``--min-child-weight 5`` keeps such leaves out.
* **Too few rounds**: ``--rounds 300``.

Beside them: the shared gates (the default), AdaBoost trees on each domain alone and logistic trees that may
split on the domain (the guard's ``per-domain`` and ``pooled-id``). Two rows then separate Q's errors from the
rest (``--no-q-floor`` leaves them out): the model per domain scored with the domain a domain classifier
predicts for each test row (the floor of any model that knows the domain only through Q), and the paper-gated
run with the domain one-hot among the features, where Q is exact. The sets and the protocol are
``guard_table.py``'s (``--valid-fraction 0.2 --best-round``, test error on fresh draws, mean over the domains).

    python scripts/experiments/gated_trees.py --sets multisource related --reps 3
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402
import guard_table as GT  # noqa: E402
import multitask_tables as MT  # noqa: E402

PAPER = ["--algo", "multiboost", "--gates", "paper", *GT.OFF]
VARIANTS = {
    "paper gates": PAPER,
    "paper gates, sharp Q (--q-temperature 0.0625)": [*PAPER, "--q-temperature", "0.0625"],
    "paper gates, exact max (--temperature 0)": [*PAPER, "--temperature", "0"],
    "paper gates, softer max (--temperature 1)": [*PAPER, "--temperature", "1"],
    "paper gates, AdaBoost's step (--step closed-form)": [*PAPER, "--step", "closed-form"],
    "paper gates, no shrinkage (--learning-rate 1)": [*PAPER, "--learning-rate", "1"],
    "paper gates, sharp Q and no shrinkage": [*PAPER, "--q-temperature", "0.0625", "--learning-rate", "1"],
    "paper gates, heavier leaves (--min-child-weight 5)": [*PAPER, "--min-child-weight", "5"],
    "shared gates (the default)": ["--algo", "multiboost", *GT.OFF],
    "each task alone (AdaBoost trees)": GT.METHODS["each task alone (AdaBoost trees)"],
    "pooled + task id (logistic trees)": GT.METHODS["pooled + task id (logistic trees)"],
}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sets", nargs="+", default=["multisource", "related"], choices=GT.SETS)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--methods", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    p.add_argument("--data-dir", type=Path, default=C.DATASETS)
    p.add_argument("--q-floor", action=argparse.BooleanOptionalAction, default=True,
                   help="add the two rows that separate Q's errors from the rest")
    GT.data_options(p, "gated")
    return p.parse_args(argv)


def with_domain_columns(src: Path, dst: Path) -> None:
    """``src``'s rows with the domain one-hot among the features (x10): a domain classifier that is exact."""
    from mpiboost.data.format import read_arrays, write_dataset

    a = read_arrays(src)
    X, d = np.asarray(a["X"], dtype=np.float64), np.asarray(a["domain"])
    k = int(d.max()) + 1
    write_dataset(dst, np.hstack([X, 10.0 * np.eye(k)[d]]), a["y"], d,
                  domain_names=list(a.get("domain_names") or [f"domain{j + 1}" for j in range(k)]))


def q_floor(args, name: str) -> dict:
    """Two rows that tell Q's errors apart from the rest, per repetition: the model per domain scored with the
    domain a domain classifier predicts (scikit-learn's L2 logistic regression, as MultiBoost's Q) instead of
    the row's own, and the paper-gated run on the rows with the domain among the features (Q exact)."""
    from sklearn.linear_model import LogisticRegression
    from mpiboost.model import Model

    out = {"each task alone (AdaBoost trees), scored at Q's domain": [],
           "paper gates, the domain among the features (Q exact)": []}
    MT.METHODS["paper gates"] = PAPER
    for r, train, test in GT.splits(args, name):
        tr, te = MT.read_rows(train), MT.read_rows(test)
        model = args.workdir / "runs" / f"{name}-rep{r}-per-domain.h5"
        C.run([*C.MPIBOOST, "train", *VARIANTS["each task alone (AdaBoost trees)"], "--data", str(train), "--rounds",
               str(args.rounds), "--valid-fraction", str(MT.VALID_FRACTION), "--best-round", "--seed", str(r),
               "--threads", str(args.threads), "--model", str(model), "--quiet"])
        q = LogisticRegression(C=1.0, max_iter=5000).fit(tr["X"], tr["domain"])
        score = Model.load(model).decision_function(te["X"], q.predict(te["X"]))
        wrong = np.where(score >= 0, 1, -1) != te["y"]
        errors = [float(wrong[te["domain"] == k].mean()) for k in np.unique(te["domain"])]
        out["each task alone (AdaBoost trees), scored at Q's domain"].append(
            {"errors": errors, "guard": None, "seconds": 0.0, "q_accuracy": float(q.score(te["X"], te["domain"]))})
        files = [args.workdir / "splits" / f"{name}-rep{r}-{part}-domain.h5" for part in ("train", "test")]
        for src, dst in zip((train, test), files):
            with_domain_columns(src, dst)
        res = MT.run_mpiboost(str(args.workdir / "runs"), f"{name}-rep{r}-exact-q", "paper gates", str(files[0]),
                              {"test": str(files[1])}, seed=r, rounds=args.rounds, steps=5, threads=args.threads,
                              n_fit=int((~MT.valid_rows(tr, r)).sum()))
        out["paper gates, the domain among the features (Q exact)"].append(
            {"errors": res["errors"]["test"], "guard": None, "seconds": res["seconds"]})
    return out


def main(argv=None) -> int:
    args = parse_args(argv)
    for sub in ("splits", "runs"):
        (args.workdir / sub).mkdir(parents=True, exist_ok=True)
    GT.METHODS.update(VARIANTS)
    args.peer_keys = []
    results = {name: GT.run_set(args, name) for name in args.sets}
    notes = []
    if args.q_floor:
        for name in args.sets:
            extra = q_floor(args, name)
            results[name].update(extra)
            acc = [rep["q_accuracy"] for rep in extra["each task alone (AdaBoost trees), scored at Q's domain"]]
            notes.append(f"{name}: the domain classifier's test accuracy {np.mean(acc):.4f} (mean of {len(acc)})")
    C.publish(GT.render(args, results) + "\n".join(notes) + "\n", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
