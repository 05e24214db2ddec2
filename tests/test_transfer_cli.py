"""The transfer algorithms through the CLI on 1..4 ranks: same model, resume, errors."""
import json

import pytest

from mpi_util import run_cli

pytestmark = pytest.mark.mpi

@pytest.fixture(scope="module")
def tr_data(tmp_path_factory):
    d = tmp_path_factory.mktemp("tr")
    base = d / "tr.h5"
    common = ["--n", "400", "--target-n", "60", "--sources", "3", "--task-seed", "4", "--seed", "1"]
    assert run_cli(["synth", "transfer", *common, "--out", str(base), "--split-domains"]).returncode == 0
    single = d / "single.h5"
    assert run_cli(["synth", "transfer", *common, "--out", str(single)]).returncode == 0
    test = d / "test.h5"
    assert run_cli(["synth", "transfer", "--n", "2000", "--sources", "0", "--task-seed", "4", "--seed", "2",
                    "--out", str(test)]).returncode == 0
    files = ["--target", str(d / "tr-target.h5"), "--source", *[str(d / f"tr-source{k}.h5") for k in (1, 2, 3)]]
    return files, single, test


def _train(files, model, *extra, n=1, rounds=10):
    # the algorithm itself unless a test asks for the folds (tests/test_source_trust.py)
    baseline = "adaboost" in extra  # AdaBoost-k on the target: no sources to trust
    trust = [] if "--source-trust" in extra or baseline else ["--source-trust", "algorithm"]
    proc = run_cli(["train", *files, "--rounds", str(rounds), "--model", str(model), "--quiet", *trust, *extra],
                   n=n)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _export(model):
    proc = run_cli(["export", "--model", str(model)])
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("algo", ["msdtra", "tradaboost"])
def test_same_model_for_any_number_of_ranks(tr_data, tmp_path, algo):
    """Through the CLI (tests/test_algorithms.py covers every algorithm and rank count in-process)."""
    files, _, test = tr_data
    exports = set()
    for n, extra in [(1, ()), (3, ("--dedicated-coordinator",))]:
        model = tmp_path / f"m{n}{len(extra)}.h5"
        _train(files, model, "--algo", algo, "--high-error", "clip", *extra, n=n)
        exports.add(_export(model))
    assert len(exports) == 1
    doc = json.loads(exports.pop())
    assert doc["algorithm"] == algo and doc["params"]["target_domain"] == 0 and doc["params"]["rounds"] == 10
    assert doc["domain_names"] == ["target", "source1", "source2", "source3"]
    rounds = {s["round"] for s in doc["ensemble"]}
    assert rounds == set(range(1, 11))
    assert len(doc["ensemble"]) == (40 if algo == "msdtra" else 10)  # MSDTrA: 3 sources + the target-only candidate
    assert doc["first_voting_round"] == (5 if algo in ("tradaboost", "dtradaboost") else 1)
    proc = run_cli(["evaluate", "--model", str(tmp_path / "m10.h5"), "--data", str(test)], n=2)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["n"] == 2000 and 0 <= report["error"] < 0.5 and report["auc"] > 0.5


def test_domain_column_names_the_target(tr_data, tmp_path):
    """One file with a domain column and --target-domain gives the model of the per-domain files."""
    files, single, _ = tr_data
    _train(files, tmp_path / "a.h5", "--algo", "msdtra", n=2)
    _train(["--data", str(single)], tmp_path / "b.h5", "--algo", "msdtra", "--target-domain", "target", n=3)
    _train(["--data", str(single)], tmp_path / "c.h5", "--algo", "msdtra", n=1)  # the domain named 'target'
    a, b, c = (json.loads(_export(tmp_path / f"{x}.h5")) for x in "abc")
    assert a["ensemble"] == b["ensemble"] == c["ensemble"]


@pytest.mark.parametrize("algo", ["msdtra"])
def test_resume_gives_the_uninterrupted_model(tr_data, tmp_path, algo):
    files, _, _ = tr_data
    args = ("--algo", algo, "--high-error", "clip")
    _train(files, tmp_path / "full.h5", *args, rounds=12)
    ckpt = tmp_path / "ckpt.h5"
    # the interrupted run is a 12-round run stopped by its rounds at 7 (M is part of the algorithm)
    _train(files, tmp_path / "part.h5", *args, "--checkpoint", str(ckpt), "--checkpoint-every", "3", rounds=12, n=2)
    part = json.loads(_export(ckpt))
    assert {s["round"] for s in part["ensemble"]} == set(range(1, 13))
    _train(files, tmp_path / "resumed.h5", *args, "--checkpoint", str(ckpt), "--resume", rounds=12, n=3)
    assert _export(tmp_path / "resumed.h5") == _export(tmp_path / "full.h5")


def test_resume_from_a_partial_checkpoint(tr_data, tmp_path):
    """A checkpoint written mid-run (rounds 1..6) continues to the full model."""
    import h5py
    import numpy as np

    files, _, _ = tr_data
    args = ("--algo", "msdtra", "--high-error", "clip")
    _train(files, tmp_path / "full.h5", *args, rounds=12)
    ckpt = tmp_path / "ckpt.h5"
    _train(files, tmp_path / "x.h5", *args, "--checkpoint", str(ckpt), "--checkpoint-every", "100", rounds=12)
    # cut the checkpoint back to its first 6 rounds, as a run killed after round 6 leaves it
    from mpiboost.model import Model

    Model.load(ckpt).truncated(6).save(ckpt)
    with h5py.File(ckpt) as f:
        assert np.max(f["ensemble/round"][()]) == 6
    _train(files, tmp_path / "resumed.h5", *args, "--checkpoint", str(ckpt), "--resume", rounds=12, n=2)
    assert _export(tmp_path / "resumed.h5") == _export(tmp_path / "full.h5")


def test_metrics_report_the_weight_drift(tr_data, tmp_path):
    files, _, _ = tr_data
    metrics = tmp_path / "m.jsonl"
    _train(files, tmp_path / "m.h5", "--algo", "msdtra", "--source-update", "paper", "--high-error", "clip", "--metrics",
           str(metrics), n=2, rounds=5)  # the paper's update (C_t, beta_a)
    lines = [json.loads(x) for x in metrics.read_text().splitlines()][:-1]
    assert [r["round"] for r in lines] == [1, 2, 3, 4, 5]
    for r in lines:
        for key in ("eps_sources", "v", "eps_t", "C_t", "beta_t", "target_mass", "source_mass", "source_masses",
                    "train_error", "candidates", "bytes"):
            assert key in r, key
        assert len(r["eps_sources"]) == len(r["source_masses"]) == 3
        assert len(r["v"]) == 4 and 0 <= r["eps_target_candidate"] <= 0.5  # + the target-only candidate
        assert r["C_t"] == pytest.approx(2 * (1 - r["eps_t"]))
        assert r["target_mass"] + r["source_mass"] == pytest.approx(1.0)
        assert "reduce_histograms" in r["bytes"]


def test_adaboost_on_the_target_only(tr_data, tmp_path):
    files, _, _ = tr_data
    _train(files, tmp_path / "a.h5", "--algo", "adaboost", n=2)
    doc = json.loads(_export(tmp_path / "a.h5"))
    assert doc["params"]["train_domain"] == 0


@pytest.mark.parametrize(
    "args,message",
    [
        (["--algo", "msdtra", "--target", "{t}"], "--source"),
        (["--algo", "msdtra", "--source", "{t}"], "--target"),
        (["--algo", "msdtra", "--data", "{t}", "--target", "{t}", "--source", "{t}"], "either"),
        (["--algo", "msdtra", "--weak-learner", "sample", "--target", "{t}", "--source", "{s}"], "histogram"),
        (["--algo", "mstra", "--hard-error", "--target", "{t}", "--source", "{s}"], "--hard-error"),
        (["--algo", "msdtra", "--data", "{s}", "{s2}"], "target"),
        (["--algo", "msdtra", "--data", "{single}", "--target-domain", "nope"], "nope"),
        (["--algo", "smoothboost", "--target", "{t}", "--source", "{s}"], "transfer"),
        (["--algo", "adaboost", "--data", "{t}", "--vote-from", "half"], "not an option of adaboost"),
    ],
)
def test_bad_arguments_exit_2(tr_data, tmp_path, args, message):
    files, single, _ = tr_data
    t, s, s2 = files[1], files[3], files[4]
    argv = [a.format(t=t, s=s, s2=s2, single=single) for a in args]
    proc = run_cli(["train", *argv, "--rounds", "3", "--model", str(tmp_path / "m.h5"), "--quiet"], n=2)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert message in proc.stderr


@pytest.mark.parametrize("n", [1, 3])
def test_target_only_adaboost_counts_the_target_rows_only(tr_data, tmp_path, n):
    """`adaboost --target/--source` trains on the target: its n and train_error are the target's."""
    files, _, _ = tr_data
    model, metrics = tmp_path / "ada.h5", tmp_path / "ada.jsonl"
    _train(files, model, "--algo", "adaboost", "--metrics", str(metrics), rounds=8, n=n)
    records = [json.loads(line) for line in metrics.read_text().splitlines()]
    summary = records[-1]["summary"]
    assert summary["n"] == 60  # the target's rows, not the 60 + 3 x 400 loaded
    target = files[1]
    proc = run_cli(["evaluate", "--model", str(model), "--data", target])
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["n"] == 60
    assert records[-2]["train_error"] == pytest.approx(report["error"], abs=1e-12)
