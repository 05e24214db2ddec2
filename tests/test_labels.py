"""Label values in data files: the ``classes`` attribute, the writers, inspect and summarize."""
from __future__ import annotations

import os

import h5py
import numpy as np
import pytest

from mpiboost.data import labels
from mpiboost.data.format import DatasetWriter, inspect, read_arrays, summarize, write_dataset
from mpiboost.errors import InputError


def test_write_dataset_with_classes_and_summarize(tmp_path):
    X = np.arange(10, dtype=np.float32).reshape(5, 2)
    y = np.array([1, 0, 1, 1, 0])
    write_dataset(tmp_path / "a.h5", X, y, classes=["<=50K", ">50K"])
    info = inspect(tmp_path / "a.h5")
    assert info.classes == ["<=50K", ">50K"] and info.y_dtype == np.int8
    s = summarize(tmp_path / "a.h5")
    assert s["labels"] == {"<=50K": 2, ">50K": 3}
    assert s["classes"] == ["<=50K", ">50K"] and s["n_classes"] == 2
    assert "classes" not in s.get("attrs", {})
    with h5py.File(tmp_path / "a.h5") as f:
        assert labels.decode_attr(f.attrs["classes"], "a.h5") == ["<=50K", ">50K"]


def test_summarize_plain_integer_labels(tmp_path):
    write_dataset(tmp_path / "b.h5", np.zeros((4, 1), np.float32), np.array([-1, 1, 1, -1]))
    s = summarize(tmp_path / "b.h5")
    assert s["labels"] == {"-1": 2, "1": 2} and s["classes"] == [-1, 1] and s["n_classes"] == 2
    assert inspect(tmp_path / "b.h5").classes is None


def test_classes_listed_but_absent_and_bad_index(tmp_path):
    write_dataset(tmp_path / "c.h5", np.zeros((3, 1), np.float32), np.array([0, 2, 2]), classes=[1, 2.5, 7])
    s = summarize(tmp_path / "c.h5")
    assert s["labels"] == {"1": 1, "7": 2} and s["classes"] == [1, 2.5, 7] and s["n_classes"] == 3
    write_dataset(tmp_path / "d.h5", np.zeros((3, 1), np.float32), np.array([0, 3, 1]), classes=["a", "b"])
    with pytest.raises(InputError, match=r"d\.h5: dataset 'y' holds index 3, but attribute 'classes' lists 2"):
        summarize(tmp_path / "d.h5")


@pytest.mark.parametrize("raw, why", [("[1, 1]", "twice"), ("not json", "not a JSON list"), ("[]", "non-empty"),
                                      ('[1, "a"]', "mix numbers"), (str(list(range(257))), "257 classes")])
def test_inspect_rejects_bad_classes_attribute(tmp_path, raw, why):
    path = tmp_path / "bad.h5"
    write_dataset(path, np.zeros((2, 1), np.float32), np.array([0, 1]))
    with h5py.File(path, "a") as f:
        f.attrs["classes"] = raw
    with pytest.raises(InputError, match=f"bad\\.h5: attribute 'classes'.*{why}"):
        inspect(path)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32])
def test_y_dtypes(tmp_path, dtype):
    y = np.array([0, 1, 2, 100], dtype=np.int64)
    write_dataset(tmp_path / "e.h5", np.zeros((4, 1), np.float32), y, y_dtype=dtype)
    assert inspect(tmp_path / "e.h5").y_dtype == dtype
    np.testing.assert_array_equal(read_arrays(tmp_path / "e.h5")["y"], y)


def test_default_y_dtype_is_the_smallest_that_fits(tmp_path):
    X = np.zeros((3, 1), np.float32)
    for y, dtype in (([-1, 1, 1], np.int8), ([0, 127, 5], np.int8), ([0, 255, 5], np.int16),
                     ([0, 70000, 1], np.int32)):
        write_dataset(tmp_path / "f.h5", X, np.array(y, dtype=np.int64))
        assert inspect(tmp_path / "f.h5").y_dtype == dtype
        np.testing.assert_array_equal(read_arrays(tmp_path / "f.h5")["y"], y)


def test_writer_refuses_values_that_do_not_fit_and_leaves_nothing(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(InputError, match="does not fit y dtype int8"):
        write_dataset(out / "g.h5", np.zeros((2, 1), np.float32), np.array([0, 300]), y_dtype=np.int8)
    with pytest.raises(InputError, match="unsupported y dtype"):
        DatasetWriter(out / "g.h5", 1, y_dtype=np.float16)  # float32/float64 hold regression targets
    with pytest.raises(InputError, match="every target must be finite"):
        write_dataset(out / "g.h5", np.zeros((2, 1), np.float32), np.array([0.5, np.inf]), y_dtype=np.float64)
    assert os.listdir(out) == []


def test_deferred_labels_rewritten_in_chunks(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 3, size=1000)
    with DatasetWriter(out / "h.h5", 2, deferred_y=True) as w:
        for start in range(0, 1000, 64):
            w.append(np.ones((len(codes[start:start + 64]), 2)), codes[start:start + 64])
        assert len(os.listdir(out)) == 2  # the temporary data file and the provisional codes
        w.relabel(np.array([2, 0, 1]), np.int16, classes=["x", "y", "z"], chunk_rows=100)
    assert os.listdir(out) == ["h.h5"]
    data = read_arrays(out / "h.h5")
    assert data["y"].dtype == np.int16
    np.testing.assert_array_equal(data["y"], np.array([2, 0, 1])[codes])
    assert inspect(out / "h.h5").classes == ["x", "y", "z"]


def test_deferred_labels_discarded_on_error(tmp_path):
    with pytest.raises(RuntimeError):
        with DatasetWriter(tmp_path / "i.h5", 1, deferred_y=True) as w:
            w.append(np.ones((3, 1)), [0, 1, 0])
            raise RuntimeError("stop")
    assert os.listdir(tmp_path) == []
    with pytest.raises(InputError, match="relabel"):
        with DatasetWriter(tmp_path / "j.h5", 1, deferred_y=True) as w:
            w.append(np.ones((3, 1)), [0, 1, 0])
    assert os.listdir(tmp_path) == []
