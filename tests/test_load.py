"""Loader and global binning; collective (also run under mpiexec -n 2..4 by test_mpi_suite)."""
import os

import numpy as np
import pytest

from collective import comms, shared_tmpdir, world
from mpiboost.comm import Comm, _mpi
from mpiboost.data import format as fmt
from mpiboost.data.load import Layout, load, load_raw
from mpiboost.errors import CollectiveError

pytest.importorskip("mpi4py")


def _self():
    return Comm(_mpi().COMM_SELF)


def _make_files(comm, n_list=(137, 0, 90), d=6):
    """Three files with awkward columns: constant, all-NaN, ties, heavy values, continuous."""
    tmp = shared_tmpdir(comm)
    paths = []
    rng = np.random.default_rng(5)
    for k, n in enumerate(n_list):
        X = np.empty((n, d), dtype=np.float32)
        X[:, 0] = 1.5  # constant
        X[:, 1] = np.nan  # all missing
        X[:, 2] = rng.integers(0, 3, n)  # few distinct values
        X[:, 3] = rng.standard_normal(n)
        X[rng.random(n) < 0.2, 3] = np.nan  # some missing
        X[:, 4] = np.where(rng.random(n) < 0.7, 0.0, rng.exponential(size=n))  # heavy zero
        X[:, 5] = rng.standard_normal(n) * 1e6
        y = np.where(rng.random(n) < 0.4, 1, -1)
        path = os.path.join(tmp, f"part{k}.h5")
        if comm.is_center:
            fmt.write_dataset(path, X, y, feature_names=[f"f{j}" for j in range(d)])
        paths.append(path)
    comm.barrier()
    return paths


def _full(paths):
    Xs, ys = [], []
    for p in paths:
        a = fmt.read_arrays(p)
        Xs.append(a["X"])
        ys.append(a["y"])
    return np.concatenate(Xs), np.concatenate(ys)


def test_layout_blocks_cover_rows():
    for n in (0, 1, 7, 100):
        for size in (1, 2, 3, 5):
            for dedicated in (False, True):
                if dedicated and size < 2:
                    continue
                lay = Layout(n, size, dedicated)
                blocks = [lay.block(r) for r in range(size)]
                assert blocks[0][0] == 0 and blocks[-1][1] == n
                for (a, b), (c, _) in zip(blocks, blocks[1:]):
                    assert b == c and a <= b
                if dedicated:
                    assert blocks[0] == (0, 0)
                if n:
                    rows = np.arange(n)
                    owners = lay.owner(rows)
                    for r, (a, b) in enumerate(blocks):
                        assert np.all(owners[a:b] == r)


@pytest.mark.parametrize("dedicated", [False, True])
def test_loader_blocks_union_is_file(dedicated):
    comm = world()
    if dedicated and comm.size < 2:
        pytest.skip("dedicated coordinator needs 2 ranks")
    paths = _make_files(comm)
    X, y = _full(paths)
    shard = load_raw(comm, paths, dedicated_coordinator=dedicated)
    a, b = Layout(len(y), comm.size, dedicated).block(comm.rank)
    assert (shard.start, shard.stop) == (a, b)
    np.testing.assert_array_equal(shard.X, X[a:b])
    np.testing.assert_array_equal(shard.y, y[a:b])
    # the union of the blocks over the ranks is the file
    allX = comm.gatherv(shard.X)
    assert shard.cols is None
    if comm.is_center:
        np.testing.assert_array_equal(allX, X)
    # domains: one per file, in file order
    expected_dom = np.repeat(np.arange(3), [137, 0, 90])[a:b]
    np.testing.assert_array_equal(shard.domain, expected_dom)
    assert shard.n_domains == 3 and shard.domain_counts.tolist() == [137, 0, 90]
    assert shard.domain_names == ["part0", "part1", "part2"]
    assert shard.label_counts == {-1: int((y == -1).sum()), 1: int((y == 1).sum())}


@pytest.mark.parametrize("dedicated", [False, True])
def test_binning_identical_to_single_process(dedicated):
    comm = world()
    if dedicated and comm.size < 2:
        pytest.skip("dedicated coordinator needs 2 ranks")
    paths = _make_files(comm)
    X, _ = _full(paths)
    ref = load(_self(), paths)  # single-process result
    # small sample forces the quantile path; results must still agree
    ref_small = load(_self(), paths, sample_size=50, max_bins=7)
    shard = load(comm, paths, dedicated_coordinator=dedicated)
    small = load(comm, paths, dedicated_coordinator=dedicated, sample_size=50, max_bins=7)
    for got, want in ((shard, ref), (small, ref_small)):
        for e1, e2 in zip(got.bins.edges, want.bins.edges):
            assert e1.tobytes() == e2.tobytes()
        np.testing.assert_array_equal(got.cols, want.cols[:, got.start : got.stop])
        assert got.cols.dtype == np.uint8 and got.cols.flags.c_contiguous
    # column semantics
    Xb = ref.cols.T
    assert np.all(Xb[:, 0] == 0)  # constant column: one bin
    assert np.all(Xb[:, 1] == 255)  # all-NaN column: missing bin
    assert np.all((Xb[:, 3] == 255) == np.isnan(X[:, 3]))
    assert set(np.unique(Xb[:, 2])) <= {0, 1, 2}
    assert ref.bins.n_bins[0] == 1 and ref.bins.n_bins[1] == 1
    assert small.bins.n_bins.max() <= 7
    # bins respect the real thresholds: x <= edges[b] iff bin <= b
    for j in (3, 4, 5):
        e = ref.bins.edges[j]
        ok = ~np.isnan(X[:, j])
        np.testing.assert_array_equal(Xb[ok, j], np.searchsorted(e, X[ok, j], side="left"))


def test_validation_errors_are_collective():
    comm = world()
    tmp = shared_tmpdir(comm)
    n = 60
    X = np.zeros((n, 2), dtype=np.float32)
    y = np.ones(n, dtype=np.int8)
    bad_row = n - 5  # in the last rank's block
    y[bad_row] = 2  # an index beyond the file's two classes
    bad = os.path.join(tmp, "bad.h5")
    infx = os.path.join(tmp, "inf.h5")
    other = os.path.join(tmp, "other.h5")
    three = os.path.join(tmp, "three.h5")
    if comm.is_center:
        fmt.write_dataset(bad, X, y, classes=["no", "yes"])
        X2 = X.copy()
        X2[7, 1] = np.inf
        fmt.write_dataset(infx, X2, np.arange(n) % 2)
        fmt.write_dataset(other, np.zeros((3, 5)), np.ones(3))
        fmt.write_dataset(three, X, np.arange(n) % 3)
    comm.barrier()
    with pytest.raises(CollectiveError) as info:
        load(comm, [bad])
    msg = str(info.value)
    assert "bad.h5" in msg and f"row {bad_row}" in msg and "2 is not an index" in msg
    if comm.size > 1:
        assert f"[rank {comm.size - 1}]" in msg
    with pytest.raises(CollectiveError, match=r"inf.h5.*row 7, feature 1.*infinite"):
        load(comm, [infx])
    with pytest.raises(CollectiveError, match="same features"):
        load(comm, [three, other])
    with pytest.raises(CollectiveError, match="no such file"):
        load(comm, [os.path.join(tmp, "missing.h5")])
    # three classes: fine as multiclass (class indices), not as binary labels
    shard = load(comm, [three], task="multiclass")
    assert shard.classes == [0, 1, 2] and shard.label_counts == {0: 20, 1: 20, 2: 20}
    np.testing.assert_array_equal(shard.y, (np.arange(n) % 3)[shard.start : shard.stop])
    with pytest.raises(CollectiveError, match="exactly two classes"):
        load(comm, [three])
    # data checked against a model's classes: a label that is not one is named with its row
    with pytest.raises(CollectiveError, match=r"three.h5.*row 2: label 2 is not one of the classes \(0, 1\)"):
        load(comm, [three], task="binary", classes=[0, 1])


def test_labels_as_users_have_them():
    """-1/+1, 0/1 and text labels are the same binary codes; the class list is the union over files."""
    comm = world()
    tmp = shared_tmpdir(comm)
    n = 40
    X = np.zeros((n, 2), dtype=np.float32)
    pos = np.arange(n) % 3 == 0
    paths = {k: os.path.join(tmp, f"{k}.h5") for k in ("pm", "01", "text", "text2")}
    if comm.is_center:
        fmt.write_dataset(paths["pm"], X, np.where(pos, 1, -1))
        fmt.write_dataset(paths["01"], X, pos.astype(np.int8))
        fmt.write_dataset(paths["text"], X, pos.astype(np.int8), classes=["neg", "pos"])
        fmt.write_dataset(paths["text2"], X, np.zeros(n, dtype=np.int8), classes=["pos"])
    comm.barrier()
    codes = {}
    for key in ("pm", "01", "text"):
        shard = load(comm, [paths[key]])
        codes[key] = shard.y
        assert shard.y.dtype == np.int8 and set(np.unique(shard.y)) <= {-1, 1}
    assert np.array_equal(codes["pm"], codes["01"]) and np.array_equal(codes["pm"], codes["text"])
    both = load(comm, [paths["text"], paths["text2"]], task="multiclass")
    assert both.classes == ["neg", "pos"] and both.label_counts["pos"] == int(pos.sum()) + n
    with pytest.raises(CollectiveError, match="mix numbers"):
        load(comm, [paths["pm"], paths["text"]])


def test_domain_column_and_validation_bins():
    comm = world()
    tmp = shared_tmpdir(comm)
    rng = np.random.default_rng(2)
    n = 80
    X = rng.standard_normal((n, 3))
    y = np.where(rng.random(n) < 0.5, 1, -1)
    dom = rng.integers(0, 4, n).astype(np.int32)
    path = os.path.join(tmp, "dom.h5")
    if comm.is_center:
        fmt.write_dataset(path, X, y, dom, domain_names=["a", "b", "c", "d"])
    comm.barrier()
    shard = load(comm, [path])
    np.testing.assert_array_equal(shard.domain, dom[shard.start : shard.stop])
    assert shard.n_domains == 4 and shard.domain_names == ["a", "b", "c", "d"]
    assert shard.domain_counts.tolist() == np.bincount(dom, minlength=4).tolist()
    # validation data binned with the training edges
    again = load(comm, [path], bins=shard.bins)
    np.testing.assert_array_equal(again.cols, shard.cols)
    np.testing.assert_array_equal(shard.rows(np.array([0, shard.n_local - 1])) if shard.n_local else 0,
                                  shard.cols[:, [0, shard.n_local - 1]].T if shard.n_local else 0)
    none = load(comm, [path], domains="none")
    assert none.n_domains == 1 and np.all(none.domain == 0)


def test_binning_gathers_no_rank_everything():
    """Each rank receives the sampled values of its own block of features only (not every rank's values
    at rank 0): with 8 features of 2,000 distinct values, rank 0 gets about 1/P of what a gather would
    bring it, plus the edges."""
    from mpiboost.data.binning import fit_edges

    comm = world()
    rng = np.random.default_rng(4)
    sample = rng.standard_normal((2000 * comm.size, 8))[comm.rank :: comm.size]  # distinct values everywhere
    before = comm.bytes.totals().get("binning", {"received": 0})["received"]
    mapper = fit_edges(comm, sample)
    if comm.size == 1:
        return
    got = comm.bytes.totals()["binning"]["received"] - before
    gathered = sample.nbytes * 2 * (comm.size - 1)  # values and their counts from every other rank
    assert got < gathered * (1.0 / comm.size + 0.15), (got, gathered)
    assert mapper.n_features == 8 and min(len(e) for e in mapper.edges) > 200  # quantile edges of every feature
