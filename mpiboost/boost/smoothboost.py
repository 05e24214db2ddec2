"""Distributed SmoothBoost (ALGORITHMS §1; Chen, Balcan, Chau, AISTATS 2016).

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

Output: the unweighted majority vote sign(sum_t h_t) (the paper), or with
``vote="weighted"`` sign(sum_t alpha_t h_t), alpha_t = 1/2 ln((1-e_t)/e_t)
for the exact weighted error e_t of h_t under D_t.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .adaboost import ERROR_CLIP
from .base import Hypothesis, StumpBoosting
from .cells import CellWeights, project


def default_gamma(beta: float) -> float:
    """gamma = 1/2 (1/2 - beta), the paper's choice for a beta-agnostic learner."""
    return 0.5 * (0.5 - beta)


class SmoothBoost(StumpBoosting):
    name = "smoothboost"

    def __init__(self, params: dict) -> None:
        super().__init__(params)
        self.vote = "weighted" if params.get("vote", "majority") == "weighted" else "majority"
        self.epsilon = float(params.get("epsilon", 0.1))
        self.gamma = float(params.get("gamma") or default_gamma(float(params.get("beta", 0.2))))
        if not 0 < self.epsilon <= 1:
            raise ValueError(f"epsilon must be in (0, 1], got {self.epsilon}")
        if not 0 < self.gamma < 1:
            raise ValueError(f"gamma must be in (0, 1), got {self.gamma}")

    def setup(self, data, proto, seed: int = 0) -> None:
        super().setup(data, proto, seed)
        self.cap = 1.0 / (self.epsilon * data.n_global)
        self.cells: Optional[CellWeights] = None
        store = self.params.get("weight_store", "cells")
        if store not in ("cells", "rows"):
            raise ValueError(f"weight_store must be 'cells' or 'rows', not {store!r}")
        if store == "cells" and not self.params.get("entity_balanced") and self.params.get("train_domain") is None:
            self.cells = CellWeights(data.n_local, data.n_global, proto, 1.0 / data.n_global)
            self.w = None  # the cells hold the weights
            # Cells pay off while they are far fewer than rows: beyond that the
            # per-round count reduction and table work cost more than per-row
            # weights do.
            self.max_cells = int(self.params.get("max_cells", max(1024, min(1 << 16, data.n_global // 64))))

    # ---------------------------------------------------------------- cells
    def choose(self, t: int):
        if self.cells is None:
            return super().choose(t)
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
            col = stump.column(self.data.cols) if self.data.n_local else np.zeros(0, dtype=np.uint8)
            self._outcomes = self.cells.outcomes(col, self.data.y, stump.args())
            self._masses_key = key
        return self._outcomes

    def masses(self, stump) -> tuple[float, float]:
        if self.cells is None:
            return super().masses(stump)
        return self.cells.masses(self.outcomes(stump))

    # ---------------------------------------------------------------- rounds
    def select(self, t: int) -> Optional[Hypothesis]:
        stump, err, metrics = self.choose_and_rate(t)
        if self.vote == "weighted":
            e = min(max(err, ERROR_CLIP), 1.0 - ERROR_CLIP)
            coef = 0.5 * math.log((1.0 - e) / e)
        else:
            coef = 1.0
        return Hypothesis(stump, coef, metrics)

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
        errors = 0
        self._version += 1
        if self.data.n_local:
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
