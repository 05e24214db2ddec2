"""The exact greedy step of IS multi-task boosting: costs, error, alpha, against brute force."""
import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from mpiboost._ext import _histogram, _weights
from mpiboost.boost import is_costs as C
from mpiboost.comm import Comm, _mpi
from mpiboost.data.binning import BinMapper
from mpiboost.data.load import Layout, Shard
from mpiboost.protocol import FIXED_SHIFT, Protocol


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


# ------------------------------------------------------------- an independent brute force of the Case-1 step


def paper_risk(Fk, others, lam, y, teacher="all"):
    """Task k's empirical risk, written from the paper's Eq. 24 (``all``) or Eq. 26 (``average``).

    Eq. 24: ``(1/n_k) sum_i [exp(-F_k(x_i) y_i) + sum_{j != k} lambda_kj
    (exp(F_k(x_i) - F_j(x_i)) + exp(F_j(x_i) - F_k(x_i)))]``. Eq. 26 has one
    teacher instead, the mean ``Fbar_k = sum_j (lambda_kj / lambda_k) F_j`` of
    weight ``lambda_k = sum_j lambda_kj``. Term by term as printed, summed
    exactly over the rows; nothing of :mod:`mpiboost.boost.is_costs` in it.

    Parameters
    ----------
    Fk : ndarray
        F_k on task k's rows.
    others : dict
        ``{j: F_j on task k's rows}`` for every other task j.
    lam : dict
        ``{j: lambda_kj}``, the same keys.
    y : ndarray of {-1, +1}
    teacher : {"all", "average"}
    """
    Fk = np.asarray(Fk, dtype=np.float64)
    terms = np.exp(-Fk * y)
    if teacher == "all":
        for j, Fj in others.items():
            terms = terms + lam[j] * (np.exp(Fk - Fj) + np.exp(Fj - Fk))
    else:
        lam_k = math.fsum(lam.values())
        if lam_k > 0:
            Fbar = sum(lam[j] / lam_k * others[j] for j in others)
            terms = terms + lam_k * (np.exp(Fk - Fbar) + np.exp(Fbar - Fk))
    return math.fsum(terms.tolist()) / len(y)


def every_stump(X, n_bins):
    """Every binned stump as +-1 predictions with its (feature, bin, left, missing_left), the constants first.

    ``left`` where bin(x_f) <= b (or x_f is missing and ``missing_left``),
    ``-left`` elsewhere: every feature, every bin, both signs, both ways for
    missing values (a duplicate of another candidate is harmless).
    """
    out = [((-1, 0, 1, False), np.ones(len(X))), ((-1, 0, -1, False), -np.ones(len(X)))]
    for f in range(X.shape[1]):
        missing = X[:, f] == 255
        for b in range(int(n_bins[f])):
            for ml in (False, True):
                goes_left = np.where(missing, ml, X[:, f] <= b)
                for left in (1, -1):
                    out.append(((f, b, left, ml), np.where(goes_left, left, -left).astype(float)))
    return out


def stump_predictions(X, feature, bin, left, missing_left):
    """The +-1 predictions of one stump on binned rows X (n, d), from the stump's definition."""
    if feature < 0:
        return np.full(len(X), float(left))
    goes_left = np.where(X[:, feature] == 255, missing_left, X[:, feature] <= bin)
    return np.where(goes_left, left, -left).astype(float)


def line_minimum(risk_of_alpha):
    """(argmin, min) of a convex function of alpha by a bounded 1-D search (Brent), wide enough for any step here."""
    r = minimize_scalar(risk_of_alpha, bounds=(-30.0, 30.0), method="bounded", options={"xatol": 1e-12})
    return float(r.x), float(r.fun)


def brute_force(X, Fk, others, lam, y, n_bins, teacher="all"):
    """The smallest risk over every stump and every alpha: min over stumps of a line search in alpha.

    The risk sees a stump only through its predictions on these rows, so
    each distinct prediction vector is searched once.
    """
    distinct = {tuple(h): h for _, h in every_stump(X, n_bins)}
    return min(line_minimum(lambda t, h=h: paper_risk(Fk + t * h, others, lam, y, teacher))[1]
               for h in distinct.values())


def _rows_with_missing(seed, n=40, J=3, scale=0.5):
    X, y, F, lam = _rows(seed, n, J, scale)
    X[np.random.default_rng(seed + 100).random(X.shape) < 0.1] = 255  # some missing values
    return X, y, F, lam


def _module_step(X, y, F, k, lam, teacher):
    """The module's step: costs, pseudo-labels, the project's exact histogram stump learner, eps and alpha."""
    a, b = C.costs(F, y, k, lam, teacher)
    labels, w = C.pseudo_labels(a, b)
    hist = np.zeros((X.shape[1], 256), dtype=np.int64)
    _histogram.build_histogram(np.ascontiguousarray(X.T), _fixed(w / math.fsum(w.tolist())) * labels, hist)
    feature, bin_, left, ml, _ = _histogram.best_stump(hist, np.full(X.shape[1], 8, dtype=np.int64))
    h = stump_predictions(X, feature, bin_, left, ml)
    eps = C.step_error(a, b, h)
    return h, eps, C.step_alpha(eps)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("teacher", ["all", "average"])
def test_the_step_is_the_brute_force_minimiser(seed, teacher):
    """The module's (f*, alpha*) minimises the paper's risk over every stump and alpha; its costs are that risk.

    The risk is written from the paper's formula (:func:`paper_risk`) and
    minimised by brute force: a 1-D search in alpha for every stump. The
    module's step must reach that minimum (to the search's precision), its
    alpha must be the line-search minimiser of its stump, its risk
    (``is_costs.risk``, the sum of the costs) must be n_k times the paper's
    before and after the step, and its eps must give the risk after the
    step: ``Z [(1 - eps) e^-alpha + eps e^alpha]``.
    """
    X, y, F, lam = _rows_with_missing(seed)
    k = seed % 3
    lam_k = {j: float(lam[j]) for j in range(3) if j != k}
    others = {j: F[:, j] for j in lam_k}
    h, eps, alpha = _module_step(X, y, F, k, lam, teacher)
    n = len(y)
    before = paper_risk(F[:, k], others, lam_k, y, teacher)
    after = paper_risk(F[:, k] + alpha * h, others, lam_k, y, teacher)
    brute = brute_force(X, F[:, k], others, lam_k, y, np.full(2, 8), teacher)
    assert after <= brute * (1 + 1e-12)  # nothing in the brute force does better (it may do as well)
    assert after == pytest.approx(brute, rel=1e-10)
    line_alpha, _ = line_minimum(lambda t: paper_risk(F[:, k] + t * h, others, lam_k, y, teacher))
    assert alpha == pytest.approx(line_alpha, abs=1e-6)
    assert C.risk(F, y, k, lam, teacher) == pytest.approx(n * before, rel=1e-13)
    G = F.copy()
    G[:, k] += alpha * h
    assert C.risk(G, y, k, lam, teacher) == pytest.approx(n * after, rel=1e-13)
    assert n * before * ((1 - eps) * math.exp(-alpha) + eps * math.exp(alpha)) == pytest.approx(n * after, rel=1e-12)


def _task_shard(seed, n_per_task=(50, 40, 60), d=3, noise=0.15):
    """Binned rows of three related tasks (one domain each): a shared rule, a task-specific one, label noise."""
    rng = np.random.default_rng(seed)
    task = np.repeat(np.arange(len(n_per_task)), n_per_task).astype(np.int32)
    n = len(task)
    X = rng.integers(0, 6, (n, d)).astype(np.uint8)
    X[rng.random((n, d)) < 0.05] = 255
    rule = np.where(task == 2, X[:, 1] < 3, X[:, 0] > 2)
    y = np.where(rule ^ (rng.random(n) < noise), 1, -1).astype(np.int8)
    n_bins = np.full(d, 6)
    shard = Shard(cols=np.ascontiguousarray(X.T), y=y, domain=task, start=0, n_global=n,
                  n_domains=len(n_per_task), files=[], layout=Layout(n, 1),
                  bins=BinMapper([np.arange(5, dtype=float) + 0.5 for _ in range(d)]),
                  domain_counts=np.bincount(task).astype(np.int64))
    return shard, X, y, task, n_bins


@pytest.mark.parametrize("lam,teacher,seed", [(0.3, "all", 0), (0.05, "all", 1), (1.0, "average", 2),
                                               (0.0, "all", 3)])
def test_every_step_of_the_algorithm_is_the_brute_force_minimiser(lam, teacher, seed):
    """IS multi-task boosting in one process, round after round: each step minimises the paper's risk.

    The algorithm's own path (the one-pass cost kernel, the histogram stump
    learner, the exact cost of the chosen stump) against the brute force of
    the paper's risk at the current scores, which the test keeps itself (it
    adds each round's coef * stump on every task's rows). The task drawn is
    the algorithm's (a random draw); everything else is checked: the stump
    reaches the brute-force minimum, its coefficient is its line-search
    minimiser, and the reported weak error eps gives the risk after the step.
    lambda = 0 is AdaBoost on each task alone.
    """
    from mpiboost.boost.is_multitask import ISMultitask

    shard, X, y, task, n_bins = _task_shard(seed)
    algo = ISMultitask({"lam": lam, "teacher": teacher, "steps_per_visit": 2, "weak_learner": "histogram",
                        "start": "zero"})  # the paper's zero start and exact steps
    algo.setup(shard, Protocol(Comm(_mpi().COMM_SELF)), seed)
    J = 3
    F = np.zeros((J, len(y)))  # every task's score on every row, kept by the test
    seen = set()
    for t in range(1, 13):
        hyp = algo.select(t)
        assert hyp is not None
        k = int(hyp.domain)
        seen.add(k)
        rows = task == k
        Fk, yk, Xk = F[k, rows], y[rows], X[rows]
        lam_k = {j: lam for j in range(J) if j != k}
        others = {j: F[j, rows] for j in lam_k}
        s = hyp.stump
        h = stump_predictions(Xk, s.feature, s.bin, s.left, s.missing_left)
        before = paper_risk(Fk, others, lam_k, yk, teacher)
        after = paper_risk(Fk + hyp.coef * h, others, lam_k, yk, teacher)
        brute = brute_force(Xk, Fk, others, lam_k, yk, n_bins, teacher)
        assert after <= brute * (1 + 1e-12) and after == pytest.approx(brute, rel=1e-10), t
        line_alpha, _ = line_minimum(lambda a: paper_risk(Fk + a * h, others, lam_k, yk, teacher))
        assert hyp.coef == pytest.approx(line_alpha, abs=1e-6), t
        eps = hyp.metrics["weak_error"]
        assert before * ((1 - eps) * math.exp(-hyp.coef) + eps * math.exp(hyp.coef)) == pytest.approx(after,
                                                                                                      rel=1e-12), t
        algo.apply(hyp)
        F[k] += hyp.coef * stump_predictions(X, s.feature, s.bin, s.left, s.missing_left)
    assert len(seen) > 1  # the rounds visited more than one task


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
