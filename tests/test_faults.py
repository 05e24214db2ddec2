"""Faults and hostile input end cleanly: exit code 2 and a message, before the work or with nothing lost.

Each case asserts the exit code, the message, that every file that existed
before is byte-identical afterwards and, where a refusal must come before
the work, that it did: the runs go through ``tests/probe.py``, the real
command with its entries of work (reading the data, the rounds, MPI_Init)
reporting themselves, so a check that ran after the rounds fails the test
however fast the machine. Write faults need no privileges: a directory
renamed or removed mid-run (a lost mount), a file-size limit (a full disk),
a FIFO and a link to a device. Process faults (kills of the center, an
entity or ``mpiexec``; a stopped rank) run a long training job and strike
once it is in its rounds; their bounds are hang guards, scaled to the
machine's speed (``tests/machine_speed.py``).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import probe
from machine_speed import seconds as scaled
from mpi_util import mpi_env, mpiexec, mpiexec_cmd, run_cli

pytestmark = pytest.mark.mpi

CLI = [sys.executable, "-m", "mpiboost"]


def _digest(folder: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def _unchanged(before: dict, folder: Path) -> None:
    after = _digest(folder)
    for name, h in before.items():
        assert after.get(name) == h, f"{name} was changed or removed"


def _no_temporaries(*folders: Path) -> None:
    for folder in folders:
        left = [p.name for p in folder.iterdir() if ".mpiboost-" in p.name and p.name.endswith(".tmp")]
        assert not left, (folder, left)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("faults")
    proc = run_cli(["synth", "longservedio", "--n", "20000", "--noise", "0.1", "--seed", "1", "--out", str(d / "d.h5")])
    assert proc.returncode == 0, proc.stderr
    proc = run_cli(["synth", "longservedio", "--n", "20000", "--noise", "0.1", "--seed", "2", "--out", str(d / "e.h5")])
    assert proc.returncode == 0, proc.stderr
    return d


@pytest.fixture
def work(data, tmp_path):
    for name in ("d.h5", "e.h5"):
        (tmp_path / name).write_bytes((data / name).read_bytes())
    return tmp_path


def _train(work: Path, *extra: str, n: int = 2, rounds: int = 10, env=None, cwd=None):
    """``mpiboost train`` through the probe (its stdout says what work was done); the timeout is a hang guard."""
    args = ["train", "--algo", "adaboost", "--data", str(work / "d.h5"), "--rounds", str(rounds), "--quiet", *extra]
    if "--model" not in extra:
        args += ["--model", str(work / "m.h5")]
    return probe.run(args, n=n, timeout=scaled(120), env=env, cwd=cwd)


def _refused(proc, *words: str, before: str = "", ranks: int = 0) -> None:
    """Exit 2 with one message holding ``words``; ``before``: "mpi", "work" or "rounds", what it came before.

    ``ranks``: that many ranks all returned 2 (an agreed error: every rank exits cleanly).
    """
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.stderr.count("mpiboost: error:") == 1, proc.stderr
    for w in words:
        assert w in proc.stderr, (w, proc.stderr)
    if before in ("mpi", "work"):
        assert not probe.worked(proc.stdout), probe.lines(proc.stdout)
    if before == "rounds":
        assert not probe.lines(proc.stdout, ": round "), probe.lines(proc.stdout)
    if ranks:
        exits = probe.exits(proc.stdout)
        assert sorted(exits) == list(range(ranks)), exits
        assert all(code == 2 for code, _ in exits.values()), exits
        if before == "mpi":
            assert not any(started for _, started in exits.values()), exits


# ------------------------------------------------------------ arguments
@pytest.mark.parametrize(
    "extra,words",
    [
        (["--checkpoint-every", "0", "--checkpoint", "c.h5"], ["--checkpoint-every"]),
        (["--checkpoint-every", "3"], ["--checkpoint-every needs --checkpoint"]),
        (["--threads", "-1"], ["--threads"]),
        (["--threads", "1000000"], ["--threads"]),
        (["--seed", "-1"], ["--seed"]),
        (["--seed", str(2**63)], ["--seed"]),
        (["--stall-timeout", "-1"], ["--stall-timeout"]),
        (["--stall-timeout", "nan"], ["--stall-timeout"]),
        (["--stall-timeout", "0.5"], ["--stall-timeout"]),
        (["--rounds", "0"], ["--rounds"]),
        (["--resume"], ["--resume needs --checkpoint"]),
        (["--valid-fraction", "nan"], ["--valid-fraction"]),
        (["--valid-fraction", "0.2", "--early-stop", "0"], ["--early-stop"]),
        (["--algo", "smoothboost", "--epsilon", "nan"], ["--epsilon"]),
        (["--no-such-option"], ["unrecognized arguments: --no-such-option"]),  # usage errors: printed once too
        (["--rounds", "x"], ["--rounds", "invalid int value"]),
    ],
)
def test_bad_arguments_exit_2_before_mpi_starts(work, extra, words):
    extra = [str(work / e) if e == "c.h5" else e for e in extra]
    if "--rounds" in extra:
        i = extra.index("--rounds")
        rounds, extra = extra[i + 1], extra[:i] + extra[i + 2:]
    else:
        rounds = 10
    before = _digest(work)
    proc = _train(work, *extra, rounds=rounds)
    _refused(proc, *words, before="mpi", ranks=2)
    _unchanged(before, work)
    assert not (work / "m.h5").exists()


def test_a_valid_run_starts_mpi_works_and_writes_every_output(work):
    """The positive control of the probe: what the refusals above never print, a valid run does."""
    proc = _train(work, "--metrics", str(work / "met.jsonl"), "--checkpoint", str(work / "c.h5"),
                  "--checkpoint-every", "4", rounds=10)
    assert proc.returncode == 0, proc.stderr
    assert probe.worked(proc.stdout) and len(probe.lines(proc.stdout, ": round ")) == 2 * 10
    assert probe.exits(proc.stdout) == {0: (0, True), 1: (0, True)}
    from mpiboost.model import Model

    assert Model.load(work / "m.h5").n_rounds == 10 and Model.load(work / "c.h5").n_rounds == 10
    records = [json.loads(line) for line in (work / "met.jsonl").read_text().splitlines()]
    assert [r.get("round") for r in records[:-1]] == list(range(1, 11)) and "summary" in records[-1]
    _no_temporaries(work)


# ------------------------------------------------- outputs never over inputs
@pytest.mark.parametrize(
    "where,words",
    [
        ("missing-dir", ["--model", "does not exist"]),
        ("metrics-dir", ["--metrics", "is a directory"]),
        ("no-files-here", ["--model", "cannot write in"]),
    ],
)
def test_bad_output_paths_are_refused_before_work(work, where, words):
    extra = {
        "missing-dir": ["--model", str(work / "missing-dir" / "m.h5")],
        "metrics-dir": ["--metrics", str(work)],
        "no-files-here": ["--model", "/sys/m.h5"],  # a directory no one may create a file in, root included
    }[where]
    before = _digest(work)
    proc = _train(work, *extra)
    _refused(proc, *words, before="work", ranks=2)
    _unchanged(before, work)


def test_other_commands_check_their_outputs_before_work(work):
    missing = work / "missing-dir"
    src = work / "in.svm"
    src.write_text("+1 1:0.5\n-1 2:1\n")
    proc = probe.run(["synth", "longservedio", "--n", "100", "--out", str(missing / "s.h5")])
    _refused(proc, "--out", "does not exist", before="work")
    proc = probe.run(["convert", str(src), "--format", "libsvm", "--out", str(missing / "c.h5")])
    _refused(proc, "--out", "does not exist", before="work")
    proc = probe.run(["convert", str(src), "--format", "libsvm", "--out", str(src)])
    _refused(proc, "--out", "would destroy the input", before="work")
    # predict's --out: refused by the center before a row is read (it needs a model to get that far)
    assert _train(work, rounds=2).returncode == 0
    proc = probe.run(["predict", "--model", str(work / "m.h5"), "--data", str(work / "d.h5"),
                      "--out", str(missing / "p.npy")], n=2)
    _refused(proc, "--out", "does not exist", before="work", ranks=2)
    assert not missing.exists()


@pytest.mark.parametrize("option", ["--model", "--metrics", "--checkpoint"])
def test_an_output_that_is_the_training_data_is_refused(work, option):
    before = _digest(work)
    extra = [option, str(work / "d.h5")]
    if option != "--model":
        extra += ["--model", str(work / "m.h5")]
    proc = _train(work, *extra)
    _refused(proc, option, "would destroy the input", before="work", ranks=2)
    _unchanged(before, work)


def test_links_and_aliases_of_inputs_are_refused(work):
    os.link(work / "d.h5", work / "hard.h5")
    os.symlink(work / "e.h5", work / "soft.h5")
    before = _digest(work)
    proc = _train(work, "--model", str(work / "hard.h5"))
    _refused(proc, "--model", "would destroy the input", before="work")
    proc = _train(work, "--valid", str(work / "e.h5"), "--metrics", str(work / "soft.h5"))
    _refused(proc, "--metrics", "--valid", before="work")
    proc = _train(work, "--model", str(work / "x.h5"), "--checkpoint", str(work / "x.h5"))
    _refused(proc, "same file", before="work")
    _unchanged(before, work)


def test_predict_over_its_model_or_data_is_refused(work):
    proc = _train(work)
    assert proc.returncode == 0, proc.stderr
    before = _digest(work)
    for target in ("m.h5", "d.h5"):
        proc = probe.run(["predict", "--model", str(work / "m.h5"), "--data", str(work / "d.h5"),
                          "--out", str(work / target)], n=2)
        _refused(proc, "--out", "would destroy the input", before="work")
    _unchanged(before, work)


def test_a_device_or_a_fifo_is_never_replaced(work):
    """Not regular files: refused, left in place (a link to /dev/null and a FIFO need no privileges)."""
    node, fifo = work / "null", work / "fifo"
    os.symlink(os.devnull, node)
    os.mkfifo(fifo)
    for target in (node, fifo):
        proc = _train(work, "--model", str(target))
        _refused(proc, "--model", "not a regular file", before="work")
    assert node.is_symlink() and os.readlink(node) == os.devnull
    assert fifo.is_fifo()


def test_stale_temporaries_of_dead_runs_are_removed(work):
    from mpiboost.atomic import _host

    dead = work / f".m.h5.mpiboost-{_host()}-999999999-abcd.tmp"
    dead.write_bytes(b"partial")
    live = work / f".m.h5.mpiboost-{_host()}-{os.getpid()}-abcd.tmp"  # a live process's: left alone
    live.write_bytes(b"being written")
    other = work / ".m.h5.unrelated.tmp"  # not our naming: left alone
    other.write_bytes(b"x")
    proc = _train(work)
    assert proc.returncode == 0, proc.stderr
    assert not dead.exists() and live.exists() and other.exists()


# --------------------------------------------- writes that fail (no privileges needed)
def test_a_full_disk_at_the_start_is_refused_before_work(work):
    """A file-size limit below the 4 KiB probe write: the disk is full for every file the job writes."""
    out = work / "out"
    out.mkdir()
    proc = _train(work, "--model", str(out / "m.h5"), rounds=100000, env={"PROBE_FSIZE": "4095"})
    _refused(proc, "--model", "cannot write in", "File too large", before="work", ranks=2)
    assert list(out.iterdir()) == []


_RUNNING: list = []


@pytest.fixture(autouse=True)
def _no_job_outlives_its_test():
    yield
    while _RUNNING:
        proc = _RUNNING.pop()
        if proc.poll() is None:  # the test failed while its job still ran (or waited at a gate)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.communicate()


class _Gated:
    """A training job through the probe whose center waits at the end of the given rounds for the test."""

    def __init__(self, work: Path, args: list, gates: list, *, n: int = 2, env=None, cwd=None):
        self.gate = work / "gate"
        self.gate.mkdir()
        env = {**(env or {}), "PROBE_GATE": f"{self.gate}:{','.join(map(str, gates))}"}
        self.proc = subprocess.Popen(mpiexec_cmd(n, probe.command(args)), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=mpi_env(env), cwd=cwd,
                                     start_new_session=True)
        _RUNNING.append(self.proc)

    def reached(self, t: int) -> None:
        deadline = time.monotonic() + scaled(120)  # a hang guard
        while not (self.gate / f"reached-{t}").exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise AssertionError(f"the job did not reach round {t}: {self.proc.communicate()[1][-2000:]}")
            time.sleep(0.02)

    def go(self, t: int) -> None:
        (self.gate / f"go-{t}").touch()

    def end(self):
        try:
            out, err = self.proc.communicate(timeout=scaled(120))  # a hang guard
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError("the job did not end")
        return subprocess.CompletedProcess(self.proc.args, self.proc.returncode, out, err)

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _folders(work: Path) -> dict:
    """A temporary, a home and a working directory of the test's own (the rescue's candidates)."""
    f = {name: work / name for name in ("tmpdir", "home", "run")}
    for p in f.values():
        p.mkdir()
    return f


def _rescued(proc) -> str:
    return proc.stderr.split("the trained model was saved to ")[1].split()[0].rstrip(";")


@pytest.mark.parametrize("lost", ["output-directory", "working-directory"])
def test_a_lost_mount_at_the_end_keeps_the_model(work, lost):
    """The output's directory vanishes during the rounds: the model is rescued to $TMPDIR, whole."""
    f = _folders(work)
    env = {"TMPDIR": str(f["tmpdir"]), "HOME": str(f["home"])}
    if lost == "output-directory":
        out = work / "out"
        out.mkdir()
        model, cwd = str(out / "m.h5"), f["run"]
    else:  # the job runs in the directory it writes to, with a relative --model
        out = f["run"]
        model, cwd = "m.h5", out
    job = _Gated(work, ["train", "--algo", "adaboost", "--data", str(work / "d.h5"), "--rounds", "30", "--quiet",
                        "--model", model], [5], env=env, cwd=cwd)
    job.reached(5)
    if lost == "output-directory":
        out.rename(work / "out-lost")
    else:
        shutil.rmtree(out)
    job.go(5)
    proc = job.end()
    _refused(proc, f"could not write --model {model}", "the trained model was saved to", ranks=2)
    rescued = Path(_rescued(proc))
    assert rescued.parent == f["tmpdir"], rescued
    from mpiboost.model import Model

    assert Model.load(rescued).n_rounds == 30
    assert len(probe.lines(proc.stdout, "rank 0: round ")) == 30  # it trained every round
    _no_temporaries(f["tmpdir"], f["home"], *([work / "out-lost"] if lost == "output-directory" else []))


def test_a_rescue_that_fails_everywhere_says_so_and_leaves_nothing(work):
    """Every write past 8 KiB fails (the probe write passes; the model, 15 KiB, does not, nor its copies)."""
    f = _folders(work)
    out = work / "out"
    out.mkdir()
    (out / "m.h5").write_bytes(b"the previous model")
    proc = _train(work, "--model", str(out / "m.h5"), rounds=100, cwd=f["run"],
                  env={"PROBE_FSIZE": "8192", "TMPDIR": str(f["tmpdir"]), "HOME": str(f["home"])})
    _refused(proc, f"could not write --model {out / 'm.h5'} (File too large)",
             "nor a copy in the temporary, working or home directory", ranks=2)
    assert (out / "m.h5").read_bytes() == b"the previous model"  # the previous file intact
    for folder in (out, *f.values()):
        assert sorted(p.name for p in folder.iterdir()) == (["m.h5"] if folder == out else []), folder


def test_a_metrics_write_failing_mid_run_loses_the_metrics_only(work):
    """Writes past 32 KiB fail: the metrics log (about 0.7 KiB a round) fills up mid-run, the model (19 KiB) fits."""
    out = work / "out"
    out.mkdir()
    met, model = out / "met.jsonl", out / "m.h5"
    proc = _train(work, "--weak-learner", "stump", "--model", str(model), "--metrics", str(met), rounds=200,
                  env={"PROBE_FSIZE": "32768"})  # stumps: the model of 200 rounds fits in the 32 KiB
    _refused(proc, f"the model was saved to {model}, but --metrics {met}: File too large", ranks=2)
    assert proc.stderr.count("mpiboost: warning:") == 1, proc.stderr
    assert f"warning: --metrics {met}: File too large; no longer written, training goes on" in proc.stderr
    from mpiboost.model import Model

    assert Model.load(model).n_rounds == 200
    assert len(probe.lines(proc.stdout, "rank 0: round ")) == 200
    whole = [json.loads(line)["round"] for line in met.read_text().splitlines()[:-1]]
    assert 1 <= len(whole) < 200 and whole == list(range(1, len(whole) + 1))
    _no_temporaries(out)


def test_a_checkpoint_write_failing_mid_run_loses_the_checkpoints_only(work):
    """The checkpoint's directory is gone for round 15's checkpoint, back for the later ones: no more are written."""
    ck, out = work / "ck", work / "out"
    ck.mkdir()
    out.mkdir()
    ckpt, model, met = ck / "c.h5", out / "m.h5", out / "met.jsonl"
    job = _Gated(work, ["train", "--algo", "adaboost", "--data", str(work / "d.h5"), "--rounds", "40", "--quiet",
                        "--model", str(model), "--metrics", str(met), "--checkpoint", str(ckpt),
                        "--checkpoint-every", "5"], [12, 17])
    job.reached(12)
    # the metrics log is a stream, flushed every round: rounds 1..11 are in the file now
    assert [json.loads(line)["round"] for line in met.read_text().splitlines()] == list(range(1, 12))
    ck.rename(work / "ck-lost")
    job.go(12)
    job.reached(17)  # round 15's checkpoint failed
    (work / "ck-lost").rename(ck)
    job.go(17)
    proc = job.end()
    _refused(proc, f"the model was saved to {model}, but --checkpoint {ckpt}: No such file or directory", ranks=2)
    assert proc.stderr.count("mpiboost: warning:") == 1, proc.stderr
    assert f"warning: --checkpoint {ckpt}: No such file or directory; no longer written" in proc.stderr
    from mpiboost.model import Model

    assert Model.load(model).n_rounds == 40
    assert Model.load(ckpt).n_rounds == 10  # the last one written before the failure, never again after it
    assert [json.loads(line).get("round") for line in met.read_text().splitlines()] == list(range(1, 41)) + [None]
    _no_temporaries(ck, out)


# ------------------------------------------------------------- resuming
def _resume(work: Path, ckpt: Path, *extra: str, algo: str = "adaboost", data: Path | None = None):
    return probe.run(["train", "--algo", algo, "--data", str(data or work / "d.h5"), "--rounds", "20", "--quiet",
                      "--model", str(work / "r.h5"), "--checkpoint", str(ckpt), "--resume", *extra], n=2)


def test_resume_refuses_another_run_and_never_shortens_the_checkpoint(work):
    ckpt, met = work / "c.h5", work / "met.jsonl"
    proc = _train(work, "--checkpoint", str(ckpt), "--checkpoint-every", "4", "--metrics", str(met), rounds=12)
    assert proc.returncode == 0, proc.stderr
    # the same file name, shape and dtypes, other rows: told apart by the rows' content hash
    (work / "alt").mkdir()
    shutil.copyfile(work / "e.h5", work / "alt" / "d.h5")
    before = _digest(work)
    for proc, words in [
        (_resume(work, ckpt, "--seed", "5"), ["--seed 0", "--seed 5"]),
        (_resume(work, ckpt, data=work / "e.h5"), ["other training data", "'d.h5' then, 'e.h5' now"]),
        (_resume(work, ckpt, data=work / "alt" / "d.h5"), ["other training data", "the rows differ"]),
        (_resume(work, ckpt, algo="smoothboost"), ["made by adaboost"]),
        (_resume(work, ckpt, "--weak-learner", "sample"), ["parameters differ", "search"]),
    ]:
        _refused(proc, *words, before="rounds", ranks=2)  # agreed, before the first round
    _unchanged(before, work)
    # fewer rounds than the checkpoint: the model has them, the checkpoint keeps its 12
    proc = _train(work, "--model", str(work / "short.h5"), "--checkpoint", str(ckpt), "--resume", rounds=5)
    assert proc.returncode == 0, proc.stderr
    from mpiboost.model import Model

    assert Model.load(ckpt).n_rounds == 12 and Model.load(work / "short.h5").n_rounds == 5
    # a model is not a checkpoint
    proc = _train(work, "--model", str(work / "x.h5"), "--checkpoint", str(work / "m.h5"), "--resume")
    _refused(proc, "does not record", before="rounds", ranks=2)


def test_metrics_after_a_resume_hold_each_round_once(work):
    ckpt, met = work / "c.h5", work / "met.jsonl"
    proc = _train(work, "--checkpoint", str(ckpt), "--checkpoint-every", "5", "--metrics", str(met), rounds=8)
    assert proc.returncode == 0, proc.stderr
    # as a run killed after round 8 leaves them: the checkpoint of round 5, metrics up to round 8 (one cut line)
    from mpiboost.model import Model

    m = Model.load(ckpt)
    part = m.truncated(5)
    part.info = m.info
    part.save(ckpt)
    with open(met, "a") as f:
        f.write('{"round": 9, "trunc')
    proc = _train(work, "--checkpoint", str(ckpt), "--resume", "--metrics", str(met), rounds=15)
    assert proc.returncode == 0, proc.stderr
    rounds = [json.loads(line).get("round") for line in met.read_text().splitlines()]
    assert rounds == list(range(1, 16)) + [None]


# ------------------------------------------------------ process faults
def _start_long_job(work: Path, n: int = 3, timeout: float = 6) -> subprocess.Popen:
    cmd = [mpiexec(), "-n", str(n), *CLI, "train", "--algo", "adaboost", "--data", str(work / "d.h5"),
           "--rounds", "1000000", "--model", str(work / "m.h5"), "--metrics", str(work / "met.jsonl"),
           "--checkpoint", str(work / "c.h5"), "--checkpoint-every", "50", "--quiet",
           "--stall-timeout", str(timeout)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=mpi_env(),
                            start_new_session=True)
    _RUNNING.append(proc)
    deadline = time.monotonic() + scaled(90)  # a hang guard
    met = work / "met.jsonl"
    while time.monotonic() < deadline:
        if met.exists() and met.read_text().count("\n") >= 60:
            return proc
        if proc.poll() is not None:
            raise AssertionError(proc.communicate()[1][-2000:])
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    raise AssertionError("the job did not start its rounds")


def _descendants(pid: int) -> list[int]:
    children: dict = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for c in children.get(p, []):
            out.append(c)
            todo.append(c)
    return out


def _ranks(proc: subprocess.Popen) -> list[int]:
    """PIDs of the job's ranks, in rank order (from the launcher's rank variable)."""
    found = {}
    for pid in _descendants(proc.pid):
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"mpiboost" not in cmd or b"python" not in cmd:
            continue
        for var in (b"PMI_RANK=", b"OMPI_COMM_WORLD_RANK=", b"PMIX_RANK="):
            hit = [e for e in env if e.startswith(var)]
            if hit:
                found[int(hit[0][len(var):])] = pid
                break
    return [found[r] for r in sorted(found)]


def _wait(proc: subprocess.Popen, bound: float):
    try:
        _, err = proc.communicate(timeout=bound)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError(f"the job did not end within {bound} s")
    return proc.returncode, err


def _session_alive(pids: list) -> list:
    return [p for p in pids if Path(f"/proc/{p}").exists() and "Z" not in _state(p)]


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


@pytest.mark.parametrize("victim", ["center", "entity", "mpiexec"])
def test_a_killed_process_ends_the_whole_job(work, victim):
    proc = _start_long_job(work, timeout=scaled(6))
    before = {"d.h5": hashlib.sha256((work / "d.h5").read_bytes()).hexdigest()}
    ranks = _ranks(proc)
    assert len(ranks) == 3, ranks
    pid = {"center": ranks[0], "entity": ranks[1], "mpiexec": proc.pid}[victim]
    os.kill(pid, signal.SIGKILL)
    code, err = _wait(proc, scaled(40))  # a hang guard: the launcher (or else the watchdog) ends the others
    deadline = time.monotonic() + scaled(20)
    while _session_alive(ranks) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _session_alive(ranks), "ranks outlived the job"
    assert code != 0
    _unchanged(before, work)
    # the checkpoint is whole (written atomically) and resumable
    from mpiboost.model import Model

    if (work / "c.h5").exists():
        assert Model.load(work / "c.h5").n_rounds % 50 == 0


@pytest.mark.parametrize("victim", ["center", "entity"])
def test_a_stopped_rank_is_named_and_the_job_ends(work, victim):
    bound = scaled(6)  # short, yet not reached by a healthy rank of this job, on this machine even when busy
    proc = _start_long_job(work, timeout=bound)
    ranks = _ranks(proc)
    assert len(ranks) == 3, ranks
    pid = ranks[0] if victim == "center" else ranks[2]
    os.kill(pid, signal.SIGSTOP)
    try:
        code, err = _wait(proc, bound + scaled(40))  # a hang guard
    finally:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
    assert code == 2, (code, err[-2000:])
    rank = 0 if victim == "center" else 2
    assert f"rank {rank} " in err and "stopped making progress" in err, err[-2000:]
    assert "no heartbeat from it" in err and f"--stall-timeout {bound}" in err, err[-2000:]
    deadline = time.monotonic() + scaled(20)
    while _session_alive(ranks) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _session_alive(ranks)


def test_the_watchdog_leaves_the_model_unchanged(work):
    """Same seed, same bits with and without the watchdog (its bound never reached: timing plays no part)."""
    a = _train(work, "--model", str(work / "a.h5"), "--stall-timeout", "0", n=3)
    # the center holds round 5 until its watchdog has exchanged 2 heartbeats: they happen mid-training
    (work / "gate").mkdir()
    (work / "gate" / "go-5").touch()
    b = _train(work, "--model", str(work / "b.h5"), "--stall-timeout", "600", n=3,
               env={"PROBE_GATE": f"{work / 'gate'}:5", "PROBE_GATE_HEARTBEATS": "2"})
    assert a.returncode == 0 and b.returncode == 0, (a.stderr, b.stderr)
    assert len(probe.lines(a.stdout, "watchdog off")) == 3 and len(probe.lines(b.stdout, "watchdog on 600")) == 3
    ja = run_cli(["export", "--model", str(work / "a.h5")]).stdout
    jb = run_cli(["export", "--model", str(work / "b.h5")]).stdout
    assert ja == jb and ja


# -------------------------------------------------------- crafted files
def test_data_file_claiming_rows_it_does_not_hold_is_refused_unread(tmp_path):
    import h5py

    path = tmp_path / "huge.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("X", shape=(10**12, 4), dtype="f4", chunks=(1024, 4))
        f.create_dataset("y", shape=(10**12,), dtype="i1", chunks=(4096,))
    before = _digest(tmp_path)
    for args in (["info", str(path)], ["validate", str(path)]):
        # the timeout is a hang guard: reading 10^12 rows of fill values would never end
        proc = run_cli(args, n=2 if args[0] == "validate" else 0, timeout=scaled(60))
        # refused by the check of the claimed size against the chunks stored, before a row is read
        _refused(proc, "huge.h5", "dataset 'X'", "chunks")
    _unchanged(before, tmp_path)


def test_model_with_out_of_range_indices_is_refused(work):
    import h5py

    proc = _train(work)
    assert proc.returncode == 0, proc.stderr
    bad = work / "bad.h5"
    bad.write_bytes((work / "m.h5").read_bytes())
    with h5py.File(bad, "r+") as f:
        feat = f["ensemble/feature"][()]
        feat[0] = 10**6
        f["ensemble/feature"][...] = feat
    for cmd in (["evaluate"], ["predict", "--out", str(work / "p.npy")]):
        proc = probe.run([*cmd, "--model", str(bad), "--data", str(work / "d.h5")], n=2)
        _refused(proc, "bad.h5", "feature", before="work")  # before a data row is read
    assert not (work / "p.npy").exists()


# ----------------------------------------------------- converter fuzzing
def test_converters_never_crash_on_mutated_input(tmp_path):
    """A bounded fuzz: mutated LIBSVM and CSV text either converts (exit 0) or is refused (exit 2)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from mpiboost.cli import main

    seeds = {
        "libsvm": "+1 1:0.5 3:2\n-1 2:1.5 4:-3\n+1 1:1e3 5:7\n",
        "csv": "a,b,label\n1,2,x\n3,,y\n5,6,x\n",
    }
    counter = {"n": 0}

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(kind=st.sampled_from(sorted(seeds)), cuts=st.lists(st.tuples(st.integers(0, 60), st.text(max_size=6)),
                                                               max_size=4))
    def one(kind, cuts):
        text = seeds[kind]
        for pos, ins in cuts:
            pos = min(pos, len(text))
            text = text[:pos] + ins + text[pos + 1:]
        counter["n"] += 1
        src = tmp_path / f"in{counter['n']}.{kind}"
        src.write_bytes(text.encode("utf-8", errors="replace"))
        out = tmp_path / f"out{counter['n']}.h5"
        code = main(["convert", str(src), "--format", kind, "--out", str(out)])
        assert code in (0, 2)
        if code == 2:
            assert not out.exists()
        _no_temporaries(tmp_path)

    one()
    assert counter["n"] >= 30
