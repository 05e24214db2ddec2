"""The online baselines (OCO realizable, Online MBBM, AdaBoost.OLM) against plain loops, on a stream, over ranks."""
import math

import numpy as np
import pytest

from mpiboost._ext import _simplex
from mpiboost.online import driver
from mpiboost.online.base import StreamRandom
from mpiboost.online.mbbm import OnlineMBBM
from mpiboost.online.ocor import OnlineOCOR
from mpiboost.online.olm import OnlineOLM
from online_sim import simulate

BASELINES = ("online-ocor", "online-mbbm", "online-olm")


def _stream(n=400, k=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    X = np.column_stack([(y + rng.integers(0, 2, n)) % 4, y + 0.8 * rng.standard_normal(n)]).astype(float)
    return X, y, [4, 0]


def _labels(rng, N, k):
    """Learners' classes, often crowded on two classes (ties and long runs)."""
    return rng.integers(0, k if rng.random() < 0.5 else 2, N).astype(np.int32)


# -- OCO realizable


def test_ocor_by_hand():
    b = OnlineOCOR(3, {"n_learners": 4, "gamma": 0.5})
    assert math.isclose(b.eta, 1 / 6)
    # right: g = 1 (p - 1/6); wrong: g = -3 (p + 1/2), clipped to [0, 1]
    labels = np.array([1, 0, 2, 1], dtype=np.int32)
    np.testing.assert_allclose(b.probabilities(labels, 1), [0.5, 1 / 3, 5 / 6, 1.0])
    upd = b.update(labels, 1, 0, StreamRandom(5, 0))
    u = StreamRandom(5, 0).random(4)
    assert upd.labels.tolist() == [1] * 4 and upd.weights.tolist() == (u < [0.5, 1 / 3, 5 / 6, 1.0]).tolist()
    # proj([2, 1, 1] / (0.5 * 4)) = [1, 1/2, 1/2] - 1/3
    np.testing.assert_allclose(b.distribution(np.array([0, 0, 1, 2], dtype=np.int32), 0), [2 / 3, 1 / 6, 1 / 6])


def test_ocor_against_a_plain_loop():
    rng = np.random.default_rng(1)
    for gamma in (0.1, 0.3, 1.0):
        b = OnlineOCOR(4, {"n_learners": 25, "gamma": gamma})
        eta = 1 / ((1 + 1 / gamma) * math.sqrt(25))
        for _ in range(20):
            labels, y = _labels(rng, 25, 4), int(rng.integers(0, 4))
            want, p = [], 0.5
            for l in labels:
                want.append(p)
                p = max(min(p - eta * ((2 * (l == y) - 1) / gamma - 1), 1), 0)
            np.testing.assert_allclose(b.probabilities(labels, y), want, rtol=0, atol=1e-12)
            D = np.empty(4)
            _simplex.project(np.bincount(labels, minlength=4) / (gamma * 25), D)
            np.testing.assert_array_equal(b.distribution(labels, 0), D)


# -- Online MBBM


def _mbbm_reference(b, labels, y, walks):
    """The authors' cost loop written out: every C[r, l], the potentials by their key, then the weights.

    ``walks(i, n, key)`` gives the M draws (the label's class first) behind learner i's potential of ``key``.
    """
    N, k = b.n_learners, b.n_classes
    s, out = np.zeros(k), []
    for i in range(N):
        C = np.zeros((k, k))
        for r in range(k):
            for l in range(k):
                v = s.copy()
                v[l] += 1
                key = list(v)
                key[r] = -np.inf
                key.sort()
                key[0] = v[r]
                n = N - i
                cnt = 0
                for x in walks(i, n, tuple(int(z) for z in key)):
                    x = x + np.array(key)
                    tmp, x[0] = x[0], 0
                    cnt += tmp <= np.max(x)
                C[r, l] = cnt / b.draws
        diag = np.sum(C[y]) - k * C[y, y]
        out.append(max(1e-10, 0.1 * b.consts[i] * diag / (k - 1)))
        s[labels[i]] += 1
    return np.array(out)


@pytest.mark.parametrize("potentials", ["shared", "independent"])
def test_mbbm_weights_against_the_authors_loop(potentials):
    rng = np.random.default_rng(2)
    for k, N in ((2, 6), (3, 9), (5, 8)):
        b = OnlineMBBM(k, {"n_learners": N, "gamma": 0.3, "mc_draws": 40, "potentials": potentials}, seed=7)
        if potentials == "shared":
            def walks(i, n, key):
                return b.tables()[:, i, :].T
        else:
            def walks(i, n, key):
                return b._walks(n, (n,) + key)
        for _ in range(6):
            labels, y = _labels(rng, N, k), int(rng.integers(0, k))
            upd = b.update(labels, y, 0, StreamRandom(0, 0))
            np.testing.assert_allclose(upd.weights, _mbbm_reference(b, labels, y, walks), rtol=1e-12, atol=1e-15)
            assert upd.labels.tolist() == [y] * N


def test_mbbm_by_hand():
    b = OnlineMBBM(3, {"n_learners": 4, "gamma": 0.5}, seed=1)
    c = np.random.default_rng([1, 0x4D42424D, 1]).uniform(10, 200, 4)
    np.testing.assert_array_equal(b.consts, c)
    np.testing.assert_allclose(b.walk, [0.5 + 0.5 / 3, 0.5 / 3, 0.5 / 3])
    # the majority vote, ties shared
    np.testing.assert_allclose(b.distribution(np.array([2, 1, 2, 0], dtype=np.int32), 0), [0, 0, 1])
    np.testing.assert_allclose(b.distribution(np.array([2, 1, 2, 1], dtype=np.int32), 0), [0, 0.5, 0.5])
    # the last learner's vote, with 3 others right and a horizon of 1: the walk cannot undo a lead of 3,
    # so every potential is 0 and the weight the floor 1e-10
    upd = b.update(np.array([0, 0, 0, 1], dtype=np.int32), 0, 0, None)
    assert upd.weights[3] == 1e-10
    # a potential is the same from any booster of the seed, met in any order
    a = OnlineMBBM(4, {"n_learners": 10, "potentials": "independent"}, seed=3)
    z = OnlineMBBM(4, {"n_learners": 10, "potentials": "independent"}, seed=3)
    keys = [(5, (2, 0, 1, 1)), (7, (0, 1, 1, 1)), (3, (3, 0, 0, 4))]
    assert [a.potential(n, s) for n, s in keys] == [z.potential(n, s) for n, s in reversed(keys)][::-1]


# -- AdaBoost.OLM


class PlainOLM:
    """The authors' logistic AdaBoost.OLM loop, written out (their predict, then their update)."""

    def __init__(self, N, k, consts):
        self.N, self.k, self.c = N, k, consts
        self.alpha, self.v = np.zeros(N), np.ones(N) / N

    def predict(self, labels):
        N, k = self.N, self.k
        s, diag, ties = np.zeros(k), np.zeros((N, k)), []
        for i in range(N):
            C = 1 / (1 + np.exp(s[:, None] - s[None, :])) * (1 - np.eye(k))
            diag[i] = np.diag(C - C.sum(axis=1) * np.eye(k))
            s[labels[i]] = self.alpha[i] + s[labels[i]]
            ties.append([x for x in range(k) if s[x] == max(s)])
        return diag, ties

    def distribution(self, labels):
        _, ties = self.predict(labels)
        D = np.zeros(self.k)
        for e, T in enumerate(ties):
            D[T] += self.v[e] / sum(self.v) / len(T)
        return D

    def update(self, labels, y, t, u):
        N, k = self.N, self.k
        diag, ties = self.predict(labels)
        experts = [T[min(int(u[e] * len(T)), len(T) - 1)] for e, T in enumerate(ties)]
        s, weights = np.zeros(k), []
        for i in range(N):
            a = self.alpha[i]
            weights.append(5 if i == 0 else max(1e-10, -self.c[i] * diag[i, y] / (k - 1)))
            if labels[i] == y:
                zero = np.ones(k)
                zero[y] = 0
                g = sum(zero * -1 / (1 + np.exp(s - (a + s[y]))))
            else:
                g = 1 / (1 + np.exp(s[y] - s[labels[i]] - a))
            lr = 2 * np.sqrt(2) / ((k - 1) * np.sqrt(t + 1))
            self.alpha[i] = max(-2, min(2, a - lr * g))
            s[labels[i]] += a
            self.v[i] *= np.exp(-1 * (experts[i] != y))
        self.v /= sum(self.v)
        return np.array(weights)


def test_olm_against_the_authors_loop():
    rng = np.random.default_rng(3)
    for k, N in ((2, 5), (3, 12), (6, 9)):
        b = OnlineOLM(k, {"n_learners": N}, seed=2)
        plain = PlainOLM(N, k, b.consts)
        for t in range(60):
            labels, y = _labels(rng, N, k), int(rng.integers(0, k))
            np.testing.assert_allclose(b.distribution(labels, t), plain.distribution(labels), rtol=1e-10, atol=1e-15)
            upd = b.update(labels, y, t, StreamRandom(9, t))
            want = plain.update(labels, y, t, StreamRandom(9, t).random(N))
            np.testing.assert_allclose(upd.weights, want, rtol=1e-12)
            np.testing.assert_allclose(b.alpha, plain.alpha, rtol=1e-12, atol=1e-15)
            pi = np.exp(b.log_weights)
            np.testing.assert_allclose(pi / pi.sum(), plain.v, rtol=1e-10)


def test_olm_by_hand_at_the_start():
    b = OnlineOLM(3, {"n_learners": 4}, seed=0)
    labels = np.array([0, 1, 0, 2], dtype=np.int32)
    np.testing.assert_allclose(b.distribution(labels, 0), [1 / 3] * 3)  # every alpha 0: every class tied
    upd = b.update(labels, 0, 0, StreamRandom(0, 0))
    # every vote 0: the cost's diagonal is -(k - 1)/2, so c_i / 2, the first learner's 5
    np.testing.assert_allclose(upd.weights, [5, b.consts[1] / 2, b.consts[2] / 2, b.consts[3] / 2])
    # eta = 2 sqrt 2 / 2, the votes of the old alphas all 0: a right learner's gradient -(k - 1)/2, a wrong one's 1/2
    np.testing.assert_allclose(b.alpha, [math.sqrt(2), -math.sqrt(2) / 2, math.sqrt(2), -math.sqrt(2) / 2])
    state = b.get_state()
    c = OnlineOLM(3, {"n_learners": 4}, seed=0)
    c.set_state(state)
    np.testing.assert_array_equal(c.distribution(labels, 1), b.distribution(labels, 1))
    with pytest.raises(ValueError, match="alpha"):
        c.set_state({"alpha": np.zeros(3), "log_weights": np.zeros(4)})


# -- all three


@pytest.mark.parametrize("algorithm", BASELINES)
def test_same_seed_same_result_and_it_learns(algorithm):
    X, y, values = _stream()
    params = {"n_learners": 20} if algorithm == "online-olm" else {"n_learners": 20, "gamma": 0.3}
    a = driver.prequential(X, y, values, 3, algorithm=algorithm, params=params, seed=3)
    assert a == driver.prequential(X, y, values, 3, algorithm=algorithm, params=params, seed=3)
    assert a["acc_test"] > 0.6 and a["argmax_test"] > 0.6  # chance is 1/3
    assert 0 <= a["exp_test"] <= 1 and a["n"] == len(y)


@pytest.mark.parametrize("algorithm", BASELINES)
@pytest.mark.parametrize("B", [1, 16])
def test_the_same_run_on_1_to_4_ranks(algorithm, B):
    X, y, values = _stream(n=160, seed=2)
    params = {"n_learners": 9} if algorithm == "online-olm" else {"n_learners": 9, "gamma": 0.5}
    runs = [simulate(X, y, values, 3, algorithm, params, 1, B=B, size=size) for size in (1, 2, 3, 4)]
    for state, bank in runs[1:]:
        assert state.predictions == runs[0][0].predictions
        for name, value in runs[0][1].items():
            np.testing.assert_array_equal(bank[name], value, err_msg=name)


def test_mbbm_independent_potentials_on_ranks():
    X, y, values = _stream(n=80, seed=4)
    params = {"n_learners": 6, "potentials": "independent", "mc_draws": 30}
    runs = [simulate(X, y, values, 3, "online-mbbm", params, 2, B=4, size=size) for size in (1, 3)]
    assert runs[1][0].predictions == runs[0][0].predictions
    for name, value in runs[0][1].items():
        np.testing.assert_array_equal(runs[1][1][name], value, err_msg=name)


@pytest.mark.parametrize("algorithm, params, option", [
    ("online-ocor", {"gamma": 0.0}, "--gamma"),
    ("online-ocor", {"gamma": 1.5}, "--gamma"),
    ("online-ocor", {"n_learners": 0}, "--n-learners"),
    ("online-mbbm", {"gamma": -0.1}, "--gamma"),
    ("online-mbbm", {"mc_draws": 0}, "--mc-draws"),
    ("online-mbbm", {"potentials": "fresh"}, "--potentials"),
    ("online-olm", {"n_learners": 0}, "--n-learners"),
    ("online-olm", {"gamma": 0.5}, "no parameter gamma"),
])
def test_bad_options(algorithm, params, option):
    X, y, values = _stream(n=10)
    with pytest.raises(ValueError, match=option):
        driver.prequential(X, y, values, 3, algorithm=algorithm, params=params)
