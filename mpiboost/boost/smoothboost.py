"""Distributed SmoothBoost (Chen, Balcan, Chau, AISTATS 2016).

Each round: choose h_t for the current distribution D (sample or histogram
learner); shrink the weight of every correctly classified row by (1 - gamma)
and normalize in the same pass (the new total (1 - gamma) W_right + W_wrong
follows from the exact masses of the rows h_t gets right and wrong); project
onto the epsilon-smooth
distributions {D : max_i D(i) <= 1/(epsilon n)} (KL projection, the
distributed search of :meth:`Protocol.smooth_projection`). No row ever holds
more than 1/(epsilon n) of the mass, which is what makes the algorithm
tolerate label noise.

Weights are stored per *cell* of rows with the same history by default
(:mod:`.cells`: the same arithmetic, far less work per row); the store falls
back to per-row weights and the distributed projection primitive when the
cells grow too many (or with ``weight_store="rows"``).

Output: the unweighted majority vote sign(sum_t h_t) (the paper).

An alpha-weighted vote (``vote="weighted"``, alpha_t = 1/2 ln((1-e_t)/e_t))
was offered and is removed. Once the weak learner's edge under the smooth
distributions is spent, SmoothBoost falls into a two-round cycle: h, then
-h, with the weights back where they were. The majority vote adds h - h = 0
per cycle and stays put; the weighted vote adds (alpha(e_h) - alpha(e_-h)) h,
a fixed drift towards one stump, and after a few hundred rounds that stump
is the whole model (on a9a with 10% noise: 63% test error after 300
rounds). Its best round, chosen on validation data, was still worse than the
majority vote on every data set measured.

Defaults (chosen by validation over a9a, ijcnn1, cod-rna and Long-Servedio,
all with 10% of the training labels flipped; docs/results.md): epsilon = 0.2
and gamma from the number of rounds T, gamma_ref (T_ref / T)^0.6, at most the
paper's (1/2 - beta)/2. A fixed gamma suits one T only: 0.02 was the best stump value at
T = 1,000, but at T = 100 it leaves the weights too close to uniform (on
Long-Servedio at 1% noise, --epsilon 0.1, a vote no better than a coin), and
the paper's 0.15 spends the edge in ~20 rounds of a long run. Trees, whose
edge is larger, start from 0.05 at T = 100.
On clean labels the cap only costs accuracy and AdaBoost tests better; the training driver's
noise check (``noise_check="holdout"``, the default; :mod:`mpiboost.driver.selection.noise_check`) compares the two
on held-out rows first and trains AdaBoost instead when it wins there by more than a standard error.
``epsilon="auto"`` tries 0.1, 0.2, 0.4, 0.6 on
validation data (Long-Servedio at 10% noise needs 0.6, which costs real data
up to 7 points).
"""
from __future__ import annotations

from dataclasses import replace

from typing import Mapping, Optional

import numpy as np

from .base import Hypothesis, Param
from .cells import CellWeights, project
from .losses import grows_trees
from .params import (BETA, ENTITY_BALANCED, N_SAMPLES, SAMPLE_FACTOR, SEARCH, TRAIN_DOMAIN, TREE, WEAK_LEARNER,
                     trees_by_default)
from .reweighting import Reweighting


def default_gamma(beta: float) -> float:
    """gamma = 1/2 (1/2 - beta), the paper's choice for a beta-agnostic learner (0.15 for beta = 0.2)."""
    return 0.5 * (0.5 - beta)


EPSILON_GRID = (0.1, 0.2, 0.4, 0.6)
NOISE_CHECK = ("holdout", "off")  # --noise-check: the driver's check against AdaBoost (mpiboost.driver.selection.noise_check), or none
# The default shrink follows the rounds T asked: gamma(T) = gamma_ref (T_ref / T)^0.6. A shrink gamma
# spends the weak learner's edge in about T* ~ gamma^-1.65 rounds (measured: the best validation rounds
# of the stump runs at 10% noise, gamma 0.02 / 0.05 / 0.15 -> rounds ~760 / 220 / 28 on a9a, ijcnn1,
# cod-rna; the paper's bound is O(1 / (epsilon gamma^2))), so a run of T rounds moves its weights by
# T^-0.6 per round. The reference points were validated: stumps 0.02 at T = 1,000, trees 0.05 at T = 100
# (10% and 30% flips on a9a, ijcnn1, cod-rna; a larger tree shrink wins at 10% and loses up to 3 points at 30%).
GAMMA_REF = {"stump": (0.02, 1000), "tree": (0.05, 100)}
GAMMA_EXPONENT = 0.6
# Without a number of rounds (the algorithm made directly, not by the driver): the values validated for
# long runs at 10% noise (stumps at T = 1,000, trees at T = 500).
GAMMA_STUMP, GAMMA_TREE = 0.02, 0.1


def gamma_for_rounds(rounds: int, beta: float, weak_learner: str = "stump") -> float:
    """The default shrink for ``rounds`` rounds: gamma_ref (T_ref / T)^0.6, at most the paper's (1/2 - beta)/2."""
    ref, t_ref = GAMMA_REF["tree" if weak_learner == "tree" else "stump"]
    gamma = ref * (t_ref / max(1, int(rounds))) ** GAMMA_EXPONENT
    cap = default_gamma(beta)
    return min(cap, gamma) if cap > 0 else min(gamma, 0.5)
VOTE_REMOVED = (
    "--vote weighted was removed: once the edge is spent SmoothBoost alternates h and -h, and the alpha-weighted "
    "vote drifts to a single stump (worse than chance on noisy data); the majority vote is the only vote "
    "(models saved with the weighted vote still load and predict as before)"
)


class SmoothBoost(Reweighting):
    """Distributed SmoothBoost: boosting whose distributions stay smooth, so mislabelled rows cannot take over.

    Paper: Chen, Balcan & Chau, AISTATS 2016, distributing Servedio's SmoothBoost (JMLR 2003). Each round the
    weights of the rows ``h_t`` gets right shrink by ``1 - gamma`` and the distribution is projected onto
    ``{D : D(i) <= p(i) / epsilon}`` (``p`` the start: uniform, or the sample weights) with the protocol's
    median-based smooth projection. Guarantee (the papers'): with weak learners of advantage ``gamma``, the
    training error falls below ``epsilon`` within ``O(1 / (epsilon gamma^2))`` rounds while no row ever weighs
    more than ``1 / (epsilon n)``, which is what bounds the damage of a fraction of flipped labels. mpiboost's:
    the same model bit for bit on any number of ranks (exact reductions, a projection path independent of the
    split of the rows); the driver's noise check may train AdaBoost instead where held-out rows show clean
    labels (:mod:`mpiboost.driver.selection.noise_check`).
    """

    name = "smoothboost"
    paper = "Chen, Balcan & Chau, AISTATS 2016 (distributed SmoothBoost; Servedio 2003)"
    summary = "SmoothBoost: weights projected onto epsilon-smooth distributions, tolerant of label noise"
    tasks = ("binary", "multi-domain")
    vote = "majority"
    weak_learners = ("stump", "tree")
    weight_rule = ("the first distribution is the weights' p, and the smooth distributions are those with "
                   "D(i) <= p(i) / epsilon (the cap relative to the weights; with equal weights 1/(epsilon n)); "
                   "integer weights give the repeated rows' stumps")
    parameters = (
        *trees_by_default((WEAK_LEARNER,)),  # trees validate better (docs/results/trees.md); the paper: stumps
        replace(SEARCH, paper="sample"),  # the paper's protocol: a weighted sample of rows per round
        Param("epsilon", float, 0.2,
              "smoothness: no row holds more than 1/(epsilon n) of the weight; auto: the best of "
              f"{', '.join(map(str, EPSILON_GRID))} on validation data (--valid or --valid-fraction; the rounds "
              "are chosen too); the paper: 0.1",
              low=0.0, high=1.0, low_open=True, grid=EPSILON_GRID, metavar="EPSILON|auto", paper=0.1),
        BETA,
        Param("gamma", float, None,
              "weight shrink of correctly classified rows (default from the rounds T: 0.02 (1000/T)^0.6 with "
              "stumps, 0.05 (100/T)^0.6 with trees, at most the paper's (1/2 - beta)/2, 0.15 for beta 0.2; "
              "a resumed run keeps its checkpoint's)",
              low=0.0, high=1.0, low_open=True, high_open=True),
        Param("noise_check", str, "holdout",
              "holdout (the default): SmoothBoost and AdaBoost with the same weak learner and rounds are trained "
              "on 80% of the training rows (or on them all when the run has validation rows) and scored on the "
              "other 20% (or the validation rows); AdaBoost is the model when it has fewer held-out errors (with "
              "--valid-metric auc: a higher held-out AUC; logloss still compares errors) by more than one "
              "standard error of the paired differences (clean labels, where the weight cap only costs "
              "accuracy), and the one chosen is trained on every training row; no check below 1,000 training "
              "rows or with --epsilon auto; off: SmoothBoost as asked (the paper)",
              choices=NOISE_CHECK, origin="beyond", paper="off"),
        Param("vote", str, "majority", "the final vote: the unweighted majority (the paper; the only one: "
              "--vote weighted was removed, see docs/results.md)"),
        Param("weight_store", str, "cells",
              "weights stored per cell of rows with the same history (fast) or per row; the same model",
              choices=("cells", "rows")),
        Param("max_cells", int, None, "cells before switching to per-row weights (default max(1024, min(65536, n/64)))",
              low=1, cli=False),
        N_SAMPLES,
        SAMPLE_FACTOR,
        *TREE,
        TRAIN_DOMAIN,
        ENTITY_BALANCED,
    )

    @classmethod
    def check_params(cls, params: dict, given) -> None:
        if params["vote"] == "weighted":
            raise ValueError(VOTE_REMOVED)
        if params["vote"] != "majority":
            raise ValueError(f"--vote {params['vote']!r}: smoothboost's only vote is majority")

    @classmethod
    def defaults_for_rounds(cls, params: Mapping, rounds: int) -> dict:
        try:
            beta = 0.2 if params.get("beta") is None else float(params["beta"])
        except (TypeError, ValueError):
            return {}
        if not 0.0 < beta < 1.0:
            return {}  # out of range: the declared check names the option
        if params.get("preset") == "paper":
            return {"gamma": 0.5 * (0.5 - beta)}  # the paper's gamma = (1/2 - beta)/2: 0.15 at beta 0.2
        return {"gamma": gamma_for_rounds(rounds, beta, str(cls.weak_learner_of(params)))}

    def __init__(self, params=None) -> None:
        super().__init__(params)
        if self.params["epsilon"] == "auto":
            raise ValueError("--epsilon auto is chosen by the training driver (mpiboost.driver.batch.train), "
                             "not by the algorithm")
        self.epsilon = float(self.params["epsilon"])
        if self.params["gamma"] is None:
            # Made without the driver (which passes gamma_for_rounds): the values validated at 10% label
            # noise for long runs; trees reach their edge faster than stumps and need a larger shrink.
            self.params["gamma"] = GAMMA_TREE if grows_trees(self.params) else GAMMA_STUMP
        self.gamma = float(self.params["gamma"])

    def chance_hint(self, rounds: int) -> str:
        """What to try when the vote ends no better than chance (the training driver's warning)."""
        return (f"SmoothBoost's shrink gamma = {self.gamma:g} may be too small for {rounds}"
                f" rounds (the paper's (1/2 - beta)/2 = {default_gamma(float(self.params['beta'])):g}, more --rounds, "
                "or --valid-fraction 0.2 with --best-round)")

    def setup(self, data, proto, seed: int = 0) -> None:
        super().setup(data, proto, seed)
        self.cap = 1.0 / (self.epsilon * data.n_global)
        self.cells: Optional[CellWeights] = None
        # Sample weights: the smooth distributions are those within 1/epsilon of the weights' own
        # distribution, D(i) <= base(i) / epsilon (Servedio's smoothness relative to the sampling
        # distribution); rows of one history no longer share a weight, so the weights are per row.
        self.base = None if getattr(data, "weight", None) is None else self.w.copy()
        store = self.params["weight_store"]
        per_row = self.base is not None or self.params.get("entity_balanced") or \
            self.params.get("train_domain") is not None
        if store == "cells" and not per_row:
            self.cells = CellWeights(data.n_local, data.n_global, proto, 1.0 / data.n_global)
            self.w = None  # the cells hold the weights
            # Cells pay off while they are far fewer than rows: beyond that the
            # per-round count reduction and table work cost more than per-row
            # weights do.
            self.max_cells = int(self.params["max_cells"] or max(1024, min(1 << 16, data.n_global // 64)))

    # ---------------------------------------------------------------- cells
    def choose(self, t: int):
        if self.cells is None:
            return super().choose(t)
        if not hasattr(self.learner, "units"):  # a tree learner takes the rows' weights
            return self.learner.fit(self.cells.row_weights(), self.rng(t))
        units = self.learner.units
        if self.learner.mode == "sample":
            total = self.cells.fill_cumsum(units)
        else:
            total = self.cells.fill_signed(self.data.y, units)
        return self.learner.fit_units(total, self.rng(t))

    def outcomes(self, stump) -> np.ndarray:
        """Global rows per (cell, right/wrong) of ``stump``, computed once per round."""
        key = ("outcomes", stump, self._version)
        if self._masses_key != key:
            self._outcomes = self.cells.outcomes(stump.column(self.data.cols), self.data.y, stump.args())
            self._masses_key = key
        return self._outcomes

    def masses(self, stump) -> tuple[float, float]:
        if self.cells is None:
            return super().masses(stump)
        return self.cells.masses(self.outcomes(stump))

    # ---------------------------------------------------------------- rounds
    def select(self, t: int) -> Optional[Hypothesis]:
        stump, err, metrics = self.choose_and_rate(t)
        return Hypothesis(stump, 1.0, metrics)

    def apply(self, h: Hypothesis) -> dict:
        right, wrong = self.masses(h.stump)
        shrink = 1.0 - self.gamma
        # The new total is known before the pass, so the pass also normalizes.
        total = shrink * right + wrong
        if self.cells is not None:
            out = self._apply_cells(h, shrink / total, 1.0 / total)
        else:
            out = self._apply_rows(h, shrink / total, 1.0 / total)
        self.model.append(h.stump, h.coef)
        return out

    def _apply_rows(self, h: Hypothesis, f_right: float, f_wrong: float) -> dict:
        errors, local_max = self.update_rows(h.stump, f_right, f_wrong, h.coef)
        if self.base is not None:
            info = self.proto.relative_smooth_projection(self.w, self.base, 1.0 / self.epsilon)
            return {"train_errors": errors, "clipped": info.clipped, "projection_iterations": info.iterations}
        wmax = self.proto.reduce_max(local_max)
        info = self.proto.smooth_projection(self.w, self.cap, wmax=wmax)
        if info.clipped:
            wmax = self.cap
        return {
            "train_errors": errors,
            "clipped": info.clipped,
            "projection_iterations": info.iterations,
            "max_weight_eps_n": wmax * self.epsilon * self.data.n_global,
        }

    def _apply_cells(self, h: Hypothesis, f_right: float, f_wrong: float) -> dict:
        from .._ext import _cells

        cells = self.cells
        outcomes = self.outcomes(h.stump)
        new = np.stack([cells.values * f_right, cells.values * f_wrong], axis=1)
        table = cells.rebuild(new, outcomes)
        values, clipped, _ = project(cells.values, cells.counts, self.cap)
        cells.values = values
        merged = cells.merge_equal()
        if merged is not None:
            table = merged[table]
        self._version += 1
        errors = _cells.move_rows(
            cells.cell, self.margin, h.stump.column(self.data.cols), self.data.y, *h.stump.args(),
            np.ascontiguousarray(table), h.coef,
        )
        errors = int(self.proto.reduce_counts(np.array([errors]))[0])
        wmax = float(cells.values[cells.counts > 0].max())
        n_cells = cells.n_cells
        if n_cells > self.max_cells:
            self.w = cells.row_weights()  # switch to per-row weights from here on
            self.cells = None
        return {
            "train_errors": errors,
            "clipped": clipped,
            "cells": n_cells,
            "max_weight_eps_n": wmax * self.epsilon * self.data.n_global,
        }
