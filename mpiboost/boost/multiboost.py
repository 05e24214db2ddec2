"""MultiBoost (ALGORITHMS §3; Cortes, Mohri, Storcheus, Suresh, NeurIPS 2021).

Boosting over p source domains for the agnostic loss ``F = max_k F_k``,
``F_k = (1/m_k) sum_{i in S_k} exp(-y_i f(x_i))``, with the Q-ensemble
``f(x) = sum_t eta_t Q(k_t|x) h_t(x)``: a stump trained for domain k votes in
proportion to the probability Q(k|x) that x comes from domain k.

Coordinate descent on a maximum stalls where two domains are tied at the top
and every coordinate helps one of them only -- the paper notes it (§3) and
suggests replacing the max by a soft-max. mpiboost descends the soft-max
``G(f) = tau log sum_l exp(F_l / tau)`` at a temperature relative to the
loss, ``tau = temperature * max_l F_l``; ``max F <= G <= max F + tau ln p``.
The default 0.1 was chosen on the multi-source generator: on domains whose
experts conflict, a sharp soft-max (1e-3) makes coordinate descent zig-zag
in tiny steps and the exact max (``temperature = 0``, the paper's rule,
which stops when no coordinate lowers the max) stops at round 1, while 0.1
lowers the worst domain's loss fastest (docs/results.md).
Each round, with ``pi_l`` the soft-max weights of the domains:

1. ``F_k`` of the current ensemble (exact per-domain sums).
2. Candidate domains: those with ``pi_k`` within 1e-3 of the largest (the
   active set). For each candidate k, one histogram over all rows of
   ``pi_l exp(-y f) Q(k|x) y / m_l`` (l = the row's domain): the directional
   derivative of G along ``Q(k|.) h``. With one domain at the top this is the
   paper's ``(Z_k/m_k)(1 - 2 eps_{k,h})`` on S_k. The best stump of the best
   candidate wins.
3. The step ``eta_t = argmin_eta G(f + eta Q(k|.) h)`` by an exact line
   search (each evaluation: exact per-domain sums and their derivatives);
   options: the Lemma-1 bound, AdaBoost's closed form, ``C / sqrt(t)``.

The domain classifier Q is a multinomial logistic regression fitted first
(:mod:`mpiboost.domain_classifier`) and stored in the model.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .._ext import _histogram, _multiboost
from ..model import Model
from ..protocol import Protocol
from ..weak.stump import Stump
from .base import Hypothesis
from .linesearch import exponential_family, minimize_max

STEP_RULES = ("line-search", "lemma1", "closed-form", "sqrt")


def _softmax_of(evaluate, tau: float):
    """Evaluator of ``G = tau log sum_l exp(F_l / tau)`` (one function) from one of the F_l."""

    def soft(eta: float):
        F, F1, F2 = evaluate(eta)
        top = F.max()
        w = np.exp((F - top) / tau)
        z = w.sum()
        pi = w / z
        g1 = float(pi @ F1)
        g2 = float(pi @ F2) + (float(pi @ (F1 * F1)) - g1 * g1) / tau
        return np.array([top + tau * math.log(z)]), np.array([g1]), np.array([g2])

    return soft


class MultiBoost:
    name = "multiboost"
    vote = "q-weighted"
    needs_raw = True

    def __init__(self, params: dict) -> None:
        self.params = dict(params)
        self.step = self.params.get("step", "line-search")
        if self.step not in STEP_RULES:
            raise ValueError(f"step must be one of {', '.join(STEP_RULES)}, not {self.step!r}")
        self.active_tol = float(self.params.get("active_tol", 1e-3))
        self.temperature = float(self.params.get("temperature", 0.1))
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        self.step_c = float(self.params.get("step_c", 1.0))
        if self.params.get("weak_learner", "histogram") != "histogram":
            raise ValueError("MultiBoost chooses its stumps from exact histograms: use --weak-learner histogram")

    # ----------------------------------------------------------------- setup
    def setup(self, data, proto: Protocol, seed: int = 0) -> None:
        if data.X is None:
            raise ValueError("MultiBoost needs the raw features (load with keep_raw=True)")
        self.data, self.proto, self.seed = data, proto, int(seed)
        self.p = int(data.n_domains)
        self.m = np.asarray(data.domain_counts, dtype=np.float64)
        if (self.m == 0).any():
            raise ValueError("every domain needs at least one training row")
        qX, qdom = data.X, data.domain
        if getattr(data, "q_extra", None) is not None:
            qX = np.concatenate([np.asarray(data.X, dtype=np.float64), np.asarray(data.q_extra[0], dtype=np.float64)])
            qdom = np.concatenate([data.domain, data.q_extra[1]])
        self.clf = proto.fit_domain_classifier(qX, qdom, self.p, l2=float(self.params.get("q_l2", 1.0)))
        self.Q = np.ascontiguousarray(self.clf.proba(data.X))
        n = data.n_local
        self.margin = np.zeros(n)  # y f(x)
        self.a = np.ones(n)  # exp(-y f(x))
        self.u = np.zeros(n)
        self.g = np.empty(n, dtype=np.int64)
        self.domain = np.ascontiguousarray(data.domain, dtype=np.int32)
        self.hist = np.zeros((data.d, 256), dtype=np.int64)
        self._binary = _histogram.binary_columns(data.cols)
        self.n_bins = np.ascontiguousarray(data.bins.n_bins, dtype=np.int64)
        self.model = Model(
            algorithm=self.name,
            params=self.params,
            bins=data.bins,
            vote=self.vote,
            feature_names=data.feature_names,
            domain_classifier=self.clf,
            domain_names=data.domain_names,
        )
        self._pending: Optional[tuple] = None

    def finish(self) -> Model:
        return self.model

    # ---------------------------------------------------------------- rounds
    def _phi(self) -> np.ndarray:
        """Exact F_k of the current ensemble, per domain (and the largest row weight)."""
        sums = self.proto.reduce_stats(self.a, self.domain, self.p)
        self.a_max = self.proto.reduce_max(float(self.a.max()) if self.a.size else 0.0)
        return sums / self.m

    def _softmax(self, F: np.ndarray) -> tuple[np.ndarray, float]:
        """Soft-max weights of the domains and the temperature (0: the max, ties shared)."""
        top = float(F.max())
        tau = self.temperature * top
        if tau <= 0:
            w = (F >= top * (1.0 - 1e-12)).astype(np.float64)
        else:
            w = np.exp((F - top) / tau)
        return w / w.sum(), tau

    def select(self, t: int) -> Optional[Hypothesis]:
        phi = self._phi()
        pi, tau = self._softmax(phi)
        candidates = np.nonzero(pi >= pi.max() * self.active_tol)[0]  # the active domains
        scale = pi / self.m
        # Units of 2**-shift: sum_i pi_l a_i Q / m_l <= sum_l pi_l F_l <= max F.
        shift = int(61 - math.ceil(math.log2(max(float(phi.max()), 1e-300))))
        hists = {}
        for k in candidates:
            one = self.hist
            if self.data.n_local:
                _multiboost.domain_units(self.a, self.Q, self.domain, scale, self.data.y, shift, self.g, int(k))
                _histogram.build_histogram(self.data.cols, self.g, one, self._binary)
            else:
                one[...] = 0
            reduced = self.proto.reduce_histograms(one)
            hists[int(k)] = None if reduced is None else reduced.copy()
        packed = None
        if self.proto.is_center:
            best = None
            for k in candidates:
                f, b, left, ml, edge = _histogram.best_stump(hists[int(k)], self.n_bins)
                if best is None or edge > best[4]:
                    best = (f, b, left, ml, edge, int(k))
            packed = [best[0], best[1], best[2], best[3], best[5], best[4] * 2.0**-shift]
        v = self.proto.broadcast_hypothesis(packed, 6)
        stump = Stump(int(v[0]), int(v[1]), int(v[2]), bool(v[3]))
        k = int(v[4])
        metrics = {
            "domain": k,
            "edge": float(v[5]),
            "phi": phi.tolist(),
            "candidates": len(candidates),
            "q_train_accuracy": self.clf.train_accuracy,
        }
        if v[5] <= 0:
            return None  # no stump lowers the objective
        eta, info = self._step(stump, k, t, tau)
        metrics.update(info)
        if eta <= 0:
            return None
        return Hypothesis(stump, eta, metrics, domain=k)

    def _directions(self, stump: Stump, k: int) -> None:
        if self.data.n_local:
            _multiboost.step_directions(
                stump.column(self.data.cols), self.data.y, np.ascontiguousarray(self.Q[:, k]), *stump.args(), self.u
            )
        self._pending = (stump, k)

    def _moments(self, eta: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per-domain F_l(eta), F_l'(eta), F_l''(eta): exact fixed-point sums over the rows.

        Every term is at most ``max_i a_i e^|eta|`` (|u| <= 1), so with n rows
        the sums stay below 2**62 in units of 2**-shift.
        """
        bound = self.a_max * math.exp(abs(eta)) * self.data.n_global
        shift = int(61 - math.ceil(math.log2(max(bound, 1e-300))))
        local = _multiboost.moments(self.a, self.u, self.domain, eta, self.p, shift).ravel() if self.data.n_local else (
            np.zeros(3 * self.p, dtype=np.int64)
        )
        sums = self.proto.reduce_counts(local).reshape(self.p, 3) * 2.0**-shift / self.m[:, None]
        # d/deta of sum a e^{-eta u} is -sum u a e^{-eta u}
        return sums[:, 0], -sums[:, 1], sums[:, 2]

    def _objective(self, tau: float):
        """The line-search evaluator: the per-domain losses (max) or their soft-max."""
        if tau <= 0:
            return self._moments
        return _softmax_of(self._moments, tau)

    def _step(self, stump: Stump, k: int, t: int, tau: float) -> tuple[float, dict]:
        self._directions(stump, k)
        zero = self._moments(0.0)
        F0, F1, _ = zero
        # per-domain weighted error of Q(k|.) h (Lemma 1): eps_l = (1 - E_D[u]) / 2
        eps = np.clip(0.5 * (1.0 + F1 / F0), 1e-12, 1 - 1e-12)
        closed = 0.5 * math.log((1 - eps[k]) / eps[k])
        info = {"eps_domains": eps.tolist()}
        if self.step == "closed-form":
            return closed, info
        if self.step == "sqrt":
            return self.step_c / math.sqrt(t), info
        # The Lemma-1 bound: F_l <= Phi_l [(1 - eps_l) e^-eta + eps_l e^eta].
        w = np.stack([F0 * (1 - eps), F0 * eps], axis=1)
        bound = exponential_family(w, np.tile([1.0, -1.0], (self.p, 1)))
        bound_eta, _ = minimize_max(bound if tau <= 0 else _softmax_of(bound, tau), max(closed, 1e-3))
        if self.step == "lemma1":
            return bound_eta, info
        start = bound_eta if bound_eta > 0 else max(closed, 1e-3)
        # The moments at 0 are known already: the search starts from them.
        at_zero = zero if tau <= 0 else _softmax_of(lambda _eta: zero, tau)(0.0)
        eta, evals = minimize_max(self._objective(tau), start, at_zero=at_zero)
        info["line_search_evals"] = evals + 1
        return eta, info

    def apply(self, h: Hypothesis) -> dict:
        k = h.domain
        if self._pending != (h.stump, k):
            self._directions(h.stump, k)  # a replayed round (resume)
        errors = _multiboost.update(self.margin, self.a, self.u, self.data.y, h.coef) if self.data.n_local else 0
        self._pending = None
        self.model.append(h.stump, h.coef, domain=k)
        errors = int(self.proto.reduce_counts(np.array([errors]))[0])
        return {"train_errors": errors}
