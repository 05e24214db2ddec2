"""Everyday use: scheduler tasks that MPI does not join are refused; `--metrics -` writes to standard output."""
from __future__ import annotations

import pytest

from mpi_util import run_cli
from mpiboost.cli.train import check_launcher
from mpiboost.errors import CollectiveError


class _One:
    size = 1


class _Two:
    size = 2


def test_slurm_tasks_without_mpi_wiring_are_refused_and_one_process_in_an_allocation_warned(capsys):
    with pytest.raises(CollectiveError, match=r"SLURM_NTASKS=2 but MPI sees 1 rank"):
        check_launcher(_One(), {"SLURM_NTASKS": "2", "SLURM_PROCID": "1"})
    check_launcher(_One(), {"SLURM_NTASKS": "4"})  # a batch script's own process: a warning
    assert "SLURM_NTASKS=4 but this run has 1 rank" in capsys.readouterr().err
    check_launcher(_Two(), {"SLURM_NTASKS": "2", "SLURM_PROCID": "0"})  # wired: two ranks
    check_launcher(_One(), {"SLURM_NTASKS": "1", "SLURM_PROCID": "0"})
    check_launcher(_One(), {"PBS_NP": "x"})  # unreadable counts are ignored
    assert capsys.readouterr().err == ""


def test_a_launcher_of_another_mpi_is_refused_by_its_size_variable():
    """Hydra's mpiexec with an mpi4py on Open MPI (or the reverse): N processes that each see one rank."""
    for var in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MV2_COMM_WORLD_SIZE"):
        with pytest.raises(CollectiveError, match=rf"{var}=3: the launcher started 3 processes but MPI sees 1 rank"):
            check_launcher(_One(), {var: "3"})
    with pytest.raises(CollectiveError, match="started 3 processes but MPI sees 2"):
        check_launcher(_Two(), {"PMI_SIZE": "3"})
    check_launcher(_Two(), {"PMI_SIZE": "2", "OMPI_COMM_WORLD_SIZE": "2"})  # the launcher of mpi4py's MPI
    check_launcher(_One(), {"PMI_SIZE": "1"})
    check_launcher(_One(), {"PMI_SIZE": ""})


@pytest.mark.parametrize("command", [["doctor"], ["train", "--algo", "adaboost", "--rounds", "2", "--model", "m.h5"]])
def test_a_mismatched_launcher_ends_train_and_doctor_with_exit_2_and_one_message(tmp_path, command):
    import probe

    data = tmp_path / "d.h5"
    assert run_cli(["synth", "longservedio", "--n", "300", "--out", str(data)]).returncode == 0
    args = command + (["--data", str(data)] if command[0] == "train" else [])
    env = {"OMPI_COMM_WORLD_SIZE": "3", "OMPI_COMM_WORLD_RANK": "0"}
    proc = probe.run(args, env=env, cwd=tmp_path)
    assert proc.returncode == 2 and "OMPI_COMM_WORLD_SIZE=3: the launcher started 3 processes" in proc.stderr
    assert not probe.lines(proc.stdout, ": round ") and not (tmp_path / "m.h5").exists()
    other = probe.run(args, env={**env, "OMPI_COMM_WORLD_RANK": "2"}, cwd=tmp_path)  # launch rank 2 of the 3
    assert other.returncode == 2 and "mpiboost: error" not in other.stderr  # the message once, from rank 0


def test_no_mpi_library_gives_the_install_hint_and_exit_2(tmp_path):
    """mpi4py installed, no MPI library to load (mpi4py raises RuntimeError "cannot load MPI library")."""
    import subprocess
    import sys

    from mpi_util import mpi_env

    code = """
import sys
class NoLibrary:
    def find_spec(self, name, path=None, target=None):
        if name == "mpi4py.MPI":
            raise RuntimeError("cannot load MPI library")
sys.meta_path.insert(0, NoLibrary())
from mpiboost.cli import main
sys.exit(main(["doctor"]))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=mpi_env(),
                          cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "no MPI library could be loaded (cannot load MPI library)" in proc.stderr
    assert "pip install 'mpiboost[mpich]'" in proc.stderr and "Traceback" not in proc.stderr


def test_the_train_command_refuses_before_any_work(tmp_path):
    data, model = tmp_path / "d.h5", tmp_path / "m.h5"
    assert run_cli(["synth", "longservedio", "--n", "500", "--out", str(data)]).returncode == 0
    proc = run_cli(["train", "--algo", "adaboost", "--rounds", "3", "--data", str(data), "--model", str(model)],
                   env={"SLURM_NTASKS": "2", "SLURM_PROCID": "0"})
    assert proc.returncode == 2 and "are not one MPI job" in proc.stderr and not model.exists()
    proc = run_cli(["train", "--algo", "online-ocor", "--data", str(data), "--model", str(model)],
                   env={"SLURM_NTASKS": "3", "SLURM_PROCID": "0"})
    assert proc.returncode == 2 and "SLURM_NTASKS=3" in proc.stderr and not model.exists()
    proc = run_cli(["train", "--algo", "online-ocor", "--data", str(data), "--model", str(model)],
                   env={"SLURM_NTASKS": "3", "SLURM_PROCID": "2"})  # the other tasks: the same exit, no copy of it
    assert proc.returncode == 2 and proc.stderr == "" and not model.exists()


def test_metrics_dash_writes_the_records_to_standard_output_and_no_file(tmp_path):
    import json

    data, model = tmp_path / "d.h5", tmp_path / "m.h5"
    assert run_cli(["synth", "longservedio", "--n", "400", "--out", str(data)]).returncode == 0
    for algo in (["--algo", "adaboost", "--rounds", "4"], ["--algo", "online-ocor", "--n-learners", "5"]):
        proc = run_cli(["train", *algo, "--data", str(data), "--model", str(model), "--metrics", "-"],
                       cwd=str(tmp_path))
        assert proc.returncode == 0, proc.stderr
        records = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        assert records and "summary" in records[-1 if algo[1] == "adaboost" else -2], proc.stdout
        assert not (tmp_path / "-").exists()


def test_resume_with_fewer_rounds_than_the_checkpoint_reports_their_true_errors(tmp_path):
    import re

    data = tmp_path / "d.h5"
    assert run_cli(["synth", "longservedio", "--n", "1500", "--noise", "0.1", "--out", str(data)]).returncode == 0
    common = ["train", "--algo", "adaboost", "--data", str(data), "--valid-fraction", "0.2", "--quiet"]
    assert run_cli([*common, "--rounds", "8", "--model", str(tmp_path / "m8.h5"),
                    "--checkpoint", str(tmp_path / "c.h5")]).returncode == 0
    resumed = run_cli([*common, "--rounds", "5", "--model", str(tmp_path / "r5.h5"), "--checkpoint",
                       str(tmp_path / "c.h5"), "--resume"])
    fresh = run_cli([*common, "--rounds", "5", "--model", str(tmp_path / "m5.h5")])
    assert resumed.returncode == 0 and fresh.returncode == 0, resumed.stderr
    figures = re.compile(r"train error ([0-9.]+), valid error ([0-9.]+)")
    assert "nan" not in resumed.stdout and figures.search(resumed.stdout), resumed.stdout
    assert figures.search(resumed.stdout).groups() == figures.search(fresh.stdout).groups()
    assert (tmp_path / "r5.h5").read_bytes() == (tmp_path / "m5.h5").read_bytes()


def _csv(path, header, rows):
    path.write_text(",".join(header) + "\n" + "\n".join(",".join(str(v) for v in r) for r in rows) + "\n")


def test_columns_in_another_order_are_refused_at_prediction_naming_them(tmp_path):
    import numpy as np

    rng = np.random.default_rng(0)
    a, b = rng.normal(size=300), rng.normal(size=300)
    label = np.where(a > 0, "yes", "no")
    _csv(tmp_path / "train.csv", ["a", "b", "label"], zip(a.round(4), b.round(4), label))
    _csv(tmp_path / "swapped.csv", ["b", "a", "label"], zip(b.round(4), a.round(4), label))
    for name in ("train", "swapped"):
        proc = run_cli(["convert", str(tmp_path / f"{name}.csv"), "--format", "csv", "--label-column", "label",
                        "--out", str(tmp_path / f"{name}.h5")])
        assert proc.returncode == 0, proc.stderr
    model = str(tmp_path / "m.h5")
    assert run_cli(["train", "--algo", "adaboost", "--rounds", "5", "--data", str(tmp_path / "train.h5"),
                    "--model", model, "--quiet"]).returncode == 0
    for command in (["predict", "--out", str(tmp_path / "p.csv")], ["evaluate"]):
        proc = run_cli([command[0], "--model", model, "--data", str(tmp_path / "swapped.h5"), *command[1:]])
        assert proc.returncode == 2, proc.stdout
        assert "the model's features in another order ('a' is column 1 here, 0 in the model" in proc.stderr
        assert not (tmp_path / "p.csv").exists()
    ok = run_cli(["evaluate", "--model", model, "--data", str(tmp_path / "train.h5")])
    assert ok.returncode == 0, ok.stderr


def test_evaluate_reports_precision_recall_f1_for_two_classes_and_warns_of_unseen_labels(tmp_path):
    import json

    import numpy as np

    rng = np.random.default_rng(1)
    a = rng.normal(size=200)
    _csv(tmp_path / "train.csv", ["a", "label"], zip(a.round(4), np.where(a > 0, "yes", "no")))
    test_labels = np.where(a > 0, "yes", "no").astype(object)
    test_labels[:7] = "maybe"
    _csv(tmp_path / "test.csv", ["a", "label"], zip(a.round(4), test_labels))
    for name in ("train", "test"):
        assert run_cli(["convert", str(tmp_path / f"{name}.csv"), "--format", "csv", "--label-column", "label",
                        "--out", str(tmp_path / f"{name}.h5")]).returncode == 0
    model = str(tmp_path / "m.h5")
    assert run_cli(["train", "--algo", "adaboost", "--rounds", "5", "--data", str(tmp_path / "train.h5"),
                    "--model", model, "--quiet"]).returncode == 0
    proc = run_cli(["evaluate", "--model", model, "--data", str(tmp_path / "test.h5")])
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(report["per_class"]) == {"no", "yes"} and {"precision", "recall", "f1"} <= set(report["per_class"]["yes"])
    assert report["confusion"]["classes"] == ["no", "yes"] and report["unseen"] == {"maybe": 7}
    assert "7 of 200 rows have labels the model does not know ('maybe' (7 rows)" in proc.stderr


def test_an_unlabelled_csv_is_scored_in_two_commands_and_refused_for_training(tmp_path):
    import numpy as np

    rng = np.random.default_rng(2)
    a, b = rng.normal(size=200), rng.normal(size=200)
    _csv(tmp_path / "train.csv", ["a", "b", "label"], zip(a.round(4), b.round(4), np.where(a > b, "up", "down")))
    _csv(tmp_path / "new.csv", ["a", "b"], [(1.0, 0.0), (-1.0, 0.5), ("NA", 2.0)])
    assert run_cli(["convert", str(tmp_path / "train.csv"), "--format", "csv", "--label-column", "label",
                    "--out", str(tmp_path / "train.h5")]).returncode == 0
    model = str(tmp_path / "m.h5")
    assert run_cli(["train", "--algo", "adaboost", "--rounds", "20", "--data", str(tmp_path / "train.h5"),
                    "--model", model, "--quiet"]).returncode == 0
    # the two commands: convert without labels, predict
    conv = run_cli(["convert", str(tmp_path / "new.csv"), "--format", "csv", "--no-label",
                    "--out", str(tmp_path / "new.h5")])
    assert conv.returncode == 0 and "no labels (rows to score)" in conv.stdout, conv.stderr
    pred = run_cli(["predict", "--model", model, "--data", str(tmp_path / "new.h5"), "--out", str(tmp_path / "p.csv")])
    assert pred.returncode == 0, pred.stderr
    out = (tmp_path / "p.csv").read_text().split()
    assert out[:3] == ["prediction", "up", "down"] and len(out) == 4 and out[3] in ("up", "down")  # a: NA, missing
    for command in (["evaluate", "--model", model], ["train", "--algo", "adaboost", "--rounds", "2", "--model",
                                                     str(tmp_path / "x.h5")]):
        proc = run_cli([*command, "--data", str(tmp_path / "new.h5")])
        assert proc.returncode == 2 and "has no labels (converted with --no-label)" in proc.stderr
    bad = run_cli(["convert", str(tmp_path / "new.csv"), "--format", "csv", "--no-label", "--label-column", "a",
                   "--out", str(tmp_path / "y.h5")])
    assert bad.returncode == 2 and "--label-column: not with --no-label" in bad.stderr


def test_labels_are_checked_at_conversion(tmp_path):
    import numpy as np

    rng = np.random.default_rng(3)
    x = rng.normal(size=120)
    out = str(tmp_path / "o.h5")

    def convert(name, *extra):
        return run_cli(["convert", str(tmp_path / name), "--format", "csv", "--out", out, *extra])

    # a column named like the label, not first: the first-column default is refused, naming both
    _csv(tmp_path / "a.csv", ["pixel0", "pixel1", "label"], zip(x.round(3), x.round(2), np.where(x > 0, 1, 0)))
    proc = convert("a.csv")
    assert proc.returncode == 2 and "column 2 'label' looks like the label" in proc.stderr
    assert not (tmp_path / "o.h5").exists()
    assert convert("a.csv", "--label-column", "label").returncode == 0
    # no label-like name: the default is taken, and said
    _csv(tmp_path / "b.csv", ["grade", "x"], zip(np.where(x > 0, "A", "B"), x.round(3)))
    proc = convert("b.csv")
    assert proc.returncode == 0 and "the label is the first column, 'grade'" in proc.stderr
    # one value in every row: refused, no file left
    (tmp_path / "o.h5").unlink()
    _csv(tmp_path / "c.csv", ["label", "x"], zip([0] * 120, x.round(3)))
    proc = convert("c.csv")
    assert proc.returncode == 2 and "holds one value, 0, in all 120 rows" in proc.stderr
    assert not (tmp_path / "o.h5").exists()
    # a continuous target: refused, naming --task regression and --task classification, which each convert it
    _csv(tmp_path / "d.csv", ["target", "x"], zip((x * 100).round(1), x.round(3)))
    proc = convert("d.csv")
    assert proc.returncode == 2 and "distinct numeric values: a continuous target? give --task regression" \
        in proc.stderr and "--task classification" in proc.stderr
    assert not (tmp_path / "o.h5").exists()
    proc = convert("d.csv", "--task", "classification")
    assert proc.returncode == 0 and "distinct numeric values" not in proc.stderr
    proc = convert("d.csv", "--task", "regression")
    assert proc.returncode == 0 and "numeric targets" in proc.stdout


def test_a_latin_1_header_is_refused_naming_the_line_or_read_with_its_encoding(tmp_path):
    import h5py

    path = tmp_path / "l.csv"
    path.write_bytes("label,température\n1,0.5\n0,1.5\n1,2.5\n0,0.1\n".encode("latin-1"))
    out = tmp_path / "l.h5"
    proc = run_cli(["convert", str(path), "--format", "csv", "--out", str(out)])
    assert proc.returncode == 2 and "l.csv:1: bytes b'\\xe9" in proc.stderr and "--encoding latin-1" in proc.stderr
    assert not out.exists()
    proc = run_cli(["convert", str(path), "--format", "csv", "--encoding", "latin-1", "--out", str(out)])
    assert proc.returncode == 0, proc.stderr
    with h5py.File(out, "r") as f:
        names = [n.decode() if isinstance(n, bytes) else str(n) for n in f.attrs["feature_names"]]
    assert names == ["température"]


def test_a_batch_job_logs_its_rounds_on_stderr_once(tmp_path):
    import re

    data = tmp_path / "d.h5"
    assert run_cli(["synth", "longservedio", "--n", "800", "--out", str(data)]).returncode == 0
    base = ["train", "--algo", "adaboost", "--rounds", "20", "--data", str(data), "--model", str(tmp_path / "m.h5")]
    proc = run_cli(base, n=2)  # stderr is a pipe, as in a batch job: a tenth of the rounds, from the center only
    assert proc.returncode == 0, proc.stderr
    lines = re.findall(r"mpiboost: round (\d+)/20, train error [0-9.]+, [0-9.]+ s, [0-9.]+ rounds/s, ETA \d+ s",
                       proc.stderr)
    assert lines == [str(t) for t in range(2, 21, 2)], proc.stderr
    proc = run_cli([*base, "--log-every", "5", "--valid-fraction", "0.2", "--quiet"])
    assert re.findall(r"round (\d+)/20, train error [0-9.]+, valid error", proc.stderr) == ["5", "10", "15", "20"]
    assert "round" not in run_cli([*base, "--quiet"]).stderr
    assert run_cli([*base, "--log-every", "-1"]).returncode == 2


def test_predict_writes_what_the_suffix_says(tmp_path, monkeypatch):
    import sys

    import numpy as np
    import pyarrow.feather as feather
    import pyarrow.parquet as pq

    from mpiboost.errors import InputError
    from mpiboost.evaluate import check_output_format

    data, model = tmp_path / "d.h5", tmp_path / "m.h5"
    assert run_cli(["synth", "longservedio", "--n", "300", "--out", str(data)]).returncode == 0
    assert run_cli(["train", "--algo", "adaboost", "--rounds", "5", "--loss", "logistic", "--weak-learner", "tree",
                    "--data", str(data), "--model", str(model), "--quiet"]).returncode == 0
    base = ["predict", "--model", str(model), "--data", str(data)]
    assert run_cli([*base, "--out", str(tmp_path / "p.parquet")]).returncode == 0
    labels = pq.read_table(tmp_path / "p.parquet").column("prediction").to_pylist()
    assert len(labels) == 300 and set(labels) <= {-1, 1}
    assert run_cli([*base, "--proba", "--out", str(tmp_path / "p.feather")]).returncode == 0
    proba = feather.read_table(tmp_path / "p.feather")
    assert proba.column_names == ["proba_-1", "proba_1"]
    assert np.allclose(np.add(proba.column(0).to_numpy(), proba.column(1).to_numpy()), 1)
    assert run_cli([*base, "--out", str(tmp_path / "p.csv")]).returncode == 0
    assert (tmp_path / "p.csv").read_text().splitlines()[1:] == [str(v) for v in labels]
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as without the parquet extra: refused before any work
    with pytest.raises(InputError, match="written with pyarrow, which is not installed"):
        check_output_format(str(tmp_path / "q.parquet"))
    check_output_format(str(tmp_path / "q.csv"))


def test_sigterm_to_mpiexec_checkpoints_the_current_round_and_resume_gives_the_uninterrupted_model(tmp_path):
    """A real signal under mpiexec -n 3: exit 75, a checkpoint at the round reached, then the same model."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from mpi_util import mpi_env, mpiexec_cmd
    from mpiboost.signals import PREEMPTED_EXIT

    data = tmp_path / "d.h5"
    assert run_cli(["synth", "longservedio", "--n", "30000", "--noise", "0.1", "--out", str(data)]).returncode == 0
    common = ["train", "--algo", "adaboost", "--rounds", "600", "--data", str(data), "--quiet", "--threads", "1"]
    ckpt, metrics = tmp_path / "c.h5", tmp_path / "met.jsonl"
    cmd = mpiexec_cmd(3, [sys.executable, "-m", "mpiboost", *common, "--model", str(tmp_path / "m.h5"),
                          "--checkpoint", str(ckpt), "--checkpoint-every", "100000", "--metrics", str(metrics)])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=mpi_env(),
                            start_new_session=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and (not metrics.exists() or len(metrics.read_text().splitlines()) < 5):
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        os.kill(proc.pid, signal.SIGTERM)  # to mpiexec, which passes it on to the ranks
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == PREEMPTED_EXIT, err
    assert "stopped by SIGTERM after round" in err and "--resume" in err
    assert ckpt.exists() and not (tmp_path / "m.h5").exists()
    resumed = run_cli([*common, "--model", str(tmp_path / "r.h5"), "--checkpoint", str(ckpt), "--resume"], n=3)
    whole = run_cli([*common, "--model", str(tmp_path / "w.h5")], n=3)
    assert resumed.returncode == 0 and whole.returncode == 0, resumed.stderr + whole.stderr
    assert (tmp_path / "r.h5").read_bytes() == (tmp_path / "w.h5").read_bytes()


def test_evaluate_reports_the_split_importance_of_the_features(tmp_path):
    import json

    import numpy as np

    rng = np.random.default_rng(4)
    a, b, c = rng.normal(size=(3, 400))
    _csv(tmp_path / "t.csv", ["label", "signal", "noise", "more"], zip(np.where(a > 0, 1, 0), a.round(4),
                                                                         b.round(4), c.round(4)))
    assert run_cli(["convert", str(tmp_path / "t.csv"), "--format", "csv", "--out", str(tmp_path / "t.h5")]) \
        .returncode == 0
    model = str(tmp_path / "m.h5")
    assert run_cli(["train", "--algo", "adaboost", "--weak-learner", "stump", "--rounds", "10", "--data",
                    str(tmp_path / "t.h5"), "--model", model, "--quiet"]).returncode == 0
    report = json.loads(run_cli(["evaluate", "--model", model, "--data", str(tmp_path / "t.h5")]).stdout
                        .strip().splitlines()[-1])
    imp = report["feature_importance"]
    assert next(iter(imp)) == "signal" and abs(sum(imp.values()) - 1) < 1e-5


def test_a_recipe_converts_later_files_as_the_training_file_was(tmp_path):
    """--recipe TRAIN.h5: the same columns, categories and options; columns matched by name; no label, no y."""
    import numpy as np

    rng = np.random.default_rng(6)
    n = 300
    a, b = rng.normal(size=n).round(3), rng.normal(size=n).round(3)
    city = rng.choice(["Lima", "Oslo", "Pune"], n)
    y = np.where((a > 0) ^ (city == "Oslo"), "yes", "no")
    rows = list(zip(range(n), a, city, b, y))
    _csv(tmp_path / "train.csv", ["id", "a", "city", "b", "income"], rows)
    train = tmp_path / "train.h5"
    proc = run_cli(["convert", str(tmp_path / "train.csv"), "--format", "csv", "--label-column", "income",
                    "--drop-columns", "id", "--categorical", "city", "--out", str(train)])
    assert proc.returncode == 0, proc.stderr
    model = str(tmp_path / "m.h5")
    assert run_cli(["train", "--algo", "adaboost", "--rounds", "30", "--weak-learner", "tree", "--data", str(train),
                    "--model", model, "--quiet"]).returncode == 0
    # new rows: no label, the columns in another order, one city only (its categories come from the recipe)
    new = [(b[i], "Oslo", a[i], 1000 + i) for i in range(20)]
    _csv(tmp_path / "new.csv", ["b", "city", "a", "id"], new)
    proc = run_cli(["convert", str(tmp_path / "new.csv"), "--format", "csv", "--recipe", str(train),
                    "--out", str(tmp_path / "new.h5")])
    assert proc.returncode == 0 and "no labels (rows to score)" in proc.stdout, proc.stderr
    pred = run_cli(["predict", "--model", model, "--data", str(tmp_path / "new.h5"), "--out", str(tmp_path / "p.csv")])
    assert pred.returncode == 0, pred.stderr
    # the same rows as the training file has them (labelled, its column order)
    _csv(tmp_path / "same.csv", ["id", "a", "city", "b", "income"], [(i, a[i], "Oslo", b[i], y[i]) for i in range(20)])
    assert run_cli(["convert", str(tmp_path / "same.csv"), "--format", "csv", "--recipe", str(train),
                    "--out", str(tmp_path / "same.h5")]).returncode == 0
    assert run_cli(["predict", "--model", model, "--data", str(tmp_path / "same.h5"),
                    "--out", str(tmp_path / "q.csv")]).returncode == 0
    assert (tmp_path / "p.csv").read_text() == (tmp_path / "q.csv").read_text()
    ev = run_cli(["evaluate", "--model", model, "--data", str(tmp_path / "same.h5")])
    assert ev.returncode == 0, ev.stderr
    # a column the recipe does not know: refused, naming it
    _csv(tmp_path / "odd.csv", ["a", "city", "b", "id", "extra"], [(1, "Lima", 2, 3, 4)])
    bad = run_cli(["convert", str(tmp_path / "odd.csv"), "--format", "csv", "--recipe", str(train),
                   "--out", str(tmp_path / "odd.h5")])
    assert bad.returncode == 2 and "not in the recipe: extra" in bad.stderr
    none = run_cli(["convert", str(tmp_path / "new.csv"), "--format", "csv", "--recipe", str(tmp_path / "m.h5"),
                    "--out", str(tmp_path / "x.h5")])
    assert none.returncode == 2


def test_parquet_and_npy_are_read_directly(tmp_path):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(7)
    n = 240
    frame = pd.DataFrame({"a": rng.normal(size=n), "city": pd.Categorical(rng.choice(["Lima", "Oslo", "Pune"], n)),
                          "note": rng.choice(["x", "y"], n)})
    frame["label"] = np.where((frame.a > 0) ^ (frame.city == "Oslo"), "yes", "no")
    frame.loc[3, "a"] = np.nan
    frame.to_parquet(tmp_path / "t.parquet")
    train, model = tmp_path / "t.h5", str(tmp_path / "m.h5")
    proc = run_cli(["convert", str(tmp_path / "t.parquet"), "--format", "parquet", "--label-column", "label",
                    "--drop-columns", "note", "--out", str(train)])
    assert proc.returncode == 0 and "labels no:" in proc.stdout, proc.stderr
    assert "city (3 categories)" in run_cli(["info", str(train)]).stdout  # declared categorical: native splits
    assert run_cli(["train", "--algo", "adaboost", "--rounds", "20", "--weak-learner", "tree", "--data", str(train),
                    "--model", model, "--quiet"]).returncode == 0
    # later rows as Feather, other column order, one city, no label: the recipe's codes
    frame.iloc[:30][["note", "city", "a"]].assign(city=lambda f: f.city.astype(str)).reset_index(drop=True) \
        .to_feather(tmp_path / "n.feather")
    assert run_cli(["convert", str(tmp_path / "n.feather"), "--format", "parquet", "--recipe", str(train),
                    "--out", str(tmp_path / "n.h5")]).returncode == 0
    assert run_cli(["predict", "--model", model, "--data", str(tmp_path / "n.h5"), "--out",
                    str(tmp_path / "p.csv")]).returncode == 0
    got = (tmp_path / "p.csv").read_text().split()[1:]
    assert np.mean(np.array(got) == frame.label.to_numpy()[:30]) > 0.8
    assert "labels      none" in run_cli(["info", str(tmp_path / "n.h5")]).stdout
    # .npy rows, and their labels
    np.save(tmp_path / "X.npy", rng.normal(size=(60, 4)))
    np.save(tmp_path / "y.npy", rng.integers(0, 3, 60))
    ok = run_cli(["convert", str(tmp_path / "X.npy"), "--format", "npy", "--labels", str(tmp_path / "y.npy"),
                  "--out", str(tmp_path / "x.h5")])
    assert ok.returncode == 0 and "labels 0:" in ok.stdout, ok.stderr
    np.save(tmp_path / "bad.npy", np.zeros(5))
    bad = run_cli(["convert", str(tmp_path / "bad.npy"), "--format", "npy", "--out", str(tmp_path / "b.h5")])
    assert bad.returncode == 2 and "expected a 2-D array" in bad.stderr
    need = run_cli(["convert", str(tmp_path / "t.parquet"), "--format", "parquet", "--out", str(tmp_path / "q.h5")])
    assert need.returncode == 2 and "give --label-column" in need.stderr


def test_sigterm_to_mpiexec_stops_an_online_pass_cleanly_after_a_block(tmp_path):
    """A real signal under mpiexec -n 3 during the stream: every rank stops after the same block, exit 75, a
    message, and no model, predictions or metrics file (an online pass keeps no checkpoint)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from mpi_util import mpi_env, mpiexec_cmd
    from mpiboost.signals import PREEMPTED_EXIT

    data = tmp_path / "d.h5"
    assert run_cli(["synth", "multiclass", "--n", "60000", "--out", str(data)]).returncode == 0
    out = {k: tmp_path / f"{k}" for k in ("m.h5", "p.csv", "met.jsonl")}
    cmd = mpiexec_cmd(3, [sys.executable, "-m", "mpiboost", "train", "--algo", "online-agnostic", "--data", str(data),
                          "--model", str(out["m.h5"]), "--predictions", str(out["p.csv"]), "--metrics",
                          str(out["met.jsonl"]), "--quiet", "--threads", "1"])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=mpi_env(),
                            start_new_session=True)
    try:
        deadline = time.time() + 120
        # the predictions' temporary file fills as the stream goes: the handler is in place by then
        while time.time() < deadline and not any(p.name.startswith(".p.csv.") and p.stat().st_size > 0
                                                 for p in tmp_path.iterdir()):
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        os.kill(proc.pid, signal.SIGTERM)
        stdout, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == PREEMPTED_EXIT, err
    assert "stopped by SIGTERM after" in err and "of 60,000 examples" in err and "no model was saved" in err, err
    assert not any(p.exists() for p in out.values())
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left behind
