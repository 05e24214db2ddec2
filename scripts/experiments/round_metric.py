#!/usr/bin/env python
"""Which validation measure should choose the round: the 0/1 error or the log-loss?

``--best-round`` keeps the round of the best validation measure. The error counts rows; the log-loss scores
the model's probabilities, which for a model fitted by a log-loss (``gbdt``, ``--loss logistic``: a
logistic or softmax link) are what it fits, and for a vote (AdaBoost's exponential loss, SAMME) are read off
the vote (``sigmoid(2 F)``, ``softmax(F / (K - 1))``), not fitted. This script trains each algorithm at its
defaults with ``--valid-fraction 0.2 --best-round`` and each ``--valid-metric``, on the same rows and seed,
and prints the mean test error % over the seeds, the paired difference logloss - error and its standard
error, and the mean round kept.

Sets: binary a9a (a seeded 10,000-row sample of its training part), ijcnn1, cod-rna (a seeded 4/5-1/5
split) and the Long-Servedio generator; multiclass balance-scale, car, yeast (seeded splits) and satimage.
In-process through the public API, one rank, one thread.

    MPIBOOST_DATASETS=/path/to/datasets python scripts/experiments/round_metric.py [--rounds 100 500] [--seeds 1 2 3]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tree_defaults import binary_set, multiclass_set  # noqa: E402  (the sets and their splits)

BINARY = ["a9a", "ijcnn1", "cod-rna", "long-servedio"]
MULTICLASS = ["balance-scale", "car", "yeast", "satimage"]
ALGOS = {"binary": ["gbdt", "adaboost"], "multiclass": ["gbdt", "samme"]}
METRICS = ("error", "logloss")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sets", nargs="+", default=BINARY + MULTICLASS, choices=BINARY + MULTICLASS)
    p.add_argument("--rounds", nargs="+", type=int, default=[100, 500])
    p.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    return p.parse_args(argv)


def main(argv=None) -> int:
    import mpiboost

    args = parse_args(argv)
    print("| set | algorithm | rounds | by error | by log-loss | log-loss − error (± se) | rounds kept (error / "
          "log-loss) |")
    print("|---|---|---:|---:|---:|---:|---|")
    for name in args.sets:
        kind = "binary" if name in BINARY else "multiclass"
        data = {s: binary_set(name, s, 0.0) if kind == "binary" else multiclass_set(name, s) for s in args.seeds}
        for algo in ALGOS[kind]:
            for rounds in args.rounds:
                err = {m: [] for m in METRICS}
                kept = {m: [] for m in METRICS}
                for seed, (X, y, Xt, yt, _, _) in data.items():
                    for metric in METRICS:
                        m = mpiboost.train({"algo": algo, "rounds": rounds, "seed": seed, "valid-fraction": 0.2,
                                            "best-round": True, "valid-metric": metric, "threads": 1}, X, y)
                        err[metric].append(100 * float(np.mean(m.predict(Xt) != yt)))
                        kept[metric].append(m.n_rounds)
                d = np.array(err["logloss"]) - np.array(err["error"])
                se = d.std(ddof=1) / np.sqrt(d.size) if d.size > 1 else float("nan")
                print(f"| {name} | {algo} | {rounds} | {np.mean(err['error']):.2f} | {np.mean(err['logloss']):.2f} | "
                      f"{d.mean():+.2f} ± {se:.2f} | {np.mean(kept['error']):.0f} / {np.mean(kept['logloss']):.0f} |",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
