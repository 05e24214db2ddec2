"""Preemption during a selection phase: any number of SIGTERMs at any moment, then ``--resume``, gives the
model of the uninterrupted run, byte for byte.

The phases (the noise check, ``--epsilon auto``, the source screen and folds of a transfer run, a grid search
over two ``auto`` parameters) train candidates through the round loop that obeys the signal. A signal is only
recorded by its handler and acted on where the ranks next agree on it (after a round), so every moment a signal
can arrive falls between two such checks: "SIGTERM at the end of the K-th round the process runs" (counted over
every round loop, the candidates' too) for K drawn over the whole run covers every outcome a signal at a random
moment can have. Each draw interrupts the run at K, then resumes it, sometimes with a second signal, until it
ends; the model must be the uninterrupted one. In process (one rank) for 20 draws per phase, and under
``mpiexec`` on 3 ranks resumed on 2, then 1.
"""
from __future__ import annotations

import os
import signal

import numpy as np
import pytest

from mpi_util import run_cli
from mpiboost.signals import PREEMPTED_EXIT

DRAWS = 20

# phase -> (synth arguments, train arguments, the phase's name in the preemption message: one of a "|"-list
# where the run makes several phases, as the grid search's run is then guarded against its baselines)
PHASES = {
    "noise check": (["longservedio", "--n", "1500", "--noise", "0.1", "--seed", "1"],
                    ["--algo", "smoothboost", "--rounds", "8"], "noise check"),
    "epsilon auto": (["longservedio", "--n", "1500", "--noise", "0.1", "--seed", "1"],
                     ["--algo", "smoothboost", "--epsilon", "auto", "--valid-fraction", "0.2", "--rounds", "8"],
                     "search of --epsilon auto"),
    "source trust": (["transfer", "--n", "300", "--target-n", "40", "--sources", "2", "--seed", "1"],
                     ["--algo", "msdtra", "--rounds", "6", "--source-folds", "3"], "source "),
    "grid search": (["multitask", "--n", "200", "--seed", "1"],
                    ["--algo", "is-multitask", "--lambda", "auto", "--lambda-grid", "0,0.1", "--start", "auto",
                     "--valid-fraction", "0.2", "--rounds", "6"], "search of --lambda auto, --start auto|baseline guard"),
}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("phases")
    out = {}
    for name, (synth, _, _) in PHASES.items():
        path = folder / f"{synth[0]}.h5"
        if not path.exists():
            assert run_cli(["synth", *synth, "--out", str(path)]).returncode == 0
        out[name] = path
    return out


class _Signaller:
    """Counts the rounds the process runs (every round loop) and sends SIGTERM to itself at the K-th."""

    def __init__(self, monkeypatch):
        from mpiboost.driver import rounds

        self.at, self.count = None, 0
        original = rounds.round_metrics

        def counted(*args, **kwargs):
            out = original(*args, **kwargs)
            self.count += 1
            if self.count == self.at:
                os.kill(os.getpid(), signal.SIGTERM)  # recorded by the CLI's handler, acted on where the ranks agree
            return out

        monkeypatch.setattr(rounds, "round_metrics", counted)

    def train(self, args, at=None, capsys=None) -> tuple[int, str]:
        from mpiboost import signals
        from mpiboost.cli import main

        self.at, self.count = at, 0
        try:
            code = main(["train", *args, "--quiet"])
        finally:
            signals.uninstall()  # the test process's own handlers back
        err = capsys.readouterr().err if capsys is not None else ""
        return code, err


@pytest.mark.parametrize("phase", list(PHASES))
def test_any_sigterm_in_a_selection_phase_then_resume_gives_the_uninterrupted_model(phase, data, tmp_path,
                                                                                  monkeypatch, capsys):
    _, train_args, name = PHASES[phase]
    base = [*train_args, "--data", str(data[phase])]
    sig = _Signaller(monkeypatch)
    whole = tmp_path / "whole.h5"
    assert sig.train([*base, "--model", str(whole)], capsys=capsys)[0] == 0
    total = sig.count  # the rounds of the phase's candidates and of the model
    assert total > 10
    expected = whole.read_bytes()
    rng = np.random.default_rng(list(PHASES).index(phase))
    in_phase = 0
    for draw in range(DRAWS):
        model, ckpt = tmp_path / f"m{draw}.h5", tmp_path / f"c{draw}.h5"
        run = [*base, "--model", str(model), "--checkpoint", str(ckpt), "--checkpoint-every", "3"]
        at = int(rng.integers(1, total + 1))
        code, err = sig.train(run, at, capsys)
        stops = 0
        while code == PREEMPTED_EXIT:
            assert not model.exists()
            if "during the" in err:  # stopped in the phase: nothing chosen, nothing kept
                assert any(n in err for n in name.split("|")) and "no choice was recorded" in err, err
                assert not ckpt.exists()
                in_phase += stops == 0
            else:
                assert "stopped by SIGTERM after round" in err and ckpt.exists(), err
            stops += 1
            again = int(rng.integers(1, total + 1)) if stops < 3 and rng.random() < 0.5 else None
            code, err = sig.train([*run, "--resume"], again, capsys)
        assert code == 0, err
        assert model.read_bytes() == expected, f"draw {draw}: SIGTERM at round call {at}, {stops} stop(s)"
    assert in_phase >= 3  # the draws fell in the phase, not only in the model's rounds


@pytest.mark.mpi
@pytest.mark.parametrize("phase", ["noise check", "source trust"])
def test_sigterm_in_a_phase_on_3_ranks_resumed_on_2_then_1_gives_the_one_rank_model(phase, data, tmp_path):
    """Stopped in the phase on 3 ranks (one rank signalled), then in the model's rounds on 2 (every rank), then
    finished on 1: the model of an uninterrupted run on 1 rank."""
    import probe

    _, train_args, name = PHASES[phase]
    base = ["train", *train_args, "--data", str(data[phase]), "--quiet", "--threads", "1"]
    whole = probe.run([*base, "--model", str(tmp_path / "w.h5")])
    assert whole.returncode == 0, whole.stderr
    total = len(probe.lines(whole.stdout, ": round "))  # every round loop's rounds, the candidates' too
    run = [*base, "--model", str(tmp_path / "m.h5"), "--checkpoint", str(tmp_path / "c.h5"), "--checkpoint-every", "2"]
    first = probe.run(run, n=3, env={"PROBE_SIGNAL": "1:3"})  # a scheduler's signal may reach one rank first
    assert first.returncode == PREEMPTED_EXIT, first.stderr
    assert name in first.stderr and "no choice was recorded" in first.stderr, first.stderr
    assert not (tmp_path / "c.h5").exists() and not (tmp_path / "m.h5").exists()
    second = probe.run([*run, "--resume"], n=2, env={"PROBE_SIGNAL": f"all:{total - 2}"})  # the model's rounds
    assert second.returncode == PREEMPTED_EXIT, second.stderr
    assert "stopped by SIGTERM after round" in second.stderr and (tmp_path / "c.h5").exists(), second.stderr
    third = probe.run([*run, "--resume"], n=1)
    assert third.returncode == 0, third.stderr
    assert (tmp_path / "m.h5").read_bytes() == (tmp_path / "w.h5").read_bytes()


@pytest.mark.mpi
def test_a_sigterm_while_mpi_starts_stops_after_the_first_round_with_its_checkpoint(data, tmp_path):
    """A requeued job's start-up (imports, MPI_Init, loading) is not a window where SIGTERM kills the ranks with
    nothing saved: the signal waits for the first round's end (exit 75, a checkpoint), and --resume gives the
    uninterrupted model."""
    import probe

    base = ["train", "--algo", "adaboost", "--rounds", "12", "--data", str(data["noise check"]), "--quiet",
            "--threads", "1"]
    whole = probe.run([*base, "--model", str(tmp_path / "w.h5")])
    assert whole.returncode == 0, whole.stderr
    run = [*base, "--model", str(tmp_path / "m.h5"), "--checkpoint", str(tmp_path / "c.h5"), "--checkpoint-every", "5"]
    first = probe.run(run, n=2, env={"PROBE_SIGNAL": "all:start"})
    assert "SIGTERM while MPI starts" in first.stdout, first.stdout
    assert first.returncode == PREEMPTED_EXIT, (first.returncode, first.stderr)
    assert "stopped by SIGTERM after round 1 " in first.stderr and (tmp_path / "c.h5").exists(), first.stderr
    second = probe.run([*run, "--resume"], n=2)
    assert second.returncode == 0, second.stderr
    assert (tmp_path / "m.h5").read_bytes() == (tmp_path / "w.h5").read_bytes()
