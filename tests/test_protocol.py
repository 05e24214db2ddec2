"""Protocol primitives; collective (also run under mpiexec -n 2..4 by test_mpi_suite).

Every primitive is checked against the single-process result (bit for bit)
and against a slow reference, for several ways of splitting the rows.
"""
import numpy as np
import pytest

import reference as ref
from collective import comms, splits
from mpiboost import protocol as P
from mpiboost.comm import Comm, _mpi
from mpiboost.protocol import Protocol, fixed_point

pytest.importorskip("mpi4py")


def _self():
    return Protocol(Comm(_mpi().COMM_SELF))


def _weight_cases():
    rng = np.random.default_rng(17)
    yield "random", rng.random(3000)
    yield "skewed", 10.0 ** rng.uniform(-17, 0, 3000)
    yield "tied", rng.integers(1, 4, 3000).astype(float)
    spiked = rng.random(3000)
    spiked[rng.integers(0, 3000, 7)] = 500.0
    yield "spiked", spiked
    yield "uniform", np.ones(3000)
    z = rng.random(3000)
    z[::3] = 0.0
    yield "zeros", z


@pytest.mark.parametrize("comm", comms(), ids=lambda c: f"size{c.size}")
@pytest.mark.parametrize("small", [1, 4096])
def test_projection_matches_reference_and_single_process(comm, small, monkeypatch):
    monkeypatch.setattr(P, "SMALL_WINDOW", small)
    proto = Protocol(comm)
    for name, w in _weight_cases():
        w = w / w.sum()
        for eps in (0.05, 1.0) if name != "random" else (0.05, 0.3, 1.0):
            cap = 1.0 / (eps * w.size)
            expected = ref.projection(w, cap)
            single = w.copy()
            _self().smooth_projection(single, cap)
            for parts in splits(w.size, comm.size):
                a, b = parts[comm.rank]
                mine = w[a:b].copy()
                proto.smooth_projection(mine, cap)
                assert mine.tobytes() == single[a:b].tobytes(), (name, eps, parts)
            rel = np.abs(single - expected) / np.maximum(expected, 1e-300)
            assert rel.max() <= 1e-12, (name, eps, rel.max())
            assert single.max() <= cap * (1 + 1e-12)
            if np.count_nonzero(w) * cap >= 1:  # otherwise no smooth D has w's support
                assert abs(single.sum() - 1.0) <= 1e-12


@pytest.mark.parametrize("comm", comms(), ids=lambda c: f"size{c.size}")
def test_relative_projection_matches_reference_and_single_process(comm):
    """The sample-weighted SmoothBoost's projection, D_i <= kappa base_i: the sort-based reference, the same bits
    for every split of the rows, and with equal base shares the uniform projection's values."""
    proto = Protocol(comm)
    rng = np.random.default_rng(3)
    bases = {"random": rng.uniform(0.1, 3.0, 2000), "tied": rng.integers(1, 4, 2000).astype(float),
             "skewed": 10.0 ** rng.uniform(-8, 2, 2000), "uniform": np.ones(2000)}
    for bname, base in bases.items():
        base = base / base.sum()
        for name, w in _weight_cases():
            w = w[: base.size] * base  # a history's measure times the base, as SmoothBoost's weights are
            if name == "zeros":
                base = np.where(w > 0, base, 0.0)  # rows of no sample weight keep none
                base = base / base.sum()
            w = w / w.sum()
            for eps in (0.05, 0.5):
                kappa = 1.0 / eps
                expected = ref.relative_projection(w, base, kappa)
                single = w.copy()
                _self().relative_smooth_projection(single, base, kappa)
                for parts in splits(w.size, comm.size):
                    a, b = parts[comm.rank]
                    mine = w[a:b].copy()
                    proto.relative_smooth_projection(mine, base[a:b], kappa)
                    assert mine.tobytes() == single[a:b].tobytes(), (bname, name, eps, parts)
                np.testing.assert_allclose(single, expected, rtol=1e-12, atol=0, err_msg=f"{bname} {name} {eps}")
                assert (single <= kappa * base * (1 + 1e-12)).all()
                assert abs(single.sum() - 1.0) <= 1e-12
                if bname == "uniform" and name != "zeros":
                    uniform = w.copy()
                    _self().smooth_projection(uniform, kappa / w.size)
                    np.testing.assert_allclose(single, uniform, rtol=1e-12)


@pytest.mark.parametrize("comm", comms(), ids=lambda c: f"size{c.size}")
def test_sample_is_split_independent(comm):
    proto = Protocol(comm)
    rng = np.random.default_rng(4)
    n = 2000
    w = rng.dirichlet(np.full(n, 0.5))
    q = fixed_point(w)
    X = rng.integers(0, 255, (n, 3)).astype(np.uint8)
    cols = np.ascontiguousarray(X.T)
    y = np.where(rng.random(n) < 0.5, 1, -1).astype(np.int8)
    single = _self().proportional_sample(np.cumsum(q), cols, y, 700, np.random.default_rng(99), with_rows=True)
    for parts in splits(n, comm.size):
        a, b = parts[comm.rank]
        mine = np.ascontiguousarray(cols[:, a:b])
        got = proto.proportional_sample(np.cumsum(q[a:b]), mine, y[a:b], 700, np.random.default_rng(99), start=a, with_rows=True)
        if comm.is_center:
            assert np.array_equal(got.rows, single.rows)
            assert np.array_equal(got.X, X[single.rows]) and np.array_equal(got.y, y[single.rows])
        else:
            assert got is None


def test_sample_frequencies_match_weights():
    """Chi-square goodness of fit of the sampled row frequencies to the weights."""
    from scipy.stats import chisquare

    rng = np.random.default_rng(8)
    n, draws = 50, 200_000
    w = rng.dirichlet(np.ones(n))
    w[[3, 30]] = [0.2, 0.0]
    w /= w.sum()
    q = fixed_point(w)
    X = np.zeros((1, n), dtype=np.uint8)
    y = np.ones(n, dtype=np.int8)
    s = _self().proportional_sample(np.cumsum(q), X, y, draws, np.random.default_rng(1), with_rows=True)
    counts = np.bincount(s.rows, minlength=n)
    assert counts[30] == 0
    keep = q > 0
    expected = q[keep] / q[keep].sum() * draws
    stat, p = chisquare(counts[keep], expected)
    assert p > 1e-4, (stat, p)


@pytest.mark.parametrize("comm", comms(), ids=lambda c: f"size{c.size}")
def test_histograms_and_stats_are_exact(comm):
    from mpiboost._ext import _histogram

    proto = Protocol(comm)
    rng = np.random.default_rng(6)
    n, d = 999, 4
    X = rng.integers(0, 6, (n, d)).astype(np.uint8)
    g = rng.integers(-(2**55), 2**55, n).astype(np.int64)
    full = ref.histogram(X, g)
    values = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, n)
    groups = rng.integers(0, 3, n).astype(np.int32)
    single_stats = _self().reduce_stats(values, groups, 3)
    for parts in splits(n, comm.size):
        a, b = parts[comm.rank]
        h = np.empty((d, 256), dtype=np.int64)
        _histogram.build_histogram(np.ascontiguousarray(X[a:b].T), g[a:b], h)
        got = proto.reduce_histograms(h)
        if comm.is_center:
            np.testing.assert_array_equal(got, full)
        stats = proto.reduce_stats(values[a:b], groups[a:b], 3)
        assert stats.tobytes() == single_stats.tobytes()
        totals, offset = proto.weight_sums(np.array([b - a, 2 * (b - a)]))
        assert totals.tolist() == [n, 2 * n] and offset.tolist() == [a, 2 * a]


@pytest.mark.parametrize("comm", comms(), ids=lambda c: f"size{c.size}")
def test_packed_histograms_are_exact(comm):
    """Histograms reduced with n_bins (only the bins in use travel) equal the full reduction."""
    from mpiboost._ext import _histogram

    proto = Protocol(comm)
    rng = np.random.default_rng(8)
    n, d = 777, 5
    n_bins = np.array([2, 1, 255, 7, 0], dtype=np.int64)  # 0: a feature that is always missing
    X = np.stack([rng.integers(0, max(nb, 1), n) for nb in n_bins], axis=1).astype(np.uint8)
    X[rng.random((n, d)) < 0.2] = 255
    X[:, 4] = 255
    g = rng.integers(-(2**55), 2**55, (3, n)).astype(np.int64)
    full = np.stack([ref.histogram(X, g[c]) for c in range(3)])
    for parts in splits(n, comm.size):
        a, b = parts[comm.rank]
        h = np.empty((3, d, 256), dtype=np.int64)
        for c in range(3):
            _histogram.build_histogram(np.ascontiguousarray(X[a:b].T), g[c, a:b], h[c])
        plain = proto.reduce_histograms(h.copy())
        packed = proto.reduce_histograms(h.copy(), n_bins)
        one = proto.reduce_histograms(h[1].copy(), n_bins)
        if comm.is_center:
            np.testing.assert_array_equal(plain, full)
            np.testing.assert_array_equal(packed, full)
            np.testing.assert_array_equal(one, full[1])
        else:
            assert packed is None and one is None
    if comm.size > 1:
        before = comm.bytes.totals().get("reduce_histograms", {}).get("sent", 0)
        proto.reduce_histograms(np.zeros((d, 256), dtype=np.int64), n_bins)
        sent = comm.bytes.totals()["reduce_histograms"]["sent"] - before
        assert sent == (0 if comm.is_center else 8 * int((n_bins + 1).sum()))


@pytest.mark.parametrize("comm", comms(), ids=lambda c: f"size{c.size}")
def test_round_stats_in_one_collective(comm):
    """Integer sums, a maximum and correctly rounded grouped sums: the bits of reduce_stats."""
    from mpiboost._ext import _exact

    proto = Protocol(comm)
    rng = np.random.default_rng(12)
    n = 1500
    values = np.exp(rng.standard_normal(n) * 3)
    groups = rng.integers(0, 4, n).astype(np.int32)
    wide = values * 10.0 ** rng.integers(-200, 200, n)  # many partials: the fallback route
    counts = rng.integers(0, 9, (n, 2))
    for x in (values, wide):
        expected = _self().reduce_stats(x, groups, 4)
        for parts in splits(n, comm.size):
            a, b = parts[comm.rank]
            terms = _exact.grouped_partials(x[a:b], groups[a:b], 4)
            total, top, sums = proto.reduce_round_stats(counts[a:b].sum(axis=0), float(x[a:b].max(initial=0.0)), terms)
            assert total.tolist() == counts.sum(axis=0).tolist()
            assert top == x.max()
            assert sums.tobytes() == expected.tobytes()


@pytest.mark.parametrize("comm", comms(), ids=lambda c: f"size{c.size}")
def test_broadcast_hypothesis(comm):
    proto = Protocol(comm)
    v = proto.broadcast_hypothesis([3, 7, -1, 1, 0.25] if comm.is_center else None, 5)
    assert v.tolist() == [3, 7, -1, 1, 0.25]


@pytest.mark.parametrize("comm", comms(), ids=lambda c: f"size{c.size}")
def test_domain_classifier_is_split_independent(comm):
    """Q(k|x) is the same bits for any cut of the rows, empty parts included (dense, sparse, NaN)."""
    proto = Protocol(comm)
    rng = np.random.default_rng(12)
    n = 3000
    dom = rng.integers(0, 3, n).astype(np.int32)
    gauss = rng.standard_normal((n, 3)) * [1.0, 30.0, 1e-3] + dom[:, None] * [0.4, 0.0, -2e-4]
    counts = rng.poisson(0.05 + 0.25 * (dom[:, None] == np.arange(8) % 3), (n, 8))
    X = np.hstack([gauss, counts, np.eye(5)[rng.integers(0, 5, n)]]).astype(np.float32)
    X[rng.random(X.shape) < 0.02] = np.nan
    single = _self().fit_domain_classifier(X, dom, 3)
    assert single.train_accuracy > 0.5 and 0 < single.iterations
    for parts in splits(n, comm.size):
        a, b = parts[comm.rank]
        got = proto.fit_domain_classifier(X[a:b], dom[a:b], 3)
        assert got.W.tobytes() == single.W.tobytes(), parts
        assert got.mean.tobytes() == single.mean.tobytes() and got.scale.tobytes() == single.scale.tobytes()
        assert (got.iterations, got.train_accuracy) == (single.iterations, single.train_accuracy)
