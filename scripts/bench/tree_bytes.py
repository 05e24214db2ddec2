#!/usr/bin/env python
"""Bytes and collective calls per tree: a formula against what ``--metrics`` measures at ``-n 2..4``, and
what the formula predicts at 64 and 1,024 ranks.

A tree of ``L`` leaves makes ``s <= L - 1`` splits. With the histograms reduced to the center it makes
``1 + s`` histogram reductions (the root, then each split's smaller child) and ``s`` broadcasts of the
split (one more when it stops early); with reduce-scatter, ``1 + s`` reduce-scatters, ``1 + 2s``
all-gathers of each rank's best candidate and ``s`` sums of the children's row counts. A histogram
has ``S = sum_j (bins_j + 1)`` slots (each feature's value bins and its missing slot), ``w`` bytes a
slot, where ``w`` depends on the node's global row count ``n`` (K classes; B = --grad-bins):

    full precision:                          w = 8 (2K + 1)   (int64 gradient, hessian, count)
    B, n (B + 1) < 2**16:                    w = 4 (K + 1)    (int32 g * 2**16 + h, count)
    B, n within the packed words' fields:    w = 8 K          (int64 G * 2**(wh + wc) + H * 2**wc + N)
    B, N (B + 1) < 2**31 (N: all rows):      w = 4 (2K + 1)   (int32 channels)

Rank 0 receives ``(P - 1) S w`` per reduction to the center; under reduce-scatter it sends
``(S - S_0) w`` and receives ``(P - 1) S_0 w`` (``S_0``: its block's slots). The node sizes come from
the trees themselves (the same trees on every rank count): the script trains once in this process,
reads each split's smaller child, evaluates the formula, and compares it with rank 0's
``tree_histograms`` bytes and every primitive's calls in ``--metrics`` at each ``--ranks``.

The prediction at P ranks keeps the rows per rank (weak scaling): more rows move some nodes to a
wider slot, and the reduction's time is ``ceil(log2 P) alpha + 2 (P - 1)/P m beta`` for large messages
(Rabenseifner), the broadcast's and all-gather's as in ``cost_model.py``.

    python scripts/bench/tree_bytes.py                       # 200,000 x 28 dense, 31 leaves, -n 2 3 4
    python scripts/bench/tree_bytes.py --grad-bins 0 4 16 --exchange center reduce-scatter
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import find_mpiexec  # noqa: E402


def slot_bytes(n: int, N: int, K: int, B: int) -> int:
    """Bytes a histogram slot travels in, for a node of ``n`` global rows of ``N`` (see the docstring)."""
    from mpiboost._ext import _qhist

    if not B:
        return 8 * (2 * K + 1)
    if n * (B + 1) < 2**16:
        return 4 * (K + 1)
    if n <= _qhist.largest_fitting((B + 1) // 2, B):
        return 8 * K
    if N * (B + 1) < 2**31 - 1:
        return 4 * (2 * K + 1)
    return 8 * (2 * K + 1)


def node_counts(tree) -> np.ndarray:
    """Every node's row count from its leaves' (internal nodes: the sum of their children)."""
    count = np.array(tree.count, dtype=np.int64)
    for node in range(tree.n_nodes - 1, -1, -1):  # children are numbered after their parent
        if tree.feature[node] >= 0:
            count[node] = count[tree.left[node]] + count[tree.right[node]]
    return count


def reductions(tree, N: int) -> list:
    """The global row counts of the nodes whose histograms travel: the root, then each split's smaller child
    (the left one on a tie)."""
    count = node_counts(tree)
    out = [N]
    for node in range(tree.n_nodes):
        if tree.feature[node] >= 0:
            nl, nr = count[tree.left[node]], count[tree.right[node]]
            out.append(int(min(nl, nr)))
    return out


def blocks(n_bins: np.ndarray, P: int) -> np.ndarray:
    """The feature blocks of reduce-scatter, as the grower draws them."""
    from mpiboost.weak.tree import feature_blocks

    return feature_blocks(np.concatenate([[0], np.cumsum(np.asarray(n_bins) + 1)]), P)


def formula(tree, N: int, K: int, B: int, n_bins: np.ndarray, P: int, exchange: str) -> dict:
    """Rank 0's histogram bytes (received, sent) and the calls of one tree."""
    S = int(np.sum(np.asarray(n_bins) + 1))
    sizes = reductions(tree, N)
    s = len(sizes) - 1
    if exchange == "center":
        received = sum((P - 1) * S * slot_bytes(n, N, K, B) for n in sizes)
        return {"received": received, "sent": 0, "calls": {"tree_histograms": 1 + s}}
    b = blocks(n_bins, P)
    off = np.concatenate([[0], np.cumsum(np.asarray(n_bins) + 1)])
    S0 = int(off[b[1]] - off[b[0]])
    w = [slot_bytes(n, N, K, B) for n in sizes]
    return {"received": sum((P - 1) * S0 * x for x in w), "sent": sum((S - S0) * x for x in w),
            "calls": {"tree_histograms": 1 + s, "tree_splits": 1 + 2 * s}}


def predict(tree, N_per_rank: int, K: int, B: int, n_bins: np.ndarray, P: int, alpha: float, beta: float) -> dict:
    """Bytes into the center per tree and the collectives' time per tree at P ranks (rows per rank kept; the
    node sizes scaled from the measured tree)."""
    S = int(np.sum(np.asarray(n_bins) + 1))
    N = N_per_rank * P
    scale = P  # weak scaling: every node holds P times the rows of the one-rank tree's node of N_per_rank rows
    sizes = [n * scale for n in reductions(tree, N_per_rank)]
    L = max(1, math.ceil(math.log2(P)))
    m = [S * slot_bytes(n, N, K, B) for n in sizes]
    reduce_t = sum(L * alpha + 2 * (P - 1) / P * x * beta for x in m)
    bcast_t = (len(sizes) - 1) * L * (alpha + 56 * beta)
    rs_t = sum(L * alpha + (P - 1) / P * x * beta for x in m) + (2 * len(sizes) - 1) * (L * alpha + (P - 1) * 32 * beta)
    # bytes: every rank but the center sends each histogram once (binomial tree); under reduce-scatter
    # each rank sends the other blocks and receives its own from every other rank
    return {"center_bytes": (P - 1) * sum(m), "rank_bytes_rs": sum(m) * (P - 1) // P * 2,
            "center_seconds": reduce_t + bcast_t, "rs_seconds": rs_t, "slot_bytes_root": slot_bytes(sizes[0], N, K, B)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--features", type=int, default=28)
    ap.add_argument("--leaves", type=int, default=31)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--grad-bins", type=int, nargs="+", default=[0, 4])
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 3, 4])
    ap.add_argument("--exchange", nargs="+", default=["center", "reduce-scatter"])
    ap.add_argument("--predict", type=int, nargs="+", default=[64, 1024])
    ap.add_argument("--alpha", type=float, default=3.2e-6, help="latency (s); cost_model.py probe measures it")
    ap.add_argument("--beta", type=float, default=1 / 7.7e9, help="seconds per byte")
    ap.add_argument("--mpiexec", default=None)
    args = ap.parse_args()
    import mpiboost
    from mpiboost.data import format as fmt

    rng = np.random.default_rng(0)
    X = rng.normal(size=(args.rows, args.features)).astype(np.float32)
    w = rng.normal(size=args.features)
    y = np.where(X @ w + 2.0 * X[:, 0] * X[:, 1] + rng.normal(size=args.rows) > 0, 1, -1)
    mpiexec = find_mpiexec(args.mpiexec)
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "train.h5")
        fmt.write_dataset(data, X, y)
        print(f"{args.rows:,} x {args.features} dense rows, {args.rounds} trees of {args.leaves} leaves; rank 0's "
              f"histogram bytes per tree: formula / measured (--metrics)")
        print(f"{'bins':>5} {'exchange':<15}" + "".join(f"{'-n ' + str(p):>28}" for p in args.ranks)
              + "   calls per round (-n " + str(args.ranks[-1]) + ")")
        for B in args.grad_bins:
            params = {"algo": "adaboost", "loss": "logistic", "weak-learner": "tree", "rounds": args.rounds,
                      "max-leaves": args.leaves, "grad-bins": B, "threads": 1}
            model = mpiboost.train(params, X, y)
            n_bins = np.asarray(model.bins.n_bins)
            for exchange in args.exchange:
                cells, calls = [], {}
                for P in args.ranks:
                    met = os.path.join(tmp, f"m{B}{exchange}{P}.jsonl")
                    cmd = [mpiexec, "-n", str(P), sys.executable, "-m", "mpiboost", "train", "--algo", "adaboost",
                           "--loss", "logistic", "--weak-learner", "tree", "--rounds", str(args.rounds),
                           "--max-leaves", str(args.leaves), "--grad-bins", str(B), "--tree-exchange", exchange,
                           "--data", data, "--model", os.path.join(tmp, "m.h5"), "--metrics", met, "--quiet",
                           "--threads", "1"]
                    subprocess.run(cmd, check=True, capture_output=True)
                    rounds = [json.loads(line) for line in open(met) if '"round"' in line]
                    want = sum(formula(t, args.rows, 1, B, n_bins, P, exchange)["received"]
                               + formula(t, args.rows, 1, B, n_bins, P, exchange)["sent"] for t in model.trees)
                    got = sum(r["bytes"]["tree_histograms"]["received"] + r["bytes"]["tree_histograms"]["sent"]
                              for r in rounds)
                    mark = "=" if want == got else "!="
                    cells.append(f"{want / len(rounds):>12,.0f} {mark} {got / len(rounds):>12,.0f}")
                    calls = {k: v["calls"] / 1 for k, v in rounds[-1]["bytes"].items()}
                print(f"{B:>5} {exchange:<15}" + "".join(f"{c:>28}" for c in cells) + "   "
                      + ", ".join(f"{k} {int(v)}" for k, v in sorted(calls.items())))
            print(f"      predicted per tree, {args.rows:,} rows per rank (alpha {args.alpha:.1e} s, "
                  f"{1 / args.beta / 1e9:.1f} GB/s):")
            for P in args.predict:
                p = [predict(t, args.rows, 1, B, n_bins, P, args.alpha, args.beta) for t in model.trees]
                mean = {k: float(np.mean([x[k] for x in p])) for k in p[0]}
                print(f"      P = {P:>5}: reduce to the center: all ranks send {mean['center_bytes'] / 1e6:,.1f} MB "
                      f"({mean['center_seconds'] * 1e3:.2f} ms); reduce-scatter: each rank sends and receives "
                      f"{mean['rank_bytes_rs'] / 1e6:,.2f} MB ({mean['rs_seconds'] * 1e3:.2f} ms); root slot "
                      f"{int(mean['slot_bytes_root'])} B")


if __name__ == "__main__":
    main()
