"""Start-up cost of the Python API: ``import mpiboost`` and one small ``fit``, beside LightGBM's.

    python scripts/bench/bench_startup.py [--n 2000] [--d 10] [--rounds 20] [--repeat 7] [--threads 2]

Each measurement runs in a fresh interpreter (a cold import is what a user's script pays): the wall
time of ``import X`` alone, and of ``import X`` plus one fit of ``--rounds`` trees (31 leaves, 20 rows
a leaf, the same for both) on the same ``--n`` x ``--d`` generated rows, with the same threads.
Then the fit alone, in one warm process (imports done), the median of 5. Prints the medians over
``--repeat`` runs and the ratios mpiboost / LightGBM.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

DATA = """
import numpy as np
rng = np.random.default_rng(0)
X = rng.normal(size=({n}, {d}))
y = (X[:, 0] + 0.5 * X[:, 1] * X[:, 2] + rng.normal(0, 0.5, {n}) > 0).astype(int)
"""
CASES = {
    "import mpiboost": "import mpiboost",
    "import lightgbm": "import lightgbm",
    "import mpiboost.sklearn": "import mpiboost.sklearn",
    "fit mpiboost.train": DATA + """import mpiboost
mpiboost.train({{"algo": "adaboost", "rounds": {rounds}, "weak-learner": "tree", "loss": "logistic",
                 "threads": {threads}}}, X, y)""",
    "fit AdaBoostClassifier": DATA + """from mpiboost.sklearn import AdaBoostClassifier
AdaBoostClassifier(rounds={rounds}, weak_learner="tree", loss="logistic", threads={threads}).fit(X, y)""",
    "fit LGBMClassifier": DATA + """import lightgbm
lightgbm.LGBMClassifier(n_estimators={rounds}, num_threads={threads}, verbose=-1).fit(X, y)""",
}
WARM = {  # the fit alone, imports done and the data made, in one process: the median of 5 fits
    "warm fit mpiboost.train": DATA + """import mpiboost, time, statistics
ts = []
for _ in range(5):
    t0 = time.perf_counter()
    mpiboost.train({{"algo": "adaboost", "rounds": {rounds}, "weak-learner": "tree", "loss": "logistic",
                     "threads": {threads}}}, X, y)
    ts.append(time.perf_counter() - t0)
print(statistics.median(ts))""",
    "warm fit LGBMClassifier": DATA + """import lightgbm, time, statistics
ts = []
for _ in range(5):
    t0 = time.perf_counter()
    lightgbm.LGBMClassifier(n_estimators={rounds}, num_threads={threads}, verbose=-1).fit(X, y)
    ts.append(time.perf_counter() - t0)
print(statistics.median(ts))""",
}
TIMER = """
import time, os
t0 = time.perf_counter()
{body}
print(time.perf_counter() - t0)
"""


def measure(body: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", TIMER.format(body=body)], capture_output=True, text=True,
                             check=True, env={"OMP_NUM_THREADS": "1", **__import__("os").environ})
        times.append(float(out.stdout.strip().splitlines()[-1]))
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--d", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json")
    args = ap.parse_args()
    res = {}
    for name, body in CASES.items():
        res[name] = measure(body.format(n=args.n, d=args.d, rounds=args.rounds, threads=args.threads), args.repeat)
        print(f"{name:26s} {res[name] * 1000:8.1f} ms (median of {args.repeat})", flush=True)
    for name, body in WARM.items():
        out = subprocess.run([sys.executable, "-c", body.format(n=args.n, d=args.d, rounds=args.rounds,
                                                                threads=args.threads)],
                             capture_output=True, text=True, check=True)
        res[name] = float(out.stdout.strip().splitlines()[-1])
        print(f"{name:26s} {res[name] * 1000:8.1f} ms (median of 5 in one process)", flush=True)
    print(f"fit alone: mpiboost / LightGBM = {res['warm fit mpiboost.train'] / res['warm fit LGBMClassifier']:.2f}x")
    print(f"import: mpiboost / lightgbm = {res['import mpiboost'] / res['import lightgbm']:.2f}x; "
          f"import + fit: mpiboost.train / LightGBM = {res['fit mpiboost.train'] / res['fit LGBMClassifier']:.2f}x, "
          f"estimator / LightGBM = {res['fit AdaBoostClassifier'] / res['fit LGBMClassifier']:.2f}x")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"args": vars(args), "seconds": res}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
