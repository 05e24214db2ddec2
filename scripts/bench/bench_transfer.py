#!/usr/bin/env python
"""Transfer algorithms: time per round against the number of sources N.

The cost model of Zhang et al. (2014): a round of MSDTrA costs
C_h·O(N·M) + C_w·O(n_a·M) over M rounds, one of MSTrA C_w·O(n_a·N·M), with
n_a the source rows in total. Here n_a = --n-source (1M) rows are split
evenly over N = --sources (1..8) sources (``n_a // N`` rows each), with a
target of --target-n (1,000) rows, d = 20 features (``mpiboost synth
transfer --n n_a/N --target-n NB --sources N --task-seed 1 --seed 1
--split-domains``; one set of files per N, generated once into --workdir,
outside the repository, and reused).

Configurations, M = --rounds (20) rounds each, ``mpiexec -n --ranks`` (2) ×
``--threads`` (1) thread per rank:

* MSDTrA, MSTrA, DTrAdaBoost, TrAdaBoost: ``--algo A --target T.h5 --source
  S1.h5 .. SN.h5 --high-error clip`` (a round whose target error reaches 1/2
  goes on with 0.499, so that every run does all M rounds);
* AdaBoost-all: ``--algo adaboost --weak-learner histogram --data T.h5 S1.h5
  ..`` (every row, the domains ignored), the reference.

Each run is ``mpiexec -n R python -m mpiboost train ... --quiet --metrics
M.jsonl``; its numbers come from the per-round lines:

* ms per round: the median over rounds 2..M of ``seconds.select +
  seconds.apply`` (round 1 pays first-touch costs), and the same medians of
  select and apply apart. Select: one histogram per domain, their reduction,
  the candidates' best stumps and their errors on the target; apply: the
  weight update (N candidate stumps evaluated per row for MSDTrA, one for the
  others) and the exact per-domain masses;
* bytes per round (all ranks): with two ranks, the center's bytes sent +
  received in the round, which is every byte that crosses (the other rank
  receives what the center sends); with more ranks, the summary's
  ``bytes_rounds_all_ranks`` over the rounds;
* load: ``os.getloadavg()`` (1 min) just before each run.

Every number in the tables is the median over --repeat runs; runs go round
robin over N and the algorithms (the algorithms' order rotates every
repeat, N goes up in even repeats and down in odd ones) so that a change in the machine's load hits all alike. The slope is
a least-squares line of the medians against N: ms (or bytes) per extra
source, n_a fixed; the slope of the ratio to AdaBoost-all (whose work does
not depend on N) is printed too, as it is less sensitive to a drift of the
load during the runs.

    python scripts/bench/bench_transfer.py [--sources 1 2 3 4 5 6 7 8] [--rounds 20] [--repeat 3] [--json out.json]
    python scripts/bench/bench_transfer.py --n-source 100000 --sources 1 4 --repeat 1     # quick check
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import shlex
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import find_mpiexec, load_line, make_workdir, run_cmd  # noqa: E402

ALGOS = [
    ("MSDTrA", ["--algo", "msdtra", "--high-error", "clip"], True),
    ("MSTrA", ["--algo", "mstra", "--high-error", "clip"], True),
    ("DTrAdaBoost", ["--algo", "dtradaboost", "--high-error", "clip"], True),
    ("TrAdaBoost", ["--algo", "tradaboost", "--high-error", "clip"], True),
    ("AdaBoost-all", ["--algo", "adaboost", "--weak-learner", "histogram"], False),
]


def generate(args, n_sources: int) -> tuple:
    """(target file, [source files]) of the set with N sources; generated when missing."""
    per = args.n_source // n_sources
    stem = os.path.join(args.workdir, f"tr_na{args.n_source}_nb{args.target_n}_N{n_sources}")
    target = stem + "-target.h5"
    sources = [f"{stem}-source{k}.h5" for k in range(1, n_sources + 1)]
    if args.regenerate or not all(os.path.exists(p) for p in [target, *sources]):
        part = stem + "_part"
        for p in glob.glob(part + "-*.h5"):
            os.remove(p)
        cmd = [sys.executable, "-m", "mpiboost", "synth", "transfer", "--n", str(per), "--target-n",
               str(args.target_n), "--sources", str(n_sources), "--task-seed", "1", "--seed", "1",
               "--out", part + ".h5", "--split-domains"]
        wall, out, err, rc = run_cmd(cmd, 3600)
        if rc != 0:
            sys.exit(f"data generation failed: {shlex.join(cmd)}\n{err}")
        for p in ["target", *[f"source{k}" for k in range(1, n_sources + 1)]]:
            os.replace(f"{part}-{p}.h5", f"{stem}-{p}.h5")
        print(f"generated N = {n_sources} ({per:,} rows per source) in {wall:.1f} s", file=sys.stderr, flush=True)
    return target, sources


def read_metrics(path: str) -> tuple:
    with open(path) as f:
        lines = [json.loads(ln) for ln in f if ln.strip()]
    if not lines or "summary" not in lines[-1]:
        raise ValueError(f"last line of {path} is not a summary")
    return [ln for ln in lines if "round" in ln], lines[-1]["summary"]


def run_one(name: str, extra: list, transfer: bool, files: tuple, n_sources: int, args, mpiexec: str,
            k: int) -> dict:
    tag = f"{name.lower().replace('-', '_')}_N{n_sources}_{k}"
    model = os.path.join(args.workdir, f"model_{tag}.h5")
    metrics = os.path.join(args.workdir, f"metrics_{tag}.jsonl")
    for p in (model, metrics):
        if os.path.exists(p):
            os.remove(p)
    target, sources = files
    data = ["--target", target, "--source", *sources] if transfer else ["--data", target, *sources]
    cmd = [
        mpiexec, "-n", str(args.ranks), sys.executable, "-m", "mpiboost", "train", *extra, *data,
        "--rounds", str(args.rounds), "--model", model, "--threads", str(args.threads),
        "--seed", "0", "--quiet", "--metrics", metrics,
    ]
    load1 = os.getloadavg()[0]
    wall, out, err, rc = run_cmd(cmd, args.timeout)
    run = {"command": shlex.join(cmd), "process_seconds": wall, "load1_before": load1,
           "load1_after": os.getloadavg()[0]}
    if rc != 0:
        run["error"] = f"exit {rc}: {(err or out).strip()[-2000:]}"
        return run
    rounds, s = read_metrics(metrics)
    run["rounds_done"] = int(s["rounds"])
    run["stop_reason"] = s.get("stop_reason")
    later = rounds[1:] if len(rounds) > 1 else rounds
    sel = np.array([r["seconds"]["select"] for r in later])
    app = np.array([r["seconds"]["apply"] for r in later])
    run["ms_per_round"] = 1e3 * float(np.median(sel + app))
    run["select_ms"] = 1e3 * float(np.median(sel))
    run["apply_ms"] = 1e3 * float(np.median(app))
    run["mean_ms_per_round"] = 1e3 * s["seconds"]["rounds"] / max(1, run["rounds_done"])
    # the center's seconds inside collectives (waiting for the other rank included)
    run["communication_ms_per_round"] = 1e3 * float(
        np.median([sum(v.get("seconds", 0.0) for v in r["bytes"].values()) for r in later]))
    if args.ranks == 2 or "bytes_rounds_all_ranks" not in s:
        run["bytes_per_round"] = float(np.median([r["bytes_sent"] + r["bytes_received"] for r in rounds]))
    else:
        run["bytes_per_round"] = s["bytes_rounds_all_ranks"] / max(1, run["rounds_done"])
    prims = {}
    for r in rounds:
        for p, v in r["bytes"].items():
            prims.setdefault(p, []).append(v.get("sent", 0) + v.get("received", 0))
    run["bytes_by_primitive"] = {p: float(np.median(v)) for p, v in prims.items()}
    run["stumps_per_round"] = float(np.mean([len(r.get("candidates", [0])) for r in rounds]))
    run["train_error"] = s.get("train_error")
    return run


def median_of(runs: list, key: str):
    vals = [r[key] for r in runs if key in r and r[key] is not None]
    return float(np.median(vals)) if vals else None


def fit(ns: list, vals: list):
    """Least-squares (slope, intercept) of vals against N; None with fewer than two points."""
    pts = [(n, v) for n, v in zip(ns, vals) if v is not None]
    if len(pts) < 2:
        return None, None
    x, y = np.array(pts, dtype=float).T
    slope, icpt = np.polyfit(x, y, 1)
    return float(slope), float(icpt)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-source", type=int, default=1_000_000, help="source rows in total, n_a (default 1M)")
    ap.add_argument("--target-n", type=int, default=1000, help="target rows (default 1,000)")
    ap.add_argument("--sources", type=int, nargs="+", default=list(range(1, 9)), metavar="N",
                    help="numbers of sources to measure (default 1..8)")
    ap.add_argument("--rounds", type=int, default=20, metavar="M")
    ap.add_argument("--repeat", type=int, default=3, help="runs per configuration (median reported)")
    ap.add_argument("--ranks", type=int, default=2, help="MPI ranks (default 2)")
    ap.add_argument("--threads", type=int, default=1, help="OpenMP threads per rank (default 1)")
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "mpiboost-bench-transfer"),
                    help="generated data, models and metrics go here (default: under the system temp dir)")
    ap.add_argument("--regenerate", action="store_true", help="regenerate the data even if present")
    ap.add_argument("--mpiexec", default=None, help="mpiexec to use (default: next to this Python, else on PATH)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds allowed per run")
    ap.add_argument("--skip", nargs="*", default=[], choices=[a[0] for a in ALGOS], metavar="NAME",
                    help="leave these algorithms out (names as in the table)")
    ap.add_argument("--json", help="also write every number here")
    args = ap.parse_args()
    if args.rounds < 2:
        sys.exit("--rounds must be at least 2 (round 1 is left out of the medians)")

    mpiexec = find_mpiexec(args.mpiexec)
    make_workdir(args.workdir)

    ns = sorted(set(args.sources))
    files = {n: generate(args, n) for n in ns}
    load_before = load_line()
    algos = [(name, extra, tr) for name, extra, tr in ALGOS if name not in args.skip]
    runs = {(name, n): [] for name, _, _ in algos for n in ns}
    for k in range(args.repeat):
        order = algos[k % len(algos):] + algos[:k % len(algos)]
        for n in (ns if k % 2 == 0 else ns[::-1]):
            for name, extra, tr in order:
                run = run_one(name, extra, tr, files[n], n, args, mpiexec, k)
                runs[(name, n)].append(run)
                status = "FAILED " + run["error"].splitlines()[-1] if "error" in run else (
                    f"{run['ms_per_round']:.1f} ms/round (select {run['select_ms']:.1f}, apply {run['apply_ms']:.1f}), "
                    f"{run['bytes_per_round']:,.0f} B/round, load {run['load1_before']:.2f}")
                print(f"[{k + 1}/{args.repeat}] N={n} {name}: {status}", file=sys.stderr, flush=True)
    load_after = load_line()

    keys = ("ms_per_round", "select_ms", "apply_ms", "mean_ms_per_round", "communication_ms_per_round",
            "bytes_per_round", "rounds_done", "stumps_per_round", "train_error", "load1_before")
    med = {}
    for key_, rs in runs.items():
        ok = [r for r in rs if "error" not in r]
        med[key_] = {key: median_of(ok, key) for key in keys}
        med[key_]["ok_runs"] = len(ok)
        med[key_]["errors"] = [r["error"] for r in rs if "error" in r]
    loads = [r["load1_before"] for rs in runs.values() for r in rs]

    def f(v, spec):
        return "-" if v is None else format(v, spec)

    names = [a[0] for a in algos]
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"\nTransfer per-round benchmark: synth transfer, n_a = {args.n_source:,} source rows split over N "
          f"sources, {args.target_n:,} target rows, d = 20; M = {args.rounds}; mpiexec -n {args.ranks} x "
          f"{args.threads} thread(s); median of {args.repeat} run(s) (each: median over rounds 2..M); "
          f"{cores} cores on this machine")
    print(f"load before: {load_before}\nload after:  {load_after}")
    print(f"1-min load at the runs' starts: median {np.median(loads):.2f}, range {min(loads):.2f}-{max(loads):.2f}\n")

    head = "| algorithm | " + " | ".join(f"N={n}" for n in ns) + " | slope per source | intercept |"
    sep = "|---" * (len(ns) + 3) + "|"
    tables = {}
    for title, key, spec, scale in [("ms per round (select + apply)", "ms_per_round", ".1f", 1),
                                    ("select ms per round", "select_ms", ".1f", 1),
                                    ("apply ms per round", "apply_ms", ".1f", 1),
                                    ("collectives' ms per round (center)", "communication_ms_per_round", ".1f", 1),
                                    ("bytes per round (all ranks)", "bytes_per_round", ",.0f", 1)]:
        print(f"{title}:\n\n{head}\n{sep}")
        for name in names:
            vals = [med[(name, n)][key] for n in ns]
            slope, icpt = fit(ns, vals)
            tables.setdefault(name, {})[key] = {"values": dict(zip(ns, vals)), "slope": slope, "intercept": icpt}
            print(f"| {name} | " + " | ".join(f(v, spec) for v in vals) + f" | {f(slope, '+' + spec)} | {f(icpt, spec)} |")
        print()

    print("ratios of ms per round:\n")
    pairs = [("MSDTrA", "MSTrA"), ("MSDTrA", "AdaBoost-all"), ("MSTrA", "AdaBoost-all"),
             ("DTrAdaBoost", "AdaBoost-all"), ("TrAdaBoost", "AdaBoost-all")]
    pairs = [(a, b) for a, b in pairs if a in names and b in names]
    print("| ratio | " + " | ".join(f"N={n}" for n in ns) + " |")
    print("|---" * (len(ns) + 1) + "|")
    ratios = {}
    for a, b in pairs:
        vals = []
        for n in ns:
            x, y = med[(a, n)]["ms_per_round"], med[(b, n)]["ms_per_round"]
            vals.append(x / y if x is not None and y else None)
        ratios[f"{a}/{b}"] = dict(zip(ns, vals))
        print(f"| {a} / {b} | " + " | ".join(f(v, ".2f") for v in vals) + " |")
    print()
    for name in names:
        t = tables[name]["ms_per_round"]
        v1 = t["values"].get(ns[0])
        if t["slope"] is not None and v1:
            print(f"{name}: {t['slope']:+.2f} ms per extra source ({100 * t['slope'] / v1:+.1f}% of N={ns[0]}); "
                  f"select {tables[name]['select_ms']['slope']:+.2f}, apply {tables[name]['apply_ms']['slope']:+.2f}; "
                  f"bytes {tables[name]['bytes_per_round']['slope']:+,.0f} per source")
    if "AdaBoost-all" in names:
        print()
        for name in names[:-1] if names[-1] == "AdaBoost-all" else names:
            vals = [ratios.get(f"{name}/AdaBoost-all", {}).get(n) for n in ns]
            slope, icpt = fit(ns, vals)
            if slope is not None:
                tables[name]["ratio_to_adaboost_all"] = {"values": dict(zip(ns, vals)), "slope": slope,
                                                         "intercept": icpt}
                print(f"{name} / AdaBoost-all: {icpt + slope * ns[0]:.2f} at N={ns[0]} (fit), "
                      f"{slope:+.3f} per extra source")
    bad = {f"{a} N={n}": m["errors"] for (a, n), m in med.items() if m["errors"]}
    if bad:
        print("\nfailed runs:", json.dumps(bad, indent=1)[:4000])

    if args.json:
        out = {
            "n_source": args.n_source, "target_n": args.target_n, "sources": ns, "rounds": args.rounds,
            "repeat": args.repeat, "ranks": args.ranks, "threads": args.threads, "cores": cores,
            "python": sys.version.split()[0], "platform": platform.platform(), "mpiexec": mpiexec,
            "load_before": load_before, "load_after": load_after, "tables": tables, "ratios": ratios,
            "medians": {f"{a} N={n}": m for (a, n), m in med.items()},
            "runs": {f"{a} N={n}": rs for (a, n), rs in runs.items()},
        }
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1, default=float)


if __name__ == "__main__":
    main()
