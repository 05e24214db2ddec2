"""Datasets 1 and 2 of Takenouchi et al.'s multi-task boosting paper (Entropy 2015, sec. 5.1).

Two features, x uniform on [-1, 1]^2 in every task; task j labels
y = sign(F_j(x)) (+1 where F_j(x) > 0) with

  Dataset 1 (--dataset 1): J = 3 tasks,
      F_j(x) = (1 + c_j2)(x1 - c_j1) - x2,  c_j1 ~ N(0, 0.2^2), c_j2 ~ N(0, 0.1^2);
  Dataset 2 (--dataset 2): J = 6 tasks,
      F_j(x) = +[(1 + c_j2)(x1 - c_j1) - x2]  for j = 1, 2, 3,
      F_j(x) = -[(1 + c_j2)(x1 - c_j1) - x2]  for j = 4, 5, 6,
      c_j1 ~ N(0, 0.1^2), c_j2 ~ N(0, 0.1^2).

So the tasks of Dataset 1 share one diagonal boundary up to a small shift and
tilt; in Dataset 2 tasks 1-3 share it, tasks 4-6 share the opposite labelling,
and the pooled data of all six tasks looks randomly labelled. The c_j are drawn
from --task-seed, the rows from --seed.

Resolutions of what the paper leaves open:
  * Sample sizes: the paper generates "a training dataset, including 400
    examples, and a test dataset, including 600 examples" and plots each task's
    dataset D_j separately; we read these as per-task counts. --n is the number
    of rows per task: --n 400 for training, --n 600 for a test set as in the
    paper (pi_j = 1/J, equal task sizes, as in the paper).
  * "Contamination noise on label y" has no stated rate: each label is flipped
    with probability --noise (the paper notes that the tasks' noise differs;
    --task-noise gives one rate per task). Use --noise 0 for a clean test set.

Rows are grouped by task; domains are tasks, named "task1".."taskJ".
Ground truth under synth/: y_clean (n,), F (n,) = F_j(x) of each row's task,
c (J, 2) = (c_j1, c_j2), orientation (J,) = +1 or -1 (the sign in front of
F_j), task_noise (J,) = the flip rate used for each task.

Parameters
  --dataset {1,2}    which dataset of the paper (default 1)
  --task-noise R..   J flip rates, one per task (overrides --noise)
  --paper-noise      5, 10, 15 % cycling over the tasks (the experiments' resolution)
"""
from __future__ import annotations

import argparse
from typing import Optional, Sequence

import numpy as np

from . import SynthData

_TASK, _SAMPLE, _NOISE = 0x3E01, 0x3E02, 0x3E03
# "Random contamination noise" whose "structure is different per task": the paper gives
# no rate; these flip rates, cycling over the tasks, are the resolution used for its
# experiments (Dataset 1: 5 / 10 / 15 %; Dataset 2: 5 / 10 / 15 / 5 / 10 / 15 %).
PAPER_NOISE = (0.05, 0.10, 0.15)

# Per dataset: number of tasks, sd of c_j1, sd of c_j2, orientation of each task.
DATASETS = {
    1: (3, 0.2, 0.1, (1, 1, 1)),
    2: (6, 0.1, 0.1, (1, 1, 1, -1, -1, -1)),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the multitask options on ``parser``."""
    parser.add_argument(
        "--dataset", type=int, choices=sorted(DATASETS), default=1, help="Dataset 1 (3 tasks) or 2 (6 tasks); default 1"
    )
    parser.add_argument(
        "--task-noise", type=float, nargs="+", default=None, metavar="R", help="one label flip rate per task"
    )
    parser.add_argument(
        "--paper-noise", action="store_true",
        help="flip rates 5, 10, 15 %% cycling over the tasks (the resolution of the paper's unstated "
        "contamination noise); replaces --noise and --task-noise",
    )


def discriminant(x: np.ndarray, c: np.ndarray, orientation: int) -> np.ndarray:
    """F_j(x) = orientation * ((1 + c_j2)(x1 - c_j1) - x2) for rows ``x`` (m, 2)."""
    return orientation * ((1.0 + c[1]) * (x[:, 0] - c[0]) - x[:, 1])


def generate(
    n: int,
    noise: float = 0.0,
    seed: int = 0,
    task_seed: int = 0,
    *,
    dataset: int = 1,
    task_noise: Optional[Sequence[float]] = None,
    paper_noise: bool = False,
) -> SynthData:
    """Draw ``n`` rows for every task of Dataset ``dataset``.

    Parameters
    ----------
    n : int
        Rows per task (400 for training and 600 for testing in the paper).
    noise : float
        Probability of flipping each label (all tasks).
    seed, task_seed : int
        Seeds of the sample and of the task parameters c_j.
    dataset : {1, 2}
        Which dataset of the paper.
    task_noise : sequence of float, optional
        One flip rate per task, replacing ``noise``.
    paper_noise : bool
        The rates of :data:`PAPER_NOISE` cycling over the tasks (replaces both).

    Returns
    -------
    SynthData
        float32 features (x1, x2), int8 labels, int32 task ids 0..J-1.
    """
    if dataset not in DATASETS:
        raise ValueError(f"--dataset must be 1 or 2, got {dataset}")
    J, sd1, sd2, orient = DATASETS[dataset]
    if paper_noise:
        if task_noise is not None:
            raise ValueError("give --paper-noise or --task-noise, not both")
        task_noise = [PAPER_NOISE[j % len(PAPER_NOISE)] for j in range(J)]
    rates = np.full(J, float(noise)) if task_noise is None else np.asarray(task_noise, dtype=np.float64)
    if rates.shape != (J,):
        raise ValueError(f"--task-noise needs {J} rates (one per task of Dataset {dataset}), got {rates.size}")
    if not (np.isfinite(rates).all() and np.all((rates >= 0) & (rates <= 1))):
        raise ValueError("noise rates must be in [0, 1]")
    if n < 0:
        raise ValueError(f"n must be nonnegative, got {n}")

    task = np.random.default_rng([int(task_seed), _TASK, dataset])
    c = np.column_stack([task.normal(0.0, sd1, J), task.normal(0.0, sd2, J)])
    orientation = np.asarray(orient, dtype=np.int8)

    rng = np.random.default_rng([int(seed), int(task_seed), _SAMPLE, dataset])
    X = rng.uniform(-1.0, 1.0, (J * n, 2)).astype(np.float32)
    domain = np.repeat(np.arange(J, dtype=np.int32), n)
    F = np.empty(J * n)
    for j in range(J):
        rows = slice(j * n, (j + 1) * n)
        F[rows] = discriminant(X[rows].astype(np.float64), c[j], int(orientation[j]))
    y_clean = np.where(F > 0, 1, -1).astype(np.int8)

    flip = np.random.default_rng([int(seed), int(task_seed), _NOISE]).random(J * n) < rates[domain]
    y = np.where(flip, -y_clean, y_clean).astype(np.int8)
    return SynthData(
        X=X,
        y=y,
        domain=domain,
        feature_names=["x1", "x2"],
        domain_names=[f"task{j + 1}" for j in range(J)],
        attrs={
            "generator": "multitask",
            "dataset": int(dataset),
            "noise": float(noise),
            "seed": int(seed),
            "task_seed": int(task_seed),
            "task_noise": rates,
            "c": c,
        },
        extra={
            "y_clean": y_clean,
            "F": F.astype(np.float32),
            "c": c,
            "orientation": orientation,
            "task_noise": rates,
        },
    )
