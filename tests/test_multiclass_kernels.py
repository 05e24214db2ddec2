"""The multiclass kernels against their naive references, on random, skewed and edge inputs."""
import contextlib
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference as ref
from mpiboost._ext import _histogram, _multiclass, _openmp


def _binned(rng, n, d, max_bin=8, missing=0.1):
    X = rng.integers(0, max_bin, (n, d)).astype(np.uint8)
    X[rng.random((n, d)) < missing] = 255
    return X


def _classes(rng, n, K, skewed=False):
    cls = rng.integers(0, K, n)
    if skewed:  # one class holds ~90% of the rows
        cls[rng.random(n) < 0.9] = K - 1
    return cls.astype(np.int32)


def _units(rng, n, skewed=False):
    """Fixed-point row weights; skewed: spanning 2^0 .. 2^50."""
    if skewed:
        return (np.int64(1) << rng.integers(0, 51, n)).astype(np.int64)
    return rng.integers(0, 2**40, n).astype(np.int64)


def _weights(rng, n, skewed=False):
    w = rng.random(n)
    return w * 2.0 ** rng.integers(0, 51, n) if skewed else w


@contextlib.contextmanager
def _threads(t):
    before = _openmp.get_max_threads()
    _openmp.set_num_threads(t)
    try:
        yield
    finally:
        _openmp.set_num_threads(before)


def _args(stump):
    """(bin, left, right, missing_left) for the column kernels; the constant sends every bin left."""
    f, b, left, right, ml = stump
    return (255, left, right, True) if f < 0 else (b, left, right, ml)


def _fast_histogram(X, g, cls, K):
    """np.add.at twin of ref.class_histogram (exact int64), for inputs too large for the loop."""
    n, d = X.shape
    hist = np.zeros((d, 256, K), dtype=np.int64)
    for j in range(d):
        np.add.at(hist[j], (X[:, j], cls), g)
    return hist


# ------------------------------------------------------------------ build_class_histogram


@pytest.mark.parametrize(
    "n,d,K,max_bin,skewed",
    [(0, 3, 3, 5, False), (1, 1, 1, 5, False), (1, 2, 28, 5, True), (37, 4, 2, 5, False), (600, 7, 10, 256, True),
     (900, 5, 28, 255, False), (900, 9, 28, 8, True), (400, 1, 3, 2, True)],
)
def test_class_histogram_matches_naive(n, d, K, max_bin, skewed):
    rng = np.random.default_rng(n * 31 + d * 7 + K)
    X = _binned(rng, n, d, max_bin)
    if d > 2:
        X[:, 1] = 255  # an all-missing column
        X[:, 2] = 0  # a constant column
    g, cls = _units(rng, n, skewed), _classes(rng, n, K, skewed)
    XT = np.ascontiguousarray(X.T)
    expected = ref.class_histogram(X, g, cls, K)
    hist = np.full((d, 256, K), 99, dtype=np.int64)  # overwritten, not added to
    _multiclass.build_class_histogram(XT, g, cls, hist)
    np.testing.assert_array_equal(hist, expected)
    # both passes (keyed and class-sorted) give the same histogram
    for method in (1, 2):
        h = np.full((d, 256, K), -1, dtype=np.int64)
        _multiclass._class_histogram(XT, g, cls, h, 0, -1, method)
        np.testing.assert_array_equal(h, expected)
    # row ranges
    for lo, hi in [(0, n // 2), (n // 3, n), (n // 2, n // 2)]:
        _multiclass.build_class_histogram(XT, g, cls, hist, lo, hi)
        np.testing.assert_array_equal(hist, ref.class_histogram(X[lo:hi], g[lo:hi], cls[lo:hi], K))


def test_class_histogram_rejects_bad_input():
    rng = np.random.default_rng(4)
    n, d, K = 100, 3, 4
    XT = np.ascontiguousarray(_binned(rng, n, d).T)
    g, cls = _units(rng, n), _classes(rng, n, K)
    hist = np.full((d, 256, K), 7, dtype=np.int64)
    for bad in (K, -1, 2**31 - 1):
        c = cls.copy()
        c[n - 1] = bad
        with pytest.raises(ValueError, match="class"):
            _multiclass.build_class_histogram(XT, g, c, hist)
        assert (hist == 7).all()  # left as it was
        for method in (1, 2):
            with pytest.raises(ValueError, match="class"):
                _multiclass._class_histogram(XT, g, c, hist, 0, -1, method)
        # a bad class outside the row range is not read
        _multiclass.build_class_histogram(XT, g, c, hist, 0, n - 1)
        np.testing.assert_array_equal(hist, _fast_histogram(XT.T[: n - 1], g[: n - 1], c[: n - 1], K))
        hist[...] = 7
    with pytest.raises(ValueError, match="class"):  # no feature to scan: still checked
        _multiclass.build_class_histogram(np.zeros((0, n), np.uint8), g, np.full(n, K, np.int32),
                                          np.zeros((0, 256, K), np.int64))
    with pytest.raises(ValueError, match="class"):  # K = 0: no class is valid
        _multiclass.build_class_histogram(XT, g, cls, np.zeros((d, 256, 0), np.int64))
    _multiclass.build_class_histogram(XT[:, :0], g[:0], cls[:0], np.zeros((d, 256, 0), np.int64))
    for args in [(XT, g[:-1], cls, hist), (XT, g, cls[:-1], hist), (XT, g, cls, np.zeros((d, 255, K), np.int64)),
                 (XT, g, cls, hist[:2])]:
        with pytest.raises(ValueError, match="shape mismatch"):
            _multiclass.build_class_histogram(*args)
    with pytest.raises(ValueError, match="row range"):
        _multiclass.build_class_histogram(XT, g, cls, hist, 10, n + 1)


@pytest.mark.parametrize("K,max_bin,skewed", [(10, 200, False), (28, 255, True), (3, 4, True)])
def test_class_histogram_thread_count_invariant(K, max_bin, skewed):
    rng = np.random.default_rng(K)
    n, d = 60000, 5
    X = _binned(rng, n, d, max_bin)
    XT = np.ascontiguousarray(X.T)
    g, cls = _units(rng, n, skewed), _classes(rng, n, K, skewed)
    expected = _fast_histogram(X, g, cls, K)
    part = _fast_histogram(X[1234:55555], g[1234:55555], cls[1234:55555], K)
    for t in (1, 2, 3):
        with _threads(t):
            for method in (0, 1, 2):
                h = np.empty((d, 256, K), dtype=np.int64)
                _multiclass._class_histogram(XT, g, cls, h, 0, -1, method)
                np.testing.assert_array_equal(h, expected)
            _multiclass.build_class_histogram(XT, g, cls, h, 1234, 55555)
            np.testing.assert_array_equal(h, part)


# ------------------------------------------------------------------ best_class_stump


def _random_class_hist(rng, d, K, n_bins, n, scale, missing):
    """A consistent class histogram: every row lands in one bin of every feature."""
    g = rng.integers(0, 4, n) * scale
    cls = rng.integers(0, K, n)
    hist = np.zeros((d, 256, K), dtype=np.int64)
    for j in range(d):
        bins = rng.integers(0, max(int(n_bins[j]), 1), n)
        if missing:
            bins[rng.random(n) < missing] = 255
        if n_bins[j] == 0:
            bins[:] = 255
        np.add.at(hist[j], (bins, cls), g)
    return hist


@pytest.mark.parametrize("criterion", [0, 1])
@pytest.mark.parametrize("seed", range(40))
def test_best_class_stump_matches_naive(seed, criterion):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 5))
    K = int(rng.choice([1, 2, 3, 5, 28]))
    n_bins = rng.integers(0 if seed % 5 == 0 else 1, 7, d).astype(np.int64)
    hist = _random_class_hist(rng, d, K, n_bins, int(rng.integers(0, 60)), 10 ** int(rng.integers(0, 12)),
                              0.3 if seed % 3 == 0 else 0.0)
    got = _multiclass.best_class_stump(hist, n_bins, criterion)
    assert got == ref.best_class_stump(hist, n_bins, criterion)
    if criterion == 0:
        assert got == _multiclass.best_class_stump(hist, n_bins)  # the default is SAMME's rule


def test_gini_criterion_prefers_purer_sides_where_error_ties():
    """Three classes: both splits classify 60 correctly, only one makes its sides purer."""
    hist = np.zeros((2, 256, 3), dtype=np.int64)
    # feature 0: left (bin 0) = 30 of class 0, 30 of class 1; right (bin 1) = 30 of class 2, 10 of class 0
    hist[0, 0] = [30, 30, 0]
    hist[0, 1] = [10, 0, 30]
    # feature 1: left = 30 of class 0, 10 of class 1, 10 of class 2; right = 10 / 20 / 20
    hist[1, 0] = [30, 10, 10]
    hist[1, 1] = [10, 20, 20]
    n_bins = np.array([2, 2])
    err = _multiclass.best_class_stump(hist, n_bins, 0)
    gini = _multiclass.best_class_stump(hist, n_bins, 1)
    assert err[0] == 0 and gini[0] == 0  # both choose feature 0 here; now make error tie it with feature 1
    hist[1, 0] = [31, 0, 0]
    hist[1, 1] = [9, 30, 30]  # 31 + 30 = 61 correct: better by error, less pure on the right
    assert _multiclass.best_class_stump(hist, n_bins, 0)[0] == 1
    assert _multiclass.best_class_stump(hist, n_bins, 1) == ref.best_class_stump(hist, n_bins, 1)
    with pytest.raises(ValueError, match="criterion"):
        _multiclass.best_class_stump(hist, n_bins, 2)


def _binary_as_class(stump):
    """The class stump a binary best_stump answer stands for (class 0 = -1, class 1 = +1)."""
    f, b, left, ml, _ = stump
    lc = 1 if left == 1 else 0
    return (f, b, lc, lc, False) if f < 0 else (f, b, lc, 1 - lc, ml)


def test_best_class_stump_k2_is_the_binary_stump():
    rng = np.random.default_rng(2024)
    for trial in range(300):
        d = int(rng.integers(1, 5))
        n_bins = rng.integers(1, 6, d).astype(np.int64)
        # small integer weights and few rows: many ties between candidates, zero totals
        hist = _random_class_hist(rng, d, 2, n_bins, int(rng.integers(0, 25)), int(rng.choice([1, 3, 2**40])),
                                  [0.0, 0.2, 0.5][trial % 3])
        if trial % 10 == 0:
            hist[1:] = hist[0]  # identical features: the lowest wins
        if trial % 7 == 0:
            hist[..., 1] = hist[..., 0]  # balanced classes everywhere
        signed = hist[..., 1] - hist[..., 0]
        got = _multiclass.best_class_stump(hist, n_bins)
        binary = _histogram.best_stump(signed, n_bins)
        assert got[:5] == _binary_as_class(binary), (trial, got, binary)
        assert 2 * got[5] == int(hist[0].sum()) + binary[4]  # score = (weight + |edge|) / 2


def test_best_class_stump_ties_and_edges():
    # two identical features: the lowest feature wins
    hist = np.zeros((2, 256, 3), dtype=np.int64)
    hist[0, 0, 0], hist[0, 1, 2] = 5, 5
    hist[1] = hist[0]
    assert _multiclass.best_class_stump(hist, np.array([2, 2])) == (0, 0, 0, 2, False, 10)
    # a useless feature (n_bins = 1): the constant, ties between classes go to the highest
    flat = np.zeros((1, 256, 3), dtype=np.int64)
    flat[0, 0] = [7, 7, 2]
    assert _multiclass.best_class_stump(flat, np.array([1])) == (-1, 0, 1, 1, False, 7)
    # no weight at all: the constant highest class
    assert _multiclass.best_class_stump(np.zeros((2, 256, 4), np.int64), np.array([3, 0])) == (-1, 0, 3, 3, False, 0)
    # no feature
    none = np.zeros((0, 256, 5), np.int64)
    assert _multiclass.best_class_stump(none, np.zeros(0, np.int64)) == (-1, 0, 4, 4, False, 0)
    # missing values carry the signal: the split "non-missing vs missing"
    miss = np.zeros((1, 256, 2), dtype=np.int64)
    miss[0, 0, 0], miss[0, 255, 1] = 4, 6
    assert _multiclass.best_class_stump(miss, np.array([1])) == (0, 0, 0, 1, False, 10)
    # an all-missing column (no value bins) is the constant
    allmiss = np.zeros((1, 256, 2), dtype=np.int64)
    allmiss[0, 255] = [3, 4]
    for nb in (0, 1):
        assert _multiclass.best_class_stump(allmiss, np.array([nb])) == (-1, 0, 1, 1, False, 4)
    # K = 28, the signal in the last bins
    big = np.zeros((1, 256, 28), dtype=np.int64)
    big[0, 0, 27], big[0, 100, 27], big[0, 254, 5] = 2**50, 3, 2**50 + 1
    assert _multiclass.best_class_stump(big, np.array([255])) == (0, 100, 27, 5, False, 2**51 + 4)
    with pytest.raises(ValueError, match="shape mismatch"):
        _multiclass.best_class_stump(hist, np.array([2]))
    with pytest.raises(ValueError, match="n_bins"):
        _multiclass.best_class_stump(flat, np.array([256]))
    with pytest.raises(ValueError, match="no classes"):
        _multiclass.best_class_stump(np.zeros((1, 256, 0), np.int64), np.array([1]))


@settings(max_examples=60, deadline=None)
@given(
    K=st.integers(1, 4),
    nb=st.lists(st.integers(0, 4), min_size=1, max_size=3),
    rows=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 4), st.integers(0, 3)), max_size=12),
)
def test_best_class_stump_property(K, nb, rows):
    """Random small data sets: the histogram and the chosen stump agree with the naive twins."""
    d = len(nb)
    X = np.array([[b if b < nb[j] else 255 for j in range(d)] for _, b, _ in rows], dtype=np.uint8).reshape(-1, d)
    g = np.array([w for w, _, _ in rows], dtype=np.int64)
    cls = np.array([c % K for _, _, c in rows], dtype=np.int32)
    hist = np.empty((d, 256, K), dtype=np.int64)
    _multiclass.build_class_histogram(np.ascontiguousarray(X.T), g, cls, hist)
    np.testing.assert_array_equal(hist, ref.class_histogram(X, g, cls, K))
    n_bins = np.array(nb, dtype=np.int64)
    got = _multiclass.best_class_stump(hist, n_bins)
    assert got == ref.best_class_stump(hist, n_bins)
    # the score is the weight the chosen stump classifies correctly
    h = [ref.class_stump_value(X[i], got[0], got[1], got[2], got[3], got[4]) for i in range(len(rows))]
    assert got[5] == int(sum(int(g[i]) for i in range(len(rows)) if h[i] == cls[i]))


# ------------------------------------------------------------------ per-row passes

STUMPS = [(2, 3, 1, 0, False), (0, 0, 2, 1, True), (-1, 0, 2, 2, False), (3, 7, 0, 2, True), (1, 254, 1, 1, False)]


@pytest.mark.parametrize("n,K,skewed", [(0, 3, False), (1, 3, True), (3000, 3, False), (2500, 28, True)])
def test_class_row_passes_match_naive(n, K, skewed):
    rng = np.random.default_rng(n + K)
    d = 4
    X = _binned(rng, n, d)
    XT = np.ascontiguousarray(X.T)
    cls = _classes(rng, n, K, skewed)
    for f, b, left, right, ml in STUMPS:
        left, right = left % K, right % K
        stump = (f, b, left, right, ml)
        h_ref = np.array([ref.class_stump_value(X[i], *stump) for i in range(n)], dtype=np.int32)
        col, args = XT[max(f, 0)], _args(stump)
        h = np.full(n, -5, dtype=np.int32)
        _multiclass.class_stump_predict(col, *args, h)
        np.testing.assert_array_equal(h, h_ref)
        w = _weights(rng, n, skewed)
        right_t, wrong_t = _multiclass.class_error_terms(col, cls, w, *args)
        assert math.fsum(right_t) == math.fsum(w[h_ref == cls]) and math.fsum(wrong_t) == math.fsum(w[h_ref != cls])
        # integer-valued scores: many ties in the argmax
        scores = rng.integers(-2, 3, (n, K)).astype(np.float64)
        w0, s0 = w.copy(), scores.copy()
        errors, wmax = _multiclass.apply_class_stump(w, scores, col, cls, *args, 0.85, 1.3, 1.0)
        np.testing.assert_array_equal(w, w0 * np.where(h_ref == cls, 0.85, 1.3))
        expected = s0.copy()
        expected[np.arange(n), h_ref] += 1.0
        np.testing.assert_array_equal(scores, expected)
        pred = np.array([ref.argmax_high(scores[i]) for i in range(n)], dtype=np.int32)
        assert errors == int(np.sum(pred != cls)) and wmax == (w.max() if n else 0.0)
        out = np.full(n, -1, dtype=np.int32)
        _multiclass.argmax_classes(scores, out)
        np.testing.assert_array_equal(out, pred)
        assert _multiclass.class_errors(scores, cls) == errors


def test_argmax_ties_signed_zeros_and_infinities():
    scores = np.array([[0.0, -0.0, -1.0], [-0.0, 0.0, -0.0], [np.inf, 1e308, np.inf], [-np.inf, -np.inf, -1e308],
                       [-2.0, -1.0, -3.0], [5e-324, 0.0, -5e-324]])
    expected = [ref.argmax_high(row) for row in scores]
    assert expected == [1, 2, 2, 2, 1, 0]
    out = np.empty(len(scores), dtype=np.int32)
    _multiclass.argmax_classes(scores, out)
    assert out.tolist() == expected
    assert _multiclass.class_errors(scores, np.zeros(len(scores), np.int32)) == 5
    one = np.array([[3.0], [-1.0]])  # K = 1: always class 0
    _multiclass.argmax_classes(one, out[:2])
    assert out[:2].tolist() == [0, 0]


def test_class_row_passes_reject_bad_input():
    rng = np.random.default_rng(8)
    n, K = 50, 3
    col = _binned(rng, n, 1)[:, 0].copy()
    cls, w, scores = _classes(rng, n, K), rng.random(n), np.zeros((n, K))
    for bad in [(0, K, 0, False), (0, 0, -1, False)]:
        with pytest.raises(ValueError, match="class out of range"):
            _multiclass.apply_class_stump(w, scores, col, cls, *bad, 0.5, 2.0, 1.0)
    assert (scores == 0).all()
    with pytest.raises(ValueError, match="shape mismatch"):
        _multiclass.apply_class_stump(w, scores[:-1], col, cls, 0, 0, 1, False, 0.5, 2.0, 1.0)
    with pytest.raises(ValueError, match="shape mismatch"):
        _multiclass.class_error_terms(col, cls[:-1], w, 0, 0, 1, False)
    with pytest.raises(ValueError, match="shape mismatch"):
        _multiclass.class_stump_predict(col, 0, 0, 1, False, np.empty(n - 1, np.int32))
    with pytest.raises(ValueError, match="shape mismatch"):
        _multiclass.argmax_classes(scores, np.empty(n + 1, np.int32))
    with pytest.raises(ValueError, match="shape mismatch"):
        _multiclass.class_errors(scores, cls[1:])
    with pytest.raises(ValueError, match="no classes"):
        _multiclass.argmax_classes(np.zeros((n, 0)), np.empty(n, np.int32))
    w[7] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        _multiclass.class_error_terms(col, cls, w, 0, 0, 1, False)
    # zero rows: empty results, no memory touched
    e = np.zeros(0, np.uint8)
    c0, w0, s0 = np.zeros(0, np.int32), np.zeros(0), np.zeros((0, K))
    right_t, wrong_t = _multiclass.class_error_terms(e, c0, w0, 0, 0, 1, False)
    assert right_t.size == 0 and wrong_t.size == 0
    assert _multiclass.apply_class_stump(w0, s0, e, c0, 0, 0, 1, False, 0.5, 2.0, 1.0) == (0, 0.0)
    _multiclass.class_stump_predict(e, 0, 0, 1, False, c0)
    _multiclass.argmax_classes(s0, c0)
    assert _multiclass.class_errors(s0, c0) == 0


def test_class_row_passes_thread_count_invariant():
    rng = np.random.default_rng(11)
    n, K = 70000, 10
    col = _binned(rng, n, 1, max_bin=200)[:, 0].copy()
    cls = _classes(rng, n, K, skewed=True)
    w = _weights(rng, n, skewed=True)
    scores = rng.standard_normal((n, K))
    w_nan = w.copy()
    w_nan[5] = np.inf  # in the first thread's rows
    out = []
    for t in (1, 2, 3):
        with _threads(t):
            terms = _multiclass.class_error_terms(col, cls, w, 100, 3, 7, True)
            with pytest.raises(ValueError, match="non-finite"):
                _multiclass.class_error_terms(col, cls, w_nan, 100, 3, 7, True)
            ww, ss = w.copy(), scores.copy()
            res = _multiclass.apply_class_stump(ww, ss, col, cls, 100, 3, 7, True, 0.9, 1.7, 0.25)
            pred = np.empty(n, np.int32)
            _multiclass.argmax_classes(ss, pred)
            out.append((terms, ww, ss, res, pred, _multiclass.class_errors(ss, cls)))
    h = np.where(col == 255, 3, np.where(col <= 100, 3, 7))
    assert math.fsum(out[0][0][0]) == math.fsum(w[h == cls])
    for terms, ww, ss, res, pred, errors in out[1:]:
        assert all(np.array_equal(a, b) for a, b in zip(terms, out[0][0]))
        assert np.array_equal(ww, out[0][1]) and np.array_equal(ss, out[0][2])
        assert res == out[0][3] and np.array_equal(pred, out[0][4]) and errors == out[0][5] == res[0]


# ------------------------------------------------------------------ ensembles


def _random_stumps(rng, T, d, K):
    feat = rng.integers(-1, d, T).astype(np.int32)
    bins = rng.integers(0, 8, T).astype(np.int32)
    left = rng.integers(0, K, T).astype(np.int32)
    right = rng.integers(0, K, T).astype(np.int32)
    ml = (rng.random(T) < 0.5).astype(np.uint8)
    coef = rng.standard_normal(T) * 10.0 ** rng.integers(-8, 8, T)  # sums that depend on the order
    return feat, bins, left, right, ml, coef


@pytest.mark.parametrize("n,d,K,T", [(0, 3, 3, 5), (1, 1, 2, 1), (300, 6, 28, 40), (400, 4, 3, 0)])
def test_add_class_stumps_matches_naive(n, d, K, T):
    rng = np.random.default_rng(n + T)
    X = _binned(rng, n, d)
    stumps = _random_stumps(rng, T, d, K)
    start = rng.standard_normal((n, K))
    scores = start.copy()
    _multiclass.add_class_stumps(np.ascontiguousarray(X.T), *stumps, scores)
    listed = [(int(f), int(b), int(l), int(r), bool(m), float(c)) for f, b, l, r, m, c in zip(*stumps)]
    np.testing.assert_array_equal(scores, ref.class_scores(X, listed, K, start))


def test_add_class_stumps_checks_and_threads():
    rng = np.random.default_rng(12)
    n, d, K, T = 60000, 5, 4, 25
    XT = np.ascontiguousarray(_binned(rng, n, d).T)
    stumps = _random_stumps(rng, T, d, K)
    out = []
    for t in (1, 2, 3):
        with _threads(t):
            s = np.zeros((n, K))
            _multiclass.add_class_stumps(XT, *stumps, s)
            out.append(s)
    assert all(np.array_equal(out[0], s) for s in out)
    feat, bins, left, right, ml, coef = stumps
    s = np.zeros((n, K))
    for name, arr, bad in [("left", left, K), ("right", right, -1), ("feature", feat, d)]:
        broken = [a.copy() for a in stumps]
        broken[{"feature": 0, "left": 2, "right": 3}[name]][T - 1] = bad
        with pytest.raises(ValueError, match="out of range"):
            _multiclass.add_class_stumps(XT, *broken, s)
    assert (s == 0).all()  # nothing written
    with pytest.raises(ValueError, match="shape mismatch"):
        _multiclass.add_class_stumps(XT, feat, bins, left[:-1], right, ml, coef, s)
    with pytest.raises(ValueError, match="shape mismatch"):
        _multiclass.add_class_stumps(XT, *stumps, s[:-1])
