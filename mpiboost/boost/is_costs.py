"""The exact greedy step of Itakura–Saito multi-task boosting (Takenouchi et al.), as per-row costs.

J binary tasks, one score F_j per task (a stump ensemble). Task k's
empirical risk on its own rows is

    L_k(F_k) = (1/n_k) sum_{i in k} [ exp(-F_k(x_i) y_i)
               + sum_{j != k} lambda_kj (exp(F_k(x_i) - F_j(x_i)) + exp(F_j(x_i) - F_k(x_i))) ].

For a weak hypothesis f in {-1, +1} the risk after ``F_k += alpha f`` is
``Z [(1 - eps(f)) e^-alpha + eps(f) e^alpha] / n_k`` with, per row i of task
k and D_ij = F_k(x_i) - F_j(x_i),

    a_i = u_i [y_i = -1] + sum_j lambda_kj e^{+D_ij}     (the cost of f(x_i) = +1)
    b_i = u_i [y_i = +1] + sum_j lambda_kj e^{-D_ij}     (the cost of f(x_i) = -1)
    u_i = exp(-F_k(x_i) y_i),  Z = sum_i (a_i + b_i),
    eps(f) = sum_i ([f(x_i) = +1] a_i + [f(x_i) = -1] b_i) / Z,

so the best f minimises eps and alpha = 1/2 ln((1 - eps) / eps) is the exact
joint minimiser. Any weighted stump learner finds that f: give row i the
pseudo-label sign(b_i - a_i) and the weight |a_i - b_i| (the cost is then
sum_i min(a_i, b_i) plus the weighted 0/1 error, and the constant does not
depend on f). With every lambda_kj = 0 the costs are AdaBoost's weights.

The Eq. 26 variant replaces the J - 1 teachers by one averaged teacher
``F_bar_k = sum_j lambda_kj F_j / lambda_k`` of weight ``lambda_k = sum_j lambda_kj``.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

ERROR_CLIP = 1e-12  # lambda = 0 is AdaBoost: an error of 0 or 1 is clipped as AdaBoost clips it


def costs(F: np.ndarray, y: np.ndarray, k: int, lam: np.ndarray, teacher: str = "all") -> tuple[np.ndarray, np.ndarray]:
    """Per-row costs (a, b) of task ``k``'s step for rows whose scores are ``F`` (n, J) and labels ``y`` (+-1).

    ``lam`` holds lambda_kj for j = 0..J-1 (lam[k] is ignored); ``teacher``:
    ``all`` (every other task, the paper's Case 1) or ``average`` (Eq. 26).
    """
    F = np.asarray(F, dtype=np.float64)
    y = np.asarray(y)
    Fk = F[:, k]
    u = np.exp(-Fk * y)
    a = np.where(y < 0, u, 0.0)
    b = np.where(y > 0, u, 0.0)
    lam = np.asarray(lam, dtype=np.float64).copy()
    lam[k] = 0.0
    if teacher == "average":
        total = float(lam.sum())
        if total > 0:
            Fbar = np.zeros(len(Fk))
            for j in np.flatnonzero(lam > 0):
                Fbar += lam[j] * F[:, j]
            Fbar /= total
            e = np.exp(Fk - Fbar)
            a += total * e
            b += total / e
        return a, b
    if teacher != "all":
        raise ValueError(f"teacher must be 'all' or 'average', not {teacher!r}")
    for j in np.flatnonzero(lam > 0):
        e = np.exp(Fk - F[:, j])  # e^{-D} as 1 / e^{D}: one exponential per teacher and row
        a += lam[j] * e
        b += lam[j] / e
    return a, b


def pseudo_labels(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(labels, weights): sign(b - a) as int8 (+1 on a tie, where the weight is 0) and |a - b|."""
    d = np.asarray(b, dtype=np.float64) - np.asarray(a, dtype=np.float64)
    return np.where(d >= 0, 1, -1).astype(np.int8), np.abs(d)


def step_error(a: np.ndarray, b: np.ndarray, h: np.ndarray) -> float:
    """eps(f) for the predictions ``h`` (+-1) of f on the rows (exact float sums)."""
    h = np.asarray(h)
    cost = math.fsum(np.where(h > 0, a, b).tolist())
    Z = math.fsum(np.asarray(a, dtype=np.float64).tolist()) + math.fsum(np.asarray(b, dtype=np.float64).tolist())
    return cost / Z if Z > 0 else 0.5


def step_alpha(eps: float, clip: bool = True) -> Optional[float]:
    """alpha = 1/2 ln((1 - eps) / eps); None when eps >= 1/2 (no edge: stop). ``clip``: eps into [1e-12, 1/2)."""
    if eps >= 0.5:
        return None
    if clip:
        eps = min(max(eps, ERROR_CLIP), 0.5 - ERROR_CLIP)
    return 0.5 * math.log((1.0 - eps) / eps)


def risk(F: np.ndarray, y: np.ndarray, k: int, lam: np.ndarray, teacher: str = "all") -> float:
    """n_k L_k(F_k): the (unnormalised) task-k risk of Eq. 24 on these rows, which is sum_i (a_i + b_i)."""
    a, b = costs(F, y, k, lam, teacher)
    # sum_i [u_i + sum_j lambda (e^D + e^-D)] = sum_i (a_i + b_i): every cost counted once
    return math.fsum((a + b).tolist())
