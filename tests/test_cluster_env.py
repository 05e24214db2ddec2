"""What clusters differ in, caught or handled before work: HDF5 file locks that a shared file system refuses,
an MPI library without ``MPI_THREAD_MULTIPLE``."""
from __future__ import annotations

import pytest

import probe
from mpi_util import run_cli


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = tmp_path_factory.mktemp("cluster") / "d.h5"
    assert run_cli(["synth", "longservedio", "--n", "400", "--out", str(path)]).returncode == 0
    return path


def test_inputs_are_read_without_hdf5_file_locks(data, tmp_path):
    """A file another process holds locked (as HDF5's flock fails on NFS without a lock daemon, or on Lustre
    mounted without flock): every read-only open of mpiboost goes on; the model it writes opens too."""
    import fcntl

    model = tmp_path / "m.h5"
    assert run_cli(["train", "--algo", "adaboost", "--rounds", "3", "--data", str(data), "--model", str(model),
                    "--quiet"]).returncode == 0
    with open(data, "rb") as a, open(model, "rb") as b:
        for f in (a, b):  # exclusive flocks, held while the commands read: HDF5's own lock would fail
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        for args in (["info", str(data)], ["info", str(model)],
                     ["train", "--algo", "adaboost", "--rounds", "3", "--data", str(data), "--model",
                      str(tmp_path / "n.h5"), "--quiet"],
                     ["evaluate", "--model", str(model), "--data", str(data)]):
            proc = run_cli(args)
            assert proc.returncode == 0, (args, proc.stderr)
            assert "lock" not in proc.stderr


@pytest.mark.mpi
def test_without_thread_multiple_the_watchdog_is_off_with_a_warning(data, tmp_path):
    """mpi4py asked for MPI_THREAD_SERIALIZED (its ``thread_level`` setting, as an MPI built without thread
    support gives): the watchdog's thread would call MPI beside the main thread, so it is not started."""
    args = ["train", "--algo", "adaboost", "--rounds", "3", "--data", str(data), "--model", str(tmp_path / "m.h5"),
            "--quiet", "--stall-timeout", "60"]
    proc = probe.run(args, n=2, env={"MPI4PY_RC_THREAD_LEVEL": "serialized"})
    assert proc.returncode == 0, proc.stderr
    assert sorted(probe.lines(proc.stdout, "watchdog")) == ["rank 0: watchdog off", "rank 1: watchdog off"]
    assert proc.stderr.count("no MPI_THREAD_MULTIPLE") == 1 and "--stall-timeout is off" in proc.stderr
    proc = probe.run(args, n=2)
    assert proc.returncode == 0 and "rank 0: watchdog on 60" in probe.lines(proc.stdout, "watchdog")


@pytest.mark.mpi
def test_metrics_count_the_collective_calls_of_each_round(data, tmp_path):
    """``collectives``: the MPI collective calls a round makes (each at least one latency), per primitive too."""
    import json

    met = tmp_path / "met.jsonl"
    for n in (2, 0):
        proc = run_cli(["train", "--algo", "adaboost", "--weak-learner", "stump", "--rounds", "4", "--data",
                        str(data), "--model", str(tmp_path / "m.h5"), "--quiet", "--metrics", str(met)], n=n)
        assert proc.returncode == 0, proc.stderr
        rounds = [json.loads(ln) for ln in met.read_text().splitlines() if '"round"' in ln]
        assert len(rounds) == 4
        for r in rounds:
            assert r["collectives"] == sum(v["calls"] for v in r["bytes"].values())
            if n:  # a stump round: the histograms (and the weight total), the hypothesis, the error masses,
                # the training errors; the signal check rides on the masses from round 2 on
                calls = {k: v["calls"] for k, v in r["bytes"].items() if v["calls"]}
                expect = {"reduce_histograms": 1, "broadcast_hypothesis": 1, "reduce_stats": 2}
                assert calls == (expect | {"signal_check": 1} if r["round"] == 1 else expect), calls
            else:
                assert r["collectives"] == 0  # one process: no MPI call
