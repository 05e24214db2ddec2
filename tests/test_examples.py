"""The runnable examples (examples/, one per family) and the DataFrame page's code run, and say what they promise."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from mpi_util import ROOT, mpi_env, run_mpi

EXAMPLES = {  # each example, and a line its output must hold
    "noisy_labels.py": r"SmoothBoostClassifier\s+test error 0\.\d+",
    "multiclass.py": r"SoftmaxClassifier\s+3-fold accuracy 0\.9\d\d",
    "domains.py": r"domain 2: pooled AdaBoost error 0\.\d+\s+MultiBoost error 0\.0\d\d",
    "transfer.py": r"with the sources:\s+MSDTrA error\s+0\.\d+",
    "multitask.py": r"mean AUC over \d+ tasks: each task alone 0\.\d+\s+IS multi-task 0\.9\d\d",
    "online.py": r"accuracy on each batch before learning it: 0\.[89]\d\d \(weak learners: mnb\)",
    "spmd.py": r"1 rank\(s\), model [0-9a-f]{16}, the same on every rank: True",
}


def _run(args, timeout=300):
    return subprocess.run([sys.executable, "-W", "ignore", *args], capture_output=True, text=True, cwd=ROOT,
                          env=mpi_env(), timeout=timeout)


def test_every_example_is_listed():
    assert sorted(p.name for p in (ROOT / "examples").glob("*.py")) == sorted(EXAMPLES)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_runs(name):
    proc = _run([str(ROOT / "examples" / name)])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert re.search(EXAMPLES[name], proc.stdout), proc.stdout


def test_the_spmd_example_gives_one_model_on_any_number_of_ranks():
    single = re.search(r"model ([0-9a-f]{16})", _run([str(ROOT / "examples" / "spmd.py")]).stdout).group(1)
    proc = run_mpi(3, [sys.executable, "-W", "ignore", str(ROOT / "examples" / "spmd.py")], timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"3 rank(s), model {single}, the same on every rank: True" in proc.stdout


def test_the_dataframe_page_runs_as_written(tmp_path):
    page = (ROOT / "docs" / "dataframe.md").read_text(encoding="utf-8")
    code = "\n".join(re.findall(r"```python\n(.*?)```", page, re.S))
    assert "GridSearchCV" in code and "mpiboost.load" in code
    script = tmp_path / "page.py"
    script.write_text(code, encoding="utf-8")
    proc = _run([str(script)])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert re.search(r"test accuracy 0\.[789]\d*", proc.stdout), proc.stdout
