#!/usr/bin/env python
"""Online boosting on pixel streams: the weak learners' leaf chosen by the data's kind, against the online peers.

Streams (prequential: every example predicted, then learnt; ``acc_test`` is the
accuracy on the last 20% of the stream, ``acc_all`` on all of it), each over
``--shuffles`` orders (``numpy.random.default_rng(1000 + s).permutation``):

* ``digits``: scikit-learn's 8 x 8 handwritten digits (1,797 images, 10 classes,
  pixel intensities 0..16), built into scikit-learn;
* ``satimage``: the UCI Landsat set (6,435 rows, 6 classes, 36 multispectral pixel
  values 27..157), read from ``$MPIBOOST_DATASETS/satimage``.

``acc_test`` of a booster is that of its prediction drawn from D_t (the papers' figure), ``argmax_test``
that of D_t's most likely class; a peer predicts one class, so both are its accuracy.

Methods: mpiboost's online boosters with ``--weak-learner auto`` (multinomial
naive-Bayes leaves on digits, whose pixels are sparse counts; naive-Bayes-adaptive ones on satimage,
whose integer levels never reach 0) and with ``nba``
(naive-Bayes-adaptive leaves, Gaussian numerics), at their defaults; the peers'
online learners with ``partial_fit`` / ``learn_one``: scikit-learn's
MultinomialNB and GaussianNB, River's MultinomialNB, GaussianNB, Hoeffding tree
(and with ``--slow-peers`` ADWIN bagging of Hoeffding trees; River's best is the best of them).

    python scripts/experiments/online_pixels.py                      # both streams, 5 shuffles, a few minutes
    python scripts/experiments/online_pixels.py --streams digits --shuffles 2
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

BOOSTERS = ("online-agnostic", "online-ocor")
PEERS = ("sklearn-mnb", "sklearn-gnb", "river-mnb", "river-gnb", "river-ht")
SLOW_PEERS = ("river-adwin-bagging",)  # ~0.1 s an example: --slow-peers


def load(name: str, root: Path):
    if name == "digits":
        from sklearn.datasets import load_digits

        d = load_digits()
        return d.data.astype(np.float64), d.target.astype(np.int64)
    from online_data import load as load_uci

    X, y, _, _, _ = load_uci(name, root)
    return np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.int64)


def scores(pred: np.ndarray, y: np.ndarray) -> dict:
    start = len(y) - int(round(0.2 * len(y)))
    return {"acc_test": float(np.mean(pred[start:] == y[start:])), "acc_all": float(np.mean(pred == y))}


def run_peer(name: str, X: np.ndarray, y: np.ndarray, k: int) -> dict:
    pred = np.empty(len(y), dtype=np.int64)
    if name.startswith("sklearn"):
        from sklearn.naive_bayes import GaussianNB, MultinomialNB

        m = MultinomialNB() if name == "sklearn-mnb" else GaussianNB()
        classes = np.arange(k)
        for t in range(len(y)):
            pred[t] = m.predict(X[t:t + 1])[0] if t else 0
            m.partial_fit(X[t:t + 1], y[t:t + 1], classes=classes)
        return scores(pred, y)
    from river import ensemble, naive_bayes, tree

    make = {"river-mnb": naive_bayes.MultinomialNB, "river-gnb": naive_bayes.GaussianNB,
            "river-ht": tree.HoeffdingTreeClassifier,
            "river-adwin-bagging": lambda: ensemble.ADWINBaggingClassifier(tree.HoeffdingTreeClassifier(), seed=0)}
    m = make[name]()
    for t in range(len(y)):
        x = dict(enumerate(X[t].tolist()))
        p = m.predict_one(x)
        pred[t] = -1 if p is None else int(p)
        m.learn_one(x, int(y[t]))
    return scores(pred, y)


def run_booster(algorithm: str, kind: str, X: np.ndarray, y: np.ndarray, k: int, seed: int) -> dict:
    from mpiboost.online.driver import prequential

    res = prequential(X, y, [0] * X.shape[1], k, algorithm=algorithm, seed=seed, learner={"kind": kind},
                       threads=1)
    return {"acc_test": float(res["acc_test"]), "acc_all": float(res["acc_all"]),
            "argmax_test": float(res["argmax_test"])}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--streams", nargs="+", default=["digits", "satimage"], choices=["digits", "satimage"])
    p.add_argument("--data-dir", type=Path, default=C.DATASETS)
    p.add_argument("--shuffles", type=int, default=5)
    p.add_argument("--no-river", action="store_true")
    p.add_argument("--slow-peers", action="store_true", help="also River's ADWIN bagging of 10 Hoeffding trees")
    args = p.parse_args(argv)
    methods = [(f"{b} ({kind})", ("booster", b, kind)) for b in BOOSTERS for kind in ("auto", "nba", "mnb")]
    peers = PEERS + (SLOW_PEERS if args.slow_peers else ())
    methods += [(peer, ("peer", peer)) for peer in peers if not (args.no_river and peer.startswith("river"))]
    out = []
    for name in args.streams:
        X0, y0 = load(name, args.data_dir)
        k = int(y0.max()) + 1
        res = {m: [] for m, _ in methods}
        argmax = {m: [] for m, _ in methods}
        secs = {m: 0.0 for m, _ in methods}
        for s in range(args.shuffles):
            perm = np.random.default_rng(1000 + s).permutation(len(y0))
            X, y = np.ascontiguousarray(X0[perm]), np.ascontiguousarray(y0[perm])
            for m, spec in methods:
                t0 = time.perf_counter()
                r = run_booster(spec[1], spec[2], X, y, k, s) if spec[0] == "booster" else run_peer(spec[1], X, y, k)
                secs[m] += time.perf_counter() - t0
                res[m].append(r["acc_test"])
                argmax[m].append(r.get("argmax_test", r["acc_test"]))
            C.log(f"{name} shuffle {s}: " + ", ".join(f"{m} {res[m][-1]:.3f}" for m, _ in methods))
        ref = np.array(res[f"{BOOSTERS[0]} (auto)"])
        rows = []
        for m, _ in methods:
            a = np.array(res[m])
            diff = ref - a
            rows.append([m, f"{a.mean():.3f} ± {a.std(ddof=1) if a.size > 1 else 0:.3f}", f"{np.mean(argmax[m]):.3f}",
                         f"{diff.mean():+.3f}" if m != f"{BOOSTERS[0]} (auto)" else "",
                         f"{(diff > 0).sum()}/{(diff == 0).sum()}/{(diff < 0).sum()}" if m != f"{BOOSTERS[0]} (auto)" else "",
                         f"{secs[m] / args.shuffles / len(y0) * 1e6:.0f}"])
        out.append(f"**{name}** ({len(y0):,} examples, {X0.shape[1]} pixels, {k} classes; acc_test over "
                   f"{args.shuffles} shuffles; Δ and W/T/L: Algorithm 1 (auto) minus the method)\n")
        out.append(C.markdown_table(["method", "acc_test", "argmax_test", "Δ", "W/T/L", "µs/example"], rows))
    C.publish("\n\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
