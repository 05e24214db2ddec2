"""Quantized gradients (cython_ext/_quantize.pyx) against a few lines of Python: the counter-based uniform
numbers, stochastic rounding, and the same integers whatever the split into ranks and threads."""
import math

import numpy as np
import pytest

from mpiboost._ext import _quantize

M64 = (1 << 64) - 1


def _mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def uniform_twin(seed: int, rnd: int, row: int, stream: int) -> float:
    z = _mix((seed * 0x9E3779B97F4A7C15 + 1) & M64)
    z = _mix(z ^ ((rnd * 0xC2B2AE3D27D4EB4F) & M64))
    z = _mix(z ^ ((row * 0x165667B19E3779F9) & M64))
    z = _mix(z ^ ((stream * 0xD6E8FEB86659FD93) & M64))
    return (z >> 11) / 2.0 ** 53


def quantize_twin(g, h, g_scale, h_scale, seed, rnd, first_row, cls, constant=False):
    qg = [math.floor(x * (1.0 / g_scale) + uniform_twin(seed, rnd, first_row + i, 2 * cls)) for i, x in enumerate(g)]
    qh = [1 if constant else math.floor(x * (1.0 / h_scale) + uniform_twin(seed, rnd, first_row + i, 2 * cls + 1))
          for i, x in enumerate(h)]
    return np.array(qg), np.array(qh)


def test_uniform_numbers_are_the_twins_and_look_uniform():
    for key in [(0, 0, 0, 0), (1, 2, 3, 4), (2**63, 7, 10**12, 1), (M64, M64, M64, M64)]:
        assert _quantize.uniform(*key) == uniform_twin(*key)
    u = np.array([_quantize.uniform(3, 1, i, 0) for i in range(20000)])
    assert 0.0 <= u.min() and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005
    assert np.histogram(u, bins=10, range=(0, 1))[0].min() > 1800  # no empty or starved tenth
    # neighbouring keys differ: rows, rounds, streams and seeds each change the number
    base = _quantize.uniform(3, 1, 5, 0)
    assert len({base, _quantize.uniform(3, 1, 6, 0), _quantize.uniform(3, 2, 5, 0), _quantize.uniform(3, 1, 5, 1),
                _quantize.uniform(4, 1, 5, 0)}) == 5


def _inputs(kind, n, rng):
    if kind == "random":
        return rng.standard_normal(n), rng.random(n) * 0.25
    if kind == "skewed":
        return rng.standard_normal(n) * 10.0 ** rng.integers(-8, 2, n), rng.random(n) ** 8 * 0.25
    if kind == "equal":
        return np.full(n, -0.375), np.full(n, 0.25)
    return np.zeros(n), np.zeros(n)  # all zero


@pytest.mark.parametrize("dtype", [np.int16, np.int32])
@pytest.mark.parametrize("kind", ["random", "skewed", "equal", "zero"])
def test_quantize_is_the_twin_on_any_split_and_thread_count(kind, dtype):
    rng = np.random.default_rng(len(kind))
    n, bins = 40001, 4  # past the one-thread size of the kernel
    g, h = _inputs(kind, n, rng)
    g_scale = max(np.abs(g).max(), 1e-300) / (bins / 2)
    h_scale = max(h.max(), 1e-300) / bins
    want_g, want_h = quantize_twin(g, h, g_scale, h_scale, 11, 3, 1000, 2)
    assert np.abs(want_g).max() <= bins // 2 and want_h.min() >= 0 and want_h.max() <= bins
    for threads in (1, 3):
        for cuts in ([0, n], [0, 1, 1500, 1500, n]):  # ranks' blocks, an empty one among them
            qg, qh = np.empty(n, dtype), np.empty(n, dtype)
            for a, b in zip(cuts[:-1], cuts[1:]):
                _quantize.quantize(g[a:b], h[a:b], g_scale, h_scale, 11, 3, 1000 + a, 2, qg[a:b], qh[a:b],
                                   threads=threads)
            np.testing.assert_array_equal(qg, want_g)
            np.testing.assert_array_equal(qh, want_h)
    qg, qh = np.empty(n, dtype), np.empty(n, dtype)
    _quantize.quantize(g, h, g_scale, h_scale, 11, 3, 1000, 2, qg, qh, constant_hessian=True)
    assert (qh == 1).all() and np.array_equal(qg, want_g)


def test_stochastic_rounding_is_unbiased():
    """The mean integer of a value over many rows is the value in units: the property the method rests on."""
    n = 200000
    for x in (0.3, -1.75, 1.999, 0.0):
        g = np.full(n, x)
        qg, qh = np.empty(n, np.int32), np.empty(n, np.int32)
        _quantize.quantize(g, np.ones(n), 1.0, 1.0, 5, 0, 0, 0, qg, qh)
        assert set(np.unique(qg)) <= {math.floor(x), math.floor(x) + 1}
        assert abs(qg.mean() - x) < 4 * 0.5 / math.sqrt(n)


def test_bad_inputs_are_refused():
    g = np.zeros(3)
    out = np.empty(3, np.int16)
    with pytest.raises(ValueError):
        _quantize.quantize(g, np.zeros(2), 1.0, 1.0, 0, 0, 0, 0, out, out)
    with pytest.raises(ValueError):
        _quantize.quantize(g, g, 0.0, 1.0, 0, 0, 0, 0, out, out)


@pytest.mark.parametrize("K", [1, 3])
def test_quantize_units_is_quantize_class_by_class(K):
    """The fused kernel the boosters call (every class of the fixed-point channels at once, the key mixed in
    stages) gives the integers of :func:`quantize` class by class, and its maxima are numpy's."""
    rng = np.random.default_rng(K)
    n, shift, B = 40001, 40, 16  # past the one-thread size of the kernel
    gh = np.zeros((n, 2 * K + 1), dtype=np.int64)
    gh[:, :K] = rng.integers(-(2**shift), 2**shift, (n, K))
    gh[:, K:2 * K] = rng.integers(0, 2**shift // 4, (n, K))
    gh[:, 2 * K] = 1
    unit = 2.0 ** -shift
    gm, hm = _quantize.unit_maxima(gh, K)
    assert gm == np.abs(gh[:, :K]).max() and hm == gh[:, K:2 * K].max()
    g_scale, h_scale = gm * unit / (B / 2), hm * unit / B
    for threads in (1, 3):
        out = np.empty_like(gh)
        _quantize.quantize_units(gh, K, unit, g_scale, h_scale, 9, 4, 77, B // 2, B, out, threads=threads)
        assert (out[:, 2 * K] == 1).all()
        for k in range(K):
            qg, qh = np.empty(n, np.int32), np.empty(n, np.int32)
            _quantize.quantize(gh[:, k] * unit, gh[:, K + k] * unit, g_scale, h_scale, 9, 4, 77, k, qg, qh,
                               g_bound=B // 2, h_bound=B)
            np.testing.assert_array_equal(out[:, k], qg)
            np.testing.assert_array_equal(out[:, K + k], qh)
        assert np.abs(out[:, :K]).max() <= B // 2 and out[:, K:2 * K].max() <= B


def test_bounds_clamp_the_integers():
    """The packed histograms' field widths rely on |qg| <= g_bound and qh <= h_bound: a value past the bound
    (in use only a rounding error past it, g_max * (1 / g_scale) > B/2) is clamped, not rounded up past it."""
    g = np.array([2.7, -2.7] * 32)
    qg, qh = np.empty(64, np.int32), np.empty(64, np.int32)
    _quantize.quantize(g, np.full(64, 4.5), 1.0, 1.0, 0, 0, 0, 0, qg, qh)
    assert qg.max() == 3 and qg.min() == -3 and qh.max() == 5  # unbounded: past the bounds below
    _quantize.quantize(g, np.full(64, 4.5), 1.0, 1.0, 0, 0, 0, 0, qg, qh, g_bound=2, h_bound=4)
    assert qg.max() == 2 and qg.min() == -2 and qh.max() == 4
