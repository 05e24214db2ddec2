"""MultiBoost, its domain classifier and its line search."""
import math
import warnings

import numpy as np
import pytest

import reference as ref
from mpiboost.boost.adaboost import AdaBoost
from mpiboost.boost.linesearch import exponential_family, minimize_max
from mpiboost.boost.multiboost import MultiBoost
from mpiboost.comm import Comm, _mpi
from mpiboost.data.binning import BinMapper, edges_from_counts, local_distinct, merge_distinct
from mpiboost.data.load import Layout, Shard
from mpiboost.data.synth import multisource
from mpiboost.protocol import Protocol
from mpiboost import domain_classifier as dc
from mpiboost._ext import _exact, _logistic, _openmp


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


def _standardization(X):
    """Column means and standard deviations as the domain classifier takes them (NaN skipped)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nan_to_num(np.nanmean(X, axis=0)) if X.shape[0] else np.zeros(X.shape[1])
        std = np.nan_to_num(np.nanstd(X, axis=0)) if X.shape[0] else np.zeros(X.shape[1])
    return mean, np.where(std > 0, std, 1.0)


def _sparse_mask(X, mode):
    d = X.shape[1]
    if mode == "dense":
        return np.zeros(d, dtype=bool)
    if mode == "sparse":
        return np.ones(d, dtype=bool)
    return 4 * (X == 0).sum(axis=0) >= 3 * X.shape[0]  # as fit() chooses


def _mixed_rows(rng, n, p, nan=0.03):
    """Gaussian, count (mostly zero) and one-hot features that depend on the domain."""
    lab = rng.integers(0, p, n).astype(np.int32)
    gauss = rng.standard_normal((n, 3)) * [1.0, 5.0, 0.1] + lab[:, None] * [0.5, 0.0, -0.03]
    counts = rng.poisson(0.1 + 0.2 * (lab[:, None] == np.arange(6) % max(p, 1)), (n, 6)).astype(np.float64)
    onehot = np.eye(4)[rng.integers(0, 4, n)]
    X = np.hstack([gauss, counts, onehot])
    X[rng.random(X.shape) < nan] = np.nan
    return X, lab


def _logistic_cases():
    rng = np.random.default_rng(11)
    X, lab = _mixed_rows(rng, 600, 3)
    yield "random", X, lab, rng.standard_normal((X.shape[1] + 1, 3)) * 0.5
    # skewed: scales 1e-8 .. 1e8, a mean far above the spread, one domain in 95%
    # of the rows, a lone large count, and weights that push one row past the loss cap
    n = 500
    lab = np.where(rng.random(n) < 0.95, 0, rng.integers(1, 3, n)).astype(np.int32)
    X = np.column_stack([
        rng.standard_normal(n) * 1e-8, rng.standard_normal(n) * 1e8, 1e6 + rng.standard_normal(n),
        np.where(rng.random(n) < 0.02, 1e5, 0.0), np.zeros(n),
    ])
    X[7, 4] = 60.0
    W = rng.standard_normal((6, 3))
    W[4] = [0.0, 40.0, -40.0]
    yield "skewed", X, lab, W
    # missing and degenerate: an all-NaN feature, an all-NaN row, a constant feature
    X, lab = _mixed_rows(rng, 300, 3, nan=0.2)
    X[:, 1] = np.nan
    X[5] = np.nan
    X[:, 2] = 3.0
    yield "nan", X, lab, rng.standard_normal((X.shape[1] + 1, 3))
    X, lab = _mixed_rows(rng, 200, 1)
    yield "one-domain", X, lab, rng.standard_normal((X.shape[1] + 1, 1))
    yield "one-row", X[:1], lab[:1] * 0 + 1, rng.standard_normal((X.shape[1] + 1, 2))
    yield "empty", X[:0], lab[:0], rng.standard_normal((X.shape[1] + 1, 3))
    yield "no-features", X[:, :0], lab * 0, rng.standard_normal((1, 2))


@pytest.mark.parametrize("mode", ["dense", "auto", "sparse"])
@pytest.mark.parametrize("case", list(_logistic_cases()), ids=lambda c: c[0])
def test_loss_grad_matches_reference(case, mode):
    """Every layout of the features gives the reference sums, up to the per-term rounding."""
    name, X, lab, W = case
    n = X.shape[0]
    mean, scale = _standardization(X)
    rows = _logistic.Rows(X, mean, 1.0 / scale, _sparse_mask(X, mode), lab)
    shift = dc.fixed_point_shift(n, rows.bound)
    unit = 2.0**-shift
    loss, G = rows.loss_grad(W, shift)
    g = _logistic.standardized_gradient(G, rows.center) * unit
    want_loss, want = ref.logistic_loss_grad(X, mean, scale, lab, W)
    # half a unit per rounded term, the sparse features' centers times the bias
    # sum's rounding, and a relative error per row in the probabilities
    c = float(np.abs(rows.center).max(initial=0.0))
    atol = (n + 1) * unit * (1.0 + c) + 1e-12 * max(n, 1) * max(rows.bound, 1.0)
    np.testing.assert_allclose(g, want, rtol=1e-12, atol=atol, err_msg=f"{name} {mode}")
    assert abs(loss * unit - want_loss) <= (n + 1) * unit + 1e-12 * max(n, 1) * (abs(want_loss) + 1)
    if name == "empty":
        assert loss == 0 and not G.any()
    if name == "one-domain":
        assert loss == 0 and not G.any()  # p = 1: probability 1, residual 0
    if name == "skewed":
        assert want_loss > _logistic.LOSS_CAP  # the capped row is in the case


@pytest.mark.parametrize("threads", [1, 2])
def test_loss_grad_sums_are_split_independent(threads):
    """Per-rank integer sums add up to the single-process sums for any cut of the rows."""
    rng = np.random.default_rng(5)
    n = 9000  # two threads' worth of rows (4096 each), several blocks of 256
    X, lab = _mixed_rows(rng, n, 3)
    X[:, 0] *= 1e3
    mean, scale = _standardization(X)
    sparse = _sparse_mask(X, "auto")
    assert sparse.any() and not sparse.all()
    W = rng.standard_normal((X.shape[1] + 1, 3))
    before = _openmp.get_max_threads()
    _openmp.set_num_threads(threads)
    try:
        whole = _logistic.Rows(X, mean, 1.0 / scale, sparse, lab)
        shift = dc.fixed_point_shift(n, whole.bound)
        loss, G = whole.loss_grad(W, shift)
        cuts = [[0, n], [0, 0, n, n], [0, 1, 255, 257, 4096, 8191, n], [0, 4500, 4500, n],
                sorted([0, n, *rng.integers(0, n, 5)])]
        for cut in cuts:
            total_loss, total_G = 0, np.zeros_like(G)
            for a, b in zip(cut[:-1], cut[1:]):
                part = _logistic.Rows(X[a:b], mean, 1.0 / scale, sparse, lab[a:b])
                l, g = part.loss_grad(W, shift)
                total_loss += l
                total_G += g
            assert total_loss == loss and np.array_equal(total_G, G), cut
        assert whole.count_correct(W) == int(((np.nan_to_num((X - mean) / scale) @ W[:-1] + W[-1]).argmax(1) == lab).sum())
    finally:
        _openmp.set_num_threads(before)


def test_loss_grad_takes_float32_rows():
    rng = np.random.default_rng(8)
    X, lab = _mixed_rows(rng, 500, 3)
    X32 = X.astype(np.float32)
    mean, scale = _standardization(X32.astype(np.float64))
    W = rng.standard_normal((X.shape[1] + 1, 3))
    a = _logistic.Rows(X32, mean, 1.0 / scale, _sparse_mask(X, "auto"), lab)
    b = _logistic.Rows(X32.astype(np.float64), mean, 1.0 / scale, _sparse_mask(X, "auto"), lab)
    shift = dc.fixed_point_shift(500, a.bound)
    la, ga = a.loss_grad(W, shift)
    lb, gb = b.loss_grad(W, shift)
    assert la == lb and np.array_equal(ga, gb)


def test_loss_grad_rejects_bad_input():
    X = np.ones((3, 2))
    rows = _logistic.Rows(X, np.zeros(2), np.ones(2), np.zeros(2, dtype=bool), np.array([0, 1, 2], dtype=np.int32))
    with pytest.raises(ValueError, match="domain label"):
        rows.loss_grad(np.zeros((3, 2)), 30)
    with pytest.raises(ValueError, match="finite"):
        rows.loss_grad(np.full((3, 3), np.nan), 30)
    with pytest.raises(ValueError, match="too large"):
        rows.loss_grad(np.zeros((3, 3)), 45)
    with pytest.raises(ValueError, match="shape"):
        rows.loss_grad(np.zeros((2, 3)), 30)


def test_moments_are_correctly_rounded():
    rng = np.random.default_rng(9)
    n = 2000
    X = rng.standard_normal((n, 6)) * 10.0 ** rng.uniform(-150, 150, 6) + 10.0 ** rng.uniform(-3, 3, 6)
    X[rng.random(X.shape) < 0.5] = 0.0
    X[rng.random(X.shape) < 0.1] = np.nan
    X[:, 4] = np.nan
    X[:, 5] = 0.0
    mean, scale, zeros = dc._moments(Comm(_mpi().COMM_SELF), X)
    for j in range(6):
        col = X[:, j][~np.isnan(X[:, j])]
        m = math.fsum(col) / len(col) if len(col) else 0.0
        assert mean[j] == m
        sd = math.sqrt(math.fsum((col - m) ** 2) / len(col)) if len(col) > 1 else 0.0
        assert scale[j] == (sd if sd > 0 else 1.0)
        assert zeros[j] == int((X[:, j] == 0).sum())
    with pytest.raises(ValueError, match="non-finite"):
        _exact.column_partials(np.array([[1.0, np.inf]]))


@pytest.mark.parametrize("mode", ["dense", "auto"])
def test_gradient_matches_finite_differences(mode):
    rng = np.random.default_rng(0)
    n, p = 200, 3
    X, lab = _mixed_rows(rng, n, p, nan=0.05)  # missing values count as the mean (z = 0)
    d = X.shape[1]
    mean, scale = _standardization(X)
    W = rng.standard_normal((d + 1, p)) * 0.3
    shift = 40
    rows = _logistic.Rows(X, mean, 1.0 / scale, _sparse_mask(X, mode), lab)
    if mode == "auto":
        assert rows.nnz and rows.n_dense < d
    loss, G = rows.loss_grad(W, shift)
    grad = _logistic.standardized_gradient(G, rows.center)

    def f(Wx):
        Z = np.nan_to_num((X - mean) / scale)
        z = Z @ Wx[:d] + Wx[d]
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


def test_dense_shorthand_counts_nan_as_zero():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 4))
    X[rng.random(X.shape) < 0.1] = np.nan
    lab = rng.integers(0, 3, 300).astype(np.int32)
    W = rng.standard_normal((5, 3))
    loss, G = _logistic.loss_grad(X, lab, W, 40)
    want_loss, want = ref.logistic_loss_grad(X, np.zeros(4), np.ones(4), lab, W)
    assert abs(loss * 2.0**-40 - want_loss) < 1e-8
    np.testing.assert_allclose(G * 2.0**-40, want, atol=1e-8)


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
    Z = (X - X.mean(0)) / X.std(0)
    skl = sklearn.LogisticRegression(C=1.0, tol=1e-10, max_iter=2000).fit(Z, dom)
    # Run to convergence, the fit is scikit-learn's optimum.
    tight = dc.fit(Comm(_mpi().COMM_SELF), X, dom, 3, l2=1.0, tol=1e-10)
    np.testing.assert_allclose(tight.W[:d], skl.coef_.T, atol=1e-6)
    np.testing.assert_allclose(tight.proba(X), skl.predict_proba(Z), atol=1e-6)
    # The default stops at gradients of 1e-5 (observed here: weights within
    # 1.1e-4, probabilities within 8e-5 of the optimum).
    clf = dc.fit(Comm(_mpi().COMM_SELF), X, dom, 3, l2=1.0)
    assert clf.iterations < tight.iterations
    np.testing.assert_allclose(clf.W[:d], skl.coef_.T, atol=5e-4)
    np.testing.assert_allclose(clf.proba(X), skl.predict_proba(Z), atol=3e-4)


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
    mb = MultiBoost({"weak_learner": "stump"})
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


@pytest.mark.parametrize("weighted", [False, True])
def test_one_domain_multiboost_is_adaboost(weighted):
    """With one domain Q = 1, the soft-max is the loss itself: MultiBoost = AdaBoost (closed-form step); with
    sample weights too (AdaBoost's own weights are checked against the repeated rows in test_weights)."""
    rng = np.random.default_rng(3)
    n = 1500
    X = rng.standard_normal((n, 4))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.standard_normal(n) > 0, 1, -1)
    shard = _shard(X, y, np.zeros(n, dtype=np.int32), 1)
    if weighted:
        shard.weight = rng.uniform(0.2, 3.0, n)
    mb = MultiBoost({"step": "closed-form", "weak_learner": "stump"})
    mb.setup(shard, _self_proto())
    ab = AdaBoost({"weak_learner": "histogram"})
    ab.setup(shard, _self_proto())
    for t in range(1, 16):
        h1, h2 = mb.select(t), ab.select(t)
        assert h1.stump == h2.stump
        assert h1.coef == pytest.approx(h2.coef, rel=1e-9)
        mb.apply(h1)
        ab.apply(h2)
    assert np.array_equal(mb.Q[:, 0], np.ones(n))


def test_multiboost_beats_adaboost_all_on_conflicting_domains():
    train = multisource.generate(9000, seed=1)
    test = multisource.generate(9000, seed=2)
    shard = _shard(train.X, train.y, train.domain, 3)
    results = {}
    for name, algo in (("multiboost", MultiBoost({"weak_learner": "stump"})),
                       ("adaboost", AdaBoost({"weak_learner": "histogram"}))):
        algo.setup(shard, _self_proto())
        for t in range(1, 41):
            h = algo.select(t)
            if h is None:
                break
            algo.apply(h)
        model = algo.finish()
        cols = np.empty((test.X.shape[1], test.X.shape[0]), dtype=np.uint8)
        model.bins.transform(test.X.astype(np.float64), out=cols.T)
        pred = model.predict_binned(cols, test.X.astype(np.float64) if model.needs_raw else None)
        errs = [np.mean(pred[test.domain == k] != test.y[test.domain == k]) for k in range(3)]
        results[name] = max(errs)
    assert results["multiboost"] < 0.05
    assert results["adaboost"] > 3 * results["multiboost"]


def test_exact_max_stops_when_stuck():
    """temperature 0 is the paper's exact max: tied domains whose experts conflict leave no descent."""
    train = multisource.generate(3000, seed=1)
    mb = MultiBoost({"temperature": 0.0, "weak_learner": "stump"})
    mb.setup(_shard(train.X, train.y, train.domain, 3), _self_proto())
    assert mb.select(1) is None


def _shared_concept(n, seed):
    """Three domains that a linear Q separates (a shift on 3 location features) but one label rule, noisy.

    The rule uses 6 of 12 features, so stumps trained on one domain's third of
    the rows are worse than stumps trained on all of them.
    """
    rng = np.random.default_rng(seed)
    domain = np.repeat(np.arange(3), n // 3).astype(np.int32)
    X = rng.standard_normal((domain.size, 12))
    X[:, :3] += 4.0 * np.eye(3)[domain]
    w = np.array([0, 0, 0, 1.0, -0.8, 0.6, 0.5, -0.4, 0.3, 0, 0, 0])
    y = np.where(X @ w + 0.6 * rng.standard_normal(domain.size) > 0, 1, -1)
    return X, y, domain


def _agnostic_error(algo, X, y, domain, rounds):
    for t in range(1, rounds + 1):
        h = algo.select(t)
        if h is None:
            break
        algo.apply(h)
    model = algo.finish()
    cols = np.empty((X.shape[1], X.shape[0]), dtype=np.uint8)
    model.bins.transform(X, out=cols.T)
    pred = model.predict_binned(cols, X if model.needs_raw else None)
    return max(float(np.mean(pred[domain == k] != y[domain == k])) for k in range(3))


def test_shared_gates_are_not_worse_than_pooling_where_the_domains_share_the_rule():
    """Where Q separates the domains but the label rule is shared, the paper's gated stumps each serve one
    domain and fit it on its own rows; the shared set takes the ungated stump and keeps AdaBoost-all's error."""
    X, y, domain = _shared_concept(1200, 1)
    Xt, yt, dt = _shared_concept(30000, 2)
    errors = {}
    for name, algo in (("shared", MultiBoost({"weak_learner": "stump"})),
                       ("paper", MultiBoost({"gates": "paper", "weak_learner": "stump"})),
                       ("adaboost", AdaBoost({"weak_learner": "histogram"}))):
        algo.setup(_shard(X, y, domain, 3), _self_proto())
        errors[name] = _agnostic_error(algo, Xt, yt, dt, 60)
    assert errors["shared"] <= errors["adaboost"] + 0.01, errors
    assert errors["paper"] > errors["shared"] + 0.01, errors


def test_calibration_softens_an_overconfident_q_and_keeps_its_argmax():
    """200 features, 300 rows, weak domain signal: Q separates its training rows, not new ones."""
    rng = np.random.default_rng(5)
    n, d = 300, 200
    domain = np.repeat(np.arange(3), n // 3).astype(np.int32)
    X = rng.standard_normal((n, d))
    X[:, 0] += 0.7 * domain
    comm = Comm(_mpi().COMM_SELF)
    clf = dc.fit(comm, X, domain, 3)
    T, losses = dc.calibrate(comm, X, domain, np.arange(n), 3)
    assert T > 1.0 and clf.train_accuracy > 0.95
    assert losses[list(dc.TEMPERATURES).index(T)] == losses.min() < losses[list(dc.TEMPERATURES).index(1.0)]
    soft = dc.tempered(clf, T)
    assert np.array_equal(soft.proba(X).argmax(axis=1), clf.proba(X).argmax(axis=1))
    assert soft.proba(X).max(axis=1).mean() < clf.proba(X).max(axis=1).mean()
    again = dc.DomainClassifier.from_dict(soft.to_dict())
    assert again.temperature == T and np.array_equal(again.W, soft.W)
    assert "temperature" not in clf.to_dict()  # Q as fitted: the paper's model, unchanged


def test_calibration_folds_follow_the_global_row_ids():
    """Rows split over shards with their global ids give the same temperature and losses as one shard."""
    rng = np.random.default_rng(6)
    n = 240
    domain = np.repeat(np.arange(2), n // 2).astype(np.int32)
    X = rng.standard_normal((n, 30))
    X[:, :2] += domain[:, None]
    comm = Comm(_mpi().COMM_SELF)
    one = dc.calibrate(comm, X, domain, np.arange(n), 2)
    order = rng.permutation(n)  # the same rows in another order: folds go by id, not position
    other = dc.calibrate(comm, X[order], domain[order], order, 2)
    assert one[0] == other[0]
    np.testing.assert_allclose(one[1], other[1], rtol=1e-9)


def test_q_calibrate_and_a_fixed_temperature_exclude_each_other():
    with pytest.raises(ValueError, match="--q-calibrate"):
        MultiBoost({"q_calibrate": True, "q_temperature": 2.0})
    assert MultiBoost({"q_temperature": 2.0}).params["q_calibrate"] is False


@pytest.mark.parametrize("loss", ["logistic", "exponential"])
def test_newton_leaves_are_the_leaves_gradient_over_curvature_scaled_to_at_most_1(loss):
    """Trees of Newton leaves: after the prior (round 0, a one-leaf tree of the log-odds, or half of it for
    the exponential loss), each leaf of the first tree is G_l / H_l of its rows' (gradient, curvature)
    sums, divided by the largest |G_l / H_l|; the candidate's slope is sum_l G_l v_l (naive sums here)."""
    X, y, domain = _shared_concept(900, 3)
    algo = MultiBoost({"weak_learner": "tree", "loss": loss, "max_leaves": 6})
    algo.setup(_shard(X, y, domain, 3), _self_proto())
    pos = np.mean(y > 0)
    prior = math.log(pos / (1 - pos)) * (1.0 if loss == "logistic" else 0.5)
    zero = algo.model.trees[0]
    assert algo.model.round[0] == 0 and zero.n_nodes == 1 and zero.value[0, 0] == pytest.approx(prior, rel=1e-12)
    margin = y * prior
    np.testing.assert_allclose(algo.margin, margin, rtol=1e-15)
    a = 1.0 / (1.0 + np.exp(margin)) if loss == "logistic" else np.exp(-margin)
    curv = a * (1.0 - a) if loss == "logistic" else a
    pi, _ = algo._softmax(algo._phi())
    total = float(pi @ algo._phi())
    per_row = (pi / algo.m)[domain] / total
    k = algo.p  # the ungated candidate: Q = 1 on every row
    tree, slope = algo._grow(algo._tree_units(k, per_row * algo.a, per_row * algo._curvature_weights()))
    leaf = tree.leaves(algo.data.cols)
    leaves = np.flatnonzero(tree.feature < 0)
    G = np.array([np.sum((per_row * a * y)[leaf == n]) for n in leaves])
    H = np.array([np.sum((per_row * curv)[leaf == n]) for n in leaves])
    want = (G / H) / np.max(np.abs(G / H))
    np.testing.assert_allclose(tree.value[leaves, 0], want, rtol=1e-6)  # the fixed-point units: ~1e-12 per row
    assert np.max(np.abs(tree.value[leaves, 0])) == 1.0
    assert slope == pytest.approx(float(G @ want), rel=1e-6)



@pytest.mark.parametrize("loss,leaves", [("exponential", "sign"), ("logistic", "newton")])
def test_weighted_domain_losses_are_numpys(loss, leaves):
    """Sample weights: each round's per-domain loss F_k is numpy's weighted mean loss sum w_i L(y_i f(x_i)) / W_k
    of the model so far (its scores recomputed from the model), and the prior the weighted log-odds."""
    X, y, domain = _shared_concept(900, 5)
    w = np.random.default_rng(2).uniform(0.1, 4.0, y.size)
    shard = _shard(X, y, domain, 3)
    shard.weight = w
    algo = MultiBoost({"weak_learner": "tree", "loss": loss, "tree_leaves": leaves, "max_leaves": 4})
    algo.setup(shard, _self_proto())
    if leaves == "newton":
        pos = w[y > 0].sum() / w.sum()
        prior = math.log(pos / (1 - pos)) * (1.0 if loss == "logistic" else 0.5)
        assert algo.model.trees[0].value[0, 0] == pytest.approx(prior, rel=1e-12)
    for t in range(1, 6):
        margin = y * algo.model.decision_function(X)
        per_row = np.logaddexp(0.0, -margin) if loss == "logistic" else np.exp(-margin)
        want = np.array([np.sum((w * per_row)[domain == k]) / w[domain == k].sum() for k in range(3)])
        np.testing.assert_allclose(algo._phi(), want, rtol=1e-9)
        h = algo.select(t)
        assert h is not None
        algo.apply(h)
