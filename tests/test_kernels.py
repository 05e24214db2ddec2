"""Every boosting kernel against its naive reference, on random, skewed and edge inputs."""
import math

import numpy as np
import pytest

import reference as ref
from mpiboost._ext import _histogram, _openmp, _predict, _weights


def _binned(rng, n, d, max_bin=8, missing=0.1):
    X = rng.integers(0, max_bin, (n, d)).astype(np.uint8)
    X[rng.random((n, d)) < missing] = 255
    return X


@pytest.mark.parametrize("n,d", [(0, 3), (1, 1), (37, 4), (5000, 7)])
def test_histogram_matches_naive(n, d):
    rng = np.random.default_rng(n + d)
    X = _binned(rng, n, d, max_bin=256 if n > 100 else 5)
    g = rng.integers(-(2**40), 2**40, n).astype(np.int64)
    XT = np.ascontiguousarray(X.T)
    hist = np.empty((d, 256), dtype=np.int64)
    _histogram.build_histogram(XT, g, hist)
    np.testing.assert_array_equal(hist, ref.histogram(X, g))
    # 0/1 columns through the masked-sum path give the same histogram
    B = (X > 2).astype(np.uint8)
    B[:, 0] = X[:, 0]  # one column that is not binary
    BT = np.ascontiguousarray(B.T)
    flags = _histogram.binary_columns(BT)
    assert flags.tolist() == [int(B[:, j].max(initial=0) <= 1) for j in range(d)]
    _histogram.build_histogram(BT, g, hist, flags)
    np.testing.assert_array_equal(hist, ref.histogram(B, g))
    rows = np.sort(rng.choice(max(n, 1), size=min(n, 10), replace=False)).astype(np.intp) if n else np.zeros(0, np.intp)
    _histogram.build_histogram_rows(XT, g, rows, hist)
    np.testing.assert_array_equal(hist, ref.histogram(X[rows], g[rows]))


def test_histogram_thread_count_invariant():
    rng = np.random.default_rng(1)
    X = np.ascontiguousarray(_binned(rng, 50000, 5, 200).T)
    g = rng.integers(0, 2**50, 50000).astype(np.int64)
    out = []
    before = _openmp.get_max_threads()
    for t in (1, 2, 3):
        _openmp.set_num_threads(t)
        h = np.empty((5, 256), dtype=np.int64)
        _histogram.build_histogram(X, g, h)
        out.append(h)
    _openmp.set_num_threads(before)
    assert all(np.array_equal(out[0], h) for h in out)


@pytest.mark.parametrize("seed", range(40))
def test_best_stump_matches_naive(seed):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 5))
    n_bins = rng.integers(1, 7, d).astype(np.int64)
    hist = np.zeros((d, 256), dtype=np.int64)
    n = int(rng.integers(0, 60))
    # a consistent histogram: every row lands in one bin of every feature
    g = rng.integers(-3, 4, n) * (10 ** int(rng.integers(0, 12)))
    for j in range(d):
        bins = rng.integers(0, n_bins[j], n)
        if seed % 3 == 0:
            bins[rng.random(n) < 0.3] = 255
        np.add.at(hist[j], bins, g)
    got = _histogram.best_stump(hist, n_bins)
    assert got == ref.best_stump(hist, n_bins)


def test_best_stump_ties_and_edges():
    # two identical features: the lowest feature wins; a useless feature: constant wins
    hist = np.zeros((2, 256), dtype=np.int64)
    hist[0, 0], hist[0, 1] = 5, -5
    hist[1] = hist[0]
    assert _histogram.best_stump(hist, np.array([2, 2]))[:4] == (0, 0, 1, False)
    flat = np.zeros((1, 256), dtype=np.int64)
    flat[0, 0] = 7
    assert _histogram.best_stump(flat, np.array([1])) == (-1, 0, 1, False, 7)
    # missing values carry the signal: the split "non-missing vs missing"
    miss = np.zeros((1, 256), dtype=np.int64)
    miss[0, 0], miss[0, 255] = -4, 6
    assert _histogram.best_stump(miss, np.array([1])) == (0, 0, -1, False, 10)


def _kernel_args(stump):
    f, b, left, ml = stump
    return (255, left, True) if f < 0 else (b, left, ml)


def test_apply_stump_and_predictions():
    rng = np.random.default_rng(5)
    n, d = 3000, 4
    X = _binned(rng, n, d)
    XT = np.ascontiguousarray(X.T)
    y = np.where(rng.random(n) < 0.5, 1, -1).astype(np.int8)
    for stump in [(2, 3, 1, False), (0, 0, -1, True), (-1, 0, -1, False), (3, 7, 1, True)]:
        h_ref = np.array([ref.stump_value(X[i], *stump) for i in range(n)], dtype=np.int8)
        col, args = XT[max(stump[0], 0)], _kernel_args(stump)
        h = np.empty(n, dtype=np.int8)
        _weights.stump_predict(col, *args, h)
        np.testing.assert_array_equal(h, h_ref)
        w = rng.random(n)
        right, wrong = _weights.error_terms(col, y, w, *args)
        assert math.fsum(right) == math.fsum(w[h_ref == y]) and math.fsum(wrong) == math.fsum(w[h_ref != y])
        m = rng.standard_normal(n)
        w0, m0 = w.copy(), m.copy()
        errors, wmax = _weights.apply_stump(w, m, col, y, *args, 0.85, 1.3, 0.7)
        np.testing.assert_array_equal(w, w0 * np.where(h_ref == y, 0.85, 1.3))
        np.testing.assert_array_equal(m, m0 + 0.7 * h_ref)
        assert errors == int(np.sum(np.where(m >= 0, 1, -1) != y)) and wmax == w.max()
        assert _weights.margin_errors(m, y) == errors
        add = m0.copy()
        _weights.add_stump(add, col, *args, 0.7)
        np.testing.assert_array_equal(add, m0 + 0.7 * h_ref)


def test_ensemble_prediction_matches_naive():
    rng = np.random.default_rng(9)
    n, d, T = 500, 6, 30
    X = _binned(rng, n, d)
    feat = rng.integers(-1, d, T).astype(np.int32)
    bins = rng.integers(0, 8, T).astype(np.int32)
    left = np.where(rng.random(T) < 0.5, 1, -1).astype(np.int8)
    ml = (rng.random(T) < 0.5).astype(np.uint8)
    coef = rng.standard_normal(T)
    out = np.empty(n)
    _predict.predict_binned(np.ascontiguousarray(X.T), feat, bins, left, ml, coef, out)
    expected = [
        sum(coef[t] * ref.stump_value(X[i], feat[t], bins[t], left[t], bool(ml[t])) for t in range(T)) for i in range(n)
    ]
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-12)


def test_rows_for_points_and_fixed_point():
    rng = np.random.default_rng(3)
    q = rng.integers(0, 5, 200).astype(np.int64)
    q[[0, 50, 199]] = 0  # zero-weight rows are never drawn
    cum = np.cumsum(q)
    offset = 1000
    points = np.sort(rng.integers(offset, offset + cum[-1], 500)).astype(np.int64)
    rows = np.empty(500, dtype=np.intp)
    _weights.rows_for_points(cum, points, offset, rows)
    naive = [next(i for i in range(200) if cum[i] > p - offset) for p in points]
    assert rows.tolist() == naive
    assert not set(rows.tolist()) & {0, 50, 199}
    with pytest.raises(ValueError):
        _weights.rows_for_points(cum, np.array([offset + cum[-1]]), offset, np.empty(1, dtype=np.intp))
    from mpiboost.protocol import fixed_point

    w = rng.dirichlet(np.ones(1000))
    qf = fixed_point(w)
    cum = np.empty(1000, dtype=np.int64)
    assert _weights.fixed_cumsum(w, 60, cum) == int(qf.sum()) and np.array_equal(cum, np.cumsum(qf))
    ys = np.where(rng.random(1000) < 0.5, 1, -1).astype(np.int8)
    gs = np.empty(1000, dtype=np.int64)
    assert _weights.fixed_signed(w, ys, 60, gs) == int(qf.sum()) and np.array_equal(gs, qf * ys)
    assert np.all(np.abs(qf - w * 2.0**60) <= 0.5)
    with pytest.raises(FloatingPointError):
        fixed_point(np.array([2.0**4]))


def test_scale_is_division():
    w = np.random.default_rng(0).random(1000)
    expected = w / 3.0
    _weights.scale(w, 3.0)
    assert np.array_equal(w, expected)


def test_projection_kernels():
    from mpiboost._ext import _projection

    rng = np.random.default_rng(2)
    w = np.round(rng.random(1000) * 20) / 20 / 500
    q = np.empty(1000, dtype=np.int64)
    window = np.empty(1000, dtype=np.int64)
    cap_q = int(round(0.0015 * 2.0**60))
    m, n_high, s_high = _projection.quantize_window(w, 60, cap_q, q, window)
    assert np.all(np.abs(q - w * 2.0**60) <= 0.5)
    assert window[:m].tolist() == [x for x in q if x < cap_q]
    assert (n_high, s_high) == (int((q >= cap_q).sum()), int(q[q >= cap_q].sum()))
    theta = int(np.median(q))
    head = q[:800]
    c0, c1, c2, s0, s1 = _projection.split_stats(q, 800, theta)
    assert (c0, c1, c2) == ((head < theta).sum(), (head == theta).sum(), (head > theta).sum())
    assert (s0, s1) == (int(head[head < theta].sum()), int(head[head == theta].sum()))
    v = q.copy()
    k = _projection.compact(v, 1000, theta // 2, theta)
    assert v[:k].tolist() == [x for x in q if theta // 2 < x < theta]
    terms, max_below, min_above = _projection.mass_below(w, q, theta)
    assert math.fsum(terms) == math.fsum(w[q < theta])
    assert max_below == w[q < theta].max() and min_above == w[q >= theta].min()
    x = w.copy()
    _projection.apply_projection(x, q, theta, 0.0015, 1.1)
    np.testing.assert_array_equal(x, np.where(q >= theta, 0.0015, np.minimum(0.0015, w * 1.1)))
    # the float fallback kernels
    counts, low, at = _projection.float_split_terms(w, 800, w[5])
    hw = w[:800]
    assert counts == ((hw < w[5]).sum(), (hw == w[5]).sum(), (hw > w[5]).sum())
    assert math.fsum(low) == math.fsum(hw[hw < w[5]]) and math.fsum(at) == math.fsum(hw[hw == w[5]])
    y = w.copy()
    k = _projection.compact(y, 1000, 0.01, 0.03)
    assert y[:k].tolist() == [t for t in w if 0.01 < t < 0.03]
    z = w.copy()
    _projection.float_apply_projection(z, 0.0015, 0.0015, 1.1)
    np.testing.assert_array_equal(z, np.where(w >= 0.0015, 0.0015, np.minimum(0.0015, w * 1.1)))


def test_cell_kernels_match_naive():
    from mpiboost._ext import _cells

    rng = np.random.default_rng(12)
    n, n_cells = 5000, 7
    cell = rng.integers(0, n_cells, n).astype(np.int32)
    units = rng.integers(0, 2**40, n_cells).astype(np.int64)
    y = np.where(rng.random(n) < 0.5, 1, -1).astype(np.int8)
    col = _binned(rng, n, 1)[:, 0].copy()
    cum = np.empty(n, dtype=np.int64)
    assert _cells.cell_cumsum(cell, units, cum) == int(units[cell].sum())
    np.testing.assert_array_equal(cum, np.cumsum(units[cell]))
    g = np.empty(n, dtype=np.int64)
    assert _cells.cell_signed(cell, units, y, g) == int(units[cell].sum())
    np.testing.assert_array_equal(g, units[cell] * y)
    stump = (0, 3, -1, True)
    args = _kernel_args(stump)
    h = np.array([ref.stump_value([col[i]], *stump) for i in range(n)])
    counts = _cells.count_outcomes(cell, col, y, *args, n_cells)
    for c in range(n_cells):
        assert counts[c].tolist() == [int(((cell == c) & (h == y)).sum()), int(((cell == c) & (h != y)).sum())]
    table = rng.integers(0, 5, (n_cells, 2)).astype(np.int32)
    margin = rng.standard_normal(n)
    moved, m0 = cell.copy(), margin.copy()
    errors = _cells.move_rows(moved, margin, col, y, *args, table, 0.5)
    np.testing.assert_array_equal(moved, table[cell, (h != y).astype(int)])
    np.testing.assert_array_equal(margin, m0 + 0.5 * h)
    assert errors == int((np.where(margin >= 0, 1, -1) != y).sum())


def test_cell_projection_and_exact_dot():
    from mpiboost.boost.cells import exact_dot, project

    rng = np.random.default_rng(13)
    for trial in range(50):
        k = int(rng.integers(1, 30))
        counts = rng.integers(0, 50, k).astype(np.int64)
        counts[0] = max(counts[0], 1)
        values = rng.random(k) ** 4
        values /= exact_dot(counts, values)
        n = int(counts.sum())
        assert exact_dot(counts, values) == math.fsum(np.repeat(values, counts))
        cap = 1.0 / (rng.choice([0.05, 0.2, 0.5, 1.0]) * n)
        got, clipped, lam = project(values, counts, cap)
        rows = np.repeat(values, counts)
        expected = ref.projection(rows, cap)
        np.testing.assert_allclose(np.repeat(got, counts), expected, rtol=1e-12)
        assert np.repeat(got, counts).max() <= cap
