"""Preemption: SIGTERM or SIGUSR1 ends a batch run at the end of the current round, with a checkpoint.

Slurm sends SIGTERM to every task before a time limit or a preemption (``--signal`` can send SIGUSR1
earlier), and ``mpiexec`` passes a signal it gets on to the ranks. :func:`install` (the ``train``
command) records the signal instead of dying; at the end of each round the ranks agree whether any of
them got one (carried by the round's exact reductions, or a one-integer allreduce, primitive
``signal_check``), so all stop after the same round.
The run then writes its ``--checkpoint`` (however far the next periodic one is), saves no model, and
the command exits with :data:`PREEMPTED_EXIT` (75, ``EX_TEMPFAIL``: "try again"); ``--resume`` with the
same ``--checkpoint`` continues to the model of an uninterrupted run.

A selection phase before the rounds (the noise check, the source screen and folds, the ``auto`` searches)
trains candidates through the same loop. A candidate stopped by a signal is a truncated model, and a
choice made from it would be wrong, so the phase raises :class:`Preempted` instead of choosing: nothing
is recorded, the command exits 75 all the same, and ``--resume`` runs the phase again from its start
(every candidate is deterministic, so the choice, and the model, are the uninterrupted run's).
"""
from __future__ import annotations

import signal
from typing import Optional

PREEMPTED_EXIT = 75
NAMES = ("SIGTERM", "SIGUSR1")
_state: dict = {"armed": False, "caught": None, "previous": {}}


class Preempted(Exception):
    """A signal stopped a selection phase before it could choose: no choice, no checkpoint of it.

    Raised on every rank alike (the signal is agreed by :func:`agreed` before a candidate stops).
    """

    def __init__(self, signal_name: str, phase: str, step: int = 0, steps: int = 0) -> None:
        self.signal, self.phase, self.step, self.steps = signal_name, phase, int(step), int(steps)
        where = f" (training {step} of {steps})" if steps else ""
        super().__init__(f"stopped by {signal_name} during the {phase}{where}")


def _handler(signum, frame) -> None:  # noqa: ARG001 - the signal module's signature
    if _state["caught"] is None:
        _state["caught"] = signal.Signals(signum).name


def install_early() -> None:
    """:func:`install` at the start of a command, so that the run's own :func:`install` keeps what was caught."""
    install()
    _state["early"] = True


def install() -> None:
    """Record SIGTERM and SIGUSR1 from now on (the main thread only, where Python runs handlers).

    After :func:`install_early` it keeps the signal caught since then (once).
    """
    if _state.pop("early", False) and _state["armed"]:
        return
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


def stopped_by(reason: str) -> Optional[str]:
    """The signal a round loop's stop reason names (``"stopped by SIGTERM"`` -> ``"SIGTERM"``), else None."""
    for name in NAMES:
        if reason == f"stopped by {name}":
            return name
    return None


def code() -> int:
    """This rank's caught signal as a number: 0 none, else its place in :data:`NAMES` plus one."""
    mine = caught()
    return NAMES.index(mine) + 1 if mine in NAMES else 0


def agreed(comm) -> Optional[str]:
    """Collective: the signal any rank recorded (the same answer on every rank), or None.

    The first call makes every exact reduction of ``comm`` carry this rank's :func:`code` from then on
    (:meth:`mpiboost.comm.Comm.take_carried`): a round that made one needs no collective here. A signal
    caught after a round's last reduction is then agreed one round later, the same round on every rank.

    Parameters
    ----------
    comm : Comm
        The ranks that stop together.

    Returns
    -------
    str or None
        The name of the signal (``"SIGTERM"`` or ``"SIGUSR1"``; the one listed last in :data:`NAMES` when
        ranks caught different ones), or None when no rank caught one.
    """
    if comm.size == 1:
        return caught()
    if comm.carry is None:
        comm.carry, comm.carry_codes = code, len(NAMES)
    got = comm.take_carried()
    if got is None:
        with comm.primitive("signal_check"):
            got = int(comm.allreduce_max(code()))
    return NAMES[got - 1] if got else None
