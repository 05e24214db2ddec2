"""Faults and hostile input end cleanly: exit code 2 and a message, in bounded time, nothing lost.

Each case asserts the exit code, a time bound, the message, and that every
file that existed before is byte-identical afterwards. Process faults (kills
of the center, an entity or ``mpiexec``; a stopped rank) run a long training
job and strike once it is in its rounds.
"""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from mpi_util import mpi_env, mpiexec, run_cli
from mpiboost.data import format as fmt

pytestmark = pytest.mark.mpi

CLI = [sys.executable, "-m", "mpiboost"]


def _digest(folder: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def _unchanged(before: dict, folder: Path) -> None:
    after = _digest(folder)
    for name, h in before.items():
        assert after.get(name) == h, f"{name} was changed or removed"


def _no_temporaries(folder: Path) -> None:
    left = [p.name for p in folder.iterdir() if ".mpiboost-" in p.name and p.name.endswith(".tmp")]
    assert not left, left


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


def _train(work: Path, *extra: str, n: int = 2, rounds: int = 10, timeout: float = 120):
    args = ["train", "--algo", "adaboost", "--data", str(work / "d.h5"), "--rounds", str(rounds), "--quiet", *extra]
    if "--model" not in extra:
        args += ["--model", str(work / "m.h5")]
    t0 = time.monotonic()
    proc = run_cli(args, n=n, timeout=timeout)
    return proc, time.monotonic() - t0


def _refused(proc, *words: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.stderr.count("mpiboost: error:") == 1, proc.stderr
    for w in words:
        assert w in proc.stderr, (w, proc.stderr)


# ------------------------------------------------------------ arguments
@pytest.mark.parametrize(
    "extra,words",
    [
        (["--checkpoint-every", "0", "--checkpoint", "c.h5"], ["--checkpoint-every"]),
        (["--threads", "-1"], ["--threads"]),
        (["--seed", "-1"], ["--seed"]),
        (["--stall-timeout", "-1"], ["--stall-timeout"]),
        (["--stall-timeout", "nan"], ["--stall-timeout"]),
        (["--rounds", "0"], ["--rounds"]),
        (["--resume"], ["--resume needs --checkpoint"]),
        (["--model", "missing-dir/m.h5"], ["--model", "does not exist"]),
        (["--metrics", "."], ["--metrics", "is a directory"]),
    ],
)
def test_bad_arguments_exit_2_before_any_work(work, extra, words):
    extra = [str(work / e) if e in ("c.h5", "missing-dir/m.h5") else e for e in extra]
    if "--rounds" in extra:
        i = extra.index("--rounds")
        rounds, extra = int(extra[i + 1]), extra[:i] + extra[i + 2:]
    else:
        rounds = 10
    before = _digest(work)
    proc, seconds = _train(work, *extra, rounds=rounds)
    _refused(proc, *words)
    assert seconds < 60
    _unchanged(before, work)
    assert not (work / "m.h5").exists()


# ------------------------------------------------- outputs never over inputs
@pytest.mark.parametrize("option", ["--model", "--metrics", "--checkpoint"])
def test_an_output_that_is_the_training_data_is_refused(work, option):
    before = _digest(work)
    extra = [option, str(work / "d.h5")]
    if option != "--model":
        extra += ["--model", str(work / "m.h5")]
    proc, _ = _train(work, *extra)
    _refused(proc, option, "would destroy the input")
    _unchanged(before, work)


def test_links_and_aliases_of_inputs_are_refused(work):
    os.link(work / "d.h5", work / "hard.h5")
    os.symlink(work / "e.h5", work / "soft.h5")
    before = _digest(work)
    proc, _ = _train(work, "--model", str(work / "hard.h5"))
    _refused(proc, "--model", "would destroy the input")
    proc, _ = _train(work, "--valid", str(work / "e.h5"), "--metrics", str(work / "soft.h5"))
    _refused(proc, "--metrics", "--valid")
    proc, _ = _train(work, "--model", str(work / "x.h5"), "--checkpoint", str(work / "x.h5"))
    _refused(proc, "same file")
    _unchanged(before, work)


def test_predict_over_its_model_or_data_is_refused(work):
    proc, _ = _train(work)
    assert proc.returncode == 0, proc.stderr
    before = _digest(work)
    for target in ("m.h5", "d.h5"):
        proc = run_cli(["predict", "--model", str(work / "m.h5"), "--data", str(work / "d.h5"),
                        "--out", str(work / target)], n=2)
        _refused(proc, "--out", "would destroy the input")
    _unchanged(before, work)


def test_a_device_node_is_never_replaced(work):
    node = work / "fulldev"
    try:
        os.mknod(node, 0o666 | 0o020000, os.makedev(1, 7))
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make a device node here ({exc})")
    proc, _ = _train(work, "--model", str(node))
    _refused(proc, "--model", "not a regular file")
    assert os.path.exists(node) and not node.is_file()


def test_stale_temporaries_of_dead_runs_are_removed(work):
    from mpiboost.atomic import _host

    dead = work / f".m.h5.mpiboost-{_host()}-999999999-abcd.tmp"
    dead.write_bytes(b"partial")
    other = work / ".m.h5.unrelated.tmp"  # not our naming: left alone
    other.write_bytes(b"x")
    proc, _ = _train(work)
    assert proc.returncode == 0, proc.stderr
    assert not dead.exists() and other.exists()


def _mount_tmpfs(folder: Path, size: str) -> bool:
    folder.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True, text=True)
    return proc.returncode == 0


def test_disk_full_at_the_end_keeps_the_model(work, tmp_path):
    small = tmp_path / "small"
    if not _mount_tmpfs(small, "96k"):
        pytest.skip("cannot mount a small tmpfs here (needs root or user namespaces)")
    try:
        (small / "fill").write_bytes(b"\0" * (80 * 1024))  # room for the probe, not for the model
        before = _digest(work)
        proc, _ = _train(work, "--model", str(small / "m.h5"), "--metrics", str(small / "met.jsonl"), rounds=200)
        _refused(proc, "could not write --model", "saved to")
        rescued = proc.stderr.split("saved to ")[1].split()[0].rstrip(";")
        from mpiboost.model import Model

        assert Model.load(rescued).n_rounds == 200
        os.unlink(rescued)
        _no_temporaries(small)
        _unchanged(before, work)
    finally:
        subprocess.run(["umount", str(small)], capture_output=True)


def test_full_disk_is_refused_before_work(tmp_path, work):
    small = tmp_path / "full"
    if not _mount_tmpfs(small, "8k"):
        pytest.skip("cannot mount a small tmpfs here (needs root or user namespaces)")
    try:
        try:
            (small / "fill").write_bytes(b"\0" * (64 * 1024))
        except OSError:
            pass  # full
        proc, seconds = _train(work, "--model", str(small / "m.h5"), rounds=100000)
        _refused(proc, "--model", "No space left")
        assert seconds < 60
        _no_temporaries(small)
    finally:
        subprocess.run(["umount", str(small)], capture_output=True)


# ------------------------------------------------------------- resuming
def test_resume_refuses_another_run_and_never_shortens_the_checkpoint(work):
    ckpt, met = work / "c.h5", work / "met.jsonl"
    proc, _ = _train(work, "--checkpoint", str(ckpt), "--checkpoint-every", "4", "--metrics", str(met), rounds=12)
    assert proc.returncode == 0, proc.stderr
    before = _digest(work)
    for data_file, extra, words in [
        ("d.h5", ["--seed", "5"], ["--seed 0", "--seed 5"]),
        ("e.h5", [], ["other training data"]),
    ]:
        proc = run_cli(["train", "--algo", "adaboost", "--data", str(work / data_file), "--rounds", "20", "--quiet",
                        "--model", str(work / "r.h5"), "--checkpoint", str(ckpt), "--resume", *extra], n=2)
        _refused(proc, *words)
    proc = run_cli(["train", "--algo", "smoothboost", "--data", str(work / "d.h5"), "--rounds", "20", "--quiet",
                    "--model", str(work / "r.h5"), "--checkpoint", str(ckpt), "--resume"], n=2)
    _refused(proc, "made by adaboost")
    proc = run_cli(["train", "--algo", "adaboost", "--data", str(work / "d.h5"), "--rounds", "20", "--quiet",
                    "--model", str(work / "r.h5"), "--checkpoint", str(ckpt), "--resume", "--weak-learner", "sample"],
                   n=2)
    _refused(proc, "parameters differ", "weak_learner")
    _unchanged(before, work)
    # fewer rounds than the checkpoint: the model has them, the checkpoint keeps its 12
    proc, _ = _train(work, "--model", str(work / "short.h5"), "--checkpoint", str(ckpt), "--resume", rounds=5)
    assert proc.returncode == 0, proc.stderr
    from mpiboost.model import Model

    assert Model.load(ckpt).n_rounds == 12 and Model.load(work / "short.h5").n_rounds == 5
    # a model is not a checkpoint
    proc, _ = _train(work, "--model", str(work / "x.h5"), "--checkpoint", str(work / "m.h5"), "--resume")
    _refused(proc, "does not record")


def test_metrics_after_a_resume_hold_each_round_once(work):
    ckpt, met = work / "c.h5", work / "met.jsonl"
    proc, _ = _train(work, "--checkpoint", str(ckpt), "--checkpoint-every", "5", "--metrics", str(met), rounds=8)
    assert proc.returncode == 0, proc.stderr
    # as a run killed after round 8 leaves them: the checkpoint of round 5, metrics up to round 8 (one cut line)
    from mpiboost.model import Model

    m = Model.load(ckpt)
    part = m.truncated(5)
    part.info = m.info
    part.save(ckpt)
    with open(met, "a") as f:
        f.write('{"round": 9, "trunc')
    proc, _ = _train(work, "--checkpoint", str(ckpt), "--resume", "--metrics", str(met), rounds=15)
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
    deadline = time.monotonic() + 90
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
    proc = _start_long_job(work)
    before = {"d.h5": hashlib.sha256((work / "d.h5").read_bytes()).hexdigest()}
    ranks = _ranks(proc)
    assert len(ranks) == 3, ranks
    pid = {"center": ranks[0], "entity": ranks[1], "mpiexec": proc.pid}[victim]
    t0 = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    code, err = _wait(proc, 40)
    deadline = time.monotonic() + 20
    while _session_alive(ranks) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _session_alive(ranks), "ranks outlived the job"
    assert time.monotonic() - t0 < 40
    assert code != 0
    _unchanged(before, work)
    # the checkpoint is whole (written atomically) and resumable
    from mpiboost.model import Model

    if (work / "c.h5").exists():
        assert Model.load(work / "c.h5").n_rounds % 50 == 0


@pytest.mark.parametrize("victim", ["center", "entity"])
def test_a_stopped_rank_is_named_and_the_job_ends(work, victim):
    proc = _start_long_job(work, timeout=4)
    ranks = _ranks(proc)
    pid = ranks[0] if victim == "center" else ranks[2]
    t0 = time.monotonic()
    os.kill(pid, signal.SIGSTOP)
    try:
        code, err = _wait(proc, 40)
    finally:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
    elapsed = time.monotonic() - t0
    assert code == 2, (code, err[-2000:])
    rank = 0 if victim == "center" else 2
    assert f"rank {rank} " in err and "stopped making progress" in err, err[-2000:]
    assert elapsed < 4 + 20, elapsed
    deadline = time.monotonic() + 20
    while _session_alive(ranks) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _session_alive(ranks)


def test_the_watchdog_leaves_the_model_unchanged(work):
    """Same seed, same bits with and without the watchdog."""
    a, _ = _train(work, "--model", str(work / "a.h5"), "--stall-timeout", "0", n=3)
    b, _ = _train(work, "--model", str(work / "b.h5"), "--stall-timeout", "2", n=3)
    assert a.returncode == 0 and b.returncode == 0, (a.stderr, b.stderr)
    ja = run_cli(["export", "--model", str(work / "a.h5")]).stdout
    jb = run_cli(["export", "--model", str(work / "b.h5")]).stdout
    assert ja == jb and ja


# -------------------------------------------------------- crafted files
def test_data_file_claiming_rows_it_does_not_hold_is_refused_quickly(tmp_path):
    import h5py

    path = tmp_path / "huge.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("X", shape=(10**12, 4), dtype="f4", chunks=(1024, 4))
        f.create_dataset("y", shape=(10**12,), dtype="i1", chunks=(4096,))
    before = _digest(tmp_path)
    for args in (["info", str(path)], ["validate", str(path)]):
        t0 = time.monotonic()
        proc = run_cli(args, n=2 if args[0] == "validate" else 0, timeout=60)
        assert time.monotonic() - t0 < 30
        _refused(proc, "huge.h5")
    _unchanged(before, tmp_path)


def test_model_with_out_of_range_indices_is_refused(work):
    import h5py

    proc, _ = _train(work)
    assert proc.returncode == 0, proc.stderr
    bad = work / "bad.h5"
    bad.write_bytes((work / "m.h5").read_bytes())
    with h5py.File(bad, "r+") as f:
        feat = f["ensemble/feature"][()]
        feat[0] = 10**6
        f["ensemble/feature"][...] = feat
    for cmd in (["evaluate"], ["predict", "--out", str(work / "p.npy")]):
        proc = run_cli([*cmd, "--model", str(bad), "--data", str(work / "d.h5")], n=2)
        _refused(proc, "bad.h5", "feature")
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
