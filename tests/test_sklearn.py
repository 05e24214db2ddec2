"""mpiboost.sklearn: one estimator per registered algorithm, scikit-learn's own checks, and its tools.

``check_estimator``'s checks run for every estimator (parametrize_with_checks). What they cannot reach,
the domain inputs, is tested here: a transfer estimator given sources, domains from a column under
GridSearchCV and cross_val_score, and the estimators' models against ``mpiboost.train``'s.
The SPMD use (each rank its own rows) is in tests/test_api.py, which runs under mpiexec -n 2..4.
"""
from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import estimator_checks_generator

import mpiboost
from mpiboost import boost
from mpiboost.online import ONLINE
from mpiboost.online.options import STREAM_PARAMS
from mpiboost.sklearn import (ESTIMATORS, AdaBoostClassifier, MpiboostClassifier, MSDTrAClassifier,
                              MultiBoostClassifier, OnlineAgnosticClassifier, OnlineClassifier, OnlineOCORClassifier,
                              SAMMEClassifier, SmoothBoostClassifier, estimator)


def test_one_estimator_per_registered_algorithm():
    assert sorted(ESTIMATORS) == sorted([*boost.ALGORITHMS, *ONLINE])
    for name, cls in {**boost.ALGORITHMS, **ONLINE}.items():
        est = ESTIMATORS[name]
        assert est.__name__ == cls.__name__ + "Classifier"
        params = est().get_params()
        declared = tuple(cls.parameters) + (STREAM_PARAMS if name in ONLINE else ())
        for p in declared:  # every declared option, under its name, with its default
            if p.cli:
                assert params[p.name] == (tuple(p.default) if isinstance(p.default, list) else p.default)
        run = {"seed", "comm"} if name in ONLINE else {"rounds", "seed", "comm", "domain_column"}
        assert run <= set(params)
        assert all(p.name in est.__doc__ for p in declared if p.cli)


def _name(check) -> str:
    return getattr(check, "func", check).__name__


# The checks that cannot apply, with the reason (the closing count lists them).
NOT_APPLICABLE = {
    "check_array_api_input": "mpiboost computes with numpy and compiled kernels: it takes no array-API arrays",
}
# every registered algorithm's estimator, and the bases used themselves (the default algorithms)
CHECKS = [(est, check) for cls in (*ESTIMATORS.values(), MpiboostClassifier, OnlineClassifier)
          for est, check in estimator_checks_generator(cls()) if _name(check) not in NOT_APPLICABLE]


# Checks a weight-taking estimator may fail, with the reason: a row of weight 0 is not a removed row for
# the bin edges (made from every row, as LightGBM's), so a threshold between the remaining rows can move
# and a held-out row fall on its other side. Integer weights against repeated rows, where the bins agree,
# are checked exactly in tests/test_weights.py.
MAY_FAIL_WITH_WEIGHTS = {
    "check_sample_weight_equivalence_on_dense_data": "bin edges come from every row, weight 0 included",
    "check_sample_weight_equivalence_on_sparse_data": "bin edges come from every row, weight 0 included",
}


@pytest.mark.parametrize("estimator,check", CHECKS,
                         ids=[f"{type(e).__name__}-{_name(c)}-{i}" for i, (e, c) in enumerate(CHECKS)])
def test_scikit_learn_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # transfer estimators without sources say so
        try:
            check(estimator)
        except AssertionError:
            if _name(check) in MAY_FAIL_WITH_WEIGHTS and estimator._algorithm().weight_rule:
                pytest.xfail(MAY_FAIL_WITH_WEIGHTS[_name(check)])
            raise


def _blobs(n=240, seed=0, k=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    X = rng.normal(size=(n, 4)) + np.eye(k, 4)[y] * 2.0
    return X, np.array(["ant", "bee", "cow"])[y] if k == 3 else y


def test_the_estimator_trains_the_api_model():
    X, y = _blobs()
    est = SAMMEClassifier(rounds=7, weak_learner="tree", max_leaves=4, seed=3).fit(X, y)
    model = mpiboost.train({"algo": "samme", "rounds": 7, "weak-learner": "tree", "max-leaves": 4, "seed": 3}, X, y)
    assert est.model_.to_json() == model.to_json()
    assert list(est.classes_) == ["ant", "bee", "cow"]
    np.testing.assert_array_equal(est.predict(X), model.predict(X))


def test_clone_pipeline_grid_search_and_cross_validation():
    X, y = _blobs()
    pipe = make_pipeline(StandardScaler(), SAMMEClassifier(rounds=10))
    scores = cross_val_score(pipe, X, y, cv=3)
    assert scores.shape == (3,) and scores.mean() > 0.7
    grid = GridSearchCV(SAMMEClassifier(), {"rounds": [3, 12], "weak_learner": ["stump", "tree"]}, cv=3).fit(X, y)
    assert grid.best_params_["rounds"] == 12
    c = clone(grid.best_estimator_)
    assert c.get_params() == grid.best_estimator_.get_params() and not hasattr(c, "model_")


@pytest.mark.parametrize("algo", sorted(n for n, c in ESTIMATORS.items() if c._algo and c.__mro__[1].__name__
                                         == "MpiboostClassifier"))
def test_every_classifier_has_probabilities_whose_argmax_is_predict(algo):
    """Every batch classifier has predict_proba: rows summing to 1, in [0, 1], whose argmax is predict's class
    (ties included); two classes or more as the algorithm takes them."""
    cls = ESTIMATORS[algo]
    X, y = _blobs(k=3 if "multiclass" in cls._algorithm().tasks and "binary" not in cls._algorithm().tasks else 2)
    dom = np.arange(len(y)) % 3  # domains, sources (0: the target) or tasks, for the algorithms that use them
    est = cls(rounds=12)
    if "source_trust" in est.get_params():
        est.set_params(source_trust="algorithm")  # the transfer vote itself, not a baseline chosen by folds
    est.fit(X, y, domain=dom)
    p = est.predict_proba(X, domain=dom)
    assert p.shape == (len(y), len(est.classes_)) and np.allclose(p.sum(axis=1), 1) and (p >= 0).all()
    np.testing.assert_array_equal(est.classes_[p.argmax(axis=1)], est.predict(X, domain=dom))


def test_vote_probabilities_are_the_links_of_the_votes():
    """A weighted binary vote (AdaBoost's exponential loss): sigmoid(2 F); SAMME's class vote:
    softmax(F / (K - 1)); a majority vote: the share of the members voting +1; a log-loss model's: its link."""
    X, y = _blobs(k=2)
    ada = AdaBoostClassifier(rounds=20).fit(X, y)
    F = ada.model_.decision_function(X)
    np.testing.assert_allclose(ada.predict_proba(X)[:, 1], 1 / (1 + np.exp(-2 * F)), rtol=1e-12, atol=1e-15)
    smooth = estimator("smoothboost", rounds=21).fit(X, y)
    votes = smooth.model_.decision_function(X)
    np.testing.assert_allclose(smooth.predict_proba(X)[:, 1], (1 + votes / 21) / 2, atol=1e-12)
    X3, y3 = _blobs(k=3)
    samme = SAMMEClassifier(rounds=20).fit(X3, y3)
    F3 = samme.model_.decision_function(X3) / 2
    want = np.exp(F3 - F3.max(axis=1, keepdims=True))
    np.testing.assert_allclose(samme.predict_proba(X3), want / want.sum(axis=1, keepdims=True), rtol=1e-12)
    est = AdaBoostClassifier(loss="logistic", weak_learner="tree", rounds=20).fit(X, y)
    np.testing.assert_allclose(est.predict_proba(X)[:, 1], 1 / (1 + np.exp(-est.model_.decision_function(X))),
                               rtol=1e-12)
    assert est.model_.calibrated and not ada.model_.calibrated


def test_feature_importances_and_names_from_a_dataframe():
    pd = pytest.importorskip("pandas")
    X, y = _blobs(k=2)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    est = SmoothBoostClassifier(rounds=30, weak_learner="stump").fit(frame, y)
    assert list(est.feature_names_in_) == ["a", "b", "c", "d"] and est.model_.feature_names == ["a", "b", "c", "d"]
    imp = est.feature_importances_
    assert imp.shape == (4,) and np.isclose(imp.sum(), 1) and imp[:2].sum() > imp[2:].sum()  # y depends on a, b
    np.testing.assert_array_equal(est.model_.feature_importances_, imp)  # the model has them too
    assert list(est.model_.feature_names_in_) == ["a", "b", "c", "d"]
    counts = est.model_.feature_importances("split")
    assert counts.sum() == est.model_.n_stumps  # one split per stump
    tree = AdaBoostClassifier(rounds=5, weak_learner="tree", max_leaves=4).fit(X, y)
    splits = sum(int((t.feature >= 0).sum()) for t in tree.model_.trees)
    assert tree.model_.feature_importances("split").sum() == splits
    assert tree.model_.feature_importances("gain").sum() > 0


def _domains(n=300, seed=0):
    """Domain 0 (few rows) is the target; source 1 agrees with it, source 2 has its labels flipped."""
    rng = np.random.default_rng(seed)
    dom = rng.permutation(np.where(np.arange(n) < 60, 0, 1 + np.arange(n) % 2))
    X = rng.normal(size=(n, 3))
    y = np.where(np.where(dom == 2, -1, 1) * X[:, 0] + 0.2 * X[:, 1] > 0, 1, -1)
    return X, y, dom


def test_domains_from_fit_or_from_a_column_give_the_same_model():
    X, y, dom = _domains()
    a = MultiBoostClassifier(rounds=8).fit(X, y, domain=dom)
    b = MultiBoostClassifier(rounds=8, domain_column=3).fit(np.column_stack([X, dom]), y)
    assert a.model_.to_json() == b.model_.to_json()
    ref = mpiboost.train({"algo": "multiboost", "rounds": 8}, X, y, dom)
    assert a.model_.to_json() == ref.to_json()
    assert b.feature_importances_.shape == (4,) and b.feature_importances_[3] == 0
    with pytest.raises(ValueError, match="either as domain= or in domain_column"):
        MultiBoostClassifier(domain_column=3).fit(np.column_stack([X, dom]), y, domain=dom)
    # the column form is what cross_val_score can split
    scores = cross_val_score(MultiBoostClassifier(rounds=8, domain_column=3), np.column_stack([X, dom]), y, cv=3)
    assert scores.shape == (3,)


def test_a_transfer_estimator_uses_domain_0_as_target_and_falls_back_without_sources():
    X, y, dom = _domains()
    est = MSDTrAClassifier(rounds=6, source_folds=2).fit(X, y, domain=dom)
    ref = mpiboost.train({"algo": "msdtra", "rounds": 6, "source-folds": 2, "target-domain": 0}, X, y, dom)
    assert est.model_.to_json() == ref.to_json() and est.model_.algorithm == "msdtra"
    scores = cross_val_score(MSDTrAClassifier(rounds=6, source_folds=2), X, y, cv=3, params={"domain": dom})
    assert scores.shape == (3,)
    t = dom == 0
    with pytest.warns(UserWarning, match="nothing to transfer"):
        alone = MSDTrAClassifier(rounds=6).fit(X[t], y[t])
    assert alone.model_.to_json() == mpiboost.train({"algo": "adaboost", "rounds": 6}, X[t], y[t]).to_json()


def test_pickle_errors_and_the_factory():
    X, y = _blobs(k=2)
    est = estimator("adaboost", rounds=5).fit(X, y)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(X), est.predict(X))
    with pytest.raises(ValueError, match="unknown algorithm"):
        estimator("adaboostt")
    with pytest.raises(TypeError, match="no parameter 'epsilonn'"):
        SmoothBoostClassifier(epsilonn=0.1)
    with pytest.raises(ValueError, match="--epsilon"):  # checked at fit, naming the option
        SmoothBoostClassifier(epsilon=2.0).fit(X, y)
    with pytest.raises(ValueError, match="Only binary classification"):
        SmoothBoostClassifier().fit(*_blobs())


def test_online_fit_is_one_pass_and_partial_fit_continues_it():
    X, y = _blobs(n=300)
    one = OnlineOCORClassifier(seed=4, test_fraction=0.0).fit(X, y)
    ref = mpiboost.train({"algo": "online-ocor", "seed": 4, "test-fraction": 0.0}, X, y)
    assert one.model_.to_json() == ref.to_json()
    assert one.predict_proba(X).shape == (300, 3) and (one.predict(X) == y).mean() > 0.8
    # batches, an unpickled copy in the middle: the same pass (block size 1; nominal auto is none in batches,
    # as these rows have no nominal feature)
    part = OnlineOCORClassifier(seed=4)
    part.partial_fit(X[:70], y[:70], classes=["ant", "bee", "cow"])
    part = pickle.loads(pickle.dumps(part))
    for a in range(70, 300, 110):
        part.partial_fit(X[a:a + 110], y[a:a + 110])
    assert part.model_.to_json() == one.model_.to_json()
    with pytest.raises(ValueError, match="not among the classes"):
        OnlineAgnosticClassifier().partial_fit(X[:10], np.array(["ant"] * 10), classes=["ant", "bee"]) \
            .partial_fit(X[:10], np.array(["emu"] * 10))


def test_fit_eval_set_chooses_the_round_as_the_api_valid_rows():
    """LightGBM's fit(eval_set=[(X_valid, y_valid)]): the same model as mpiboost.train(valid=...); the ids of
    domain_column ride in X_valid too; more than one pair, or valid_fraction beside it, are refused."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(600, 4))
    y = (X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(0, 0.8, 600) > 0).astype(int)
    Xt, yt, Xv, yv = X[:400], y[:400], X[400:], y[400:]
    est = estimator("gbdt", rounds=60, best_round=True).fit(Xt, yt, eval_set=[(Xv, yv)])
    want = mpiboost.train({"algo": "gbdt", "rounds": 60, "best-round": True}, Xt, yt, valid=(Xv, yv))
    assert est.model_.to_json() == want.to_json()
    assert est.model_.n_rounds < 60 and est.summary_["best_round"] == want.n_rounds
    with pytest.raises(ValueError, match="one .X_valid, y_valid. pair"):
        estimator("gbdt", rounds=5).fit(Xt, yt, eval_set=[(Xv, yv), (Xv, yv)])
    with pytest.raises(ValueError, match="give one"):
        estimator("gbdt", rounds=5, valid_fraction=0.2).fit(Xt, yt, eval_set=[(Xv, yv)])
    with pytest.raises(ValueError):
        estimator("gbdt", rounds=5).fit(Xt, yt, eval_set=[(Xv[:, :3], yv)])  # another number of features
    dom = (np.arange(600) % 2).reshape(-1, 1)
    with_dom = np.hstack([X, dom])
    mb = estimator("multiboost", rounds=10, domain_column=4, best_round=True)
    mb.fit(with_dom[:400], yt, eval_set=[(with_dom[400:], yv)])
    assert mb.model_.info["validation"]["rounds_chosen"]
