#!/usr/bin/env python
"""IS multi-task boosting on the paper's synthetic Datasets 1 and 2: methods A, B, C, D and LightGBM peers.

Per trial r: ``synth multitask --dataset D --n 400 --paper-noise --task-seed r
--seed r`` (400 training rows per task, label flips of 5 / 10 / 15 % cycling
over the tasks) and 600 test rows per task (``--seed 1000 + r``) with the same
flips (so the Bayes error is 0.10, as in the reference numbers) and, beside
them, the same rows' clean labels. Every
method fits on 80 % of each task's training rows and validates on the other
20 % (``--valid-fraction 0.2``, per (task, class) group), with ``--seed r``:

* A: ``is-multitask --lambda auto`` with the paper's zero start and uniform
  task draws (``--start zero --task-order random``; lambda from {0, 0.001,
  ..., 1} and the rounds chosen together on the validation rows);
* B: the same with ``--lambda-scale is`` (lambda / IS distance of per-task fits);
* C: ``is-multitask --lambda 0`` (AdaBoost on each task alone), rounds validated;
* D: ``adaboost`` on the pooled tasks, rounds validated;
* C, rounds per task: for each task k ``adaboost --train-domain k`` on the
  fit rows with ``--valid`` its own validation rows and ``--best-round``
  (``--c-rounds`` 200 at most): method C as the paper validates it, each task
  its own T (C above shares one T, chosen by the mean over tasks).

Beyond the paper (its rules kept as options):

* defaults: ``is-multitask`` as shipped (the logistic forest on every task's
  rows as the start, lambda 0, nu = 1.5 / sqrt(T / J), tasks in cycles);
* A, start auto: ``--start auto --start-rounds R``: validation also chooses
  among the paper's zero start, every task starting from one AdaBoost on all
  the tasks' rows and the logistic forest (each cut at its best validation
  round);
* A, start auto, ν 0.1 (long): the same with ``--learning-rate 0.1`` (each step a
  tenth of the exact one) and ``--long-rounds`` (2,000) steps;
* D (long): D with ``--long-rounds`` rounds;
* A, start auto (long): A, start auto with ``--long-rounds`` steps (not run by
  by default on these small tasks; multitask_real.py runs it).

LightGBM peers (``--peers``, the default; ``--no-peers`` leaves them out) run
in this process on exactly the same rows: the validation rows are those of
``mpiboost.data.subsets.valid_mask`` (the rule behind ``--valid-fraction``, called on
the training file's domains and labels with the trial's seed), and every
mpiboost run is checked to have fitted on as many rows as the peers. Each peer
trains max(``--rounds``, ``--long-rounds``) boosting rounds per model (learning rate 0.1, LightGBM's
deterministic mode, ``--threads`` threads, seed r) and keeps the iteration of
the lowest validation 0/1 error, the earliest of equal ones (as
``--best-round``):

* LGB per task, stumps: one model per task (num_leaves 2, max_depth 1),
  validated on its own task's validation rows;
* LGB per task, 31 leaves: the same with LightGBM's default trees;
* LGB pooled + task id, stumps: one model on every task's rows with the task id
  as a categorical feature, validated on all the validation rows by the mean
  of the per-task errors (as mpiboost validates A, B and C; D, one ensemble
  for all tasks, by the pooled error);
* LGB pooled + task id, 31 leaves.

Printed: the mean test error (0/1) per method and dataset with its standard
deviation over the trials, the same on the clean test labels, the mean per
task, and paired win counts against C over the (task, trial) pairs.

    python scripts/experiments/multitask_tables.py                      # 20 trials, both datasets
    python scripts/experiments/multitask_tables.py --trials 3 --datasets 1
    python scripts/experiments/multitask_tables.py --trials 2 --no-peers --threads 1 --out raw.json
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Optional

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

PAPER = ["--start", "zero", "--task-order", "random"]  # the paper's rule (the defaults go beyond it)
METHODS = {
    "A": ["--algo", "is-multitask", "--lambda", "auto", *PAPER],
    "B": ["--algo", "is-multitask", "--lambda", "auto", "--lambda-scale", "is", *PAPER],
    "C": ["--algo", "is-multitask", "--lambda", "0", *PAPER],
    "D": ["--algo", "adaboost", "--weak-learner", "stump"],
    # the defaults: the logistic forest as the start, lambda 0, nu = 1.5 / sqrt(T / J), tasks in cycles
    "defaults": ["--algo", "is-multitask"],
    # beyond the paper: validation chooses the zero start or every task starting from the pooled AdaBoost
    # (validated, at most the round budget), with lambda and the rounds ...
    "A+start": ["--algo", "is-multitask", "--lambda", "auto", "--start", "auto", "--start-rounds", "{rounds}"],
    # ... and, besides, steps shrunk to a tenth of the exact step, with the longer budget
    "A+start+nu": ["--algo", "is-multitask", "--lambda", "auto", "--start", "auto", "--start-rounds", "{rounds}",
                   "--learning-rate", "0.1"],
    "D-long": ["--algo", "adaboost", "--weak-learner", "stump"],  # D with the longer budget
    # A, start auto with the longer budget and the exact steps (for large tasks whose pooled fit wants more rounds)
    "A+start-long": ["--algo", "is-multitask", "--lambda", "auto", "--start", "auto", "--start-rounds", "{rounds}"],
}
LONG = {"A+start+nu", "D-long", "A+start-long"}  # the methods run with --long-rounds steps
SYNTH_METHODS = [m for m in METHODS if m != "A+start-long"]  # the synthetic tables' (their tasks are small)
VALID_FRACTION = 0.2
# key: (label, one model per task?, num_leaves)
PEERS = {
    "lgb-task-stumps": ("LGB per task, stumps", True, 2),
    "lgb-task-31": ("LGB per task, 31 leaves", True, 31),
    "lgb-pooled-stumps": ("LGB pooled + task id, stumps", False, 2),
    "lgb-pooled-31": ("LGB pooled + task id, 31 leaves", False, 31),
}
LABEL = {**{m: m for m in METHODS}, "C1": "C, rounds per task", "A+start": "A, start auto",
         "A+start+nu": "A, start auto, ν 0.1 (long)", "D-long": "D (long)", "A+start-long": "A, start auto (long)", **{k: v[0] for k, v in PEERS.items()}}


def _cli(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "mpiboost", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"mpiboost {' '.join(args)} failed:\n{proc.stderr[-2000:]}")
    return proc.stdout


# ------------------------------------------------------------------- rows
def domain_names(path) -> list:
    import h5py

    with h5py.File(path, "r") as f:
        return [v.decode() if isinstance(v, bytes) else str(v) for v in f.attrs["domain_names"]]


def read_rows(path) -> dict:
    """X, y (-1/+1), domain ids and domain names of an mpiboost HDF5 file, in the file's row order."""
    import h5py

    with h5py.File(path, "r") as f:
        out = {"X": f["X"][()], "y": f["y"][()], "domain": f["domain"][()].astype(np.int64)}
    out["names"] = domain_names(path)
    if not set(np.unique(out["y"]).tolist()) <= {-1, 1}:
        raise SystemExit(f"{path}: labels other than -1/+1")
    return out


def valid_rows(data: dict, seed: int, fraction: float = VALID_FRACTION) -> np.ndarray:
    """The validation rows of ``mpiboost train --valid-fraction F --seed S`` on one rank (a boolean mask).

    ``valid_mask`` is the function ``split_valid`` applies; on one rank it reads
    only the shard's domains, its labels as load_inputs holds them (-1/+1 int8:
    the file's classes sorted, the larger one +1) and the domain count, so a
    stand-in shard gives the very same mask without starting MPI in this
    process (whose children run mpiboost themselves).
    """
    from mpiboost.data.subsets import valid_mask

    shard = SimpleNamespace(n_classes=2, regression=False, n_domains=int(data["domain"].max()) + 1, domain=data["domain"],
                            y=np.where(data["y"] > 0, 1, -1).astype(np.int8))
    return valid_mask(shard, fraction, seed, SimpleNamespace(size=1, rank=0))


def per_task_errors(pred: np.ndarray, data: dict) -> list:
    wrong = pred != data["y"]
    return [float(wrong[data["domain"] == k].mean()) for k in range(len(data["names"]))]


# ---------------------------------------------------------------- mpiboost
def run_mpiboost(work: str, tag: str, method: str, train: str, tests: dict, *, seed: int, rounds: int, steps: int,
                 threads: int, n_fit: int, long_rounds: Optional[int] = None) -> dict:
    """Train ``method`` through ``mpiboost train`` and score it with ``mpiboost evaluate`` on each test file.

    ``rounds`` steps at most, ``long_rounds`` for the methods in LONG."""
    if method in LONG and long_rounds:
        rounds = long_rounds
    opts = [o.replace("{rounds}", str(rounds)) for o in METHODS[method]]
    model, metrics = os.path.join(work, f"{tag}-{method}.h5"), os.path.join(work, f"{tag}-{method}.jsonl")
    extra = ["--steps-per-visit", str(steps)] if "is-multitask" in opts else []
    t0 = time.perf_counter()
    _cli("train", *opts, *extra, "--data", train, "--rounds", str(rounds), "--valid-fraction", str(VALID_FRACTION),
         "--best-round", "--model", model, "--quiet", "--seed", str(seed), "--threads", str(threads),
         "--metrics", metrics)
    wall = time.perf_counter() - t0
    with open(metrics) as f:
        summary = next(r["summary"] for r in map(json.loads, f) if "summary" in r)
    os.unlink(metrics)
    if summary["n"] != n_fit:  # the peers' fit rows must be mpiboost's
        raise SystemExit(f"{tag} {method}: mpiboost fitted {summary['n']} rows, the peers {n_fit}")
    names = domain_names(train)
    errors = {}
    for key, path in tests.items():
        report = json.loads(_cli("evaluate", "--model", model, "--data", path))
        errors[key] = [report["per_domain"][n]["error"] for n in names]
    os.unlink(model)
    return {"errors": errors, "seconds": wall, "best_round": summary.get("best_round", summary["rounds"]),
            "lambda": summary.get("chosen", {}).get("lam"), "chosen": summary.get("chosen"),
            "guard": guard_choice(summary), "guard_record": summary.get("baseline_guard")}


def guard_choice(summary: dict) -> Optional[str]:
    """What the baseline guard chose, where it ran (None without a guard or with ``--baseline-guard off``)."""
    rec = summary.get("baseline_guard") or {}
    return rec.get("chosen") if rec.get("tried") else None


def run_c_per_task(work: str, tag: str, data: dict, valid: np.ndarray, tests: dict, *, seed: int, rounds: int,
                   threads: int) -> dict:
    """Method C with the rounds validated per task, as the paper's protocol has it: for each task k,
    ``adaboost --train-domain k`` on the fit rows, ``--valid`` that task's validation rows, ``--best-round``."""
    from mpiboost.data.format import write_dataset

    fit = os.path.join(work, f"{tag}-fit.h5")
    write_dataset(fit, data["X"][~valid], data["y"][~valid], data["domain"][~valid], domain_names=data["names"])
    errors = {key: [] for key in tests}
    best, wall = [], 0.0
    for k in range(len(data["names"])):
        rows = valid & (data["domain"] == k)
        vfile, model = os.path.join(work, f"{tag}-valid{k}.h5"), os.path.join(work, f"{tag}-c{k}.h5")
        write_dataset(vfile, data["X"][rows], data["y"][rows], data["domain"][rows], domain_names=data["names"])
        metrics = model + ".jsonl"
        t0 = time.perf_counter()
        _cli("train", "--algo", "adaboost", "--weak-learner", "stump", "--train-domain", str(k), "--data", fit, "--valid", vfile, "--rounds",
             str(rounds), "--best-round", "--model", model, "--quiet", "--seed", str(seed), "--threads",
             str(threads), "--metrics", metrics)
        wall += time.perf_counter() - t0
        with open(metrics) as f:
            summary = next(r["summary"] for r in map(json.loads, f) if "summary" in r)
        best.append(summary.get("best_round", summary["rounds"]))
        for key, path in tests.items():
            report = json.loads(_cli("evaluate", "--model", model, "--data", path))
            errors[key].append(report["per_domain"][data["names"][k]]["error"])
        for path in (vfile, model, metrics):
            os.unlink(path)
    os.unlink(fit)
    return {"errors": errors, "seconds": wall, "best_round": best}


# ------------------------------------------------------------------- peers
def _lgb_fit(X, y, Xv, yv, *, leaves: int, seed: int, rounds: int, threads: int, categorical=(), task=None):
    """A LightGBM booster of ``rounds`` rounds and its best iteration on (Xv, yv), the earliest of the lowest
    validation 0/1 error; with ``task`` (the validation rows' tasks) the error is the mean of the per-task
    errors, which is what mpiboost validates a model of one ensemble per task on."""
    import lightgbm as lgb

    params = {"objective": "binary", "learning_rate": 0.1, "num_leaves": leaves,
              "max_depth": 1 if leaves == 2 else -1, "metric": "binary_error" if task is None else "None",
              "deterministic": True, "force_col_wise": True, "num_threads": threads, "seed": seed, "verbose": -1}
    cat = list(categorical) or "auto"
    dtrain = lgb.Dataset(X, (y > 0).astype(np.int32), params=params, categorical_feature=cat, free_raw_data=False)
    dvalid = lgb.Dataset(Xv, (yv > 0).astype(np.int32), reference=dtrain, categorical_feature=cat)
    groups = [] if task is None else [task == k for k in np.unique(task)]

    def task_error(prob, _):  # a built-in objective hands the metric probabilities
        wrong = (prob > 0.5) != (yv > 0)
        return "task_error", float(np.mean([wrong[g].mean() for g in groups])), False

    history: dict = {}
    booster = lgb.train(params, dtrain, num_boost_round=rounds, valid_sets=[dvalid], valid_names=["valid"],
                        feval=task_error if groups else None, callbacks=[lgb.record_evaluation(history)])
    curve = history["valid"]["binary_error" if task is None else "task_error"]
    return booster, int(np.argmin(curve)) + 1


def _with_task(data: dict) -> np.ndarray:
    return np.column_stack([data["X"], data["domain"].astype(data["X"].dtype)])


def run_peer(key: str, data: dict, valid: np.ndarray, tests: dict, *, seed: int, rounds: int, threads: int) -> dict:
    """Peer ``key`` fitted on ``data``'s rows outside ``valid``, validated on those in it, scored on ``tests``."""
    _, per_task, leaves = PEERS[key]
    kw = dict(leaves=leaves, seed=seed, rounds=rounds, threads=threads)
    preds = {t: np.zeros(len(d["y"]), dtype=np.int8) for t, d in tests.items()}
    best = []
    t0 = time.perf_counter()
    if per_task:
        for k in range(len(data["names"])):
            fit, val = (data["domain"] == k) & ~valid, (data["domain"] == k) & valid
            booster, it = _lgb_fit(data["X"][fit], data["y"][fit], data["X"][val], data["y"][val], **kw)
            best.append(it)
            for t, d in tests.items():
                rows = d["domain"] == k
                if rows.any():
                    preds[t][rows] = np.where(booster.predict(d["X"][rows], num_iteration=it) > 0.5, 1, -1)
    else:
        X = _with_task(data)
        booster, it = _lgb_fit(X[~valid], data["y"][~valid], X[valid], data["y"][valid],
                               categorical=[X.shape[1] - 1], task=data["domain"][valid], **kw)
        best.append(it)
        for t, d in tests.items():
            preds[t][:] = np.where(booster.predict(_with_task(d), num_iteration=it) > 0.5, 1, -1)
    wall = time.perf_counter() - t0
    return {"errors": {t: per_task_errors(preds[t], d) for t, d in tests.items()}, "seconds": wall,
            "best_round": best}


def peer_keys(enabled: bool) -> list:
    if not enabled:
        return []
    ok, notes = C.importable([("lightgbm", "LightGBM peers", "lightgbm")])
    for note in notes:
        C.log(note)
    return list(PEERS) if ok else []


# ------------------------------------------------------------------ trials
def trial(work: str, dataset: int, r: int, rounds: int, steps: int, threads: int, peers: list,
          c_rounds: int = 200, long_rounds: Optional[int] = None) -> dict:
    """Per method, the per-task test errors of trial r (``name`` noisy labels, ``name-clean`` clean ones)."""
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
    data = read_rows(train)
    valid = valid_rows(data, r)
    out, seconds, best, lam = {}, {}, {}, {}
    for name in SYNTH_METHODS:
        res = run_mpiboost(work, f"m{dataset}-{r}", name, train, {name: test, name + "-clean": clean}, seed=r,
                           rounds=rounds, steps=steps, threads=threads, n_fit=int((~valid).sum()),
                           long_rounds=long_rounds)
        out.update(res["errors"])
        seconds[name], best[name], lam[name] = res["seconds"], res["best_round"], res["lambda"]
    res = run_c_per_task(work, f"m{dataset}-{r}", data, valid, {"C1": test, "C1-clean": clean}, seed=r,
                         rounds=c_rounds, threads=threads)
    out.update(res["errors"])
    seconds["C1"], best["C1"] = res["seconds"], res["best_round"]
    tests = {"noisy": read_rows(test), "clean": read_rows(clean)}
    for key in peers:
        res = run_peer(key, data, valid, tests, seed=r, rounds=max(rounds, long_rounds or 0), threads=threads)
        out[key], out[key + "-clean"] = res["errors"]["noisy"], res["errors"]["clean"]
        seconds[key], best[key] = res["seconds"], res["best_round"]
    return {"errors": out, "seconds": seconds, "best_round": best, "lambda": lam}


def chosen_text(chosen: Optional[dict]) -> str:
    """What validation chose, briefly: "0.03" (lambda) or "0.03 pooled" (and the start)."""
    if not chosen:
        return ""
    text = f"{chosen['lam']:g}" if "lam" in chosen else ""
    return f"{text} {chosen['start']}".strip() if "start" in chosen else text


def wins(v: np.ndarray, base: np.ndarray) -> str:
    """Wins / ties / losses of v against base over the paired cells (lower error wins)."""
    return f"{int(np.sum(v < base))} / {int(np.sum(v == base))} / {int(np.sum(v > base))}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", type=int, nargs="+", default=[1, 2], choices=[1, 2])
    p.add_argument("--trials", type=int, default=20)
    p.add_argument("--rounds", type=int, default=600,
                   help="steps at most (the paper's T_max = 120 outer rounds x S = 5); the peers' rounds per model")
    p.add_argument("--steps-per-visit", type=int, default=5)
    p.add_argument("--long-rounds", type=int, default=2000, help="steps at most of the methods with shrunk steps "
                   "(and of D beside them); the peers' rounds per model are the larger budget")
    p.add_argument("--c-rounds", type=int, default=200, help="rounds at most of each task's AdaBoost in "
                   "'C, rounds per task' (the paper's protocol: T <= 200 per task)")
    p.add_argument("--peers", action=argparse.BooleanOptionalAction, default=True,
                   help="the LightGBM peers (default: on)")
    p.add_argument("--threads", type=int, default=2, help="threads of every mpiboost run and LightGBM model")
    p.add_argument("--out", help="write every trial's per-task errors here (JSON; with each method's wall "
                                 "seconds, best rounds and the lambdas A and B chose)")
    args = p.parse_args(argv)
    peers = peer_keys(args.peers)
    methods = [*SYNTH_METHODS, "C1", *peers]
    rows, record = [], {}
    with tempfile.TemporaryDirectory() as work:
        for d in args.datasets:
            errs = {m: [] for m in methods}  # (trials, tasks)
            clean = {m: [] for m in methods}
            seconds = {m: [] for m in methods}
            best = {m: [] for m in methods}
            lam = {m: [] for m in SYNTH_METHODS if "--lambda" in METHODS[m] and "auto" in METHODS[m]}
            for r in range(args.trials):
                res = trial(work, d, r, args.rounds, args.steps_per_visit, args.threads, peers, args.c_rounds,
                            args.long_rounds)
                for m in methods:
                    errs[m].append(res["errors"][m])
                    clean[m].append(res["errors"][m + "-clean"])
                    seconds[m].append(res["seconds"][m])
                    best[m].append(res["best_round"][m])
                for m in lam:
                    lam[m].append(res["lambda"][m])
                C.log(f"dataset {d} trial {r}: " + ", ".join(f"{m} {np.mean(res['errors'][m]):.3f}" for m in methods))
            E = {m: np.array(v) for m, v in errs.items()}
            Ec = {m: np.array(v) for m, v in clean.items()}
            record[d] = {"noisy_test": {m: v.tolist() for m, v in E.items()},
                         "clean_test": {m: v.tolist() for m, v in Ec.items()},
                         "seconds": seconds, "best_round": best, "lambda": lam}
            for m, v in E.items():
                rows.append([str(d), LABEL[m], f"{v.mean():.3f} ± {v.mean(axis=1).std():.3f}",
                             f"{Ec[m].mean():.3f}", " / ".join(f"{x:.3f}" for x in v.mean(axis=0)),
                             "" if m == "C" else wins(v, E["C"]), "" if m == "C1" else wins(v, E["C1"])])
    if args.out:
        Path(args.out).write_text(json.dumps(record))
    C.publish(C.markdown_table(["dataset", "method", "mean test error ± sd over trials (noisy test labels)",
                                "clean test labels", "per task (noisy)",
                                "vs C: wins / ties / losses over (task, trial)",
                                "vs C with rounds per task"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
