"""The contract of an online booster: what it predicts and what each weak learner learns.

An online booster keeps N weak learners (an :class:`mpiboost._ext._nba.NBABank`,
owned by the stream driver, :mod:`mpiboost.online.stream`) and a small state
of its own. For every example ``t`` of the stream the driver

1. asks every learner for its class: ``labels`` (N class indices);
2. calls :meth:`OnlineBooster.distribution` ``(labels, t)``: the booster's
   distribution D_t over the k classes (the randomised prediction is a draw
   from it, the deterministic one its argmax);
3. reveals the label and calls :meth:`OnlineBooster.update` ``(labels, y, t, rng)``:
   the booster advances its own state and returns a :class:`Update`, what
   each learner learns from the example;
4. lets the learners learn it.

Both calls see the learners only through their cached ``labels``, so the
driver may ask a block of examples at once from learners frozen at the
block's start (block-online) and may spread the learners over ranks: every
rank holds all ``labels`` and runs the booster's calls alike, and each
learns only its own learners' part of the :class:`Update`.

An algorithm declares, as class attributes, ``name``, ``summary`` and
``parameters`` (:class:`mpiboost.boost.base.Param`, the same declarations as
the batch algorithms): the ``train`` options, the docs and the tests come
from them. Registering it is one line in :data:`mpiboost.online.ONLINE`.
Boosters never open files, print or call MPI.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, Mapping, Optional

import numpy as np

from .._ext import _simplex
from ..param import Param


@dataclass
class Update:
    """What the N learners learn from one example.

    Either ``P`` (N, k): learner n learns the example once with every label
    l of weight ``P[n, l] > 0`` (fractional relabelling); or ``labels`` (N,
    int32) with ``weights`` (N, float, >= 0): learner n learns the label
    ``labels[n]`` with weight ``weights[n]`` (0: nothing).
    """

    P: Optional[np.ndarray] = None
    labels: Optional[np.ndarray] = None
    weights: Optional[np.ndarray] = None


class OnlineBooster(ABC):
    """An online booster over N weak learners; see the module docstring for the calls."""

    name: ClassVar[str]
    summary: ClassVar[str]
    kind: ClassVar[str] = "online"  # the registry's family (mpiboost.registry): one prequential pass
    paper: ClassVar[str] = ""  # where the booster comes from
    parameters: ClassVar[tuple[Param, ...]] = ()
    tasks: ClassVar[tuple[str, ...]] = ("binary", "multiclass")

    def __init__(self, n_classes: int, params: Optional[Mapping] = None, seed: int = 0) -> None:
        self.n_classes, self.seed = int(n_classes), int(seed)
        self.params = self.resolve(params)
        self.n_learners = int(self.params["n_learners"])  # every online algorithm declares it

    @classmethod
    def resolve(cls, params: Optional[Mapping]) -> dict:
        """The declared parameters with their defaults, each value checked (ValueError naming the option)."""
        params = dict(params or {})
        known = {p.name for p in cls.parameters}
        extra = sorted(set(params) - known)
        if extra:
            raise ValueError(f"{cls.name} has no parameter {', '.join(extra)}")
        out = {}
        for p in cls.parameters:
            out[p.name] = p.check(params.get(p.name, p.default), cls.name)
        return out

    @abstractmethod
    def distribution(self, labels: np.ndarray, t: int) -> np.ndarray:
        """D_t (k probabilities) from the learners' classes ``labels`` for example ``t``; the state does not change."""

    @abstractmethod
    def update(self, labels: np.ndarray, y: int, t: int, rng: np.random.Generator) -> Update:
        """Example ``t``'s label ``y`` is revealed: advance the state, return what each learner learns.

        ``rng`` is example t's :class:`StreamRandom`, keyed by (seed, t),
        after the driver's one draw of the randomised prediction.
        """

    def get_state(self) -> dict:
        """The booster's own state as arrays (saved with the model); none by default."""
        return {}

    def set_state(self, state: Mapping) -> None:
        """Take a state of :meth:`get_state` (shapes checked)."""
        if state:
            raise ValueError(f"{self.name} keeps no state, got {sorted(state)}")


class StreamRandom:
    """Example t's random numbers: ``random(n)`` gives the next n uniforms in [0, 1) of (seed, t).

    Counter-based (:func:`mpiboost._ext._simplex.uniforms`): the numbers of
    example t depend on the seed and t alone, so they are the same whatever
    the blocks or ranks, and cost no generator set-up per example. The
    driver takes the first (the randomised prediction); the booster's
    :meth:`OnlineBooster.update` gets the rest.
    """

    __slots__ = ("seed", "t", "used")

    def __init__(self, seed: int, t: int) -> None:
        self.seed, self.t, self.used = int(seed) & 0xFFFFFFFFFFFFFFFF, int(t), 0

    def random(self, size: Optional[int] = None):
        n = 1 if size is None else int(size)
        out = np.empty(n)
        _simplex.uniforms(self.seed, self.t, self.used, out)
        self.used += n
        return float(out[0]) if size is None else out


def draw(P: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Row r's class drawn from the distribution ``P[r]`` with the uniform number ``u[r]`` (inverse CDF)."""
    cdf = np.cumsum(P, axis=1)
    cut = u * cdf[:, -1]
    return np.minimum((cdf <= cut[:, None]).sum(axis=1), P.shape[1] - 1).astype(np.int32)
