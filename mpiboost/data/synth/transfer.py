"""A target domain and N source domains of controlled relatedness (instance transfer).

For TrAdaBoost / MSTrA / MSDTrA experiments (Zhang et al. 2014): few labelled
target rows, several larger sources, some helpful and some misleading.

Distribution (d = --d, N = --sources)
  * Target: x ~ N(0, I_d); the concept is the linear rule y = sign(w . x), w a
    unit vector over --informative randomly chosen features (a sparse linear
    rule, learnable by boosted stumps).
  * Source k: relatedness rho_k in [-1, 1]. Its concept is
    w_k = rho_k w + sqrt(1 - rho_k^2) u_k with u_k a random unit vector
    orthogonal to w, so the source rule agrees with the target rule on a
    fraction 1 - arccos(rho_k)/pi of the inputs (1 for rho = 1, 1/2 for an
    unrelated source, 0 for the opposite concept). Its inputs are shifted:
    x ~ N(m_k, I_d), ||m_k|| = --shift, with m_k orthogonal to w and u_k, so
    the shift changes the input distribution but neither class balance nor
    agreement.
  * By default the first R = --related sources (ceil(N/2) unless given) are
    helpful, rho ~ U(0.8, 0.98), and the others misleading, rho ~ U(-0.9, 0);
    --relatedness sets every rho_k explicitly.
  * The target's parameters come from their own stream of --task-seed and do
    not depend on N, so a clean target test set is `--sources 0 --noise 0`
    with the same --task-seed and another --seed. Each source's parameters
    come from a stream of (--task-seed, k).
  * Rows: --target-n target rows (default --n), then --n rows per source.
    Domain 0 is "target", domains 1..N "source1".."sourceN". Labels of every
    row (target and sources) are flipped with probability --noise.

Ground truth under synth/: y_clean (n,), target_rule (n,) = the target concept
applied to each row's x (equal to y_clean on target rows), relatedness (N,),
agreement (N,) = 1 - arccos(rho)/pi, helpful (N,) (the first R sources, or
rho >= 0.5 with --relatedness), target_w (d,),
source_w (N, d), source_shift (N, d). The attribute "relatedness" repeats rho.

Parameters
  --sources N        number of source domains, 0 allowed (default 4, or the
                     length of --relatedness)
  --target-n M       number of target rows (default: --n)
  --d D              number of features, at least 3 (default 20)
  --informative K    features used by the target concept (default 5)
  --related R        helpful sources among N (default ceil(N/2))
  --relatedness R..  rho of each source in [-1, 1] (overrides --related)
  --shift S          norm of each source's input shift (default 1.0)
"""
from __future__ import annotations

import argparse
from typing import Optional, Sequence

import numpy as np

from . import SynthData

_TARGET, _SOURCE, _SAMPLE, _NOISE = 0x7A01, 0x7A02, 0x7A03, 0x7A04
HELPFUL = (0.8, 0.98)  # rho range of helpful sources
MISLEADING = (-0.9, 0.0)  # rho range of misleading sources


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the transfer options on ``parser``."""
    parser.add_argument(
        "--sources", type=int, default=None, metavar="N", help="number of sources, 0 allowed (default 4)"
    )
    parser.add_argument("--target-n", type=int, default=None, metavar="M", help="number of target rows (default --n)")
    parser.add_argument("--d", type=int, default=20, metavar="D", help="number of features (default 20)")
    parser.add_argument(
        "--informative", type=int, default=5, metavar="K", help="features the target concept uses (default 5)"
    )
    parser.add_argument("--related", type=int, default=None, metavar="R", help="helpful sources (default ceil(N/2))")
    parser.add_argument(
        "--relatedness", type=float, nargs="+", default=None, metavar="RHO", help="rho of each source in [-1, 1]"
    )
    parser.add_argument("--shift", type=float, default=1.0, metavar="S", help="source input shift (default 1.0)")


def _unit_orthogonal(v: np.ndarray, against: Sequence[np.ndarray]) -> np.ndarray:
    """``v`` with its components along ``against`` (orthonormal) removed, normalized."""
    for a in against:
        v = v - (v @ a) * a
    return v / np.linalg.norm(v)


def _relatedness(
    sources: int, related: Optional[int], relatedness: Optional[Sequence[float]], task_seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """rho of each source, and which sources count as helpful."""
    if relatedness is not None:
        rho = np.asarray(relatedness, dtype=np.float64)
        if rho.shape != (sources,):
            raise ValueError(f"--relatedness needs {sources} values (one per source), got {rho.size}")
        if not (np.isfinite(rho).all() and np.all(np.abs(rho) <= 1.0)):
            raise ValueError("--relatedness values must be in [-1, 1]")
        return rho, rho >= 0.5
    r = (sources + 1) // 2 if related is None else int(related)
    if not 0 <= r <= sources:
        raise ValueError(f"--related must be in [0, {sources}], got {r}")
    helpful = np.arange(sources) < r
    rho = np.empty(sources)
    for k in range(sources):
        lo, hi = HELPFUL if helpful[k] else MISLEADING
        rho[k] = np.random.default_rng([int(task_seed), _SOURCE, k, 1]).uniform(lo, hi)
    return rho, helpful


def generate(
    n: int,
    noise: float = 0.0,
    seed: int = 0,
    task_seed: int = 0,
    *,
    sources: Optional[int] = None,
    target_n: Optional[int] = None,
    d: int = 20,
    informative: int = 5,
    related: Optional[int] = None,
    relatedness: Optional[Sequence[float]] = None,
    shift: float = 1.0,
) -> SynthData:
    """Draw target rows and ``n`` rows for each source domain.

    Parameters
    ----------
    n : int
        Rows per source (and target rows when ``target_n`` is None).
    noise : float
        Probability of flipping each label (target and source rows).
    seed, task_seed : int
        Seeds of the sample and of the distribution (concepts, relatedness,
        shifts).
    sources, target_n, d, informative, related, relatedness, shift
        See the module docstring.

    Returns
    -------
    SynthData
        float32 features, int8 labels, domain 0 = target, k = source k.
    """
    if not 0.0 <= noise <= 1.0:
        raise ValueError(f"noise must be in [0, 1], got {noise}")
    if sources is None:
        sources = 4 if relatedness is None else len(relatedness)
    N = int(sources)
    m = int(n) if target_n is None else int(target_n)
    if N < 0:
        raise ValueError(f"--sources must be nonnegative, got {N}")
    if m < 0 or n < 0:
        raise ValueError("row counts must be nonnegative")
    if d < 3:
        raise ValueError(f"--d must be at least 3, got {d}")
    if not 1 <= informative <= d:
        raise ValueError(f"--informative must be in [1, {d}], got {informative}")
    if shift < 0:
        raise ValueError(f"--shift must be nonnegative, got {shift}")
    rho, helpful = _relatedness(N, related, relatedness, task_seed)

    # Target first, from its own stream: adding sources must not move it.
    trng = np.random.default_rng([int(task_seed), _TARGET, d, informative])
    support = trng.choice(d, size=informative, replace=False)
    w = np.zeros(d)
    w[support] = trng.standard_normal(informative)
    w /= np.linalg.norm(w)

    source_w = np.empty((N, d))
    source_shift = np.empty((N, d))
    for k in range(N):
        srng = np.random.default_rng([int(task_seed), _SOURCE, k, 0, d])
        u = _unit_orthogonal(srng.standard_normal(d), [w])
        source_w[k] = rho[k] * w + np.sqrt(1.0 - rho[k] ** 2) * u
        source_shift[k] = shift * _unit_orthogonal(srng.standard_normal(d), [w, u])

    blocks, labels = [], []
    for k in range(N + 1):
        rows = m if k == 0 else int(n)
        rng = np.random.default_rng([int(seed), int(task_seed), _SAMPLE, k])
        x = rng.standard_normal((rows, d))
        if k:
            x += source_shift[k - 1]
        x = x.astype(np.float32)
        concept = w if k == 0 else source_w[k - 1]
        blocks.append(x)
        labels.append(np.where(x.astype(np.float64) @ concept > 0, 1, -1).astype(np.int8))
    X = np.concatenate(blocks)
    y_clean = np.concatenate(labels)
    domain = np.repeat(np.arange(N + 1, dtype=np.int32), [m] + [int(n)] * N)
    target_rule = np.where(X.astype(np.float64) @ w > 0, 1, -1).astype(np.int8)

    flip = np.random.default_rng([int(seed), int(task_seed), _NOISE]).random(y_clean.size) < noise
    y = np.where(flip, -y_clean, y_clean).astype(np.int8)
    return SynthData(
        X=X,
        y=y,
        domain=domain,
        feature_names=[f"x{i + 1}" for i in range(d)],
        domain_names=["target"] + [f"source{k + 1}" for k in range(N)],
        attrs={
            "generator": "transfer",
            "noise": float(noise),
            "seed": int(seed),
            "task_seed": int(task_seed),
            "sources": N,
            "target_n": m,
            "informative": int(informative),
            "shift": float(shift),
            "relatedness": rho,
        },
        extra={
            "y_clean": y_clean,
            "target_rule": target_rule,
            "relatedness": rho,
            "agreement": 1.0 - np.arccos(rho) / np.pi,
            "helpful": helpful.astype(np.int8),
            "target_w": w,
            "source_w": source_w,
            "source_shift": source_shift,
        },
    )
