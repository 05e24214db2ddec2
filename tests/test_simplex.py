"""The simplex projection and the online agnostic booster's OCO chain against slow, obvious twins."""
import math

import numpy as np
import pytest

from mpiboost._ext import _simplex


def _reference_projection(u):
    """argmin ||p - u|| on the simplex: p = max(u - theta, 0) with theta found by bisection on sum p = 1."""
    u = [float(x) for x in u]
    lo, hi = min(u) - 1.0, max(u)
    for _ in range(400):
        mid = 0.5 * (lo + hi)
        if math.fsum(max(x - mid, 0.0) for x in u) > 1.0:
            lo = mid
        else:
            hi = mid
    theta = 0.5 * (lo + hi)
    return np.array([max(x - theta, 0.0) for x in u])


def _cases():
    rng = np.random.default_rng(0)
    for k in range(2, 31):
        yield rng.standard_normal(k)  # random
        yield rng.standard_normal(k) * 10.0 ** rng.integers(-6, 7)  # skewed scales
        yield np.round(rng.standard_normal(k), 1)  # ties
        yield rng.dirichlet(np.ones(k))  # already on the simplex
        yield np.full(k, 3.0)  # all equal
        yield -np.abs(rng.standard_normal(k)) - 5.0  # all negative
        one = np.zeros(k)
        one[rng.integers(k)] = 1e9
        yield one  # one huge coordinate


@pytest.mark.parametrize("u", list(_cases()), ids=lambda u: f"k{len(u)}")
def test_projection_matches_the_bisection_reference(u):
    got = np.empty_like(u)
    _simplex.project(np.ascontiguousarray(u, dtype=np.float64), got)
    ref = _reference_projection(u)
    assert np.all(got >= 0) and abs(got.sum() - 1.0) <= 1e-12 * max(1.0, np.abs(u).max())
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12 * max(1.0, np.abs(u).max()))


def test_projection_of_many_rows_is_row_by_row():
    U = np.random.default_rng(1).standard_normal((50, 7))
    out = np.empty_like(U)
    _simplex.project_rows(U, out)
    for r in range(50):
        one = np.empty(7)
        _simplex.project(U[r].copy(), one)
        assert np.array_equal(out[r], one)


def test_polarisation_example():
    """Votes (5, 3, 2, 0) of N = 10 learners: the plain share at gamma = 1, the winner alone at gamma = 0.1."""
    votes = np.array([5.0, 3.0, 2.0, 0.0])
    for gamma, want in ((1.0, [0.5, 0.3, 0.2, 0.0]), (0.1, [1.0, 0.0, 0.0, 0.0])):
        out = np.empty(4)
        _simplex.project(votes / (gamma * 10), out)
        np.testing.assert_allclose(out, want, atol=1e-12)


def _reference_chain(predicted, y, k, gamma, eta):
    """Algorithm 1's inner loop as written: g = (2 e_l - 1)/gamma - (2 e_y - 1), p <- proj(p - eta g)."""
    p = np.full(k, 1.0 / k)
    out = [p]
    for l in predicted:
        g = (2.0 * np.eye(k)[l] - 1.0) / gamma - (2.0 * np.eye(k)[y] - 1.0)
        p = _reference_projection(p - eta * g)
        out.append(p)
    return np.array(out)


@pytest.mark.parametrize("k, gamma", [(2, 1.0), (2, 0.3), (3, 0.5), (7, 0.1), (28, 0.7)])
def test_ogd_chain_matches_the_sequential_reference(k, gamma):
    rng = np.random.default_rng(k)
    n = 100
    predicted = rng.integers(0, k, n).astype(np.int32)
    y = int(rng.integers(k))
    P = np.empty((n + 1, k))
    _simplex.ogd_chain(predicted, y, gamma, gamma / math.sqrt(n), P)
    np.testing.assert_allclose(P, _reference_chain(predicted, y, k, gamma, gamma / math.sqrt(n)), atol=1e-12)


def test_at_gamma_1_a_right_learner_does_not_move_p():
    k, n = 5, 40
    rng = np.random.default_rng(3)
    y = 2
    predicted = rng.integers(0, k, n).astype(np.int32)
    P = np.empty((n + 1, k))
    _simplex.ogd_chain(predicted, y, 1.0, 1.0 / math.sqrt(n), P)
    right = predicted == y
    assert right.any() and (~right).any()
    np.testing.assert_allclose(P[1:][right], P[:-1][right], atol=1e-15)
    assert not np.allclose(P[1:][~right], P[:-1][~right])


def test_ogd_chain_rejects_bad_input():
    P = np.empty((3, 3))
    with pytest.raises(ValueError):
        _simplex.ogd_chain(np.array([0, 3], dtype=np.int32), 0, 0.5, 0.1, P)
    with pytest.raises(ValueError):
        _simplex.ogd_chain(np.array([0, 1], dtype=np.int32), 3, 0.5, 0.1, P)
    with pytest.raises(ValueError):
        _simplex.ogd_chain(np.array([0, 1], dtype=np.int32), 0, 0.0, 0.1, P)
    with pytest.raises(ValueError):
        _simplex.ogd_chain(np.array([0], dtype=np.int32), 0, 0.5, 0.1, P)


def _mix(z):
    M = (1 << 64) - 1
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return z ^ (z >> 31)


@pytest.mark.parametrize("seed,t", [(0, 0), (3, 12345), (2**63 - 1, 2**40 + 7)])
def test_stream_uniforms_match_the_python_twin(seed, t):
    """The counter-based numbers, written out in Python integers; any window of draws is the same numbers."""
    M = (1 << 64) - 1
    key = _mix(_mix((seed + 0x9E3779B97F4A7C15) & M) ^ ((t * 0xD1B54A32D192ED03) & M))
    want = [(_mix((key + (i + 1) * 0x9E3779B97F4A7C15) & M) >> 11) / 2.0**53 for i in range(40)]
    out = np.empty(40)
    _simplex.uniforms(seed, t, 0, out)
    assert out.tolist() == want
    part = np.empty(7)
    _simplex.uniforms(seed, t, 30, part)
    assert part.tolist() == want[30:37]


def test_stream_uniforms_look_uniform():
    out = np.empty(200_000)
    _simplex.uniforms(1, 2, 0, out)
    assert out.min() >= 0 and out.max() < 1
    counts = np.bincount((out * 10).astype(int), minlength=10)
    assert np.all(np.abs(counts - 20_000) < 5 * np.sqrt(20_000))


@pytest.mark.parametrize("k,N,gamma", [(2, 1, 1.0), (3, 10, 0.1), (10, 100, 0.5), (28, 100, 0.7), (5, 7, 1.0)])
def test_vote_distribution_and_draw_match_numpy(k, N, gamma):
    rng = np.random.default_rng(k * N)
    for _ in range(20):
        labels = rng.integers(0, k, N).astype(np.int32)
        want = np.empty(k)
        _simplex.project(np.bincount(labels, minlength=k) / (gamma * N), want)
        got = np.empty(k)
        _simplex.vote_distribution(labels, gamma, got)
        assert got.tolist() == want.tolist()
        for u in (0.0, rng.random(), 0.999999):
            cdf = np.cumsum(got)
            assert _simplex.draw_index(got, u) == min(int((cdf <= u * cdf[-1]).sum()), k - 1)
    with pytest.raises(ValueError):
        _simplex.vote_distribution(np.array([0, k], dtype=np.int32), gamma, np.empty(k))
