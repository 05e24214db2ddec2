#!/usr/bin/env python
"""IS multi-task boosting on real multi-task data: Adult (3 tasks by education) and Amazon sentiment (4 tasks).

The methods and peers of ``multitask_tables.py``, on real tasks instead of the
synthetic ones, R repetitions (``--reps``, default 5; repetition r = 0..R-1
uses ``--seed r`` for mpiboost and seed r for LightGBM):

* A: ``mpiboost train --algo is-multitask --lambda auto`` (lambda from
  {0, 0.001, ..., 1} chosen with the rounds on the validation rows);
* B: the same with ``--lambda-scale is``;
* C: ``is-multitask --lambda 0`` (AdaBoost on each task alone);
* D: ``adaboost`` on the pooled tasks;
* the LightGBM peers (``--no-peers`` leaves them out): per task and pooled with
  the task id as a categorical feature, stumps and 31-leaf trees, learning rate
  0.1, deterministic, ``--rounds`` rounds per model, best iteration on the
  validation rows.

Every method runs ``--rounds`` (600) steps with ``--valid-fraction 0.2
--best-round`` and ``--steps-per-visit 5`` (A, B, C); the peers fit and
validate on exactly the same rows (``mpiboost.data.subsets.valid_mask``, checked
against every mpiboost run's row count). mpiboost runs through its command
line (``python -m mpiboost train`` / ``evaluate``, one rank, ``--threads``),
the peers in this process with the same threads.

Adult (UCI ``adult.data`` and ``adult.test``, converted with ``mpiboost
convert`` exactly as ``multiboost_tables.py`` does: the seven text columns
one-hot, 89 features; the domain map there makes three tasks by
``education``, university = Bachelors, Masters, Doctorate, Prof-school; hs =
HS-grad; other = every other level; education is the task, not a feature).
The official split: repetition r fits and validates on a random subsample of
``adult.data`` of at most ``--max-train-per-task`` rows (2,000) of each task
(numpy ``default_rng([r, k])`` for task k, rows kept in the file order; 0
keeps every row) and is tested on all 16,281 rows of ``adult.test``.

Amazon (Blitzer et al., books / dvd / electronics / kitchen, 2,000 reviews
each, the four domains as four tasks): bag-of-words counts over one shared
vocabulary of the ``--vocab-size`` (2,000) tokens occurring in the most
reviews of the four domains (``common.amazon_reviews``). Repetition r shuffles
each domain with ``default_rng([r, k])`` and takes the first
``--amazon-train`` (1,600) reviews for training (fit and validation) and the
next ``--amazon-test`` (400) for testing.

Printed per dataset: per method the mean over the tasks of the test error
(mean ± sample sd over the repetitions of the per-repetition means), the
per-task errors (means over the repetitions), wins / ties / losses against C
over the (task, repetition) pairs, the training wall seconds per repetition
(mpiboost: the whole ``mpiboost train`` process; peers: every model's fit),
and the lambdas A and B chose. Converted data and split files go to
``--workdir`` (default ``/tmp/mpiboost-exp/multitask`` or under
``$MPIBOOST_EXP_DIR``), never into the repository; ``--out`` writes the raw
results (JSON, rewritten after every repetition).

    python scripts/experiments/multitask_real.py                        # both datasets, 5 repetitions
    python scripts/experiments/multitask_real.py --quick                # smoke test, about a minute
    python scripts/experiments/multitask_real.py --datasets amazon --reps 3 --out amazon.json
    python scripts/experiments/multitask_real.py --datasets adult --max-train-per-task 0 --no-peers
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402
import multiboost_tables as MB  # noqa: E402
import multitask_tables as MT  # noqa: E402

AMAZON_DOMAINS = ("books", "dvd", "electronics", "kitchen")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=["adult", "amazon"], choices=["adult", "amazon"])
    p.add_argument("--data-dir", type=Path, default=C.DATASETS,
                   help="the directory holding adult/ and amazon-multidomain-sentiment/ "
                        "(default: $MPIBOOST_DATASETS or datasets/)")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--rounds", type=int, default=600, help="mpiboost steps at most; the peers' rounds per model")
    p.add_argument("--steps-per-visit", type=int, default=5)
    p.add_argument("--long-rounds", type=int, default=2000, help="steps at most of the methods with shrunk steps "
                   "(and of D beside them); the peers' rounds per model are the larger budget")
    p.add_argument("--c-rounds", type=int, default=600, help="rounds at most of each task's AdaBoost in "
                   "'C, rounds per task'")
    p.add_argument("--max-train-per-task", type=int, default=2000,
                   help="Adult: training rows drawn per task and repetition (0: all of adult.data)")
    p.add_argument("--amazon-train", type=int, default=1600, help="Amazon: training reviews per task")
    p.add_argument("--amazon-test", type=int, default=400, help="Amazon: test reviews per task")
    p.add_argument("--vocab-size", type=int, default=2000)
    p.add_argument("--methods", nargs="+", default=[*MT.METHODS, "C1", *MT.PEERS],
                   choices=[*MT.METHODS, "C1", *MT.PEERS],
                   help="mpiboost methods and peers (C is always run: the others are paired with it)")
    p.add_argument("--peers", action=argparse.BooleanOptionalAction, default=True,
                   help="the LightGBM peers (default: on)")
    p.add_argument("--threads", type=int, default=2, help="threads of every mpiboost run and LightGBM model")
    p.add_argument("--workdir", type=Path, default=C.DEFAULT_WORKDIR / "multitask")
    p.add_argument("--quick", action="store_true",
                   help="smoke test: 2 repetitions, 100 steps, 500 Adult rows and 400 Amazon reviews per task")
    p.add_argument("--out", type=Path, help="write the raw results here (JSON)")
    p.add_argument("--markdown", type=Path, help="also write the printed tables here")
    args = p.parse_args(argv)
    if args.quick:
        args.reps, args.rounds, args.long_rounds = min(args.reps, 2), min(args.rounds, 100), min(args.long_rounds, 200)
        args.max_train_per_task = min(args.max_train_per_task or 500, 500)
        args.amazon_train = min(args.amazon_train, 400)
    if args.amazon_train + args.amazon_test > 2000:
        p.error("--amazon-train + --amazon-test exceed a domain's 2,000 reviews")
    peers = set(MT.peer_keys(args.peers))
    wanted = {"C", *args.methods}  # in the tables' order: A, B, C, D, then the peers
    args.methods = [m for m in [*MT.METHODS, "C1"] if m in wanted] + [m for m in MT.PEERS
                                                                      if m in wanted and m in peers]
    return args


# -------------------------------------------------------------------- data
def _write(path: Path, data: dict, rows: np.ndarray, feature_names=None) -> None:
    from mpiboost.data.format import write_dataset

    rows = np.sort(rows)  # the rows keep the source's order (the validation split follows it)
    write_dataset(path, data["X"][rows], data["y"][rows], data["domain"][rows].astype(np.int32),
                  feature_names=feature_names, domain_names=data["names"])


def adult_splits(args):
    """(repetition, training file, test file) of Adult: a per-task subsample of adult.data, all of adult.test."""
    MB.adult(SimpleNamespace(workdir=args.workdir, data_dir=args.data_dir))  # converts once into workdir/data/adult
    src = args.workdir / "data" / "adult"
    train, test = src / "adult-train.h5", src / "adult-test.h5"
    data = MT.read_rows(train)
    import h5py

    with h5py.File(train, "r") as f:
        features = [str(v) for v in f.attrs["feature_names"]]
    for r in range(args.reps):
        rows = []
        for k in range(len(data["names"])):
            task = np.flatnonzero(data["domain"] == k)
            n = len(task) if args.max_train_per_task <= 0 else min(args.max_train_per_task, len(task))
            rows.append(np.random.default_rng([r, k]).choice(task, size=n, replace=False))
        path = args.workdir / "splits" / f"adult-rep{r}-train.h5"
        _write(path, data, np.concatenate(rows), features)
        yield r, path, test


def amazon_splits(args):
    """(repetition, training file, test file) of Amazon: per domain, a seeded shuffle cut into train and test."""
    out = args.workdir / "data" / f"amazon-v{args.vocab_size}.h5"
    out.parent.mkdir(parents=True, exist_ok=True)
    data = MT.read_rows(C.amazon_reviews(args.data_dir, out, AMAZON_DOMAINS, args.vocab_size))
    for r in range(args.reps):
        train, test = [], []
        for k in range(len(data["names"])):
            rows = np.random.default_rng([r, k]).permutation(np.flatnonzero(data["domain"] == k))
            train.append(rows[:args.amazon_train])
            test.append(rows[args.amazon_train:args.amazon_train + args.amazon_test])
        paths = [args.workdir / "splits" / f"amazon-rep{r}-{part}.h5" for part in ("train", "test")]
        _write(paths[0], data, np.concatenate(train))
        _write(paths[1], data, np.concatenate(test))
        yield r, paths[0], paths[1]


# -------------------------------------------------------------------- runs
def run_rep(args, dataset: str, r: int, train: Path, test: Path) -> dict:
    """Every method on repetition r: per-task test errors, wall seconds, best rounds, chosen lambda."""
    data, tests = MT.read_rows(train), {"test": MT.read_rows(test)}
    if tests["test"]["names"] != data["names"]:
        raise SystemExit(f"{test}: tasks {tests['test']['names']}, the training file's {data['names']}")
    valid = MT.valid_rows(data, r)
    out = {}
    for m in args.methods:
        if m in MT.METHODS:
            res = MT.run_mpiboost(str(args.workdir / "runs"), f"{dataset}-rep{r}", m, str(train),
                                  {"test": str(test)}, seed=r, rounds=args.rounds, steps=args.steps_per_visit,
                                  threads=args.threads, n_fit=int((~valid).sum()), long_rounds=args.long_rounds)
        elif m == "C1":
            res = MT.run_c_per_task(str(args.workdir / "runs"), f"{dataset}-rep{r}", data, valid,
                                    {"test": str(test)}, seed=r, rounds=args.c_rounds, threads=args.threads)
        else:
            res = MT.run_peer(m, data, valid, tests, seed=r, rounds=max(args.rounds, args.long_rounds),
                              threads=args.threads)
        out[m] = {"errors": res["errors"]["test"], "seconds": res["seconds"], "best_round": res["best_round"],
                  "lambda": res.get("lambda"), "chosen": res.get("chosen")}
    counts = {"train": np.bincount(data["domain"], minlength=len(data["names"])).tolist(),
              "fit": np.bincount(data["domain"][~valid], minlength=len(data["names"])).tolist(),
              "test": np.bincount(tests["test"]["domain"], minlength=len(data["names"])).tolist()}
    return {"names": data["names"], "counts": counts, "methods": out}


def render(args, record: dict) -> str:
    out = []
    for dataset, reps in record["datasets"].items():
        if not reps:
            continue
        first = reps[0]
        names, R = first["names"], len(reps)
        E = {m: np.array([rep["methods"][m]["errors"] for rep in reps]) for m in args.methods}  # (reps, tasks)
        rows = []
        for m in args.methods:
            v = E[m]
            means = v.mean(axis=1)
            sd = f" ± {means.std(ddof=1):.3f}" if R > 1 else ""
            best = [b for rep in reps for b in np.atleast_1d(rep["methods"][m]["best_round"])]
            lams = [MT.chosen_text(rep["methods"][m].get("chosen")) for rep in reps]
            rows.append([MT.LABEL[m], f"{means.mean():.3f}{sd}", " / ".join(f"{x:.3f}" for x in v.mean(axis=0)),
                         "" if m == "C" else MT.wins(v, E["C"]),
                         f"{np.mean([rep['methods'][m]['seconds'] for rep in reps]):.1f}",
                         f"{int(np.median(best))}",
                         ", ".join(lams) if any(lams) else ""])
        c = first["counts"]
        if dataset == "adult":
            how = (f"at most {args.max_train_per_task:,} rows per task of adult.data" if args.max_train_per_task > 0
                   else "all of adult.data") + ", tested on adult.test"
        else:
            how = (f"vocabulary {args.vocab_size:,}, per task {args.amazon_train:,} training and "
                   f"{args.amazon_test:,} test reviews drawn afresh each repetition")
        out += [f"**{dataset.capitalize()}** ({len(names)} tasks: {', '.join(names)}; {how}): test error, "
                f"{R} repetition{'s' if R > 1 else ''}, at most {args.rounds} steps ({args.long_rounds} for the "
                f"long ones), --valid-fraction 0.2 "
                f"--best-round, {args.threads} thread(s). Rows per task: fit {' / '.join(map(str, c['fit']))}, "
                f"validation {' / '.join(str(a - b) for a, b in zip(c['train'], c['fit']))}, "
                f"test {' / '.join(map(str, c['test']))}.", "",
                C.markdown_table(["method", "mean over tasks ± sd over repetitions", f"per task ({' / '.join(names)})",
                                  "vs C: wins / ties / losses over (task, repetition)", "train s / repetition",
                                  "best round (median)", "λ (start) chosen, per repetition"], rows), ""]
    return "\n".join(out)


def main(argv=None) -> int:
    args = parse_args(argv)
    for sub in ("splits", "runs"):
        (args.workdir / sub).mkdir(parents=True, exist_ok=True)
    record = {"settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
              "datasets": {d: [] for d in args.datasets}}
    for dataset in args.datasets:
        t0 = time.perf_counter()
        splits = adult_splits(args) if dataset == "adult" else amazon_splits(args)
        for r, train, test in splits:
            rep = run_rep(args, dataset, r, train, test)
            rep["rep"] = r
            record["datasets"][dataset].append(rep)
            for path in {train, test}:
                if path.parent.name == "splits":
                    path.unlink()  # a repetition's files are redrawn from the seeds when needed
            if args.out:
                args.out.write_text(json.dumps(record))
            C.log(f"{dataset} rep {r}: " + ", ".join(
                f"{m} {np.mean(res['errors']):.3f} ({res['seconds']:.1f} s)" for m, res in rep["methods"].items()))
        C.log(f"{dataset}: {time.perf_counter() - t0:.0f} s")
    C.publish(render(args, record), args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
