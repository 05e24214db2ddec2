"""The exact greedy step of IS multi-task boosting: costs, error, alpha, against brute force."""
import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from mpiboost._ext import _histogram, _weights
from mpiboost.boost import is_costs as C
from mpiboost.protocol import FIXED_SHIFT


def _rows(seed, n=40, J=3, scale=1.0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 8, (n, 2)).astype(np.uint8)  # two features already in bins 0..7
    y = rng.choice([-1, 1], n).astype(np.int8)
    F = scale * rng.standard_normal((n, J))
    lam = rng.choice([0.0, 0.01, 0.3, 1.0], J)
    return X, y, F, lam


def _stumps(X):
    """Every stump s * sign(bin(x_f) > b) and the two constants, as +-1 predictions."""
    out = [np.ones(len(X)), -np.ones(len(X))]
    for f in range(X.shape[1]):
        for b in range(8):
            h = np.where(X[:, f] <= b, 1.0, -1.0)
            out += [h, -h]
    return out


def _risk_after(F, y, k, lam, h, alpha, teacher="all"):
    G = F.copy()
    G[:, k] += alpha * h
    return C.risk(G, y, k, lam, teacher)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("teacher", ["all", "average"])
def test_risk_is_z_times_the_exponential_form(seed, teacher):
    X, y, F, lam = _rows(seed)
    k = seed % 3
    a, b = C.costs(F, y, k, lam, teacher)
    Z = math.fsum((a + b).tolist())
    for h in _stumps(X)[::5]:
        eps = C.step_error(a, b, h)
        for alpha in (-0.7, 0.0, 0.3, 1.9):
            want = Z * ((1 - eps) * math.exp(-alpha) + eps * math.exp(alpha))
            assert _risk_after(F, y, k, lam, h, alpha, teacher) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_the_step_is_the_brute_force_minimiser(seed):
    """min over every stump and a line search in alpha of the task risk = the step's (f*, alpha*)."""
    X, y, F, lam = _rows(seed, scale=0.5)
    k = seed % 3
    a, b = C.costs(F, y, k, lam)
    stumps = _stumps(X)
    errors = [C.step_error(a, b, h) for h in stumps]
    best = int(np.argmin(errors))
    alpha = C.step_alpha(errors[best])
    brute = min(
        minimize_scalar(lambda t, h=h: _risk_after(F, y, k, lam, h, t), bounds=(-5, 5), method="bounded",
                        options={"xatol": 1e-10}).fun
        for h in stumps
    )
    got = _risk_after(F, y, k, lam, stumps[best], alpha)
    assert got <= brute * (1 + 1e-9)
    line = minimize_scalar(lambda t: _risk_after(F, y, k, lam, stumps[best], t), bounds=(-5, 5), method="bounded",
                           options={"xatol": 1e-12}).x
    assert alpha == pytest.approx(line, abs=1e-5)


def _fixed(w):
    g = np.empty(len(w), dtype=np.int64)
    _weights.fixed_signed(np.ascontiguousarray(w, dtype=np.float64), np.ones(len(w), dtype=np.int8), FIXED_SHIFT, g)
    return g


@pytest.mark.parametrize("seed", range(8))
def test_pseudo_labels_and_three_copies_pick_the_same_stump(seed):
    """Row i as (sign(b - a), |a - b|) or as three copies (y, u), (-1, sum lambda e^D), (+1, sum lambda e^-D)."""
    X, y, F, lam = _rows(seed, n=200)
    k = seed % 3
    a, b = C.costs(F, y, k, lam)
    scale = 1.0 / math.fsum((a + b).tolist())
    labels, w = C.pseudo_labels(a, b)
    cols = np.ascontiguousarray(X.T)
    n_bins = np.full(2, 8, dtype=np.int64)
    one = np.zeros((2, 256), dtype=np.int64)
    _histogram.build_histogram(cols, _fixed(w * scale) * labels, one)
    u = np.exp(-F[:, k] * y)
    lam_k = lam.copy()
    lam_k[k] = 0
    up = sum(lam_k[j] * np.exp(F[:, k] - F[:, j]) for j in range(3))  # costs f = +1
    down = sum(lam_k[j] * np.exp(F[:, j] - F[:, k]) for j in range(3))  # costs f = -1
    three = np.zeros((2, 256), dtype=np.int64)
    _histogram.build_histogram(cols, _fixed(u * scale) * y - _fixed(up * scale) + _fixed(down * scale), three)
    s1, s3 = _histogram.best_stump(one, n_bins), _histogram.best_stump(three, n_bins)
    assert s1[:4] == s3[:4]
    assert abs(s1[4] - s3[4]) <= 3 * len(y)  # the same edge up to the per-term rounding of the copies


def test_lambda_0_is_adaboost():
    X, y, F, _ = _rows(1)
    a, b = C.costs(F, y, 1, np.zeros(3))
    labels, w = C.pseudo_labels(a, b)
    np.testing.assert_array_equal(labels, y)
    np.testing.assert_array_equal(w, np.exp(-F[:, 1] * y))
    assert C.step_alpha(0.0) == pytest.approx(0.5 * math.log((1 - 1e-12) / 1e-12))
    assert C.step_alpha(0.5) is None


def test_one_teacher_average_is_case_1():
    X, y, F, lam = _rows(4, J=2)
    lam[:] = [0.0, 0.4]
    for got, want in zip(C.costs(F, y, 0, lam, "average"), C.costs(F, y, 0, lam, "all")):
        np.testing.assert_allclose(got, want, rtol=1e-14)
    with pytest.raises(ValueError):
        C.costs(F, y, 0, lam, "some")


def test_a_positive_lambda_keeps_the_error_above_zero():
    """eps > 0 whenever a lambda is positive (sum_i min(a_i, b_i) > 0), so alpha is finite."""
    X, y, F, lam = _rows(2)
    lam[:] = 0.1
    a, b = C.costs(F, y, 0, lam)
    for h in _stumps(X):
        assert C.step_error(a, b, h) > 0


@pytest.mark.parametrize("teacher", ["all", "average"])
@pytest.mark.parametrize("seed,scale,J", [(0, 1.0, 3), (1, 8.0, 6), (2, 0.0, 2), (3, 30.0, 4), (4, 1.0, 1)])
def test_the_cost_kernel_is_its_reference(seed, scale, J, teacher):
    """_multitask.task_costs (one pass) against is_costs.costs: random, skewed (scores up to ~100, costs over
    many orders of magnitude), all-zero scores, one task."""
    from mpiboost._ext import _multitask

    rng = np.random.default_rng(seed)
    n = 500
    y = rng.choice([-1, 1], n).astype(np.int8)
    F = scale * rng.standard_normal((J, n))
    lam = rng.choice([0.0, 0.003, 0.3, 2.0], J)
    for k in range(J):
        lk = lam.copy()
        lk[k] = 0.0
        ref_a, ref_b = C.costs(F.T, y, k, lk, teacher)
        if teacher == "average":
            total = lk.sum()
            T = (sum(lk[j] * F[j] for j in range(J)) / total)[None, :] if total > 0 else np.zeros((0, n))
            tl = np.array([total]) if total > 0 else np.zeros(0)
        else:
            T, tl = F, lk
        a, b, w = np.full(n, 7.0), np.full(n, 7.0), np.full(n, 7.0)
        labels = np.zeros(n, dtype=np.int8)
        _multitask.task_costs(F[k].copy(), np.ascontiguousarray(T), tl, y, a, b, labels, w)
        np.testing.assert_allclose(a, ref_a, rtol=1e-13, atol=0)
        np.testing.assert_allclose(b, ref_b, rtol=1e-13, atol=0)
        ref_labels, ref_w = C.pseudo_labels(a, b)
        assert labels.tolist() == ref_labels.tolist() and w.tolist() == ref_w.tolist()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_stump_cost_kernel_is_its_reference(seed):
    """stump_cost_terms (the exact cost of a stump) against plain sums, with missing bins, the constant stump,
    costs of very different magnitudes and zeros."""
    from mpiboost._ext import _multitask

    rng = np.random.default_rng(seed)
    n = 300
    col = rng.choice([0, 1, 2, 3, 255], n).astype(np.uint8)
    a = rng.choice([0.0, 1e-300, 1e-8, 1.0, 1e8], n) * rng.random(n)
    b = rng.choice([0.0, 1e-8, 1.0, 1e12], n) * rng.random(n)
    for bin_, left, missing_left in ((1, 1, False), (2, -1, True), (255, 1, True), (0, -1, False)):
        h = np.where(col == 255, left if missing_left else -left, np.where(col <= bin_, left, -left))
        terms = _multitask.stump_cost_terms(col, a, b, bin_, left, missing_left)
        assert math.fsum(terms) == math.fsum(np.where(h > 0, a, b).tolist())
