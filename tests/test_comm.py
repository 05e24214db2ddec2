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


def _hard_sums(rng, k):
    """``k`` vectors that break naive float sums: wide range, subnormals, cancellation, empty, zeros."""
    out = []
    for g in range(k):
        kind, n = g % 6, int(rng.integers(0, 300))
        if kind == 0:
            x = rng.standard_normal(n) * 2.0 ** rng.integers(-1074, 1000, n)
        elif kind == 1:
            x = np.ldexp(rng.integers(-9, 9, n).astype(float), rng.integers(-1074, -1000, n))  # subnormals
        elif kind == 2:
            a = rng.standard_normal(n // 2) * 1e300
            x = np.concatenate([a, -a, np.ldexp(np.ones(n - n // 2 * 2), -1074)])
        elif kind == 3:
            x = np.zeros(n)
        elif kind == 4:
            x = np.zeros(0)
        else:
            x = np.exp(-rng.uniform(0, 740, n))  # boosting weights after many rounds
        out.append(x[rng.permutation(x.size)])
    return out


def test_exact_digits_twin_of_fsum():
    """Digit sums of any split give math.fsum of everything, bit for bit, in both kinds of window."""
    from mpiboost import exact_digits as ed
    from mpiboost._ext import _exact

    rng = np.random.default_rng(5)
    for trial in range(300):
        (x,) = _hard_sums(rng, trial % 6 + 1)[-1:]
        ranks = int(rng.integers(1, 9))
        cuts = np.sort(rng.integers(0, x.size + 1, ranks - 1))
        terms = [_exact.partials(np.ascontiguousarray(p)) for p in np.split(x, cuts)]
        want = np.float64(math.fsum(x)).tobytes()
        full = np.sum([ed.to_digits(t) for t in terms], axis=0)
        assert np.float64(ed.from_digits(full, ed.FULL[0])).tobytes() == want, trial
        top, neg_unit = np.max([ed.extents(t) for t in terms], axis=0)
        window = ed.window_from_extents(int(top), int(neg_unit))
        narrow = np.sum([ed.to_digits(t, window) for t in terms], axis=0)
        assert np.float64(ed.from_digits(narrow, window[0])).tobytes() == want, trial
        assert np.abs(full).max(initial=0) < ranks << 32  # int64 digits never near overflow
    # ties round to even, like fsum: 1 + 2**-53 is a tie between 1 and its successor
    assert ed.from_digits(ed.to_digits([1.0, 2.0 ** -53]), ed.FULL[0]) == math.fsum([1.0, 2.0 ** -53]) == 1.0
    assert ed.from_digits(ed.to_digits([1.0, 3 * 2.0 ** -53]), ed.FULL[0]) == math.fsum([1.0, 3 * 2.0 ** -53])
    with pytest.raises(ValueError):
        ed.to_digits([1.0, 2.0 ** 40], (0, 1))  # does not fit one digit


@pytest.mark.parametrize("comm", comms(), ids=lambda c: f"size{c.size}")
def test_allreduce_exact_fuses_sums_maxima_and_float_sums(comm):
    """Integer sums, maxima and exact float sums on any split, in one collective (two beyond 8 float sums)."""
    from mpiboost._ext import _exact

    rng = np.random.default_rng(9)
    for k in (1, 3, comm.FULL_WINDOW_SUMS, comm.FULL_WINDOW_SUMS + 4):
        vectors = _hard_sums(rng, k)
        counts = rng.integers(-2**40, 2**40, (comm.size, 3))
        maxima = rng.integers(0, 2**62, (comm.size, 2))
        for parts in splits(600, comm.size):
            a, b = parts[comm.rank]
            mine = [_exact.partials(np.ascontiguousarray(v[a * v.size // 600 : b * v.size // 600])) for v in vectors]
            before = dict(comm.bytes.calls)
            c, m, s = comm.allreduce_exact(counts[comm.rank], maxima[comm.rank], mine)
            assert c.tolist() == counts.sum(axis=0).tolist() and m.tolist() == maxima.max(axis=0).tolist()
            assert np.array_equal(s.view(np.int64), np.array([math.fsum(v) for v in vectors]).view(np.int64))
            made = sum(comm.bytes.calls.values()) - sum(before.values())
            assert made == (0 if comm.size == 1 else 1 if k <= comm.FULL_WINDOW_SUMS else 2), (k, made)


@pytest.mark.parametrize("comm", comms(), ids=lambda c: f"size{c.size}")
def test_a_carried_code_is_agreed_by_every_reduction(comm):
    """A code one rank sets travels with the next exact reduction; every rank reads the same maximum."""
    if comm.size == 1:
        return
    code = {"now": 0}
    comm.carry, comm.carry_codes = (lambda: code["now"]), 2
    try:
        assert comm.take_carried() is None  # no reduction yet: the caller must ask on its own
        assert comm.allreduce_int(1) == comm.size
        assert comm.take_carried() == 0
        code["now"] = 2 if comm.rank == comm.size - 1 else (1 if comm.rank == 0 else 0)
        comm.sum_exact(np.ones(3))
        code["now"] = 0  # caught before the first reduction, still agreed after the second
        comm.allreduce_int(np.arange(2))
        assert comm.take_carried() == 2 and comm.take_carried() is None
    finally:
        comm.carry, comm.carry_codes = None, 0


@pytest.mark.parametrize("comm", comms(), ids=lambda c: f"size{c.size}")
def test_alltoallv_sends_each_rank_its_part(comm):
    """Rank s sends rank r the rows [s, r] (s + r + 1 of them, some empty), with and without known counts."""
    P, me = comm.size, comm.rank
    send = [(me + r + 1) * (r % 2 or me % 2) for r in range(P)]
    rows = np.concatenate([np.full((n, 2), 100 * me + r, dtype=np.int32) for r, n in enumerate(send)])
    expect_counts = [(s + me + 1) * (me % 2 or s % 2) for s in range(P)]
    expect = np.concatenate([np.full((n, 2), 100 * s + me, dtype=np.int32) for s, n in enumerate(expect_counts)])
    for recv in (None, expect_counts):
        got, counts = comm.alltoallv(rows, send, recv)
        assert counts.tolist() == expect_counts and np.array_equal(got, expect.reshape(-1, 2))


@pytest.mark.parametrize("comm", comms(), ids=lambda c: f"size{c.size}")
def test_int32_reductions_stay_int32(comm):
    """An int32 histogram is reduced as int32 (half the bytes), to the same sums as int64."""
    a = (np.arange(12, dtype=np.int64).reshape(4, 3) - 5) * (comm.rank + 1)
    want = (np.arange(12, dtype=np.int64).reshape(4, 3) - 5) * sum(r + 1 for r in range(comm.size))
    got = comm.reduce_int(a.astype(np.int32))
    if comm.is_center:
        assert got.dtype == np.int32 and np.array_equal(got, want)
    part = comm.reduce_scatter_int(a.astype(np.int32), [4 if r == 0 else 0 for r in range(comm.size)])
    assert part.dtype == np.int32
    if comm.rank == 0:
        assert np.array_equal(part, want)
