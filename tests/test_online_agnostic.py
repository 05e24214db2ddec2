"""Algorithm 1's prequential pass: reproducible, learns, and the options behave as specified."""
import numpy as np
import pytest

from mpiboost.online import agnostic
from mpiboost.online.agnostic import prequential


def _stream(n=400, k=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    X = np.column_stack([(y + rng.integers(0, 2, n)) % 4, y + 0.8 * rng.standard_normal(n)]).astype(float)
    return X, y, [4, 0]


def test_draw_is_the_inverse_cdf():
    P = np.array([[0.2, 0.5, 0.3], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    assert agnostic._draw(P, np.array([0.1, 0.5, 0.99])).tolist() == [0, 2, 0]
    assert agnostic._draw(P[:1], np.array([0.69])).tolist() == [1]
    assert agnostic._draw(P[:1], np.array([0.71])).tolist() == [2]


@pytest.mark.parametrize("relabel", agnostic.RELABEL)
def test_same_seed_same_result_and_it_learns(relabel):
    X, y, values = _stream()
    a = prequential(X, y, values, 3, n_learners=20, gamma=0.7, relabel=relabel, seed=3)
    b = prequential(X, y, values, 3, n_learners=20, gamma=0.7, relabel=relabel, seed=3)
    assert a == b
    assert a.acc_test > 0.6 and a.argmax_test >= a.acc_test - 0.05  # chance is 1/3
    assert 0 <= a.exp_test <= 1 and a.n == len(y)


def test_two_classes_and_gamma_1():
    X, y, values = _stream(k=2)
    r = prequential(X, y, values, 2, n_learners=10, gamma=1.0)
    assert r.acc_test > 0.7


def test_bad_options():
    X, y, values = _stream(n=10)
    with pytest.raises(ValueError):
        prequential(X, y, values, 3, relabel="sometimes")
    with pytest.raises(ValueError):
        prequential(X, y, values, 3, gamma=0.0)
