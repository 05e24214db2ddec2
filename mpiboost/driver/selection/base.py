"""The contract of a selection, the run it shapes, and the candidate trainings it makes to choose.

A selection makes one choice before the rounds of the model a user asked for, from held-out rows: how far a
transfer run trusts its sources (:mod:`.source_trust`), SmoothBoost or AdaBoost (:mod:`.noise_check`), the
values of ``auto`` parameters (:mod:`.search`). Each declares the same steps (:class:`Selection`); the training
driver (:func:`mpiboost.driver.batch.train`) runs them in order, each on the :class:`Plan` the one before left,
as LightGBM keeps ``cv`` beside ``train``. The round of the model kept is chosen during its own run
(:mod:`.best_round`).

A choice is a record (a dict with ``chosen`` and ``rule``, and the counts it was made from), kept in the
model's ``info`` under the selection's ``key``: a checkpoint carries it, so a resumed run trains the choice on
without choosing anew, and the run's summary line describes it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Optional, Protocol, Sequence, TYPE_CHECKING

from ... import signals
from ...callbacks import FitEnv
from ..algorithm import auto_params
from ..run import run_once

if TYPE_CHECKING:  # annotations only
    from ...boost.base import Algorithm
    from ...callbacks import BestRound, Callback
    from ...model import Model
    from ..inputs import Inputs
    from ...comm import Comm


@dataclass(frozen=True)
class Plan:
    """The run the selections shape: what trains, with which parameters, on which rows."""

    algorithm: str
    params: dict
    inputs: Inputs

    @property
    def auto(self) -> dict:
        """The parameters still given as ``auto``, with their grids."""
        return auto_params(self.algorithm, self.params)

    def but(self, **changes) -> "Plan":
        """This plan with ``changes`` (algorithm, params, inputs)."""
        return replace(self, **changes)


@dataclass(frozen=True)
class Context:
    """What every selection of one run shares: the job, the run as asked for, and who hears of its trainings."""

    comm: object
    algo: Algorithm  # the algorithm asked for, its parameters resolved (the target domain, the defaults)
    params: dict  # its parameters as asked for (``auto`` values as given)
    rounds: int
    seed: int
    callbacks: Sequence[Callback] = ()
    resume: Optional[Model] = None
    patience: Optional[int] = None  # --early-stop: a search's candidates stop as the final run would
    rounds_chosen: bool = False  # the model kept is cut at its best validation round (its candidates too)


class Selection(Protocol):
    """One choice made on held-out rows before the rounds (see the module docstring)."""

    key: str  # the record's key in the model's info and the run's summary

    def wanted(self, plan: Plan, ctx: Context) -> bool:
        """Whether this run makes this choice at all (the algorithm declares it, or has ``auto`` values)."""

    def recorded(self, ctx: Context) -> Optional[dict]:
        """The record a checkpoint being resumed made (None: none), checked against this run before any work."""

    def trains(self, rec: dict, algorithm: str) -> str:
        """The algorithm a record's choice trains, for a run of ``algorithm`` (a checkpoint is that one's)."""

    def prepare(self, plan: Plan, ctx: Context) -> None:
        """Collective: what the rows tell the choice and its application (a transfer run's target domain)."""

    def skipped(self, plan: Plan, ctx: Context) -> Optional[dict]:
        """The record of no choice made, saying why (None: a choice is made)."""

    def choose(self, plan: Plan, ctx: Context) -> dict:
        """Collective: the choice, from candidate trainings on this plan's rows; its record."""

    def apply(self, rec: dict, plan: Plan, ctx: Context) -> Plan:
        """Collective: the plan that trains the choice ``rec``."""

    def describe(self, rec: dict) -> Optional[str]:
        """One line for the run's output (None: nothing to say)."""


def candidate(comm: Comm, algorithm: str, params: dict, rounds: int, inputs: Inputs, seed: int,
              chooser: Optional[BestRound] = None, *, phase: str, step: int = 0, steps: int = 0,
              callbacks: Sequence[Callback] = (), label: str = "", watch: Sequence[Callback] = ()) -> Algorithm:
    """Collective: one candidate training of a selection; the trained algorithm (``.finish()``: its model).

    Parameters
    ----------
    comm : Comm
        The ranks that train together.
    algorithm, params, rounds, seed
        The candidate: an algorithm and its parameters, trained as :func:`mpiboost.driver.run.run_once` trains.
    inputs : Inputs
        Its training rows (and validation rows, which a ``chooser`` scores every round).
    chooser : BestRound, optional
        Tracks the candidate's validation error round by round (its best round).
    phase, step, steps, label : str, int, int, str
        What the callbacks are told (``on_fit_end``): the selection, this candidate's number of ``steps``, and
        its name, with the rounds it trained and its seconds.
    callbacks : sequence of Callback
        Told of the candidate's end (not of its rounds).
    watch : sequence of Callback
        Told of the candidate's rounds (the selection's own trackers, such as
        :class:`mpiboost.driver.selection.best_round.CrossFitRounds`).

    Raises
    ------
    mpiboost.signals.Preempted
        On every rank alike, when SIGTERM / SIGUSR1 cut the candidate short: a cut candidate is not the model
        the selection compares, so no choice is made from it.
    """
    t0 = time.perf_counter()
    out = run_once(comm, algorithm, params, rounds, inputs, seed, callbacks=watch, chooser=chooser)
    got = signals.stopped_by(out.stop_reason)
    if got is not None:
        raise signals.Preempted(got, phase, step, steps)
    env = FitEnv(what=phase, done=step or 1, total=steps or 1, is_center=comm.is_center, candidate=label,
                 rounds=int(out.algo.model.n_rounds), seconds=time.perf_counter() - t0)
    for cb in callbacks:
        cb.on_fit_end(env)
    return out.algo


__all__ = ["Context", "Plan", "Selection", "candidate"]
