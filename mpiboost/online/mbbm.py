"""Online boost-by-majority (Online MBBM, "Opt"; Jung, Goetz and Tewari, 2017), as the authors of the paper
on online agnostic multiclass boosting run it (algorithms/onlineAdaptive_v3.py with ``loss='zero_one'``).

Every learner's weight alpha_i is 1, so the experts (the prefix votes) are
vote counts and the prediction is the last expert, the plain majority vote
of all N learners: ``D`` is uniform over the classes of the most votes (the
authors' code draws among tied classes at random; the argmax of D is the
lowest of them).

Update, for the revealed label y: with ``s_i`` the vote counts of learners
0..i-1 (0-indexed, this example's cached classes), learner i learns (x, y)
with weight

    w_i = max(1e-10, 0.1 c_i C_i[y] / (k - 1)),
    C_i[y] = sum_l phi_{N-i}(s_i + e_l; y) - k phi_{N-i}(s_i + e_y; y),

where ``c_i ~ U(10, 200)`` is learner i's constant (drawn once from the
generator keyed by (seed, a fixed tag)) and ``phi_n(v; y)`` is the potential
of the biased-uniform random walk ``u_gamma = (1 - gamma)/k 1 + gamma e_y``:
the probability that after n more steps of it, added to the counts v, the
class y has no more counts than some other class (a tie is an error). The
other classes are exchangeable, so a potential's key is (n, v_y, the other
counts sorted), and it is a Monte-Carlo estimate over M draws of the walk
(``mc_draws``, 100, as the authors), made one of two ways (``potentials``):

``shared`` (the default)
    one table of M walks per horizon n, drawn once from a generator keyed
    by (seed, tag, n) (the memo), serves every state of that horizon: the
    estimate of a key is the share of the table's walks that end in an
    error from it, so every learner's ``C_i[y]`` comes out of a few array
    operations per example (under 0.5 ms at N = 100, k = 10). The estimates
    of different states of a horizon are made from the same walks (common
    random numbers): each is an M-draw estimate as the authors', but their
    differences, which make the weights, are less noisy;
``independent``
    M fresh walks per key, from a Philox generator keyed by a hash of (seed,
    tag, key), memoised in a dict, as the authors' estimator (their draws
    are fresh per key too, from the global generator); ``C_i[y]`` is
    memoised under (n, s_y, the other counts sorted). Some 3 to 40 ms per example:
    the keys hardly repeat (some 30 000 on balance-scale's 625 examples,
    250 000 on yeast's 1484).

Both are deterministic functions of the seed and the key, whatever the order
in which keys are met, so the run is the same on any number of ranks. The
booster keeps no state across examples (the memo and the tables are caches).

Resolutions, read off the authors' code:

* the horizon is ``N - i`` for the 0-indexed learner i (``num_wls - i`` in
  their ``compute_cost``), though ``s_i + e_l`` already holds learner i's
  vote (one step more than the theory's ``N - i - 1``, which their unused
  ``compute_cost_v2`` has);
* a weight that is not positive (the potentials' difference is 0 once the
  vote is decided, or negative by Monte-Carlo noise) becomes 1e-10 (their
  ``max(1e-10, ret)``): the learner still learns the example, with a
  negligible weight;
* the learners' classes: their argmax takes the first of tied classes, as
  here.
"""
from __future__ import annotations

import hashlib

import numpy as np

from ..param import Param
from .agnostic import N_LEARNERS
from .base import OnlineBooster, Update

TAG = 0x4D42424D  # keys the generators of this booster's constants and Monte-Carlo draws
WEIGHT_LOW, WEIGHT_HIGH = 10.0, 200.0
MIN_WEIGHT = 1e-10
POTENTIALS = ("shared", "independent")

GAMMA = Param("gamma", float, 0.1, "the edge gamma of the biased-uniform random walk (1 - gamma)/k + gamma e_y "
              "whose potentials make the costs", low=0.0, low_open=True, high=1.0)


def weight_constants(seed: int, tag: int, n: int) -> np.ndarray:
    """The learners' constants c_i ~ U(10, 200), from the generator keyed by (seed, tag)."""
    return np.random.default_rng([int(seed), int(tag), 1]).uniform(WEIGHT_LOW, WEIGHT_HIGH, n)


def majority(labels: np.ndarray, k: int) -> np.ndarray:
    """Uniform over the classes of the most votes."""
    votes = np.bincount(labels, minlength=k)
    D = (votes == votes.max()).astype(np.float64)
    return D / D.sum()


class OnlineMBBM(OnlineBooster):
    """Online boost-by-majority (Online MBBM; Jung, Goetz & Tewari 2017), as Raman & Tewari 2022 run it.

    A plain majority vote of the N learners; each learner learns with the weight the boost-by-majority random
    walk's potential gives it. Guarantee (the paper's): the optimal mistake bound of online boosting when the
    weak learners have a known edge. The same predictions on any number of ranks.
    """

    name = "online-mbbm"
    paper = "Jung, Goetz & Tewari 2017 (Online MBBM), as Raman & Tewari 2022 run it"
    summary = "online boost-by-majority (Online MBBM): majority vote, learners weighted by the random walk's " \
              "potentials"
    parameters = (
        N_LEARNERS,
        GAMMA,
        Param("mc_draws", int, 100, "Monte-Carlo draws M of each potential", low=1, high=100_000),
        Param("potentials", str, "shared", "the potentials' Monte-Carlo draws: one table of M draws per horizon, "
              "shared by every state (shared, vectorised) or M fresh draws per state (independent, the authors' "
              "estimator, slower)", choices=POTENTIALS),
    )

    def __init__(self, n_classes, params=None, seed=0):
        super().__init__(n_classes, params, seed)
        k, N = self.n_classes, self.n_learners
        self.gamma = float(self.params["gamma"])
        self.draws = int(self.params["mc_draws"])
        self.walk = np.full(k, (1.0 - self.gamma) / k)
        self.walk[0] += self.gamma  # the label's class first, as in the potentials' keys
        self.consts = weight_constants(self.seed, TAG, N)
        self._scale = 0.1 * self.consts / (k - 1)
        self._horizon = N - np.arange(N)  # learner i's: N - i more steps
        self._potentials: dict = {}
        self._costs: dict = {}
        self._tables = None
        self._dtype = np.int16 if 2 * N + 2 < np.iinfo(np.int16).max else np.int32  # counts <= 2N + 1

    def distribution(self, labels, t):
        return majority(labels, self.n_classes)

    def _generator(self, key: tuple) -> np.random.Generator:
        h = hashlib.blake2b(np.array((self.seed, TAG) + key, dtype=np.int64).tobytes(), digest_size=16)
        return np.random.Generator(np.random.Philox(key=int.from_bytes(h.digest(), "little")))

    def _walks(self, n: int, key: tuple) -> np.ndarray:
        """M draws of n steps of the walk (M, k), the label's class first; the generator keyed by ``key``."""
        return self._generator(key).multinomial(n, self.walk, size=self.draws)

    # -- shared draws: one table per horizon, every learner's costs at once

    def tables(self) -> np.ndarray:
        """(k, N, M): learner i's walks, of its horizon N - i (keyed by (seed, tag, N - i)), class-major."""
        if self._tables is None:
            walks = np.stack([self._walks(int(n), (int(n),)) for n in self._horizon])  # (N, M, k)
            self._tables = np.ascontiguousarray(walks.transpose(2, 0, 1).astype(self._dtype))
        return self._tables

    def shared_costs(self, S: np.ndarray, y: int) -> np.ndarray:
        """C_i[y] for every learner from the prefix counts ``S`` (N, k), with the tables of :meth:`tables`.

        With a draw X, ``A = X_y + s_y`` and ``B_j = X_j + o_j`` (o the other
        counts sorted), s + e_y errs when ``A + 1 <= max B``, and one vote more
        for the class of count o_j (canonically the last of its equal counts,
        j', so that the state stays sorted) errs when ``A <= max B + [B_j' =
        max B]``: the k - 1 of them add up to ``(k - 1) [A <= max B]`` plus,
        where ``A = max B + 1``, the number of j whose j' is at the top.
        """
        N, k = S.shape
        T = self.tables()
        others = np.sort(np.delete(S, y, axis=1), axis=1)
        # run[i, j]: how many of row i's other counts have j as the last of their equal run
        flat = (others + (np.arange(N) * (N + 2))[:, None]).ravel()
        last = np.searchsorted(flat, flat, side="right") - 1
        run = np.bincount(last, minlength=N * (k - 1)).reshape(N, k - 1).T
        A = T[0] + S[:, y, None].astype(self._dtype)
        B = T[1:] + others.T[:, :, None].astype(self._dtype)
        top = B.max(axis=0)
        err_y = np.count_nonzero(A + 1 <= top, axis=1)
        edge = A == top + 1
        at_top = np.count_nonzero((B == top) & edge, axis=2)  # (k - 1, N)
        err_o = (k - 1) * np.count_nonzero(A <= top, axis=1) + (run * at_top).sum(axis=0)
        return (err_o + (1 - k) * err_y) / self.draws

    # -- independent draws: every state its own, memoised

    def potential(self, n: int, state: tuple) -> float:
        """phi_n(state): ``state`` is (the label's count, the other counts sorted), ints; memoised."""
        key = (n,) + state
        value = self._potentials.get(key)
        if value is None:
            x = self._walks(n, key) + np.array(state, dtype=np.int64)
            value = float(np.count_nonzero(x[:, 0] <= x[:, 1:].max(axis=1))) / self.draws
            self._potentials[key] = value
        return value

    def cost(self, n: int, sy: int, others: tuple) -> float:
        """C[y] = sum_l phi_n(s + e_l) - k phi_n(s + e_y), s = (sy, others sorted); memoised."""
        key = (n, sy) + others
        value = self._costs.get(key)
        if value is None:
            k = self.n_classes
            total = (1 - k) * self.potential(n, (sy + 1,) + others)
            for j, v in enumerate(others):
                # one vote more for a class of count v: the same sorted state for every class of that count
                if j + 1 < len(others) and others[j + 1] == v:
                    continue
                count = sum(1 for w in others if w == v)
                total += count * self.potential(n, (sy,) + others[:j] + (v + 1,) + others[j + 1:])
            value = total
            self._costs[key] = value
        return value

    def independent_costs(self, S: np.ndarray, y: int) -> np.ndarray:
        sy = S[:, y].tolist()
        others = np.sort(np.delete(S, y, axis=1), axis=1).tolist()
        horizon = self._horizon.tolist()
        return np.array([self.cost(horizon[i], sy[i], tuple(others[i])) for i in range(self.n_learners)])

    def costs(self, labels: np.ndarray, y: int) -> np.ndarray:
        """C_i[y] for every learner i (their classes ``labels``)."""
        N, k = self.n_learners, self.n_classes
        S = np.zeros((N, k), dtype=np.int64)
        np.cumsum(np.eye(k, dtype=np.int64)[labels[:-1]], axis=0, out=S[1:])
        if self.params["potentials"] == "shared":
            return self.shared_costs(S, y)
        return self.independent_costs(S, y)

    def update(self, labels, y, t, rng):
        weights = np.maximum(MIN_WEIGHT, self._scale * self.costs(np.asarray(labels), int(y)))
        return Update(labels=np.full(self.n_learners, int(y), dtype=np.int32), weights=weights)
