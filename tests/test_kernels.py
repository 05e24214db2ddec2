"""Every boosting kernel against its naive reference, on random, skewed and edge inputs."""
import math

import numpy as np
import pytest

import reference as ref
from mpiboost._ext import _histogram, _multiboost, _openmp, _predict, _weights


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


# ------------------------------------------------------------------ MultiBoost kernels

def _units_ref(a, Q, domain, scale, y, shift, k):
    """domain_units, naively: round(a Q[:, k] scale[domain] 2**shift) * y (half up, then truncation)."""
    v = a * Q[:, k] * scale[domain] * 2.0**shift
    return np.trunc(v + 0.5).astype(np.int64) * y.astype(np.int64)


def _hist_ref(X, g):
    hist = np.zeros((X.shape[1], 256), dtype=np.int64)
    for j in range(X.shape[1]):
        np.add.at(hist[j], X[:, j].astype(np.intp), g)
    return hist


def _mb_inputs(rng, n, d, p, kind):
    X = _binned(rng, n, d, max_bin=256 if n > 100 else 6)
    if kind == "binary":
        X = (X > 2).astype(np.uint8)  # 0/1 columns, no missing value
    elif kind == "missing":
        X[:] = 255
    elif kind == "mixed" and d > 1:
        X[:, 1] = X[:, 1] & 1
    a = rng.random(n) + 0.01
    if kind == "skewed":
        a = np.exp(rng.standard_normal(n) * 8)  # heavy-tailed weights
    Q = rng.dirichlet(np.full(p, 0.3), n) if n else np.zeros((0, p))
    domain = rng.integers(0, p, n).astype(np.int32)
    y = np.where(rng.random(n) < 0.5, 1, -1).astype(np.int8)
    return X, a, np.ascontiguousarray(Q), domain, y


@pytest.mark.parametrize("kind", ["random", "skewed", "binary", "missing", "mixed"])
@pytest.mark.parametrize("n,d,p", [(0, 3, 2), (1, 1, 1), (1, 3, 3), (57, 4, 3), (3000, 5, 6), (40000, 3, 4)])
def test_candidate_histograms_match_naive(kind, n, d, p):
    rng = np.random.default_rng(n + 7 * d + p)
    X, a, Q, domain, y = _mb_inputs(rng, n, d, p, kind)
    XT = np.ascontiguousarray(X.T)
    scale = rng.random(p) / max(n, 1)
    if p > 1:
        scale[0] = 0.0  # a domain left out
    total = float(a.sum() * scale.max()) if n else 1.0  # bounds every channel's sum
    shift = int(61 - math.ceil(math.log2(max(total, 1e-300))))
    for cand in ([0], list(range(p)), list(range(p))[::-1], [p - 1] * 2):
        hist = np.full((len(cand), d, 256), -1, dtype=np.int64)
        flags = _histogram.binary_columns(XT)
        QT = np.ascontiguousarray(Q.T)
        _multiboost.candidate_histograms(XT, a, QT, domain, scale, y, shift, np.array(cand), hist, flags)
        plain = np.empty_like(hist)
        _multiboost.candidate_histograms(XT, a, QT, domain, scale, y, shift, np.array(cand), plain)
        g = np.empty(n, dtype=np.int64)
        one = np.empty((d, 256), dtype=np.int64)
        for c, k in enumerate(cand):
            expected = _hist_ref(X, _units_ref(a, Q, domain, scale, y, shift, k))
            np.testing.assert_array_equal(hist[c], expected)
            np.testing.assert_array_equal(plain[c], expected)
            # the same as the unit pass + histogram it replaces
            _multiboost.domain_units(a, Q, domain, scale, y, shift, g, k)
            _histogram.build_histogram(XT, g, one, flags)
            np.testing.assert_array_equal(hist[c], one)
    with pytest.raises(ValueError):
        _multiboost.candidate_histograms(
            XT, a, np.ascontiguousarray(Q.T), domain, scale, y, shift, np.array([p]), np.empty((1, d, 256), np.int64)
        )


def test_candidate_histograms_thread_count_invariant():
    rng = np.random.default_rng(3)
    X, a, Q, domain, y = _mb_inputs(rng, 70000, 4, 5, "mixed")
    XT = np.ascontiguousarray(X.T)
    scale = np.full(5, 1 / 70000)
    out = []
    before = _openmp.get_max_threads()
    for t in (1, 2, 3):
        _openmp.set_num_threads(t)
        h = np.empty((5, 4, 256), dtype=np.int64)
        _multiboost.candidate_histograms(
            XT, a, np.ascontiguousarray(Q.T), domain, scale, y, 50, np.arange(5), h, _histogram.binary_columns(XT)
        )
        out.append(h)
    _openmp.set_num_threads(before)
    assert all(np.array_equal(out[0], h) for h in out)




def _chebyshev_ref(a, u, domain, center, p, order, shift):
    out = np.zeros((p, order + 1), dtype=object)
    for i in range(len(a)):
        t0 = a[i] * 2.0**shift
        if center != 0.0:
            t0 = t0 * math.exp(-center * u[i])
        terms = [t0]
        if order >= 1:
            terms.append(t0 * u[i])
        for _ in range(2, order + 1):
            terms.append(2.0 * u[i] * terms[-1] - terms[-2])
        for j, t in enumerate(terms):
            out[domain[i], j] += round(t)  # to nearest, ties to even
    return out.astype(np.int64)


@pytest.mark.parametrize("kind", ["random", "skewed", "signs"])
@pytest.mark.parametrize("n,p", [(0, 2), (1, 1), (2, 3), (300, 3), (3000, 4)])
def test_chebyshev_moments_match_naive(kind, n, p):
    rng = np.random.default_rng(n + p)
    a = rng.random(n) + 0.01
    if kind == "skewed":
        a = np.exp(rng.standard_normal(n) * 5)
    u = rng.uniform(-1, 1, n)
    if kind == "signs":
        u = np.sign(u) * (rng.random(n) < 0.8)  # +-1 and 0: the extremes of T_j
    domain = rng.integers(0, p, n).astype(np.int32)
    for center in (0.0, 0.37, -1.5):
        for order in (0, 1, 2, 9):
            term = (a.max() if n else 1.0) * math.exp(abs(center))
            shift = int(min(61 - math.ceil(math.log2(term * max(n, 1))), 50 - math.ceil(math.log2(term))))
            got = _multiboost.chebyshev_moments(a, u, domain, center, p, order, shift)
            assert got.shape == (p, order + 1)
            np.testing.assert_array_equal(got, _chebyshev_ref(a, u, domain, center, p, order, shift))


def test_directions_chebyshev_matches_the_two_passes():
    rng = np.random.default_rng(21)
    for n, p in [(0, 2), (1, 1), (500, 3), (70000, 3)]:
        X = _binned(rng, n, 2)
        col = np.ascontiguousarray(X[:, 1])
        Q = np.ascontiguousarray(rng.dirichlet(np.ones(p), n)) if n else np.zeros((0, p))
        y = np.where(rng.random(n) < 0.5, 1, -1).astype(np.int8)
        a = rng.random(n) + 0.5
        domain = rng.integers(0, p, n).astype(np.int32)
        for stump in [(1, 3, 1, False), (1, 0, -1, True), (-1, 0, 1, False)]:
            args = _kernel_args(stump)
            k = p - 1
            u = np.full(n, np.nan)
            got = _multiboost.directions_chebyshev(col, y, np.ascontiguousarray(Q.T), k, *args, a, domain, 8, 40, u)
            u_ref = np.empty(n)
            _multiboost.step_directions(col, y, np.ascontiguousarray(Q[:, k]), *args, u_ref)
            np.testing.assert_array_equal(u, u_ref)
            h = np.array([ref.stump_value(X[i], *stump) for i in range(n)])
            np.testing.assert_array_equal(u, y * Q[:, k] * h if n else u)
            np.testing.assert_array_equal(got, _multiboost.chebyshev_moments(a, u, domain, 0.0, p, 8, 40))
    with pytest.raises(ValueError):
        _multiboost.directions_chebyshev(col, y, np.ascontiguousarray(Q.T), p, 0, 1, False, a, domain, 2, 40, u)


def test_non_finite_weight_is_caught_on_any_thread():
    """The flag is reduced over threads: an inf in the first thread's rows is not lost."""
    before = _openmp.get_max_threads()
    _openmp.set_num_threads(2)
    try:
        n = 200_000
        w = np.ones(n)
        w[5] = np.inf
        with pytest.raises(ValueError, match="non-finite"):
            _weights.error_terms(np.zeros(n, np.uint8), np.ones(n, np.int8), w, 255, 1, True)
    finally:
        _openmp.set_num_threads(before)
