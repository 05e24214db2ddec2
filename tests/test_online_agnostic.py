"""Algorithm 1's prequential pass: an independent reference loop, block-online, learners spread over ranks."""
import itertools
import math

import numpy as np
import pytest

from mpiboost.online import ONLINE, base, driver
from mpiboost.online.agnostic import RELABEL, OnlineAgnostic
from mpiboost.online.learners import make_bank

import online_sim
import ref_online_agnostic as ref


def _stream(n=400, k=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    X = np.column_stack([(y + rng.integers(0, 2, n)) % 4, y + 0.8 * rng.standard_normal(n)]).astype(float)
    return X, y, [4, 0]


def _varied_stream(n, k, seed):
    """Two nominal features, a Gaussian one and a wide one with a repeated value.

    A nominal and the Gaussian feature have missing values (the tie rule of
    rows missing numeric values has its own test below).
    """
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    nominal = np.where(rng.random(n) < 0.15, np.nan, (y + rng.integers(0, 2, n)) % 5)
    wide = np.where(rng.random(n) < 0.3, 2.5, 1e3 * (y % 2) + 300 * rng.standard_normal(n))
    gauss = np.where(rng.random(n) < 0.2, np.nan, y + 0.9 * rng.standard_normal(n))
    X = np.column_stack([nominal, rng.integers(0, 3, n), gauss, wide]).astype(float)
    return X, y, [5, 3, 0, 0]


def simulate(X, y, values, k, params, seed, B, size):
    """The driver on ``size`` simulated ranks: the first rank's state and every rank's learners, joined."""
    return online_sim.simulate(X, y, values, k, "online-agnostic", params, seed, B, size)


def _driver_run(X, y, values, k, params, seed, B, learner):
    """The driver on one rank with the learner spec ``learner``: the predictions and the learners' statistics."""
    state = driver.start(ONLINE["online-agnostic"](k, params, seed), values, n=len(y), seed=seed,
                         keep_predictions=True, learner=learner)
    driver.run(state, driver.blocks_of(X, y, B))
    return state.predictions, state.bank.get_state()


def _assert_same_learners(got, want):
    """Every statistic of every learner, bit for bit (see the reference test for why not to a tolerance)."""
    assert set(got) == set(want)
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], np.array(value), err_msg=name)


def test_draw_is_the_inverse_cdf():
    P = np.array([[0.2, 0.5, 0.3], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    assert base.draw(P, np.array([0.1, 0.5, 0.99])).tolist() == [0, 2, 0]
    assert base.draw(P[:1], np.array([0.69])).tolist() == [1]
    assert base.draw(P[:1], np.array([0.71])).tolist() == [2]


@pytest.mark.parametrize("relabel", RELABEL)
@pytest.mark.parametrize("size", [1, 3])
def test_block_size_1_is_the_reference_loop_on_any_number_of_ranks(relabel, size):
    """The driver equals the independent plain-Python reference (:mod:`ref_online_agnostic`), bit for bit.

    Predictions are class indices, so they must be equal. The learners'
    statistics are compared bit for bit too, because a tolerance would not
    help: a leaf refreshes its pooled variance when its float total weight
    first reaches twice its last value, an exact comparison at whole numbers
    that a last-bit difference in the relabelling weights moves by a whole
    row (the full-gradient chain, equal to rounding, does move it). So the
    reference steps without the gradient's constant part (the reference
    test below checks that this is the full-gradient chain to rounding),
    adds left to right, and must then agree exactly.
    """
    X, y, values = _stream(n=150)
    params = {"n_learners": 7, "gamma": 0.6, "relabel": relabel}
    want, want_bank = ref.run(X, y, values, 3, 7, 0.6, relabel, seed=4)
    state, bank = simulate(X, y, values, 3, params, 4, B=1, size=size)
    assert state.predictions == want
    _assert_same_learners(bank, want_bank)


# relabel, gamma, start, var_prior, block size, classes: a spread of the 144 combinations (all of them pass;
# these keep the test fast)
VARIED = [c for i, c in enumerate(itertools.product(RELABEL, (0.1, 0.45, 1.0), ("uniform", "label"),
                                                    (0.0, 1.0, 3.5), (1, 7), (2, 4))) if i % 7 == 0]


@pytest.mark.parametrize("relabel,gamma,start,var_prior,B,k", VARIED)
def test_the_independent_reference_on_varied_streams(relabel, gamma, start, var_prior, B, k):
    """Every option of the booster and the leaves against the reference: predictions and learners bit for bit.

    Both relabellings, a polarising to a plain-vote gamma, both chain starts,
    no / the default / a strong variance prior, the sequential algorithm and
    frozen blocks, two and four classes; missing nominal values, a feature
    of spread 1e3 and one that repeats a value (its pooled variance starts
    at 0).
    """
    seed = VARIED.index((relabel, gamma, start, var_prior, B, k))
    X, y, values = _varied_stream(120, k, seed)
    params = {"n_learners": 11, "gamma": gamma, "relabel": relabel, "start": start}
    want, want_bank = ref.run(X, y, values, k, 11, gamma, relabel, seed=seed, start=start, var_prior=var_prior,
                              block_size=B)
    got, bank = _driver_run(X, y, values, k, params, seed, B, {"var_prior": var_prior})
    assert got == want
    _assert_same_learners(bank, want_bank)


def test_the_reference_projection_and_chain_are_what_the_definition_says():
    """The reference itself: its projection is the closest point of the simplex, its chain ignores g's constant.

    The projection of u is p = max(u - theta, 0) with sum p = 1, the KKT
    conditions of the Euclidean projection; the chain with the full gradient
    and with the gradient less its constant part agree to rounding; and the
    polarisation example of the paper's booster: votes (5, 3, 2, 0) of 10
    give (.5, .3, .2, 0) at gamma = 1 and (1, 0, 0, 0) at gamma = 0.1.
    """
    rng = np.random.default_rng(5)
    for _ in range(300):
        k = int(rng.integers(1, 7))
        u = rng.standard_normal(k) * rng.choice([1e-3, 1.0, 30.0])
        p = np.array(ref.project(u))
        assert np.all(p >= 0) and abs(p.sum() - 1.0) <= 1e-12
        theta = (u - p)[p > 0]
        assert np.ptp(theta) <= 1e-12 * max(1.0, np.abs(u).max())  # one threshold for every kept coordinate
        assert np.all(u[p == 0] <= theta[0] + 1e-12)  # and the dropped ones are below it
    for _ in range(50):
        k, N = int(rng.integers(2, 6)), int(rng.integers(1, 30))
        labels, y, gamma = rng.integers(0, k, N).tolist(), int(rng.integers(0, k)), float(rng.uniform(0.05, 1.0))
        for start in ("uniform", "label"):
            np.testing.assert_allclose(ref.chain(labels, y, k, gamma, start, "full"),
                                       ref.chain(labels, y, k, gamma, start, "shifted"), atol=1e-12)
    votes = [0] * 5 + [1] * 3 + [2] * 2
    np.testing.assert_allclose(ref.distribution(votes, 4, 1.0), [0.5, 0.3, 0.2, 0.0], atol=1e-15)
    np.testing.assert_allclose(ref.distribution(votes, 4, 0.1), [1.0, 0.0, 0.0, 0.0], atol=1e-15)


def test_a_row_missing_its_numeric_values_ties_to_the_lowest_class():
    """Two classes of equal weight and a row with every feature missing: both score log w, class 0 wins.

    The leaves' definition skips a missing value and sends every tie to the
    lowest class; the reference does. The kernel once added every numeric
    feature's log-variance term (a running product) and subtracted those of
    the missing features (logs one by one), which does not cancel exactly:
    16 of these 50 rows went to class 1. It now sums the present features'
    terms alone, the way it sums them all.
    """
    rng = np.random.default_rng(0)
    wrong = 0
    for _ in range(50):
        leaf, bank = ref.Leaf(2, [0, 0, 0]), make_bank({"kind": "nba"}, 1, 2, [0, 0, 0])
        for c in (0, 1):
            for _ in range(3):
                x = rng.normal(c, 1 + rng.random(), 3) * 10 ** rng.uniform(-3, 3, 3)
                leaf.learn_row(list(x), [(c, 1.0)])
                bank.learn_labels(np.ascontiguousarray(x), np.array([c], dtype=np.int32))
        out = np.empty(1, dtype=np.int32)
        bank.predict(np.full(3, np.nan), out)
        assert leaf.predict([math.nan] * 3) == 0
        wrong += int(out[0]) != 0
    assert wrong == 0


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


def test_threads_set_the_kernels_threads_and_change_nothing():
    from mpiboost._ext import _openmp

    X, y, values = _stream()
    params = {"n_learners": 10, "gamma": 0.7}
    before = _openmp.get_max_threads()
    try:
        a = driver.prequential(X, y, values, 3, params=params, seed=1, threads=1)
        assert _openmp.get_max_threads() == 1
        b = driver.prequential(X, y, values, 3, params=params, seed=1, threads=2)
        assert _openmp.get_max_threads() == (2 if _openmp.openmp_enabled() else 1)
    finally:
        _openmp.set_num_threads(before)
    assert a == b


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
    # the independent chain, with the gradient written out in full: equal up to rounding
    np.testing.assert_allclose(P[:6], ref.chain(labels.tolist(), 1, 3, 0.5, "label", "full"), atol=1e-15)
