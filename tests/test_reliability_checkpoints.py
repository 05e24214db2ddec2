"""Checkpoints know what they belong to: the run's seed, algorithm, parameters and a fingerprint of its data.

The fingerprint is each file's name, shape and dtypes, its label and domain
attributes, and a SHA-256 of a fixed sample of its rows -- the first and last
rows and evenly spaced windows -- read in a few small reads whatever the
file's size. (The refusals of ``--resume`` are in ``tests/test_faults.py``;
a resumed run giving the uninterrupted model on other rank counts is
``tests/test_train.py::test_resume_gives_the_uninterrupted_model``.)
"""
from __future__ import annotations

import h5py
import numpy as np
import pytest

from mpi_util import run_cli
from mpiboost.data import fingerprint as fp
from mpiboost.data import format as fmt
from mpiboost.model import Model


def _data(path, n=5000, seed=0, classes=None, domain=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 4)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int8)
    if classes is None:
        y = np.where(y == 1, 1, -1)
    dom = (np.arange(n) % 3).astype(np.int32) if domain else None
    fmt.write_dataset(path, X, y, dom, classes=classes, domain_names=["a", "b", "c"] if domain else None)
    return path


@pytest.mark.mpi
def test_a_checkpoint_records_the_seed_algorithm_parameters_and_data(tmp_path):
    data = _data(tmp_path / "d.h5")
    ckpt = tmp_path / "c.h5"
    proc = run_cli(["train", "--algo", "smoothboost", "--data", str(data), "--rounds", "4", "--seed", "7",
                    "--gamma", "0.05", "--model", str(tmp_path / "m.h5"), "--checkpoint", str(ckpt),
                    "--checkpoint-every", "2", "--quiet"], n=2)
    assert proc.returncode == 0, proc.stderr
    c = Model.load(ckpt)
    assert c.algorithm == "smoothboost" and c.params["gamma"] == 0.05
    record = c.info["checkpoint"]
    assert record["seed"] == 7
    assert record["data"] == fp.fingerprint([str(data)])
    (entry,) = record["data"]
    assert (entry["file"], entry["n"], entry["d"], entry["X"], entry["y"]) == ("d.h5", 5000, 4, "float32", "int8")


def _edit(path, name, row, value):
    with h5py.File(path, "r+") as f:
        a = f[name][()]
        a[row] = value
        f[name][...] = a


@pytest.mark.parametrize("change", ["first-row", "last-row", "window-row", "label", "classes", "domain",
                                    "domain-names", "other-seed"])
def test_the_fingerprint_tells_other_data_apart(tmp_path, change):
    domain = change.startswith("domain")
    classes = ["no", "yes"] if change == "classes" else None
    base = fp.fingerprint_file(str(_data(tmp_path / "d.h5", classes=classes, domain=domain)))
    again = tmp_path / "again"
    again.mkdir()
    path = _data(again / "d.h5", classes=classes, domain=domain, seed=1 if change == "other-seed" else 0)
    assert fp.fingerprint_file(str(_data(tmp_path / "same.h5", classes=classes, domain=domain)))["sample_sha256"] \
        == base["sample_sha256"]  # the same data regenerated: the same fingerprint
    n = base["n"]
    window = int(np.linspace(0, n - fp.WINDOW_ROWS, fp.WINDOWS + 2)[fp.WINDOWS // 2]) + 3  # inside a middle window
    if change == "first-row":
        _edit(path, "X", 0, 99.0)
    elif change == "last-row":
        _edit(path, "X", n - 1, 99.0)
    elif change == "window-row":
        _edit(path, "X", window, 99.0)
    elif change == "label":
        with h5py.File(path, "r") as f:
            y0 = int(f["y"][0])
        _edit(path, "y", 0, -y0)
    elif change == "classes":
        with h5py.File(path, "r+") as f:
            f.attrs["classes"] = '["yes", "no"]'  # the same indices, the other meaning
    elif change == "domain":
        _edit(path, "domain", n - 1, 0 if (n - 1) % 3 else 1)
    elif change == "domain-names":
        with h5py.File(path, "r+") as f:
            f.attrs["domain_names"] = np.array(["a", "c", "b"], dtype=h5py.string_dtype())
    other = fp.fingerprint_file(str(path))
    assert other["file"] == base["file"] and other["n"] == base["n"]  # name and shape alike: only the content
    diff = fp.differences([base], [other])
    assert diff and "the rows differ" in diff[0], diff


def test_the_fingerprint_reads_a_few_rows_whatever_the_size(tmp_path, monkeypatch):
    rows = {"read": 0}
    real = h5py.Dataset.__getitem__

    def counted(self, key):
        out = real(self, key)
        rows["read"] += len(out) if np.ndim(out) else 1
        return out

    monkeypatch.setattr(h5py.Dataset, "__getitem__", counted)
    per_size = {}
    for n in (20_000, 400_000):
        path = _data(tmp_path / f"d{n}.h5", n=n)
        rows["read"] = 0
        fp.fingerprint_file(str(path))
        per_size[n] = rows["read"]
    sample = (fp.WINDOWS + 2) * fp.WINDOW_ROWS  # rows of X and of y
    assert per_size[20_000] == per_size[400_000] == 2 * sample, per_size
