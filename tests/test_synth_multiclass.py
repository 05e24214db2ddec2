"""`mpiboost synth multiclass`: K Gaussian classes, imbalance, label noise."""
from __future__ import annotations

import subprocess
import sys

import h5py
import numpy as np
import pytest

from mpiboost.data import labels
from mpiboost.data.format import inspect, summarize
from mpiboost.data.synth import NAMES, multiclass


def _synth(*args):
    return subprocess.run(
        [sys.executable, "-m", "mpiboost", "synth", "multiclass", *map(str, args)],
        capture_output=True, text=True, timeout=180,
    )


def test_registered():
    assert "multiclass" in NAMES


@pytest.mark.parametrize("K, d, informative, y_dtype", [(10, 20, None, np.int8), (3, 5, 2, np.int8),
                                                        (200, 12, 12, np.int16), (256, 4, 1, np.int16)])
def test_shapes_dtypes_and_informative_features(K, d, informative, y_dtype):
    data = multiclass.generate(3000, seed=1, task_seed=2, classes=K, d=d, informative=informative)
    M = min(d, 10) if informative is None else informative
    assert data.X.shape == (3000, d) and data.X.dtype == np.float32
    assert data.y.dtype == y_dtype and data.y.min() >= 0 and data.y.max() < K
    feats = data.extra["informative"]
    assert feats.shape == (M,) and np.all(np.diff(feats) > 0) and feats.max() < d
    centres = data.extra["centres"]
    assert centres.shape == (K, d)
    noise_cols = np.setdiff1d(np.arange(d), feats)
    assert not centres[:, noise_cols].any() and np.all(centres[:, feats] != 0)
    assert data.extra["priors"].shape == (K,) and data.feature_names == [f"x{j + 1}" for j in range(d)]
    assert data.attrs["n_classes"] == K and data.attrs["informative"] == M
    assert "classes" not in data.attrs  # y holds the class indices as values


def test_rows_are_centre_plus_standard_normal_noise():
    data = multiclass.generate(200_000, seed=3, task_seed=4, classes=4, d=8, informative=3, separation=2.0)
    y, X, C = data.extra["y_clean"], data.X.astype(np.float64), data.extra["centres"]
    resid = X - C[y]
    assert np.all(np.abs(resid.mean(0)) < 0.01)
    assert np.all(np.abs(resid.std(0) - 1) < 0.01)
    # noise features carry nothing: their class means are all ~0
    noise_cols = np.setdiff1d(np.arange(8), data.extra["informative"])
    for k in range(4):
        assert np.all(np.abs(X[y == k][:, noise_cols].mean(0)) < 0.03)


def test_determinism_seed_and_task_seed():
    a = multiclass.generate(5000, noise=0.1, seed=5, task_seed=1)
    b = multiclass.generate(5000, noise=0.1, seed=5, task_seed=1)
    assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y)
    other_sample = multiclass.generate(5000, noise=0.1, seed=6, task_seed=1)
    assert not np.array_equal(a.X, other_sample.X)
    for key in ("centres", "priors", "informative"):  # same task: same distribution
        assert np.array_equal(a.extra[key], other_sample.extra[key])
    other_task = multiclass.generate(5000, noise=0.1, seed=5, task_seed=2)
    assert not np.array_equal(a.extra["centres"], other_task.extra["centres"])
    # the noise changes the labels only
    clean = multiclass.generate(5000, noise=0.0, seed=5, task_seed=1)
    assert np.array_equal(clean.X, a.X) and np.array_equal(clean.y, a.extra["y_clean"])
    assert np.array_equal(clean.y, clean.extra["y_clean"]) and not np.array_equal(clean.y, a.y)


@pytest.mark.parametrize("K, R", [(10, 1.0), (10, 10.0), (2, 10.0), (50, 4.0)])
def test_class_priors(K, R):
    n = 400_000
    data = multiclass.generate(n, seed=7, task_seed=0, classes=K, imbalance=R)
    expected = R ** (-np.arange(K) / (K - 1))
    expected /= expected.sum()
    np.testing.assert_allclose(data.extra["priors"], expected)
    freq = np.bincount(data.extra["y_clean"], minlength=K) / n
    sd = np.sqrt(expected * (1 - expected) / n)
    assert np.all(np.abs(freq - expected) < 5 * sd + 1e-4), (freq, expected)
    assert expected[0] / expected[-1] == pytest.approx(R)


@pytest.mark.parametrize("K, P", [(10, 0.1), (3, 0.3), (2, 0.25)])
def test_label_noise_rate_and_other_classes(K, P):
    n = 200_000
    data = multiclass.generate(n, noise=P, seed=8, task_seed=3, classes=K)
    y, clean = data.y.astype(np.int64), data.extra["y_clean"].astype(np.int64)
    changed = y != clean
    assert abs(changed.mean() - P) < 4 * np.sqrt(P * (1 - P) / n)
    # a replaced label is one of the K-1 other classes, uniformly
    shift = ((y - clean) % K)[changed]
    freq = np.bincount(shift, minlength=K)[1:] / changed.sum()
    assert np.all(np.abs(freq - 1 / (K - 1)) < 0.01)


def test_separation_controls_overlap():
    def bayes_error(S):
        data = multiclass.generate(100_000, seed=9, task_seed=1, classes=10, separation=S)
        pred = multiclass.bayes_predict(data.X, data.extra["centres"], data.extra["priors"])
        return np.mean(pred != data.extra["y_clean"])

    errors = [bayes_error(S) for S in (0.0, 0.5, 1.0, 2.0, 3.0)]
    assert errors[0] > 0.85  # S = 0: the classes are indistinguishable (1 - 1/K)
    assert all(a > b for a, b in zip(errors, errors[1:]))
    assert errors[-1] < 0.005


@pytest.mark.parametrize("opts", [{"classes": 1}, {"classes": 257}, {"d": 0}, {"d": 5, "informative": 6},
                                  {"informative": 0}, {"imbalance": 0.5}, {"separation": -1.0}])
def test_bad_options_raise_value_error(opts):
    with pytest.raises(ValueError):
        multiclass.generate(10, **opts)


def test_cli_writes_file(tmp_path):
    out = tmp_path / "mc.h5"
    r = _synth("--n", 3000, "--classes", 5, "--d", 7, "--informative", 3, "--separation", 1.5,
               "--imbalance", 3, "--noise", 0.05, "--seed", 1, "--task-seed", 2, "--out", out)
    assert r.returncode == 0, r.stderr
    with h5py.File(out, "r") as f:
        assert f["X"].shape == (3000, 7) and f["X"].dtype == np.float32 and f["y"].dtype == np.int8
        assert f["synth/y_clean"].shape == (3000,) and f["synth/centres"].shape == (5, 7)
        assert f.attrs["generator"] == "multiclass" and f.attrs["n_classes"] == 5
        assert labels.CLASSES_ATTR not in f.attrs
        y = f["y"][:]
    direct = multiclass.generate(3000, noise=0.05, seed=1, task_seed=2, classes=5, d=7, informative=3,
                                 separation=1.5, imbalance=3)
    np.testing.assert_array_equal(y, direct.y)
    assert inspect(out).classes is None
    s = summarize(out)
    assert s["classes"] == [0, 1, 2, 3, 4] and s["n_classes"] == 5
    assert s["labels"] == {str(k): int(c) for k, c in enumerate(np.bincount(direct.y))}


def test_cli_256_classes_int16(tmp_path):
    out = tmp_path / "mc256.h5"
    r = _synth("--n", 20000, "--classes", 256, "--out", out)
    assert r.returncode == 0, r.stderr
    with h5py.File(out, "r") as f:
        assert f["y"].dtype == np.int16 and f["y"][:].max() == 255


@pytest.mark.parametrize("k", [1, 257])
def test_cli_bad_classes_exit_2(tmp_path, k):
    r = _synth("--n", 10, "--classes", k, "--out", tmp_path / "x.h5")
    assert r.returncode == 2 and "--classes" in r.stderr, r.stderr
    assert not (tmp_path / "x.h5").exists()
