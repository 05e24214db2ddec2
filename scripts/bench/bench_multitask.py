#!/usr/bin/env python
"""IS multi-task boosting's cost per step against an AdaBoost round, side by side on the same rows.

Data: ``mpiboost synth multitask --dataset 1 --n N --paper-noise --seed 1``
(J = 3 tasks of --n rows each, 2 features) in --workdir, reused when there;
or ``--data F.h5`` (a domain column or one file per task).

Configurations, T = --rounds (200) rounds / steps each, ``mpiexec -n
--ranks`` (2) with ``--threads`` (1) OpenMP threads per rank:

* AdaBoost on all rows (the reference of the ratios) and AdaBoost on one
  task's rows (``--train-domain 0``: what method C does per step);
* is-multitask with the paper's zero start: lambda 0 (AdaBoost per task),
  lambda 0.1 shared (scenario A), lambda 0.1 with the averaged teacher
  (Eq. 26) and lambda 0.1 scaled by the IS distances (scenario B: the
  per-task fits are set-up time, printed apart); and its defaults (the
  logistic forest's start is set-up time).

Numbers come from each run's JSONL summary (the same fields as
bench_multiboost.py): ms per round of the rounds phase, bytes per round (all
ranks) and, per primitive, the center's bytes per round. Medians of
--repeat runs, run round-robin.

    python scripts/bench/bench_multitask.py                       # 3 x 100,000 rows, -n 2
    python scripts/bench/bench_multitask.py --n 20000 --repeat 1  # quick check
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_multiboost import median_of, read_metrics, run_one  # noqa: E402
from benchutil import add_run_options, find_mpiexec, load_line, make_workdir, round_robin, run_cmd  # noqa: E402

PAPER = ["--start", "zero", "--task-order", "random"]  # the paper's rule (the defaults start from a forest)
CONFIGS = [
    ("AdaBoost, all rows", ["--algo", "adaboost"]),
    ("AdaBoost, task 0's rows", ["--algo", "adaboost", "--train-domain", "0"]),
    ("is-multitask lambda 0", ["--algo", "is-multitask", "--lambda", "0", *PAPER]),
    ("is-multitask lambda 0.1 (A)", ["--algo", "is-multitask", "--lambda", "0.1", *PAPER]),
    ("is-multitask lambda 0.1 averaged teacher", ["--algo", "is-multitask", "--lambda", "0.1", "--teacher",
                                                   "average", *PAPER]),
    ("is-multitask lambda 0.1 over IS (B)", ["--algo", "is-multitask", "--lambda", "0.1", "--lambda-scale", "is",
                                             *PAPER]),
    ("is-multitask defaults (logistic start, lambda 0)", ["--algo", "is-multitask"]),
]
PRIMITIVES = ("reduce_histograms", "reduce_stats", "weight_sums", "broadcast_hypothesis")


def generate(args) -> list:
    path = os.path.join(args.workdir, f"multitask_d1_n{args.n}_seed1.h5")
    if not os.path.exists(path):
        tmp = path + ".part.h5"
        cmd = [sys.executable, "-m", "mpiboost", "synth", "multitask", "--dataset", "1", "--n", str(args.n),
               "--paper-noise", "--task-seed", "1", "--seed", "1", "--out", tmp]
        _, out, err, rc = run_cmd(cmd, 3600)
        if rc != 0:
            sys.exit(f"data generation failed: {shlex.join(cmd)}\n{err}")
        os.replace(tmp, path)
    return [path]


def per_primitive(name: str, args, k: int) -> dict:
    """The center's bytes (sent + received) per round, per primitive, from the run's per-round lines."""
    tag = name.lower().replace(" ", "_").replace("-", "_") + f"_{k}"
    rounds, _ = read_metrics(os.path.join(args.workdir, f"metrics_{tag}.jsonl"))
    out = {}
    for p in PRIMITIVES:
        vals = [r["bytes"].get(p, {}) for r in rounds]
        out[p] = float(np.mean([v.get("sent", 0) + v.get("received", 0) for v in vals])) if vals else 0.0
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000, help="rows per task of the generated set (default 100,000)")
    ap.add_argument("--data", nargs="+", metavar="F.h5", help="use these files instead of generating data")
    ap.add_argument("--rounds", type=int, default=200, metavar="T")
    add_run_options(ap, "mpiboost-bench-multitask")
    args = ap.parse_args()
    mpiexec = find_mpiexec(args.mpiexec)
    make_workdir(args.workdir)
    load_before = load_line()
    data = [os.path.abspath(p) for p in args.data] if args.data else generate(args)
    configs = [{"name": n, "extra": e, "runs": []} for n, e in CONFIGS]
    def one(cfg, k):
        run = run_one(cfg["name"], cfg["extra"], args, data, mpiexec, k)
        if "error" not in run:
            run["primitives"] = per_primitive(cfg["name"], args, k)
        return run

    round_robin(configs, args.repeat, one,
                lambda run: f"{run['ms_per_round']:.2f} ms/round, {run['bytes_per_round']:,.0f} B/round")
    load_after = load_line()
    for cfg in configs:
        ok = [r for r in cfg["runs"] if "error" not in r]
        cfg["median"] = {key: median_of(ok, key) for key in ("ms_per_round", "bytes_per_round", "setup_seconds")}
        cfg["median"]["primitives"] = {p: float(np.median([r["primitives"][p] for r in ok])) if ok else None
                                       for p in PRIMITIVES}
        cfg["median"]["ok_runs"] = len(ok)
    ref = configs[0]["median"]
    what = ", ".join(data) if args.data else f"synth multitask --dataset 1, 3 tasks x {args.n:,} rows"
    print(f"\nIS multi-task cost per step: {what}; T = {args.rounds}; mpiexec -n {args.ranks} x {args.threads} "
          f"thread(s); median of {args.repeat} run(s)\nload before: {load_before}\nload after:  {load_after}\n")
    print("| configuration | ms/round | × AdaBoost | bytes/round (all ranks) | × AdaBoost | "
          + " | ".join(f"center {p} B/round" for p in PRIMITIVES) + " | setup s |")
    print("|---|---|---|---|---|" + "---|" * len(PRIMITIVES) + "---|")
    for cfg in configs:
        m = cfg["median"]
        if not m["ok_runs"]:
            print(f"| {cfg['name']} | FAILED |")
            continue
        rt = m["ms_per_round"] / ref["ms_per_round"] if ref["ms_per_round"] else float("nan")
        rb = m["bytes_per_round"] / ref["bytes_per_round"] if ref["bytes_per_round"] else float("nan")
        prims = " | ".join(f"{m['primitives'][p]:,.0f}" for p in PRIMITIVES)
        print(f"| {cfg['name']} | {m['ms_per_round']:.2f} | {rt:.2f} | {m['bytes_per_round']:,.0f} | {rb:.2f} | "
              f"{prims} | {m['setup_seconds']:.2f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"configs": configs, "load_before": load_before, "load_after": load_after}, f, indent=1)


if __name__ == "__main__":
    main()
