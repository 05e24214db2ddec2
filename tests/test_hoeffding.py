"""The depth-1 Hoeffding tree bank against a plain Python twin: streams where the roots split and where they do not."""
import math

import numpy as np
import pytest

from mpiboost._ext import _hoeffding, _nba, _simplex
from test_nba import Leaf


class Tree:
    """One depth-1 Hoeffding tree, written out: an NBA root (the Leaf twin) that splits once by river's rule."""

    def __init__(self, k, values, grace_period=200, delta=1e-7, tau=0.05, var_prior=_nba.VAR_PRIOR,
                 min_branch_fraction=0.01, max_share_to_split=0.99, n_splits=10, nba_children=False):
        self.k, self.values, self.var_prior, self.nba_children = k, list(values), var_prior, nba_children
        self.root = Leaf(k, values, var_prior)
        self.grace, self.delta, self.tau = grace_period, delta, tau
        self.min_frac, self.max_share, self.n_splits = min_branch_fraction, max_share_to_split, n_splits
        self.lo, self.hi = {}, {}  # (j, c) -> the least / largest value of feature j seen with class c
        self.last = 0.0
        self.split = None  # (j, kind, value)
        self.children = None  # per branch its class weights (the split's estimate, then what it learnt)
        self.leaves = None  # nba_children: per branch an NBA leaf

    # the split
    def merit(self, post):
        totals = [sum(b) for b in post]  # summed in class order, as the bank does
        total = 0.0
        for w in totals:
            total += w
        if total <= 0 or sum(1 for w in totals if w / total > self.min_frac) < 2:
            return -math.inf
        gini = 0.0
        for b, w in zip(post, totals):
            g = 1.0
            if w != 0.0:
                for v in b:
                    g -= (v / w) * (v / w)
            gini += (w / total) * g
        return 1.0 - gini

    def candidates(self, j):
        """(merit, kind, value, branches) of feature j's candidates, in the order they are tried."""
        k, r = self.k, self.root
        if self.values[j]:
            V = self.values[j]
            counts = [[r.counts.get((j, v, c), 0.0) for c in range(k)] for v in range(V)]
            yield self.merit(counts), _hoeffding.KIND_MULTIWAY, 0.0, counts
            for v in range(V):
                if sum(counts[v]) <= 0:
                    continue
                rest = [0.0] * k
                for i in range(V):
                    if i != v:
                        rest = [a + b for a, b in zip(rest, counts[i])]
                post = [counts[v], rest]
                yield self.merit(post), _hoeffding.KIND_VALUE, float(v), post
            return
        seen = [c for c in range(k) if r.moments.get((j, c), [0.0])[0] > 0]
        if not seen:
            return
        lo, hi = min(self.lo[j, c] for c in seen), max(self.hi[j, c] for c in seen)
        step = (hi - lo) / (self.n_splits + 1.0)
        for i in range(self.n_splits):
            t = lo + step * (i + 1)
            if not lo < t < hi:
                continue
            left, right = [0.0] * k, [0.0] * k
            for c in seen:
                s0, s1, s2 = r.moments[j, c]
                if t < self.lo[j, c]:
                    right[c] = s0
                elif t >= self.hi[j, c]:
                    left[c] = s0
                else:
                    mean = s1 / s0
                    var = (s2 - s1 * mean) / (s0 - 1.0) if s0 > 1 else 0.0
                    sd = math.sqrt(var) if var > 0 else 0.0
                    left[c] = (0.5 * (1.0 + math.erf((t - mean) / (sd * math.sqrt(2.0)))) if sd > 0 else 0.0) * s0
                    right[c] = s0 - left[c]
            yield self.merit([left, right]), _hoeffding.KIND_NUMERIC, t, [left, right]

    def attempt(self):
        cw = self.root.cw
        total = sum(cw)
        if sum(1 for w in cw if w != 0) < 2 or max(cw) / total > self.max_share:
            return
        bests = []
        for j in range(len(self.values)):
            best = (-math.inf, None, None, None)
            for cand in self.candidates(j):
                if cand[0] > best[0]:
                    best = cand
            bests.append((best[0], j) + best[1:])
        top = max(range(len(bests)), key=lambda i: (bests[i][0], i))  # ties: the last feature
        second = max([b[0] for i, b in enumerate(bests) if i != top], default=-math.inf)
        first = bests[top][0]
        if not first > -math.inf:
            return
        eps = math.sqrt(math.log(1.0 / self.delta) / (2.0 * total))
        if first - second > eps or eps < self.tau:
            _, j, kind, value, post = bests[top]
            self.split = (j, kind, value)
            self.children = [list(b) for b in post]
            self.leaves = [Leaf(self.k, self.values, self.var_prior) for _ in post] if self.nba_children else None

    # routing
    def branch(self, x):
        j, kind, value = self.split
        v = x[j]
        if math.isnan(v):
            return None
        if kind == _hoeffding.KIND_NUMERIC:
            return 0 if v <= value else 1
        if not 0 <= int(v) < self.values[j]:
            return None
        if kind == _hoeffding.KIND_VALUE:
            return 0 if int(v) == int(value) else 1
        return int(v)

    def predict(self, x):
        if self.split is None:
            return self.root.predict(x)
        b = self.branch(x)
        if b is not None and self.leaves is not None and sum(self.leaves[b].cw) > 0:
            return self.leaves[b].predict(x)
        if b is None or sum(self.children[b]) <= 0:
            return self.root.majority()
        return max(range(self.k), key=lambda c: (self.children[b][c], -c))

    def learn_row(self, x, pairs):
        """x with every (label, weight) of ``pairs``: the root learns them (then may split) or a child adds them."""
        if self.split is not None:
            b = self.branch(x)
            if b is not None:
                for label, w in pairs:
                    self.children[b][label] += w
                if self.leaves is not None:
                    for label, w in pairs:
                        self.leaves[b].learn(x, label, w)
                    self.leaves[b].end_row()
            return
        for label, w in pairs:
            self.root.learn(x, label, w)
            for j, v in enumerate(x):
                if not self.values[j] and not math.isnan(v):
                    self.lo[j, label] = min(self.lo.get((j, label), math.inf), v)
                    self.hi[j, label] = max(self.hi.get((j, label), -math.inf), v)
        self.root.end_row()
        total = sum(self.root.cw)
        if total - self.last >= self.grace:
            self.attempt()
            self.last = total


def _stream(kind, rng, n, k, noise=0.1):
    """A strong single-feature signal (feature 0) plus weak or useless ones; some cells missing."""
    values = {"nominal": [4, 3, 2], "numeric": [0, 0, 0], "mixed": [0, 3, 0, 4]}[kind]
    y = rng.integers(0, k, n)
    X = np.empty((n, len(values)))
    for j, v in enumerate(values):
        signal = y if j == 0 else (y + rng.integers(0, 3, n)) % max(k, 1)
        if v:
            X[:, j] = signal % v if j == 0 else rng.integers(0, v, n)
        else:
            X[:, j] = (2.0 if j == 0 else 0.3) * signal + rng.standard_normal(n) * (0.5 if j == 0 else 1.0)
    X[rng.random(X.shape) < 0.03] = np.nan
    flip = rng.random(n) < noise
    y[flip] = rng.integers(0, k, flip.sum())
    return X, y.astype(np.int32), values


def _run(kind, relabel, grace_period, n=500, N=5, k=3, seed=0, **opts):
    rng = np.random.default_rng(seed)
    X, y, values = _stream(kind, rng, n, k)
    bank = _hoeffding.HoeffdingBank(N, k, values, grace_period=grace_period, **opts)
    trees = [Tree(k, values, grace_period=grace_period, **opts) for _ in range(N)]
    pred = np.empty(N, dtype=np.int32)
    history = []
    for t in range(n):
        x = np.ascontiguousarray(X[t])
        bank.predict(x, pred)
        assert pred.tolist() == [tree.predict(X[t]) for tree in trees], t
        history.append(pred.copy())
        if relabel == "fractional":  # every label weighted, the true one most (a booster's chain is weaker)
            P = 0.15 * rng.dirichlet(np.ones(k), N)
            P[:, y[t]] += 0.85
            P[rng.random((N, k)) < 0.3] = 0.0
            bank.learn(x, P)
            for i, tree in enumerate(trees):
                tree.learn_row(X[t], [(c, P[i, c]) for c in range(k) if P[i, c] > 0])
        else:
            labels = rng.integers(0, k, N).astype(np.int32)
            labels[rng.random(N) < 0.7] = y[t]
            bank.learn_labels(x, labels)
            for tree, label in zip(trees, labels):
                tree.learn_row(X[t], [(int(label), 1.0)])
        assert bank.split_feature.tolist() == [-1 if tr.split is None else tr.split[0] for tr in trees], t
    return bank, trees, X, y, values, np.array(history)


@pytest.mark.parametrize("kind", ["nominal", "numeric", "mixed"])
@pytest.mark.parametrize("relabel", ["fractional", "random"])
@pytest.mark.parametrize("nba_children", [False, True])
def test_splits_match_the_python_trees(kind, relabel, nba_children):
    bank, trees, *_ = _run(kind, relabel, grace_period=40, delta=1e-3, nba_children=nba_children)
    assert (bank.split_feature >= 0).sum() >= 3  # the strong feature wins, early
    for i, tree in enumerate(trees):
        if tree.split is None:
            continue
        j, kind_, value = tree.split
        assert (bank.split_feature[i], bank.split_kind[i]) == (j, kind_)
        assert bank.split_value[i] == value
        nb = len(tree.children)
        np.testing.assert_allclose(bank.child_weight[i, :nb], tree.children, rtol=1e-12, atol=1e-12)
    assert 0 in set(bank.split_feature.tolist())


@pytest.mark.parametrize("kind", ["nominal", "mixed"])
def test_no_split_is_the_nba_bank(kind):
    """A grace period longer than the stream: no root tries, and the bank is NBABank's learners exactly."""
    rng = np.random.default_rng(5)
    k, N, n = 3, 4, 300
    X, y, values = _stream(kind, rng, n, k)
    tree, leaves = _hoeffding.HoeffdingBank(N, k, values, grace_period=1e9), _nba.NBABank(N, k, values)
    a, b = np.empty(N, dtype=np.int32), np.empty(N, dtype=np.int32)
    for t in range(n):
        x = np.ascontiguousarray(X[t])
        tree.predict(x, a)
        leaves.predict(x, b)
        assert a.tolist() == b.tolist(), t
        P = np.empty((N + 1, k))
        _simplex.ogd_chain(a, int(y[t]), 0.5, 0.5 / math.sqrt(N), P)
        tree.learn(x, P)
        leaves.learn(x, P)
    assert (tree.split_feature == -1).all()
    for name, value in leaves.get_state().items():
        np.testing.assert_array_equal(tree.get_state()[name], value, err_msg=name)


def test_a_weak_stream_does_not_split():
    """Features without signal: the best and second best merits stay within the Hoeffding bound."""
    rng = np.random.default_rng(2)
    k, N, n = 3, 4, 400
    X = rng.standard_normal((n, 3))
    y = rng.integers(0, k, n).astype(np.int32)
    bank = _hoeffding.HoeffdingBank(N, k, [0, 0, 0], grace_period=50, tau=0.0)
    leaves = _nba.NBABank(N, k, [0, 0, 0])
    trees = [Tree(k, [0, 0, 0], grace_period=50, tau=0.0) for _ in range(N)]
    out, want = np.empty(N, dtype=np.int32), np.empty(N, dtype=np.int32)
    for t in range(n):
        x = np.ascontiguousarray(X[t])
        bank.predict(x, out)
        leaves.predict(x, want)
        assert out.tolist() == [tr.predict(X[t]) for tr in trees] == want.tolist()
        labels = np.full(N, y[t], dtype=np.int32)
        bank.learn_labels(x, labels)
        leaves.learn_labels(x, labels)
        for tr in trees:
            tr.learn_row(X[t], [(int(y[t]), 1.0)])
    assert (bank.split_feature == -1).all() and all(tr.split is None for tr in trees)
    assert (bank.last_attempt > 0).all()  # it tried


def test_value_against_the_rest_wins_when_the_multiway_split_is_too_thin():
    """Class 0 has value 0, classes 1 and 2 a new value each row: no branch of the multiway split but value 0's
    holds more than 1% of the weight, so only 'value 0 or not' is a candidate."""
    rng = np.random.default_rng(4)
    k, N, n, V = 3, 3, 240, 200
    y = rng.integers(0, k, n).astype(np.int32)
    X = np.where(y == 0, 0, 1 + np.cumsum(y != 0) % (V - 1)).astype(float)[:, None]
    bank = _hoeffding.HoeffdingBank(N, k, [V], grace_period=100)
    trees = [Tree(k, [V], grace_period=100) for _ in range(N)]
    out = np.empty(N, dtype=np.int32)
    for t in range(n):
        x = np.ascontiguousarray(X[t])
        bank.predict(x, out)
        assert out.tolist() == [tr.predict(X[t]) for tr in trees], t
        bank.learn_labels(x, np.full(N, y[t], dtype=np.int32))
        for tr in trees:
            tr.learn_row(X[t], [(int(y[t]), 1.0)])
    assert bank.split_kind.tolist() == [_hoeffding.KIND_VALUE] * N and bank.split_value.tolist() == [0.0] * N
    for i, tr in enumerate(trees):
        np.testing.assert_allclose(bank.child_weight[i, :2], tr.children, rtol=1e-12)
    assert out.tolist() == [0] * N or X[-1, 0] != 0  # value 0 is class 0's


@pytest.mark.parametrize("nba_children", [False, True])
def test_state_round_trip_after_splits(nba_children):
    bank, trees, X, y, values, _ = _run("mixed", "random", grace_period=40, n=400, delta=1e-3,
                                        nba_children=nba_children)
    assert (bank.split_feature >= 0).any() and (bank.split_feature == -1).any()  # both kinds carry on
    other = _hoeffding.HoeffdingBank(5, 3, values, grace_period=40, delta=1e-3, nba_children=nba_children)
    other.set_state(bank.get_state())
    oa, ob = np.empty(5, dtype=np.int32), np.empty(5, dtype=np.int32)
    rng = np.random.default_rng(1)
    for t in range(200):
        x = np.ascontiguousarray(X[t % len(y)])
        bank.predict(x, oa)
        other.predict(x, ob)
        assert oa.tolist() == ob.tolist()
        labels = rng.integers(0, 3, 5).astype(np.int32)
        bank.learn_labels(x, labels)
        other.learn_labels(x, labels)
    for name, value in bank.get_state().items():
        np.testing.assert_array_equal(value, other.get_state()[name], err_msg=name)
    bad = bank.get_state()
    bad["split_feature"] = np.full(5, 7)
    with pytest.raises(ValueError):
        other.set_state(bad)


def test_api_checks():
    with pytest.raises(ValueError):
        _hoeffding.HoeffdingBank(2, 3, [0], grace_period=0)
    bank = _hoeffding.HoeffdingBank(2, 3, [0, 2])
    assert (bank.n_learners, bank.n_classes, bank.d, bank.values.tolist()) == (2, 3, 2, [0, 2])
    with pytest.raises(ValueError):
        bank.predict(np.zeros(3), np.empty(2, dtype=np.int32))
    with pytest.raises(ValueError):
        bank.learn_labels(np.zeros(2), np.array([0, 3], dtype=np.int32))
