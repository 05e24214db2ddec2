#!/usr/bin/env python
"""End-to-end training benchmark: mpiboost against LightGBM and XGBoost, side by side.

Data: Long-Servedio, --n training rows x 21 features with 1% label noise (seed 1)
and a clean 100k test set (seed 2), generated with ``mpiboost synth`` into
--workdir (outside the repository; reused when already there).

Configurations, T = --rounds (100) stumps, same data and the same --threads (2)
cores in total:

* mpiboost ``smoothboost --weak-learner sample`` and ``adaboost --weak-learner
  histogram``, each as ``mpiexec -n 1 ... --threads 2`` and ``mpiexec -n 2 ...
  --threads 1``, run as a subprocess with ``--quiet --metrics FILE``; the
  numbers come from the JSONL summary line, and the subprocess is timed as a
  whole too (process start, imports, MPI start and model save included);
* LightGBM (num_leaves=2, max_bin=255, objective binary) and XGBoost (hist,
  max_depth=1, max_bin=256), each in a fresh Python subprocess that reads X, y
  from the same HDF5 file with h5py (timed: mpiboost's time includes its load),
  builds its Dataset / QuantileDMatrix and trains (timed), then reports its
  peak RSS and its test error (the prediction's time is left out of its
  process time, as mpiboost evaluates in a separate process).

Two wall times per configuration: "train" (in the process: load + binning /
dataset construction + rounds; for mpiboost the summary's ``seconds.total``) and
"process" (the whole subprocess, from the outside). Ratios to LightGBM are
given for both, with the issue's targets (AdaBoost histogram <= 0.5x LightGBM,
SmoothBoost sample <= 0.25x) and the memory target for ``-n 2`` (peak RSS per
rank <= n_local x (d + 64) bytes + 300 MB, MB = 10^6 bytes) marked PASS/MISS.
Every number is the median of --repeat runs; the configurations are run
round-robin, so that a change in the machine's load hits all of them alike.

    python scripts/bench/bench_train.py [--n 1600000] [--repeat 3] [--json out.json] [--learning-rate LR]
    python scripts/bench/bench_train.py --n 100000 --repeat 1      # quick check
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import shlex
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import find_mpiexec, load_line, make_workdir, run_cmd  # noqa: E402

TARGET_RATIO = {"adaboost": 0.5, "smoothboost": 0.25}
RSS_PER_ROW_EXTRA = 64  # bytes per row on top of the d feature bytes
RSS_FIXED = 300_000_000  # bytes
TEST_ROWS = 100_000


# --------------------------------------------------------------------------- peers (run in a subprocess)

def _peak_rss() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def _read_h5(path: str):
    import h5py

    with h5py.File(path, "r") as f:
        return f["X"][...], f["y"][...]


def peer_worker(args: argparse.Namespace) -> None:
    """Body of one peer subprocess: prints one JSON line with its timings and error."""
    clock = time.perf_counter
    import h5py  # noqa: F401  (imported before the clock starts, like mpiboost's imports)

    if args.peer_worker == "lightgbm":
        import lightgbm as lgb
    else:
        import xgboost as xgb
    t0 = clock()
    X, y = _read_h5(args.train)
    t1 = clock()
    label = (y > 0).astype(np.float32)
    if args.peer_worker == "lightgbm":
        params = {
            "objective": "binary",
            "num_leaves": 2,
            "max_bin": 255,
            "num_threads": args.threads,
            "verbose": -1,
            "seed": 0,
        }
        if args.learning_rate is not None:
            params["learning_rate"] = args.learning_rate
        ds = lgb.Dataset(X, label=label, params=params, free_raw_data=True)
        ds.construct()
        t2 = clock()
        booster = lgb.train(params, ds, num_boost_round=args.rounds)
        t3 = clock()
        version = lgb.__version__
    else:
        params = {
            "objective": "binary:logistic",
            "tree_method": "hist",
            "max_depth": 1,
            "max_bin": 256,
            "nthread": args.threads,
            "verbosity": 0,
            "seed": 0,
        }
        if args.learning_rate is not None:
            params["eta"] = args.learning_rate
        ds = xgb.QuantileDMatrix(X, label=label, max_bin=256, nthread=args.threads)
        t2 = clock()
        booster = xgb.train(params, ds, num_boost_round=args.rounds)
        t3 = clock()
        version = xgb.__version__
    peak = _peak_rss()
    del X, y, label, ds
    t4 = clock()
    Xt, yt = _read_h5(args.test)
    if args.peer_worker == "lightgbm":
        p = booster.predict(Xt)
    else:
        p = booster.predict(xgb.DMatrix(Xt, nthread=args.threads))
    error = float(np.mean(np.where(p > 0.5, 1, -1) != yt))
    out = {
        "version": version,
        "eval_seconds": clock() - t4,
        "seconds": {"total": t3 - t0, "load": t1 - t0, "construct": t2 - t1, "rounds": t3 - t2},
        "peak_rss_bytes": peak,
        "test_error": error,
    }
    print(json.dumps(out), flush=True)


# --------------------------------------------------------------------------- driver


def generate(args, mpiboost_cmd: list) -> tuple:
    os.makedirs(args.workdir, exist_ok=True)
    train = os.path.join(args.workdir, f"ls_n{args.n}_noise0.01_seed1.h5")
    test = os.path.join(args.workdir, f"ls_test_n{TEST_ROWS}_clean_seed2.h5")
    for path, n, noise, seed in ((train, args.n, 0.01, 1), (test, TEST_ROWS, 0.0, 2)):
        if os.path.exists(path) and not args.regenerate:
            continue
        tmp = path + ".part.h5"
        cmd = mpiboost_cmd + ["synth", "longservedio", "--n", str(n), "--noise", str(noise), "--seed", str(seed), "--out", tmp]
        _, out, err, rc = run_cmd(cmd, 3600)
        if rc != 0:
            sys.exit(f"data generation failed: {shlex.join(cmd)}\n{err}")
        os.replace(tmp, path)
    return train, test


def last_summary(path: str) -> dict:
    with open(path) as f:
        lines = [ln for ln in f if ln.strip()]
    obj = json.loads(lines[-1])
    if "summary" not in obj:
        raise ValueError(f"last line of {path} is not a summary")
    return obj["summary"]


def run_mpiboost(cfg: dict, args, train: str, test: str, mpiexec: str, k: int) -> dict:
    tag = f"{cfg['algo']}_{cfg['wl']}_n{cfg['ranks']}_{k}"
    model = os.path.join(args.workdir, f"model_{tag}.h5")
    metrics = os.path.join(args.workdir, f"metrics_{tag}.jsonl")
    for p in (model, metrics):
        if os.path.exists(p):
            os.remove(p)
    cmd = [
        mpiexec, "-n", str(cfg["ranks"]), sys.executable, "-m", "mpiboost", "train",
        "--algo", cfg["algo"], "--weak-learner", cfg["wl"], "--data", train,
        "--rounds", str(args.rounds), "--model", model, "--threads", str(cfg["threads"]),
        "--seed", "0", "--quiet", "--metrics", metrics,
    ]
    if cfg["algo"] == "smoothboost":
        # the same boosting work as the peers: one SmoothBoost run, without the two trainings of the noise check
        cmd += ["--noise-check", "off"]
    wall, out, err, rc = run_cmd(cmd, args.timeout)
    run = {"command": shlex.join(cmd), "process_seconds": wall}
    if rc != 0:
        run["error"] = f"exit {rc}: {(err or out).strip()[-2000:]}"
        return run
    s = last_summary(metrics)
    run["summary"] = s
    sec = s["seconds"]
    run["seconds"] = {
        "total": sec["total"],
        "load": sec["load"],
        "read": sec.get("read", 0.0),
        "bin": sec.get("bin_edges", 0.0) + sec.get("bin", 0.0),
        "rounds": sec["rounds"],
        "communication": sec["communication"],
        "select": sec.get("select", 0.0),
        "apply": sec.get("apply", 0.0),
    }
    rss = s["peak_rss_bytes"]
    run["peak_rss_bytes"] = max(rss["per_rank"])
    run["peak_rss_per_rank"] = rss["per_rank"]
    run["rows_per_rank"] = rss["rows_per_rank"]
    run["rounds_done"] = s["rounds"]
    rounds = max(1, s["rounds"])
    run["bytes_per_round_all_ranks"] = s["bytes_all_ranks"]["sent"] / rounds
    run["bytes_per_round_center_received"] = sum(v["received"] for v in s["bytes_center"].values()) / rounds
    ev = [sys.executable, "-m", "mpiboost", "evaluate", "--model", model, "--data", test]
    _, eout, eerr, erc = run_cmd(ev, args.timeout)
    if erc == 0:
        run["test_error"] = json.loads(eout.strip().splitlines()[-1])["error"]
    else:
        run["evaluate_error"] = (eerr or eout).strip()[-2000:]
    return run


def run_peer(name: str, args, train: str, test: str) -> dict:
    cmd = [
        sys.executable, os.path.abspath(__file__), "--peer-worker", name, "--train", train, "--test", test,
        "--threads", str(args.threads), "--rounds", str(args.rounds),
    ]
    if args.learning_rate is not None:
        cmd += ["--learning-rate", str(args.learning_rate)]
    wall, out, err, rc = run_cmd(cmd, args.timeout)
    run = {"command": shlex.join(cmd), "process_seconds": wall}
    if rc != 0:
        run["error"] = f"exit {rc}: {(err or out).strip()[-2000:]}"
        return run
    run.update(json.loads(out.strip().splitlines()[-1]))
    # the test-set prediction ran in the same process: leave it out, as
    # mpiboost's evaluation runs in a process of its own
    run["process_seconds_with_eval"] = wall
    run["process_seconds"] = wall - run["eval_seconds"]
    return run


def median_of(runs: list, *keys):
    vals = []
    for r in runs:
        v = r
        for k in keys:
            if not isinstance(v, dict) or k not in v:
                v = None
                break
            v = v[k]
        if v is not None:
            vals.append(v)
    return float(np.median(vals)) if vals else None


def summarize(cfg: dict) -> dict:
    ok = [r for r in cfg["runs"] if "error" not in r]
    med = {"ok_runs": len(ok), "failed_runs": len(cfg["runs"]) - len(ok)}
    if not ok:
        return med
    med["process_seconds"] = median_of(ok, "process_seconds")
    med["seconds"] = {k: median_of(ok, "seconds", k) for k in ok[0]["seconds"]}
    med["peak_rss_bytes"] = median_of(ok, "peak_rss_bytes")
    med["test_error"] = median_of(ok, "test_error")
    if cfg["kind"] == "mpiboost":
        med["bytes_per_round_all_ranks"] = median_of(ok, "bytes_per_round_all_ranks")
        med["bytes_per_round_center_received"] = median_of(ok, "bytes_per_round_center_received")
        med["rows_per_rank"] = ok[0]["rows_per_rank"]
        med["d"] = ok[0]["summary"]["d"]
        med["rounds_done"] = ok[0]["rounds_done"]
        errs = {r.get("test_error") for r in ok}
        med["test_error_identical_across_runs"] = len(errs) == 1
    else:
        med["version"] = ok[0].get("version")
    return med


def fmt(v, spec: str, none: str = "-") -> str:
    return none if v is None else format(v, spec)



def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_600_000, help="training rows (default 1.6M, as in the paper)")
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3, help="runs per configuration (median reported)")
    ap.add_argument("--threads", type=int, default=2, help="cores in total for every configuration (default 2)")
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "mpiboost-bench-train"),
                    help="data, models and metrics go here (default: under the system temp dir)")
    ap.add_argument("--regenerate", action="store_true", help="regenerate the data even if present")
    ap.add_argument("--mpiexec", default=None, help="mpiexec to use (default: next to this Python, else on PATH)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds allowed per subprocess")
    ap.add_argument("--skip", nargs="*", default=[], choices=["smoothboost", "adaboost", "lightgbm", "xgboost"],
                    help="leave these configurations out")
    ap.add_argument("--learning-rate", type=float, default=None,
                    help="peers' learning rate (default: each library's own, 0.1 for LightGBM, 0.3 for XGBoost)")
    ap.add_argument("--json", help="also write every number here")
    # internal: one peer run in a fresh process
    ap.add_argument("--peer-worker", choices=["lightgbm", "xgboost"], help=argparse.SUPPRESS)
    ap.add_argument("--train", help=argparse.SUPPRESS)
    ap.add_argument("--test", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.peer_worker:
        peer_worker(args)
        return

    mpiexec = find_mpiexec(args.mpiexec)
    mpiboost_cmd = [sys.executable, "-m", "mpiboost"]
    make_workdir(args.workdir)

    load_before = load_line()
    t_gen = time.perf_counter()
    train, test = generate(args, mpiboost_cmd)
    t_gen = time.perf_counter() - t_gen

    configs = []
    half = max(1, args.threads // 2)
    for algo, wl in (("smoothboost", "sample"), ("adaboost", "histogram")):
        if algo in args.skip:
            continue
        for ranks, threads in ((1, args.threads), (2, half)):
            configs.append({
                "name": f"mpiboost {algo} {wl}, -n {ranks} x {threads} thr",
                "kind": "mpiboost", "algo": algo, "wl": wl, "ranks": ranks, "threads": threads, "runs": [],
            })
    notes = []
    for peer, label in (("lightgbm", "LightGBM num_leaves=2"), ("xgboost", "XGBoost hist depth 1")):
        if peer in args.skip:
            notes.append(f"{label}: skipped (--skip)")
            continue
        try:
            found = importlib.util.find_spec(peer) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            notes.append(f"{label}: skipped ({peer} is not installed)")
            continue
        configs.append({"name": f"{label}, {args.threads} thr", "kind": "peer", "peer": peer, "runs": []})

    for k in range(args.repeat):
        for cfg in configs:
            if cfg["kind"] == "mpiboost":
                run = run_mpiboost(cfg, args, train, test, mpiexec, k)
            else:
                run = run_peer(cfg["peer"], args, train, test)
            cfg["runs"].append(run)
            status = "FAILED " + run["error"].splitlines()[-1] if "error" in run else (
                f"{run['process_seconds']:.2f} s process, {run['seconds']['total']:.2f} s train")
            print(f"[{k + 1}/{args.repeat}] {cfg['name']}: {status}", file=sys.stderr, flush=True)
    load_after = load_line()

    for cfg in configs:
        cfg["median"] = summarize(cfg)
    lgbm = next((c for c in configs if c.get("peer") == "lightgbm" and c["median"].get("ok_runs")), None)
    ref_train = lgbm["median"]["seconds"]["total"] if lgbm else None
    ref_proc = lgbm["median"]["process_seconds"] if lgbm else None
    for cfg in configs:
        m = cfg["median"]
        if not m.get("ok_runs") or ref_train is None:
            continue
        m["ratio_to_lightgbm_train"] = m["seconds"]["total"] / ref_train
        m["ratio_to_lightgbm_process"] = m["process_seconds"] / ref_proc

    # ---------------------------------------------------------------- report
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"\ntraining benchmark: Long-Servedio {args.n:,} x 21, 1% noise, T = {args.rounds}, "
          f"{args.threads} threads in all, median of {args.repeat} run(s); {cores} cores on this machine")
    print(f"test set: {TEST_ROWS:,} clean rows; data in {args.workdir} ({t_gen:.1f} s to generate or find)")
    print(f"load before: {load_before}\nload after:  {load_after}")
    print("train = in-process load + binning/dataset construction + rounds; "
          "process = the whole subprocess seen from outside")
    hdr = (f"\n{'configuration':<44}{'process s':>10}{'train s':>9}{'test err%':>10}"
           f"{'xLGBM train':>12}{'xLGBM proc':>11}{'peak RSS MB':>12}")
    print(hdr)
    print("-" * (len(hdr) - 1))
    for cfg in configs:
        m = cfg["median"]
        if not m.get("ok_runs"):
            print(f"{cfg['name']:<44}  FAILED: {cfg['runs'][-1]['error'].splitlines()[-1][:80]}")
            continue
        err = m["test_error"] * 100 if m["test_error"] is not None else None
        print(f"{cfg['name']:<44}{m['process_seconds']:>10.2f}{m['seconds']['total']:>9.2f}{fmt(err, '.2f'):>10}"
              f"{fmt(m.get('ratio_to_lightgbm_train'), '.3f'):>12}{fmt(m.get('ratio_to_lightgbm_process'), '.3f'):>11}"
              f"{m['peak_rss_bytes'] / 1e6:>12.0f}")

    print(f"\nmpiboost breakdown (s, center rank){'':<9}{'load':>7}{'read':>7}{'bin':>7}{'rounds':>8}{'select':>8}"
          f"{'apply':>7}{'comm':>7}{'B/round all':>13}{'B/round ctr':>12}")
    for cfg in configs:
        m = cfg["median"]
        if cfg["kind"] != "mpiboost" or not m.get("ok_runs"):
            continue
        s = m["seconds"]
        print(f"{cfg['name']:<44}{s['load']:>7.2f}{s['read']:>7.2f}{s['bin']:>7.2f}{s['rounds']:>8.2f}"
              f"{s['select']:>8.2f}{s['apply']:>7.2f}{s['communication']:>7.2f}"
              f"{m['bytes_per_round_all_ranks']:>13,.0f}{m['bytes_per_round_center_received']:>12,.0f}")
    print(f"\npeer breakdown (s){'':<26}{'load':>7}{'construct':>10}{'rounds':>8}   version")
    for cfg in configs:
        m = cfg["median"]
        if cfg["kind"] != "peer" or not m.get("ok_runs"):
            continue
        s = m["seconds"]
        print(f"{cfg['name']:<44}{s['load']:>7.2f}{s['construct']:>10.2f}{s['rounds']:>8.2f}   {m['version']}")
    lr = "library defaults" if args.learning_rate is None else args.learning_rate
    print(f"peers' learning rate: {lr}")
    for note in notes:
        print(f"note: {note}")

    checks = []
    print("\ntargets (the issue's):")
    if ref_train is None:
        print("  speed: n/a (no LightGBM result to compare with)")
    for cfg in configs:
        m = cfg["median"]
        if cfg["kind"] != "mpiboost" or not m.get("ok_runs"):
            continue
        if ref_train is not None:
            tgt = TARGET_RATIO[cfg["algo"]]
            rt, rp = m["ratio_to_lightgbm_train"], m["ratio_to_lightgbm_process"]
            ok_t, ok_p = bool(rt <= tgt), bool(rp <= tgt)
            checks.append({"config": cfg["name"], "target": f"wall <= {tgt} x LightGBM",
                           "ratio_train": rt, "pass_train": ok_t, "ratio_process": rp, "pass_process": ok_p})
            print(f"  {cfg['name']:<42} wall <= {tgt:.2f}x LightGBM: train {rt:.3f}x "
                  f"{'PASS' if ok_t else 'MISS'}, process {rp:.3f}x {'PASS' if ok_p else 'MISS'}")
        if cfg["ranks"] == 2:
            d = m["d"]
            worst = 0.0
            parts = []
            measured = []
            for rss, nl in zip(
                np.median([r["peak_rss_per_rank"] for r in cfg["runs"] if "error" not in r], axis=0),
                m["rows_per_rank"],
            ):
                target = nl * (d + RSS_PER_ROW_EXTRA) + RSS_FIXED
                worst = max(worst, float(rss) / target)
                measured.append({"rows": int(nl), "peak_rss_bytes": float(rss), "target_bytes": target})
                parts.append(f"{rss / 1e6:.0f}/{target / 1e6:.0f}")
            ok = bool(worst <= 1.0)
            checks.append({"config": cfg["name"], "target": "peak RSS per rank <= n_local*(d+64) B + 300 MB",
                           "per_rank": measured, "worst_fraction_of_target": worst, "pass": ok})
            print(f"  {cfg['name']:<42} peak RSS/rank <= n_local(d+64) B + 300 MB: "
                  f"{', '.join(parts)} MB (rank: measured/target) {'PASS' if ok else 'MISS'}")

    if args.json:
        out = {
            "n": args.n, "d": 21, "rounds": args.rounds, "repeat": args.repeat, "threads": args.threads,
            "peer_learning_rate": args.learning_rate, "cores": cores, "test_rows": TEST_ROWS, "train_file": train, "test_file": test,
            "python": sys.version.split()[0], "platform": platform.platform(), "mpiexec": mpiexec,
            "load_before": load_before, "load_after": load_after, "notes": notes,
            "configurations": configs, "checks": checks,
        }
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, default=float)


if __name__ == "__main__":
    main()
