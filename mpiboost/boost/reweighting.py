"""Row weights and the round helpers of the reweighting algorithms (SmoothBoost, AdaBoost, SAMME).

Every row carries a weight; each round a stump is chosen for the current
weights (:mod:`mpiboost.weak`), its exact weighted error is reduced over the
ranks, and the algorithm reweights the rows. What differs between the
algorithms is the coefficient and the reweighting rule.
"""
from __future__ import annotations

import numpy as np

from ..protocol import Protocol
from ..weak.stump import Stump, StumpLearner
from .base import Algorithm, domain_index
from .losses import grows_trees


class Reweighting(Algorithm):
    """Row state shared by the algorithms that reweight rows after each stump.

    Subclasses implement ``select``/``apply``; :meth:`make_learner` picks the
    weak learner (binary stumps by default).
    """

    def check_data(self, data) -> None:
        only = self.params.get("train_domain")
        if only is not None:
            k = domain_index(only, data)
            if int(data.domain_counts[k]) == 0:
                raise ValueError(f"domain {only!r} has no training rows")
            self.params["train_domain"] = k
        self.sample_size(data)  # a sample too large for the center is refused here, agreed

    def setup(self, data, proto: Protocol, seed: int = 0) -> None:
        self.check_data(data)
        self.data, self.proto, self.seed = data, proto, int(seed)
        n_local = data.n_local
        k = self.params.get("train_domain")
        sw = getattr(data, "weight", None)
        if sw is not None:
            # sample weights: the start is the weights' distribution (over the training domain's rows with
            # --train-domain), each row's share from the exact global sum, so the same on any number of ranks
            if self.params.get("entity_balanced"):
                raise ValueError("--entity-balanced gives every rank the same mass: it does not go with sample "
                                 "weights")
            from .._ext import _exact

            mine = sw if k is None else np.where(data.domain == k, sw, 0.0)
            total = float(proto.reduce_terms([_exact.partials(np.ascontiguousarray(mine))])[0])
            if not total > 0:
                raise ValueError("the sample weights sum to 0" + ("" if k is None else f" on domain {k}"))
            self.w = mine / total
        elif k is not None:
            # AdaBoost-k of the MultiBoost paper: the other domains' rows start
            # (and, under multiplicative updates, stay) at weight 0.
            self.w = np.where(data.domain == k, 1.0 / int(data.domain_counts[k]), 0.0)
        elif self.params.get("entity_balanced"):
            # The paper's Algorithm 4: every entity starts with the same total
            # mass. This depends on the partition, so the model does too.
            k = int(proto.reduce_counts(np.array([1 if n_local else 0]))[0])
            self.w = np.full(n_local, 1.0 / (k * n_local) if n_local else 0.0)
        else:
            # Uniform over all n rows: a per-row value, so independent of the split.
            self.w = np.full(n_local, 1.0 / data.n_global)
        # AdaBoost-k / target-only: train_error counts the training domain's rows only
        self._rows = None if k is None or self.params.get("entity_balanced") else np.flatnonzero(data.domain == k)
        self._version = 0  # bumped whenever the weights change
        self._masses_key = None
        self.learner = self.make_learner(data, proto)
        self.model = self.new_model(data, output=self.learner.output)

    def make_learner(self, data, proto: Protocol):
        """The weak learner (binary stumps; SAMME overrides it with class stumps)."""
        self.margin = np.zeros(data.n_local)
        if grows_trees(self.params):
            from ..weak.tree import SignTreeLearner, TreeSpec

            return SignTreeLearner(TreeSpec.from_params(self.params), proto, data.cols, data.y, data.bins.n_bins,
                                   data.n_global, search=self.params.get("search", "histogram"),
                                   n_samples=self.sample_size(data), start=data.start)
        return StumpLearner(
            self.params.get("search", "histogram"), proto, data.cols, data.y, data.bins.n_bins,
            self.sample_size(data), start=data.start,
        )

    def sample_size(self, data) -> int:
        """N of sample mode: the given number, or the paper's size from d and beta."""
        if self.params.get("search") != "sample":
            return 0
        if self.params.get("n_samples"):
            from ..weak.stump import MIN_SAMPLES

            if int(self.params["n_samples"]) < MIN_SAMPLES:
                raise ValueError(f"--samples {self.params['n_samples']}: at least {MIN_SAMPLES} rows per round "
                                 "(0: the paper's N)")
            return int(self.params["n_samples"])
        from ..weak.stump import sample_size

        return sample_size(data.d, float(self.params.get("beta", 0.2)), float(self.params.get("sample_factor", 1.0)))

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
        right, wrong = self.learner.error_terms(stump, self.w)
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
        """Multiply weights, add to the scores; return the global training error count and this rank's largest weight."""
        self._version += 1
        errors, wmax = self.learner.update(self.w, self.margin, stump, factor_correct, factor_wrong, coef)
        if self._rows is not None:
            errors = self._errors_on(self._rows)
        return int(self.proto.reduce_counts(np.array([errors]))[0]), wmax

    def _errors_on(self, rows: np.ndarray) -> int:
        """This rank's training errors among ``rows`` (the ensemble so far; ties as the model breaks them)."""
        from ..model import index_of_scores

        margin = self.margin[rows]
        y = self.data.y[rows]
        if margin.ndim == 2:
            return int(np.count_nonzero(index_of_scores(margin) != y))
        return int(np.count_nonzero(np.where(margin >= 0, 1, -1) != y))

    def n_train(self, data) -> int:
        k = self.params.get("train_domain")
        return int(data.domain_counts[k]) if k is not None else int(data.n_global)
