"""MultiBoost (Cortes, Mohri, Storcheus, Suresh, NeurIPS 2021).

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

1. ``F_k`` of the current ensemble (exact per-domain sums; after round 1
   they come with the previous update's error count, in one collective).
2. Candidate domains: those with ``pi_k`` within 1e-3 of the largest (the
   active set). For each candidate k, one histogram over all rows of
   ``pi_l exp(-y f) Q(k|x) y / m_l`` (l = the row's domain): the directional
   derivative of G along ``Q(k|.) h``. With one domain at the top this is the
   paper's ``(Z_k/m_k)(1 - 2 eps_{k,h})`` on S_k. The best stump of the best
   candidate wins. All candidates' histograms come from one pass over the
   columns and travel in one reduction, packed to the bins in use.
3. The step ``eta_t = argmin_eta G(f + eta Q(k|.) h)`` by an exact line
   search; options: the Lemma-1 bound, AdaBoost's closed form,
   ``C / sqrt(t)``.

The line search needs every ``F_l`` and its derivatives at a few trial
steps. Rather than one pass over the rows per trial, the pass that computes
the directions ``u_i = y_i Q(k|x_i) h(x_i)`` also sums the Chebyshev
moments ``C_lj = sum_{i in S_l} a_i T_j(u_i)``, ``j <= K``: since
``e^{-eta u} = I_0(eta) + 2 sum_j I_j(-eta) T_j(u)`` (modified Bessel
functions), ``F_l`` and its derivatives follow for any ``eta`` with a
remainder below ``2 e^eta sum_{j>=K} I_j(eta)`` relative to ``F_l`` (|u| <= 1).
The model answers only within the radius where that bound is under 1e-10;
the order K follows the previous step, and a trial step outside the radius
costs one more pass, which expands around that step. The sums are exact
integers, so every rank searches alike.

The domain classifier Q is a multinomial logistic regression fitted first
(:mod:`mpiboost.domain_classifier`) and stored in the model.

**Shared gates (the default; ``gates = "paper"`` is the paper's set).** In
the paper every stump is gated by one domain, ``Q(k|.) h``. Where Q separates
the domains (Amazon books / dvd / electronics: training accuracy 1.000) a
stump then serves one domain only, so each domain is fitted on its own rows
while AdaBoost-all shares every stump between them; on sentiment words,
which transfer across these domains, that cost 0.035 of worst-domain error
against AdaBoost-all, in every split. A smoother Q (a larger ``q_l2``) shares
more and recovers part of it. The shared set adds the ungated coordinate
``h`` (``Q = 1``: AdaBoost-all's direction, but on the soft-max of the domain
losses) to every round, and a stump gated by the domain of largest soft-max
weight every ``gate_every`` rounds; coordinate descent takes whichever lowers
the objective most. On the sentiment splits it picks the ungated stump in
every round (and matches AdaBoost-all); on conflicting domains
(``synth multisource``) it still takes gated stumps and stays far below
AdaBoost-all. Candidates are one or two histograms a round instead of one per
active domain: ``1 + 1/gate_every`` times AdaBoost-all's bytes. An ungated
stump is stored with domain -1 (weight 1 for every row).

**Q's temperature.** ``q_temperature`` divides Q's logits (1: Q as fitted);
``q_calibrate`` chooses it by least log-loss on 3 held-out folds
(:func:`mpiboost.domain_classifier.calibrate`). On Adult, Sentiment and the
multi-source generator the calibrated Q gave the same errors, so it is off by
default.

**Trees** (``weak_learner = "tree"``). Each candidate gate k grows one
histogram tree of -1/+1 leaves instead of a stump (:class:`mpiboost.weak.tree.TreeGrower`,
exact over the ranks): row i carries the gradient ``w_i Q(k|x_i) y_i`` and
the curvature ``w_i' Q(k|x_i)^2`` with ``w_i = pi_l Phi'_i / m_l`` (``Phi'``
the loss's slope at the row's margin, ``w'`` with its curvature), so a split's
Newton gain is the objective's second-order decrease along ``Q(k|.) h``. With
``tree_leaves = "newton"`` (the default) each leaf takes its own value
``G / (H + l2)`` of its rows' channel sums, divided by the largest |value|
(so every ``|u_i| <= 1``, as the line search's expansions need; the step
sets the tree's scale), and the scores start at the prior (the log-odds of
the class counts, half of it for the exponential loss: round 0, a one-leaf
tree, as LightGBM's ``boost_from_average``). With ``"sign"`` (the paper's
hypothesis class) a leaf's sign is that of its gradient sum. The
candidate's slope, the sum over the leaves of gradient sum x leaf value,
ranks the candidates as the stumps' edges do. The step is the same line
search.

**The logistic Phi** (``loss = "logistic"``): ``F_k = (1/m_k) sum
log(1 + e^{-y f})``, the paper's other convex loss. The row weights are the
slopes ``sigma(-y f)`` (which never exceed the row's loss, so the fixed-point
scale of the exponential case still holds), every trial step of the line
search is one pass over the rows with exact per-domain sums of the loss and
its first two derivatives, and the model's score has calibrated probabilities
``P(y = +1 | x) = sigma(f(x))``.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .._ext import _exact, _histogram, _multiboost
from ..domain_classifier import tempered
from ..protocol import Protocol
from ..weak.stump import Stump
from .base import Algorithm, Hypothesis, Param
from .linesearch import exponential_family, minimize_max
from .losses import grows_trees, loss_of
from .params import BASELINE_GUARD, POOLED_WITH_DOMAIN_ID, TREE, WEAK_LEARNER_TREE_EXACT, trees_by_default

STEP_RULES = ("line-search", "lemma1", "closed-form", "sqrt")
ORDERS = (8, 10, 12, 16, 20, 24)  # Chebyshev orders of the line search's row pass
FIRST_ORDER = 16  # round 1 (no previous step to go by)
EXTRA_ORDER = 12  # a further pass around a trial step outside the covered range
MODEL_TOL = 1e-10  # truncation bound of the model, relative to each F_l (value and slope)


_SERIES_TERMS = 40  # power series of I_j: enough for |x| <= 8 (the largest reach is below 6)
_SERIES: dict = {}


def _bessel_i(x: float, count: int) -> np.ndarray:
    """``I_0(x) .. I_{count-1}(x)`` for real x (``I_j(-x) = (-1)^j I_j(x)``).

    ``I_j(x) = (x/2)^j sum_m (x/2)^{2m} / (m! (m+j)!)``: positive terms, no
    cancellation, so accurate to rounding for the small |x| of the line search.
    """
    if abs(x) > 8.0:
        from scipy.special import iv

        v = iv(np.arange(count), abs(x))
        if x < 0:
            v[1::2] = -v[1::2]
        return v
    cached = _SERIES.get(count)
    if cached is None:
        m = np.arange(_SERIES_TERMS)
        j = np.arange(count)
        lg = np.array([math.lgamma(k + 1.0) for k in range(_SERIES_TERMS + count + 1)])
        table = np.exp(-(lg[m][None, :] + lg[m[None, :] + j[:, None]]))  # 1 / (m! (m+j)!)
        cached = _SERIES[count] = (table, j.astype(np.float64), 2.0 * m.astype(np.float64))
    table, jf, mf = cached
    h = 0.5 * x
    return np.power(h, jf) * (table @ np.power(h, mf))


def _radius(order: int, tol: float = MODEL_TOL) -> float:
    """Largest s with ``2 e^s sum_{j >= order} I_j(s) <= tol``: the model's reach (bisection)."""
    cached = _RADII.get((order, tol))
    if cached is not None:
        return cached
    from scipy.special import iv

    j = np.arange(order, order + 80)
    lo, hi = 0.0, 60.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if 2.0 * math.exp(mid) * float(iv(j, mid).sum()) <= tol:
            lo = mid
        else:
            hi = mid
    _RADII[(order, tol)] = lo
    return lo


_RADII: dict = {}


def _order_for(eta: Optional[float]) -> int:
    """The lowest order whose reach is at least twice ``eta`` (the previous step)."""
    if eta is None or not math.isfinite(eta):
        return FIRST_ORDER
    for k in ORDERS:
        if _radius(k) >= 2.0 * eta:
            return k
    return ORDERS[-1]


class _Expansion:
    """Per-domain Chebyshev moments around ``center``: F_l, F_l', F_l'' within ``radius``."""

    def __init__(self, center: float, moments: np.ndarray, radius: float) -> None:
        self.center, self.radius = float(center), float(radius)
        self.S = moments  # (p, order + 1), already divided by m_l
        self.order = moments.shape[1] - 1

    def evaluate(self, eta: float):
        K = self.order
        I = _bessel_i(self.center - eta, K + 3)  # x = -s, s = eta - center
        # d/ds of the coefficients: I_j' = (I_{j-1} + I_{j+1}) / 2, I_{-j} = I_j.
        c = np.empty((K + 1, 3))
        c[:, 0] = 2.0 * I[: K + 1]
        c[0, 0] = I[0]
        c[1:, 1] = -(I[:K] + I[2 : K + 2])
        c[0, 1] = -I[1]
        c[2:, 2] = 0.5 * (I[: K - 1] + 2.0 * I[2 : K + 1] + I[4 : K + 3])
        c[0, 2] = 0.5 * (I[0] + I[2])
        if K >= 1:
            c[1, 2] = 0.5 * (3.0 * I[1] + I[3])
        out = self.S @ c
        return out[:, 0], out[:, 1], out[:, 2]


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


ACTIVE_TOL = Param(
    "active_tol", float, 1e-3,
    "domains whose soft-max weight is at least this fraction of the largest propose stumps",
    low=0.0, high=1.0, low_open=True,
)
Q_L2 = Param("q_l2", float, 1.0, "L2 penalty of the domain classifier Q(k|x)", low=0.0)
Q_TEMPERATURE = Param(
    "q_temperature", float, 1.0,
    "divide Q's logits by this (1 = Q as fitted, the paper; > 1 softer, < 1 sharper)",
    low=2.0**-4, high=2.0**12,
)
Q_CALIBRATE = Param(
    "q_calibrate", bool, False,
    "choose Q's temperature by least log-loss on 3 held-out folds of the training rows (softens a Q that "
    "separates its training rows better than new ones; three more fits of Q)",
)
GATES = ("shared", "paper")
GATES_PARAM = Param(
    "gates", str, "shared",
    "the hypothesis set: shared = every round an ungated stump (Q = 1, shared by all domains) competes with "
    "a stump gated by the worst domain (every --gate-every rounds); paper = one gated stump per active domain",
    choices=GATES, paper="paper",
)
GATE_EVERY = Param(
    "gate_every", int, 3,
    "with --gates shared: a gated candidate every this many rounds (1 = every round, 0 = never); bytes per "
    "round are (1 + 1/N) times AdaBoost's", low=0, high=10**6, when=("gates", "shared"),
)
GATE_SELECT = Param(
    "gate_select", str, "derivative",
    "with --gates shared: the candidate of largest slope of the objective (derivative, the Gauss-Southwell "
    "rule of the paper's descent) or of largest promised decrease slope^2 / curvature (newton: gates more often)",
    choices=("derivative", "newton"), when=("gates", "shared"),
)
LOSSES = ("exponential", "logistic")
LOSS = Param(
    "loss", str, "exponential",
    "Phi of the domain losses: exponential (the paper's main case) or logistic (log(1 + e^-yf); line search by "
    "passes over the rows, calibrated predict --proba)", choices=LOSSES, origin="beyond")
LEARNING_RATE = Param(
    "learning_rate", float, None,
    "shrinkage nu of every step (nu eta_t): default 1 with stumps (the paper's step), 1/sqrt(T) with trees (0.1 at "
    "T 100: a 31-leaf tree's full step overfits)", low=0.0, high=1.0, low_open=True)
Q_DATA = Param(
    "q_data", list, None,
    "extra rows that only train the domain classifier Q (labels unused; domains matched to the training "
    "domains by name); stored in the model by file name", metavar="U.h5",
)



# Trees' default shrinkage: MultiBoost's exact line search takes the whole step along a 31-leaf tree,
# which on Adult and Sentiment overfits within 100 rounds (docs/results.md), while 0.1 underfits a
# 30-round run. nu = 1/sqrt(T) (0.1 at T = 100, LightGBM's default there) lets the summed step grow as
# sqrt(T); without a number of rounds (the algorithm made directly): 0.1.
TREE_LEARNING_RATE = 0.1


def tree_learning_rate(rounds: int) -> float:
    """The default shrinkage of MultiBoost's tree steps for ``rounds`` rounds: min(1, 1/sqrt(T))."""
    return min(1.0, 1.0 / math.sqrt(max(1, int(rounds))))


class MultiBoost(Algorithm):
    """MultiBoost: boosting for the worst of several source domains, with a Q-ensemble.

    Paper: Cortes, Mohri, Storcheus & Suresh, NeurIPS 2021 (agnostic multi-source learning). It minimizes the
    agnostic loss ``max_k F_k`` (the worst domain's loss, softened by ``--temperature``) by coordinate descent,
    with ``f(x) = sum_t eta_t Q(k_t|x) h_t(x)``: a hypothesis fitted for domain k votes in proportion to the
    probability that x comes from domain k (a distributed multinomial logistic regression). Guarantee (the
    paper's): learning bounds for every mixture of the source domains, governed by the agnostic loss it
    minimizes. mpiboost's: the same model bit for bit on any number of ranks (exact domain losses); with
    validation rows, the baseline guard keeps AdaBoost on the rows pooled where that validates better
    (:mod:`mpiboost.driver.selection.baseline_guard`).
    """

    name = "multiboost"
    paper = "Cortes, Mohri, Storcheus & Suresh, NeurIPS 2021"
    summary = "MultiBoost: a Q-ensemble that boosts the worst domain's loss (agnostic multi-source learning)"
    tasks = ("binary", "multi-domain")
    vote = "q-weighted"
    weight_rule = ("each domain's loss F_k is its weighted mean loss sum w_i L_i / W_k (the trees' gradients and "
                   "curvatures, the line search and the prior too); the domain classifier Q is fitted on the rows "
                   "unweighted (it models where the rows lie, not their labels)")
    needs_raw = True
    exact_losses = True  # each round starts from the exact F_l (and the largest weight)
    weak_learners = ("stump", "tree")
    losses = LOSSES
    # pooled: with trees, Newton-boosted logistic trees (what a LightGBM user runs on the rows pooled), with
    # stumps AdaBoost's
    # pooled-id and per-domain: models whose predictions need each row's domain (logistic trees that may split
    # on it, as LightGBM's on a domain id column; AdaBoost on each domain's rows alone); --baseline-guard
    # domain-free leaves them out, for models that must score rows of unknown domain
    baselines = {"pooled": ("adaboost", {}, "every domain's rows pooled: logistic trees (LightGBM's gbdt) with trees, "
                            "AdaBoost with stumps", {"loss": "logistic", "split_gain": None}),
                 "pooled-id": (*POOLED_WITH_DOMAIN_ID, "every domain's rows pooled, logistic trees that may split "
                               "on the domain (LightGBM's defaults with a domain id column)", {}),
                 "per-domain": ("is-multitask", {"lam": 0.0, "start": "zero", "lam_grid": None, "refine": "on"},
                                "AdaBoost on each domain's rows alone (a model per domain: its predictions need the "
                                "rows' domain)", {})}
    parameters = (
        *trees_by_default((WEAK_LEARNER_TREE_EXACT,)),  # trees validate better; the paper: stumps
        *TREE,
        Param("tree_leaves", str, "newton",
              "trees: each leaf's value, newton (its own G / (H + l2) from its rows' gradient and curvature sums, "
              "as LightGBM's leaves, scaled so the largest is 1; the line search sets the tree's step) or sign "
              "(-1/+1 leaves, the paper's hypothesis class)", choices=("newton", "sign"), when=("weak_learner", "tree")),
        LOSS,
        Param("step", str, "line-search",
              "step size: exact line search on the soft-max of the domain losses, the Lemma-1 bound, "
              "AdaBoost's closed form, or C/sqrt(t)", choices=STEP_RULES),
        Param("step_c", float, 1.0, "C of --step sqrt", low=0.0, low_open=True, high=100.0, when=("step", "sqrt")),
        Param("temperature", float, 0.1,
              "soft-max temperature relative to the loss; 0 = the paper's exact max, which stops when "
              "coordinate descent is stuck", low=0.0),
        LEARNING_RATE,
        GATES_PARAM,
        GATE_EVERY,
        GATE_SELECT,
        ACTIVE_TOL,
        Q_L2,
        Q_TEMPERATURE,
        Q_CALIBRATE,
        Q_DATA,
        BASELINE_GUARD,
    )

    @classmethod
    def defaults_for_rounds(cls, params, rounds: int) -> dict:
        if not cls.has("learning_rate"):
            return {}
        trees = cls.weak_learner_of(params) == "tree"  # the declared default too, not only a given one
        return {"learning_rate": tree_learning_rate(rounds) if trees else 1.0}

    @classmethod
    def check_params(cls, params: dict, given) -> None:
        if params.get("q_calibrate") and given.get("q_temperature") is not None:
            raise ValueError(f"{cls.name}: --q-calibrate chooses Q's temperature; give it or --q-temperature, not both")
        if loss_of(params).newton and params.get("step") in ("lemma1", "closed-form"):
            raise ValueError(f"{cls.name}: --step {params['step']} is a rule of the exponential loss; --loss "
                             "logistic takes --step line-search or sqrt")

    def __init__(self, params=None) -> None:
        super().__init__(params)
        self.gates = self.params.get("gates", "paper")  # FedMultiBoost keeps the paper's hypothesis set
        self.gate_every = int(self.params.get("gate_every", 0))
        self.gate_select = self.params.get("gate_select", "derivative")
        self.step = self.params.get("step", "closed-form")
        self.active_tol = float(self.params["active_tol"])
        self.temperature = float(self.params.get("temperature", 0.0))
        self.step_c = float(self.params.get("step_c", 1.0))
        self.logistic = loss_of(self.params).newton
        self.use_trees = grows_trees(self.params)
        self.nu = 1.0  # FedMultiBoost keeps the paper's step
        if self.has("learning_rate"):
            if self.params.get("learning_rate") is None:
                self.params["learning_rate"] = TREE_LEARNING_RATE if self.use_trees else 1.0
            self.nu = float(self.params["learning_rate"])

    # ----------------------------------------------------------------- setup
    def check_data(self, data) -> None:
        if data.X is None:
            raise ValueError(f"{self.name} needs the raw features (load with keep_raw=True)")
        empty = [k for k, m in enumerate(data.domain_counts) if m == 0]
        if empty:
            names = data.domain_names or []
            raise ValueError(f"domain {names[empty[0]] if empty[0] < len(names) else empty[0]!r} has no "
                             f"training rows: {self.name} needs every domain to have some")

    def setup(self, data, proto: Protocol, seed: int = 0) -> None:
        self.check_data(data)
        self.data, self.proto, self.seed = data, proto, int(seed)
        self.p = int(data.n_domains)
        self.m = np.asarray(data.domain_counts, dtype=np.float64)
        qX, qdom = data.X, data.domain
        extra = data.extra.get("q_data")
        if extra is not None:
            qX = np.concatenate([np.asarray(data.X, dtype=np.float64), np.asarray(extra[0], dtype=np.float64)])
            qdom = np.concatenate([data.domain, extra[1]])
        l2 = float(self.params.get("q_l2", 1.0))
        self.clf = proto.fit_domain_classifier(qX, qdom, self.p, l2=l2)
        temperature = self.params.get("q_temperature", 1.0)  # FedMultiBoost: Q as fitted
        self.q_losses = None
        if self.params.get("q_calibrate"):
            ids = data.start + np.arange(data.n_local, dtype=np.int64)
            temperature, self.q_losses = proto.calibrate_domain_classifier(
                data.X, data.domain, ids, self.p, l2=l2, extra=extra)
        if temperature != 1.0:
            self.clf = tempered(self.clf, float(temperature))
        # Q(k|x) of every row, stored domain-major (p, n): each pass reads the columns it needs.
        # With shared gates a (p+1)-th row of ones is the ungated candidate's "Q": the kernels
        # index QT by candidate, so candidate p is a stump that votes on every row alike.
        Q = self.clf.proba(data.X)
        rows = self.p + 1 if self.gates == "shared" else self.p
        self.QT = np.ones((rows, data.n_local))
        self.QT[: self.p] = Q.T
        self.Q = self.QT.T
        n = data.n_local
        self.margin = np.zeros(n)  # y f(x)
        self.sw = self._sample_weights(data, proto)
        # exp(-y f(x)), the loss of a row and its weight; the logistic loss's weight is its slope sigma(-y f)
        # (each times the row's sample weight, when the data have them)
        self.a = np.full(n, 0.5) if self.logistic else np.ones(n)
        self.a_max = 0.5 if self.logistic else 1.0  # the largest a_i over all ranks
        if self.sw is not None:
            self.a *= self.sw
            self.a_max *= proto.reduce_max(float(self.sw.max()) if n else 0.0)
        self.u = np.zeros(n)
        self.domain = np.ascontiguousarray(data.domain, dtype=np.int32)
        self._binary = _histogram.binary_columns(data.cols)
        self.n_bins = np.ascontiguousarray(data.bins.n_bins, dtype=np.int64)
        self.model = self.new_model(data, domain_classifier=self.clf, link=loss_of(self.params).link)
        self.grower = None
        if self.use_trees:
            from ..weak.tree import TreeGrower, TreeSpec

            self.grower = TreeGrower(TreeSpec.from_params(self.params), proto, data.cols, self.n_bins)
        self.start_from_prior()
        self._pending: Optional[tuple] = None
        self._next_phi: Optional[np.ndarray] = None
        self._hists: dict = {}  # candidates -> this rank's histograms (the shared set alternates 1 and 2)
        self._last_eta: Optional[float] = None
        self._passes = 0

    def _sample_weights(self, data, proto: Protocol) -> Optional[np.ndarray]:
        """Each row's sample weight scaled to a mean of 1 over its domain, ``w_i m_k / W_k`` (None without
        weights): every ``sum_i a_i / m_k`` below is then the domain's weighted mean loss ``sum w_i loss_i / W_k``.
        ``W_k`` are exact sums, so the scale is the same on any number of ranks."""
        sw = getattr(data, "weight", None)
        if sw is None:
            return None
        sw = np.ascontiguousarray(sw, dtype=np.float64)
        sums = proto.reduce_terms(list(_exact.grouped_partials(sw, np.ascontiguousarray(data.domain, dtype=np.int32),
                                                                self.p)))
        empty = [k for k in range(self.p) if self.m[k] > 0 and not sums[k] > 0]
        if empty:
            names = data.domain_names or []
            raise ValueError(f"the sample weights of domain "
                             f"{names[empty[0]] if empty[0] < len(names) else empty[0]!r} sum to 0")
        return np.ascontiguousarray((self.m / np.where(sums > 0, sums, 1.0))[data.domain] * sw)

    def start_from_prior(self) -> None:
        """Trees of Newton leaves start every score at the prior (LightGBM's ``boost_from_average``): the
        log-odds of the global class counts (the logistic loss) or half of it (the exponential loss's
        minimiser), stored as round 0, a one-leaf tree the setup rebuilds. Otherwise the trees' first
        rounds spend the shrunk steps on the intercept."""
        if not (self.use_trees and self.params.get("tree_leaves") == "newton"):
            return
        from ..weak.tree import Tree

        if self.sw is None:
            pos = int(self.proto.reduce_counts(np.array([np.count_nonzero(self.data.y > 0)], dtype=np.int64))[0])
            n = int(self.data.n_global)
            if not 0 < pos < n:
                return
            neg = n - pos
        else:  # the weighted class shares (exact sums), LightGBM's start from the weighted average
            sw = np.asarray(self.data.weight, dtype=np.float64)
            pos, neg = self.proto.reduce_terms([_exact.partials(np.ascontiguousarray(sw[self.data.y > 0])),
                                                _exact.partials(np.ascontiguousarray(sw[self.data.y < 0]))])
            if not (pos > 0 and neg > 0):
                return
        prior = math.log(pos / neg) * (1.0 if self.logistic else 0.5)
        self.model.append(Tree([-1], [0], [0], [-1], [-1], [[prior]], "real"), 1.0, round=0)
        np.multiply(self.data.y, prior, out=self.margin)
        if self.logistic:
            self.a[:] = 0.5 * (1.0 + np.tanh(-0.5 * self.margin))
            self.a_max = 0.5 * (1.0 + math.tanh(0.5 * abs(prior)))
        else:
            self.a[:] = np.exp(-self.margin)
            self.a_max = math.exp(abs(prior))
        if self.sw is not None:
            self.a *= self.sw
            self.a_max *= self.proto.reduce_max(float(self.sw.max()) if self.sw.size else 0.0)

    # ---------------------------------------------------------------- rounds
    def _phi(self) -> np.ndarray:
        """Exact F_k of the current ensemble, per domain (correctly rounded sums).

        After a round, :meth:`apply` has them already (from the same exact
        partials, in the collective that also counts the errors).
        """
        if self._next_phi is not None:
            phi, self._next_phi = self._next_phi, None
            return phi
        sums = self.proto.reduce_stats(self._losses(), self.domain, self.p)
        return sums / self.m

    def _losses(self) -> np.ndarray:
        """Each row's loss Phi(-y f(x)) (times its sample weight)."""
        if not self.logistic:
            return self.a
        loss = np.logaddexp(0.0, -self.margin)
        return loss if self.sw is None else loss * self.sw

    def _curvature_weights(self) -> np.ndarray:
        """Each row's Phi'' at its margin (the exponential loss: its loss; the logistic: s (1 - s)), times its
        sample weight."""
        if not self.logistic:
            return self.a
        if self.sw is None:
            return self.a * (1.0 - self.a)
        s = 0.5 * (1.0 + np.tanh(-0.5 * self.margin))
        return self.sw * s * (1.0 - s)

    def _softmax(self, F: np.ndarray) -> tuple[np.ndarray, float]:
        """Soft-max weights of the domains and the temperature (0: the max, ties shared)."""
        top = float(F.max())
        tau = self.temperature * top
        if tau <= 0:
            w = (F >= top * (1.0 - 1e-12)).astype(np.float64)
        else:
            w = np.exp((F - top) / tau)
        if not w.sum() > 0:  # every loss underflowed (separable rows, huge steps): the domains alike
            w = np.ones_like(F)
        return w / w.sum(), tau

    def select(self, t: int) -> Optional[Hypothesis]:
        phi = self._phi()
        pi, tau = self._softmax(phi)
        candidates = self._candidates(pi, t)
        scale = pi / self.m
        curvature = self._curvatures(candidates, pi, phi)
        if self.use_trees:
            stump, k, edge = self._best_tree(candidates, pi, phi, curvature)
            v = [0, 0, 0, 0, k, edge]
        else:
            stump, v = self._best_stump(candidates, pi, phi, scale, curvature)
            k = int(v[4])
        shared = k == self.p  # the ungated candidate
        metrics = {
            "domain": None if shared else k,
            "gate": "ungated" if shared else "domain",
            "edge": float(v[5]),
            "phi": phi.tolist(),
            "candidates": len(candidates),
            "q_train_accuracy": self.clf.train_accuracy,
            "q_temperature": self.clf.temperature or 1.0,
        }
        if v[5] <= 0:
            return None  # no stump lowers the objective
        eta, info = self._step_logistic(stump, k, t, tau) if self.logistic else self._step(stump, k, t, tau)
        metrics.update(info)
        if eta <= 0:
            return None
        if self.nu != 1.0:
            eta *= self.nu  # 1.0 leaves the paper's step bit for bit
        return Hypothesis(stump, eta, metrics, domain=None if shared else k)

    def _best_stump(self, candidates: np.ndarray, pi: np.ndarray, phi: np.ndarray, scale: np.ndarray,
                    curvature: Optional[np.ndarray]):
        """The candidates' stumps from one pass of histograms: the best one and ``[f, b, left, ml, k, edge]``."""
        # Units of 2**-shift: sum_i pi_l a_i Q / m_l <= sum_l pi_l F_l <= max F.
        shift = int(61 - math.ceil(math.log2(max(float(phi.max()), 1e-300))))
        local = self._hists.get(len(candidates))
        if local is None:
            local = self._hists[len(candidates)] = np.zeros((len(candidates), self.data.d, 256), dtype=np.int64)
        _multiboost.candidate_histograms(
            self.data.cols, self.a, self.QT, self.domain, scale, self.data.y, shift, candidates, local,
            self._binary,
        )
        hists = self.proto.reduce_histograms(local, self.n_bins)
        packed = None
        if self.proto.is_center:
            best = None
            for c, k in enumerate(candidates):
                f, b, left, ml, edge = _histogram.best_stump(hists[c], self.n_bins)
                score = edge if curvature is None else edge * abs(edge) / curvature[c]
                if best is None or score > best[6]:
                    best = (f, b, left, ml, edge, int(k), score)
            packed = [best[0], best[1], best[2], best[3], best[5], best[4] * 2.0**-shift]
        v = self.proto.broadcast_hypothesis(packed, 6)
        return Stump(int(v[0]), int(v[1]), int(v[2]), bool(v[3])), v

    def _tree_units(self, k: int, g: np.ndarray, h: np.ndarray) -> np.ndarray:
        """Fixed-point channels (gradient ``g Q_k y``, curvature ``h Q_k^2``, count) of gate k's tree."""
        from .._ext import _tree
        from ..protocol import FIXED_SHIFT

        q = self.QT[k]
        gh = np.zeros((self.data.n_local, 3), dtype=np.int64)
        gh[:, 2] = 1
        _tree.to_units(np.ascontiguousarray(g * q * self.data.y), FIXED_SHIFT, gh, 0)
        _tree.to_units(np.ascontiguousarray(h * q * q), FIXED_SHIFT, gh, 1, True)
        return gh

    def _grow(self, gh: np.ndarray, subset: Optional[np.ndarray] = None):
        """One tree for the channels ``gh`` and its slope in units: the objective's decrease per unit step
        along it, sum over the leaves of (gradient sum x leaf value).

        Sign leaves: each leaf the sign of its gradient (slope: the sum of |gradient|). Newton leaves: each
        leaf G / (H + l2), then all divided by the largest |value|, so every |u_i| <= 1 as the line search's
        expansions need and the step alone sets the tree's scale; the leaves keep Newton's ratios.
        """
        from ..protocol import FIXED_SHIFT
        from ..weak.tree import sign_leaf

        newton = self.params.get("tree_leaves", "sign") == "newton"
        scale = math.ldexp(1.0, -FIXED_SHIFT) * self.data.n_global  # the mean row weighs about 1
        l2 = float(self.params.get("l2", 0.0))
        grads = []

        def leaf(sums: np.ndarray) -> np.ndarray:
            grads.extend(int(g) for g in sums[:, 0])
            if not newton:
                return sign_leaf(sums)
            G, H = sums[:, :1] * scale, sums[:, 1:2] * scale
            ok = H + l2 > 0
            return np.where(ok, G / np.where(ok, H + l2, 1.0), 0.0)

        tree, _ = self.grower.grow(gh, 1, scale, scale, leaf, "real" if newton else "sign", subset=subset)
        if not newton:
            return tree, math.ldexp(float(sum(abs(g) for g in grads)), -FIXED_SHIFT)
        leaves = np.flatnonzero(tree.feature < 0)
        top = float(np.max(np.abs(tree.value[leaves, 0]))) if leaves.size else 0.0
        if top > 0:
            tree.value[:] = tree.value / top
        # the leaves' gradient sums come in the grower's order of its leaves (ascending node ids)
        slope = float(np.dot(np.asarray(grads, dtype=np.float64), tree.value[leaves, 0]))
        return tree, math.ldexp(slope, -FIXED_SHIFT)

    def _best_tree(self, candidates: np.ndarray, pi: np.ndarray, phi: np.ndarray, curvature: Optional[np.ndarray]):
        """One tree per candidate gate; the best by slope (or promised decrease): (tree, k, slope)."""
        # w_i = pi_l a_i / m_l sums to sum_l pi_l F_l (at most, for the logistic loss): scaled to at most 1
        total = max(float(pi @ phi), 1e-300)
        per_row = (pi / self.m)[self.domain] / total
        g, h = per_row * self.a, per_row * self._curvature_weights()
        best = None
        for c, k in enumerate(candidates):
            tree, slope = self._grow(self._tree_units(int(k), g, h))
            edge = slope * total
            score = edge if curvature is None else edge * abs(edge) / curvature[c]
            if best is None or score > best[3]:
                best = (tree, int(k), edge, score)
        return best[0], best[1], best[2]

    def _curvatures(self, candidates: np.ndarray, pi: np.ndarray, phi: np.ndarray) -> Optional[np.ndarray]:
        """Per candidate, ``sum_i pi_l a_i g(x_i)^2 / m_l`` (g its gate): the objective's curvature along it.

        Newton's decrease along ``g h`` is ``slope^2 / (2 curvature)`` (``h^2 = 1``;
        the soft-max's own curvature, which depends on h, is left out). An
        ungated stump touches every row's weight, a gated one mostly its
        domain's: comparing slopes alone favours the ungated stump even when a
        domain's own stump would lower the objective more. Exact sums, the
        same on every rank; None with the derivative rule.
        """
        if self.gates != "shared" or self.gate_select != "newton" or len(candidates) < 2:
            return None
        out = np.empty(len(candidates))
        for c, k in enumerate(candidates):
            if k == self.p and not self.logistic:
                out[c] = float(pi @ phi)  # g = 1: sum_l pi_l F_l
            else:
                sums = self.proto.reduce_stats(self._curvature_weights() * self.QT[k] ** 2, self.domain, self.p)
                out[c] = float(pi @ (sums / self.m))
        return np.maximum(out, 1e-300)

    def _candidates(self, pi: np.ndarray, t: int) -> np.ndarray:
        """The round's candidate gates: domain indices, and ``p`` for the ungated stump.

        The paper's set is every active domain. The shared set is the ungated
        stump, plus every ``gate_every`` rounds the domain of largest soft-max
        weight (the lowest index among equal ones): coordinate descent then
        takes AdaBoost-all's direction whenever it lowers the objective most,
        and one domain's own stump when that does, for 1 + 1/gate_every
        histograms per round.
        """
        if self.gates == "paper":
            return np.nonzero(pi >= pi.max() * self.active_tol)[0]  # the active domains
        out = [self.p]
        if self.gate_every and (t - 1) % self.gate_every == 0:
            out.append(int(np.argmax(pi)))
        return np.array(out, dtype=np.int64)

    def _gate(self, h: Hypothesis) -> int:
        """The row of QT a hypothesis votes with (``p``: ungated)."""
        return self.p if h.domain is None else int(h.domain)

    def _directions(self, stump: Stump, k: int) -> None:
        if getattr(stump, "kind", None) == "real":  # a tree of Newton leaves: u_i = y_i Q(k|x_i) h(x_i)
            np.multiply(self.QT[k] * self.data.y, stump.values(self.data.cols)[:, 0], out=self.u)
        else:
            _multiboost.step_directions(stump.column(self.data.cols), self.data.y, self.QT[k], *stump.args(),
                                        self.u)
        self._pending = (stump, k)

    def _shift(self, center: float) -> int:
        """Units of 2**-shift for sums of ``a_i e^{-center u_i} T_j(u_i)``.

        Every term is at most ``max_i a_i e^|center|`` (|u|, |T_j| <= 1): with
        n rows the sums stay below 2**61, and each term below 2**50 (the
        kernel's rounding needs less than 2**51).
        """
        term = max(self.a_max * math.exp(abs(center)), 1e-300)
        return int(min(61 - math.ceil(math.log2(term * self.data.n_global)), 50 - math.ceil(math.log2(term))))

    def _expansion(self, center: float, order: int, local: Optional[np.ndarray], shift: int) -> _Expansion:
        """Reduce this rank's Chebyshev moments (int64) into the per-domain model."""
        if local is None:
            local = np.zeros((self.p, order + 1), dtype=np.int64)
        local = np.ascontiguousarray(local[: self.p])  # QT's ungated row is no domain: its lanes are 0
        sums = self.proto.reduce_counts(local.ravel()).reshape(self.p, order + 1)
        return _Expansion(center, sums * 2.0**-shift / self.m[:, None], _radius(order))

    def _expand(self, center: float, order: int) -> _Expansion:
        """One pass over the rows: the model around a trial step ``center``."""
        shift = self._shift(center)
        local = _multiboost.chebyshev_moments(self.a, self.u, self.domain, center, self.p, order, shift)
        self._passes += 1
        return self._expansion(center, order, local, shift)

    def _model(self, first: _Expansion):
        """Evaluator of (F_l, F_l', F_l'') from the expansions, adding one where none reaches."""
        expansions = [first]

        def evaluate(eta: float):
            best = min(expansions, key=lambda e: abs(eta - e.center) / max(e.radius, 1e-300))
            if abs(eta - best.center) > best.radius:
                best = self._expand(eta, EXTRA_ORDER)
                expansions.append(best)
            return best.evaluate(eta)

        return evaluate

    def _step(self, stump: Stump, k: int, t: int, tau: float) -> tuple[float, dict]:
        # One pass: the directions u and the Chebyshev moments at 0 (orders 0..2
        # are the loss, its slope and curvature at 0; more feed the line search).
        order = _order_for(self._last_eta) if self.step == "line-search" else 2
        shift = self._shift(0.0)
        if getattr(stump, "kind", None) == "real":
            self._directions(stump, k)
            local = _multiboost.chebyshev_moments(self.a, self.u, self.domain, 0.0, self.p, order, shift)
        else:
            local = _multiboost.directions_chebyshev(
                stump.column(self.data.cols), self.data.y, self.QT, k, *stump.args(), self.a, self.domain, order,
                shift, self.u,
            )
        self._pending = (stump, k)
        self._passes = 1
        first = self._expansion(0.0, order, local, shift)
        F0 = first.S[:, 0].copy()
        F1 = -first.S[:, 1]
        F2 = 0.5 * (first.S[:, 0] + first.S[:, 2])  # u^2 = (T_0 + T_2) / 2
        zero = (F0, F1, F2)
        # per-domain weighted error of Q(k|.) h (Lemma 1): eps_l = (1 - E_D[u]) / 2
        # a domain whose loss mass underflowed to 0 (huge steps) has no error to speak of: chance, not NaN
        ratio = np.divide(F1, F0, out=np.zeros_like(F1), where=F0 > 0)
        eps = np.clip(0.5 * (1.0 + ratio), 1e-12, 1 - 1e-12)
        if k < self.p:
            own = eps[k]
        else:  # the ungated stump: its error under the soft-max weights of the domains
            pi, _ = self._softmax(F0)
            own = float(np.clip(0.5 * (1.0 + (pi @ F1) / (pi @ F0)), 1e-12, 1 - 1e-12))
        closed = 0.5 * math.log((1 - own) / own)
        info = {"eps_domains": eps.tolist()}
        if self.step == "closed-form":
            return closed, info
        if self.step == "sqrt":
            return self.step_c / math.sqrt(t), info
        if self.step == "lemma1":
            # The Lemma-1 bound: F_l <= Phi_l [(1 - eps_l) e^-eta + eps_l e^eta].
            w = np.stack([F0 * (1 - eps), F0 * eps], axis=1)
            bound = exponential_family(w, np.tile([1.0, -1.0], (self.p, 1)))
            bound_eta, _ = minimize_max(bound if tau <= 0 else _softmax_of(bound, tau), max(closed, 1e-3))
            return bound_eta, info
        model = self._model(first)
        at_zero = zero if tau <= 0 else _softmax_of(lambda _eta: zero, tau)(0.0)
        # Start with Newton's step from 0 on the objective, kept within the
        # model's reach (trial steps there cost no pass).
        g1, g2 = float(at_zero[1].max()), float(at_zero[2].max())
        start = -g1 / g2 if g1 < 0 and g2 > 0 else max(closed, 1e-3)
        start = min(max(start, 1e-6), first.radius)
        # The model is exact to 1e-10: search to a tighter tolerance than the rows' passes allowed.
        eta, evals = minimize_max(model if tau <= 0 else _softmax_of(model, tau), start, at_zero=at_zero, rtol=1e-10)
        info["line_search_evals"] = self._passes  # passes over the rows
        info["line_search_order"] = order
        info["line_search_model_evals"] = evals + 1
        return eta, info

    def _logistic_model(self):
        """Evaluator of the logistic (F_l, F_l', F_l'') at a step along ``u``: one pass, exact sums."""
        groups = np.concatenate([self.domain, self.domain + self.p, self.domain + 2 * self.p])
        p = self.p

        def evaluate(eta: float):
            z = self.margin + eta * self.u
            s = 0.5 * (1.0 + np.tanh(-0.5 * z))  # sigma(-z), the slope of log(1 + e^-z) (sign flipped)
            terms = np.concatenate([np.logaddexp(0.0, -z), -s * self.u, s * (1.0 - s) * self.u * self.u])
            if self.sw is not None:
                terms *= np.tile(self.sw, 3)
            sums = self.proto.reduce_stats(terms, groups, 3 * p)
            self._passes += 1
            return sums[:p] / self.m, sums[p:2 * p] / self.m, sums[2 * p:] / self.m

        return evaluate

    def _step_logistic(self, stump, k: int, t: int, tau: float) -> tuple[float, dict]:
        """The step of the logistic loss: the line search on the soft-max, one pass per trial step."""
        self._directions(stump, k)
        if self.step == "sqrt":
            return self.step_c / math.sqrt(t), {}
        self._passes = 0
        model = self._logistic_model()
        objective = model if tau <= 0 else _softmax_of(model, tau)
        at_zero = objective(0.0)
        g1, g2 = float(at_zero[1].max()), float(at_zero[2].max())
        start = -g1 / g2 if g1 < 0 and g2 > 0 else 1.0
        eta, _ = minimize_max(objective, start, at_zero=at_zero)
        return eta, {"line_search_evals": self._passes}

    def apply(self, h: Hypothesis) -> dict:
        k = self._gate(h)
        if self._pending != (h.stump, k):
            self._directions(h.stump, k)  # a replayed round (resume)
        errors, a_max = _multiboost.update(self.margin, self.a, self.u, self.data.y, h.coef)
        self._pending = None
        self._last_eta = h.coef  # the next line search's order goes by it
        self.model.append(h.stump, h.coef, domain=h.domain)
        if self.logistic:
            np.copyto(self.a, 0.5 * (1.0 + np.tanh(-0.5 * self.margin)))  # the new slopes sigma(-y f)
            if self.sw is not None:
                self.a *= self.sw
            return {"train_errors": int(self.proto.reduce_counts(np.array([errors]))[0])}
        if self.sw is not None:
            self.a *= self.sw  # the kernel wrote exp(-y f)
            a_max = float(self.a.max()) if self.a.size else 0.0
        if not self.exact_losses:
            return {"train_errors": int(self.proto.reduce_counts(np.array([errors]))[0])}
        # One collective: the errors, the largest row weight (which scales the
        # next fixed-point sums) and the next round's F_l (correctly rounded).
        terms = _exact.grouped_partials(self.a, self.domain, self.p)
        errors, self.a_max, sums = self.proto.reduce_round_stats(np.array([errors]), a_max, terms)
        self._next_phi = sums / self.m
        return {"train_errors": int(errors[0])}
