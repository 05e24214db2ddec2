"""K Gaussian classes of controlled overlap, imbalance and label noise (multiclass).

A class-conditional Gaussian mixture for multiclass boosting (SAMME and
friends): K classes (--classes), d features (--d) of which M (--informative)
carry the signal and the others are pure N(0, 1) noise.

Distribution (fixed by --task-seed)
  * The M informative features are chosen at random among the d; class k has
    a centre c_k in them, c_k ~ N(0, S^2 I_M) with S = --separation, drawn
    once. A row of class k is x = c_k + N(0, I_d) (the centre padded with
    zeros in the noise features), so a smaller S means more overlap; S = 0
    makes the classes indistinguishable.
  * Class priors are proportional to R^(-k/(K-1)) for k = 0..K-1, with
    R = --imbalance: R = 1 is balanced, and the largest class (class 0) is R
    times as likely as the smallest (class K-1).
  * --noise P replaces the label of each row, with probability P, by one of
    the K-1 other classes drawn uniformly.

y holds the class indices 0..K-1 as values (int8, int16 for K > 128).
Ground truth under synth/: y_clean (n,), the labels before the noise;
centres (K, d), priors (K,), informative (M,) (the informative features'
0-based indices). Attributes: n_classes, separation, imbalance, informative.
The Bayes-optimal prediction of any rows is bayes_predict(X, centres, priors).

Parameters
  --classes K        number of classes, 2..256 (default 10)
  --d D              number of features (default 20)
  --informative M    features that carry the signal, 1..D (default min(D, 10))
  --separation S     spread of the class centres (default 1.0)
  --imbalance R      ratio of the largest class prior to the smallest, R >= 1
                     (default 1: balanced)
"""
from __future__ import annotations

import argparse
from typing import Optional

import numpy as np

from ..labels import MAX_CLASSES
from . import SynthData

_TASK, _SAMPLE, _NOISE = 0x3C1A, 0x3C1B, 0x3C1C


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the multiclass options on ``parser``."""
    parser.add_argument(
        "--classes", type=int, default=10, metavar="K", help=f"number of classes, 2..{MAX_CLASSES} (default 10)"
    )
    parser.add_argument("--d", type=int, default=20, metavar="D", help="number of features (default 20)")
    parser.add_argument(
        "--informative", type=int, default=None, metavar="M",
        help="features that carry the signal (default min(D, 10)); the others are pure noise",
    )
    parser.add_argument(
        "--separation", type=float, default=1.0, metavar="S",
        help="spread of the class centres in the informative features (default 1.0; smaller = more overlap)",
    )
    parser.add_argument(
        "--imbalance", type=float, default=1.0, metavar="R",
        help="largest class prior / smallest, priors proportional to R^(-k/(K-1)) (default 1: balanced)",
    )


def priors(classes: int, imbalance: float) -> np.ndarray:
    """Class priors proportional to ``imbalance ** (-k / (classes - 1))``, k = 0..classes-1."""
    k = np.arange(classes, dtype=np.float64)
    w = float(imbalance) ** (-k / (classes - 1))
    return w / w.sum()


def task(task_seed: int, classes: int, d: int, informative: int, separation: float) -> tuple[np.ndarray, np.ndarray]:
    """The informative features (sorted indices) and the class centres (classes x d) of a task."""
    rng = np.random.default_rng([int(task_seed), _TASK])
    feats = np.sort(rng.permutation(d)[:informative])
    centres = np.zeros((classes, d), dtype=np.float64)
    centres[:, feats] = separation * rng.standard_normal((classes, informative))
    return feats, centres


def bayes_predict(X: np.ndarray, centres: np.ndarray, prior: np.ndarray, chunk_rows: int = 1 << 16) -> np.ndarray:
    """The Bayes-optimal class of each row: argmax_k log prior_k - |x - c_k|^2 / 2 (clean labels)."""
    X = np.asarray(X)
    feats = np.nonzero(np.any(centres != 0, axis=0))[0]
    C = centres[:, feats]
    bias = np.log(prior) - 0.5 * np.einsum("kj,kj->k", C, C)
    out = np.empty(X.shape[0], dtype=np.int64)
    for start in range(0, X.shape[0], chunk_rows):
        x = X[start : start + chunk_rows][:, feats].astype(np.float64)
        # |x - c|^2 / 2 = |x|^2 / 2 - x.c + |c|^2 / 2; the |x|^2 term is the same for every class.
        out[start : start + chunk_rows] = np.argmax(x @ C.T + bias, axis=1)
    return out


def generate(
    n: int,
    noise: float = 0.0,
    seed: int = 0,
    task_seed: int = 0,
    classes: int = 10,
    d: int = 20,
    informative: Optional[int] = None,
    separation: float = 1.0,
    imbalance: float = 1.0,
    **_: object,
) -> SynthData:
    """Draw ``n`` rows of the ``task_seed`` task; ``seed`` fixes the sample."""
    K, d = int(classes), int(d)
    if not 2 <= K <= MAX_CLASSES:
        raise ValueError(f"--classes must be in 2..{MAX_CLASSES}, got {K}")
    if d < 1:
        raise ValueError(f"--d must be at least 1, got {d}")
    M = min(d, 10) if informative is None else int(informative)
    if not 1 <= M <= d:
        raise ValueError(f"--informative must be in 1..{d} (--d), got {M}")
    if not (np.isfinite(separation) and separation >= 0):
        raise ValueError(f"--separation must be a finite number >= 0, got {separation}")
    if not (np.isfinite(imbalance) and imbalance >= 1):
        raise ValueError(f"--imbalance must be a finite number >= 1 (largest prior / smallest), got {imbalance}")
    if not 0.0 <= noise <= 1.0:
        raise ValueError(f"noise must be in [0, 1], got {noise}")
    if n < 0:
        raise ValueError(f"n must be at least 0, got {n}")

    feats, centres = task(task_seed, K, d, M, separation)
    prior = priors(K, imbalance)
    y_dtype = np.int8 if K <= 128 else np.int16

    rng = np.random.default_rng([int(seed), _SAMPLE])
    # Inverse-CDF draw of the classes: one uniform per row, vectorised.
    cdf = np.cumsum(prior)
    cdf[-1] = 1.0
    y = np.searchsorted(cdf, rng.random(n), side="right").astype(y_dtype)
    X = rng.standard_normal((n, d), dtype=np.float32)
    X[:, feats] += centres[:, feats].astype(np.float32)[y]

    nrng = np.random.default_rng([int(seed), _NOISE])
    flip = nrng.random(n) < noise
    # Another class, uniformly: shift by 1..K-1 (mod K).
    shift = nrng.integers(1, K, size=n)
    y_noisy = np.where(flip, (y.astype(np.int64) + shift) % K, y).astype(y_dtype)

    return SynthData(
        X=X,
        y=y_noisy,
        feature_names=[f"x{j + 1}" for j in range(d)],
        attrs={
            "generator": "multiclass",
            "noise": float(noise),
            "seed": int(seed),
            "task_seed": int(task_seed),
            "n_classes": int(K),  # not "classes": that attribute lists label values (y here holds them)
            "separation": float(separation),
            "imbalance": float(imbalance),
            "informative": int(M),
        },
        extra={"y_clean": y, "centres": centres, "priors": prior, "informative": feats.astype(np.int32)},
    )
