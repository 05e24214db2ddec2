"""The online multinomial naive-Bayes leaves (``_mnb.MNBBank``) against a naive twin and scikit-learn,
and their choice by the data's kind."""
import math

import numpy as np
import pytest

from mpiboost._ext import _mnb
from mpiboost.online import learners


class Twin:
    """The leaves of the module docstring, written plainly."""

    def __init__(self, N, k, d):
        self.w = np.zeros((N, k))
        self.F = np.zeros((N, d, k))
        self.mc = np.zeros(N)
        self.nb = np.zeros(N)
        self.k, self.d = k, d

    def scores(self, n, x):
        x = np.where(np.isnan(x) | (x < 0), 0.0, x)
        out = []
        for c in range(self.k):
            if self.w[n, c] <= 0:
                out.append(-math.inf)
                continue
            T = self.F[n, :, c].sum()
            s = math.log(self.w[n, c])
            for j in range(self.d):
                if x[j] > 0:
                    s += x[j] * math.log((self.F[n, j, c] + 1.0) / (T + self.d))
            out.append(s)
        return out

    def majority(self, n):
        return int(np.argmax(self.w[n]))

    def nb_class(self, n, x):
        sc = self.scores(n, x)
        return -1 if max(sc) == -math.inf else int(np.argmax(sc))

    def predict(self, n, x):
        if self.nb[n] >= self.mc[n]:
            c = self.nb_class(n, x)
            return max(c, 0)
        return self.majority(n)

    def learn(self, n, x, label, weight):
        if weight <= 0:
            return
        if self.w[n].sum() > 0 and self.majority(n) == label:
            self.mc[n] += weight
        if self.nb_class(n, x) == label:
            self.nb[n] += weight
        self.w[n, label] += weight
        self.F[n, :, label] += weight * np.where(np.isnan(x) | (x < 0), 0.0, x)


def _stream(rng, n, d, k, skew=False):
    if skew:  # one dominant class and a few heavy features
        y = np.where(rng.random(n) < 0.8, 0, rng.integers(1, k, n))
    else:
        y = rng.integers(0, k, n)
    rates = rng.gamma(0.5, 3.0, size=(k, d))
    X = rng.poisson(rates[y]).astype(np.float64)
    X[rng.random(X.shape) < 0.05] = np.nan
    return X, y.astype(np.int32)


@pytest.mark.parametrize("skew", [False, True])
def test_the_bank_is_its_naive_twin(skew):
    rng = np.random.default_rng(7 if skew else 3)
    N, k, d = 4, 3, 6
    X, y = _stream(rng, 120, d, k, skew)
    bank, twin = _mnb.MNBBank(N, k, np.zeros(d, dtype=np.int64)), Twin(N, k, d)
    out = np.empty(N, dtype=np.int32)
    for t in range(len(y)):
        bank.predict(X[t], out)
        assert out.tolist() == [twin.predict(n, X[t]) for n in range(N)], t
        if t % 2:
            P = rng.dirichlet(np.ones(k), size=N + 1)
            P[P < 0.2] = 0.0
            bank.learn(X[t], np.ascontiguousarray(P))
            for n in range(N):
                for c in range(k):
                    twin.learn(n, X[t], c, P[n, c])
        else:
            labels = rng.integers(0, k, N).astype(np.int32)
            w = rng.random(N) * (rng.random(N) < 0.8)
            bank.learn_labels(X[t], labels, weights=w)
            for n in range(N):
                twin.learn(n, X[t], int(labels[n]), w[n])
    state = bank.get_state()
    np.testing.assert_allclose(state["counts"], twin.F, rtol=1e-12)
    np.testing.assert_allclose(state["class_weight"], twin.w, rtol=1e-12)
    np.testing.assert_allclose(state["mc_right"], twin.mc, rtol=1e-12)
    np.testing.assert_allclose(state["nb_right"], twin.nb, rtol=1e-12)


def test_edge_cases():
    bank = _mnb.MNBBank(2, 3, np.zeros(2, dtype=np.int64))
    out = np.empty(2, dtype=np.int32)
    bank.predict(np.array([np.nan, 0.0]), out)
    assert out.tolist() == [0, 0]  # nothing learnt: class 0
    bank.learn_labels(np.array([0.0, 0.0]), np.array([2, 1], dtype=np.int32))  # a row that draws nothing
    bank.predict(np.array([5.0, 1.0]), out)
    assert out.tolist() == [2, 1]  # the prior alone
    with pytest.raises(ValueError):
        _mnb.MNBBank(2, 3, np.array([0, 4]))  # a nominal feature
    with pytest.raises(ValueError):
        bank.learn_labels(np.array([1.0, 1.0]), np.array([3, 0], dtype=np.int32))
    with pytest.raises(ValueError):
        bank.set_state({**bank.get_state(), "counts": -np.ones((2, 2, 3))})


def test_one_leaf_of_unit_weights_is_scikit_learns_multinomial_nb():
    from sklearn.naive_bayes import MultinomialNB

    rng = np.random.default_rng(11)
    X, y = _stream(rng, 300, 8, 4)
    X = np.nan_to_num(X)
    bank, nb = _mnb.MNBBank(1, 4, np.zeros(8, dtype=np.int64)), MultinomialNB(alpha=1.0)
    twin = Twin(1, 4, 8)
    out = np.empty(1, dtype=np.int32)
    agree = used = 0
    for t in range(len(y)):
        if t >= 10 and twin.nb[0] >= twin.mc[0] and len(set(y[:t])) == 4:
            bank.predict(X[t], out)
            used += 1
            agree += int(out[0] == nb.predict(X[t:t + 1])[0])
        bank.learn_labels(X[t], np.array([y[t]], dtype=np.int32))
        twin.learn(0, X[t], int(y[t]), 1.0)
        nb.partial_fit(X[t:t + 1], y[t:t + 1], classes=np.arange(4))
    assert used > 200 and agree == used


def test_a_saved_bank_goes_on_bit_for_bit():
    rng = np.random.default_rng(5)
    X, y = _stream(rng, 80, 5, 3)
    a = _mnb.MNBBank(3, 3, np.zeros(5, dtype=np.int64))
    for t in range(40):
        a.learn_labels(X[t], np.full(3, y[t], dtype=np.int32), weight=0.5 + t % 3)
    b = _mnb.MNBBank(3, 3, np.zeros(5, dtype=np.int64))
    b.set_state(a.get_state())
    oa, ob = np.empty(3, dtype=np.int32), np.empty(3, dtype=np.int32)
    for t in range(40, 80):
        a.predict(X[t], oa)
        b.predict(X[t], ob)
        assert oa.tolist() == ob.tolist()
        for bank in (a, b):
            bank.learn_labels(X[t], np.full(3, y[t], dtype=np.int32), weight=1.5)
    sa, sb = a.get_state(), b.get_state()
    assert all(np.array_equal(sa[k], sb[k]) for k in sa)


def test_the_leaf_follows_the_data_kind():
    from sklearn.datasets import load_digits

    X = load_digits().data  # pixel intensities 0..16
    assert learners.counts_like(X)
    assert learners.resolve({}, learners.counts_like(X))["kind"] == "mnb"
    codes = np.random.default_rng(0).integers(0, 4, size=(50, 6)).astype(float)  # nominal codes (car, balance-scale)
    assert not learners.counts_like(codes)
    assert not learners.counts_like(X - 1.0)  # negative values
    assert not learners.counts_like(X + 0.5)  # not integers
    assert not learners.counts_like(X + 27)  # integer levels that never reach 0 (satimage): intensities
    assert learners.resolve({"kind": "nba"}, True)["kind"] == "nba"  # a kind given stays
    with pytest.raises(ValueError):
        learners.make_bank({"kind": "auto"}, 2, 3, [0, 0])


def test_the_cli_chooses_the_leaf_and_refuses_negative_counts(tmp_path):
    import json

    from sklearn.datasets import load_digits

    from mpi_util import run_cli
    from mpiboost.data.format import write_dataset

    d = load_digits()
    pixels = tmp_path / "pixels.h5"
    write_dataset(pixels, d.data[:300], d.target[:300].astype(np.int32))
    model = tmp_path / "m.h5"
    proc = run_cli(["train", "--algo", "online-agnostic", "--data", str(pixels), "--model", str(model),
                    "--n-learners", "10", "--quiet"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(run_cli(["export", "--model", str(model)]).stdout)
    assert doc["learner"]["kind"] == "mnb" and doc["values"] == [0] * 64
    shifted = tmp_path / "shifted.h5"
    write_dataset(shifted, d.data[:300] - 8.0, d.target[:300].astype(np.int32))
    proc = run_cli(["train", "--algo", "online-agnostic", "--data", str(shifted), "--model", str(model),
                    "--weak-learner", "mnb"])
    assert proc.returncode == 2 and "negative values" in proc.stderr, proc.stderr[-2000:]
    proc = run_cli(["train", "--algo", "online-agnostic", "--data", str(shifted), "--model", str(model),
                    "--n-learners", "10", "--quiet"])
    assert proc.returncode == 0
    assert json.loads(run_cli(["export", "--model", str(model)]).stdout)["learner"]["kind"] == "nba"


def test_a_model_file_names_its_leaf(tmp_path):
    """A header without the learner field (format 1) is nba's; a crafted "auto" is refused with the file's name."""
    import json

    import h5py

    from mpi_util import run_cli
    from mpiboost.data.format import write_dataset
    from mpiboost.errors import InputError
    from mpiboost.online.model import load_any

    rng = np.random.default_rng(0)
    write_dataset(tmp_path / "s.h5", rng.normal(size=(100, 3)), rng.integers(0, 2, 100).astype(np.int32))
    model = tmp_path / "m.h5"
    assert run_cli(["train", "--algo", "online-agnostic", "--data", str(tmp_path / "s.h5"), "--model", str(model),
                    "--n-learners", "4", "--quiet"]).returncode == 0
    for learner in (None, {"kind": "auto"}):
        with h5py.File(model, "r+") as f:
            header = json.loads(f.attrs["header"])
            header.pop("learner", None)
            if learner is not None:
                header["learner"] = learner
            f.attrs["header"] = json.dumps(header)
        if learner is None:
            assert load_any(model).learner["kind"] == "nba"
        else:
            with pytest.raises(InputError, match="m.h5: header field 'learner'"):
                load_any(model)
