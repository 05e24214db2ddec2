#!/usr/bin/env python
"""The special algorithms with their baseline guard against their simplest baselines and LightGBM.

For each multi-domain / multi-task set, R repetitions (``--reps``, default 5; repetition r uses ``--seed r``
and its own split or draw), every method fits on the same rows and validates on the same rows
(``--valid-fraction 0.2 --best-round``: the guard's validation rows are these) and is tested on held-out
rows; printed: the mean over the tasks (domains) of the test error, mean ± sd over the repetitions, the
worst task's error, and the guard's choices.

* ``is-multitask`` and ``multiboost``, ``fedmultiboost``: their defaults, i.e. with the baseline guard, and
  with ``--baseline-guard off`` (the algorithm as asked);
* ``multiboost --baseline-guard domain-free``: the guard without the model per domain;
* ``multiboost --loss logistic``, with and without the guard: MultiBoost's other loss;
* their baselines: AdaBoost on each task alone (``is-multitask --lambda 0 --start zero``; with stumps,
  is-multitask's, and with trees, MultiBoost's and FedMultiBoost's per-domain baseline) and logistic trees on
  every row pooled (``adaboost --weak-learner tree --loss logistic``: MultiBoost's pooled baseline), and with
  splits on the task too (``is-multitask --refine off``: is-multitask's pooled baseline);
* LightGBM (``--no-peers`` leaves it out): per task, and pooled with the task id as a categorical feature,
  31 leaves, learning rate 0.1, best iteration on the validation rows.

Sets: ``adult`` (3 tasks by education; :mod:`multitask_real`), ``amazon`` (4 review domains), the generated
``related`` (IS Dataset 1: 3 tasks of one boundary, shifted), ``opposite`` (IS Dataset 2: 3 tasks label
against the other 3), ``multisource`` (3 domains of shifted rules, MultiBoost's) and ``unrelated`` (6 tasks of
the many-tasks generator that share nothing: ``--shared 0 --interaction 0``, 30% positives, ``--n 1200``).

    python scripts/experiments/guard_table.py                      # every set, 5 repetitions
    python scripts/experiments/guard_table.py --sets related opposite --reps 2 --rounds 50
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402
import multitask_real as MR  # noqa: E402
import multitask_tables as MT  # noqa: E402

OFF = ("--baseline-guard", "off")
METHODS = {
    "is-multitask": ["--algo", "is-multitask"],
    "is-multitask, no guard": ["--algo", "is-multitask", *OFF],
    "multiboost": ["--algo", "multiboost"],
    "multiboost, no guard": ["--algo", "multiboost", *OFF],
    "multiboost, logistic": ["--algo", "multiboost", "--loss", "logistic"],
    "multiboost, logistic, no guard": ["--algo", "multiboost", "--loss", "logistic", *OFF],
    "fedmultiboost": ["--algo", "fedmultiboost"],
    "fedmultiboost, no guard": ["--algo", "fedmultiboost", *OFF],
    "multiboost, domain-free guard": ["--algo", "multiboost", "--baseline-guard", "domain-free"],
    "each task alone (AdaBoost)": ["--algo", "is-multitask", "--lambda", "0", "--start", "zero", *OFF],
    "each task alone (AdaBoost trees)": ["--algo", "is-multitask", "--lambda", "0", "--start", "zero",
                                         "--weak-learner", "tree", *OFF],
    "pooled (logistic trees)": ["--algo", "adaboost", "--weak-learner", "tree", "--loss", "logistic"],
    "pooled + task id (logistic trees)": ["--algo", "is-multitask", "--refine", "off", *OFF],
}
PEERS = ["lgb-task-31", "lgb-pooled-31"]
SETS = ["adult", "amazon", "related", "opposite", "multisource", "unrelated"]


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sets", nargs="+", default=SETS, choices=SETS)
    p.add_argument("--data-dir", type=Path, default=C.DATASETS)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    p.add_argument("--peers", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--valid-metric", choices=["error", "logloss"], default="error",
                   help="what every mpiboost method's validation rows measure: its best round and its guard's "
                   "comparison (LightGBM's best iteration stays the one of least validation error)")
    data_options(p, "guard")
    return p.parse_args(argv)


def data_options(p: argparse.ArgumentParser, workdir: str) -> None:
    """The options of the sets' rows, the threads, the work folder and the output (shared with the scripts
    that run these sets)."""
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--max-train-per-task", type=int, default=2000)
    p.add_argument("--amazon-train", type=int, default=1600)
    p.add_argument("--amazon-test", type=int, default=400)
    p.add_argument("--vocab-size", type=int, default=2000)
    p.add_argument("--workdir", type=Path, default=C.DEFAULT_WORKDIR / workdir)
    p.add_argument("--out", type=Path, help="also write the table here")


def synth_splits(args, name: str):
    """(repetition, training file, test file) of a generated set: its rows drawn with seed r, the test
    rows with another seed of the same tasks."""
    for r in range(args.reps):
        paths = [args.workdir / "splits" / f"{name}-rep{r}-{part}.h5" for part in ("train", "test")]
        for path, n, seed in ((paths[0], 600, 2 * r + 1), (paths[1], 2000, 2 * r + 2)):
            if name == "multisource":
                cmd = ["multisource", "--n", str(3 * n), "--seed", str(seed)]
            elif name == "unrelated":
                # six tasks that share no direction and no interaction: each its own rule
                cmd = ["manytasks", "--tasks", "6", "--n", str(2 * n), "--shared", "0", "--interaction", "0",
                       "--positive-rate", "0.3", "--seed", str(seed), "--task-seed", str(r)]
            else:
                cmd = ["multitask", "--dataset", "1" if name == "related" else "2", "--n", str(n), "--seed",
                       str(seed), "--task-seed", str(r)]
            C.run([*C.MPIBOOST, "synth", *cmd, "--out", path])
        yield r, paths[0], paths[1]


def splits(args, name: str):
    if name == "adult":
        return MR.adult_splits(args)
    if name == "amazon":
        return MR.amazon_splits(args)
    return synth_splits(args, name)


def run_set(args, name: str) -> dict:
    # the runner of multitask_tables runs any of its METHODS through the CLI
    metric = [] if args.valid_metric == "error" else ["--valid-metric", args.valid_metric]
    MT.METHODS.update({k: [*v, *metric] for k, v in METHODS.items()})
    out = {m: [] for m in args.methods + args.peer_keys}
    for r, train, test in splits(args, name):
        data, tests = MT.read_rows(train), {"test": MT.read_rows(test)}
        valid = MT.valid_rows(data, r)
        for m in args.methods:
            res = MT.run_mpiboost(str(args.workdir / "runs"), f"{name}-rep{r}", m, str(train), {"test": str(test)},
                                  seed=r, rounds=args.rounds, steps=5, threads=args.threads,
                                  n_fit=int((~valid).sum()))
            out[m].append({"errors": res["errors"]["test"], "guard": res.get("guard"), "seconds": res["seconds"],
                           "record": res.get("guard_record")})
        for m in args.peer_keys:
            res = MT.run_peer(m, data, valid, tests, seed=r, rounds=args.rounds, threads=args.threads)
            out[m].append({"errors": res["errors"]["test"], "guard": None, "seconds": res["seconds"]})
        C.log(f"{name} repetition {r}: " + ", ".join(f"{m} {np.mean(v[-1]['errors']):.4f}" for m, v in out.items()))
    return out


# each guarded method against its simplest baselines (the rows of this table that train them)
BASELINES = {
    "multiboost": {"pooled": "pooled (logistic trees)", "pooled-id": "pooled + task id (logistic trees)",
                   "per domain": "each task alone (AdaBoost trees)"},
    "is-multitask": {"pooled (+ task id)": "pooled + task id (logistic trees)",
                     "each task alone": "each task alone (AdaBoost)"},
}
BASELINES["fedmultiboost"] = BASELINES["multiboost"]


def paired(results: dict) -> str:
    """The guarded methods minus each of their baselines: test error (mean over the tasks), the mean over the
    repetitions of the paired differences and its standard error."""
    cols = [(m, b, key) for m, bs in BASELINES.items() for b, key in bs.items()]
    cols = [c for c in cols if all(c[0] in out and c[2] in out for out in results.values())]
    if not cols:
        return ""
    rows = []
    for name, out in results.items():
        row = [name]
        for m, _, key in cols:
            d = np.array([np.mean(a["errors"]) - np.mean(b["errors"]) for a, b in zip(out[m], out[key])])
            se = d.std(ddof=1) / np.sqrt(d.size) if d.size > 1 else 0.0
            row.append("0" if not d.any() else f"{d.mean():+.4f} ({se:.4f})")
        rows.append(row)
    return "\n".join(["**Against the simplest baselines**: the guarded method minus each baseline, test error, mean "
                      "over the repetitions of the paired differences (standard error; negative: the method is "
                      "better; 0: the guard chose that baseline every time).", "",
                      C.markdown_table(["set", *(f"{m} − {b}" for m, b, _ in cols)], rows), ""])


def render(args, results: dict) -> str:
    lines = []
    for name, out in results.items():
        rows = []
        for m, reps in out.items():
            E = np.array([rep["errors"] for rep in reps])
            means = E.mean(axis=1)
            sd = f" ± {means.std(ddof=1):.4f}" if len(reps) > 1 else ""
            guards = [rep["guard"] for rep in reps if rep["guard"]]
            chose = ", ".join(f"{g} {guards.count(g)}" for g in dict.fromkeys(guards)) if guards else ""
            rows.append([MT.LABEL.get(m, m), f"{means.mean():.4f}{sd}", f"{E.max(axis=1).mean():.4f}",
                         f"{np.mean([rep['seconds'] for rep in reps]):.1f}", chose])
        lines += [f"**{name}**: test error, mean over the tasks, {len(next(iter(out.values())))} repetitions, "
                  f"{args.rounds} rounds, --valid-fraction 0.2 --best-round"
                  + (f" --valid-metric {args.valid_metric}" if args.valid_metric != "error" else "") + ".", "",
                  C.markdown_table(["method", "mean ± sd", "worst task (mean)", "train s", "guard's choice"], rows), ""]
    return "\n".join(lines) + "\n" + paired(results)


def main(argv=None) -> int:
    args = parse_args(argv)
    for sub in ("splits", "runs"):
        (args.workdir / sub).mkdir(parents=True, exist_ok=True)
    args.peer_keys = [k for k in MT.peer_keys(args.peers) if k in PEERS]
    results = {name: run_set(args, name) for name in args.sets}
    # every repetition's figures, for comparisons the tables do not make
    (args.workdir / "results.json").write_text(json.dumps(results, indent=1, default=float))
    C.publish(render(args, results), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
