"""What every boosting algorithm shares: the four-step shape and the row state.

An algorithm is a class with

``setup(data, proto, seed)``  initial state from this rank's rows;
``select(t) -> Hypothesis``   round t's hypothesis (protocol primitives only);
``apply(h) -> dict``          update the state for h, return round metrics;
``finish() -> Model``         the final ensemble.

``select`` draws randomness only from an RNG seeded by ``(seed, t)`` and
``apply`` depends only on the state and h, so a checkpoint is just the list
of hypotheses: replaying ``apply`` over them restores the state exactly.
Algorithms never open files, print or call MPI directly.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .._ext import _weights
from ..model import Model
from ..protocol import Protocol
from ..weak.stump import Stump, StumpLearner


@dataclass
class Hypothesis:
    """A round's stump, its vote coefficient, and what was learnt about it."""

    stump: Stump
    coef: float  # vote coefficient; apply() derives its update from (stump, coef, domain) alone
    metrics: dict = field(default_factory=dict)
    domain: Optional[int] = None  # Q-ensembles: the stump votes with weight Q(domain|x)
    more: tuple = ()  # further (stump, coef) pairs of the same round (MSDTrA's mixture of candidates)

    def members(self) -> list:
        """Every (stump, coef) pair this round adds to the ensemble."""
        return [(self.stump, self.coef), *self.more]


def _domain_index(which, data) -> int:
    """A domain given by index or by name."""
    names = list(data.domain_names or [])
    if isinstance(which, str) and not which.lstrip("-").isdigit():
        if which not in names:
            raise ValueError(f"no domain named {which!r}; the domains are {names}")
        return names.index(which)
    k = int(which)
    if not 0 <= k < data.n_domains:
        raise ValueError(f"domain {k} out of range: the data have {data.n_domains} domain(s)")
    return k


class StumpBoosting:
    """Row state and helpers shared by the stump-boosting algorithms.

    Subclasses set ``name`` and ``vote`` and implement ``select``/``apply``.
    """

    name = "base"
    vote = "weighted"

    def __init__(self, params: dict) -> None:
        self.params = dict(params)

    def setup(self, data, proto: Protocol, seed: int = 0) -> None:
        self.data, self.proto, self.seed = data, proto, int(seed)
        n_local = data.n_local
        only = self.params.get("train_domain")
        if only is not None:
            # AdaBoost-k of the MultiBoost paper: the other domains' rows start
            # (and, under multiplicative updates, stay) at weight 0.
            k = _domain_index(only, data)
            self.params["train_domain"] = k
            m_k = int(data.domain_counts[k])
            if m_k == 0:
                raise ValueError(f"domain {only!r} has no training rows")
            self.w = np.where(data.domain == k, 1.0 / m_k, 0.0)
        elif self.params.get("entity_balanced"):
            # The paper's Algorithm 4: every entity starts with the same total
            # mass. This depends on the partition, so the model does too.
            k = int(proto.reduce_counts(np.array([1 if n_local else 0]))[0])
            self.w = np.full(n_local, 1.0 / (k * n_local) if n_local else 0.0)
        else:
            # Uniform over all n rows: a per-row value, so independent of the split.
            self.w = np.full(n_local, 1.0 / data.n_global)
        self.margin = np.zeros(n_local)
        self._version = 0  # bumped whenever the weights change
        self._masses_key = None
        self.learner = StumpLearner(
            self.params.get("weak_learner", "histogram"),
            proto,
            data.cols,
            data.y,
            data.bins.n_bins,
            self.params.get("n_samples", 1),
            start=data.start,
        )
        self.model = Model(
            algorithm=self.name,
            params=self.params,
            bins=data.bins,
            vote=self.vote,
            feature_names=data.feature_names,
        )

    def rng(self, t: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, int(t)])

    def choose(self, t: int):
        """Round t's stump for the current weights, same on every rank."""
        return self.learner.fit(self.w, self.rng(t))

    def choose_and_rate(self, t: int):
        """Round t's stump, its exact weighted error, and the round's metrics so far."""
        choice = self.choose(t)
        right, wrong = self.masses(choice.stump)
        err = wrong / (right + wrong) if right + wrong > 0 else 0.5
        metrics = {"weak_error": err, "edge": 1.0 - 2.0 * err}
        if choice.sample_error is not None:
            metrics["weak_error_sample"] = choice.sample_error
        if choice.hist_error is not None:
            metrics["weak_error_hist"] = choice.hist_error
        return choice.stump, err, metrics

    def error_masses(self, stump: Stump) -> tuple[float, float]:
        """Exact global weight of the rows ``stump`` gets right and wrong (reduce_stats)."""
        if self.data.n_local:
            right, wrong = _weights.error_terms(stump.column(self.data.cols), self.data.y, self.w, *stump.args())
        else:
            right = wrong = np.zeros(0)
        return tuple(self.proto.reduce_terms([right, wrong]))

    def masses(self, stump: Stump) -> tuple[float, float]:
        """:meth:`error_masses` of the current weights, computed once per round.

        ``select`` needs them for the error and ``apply`` for the new total;
        a replayed ``apply`` (resume) computes them itself.
        """
        key = (stump, self._version)
        if self._masses_key != key:
            self._masses = self.error_masses(stump)
            self._masses_key = key
        return self._masses

    def update_rows(self, stump: Stump, factor_correct: float, factor_wrong: float, coef: float) -> tuple[int, float]:
        """Multiply weights, add to margins; return the global training error count and largest weight."""
        errors, wmax = 0, 0.0
        self._version += 1
        if self.data.n_local:
            errors, wmax = _weights.apply_stump(
                self.w, self.margin, stump.column(self.data.cols), self.data.y, *stump.args(),
                factor_correct, factor_wrong, coef,
            )
        return int(self.proto.reduce_counts(np.array([errors]))[0]), wmax


    def finish(self) -> Model:
        return self.model
