"""Long & Servedio's noisy "hard" distribution, as used by the SmoothBoost paper.

21 features in {-1,+1}; the label y is uniform on {-1,+1}; then, with
probability 1/4 every x_i = y ("large margin"); with probability 1/4
x_1..x_11 = y and x_12..x_21 = -y ("pullers"); with probability 1/2 five
random coordinates among the first 11 and six among the last 10 equal y, the
rest -y ("penalizers"). Training labels are then flipped with probability
``noise`` (``--noise 0`` gives a clean test set). ``synth/component``
(0 = large margin, 1 = puller, 2 = penalizer) and ``synth/y_clean`` keep the
ground truth.
"""
from __future__ import annotations

import argparse

import numpy as np

from . import SynthData

D = 21
FIRST = 11  # the first block; the last D - FIRST = 10 coordinates form the second


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No options beyond the common ones (--n, --noise, --seed)."""


def generate(n: int, noise: float = 0.0, seed: int = 0, task_seed: int = 0, **_: object) -> SynthData:
    """Draw ``n`` rows; ``task_seed`` is unused (the distribution is fixed)."""
    if not 0.0 <= noise <= 1.0:
        raise ValueError(f"noise must be in [0, 1], got {noise}")
    rng = np.random.default_rng([int(seed), 0x15D])
    y = np.where(rng.random(n) < 0.5, 1, -1).astype(np.int8)
    u = rng.random(n)
    component = np.where(u < 0.25, 0, np.where(u < 0.5, 1, 2)).astype(np.int8)

    agree = np.ones((n, D), dtype=bool)  # x_i == y ?
    agree[component == 1, FIRST:] = False
    pen = np.nonzero(component == 2)[0]
    if pen.size:
        # Five of the first 11 and six of the last 10 agree with y: rank random
        # keys per row and keep the smallest ones.
        rows = np.arange(pen.size)[:, None]
        first = np.zeros((pen.size, FIRST), dtype=bool)
        first[rows, np.argsort(rng.random((pen.size, FIRST)), axis=1)[:, :5]] = True
        second = np.zeros((pen.size, D - FIRST), dtype=bool)
        second[rows, np.argsort(rng.random((pen.size, D - FIRST)), axis=1)[:, :6]] = True
        agree[pen, :FIRST] = first
        agree[pen, FIRST:] = second
    X = np.where(agree, y[:, None], -y[:, None]).astype(np.int8)

    flip = np.random.default_rng([int(seed), 0xF11B]).random(n) < noise
    y_noisy = np.where(flip, -y, y).astype(np.int8)
    return SynthData(
        X=X,
        y=y_noisy,
        feature_names=[f"x{i + 1}" for i in range(D)],
        attrs={"generator": "longservedio", "noise": float(noise), "seed": int(seed)},
        extra={"component": component, "y_clean": y},
    )
