"""The sdist and the wheel built from it: what they hold, and that the wheel runs on its own.

The wheel is built from the sdist (as pip and cibuildwheel do), with this environment's build
tools (``--no-build-isolation``: setuptools, Cython and numpy are in the test extra), and installed
into a folder of its own; a training job then runs from that folder, not from the checkout.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import mpiboost

ROOT = Path(__file__).resolve().parents[1]
PYX = sorted(p.stem for p in (ROOT / "cython_ext").glob("*.pyx"))


def _run(cmd, cwd, env=None, timeout=900):
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    pytest.importorskip("build")
    pytest.importorskip("Cython")
    work = tmp_path_factory.mktemp("pkg")
    src = work / "src"
    # a clean copy of the tracked files: what a fresh clone holds (no build outputs, no generated C)
    files = _run(["git", "ls-files", "-z"], ROOT).stdout.split("\0")
    for f in filter(None, files):
        if (ROOT / f).is_symlink() or not (ROOT / f).is_file():
            continue
        (src / f).parent.mkdir(parents=True, exist_ok=True)
        (src / f).write_bytes((ROOT / f).read_bytes())
    _run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(work / "dist")], src)
    sdist = next((work / "dist").glob("mpiboost-*.tar.gz"))
    # -O0: this checks what the wheel holds and that it runs, not its speed (a third of the -O3 build's time)
    env = dict(os.environ, MPIBOOST_BUILD_JOBS=str(os.cpu_count() or 1), MPIBOOST_QUICK_BUILD="1")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--wheel-dir",
          str(work / "dist"), str(sdist)], work, env=env)
    wheel = next((work / "dist").glob("mpiboost-*.whl"))
    return work, sdist, wheel


def test_the_sdist_holds_the_sources_licence_and_cluster_scripts_and_nothing_built(built):
    _, sdist, _ = built
    assert sdist.name == f"mpiboost-{mpiboost.__version__}.tar.gz"
    with tarfile.open(sdist) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    for pyx in PYX:
        assert f"cython_ext/{pyx}.pyx" in names
    for need in ("LICENSE", "CHANGELOG.md", "README.md", "setup.py", "pyproject.toml",
                 "mpiboost/launchers/slurm/train.sbatch", "mpiboost/launchers/lib/launch.sh",
                 "mpiboost/cli/commands.py"):
        assert need in names, need
    assert not [n for n in names if n.endswith((".so", ".h5", ".pyc"))]
    assert not [n for n in names if n.startswith(("tests/fixtures", "runs/", ".venv"))]


def test_the_wheel_holds_every_extension_and_runs_a_job_from_its_own_folder(built):
    work, _, wheel = built
    assert wheel.name.startswith(f"mpiboost-{mpiboost.__version__}-")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    for pyx in PYX:
        assert any(n.startswith(f"mpiboost/_ext/{pyx}.") and n.endswith((".so", ".pyd")) for n in names), pyx
    assert any(n.endswith(".dist-info/licenses/LICENSE") or n.endswith(".dist-info/LICENSE") for n in names)
    assert "mpiboost/launchers/slurm/train.sbatch" in names
    assert not [n for n in names if n.endswith((".pyx", ".c")) or n.startswith(("tests/", "cython_ext/"))]
    target = work / "site"
    _run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-compile", "--target", str(target), str(wheel)],
         work)
    env = dict(os.environ, PYTHONPATH=str(target))
    proc = _run([sys.executable, "-c", "import mpiboost, mpiboost._ext._weights as w; print(mpiboost.__file__)"],
                work, env=env)
    assert proc.stdout.strip().startswith(str(target)), proc.stdout  # the wheel's copy, not the checkout's
    data, model = work / "d.h5", work / "m.h5"
    _run([sys.executable, "-m", "mpiboost", "synth", "longservedio", "--n", "500", "--out", str(data)], work, env=env)
    _run([sys.executable, "-m", "mpiboost", "train", "--algo", "adaboost", "--rounds", "5", "--data", str(data),
          "--model", str(model), "--quiet"], work, env=env)
    proc = _run([sys.executable, "-m", "mpiboost", "info", str(model)], work, env=env)
    assert f"mpiboost version {mpiboost.__version__}" in " ".join(proc.stdout.split())
    proc = _run([sys.executable, "-m", "mpiboost", "scripts", "--show", "slurm"], work, env=env)
    assert "#SBATCH" in proc.stdout
