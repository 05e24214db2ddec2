#!/usr/bin/env python
"""SmoothBoost paper, Table 1: Long-Servedio data with label noise, mpiboost vs. the paper vs. peers.

For every noise level P and seed s: a training set of --n-train rows
(``mpiboost synth longservedio --noise P --seed s``) and a clean test set of
--n-test rows (``--noise 0 --seed 1000+s``). mpiboost trains Dist.AdaBoost and
Dist.SmoothBoost (T, beta, epsilon of the paper; gamma = (1/2 - beta)/2) in
``sample`` mode (the paper's protocol) and ``histogram`` mode with
``mpiexec -n 2`` (one thread per rank, training seed s) and is scored with
``mpiboost evaluate``; LightGBM, XGBoost, sklearn AdaBoost and sklearn
LogisticRegression are trained on the same X, y (read from the HDF5 files).

Prints Markdown (test error %, mean ± sample std over the seeds, and the mean
wall time) and writes the raw results to WORKDIR/results/table1.jsonl.

    python scripts/experiments/table1.py              # the full table (about 10 minutes on 2 cores)
    python scripts/experiments/table1.py --quick      # smoke test, well under a minute
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

# Table 1 of the paper (test error %, 1.6M training rows, 16 machines, 10 trials).
PAPER = {
    0.001: {"adaboost": "11.64 ± 3.82", "smoothboost": "4.28 ± 0.66", "lr": "0.00"},
    0.01: {"adaboost": "25.97 ± 1.56", "smoothboost": "13.38 ± 4.66", "lr": "0.00"},
    0.1: {"adaboost": "28.04 ± 0.94", "smoothboost": "27.07 ± 1.60", "lr": "37.67"},
}
TEST_SEED_OFFSET = 1000
ALGOS = {"adaboost": "Dist.AdaBoost", "smoothboost": "Dist.SmoothBoost"}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5],
                   help="data and training seeds (test set seed = 1000 + seed)")
    p.add_argument("--noise", type=float, nargs="+", default=[0.001, 0.01, 0.1], help="label noise rates")
    p.add_argument("--n-train", type=int, default=200_000)
    p.add_argument("--n-test", type=int, default=100_000)
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--epsilon", type=float, default=0.1)
    p.add_argument("--beta", type=float, default=0.2)
    p.add_argument("--modes", nargs="+", default=["sample", "histogram"], choices=["sample", "histogram"])
    p.add_argument("--nproc", type=int, default=2, help="MPI ranks (mpiexec -n)")
    p.add_argument("--threads", type=int, default=1, help="OpenMP threads per rank")
    p.add_argument("--peers", nargs="*", default=["lightgbm", "xgboost", "sk_adaboost", "sk_lr"],
                   help=f"peer columns ({', '.join(C.PEERS)}); none: --peers")
    p.add_argument("--peer-threads", type=int, default=2)
    p.add_argument("--workdir", type=Path, default=C.DEFAULT_WORKDIR)
    p.add_argument("--quick", action="store_true",
                   help="smoke test: 10,000 training / 5,000 test rows, seed 1 only")
    p.add_argument("--resume", action="store_true", help="keep the raw results of an earlier run and skip those runs")
    p.add_argument("--render-only", action="store_true", help="only print the tables from the raw results")
    p.add_argument("--out", type=Path, help="also write the Markdown here")
    args = p.parse_args(argv)
    if args.quick:
        args.n_train, args.n_test, args.seeds = 10_000, 5_000, [1]
        args.workdir = args.workdir / "quick"
    return args


def run_all(args, rec: C.Records, peers: list[str]) -> None:
    for noise in args.noise:
        for seed in args.seeds:
            train = C.synth_longservedio(args.workdir, args.n_train, noise, seed)
            test = C.synth_longservedio(args.workdir, args.n_test, 0.0, TEST_SEED_OFFSET + seed)
            for mode in args.modes:
                for algo in ALGOS:
                    method = f"{algo}/{mode}"
                    key = dict(noise=noise, seed=seed, method=method, n_train=args.n_train)
                    if rec.find(**key):
                        continue
                    name = f"t1_{algo}_{mode}_n{args.n_train}_p{noise:g}_s{seed}"
                    params = (dict(epsilon=args.epsilon, beta=args.beta, gamma=0.5 * (0.5 - args.beta))  # the paper's gamma
                              if algo == "smoothboost" else dict(beta=args.beta if mode == "sample" else None))
                    res = C.train_mpiboost(args.workdir, name, train, algo=algo, weak_learner=mode, rounds=args.rounds,
                                           seed=seed, nproc=args.nproc, threads=args.threads, noise_check="off", **params)
                    ev = C.evaluate_mpiboost(res["model"], test)
                    s = res["summary"]
                    rec.add({**key, "error": ev["error"], "auc": ev["auc"], "seconds": s["seconds"]["total"],
                             "rounds_done": s["rounds"], "stop_reason": s["stop_reason"],
                             "train_error": s["train_error"]})
                    C.log(f"noise {noise:g} seed {seed} {method}: test error {100 * ev['error']:.2f}% "
                          f"({s['rounds']} rounds, {s['seconds']['total']:.2f} s)")
            todo = [k for k in peers if not rec.find(noise=noise, seed=seed, method=k, n_train=args.n_train)]
            if todo:
                Xtr, ytr = C.read_xy(train)
                Xte, yte = C.read_xy(test)
                Xtr, Xte = Xtr.astype("float32"), Xte.astype("float32")
                for key in todo:
                    out = C.PEERS[key][2](Xtr, ytr, Xte, yte, seed, threads=args.peer_threads, rounds=args.rounds)
                    rec.add({"noise": noise, "seed": seed, "method": key, "n_train": args.n_train, **out})
                    C.log(f"noise {noise:g} seed {seed} {key}: test error {100 * out['error']:.2f}% ({out['seconds']:.2f} s)")


def render(args, rec: C.Records, peers: list[str], notes: list[str]) -> str:
    noises = args.noise
    head = ["method"] + [f"noise {100 * p:g}%" for p in noises]
    rows = []
    for algo, label in ALGOS.items():
        rows.append([f"paper: {label} (1.6M rows, 16 machines)"] + [PAPER.get(p, {}).get(algo, "–") for p in noises])
    rows.append(["paper: Liblinear-LR"] + [PAPER.get(p, {}).get("lr", "–") for p in noises])
    time_rows = []
    methods = [(f"{a}/{m}", f"mpiboost {ALGOS[a]}, `{m}`") for m in args.modes for a in ALGOS]
    methods += [(k, C.PEERS[k][0]) for k in peers]
    early = []
    for method, label in methods:
        cells, tcells = [], []
        for p in noises:
            rs = [r for r in rec.select(noise=p, method=method, n_train=args.n_train) if r["seed"] in args.seeds]
            cells.append(C.pct([r["error"] for r in rs]) if rs else "–")
            tcells.append(C.secs([r["seconds"] for r in rs]) if rs else "–")
            stopped = [r for r in rs if r.get("stop_reason", "rounds") != "rounds"]
            if stopped:
                early.append(f"{label} at noise {100 * p:g}%: {len(stopped)} of {len(rs)} runs stopped early "
                             f"(after {', '.join(str(r['rounds_done']) for r in stopped)} rounds; "
                             f"{stopped[0]['stop_reason']}).")
        rows.append([label] + cells)
        time_rows.append([label] + tcells)
    out = [
        f"Test error (%) on a clean {args.n_test:,}-row test set, mean ± std over seeds {args.seeds} "
        f"({args.n_train:,} training rows; T={args.rounds}, β={args.beta}, ε={args.epsilon}, "
        f"γ=(½−β)/2={0.5 * (0.5 - args.beta):g}; mpiboost on {args.nproc} ranks × {args.threads} thread):",
        "",
        C.markdown_table(head, rows),
        "",
    ]
    if early:
        out += ["Early stops: " + " ".join(early), ""]
    out += notes and ["Skipped peers: " + " ".join(notes), ""] or []
    out += [
        "Wall time (s, mean over seeds): mpiboost = training job total from the summary (load + binning + rounds); "
        f"peers = `fit` on in-memory arrays with {args.peer_threads} threads (sklearn AdaBoost and liblinear are single-threaded):",
        "",
        C.markdown_table(head, time_rows),
        "",
    ]
    return "\n".join(out)


def main(argv=None) -> int:
    args = parse_args(argv)
    peers, notes = C.available_peers(args.peers)
    return C.table_main(args, f"table1_n{args.n_train}.jsonl", lambda rec: run_all(args, rec, peers),
                        lambda rec: render(args, rec, peers, notes))


if __name__ == "__main__":
    sys.exit(main())
