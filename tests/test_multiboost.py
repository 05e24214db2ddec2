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


@pytest.mark.parametrize("seed", range(6))
def test_chebyshev_model_matches_exact_sums(seed):
    """The line search's model: F_l, F_l', F_l'' from one pass of Chebyshev moments, within its radius."""
    from mpiboost._ext import _multiboost
    from mpiboost.boost.multiboost import ORDERS, _Expansion, _radius

    rng = np.random.default_rng(seed)
    n, p = 2000, 3
    a = np.exp(rng.standard_normal(n) * (3 if seed % 2 else 0.5))
    u = rng.uniform(-1, 1, n) * rng.choice([1.0, 0.3], n)
    if seed % 3 == 0:
        u = np.sign(u)  # |u| = 1: the bound is reached
    domain = rng.integers(0, p, n).astype(np.int32)
    m = np.bincount(domain, minlength=p).astype(float)
    radii = [_radius(k) for k in ORDERS]
    assert all(r1 < r2 for r1, r2 in zip(radii, radii[1:])) and radii[0] > 0.1
    for order in (8, 16):
        center = [0.0, 0.8, 2.5][seed % 3]
        shift = int(61 - math.ceil(math.log2(a.max() * math.exp(center) * n)))  # terms < 2**50 here
        C = _multiboost.chebyshev_moments(a, u, domain, center, p, order, shift)
        model = _Expansion(center, C * 2.0**-shift / m[:, None], _radius(order))
        for eta in center + model.radius * np.array([-1.0, -0.5, 0.0, 0.3, 1.0]):
            e = a * np.exp(-eta * u)
            exact = [np.array([math.fsum(v[domain == l]) for l in range(p)]) / m for v in (e, -u * e, u * u * e)]
            got = model.evaluate(eta)
            scale = exact[0]  # the bound is relative to F_l
            np.testing.assert_array_less(np.abs(got[0] - exact[0]), 2e-10 * scale + 1e-15)
            np.testing.assert_array_less(np.abs(got[1] - exact[1]), 2e-10 * scale + 1e-15)
            np.testing.assert_array_less(np.abs(got[2] - exact[2]), 1e-6 * scale)


def test_line_search_step_is_the_exact_minimizer():
    """MultiBoost's step (model-based line search) is the minimizer of the soft-max to 1e-8."""
    train = multisource.generate(6000, seed=3)
    mb = MultiBoost({})
    mb.setup(_shard(train.X, train.y, train.domain, 3), _self_proto())
    for t in range(1, 13):
        h = mb.select(t)
        a, u, dom, m = mb.a, mb.u, mb.domain, mb.m
        phi = np.array([math.fsum(a[dom == l]) for l in range(3)]) / m
        tau = mb.temperature * phi.max()

        def slope(eta):
            e = a * np.exp(-eta * u)
            F = np.array([math.fsum(e[dom == l]) for l in range(3)]) / m
            F1 = -np.array([math.fsum((u * e)[dom == l]) for l in range(3)]) / m
            F2 = np.array([math.fsum((u * u * e)[dom == l]) for l in range(3)]) / m
            w = np.exp((F - F.max()) / tau)
            pi = w / w.sum()
            g1 = pi @ F1
            return g1, pi @ F2 + (pi @ (F1 * F1) - g1 * g1) / tau

        best = h.coef
        for _ in range(5):  # Newton on the exact sums
            g1, g2 = slope(best)
            best -= g1 / g2
        assert abs(h.coef - best) <= 1e-8 * best, (t, h.coef, best)
        assert h.metrics["line_search_evals"] >= 1
        mb.apply(h)


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
