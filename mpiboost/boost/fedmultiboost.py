"""FedMultiBoost (Figure 2 of Cortes, Mohri, Storcheus, Suresh, NeurIPS 2021).

The federated variant of MultiBoost: the rows of each domain are split into
*clients* of ``client_size`` consecutive rows (in the global row order, so
the clients do not depend on the ranks). Each round the center samples, per
domain, ``clients_per_round`` clients and ``candidates_per_round`` candidate
stumps from a fixed pool (every feature at every bin boundary). Sampled
clients report only aggregates -- their loss ``sum exp(-y f)`` and, per
candidate, ``beta_{c,r} = sum_i exp(-y_i f) y_i Q(k|x_i) h_r(x_i)`` -- which
the ranks sum exactly. The center estimates each domain's loss from its
sampled clients, picks ``argmax_{k active, r} (sum_c beta_{c,r}) / (sum_c m_c)``
and takes AdaBoost's closed-form step from the pooled weighted error. Every
rank then updates its rows with the broadcast stump.

Communication per round is O(p (s + 2)) numbers, whatever the number of rows
or clients; ``metrics["client_numbers"]`` counts what the sampled clients
would send.

**Trees** (``weak_learner = "tree"``): instead of scoring s sampled stumps, the
sampled clients of each active domain k send the histograms of their rows'
``a_i Q(k|x_i) y_i`` and ``a_i Q(k|x_i)^2`` (and counts), node by node, and
the center grows one tree of -1/+1 leaves per active domain on them
(:class:`mpiboost.weak.tree.TreeGrower` over those rows only); the tree's
``beta`` is the sum over its leaves of ``|gradient sum|`` and the choice and
the step are the stumps' rules. Communication is then a tree's histograms per
active domain (``metrics["tree_bytes"]``), still independent of the clients'
rows.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..weak.stump import Stump
from .base import Hypothesis, Param
from .multiboost import ACTIVE_TOL, LEARNING_RATE, Q_DATA, Q_L2, MultiBoost
from .params import BASELINE_GUARD, TREE, WEAK_LEARNER_TREE_EXACT, trees_by_default


class FedMultiBoost(MultiBoost):
    """FedMultiBoost: MultiBoost's federated variant, in which sampled clients send aggregates only.

    Paper: Cortes, Mohri, Storcheus & Suresh, NeurIPS 2021 (Figure 2). The rows of each domain form clients of
    ``--client-size`` consecutive rows (in the global order, so the clients do not depend on the ranks); each
    round samples clients and candidate stumps, and a client reports only its loss and the candidates' sums,
    never a row. It minimizes the same agnostic loss as MultiBoost on the sampled estimates, so its guarantee is
    MultiBoost's up to the sampling noise. The same model bit for bit on any number of ranks; the baseline guard
    as for MultiBoost.
    """

    name = "fedmultiboost"
    paper = "Cortes, Mohri, Storcheus & Suresh, NeurIPS 2021 (Figure 2)"
    summary = "FedMultiBoost: MultiBoost's federated variant; sampled clients send aggregates only"
    exact_losses = False  # the center only sees the sampled clients' aggregates
    losses = ("exponential",)
    parameters = (
        *trees_by_default((WEAK_LEARNER_TREE_EXACT,)),  # trees validate better; the paper: stumps
        *TREE,
        Param("client_size", int, 100, "rows per client (consecutive rows of a domain)", low=1),
        Param("clients_per_round", int, 10, "clients sampled per domain per round", low=1),
        Param("candidates_per_round", int, 20, "candidate stumps sampled per domain per round", low=1),
        ACTIVE_TOL,
        LEARNING_RATE,
        Q_L2,
        Q_DATA,
        BASELINE_GUARD,
    )

    def __init__(self, params=None) -> None:
        super().__init__(params)
        self.client_size = int(self.params["client_size"])
        self.clients_per_round = int(self.params["clients_per_round"])
        self.candidates_per_round = int(self.params["candidates_per_round"])

    def setup(self, data, proto, seed: int = 0) -> None:
        super().setup(data, proto, seed)
        # Row j of domain k (in the global row order) belongs to client j // client_size.
        local = np.bincount(data.domain, minlength=self.p).astype(np.int64)
        _, before = proto.weight_sums(local)
        position = np.empty(data.n_local, dtype=np.int64)
        for k in range(self.p):
            rows = np.nonzero(data.domain == k)[0]
            position[rows] = before[k] + np.arange(rows.size)
        self.client = position // self.client_size
        self.n_clients = np.ceil(self.m / self.client_size).astype(np.int64)
        nb = self.n_bins
        # The pool: (feature, threshold bin) for every boundary between value bins.
        self.pool = np.array([(j, b) for j in range(data.d) for b in range(int(nb[j]) - 1)], dtype=np.int64).reshape(-1, 2)
        if len(self.pool) == 0:
            raise ValueError("no feature has two value bins: no candidate stumps")

    def select(self, t: int) -> Optional[Hypothesis]:
        rng = np.random.default_rng([self.seed, int(t), 0xFED])
        p, s = self.p, min(self.candidates_per_round, len(self.pool))
        chosen_clients = [
            rng.choice(int(self.n_clients[k]), size=min(self.clients_per_round, int(self.n_clients[k])), replace=False)
            for k in range(p)
        ]
        cands = None if self.use_trees else [self.pool[rng.choice(len(self.pool), size=s, replace=False)]
                                             for k in range(p)]
        sampled = np.zeros(self.data.n_local, dtype=bool)
        for k in range(p):
            sampled |= (self.domain == k) & np.isin(self.client, chosen_clients[k])
        rows = np.nonzero(sampled)[0]
        if self.use_trees:
            return self._select_tree(rows, chosen_clients)
        dom = self.domain[rows]
        a = self.a[rows]
        # group (k, r) for r < s holds beta; (k, s) the loss; (k, s + 1) the row count
        values, groups = [], []
        for k in range(p):
            mine = dom == k
            if not mine.any():
                continue
            ak = a[mine] * self.Q[rows[mine], k] * self.data.y[rows[mine]]
            for r, (j, b) in enumerate(cands[k]):
                h = np.where(self.data.cols[j, rows[mine]] <= b, 1.0, -1.0)
                h[self.data.cols[j, rows[mine]] == 255] = -1.0  # missing values go right
                values.append(ak * h)
                groups.append(np.full(mine.sum(), k * (s + 2) + r, dtype=np.int32))
            values.append(a[mine])
            groups.append(np.full(mine.sum(), k * (s + 2) + s, dtype=np.int32))
            values.append(np.ones(mine.sum()) if self.sw is None else self.sw[rows[mine]])  # the rows' weight
            groups.append(np.full(mine.sum(), k * (s + 2) + s + 1, dtype=np.int32))
        v = np.concatenate(values) if values else np.zeros(0)
        g = np.concatenate(groups) if groups else np.zeros(0, dtype=np.int32)
        sums = self.proto.reduce_stats(v, g, p * (s + 2)).reshape(p, s + 2)
        beta, loss, count = sums[:, :s], sums[:, s], sums[:, s + 1]
        # count: the sampled rows of each domain (their weights' sum, each domain's weights scaled to mean 1)
        per = np.where(count > 0, count, 1.0)
        phi = np.where(count > 0, loss / per, 0.0)
        active = phi >= phi.max() * (1.0 - self.active_tol)
        score = np.where(active[:, None] & (count[:, None] > 0), np.abs(beta) / per[:, None], -1.0)
        k, r = np.unravel_index(int(np.argmax(score)), score.shape)  # ties: lowest domain, then candidate
        if score[k, r] <= 0:
            return None
        j, b = cands[k][r]
        stump = Stump(int(j), int(b), 1 if beta[k, r] >= 0 else -1, False)
        # pooled weighted error of Q(k|.) h on the sampled clients of domain k
        eps = min(max(0.5 * (1.0 - abs(beta[k, r]) / loss[k]), 1e-12), 0.5 - 1e-12)
        eta = 0.5 * math.log((1 - eps) / eps) * self.nu  # nu 1 (stumps' default): the paper's step
        metrics = {
            "domain": int(k),
            "edge": float(score[k, r]),
            "phi_estimate": phi.tolist(),
            "sampled_rows": self._sampled(rows, count),
            "client_numbers": int(sum(len(c) for c in chosen_clients) * (s + 2) + 0),
            "q_train_accuracy": self.clf.train_accuracy,
        }
        return Hypothesis(stump, eta, metrics, domain=int(k))

    def _sampled(self, rows: np.ndarray, count: np.ndarray) -> int:
        """The round's sampled rows over all ranks (``count`` holds them, or their weights with sample weights)."""
        if self.sw is None:
            return int(count.sum())
        return int(self.proto.reduce_counts(np.array([rows.size], dtype=np.int64))[0])

    def _select_tree(self, rows: np.ndarray, chosen_clients: list) -> Optional[Hypothesis]:
        """Trees: each active domain's tree grown on its sampled clients' rows; the best by beta / rows."""
        p = self.p
        dom = self.domain[rows]
        a = self.a[rows]
        sums = self.proto.reduce_stats(np.concatenate([a, np.ones(rows.size) if self.sw is None else self.sw[rows]]),
                                       np.concatenate([dom, dom + p]).astype(np.int32), 2 * p)
        loss, count = sums[:p], sums[p:]
        phi = np.where(count > 0, loss / np.where(count > 0, count, 1.0), 0.0)
        active = phi >= phi.max() * (1.0 - self.active_tol)
        total = max(float(loss.sum()), 1e-300)  # every sampled row's a_i Q / total <= 1 in all
        w = self.a / total
        best, sent0 = None, sum(self.grower.bytes_per_tree)
        for k in range(p):
            if not active[k] or count[k] <= 0:
                continue
            subset = np.ascontiguousarray(rows[dom == k], dtype=np.intp)
            tree, slope = self._grow(self._tree_units(k, w, w), subset)
            beta = slope * total
            score = beta / count[k]
            if best is None or score > best[2]:  # ties: the lowest domain
                best = (tree, k, score, beta)
        if best is None or best[2] <= 0:
            return None
        tree, k, score, beta = best
        eps = min(max(0.5 * (1.0 - beta / loss[k]), 1e-12), 0.5 - 1e-12)
        eta = 0.5 * math.log((1 - eps) / eps) * self.nu  # nu 1 (stumps' default): the paper's step
        metrics = {
            "domain": int(k),
            "edge": float(score),
            "phi_estimate": phi.tolist(),
            "sampled_rows": self._sampled(rows, count),
            "tree_bytes": int(sum(self.grower.bytes_per_tree) - sent0),
            "q_train_accuracy": self.clf.train_accuracy,
        }
        return Hypothesis(tree, eta, metrics, domain=int(k))
