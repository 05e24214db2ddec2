"""mpiboost.train on in-memory rows: each rank its own rows, the model of the concatenated file.

A collective module (tests/test_mpi_suite.py reruns it under mpiexec -n 2, 3, 4): on every
communicator size and every way of cutting the rows over the ranks (even, all on the last
rank, uneven, the first rank empty), the API's model is byte for byte the driver's on one
file holding the rows in rank order.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import mpiboost
from mpiboost.comm import Comm, _mpi
from mpiboost.data.format import write_dataset
from runs import train as train_files
from mpiboost.errors import CollectiveError

from collective import IN_MPI_RUN, comms_of_every_size, shared_tmpdir, splits, world


def _data(kind: str, n: int = 160, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    X[rng.random(X.shape) < 0.05] = np.nan  # missing values take the missing bin
    domain = None
    if kind == "binary":
        y = np.where(X[:, 0] + 0.5 * np.nan_to_num(X[:, 1]) > 0, 1, -1)
    elif kind == "multiclass":
        y = np.array(["cat", "dog", "emu"])[np.digitize(np.nan_to_num(X[:, 0]), [-0.5, 0.5])]
    else:  # domains / sources / tasks: domain 0 has few rows
        domain = np.where(np.arange(n) < n // 5, 0, 1 + np.arange(n) % 2).astype(np.int32)
        flip = np.where(domain == 2, -1, 1)
        y = np.where(flip * np.nan_to_num(X[:, 0]) + 0.3 * np.nan_to_num(X[:, 2]) > 0, 1, -1)
    return X.astype(np.float32), y, domain


CASES = [
    ("binary", {"algo": "smoothboost", "rounds": 8, "seed": 2}),
    ("binary", {"algo": "adaboost", "rounds": 6, "--weak-learner": "tree", "max_leaves": 4, "min-data-in-leaf": 5}),
    ("multiclass", {"algo": "samme", "rounds": 6, "valid-fraction": 0.25, "best-round": True}),
    ("domains", {"algo": "multiboost", "rounds": 5}),
    ("domains", {"algo": "msdtra", "rounds": 5, "target-domain": 0, "source-folds": 2}),
    ("domains", {"algo": "is-multitask", "rounds": 6}),
]


def _file_model(tmp: str, name: str, kind: str, params: dict):
    """The reference: the driver on one process, reading one file of every row."""
    from mpiboost.api import split_params

    X, y, domain = _data(kind)
    path = os.path.join(tmp, f"{name}.h5")
    if not os.path.exists(path):
        if y.dtype.kind == "U":  # text labels: the file stores codes into its classes attribute, as convert does
            classes, codes = np.unique(y, return_inverse=True)
            write_dataset(path, X, codes, domain, classes=list(classes))
        else:
            write_dataset(path, X, y, domain)
    algo, run, algo_params = split_params(params)
    self_comm = Comm(_mpi().COMM_SELF)
    return train_files(self_comm, [path], algorithm=algo, rounds=run["rounds"], params=algo_params,
                       seed=run.get("seed", 0), valid_fraction=run.get("valid_fraction"),
                       best_round=bool(run.get("best_round", False))).model


@pytest.mark.parametrize("kind,params", CASES, ids=[f"{p['algo']}-{i}" for i, (_, p) in enumerate(CASES)])
def test_each_rank_its_rows_gives_the_model_of_the_concatenated_file(kind, params, tmp_path):
    reference = None
    X, y, domain = _data(kind)
    for comm in comms_of_every_size():
        tmp = shared_tmpdir(comm)
        if reference is None:
            reference = _file_model(str(tmp_path), "all", kind, params)
        for cut in splits(len(y), comm.size):
            a, b = cut[comm.rank]
            model = mpiboost.train(params, X[a:b], y[a:b], None if domain is None else domain[a:b], comm=comm)
            assert model.to_json() == reference.to_json(), (comm.size, cut)
            path = os.path.join(tmp, f"api-{comm.size}-{comm.rank}.h5")
            model.save(path)
            ref = os.path.join(str(tmp_path), "ref.h5")
            reference.save(ref)
            with open(path, "rb") as f1, open(ref, "rb") as f2:
                assert f1.read() == f2.read(), (comm.size, cut)


def test_string_labels_pandas_and_validation_rows():
    pd = pytest.importorskip("pandas")
    X, y, _ = _data("multiclass")
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    for comm in comms_of_every_size():
        a, b = comm.rank * 120 // comm.size, (comm.rank + 1) * 120 // comm.size
        va, vb = 120 + comm.rank * 40 // comm.size, 120 + (comm.rank + 1) * 40 // comm.size
        model = mpiboost.train({"algo": "samme", "rounds": 5}, frame.iloc[a:b], y[a:b],
                               valid=(frame.iloc[va:vb], y[va:vb]), comm=comm)
        assert model.classes == ["cat", "dog", "emu"]
        assert model.feature_names == [f"f{j}" for j in range(X.shape[1])]
        assert model.info["validation"]["n_valid"] == 40 and model.info["validation"]["files"] == ["<arrays>"]


def test_bad_inputs_are_refused_on_every_rank_naming_the_rank_and_row():
    X, y, _ = _data("binary")
    for comm in comms_of_every_size():
        a, b = comm.rank * 160 // comm.size, (comm.rank + 1) * 160 // comm.size
        Xl = X[a:b].copy()
        last = comm.size - 1
        if comm.rank == last:
            Xl[2, 3] = np.inf
        with pytest.raises(CollectiveError, match=rf"rank {last} row 2 .*feature 3: value inf is infinite"):
            mpiboost.train({"algo": "adaboost", "rounds": 3}, Xl, y[a:b], comm=comm)
        with pytest.raises(CollectiveError, match=r"'weak_lerner' is not an option of adaboost"):
            mpiboost.train({"algo": "adaboost", "rounds": 3, "weak_lerner": "tree"}, X[a:b], y[a:b], comm=comm)
        with pytest.raises(CollectiveError, match=r"'--lambda' is not an option of adaboost \(an option of is-multitask\)"):
            mpiboost.train({"algo": "adaboost", "rounds": 3, "--lambda": 0.1}, X[a:b], y[a:b], comm=comm)
        yl = y[a:b].astype(float)
        if comm.rank == last:
            yl[1] = np.nan
        with pytest.raises(CollectiveError, match=rf"y on rank {last} row 1 .*not finite"):
            mpiboost.train({"algo": "adaboost", "rounds": 3}, X[a:b], yl, comm=comm)
        Xd = X[a:b, :4] if comm.rank == last and comm.size > 1 else X[a:b]
        if comm.size > 1:
            with pytest.raises(CollectiveError, match="different numbers of features"):
                mpiboost.train({"algo": "adaboost", "rounds": 3}, Xd, y[a:b], comm=comm)


def test_params_take_the_command_line_names():
    from mpiboost.api import split_params

    algo, run, params = split_params({"algo": "smoothboost", "--rounds": 5, "valid-fraction": 0.2,
                                      "weak-learner": "tree", "--max_leaves": 7, "gamma": 0.1})
    assert (algo, run) == ("smoothboost", {"rounds": 5, "valid_fraction": 0.2})
    assert params == {"weak_learner": "tree", "max_leaves": 7, "gamma": 0.1}
    with pytest.raises(CollectiveError, match="the same option"):
        split_params({"algo": "adaboost", "weak-learner": "tree", "weak_learner": "stump"})
    with pytest.raises(CollectiveError, match="'algo' is required"):
        split_params({"rounds": 5})
    model = mpiboost.train({"algo": "adaboost", "rounds": np.int64(3)}, *_data("binary")[:2], comm=Comm(_mpi().COMM_SELF))
    assert model.n_rounds == 3  # a numpy integer is a number of rounds
    with pytest.raises(CollectiveError, match="'rounds' must be an integer"):
        mpiboost.train({"algo": "adaboost", "rounds": 2.5}, *_data("binary")[:2], comm=Comm(_mpi().COMM_SELF))
    with pytest.raises(CollectiveError, match="command-line option; here, call model.save"):
        split_params({"algo": "adaboost", "model": "m.h5"})


@pytest.mark.skipif(IN_MPI_RUN, reason="runs its own processes")
def test_the_cli_saves_the_apis_model_byte_for_byte(tmp_path):
    """`mpiboost train` on the file, under mpiexec -n 3, writes the bytes model.save writes for the API's model."""
    from mpiboost.api import split_params

    X, y, domain = _data("domains")
    data = tmp_path / "d.h5"
    write_dataset(data, X, y, domain)
    params = {"algo": "multiboost", "rounds": 5, "seed": 3}
    model = mpiboost.train(params, X, y, domain)
    model.save(tmp_path / "api.h5")
    from mpi_util import run_mpi

    out = run_mpi(3, [sys.executable, "-m", "mpiboost", "train", "--algo", "multiboost", "--rounds", "5", "--seed", "3",
                      "--data", str(data), "--model", str(tmp_path / "cli.h5"), "--quiet"], timeout=300)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "cli.h5").read_bytes() == (tmp_path / "api.h5").read_bytes()
    assert split_params(params)[0] == "multiboost"


def test_import_mpiboost_exports_the_api():
    assert callable(mpiboost.train) and callable(mpiboost.load)
    assert mpiboost.Model.__name__ == "Model"
    assert world().size >= 1


def test_predict_takes_raw_rows_and_refuses_bins_or_the_wrong_shape(tmp_path):
    """The 64-answers-for-1,797-rows report: predict on raw (n, d) rows gives n labels, the evaluate command's;
    a feature-major array, or rows of another width, is refused with a message naming the shapes."""
    from mpiboost.errors import InputError
    from mpiboost.evaluate import predict as predict_files

    X, y, _ = _data("multiclass", n=200)
    model = mpiboost.train({"algo": "samme", "rounds": 6}, X, y, comm=Comm(_mpi().COMM_SELF))
    labels = model.predict(X)
    assert labels.shape == (200,) and set(labels) <= {"cat", "dog", "emu"}
    path = tmp_path / "x.h5"
    classes, codes = np.unique(y, return_inverse=True)
    write_dataset(path, X, codes, classes=list(classes))
    assert list(predict_files(Comm(_mpi().COMM_SELF), model, [str(path)])) == list(labels)
    with pytest.raises(InputError, match=r"expected rows of the model's 5 features, shape \(n, 5\), got shape \(5, 200\)"):
        model.predict(np.ascontiguousarray(X.T))
    with pytest.raises(InputError, match="value inf is infinite"):
        model.predict(np.where(np.arange(5) == 1, np.inf, X))
    scores = model.decision_function(X)
    assert scores.shape == (200, 3)
    p = model.predict_proba(X)  # a SAMME vote: softmax(F / (K - 1)), not calibrated
    assert p.shape == (200, 3) and np.allclose(p.sum(axis=1), 1.0) and not model.calibrated
    logistic = mpiboost.train({"algo": "adaboost", "rounds": 5, "loss": "logistic", "weak-learner": "tree"},
                              X, np.where(y == "cat", 1, 0), comm=Comm(_mpi().COMM_SELF))
    p = logistic.predict_proba(X)
    assert p.shape == (200, 2) and np.allclose(p.sum(axis=1), 1.0)


def test_predict_on_a_dataframe_follows_the_models_column_names():
    pd = pytest.importorskip("pandas")
    X, y, _ = _data("binary")
    names = [f"f{j}" for j in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=names)
    model = mpiboost.train({"algo": "adaboost", "rounds": 5}, frame, y, comm=Comm(_mpi().COMM_SELF))
    assert model.feature_names == names
    swapped = frame[names[::-1]]
    np.testing.assert_array_equal(model.predict(swapped), model.predict(X))  # reordered by name
    from mpiboost.errors import InputError

    with pytest.raises(InputError, match="missing: f4; not the model's: g"):
        model.predict(frame.rename(columns={"f4": "g"}))


SPMD_CASES = [("multiclass", "samme", {"rounds": 6, "weak_learner": "tree", "max_leaves": 4}),
              ("domains", "msdtra", {"rounds": 5, "source_folds": 2, "domain_column": 5})]


@pytest.mark.parametrize("kind,algo,kw", SPMD_CASES, ids=[c[1] for c in SPMD_CASES])
def test_scikit_learn_estimators_spmd_each_rank_its_rows(kind, algo, kw, tmp_path):
    """mpiboost.sklearn under mpiexec: fit(X_local, y_local) on every rank, the model of the concatenated file."""
    from mpiboost.sklearn import estimator

    X, y, domain = _data(kind)
    params = {"algo": algo, **{k: v for k, v in kw.items() if k != "domain_column"}}
    if algo == "msdtra":
        params["target-domain"] = 0
    reference = _file_model(str(tmp_path), f"spmd-{algo}", kind, params).to_json()
    Xd = X if domain is None else np.column_stack([X, domain]).astype(np.float32)
    for comm in comms_of_every_size():
        for cut in splits(len(y), comm.size):
            a, b = cut[comm.rank]
            est = estimator(algo, comm=comm, **kw).fit(Xd[a:b], y[a:b])
            assert est.model_.to_json() == reference, (comm.size, cut)
            if b > a:  # prediction is local
                np.testing.assert_array_equal(est.predict(Xd[a:b]), est.model_.predict(X[a:b]))


def test_an_online_booster_on_each_ranks_rows_makes_the_files_pass(tmp_path):
    """mpiboost.train of an online booster: the stream is every rank's rows in rank order, as in the file."""
    from mpiboost.driver import online as online_driver
    from mpiboost.sklearn import OnlineOCORClassifier

    X, y, _ = _data("multiclass")
    path = str(tmp_path / "stream.h5")
    classes, codes = np.unique(y, return_inverse=True)
    write_dataset(path, X, codes, None, classes=list(classes))
    opts = online_driver.stream_options({"block_size": 4})
    reference = online_driver.stream(Comm(_mpi().COMM_SELF), "online-ocor", {"n_learners": 12}, [path], opts, 3)[0]
    batched = OnlineOCORClassifier(seed=3, n_learners=12, test_fraction=0.0, comm=Comm(_mpi().COMM_SELF)).fit(X, y)
    for comm in comms_of_every_size():
        for cut in splits(len(y), comm.size):
            a, b = cut[comm.rank]
            model = mpiboost.train({"algo": "online-ocor", "seed": 3, "block-size": 4, "n-learners": 12},
                                   X[a:b], y[a:b], comm=comm)
            assert model.to_json() == reference.to_json(), (comm.size, cut)
        # partial_fit, batch by batch, each rank its share of every batch: the one pass over all rows
        est = OnlineOCORClassifier(seed=3, n_learners=12, comm=comm)
        for start in range(0, len(y), 50):
            stop = min(len(y), start + 50)
            a = start + (stop - start) * comm.rank // comm.size
            b = start + (stop - start) * (comm.rank + 1) // comm.size
            est.partial_fit(X[a:b], y[a:b], classes=["cat", "dog", "emu"])
        assert est.model_.to_json() == batched.model_.to_json(), comm.size


def test_categorical_columns_become_agreed_codes_that_the_model_keeps(tmp_path):
    """category and text columns: codes of the categories of every rank's rows, kept in the model, applied by name."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(5)
    n = 240
    frame = pd.DataFrame({"x": rng.normal(size=n), "city": rng.choice(["Lima", "Oslo", "Pune"], n),
                          "plan": pd.Categorical(rng.choice(["basic", "pro"], n))})
    frame.loc[[3, 7], "city"] = None  # missing
    y = np.where((frame.city == "Oslo") | ((frame.plan == "pro") & (frame.x > 0)), 1, -1)
    params = {"algo": "adaboost", "rounds": 12, "weak-learner": "tree", "max-leaves": 4, "min-data-in-leaf": 5}
    reference = mpiboost.train(params, frame, y, comm=Comm(_mpi().COMM_SELF))
    assert reference.info["categories"] == {"city": ["Lima", "Oslo", "Pune"], "plan": ["basic", "pro"]}
    for comm in comms_of_every_size():
        # rows sorted by city: each rank sees some of the cities only, the codes must still agree
        order = np.argsort(frame.city.fillna("").to_numpy(), kind="stable")
        a, b = comm.rank * n // comm.size, (comm.rank + 1) * n // comm.size
        rows = np.sort(order[a:b])
        model = mpiboost.train(params, frame.iloc[rows], y[rows], comm=comm)
        assert model.info["categories"] == reference.info["categories"]
    path = str(tmp_path / "cat.h5")
    reference.save(path)
    loaded = mpiboost.load(path)
    shuffled = frame[["plan", "x", "city"]].copy()
    shuffled.loc[0, "city"] = "Quito"  # never seen: a missing value
    np.testing.assert_array_equal(loaded.predict(shuffled)[1:], reference.predict(frame)[1:])
    assert (reference.predict(frame) == y).mean() > 0.9
    # a feature column of numbers and text is named as a feature, not taken for the labels
    mixed = frame.assign(city=frame.city.where(np.arange(n) % 2 == 0, 7))
    with pytest.raises(ValueError, match="X: column 'city' mixes numbers .7. and text"):
        mpiboost.train(params, mixed, y, comm=Comm(_mpi().COMM_SELF))
