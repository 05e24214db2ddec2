"""The stream of the online boosters: chunks and files in global order, the shuffle, the scan's checks."""
import numpy as np
import pytest

from mpiboost.data.format import write_dataset
from mpiboost.errors import InputError
from mpiboost.online import source


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, 5, 50), rng.standard_normal(50), rng.integers(0, 40, 50)]).astype(float)
    X[3, 1] = np.nan
    y = rng.integers(0, 3, 50)
    paths = []
    for i, (a, b) in enumerate([(0, 17), (17, 18), (18, 50)]):
        paths.append(tmp_path / f"f{i}.h5")
        write_dataset(paths[-1], X[a:b], y[a:b], classes=["x", "y", "z"])
    return paths, X, y


@pytest.mark.parametrize("block,chunk", [(1, 7), (4, 7), (16, 1000), (3, 3)])
@pytest.mark.parametrize("shuffle", [None, 5])
def test_blocks_are_the_rows_in_stream_order_whatever_the_chunks(files, block, chunk, shuffle):
    paths, X, y = files
    info = source.scan(paths, chunk_rows=chunk)
    order = source.order_of(info.n, shuffle)
    idx = np.arange(50) if order is None else order
    got_X, got_y, starts = [], [], []
    for t0, Xb, yb in source.blocks(info, block, order, chunk_rows=chunk):
        starts.append(t0)
        got_X.append(Xb)
        got_y.append(yb)
        assert len(yb) <= block
    np.testing.assert_array_equal(np.concatenate(got_X), X[idx])
    np.testing.assert_array_equal(np.concatenate(got_y), y[idx])
    assert starts == list(range(0, 50, block))


def test_scan_finds_classes_and_nominal_features(files):
    paths, _, _ = files
    info = source.scan(paths)
    assert info.classes == ["x", "y", "z"] and info.n == 50 and info.d == 3
    assert info.values == [5, 0, 0]  # codes 0..39 are too many for auto
    assert source.scan(paths, [0, 2]).values == [5, 0, 40]
    assert source.scan(paths, "none").values == [0, 0, 0]


def test_scan_names_the_bad_value(files, tmp_path):
    paths, X, y = files
    with pytest.raises(InputError, match=r"f0.h5: dataset 'X' row 0, feature 1: value .* is not a nominal code"):
        source.scan(paths, [1])
    bad = X.copy()
    bad[9, 2] = -np.inf
    write_dataset(tmp_path / "bad.h5", bad, y)
    with pytest.raises(InputError, match="bad.h5: dataset 'X' row 9, feature 2"):
        source.scan([tmp_path / "bad.h5"])
    write_dataset(tmp_path / "one.h5", X, np.zeros(50, dtype=int))
    with pytest.raises(InputError, match="at least two"):
        source.scan([tmp_path / "one.h5"])
    with pytest.raises(InputError, match="--nominal"):
        source.parse_nominal("1,a")
