"""Losses and links against a few lines of numpy: start scores, gradients, probabilities."""
import math

import numpy as np

from mpiboost.boost.losses import EXPONENTIAL, LOGISTIC, SOFTMAX, grows_trees, loss_of
from mpiboost.links import LINKS


def test_start_scores_are_the_link_of_the_class_frequencies():
    assert LOGISTIC.start(np.array([30]), 120)[0] == math.log(30 / 90)  # log-odds of the positives
    np.testing.assert_array_equal(SOFTMAX.start(np.array([1, 0, 3]), 4),
                                  [math.log(0.25), math.log(1e-15), math.log(0.75)])
    # the link of the start is the class frequency: the twin of LightGBM's boost_from_average
    assert abs(LINKS["logistic"].proba(LOGISTIC.start(np.array([30]), 120)[None, :])[0, 1] - 0.25) < 1e-15


def test_gradients_are_numpys():
    rng = np.random.default_rng(0)
    n, K, shift = 500, 3, 40
    F = rng.normal(size=(n, K))
    y = rng.integers(0, K, n).astype(np.int32)
    gh = np.zeros((n, 2 * K + 1), dtype=np.int64)
    SOFTMAX.units(F, np.zeros(K), y, shift, gh)
    p = np.exp(F) / np.exp(F).sum(axis=1, keepdims=True)
    g = p - np.eye(K)[y]
    h = K / (K - 1) * p * (1 - p)
    np.testing.assert_allclose(gh[:, :K] * 2.0**-shift, g, atol=2**-shift)
    np.testing.assert_allclose(gh[:, K:2 * K] * 2.0**-shift, h, atol=2**-shift)
    gh1 = np.zeros((n, 3), dtype=np.int64)
    t = (y == 0).astype(np.float64)
    LOGISTIC.units(F[:, :1].copy(), np.array([0.5]), t, shift, gh1)
    p1 = 1 / (1 + np.exp(-(F[:, 0] + 0.5)))
    np.testing.assert_allclose(gh1[:, 0] * 2.0**-shift, p1 - t, atol=2**-shift)
    np.testing.assert_allclose(gh1[:, 1] * 2.0**-shift, p1 * (1 - p1), atol=2**-shift)


def test_links_and_their_lightgbm_objectives():
    s = np.array([[-800.0], [0.0], [2.0]])
    p = LINKS["logistic"].proba(s)
    with np.errstate(over="ignore"):  # the naive twin overflows where the link does not
        np.testing.assert_allclose(p[:, 1], 1 / (1 + np.exp(-s[:, 0])), rtol=1e-15)
    assert np.isfinite(p).all()
    z = np.array([[1.0, 2.0, 700.0]])
    np.testing.assert_allclose(LINKS["softmax"].proba(z).sum(axis=1), 1.0)
    assert LINKS["logistic"].lightgbm_objective(2) == "binary sigmoid:1"
    assert LINKS["softmax"].lightgbm_objective(5) == "multiclass num_class:5"


def test_one_place_decides_the_loss_and_the_weak_learner():
    assert loss_of({}) is EXPONENTIAL and not EXPONENTIAL.newton and EXPONENTIAL.link is None
    assert loss_of({"loss": "logistic"}) is LOGISTIC and LOGISTIC.newton
    assert grows_trees({"weak_learner": "tree"}) and not grows_trees({"weak_learner": "stump"})
    try:
        loss_of({"loss": "hinge"})
    except ValueError as e:
        assert "hinge" in str(e)
    else:
        raise AssertionError("an unknown loss must be refused")
