"""No rank waits forever: a heartbeat watchdog on every rank of a job.

A rank that stops (SIGSTOP, a swapped-out or frozen node), hangs in I/O, or
is cut off from the network would otherwise leave every other rank waiting
inside a collective for ever. Each rank runs a small daemon thread that

* sends a heartbeat to the center every ``period`` seconds and the center one
  to every rank, on a private duplicate of the job's communicator (small
  non-blocking messages, so the watchdog never waits on a peer);
* carries in each heartbeat how long the rank's main thread has gone without
  progress while *outside* MPI (computing or reading); time spent waiting in
  a collective is not a stall of that rank, it is a stall of whoever it waits
  for.

The center ends the job when a rank's heartbeats stop for ``timeout`` seconds
(stopped, or cut off) or when a rank reports ``timeout`` seconds outside MPI
without progress (stuck in I/O); every other rank ends it when the center's
heartbeats stop. Ending means one message naming the rank and its host, then
``MPI_Abort`` with exit code 2, and ``os._exit(2)`` a few seconds later in
case the abort itself cannot reach the launcher (a cut network).

The main thread reports progress through :func:`tick` (the communicator calls
it around every collective; loaders call it per chunk). With no watchdog
running, :func:`tick`, :func:`enter_mpi` and :func:`leave_mpi` cost a global
lookup.
"""
from __future__ import annotations

import math
import os
import signal
import sys
import threading
import time
from typing import Any, Optional

import numpy as np

from . import log

DEFAULT_TIMEOUT = 300.0  # seconds; generous: a round or a chunk read never takes this long between ticks
GRACE = 5.0  # seconds between MPI_Abort and the hard exit
# Seconds between a rank's last message and its MPI_Abort. The launcher forwards a rank's output through its
# own pipes, apart from the abort request; an abort right behind a message can end the job before the message
# reaches mpiexec's stderr (seen once in a loaded test run: exit 2, nothing printed). The job ends anyway.
OUTPUT_GRACE = 1.0
_TAG = 0x7D06

_active: Optional["Watchdog"] = None
_last_timeout = 0.0  # the bound of the last watchdog this process ran (for the exit alarm)


def tick() -> None:
    """The main thread made progress (a chunk read, a round, a collective done)."""
    w = _active
    if w is not None:
        w.last_progress = time.monotonic()


def enter_mpi() -> None:
    """The main thread starts waiting in a collective (not a stall of this rank)."""
    w = _active
    if w is not None:
        w.in_mpi += 1


def leave_mpi() -> None:
    """The main thread is back from a collective."""
    w = _active
    if w is not None:
        w.in_mpi -= 1
        w.last_progress = time.monotonic()


class Watchdog:
    """The heartbeat thread of one rank (use :func:`start` / :func:`stop`).

    Parameters
    ----------
    mpi_comm
        The job's ``mpi4py`` communicator; the watchdog talks on a duplicate.
    timeout
        Seconds without heartbeats, or without progress outside MPI, after
        which the job ends.
    """

    def __init__(self, mpi_comm: Any, timeout: float, *, option: str = "--stall-timeout") -> None:
        import platform

        self.timeout = float(timeout)
        self.period = max(0.05, min(1.0, self.timeout / 5.0))
        self.option = option
        self.job = mpi_comm  # the job's communicator: an abort on it ends the job, across a cut network too
        self.comm = mpi_comm.Dup()  # collective: every rank starts its watchdog together
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        self.hosts = self.comm.allgather(platform.node())
        self.in_mpi = 0
        self.last_progress = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mpiboost-watchdog", daemon=True)

    # ------------------------------------------------------------ messages
    def _state(self) -> np.ndarray:
        idle = 0.0 if self.in_mpi else time.monotonic() - self.last_progress
        return np.array([float(self.in_mpi > 0), idle], dtype=np.float64)

    def _run(self) -> None:
        try:
            if self.rank == 0:
                self._center()
            else:
                self._entity()
        except Exception as exc:  # pragma: no cover - a broken watchdog must not end a healthy job
            log.warning(f"the watchdog stopped ({exc!r})")

    def _entity(self) -> None:
        inbox = np.zeros(2)
        recv = self.comm.Irecv(inbox, source=0, tag=_TAG)
        send = None
        heard = time.monotonic()
        while not self._stop.wait(self.period):
            now = time.monotonic()
            while recv.Test():
                heard = now
                recv = self.comm.Irecv(inbox, source=0, tag=_TAG)
            if send is None or send.Test():
                self._out = self._state()  # kept alive until the send completes
                send = self.comm.Isend(self._out, dest=0, tag=_TAG)
            if now - heard > self.timeout:
                self._stall(0, f"no heartbeat from it for {now - heard:.0f} s (stopped, or cut off from the network)")
        recv.Cancel()

    def _center(self) -> None:
        n = self.size
        inbox = [np.zeros(2) for _ in range(n)]
        recv = [None] + [self.comm.Irecv(inbox[r], source=r, tag=_TAG) for r in range(1, n)]
        sends: list = [None] * n
        self._outs: list = [None] * n
        heard = [time.monotonic()] * n
        while not self._stop.wait(self.period):
            now = time.monotonic()
            mine = self._state()
            for r in range(1, n):
                while recv[r].Test():
                    heard[r] = now
                    if inbox[r][0] == 0.0 and inbox[r][1] > self.timeout:
                        self._stall(r, f"{inbox[r][1]:.0f} s outside MPI without progress (stuck in I/O or a call)")
                    recv[r] = self.comm.Irecv(inbox[r], source=r, tag=_TAG)
                if sends[r] is None or sends[r].Test():
                    self._outs[r] = mine.copy()
                    sends[r] = self.comm.Isend(self._outs[r], dest=r, tag=_TAG)
                if now - heard[r] > self.timeout:
                    self._stall(r, f"no heartbeat from it for {now - heard[r]:.0f} s (stopped, or cut off from the network)")
            if mine[0] == 0.0 and mine[1] > self.timeout:
                self._stall(0, f"{mine[1]:.0f} s outside MPI without progress (stuck in I/O or a call)")
        for r in range(1, n):
            recv[r].Cancel()

    # ------------------------------------------------------------- ending
    def _stall(self, rank: int, why: str) -> None:
        host = self.hosts[rank] if rank < len(self.hosts) else "?"
        role = "the center" if rank == 0 else "an entity"
        log.error(f"rank {rank} ({role}, host {host}) stopped making progress: {why}; "
                  f"ending the job (rank {self.rank} noticed; {self.option} {self.timeout:g})")
        sys.stdout.flush()
        # The abort may not reach a launcher across a cut network: exit hard after a grace period.
        threading.Timer(GRACE + OUTPUT_GRACE, os._exit, args=(2,)).start()
        time.sleep(OUTPUT_GRACE)  # let the launcher forward the message first
        try:
            self.job.Abort(2)
        finally:
            os._exit(2)

    # ----------------------------------------------------------- lifetime
    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def start(comm: Any, timeout: Optional[float], option: str = "--stall-timeout") -> Optional[Watchdog]:
    """Collective: start the watchdog of this rank (None on one rank or with ``timeout`` 0/None).

    ``comm`` is a :class:`mpiboost.comm.Comm`. Call :func:`stop` on every
    rank at the same point of the program (after a collective), so no rank
    stops its heartbeats while another still checks them.

    Parameters
    ----------
    comm : Comm
        The job's ranks; the watchdog's heartbeats go over a duplicate of its mpi4py communicator.
    timeout : float, optional
        Seconds without a rank's heartbeats, or without progress outside MPI, after which the job ends;
        0 or None: no watchdog.
    option : str
        The command-line option that sets ``timeout``, named in the messages.

    Returns
    -------
    Watchdog or None
        The running watchdog, or None where none runs: one rank, ``timeout`` 0 or None, or an MPI library
        without ``MPI_THREAD_MULTIPLE`` (a warning says so).
    """
    global _active, _last_timeout
    if not timeout or comm.size == 1:
        return None
    if not comm.thread_multiple():
        # The heartbeats run in a thread of their own, which calls MPI while the main thread may be in a
        # collective: without MPI_THREAD_MULTIPLE that is undefined (a crash or a hang). The run goes on
        # without the watchdog, and says so (a stopped rank then leaves the others waiting).
        if comm.is_center:
            log.warning(f"the MPI library gives no MPI_THREAD_MULTIPLE, which the watchdog's thread needs: {option} "
                        "is off for this run (an MPI built with thread support enables it)")
        return None
    w = Watchdog(comm.mpi, timeout, option=option)
    _last_timeout = float(timeout)
    _active = w
    w.start()
    return w


def stop() -> None:
    """Stop this rank's watchdog, if any."""
    global _active
    w, _active = _active, None
    if w is not None:
        w.stop()


def arm_exit_alarm() -> None:
    """After the watchdog stopped: end the process if its exit (MPI_Finalize) hangs past the bound.

    Finalizing talks to the launcher; across a network cut after the last
    collective it can wait for ever. ``SIGALRM``'s default action ends the
    process, at the C level, whatever state the interpreter is in. Only for
    the command line (a process that is about to exit), never a library call.
    """
    if _last_timeout > 0 and hasattr(signal, "alarm"):
        signal.alarm(max(1, int(math.ceil(_last_timeout + GRACE))))
