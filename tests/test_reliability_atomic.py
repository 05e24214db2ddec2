"""Outputs are atomic: each is written to a temporary file beside its target and renamed over it when complete.

For every kind of output (models, checkpoints, predictions, converted and
generated data, the metrics log rewritten on a resume) the rename is
watched: just before it, a reader of the target still gets the previous
file, and the new bytes lie complete in a temporary of mpiboost's naming
in the same directory. A write that fails part-way leaves the previous file
byte for byte and no temporary; a process killed while writing leaves the
previous file, and its temporary is removed by the next run's output check.
"""
from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from mpiboost import atomic
from mpiboost import callbacks as cb
from mpiboost.cli import main
from mpiboost.data import format as fmt
from mpiboost.data.convert.libsvm import convert_libsvm
from mpiboost.errors import InputError
from mpiboost.evaluate import write_predictions
from mpiboost.model import Model

PREVIOUS = b"the previous file, which must survive"
LOG = b"".join(json.dumps({"round": t}).encode() + b"\n" for t in (1, 2, 3))  # the previous metrics log


def _previous(kind: str) -> bytes:
    return LOG if kind == "metrics-rewrite" else PREVIOUS


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Model:
    w = tmp_path_factory.mktemp("atomic")
    assert main(["synth", "longservedio", "--n", "300", "--seed", "1", "--out", str(w / "d.h5")]) == 0
    assert main(["train", "--algo", "adaboost", "--data", str(w / "d.h5"), "--rounds", "4", "--model",
                 str(w / "m.h5"), "--quiet"]) == 0
    return Model.load(w / "m.h5")


def _temporaries(folder: Path) -> list:
    return sorted(p.name for p in folder.iterdir() if atomic._STALE.match(p.name))


def _writers(model: Model, tmp_path: Path) -> dict:
    """Each output kind: (target name, a function that writes it)."""
    src = tmp_path / "in.svm"
    src.write_text("+1 1:0.5 3:2\n-1 2:1.5\n+1 1:1 4:-3\n")

    def checkpoint(path):
        w = cb.Checkpoint(path, every=1)
        w.on_train_end(cb.RoundEnv(t=model.n_rounds, rounds=model.n_rounds, model=model, is_center=True,
                                   run={"seed": 0, "data": []}))
        if w.failure:
            raise OSError(w.failure)

    return {
        "model": ("m.h5", model.save),
        "checkpoint": ("c.h5", checkpoint),
        "predictions-npy": ("p.npy", lambda p: write_predictions(str(p), np.arange(1000), "prediction")),
        "predictions-csv": ("p.csv", lambda p: write_predictions(str(p), np.arange(1000), "prediction")),
        "converted": ("c.h5", lambda p: convert_libsvm(src, p, n_features=4)),  # one pass: rows written as read
        "generated": ("g.h5", lambda p: fmt.write_dataset(p, np.zeros((50, 3)), np.ones(50))),
        # a resumed run keeps the log's rounds up to its checkpoint's
        "metrics-rewrite": ("met.jsonl", lambda p: cb.keep_rounds_up_to(str(p), 2)),
    }


KINDS = ["model", "checkpoint", "predictions-npy", "predictions-csv", "converted", "generated", "metrics-rewrite"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_reader_sees_the_previous_file_until_the_complete_one_is_renamed_over_it(model, tmp_path, kind,
                                                                                    monkeypatch):
    name, write = _writers(model, tmp_path)[kind]
    target = tmp_path / name
    target.write_bytes(_previous(kind))
    before = target.read_bytes()
    seen = []
    real = os.replace

    def watched(src, dst):
        if os.path.abspath(dst) == str(target):
            seen.append((os.fspath(src), Path(dst).read_bytes(), Path(src).read_bytes()))
        return real(src, dst)

    monkeypatch.setattr(os, "replace", watched)
    write(target)
    assert len(seen) == 1, seen  # the new file arrives by one rename
    src, at_rename, new = seen[0]
    assert at_rename == before  # up to the rename, a reader gets the previous file
    assert Path(src).parent == target.parent  # beside the target (a rename, not a copy across file systems)
    m = atomic._STALE.match(Path(src).name)
    assert m and m["base"] == name and int(m["pid"]) == os.getpid(), src  # our naming: a dead run's is removed
    assert target.read_bytes() == new != before  # and it arrived complete
    assert _temporaries(tmp_path) == []


def _fail_midway(monkeypatch, kind: str, src: Path) -> None:
    """Make ``kind``'s write fail after part of it was written (a disk that filled during it)."""
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    if kind in ("model", "checkpoint"):
        monkeypatch.setattr(os, "fsync", full)  # the bytes are written; flushing them to disk fails
    elif kind in ("predictions-npy", "predictions-csv"):
        fn = "save" if kind == "predictions-npy" else "savetxt"
        real = getattr(np, fn)

        def half(f, values, *args, **kwargs):
            real(f, values[: len(values) // 2], *args, **kwargs)
            f.flush()
            full()

        monkeypatch.setattr(np, fn, half)
    elif kind == "converted":
        src.write_text("+1 1:0.5 3:2\n-1 2:1.5\n" * 500 + "+1 1:1 x:-3\n")  # the last line is bad
    elif kind == "metrics-rewrite":
        monkeypatch.setattr(os, "replace", full)  # the rename itself fails


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "generated"] + ["generated-bad-labels"])
def test_a_write_that_fails_leaves_the_previous_file_and_no_temporary(model, tmp_path, kind, monkeypatch):
    if kind == "generated-bad-labels":
        name, write = "g.h5", lambda p: fmt.write_dataset(p, np.zeros((50, 3)), np.full(50, 1000), y_dtype=np.int8)
    else:
        name, write = _writers(model, tmp_path)[kind]
    target = tmp_path / name
    target.write_bytes(_previous(kind))
    _fail_midway(monkeypatch, kind, tmp_path / "in.svm")
    with pytest.raises((OSError, InputError)):
        write(target)
    monkeypatch.undo()
    assert target.read_bytes() == _previous(kind)
    assert _temporaries(tmp_path) == []


def test_a_process_killed_while_writing_leaves_the_previous_file(tmp_path):
    """kill -9 mid-write: the target is the previous file; the dead run's temporary goes at the next check."""
    target = tmp_path / "m.h5"
    target.write_bytes(PREVIOUS)
    script = textwrap.dedent(f"""
        import os, sys, time
        from mpiboost import atomic

        def stuck(fd):
            print("writing", flush=True)
            time.sleep(3600)

        os.fsync = stuck
        atomic.write_bytes({str(target)!r}, b"new model " * 10000)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "writing"
        assert target.read_bytes() == PREVIOUS  # the new bytes are elsewhere
        left = _temporaries(tmp_path)
        assert len(left) == 1 and (tmp_path / left[0]).stat().st_size == 100000, left
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    assert target.read_bytes() == PREVIOUS
    from mpiboost.outputs import check_outputs

    check_outputs([("--model", str(target))], [])  # what the next run does first
    assert _temporaries(tmp_path) == [] and target.read_bytes() == PREVIOUS


def test_the_metrics_log_is_a_flushed_stream(tmp_path):
    """One JSON line per round, in the file as soon as the round ends (a reader or a kill sees every round)."""
    path = tmp_path / "met.jsonl"
    log = cb.MetricsLog(path)
    env = cb.RoundEnv(t=0, rounds=3, model=None, is_center=True)
    log.on_train_begin(env)
    for t in (1, 2, 3):
        env.t, env.metrics = t, {"round": t, "train_error": 0.5}
        log.on_round_end(env)
        assert [json.loads(line)["round"] for line in path.read_text().splitlines()] == list(range(1, t + 1))
    log.on_train_end(env)
    assert log.failure is None
