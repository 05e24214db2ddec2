"""A model no better than a coin (or the majority class) on its own training rows is never saved silently.

The case from the SmoothBoost paper's own data: Long-Servedio at 1% noise, ``--rounds 100 --beta 0.2
--epsilon 0.1`` with gamma = 0.02 (the stump default of 1,000 rounds, before the default followed
the rounds) ends with a vote that is right on half the rows; the run still saves the model (a legitimate result of the parameters), but says so on stderr
and in the metrics summary, with what to change. A useful model (gamma = 0.15) is not flagged.
"""
import json

from mpiboost import cli


def _run(*args) -> int:
    return cli.main([str(a) for a in args])


def test_a_vote_no_better_than_chance_is_flagged(tmp_path, capsys):
    data = tmp_path / "ls.h5"
    assert _run("synth", "longservedio", "--n", 20000, "--noise", 0.01, "--seed", 1, "--out", data) == 0
    capsys.readouterr()
    base = ["train", "--algo", "smoothboost", "--weak-learner", "stump", "--noise-check", "off", "--rounds", 100,
            "--beta", 0.2, "--epsilon", 0.1, "--data", data]
    metrics = tmp_path / "m.jsonl"
    assert _run(*base, "--gamma", 0.02, "--model", tmp_path / "m.h5", "--metrics", metrics) == 0
    err = capsys.readouterr().err
    assert "warning: the model's training error 0.49" in err and "gamma = 0.02" in err, err
    summary = json.loads(open(metrics).read().splitlines()[-1])["summary"]
    assert "no better than" in summary["warning"]
    assert (tmp_path / "m.h5").exists()
    # the paper's gamma, and the default for 100 rounds, learn the same data: no warning
    for gamma in (("--gamma", 0.15), ()):
        assert _run(*base, *gamma, "--model", tmp_path / "g.h5", "--metrics", metrics) == 0
        assert "warning" not in capsys.readouterr().err
        assert json.loads(open(metrics).read().splitlines()[-1])["summary"]["warning"] is None


def test_the_noise_check_replaces_a_vote_no_better_than_chance(tmp_path, capsys):
    """The same run with the default --noise-check holdout: on held-out rows the coin-like SmoothBoost vote loses
    to AdaBoost by far more than a standard error, so the model is AdaBoost's, and it is not flagged."""
    from mpiboost.model import Model

    data = tmp_path / "ls.h5"
    assert _run("synth", "longservedio", "--n", 20000, "--noise", 0.01, "--seed", 1, "--out", data) == 0
    assert _run("train", "--algo", "smoothboost", "--weak-learner", "stump", "--rounds", 100, "--beta", 0.2,
                "--epsilon", 0.1, "--gamma", 0.02, "--data", data, "--model", tmp_path / "m.h5") == 0
    assert "warning" not in capsys.readouterr().err
    m = Model.load(str(tmp_path / "m.h5"))
    rec = m.info["noise_check"]
    assert m.algorithm == "adaboost" and rec["chosen"] == "adaboost", rec
    assert rec["tried"]["algorithm"]["error"] > 0.4 > rec["tried"]["adaboost"]["error"], rec
