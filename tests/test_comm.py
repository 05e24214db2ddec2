"""Communicator tests; collective (also run under mpiexec -n 2..4 by test_mpi_suite)."""
import math

import numpy as np
import pytest

from collective import comms, splits
from mpiboost.errors import CollectiveError

pytest.importorskip("mpi4py")


def _vectors():
    rng = np.random.default_rng(7)
    n = 1001
    yield "normal", rng.standard_normal(n)
    # wide dynamic range: naive summation order changes the result
    yield "wide", rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n)
    # cancellation: huge values that cancel, leaving small ones
    big = rng.standard_normal(n // 2) * 1e16
    yield "cancel", np.concatenate([big, -big, rng.random(n - 2 * (n // 2))])[rng.permutation(n)]
    yield "weights", rng.dirichlet(np.full(n, 0.1))
    yield "tiny", np.full(n, 0.1)


@pytest.mark.parametrize("comm", comms(), ids=lambda c: f"size{c.size}")
def test_sum_exact_is_split_independent(comm):
    for name, x in _vectors():
        expected = math.fsum(x)
        for parts in splits(len(x), comm.size):
            a, b = parts[comm.rank]
            got = comm.sum_exact(x[a:b])
            assert got == expected, (name, parts)
            assert np.float64(got).tobytes() == np.float64(expected).tobytes()


@pytest.mark.parametrize("comm", comms(), ids=lambda c: f"size{c.size}")
def test_sum_exact_grouped_and_vector(comm):
    rng = np.random.default_rng(3)
    n, g = 500, 4
    x = rng.standard_normal(n) * 10.0 ** rng.integers(-10, 10, n)
    grp = rng.integers(0, g, n).astype(np.int32)
    expected = [math.fsum(x[grp == k]) for k in range(g)]
    M = rng.standard_normal((n, 3))
    expected_cols = [math.fsum(M[:, j]) for j in range(3)]
    for parts in splits(n, comm.size):
        a, b = parts[comm.rank]
        got = comm.sum_exact_grouped(x[a:b], grp[a:b], g)
        assert got.tolist() == expected
        assert comm.sum_exact_vector(M[a:b]).tolist() == expected_cols


@pytest.mark.parametrize("comm", comms(), ids=lambda c: f"size{c.size}")
def test_fixed_point_sums(comm):
    from mpiboost._ext import _exact

    rng = np.random.default_rng(11)
    w = rng.dirichlet(np.full(2000, 0.3))
    q = np.empty(w.size, dtype=np.int64)
    assert _exact.to_fixed(w, 60, q)
    assert abs(int(q.sum()) - 2**60) < w.size  # quantization error at most 1/2 unit per row
    expected = int(q.sum())
    for parts in splits(w.size, comm.size):
        a, b = parts[comm.rank]
        assert comm.allreduce_int(int(q[a:b].sum())) == expected
        vec = np.bincount(np.arange(b - a) % 5, weights=None, minlength=5).astype(np.int64)
        total = comm.allreduce_int(vec)
        assert total.sum() == w.size


def test_to_fixed_rounding_and_overflow():
    from mpiboost._ext import _exact

    x = np.array([0.5, 1.5, 2.5, -0.5, 1e-30, 3.0])
    q = np.empty(6, dtype=np.int64)
    assert _exact.to_fixed(x, 0, q)
    assert q.tolist() == [0, 2, 2, 0, 0, 3]  # ties to even
    assert not _exact.to_fixed(np.array([1.0]), 70, np.empty(1, dtype=np.int64))


def test_partials_rejects_non_finite():
    from mpiboost._ext import _exact

    with pytest.raises(ValueError):
        _exact.partials(np.array([1.0, np.nan]))
    with pytest.raises(ValueError):
        _exact.partials(np.array([np.inf]))
    assert _exact.partials(np.zeros(0)).tolist() == [0.0] or _exact.partials(np.zeros(0)).size <= 1


@pytest.mark.parametrize("comm", comms(), ids=lambda c: f"size{c.size}")
def test_buffer_collectives_and_byte_counts(comm):
    data = np.arange(comm.rank * 3, dtype=np.float64).reshape(comm.rank, 3) if comm.rank else np.zeros((0, 3))
    before = comm.bytes.sent
    with comm.primitive("gather_test"):
        got = comm.gatherv(data)
    if comm.is_center:
        expected = np.concatenate([np.arange(r * 3, dtype=float).reshape(r, 3) for r in range(comm.size)])
        assert np.array_equal(got, expected)
    allg = comm.allgatherv(np.full(comm.rank + 1, comm.rank, dtype=np.int32))
    assert allg.tolist() == [r for r in range(comm.size) for _ in range(r + 1)]
    arr = comm.bcast_array(np.arange(5.0) if comm.is_center else None)
    assert arr.tolist() == [0, 1, 2, 3, 4]
    assert comm.allreduce_max(float(comm.rank)) == comm.size - 1
    assert comm.allreduce_min(comm.rank) == 0
    if comm.size > 1:
        totals = comm.bytes.totals()
        assert "gather_test" in totals
        mine = data.nbytes
        if comm.is_center:
            assert totals["gather_test"]["received"] == sum(r * 3 * 8 for r in range(1, comm.size))
        else:
            assert totals["gather_test"]["sent"] == mine
        assert comm.bytes.sent > before
        rnd = comm.bytes.take_round()
        assert "gather_test" in rnd and comm.bytes.take_round() == {}
    else:
        assert comm.bytes.sent == 0


@pytest.mark.parametrize("comm", comms(), ids=lambda c: f"size{c.size}")
def test_check_agrees_on_failure(comm):
    comm.check(True)
    bad = comm.size - 1
    with pytest.raises(CollectiveError) as info:
        comm.check(comm.rank != bad, f"broken input on rank {comm.rank}")
    assert f"broken input on rank {bad}" in str(info.value)
    assert info.value.exit_code == 2
    if comm.size > 1:
        assert f"[rank {bad}]" in str(info.value)


@pytest.mark.parametrize("comm", comms(), ids=lambda c: f"size{c.size}")
def test_collective_guard(comm):
    from mpiboost.errors import InputError

    with pytest.raises(CollectiveError) as info:
        with comm.collective_guard():
            if comm.rank == 0:
                raise InputError("file.h5: row 3: bad")
    assert "file.h5: row 3: bad" in str(info.value)
    with comm.collective_guard():
        pass


def test_default_threads_respects_env(monkeypatch):
    from collective import world

    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert world().default_threads() == 3
