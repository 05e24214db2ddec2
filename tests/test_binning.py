"""Binning kernel against a naive reference; edge computation."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from mpiboost.data.binning import (
    MISSING_BIN,
    BinMapper,
    edges_from_counts,
    local_distinct,
    merge_distinct,
    sample_rows,
)


def naive_bins(X, edges):
    out = np.empty(X.shape, dtype=np.uint8)
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            v = float(X[i, j])
            if v != v:
                out[i, j] = MISSING_BIN
            else:
                out[i, j] = sum(1 for e in edges[j] if e < v)
    return out


def _mapper_from(X, max_bins=255):
    return BinMapper([edges_from_counts(*merge_distinct([d]), max_bins=max_bins) for d in local_distinct(X)])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.uint8, np.int16, np.int32])
def test_kernel_matches_naive_random(dtype):
    rng = np.random.default_rng(0)
    n, d = 300, 5
    if np.dtype(dtype).kind == "f":
        X = (rng.standard_normal((n, d)) * [1, 10, 1e-3, 1e6, 1]).astype(dtype)
        X[rng.random((n, d)) < 0.1] = np.nan
        X[:, 4] = 2.0
    else:
        info = np.iinfo(dtype)
        X = rng.integers(max(info.min, -100), min(info.max, 100), (n, d)).astype(dtype)
    m = _mapper_from(X)
    np.testing.assert_array_equal(m.transform(X), naive_bins(X, m.edges))


def test_kernel_skewed_and_many_values():
    rng = np.random.default_rng(1)
    n = 5000
    X = np.column_stack(
        [
            rng.exponential(size=n) ** 4,  # heavy tail
            np.where(rng.random(n) < 0.95, 0.0, rng.standard_normal(n)),  # 95% one value
            rng.standard_normal(n),  # > 255 distinct values: quantile edges
        ]
    )
    m = _mapper_from(X)
    assert m.n_bins[2] == 255 and m.n_bins.max() <= 255
    np.testing.assert_array_equal(m.transform(X), naive_bins(X, m.edges))
    # the heavy value keeps a bin of its own and quantile bins are roughly balanced
    counts = np.bincount(m.transform(X)[:, 2], minlength=255)
    assert counts.max() <= 3 * n / 255


@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=40),
        elements=st.one_of(st.just(float("nan")), st.floats(min_value=-1e300, max_value=1e300), st.sampled_from([0.0, 1.0, -1.0])),
    ),
    st.integers(2, 255),
)
def test_kernel_matches_naive_property(X, max_bins):
    m = _mapper_from(X, max_bins)
    assert all(len(e) < max_bins for e in m.edges)
    np.testing.assert_array_equal(m.transform(X), naive_bins(X, m.edges))


def test_edges_semantics():
    assert edges_from_counts(np.array([]), np.array([])).size == 0
    assert edges_from_counts(np.array([3.0]), np.array([10])).size == 0
    e = edges_from_counts(np.array([0.0, 1.0, 5.0]), np.array([1, 1, 1]))
    assert e.tolist() == [0.5, 3.0]
    vals = np.arange(1000.0)
    e = edges_from_counts(vals, np.ones(1000, dtype=np.int64), max_bins=4)
    assert len(e) == 3 and np.allclose(e, [249.5, 499.5, 749.5], atol=1)
    # threshold of "bin <= b" is the edge; last bin is unbounded
    m = BinMapper([np.array([0.5, 3.0])])
    assert m.threshold(0, 0) == 0.5 and m.threshold(0, 2) == float("inf")
    flat, off = m.flat()
    assert BinMapper.from_flat(flat, off).edges[0].tolist() == [0.5, 3.0]


def test_merge_distinct_is_order_free():
    a = (np.array([1.0, 2.0]), np.array([3, 1]))
    b = (np.array([2.0, 7.0]), np.array([2, 5]))
    for parts in ([a, b], [b, a], [a, (np.zeros(0), np.zeros(0, np.int64)), b]):
        v, c = merge_distinct(parts)
        assert v.tolist() == [1.0, 2.0, 7.0] and c.tolist() == [3, 3, 5]


def test_sample_rows_deterministic():
    assert sample_rows(10, 100).tolist() == list(range(10))
    s = sample_rows(10**6, 1000, seed=3)
    assert s.size == 1000 and np.all(np.diff(s) > 0)
    assert np.array_equal(s, sample_rows(10**6, 1000, seed=3))
    assert not np.array_equal(s, sample_rows(10**6, 1000, seed=4))


def test_kernel_threads_do_not_change_result():
    from mpiboost._ext import _openmp

    rng = np.random.default_rng(4)
    X = rng.standard_normal((20000, 7)).astype(np.float32)
    m = _mapper_from(X)
    before = _openmp.get_max_threads()
    try:
        _openmp.set_num_threads(1)
        one = m.transform(X)
        _openmp.set_num_threads(2)
        two = m.transform(X)
    finally:
        _openmp.set_num_threads(before)
    np.testing.assert_array_equal(one, two)
    with pytest.raises(ValueError):
        _openmp.set_num_threads(0)
