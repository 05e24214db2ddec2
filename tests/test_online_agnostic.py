"""Algorithm 1's prequential pass: a plain reference loop, block-online, learners spread over ranks."""
import math

import numpy as np
import pytest

from mpiboost._ext import _nba, _simplex
from mpiboost.online import ONLINE, base, driver
from mpiboost.online.agnostic import RELABEL, OnlineAgnostic

import online_sim


def _stream(n=400, k=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    X = np.column_stack([(y + rng.integers(0, 2, n)) % 4, y + 0.8 * rng.standard_normal(n)]).astype(float)
    return X, y, [4, 0]


def reference(X, y, values, k, N, gamma, relabel, seed):
    """Algorithm 1 written out, one example at a time: predictions (randomised, argmax) and the final learners."""
    bank = _nba.NBABank(N, k, values)
    labels, P, D = np.empty(N, dtype=np.int32), np.empty((N + 1, k)), np.empty(k)
    eta, out = gamma / math.sqrt(N), []
    for t in range(len(y)):
        x = np.ascontiguousarray(X[t], dtype=np.float64)
        rng = base.StreamRandom(seed, t)
        bank.predict(x, labels)
        _simplex.project(np.bincount(labels, minlength=k) / (gamma * N), D)
        u = rng.random()
        cdf = np.cumsum(D)
        out.append((min(int((cdf <= u * cdf[-1]).sum()), k - 1), int(np.argmax(D))))
        _simplex.ogd_chain(labels, int(y[t]), gamma, eta, P)
        if relabel == "fractional":
            bank.learn(x, P)
        else:
            cdf = np.cumsum(P[:N], axis=1)
            u = rng.random(N)
            bank.learn_labels(x, np.minimum((cdf <= (u * cdf[:, -1])[:, None]).sum(axis=1), k - 1).astype(np.int32))
    return out, bank.get_state()


def simulate(X, y, values, k, params, seed, B, size):
    """The driver on ``size`` simulated ranks: the first rank's state and every rank's learners, joined."""
    return online_sim.simulate(X, y, values, k, "online-agnostic", params, seed, B, size)


def test_draw_is_the_inverse_cdf():
    P = np.array([[0.2, 0.5, 0.3], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    assert base.draw(P, np.array([0.1, 0.5, 0.99])).tolist() == [0, 2, 0]
    assert base.draw(P[:1], np.array([0.69])).tolist() == [1]
    assert base.draw(P[:1], np.array([0.71])).tolist() == [2]


@pytest.mark.parametrize("relabel", RELABEL)
@pytest.mark.parametrize("size", [1, 3])
def test_block_size_1_is_the_reference_loop_on_any_number_of_ranks(relabel, size):
    X, y, values = _stream(n=150)
    params = {"n_learners": 7, "gamma": 0.6, "relabel": relabel}
    want, want_bank = reference(X, y, values, 3, 7, 0.6, relabel, seed=4)
    state, bank = simulate(X, y, values, 3, params, 4, B=1, size=size)
    assert state.predictions == want
    for name, value in want_bank.items():
        np.testing.assert_array_equal(bank[name], value, err_msg=name)


@pytest.mark.parametrize("relabel", RELABEL)
def test_a_block_size_gives_the_same_run_on_1_to_4_ranks(relabel):
    X, y, values = _stream(n=200, seed=2)
    params = {"n_learners": 9, "gamma": 0.5, "relabel": relabel}
    runs = [simulate(X, y, values, 3, params, 1, B=16, size=size) for size in (1, 2, 3, 4, 12)]
    for state, bank in runs[1:]:
        assert state.predictions == runs[0][0].predictions
        for name, value in runs[0][1].items():
            np.testing.assert_array_equal(bank[name], value, err_msg=name)
    assert runs[0][0].counts.summary()["argmax_test"] > 0.6  # it learns with delay too (chance is 1/3)


@pytest.mark.parametrize("relabel", RELABEL)
def test_same_seed_same_result_and_it_learns(relabel):
    X, y, values = _stream()
    params = {"n_learners": 20, "gamma": 0.7, "relabel": relabel}
    a = driver.prequential(X, y, values, 3, params=params, seed=3)
    b = driver.prequential(X, y, values, 3, params=params, seed=3)
    assert a == b
    assert a["acc_test"] > 0.6 and a["argmax_test"] >= a["acc_test"] - 0.05  # chance is 1/3
    assert 0 <= a["exp_test"] <= 1 and a["n"] == len(y) and a["n_test"] == 80


def test_two_classes_and_gamma_1():
    X, y, values = _stream(k=2)
    r = driver.prequential(X, y, values, 2, params={"n_learners": 10, "gamma": 1.0})
    assert r["acc_test"] > 0.7


def test_gamma_1_a_right_learner_moves_nothing_and_D_is_the_vote_share():
    b = OnlineAgnostic(3, {"n_learners": 10, "gamma": 1.0})
    labels = np.array([0] * 5 + [1] * 3 + [2] * 2, dtype=np.int32)
    np.testing.assert_allclose(b.distribution(labels, 0), [0.5, 0.3, 0.2])
    upd = b.update(np.zeros(10, dtype=np.int32), 0, 0, np.random.default_rng(0))
    np.testing.assert_array_equal(upd.P, np.full((10, 3), 1 / 3))
    polar = OnlineAgnostic(4, {"n_learners": 10, "gamma": 0.1})
    np.testing.assert_allclose(polar.distribution(np.array([0] * 5 + [1] * 3 + [2] * 2, dtype=np.int32), 0),
                               [1, 0, 0, 0])


def test_bad_options():
    X, y, values = _stream(n=10)
    with pytest.raises(ValueError, match="--relabel"):
        driver.prequential(X, y, values, 3, params={"relabel": "sometimes"})
    with pytest.raises(ValueError, match="--gamma"):
        driver.prequential(X, y, values, 3, params={"gamma": 0.0})
    with pytest.raises(ValueError, match="no parameter"):
        driver.prequential(X, y, values, 3, params={"rounds": 3})


def test_every_registered_online_algorithm_declares_n_learners():
    for cls in ONLINE.values():
        assert "n_learners" in {p.name for p in cls.parameters}, cls.name


@pytest.mark.parametrize("gamma", [0.1, 0.5, 1.0])
def test_two_classes_is_the_binary_booster(gamma):
    """K = 2: the chain is scalar projected OGD on the true label's mass q (Brukhim, Chen, Hazan & Moran 2020):
    ``q <- clip(q + eta (1 - s / gamma), 0, 1)`` with s = +1 when learner i is right, -1 when wrong."""
    N = 40
    eta = gamma / math.sqrt(N)
    rng = np.random.default_rng(int(gamma * 10))
    b = OnlineAgnostic(2, {"n_learners": N, "gamma": gamma})
    for _ in range(10):
        labels = rng.integers(0, 2, N).astype(np.int32)
        y = int(rng.integers(0, 2))
        P = b.update(labels, y, 0, None).P
        q, want = 0.5, []
        for i in range(N):
            want.append(q)
            s = 1 if labels[i] == y else -1
            q = min(max(q + eta * (1 - s / gamma), 0.0), 1.0)
        np.testing.assert_allclose(P[:, y], want, atol=1e-12)
        np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)


def test_label_start_begins_the_chain_at_the_label():
    b = OnlineAgnostic(3, {"n_learners": 6, "gamma": 0.5, "start": "label"})
    labels = np.array([2, 1, 1, 0, 2, 2], dtype=np.int32)
    P = b.update(labels, 1, 0, None).P
    np.testing.assert_array_equal(P[0], [0, 1, 0])
    ref, D = np.array([0.0, 1.0, 0.0]), np.empty(3)
    eta = 0.5 / math.sqrt(6)
    for i in range(5):
        step = ref.copy()
        step[labels[i]] -= 2 * eta / 0.5
        step[1] += 2 * eta
        _simplex.project(step, D)
        ref = D.copy()
        np.testing.assert_allclose(P[i + 1], ref, atol=1e-15)
