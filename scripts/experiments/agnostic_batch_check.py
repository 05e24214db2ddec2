#!/usr/bin/env python
"""agnostic-batch on balance-scale, car and yeast, beside SAMME with the same class stumps and rounds.

Data as scripts/experiments/samme_tables.py converts them (``python -m
mpiboost convert``, the published UCI class counts checked). For every
shuffle s (default 0..4) the rows are permuted with numpy's
``default_rng(1000 + s)`` and split by position, the first 80% for training
and the last 20% for testing. In process, one rank: ``agnostic-batch`` with
both relabellings (fractional, random) for every gamma of the grid, and
``samme`` (histogram class stumps, weighted-error rule), T rounds each, seed
s. The table holds the test accuracy, mean ± std over the shuffles, in
percent; a test row of a class absent from the training split counts as
wrong.

    python scripts/experiments/agnostic_batch_check.py                # about 20 seconds
    python scripts/experiments/agnostic_batch_check.py --datasets car --gammas 0.3 --rounds 300
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402
import samme_tables as S  # noqa: E402

from mpiboost.boost.agnostic_batch import RELABEL  # noqa: E402
from mpiboost.api import train_files  # noqa: E402
from mpiboost.comm import single  # noqa: E402
from mpiboost.data.format import write_dataset  # noqa: E402

NAMES = ["balance-scale", "car", "yeast"]


def splits(args, name: str, data: dict, shuffle: int) -> tuple[Path, Path, np.ndarray, np.ndarray]:
    """Train/test files of one shuffle (written once) and the test rows' true labels."""
    n = data["n"]
    perm = np.random.default_rng(1000 + shuffle).permutation(n)
    cut = (4 * n) // 5
    tr, te = perm[:cut], perm[cut:]
    base = args.workdir / "agnostic_batch" / name / f"shuffle{shuffle}"
    paths = Path(f"{base}_train.h5"), Path(f"{base}_test.h5")
    if not all(p.exists() for p in paths):
        paths[0].parent.mkdir(parents=True, exist_ok=True)
        kw = dict(classes=data["classes"], feature_names=data["names"] or None)
        write_dataset(paths[0], data["X"][tr], data["y"][tr], **kw)
        write_dataset(paths[1], data["X"][te], data["y"][te], **kw)
    y = data["y"][te]
    truth = np.asarray(data["labels"], dtype=object)[y] if data["classes"] else y
    return paths[0], paths[1], data["X"][te], truth


def accuracy(comm, train_path: Path, X, truth, algo: str, params: dict, rounds: int, seed: int) -> float:
    model = train_files({"algo": algo, "rounds": rounds, "seed": seed, "threads": 1, **params}, [str(train_path)],
                        comm=comm)
    pred = model.predict_raw(np.asarray(X, dtype=np.float64))
    return float(np.mean([p == t for p, t in zip(pred.tolist(), truth.tolist())]))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=NAMES, choices=NAMES)
    p.add_argument("--data-dir", type=Path, default=C.DATASETS)
    p.add_argument("--workdir", type=Path, default=C.DEFAULT_WORKDIR)
    p.add_argument("--gammas", type=float, nargs="+", default=[0.1, 0.3, 0.5, 0.7, 1.0])
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--shuffles", type=int, default=5)
    args = p.parse_args(argv)
    args.convert_dir = args.workdir / "samme" / "convert"  # the conversions samme_tables.py makes
    comm = single()
    methods = [(f"{r} γ={g:g}", "agnostic-batch", {"relabel": r, "gamma": g}) for r in RELABEL for g in args.gammas]
    methods.append(("SAMME", "samme", {"weak_learner": "histogram"}))
    acc = {name: {m[0]: [] for m in methods} for name in args.datasets}
    meta = {}
    for name in args.datasets:
        data = S.full_dataset(args, name)
        meta[name] = (data["n"], data["d"], data["K"])
        t0 = time.perf_counter()
        for s in range(args.shuffles):
            tr, _, X, truth = splits(args, name, data, s)
            for title, algo, params in methods:
                acc[name][title].append(accuracy(comm, tr, X, truth, algo, params, args.rounds, s))
        C.log(f"{name}: {time.perf_counter() - t0:.1f} s")
    header = ["method", *(f"{n} (n={meta[n][0]}, d={meta[n][1]}, K={meta[n][2]})" for n in args.datasets)]
    rows = []
    for title, _, _ in methods:
        cells = []
        for name in args.datasets:
            v = 100 * np.asarray(acc[name][title])
            cells.append(f"{v.mean():.1f} ± {v.std(ddof=1):.1f}" if v.size > 1 else f"{v.mean():.1f}")
        rows.append([title, *cells])
    C.publish(f"Test accuracy (%), T = {args.rounds}, {args.shuffles} shuffles, 80/20 by position after "
              "default_rng(1000 + s).permutation:\n\n" + C.markdown_table(header, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
