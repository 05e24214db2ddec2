"""`mpiboost plot` (curves from a metrics log) and `export --format importance`."""
from __future__ import annotations

import json

import numpy as np
import pytest

from mpi_util import run_cli

pytest.importorskip("matplotlib")  # in the test extra: CI has it

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def multiboost_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("plot")
    train, test = d / "train.h5", d / "test.h5"
    assert run_cli(["synth", "multisource", "--n", "3000", "--seed", "1", "--out", str(train)]).returncode == 0
    assert run_cli(["synth", "multisource", "--n", "1500", "--seed", "2", "--out", str(test)]).returncode == 0
    # a MultiBoost model whatever its guard would choose: the plot of its domains' curves is what is tested
    proc = run_cli(["train", "--algo", "multiboost", "--rounds", "25", "--data", str(train), "--valid-fraction",
                    "0.2", "--baseline-guard", "off", "--model", str(d / "m.h5"), "--metrics", str(d / "m.jsonl"),
                    "--quiet"])
    assert proc.returncode == 0, proc.stderr
    return d


def _per_domain_errors(model, path):
    """The slow twin: each domain's error of the model's own predictions on ``path``."""
    import h5py

    with h5py.File(path, "r") as f:
        X = np.asarray(f["X"][...], dtype=np.float64)
        y = np.asarray(f["y"][...])
        dom = np.asarray(f["domain"][...])
    pred = model.predict(X)
    return np.array([np.mean(pred[dom == k] != y[dom == k]) for k in np.unique(dom)])


def test_plot_draws_the_four_panels_and_the_domains_curves_end_at_the_models_errors(multiboost_run):
    from mpiboost import plot
    from mpiboost.model import Model

    d = multiboost_run
    out = d / "curves.png"
    proc = run_cli(["plot", str(d / "m.jsonl"), "--out", str(out), "--model", str(d / "m.h5"),
                    "--data", str(d / "test.h5")])
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["panels"] == ["errors", "weights", "time", "groups"]
    assert out.read_bytes()[:8] == PNG and out.stat().st_size > 20_000
    model = Model.load(d / "m.h5")
    curves = plot.group_curves(model, [str(d / "test.h5")])
    assert curves.staged and curves.rounds[-1] == 25 and curves.errors.shape == (3, 25)
    np.testing.assert_allclose(curves.errors[:, -1], _per_domain_errors(model, d / "test.h5"))
    # every staged point is the model cut at that round
    cut = model.truncated(10)
    np.testing.assert_allclose(curves.errors[:, 9], _per_domain_errors(cut, d / "test.h5"))
    # without --model, the log's own per-domain figures (MultiBoost's domain errors) fill the panel
    proc = run_cli(["plot", str(d / "m.jsonl"), "--out", str(d / "c.svg")])
    assert proc.returncode == 0 and json.loads(proc.stdout)["panels"][-1] == "groups", proc.stderr
    assert b"<svg" in (d / "c.svg").read_bytes()[:400]


def test_a_model_whose_vote_depends_on_every_round_gets_its_final_errors_only(tmp_path):
    from mpiboost import plot
    from mpiboost.model import Model

    data, test = tmp_path / "t.h5", tmp_path / "tt.h5"
    assert run_cli(["synth", "transfer", "--n", "1500", "--target-n", "40", "--out", str(data)]).returncode == 0
    assert run_cli(["synth", "transfer", "--n", "1500", "--target-n", "500", "--seed", "2",
                    "--out", str(test)]).returncode == 0
    proc = run_cli(["train", "--algo", "msdtra", "--rounds", "8", "--data", str(data), "--model",
                    str(tmp_path / "m.h5"), "--metrics", str(tmp_path / "m.jsonl"), "--quiet"])
    assert proc.returncode == 0, proc.stderr
    model = Model.load(tmp_path / "m.h5")
    curves = plot.group_curves(model, [str(test)])
    assert not curves.staged and list(curves.rounds) == [8]
    np.testing.assert_allclose(curves.errors[:, 0], _per_domain_errors(model, test))
    proc = run_cli(["plot", str(tmp_path / "m.jsonl"), "--out", str(tmp_path / "c.pdf"), "--model",
                    str(tmp_path / "m.h5"), "--data", str(test)])
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "c.pdf").read_bytes()[:4] == b"%PDF"


def test_plot_reads_online_logs_and_several_logs_at_once(tmp_path):
    data = tmp_path / "d.h5"
    assert run_cli(["synth", "longservedio", "--n", "600", "--out", str(data)]).returncode == 0
    for algo in (["--algo", "online-ocor", "--n-learners", "5"], ["--algo", "adaboost", "--rounds", "5"],
                 ["--algo", "smoothboost", "--rounds", "5"]):
        proc = run_cli(["train", *algo, "--data", str(data), "--model", str(tmp_path / f"{algo[1]}.h5"),
                        "--metrics", str(tmp_path / f"{algo[1]}.jsonl"), "--quiet"])
        assert proc.returncode == 0, proc.stderr
    proc = run_cli(["plot", str(tmp_path / "online-ocor.jsonl"), "--out", str(tmp_path / "o.png")])
    assert proc.returncode == 0 and json.loads(proc.stdout)["panels"] == ["errors", "time"], proc.stderr
    proc = run_cli(["plot", str(tmp_path / "adaboost.jsonl"), str(tmp_path / "smoothboost.jsonl"),
                    "--out", str(tmp_path / "two.png"), "--title", "AdaBoost and SmoothBoost"])
    assert proc.returncode == 0 and (tmp_path / "two.png").read_bytes()[:8] == PNG, proc.stderr


def test_plot_refuses_bad_input_before_drawing(multiboost_run, tmp_path):
    d = multiboost_run
    log = str(d / "m.jsonl")
    cases = [
        (["plot", str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "a.png")], "none.jsonl: cannot read"),
        (["plot", log, "--out", str(tmp_path / "a.jpg")], "one of .png, .pdf, .svg"),
        (["plot", log, "--out", log + ".png", "--model", str(d / "m.h5")], "--model and --data come together"),
        (["plot", log, "--out", str(tmp_path / "a.png"), "--model", str(d / "m.h5"), "--data", log], "m.jsonl"),
    ]
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"summary": {}}\nnot json\n')
    cases.append((["plot", str(empty), "--out", str(tmp_path / "a.png")], "no round records"))
    # the figure may not overwrite an input
    cases.append((["plot", str(empty), log, "--out", str(empty)], "--out"))
    for args, words in cases:
        proc = run_cli(args)
        assert proc.returncode == 2 and words in proc.stderr, (args, proc.stderr)
    assert not (tmp_path / "a.png").exists() and empty.read_text().startswith('{"summary"')
    # under mpiexec the scoring process would wait at MPI's start for ranks that never come: refused, no hang
    proc = run_cli(["plot", log, "--out", str(tmp_path / "a.png"), "--model", str(d / "m.h5"), "--data",
                    str(d / "test.h5")], n=2, timeout=120)
    assert proc.returncode == 2 and "plot is a serial command" in proc.stderr, proc.stderr
    # a line cut short (a killed run) is skipped and counted, the rest drawn
    cut = tmp_path / "cut.jsonl"
    cut.write_text((d / "m.jsonl").read_text().splitlines()[0] + '\n{"examples": 7}\n{"round": 2, "train_er')
    proc = run_cli(["plot", str(cut), "--out", str(tmp_path / "cut.png")])
    assert proc.returncode == 0 and "2 lines that are not round records skipped" in proc.stderr, proc.stderr


def test_export_writes_the_split_importance_as_csv_and_in_the_lightgbm_model(multiboost_run, tmp_path):
    lightgbm = pytest.importorskip("lightgbm")
    from mpiboost.model import Model

    data = tmp_path / "d.h5"
    assert run_cli(["synth", "longservedio", "--n", "2000", "--noise", "0.1", "--out", str(data)]).returncode == 0
    for weak in (["--weak-learner", "stump"], ["--weak-learner", "tree", "--max-leaves", "6"]):
        proc = run_cli(["train", "--algo", "adaboost", "--rounds", "12", *weak, "--data", str(data), "--model",
                        str(tmp_path / "m.h5"), "--quiet"])
        assert proc.returncode == 0, proc.stderr
        model = Model.load(tmp_path / "m.h5")
        proc = run_cli(["export", "--model", str(tmp_path / "m.h5"), "--format", "importance"])
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.strip().splitlines()
        assert lines[0] == "feature,split,split_share,gain" and len(lines) == 1 + model.n_features
        split = {ln.split(",")[0]: int(ln.split(",")[1]) for ln in lines[1:]}
        names = model.feature_names or [f"x{j}" for j in range(model.n_features)]
        assert [split[str(n)] for n in names] == model.feature_importances("split").astype(int).tolist()
        counts = [int(ln.split(",")[1]) for ln in lines[1:]]
        assert counts == sorted(counts, reverse=True) and sum(counts) > 0
        assert abs(sum(float(ln.split(",")[2]) for ln in lines[1:]) - 1) < 1e-4
        out = tmp_path / "m.txt"
        proc = run_cli(["export", "--model", str(tmp_path / "m.h5"), "--format", "lightgbm", "--out", str(out)])
        assert proc.returncode == 0, proc.stderr
        text = out.read_text()
        assert "\nfeature_importances:\n" in text
        block = text.split("\nfeature_importances:\n")[1].split("\n\n")[0].splitlines()
        assert {ln.split("=")[0]: int(ln.split("=")[1]) for ln in block} == {k: v for k, v in split.items() if v}
        lightgbm.Booster(model_file=str(out))  # still a model LightGBM reads
    online = tmp_path / "o.h5"
    assert run_cli(["train", "--algo", "online-ocor", "--n-learners", "3", "--data", str(data), "--model",
                    str(online), "--quiet"]).returncode == 0
    proc = run_cli(["export", "--model", str(online), "--format", "importance"])
    assert proc.returncode == 2 and "keeps no split counts" in proc.stderr


def test_info_describes_a_model_file_as_well_as_a_data_file(multiboost_run):
    import mpiboost

    d = multiboost_run
    proc = run_cli(["info", str(d / "m.h5"), "--json"])
    assert proc.returncode == 0, proc.stderr
    facts = json.loads(proc.stdout)
    assert facts["algorithm"] == "multiboost" and facts["rounds"] == 25 and facts["kind"] == "batch"
    assert facts["mpiboost_version"] == mpiboost.__version__ and len(facts["domains"]) == 3
    assert sum(facts["most_used_features"].values()) <= 25 * 30  # 25 rounds of trees of at most 31 leaves
    proc = run_cli(["info", str(d / "m.h5"), str(d / "test.h5")])
    assert proc.returncode == 0 and "batch model" in proc.stdout and "rows        1,500" in proc.stdout, proc.stderr
