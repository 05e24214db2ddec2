"""Many small related tasks with rare positives (multi-task learning at scale).

J tasks (``--tasks``, default 30) of a few hundred rows each, about
``--positive-rate`` positives (default 5%), on d Gaussian features
(``--d``, default 10). Task j scores a row by

    s_j(x) = <w_j, x> / |w_j| + interaction * x1 x2 + e,    e ~ N(0, 0.5^2),

with w_j = sqrt(shared) w_0 + sqrt(1 - shared) v_j: a direction every task
shares (w_0) and one of its own (v_j); ``--shared`` (default 0.7) sets how
related the tasks are (1: one task, 0: unrelated ones). The x1 x2 term,
shared by all, is a rule no linear model finds. A row is positive when s_j
exceeds the quantile of s_j's distribution that leaves ``--positive-rate``
above it, so every task has about that rate whatever its weights.

Task sizes: ``--n`` is the median rows per task; task j draws n_j uniformly
in [0.4 n, 1.4 n] (fixed by ``--task-seed``, so training and test sets of
the same task seed have proportional tasks): ``--n 450`` gives 180 to 630
rows a task, 13,500 in all for 30 tasks. ``--noise`` flips labels at random.
The domain column is the task (``task1`` ... ``taskJ``).
"""
from __future__ import annotations

import argparse
import math

import numpy as np

from . import SynthData

_TASK, _SAMPLE, _NOISE = 71, 72, 73  # stream tags of the three random draws
SCORE_NOISE = 0.5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the manytasks options on ``parser``."""
    parser.add_argument("--tasks", type=int, default=30, help="number of tasks J (default 30)")
    parser.add_argument("--d", type=int, default=10, help="features (default 10)")
    parser.add_argument("--positive-rate", type=float, default=0.05, help="share of positive rows per task (default 0.05)")
    parser.add_argument("--shared", type=float, default=0.7,
                        help="weight of the direction every task shares, in [0, 1] (default 0.7)")
    parser.add_argument("--interaction", type=float, default=0.5,
                        help="weight of the shared x1 x2 term (default 0.5)")


def generate(
    n: int,
    noise: float = 0.0,
    seed: int = 0,
    task_seed: int = 0,
    *,
    tasks: int = 30,
    d: int = 10,
    positive_rate: float = 0.05,
    shared: float = 0.7,
    interaction: float = 0.5,
) -> SynthData:
    """Draw the rows of ``tasks`` related tasks, about ``n`` rows each (see the module docstring).

    Returns
    -------
    SynthData
        float32 features, int8 labels (-1/+1), int32 task ids 0..J-1.
    """
    from scipy.stats import norm

    if tasks < 1:
        raise ValueError(f"--tasks must be at least 1, got {tasks}")
    if d < 2:
        raise ValueError(f"--d must be at least 2 (the x1 x2 term), got {d}")
    if n < 0:
        raise ValueError(f"n must be nonnegative, got {n}")
    if not 0.0 < positive_rate < 1.0:
        raise ValueError(f"--positive-rate must be in (0, 1), got {positive_rate}")
    if not 0.0 <= shared <= 1.0:
        raise ValueError(f"--shared must be in [0, 1], got {shared}")
    if not 0.0 <= noise <= 1.0:
        raise ValueError(f"--noise must be in [0, 1], got {noise}")

    task = np.random.default_rng([int(task_seed), _TASK])
    w0 = task.normal(size=d)
    V = task.normal(size=(tasks, d))
    W = math.sqrt(shared) * w0[None, :] + math.sqrt(1.0 - shared) * V
    W /= np.maximum(np.linalg.norm(W, axis=1, keepdims=True), np.finfo(float).tiny)
    sizes = np.floor(task.uniform(0.4, 1.4, tasks) * n).astype(np.int64)

    rng = np.random.default_rng([int(seed), int(task_seed), _SAMPLE])
    total = int(sizes.sum())
    X = rng.normal(size=(total, d))
    domain = np.repeat(np.arange(tasks, dtype=np.int32), sizes)
    s = np.einsum("ij,ij->i", X, W[domain]) + interaction * X[:, 0] * X[:, 1] \
        + SCORE_NOISE * rng.normal(size=total)
    # s is a sum of independent parts of variance 1, interaction^2 and SCORE_NOISE^2; the product term is not
    # Gaussian, so the cut is the Gaussian quantile of the same variance (the rate is close, not exact).
    cut = norm.ppf(1.0 - positive_rate) * math.sqrt(1.0 + interaction ** 2 + SCORE_NOISE ** 2)
    y_clean = np.where(s > cut, 1, -1).astype(np.int8)
    flip = np.random.default_rng([int(seed), int(task_seed), _NOISE]).random(total) < noise
    y = np.where(flip, -y_clean, y_clean).astype(np.int8)
    return SynthData(
        X=X.astype(np.float32),
        y=y,
        domain=domain,
        feature_names=[f"x{j + 1}" for j in range(d)],
        domain_names=[f"task{j + 1}" for j in range(tasks)],
        attrs={
            "generator": "manytasks",
            "tasks": int(tasks),
            "d": int(d),
            "positive_rate": float(positive_rate),
            "shared": float(shared),
            "interaction": float(interaction),
            "noise": float(noise),
            "seed": int(seed),
            "task_seed": int(task_seed),
        },
        extra={"y_clean": y_clean, "score": s.astype(np.float32), "weights": W, "sizes": sizes},
    )
