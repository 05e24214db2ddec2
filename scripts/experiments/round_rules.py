#!/usr/bin/env python
"""Where a long run's best round lands, and what other rules for choosing it would give.

At 1,000 rounds on Adult MultiBoost tests behind pooled logistic trees although its guard keeps it
(docs/results/guards.md). This script looks at the rounds: each method is trained once for every round
(``--valid-fraction 0.2``, no cut, ``--baseline-guard off``), and every ``--every`` rounds its validation
rows and the test rows are scored. Printed per method, the mean over the repetitions of the test error
(the mean over the tasks) at the round each rule chooses:

* **error**: the earliest round of fewest validation errors (what ``--best-round`` keeps);
* **log-loss**: the earliest round of least validation log-loss (the model's own probabilities, as
  LightGBM's early stopping on ``binary_logloss``);
* **one-SE**: the earliest round whose validation errors are within one standard error (of the paired
  per-row differences) of the fewest;
* **oracle**: the round best on the test rows (no rule can choose it).

The sets and splits are ``guard_table.py``'s.

    python scripts/experiments/round_rules.py --sets adult --reps 5 --rounds 1000
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

METHODS = {
    "multiboost": ["--algo", "multiboost", *GT.OFF],
    "multiboost, --learning-rate 0.1": ["--algo", "multiboost", *GT.OFF, "--learning-rate", "0.1"],
    "multiboost, --loss logistic": ["--algo", "multiboost", *GT.OFF, "--loss", "logistic"],
    "pooled (logistic trees)": GT.METHODS["pooled (logistic trees)"],
}
RULES = ("error", "log-loss", "one-SE", "oracle")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sets", nargs="+", default=["adult"], choices=GT.SETS)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--rounds", type=int, default=1000)
    p.add_argument("--every", type=int, default=10, help="score the model every this many rounds")
    p.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    p.add_argument("--data-dir", type=Path, default=C.DATASETS)
    GT.data_options(p, "round_rules")
    return p.parse_args(argv)


def task_mean(values: np.ndarray, task: np.ndarray) -> float:
    """The mean over the tasks of each task's mean of ``values``."""
    return float(np.mean([values[task == k].mean() for k in np.unique(task)]))


def one_se(wrong: np.ndarray) -> int:
    """The earliest row of ``wrong`` (checkpoints x validation rows, 0/1) within one standard error of the
    paired per-row differences of the row of fewest errors."""
    best = int(np.argmin(wrong.sum(axis=1)))
    for i in range(best + 1):
        d = wrong[i].astype(np.int64) - wrong[best].astype(np.int64)
        se = d.std(ddof=1) / np.sqrt(d.size) if d.any() else 0.0
        if d.mean() <= se:
            return i
    return best


def rounds_of(args, name: str, method: str) -> dict:
    """Test error at each rule's round, per repetition."""
    from mpiboost.model import Model

    out = {rule: [] for rule in RULES}
    for r, train, test in GT.splits(args, name):
        data, te = MT.read_rows(train), MT.read_rows(test)
        valid = MT.valid_rows(data, r)
        va = {k: data[k][valid] for k in ("X", "y", "domain")}
        path = args.workdir / "runs" / f"{name}-rep{r}-{method.replace(' ', '_').replace(',', '')}.h5"
        C.run([*C.MPIBOOST, "train", *METHODS[method], "--data", str(train), "--rounds", str(args.rounds),
               "--valid-fraction", str(MT.VALID_FRACTION), "--seed", str(r), "--threads", str(args.threads),
               "--model", str(path), "--quiet"])
        model = Model.load(path)
        marks = list(range(args.every, int(model.n_rounds) + 1, args.every)) or [int(model.n_rounds)]
        wrong, loss, test_err = [], [], []
        for k in marks:
            m = model.truncated(k) if k < model.n_rounds else model
            s = np.asarray(m.decision_function(va["X"], va["domain"]), dtype=np.float64)
            yv = va["y"] > 0
            wrong.append((s >= 0) != yv)
            p = np.clip(m.proba_of_scores(s)[:, 1], 1e-12, 1 - 1e-12)
            loss.append(task_mean(-np.where(yv, np.log(p), np.log1p(-p)), va["domain"]))
            st = np.asarray(m.decision_function(te["X"], te["domain"]))
            test_err.append(task_mean((st >= 0) != (te["y"] > 0), te["domain"]))
        wrong, test_err = np.array(wrong), np.array(test_err)
        errors = [task_mean(w, va["domain"]) for w in wrong]
        chosen = {"error": int(np.argmin(errors)), "log-loss": int(np.argmin(loss)), "one-SE": one_se(wrong),
                  "oracle": int(np.argmin(test_err))}
        for rule, i in chosen.items():
            out[rule].append((marks[i], float(test_err[i])))
        C.log(f"{name} repetition {r} {method}: " + ", ".join(f"{rule} round {marks[i]} test {test_err[i]:.4f}"
                                                               for rule, i in chosen.items()))
    return out


def main(argv=None) -> int:
    args = parse_args(argv)
    for sub in ("splits", "runs"):
        (args.workdir / sub).mkdir(parents=True, exist_ok=True)
    lines = []
    for name in args.sets:
        rows = []
        for method in args.methods:
            got = rounds_of(args, name, method)
            rows.append([method, *(f"{np.mean([e for _, e in got[rule]]):.4f} (rounds "
                                   f"{', '.join(str(k) for k, _ in got[rule])})" for rule in RULES)])
        lines += [f"**{name}**: test error (mean over the tasks) at the round each rule chooses, mean over "
                  f"{args.reps} repetitions, {args.rounds} rounds, scored every {args.every}.", "",
                  C.markdown_table(["method", *RULES], rows), ""]
    C.publish("\n".join(lines), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
