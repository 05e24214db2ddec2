#!/usr/bin/env python
"""IS multi-task boosting against LightGBM pooled (± task id) and the simplest baselines, with paired tests.

Data sets (each seed s draws a training set with ``--seed s`` and a test set
with ``--seed 1000 + s`` of the same tasks, ``--task-seed s``):

* ``manytasks``: ``mpiboost synth manytasks`` (30 tasks, ``--n 450``: 180-630
  rows a task, 5% positives, a shared direction and one of each task's own);
* ``ds1`` / ``ds2``: the IS multi-task paper's Datasets 1 and 2
  (``synth multitask --dataset D --n 400 --paper-noise``; 600 test rows a task,
  the same label flips): three similar tasks, and two groups of three tasks
  with opposite rules.

Methods (``--methods``; mpiboost in-process on one rank, the same model as on
any number of ranks; T = ``--steps-per-task`` x J steps, default 20 x J):

* ``defaults``: ``is-multitask`` as shipped (the logistic forest as the start,
  lambda 0, nu = 1.5 / sqrt(T / J), tasks in cycles);
* ``defaults-tree``: the same with ``--weak-learner tree``;
* ``paper-A``: the paper's rule, ``--lambda 0.1 --start zero --task-order random``;
* ``alone``: every task alone (AdaBoost per task, ``--lambda 0 --start zero``);
* ``adaboost-pooled``: ``adaboost`` on every task's rows;
* ``lgb-pooled`` / ``lgb-id``: LightGBM's defaults on every task's rows, without
  and with the task id as a categorical column;
* ``lr-task``: logistic regression per task (liblinear, C = 1, balanced classes).

Prints, per data set, the mean per-task test AUC and test error (mean ± sd
over seeds), then the paired difference of the defaults against LightGBM with
the task id, pooled AdaBoost and each task alone over the (task, seed) AUCs:
mean, standard error, wins / losses.

    python scripts/experiments/multitask_claims.py                              # all, 5 seeds
    python scripts/experiments/multitask_claims.py --datasets manytasks --seeds 1 2 3
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from manytasks_auc import ours  # noqa: E402

PAPER = {"lam": 0.1, "start": "zero", "task_order": "random"}
OURS = {
    "defaults": ("is-multitask", {}),
    "defaults-tree": ("is-multitask", {"weak_learner": "tree"}),
    "paper-A": ("is-multitask", PAPER),
    "alone": ("is-multitask", {"lam": 0.0, "start": "zero"}),
    "adaboost-pooled": ("adaboost", {"weak_learner": "stump"}),  # the defaults' learner (the table's rows)
}
PEERS = ("lgb-pooled", "lgb-id", "lr-task")
METHODS = (*OURS, *PEERS)
PAIRED = ("lgb-id", "adaboost-pooled", "alone")


def draw(name: str, s: int, shared: float = 0.7):
    """(train, test) SynthData of data set ``name`` for seed ``s`` (``shared``: how related the many tasks are)."""
    from mpiboost.data.synth import manytasks, multitask

    if name == "manytasks":
        return (manytasks.generate(450, seed=s, task_seed=s, shared=shared),
                manytasks.generate(450, seed=1000 + s, task_seed=s, shared=shared))
    d = int(name[-1])
    return (multitask.generate(400, seed=s, task_seed=s, dataset=d, paper_noise=True),
            multitask.generate(600, seed=1000 + s, task_seed=s, dataset=d, paper_noise=True))


def task_aucs(scores, y, task) -> dict:
    """Each task's test AUC (tasks with both classes in the test draw)."""
    from sklearn.metrics import roc_auc_score

    return {int(k): float(roc_auc_score(y[task == k], scores[task == k])) for k in np.unique(task)
            if len(np.unique(y[task == k])) == 2}


def peer_scores(method: str, tr, Xte, tte, s: int, threads: int) -> np.ndarray:
    """Scores of a peer (>= 0 means the positive class)."""
    if method.startswith("lgb"):
        import lightgbm as lgb

        with_id = method == "lgb-id"
        A = np.column_stack([tr.X, tr.domain]) if with_id else tr.X
        B = np.column_stack([Xte, tte]) if with_id else Xte
        clf = lgb.LGBMClassifier(n_jobs=threads, random_state=s, verbose=-1)
        clf.fit(A, tr.y, **({"categorical_feature": [A.shape[1] - 1]} if with_id else {}))
        return clf.predict_proba(B)[:, 1] - 0.5
    from sklearn.linear_model import LogisticRegression

    out = np.zeros(len(tte))
    for k in np.unique(tte):
        trows = tr.domain == k
        if len(np.unique(tr.y[trows])) == 2:
            m = LogisticRegression(solver="liblinear", C=1.0, class_weight="balanced")
            out[tte == k] = m.fit(tr.X[trows], tr.y[trows]).decision_function(Xte[tte == k])
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=["manytasks", "ds1", "ds2"], choices=["manytasks", "ds1", "ds2"])
    p.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    p.add_argument("--steps-per-task", type=int, default=20, help="T = this x the number of tasks (default 20)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--shared", type=float, default=0.7,
                   help="manytasks: how related the tasks are (1: one task, 0: unrelated; default 0.7)")
    args = p.parse_args(argv)
    from mpiboost.data.format import write_dataset

    work = Path(tempfile.mkdtemp(prefix="multitask-claims-"))
    for name in args.datasets:
        auc: dict = {m: {} for m in args.methods}  # method -> {(seed, task): AUC}
        err: dict = {m: [] for m in args.methods}
        for s in args.seeds:
            tr, te = draw(name, s, args.shared)
            J = len(np.unique(tr.domain))
            path = work / f"{name}-{s}.h5"
            write_dataset(path, tr.X, tr.y, tr.domain, domain_names=tr.domain_names)
            Xte, tte = te.X.astype(np.float64), te.domain
            for m in args.methods:
                if m in OURS:
                    algo, params = OURS[m]
                    sc = ours(path, Xte, tte, algo, dict(params), args.steps_per_task * J)
                else:
                    sc = peer_scores(m, tr, Xte, tte, s, args.threads)
                auc[m].update({(s, k): v for k, v in task_aucs(sc, te.y, tte).items()})
                err[m].append(float(np.mean(np.where(sc >= 0, 1, -1) != te.y)))
                print(f"{name} seed {s} {m}: AUC {np.mean([v for (q, _), v in auc[m].items() if q == s]):.4f} "
                      f"error {err[m][-1]:.4f}", file=sys.stderr, flush=True)
        shared = f", --shared {args.shared}" if name == "manytasks" else ""
        print(f"\n{name}{shared}: mean per-task test AUC and test error, seeds {args.seeds}, "
              f"T = {args.steps_per_task} x J steps\n")
        print("| method | AUC | error |\n|---|---|---|")
        for m in args.methods:
            per_seed = [np.mean([v for (q, _), v in auc[m].items() if q == s]) for s in args.seeds]
            sd = lambda v: np.std(v, ddof=1) if len(v) > 1 else 0.0  # noqa: E731
            print(f"| {m} | {np.mean(per_seed):.3f} ± {sd(per_seed):.3f} | {np.mean(err[m]):.3f} ± {sd(err[m]):.3f} |")
        if "defaults" in args.methods:
            print("\n| defaults − | mean AUC difference | SE | wins / losses over (task, seed) |\n|---|---|---|---|")
            for other in PAIRED:
                if other not in args.methods:
                    continue
                keys = sorted(set(auc["defaults"]) & set(auc[other]))
                d = np.array([auc["defaults"][k] - auc[other][k] for k in keys])
                se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else 0.0
                print(f"| {other} | {d.mean():+.4f} | {se:.4f} | {int((d > 0).sum())} / {int((d < 0).sum())} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
