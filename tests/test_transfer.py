"""The instance-transfer algorithms (MSDTrA, MSTrA, DTrAdaBoost, TrAdaBoost) and their kernels."""
import math

import numpy as np
import pytest

import reference as ref
from mpiboost._ext import _transfer, _weights
from mpiboost.boost import ALGORITHMS
from mpiboost.boost.dtradaboost import DTrAdaBoost
from mpiboost.boost.msdtra import MSDTrA
from mpiboost.boost.mstra import MSTrA, alpha_a
from mpiboost.boost.tradaboost import TrAdaBoost
from mpiboost.boost.transfer import EPS_MIN, beta_a
from mpiboost.comm import Comm, _mpi
from mpiboost.data.binning import BinMapper, edges_from_counts, local_distinct, merge_distinct
from mpiboost.data.load import Layout, Shard
from mpiboost.data.synth import transfer as synth_transfer
from mpiboost.protocol import FIXED_SHIFT, Protocol
from mpiboost.weak.stump import Stump

# the transfer algorithms of the registry (those with a target domain)
ALGOS = {name: cls for name, cls in ALGORITHMS.items() if cls.has("target_domain")}


def _proto():
    return Protocol(Comm(_mpi().COMM_SELF))


def _shard(X, y, domain, names):
    X = np.asarray(X, dtype=np.float64)
    bins = BinMapper([edges_from_counts(*merge_distinct([d]), max_bins=32) for d in local_distinct(X)])
    cols = np.empty((X.shape[1], X.shape[0]), dtype=np.uint8)
    bins.transform(X, out=cols.T)
    p = len(names)
    return Shard(
        cols=cols, y=np.asarray(y, dtype=np.int8), domain=np.asarray(domain, dtype=np.int32), start=0,
        n_global=len(y), n_domains=p, files=[], layout=Layout(len(y), 1), bins=bins,
        domain_counts=np.bincount(domain, minlength=p).astype(np.int64), domain_names=list(names),
    )


def _synth_shard(sources=3, n=150, target_n=40, seed=1, d=6):
    data = synth_transfer.generate(n, sources=sources, target_n=target_n, seed=seed, task_seed=seed, d=d, informative=3)
    return _shard(data.X, data.y, data.domain, data.domain_names)


# The papers' rules exactly (the defaults add a target-only candidate, a balanced
# start and an error floor; tests/test_transfer_defaults.py covers those).
PAPER = {"candidates": "paper", "initial_split": "paper", "eps_floor": 0.0}


def _setup(cls, shard, rounds=10, **params):
    paper = dict(PAPER, source_update="paper") if cls.has("source_update") else PAPER
    algo = cls({"weak_learner": "histogram", "rounds": rounds, **paper, **params})
    algo.setup(shard, _proto())
    return algo


# ------------------------------------------------------------------ kernels
def _random_bins(rng, d, n, skewed=False):
    if skewed:
        cols = np.where(rng.random((d, n)) < 0.9, 0, rng.integers(0, 6, (d, n))).astype(np.uint8)
    else:
        cols = rng.integers(0, 12, (d, n)).astype(np.uint8)
    cols[rng.random((d, n)) < 0.05] = 255  # missing
    return np.ascontiguousarray(cols)


@pytest.mark.parametrize("case", ["random", "skewed", "one-domain", "empty", "one-row"])
def test_domain_histograms_match_the_naive_sums(case):
    rng = np.random.default_rng(7)
    d, n, p = 5, {"empty": 0, "one-row": 1}.get(case, 3000), 1 if case == "one-domain" else 4
    cols = _random_bins(rng, d, n, skewed=case == "skewed")
    g = rng.integers(-(2**40), 2**40, n).astype(np.int64)
    if case == "skewed":
        g[rng.random(n) < 0.5] = 0
    domain = rng.integers(0, p, n).astype(np.int32)
    hists = np.full((p, d, 256), 99, dtype=np.int64)
    _transfer.domain_histograms(cols, g, domain, hists)
    for k in range(p):
        rows = domain == k
        assert np.array_equal(hists[k], ref.histogram(cols[:, rows].T, g[rows])), k
    with pytest.raises(ValueError):
        _transfer.domain_histograms(cols, g, np.full(n, p, dtype=np.int32), hists) if n else (_ for _ in ()).throw(
            ValueError()
        )


@pytest.mark.parametrize("layout", ["runs", "interleaved"])
def test_local_histograms_per_domain(layout):
    rng = np.random.default_rng(3)
    shard = _synth_shard(sources=3, n=300, target_n=50, seed=2)
    if layout == "interleaved":
        perm = rng.permutation(shard.n_local)
        shard.cols = np.ascontiguousarray(shard.cols[:, perm])
        shard.y = shard.y[perm]
        shard.domain = np.ascontiguousarray(shard.domain[perm])
    algo = _setup(MSDTrA, shard)
    assert algo._use_runs == (layout == "runs")
    algo.w = rng.random(shard.n_local) * np.exp(rng.normal(0, 3, shard.n_local))
    algo.w /= algo.w.sum()
    hists = algo.local_histograms()
    units = np.empty(shard.n_local, dtype=np.int64)
    _weights.fixed_signed(algo.w, shard.y, FIXED_SHIFT, units)
    for k in range(4):
        rows = shard.domain == k
        assert np.array_equal(hists[k], ref.histogram(shard.cols[:, rows].T, units[rows])), k


def test_pooled_candidate_uses_one_histogram_of_every_row():
    shard = _synth_shard(sources=3, n=200, target_n=30, seed=4)
    algo = _setup(TrAdaBoost, shard)
    hists = algo.local_histograms()
    units = np.empty(shard.n_local, dtype=np.int64)
    _weights.fixed_signed(algo.w, shard.y, FIXED_SHIFT, units)
    assert hists.shape[0] == 1 and np.array_equal(hists[0], ref.histogram(shard.cols.T, units))


def test_histogram_of_a_row_range():
    from mpiboost._ext import _histogram

    rng = np.random.default_rng(1)
    cols = _random_bins(rng, 3, 70000)
    cols[1] = cols[1] % 2  # a 0/1 column takes the masked sum
    g = rng.integers(-(2**40), 2**40, 70000).astype(np.int64)
    binary = _histogram.binary_columns(cols)
    hist = np.zeros((3, 256), dtype=np.int64)
    for lo, hi in [(0, 70000), (5, 5), (17, 40000), (69999, 70000)]:
        _histogram.build_histogram(cols, g, hist, binary, lo, hi)
        assert np.array_equal(hist, ref.histogram(cols[:, lo:hi].T, g[lo:hi])), (lo, hi)
    with pytest.raises(ValueError):
        _histogram.build_histogram(cols, g, hist, binary, 10, 70001)


def _naive_row_errors(cols, y, stumps, vt, hard):
    h = np.array([[ref.stump_value(cols[:, i], s.feature, *s.args()) for i in range(cols.shape[1])] for s in stumps])
    wrong = (h != y[None, :]).astype(np.float64)
    if hard:
        pos = np.array([math.fsum(vt[k] for k in range(len(stumps)) if h[k, i] > 0) for i in range(cols.shape[1])])
        return ((np.where(pos >= 0.5, 1, -1)) != y).astype(np.float64), h
    return np.array([math.fsum(vt[k] * wrong[k, i] for k in range(len(stumps))) for i in range(cols.shape[1])]), h


@pytest.mark.parametrize("hard", [False, True])
@pytest.mark.parametrize("m", [1, 3, 8, 40])
def test_transfer_update_matches_a_row_by_row_reference(hard, m):
    rng = np.random.default_rng(m + 10 * hard)
    d, n = 4, 2500
    cols = _random_bins(rng, d, n)
    y = rng.choice(np.array([-1, 1], dtype=np.int8), n)
    stumps = [Stump(int(rng.integers(-1, d)), int(rng.integers(0, 12)), int(rng.choice([-1, 1])), bool(rng.integers(2)))
              for _ in range(m)]
    vt = rng.random(m)
    vt /= vt.sum()
    coef = rng.normal(size=m)
    src = (rng.random(n) < 0.7).astype(np.uint8)
    w = rng.random(n) * np.exp(rng.normal(0, 5, n))  # skewed weights
    score = rng.normal(size=n)
    mt, lt, ms, ls = 1.0, 0.8, 1.3, -0.4
    e, h = _naive_row_errors(cols, y, stumps, vt, hard)
    w_ref = np.where(src == 1, w * ms * np.exp(e * ls), w * mt * np.exp(e * lt))
    score_ref = score + coef @ h
    args = TransferArgs(stumps)
    te, se = _transfer.transfer_update(w, score, cols, y, src, *args, vt, coef, hard, mt, lt, ms, ls)
    np.testing.assert_allclose(w, w_ref, rtol=1e-13)
    np.testing.assert_allclose(score, score_ref, rtol=1e-12, atol=1e-12)
    wrong = np.where(score >= 0, 1, -1) != y
    assert te == int((wrong & (src == 0)).sum()) and se == int((wrong & (src == 1)).sum())
    out = np.empty(n)
    _transfer.row_errors(cols, y, *args, vt, hard, out)
    np.testing.assert_allclose(out, e, rtol=1e-14, atol=0)


def TransferArgs(stumps):
    from mpiboost.boost.transfer import TransferBoosting

    return TransferBoosting._stump_arrays(stumps)


# ------------------------------------------------------- one round by hand
def _reference_round(algo, cls, w):
    """Every number of one round from the rows and the weights, in numpy."""
    data = algo.data
    cols, y, dom = data.cols, data.y.astype(np.int64), data.domain
    tgt = algo.target
    units = np.empty(len(w), dtype=np.int64)
    _weights.fixed_signed(w, data.y, FIXED_SHIFT, units)
    groups = [(tgt, k) for k in algo.sources] if cls.per_source else [tuple(range(data.n_domains))]  # domain ids
    stumps = []
    for doms in groups:
        rows = np.isin(dom, doms)
        f, b, left, ml, _ = ref.best_stump(ref.histogram(cols[:, rows].T, units[rows]), data.bins.n_bins)
        stumps.append(Stump(f, b, left, ml))
    h = np.array([[ref.stump_value(cols[:, i], s.feature, *s.args()) for i in range(len(y))] for s in stumps])
    miss = (h != y[None, :]).astype(float)
    t = dom == tgt
    eps = np.array([math.fsum(w[t] * miss[k, t]) / math.fsum(w[t]) for k in range(len(stumps))])
    src = ~t
    n_a = int(src.sum())
    M = algo.rounds
    if cls is MSTrA:
        k = int(np.argmin(eps))
        e = eps[k]
        alpha = 0.5 * math.log((1 - e) / e)
        a = 0.5 * math.log(1 + math.sqrt(2 * math.log(n_a) / M))
        new = np.where(src, w * np.exp(-a * miss[k]), w * np.exp(alpha * miss[k]))
        return stumps, eps, e, new / math.fsum(new), [stumps[k]], [alpha]
    if cls is MSDTrA:
        v = np.exp(1 - 2 * eps)
        vt = v / v.sum()
    else:
        vt = np.ones(1)
    row_e = vt @ miss
    e = math.fsum(w[t] * row_e[t]) / math.fsum(w[t])
    bt = e / (1 - e)
    ba = 1 / (1 + math.sqrt(2 * math.log(n_a) / M))
    C = 2 * (1 - e) if cls in (MSDTrA, DTrAdaBoost) else 1.0
    new = np.where(src, C * w * ba**row_e, w * bt ** (-row_e))
    return stumps, eps, e, new / math.fsum(new), stumps, list(0.5 * math.log(1 / bt) * vt)


@pytest.mark.parametrize("name", sorted(ALGOS))
def test_rounds_match_a_numpy_reference(name):
    cls = ALGOS[name]
    algo = _setup(cls, _synth_shard(), rounds=10, high_error="clip")
    for t in range(1, 5):
        w = algo.w.copy()
        stumps, eps, e, w_new, voted, coefs = _reference_round(algo, cls, w)
        h = algo.select(t)
        assert h is not None
        np.testing.assert_allclose(h.metrics["eps_sources"], eps, rtol=1e-13)
        assert h.metrics["candidates"] == [
            {"feature": s.feature, "bin": s.bin, "left": s.left, "missing_left": s.missing_left} for s in stumps
        ]
        if e < 0.5:
            assert h.metrics["eps_t"] == pytest.approx(e, rel=1e-12)
        assert [s for s, _ in h.members()] == voted
        out = algo.apply(h)
        if e < 0.5:
            np.testing.assert_allclose([c for _, c in h.members()], coefs, rtol=1e-12)
            np.testing.assert_allclose(algo.w, w_new, rtol=1e-12)
        assert math.fsum(algo.w) == pytest.approx(1.0, abs=1e-14)
        assert out["target_mass"] + out["source_mass"] == pytest.approx(1.0, abs=1e-12)
    assert algo.model.n_rounds == 4
    assert algo.model.n_stumps == 4 * (3 if cls is MSDTrA else 1)


# ---------------------------------------------------------------- Theorem 1
def _theorem1_shard(eps, n_a=1000, n_b=200, sources=2):
    """Sources labelled by sign(x) (every source row right for the stump at 0);
    a fraction ``eps`` of the target rows flipped."""
    rng = np.random.default_rng(0)
    x = rng.choice([-1.0, 1.0], n_a + n_b)
    y = np.where(x > 0, 1, -1)
    flip = np.zeros(len(x), bool)
    flip[rng.choice(n_b, int(round(eps * n_b)), replace=False)] = True
    y[flip] = -y[flip]
    domain = np.concatenate([np.zeros(n_b, int), 1 + np.arange(n_a) % sources])
    return _shard(x[:, None], y, domain, ["target"] + [f"source{k + 1}" for k in range(sources)])


@pytest.mark.parametrize("eps,factor", [(0.1, 0.882), (0.2, 0.909), (0.3, 0.9375), (0.4, 0.968)])
def test_theorem1_dynamic_factor_keeps_correct_source_weights(eps, factor):
    """One round from uniform weights with every source row right (Theorem 1 of Zhang et al. 2014)."""
    shard = _theorem1_shard(eps)
    n_a, n_b = 1000, 200
    exact = 1.0 / (n_a / (n_a + n_b) + 2 * (1 - eps) * n_b / (n_a + n_b))
    assert exact == pytest.approx(factor, abs=6e-4)
    for cls, expected in [(MSDTrA, 1.0), (DTrAdaBoost, 1.0), (TrAdaBoost, exact)]:
        algo = _setup(cls, shard, rounds=20)
        src = algo.is_source == 1
        before = algo.w[src].copy()
        h = algo.select(1)
        assert h.metrics["eps_t"] == pytest.approx(eps, rel=1e-12)
        assert all(e == pytest.approx(eps, rel=1e-12) for e in h.metrics["eps_sources"])
        algo.apply(h)
        ratio = algo.w[src] / before
        np.testing.assert_allclose(ratio, expected, rtol=1e-12, atol=0)


# ------------------------------------------------------------- Eq. 16, ties
def test_combined_soft_error_is_the_mixture_of_the_candidate_errors():
    algo = _setup(MSDTrA, _synth_shard(sources=4, seed=3), high_error="clip")
    seen = 0
    for t in range(1, 6):
        h = algo.select(t)
        eps = np.array(h.metrics["eps_sources"])
        vt = np.array(h.metrics["v"])
        np.testing.assert_allclose(vt, np.exp(1 - 2 * eps) / np.exp(1 - 2 * eps).sum(), rtol=1e-14)
        stumps = [s for s, _ in h.members()]
        direct = algo.mixture_error(stumps, vt, hard=False)  # sum_j w_j |f_t(x_j) - y_j| / sum_j w_j
        assert direct == pytest.approx(float(vt @ eps), rel=1e-13)
        assert h.metrics["eps_t_raw"] == pytest.approx(direct, rel=1e-13)
        seen += len(set(stumps)) > 1
        algo.apply(h)
    assert seen  # the candidates differed in some round


def test_hard_error_thresholds_the_mixture():
    algo = _setup(MSDTrA, _synth_shard(sources=4, seed=3), hard_error=True, high_error="clip")
    h = algo.select(1)
    stumps = [s for s, _ in h.members()]
    vt = np.array(h.metrics["v"])
    e, _ = _naive_row_errors(algo.t_cols, algo.t_y, stumps, vt, True)
    wt = algo.w[algo.t_rows]
    assert h.metrics["eps_t_raw"] == pytest.approx(math.fsum(wt * e) / math.fsum(wt), rel=1e-13)


# --------------------------------------------------- special cases, equalities
def _train_rounds(algo, rounds):
    for t in range(1, rounds + 1):
        h = algo.select(t)
        if h is None:
            break
        algo.apply(h)
    return algo


def test_one_source_msdtra_is_dtradaboost():
    shard = _synth_shard(sources=1, seed=5)
    a = _train_rounds(_setup(MSDTrA, shard, high_error="clip", vote_from="half"), 8)
    b = _train_rounds(_setup(DTrAdaBoost, shard, high_error="clip"), 8)
    assert a.model.n_rounds == b.model.n_rounds == 8
    for name in ("feature", "bin", "left", "missing_left", "coef", "round"):
        assert np.array_equal(getattr(a.model, name), getattr(b.model, name)), name
    assert np.array_equal(a.w, b.w)


def test_dtradaboost_without_the_dynamic_factor_is_tradaboost():
    shard = _synth_shard(sources=3, seed=6)
    d = _setup(DTrAdaBoost, shard, high_error="clip")
    d.dynamic = False  # C_t = 1
    a = _train_rounds(d, 8)
    b = _train_rounds(_setup(TrAdaBoost, shard, high_error="clip"), 8)
    for name in ("feature", "bin", "left", "missing_left", "coef", "round"):
        assert np.array_equal(getattr(a.model, name), getattr(b.model, name)), name
    assert np.array_equal(a.w, b.w)


def test_vote_from_half_counts_the_later_rounds_only():
    shard = _synth_shard(sources=2, seed=2)
    algo = _train_rounds(_setup(TrAdaBoost, shard, high_error="clip"), 7)
    m = algo.model
    assert m.first_voting_round() == 4
    manual = sum(c * s.predict(shard.cols) for (s, c), r in zip(m.stumps(), m.round) if r >= 4)
    np.testing.assert_allclose(m.decision_binned(shard.cols), manual, rtol=1e-12, atol=1e-12)
    assert m.truncated(3).first_voting_round() == 2


def test_msdtra_model_has_one_stump_per_source_and_round():
    shard = _synth_shard(sources=3, seed=4)
    algo = _train_rounds(_setup(MSDTrA, shard, high_error="clip"), 5)
    m = algo.model
    assert m.n_rounds == 5 and list(m.round) == [r for r in range(1, 6) for _ in range(3)]
    rounds = m.rounds()
    assert [r for r, _ in rounds] == [1, 2, 3, 4, 5] and all(len(s) == 3 for _, s in rounds)
    assert m.truncated(2).n_stumps == 6


def test_error_floor_and_stop():
    # every row labelled by sign(x): the first candidate makes no mistake on the target
    x = np.linspace(-1, 1, 400)
    y = np.where(x > 0, 1, -1)
    dom = (np.arange(400) % 4 != 0).astype(int)
    shard = _shard(x[:, None], y, dom, ["target", "source1"])
    h = _setup(MSDTrA, shard).select(1)
    assert h.metrics["eps_t"] == EPS_MIN and h.metrics["eps_clipped"]
    # a target labelled against every source: no candidate is below 1/2 on it
    y2 = np.where(dom == 0, -y, y)
    shard2 = _shard(x[:, None], y2, dom, ["target", "source1"])
    assert _setup(MSDTrA, shard2).select(1) is None
    assert _setup(MSDTrA, shard2, high_error="clip").select(1).metrics["eps_t"] == 0.499


def test_setup_errors():
    shard = _synth_shard(sources=2)
    with pytest.raises(ValueError, match="histogram"):
        MSDTrA({"weak_learner": "sample", "rounds": 5})
    with pytest.raises(ValueError, match="rounds"):
        MSDTrA({"weak_learner": "histogram"})
    with pytest.raises(ValueError, match="no domain named"):
        _setup(MSDTrA, shard, target_domain="nope")
    one = _shard(np.zeros((5, 1)), np.ones(5), np.zeros(5, int), ["target"])
    with pytest.raises(ValueError, match="source"):
        _setup(MSDTrA, one)
    assert _setup(MSDTrA, shard, target_domain="source2").target == 2


def test_beta_a_and_alpha_a():
    assert beta_a(1000, 50) == pytest.approx(1 / (1 + math.sqrt(2 * math.log(1000) / 50)))
    assert alpha_a(1000, 50) == pytest.approx(0.5 * math.log(1 + math.sqrt(2 * math.log(1000) / 50)))
