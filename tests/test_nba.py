"""The naive-Bayes-adaptive leaf bank against a plain Python twin, on nominal, numeric and mixed streams."""
import math

import numpy as np
import pytest

from mpiboost._ext import _nba, _simplex

HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


class Leaf:
    """One adaptive leaf, written out: the rules of mpiboost._ext._nba, one dict per statistic."""

    def __init__(self, k, values, var_prior=_nba.VAR_PRIOR):
        self.k, self.values, self.a = k, list(values), var_prior
        self.cw = [0.0] * k
        self.counts = {}  # (j, value, c) -> weight
        self.moments = {}  # (j, c) -> [sum w, sum w x, sum w x^2]
        self.mc = self.nb = 0.0
        self.pool = {}  # j -> the prior's pooled variance, as of the last refresh
        self.pool_w = 0.0  # the total weight at the last refresh

    def gaussian(self, j, m):
        """(mean, 1 / variance, log density's constant) of class sums m = [S0, S1, S2] of feature j."""
        mean = m[1] / m[0]
        if self.a > 0:  # (M2 + a v) / (S0 + a) = num / den; no term while the pooled v is 0
            v = self.pool.get(j, 0.0)
            if v <= 0:
                return mean, 0.0
            den = m[0] + self.a
            num = max(m[2] - m[1] * mean, 0.0) + self.a * v
            return mean, den / num
        var = max(m[2] / m[0] - mean * mean, 0.0) + _nba.VAR_FLOOR
        return mean, 1.0 / var

    def half_log_sum(self, c):
        """Class c's sum of log(1/var)/2 - log(2 pi)/2 over its numeric features, as the bank multiplies it out."""
        p, acc, count = 1.0, 0.0, 0
        for j, nv in enumerate(self.values):
            m = self.moments.get((j, c))
            if nv or not m or m[0] <= 0:
                continue
            g = self.gaussian(j, m)[1]
            if g <= 0:
                continue
            count += 1
            if g > 1e100 or g < 1e-100:
                acc += math.log(g)
            else:
                p *= g
                if p > 1e200 or p < 1e-200:
                    acc += math.log(p)
                    p = 1.0
        acc += math.log(p)
        return 0.5 * acc - count * HALF_LOG_2PI

    def end_row(self):
        """After a row: once the total weight has doubled since the last refresh, the pooled variances anew."""
        numeric = [j for j, v in enumerate(self.values) if not v]
        total = sum(self.cw)
        if self.a <= 0 or not numeric or not (total > 0 and total >= 2.0 * self.pool_w):
            return
        self.pool_w = total
        for j in numeric:
            t = [0.0, 0.0, 0.0]
            for c in range(self.k):
                m = self.moments.get((j, c), [0.0, 0.0, 0.0])
                t = [t[0] + m[0], t[1] + m[1], t[2] + m[2]]
            var = 0.0
            if t[0] > 0:
                mean = t[1] / t[0]
                var = t[2] / t[0] - mean * mean
                if not var > _nba.POOL_RESOLUTION * (t[2] / t[0]):
                    var = 0.0
            self.pool[j] = var

    def majority(self):
        return max(range(self.k), key=lambda c: (self.cw[c], -c))

    def naive_bayes(self, x):
        total = sum(self.cw)
        if total <= 0:
            return None
        best, best_score = None, -math.inf
        for c in range(self.k):
            if self.cw[c] <= 0:
                continue
            s = math.log(self.cw[c])  # log prior log(cw/total) less the common log(total): the same argmax
            for j, v in enumerate(x):
                if math.isnan(v):
                    continue
                if self.values[j]:
                    w = self.counts.get((j, int(v), c), 0.0) if 0 <= int(v) < self.values[j] else 0.0
                    s += math.log((w + 1.0) / (self.cw[c] + self.values[j]))
                else:
                    m = self.moments.get((j, c))
                    if not m or m[0] <= 0:
                        continue
                    mean, inv = self.gaussian(j, m)
                    z = v - mean
                    s += -0.5 * z * z * inv
            if any(not nv for nv in self.values):
                s += self.half_log_sum(c)  # every numeric feature's log-variance term, less the missing ones'
                for j, v in enumerate(x):
                    m = self.moments.get((j, c))
                    if not self.values[j] and math.isnan(v) and m and m[0] > 0:
                        inv = self.gaussian(j, m)[1]
                        if inv > 0:
                            s -= 0.5 * math.log(inv) - HALF_LOG_2PI
            if s > best_score:
                best, best_score = c, s
        return best

    def predict(self, x):
        if self.nb >= self.mc:
            nb = self.naive_bayes(x)
            return 0 if nb is None else nb
        return self.majority()

    def learn(self, x, label, w):
        if sum(self.cw) > 0 and self.majority() == label:
            self.mc += w
        if self.naive_bayes(x) == label:
            self.nb += w
        self.cw[label] += w
        for j, v in enumerate(x):
            if math.isnan(v):
                continue
            if self.values[j]:
                if 0 <= int(v) < self.values[j]:
                    self.counts[(j, int(v), label)] = self.counts.get((j, int(v), label), 0.0) + w
            else:
                m = self.moments.setdefault((j, label), [0.0, 0.0, 0.0])
                m[0] += w
                m[1] += w * v
                m[2] += w * v * v


def _stream(kind, rng, n, k):
    values = {"nominal": [3, 4, 2, 5], "numeric": [0, 0, 0], "mixed": [3, 0, 4, 0]}[kind]
    X = np.empty((n, len(values)))
    y = rng.integers(0, k, n)
    for j, v in enumerate(values):
        if v:
            X[:, j] = (y + rng.integers(0, 2, n)) % v  # informative but noisy
        else:
            X[:, j] = y * (j + 1) + rng.standard_normal(n)
    X[rng.random(X.shape) < 0.05] = np.nan
    return X, y.astype(np.int32), values


@pytest.mark.parametrize("kind", ["nominal", "numeric", "mixed"])
@pytest.mark.parametrize("relabel", ["fractional", "random"])
@pytest.mark.parametrize("var_prior", [0.0, _nba.VAR_PRIOR, 3.5])
def test_bank_matches_the_python_leaves(kind, relabel, var_prior):
    rng = np.random.default_rng(len(kind))
    k, N, n = 3, 6, 120
    X, y, values = _stream(kind, rng, n, k)
    bank = _nba.NBABank(N, k, values, var_prior=var_prior)
    leaves = [Leaf(k, values, var_prior) for _ in range(N)]
    pred = np.empty(N, dtype=np.int32)
    for t in range(n):
        x = np.ascontiguousarray(X[t])
        bank.predict(x, pred)
        assert pred.tolist() == [leaf.predict(X[t]) for leaf in leaves], t
        P = np.empty((N + 1, k))
        _simplex.ogd_chain(pred, int(y[t]), 0.5, 0.5 / math.sqrt(N), P)
        if relabel == "fractional":
            bank.learn(x, P)
            for i, leaf in enumerate(leaves):
                for label in range(k):
                    if P[i, label] > 0:
                        leaf.learn(X[t], label, P[i, label])
                leaf.end_row()
        else:
            labels = rng.integers(0, k, N).astype(np.int32)
            bank.learn_labels(x, labels)
            for leaf, label in zip(leaves, labels):
                leaf.learn(X[t], int(label), 1.0)
                leaf.end_row()
    np.testing.assert_allclose(bank.mc_right, [leaf.mc for leaf in leaves], rtol=1e-12)
    np.testing.assert_allclose(bank.nb_right, [leaf.nb for leaf in leaves], rtol=1e-12)


def test_an_empty_learner_predicts_class_0_and_a_learner_learns():
    bank = _nba.NBABank(2, 3, [0, 2])
    out = np.empty(2, dtype=np.int32)
    bank.predict(np.array([0.5, 1.0]), out)
    assert out.tolist() == [0, 0]
    for _ in range(5):
        bank.learn_labels(np.array([2.0, 1.0]), np.array([2, 1], dtype=np.int32))
    bank.predict(np.array([2.0, 1.0]), out)
    assert out.tolist() == [2, 1]


def test_bank_rejects_bad_shapes():
    with pytest.raises(ValueError):
        _nba.NBABank(0, 3, [0])
    bank = _nba.NBABank(2, 3, [0])
    with pytest.raises(ValueError):
        bank.predict(np.zeros(2), np.empty(2, dtype=np.int32))
    with pytest.raises(ValueError):
        bank.learn_labels(np.zeros(1), np.array([0, 3], dtype=np.int32))


def test_scores_kept_by_predict_serve_only_the_same_row():
    """learn(x) after predict(x) starts from predict's scores; after predict of another row it recomputes."""
    rng = np.random.default_rng(9)
    X, y, values = _stream("mixed", rng, 80, 3)
    a, b = _nba.NBABank(4, 3, values), _nba.NBABank(4, 3, values)
    out = np.empty(4, dtype=np.int32)
    for t in range(1, 80):
        labels = np.full(4, y[t], dtype=np.int32)
        a.predict(np.ascontiguousarray(X[t - 1]), out)  # another row: its scores must not be used
        a.learn_labels(np.ascontiguousarray(X[t]), labels)
        b.learn_labels(np.ascontiguousarray(X[t]), labels)
    for name in ("class_weight", "mc_right", "nb_right", "s0", "s1", "s2", "nominal"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


@pytest.mark.parametrize("kind", ["nominal", "numeric", "mixed"])
def test_per_learner_weights_match_the_python_leaves(kind):
    """learn_labels(weights=): each learner its own weight; weight 0 learns nothing."""
    rng = np.random.default_rng(3 + len(kind))
    k, N, n = 3, 5, 100
    X, y, values = _stream(kind, rng, n, k)
    bank = _nba.NBABank(N, k, values)
    leaves = [Leaf(k, values) for _ in range(N)]
    pred = np.empty(N, dtype=np.int32)
    for t in range(n):
        x = np.ascontiguousarray(X[t])
        bank.predict(x, pred)
        assert pred.tolist() == [leaf.predict(X[t]) for leaf in leaves], t
        w = rng.choice([0.0, 0.3, 1.0, 4.0], N)
        labels = np.full(N, y[t], dtype=np.int32)
        bank.learn_labels(x, labels, weights=w)
        for leaf, wi in zip(leaves, w):
            if wi > 0:
                leaf.learn(X[t], int(y[t]), float(wi))
                leaf.end_row()
    np.testing.assert_allclose(bank.class_weight, [leaf.cw for leaf in leaves], rtol=1e-12)
    with pytest.raises(ValueError):
        bank.learn_labels(np.ascontiguousarray(X[0]), labels, weights=np.full(N, -1.0))


def test_state_round_trip_predicts_and_learns_the_same():
    """A bank rebuilt from get_state() is the same learner bit for bit (what a saved model relies on)."""
    rng = np.random.default_rng(11)
    X, y, values = _stream("mixed", rng, 90, 3)
    a = _nba.NBABank(4, 3, values)
    for t in range(60):
        a.learn_labels(np.ascontiguousarray(X[t]), np.full(4, y[t], dtype=np.int32))
    b = _nba.NBABank(4, 3, values)
    b.set_state(a.get_state())
    oa, ob = np.empty(4, dtype=np.int32), np.empty(4, dtype=np.int32)
    for t in range(60, 90):
        x = np.ascontiguousarray(X[t])
        a.predict(x, oa)
        b.predict(x, ob)
        assert oa.tolist() == ob.tolist()
        for bank in (a, b):
            bank.learn_labels(x, np.full(4, y[t], dtype=np.int32))
    for name, value in a.get_state().items():
        np.testing.assert_array_equal(value, b.get_state()[name], err_msg=name)
    bad = a.get_state()
    bad["s0"] = bad["s0"][:1]
    with pytest.raises(ValueError):
        b.set_state(bad)


def test_the_prior_shrinks_a_thin_class_toward_the_pooled_variance():
    """A class seen once has no variance of its own: it gets a / (1 + a) of the pooled one (refreshed at 1, 2, 4 rows)."""
    bank = _nba.NBABank(1, 2, [0], var_prior=1.0)
    rows = [(0.0, 0), (2.0, 0), (4.0, 0), (10.0, 1)]  # the pool is refreshed after rows 1, 2 and 4
    refreshed = []
    for v, c in rows:
        bank.learn_labels(np.array([v]), np.array([c], dtype=np.int32))
        refreshed.append(float(bank.pool_weight[0]))
    assert refreshed == [1.0, 2.0, 2.0, 4.0]
    xs = np.array([v for v, _ in rows])
    assert bank.pool_weight[0] == 4.0 and bank.var_pool[0, 0] == pytest.approx(xs.var())
    # class 1: M2 = 0, one row: (0 + 1 * v) / (1 + 1); class 0: (M2 + v) / (3 + 1)
    m2 = ((xs[:3] - xs[:3].mean()) ** 2).sum()
    want = {0: (m2 + xs.var()) / 4 + _nba.VAR_FLOOR, 1: xs.var() / 2 + _nba.VAR_FLOOR}
    out = np.empty(1, dtype=np.int32)
    for x in (3.0, 7.5, 12.0):
        scores = [math.log(w) - 0.5 * (x - mu) ** 2 / want[c] - 0.5 * math.log(want[c])
                  for c, (w, mu) in enumerate([(3.0, xs[:3].mean()), (1.0, 10.0)])]
        bank.predict(np.array([x]), out)
        assert bank.nb_right[0] >= bank.mc_right[0]  # it predicts by naive Bayes
        assert out[0] == int(np.argmax(scores)), x


def test_the_prior_is_free_of_the_features_units():
    """Scaling a numeric feature by 2^10 (exact in floating point) predicts the same classes; the floor alone would not."""
    rng = np.random.default_rng(8)
    X, y, values = _stream("mixed", rng, 150, 3)
    X[:, 1] *= 1e-4  # a feature in small units, where the absolute floor bites
    scaled = X.copy()
    scaled[:, 1] *= 1024.0
    a, b = _nba.NBABank(5, 3, values), _nba.NBABank(5, 3, values)
    oa, ob = np.empty(5, dtype=np.int32), np.empty(5, dtype=np.int32)
    labels = rng.integers(0, 3, (150, 5)).astype(np.int32)
    for t in range(150):
        a.predict(np.ascontiguousarray(X[t]), oa)
        b.predict(np.ascontiguousarray(scaled[t]), ob)
        assert oa.tolist() == ob.tolist(), t
        a.learn_labels(np.ascontiguousarray(X[t]), labels[t])
        b.learn_labels(np.ascontiguousarray(scaled[t]), labels[t])


def test_an_older_state_without_the_prior_takes_it_from_the_statistics():
    rng = np.random.default_rng(12)
    X, y, values = _stream("numeric", rng, 64, 3)
    a = _nba.NBABank(3, 3, values)
    for t in range(64):
        a.learn_labels(np.ascontiguousarray(X[t]), np.full(3, y[t], dtype=np.int32))
    old = {name: value for name, value in a.get_state().items() if name not in ("var_pool", "pool_weight")}
    b = _nba.NBABank(3, 3, values)
    b.set_state(old)
    # 64 rows: a refreshed last at 64 rows too, so the two agree
    np.testing.assert_array_equal(a.var_pool, b.var_pool)
    np.testing.assert_array_equal(a.pool_weight, b.pool_weight)
    c = _nba.NBABank(3, 3, values, var_prior=0)
    c.set_state(old)
    assert not np.asarray(c.var_pool).any()
