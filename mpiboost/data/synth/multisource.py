"""p source domains whose experts conflict: convex combinations fail, Q-weighted ones succeed.

Built after Propositions 1 and 2 of Cortes et al., "Boosting with Multiple
Sources" (NeurIPS 2021): every domain has a decision stump that is perfect on
it, yet no convex combination of those experts does well on a mixture of the
domains, while the domain-weighted combination sum_k Q(k|x) h_k(x) does.

Distribution (p = --domains, d = --d; feature roles are drawn from --task-seed)
  * Features split into p *label features* j_1..j_p (one per domain) and
    d - p *location features*.
  * Location features of domain k are N(mu_k, I); the means mu_k are the
    vertices of a regular simplex with pairwise distance --separation, randomly
    rotated. The domain is therefore a linear function of x (a multinomial
    logistic regression learns Q(k|x)); the Bayes rate of confusing two domains
    is Phi(-separation/2).
  * Domain k's rule is the stump h_k(x) = s_k if x_{j_k} > t_k else -s_k, with
    a random sign s_k and threshold t_k: on domain k, x_{j_k} = t_k + s_k z and
    y = sign(z), z ~ N(0, 1), so h_k is perfect on its own domain.
  * On domain k the *other* label features are decoys: x_{j_l} = t_l - s_l v
    with v = c z + sqrt(1 - c^2) e, e ~ N(0, 1), c = --conflict. Expert h_l
    (l != k) is then anti-correlated with the labels of domain k (error
    1 - arccos(c)/pi; 1 for c = 1). Every label feature has the same N(t, 1)
    marginal in every domain, so a stump on the union cannot tell the domains
    apart by it, and the best stump differs (feature and sign) from domain to
    domain.
  * With c = 1 this is exactly the Proposition-1 construction: on domain k,
    sum_l a_l h_l = (2 a_k - 1) y, so any convex combination a is right on at
    most one domain, while sum_l Q(l|x) h_l(x) = (2 Q(k|x) - 1) y is right
    wherever Q(k|x) > 1/2 (Proposition 2).
  * --n rows in all, split between domains by --mixture (exact counts, largest
    remainder), grouped by domain. Training labels are flipped with
    probability --noise.

Ground truth under synth/: y_clean (n,), experts (n, p) = h_k(x) for every row,
q (n, p) = the posterior of the domain given the location features under this
file's mixture, mixture (p,), domain_means (p, d), label_feature (p,),
label_sign (p,), threshold (p,).

Parameters
  --domains P     number of domains (default 3)
  --d D           number of features, at least 2P - 1 (default 10)
  --mixture W..   P nonnegative domain weights (default uniform); a test set
                  for a particular target mixture uses its own weights
  --separation S  distance between domain means (default 5.0)
  --conflict C    correlation in [0, 1] of the decoys (default 0.9)
"""
from __future__ import annotations

import argparse
from typing import Optional, Sequence

import numpy as np

from . import SynthData

_TASK, _SAMPLE, _NOISE = 0x3501, 0x3502, 0x3503


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the multisource options on ``parser``."""
    parser.add_argument("--domains", type=int, default=3, metavar="P", help="number of domains (default 3)")
    parser.add_argument("--d", type=int, default=10, metavar="D", help="number of features, at least 2P-1 (default 10)")
    parser.add_argument(
        "--mixture", type=float, nargs="+", default=None, metavar="W", help="P domain weights (default uniform)"
    )
    parser.add_argument(
        "--separation", type=float, default=5.0, metavar="S", help="distance between domain means (default 5.0)"
    )
    parser.add_argument(
        "--conflict", type=float, default=0.9, metavar="C", help="decoy correlation in [0, 1] (default 0.9)"
    )


def _counts(n: int, weights: np.ndarray) -> np.ndarray:
    """Split ``n`` rows in proportion to ``weights`` (largest remainder), so
    that a file holds the mixture exactly rather than a multinomial draw."""
    exact = n * weights
    counts = np.floor(exact).astype(np.int64)
    order = np.argsort(-(exact - counts), kind="stable")
    counts[order[: n - int(counts.sum())]] += 1
    return counts


def _simplex_means(p: int, dim: int, separation: float, rng: np.random.Generator) -> np.ndarray:
    """``p`` points in ``dim`` dimensions, every pair ``separation`` apart."""
    if p == 1:
        return np.zeros((1, dim))
    centered = np.eye(p) - 1.0 / p
    # The centered unit vectors span p-1 dimensions; express them in an
    # orthonormal basis of that span, then rotate the span randomly into R^dim.
    basis, _ = np.linalg.qr(centered[:, : p - 1])
    coords = centered @ basis  # (p, p-1), pairwise distance sqrt(2)
    rotation, _ = np.linalg.qr(rng.standard_normal((dim, p - 1)))
    return (separation / np.sqrt(2.0)) * coords @ rotation.T


def _check(
    domains: int, d: int, mixture: Optional[Sequence[float]], separation: float, conflict: float
) -> np.ndarray:
    """Validate the options; return the normalized mixture weights."""
    if domains < 1:
        raise ValueError(f"--domains must be at least 1, got {domains}")
    if d < 2 * domains - 1 or d < domains + 1:
        raise ValueError(
            f"--d must be at least {max(2 * domains - 1, domains + 1)} for {domains} domains "
            f"({domains} label features plus {max(domains - 1, 1)} location features), got {d}"
        )
    if not 0.0 <= conflict <= 1.0:
        raise ValueError(f"--conflict must be in [0, 1], got {conflict}")
    if separation < 0:
        raise ValueError(f"--separation must be nonnegative, got {separation}")
    weights = np.full(domains, 1.0 / domains) if mixture is None else np.asarray(mixture, dtype=np.float64)
    if weights.shape != (domains,):
        raise ValueError(f"--mixture needs {domains} weights (one per domain), got {weights.size}")
    if np.any(weights < 0) or not np.isfinite(weights).all() or weights.sum() <= 0:
        raise ValueError("--mixture weights must be nonnegative and not all zero")
    return weights / weights.sum()


def generate(
    n: int,
    noise: float = 0.0,
    seed: int = 0,
    task_seed: int = 0,
    *,
    domains: int = 3,
    d: int = 10,
    mixture: Optional[Sequence[float]] = None,
    separation: float = 5.0,
    conflict: float = 0.9,
) -> SynthData:
    """Draw ``n`` rows from the mixture of ``domains`` conflicting domains.

    Parameters
    ----------
    n : int
        Total number of rows.
    noise : float
        Probability of flipping each label.
    seed, task_seed : int
        Seeds of the sample and of the distribution (feature roles, means,
        signs, thresholds).
    domains, d, mixture, separation, conflict
        See the module docstring.

    Returns
    -------
    SynthData
        float32 features, int8 labels, int32 domain ids 0..p-1.
    """
    if not 0.0 <= noise <= 1.0:
        raise ValueError(f"noise must be in [0, 1], got {noise}")
    p = int(domains)
    weights = _check(p, d, mixture, separation, conflict)

    task = np.random.default_rng([int(task_seed), _TASK, p, d])
    perm = task.permutation(d)
    label_feature, location = np.sort(perm[:p]), np.sort(perm[p:])
    label_sign = np.where(task.random(p) < 0.5, 1, -1).astype(np.int8)
    threshold = task.uniform(-1.0, 1.0, p)
    loc_means = _simplex_means(p, location.size, separation, task)

    counts = _counts(int(n), weights)
    domain = np.repeat(np.arange(p, dtype=np.int32), counts)
    rng = np.random.default_rng([int(seed), int(task_seed), _SAMPLE])
    z = rng.standard_normal(n)
    X = np.empty((n, d), dtype=np.float64)
    X[:, location] = loc_means[domain] + rng.standard_normal((n, location.size))
    own = label_feature[domain]
    v = conflict * z[:, None] + np.sqrt(1.0 - conflict**2) * rng.standard_normal((n, p))
    X[:, label_feature] = threshold - label_sign * v
    X[np.arange(n), own] = threshold[domain] + label_sign[domain] * z
    X = X.astype(np.float32)

    # Labels and experts from the stored float32 values, so that recomputing
    # a stump on the file gives exactly y_clean.
    Xl = X[:, label_feature].astype(np.float64)
    experts = np.where(Xl > threshold, label_sign, -label_sign).astype(np.int8)
    y_clean = experts[np.arange(n), domain].copy()

    logits = np.log(np.maximum(weights, 1e-300)) - 0.5 * (
        (X[:, location, None].astype(np.float64) - loc_means.T[None]) ** 2
    ).sum(axis=1)
    logits[:, weights == 0] = -np.inf
    logits -= logits.max(axis=1, keepdims=True)
    q = np.exp(logits)
    q /= q.sum(axis=1, keepdims=True)

    flip = np.random.default_rng([int(seed), int(task_seed), _NOISE]).random(n) < noise
    y = np.where(flip, -y_clean, y_clean).astype(np.int8)

    means = np.empty((p, d))
    means[:, location] = loc_means
    means[:, label_feature] = threshold
    return SynthData(
        X=X,
        y=y,
        domain=domain,
        feature_names=[f"x{i + 1}" for i in range(d)],
        domain_names=[f"domain{k + 1}" for k in range(p)],
        attrs={
            "generator": "multisource",
            "noise": float(noise),
            "seed": int(seed),
            "task_seed": int(task_seed),
            "domains": p,
            "separation": float(separation),
            "conflict": float(conflict),
            "mixture": weights,
        },
        extra={
            "y_clean": y_clean,
            "experts": experts,
            "q": q.astype(np.float32),
            "mixture": weights,
            "domain_means": means,
            "label_feature": label_feature.astype(np.int32),
            "label_sign": label_sign,
            "threshold": threshold,
        },
    )
