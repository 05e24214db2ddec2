#!/usr/bin/env python
"""IS multi-task boosting on the paper's synthetic Datasets 1 and 2: methods A, B, C, D over seeded trials.

Per trial r: ``synth multitask --dataset D --n 400 --paper-noise --task-seed r
--seed r`` (400 training rows per task, label flips of 5 / 10 / 15 % cycling
over the tasks) and 600 test rows per task (``--seed 1000 + r``) with the same
flips (so the Bayes error is 0.10, as in the reference numbers) and, beside
them, the same rows' clean labels. Every
method fits on 80 % of each task's training rows and validates on the other
20 % (``--valid-fraction 0.2``, per (task, class) group):

* A: ``is-multitask --lambda auto`` (lambda from {0, 0.001, ..., 1} and the
  rounds chosen together on the validation rows);
* B: the same with ``--lambda-scale is`` (lambda / IS distance of per-task fits);
* C: ``is-multitask --lambda 0`` (AdaBoost on each task alone), rounds validated;
* D: ``adaboost`` on the pooled tasks, rounds validated.

Printed: the mean test error (0/1) per method and dataset with its standard
deviation over the trials, the mean per task, and paired win counts over the
(task, trial) pairs.

    python scripts/experiments/multitask_tables.py                      # 20 trials, both datasets
    python scripts/experiments/multitask_tables.py --trials 3 --datasets 1
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

METHODS = {
    "A": ["--algo", "is-multitask", "--lambda", "auto"],
    "B": ["--algo", "is-multitask", "--lambda", "auto", "--lambda-scale", "is"],
    "C": ["--algo", "is-multitask", "--lambda", "0"],
    "D": ["--algo", "adaboost"],
}


def _cli(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "mpiboost", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"mpiboost {' '.join(args)} failed:\n{proc.stderr[-2000:]}")
    return proc.stdout


def trial(work: str, dataset: int, r: int, rounds: int, steps: int) -> dict:
    """Per method, the per-task test errors of trial r."""
    train, test = os.path.join(work, f"d{dataset}-{r}.h5"), os.path.join(work, f"d{dataset}-{r}-test.h5")
    _cli("synth", "multitask", "--dataset", str(dataset), "--n", "400", "--paper-noise", "--task-seed", str(r),
         "--seed", str(r), "--out", train)
    _cli("synth", "multitask", "--dataset", str(dataset), "--n", "600", "--paper-noise", "--task-seed", str(r),
         "--seed", str(1000 + r), "--out", test)
    clean = os.path.join(work, f"d{dataset}-{r}-clean.h5")
    import h5py

    from mpiboost.data.format import write_dataset

    with h5py.File(test, "r") as f:  # the same test rows with their labels before the flips
        write_dataset(clean, f["X"][()], f["synth/y_clean"][()], f["domain"][()],
                      domain_names=[v.decode() if isinstance(v, bytes) else str(v) for v in f.attrs["domain_names"]])
    out = {}
    for name, opts in METHODS.items():
        model = os.path.join(work, f"m{dataset}-{r}-{name}.h5")
        extra = ["--steps-per-visit", str(steps)] if "is-multitask" in opts else []
        _cli("train", *opts, *extra, "--data", train, "--rounds", str(rounds), "--valid-fraction", "0.2",
             "--best-round", "--model", model, "--quiet", "--seed", str(r))
        for key, path in ((name, test), (name + "-clean", clean)):
            report = json.loads(_cli("evaluate", "--model", model, "--data", path))
            out[key] = [report["per_domain"][k]["error"] for k in sorted(report["per_domain"],
                                                                           key=lambda s: int(s[4:]))]
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", type=int, nargs="+", default=[1, 2], choices=[1, 2])
    p.add_argument("--trials", type=int, default=20)
    p.add_argument("--rounds", type=int, default=600, help="steps at most (the paper's T_max = 120 outer rounds x S = 5)")
    p.add_argument("--steps-per-visit", type=int, default=5)
    p.add_argument("--out", help="write every trial's per-task errors here (JSON)")
    args = p.parse_args(argv)
    rows, record = [], {}
    with tempfile.TemporaryDirectory() as work:
        for d in args.datasets:
            errs = {m: [] for m in METHODS}  # (trials, tasks)
            clean = {m: [] for m in METHODS}
            for r in range(args.trials):
                res = trial(work, d, r, args.rounds, args.steps_per_visit)
                for m in METHODS:
                    errs[m].append(res[m])
                    clean[m].append(res[m + "-clean"])
                C.log(f"dataset {d} trial {r}: " + ", ".join(f"{m} {np.mean(res[m]):.3f}" for m in METHODS))
            E = {m: np.array(v) for m, v in errs.items()}
            Ec = {m: np.array(v) for m, v in clean.items()}
            record[d] = {"noisy_test": {m: v.tolist() for m, v in E.items()},
                         "clean_test": {m: v.tolist() for m, v in Ec.items()}}
            for m, v in E.items():
                wins = "" if m == "C" else f"{int(np.sum(v < E['C']))} / {int(np.sum(v == E['C']))} / " \
                                            f"{int(np.sum(v > E['C']))}"
                rows.append([str(d), m, f"{v.mean():.3f} ± {v.mean(axis=1).std():.3f}",
                             f"{Ec[m].mean():.3f}", " / ".join(f"{x:.3f}" for x in v.mean(axis=0)), wins])
    if args.out:
        Path(args.out).write_text(json.dumps(record))
    C.publish(C.markdown_table(["dataset", "method", "mean test error ± sd over trials (noisy test labels)",
                                "clean test labels", "per task (noisy)",
                                "vs C: wins / ties / losses over (task, trial)"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
