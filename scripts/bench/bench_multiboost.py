#!/usr/bin/env python
"""MultiBoost's cost per round against AdaBoost-all's, side by side on the same data.

Data: by default a generated multi-source set (``mpiboost synth multisource
--n N --seed 1``: --n rows, 3 domains, 10 features) in --workdir (outside the
repository; reused when already there); or ``--data F.h5 [F.h5 ...]`` (for
example UCI Adult with three education domains, docs/data.md; several files
are several domains).

Configurations, T = --rounds (30) rounds each, all with ``mpiexec -n --ranks``
(2) and ``--threads`` (1) OpenMP threads per rank:

* AdaBoost-all: ``--algo adaboost --weak-learner histogram`` on the union of
  the domains (the reference of the ratios);
* MultiBoost with ``--step line-search`` (the default), ``lemma1`` and
  ``closed-form`` (all with the default shared gates), and line search with
  ``--gates paper`` (one gated histogram per active domain);
* FedMultiBoost (default clients and candidates).

Each run is ``mpiexec -n R python -m mpiboost train ... --quiet --metrics
M.jsonl``; its numbers come from the JSONL summary line:

* ms per round: ``seconds.rounds / rounds`` -- the rounds phase only, so the
  load, the binning and MultiBoost's domain classifier are left out;
* setup s: ``seconds.total - seconds.load - seconds.rounds``, the time
  between loading and round 1 (for MultiBoost and FedMultiBoost: fitting the
  domain classifier Q and computing Q(.|x) for every row), printed apart;
* bytes per round, all ranks: with two ranks, the center's bytes sent +
  received per round (from the per-round lines), which is what all ranks
  send (every byte one rank sends the other receives); with more ranks, the
  bytes every rank sent during the rounds (``bytes_rounds_all_ranks``) over
  the selections made (an early stop makes one more than the rounds).

Every number is the median of --repeat runs; the configurations are run
round-robin, so that a change in the machine's load hits all of them alike.
Note the load (printed before and after): on a shared 2-core machine the
spread between runs is large.

    python scripts/bench/bench_multiboost.py [--n 1000000] [--rounds 30] [--repeat 3] [--json out.json]
    python scripts/bench/bench_multiboost.py --data /tmp/adult-train.h5 --rounds 100
    python scripts/bench/bench_multiboost.py --n 100000 --repeat 1      # quick check
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import add_run_options, find_mpiexec, load_line, make_workdir, round_robin, run_cmd  # noqa: E402

CONFIGS = [
    ("AdaBoost-all", ["--algo", "adaboost", "--weak-learner", "histogram"]),
    ("MultiBoost line-search", ["--algo", "multiboost", "--step", "line-search"]),
    ("MultiBoost paper gates", ["--algo", "multiboost", "--step", "line-search", "--gates", "paper"]),
    ("MultiBoost lemma1", ["--algo", "multiboost", "--step", "lemma1"]),
    ("MultiBoost closed-form", ["--algo", "multiboost", "--step", "closed-form"]),
    ("FedMultiBoost", ["--algo", "fedmultiboost"]),
]




def generate(args) -> list:
    os.makedirs(args.workdir, exist_ok=True)
    path = os.path.join(args.workdir, f"multisource_n{args.n}_seed1.h5")
    if not os.path.exists(path) or args.regenerate:
        tmp = path + ".part.h5"
        cmd = [sys.executable, "-m", "mpiboost", "synth", "multisource", "--n", str(args.n), "--seed", "1", "--out", tmp]
        _, out, err, rc = run_cmd(cmd, 3600)
        if rc != 0:
            sys.exit(f"data generation failed: {shlex.join(cmd)}\n{err}")
        os.replace(tmp, path)
    return [path]


def read_metrics(path: str) -> tuple:
    with open(path) as f:
        lines = [json.loads(ln) for ln in f if ln.strip()]
    if not lines or "summary" not in lines[-1]:
        raise ValueError(f"last line of {path} is not a summary")
    return [ln for ln in lines if "round" in ln], lines[-1]["summary"]


def run_one(name: str, extra: list, args, data: list, mpiexec: str, k: int) -> dict:
    tag = name.lower().replace(" ", "_").replace("-", "_") + f"_{k}"
    model = os.path.join(args.workdir, f"model_{tag}.h5")
    metrics = os.path.join(args.workdir, f"metrics_{tag}.jsonl")
    for p in (model, metrics):
        if os.path.exists(p):
            os.remove(p)
    cmd = [
        mpiexec, "-n", str(args.ranks), sys.executable, "-m", "mpiboost", "train", *extra,
        "--data", *data, "--rounds", str(args.rounds), "--model", model, "--threads", str(args.threads),
        "--seed", "0", "--quiet", "--metrics", metrics,
    ]
    wall, out, err, rc = run_cmd(cmd, args.timeout)
    run = {"command": shlex.join(cmd), "process_seconds": wall}
    if rc != 0:
        run["error"] = f"exit {rc}: {(err or out).strip()[-2000:]}"
        return run
    rounds, s = read_metrics(metrics)
    sec = s["seconds"]
    done = max(1, int(s["rounds"]))
    run["rounds_done"] = int(s["rounds"])
    run["ms_per_round"] = 1e3 * sec["rounds"] / done
    run["setup_seconds"] = sec["total"] - sec["load"] - sec["rounds"]
    run["load_seconds"] = sec["load"]
    # the center's seconds inside collectives during the rounds (waiting for the other ranks included)
    run["communication_ms_per_round"] = 1e3 * float(
        np.mean([sum(v.get("seconds", 0.0) for v in r["bytes"].values()) for r in rounds])) if rounds else None
    if args.ranks == 2 or "bytes_rounds_all_ranks" not in s:
        # with two ranks, every byte one rank sends the other receives
        run["bytes_per_round"] = float(np.mean([r["bytes_sent"] + r["bytes_received"] for r in rounds])) if rounds else 0.0
        run["bytes_source"] = "center sent + received per round (= all ranks' sent with 2 ranks)"
    else:
        # an early stop spends one more selection than rounds recorded
        attempted = int(s["rounds"]) + (0 if s.get("stop_reason") == "rounds" else 1)
        run["bytes_per_round"] = s["bytes_rounds_all_ranks"] / max(1, attempted)
        run["bytes_source"] = "bytes_rounds_all_ranks"
    evals = [r["line_search_evals"] for r in rounds if "line_search_evals" in r]
    if evals:
        run["line_search_passes_per_round"] = float(np.mean(evals))
    run["train_error"] = s.get("train_error")
    return run


def median_of(runs: list, key: str):
    vals = [r[key] for r in runs if key in r and r[key] is not None]
    return float(np.median(vals)) if vals else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000, help="rows of the generated multi-source set (default 1M)")
    ap.add_argument("--data", nargs="+", metavar="F.h5", help="use these files instead of generating data")
    ap.add_argument("--rounds", type=int, default=30, metavar="T")
    add_run_options(ap, "mpiboost-bench-multiboost")
    ap.add_argument("--regenerate", action="store_true", help="regenerate the data even if present")
    ap.add_argument("--skip", nargs="*", default=[], choices=[c[0] for c in CONFIGS], metavar="NAME",
                    help="leave these configurations out (names as in the table)")
    args = ap.parse_args()

    mpiexec = find_mpiexec(args.mpiexec)
    make_workdir(args.workdir)

    load_before = load_line()
    data = [os.path.abspath(p) for p in args.data] if args.data else generate(args)
    configs = [{"name": n, "extra": e, "runs": []} for n, e in CONFIGS if n not in args.skip]
    round_robin(configs, args.repeat, lambda cfg, k: run_one(cfg["name"], cfg["extra"], args, data, mpiexec, k),
                lambda run: f"{run['ms_per_round']:.1f} ms/round, {run['bytes_per_round']:,.0f} B/round, "
                            f"setup {run['setup_seconds']:.2f} s")
    load_after = load_line()

    for cfg in configs:
        ok = [r for r in cfg["runs"] if "error" not in r]
        cfg["median"] = {key: median_of(ok, key) for key in (
            "ms_per_round", "bytes_per_round", "setup_seconds", "load_seconds", "communication_ms_per_round",
            "line_search_passes_per_round", "rounds_done", "train_error")}
        cfg["median"]["ok_runs"] = len(ok)
    ref = next((c["median"] for c in configs if c["name"] == "AdaBoost-all" and c["median"]["ok_runs"]), None)

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    what = ", ".join(data) if args.data else f"synth multisource, {args.n:,} rows, 3 domains (generated)"
    print(f"\nMultiBoost per-round benchmark: {what}; T = {args.rounds}; mpiexec -n {args.ranks} x "
          f"{args.threads} thread(s); median of {args.repeat} run(s); {cores} cores on this machine")
    print(f"load before: {load_before}\nload after:  {load_after}\n")
    print("| configuration | ms/round | × AdaBoost-all | bytes/round (all ranks) | × AdaBoost-all "
          "| comm ms/round | row passes/step | setup s (Q fit) | rounds |")
    print("|---|---|---|---|---|---|---|---|---|")

    def f(v, spec):
        return "-" if v is None else format(v, spec)

    for cfg in configs:
        m = cfg["median"]
        if not m["ok_runs"]:
            print(f"| {cfg['name']} | FAILED: {cfg['runs'][-1]['error'].splitlines()[-1][:80]} |||||||")
            continue
        rt = m["ms_per_round"] / ref["ms_per_round"] if ref else None
        rb = m["bytes_per_round"] / ref["bytes_per_round"] if ref and ref["bytes_per_round"] else None
        cfg["median"]["ratio_ms"], cfg["median"]["ratio_bytes"] = rt, rb
        print(f"| {cfg['name']} | {m['ms_per_round']:.1f} | {f(rt, '.2f')} | {m['bytes_per_round']:,.0f} | {f(rb, '.2f')} "
              f"| {f(m['communication_ms_per_round'], '.1f')} | {f(m['line_search_passes_per_round'], '.2f')} "
              f"| {m['setup_seconds']:.2f} | {m['rounds_done']:.0f} |")
    print("\nms/round: rounds phase only (no load, binning or domain classifier); setup s: from loaded to "
          "round 1 (the domain classifier Q for the MultiBoost family); row passes/step: passes over the "
          "rows for MultiBoost's step (line search included)")

    if args.json:
        out = {
            "data": data, "generated_n": None if args.data else args.n, "rounds": args.rounds, "repeat": args.repeat,
            "ranks": args.ranks, "threads": args.threads, "cores": cores, "python": sys.version.split()[0],
            "platform": platform.platform(), "mpiexec": mpiexec, "load_before": load_before, "load_after": load_after,
            "configurations": configs,
        }
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1, default=float)


if __name__ == "__main__":
    main()
