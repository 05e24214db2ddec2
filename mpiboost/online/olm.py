"""Online multiclass AdaBoost (AdaBoost.OLM, "Ada"; Jung, Goetz and Tewari, 2017), as the authors of the paper
on online agnostic multiclass boosting run it (algorithms/onlineAdaptive_v3.py with ``loss='logistic'``).

The booster's state: the learners' weights alpha (N, start 0) and the hedge
log-weights of the N experts (start equal). With ``l_i`` learner i's class
(0-indexed) and ``s_i = sum_{j < i} alpha_j e_{l_j}`` the weighted votes of
the learners before it, expert i predicts the argmax of ``s_i + alpha_i
e_{l_i}`` (the learners 0..i), a tie drawn uniformly among the tied classes.

Prediction: an expert drawn in proportion to its hedge weight, so
``D = sum_e pi_e U(T_e)``, pi the normalised hedge weights and U(T_e) the
uniform distribution over expert e's tied classes (all k at the start, when
every alpha is 0).

Update, for the revealed label y at stream position t (0-based), with the
alphas of before this example throughout:

* learner 0 learns (x, y) with weight 5; learner i >= 1 with weight
  ``max(1e-10, c_i sum_{l != y} 1 / (1 + exp(s_i[y] - s_i[l])) / (k - 1))``,
  minus the diagonal of the logistic cost matrix
  ``C[r, l] = 1 / (1 + exp(s_r - s_l))`` (off the diagonal; the diagonal is
  minus its row's sum), ``c_i ~ U(10, 200)`` learner i's constant, drawn once
  from the generator keyed by (seed, a fixed tag);
* ``alpha_i <- clip_[-2, 2](alpha_i - eta_t g_i)``, ``eta_t = 2 sqrt(2) /
  ((k - 1) sqrt(t + 1))``, with ``g_i = 1 / (1 + exp(s_i[y] - s_i[l_i] -
  alpha_i))`` when learner i is wrong and ``g_i = -sum_{r != y} 1 / (1 +
  exp(s_i[r] - alpha_i - s_i[y]))`` when it is right;
* every expert e that predicted a wrong class (its tie drawn from the
  example's uniforms) loses 1 from its log-weight (hedge, step 1); the
  log-weights are shifted so that the largest is 0 (the authors normalise
  the weights to sum 1; the distribution is the same and nothing underflows).

Resolutions, read off the authors' code: the costs and the gradients use
the alphas of before the example (their ``predict`` builds the costs, their
``update`` steps every alpha after the weights are set and builds the votes
with the old alphas); their step counts examples from 1 (``num_data`` is
incremented first), hence ``t + 1``; the right learner's gradient is theirs
as written, ``exp(s_r - alpha - s_y)`` (the logistic loss's own derivative
would have ``exp(s_y + alpha - s_r)``); a learner's class is the argmax of its
class probabilities, ties to the first class, as here.
"""
from __future__ import annotations

import math

import numpy as np

from .agnostic import N_LEARNERS
from .base import OnlineBooster, Update
from .mbbm import MIN_WEIGHT, weight_constants

TAG = 0x4F4C4D  # keys the generator of this booster's constants
FIRST_WEIGHT = 5.0
ALPHA_BOUND = 2.0
HEDGE_STEP = 1.0


class OnlineOLM(OnlineBooster):
    """Online multiclass AdaBoost (AdaBoost.OLM; Jung, Goetz & Tewari 2017), as Raman & Tewari 2022 run it.

    Logistic costs, the learners' weights by online gradient descent, and a hedge over the prefix experts (the
    votes of the first i learners). Guarantee (the paper's): adaptive, it needs no edge given in advance, at a
    weaker mistake bound than Online MBBM's. The same predictions on any number of ranks.
    """

    name = "online-olm"
    paper = "Jung, Goetz & Tewari 2017 (AdaBoost.OLM), as Raman & Tewari 2022 run it"
    summary = "online multiclass AdaBoost (AdaBoost.OLM): logistic costs, learner weights by online gradient " \
              "descent, hedge over the prefix experts"
    parameters = (N_LEARNERS,)

    def __init__(self, n_classes, params=None, seed=0):
        super().__init__(n_classes, params, seed)
        N = self.n_learners
        self.alpha = np.zeros(N)
        self.log_weights = np.zeros(N)
        self.consts = weight_constants(self.seed, TAG, N)
        self._eye = np.eye(self.n_classes)

    def votes(self, labels: np.ndarray) -> np.ndarray:
        """(N + 1, k): row i the weighted votes of learners 0..i-1 (row 0 zeros, row N all learners)."""
        S = np.zeros((self.n_learners + 1, self.n_classes))
        np.cumsum(self._eye[labels] * self.alpha[:, None], axis=0, out=S[1:])
        return S

    @staticmethod
    def ties(S: np.ndarray) -> np.ndarray:
        """(rows, k) bool: each row's classes of the largest vote."""
        return S == S.max(axis=1, keepdims=True)

    def distribution(self, labels, t):
        tied = self.ties(self.votes(np.asarray(labels))[1:])
        pi = np.exp(self.log_weights - self.log_weights.max())
        pi /= pi.sum()
        return (pi / tied.sum(axis=1)) @ tied

    def update(self, labels, y, t, rng):
        labels = np.asarray(labels)
        N, k, y = self.n_learners, self.n_classes, int(y)
        S = self.votes(labels)
        before, alpha = S[:-1], self.alpha
        # the experts' predictions, a tie drawn uniformly
        tied = self.ties(S[1:])
        pick = np.minimum((rng.random(N) * tied.sum(axis=1)).astype(np.int64), tied.sum(axis=1) - 1)
        experts = np.argmax(np.cumsum(tied, axis=1) > pick[:, None], axis=1)
        with np.errstate(over="ignore"):
            sy = before[:, y]
            other = np.ones(k, dtype=bool)
            other[y] = False
            # the sample weights: minus the cost matrix's diagonal at y
            cost = (1.0 / (1.0 + np.exp(sy[:, None] - before[:, other]))).sum(axis=1)
            weights = np.maximum(MIN_WEIGHT, self.consts * cost / (k - 1))
            weights[0] = FIRST_WEIGHT
            # the alphas' gradients, then one projected step
            rows = np.arange(N)
            right = labels == y
            g_right = -(1.0 / (1.0 + np.exp(before[:, other] - (alpha[:, None] + sy[:, None])))).sum(axis=1)
            g_wrong = 1.0 / (1.0 + np.exp(sy - before[rows, labels] - alpha))
        grad = np.where(right, g_right, g_wrong)
        eta = 2.0 * math.sqrt(2.0) / ((k - 1) * math.sqrt(t + 1))
        self.alpha = np.clip(alpha - eta * grad, -ALPHA_BOUND, ALPHA_BOUND)
        self.log_weights = self.log_weights - HEDGE_STEP * (experts != y)
        self.log_weights -= self.log_weights.max()
        return Update(labels=np.full(N, y, dtype=np.int32), weights=weights)

    def get_state(self):
        return {"alpha": self.alpha.copy(), "log_weights": self.log_weights.copy()}

    def set_state(self, state):
        for name in ("alpha", "log_weights"):
            value = np.asarray(state[name], dtype=np.float64)
            if value.shape != (self.n_learners,) or not np.all(np.isfinite(value)):
                raise ValueError(f"{self.name}: {name} must be {self.n_learners} finite values, got {value.shape}")
        extra = sorted(set(state) - {"alpha", "log_weights"})
        if extra:
            raise ValueError(f"{self.name} keeps no {', '.join(extra)}")
        self.alpha = np.array(state["alpha"], dtype=np.float64)
        self.log_weights = np.array(state["log_weights"], dtype=np.float64)
