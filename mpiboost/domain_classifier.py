"""The domain classifier Q(k|x) of MultiBoost: multinomial logistic regression.

Fitted on standardized raw features with an L2 penalty (bias not penalized),
by L-BFGS on the center. Every rank computes its rows' loss and gradient as
exact int64 fixed-point sums (``_ext._logistic.Rows.loss_grad``), so the
optimizer sees the same numbers, and takes the same steps, for any split of
the rows: the fitted Q is the same on any number of ranks.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, TYPE_CHECKING

import numpy as np

from ._ext import _exact, _logistic

if TYPE_CHECKING:  # annotations only
    from .comm import Comm

_EVALUATE, _STOP = 1, 0
_FTOL = 64 * np.finfo(np.float64).eps


@dataclass
class DomainClassifier:
    """Q(k|x) = softmax(((x - mean) / scale) . W[:d] + W[d]), NaN features count as 0."""

    mean: np.ndarray  # (d,)
    scale: np.ndarray  # (d,)
    W: np.ndarray  # (d + 1, p)
    l2: float = 1.0
    train_accuracy: Optional[float] = None
    iterations: int = 0
    temperature: Optional[float] = None  # W divided by it (calibrate); None: Q as fitted

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
            **({} if self.temperature is None else {"temperature": self.temperature}),
        }

    @classmethod
    def from_dict(cls, d: dict, n_features: Optional[int] = None) -> "DomainClassifier":
        """The classifier of :meth:`to_dict`'s dict, every field checked.

        A model file's header is untrusted and its arrays reach kernels that
        do not check bounds, so every shape, type and value is checked here.

        Parameters
        ----------
        d : dict
            ``mean`` and ``scale`` (``d`` numbers each, ``scale > 0``), ``W``
            (``(d + 1) x p`` numbers, or their ``(d + 1) p`` row-major
            flattening, ``1 <= p <= MAX_DOMAINS``), all finite; optional
            ``l2`` (>= 0), ``train_accuracy`` (None or in [0, 1]) and
            ``iterations`` (int >= 0).
        n_features : int, optional
            The features the classifier must have (the model's).

        Returns
        -------
        DomainClassifier

        Raises
        ------
        ValueError
            Naming the field (``domain_classifier.W`` ...).
        """
        from .data.format import MAX_DOMAINS

        if not isinstance(d, dict):
            raise ValueError(f"domain_classifier must be an object or null, not {type(d).__name__}")
        for key in ("mean", "scale", "W"):
            if key not in d:
                raise ValueError(f"domain_classifier.{key} is missing")
        mean = _finite_array(d["mean"], "mean")
        scale = _finite_array(d["scale"], "scale")
        if mean.ndim != 1 or scale.shape != mean.shape:
            raise ValueError(
                "domain_classifier.mean and .scale must be lists of one length, "
                f"have shapes {mean.shape} and {scale.shape}"
            )
        if n_features is not None and mean.shape[0] != n_features:
            raise ValueError(f"domain_classifier.mean has {mean.shape[0]} features, the model {n_features}")
        if scale.size and scale.min() <= 0:
            raise ValueError("domain_classifier.scale holds a value that is not positive")
        rows = mean.shape[0] + 1
        W = _finite_array(d["W"], "W")
        if W.ndim == 1 and W.size and W.size % rows == 0:
            W = W.reshape(rows, -1)  # the row-major flattening (d + 1) * p
        if W.ndim != 2 or W.shape[0] != rows or not 1 <= W.shape[1] <= MAX_DOMAINS:
            raise ValueError(
                f"domain_classifier.W must be {rows} x p with 1 <= p <= {MAX_DOMAINS} (d + 1 rows), has shape {W.shape}"
            )
        l2 = _number(d.get("l2", 1.0), "l2")
        if l2 < 0:
            raise ValueError(f"domain_classifier.l2 must be >= 0, is {l2}")
        acc = d.get("train_accuracy")
        if acc is not None:
            acc = _number(acc, "train_accuracy")
            if not 0.0 <= acc <= 1.0:
                raise ValueError(f"domain_classifier.train_accuracy must be in [0, 1], is {acc}")
        iterations = d.get("iterations", 0)
        if type(iterations) is not int or iterations < 0:
            raise ValueError(f"domain_classifier.iterations must be an integer >= 0, not {iterations!r}")
        temperature = d.get("temperature")
        if temperature is not None:
            temperature = _number(temperature, "temperature")
            if not temperature > 0:
                raise ValueError(f"domain_classifier.temperature must be > 0, is {temperature}")
        return cls(mean=mean, scale=scale, W=np.ascontiguousarray(W), l2=l2, train_accuracy=acc, iterations=iterations,
                   temperature=temperature)


def _number(value, name: str) -> float:
    """A finite JSON number (not a boolean) as float; ValueError naming ``domain_classifier.name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"domain_classifier.{name} must be a number, not {type(value).__name__}")
    try:
        out = float(value)
    except OverflowError:
        out = math.inf
    if not math.isfinite(out):
        raise ValueError(f"domain_classifier.{name} is not finite")
    return out


def _finite_array(value, name: str) -> np.ndarray:
    """A JSON list (of lists) of finite numbers as float64; ValueError naming ``domain_classifier.name``."""
    if not isinstance(value, list):
        raise ValueError(f"domain_classifier.{name} must be a list of numbers, not {type(value).__name__}")
    try:
        a = np.asarray(value)
    except (ValueError, TypeError) as exc:  # ragged nesting
        raise ValueError(f"domain_classifier.{name} is not a regular array of numbers ({exc})") from None
    # Booleans, strings, nulls and integers beyond int64 give other kinds ('b', 'U', 'O').
    if a.size and a.dtype.kind not in "iuf":
        raise ValueError(f"domain_classifier.{name} must hold numbers only (found {a.dtype})")
    a = a.astype(np.float64)
    if not np.isfinite(a).all():
        raise ValueError(f"domain_classifier.{name} holds a value that is not finite")
    return a


def _moments(comm: Comm, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Collective: every column's mean, standard deviation and number of zeros over all ranks.

    NaN is skipped. The mean and the sum of squared deviations are correctly
    rounded sums, the same bits for any split of the rows; a standard
    deviation of 0 becomes 1.

    Returns
    -------
    mean, scale : ndarray of float64, shape (d,)
    zeros : ndarray of int64, shape (d,)
    """
    d = X.shape[1]
    parts, present, zeros = _exact.column_partials(X)
    counts = comm.allreduce_int(np.concatenate([present, zeros]))
    present, zeros = counts[:d], counts[d:]
    sums = comm.sum_terms(parts)
    mean = np.where(present > 0, sums / np.maximum(present, 1), 0.0)
    parts, _, _ = _exact.column_partials(X, mean)
    if comm.is_center:  # every zero's square (0 - mean)**2, added once for all ranks
        hi, lo = _exact.exact_products(zeros.astype(np.float64), mean * mean)
        parts = [np.concatenate([q, [h, l]]) for q, h, l in zip(parts, hi, lo)]
    ss = comm.sum_terms(parts)
    std = np.sqrt(np.where(present > 1, ss / np.maximum(present, 1), 0.0))
    return mean, np.where(std > 0, std, 1.0), zeros


def fixed_point_shift(n: int, bound: float) -> int:
    """The fixed-point unit ``2**-shift`` of the loss and gradient sums over ``n`` rows.

    Every per-row term is at most ``B = max(bound, LOSS_CAP)`` in size
    (``bound``: the largest feature value a kernel multiplies by a residual
    ``|r| <= 1``; ``LOSS_CAP``: the capped loss). In units of ``2**-shift`` each
    term stays at most ``2**50`` (the branch-free rounding needs less than
    ``2**51``) and a sum of n terms at most ``2**61`` (an int64, with room
    for the half units of rounding).

    Parameters
    ----------
    n : int
        Rows over all ranks.
    bound : float
        Largest ``|value|`` over all ranks (:attr:`_logistic.Rows.bound`).

    Returns
    -------
    int
        The same on every rank when both arguments are global.
    """
    B = max(float(bound), _logistic.LOSS_CAP)
    return int(min(61 - math.ceil(math.log2(max(n, 1) * B)), 50 - math.ceil(math.log2(B))))


def fit(
    comm: Comm,
    X: np.ndarray,
    domain: np.ndarray,
    n_domains: int,
    *,
    l2: float = 1.0,
    max_iter: int = 200,
    tol: float = 1e-5,
) -> DomainClassifier:
    """Collective: fit Q(k|x) on this rank's raw rows ``X`` with domain labels ``domain``.

    Minimizes ``(1/n) sum_i -log Q(domain_i|x_i) + (l2/2n) ||W[:d]||^2`` (the
    penalty scaled like the loss, as in scikit-learn's ``C = 1/l2``) by L-BFGS
    on the center, which stops when no gradient component exceeds ``tol`` in
    size, when the objective no longer moves (``ftol = 64 eps``, as
    scikit-learn), or after ``max_iter`` iterations. ``tol = 1e-5`` is ten
    times tighter than scikit-learn's default: Q weighs every row of every
    boosting round, and the fit is cheap. Near-collinear features (one-hot
    groups) leave directions of W that the loss hardly sees; the fit stops
    before they settle, but Q does not depend on them.

    Parameters
    ----------
    comm : mpiboost.comm.Comm
    X : ndarray, shape (n_local, d)
        Raw features, NaN for missing (counts as the column mean); float32 is
        read as it is, other types are converted to float64.
    domain : ndarray of int, shape (n_local,)
        Domain of every row, ``0 .. n_domains - 1``.
    n_domains : int
    l2 : float
        Penalty on the feature weights (not on the bias).
    max_iter : int
        L-BFGS iterations at most.
    tol : float
        Largest gradient component at which L-BFGS stops.

    Returns
    -------
    DomainClassifier
        The same bits on every rank, for any number of ranks and any split of
        the rows.

    Notes
    -----
    Mostly-zero features are handled sparsely: see :class:`mpiboost._ext._logistic.Rows`.
    Every rank's loss and gradient are int64 sums of per-row terms in units of
    ``2**-shift``, so the center sees the same integers for any split.
    """
    X = np.asarray(X)
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    X = np.ascontiguousarray(X)
    d, p = X.shape[1], int(n_domains)
    n = int(comm.allreduce_int(np.array([X.shape[0]]))[0])
    mean, scale, zeros = _moments(comm, X)
    # Features that are mostly zero are kept sparse (their zeros are one
    # constant z each); with zeros in at least 3/4 of the rows a feature's
    # |center| = |mean| / std is at most 2 / sqrt(3), so the difference of
    # sums that gives its standardized gradient loses next to nothing.
    sparse = 4 * zeros >= 3 * n
    label = np.ascontiguousarray(domain, dtype=np.int32)
    rows = _logistic.Rows(X, mean, 1.0 / scale, sparse, label)
    center = rows.center
    shift = fixed_point_shift(n, comm.allreduce_max(float(rows.bound)))
    unit = 2.0 ** -shift

    def local(theta: np.ndarray) -> np.ndarray:
        loss, grad = rows.loss_grad(np.ascontiguousarray(theta.reshape(d + 1, p)), shift)
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
        from scipy.optimize import minimize  # only the center optimizes (the import takes ~0.5 s)

        def fg(theta: np.ndarray) -> tuple[float, np.ndarray]:
            if comm.size > 1:
                comm.bcast((_EVALUATE, theta))
            s = global_sums(theta)
            w = theta * penalty_mask
            f = float(s[0]) * unit / n + 0.5 * l2 * float(w @ w) / n
            g = _logistic.standardized_gradient(s[1:].reshape(d + 1, p), center).ravel() * unit / n + l2 * w / n
            return f, g

        res = minimize(fg, theta0, jac=True, method="L-BFGS-B", options={"maxiter": max_iter, "gtol": tol, "ftol": _FTOL})
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
    right = rows.count_correct(np.ascontiguousarray(clf.W))
    clf.train_accuracy = int(comm.allreduce_int(np.array([right]))[0]) / n
    return clf


# Temperatures tried by :func:`calibrate`: 2**(k/4), 1/2 .. 256 (1 = Q as fitted).
TEMPERATURES = 2.0 ** (np.arange(-4, 33) / 4.0)
CALIBRATION_FOLDS = 3
_CALIBRATION_BLOCK = 65536  # held-out rows scored at a time


def calibrate(
    comm: Comm,
    X: np.ndarray,
    domain: np.ndarray,
    ids: np.ndarray,
    n_domains: int,
    *,
    l2: float = 1.0,
    extra: Optional[tuple] = None,
    folds: int = CALIBRATION_FOLDS,
) -> tuple[float, np.ndarray]:
    """Collective: the temperature T of Q(k|x) ∝ exp(z_k(x) / T) of least held-out log-loss.

    Rows are cut into ``folds`` folds by global row id (``id % folds``: every
    domain spread evenly, the same folds on any number of ranks). For each
    fold, Q is fitted on the other folds (with the same ``l2``) and the
    held-out rows' log-loss is summed for every temperature of
    :data:`TEMPERATURES` (capped per row like the fit's, in int64 fixed point:
    exact sums). T is the temperature of least total (the one nearest 1 among
    equal totals). A Q that separates its training rows but not new ones is
    overconfident; dividing its logits by T > 1 is the standard correction
    (temperature scaling) and keeps the argmax, so Q's accuracy is unchanged.

    Parameters
    ----------
    comm : mpiboost.comm.Comm
    X, domain : this rank's raw rows and their domains
    ids : ndarray of int, shape (n_local,)
        Global row ids (fold = id % folds).
    n_domains : int
    l2 : float
        Q's penalty (as in :func:`fit`).
    extra : (X, domain), optional
        Rows that only train Q: in every fold's training part, never held out.
    folds : int

    Returns
    -------
    temperature : float
    losses : ndarray, shape (len(TEMPERATURES),)
        Mean held-out log-loss per temperature.
    """
    X = np.asarray(X)
    ids = np.asarray(ids, dtype=np.int64)
    n = int(comm.allreduce_int(np.array([X.shape[0]]))[0])
    shift = fixed_point_shift(n, _logistic.LOSS_CAP)
    unit = 2.0 ** shift
    totals = np.zeros(len(TEMPERATURES), dtype=np.int64)
    n_full = n + (int(comm.allreduce_int(np.array([len(extra[1])]))[0]) if extra is not None else 0)  # Q's rows
    for f in range(folds):
        held = ids % folds == f
        Xf, df = X[~held], domain[~held]
        if extra is not None:
            Xf = np.concatenate([np.asarray(Xf, dtype=np.float64), np.asarray(extra[0], dtype=np.float64)])
            df = np.concatenate([df, extra[1]])
        # The penalty is relative to the rows (l2 / n): scaled by the fold's share, each
        # fold's Q is as regularized as the Q it stands for.
        n_fold = int(comm.allreduce_int(np.array([Xf.shape[0]]))[0])
        clf = fit(comm, Xf, df, n_domains, l2=l2 * n_fold / max(n_full, 1))
        for lo in range(0, int(held.sum()), _CALIBRATION_BLOCK):  # blocks of rows: bounded memory
            rows = np.flatnonzero(held)[lo: lo + _CALIBRATION_BLOCK]
            # log Q = z - logsumexp(z): the logits up to a per-row constant, which
            # no temperature sees; per-row values, the same bits on any rank.
            logq = np.log(np.maximum(clf.proba(np.ascontiguousarray(X[rows])), 1e-300))
            own = logq[np.arange(rows.size), np.asarray(domain[rows], dtype=np.int64)]
            for j, T in enumerate(TEMPERATURES):
                z = logq / T
                top = z.max(axis=1)
                lse = np.log(np.exp(z - top[:, None]).sum(axis=1)) + top
                loss = np.minimum(lse - own / T, _logistic.LOSS_CAP)
                totals[j] += int(np.rint(loss * unit).astype(np.int64).sum())
    totals = comm.allreduce_int(totals)
    order = np.lexsort((np.abs(np.log2(TEMPERATURES)), totals))  # least loss, then nearest 1
    return float(TEMPERATURES[order[0]]), totals / unit / max(n, 1)


def tempered(clf: DomainClassifier, temperature: float) -> DomainClassifier:
    """``clf`` with its logits divided by ``temperature`` (the same argmax, softer or sharper Q)."""
    return DomainClassifier(mean=clf.mean, scale=clf.scale, W=np.ascontiguousarray(clf.W / temperature), l2=clf.l2,
                            train_accuracy=clf.train_accuracy, iterations=clf.iterations, temperature=temperature)
