"""Training end to end through the CLI, on 1..4 ranks."""
import json

import h5py
import numpy as np
import pytest

from mpi_util import run_cli

pytestmark = pytest.mark.mpi


@pytest.fixture(scope="module")
def ls_data(tmp_path_factory):
    d = tmp_path_factory.mktemp("ls")
    train, test = d / "train.h5", d / "test.h5"
    assert run_cli(["synth", "longservedio", "--n", "6000", "--noise", "0.05", "--seed", "1", "--out", str(train)]).returncode == 0
    assert run_cli(["synth", "longservedio", "--n", "3000", "--seed", "2", "--out", str(test)]).returncode == 0
    return train, test


def _train(data, model, *extra, n=1, rounds=12):
    proc = run_cli(["train", "--data", str(data), "--rounds", str(rounds), "--model", str(model), "--quiet", *extra], n=n)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _export(model):
    proc = run_cli(["export", "--model", str(model)])
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_cli_export_is_the_same_on_any_number_of_ranks(ls_data, tmp_path):
    """Through the CLI and the model file (tests/test_algorithms.py covers every algorithm in-process)."""
    train, _ = ls_data
    exports = {}
    for n, extra in [(1, ()), (3, ("--dedicated-coordinator",))]:
        model = tmp_path / f"m{n}.h5"
        _train(train, model, "--algo", "smoothboost", "--noise-check", "off", "--weak-learner", "sample", "--seed", "5",
               *extra, n=n)
        exports[n] = _export(model)
    doc = json.loads(exports[1])
    assert doc["algorithm"] == "smoothboost" and doc["params"]["search"] == "sample"
    assert len(doc["ensemble"]) >= 1 and exports[1] == exports[3]


def test_metrics_log_and_smoothness(ls_data, tmp_path):
    train, test = ls_data
    metrics = tmp_path / "m.jsonl"
    proc = _train(
        train, tmp_path / "m.h5", "--algo", "smoothboost", "--noise-check", "off", "--weak-learner", "sample", "--valid", str(test),
        "--metrics", str(metrics), n=2, rounds=15,
    )
    assert "valid error" in proc.stdout and "bytes sent" in proc.stdout
    lines = [json.loads(line) for line in metrics.read_text().splitlines()]
    rounds, summary = lines[:-1], lines[-1]["summary"]
    assert [r["round"] for r in rounds] == list(range(1, 16))
    for r in rounds:
        for key in ("weak_error", "weak_error_sample", "edge", "train_error", "valid_error", "bytes_sent",
                    "bytes_received", "seconds", "max_weight_eps_n"):
            assert key in r, key
        assert r["max_weight_eps_n"] <= 1 + 1e-12
        assert r["bytes_sent"] > 0 and "proportional_sample" in r["bytes"]
    assert summary["rounds"] == 15 and summary["ranks"] == 2
    assert set(summary["seconds"]) >= {"load", "bin", "rounds", "communication"}


def test_resume_gives_the_uninterrupted_model(ls_data, tmp_path):
    train, _ = ls_data
    # gamma given: its default depends on --rounds, and the part run below stands for a run of 20 stopped at 9
    # --noise-check off: the part run's check would be made at 9 rounds, the full run's at 20 (tests/test_noise_check.py)
    args = ("--algo", "smoothboost", "--noise-check", "off", "--weak-learner", "histogram", "--seed", "3", "--gamma", "0.05")
    _train(train, tmp_path / "full.h5", *args, rounds=20)
    ckpt = tmp_path / "ckpt.h5"
    _train(train, tmp_path / "part.h5", *args, "--checkpoint", str(ckpt), "--checkpoint-every", "4", rounds=9, n=2)
    _train(train, tmp_path / "resumed.h5", *args, "--checkpoint", str(ckpt), "--resume", rounds=20, n=3)
    assert _export(tmp_path / "resumed.h5") == _export(tmp_path / "full.h5")
    # a checkpoint of another run is refused
    proc = run_cli(["train", "--data", str(train), "--rounds", "20", "--model", str(tmp_path / "x.h5"), "--algo",
                    "adaboost", "--checkpoint", str(ckpt), "--resume", "--quiet"])
    assert proc.returncode == 2 and "checkpoint" in proc.stderr


def test_predict_and_evaluate(ls_data, tmp_path):
    train, test = ls_data
    model = tmp_path / "m.h5"
    _train(train, model, "--algo", "adaboost", rounds=30)
    proc = run_cli(["evaluate", "--model", str(model), "--data", str(test)], n=3)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert set(report) == {"n", "error", "accuracy", "auc", "classes", "per_class", "confusion", "macro_f1",
                           "feature_importance"} and report["n"] == 3000
    assert sum(map(sum, report["confusion"]["matrix"])) == 3000
    assert report["classes"] == [-1, 1]
    assert abs(report["error"] + report["accuracy"] - 1) < 1e-12 and 0.5 < report["auc"] <= 1
    for out in ("p.npy", "p.csv"):
        proc = run_cli(["predict", "--model", str(model), "--data", str(test), "--out", str(tmp_path / out)], n=2)
        assert proc.returncode == 0, proc.stderr
    labels = np.load(tmp_path / "p.npy")
    csv = np.loadtxt(tmp_path / "p.csv", skiprows=1)
    with h5py.File(test) as f:
        y = f["y"][()]
    assert labels.shape == (3000,) and np.array_equal(labels, csv)
    assert abs(np.mean(labels != y) - report["error"]) < 1e-12
    # the first stumps only
    proc = run_cli(["evaluate", "--model", str(model), "--data", str(test), "--rounds", "1"])
    first = json.loads(proc.stdout)
    assert proc.returncode == 0 and first["error"] != report["error"]
    assert run_cli(["evaluate", "--model", str(model), "--data", str(test), "--rounds", "999"]).returncode == 2
    # two files = two domains: per-domain, uniform and agnostic errors
    proc = run_cli(["evaluate", "--model", str(model), "--data", str(test), str(train)])
    report = json.loads(proc.stdout)
    assert len(report["per_domain"]) == 2 and report["agnostic_error"] >= report["uniform_error"]


def test_bad_training_input_exit_code(tmp_path, ls_data):
    train, _ = ls_data
    proc = run_cli(["train", "--algo", "smoothboost", "--data", str(tmp_path / "none.h5"), "--rounds", "3",
                    "--model", str(tmp_path / "m.h5")], n=2)
    assert proc.returncode == 2 and "none.h5: no such file" in proc.stderr
    proc = run_cli(["train", "--algo", "smoothboost", "--data", str(train), "--rounds", "3", "--epsilon", "0",
                    "--model", str(tmp_path / "m.h5")])
    assert proc.returncode == 2 and "epsilon" in proc.stderr
    assert not (tmp_path / "m.h5").exists()


def test_sample_mode_bytes_per_round_do_not_grow_with_n(tmp_path):
    """Communication of sample mode is O(N d) per round, independent of the rows."""
    per_round = {}
    for n in (50_000, 800_000):
        data = tmp_path / f"d{n}.h5"
        assert run_cli(["synth", "longservedio", "--n", str(n), "--noise", "0.1", "--out", str(data)]).returncode == 0
        metrics = tmp_path / f"m{n}.jsonl"
        _train(data, tmp_path / f"m{n}.h5", "--algo", "smoothboost", "--weak-learner", "sample", "--metrics",
               str(metrics), n=2, rounds=8)
        rows = [json.loads(line) for line in metrics.read_text().splitlines()[:-1]]
        per_round[n] = np.mean([r["bytes_sent"] + r["bytes_received"] for r in rows])
    assert abs(per_round[800_000] / per_round[50_000] - 1) < 0.05, per_round


@pytest.fixture(scope="module")
def ms_data(tmp_path_factory):
    d = tmp_path_factory.mktemp("ms")
    train, test = d / "train.h5", d / "test.h5"
    assert run_cli(["synth", "multisource", "--n", "4000", "--seed", "1", "--out", str(train)]).returncode == 0
    assert run_cli(["synth", "multisource", "--n", "3000", "--seed", "2", "--out", str(test)]).returncode == 0
    return train, test


@pytest.mark.parametrize(
    "algo", [("multiboost",), ("multiboost", "--gates", "paper"), ("multiboost", "--gate-every", "1"),
             ("multiboost", "--q-calibrate"),
             ("fedmultiboost", "--client-size", "50"), ("adaboost", "--train-domain", "domain2")]
)
def test_multisource_algorithms_same_model_for_any_number_of_ranks(ms_data, tmp_path, algo):
    train, test = ms_data
    exports = set()
    for n, extra in [(1, ()), (3, ("--dedicated-coordinator",))]:
        model = tmp_path / f"m{n}{len(extra)}.h5"
        _train(train, model, "--algo", *algo, *extra, n=n, rounds=10)
        exports.add(_export(model))
    assert len(exports) == 1
    doc = json.loads(exports.pop())
    proc = run_cli(["evaluate", "--model", str(tmp_path / "m10.h5"), "--data", str(test)], n=2)
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and len(report["per_domain"]) == 3
    if algo[0] == "adaboost":
        assert doc["params"]["train_domain"] == 1 and report["per_domain"]["domain2"]["error"] < 0.05
    else:
        assert doc["domain_classifier"]["train_accuracy"] > 0.9
        gates = {s["domain"] for s in doc["ensemble"] if s["round"] > 0}  # round 0: the trees' prior, ungated
        # the paper's set gates every member by a domain; the shared set mixes ungated ones (domain null) in
        assert gates <= ({0, 1, 2} if algo[0] == "fedmultiboost" or "paper" in algo else {None, 0, 1, 2})
        assert report["agnostic_error"] < 0.15


def test_q_data_trains_the_domain_classifier_on_extra_rows(ms_data, tmp_path):
    """--q-data rows enter Q only: the model differs from a run without them, not between rank counts."""
    train, _ = ms_data
    extra = tmp_path / "extra.h5"
    assert run_cli(["synth", "multisource", "--n", "5000", "--seed", "7", "--out", str(extra)]).returncode == 0
    exports = set()
    for n in (1, 3):
        model = tmp_path / f"q{n}.h5"
        _train(train, model, "--algo", "multiboost", "--q-data", str(extra), n=n, rounds=4)
        exports.add(_export(model))
    assert len(exports) == 1
    with_extra = json.loads(exports.pop())
    _train(train, tmp_path / "plain.h5", "--algo", "multiboost", rounds=4)
    plain = json.loads(_export(tmp_path / "plain.h5"))
    assert with_extra["domain_classifier"]["W"] != plain["domain_classifier"]["W"]
    assert with_extra["params"]["q_data"] == ["extra.h5"]
    # A domain that the training data does not have is an input error.
    other = tmp_path / "other.h5"
    assert run_cli(["synth", "multisource", "--n", "300", "--domains", "4", "--seed", "8", "--out", str(other)]).returncode == 0
    proc = run_cli(["train", "--algo", "multiboost", "--data", str(train), "--rounds", "2", "--model",
                    str(tmp_path / "bad.h5"), "--q-data", str(other), "--quiet"], n=2)
    assert proc.returncode == 2 and "domain4" in proc.stderr and not (tmp_path / "bad.h5").exists()
    proc = run_cli(["train", "--algo", "adaboost", "--data", str(train), "--rounds", "2", "--model",
                    str(tmp_path / "bad.h5"), "--q-data", str(extra), "--quiet"])
    assert proc.returncode == 2 and "--q-data" in proc.stderr


@pytest.mark.parametrize("algo", ["smoothboost", "adaboost", "multiboost"])
def test_same_model_for_any_number_of_threads(tmp_path, algo):
    """Enough rows that every kernel splits its work over the threads."""
    gen = "multisource" if algo == "multiboost" else "longservedio"
    data = tmp_path / "big.h5"
    assert run_cli(["synth", gen, "--n", "140000", "--noise", "0.05", "--seed", "4", "--out", str(data)]).returncode == 0
    exports = set()
    for threads in (1, 2, 3):
        model = tmp_path / f"t{threads}.h5"
        _train(data, model, "--algo", algo, "--threads", str(threads), rounds=6)
        exports.add(_export(model))
    assert len(exports) == 1


def _bytes_per_round(metrics):
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    rounds = [r for r in rows if "round" in r]
    return sum(r["bytes_sent"] + r["bytes_received"] for r in rounds) / len(rounds)  # the center's traffic


def test_multiboost_shared_gates_send_at_most_1_5x_adaboost_bytes_on_wide_data(tmp_path):
    """200 features, 2 ranks: one ungated histogram a round plus a gated one every third round.

    The paper's hypothesis set reduces one histogram per active domain (3 here).
    """
    data = tmp_path / "wide.h5"
    assert run_cli(["synth", "multisource", "--n", "3000", "--d", "200", "--seed", "3", "--out", str(data)]).returncode == 0
    sent = {}
    for name, extra in [("adaboost", ("--algo", "adaboost")), ("shared", ("--algo", "multiboost")),
                        ("paper", ("--algo", "multiboost", "--gates", "paper"))]:
        metrics = tmp_path / f"{name}.jsonl"
        _train(data, tmp_path / f"{name}.h5", *extra, "--weak-learner", "histogram", "--metrics", str(metrics), n=2,
               rounds=10)
        sent[name] = _bytes_per_round(metrics)
    assert sent["shared"] <= 1.5 * sent["adaboost"], sent
    assert sent["paper"] > 2 * sent["adaboost"], sent


def test_the_default_gamma_follows_the_rounds_and_a_resumed_run_keeps_its_own(ls_data, tmp_path):
    """SmoothBoost's shrink follows the T asked; training on from a model keeps its gamma."""
    from mpiboost.boost.smoothboost import gamma_for_rounds
    from mpiboost.model import Model

    train, _ = ls_data
    args = ("--algo", "smoothboost", "--noise-check", "off", "--seed", "3")
    ckpt = tmp_path / "ckpt.h5"
    _train(train, tmp_path / "short.h5", *args, "--checkpoint", str(ckpt), "--checkpoint-every", "5", rounds=10)
    _train(train, tmp_path / "long.h5", *args, rounds=400)
    short, long_ = (Model.load(str(tmp_path / f)).params["gamma"] for f in ("short.h5", "long.h5"))
    assert short == gamma_for_rounds(10, 0.2, "tree") == 0.15  # at most the paper's (1/2 - beta)/2
    assert long_ == gamma_for_rounds(400, 0.2, "tree") and 0.015 < long_ < 0.05  # trees: the default learner
    # 10 rounds, then on to 25 from that model: the 10-round run's gamma, the model of 25 rounds at that gamma
    _train(train, tmp_path / "on.h5", *args, "--checkpoint", str(ckpt), "--resume", rounds=25, n=2)
    assert Model.load(str(tmp_path / "on.h5")).params["gamma"] == short
    _train(train, tmp_path / "at.h5", *args, "--gamma", repr(short), rounds=25)
    assert _export(tmp_path / "on.h5") == _export(tmp_path / "at.h5")
