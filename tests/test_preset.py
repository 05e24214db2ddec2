"""--preset paper: every option left out takes its paper's value (Param.paper); the defaults are mpiboost's.

The registry's contract (every algorithm, every declared paper value), the command line (the preset's model is
the model of the paper's options given one by one; an option given wins over the preset), the API and the
estimators (a ``preset`` parameter like any other).
"""
from __future__ import annotations

import numpy as np
import pytest

import mpiboost
from mpi_util import run_cli
from mpiboost import boost
from mpiboost.data.format import write_dataset
from mpiboost.model import Model
from mpiboost.param import SAME


def _given(cls) -> dict:
    return {"rounds": 50} if cls.needs_rounds else {}


@pytest.mark.parametrize("name", sorted(boost.ALGORITHMS))
def test_the_preset_takes_every_declared_paper_value(name):
    cls = boost.get(name)
    default, paper = cls.resolve(_given(cls)), cls.resolve({**_given(cls), "preset": "paper"})
    assert default["preset"] == "default" and paper["preset"] == "paper"
    for p in cls.parameters:
        if p.paper is not SAME:
            assert paper[p.name] == p.paper and default[p.name] == p.default, p.name
            assert p.paper != p.default, p.name  # a paper value is declared only where it differs
    # a value given wins over the preset
    if cls.has("weak_learner") and "tree" in (cls.declared("weak_learner").choices or ()):
        for wl in ("stump", "tree"):
            assert cls.resolve({**_given(cls), "preset": "paper", "weak_learner": wl})["weak_learner"] == wl


def test_adaboost_and_samme_grow_trees_by_default_and_stumps_with_the_paper_preset(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(800, 5))
    y = (X[:, 0] * X[:, 1] + 0.3 * rng.normal(size=800) > 0).astype(np.int8)
    write_dataset(tmp_path / "d.h5", X.astype(np.float32), y)

    def train(name, *extra):
        out = tmp_path / f"{name}.h5"
        proc = run_cli(["train", "--algo", "adaboost", "--data", str(tmp_path / "d.h5"), "--rounds", "10", "--model",
                        str(out), "--quiet", *extra])
        assert proc.returncode == 0, proc.stderr
        return Model.load(out)

    default, paper, stump = train("default"), train("paper", "--preset", "paper"), \
        train("stump", "--weak-learner", "stump")
    assert default.has_trees and not paper.has_trees
    assert paper.params["preset"] == "paper" and paper.params["weak_learner"] == "stump"
    assert Model.to_json(paper).replace('"paper"', '"default"') == Model.to_json(stump)
    tree = train("tree", "--preset", "paper", "--weak-learner", "tree")  # given wins
    assert tree.has_trees
    y3 = np.digitize(X[:, 0], [-0.5, 0.5])
    m = mpiboost.train({"algo": "samme", "rounds": 5}, X, y3)
    p = mpiboost.train({"algo": "samme", "rounds": 5, "preset": "paper"}, X, y3)
    assert m.has_trees and not p.has_trees


def test_smoothboost_paper_preset_is_the_papers_options(tmp_path):
    """SmoothBoost's paper: a weighted sample of rows a round (--search sample), epsilon 0.1, gamma = (1/2 - beta)/2
    and no noise check: the preset's model is the model of those options given."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(1200, 4))
    y = (X[:, 0] + 0.5 * rng.normal(size=1200) > 0).astype(np.int8)
    a = mpiboost.train({"algo": "smoothboost", "rounds": 8, "preset": "paper"}, X, y)
    b = mpiboost.train({"algo": "smoothboost", "rounds": 8, "search": "sample", "epsilon": 0.1, "gamma": 0.15,
                        "noise-check": "off", "weak-learner": "stump"}, X, y)
    assert a.params["gamma"] == 0.15 and a.params["search"] == "sample" and a.params["noise_check"] == "off"
    np.testing.assert_array_equal(a.feature, b.feature)
    np.testing.assert_array_equal(a.coef, b.coef)


def test_the_estimators_take_the_preset():
    from mpiboost.sklearn import AdaBoostClassifier

    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] > 0).astype(int)
    assert AdaBoostClassifier().get_params()["preset"] == "default"
    assert not AdaBoostClassifier(rounds=5, preset="paper").fit(X, y).model_.has_trees
    assert AdaBoostClassifier(rounds=5).fit(X, y).model_.has_trees


@pytest.mark.parametrize("name", sorted(n for n, c in boost.ALGORITHMS.items() if c.has("weak_learner")))
@pytest.mark.parametrize("rounds", [30, 100, 1000])
def test_defaults_that_follow_the_rounds_read_the_declared_weak_learner(name, rounds):
    """A default that depends on the weak learner (MultiBoost's learning rate, SmoothBoost's gamma) is the one
    of the learner the run trains: the declared default when none is given (the paper's with the paper
    preset), not a stump's because the option was left out."""
    cls = boost.get(name)
    p = cls.declared("weak_learner")
    assert cls.defaults_for_rounds({}, rounds) == cls.defaults_for_rounds({"weak_learner": p.default}, rounds)
    paper = {"preset": "paper"}
    assert cls.defaults_for_rounds(paper, rounds) == \
        cls.defaults_for_rounds({**paper, "weak_learner": p.paper_value}, rounds)
    if name in ("multiboost", "fedmultiboost"):  # trees by default: nu = 1/sqrt(T); stumps: the paper's step
        assert cls.defaults_for_rounds({}, 100) == {"learning_rate": 0.1}
        assert cls.defaults_for_rounds({"weak_learner": "stump"}, 100) == {"learning_rate": 1.0}


def test_fedmultiboost_shrinks_its_closed_form_step():
    """FedMultiBoost's tree step is AdaBoost's closed form on the sampled clients, times the learning rate: the
    first tree's vote at nu 0.25 is a quarter of the full step's, the tree the same."""
    from mpiboost.data.synth import multisource

    g = multisource.generate(n=900, seed=3)
    models = {nu: mpiboost.train({"algo": "fedmultiboost", "rounds": 1, "learning-rate": nu, "seed": 1}, g.X, g.y,
                                 g.domain) for nu in (1.0, 0.25)}
    full, shrunk = models[1.0], models[0.25]
    assert full.feature.tolist() == shrunk.feature.tolist()
    assert np.isclose(shrunk.coef[-1], 0.25 * full.coef[-1], rtol=1e-12, atol=0) and full.coef[-1] > 0
