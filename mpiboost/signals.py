"""Preemption: SIGTERM or SIGUSR1 ends a batch run at the end of the current round, with a checkpoint.

Slurm sends SIGTERM to every task before a time limit or a preemption (``--signal`` can send SIGUSR1
earlier), and ``mpiexec`` passes a signal it gets on to the ranks. :func:`install` (the ``train``
command) records the signal instead of dying; at the end of each round the ranks agree whether any of
them got one (a one-integer allreduce, primitive ``signal_check``), so all stop after the same round.
The run then writes its ``--checkpoint`` (however far the next periodic one is), saves no model, and
the command exits with :data:`PREEMPTED_EXIT` (75, ``EX_TEMPFAIL``: "try again"); ``--resume`` with the
same ``--checkpoint`` continues to the model of an uninterrupted run.
"""
from __future__ import annotations

import signal
from typing import Optional

PREEMPTED_EXIT = 75
NAMES = ("SIGTERM", "SIGUSR1")
_state: dict = {"armed": False, "caught": None, "previous": {}}


def _handler(signum, frame) -> None:  # noqa: ARG001 - the signal module's signature
    if _state["caught"] is None:
        _state["caught"] = signal.Signals(signum).name


def install() -> None:
    """Record SIGTERM and SIGUSR1 from now on (the main thread only, where Python runs handlers)."""
    for name in NAMES:
        sig = getattr(signal, name, None)
        if sig is not None:
            _state["previous"][sig] = signal.signal(sig, _handler)
    _state["armed"], _state["caught"] = True, None


def uninstall() -> None:
    """The handlers as they were before :func:`install`."""
    for sig, old in _state["previous"].items():
        signal.signal(sig, old)
    _state.update(armed=False, caught=None, previous={})


def armed() -> bool:
    return bool(_state["armed"])


def caught() -> Optional[str]:
    """The first signal recorded on this rank (None: none)."""
    return _state["caught"]


def agreed(comm) -> Optional[str]:
    """Collective: the signal any rank recorded (the same answer on every rank), or None."""
    mine = caught()
    if comm.size == 1:
        return mine
    code = NAMES.index(mine) + 1 if mine in NAMES else 0
    with comm.primitive("signal_check"):
        got = int(comm.allreduce_max(code))
    return NAMES[got - 1] if got else None
