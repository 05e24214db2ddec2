"""The Long-Servedio generator against its specification."""
import h5py
import numpy as np

from mpi_util import run_cli
from mpiboost.data.synth import longservedio


def test_mixture_and_noise_rates():
    n, noise = 100_000, 0.1
    data = longservedio.generate(n, noise=noise, seed=1)
    X, y = data.X, data.y
    comp, clean = data.extra["component"], data.extra["y_clean"]
    assert X.shape == (n, 21) and X.dtype == np.int8
    assert set(np.unique(X)) == {-1, 1} and set(np.unique(y)) == {-1, 1}
    props = np.bincount(comp, minlength=3) / n
    assert np.all(np.abs(props - [0.25, 0.25, 0.5]) < 0.01), props
    assert abs(np.mean(y != clean) - noise) < 0.002
    assert abs(np.mean(clean == 1) - 0.5) < 0.01
    agree = X == clean[:, None]
    assert np.all(agree[comp == 0])  # large margin: every x_i = y
    assert np.all(agree[comp == 1, :11]) and not np.any(agree[comp == 1, 11:])  # pullers
    pen = agree[comp == 2]
    assert np.all(pen[:, :11].sum(1) == 5) and np.all(pen[:, 11:].sum(1) == 6)  # penalizers
    # the chosen coordinates are spread uniformly
    freq = pen[:, :11].mean(0)
    assert np.all(np.abs(freq - 5 / 11) < 0.02)


def test_clean_test_set_and_determinism():
    a = longservedio.generate(2000, noise=0.0, seed=5)
    b = longservedio.generate(2000, noise=0.0, seed=5)
    c = longservedio.generate(2000, noise=0.0, seed=6)
    assert np.array_equal(a.y, a.extra["y_clean"])
    assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y)
    assert not np.array_equal(a.X, c.X)
    # noise changes only the labels, not the inputs
    noisy = longservedio.generate(2000, noise=0.3, seed=5)
    assert np.array_equal(noisy.X, a.X) and not np.array_equal(noisy.y, a.y)


def test_cli_writes_file(tmp_path):
    out = tmp_path / "ls.h5"
    proc = run_cli(["synth", "longservedio", "--n", "5000", "--noise", "0.01", "--seed", "3", "--out", str(out)])
    assert proc.returncode == 0, proc.stderr
    with h5py.File(out) as f:
        assert f["X"].shape == (5000, 21) and f["y"].dtype == np.int8
        assert f.attrs["generator"] == "longservedio" and f.attrs["noise"] == 0.01
        assert f["synth/component"].shape == (5000,)
    proc = run_cli(["info", str(out)])
    assert proc.returncode == 0 and "5,000" in proc.stdout and "longservedio" in proc.stdout
