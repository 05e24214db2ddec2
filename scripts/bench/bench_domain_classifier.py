#!/usr/bin/env python
"""Time MultiBoost's domain classifier fit (Q(k|x), ``mpiboost.domain_classifier``).

Run under ``mpiexec -n K``: the rows are cut into K contiguous parts, every rank
fits on its part, and the center prints the wall time of the first fit (which
includes importing scipy on the center, ~0.5 s), the median of --repeat more,
the loss/gradient evaluations and L-BFGS iterations, the time per evaluation and
a digest of the fitted weights (the same on any number of ranks); with
``--sklearn``, also scikit-learn's LogisticRegression on all rows in the center
process (lbfgs, the same penalty and tolerance, the threads its BLAS takes).

Data: ``--data FILE.h5 ...`` (mpiboost data files, their ``X`` and ``domain``
read as stored, float32 from ``mpiboost convert``; rows concatenated), the
first ``--n`` rows or, with ``--sample-seed``, ``--n`` random ones; or, without
``--data``, a synthetic float64 set: ``--kind adult`` (89 features: 6
continuous, the rest one-hot groups, 3 domains) or ``--kind counts``
(bag-of-words counts, mostly zeros, 3 domains). The synthetic sets are far
easier than the real ones (fewer iterations).

With the files of docs/data.md (UCI Adult with three education domains; Amazon
books, dvd and electronics with one 5,000-token vocabulary, ``sentiment.h5``):

    mpiexec -n 2 python scripts/bench/bench_domain_classifier.py --data adult-train.h5 adult-test.h5 --n 43959
    mpiexec -n 2 python scripts/bench/bench_domain_classifier.py --data sentiment.h5 --n 4800 --sample-seed 0
    mpiexec -n 2 python scripts/bench/bench_domain_classifier.py --kind counts --n 4800 --d 5000
"""
from __future__ import annotations

import argparse
import hashlib
import time

import numpy as np

from mpiboost import domain_classifier as dc
from mpiboost.comm import world


def synthetic(kind: str, n: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    dom = rng.integers(0, 3, n).astype(np.int32)
    if kind == "adult":
        cont = rng.standard_normal((n, 6)) * [13, 1e5, 2.5, 7e3, 400, 12] + [38, 2e5, 10, 1e3, 80, 40]
        cont[:, 2] += 2.0 * dom
        groups = [9, 7, 15, 6, 5, 2, 41]
        parts = [cont]
        for g in groups:
            pick = (rng.integers(0, g, n) + dom * (g > 5)) % g
            parts.append(np.eye(g)[pick])
        X = np.hstack(parts)[:, :d]
        X[rng.random(X.shape) < 0.002] = np.nan
    else:
        rate = rng.gamma(0.3, 0.06, d)
        shift = rng.gamma(0.3, 0.06, (3, d))
        X = rng.poisson(rate + shift[dom]).astype(np.float64)
    return X, dom


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", help="mpiboost HDF5 data files (X, domain), rows concatenated")
    ap.add_argument("--sample-seed", type=int, help="a random --n rows (in file order) instead of the first --n")
    ap.add_argument("--kind", choices=["adult", "counts"], default="adult")
    ap.add_argument("--n", type=int, default=0, help="rows (0: all of --data; synthetic default 43959)")
    ap.add_argument("--d", type=int, default=89, help="features of the synthetic set")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--sklearn", action="store_true", help="also time scikit-learn on the center (all rows)")
    args = ap.parse_args()

    comm = world()
    if args.data:
        import h5py

        Xs, doms = [], []
        for path in args.data:
            with h5py.File(path, "r") as f:
                Xs.append(f["X"][:])
                doms.append(f["domain"][:].astype(np.int32))
        X, dom = np.concatenate(Xs), np.concatenate(doms)
        m = args.n or X.shape[0]
        if args.sample_seed is not None:
            keep = np.sort(np.random.default_rng(args.sample_seed).permutation(X.shape[0])[:m])
        else:
            keep = np.arange(min(m, X.shape[0]))
        X, dom = X[keep], dom[keep]
    else:
        X, dom = synthetic(args.kind, args.n or 43959, args.d)
    n = X.shape[0]
    lo, hi = comm.rank * n // comm.size, (comm.rank + 1) * n // comm.size
    Xl, dl = np.ascontiguousarray(X[lo:hi]), dom[lo:hi]
    p = int(dom.max()) + 1

    calls = {"n": 0}
    if hasattr(dc._logistic, "Rows"):

        class Counted(dc._logistic.Rows):
            def loss_grad(self, W, shift):
                calls["n"] += 1
                return super().loss_grad(W, shift)

        dc._logistic.Rows = Counted
    else:  # before the Rows layout: one kernel call per evaluation
        inner = dc._logistic.loss_grad

        def counted(*a, **k):
            calls["n"] += 1
            return inner(*a, **k)

        dc._logistic.loss_grad = counted
    times, clf = [], None
    for _ in range(args.repeat + 1):
        calls["n"] = 0
        comm.barrier()
        t0 = time.perf_counter()
        clf = dc.fit(comm, Xl, dl, p, l2=args.l2)
        times.append(time.perf_counter() - t0)
    if comm.is_center:
        med = float(np.median(times[1:]))
        digest = hashlib.sha256(clf.W.tobytes()).hexdigest()[:16]
        zeros = float(np.mean(X == 0))
        print(
            f"n={n} d={X.shape[1]} p={p} ranks={comm.size} zeros={zeros:.3f}: first fit {times[0]:.3f} s, "
            f"then median {med:.3f} s (runs {', '.join(f'{t:.3f}' for t in times[1:])}); {calls['n']} "
            f"evaluations, {clf.iterations} iterations, {1e3 * med / max(calls['n'], 1):.2f} ms/evaluation, "
            f"train accuracy {clf.train_accuracy:.4f}, W {digest}"
        )
        if args.sklearn:
            scikit_learn_reference(X, dom, clf, args, med)


def scikit_learn_reference(X, dom, clf, args, ours: float) -> None:
    """scikit-learn's LogisticRegression (lbfgs, same objective and tolerance) in this process."""
    try:
        from sklearn.linear_model import LogisticRegression
    except ImportError:
        print("scikit-learn: not installed, skipped")
        return
    Z = clf.standardized(X)
    Z[np.isnan(Z)] = 0.0
    times, model = [], None
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        model = LogisticRegression(C=1.0 / args.l2, tol=1e-5, max_iter=200).fit(Z, dom)
        times.append(time.perf_counter() - t0)
    med = float(np.median(times))
    gap = float(np.abs(model.predict_proba(Z) - clf.proba(X)).max())
    print(
        f"scikit-learn LogisticRegression(lbfgs, tol 1e-5), 1 process on all rows: median {med:.3f} s, "
        f"{int(model.n_iter_[0])} iterations; ours / scikit-learn = {ours / med:.2f}; max |Q - Q_sklearn| {gap:.1e}"
    )


if __name__ == "__main__":
    main()
