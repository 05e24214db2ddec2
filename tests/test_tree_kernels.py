"""Tree kernels and the tree grower against slow, obviously correct twins.

Random, skewed (most rows in one bin, huge and tiny gradients) and edge
inputs (no rows, one feature, every value missing), at 1-3 OpenMP threads.
"""
import math

import numpy as np
import pytest

from mpiboost._ext import _tree
from mpiboost.weak.tree import Tree, TreeGrower, TreeSpec, flatten, gh_shift, resolve_splits, stump_tree

MISSING = 255


def _binned(rng, n, d, nb, missing=0.1, skew=False):
    X = rng.integers(0, nb, size=(d, n)).astype(np.uint8)
    if skew:
        X[:, rng.random(n) < 0.9] = 0
    X[rng.random((d, n)) < missing] = MISSING
    return np.ascontiguousarray(X)


def _gh(rng, n, K, skew=False):
    C = 2 * K + 1
    gh = np.zeros((n, C), dtype=np.int64)
    scale = 2**40 if not skew else 2**50
    gh[:, :K] = rng.integers(-scale, scale, size=(n, K))
    gh[:, K:2 * K] = rng.integers(0, scale, size=(n, K))
    if skew:
        gh[rng.random(n) < 0.5, K:2 * K] = 1  # tiny hessians
    gh[:, 2 * K] = 1
    return gh


def _hist_ref(X, gh, rows, nb):
    d = X.shape[0]
    C = gh.shape[1]
    out = []
    for j in range(d):
        h = np.zeros((nb[j] + 1, C), dtype=np.int64)
        for i in rows:
            b = int(X[j, i])
            h[nb[j] if b == MISSING else b] += gh[i]
        out.append(h)
    return np.concatenate(out) if out else np.zeros((0, C), dtype=np.int64)


@pytest.mark.parametrize("n,d,K,skew", [(0, 3, 1, False), (1, 1, 1, False), (500, 4, 1, False), (3000, 7, 3, True),
                                        (14000, 9, 2, False), (70000, 3, 1, True)])
def test_node_histogram_matches_naive(threads, n, d, K, skew):
    rng = np.random.default_rng(n + d)
    nb = rng.integers(1, 20, size=d)
    X = _binned(rng, n, d, int(nb.min()), skew=skew)
    gh = _gh(rng, n, K, skew)
    off = _tree.packed_offsets(nb.astype(np.int64))
    rows = rng.permutation(n).astype(np.intp)
    lo, hi = (n // 4, n - n // 5) if n > 10 else (0, n)
    hist = np.full((int(off[-1]), 2 * K + 1), 7, dtype=np.int64)  # stale values must be overwritten
    _tree.node_histogram(X, gh, rows, lo, hi, off, hist)
    # 0/1 columns (no missing values) summed by masks: the same sums, at the root and in a node
    X01 = np.ascontiguousarray(np.minimum(X, 1) if n else X)
    X01[:, :n // 3] = np.where(X01[:, :n // 3] == 1, 1, 0)
    flags = np.array([X01[j].max(initial=0) <= 1 for j in range(d)])
    flags[::2] = False  # mixed: some features by masks, some by the scatter
    nb01 = np.maximum(nb, 2)
    off01 = _tree.packed_offsets(nb01.astype(np.int64))
    for identity, r, a, z in ((False, rows, lo, hi), (True, np.arange(n, dtype=np.intp), 0, n)):
        masked = np.full((int(off01[-1]), 2 * K + 1), 7, dtype=np.int64)
        _tree.node_histogram(X01, gh, r, a, z, off01, masked, identity, flags)
        plain = np.zeros_like(masked)
        _tree.node_histogram(X01, gh, r, a, z, off01, plain, identity)
        np.testing.assert_array_equal(masked, plain)
        if n < 5000:
            np.testing.assert_array_equal(masked, _hist_ref(X01, gh, r[a:z], nb01))
    ref = _hist_ref(X, gh, rows[lo:hi], nb) if n < 5000 else None
    if ref is not None:
        np.testing.assert_array_equal(hist, ref)
    else:  # large: check by numpy's bincount per feature
        for j in range(d):
            b = X[j, rows[lo:hi]].astype(np.int64)
            b[b == MISSING] = nb[j]
            for c in range(2 * K + 1):
                want = np.zeros(nb[j] + 1, dtype=np.int64)
                np.add.at(want, b, gh[rows[lo:hi], c])
                np.testing.assert_array_equal(hist[off[j]:off[j + 1], c], want)


@pytest.mark.parametrize("n,d,K", [(0, 3, 1), (7, 2, 1), (3000, 5, 2), (20000, 8, 1), (40000, 4, 1)])
def test_row_major_histogram_matches_naive(threads, n, d, K):
    rng = np.random.default_rng(n + 7)
    nb = rng.integers(1, 30, size=d)
    X = _binned(rng, n, d, int(nb.min()), skew=True)
    XR = np.ascontiguousarray(X.T)
    gh = _gh(rng, n, K, skew=True)
    off = _tree.packed_offsets(nb.astype(np.int64))
    rows = np.sort(rng.permutation(n)[: n // 2]).astype(np.intp)
    a = np.full((int(off[-1]), 2 * K + 1), 3, dtype=np.int64)
    b = np.full_like(a, 5)
    _tree.node_histogram_rows(XR, gh, rows, 0, rows.shape[0], off, a)
    _tree.node_histogram(X, gh, rows, 0, rows.shape[0], off, b)
    np.testing.assert_array_equal(a, b)
    if n < 5000:
        np.testing.assert_array_equal(a, _hist_ref(X, gh, rows, nb))
    # the leaves' sums in one pass
    node = rng.integers(-1, 4, size=n).astype(np.int32)
    want = np.zeros((4, 2 * K + 1), dtype=np.int64)
    for i in range(n):
        if node[i] >= 0:
            want[node[i]] += gh[i]
    np.testing.assert_array_equal(_tree.leaf_sums(gh, node, 4), want)


@pytest.mark.parametrize("n", [0, 5, 300, 200_000])
def test_partition_is_stable_and_matches_naive(threads, n):
    rng = np.random.default_rng(3)
    X = _binned(rng, max(n, 1), 3, 10)[:, :n].copy()
    for f, b, ml in [(0, 4, False), (1, 0, True), (2, 9, False), (2, 9, True)]:
        rows = rng.permutation(n).astype(np.intp)
        before = rows.copy()
        lo, hi = n // 8, n - n // 6
        mid = _tree.partition(X, rows, lo, hi, f, b, ml, np.empty(n, dtype=np.intp))
        seg = before[lo:hi]
        bins = X[f, seg]
        left = np.where(bins == MISSING, ml, bins <= b)
        np.testing.assert_array_equal(rows[lo:mid], seg[left])
        np.testing.assert_array_equal(rows[mid:hi], seg[~left])
        np.testing.assert_array_equal(rows[:lo], before[:lo])
        np.testing.assert_array_equal(rows[hi:], before[hi:])


def _best_ref(hist, off, K, gs, hs, l2, min_data, min_hess, criterion, use=None):
    """Every candidate in scan order; the first of the largest gain > 0 (``use``: the features allowed)."""
    d = off.shape[0] - 1
    tot = hist[off[0]:off[1]].sum(axis=0)

    def term(G, H):
        return G * G / (H + l2) if H + l2 > 0 else 0.0

    best = (0.0, -1, 0, False)
    for j in range(d):
        if use is not None and not use[j]:
            continue
        nb = int(off[j + 1] - off[j] - 1)
        M = hist[off[j] + nb]
        for b in range(nb):
            Lb = hist[off[j]:off[j] + b + 1].sum(axis=0)
            for ml in (False, True):
                if ml and M[2 * K] == 0:
                    continue
                L = Lb + (M if ml else 0)
                R = tot - L
                if L[2 * K] == 0 or R[2 * K] == 0 or L[2 * K] < min_data or R[2 * K] < min_data:
                    continue
                if L[K:2 * K].sum() * hs < min_hess or R[K:2 * K].sum() * hs < min_hess:
                    continue
                if criterion == 1:
                    gain = float(abs(int(L[0])) + abs(int(R[0])) - abs(int(tot[0])))
                else:
                    gain = -sum(term(tot[k] * gs, tot[K + k] * hs) for k in range(K))
                    for k in range(K):
                        HL = L[K + k] * hs
                        gain = gain + term(L[k] * gs, HL) + term((tot[k] - L[k]) * gs, tot[K + k] * hs - HL)
                if gain > best[0]:
                    best = (gain, j, b, ml)
    return best


def _best_cat_ref(hist, off, gs, hs, l2, min_data, min_hess, categorical, rules=(4, 32, 10.0, 10.0, 100)):
    """The categorical rules of LightGBM for one class and the Newton gain, written out plainly: numeric
    features as :func:`_best_ref`; a categorical feature of at most ``onehot`` bins (categories + missing) tries each alone on
    the left, else its categories of at least ``smooth`` rows sorted by ``G / (H + smooth)`` (ties: lower bin)
    are put on the left 1, 2, ... at a time from either end (at most ``max_cat`` and half of them), a
    candidate counted once ``min_group`` rows were added since the last, children with ``l2 + cat_l2``.
    Returns (gain, feature, bin (-1: categorical), missing_left, bins on the left or None)."""
    onehot, max_cat, smooth, cat_l2, min_group = rules
    lo_rows = max(min_data, 1)
    tot = hist[off[0]:off[1]].sum(axis=0)

    def term(G, H, lam):
        return G * G / (H + lam) if H + lam > 0 else 0.0

    parent = term(tot[0] * gs, tot[1] * hs, l2)
    best = (0.0, -1, 0, False, None)
    for j in range(off.shape[0] - 1):
        nb = int(off[j + 1] - off[j] - 1)
        if not categorical[j]:
            numeric = _best_ref(hist, off, 1, gs, hs, l2, min_data, min_hess, 0,
                                use=np.arange(off.shape[0] - 1) == j)
            if numeric[0] > best[0]:
                best = (*numeric, None)
            continue
        slot = [hist[off[j] + b] for b in range(nb)]

        def gain_of(left, lam):
            GL = sum(float(slot[b][0]) for b in left) * gs
            HL = sum(float(slot[b][1]) for b in left) * hs
            NL = sum(int(slot[b][2]) for b in left)
            return GL, HL, NL, -parent + term(GL, HL, lam) + term(tot[0] * gs - GL, tot[1] * hs - HL, lam)

        if nb + 1 <= onehot:  # the missing bin counted, as LightGBM counts a categorical feature's bins
            for b in range(nb):
                GL, HL, NL, g = gain_of([b], l2)
                if min(NL, tot[2] - NL) >= lo_rows and min(HL, tot[1] * hs - HL) >= min_hess and g > best[0]:
                    best = (g, j, -1, False, [b])
            continue
        def key(b):
            h = slot[b][1] * hs + smooth
            return ((slot[b][0] * gs) / h if h > 0 else 0.0), b

        used = sorted((b for b in range(nb) if slot[b][2] > 0 and slot[b][2] >= smooth), key=key)
        tries = min(max_cat, (len(used) + 1) // 2)
        for order in (used, used[::-1]):
            group = 0
            for i in range(min(len(used), tries)):
                group += int(slot[order[i]][2])
                GL, HL, NL, g = gain_of(order[:i + 1], l2 + cat_l2)
                if NL < lo_rows or HL < min_hess:
                    continue
                if tot[2] - NL < max(lo_rows, min_group) or tot[1] * hs - HL < min_hess:
                    break
                if group < min_group:
                    continue
                group = 0
                if g > best[0]:
                    best = (g, j, -1, False, sorted(order[:i + 1]))
    return best


@pytest.mark.parametrize("seed", range(16))
def test_categorical_split_matches_naive(seed):
    """One class, the Newton gain, some features categorical: the kernel's split is the plain reference's
    (skewed category sizes, few rows per group, the one-vs-rest and many-vs-many cases, missing values).
    Categories of no rows in the node are left out (they cannot change a sum)."""
    rng = np.random.default_rng(300 + seed)
    d = int(rng.integers(1, 4))
    nb = rng.integers(2, 40, size=d).astype(np.int64)
    nb[0] = int(rng.choice([3, 4, 6, 30, 120, 255]))
    categorical = rng.random(d) < 0.7
    categorical[0] = True
    n = int(rng.integers(50, 3000))
    X = _binned(rng, n, d, int(nb.min()), missing=float(rng.choice([0.0, 0.1])), skew=bool(seed % 2))
    X[0] = np.where(X[0] == MISSING, MISSING, rng.integers(0, nb[0], n) ** (2 if seed % 3 == 0 else 1) % nb[0])
    gh = _gh(rng, n, 1, skew=bool(seed % 3 == 1))
    gh[:, 0] += (X[0].astype(np.int64) % 5 - 2) * 2**38  # categories that matter
    off = _tree.packed_offsets(nb)
    hist = _hist_ref(X, gh, np.arange(n), nb)
    rules = (4, int(rng.choice([2, 32])), float(rng.choice([0.0, 10.0])), float(rng.choice([0.0, 10.0])),
             int(rng.choice([1, 20, 100])))
    args = (2.0**-40, 2.0**-40, float(rng.choice([0.0, 1.0])), int(rng.choice([0, 5, 20])), 0.0)
    got = _tree.best_split(hist, off, 1, *args, 0, categorical=categorical.astype(np.uint8),
                           max_cat_to_onehot=rules[0], max_cat_threshold=rules[1], cat_smooth=rules[2],
                           cat_l2=rules[3], min_data_per_group=rules[4])
    want = _best_cat_ref(hist, off, *args, categorical, rules)
    assert got[1:] == want[1:] and math.isclose(got[0], want[0], rel_tol=1e-9, abs_tol=1e-300), (got, want)


def test_categorical_split_finds_the_subset_no_threshold_can():
    """Categories 0, 2, 4 against 1, 3, 5: no threshold on the codes separates them, the categorical split
    does, and partitions the rows by it (missing values right)."""
    n = 1200
    X = np.array([np.arange(n) % 6], dtype=np.uint8)
    X[0, ::50] = MISSING
    gh = np.zeros((n, 3), dtype=np.int64)
    gh[:, 0] = np.where(X[0] % 2 == 0, -1, 1) * 2**30
    gh[:, 1] = 2**30
    gh[:, 2] = 1
    nb = np.array([6], dtype=np.int64)
    off = _tree.packed_offsets(nb)
    hist = _hist_ref(X, gh, np.arange(n), nb)
    numeric = _tree.best_split(hist, off, 1, 2.0**-30, 2.0**-30, 0.0, 20, 0.0, 0)
    cat = _tree.best_split(hist, off, 1, 2.0**-30, 2.0**-30, 0.0, 20, 0.0, 0, categorical=np.ones(1, np.uint8))
    assert cat[2] == -1 and cat[4] in ([0, 2, 4], [1, 3, 5]) and cat[0] > 4 * numeric[0]
    words = np.zeros(4, dtype=np.uint64)
    for b in cat[4]:
        words[b // 64] |= np.uint64(1) << np.uint64(b % 64)
    rows = np.arange(n, dtype=np.intp)
    mid = _tree.partition(X, rows, 0, n, 0, -1, False, np.empty(n, dtype=np.intp), cat=words)
    left = np.isin(X[0], cat[4])
    assert mid == left.sum() and set(rows[:mid]) == set(np.flatnonzero(left))
    assert np.all(np.diff(rows[:mid]) > 0) and np.all(np.diff(rows[mid:]) > 0)  # stable


@pytest.mark.parametrize("seed", range(12))
def test_best_split_matches_naive(seed):
    rng = np.random.default_rng(seed)
    d, K = int(rng.integers(1, 5)), int(rng.choice([1, 1, 2, 3]))
    criterion = int(rng.integers(0, 2)) if K == 1 else 0
    nb = rng.integers(1, 9, size=d).astype(np.int64)
    n = int(rng.integers(5, 300))
    X = _binned(rng, n, d, int(nb.min()), missing=rng.choice([0.0, 0.2]), skew=bool(seed % 3 == 0))
    gh = _gh(rng, n, K, skew=bool(seed % 2))
    if seed % 4 == 0:
        gh[:, :K] = rng.choice([-1, 1], size=(n, K)) * 2**20  # many equal gains: ties
    off = _tree.packed_offsets(nb)
    hist = _hist_ref(X, gh, np.arange(n), nb)
    gs = hs = 2.0**-40
    args = (K, gs, hs, float(rng.choice([0.0, 1.0])), int(rng.choice([0, 1, 5])), float(rng.choice([0.0, 1e-3])),
            criterion)
    got = _tree.best_split(hist, off, *args)[:4]
    want = _best_ref(hist, off, *args)
    assert got[1:] == want[1:] and (got[0] == want[0] or math.isclose(got[0], want[0], rel_tol=1e-12)), (got, want)


@pytest.mark.parametrize("seed", range(16))
def test_best_split_matches_naive_on_sparse_bins(seed):
    # few rows over many bins, as in the small nodes of a deep tree: most slots are empty (the scan
    # skips them), the first bin often is (its missing-left candidate must still count), and the
    # right side runs out of rows early (the scan stops there)
    rng = np.random.default_rng(100 + seed)
    d, K = int(rng.integers(1, 4)), int(rng.choice([1, 1, 2]))
    criterion = int(rng.integers(0, 2)) if K == 1 else 0
    nb = rng.integers(100, 256, size=d).astype(np.int64)
    n = int(rng.integers(3, 60))
    X = _binned(rng, n, d, int(nb.min()), missing=float(rng.choice([0.0, 0.3])), skew=bool(seed % 3 == 0))
    gh = _gh(rng, n, K, skew=bool(seed % 2))
    if seed % 4 == 1:
        gh[:, :K] = rng.choice([-1, 1], size=(n, K)) * 2**20  # ties
    if seed % 5 == 2:
        gh[rng.random(n) < 0.3, :2 * K] = 0  # rows with no gradient nor hessian: slots of counts alone
    if seed % 4 == 3:
        X[0] = np.where(np.arange(n) % 2 == 0, MISSING, nb[0] - 1)  # missing or the last bin:
        # "missing left" at the empty bin 0 is the first candidate of the best partition
        gh[X[0] == MISSING, :K] -= 2**44
    off = _tree.packed_offsets(nb)
    hist = _hist_ref(X, gh, np.arange(n), nb)
    gs = hs = 2.0**-40
    args = (K, gs, hs, float(rng.choice([0.0, 1.0])), int(rng.choice([0, 1, 3, 10])),
            float(rng.choice([0.0, 1e-3])), criterion)
    got = _tree.best_split(hist, off, *args)[:4]
    want = _best_ref(hist, off, *args)
    assert got == want, (got, want)


@pytest.mark.parametrize("seed", range(8))
def test_best_split_over_the_features_allowed(seed):
    # feature fraction: only the features of the mask are scanned, one class or several
    rng = np.random.default_rng(200 + seed)
    d, K = 5, int(rng.choice([1, 2]))
    nb = rng.integers(2, 40, size=d).astype(np.int64)
    n = 300
    X = _binned(rng, n, d, int(nb.min()), missing=0.1)
    gh = _gh(rng, n, K)
    off = _tree.packed_offsets(nb)
    hist = _hist_ref(X, gh, np.arange(n), nb)
    use = rng.random(d) < 0.5
    use[int(rng.integers(d))] = True
    args = (K, 2.0**-40, 2.0**-40, 1.0, 5, 0.0, 0)
    got = _tree.best_split(hist, off, *args, use=use.astype(np.uint8))[:4]
    assert got == _best_ref(hist, off, *args, use=use)
    assert got[1] == -1 or use[got[1]]


def test_best_split_ties_go_to_the_lowest_feature_and_bin():
    # two identical features: the first wins; within one, the lowest threshold of equal gain
    X = np.array([[0, 0, 1, 1, 2, 2], [0, 0, 1, 1, 2, 2]], dtype=np.uint8)
    gh = np.array([[1, 1, 1], [1, 1, 1], [-1, 1, 1], [-1, 1, 1], [1, 1, 1], [1, 1, 1]], dtype=np.int64)
    nb = np.array([3, 3], dtype=np.int64)
    off = _tree.packed_offsets(nb)
    hist = _hist_ref(X, gh, np.arange(6), nb)
    g, f, b, ml, _ = _tree.best_split(hist, off, 1, 1.0, 1.0, 0.0, 0, 0.0, 0)
    assert (f, b, ml) == (0, 0, False) and g > 0
    # no positive gain: no split; one row: no split
    flat = np.zeros_like(hist)
    flat[:, 2] = hist[:, 2]
    assert _tree.best_split(flat, off, 1, 1.0, 1.0, 0.0, 0, 0.0, 0)[1] == -1
    one = _hist_ref(X, gh, np.arange(1), nb)
    assert _tree.best_split(one, off, 1, 1.0, 1.0, 0.0, 0, 0.0, 0)[1] == -1


def test_units_keep_a_tiny_hessian():
    v = np.array([1e-30, 0.0, -1e-30, 0.25, 2.0**-53, 0.5 * 2.0**-40])
    out = np.zeros((6, 2), dtype=np.int64)
    _tree.to_units(v, 40, out, 0)
    _tree.to_units(v, 40, out, 1, True)
    assert out[:, 0].tolist() == [0, 0, 0, 2**38, 0, 0]  # plain rounding (ties to even: 0.5 -> 0)
    assert out[:, 1].tolist() == [1, 0, 0, 2**38, 1, 1]  # a positive hessian is at least one unit
    # the declared scale keeps the sum over all rows inside int64
    for n in (1, 1000, 10**9, 2**40):
        s = gh_shift(n)
        assert n * 2.0**s < 2.0**62


def _walk(tree, X, i):
    node = 0
    while tree.feature[node] >= 0:
        b = X[tree.feature[node], i]
        if tree.bin[node] < 0:  # categorical: the bins listed go left, missing right
            go = b != MISSING and b in tree.left_bins(node)
        else:
            go = tree.missing_left[node] if b == MISSING else b <= tree.bin[node]
        node = tree.left[node] if go else tree.right[node]
    return node


def _random_tree(rng, d, nb, leaves, V, categorical=False):
    """A random tree; with ``categorical`` about a third of its splits categorical (a random set of bins)."""
    feature, bins, ml, lc, rc, cat = [-1], [0], [0], [-1], [-1], [[0, 0, 0, 0]]
    open_ = [0]
    while len(open_) < leaves:
        node = open_.pop(int(rng.integers(len(open_))))
        feature[node], bins[node], ml[node] = int(rng.integers(d)), int(rng.integers(nb)), int(rng.integers(2))
        if categorical and rng.random() < 0.35:
            bins[node], ml[node] = -1, 0
            for b in np.flatnonzero(rng.random(nb) < 0.5):
                cat[node][b // 64] |= 1 << (b % 64)
        lc[node], rc[node] = len(feature), len(feature) + 1
        for _ in range(2):
            feature.append(-1)
            bins.append(0)
            ml.append(0)
            lc.append(-1)
            rc.append(-1)
            cat.append([0, 0, 0, 0])
        open_ += [lc[node], rc[node]]
    value = rng.normal(size=(len(feature), V))
    return Tree(feature, bins, ml, lc, rc, value, cat=np.array(cat, dtype=np.uint64))


def test_tree_prediction_matches_naive(threads):
    rng = np.random.default_rng(5)
    d, nb, n, V = 4, 6, 700, 3
    X = _binned(rng, n, d, nb, missing=0.2)
    trees = [_random_tree(rng, d, nb, int(rng.integers(1, 9)), V, categorical=k % 2 == 1) for k in range(7)]
    assert any(t.has_categorical for t in trees)
    coef = rng.normal(size=len(trees))
    for t in trees:
        np.testing.assert_array_equal(t.leaves(X), [_walk(t, X, i) for i in range(n)])
    feature, bins, ml, lc, rc, value, start, cat = flatten(trees, V)
    out = np.zeros((n, V))
    _tree.add_trees(X, feature, bins, ml, lc, rc, cat, value, start, coef, out)
    want = np.zeros((n, V))
    for i in range(n):
        for c, t in zip(coef, trees):
            want[i] = want[i] + c * t.value[_walk(t, X, i)]
    np.testing.assert_array_equal(out, want)  # same order of additions: the same bits


# ----------------------------------------------------------------- grower
def _grow_ref(X, gh, nb, K, spec, gs, hs):
    """Best-first growth written plainly: histograms from scratch for every node."""
    off = _tree.packed_offsets(nb)
    crit = 0 if spec.split_gain == "newton" else 1
    nodes = [dict(rows=np.arange(X.shape[1]), depth=0, split=None)]
    open_ = {0}

    def best(node):
        if spec.max_depth and nodes[node]["depth"] >= spec.max_depth:
            return (0.0, -1, 0, False)
        hist = _hist_ref(X, gh, nodes[node]["rows"], nb)
        return _best_ref(hist, off, K, gs, hs, spec.l2, spec.min_data_in_leaf, spec.min_child_weight, crit)

    cand = {0: best(0)}
    leaves = 1
    while leaves < spec.max_leaves:
        ok = [(cand[k][0], -k) for k in open_ if cand[k][1] >= 0]
        if not ok:
            break
        node = -max(ok)[1]
        g, f, b, ml = cand[node]
        rows = nodes[node]["rows"]
        bins = X[f, rows]
        go = np.where(bins == MISSING, ml, bins <= b)
        nodes[node]["split"] = (f, b, ml, len(nodes), len(nodes) + 1)
        for part in (rows[go], rows[~go]):
            nodes.append(dict(rows=part, depth=nodes[node]["depth"] + 1, split=None))
            open_.add(len(nodes) - 1)
            cand[len(nodes) - 1] = best(len(nodes) - 1)
        open_.discard(node)
        leaves += 1
    return nodes


@pytest.mark.parametrize("seed,K,gain,leaves,depth", [(0, 1, "newton", 8, 0), (1, 1, "error", 6, 0), (2, 3, "newton", 10, 3),
                                                     (3, 1, "newton", 31, 0), (4, 2, "newton", 2, 0)])
def test_grower_matches_naive(seed, K, gain, leaves, depth):
    rng = np.random.default_rng(seed)
    n, d = 600, 4
    nb = rng.integers(2, 12, size=d).astype(np.int64)
    X = _binned(rng, n, d, int(nb.min()), missing=0.1)
    gh = _gh(rng, n, K)
    signal = (X[0] > 1) ^ (X[1] == 0)
    gh[signal, :K] -= 2**39
    spec = TreeSpec(max_leaves=leaves, max_depth=depth, min_data_in_leaf=5, min_child_weight=0.0, l2=1.0,
                    split_gain=gain)
    gs = hs = 2.0**-40
    tree, leaf_of_row = TreeGrower(spec, None, X, nb).grow(gh, K, gs, hs, lambda s: s[:, :K] * gs, "real")
    ref = _grow_ref(X, gh, nb, K, spec, gs, hs)
    assert tree.n_nodes == len(ref)
    for node, r in enumerate(ref):
        if r["split"] is None:
            assert tree.feature[node] == -1
            np.testing.assert_array_equal(np.flatnonzero(leaf_of_row == node), np.sort(r["rows"]))
            np.testing.assert_array_equal(tree.value[node], gh[r["rows"], :K].sum(axis=0) * gs)
        else:
            f, b, ml, lft, rgt = r["split"]
            assert (tree.feature[node], tree.bin[node], bool(tree.missing_left[node]),
                    tree.left[node], tree.right[node]) == (f, b, ml, lft, rgt)
    np.testing.assert_array_equal(tree.leaves(X), leaf_of_row)


def test_grower_edge_cases():
    spec = TreeSpec(max_leaves=4, min_data_in_leaf=0)
    # no rows at all, and every value missing: a single leaf
    for X in (np.zeros((3, 0), dtype=np.uint8), np.full((2, 50), MISSING, dtype=np.uint8)):
        gh = np.ones((X.shape[1], 3), dtype=np.int64)
        tree, leaf = TreeGrower(spec, None, X, np.full(X.shape[0], 4)).grow(gh, 1, 1.0, 1.0, lambda s: np.ones((len(s), 1)), "real")
        assert tree.n_nodes == 1 and (leaf == 0).all()


def test_newton_kernels_match_numpy(threads):
    rng = np.random.default_rng(11)
    n, K, s = 5000, 4, 40
    F = rng.normal(scale=3, size=(n, K))
    F[0, 0] = 30.0  # a nearly saturated row: p = 1 - 1e-13, a hessian below one unit
    cls = rng.integers(0, K, size=n).astype(np.int32)
    init = rng.normal(size=K)
    gh = np.zeros((n, 2 * K + 1), dtype=np.int64)
    _tree.softmax_units(F, init, cls, s, gh)
    z = F + init
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    g = p - np.eye(K)[cls]
    h = K / (K - 1) * p * (1 - p)
    np.testing.assert_allclose(gh[:, :K] * 2.0**-s, g, atol=2.0**-s)
    np.testing.assert_allclose(gh[:, K:2 * K] * 2.0**-s, h, atol=2.0**-s)
    assert (gh[:, K:2 * K] >= (h > 0)).all() and (gh[:, 2 * K] == 1).all()
    t = (rng.random(n) < 0.3).astype(np.float64)
    g1 = np.zeros((n, 3), dtype=np.int64)
    _tree.logistic_units(np.ascontiguousarray(F[:, 0]), 0.25, t, s, g1)
    p1 = 1 / (1 + np.exp(-(F[:, 0] + 0.25)))
    np.testing.assert_allclose(g1[:, 0] * 2.0**-s, p1 - t, atol=2.0**-s)
    np.testing.assert_allclose(g1[:, 1] * 2.0**-s, p1 * (1 - p1), atol=2.0**-s)
    assert g1[0, 1] == 1 and p1[0] * (1 - p1[0]) * 2.0**s < 0.5  # below half a unit: still one unit
    # adding leaf values and counting the wrong rows
    value = rng.normal(size=(5, K))
    leaf = rng.integers(0, 5, size=n).astype(np.int32)
    F2 = F.copy()
    wrong = _tree.add_leaves(F2, value, leaf, cls, np.zeros(0, dtype=np.int8))
    np.testing.assert_array_equal(F2, F + value[leaf])
    top = K - 1 - np.argmax(F2[:, ::-1], axis=1)  # ties: the highest class
    assert wrong == int(np.count_nonzero(top != cls))
    F1 = np.ascontiguousarray(F[:, :1])
    sign = np.where(t > 0, 1, -1).astype(np.int8)
    wrong = _tree.add_leaves(F1, np.ascontiguousarray(value[:, :1]), leaf, np.zeros(0, dtype=np.int32), sign)
    assert wrong == int(np.count_nonzero(np.where(F1[:, 0] >= 0, 1, -1) != sign))


@pytest.mark.parametrize("seed", range(12))
def test_resolving_splits_keeps_every_rows_leaf_value(seed):
    """A tree over d + J features (the last J: one task's indicator each), its task splits decided for task k:
    every row of task k reaches a leaf of the same value in the resolved tree, which splits on the data's
    features only and is a proper tree (children after their parent, each node reached)."""
    rng = np.random.default_rng(seed)
    d, J, nb, n = 3, 4, 6, 500
    X = _binned(rng, n, d, nb, missing=0.1)
    task = rng.integers(0, J, n)
    ind = (np.arange(J)[:, None] == task[None, :]).astype(np.uint8)
    full = np.ascontiguousarray(np.vstack([X, ind]))
    tree = _random_tree(rng, d + J, 2, int(rng.integers(1, 12)), 1)
    for k in range(J):
        t = resolve_splits(tree, lambda f, k=k: None if f < d else int(f - d == k))
        assert not np.any(t.feature >= d)
        split = np.flatnonzero(t.feature >= 0)
        assert all(t.left[i] > i and t.right[i] > i for i in split)
        assert sorted(np.concatenate([t.left[split], t.right[split]]).tolist()) == list(range(1, t.n_nodes))
        rows = np.flatnonzero(task == k)
        want = [tree.value[_walk(tree, full, i)] for i in rows]
        got = t.value[t.leaves(np.ascontiguousarray(X[:, rows]))]
        np.testing.assert_array_equal(got, np.array(want).reshape(len(rows), -1))


def test_a_stump_as_a_sign_tree_predicts_alike():
    from mpiboost.weak.stump import Stump

    rng = np.random.default_rng(2)
    X = _binned(rng, 400, 3, 8, missing=0.2)
    for stump in (Stump(1, 3, 1, False), Stump(2, 0, -1, True), Stump(0, 5, 1, True), Stump(-1, 0, -1)):
        np.testing.assert_array_equal(stump_tree(stump).predict(X), stump.predict(X))
