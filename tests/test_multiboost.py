"""MultiBoost, its domain classifier and its line search."""
import math

import numpy as np
import pytest

from mpiboost.boost.adaboost import AdaBoost
from mpiboost.boost.linesearch import exponential_family, minimize_max
from mpiboost.boost.multiboost import MultiBoost
from mpiboost.comm import Comm, _mpi
from mpiboost.data.binning import BinMapper, edges_from_counts, local_distinct, merge_distinct
from mpiboost.data.load import Layout, Shard
from mpiboost.data.synth import multisource
from mpiboost.protocol import Protocol
from mpiboost import domain_classifier as dc
from mpiboost._ext import _logistic


def _self_proto():
    return Protocol(Comm(_mpi().COMM_SELF))


def _shard(X, y, domain, n_domains):
    X = np.asarray(X, dtype=np.float64)
    bins = BinMapper([edges_from_counts(*merge_distinct([d]), max_bins=64) for d in local_distinct(X)])
    cols = np.empty((X.shape[1], X.shape[0]), dtype=np.uint8)
    bins.transform(X, out=cols.T)
    counts = np.bincount(domain, minlength=n_domains).astype(np.int64)
    return Shard(
        cols=cols, X=X, y=np.asarray(y, dtype=np.int8), domain=np.asarray(domain, dtype=np.int32), start=0,
        n_global=len(y), n_domains=n_domains, files=[], layout=Layout(len(y), 1), bins=bins, domain_counts=counts,
    )


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    n, d, p = 200, 4, 3
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < 0.05] = np.nan  # missing values count as 0
    lab = rng.integers(0, p, n).astype(np.int32)
    W = rng.standard_normal((d + 1, p)) * 0.3
    shift = 40
    loss, grad = _logistic.loss_grad(X, lab, W, shift)

    def f(Wx):
        Xz = np.nan_to_num(X)
        z = Xz @ Wx[:d] + Wx[d]
        z -= z.max(axis=1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        return -logp[np.arange(n), lab].sum()

    assert abs(loss * 2.0**-shift - f(W)) < 1e-6
    h = 1e-6
    num = np.zeros_like(W)
    for j in range(d + 1):
        for k in range(p):
            Wp, Wm = W.copy(), W.copy()
            Wp[j, k] += h
            Wm[j, k] -= h
            num[j, k] = (f(Wp) - f(Wm)) / (2 * h)
    np.testing.assert_allclose(grad * 2.0**-shift, num, rtol=1e-5, atol=1e-6)


def test_domain_classifier_separates_multisource_domains():
    data = multisource.generate(6000, seed=1)
    clf = dc.fit(Comm(_mpi().COMM_SELF), data.X.astype(np.float64), data.domain, 3)
    assert clf.train_accuracy > 0.95
    Q = clf.proba(data.X)
    assert np.allclose(Q.sum(axis=1), 1.0) and (Q.argmax(axis=1) == data.domain).mean() > 0.95
    back = dc.DomainClassifier.from_dict(clf.to_dict())
    assert np.array_equal(back.proba(data.X), Q)


def test_domain_classifier_matches_scikit_learn():
    sklearn = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(2)
    n, d = 1500, 5
    dom = rng.integers(0, 3, n)
    X = rng.standard_normal((n, d)) + dom[:, None] * np.array([1.0, 0, -1, 0.5, 0])
    clf = dc.fit(Comm(_mpi().COMM_SELF), X, dom, 3, l2=1.0)
    Z = (X - X.mean(0)) / X.std(0)
    ref = sklearn.LogisticRegression(C=1.0, tol=1e-10, max_iter=2000).fit(Z, dom)
    np.testing.assert_allclose(clf.W[:d], ref.coef_.T, atol=1e-6)


@pytest.mark.parametrize("seed", range(40))
def test_line_search_minimizes_the_max(seed):
    from scipy.optimize import minimize_scalar

    rng = np.random.default_rng(seed)
    p, m = int(rng.integers(1, 5)), int(rng.integers(2, 40))
    w = rng.random((p, m)) * rng.random((p, 1)) * 3
    u = rng.uniform(-1, 1, (p, m))
    if seed % 3 == 0:
        u = np.sign(u)
    evaluate = exponential_family(w, u)

    def G(x):
        return evaluate(x)[0].max()

    eta, _ = minimize_max(evaluate, 0.5)
    r = minimize_scalar(G, bounds=(0, 50), method="bounded", options={"xatol": 1e-12})
    best = min(G(r.x), G(0.0), G(50.0))
    assert G(eta) <= best * (1 + 1e-6)


def test_one_domain_multiboost_is_adaboost():
    """With one domain Q = 1, the soft-max is the loss itself: MultiBoost = AdaBoost (closed-form step)."""
    rng = np.random.default_rng(3)
    n = 1500
    X = rng.standard_normal((n, 4))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.standard_normal(n) > 0, 1, -1)
    shard = _shard(X, y, np.zeros(n, dtype=np.int32), 1)
    mb = MultiBoost({"step": "closed-form"})
    mb.setup(shard, _self_proto())
    ab = AdaBoost({"weak_learner": "histogram"})
    ab.setup(shard, _self_proto())
    for t in range(1, 16):
        h1, h2 = mb.select(t), ab.select(t)
        assert h1.stump == h2.stump
        assert h1.coef == pytest.approx(h2.coef, rel=1e-9)
        mb.apply(h1)
        ab.apply(h2)
    assert np.array_equal(mb.Q, np.ones((n, 1)))


def test_multiboost_beats_adaboost_all_on_conflicting_domains():
    train = multisource.generate(9000, seed=1)
    test = multisource.generate(9000, seed=2)
    shard = _shard(train.X, train.y, train.domain, 3)
    results = {}
    for name, algo in (("multiboost", MultiBoost({})), ("adaboost", AdaBoost({"weak_learner": "histogram"}))):
        algo.setup(shard, _self_proto())
        for t in range(1, 41):
            h = algo.select(t)
            if h is None:
                break
            algo.apply(h)
        model = algo.finish()
        cols = np.empty((test.X.shape[1], test.X.shape[0]), dtype=np.uint8)
        model.bins.transform(test.X.astype(np.float64), out=cols.T)
        pred = model.predict(cols, test.X.astype(np.float64) if model.needs_raw else None)
        errs = [np.mean(pred[test.domain == k] != test.y[test.domain == k]) for k in range(3)]
        results[name] = max(errs)
    assert results["multiboost"] < 0.05
    assert results["adaboost"] > 3 * results["multiboost"]


def test_exact_max_stops_when_stuck():
    """temperature 0 is the paper's exact max: tied domains whose experts conflict leave no descent."""
    train = multisource.generate(3000, seed=1)
    mb = MultiBoost({"temperature": 0.0})
    mb.setup(_shard(train.X, train.y, train.domain, 3), _self_proto())
    assert mb.select(1) is None
