#!/usr/bin/env python
"""Where SmoothBoost's game ends on Long-Servedio data with label noise (a side check for Table 1).

SmoothBoost plays stumps h against epsilon-smooth distributions D (max D(i) <=
1/(epsilon n)). The value of that game for a normalized vote f = sum_k c_k h_k
(c >= 0, sum c = 1) is min over smooth D of sum_i D(i) y_i f(x_i): the mean of
the epsilon n smallest margins (CVaR). This script solves
max_c CVaR_epsilon(margins) as a linear program over the 44 stumps of the
data (+-x_j and the two constants), on a noisy training sample, and reports
the clean test error of sign(f) for the optimal c. It needs scipy only (no MPI).

    python scripts/experiments/ls_minimax.py              # 20,000 rows, about a minute
    python scripts/experiments/ls_minimax.py --quick
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=20_000, help="noisy training rows in the LP")
    p.add_argument("--n-test", type=int, default=100_000)
    p.add_argument("--noise", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 0.2, 0.3, 0.5, 0.6, 0.7, 0.8])
    p.add_argument("--quick", action="store_true", help="2,000 rows, three epsilons")
    args = p.parse_args(argv)
    if args.quick:
        args.n, args.n_test, args.epsilons = 2_000, 10_000, [0.1, 0.5, 0.8]
    import scipy.sparse as sp
    from scipy.optimize import linprog

    from mpiboost.data.synth.longservedio import generate

    tr = generate(args.n, noise=args.noise, seed=args.seed)
    te = generate(args.n_test, noise=0.0, seed=args.seed + 1)
    X, y = tr.X.astype(float), tr.y.astype(float)
    d = X.shape[1]
    H = np.hstack([X, -X, np.ones((args.n, 1)), -np.ones((args.n, 1))])  # h_k(x_i)
    M = y[:, None] * H  # margins of the single stumps
    n, K = M.shape
    rows = []
    for eps in args.epsilons:
        # Variables (c_1..c_K, tau, s_1..s_n): maximize tau - sum_i s_i / (eps n)
        # subject to s_i >= tau - (M c)_i, s >= 0, c >= 0, sum c = 1.
        cost = np.concatenate([np.zeros(K), [-1.0], np.full(n, 1.0 / (eps * n))])
        A = sp.hstack([sp.csr_matrix(-M), sp.csr_matrix(np.ones((n, 1))), -sp.eye(n)]).tocsr()
        Aeq = sp.csr_matrix(np.concatenate([np.ones(K), [0.0], np.zeros(n)])[None, :])
        bounds = [(0, None)] * K + [(None, None)] + [(0, None)] * n
        r = linprog(cost, A_ub=A, b_ub=np.zeros(n), A_eq=Aeq, b_eq=[1.0], bounds=bounds, method="highs")
        c = r.x[:K]
        w, b = c[:d] - c[d:2 * d], c[2 * d] - c[2 * d + 1]
        f = te.X.astype(float) @ w + b
        err = float(np.mean(np.where(f >= 0, 1, -1) != te.y))
        used = int((np.abs(w) > 1e-9).sum())
        empty = np.abs(w).sum() < 1e-9 and abs(b) < 1e-9
        kind = "empty vote (f = 0, e.g. x_j and -x_j)" if empty else f"{used} feature(s)"
        value = -r.fun if abs(r.fun) > 5e-5 else 0.0
        rows.append([f"{eps:g}", f"{value:.4f}", kind, "– (f = 0 decides nothing)" if empty else f"{100 * err:.2f}"])
        C.log(f"eps {eps:g}: value {-r.fun:.4f}, {kind}, clean test error {100 * err:.2f}%")
    print(f"Command: `{C.command_line()}`\n")
    print(f"Minimax (CVaR) optimum over stump mixtures, {args.n:,} rows with {100 * args.noise:g}% noise "
          f"(seed {args.seed}); clean test error of its sign on {args.n_test:,} rows:\n")
    print(C.markdown_table(["ε", "game value", "optimal vote", "clean test error %"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
