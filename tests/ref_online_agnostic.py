"""An independent, slow reference of online agnostic multiclass boosting (Algorithm 1) and its weak learners.

Everything here is plain Python written from the algorithm's definition, one
example and one learner at a time, so that a bug in the production kernels
(the simplex projection, the online-gradient chain, the naive-Bayes-adaptive
leaves) cannot hide in the reference as well. The one thing taken from the
package is :class:`mpiboost.online.base.StreamRandom`: its uniforms are the
stream's definition of randomness (keyed by seed and stream position), not a
part of the algorithm.

The booster, for each example t of the stream:

* every learner i predicts its class l_i (learners frozen at the block's
  start; a block of one example is the sequential algorithm);
* the vote counts v (v_c = the number of learners predicting c) give the
  distribution D = proj(v / (gamma N)), proj the Euclidean projection onto
  the probability simplex; the randomised prediction is a draw from D by the
  example's first uniform (inverse CDF), the deterministic one its first
  largest entry;
* the label y is revealed; the online-gradient chain starts at p^1 (uniform,
  or e_y) and takes p^{i+1} = proj(p^i - eta g_i) with the linear loss's
  gradient g_i = (2 e_{l_i} - 1) / gamma - (2 e_y - 1) and eta = gamma /
  sqrt(N) (:func:`chain` takes it in full or less its constant part, which
  the projection ignores; :func:`run` uses the second form, see there);
* learner i learns the example relabelled by p^i: every label l with weight
  p^i_l > 0, in label order (fractional), or one label drawn from p^i by the
  example's next uniforms, with weight 1 (random).
"""
import math

from mpiboost.online.base import StreamRandom

HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
VAR_FLOOR = 1e-9  # var_prior = 0: the class's own variance plus this (one value has no spread)
POOL_RESOLUTION = 1e-9  # a pooled variance below this share of the mean square cannot be told from 0


# ------------------------------------------------------------------ the simplex


def project(u):
    """The Euclidean projection of the vector ``u`` onto ``{p >= 0, sum p = 1}`` (sort-based).

    Sort u decreasingly; rho is the largest j with ``u_j - (sum_{r <= j} u_r
    - 1) / j > 0`` and ``theta = (sum_{r <= rho} u_r - 1) / rho``; the
    projection is ``max(u - theta, 0)``.

    Parameters
    ----------
    u : sequence of float

    Returns
    -------
    list of float
    """
    s = sorted((float(v) for v in u), reverse=True)
    theta, cum = s[0] - 1.0, 0.0
    for j, v in enumerate(s, 1):
        cum += v
        cand = (cum - 1.0) / j
        if v - cand > 0:
            theta = cand
    return [max(float(v) - theta, 0.0) for v in u]


def draw(p, u):
    """The class drawn from the weights ``p`` by the uniform ``u`` in [0, 1): inverse CDF.

    The first class c whose cumulative weight exceeds ``u * total`` (the last
    class if rounding leaves none).
    """
    cut, cum = u * running_sum(p), 0.0
    for c, v in enumerate(p):
        cum += v
        if cum > cut:
            return c
    return len(p) - 1


def running_sum(values):
    """The plain left-to-right sum (Python 3.12's ``sum`` compensates rounding, which would move a refresh)."""
    total = 0.0
    for v in values:
        total += v
    return total


def first_argmax(values):
    """The lowest index of the largest value."""
    best = 0
    for c in range(1, len(values)):
        if values[c] > values[best]:
            best = c
    return best


def distribution(labels, k, gamma):
    """The booster's D for the learners' classes ``labels``: proj(votes / (gamma N))."""
    votes = [0.0] * k
    for label in labels:
        votes[label] += 1.0
    return project([v / (gamma * len(labels)) for v in votes])


def chain(labels, y, k, gamma, start="uniform", gradient="shifted"):
    """p^1 .. p^N of one example: projected online gradient descent on the linear losses.

    Parameters
    ----------
    labels : sequence of int
        The learners' predictions l_1 .. l_N.
    y : int
        The example's class.
    k : int
        The number of classes.
    gamma : float
        The advantage; the step is ``eta = gamma / sqrt(N)``.
    start : {"uniform", "label"}
        p^1: the uniform distribution or the vertex e_y.
    gradient : {"shifted", "full"}
        ``full``: the step ``-eta g`` with ``g = (2 e_l - 1) / gamma - (2 e_y
        - 1)`` as written; ``shifted``: the same less its constant part
        ``eta (1 / gamma - 1)`` on every coordinate, i.e. ``-(2 eta / gamma)
        e_l + 2 eta e_y``. The projection ignores a constant shift, so both
        give the same chain up to rounding (a test checks it); ``shifted``
        rounds as few times as possible, which :func:`run` needs (see there).

    Returns
    -------
    list of list of float
        N distributions; the i-th is the one learner i is taught with.
    """
    N = len(labels)
    eta = gamma / math.sqrt(N)
    p = [1.0 / k] * k if start == "uniform" else [1.0 if c == y else 0.0 for c in range(k)]
    out = []
    for label in labels:
        out.append(p)
        if gradient == "full":
            g = [(2.0 * (c == label) - 1.0) / gamma - (2.0 * (c == y) - 1.0) for c in range(k)]
            step = [p[c] - eta * g[c] for c in range(k)]
        else:
            step = list(p)
            step[label] -= 2.0 * eta / gamma
            step[y] += 2.0 * eta
        p = project(step)
    return out


# ------------------------------------------------------------------ the weak learner


class Leaf:
    """One online naive-Bayes-adaptive leaf over weighted examples, from its definition.

    It keeps, for the weighted examples it learnt: each class's weight w_c;
    per nominal feature, value and class a weighted count; per numeric
    feature and class the weighted sums of 1, x and x^2 (missing values are
    skipped). It predicts with naive Bayes or with its majority class,
    whichever was right on more weight of what it learnt, each sub-example
    scored just before it was learnt (ties go to naive Bayes); a leaf that
    learnt nothing predicts class 0 and every argmax takes the lowest class.

    Naive Bayes' score of class c is ``log w_c`` (the common ``-log W`` is left
    out: it moves no argmax) plus, per present feature, ``log((n_{j,v,c} + 1)
    / (w_c + V_j))`` (Laplace) for a nominal one and the log normal density of
    x for a numeric one that class c has seen, with mean ``S1 / S0`` and
    variance ``(M2 + a v) / (S0 + a)``, ``M2 = S2 - S1^2 / S0``, where v is the
    pooled variance of the feature over all the leaf's rows (labels ignored).
    v is recomputed only when the leaf's total weight, after a row, first
    reaches twice its value at the last recomputation; v = 0 (no spread yet)
    makes the feature say nothing. With a = 0 the variance is the class's
    own plus ``VAR_FLOOR``. A class without weight scores minus infinity.
    """

    def __init__(self, k, values, var_prior=1.0):
        self.k, self.values, self.a = k, list(values), float(var_prior)
        self.numeric = [j for j, v in enumerate(self.values) if v == 0]
        self.w = [0.0] * k
        self.counts = {j: [[0.0] * k for _ in range(v)] for j, v in enumerate(self.values) if v > 0}
        self.sums = {j: [[0.0] * k for _ in range(3)] for j in self.numeric}  # S0, S1, S2 per class
        self.mc_right = self.nb_right = 0.0
        self.pool = {j: 0.0 for j in self.numeric}
        self.pool_weight = 0.0

    def _variance(self, j, c):
        """Class c's variance of numeric feature j, or None when the feature says nothing."""
        s0, s1, s2 = (self.sums[j][r][c] for r in range(3))
        if self.a > 0:
            v = self.pool[j]
            if v <= 0:
                return None
            return (max(s2 - s1 * s1 / s0, 0.0) + self.a * v) / (s0 + self.a)
        return max(s2 / s0 - (s1 / s0) ** 2, 0.0) + VAR_FLOOR

    def score(self, x, c):
        """Naive Bayes' log score of class c for the row x (minus infinity without weight)."""
        if self.w[c] <= 0:
            return -math.inf
        s = math.log(self.w[c])
        for j, V in enumerate(self.values):
            if math.isnan(x[j]):
                continue
            if V > 0:
                v = int(x[j])
                n = self.counts[j][v][c] if 0 <= v < V else 0.0
                s += math.log((n + 1.0) / (self.w[c] + V))
            else:
                s0, s1 = self.sums[j][0][c], self.sums[j][1][c]
                if s0 <= 0:
                    continue  # class c never saw this feature
                var = self._variance(j, c)
                if var is None:
                    continue
                s += -HALF_LOG_2PI - 0.5 * math.log(var) - (x[j] - s1 / s0) ** 2 / (2.0 * var)
        return s

    def naive_bayes(self, x):
        """Naive Bayes' class for x, or None when the leaf has learnt nothing."""
        scores = [self.score(x, c) for c in range(self.k)]
        if max(scores) == -math.inf:
            return None
        return first_argmax(scores)

    def majority(self):
        """The class of largest weight (class 0 before any weight)."""
        return first_argmax(self.w)

    def predict(self, x):
        """The leaf's class for x: naive Bayes' unless the majority class has been right on more weight."""
        if self.nb_right >= self.mc_right:
            c = self.naive_bayes(x)
            return 0 if c is None else c
        return self.majority()

    def _learn_one(self, x, c, weight):
        # both rules are scored on the example before it is learnt
        if running_sum(self.w) > 0 and self.majority() == c:
            self.mc_right += weight
        if self.naive_bayes(x) == c:
            self.nb_right += weight
        self.w[c] += weight
        for j, V in enumerate(self.values):
            if math.isnan(x[j]):
                continue
            if V > 0:
                v = int(x[j])
                if 0 <= v < V:
                    self.counts[j][v][c] += weight
            else:
                self.sums[j][0][c] += weight
                self.sums[j][1][c] += weight * x[j]
                self.sums[j][2][c] += weight * x[j] * x[j]

    def learn_row(self, x, weighted_labels):
        """Learn the row x once per ``(label, weight)`` in turn, then maybe refresh the pooled variances."""
        for c, weight in weighted_labels:
            self._learn_one(x, c, weight)
        total = running_sum(self.w)
        if self.a > 0 and self.numeric and total > 0 and total >= 2.0 * self.pool_weight:
            self.pool_weight = total
            for j in self.numeric:
                t0, t1, t2 = (running_sum(self.sums[j][r]) for r in range(3))
                var = 0.0
                if t0 > 0:
                    mean = t1 / t0
                    var = t2 / t0 - mean * mean
                    if not var > POOL_RESOLUTION * (t2 / t0):
                        var = 0.0
                self.pool[j] = var


def bank_state(leaves):
    """The leaves' statistics laid out as the production bank reports them (nested lists, learner first)."""
    values = leaves[0].values
    numeric = leaves[0].numeric
    k = leaves[0].k
    out = {name: [] for name in ("class_weight", "nominal", "s0", "s1", "s2", "mc_right", "nb_right",
                                 "var_pool", "pool_weight")}
    for leaf in leaves:
        out["class_weight"].append(list(leaf.w))
        cells = [leaf.counts[j][v] for j, V in enumerate(values) if V > 0 for v in range(V)]
        out["nominal"].append([list(c) for c in cells] or [[0.0] * k])
        for r, name in enumerate(("s0", "s1", "s2")):
            out[name].append([list(leaf.sums[j][r]) for j in numeric] or [[0.0] * k])
        out["mc_right"].append(leaf.mc_right)
        out["nb_right"].append(leaf.nb_right)
        out["var_pool"].append([leaf.pool[j] for j in numeric] or [0.0])
        out["pool_weight"].append(leaf.pool_weight)
    return out


# ------------------------------------------------------------------ the prequential pass


def run(X, y, values, k, n_learners, gamma, relabel="fractional", seed=0, start="uniform", var_prior=1.0,
        block_size=1):
    """One prequential pass of Algorithm 1: the (randomised, argmax) prediction of every example and the leaves.

    Parameters
    ----------
    X : array-like, shape (n, d)
        Rows; nominal features hold value indices, NaN is missing.
    y : array-like of int, shape (n,)
    values : sequence of int
        Per feature its number of nominal values, 0 for numeric.
    k, n_learners, gamma
        Classes, weak learners N and the advantage.
    relabel : {"fractional", "random"}
    seed : int
        The key of the stream's uniforms.
    start : {"uniform", "label"}
        The chain's p^1.
    var_prior : float
        The leaves' weight a of the pooled variance.
    block_size : int
        Examples predicted by learners frozen at the block's start.

    Returns
    -------
    predictions : list of (int, int)
    state : dict
        :func:`bank_state` of the leaves.

    Notes
    -----
    The chain is taken in its ``shifted`` form and every total is a plain
    left-to-right sum, so that the relabelling weights are the fewest
    roundings of the definition: a leaf's refresh compares its float total
    weight with twice its last value, which at whole numbers a last-bit
    difference decides, so a reference that rounds otherwise drifts from an
    exact implementation by whole rows rather than by a tolerance.
    """
    rows = [[float(v) for v in row] for row in X]
    labels_of = [int(v) for v in y]
    leaves = [Leaf(k, values, var_prior) for _ in range(n_learners)]
    out = []
    for a in range(0, len(rows), block_size):
        block = range(a, min(a + block_size, len(rows)))
        frozen = {t: [leaf.predict(rows[t]) for leaf in leaves] for t in block}
        for t in block:
            x, yt, labels = rows[t], labels_of[t], frozen[t]
            rng = StreamRandom(seed, t)
            D = distribution(labels, k, gamma)
            out.append((draw(D, rng.random()), first_argmax(D)))
            P = chain(labels, yt, k, gamma, start)
            if relabel == "fractional":
                for leaf, p in zip(leaves, P):
                    leaf.learn_row(x, [(c, p[c]) for c in range(k) if p[c] > 0])
            else:
                u = rng.random(n_learners)
                for i, (leaf, p) in enumerate(zip(leaves, P)):
                    leaf.learn_row(x, [(draw(p, float(u[i])), 1.0)])
    return out, bank_state(leaves)
