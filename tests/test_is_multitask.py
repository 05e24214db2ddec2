"""IS multi-task boosting through the CLI: lambda = 0 is AdaBoost per task, the regulariser helps, ranks agree."""
import json

import numpy as np
import pytest

from mpi_util import run_cli

pytestmark = pytest.mark.mpi


@pytest.fixture(scope="module")
def mt(tmp_path_factory):
    d = tmp_path_factory.mktemp("mt")
    train, test = d / "mt1.h5", d / "mt1-test.h5"
    assert run_cli(["synth", "multitask", "--dataset", "1", "--n", "400", "--paper-noise", "--task-seed", "1",
                    "--seed", "1", "--out", str(train)]).returncode == 0
    assert run_cli(["synth", "multitask", "--dataset", "1", "--n", "600", "--task-seed", "1", "--seed", "2",
                    "--out", str(test)]).returncode == 0
    return train, test


def _train(data, model, *extra, n=1, rounds=60):
    proc = run_cli(["train", "--data", str(data), "--rounds", str(rounds), "--model", str(model), "--quiet",
                    *extra], n=n)
    assert proc.returncode == 0, proc.stderr[-3000:]


def _export(model):
    proc = run_cli(["export", "--model", str(model)])
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_lambda_0_is_adaboost_on_each_task(mt, tmp_path):
    """With lambda = 0 a step on task k is AdaBoost's round on task k's rows: the same stumps and coefficients."""
    train, _ = mt
    _train(train, tmp_path / "is.h5", "--algo", "is-multitask", "--lambda", "0", "--steps-per-visit", "1")
    doc = _export(tmp_path / "is.h5")
    for k in range(3):
        _train(train, tmp_path / f"ada{k}.h5", "--algo", "adaboost", "--train-domain", str(k),
               rounds=sum(1 for s in doc["ensemble"] if s["domain"] == k))
        ada = _export(tmp_path / f"ada{k}.h5")["ensemble"]
        mine = [s for s in doc["ensemble"] if s["domain"] == k]
        assert [(s["feature"], s["bin"], s["left"], s["missing_left"]) for s in mine] == \
            [(s["feature"], s["bin"], s["left"], s["missing_left"]) for s in ada]
        np.testing.assert_allclose([s["coef"] for s in mine], [s["coef"] for s in ada], rtol=1e-9)


def test_the_regulariser_helps_related_tasks_and_each_row_uses_its_task(mt, tmp_path):
    train, test = mt
    errors = {}
    for lam in ("0", "0.1"):
        _train(train, tmp_path / f"m{lam}.h5", "--algo", "is-multitask", "--lambda", lam, rounds=200)
        proc = run_cli(["evaluate", "--model", str(tmp_path / f"m{lam}.h5"), "--data", str(test)])
        assert proc.returncode == 0, proc.stderr
        report = json.loads(proc.stdout)
        assert set(report["per_domain"]) == {"task1", "task2", "task3"}
        errors[lam] = report["uniform_error"]
    assert errors["0.1"] < errors["0"] - 0.01  # this seed: 0.107 against 0.139
    assert errors["0.1"] < 0.2


@pytest.mark.parametrize("mode", ["histogram", "sample"])
def test_same_model_on_any_number_of_ranks(mt, tmp_path, mode):
    train, _ = mt
    exports = []
    for n, extra in ((1, ()), (3, ()), (4, ("--dedicated-coordinator",))):
        model = tmp_path / f"m{n}.h5"
        _train(train, model, "--algo", "is-multitask", "--lambda", "0.3", "--weak-learner", mode, *extra, n=n,
               rounds=25)
        exports.append(_export(model))
    assert all(e == exports[0] for e in exports)
    assert {s["domain"] for s in exports[0]["ensemble"]} <= {0, 1, 2}


def test_lambda_and_rounds_chosen_on_validation_rows_alike_on_any_number_of_ranks(mt, tmp_path):
    train, _ = mt
    exports = []
    for n in (1, 2):
        model = tmp_path / f"auto{n}.h5"
        _train(train, model, "--algo", "is-multitask", "--lambda", "auto", "--valid-fraction", "0.2",
               "--steps-per-visit", "2", n=n, rounds=40)
        exports.append(_export(model))
    assert exports[0] == exports[1]
    assert exports[0]["params"]["lam"] in (0.0, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)


def test_scenario_b_scales_lambda_by_the_tasks_distances_alike_on_any_number_of_ranks(mt, tmp_path):
    train, test = mt
    exports = []
    for n in (1, 3):
        model = tmp_path / f"b{n}.h5"
        _train(train, model, "--algo", "is-multitask", "--lambda", "0.03", "--lambda-scale", "is", "--is-rounds",
               "30", n=n, rounds=60)
        exports.append(_export(model))
    assert exports[0] == exports[1] and exports[0]["params"]["lambda_scale"] == "is"
    proc = run_cli(["evaluate", "--model", str(tmp_path / "b1.h5"), "--data", str(test)])
    assert proc.returncode == 0 and json.loads(proc.stdout)["uniform_error"] < 0.25


def test_is_distances_of_the_per_task_fits():
    """IS_kj >= 0, 0 on the diagonal, and larger between tasks whose rules differ more."""
    from mpiboost.boost.is_multitask import ISMultitask
    from mpiboost.comm import world
    from mpiboost.data import synth
    from mpiboost.data.format import write_dataset
    from mpiboost.data.load import load
    from mpiboost.protocol import Protocol
    import tempfile
    import os

    data = synth.module("multitask").generate(300, seed=4, task_seed=4, dataset=2)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "mt2.h5")
        write_dataset(path, data.X, data.y, data.domain, domain_names=data.domain_names)
        comm = world()
        shard = load(comm, [path], task="binary")
        algo = ISMultitask({"lam": 0.1, "lambda_scale": "is", "is_rounds": 20})
        algo.setup(shard, Protocol(comm), seed=0)
    D = algo.distances
    assert D.shape == (6, 6) and np.all(D >= 0) and np.allclose(np.diag(D), 0)
    same = [D[i, j] for i in range(3) for j in range(3) if i != j]
    opposite = [D[i, j] for i in range(3) for j in range(3, 6)]
    assert max(same) < min(opposite)  # tasks 1-3 and 4-6 label the plane oppositely
    np.testing.assert_allclose(algo.lam[0, 1:3], 0.1 / D[0, 1:3])
