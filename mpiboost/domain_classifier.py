"""The domain classifier Q(k|x) of MultiBoost: multinomial logistic regression.

Fitted on standardized raw features with an L2 penalty (bias not penalized),
by L-BFGS on the center. Every rank computes its rows' loss and gradient as
exact int64 fixed-point sums (``_ext._logistic.loss_grad``), so the
optimizer sees the same numbers, and takes the same steps, for any split of
the rows: the fitted Q is the same on any number of ranks.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ._ext import _logistic

_EVALUATE, _STOP = 1, 0


@dataclass
class DomainClassifier:
    """Q(k|x) = softmax(((x - mean) / scale) . W[:d] + W[d]), NaN features count as 0."""

    mean: np.ndarray  # (d,)
    scale: np.ndarray  # (d,)
    W: np.ndarray  # (d + 1, p)
    l2: float = 1.0
    train_accuracy: Optional[float] = None
    iterations: int = 0

    @property
    def n_domains(self) -> int:
        return int(self.W.shape[1])

    def standardized(self, X: np.ndarray) -> np.ndarray:
        out = np.empty(X.shape, dtype=np.float64)
        _logistic.standardize(np.ascontiguousarray(X, dtype=np.float64), self.mean, 1.0 / self.scale, out)
        return out

    def proba(self, X: np.ndarray) -> np.ndarray:
        """(n, p) domain probabilities for raw rows ``X`` (the same bits on every rank)."""
        Z = self.standardized(X)
        out = np.empty((X.shape[0], self.n_domains))
        _logistic.proba(Z, np.ascontiguousarray(self.W), out)
        return out

    def to_dict(self) -> dict:
        return {
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
            "W": self.W.tolist(),
            "l2": self.l2,
            "train_accuracy": self.train_accuracy,
            "iterations": self.iterations,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "DomainClassifier":
        return cls(
            mean=np.asarray(d["mean"], dtype=np.float64),
            scale=np.asarray(d["scale"], dtype=np.float64),
            W=np.asarray(d["W"], dtype=np.float64).reshape(len(d["mean"]) + 1, -1),
            l2=float(d.get("l2", 1.0)),
            train_accuracy=d.get("train_accuracy"),
            iterations=int(d.get("iterations", 0)),
        )


def _moments(comm, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact mean and standard deviation of every column over all ranks (NaN skipped)."""
    d = X.shape[1]
    present = ~np.isnan(X)
    Xz = np.where(present, X, 0.0)
    counts = comm.allreduce_int(present.sum(axis=0).astype(np.int64))
    sums = comm.sum_exact_vector(Xz) if X.shape[0] else comm.sum_exact_vector(np.zeros((0, d)))
    mean = np.where(counts > 0, sums / np.maximum(counts, 1), 0.0)
    dev = np.where(present, X - mean, 0.0)
    ss = comm.sum_exact_vector(dev * dev) if X.shape[0] else comm.sum_exact_vector(np.zeros((0, d)))
    std = np.sqrt(np.where(counts > 1, ss / np.maximum(counts, 1), 0.0))
    return mean, np.where(std > 0, std, 1.0)


def fit(
    comm,
    X: np.ndarray,
    domain: np.ndarray,
    n_domains: int,
    *,
    l2: float = 1.0,
    max_iter: int = 200,
    tol: float = 1e-8,
) -> DomainClassifier:
    """Collective: fit Q(k|x) on this rank's raw rows ``X`` with domain labels ``domain``.

    Minimizes ``(1/n) sum_i -log Q(domain_i|x_i) + (l2/2n) ||W[:d]||^2`` (the
    penalty scaled like the loss, as in scikit-learn's ``C = 1/l2``).
    """
    from scipy.optimize import minimize

    X = np.ascontiguousarray(X, dtype=np.float64)
    d, p = X.shape[1], int(n_domains)
    mean, scale = _moments(comm, X)
    Z = np.empty_like(X)
    _logistic.standardize(X, mean, 1.0 / scale, Z)
    label = np.ascontiguousarray(domain, dtype=np.int32)
    n = int(comm.allreduce_int(np.array([X.shape[0]]))[0])
    bound = comm.allreduce_max(float(np.nanmax(np.abs(Z))) if Z.size and not np.isnan(Z).all() else 0.0)
    # Every per-row term is at most max(bound, 691) in size (691 = -log 1e-300).
    shift = int(61 - math.ceil(math.log2(max(n, 1) * max(bound, 691.0, 1.0))))
    unit = 2.0 ** -shift

    def local(theta: np.ndarray) -> np.ndarray:
        W = np.ascontiguousarray(theta.reshape(d + 1, p))
        loss, grad = _logistic.loss_grad(Z, label, W, shift)
        return np.concatenate([[loss], grad.ravel()]).astype(np.int64)

    def global_sums(theta: np.ndarray) -> np.ndarray:
        sums = local(theta)
        return comm.reduce_int(sums) if comm.size > 1 else sums

    theta0 = np.zeros((d + 1) * p)
    penalty_mask = np.ones((d + 1, p))
    penalty_mask[d] = 0.0
    penalty_mask = penalty_mask.ravel()
    iterations = 0
    if comm.is_center:

        def fg(theta: np.ndarray) -> tuple[float, np.ndarray]:
            if comm.size > 1:
                comm.bcast((_EVALUATE, theta))
            s = global_sums(theta)
            w = theta * penalty_mask
            f = float(s[0]) * unit / n + 0.5 * l2 * float(w @ w) / n
            g = s[1:].astype(np.float64) * unit / n + l2 * w / n
            return f, g

        res = minimize(fg, theta0, jac=True, method="L-BFGS-B", options={"maxiter": max_iter, "gtol": tol, "ftol": 1e-15})
        theta, iterations = res.x, int(res.nit)
        if comm.size > 1:
            comm.bcast((_STOP, theta))
    else:
        while True:
            cmd, theta = comm.bcast(None)
            if cmd == _STOP:
                break
            global_sums(theta)
    iterations = comm.bcast(iterations)
    clf = DomainClassifier(mean=mean, scale=scale, W=theta.reshape(d + 1, p).copy(), l2=l2, iterations=iterations)
    if X.shape[0]:
        Q = np.empty((X.shape[0], p))
        _logistic.proba(Z, np.ascontiguousarray(clf.W), Q)
        right = int((Q.argmax(axis=1) == label).sum())
    else:
        right = 0
    clf.train_accuracy = int(comm.allreduce_int(np.array([right]))[0]) / n
    return clf
