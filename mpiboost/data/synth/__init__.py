"""Synthetic data generators (``mpiboost synth NAME``).

Every generator module has the same shape:

``add_arguments(parser)``
    its own options (the CLI adds ``--n``, ``--noise``, ``--seed``,
    ``--task-seed``, ``--out`` and ``--split-domains`` for all of them);
``generate(n, noise, seed, task_seed, **options) -> SynthData``
    the rows. ``task_seed`` fixes the *distribution* (domain rules, source
    relatedness ...), ``seed`` the sample, so a training set and a test set
    of the same task differ only in ``--seed``.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

NAMES = ("longservedio", "multisource", "transfer", "multitask", "manytasks", "multiclass")


@dataclass
class SynthData:
    """Generated rows plus ground truth kept beside them."""

    X: np.ndarray
    y: np.ndarray
    domain: Optional[np.ndarray] = None
    feature_names: Optional[list] = None
    domain_names: Optional[list] = None
    attrs: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)  # stored under "synth/<name>"


def module(name: str):
    """The generator module called ``name``."""
    if name not in NAMES:
        raise KeyError(name)
    return importlib.import_module(f"{__name__}.{name}")
