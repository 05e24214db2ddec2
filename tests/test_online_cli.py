"""The online boosters through the CLI: one pass, its summary and metrics, the model, ranks, bad input."""
import json

import h5py
import numpy as np
import pytest

from mpi_util import run_cli
from mpiboost.data.format import write_dataset
from mpiboost.online import driver

pytestmark = pytest.mark.mpi


def _data(n=300, k=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    X = np.column_stack([(y + rng.integers(0, 2, n)) % 4, y + 0.8 * rng.standard_normal(n),
                         rng.standard_normal(n)]).astype(np.float64)
    X[rng.random(X.shape) < 0.03] = np.nan
    return X, y


@pytest.fixture(scope="module")
def stream(tmp_path_factory):
    d = tmp_path_factory.mktemp("online")
    X, y = _data()
    path = d / "s.h5"
    write_dataset(path, X, y, classes=["a", "b", "c"])
    return path, X, y


def _train(path, model, *extra, n=1):
    proc = run_cli(["train", "--algo", "online-agnostic", "--data", str(path), "--model", str(model), "--quiet",
                    "--n-learners", "12", *extra], n=n)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _export(model):
    proc = run_cli(["export", "--model", str(model)])
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_one_pass_reports_saves_and_matches_the_library(stream, tmp_path):
    path, X, y = stream
    metrics = tmp_path / "m.jsonl"
    s = _train(path, tmp_path / "m.h5", "--gamma", "0.7", "--shuffle", "5", "--metrics", str(metrics))
    assert s["n"] == 300 and s["n_test"] == 60 and s["nominal"] == [0] and s["classes"] == 3
    perm = np.random.default_rng(5).permutation(300)
    want = driver.prequential(X[perm], y[perm], [4, 0, 0], 3, params={"n_learners": 12, "gamma": 0.7}, seed=0)
    for key in ("acc_test", "acc_all", "exp_test", "argmax_test"):
        assert s[key] == pytest.approx(want[key], abs=1e-12), key
    records = [json.loads(line) for line in metrics.read_text().splitlines()]
    assert records[-1]["summary"]["acc_test"] == s["acc_test"]
    assert [r["examples"] for r in records[:-1]][-1] == 300 and all("examples_per_s" in r for r in records[:-1])
    proc = run_cli(["evaluate", "--model", str(tmp_path / "m.h5"), "--data", str(path)])
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["n"] == 300 and report["accuracy"] > 0.6 and report["classes"] == ["a", "b", "c"]
    out = tmp_path / "p.csv"
    assert run_cli(["predict", "--model", str(tmp_path / "m.h5"), "--data", str(path), "--out", str(out)]).returncode == 0
    assert set(out.read_text().split()[1:]) <= {"a", "b", "c"}
    doc = json.loads(_export(tmp_path / "m.h5"))
    assert doc["kind"] == "online" and doc["values"] == [4, 0, 0] and len(doc["learners"]["mc_right"]) == 12


@pytest.mark.parametrize("block", [1, 16])
def test_same_run_and_model_on_1_to_4_ranks(stream, tmp_path, block):
    path, _, _ = stream
    runs, exports, predictions = [], set(), set()
    for n in (1, 2, 3, 4):
        model, pred = tmp_path / f"m{n}.h5", tmp_path / f"p{n}.csv"
        s = _train(path, model, "--block-size", str(block), "--relabel", "random", "--shuffle", "1",
                   "--predictions", str(pred), n=n)
        runs.append({k: s[k] for k in ("acc_test", "acc_all", "exp_test", "argmax_test", "blocks")})
        exports.add(_export(model))
        predictions.add(pred.read_text())
        if n > 1:
            assert s["bytes"]["block_labels"]["sent"] > 0
    assert all(r == runs[0] for r in runs) and len(exports) == 1 and len(predictions) == 1
    assert runs[0]["blocks"] == -(-300 // block)
    lines = predictions.pop().splitlines()
    assert lines[0] == "position,row,label,prediction,argmax" and len(lines) == 301
    perm = np.random.default_rng(1).permutation(300)
    assert [int(line.split(",")[1]) for line in lines[1:]] == perm.tolist()


def test_bad_input_is_refused_before_any_work(tmp_path):
    X, y = _data(n=40)
    X[17, 0] = 1.5  # not a nominal code
    bad = tmp_path / "bad.h5"
    write_dataset(bad, X, y)
    proc = run_cli(["train", "--algo", "online-agnostic", "--data", str(bad), "--model", str(tmp_path / "m.h5"),
                    "--nominal", "0"], n=2)
    assert proc.returncode == 2 and "row 17, feature 0" in proc.stderr and "bad.h5" in proc.stderr
    assert not (tmp_path / "m.h5").exists()
    X[17, 0] = np.inf
    write_dataset(bad, X, y)
    proc = run_cli(["train", "--algo", "online-agnostic", "--data", str(bad), "--model", str(tmp_path / "m.h5")])
    assert proc.returncode == 2 and "row 17, feature 0" in proc.stderr
    for extra, words in ((["--rounds", "5"], "--rounds is not an option"), (["--block-size", "0"], "--block-size"),
                         (["--gamma", "2"], "--gamma"), (["--nominal", "x"], "--nominal")):
        proc = run_cli(["train", "--algo", "online-agnostic", "--data", str(bad), "--model", str(tmp_path / "m.h5"),
                        *extra])
        assert proc.returncode == 2 and words in proc.stderr, (extra, proc.stderr)


def test_a_damaged_model_is_refused(stream, tmp_path):
    path, _, _ = stream
    model = tmp_path / "m.h5"
    _train(path, model)
    with h5py.File(model, "a") as f:
        del f["learners/s0"]
        f["learners/s0"] = np.zeros((3, 1, 3))
    proc = run_cli(["evaluate", "--model", str(model), "--data", str(path)])
    assert proc.returncode == 2 and "s0" in proc.stderr


def test_hoeffding_trees_split_and_give_the_same_model_on_any_number_of_ranks(stream, tmp_path):
    path, _, _ = stream
    exports = set()
    for n in (1, 3):
        model = tmp_path / f"h{n}.h5"
        s = _train(path, model, "--weak-learner", "hoeffding", "--grace-period", "20", "--split-tau", "0.3",
                   "--split-children", "nba", "--block-size", "8", n=n)
        assert s["weak_learner"]["kind"] == "hoeffding"
        exports.add(_export(model))
    assert len(exports) == 1
    doc = json.loads(exports.pop())
    assert doc["learner"]["grace_period"] == 20 and any(f >= 0 for f in doc["learners"]["split_feature"])
    proc = run_cli(["train", "--algo", "online-agnostic", "--data", str(path), "--model", str(tmp_path / "x.h5"),
                    "--grace-period", "20"])
    assert proc.returncode == 2 and "--weak-learner hoeffding" in proc.stderr


@pytest.mark.parametrize("extra", [["--checkpoint", "c.h5"], ["--checkpoint", "c.h5", "--resume"],
                                   ["--dedicated-coordinator"]], ids=["checkpoint", "resume", "dedicated"])
def test_every_online_booster_refuses_checkpoints_and_a_dedicated_coordinator(stream, tmp_path, capsys, extra):
    """One pass over the stream is the whole run: no checkpoint to resume, and every rank holds learners."""
    from mpiboost import cli
    from mpiboost.online import ONLINE

    path, _, _ = stream
    for name in ONLINE:
        argv = ["train", "--algo", name, "--data", str(path), "--model", str(tmp_path / "m.h5"), "--quiet",
                *[str(tmp_path / e) if e.endswith(".h5") else e for e in extra]]
        assert cli.main(argv) == 2, name
        err = capsys.readouterr().err
        assert f"{extra[0]} is not an option of {name}" in err, err
        assert not (tmp_path / "m.h5").exists() and not (tmp_path / "c.h5").exists()
