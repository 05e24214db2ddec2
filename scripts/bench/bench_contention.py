"""Training under CPU contention: mpiboost's thread defaults vs LightGBM, idle and with a CPU hog.

Batch nodes are often shared or oversubscribed. OpenMP's spinning wait
policy makes idle worker threads burn the cores that the working threads (and
MPI's own polling) need; mpiboost therefore defaults to
``OMP_WAIT_POLICY=passive`` and to one thread per rank when the ranks fill the
cores. This script times the boosting rounds of the same work (AdaBoost with
histogram stumps; LightGBM with ``num_leaves=2``, i.e. stumps, on the same
rows) on an idle machine and with a hog: one busy process per core.

    python scripts/bench/bench_contention.py --workdir /tmp/mb-contention [--n 200000 --rounds 50 --repeat 3]

It prints, per configuration, the median seconds of the rounds (LightGBM:
``lgb.train``; mpiboost: the ``rounds`` time of its summary) and of the whole
process, idle and loaded, and each one's ratio to LightGBM under the same
condition. Nothing is asserted: read the table.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from benchutil import find_mpiexec, load_line, make_workdir, run_cmd  # noqa: E402

MB = [sys.executable, "-m", "mpiboost"]


def _hog() -> None:  # pragma: no cover - a busy loop
    while True:
        pass


def lightgbm_worker(path: str, rounds: int, threads: int) -> None:
    """One LightGBM fit (run as a subprocess): prints {"rounds": seconds}."""
    import h5py
    import lightgbm as lgb

    with h5py.File(path, "r") as f:
        X, y = f["X"][...], f["y"][...]
    params = {"objective": "binary", "num_leaves": 2, "max_bin": 255, "num_threads": threads, "verbose": -1,
              "seed": 0}
    ds = lgb.Dataset(X, label=(y > 0).astype(np.float32), params=params)
    ds.construct()
    t0 = time.perf_counter()
    lgb.train(params, ds, num_boost_round=rounds)
    print(json.dumps({"rounds": time.perf_counter() - t0}), flush=True)


def _env(extra: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS", "GOMP_SPINCOUNT")}
    env.update(extra)
    return env


def time_mpiboost(mpiexec: str, data: str, workdir: str, rounds: int, ranks: int, threads: int, env: dict):
    model = os.path.join(workdir, f"m-{ranks}-{threads}.h5")
    metrics = os.path.join(workdir, f"m-{ranks}-{threads}.jsonl")
    cmd = [mpiexec, "-n", str(ranks), "env", *[f"{k}={v}" for k, v in env.items()], *MB, "train", "--algo",
           "adaboost", "--data", data, "--rounds", str(rounds), "--model", model, "--metrics", metrics, "--quiet"]
    if threads:
        cmd += ["--threads", str(threads)]
    wall, out, err, code = run_cmd(cmd, timeout=1200)
    if code != 0:
        return None, wall, err[-300:]
    with open(metrics) as f:
        summary = json.loads(f.read().splitlines()[-1])["summary"]
    return float(summary["seconds"]["rounds"]), wall, ""


def time_lightgbm(data: str, rounds: int, threads: int):
    cmd = [sys.executable, __file__, "--lightgbm-worker", data, "--rounds", str(rounds), "--threads", str(threads)]
    wall, out, err, code = run_cmd(cmd, timeout=1200)
    if code != 0:
        return None, wall, err[-300:]
    return json.loads(out.strip().splitlines()[-1])["rounds"], wall, ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", help="scratch directory outside the repository (required)")
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--hogs", type=int, default=0, help="busy processes when loaded (default: one per core)")
    ap.add_argument("--mpiexec")
    ap.add_argument("--json", help="write the results here too")
    ap.add_argument("--lightgbm-worker", help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.lightgbm_worker:
        lightgbm_worker(args.lightgbm_worker, args.rounds, args.threads)
        return
    if not args.workdir:
        ap.error("--workdir is required")
    make_workdir(args.workdir)
    mpiexec = find_mpiexec(args.mpiexec)
    cores = os.cpu_count() or 1
    data = os.path.join(args.workdir, "train.h5")
    if not os.path.exists(data):
        wall, out, err, code = run_cmd([*MB, "synth", "longservedio", "--n", str(args.n), "--noise", "0.1", "--seed",
                                        "1", "--out", data], timeout=600)
        if code:
            sys.exit(err)
    try:
        import lightgbm  # noqa: F401
        have_lgb = True
    except ImportError:
        have_lgb = False
    configs = [
        ("mpiboost 1 rank, default threads (passive wait)", lambda: time_mpiboost(mpiexec, data, args.workdir,
                                                                                  args.rounds, 1, 0, _env({}))),
        ("mpiboost 1 rank, default threads, OMP_WAIT_POLICY=active", lambda: time_mpiboost(
            mpiexec, data, args.workdir, args.rounds, 1, 0, _env({"OMP_WAIT_POLICY": "active"}))),
        (f"mpiboost {cores} ranks, default (1 thread each)", lambda: time_mpiboost(
            mpiexec, data, args.workdir, args.rounds, cores, 0, _env({}))),
        (f"mpiboost {cores} ranks x {cores} threads (oversubscribed), passive", lambda: time_mpiboost(
            mpiexec, data, args.workdir, args.rounds, cores, cores, _env({}))),
        (f"mpiboost {cores} ranks x {cores} threads (oversubscribed), active", lambda: time_mpiboost(
            mpiexec, data, args.workdir, args.rounds, cores, cores, _env({"OMP_WAIT_POLICY": "active"}))),
    ]
    if have_lgb:
        configs += [
            (f"LightGBM num_threads={cores} (all cores)", lambda: time_lightgbm(data, args.rounds, cores)),
            ("LightGBM num_threads=1", lambda: time_lightgbm(data, args.rounds, 1)),
        ]
    results: dict = {}
    for condition in ("idle", "loaded"):
        hogs = []
        if condition == "loaded":
            for _ in range(args.hogs or cores):
                p = mp.Process(target=_hog, daemon=True)
                p.start()
                hogs.append(p)
            time.sleep(1.0)
        print(f"# {condition}: {load_line()}", flush=True)
        try:
            for name, fn in configs:
                runs = [fn() for _ in range(args.repeat)]
                ok = [r for r in runs if r[0] is not None]
                results[(condition, name)] = {
                    "rounds_s": float(np.median([r[0] for r in ok])) if ok else None,
                    "process_s": float(np.median([r[1] for r in ok])) if ok else None,
                    "failed": [r[2] for r in runs if r[0] is None],
                }
                r = results[(condition, name)]
                print(f"  {name:<62} rounds {r['rounds_s'] if r['rounds_s'] is not None else float('nan'):8.3f} s"
                      f"  process {r['process_s'] if r['process_s'] is not None else float('nan'):7.2f} s"
                      + (f"  FAILED {r['failed'][0]}" if r["failed"] else ""), flush=True)
        finally:
            for p in hogs:
                p.terminate()
            for p in hogs:
                p.join()
    lgb_name = f"LightGBM num_threads={cores} (all cores)"
    print(f"\nmedian of {args.repeat}, {args.n:,} rows x 21 features, {args.rounds} rounds of stumps, {cores} cores")
    print(f"{'configuration':<64}{'idle s':>9}{'loaded s':>10}{'loaded/idle':>12}{'vs LGBM idle':>13}"
          f"{'vs LGBM loaded':>15}")
    for name, _ in configs:
        a, b = results[("idle", name)]["rounds_s"], results[("loaded", name)]["rounds_s"]
        la = results.get(("idle", lgb_name), {}).get("rounds_s")
        lb = results.get(("loaded", lgb_name), {}).get("rounds_s")

        def f(x, spec=".3f"):
            return "n/a" if x is None else format(x, spec)

        print(f"{name:<64}{f(a):>9}{f(b):>10}{f(b / a if a and b else None, '.1f'):>12}"
              f"{f(a / la if a and la else None, '.2f'):>13}{f(b / lb if b and lb else None, '.2f'):>15}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({f"{c} | {n}": v for (c, n), v in results.items()}, fh, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
