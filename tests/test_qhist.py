"""Packed-word histograms of quantized gradients (cython_ext/_qhist.pyx) against a few lines of numpy.

A row's (g, h, count) of class k share one int64 word; a histogram of words must read back as the
three plain integer sums, for random, skewed, all-equal and extreme inputs, 1-3 threads, feature- and
row-major bins, 0/1 columns, missing values, and at the largest node the field widths allow.
"""
import numpy as np
import pytest

from mpiboost._ext import _qhist, _tree

MISSING = 255


def _hist_twin(X, q, rows, nb):
    """(P, 2K+1) channel sums in packed-offset layout: one np.add.at per feature."""
    out = []
    for j in range(X.shape[0]):
        b = X[j, rows].astype(np.int64)
        slot = np.where(b == MISSING, nb[j], b)
        h = np.zeros((nb[j] + 1, q.shape[1]), dtype=np.int64)
        np.add.at(h, slot, q[rows])
        out.append(h)
    return np.concatenate(out)


def _quantized(rng, n, K, B, kind):
    g_max, h_max = (B + 1) // 2, B
    q = np.zeros((n, 2 * K + 1), dtype=np.int64)
    if kind == "random":
        q[:, :K] = rng.integers(-g_max, g_max + 1, (n, K))
        q[:, K:2 * K] = rng.integers(0, h_max + 1, (n, K))
    elif kind == "skewed":  # most rows at the extremes, a few zero hessians
        q[:, :K] = np.where(rng.random((n, K)) < 0.9, -g_max, g_max)
        q[:, K:2 * K] = np.where(rng.random((n, K)) < 0.95, h_max, 0)
    else:  # all equal, at the largest gradient
        q[:, :K] = g_max
        q[:, K:2 * K] = h_max
    q[:, 2 * K] = 1
    return q


def _binned(rng, n, d, nb, kind):
    X = np.stack([rng.integers(0, nb[j], n) for j in range(d)]).astype(np.uint8)
    if kind == "skewed":
        X[:, rng.random(n) < 0.9] = 0
    part = X[1:3]  # a view: missing values in features 1 and 2
    part[rng.random(part.shape) < 0.1] = MISSING
    return np.ascontiguousarray(X)


@pytest.mark.parametrize("n,d,K,B,kind", [(0, 3, 1, 4, "random"), (1, 1, 1, 4, "random"), (700, 9, 1, 4, "random"),
                                          (5000, 6, 1, 16, "skewed"), (3000, 5, 3, 4, "equal"), (12000, 9, 1, 4, "random"),
                                          (40000, 7, 1, 2, "random"), (40000, 5, 2, 5, "skewed")])
def test_word_histograms_are_the_channel_sums(threads, n, d, K, B, kind):
    rng = np.random.default_rng(n + d + K + B)
    nb = rng.integers(2, 40, size=d).astype(np.int64)
    nb[0] = 2  # a 0/1 column (missing values only in features 1 and 2): the masked sum
    X = _binned(rng, n, d, nb, kind)
    q = _quantized(rng, n, K, B, kind)
    off = _tree.packed_offsets(nb)
    wh, wc = _qhist.word_fields(max(n, 1), (B + 1) // 2, B)
    words = np.empty((n, K), dtype=np.int64)
    _qhist.pack(q, K, wh, wc, words)
    binary = np.array([bool((X[j] <= 1).all()) for j in range(d)])
    XR = np.ascontiguousarray(X.T)
    dense = np.full((d * 256, K), 7, dtype=np.int64)  # stale values must be overwritten
    out = np.empty((int(off[-1]), 2 * K + 1), dtype=np.int64)
    perm = np.sort(rng.permutation(n)[: n // 2]).astype(np.intp)
    cases = [(np.arange(n, dtype=np.intp), 0, n, True), (perm, 0, perm.shape[0], False),
             (perm, perm.shape[0] // 3, perm.shape[0], False)]
    for rows, lo, hi, identity in cases:
        want = _hist_twin(X, q, rows[lo:hi], nb)
        for xr in ((None,) if identity else (None, XR)):
            for flags in (None, binary):
                _qhist.node_histogram(X, words, rows, lo, hi, dense, identity, flags, xr)
                _qhist.unpack(dense, off, K, wh, wc, out)
                np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("B", [2, 4, 5, 16, 64])
def test_fields_hold_the_largest_node_at_the_extreme_gradients(B):
    """At the most rows the fields allow, every row at +g_max (then -g_max) and h_max: the sums read back;
    one row more does not fit (that node takes the three-channel kernels)."""
    g_max, h_max = (B + 1) // 2, B
    n = _qhist.largest_fitting(g_max, h_max)
    assert n > 2**16  # a node of more than 2**16 rows still packs (at 64 levels too)
    wh, wc = _qhist.word_fields(n, g_max, h_max)
    for sign in (1, -1):
        word = sign * g_max * 2 ** (wh + wc) + h_max * 2**wc + 1  # Python ints: no overflow here
        total = n * word
        assert -(2**63) <= total < 2**63  # the sum of all n words is an int64: no wrap while adding
        dense = np.zeros((256, 1), dtype=np.int64)
        dense[0, 0] = total
        out = np.empty((2, 3), dtype=np.int64)
        _qhist.unpack(dense, np.array([0, 2], dtype=np.int64), 1, wh, wc, out)
        assert out[0].tolist() == [sign * g_max * n, h_max * n, n]
    assert _qhist.word_fields(n + 1, g_max, h_max) is None


def test_bad_shapes_are_refused():
    X = np.zeros((2, 5), dtype=np.uint8)
    words = np.zeros((5, 1), dtype=np.int64)
    rows = np.arange(5, dtype=np.intp)
    with pytest.raises(ValueError):
        _qhist.node_histogram(X, words, rows, 0, 5, np.zeros((3 * 256, 1), dtype=np.int64), True)
    with pytest.raises(ValueError):
        _qhist.node_histogram(X, words, rows, 0, 6, np.zeros((2 * 256, 1), dtype=np.int64), False)
    with pytest.raises(ValueError):
        _qhist.pack(np.zeros((5, 2), dtype=np.int64), 1, 4, 4, words)


@pytest.mark.parametrize("B", [4, 1024])
def test_grower_on_words_is_the_grower_on_channels(monkeypatch, B):
    """The tree grown from word histograms is the tree grown from the three int64 channels on the same
    integers. At B = 1024 the root (20,000 rows) is past the most rows a word holds (16,383 at the largest
    gradient): its words are summed in two pieces, each unpacked and added. A cap forced to 0 makes every
    node take the channels, and the trees must agree; the twin fails if a node's word overflowed."""
    from mpiboost.weak.tree import TreeGrower, TreeSpec

    rng = np.random.default_rng(B)
    n, d = 20000, 6
    nb = np.full(d, 30, dtype=np.int64)
    X = _binned(rng, n, d, nb, "random")
    q = _quantized(rng, n, 1, B, "skewed" if B == 1024 else "random")
    spec = TreeSpec(max_leaves=15, min_data_in_leaf=5)
    assert _qhist.largest_fitting((B + 1) // 2, B) < n or B == 4

    def grow(grad_bins):
        leaf = lambda s: -s[:, :1] / np.maximum(s[:, 1:2], 1)  # noqa: E731
        grower = TreeGrower(spec, None, X, nb)
        tree = grower.grow(q, 1, 1.0 / B, 1.0 / B, leaf, "real", grad_bins=grad_bins, n_rows=n)[0]
        g = grower._g[1]
        return tree, (g.word_nodes, g.word_chunks, g.channel_nodes, g.word_rows_max)

    words, (w, pieces, c, most) = grow(B)
    assert w > 0 and c == 0 and most == n
    assert pieces == w + (1 if B == 1024 else 0)  # only the root past the fields takes two pieces
    channels, (w0, _, c0, _) = grow(0)
    assert w0 == 0 and c0 > 0 and words.n_leaves == 15 and words.same_as(channels)
    monkeypatch.setattr(_qhist, "largest_fitting", lambda g, h: 0)
    wide, (w, _, _, _) = grow(B)
    assert w == 0 and wide.same_as(channels)
