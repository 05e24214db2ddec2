#!/usr/bin/env python
"""Many small imbalanced related tasks (``mpiboost synth manytasks``): mean per-task test AUC.

Methods on the same training and test draws (one task seed per seed s: the
training draw is ``--seed s``, the test draw ``--seed 1000 + s``):

* mpiboost ``is-multitask`` with its defaults, with ``--lambda auto --start auto``
  (chosen on 20% of the training rows by ``--valid-metric auc``), and with
  lambda = 0 (every task alone: AdaBoost per task);
* mpiboost ``adaboost`` on all tasks pooled;
* LightGBM's defaults pooled, with and without the task id as a categorical column;
* logistic regression per task (liblinear, C = 1; ``class_weight="balanced"``).

mpiboost runs in-process on one rank (the models do not depend on the
number of ranks). AUC per task, averaged over the tasks with both classes in
the test draw; mean ± sd over the seeds.

    python scripts/experiments/manytasks_auc.py                       # 30 tasks, --n 450, 3 seeds, T = 20 J
    python scripts/experiments/manytasks_auc.py --tasks 10 --seeds 1  # quicker
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np


def mean_task_auc(scores, y, task) -> float:
    from sklearn.metrics import roc_auc_score

    vals = [roc_auc_score(y[task == k], scores[task == k]) for k in np.unique(task)
            if len(np.unique(y[task == k])) == 2]
    return float(np.mean(vals))


def ours(train_path, X, task, algorithm, params, rounds, valid_fraction=None, valid_metric="error"):
    from mpiboost.api import train_files
    from mpiboost.comm import single

    run = {"algo": algorithm, "rounds": rounds, "seed": 1, "threads": 2, "valid_metric": valid_metric}
    if valid_fraction is not None:
        run.update(valid_fraction=valid_fraction, best_round=True)
    m = train_files({**run, **params}, [str(train_path)], comm=single())
    cols = np.empty((X.shape[1], X.shape[0]), dtype=np.uint8)
    m.bins.transform(X, out=cols.T)
    return m.decision_binned(cols, None, task if m.vote == "task" else None)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", type=int, default=30)
    p.add_argument("--n", type=int, default=450)
    p.add_argument("--positive-rate", type=float, default=0.05)
    p.add_argument("--shared", type=float, default=0.7)
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--rounds", type=int, help="boosting rounds (default 20 per task)")
    args = p.parse_args(argv)
    import lightgbm as lgb
    from sklearn.linear_model import LogisticRegression

    from mpiboost.data.format import write_dataset
    from mpiboost.data.synth import manytasks

    T = args.rounds or 20 * args.tasks
    results: dict = {}
    work = Path(tempfile.mkdtemp(prefix="manytasks-"))
    for s in args.seeds:
        kw = dict(tasks=args.tasks, positive_rate=args.positive_rate, shared=args.shared)
        tr = manytasks.generate(args.n, seed=s, task_seed=s, **kw)
        te = manytasks.generate(args.n, seed=1000 + s, task_seed=s, **kw)
        path = work / f"train{s}.h5"
        write_dataset(path, tr.X, tr.y, tr.domain, domain_names=tr.domain_names)
        Xte, yte, tte = te.X.astype(np.float64), te.y, te.domain
        got = {
            "is-multitask (defaults)": ours(path, Xte, tte, "is-multitask", {}, T),
            "is-multitask --lambda auto --start auto --valid-metric auc": ours(
                path, Xte, tte, "is-multitask", {"lam": "auto", "start": "auto"}, T, 0.2, "auc"),
            "is-multitask --lambda 0 (AdaBoost per task)": ours(path, Xte, tte, "is-multitask", {"lam": 0.0}, T),
            "adaboost pooled": ours(path, Xte, tte, "adaboost", {"weak_learner": "stump"}, T),  # stumps, as the table
        }
        for name, with_id in (("LightGBM pooled", False), ("LightGBM pooled + task id", True)):
            A = np.column_stack([tr.X, tr.domain]) if with_id else tr.X
            B = np.column_stack([Xte, tte]) if with_id else Xte
            clf = lgb.LGBMClassifier(n_jobs=2, random_state=s, verbose=-1)
            clf.fit(A, tr.y, **({"categorical_feature": [A.shape[1] - 1]} if with_id else {}))
            got[name] = clf.predict_proba(B)[:, 1]
        lr = np.zeros(len(yte))
        for k in np.unique(tte):
            rows, trows = tte == k, tr.domain == k
            if len(np.unique(tr.y[trows])) < 2:
                continue
            m = LogisticRegression(solver="liblinear", C=1.0, class_weight="balanced").fit(tr.X[trows], tr.y[trows])
            lr[rows] = m.decision_function(Xte[rows])
        got["logistic regression per task"] = lr
        for name, scores in got.items():
            results.setdefault(name, []).append(mean_task_auc(scores, yte, tte))
            print(f"seed {s} {name}: {results[name][-1]:.4f}", file=sys.stderr, flush=True)
    print(f"Mean per-task test AUC, {args.tasks} tasks, --n {args.n}, positive rate {args.positive_rate}, "
          f"shared {args.shared}, T = {T}, seeds {args.seeds}:\n")
    print("| method | AUC |\n|---|---|")
    for name, vals in results.items():
        print(f"| {name} | {np.mean(vals):.3f} ± {np.std(vals, ddof=1) if len(vals) > 1 else 0:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
