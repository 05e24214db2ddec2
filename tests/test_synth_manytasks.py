"""`mpiboost synth manytasks`: many small related tasks with rare positives."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from mpiboost.data.format import read_arrays
from mpiboost.data.synth import NAMES, manytasks


def test_sizes_rates_and_relatedness():
    assert "manytasks" in NAMES
    g = manytasks.generate(450, seed=1, task_seed=7)
    sizes = g.extra["sizes"]
    assert len(sizes) == 30 and sizes.min() >= 180 and sizes.max() <= 630
    assert g.X.shape == (sizes.sum(), 10) and g.X.dtype == np.float32 and g.y.dtype == np.int8
    assert np.array_equal(np.bincount(g.domain, minlength=30), sizes)
    rate = np.mean(g.y > 0)
    assert 0.03 < rate < 0.08, rate  # about --positive-rate in every task, in all
    per_task = np.array([np.mean(g.y[g.domain == k] > 0) for k in range(30)])
    assert per_task.max() < 0.2
    # related tasks: unit weight vectors close to each other (shared 0.7), unrelated ones (shared 0) not
    W = g.extra["weights"]
    near = np.mean(W @ W.T)
    far = np.mean(manytasks.generate(10, seed=1, task_seed=7, shared=0.0).extra["weights"] @ W.T)
    assert near > 0.5 > far
    # the sample seed changes the rows, not the tasks
    h = manytasks.generate(450, seed=2, task_seed=7)
    assert np.array_equal(h.extra["weights"], W) and np.array_equal(h.extra["sizes"], sizes)
    assert not np.array_equal(h.X, g.X)
    same = manytasks.generate(450, seed=1, task_seed=7)
    assert np.array_equal(same.X, g.X) and np.array_equal(same.y, g.y)


@pytest.mark.parametrize("bad, message", [({"tasks": 0}, "--tasks"), ({"d": 1}, "--d"),
                                          ({"positive_rate": 1.0}, "--positive-rate"), ({"shared": 1.5}, "--shared")])
def test_bad_options_are_refused(bad, message):
    with pytest.raises(ValueError, match=message):
        manytasks.generate(100, **bad)


def test_cli_writes_tasks_as_domains(tmp_path):
    out = tmp_path / "mt.h5"
    proc = subprocess.run([sys.executable, "-m", "mpiboost", "synth", "manytasks", "--n", "100", "--tasks", "5",
                           "--seed", "3", "--out", str(out)], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    a = read_arrays(out)
    assert set(np.unique(a["domain"])) == set(range(5)) and set(np.unique(a["y"])) <= {-1, 1}
