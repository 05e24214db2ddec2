"""One training run on loaded rows: :func:`run_once` and what it returns (:class:`RunOutcome`).

Every model mpiboost trains is one such run: the model a user asked for, and each candidate a selection trains
to make its choice (:mod:`mpiboost.driver.selection`). :func:`mpiboost.driver.batch.train` loads the
:class:`mpiboost.driver.inputs.Inputs` once, lets the selections choose, and ends with the run of their choice.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional, Sequence, TYPE_CHECKING

from ..protocol import Protocol
from .algorithm import make_algorithm
from .inputs import Inputs
from .resume import replay
from .rounds import run_rounds, setup
from .validation import _valid_error

if TYPE_CHECKING:  # annotations only
    from ..boost.base import Algorithm
    from ..callbacks import BestRound, Callback
    from ..model import Model
    from ..comm import Comm


@dataclass
class RunOutcome:
    """What one run left: the trained algorithm (``algo.finish()`` is its model) and the run's figures.

    Attributes
    ----------
    algo : Algorithm
        The algorithm after its rounds.
    proto : Protocol
        The protocol it ran over (its byte counts feed the summary).
    stop_reason : str
        ``"rounds"``, or why the rounds ended sooner (no edge, a callback, a signal).
    last : dict
        The last round's metrics (those of the checkpoint's last round when every round was replayed).
    phase : dict
        Seconds per phase of the rounds (select, apply, score, ...).
    seconds : float
        The rounds' wall-clock seconds.
    sent_before : int
        Bytes this rank had sent before round 1 (loading, binning, set-up, replay).
    """

    algo: Algorithm
    proto: Protocol
    stop_reason: str
    last: dict
    phase: dict
    seconds: float
    sent_before: int


def run_once(comm: Comm, algorithm: str, params: dict, rounds: int, inputs: Inputs, seed: int, *,
             callbacks: Sequence[Callback] = (), run: Optional[dict] = None, resume: Optional[Model] = None,
             chooser: Optional[BestRound] = None, info: Optional[dict] = None) -> RunOutcome:
    """Collective: one training run of ``algorithm`` on loaded ``inputs``.

    Parameters
    ----------
    comm
        The communicator of the ranks that train together.
    algorithm, params, rounds, seed
        What to train (parameters checked against the algorithm's declarations).
    inputs : Inputs
        The training and validation rows.
    callbacks
        Told of every round (logging, checkpoints, early stopping).
    run : dict, optional
        What the run records for its checkpoints (:func:`mpiboost.driver.record.run_record`).
    resume : Model, optional
        A checkpoint whose rounds are replayed before the rounds that follow.
    chooser : BestRound, optional
        Tracks the validation error of every round, the replayed ones included.
    info : dict, optional
        The choices made before the rounds: the model's (and so its checkpoints') ``info`` starts with them.
    """
    algo = make_algorithm(algorithm, params, rounds, resume)
    proto = Protocol(comm)
    scorer = setup(algo, inputs, proto, seed)
    if info:
        algo.model.info = dict(info)
    history: Optional[list] = [] if chooser is not None else None
    replayed: dict = {}
    done = replay(algo, resume, rounds, scorer, inputs.valid, proto, history, replayed)
    comm.bytes.take_round()  # loading, binning, setup and replay are not part of round 1
    t_rounds = time.perf_counter()
    sent_before = comm.bytes.sent
    cbs = list(callbacks) + ([chooser] if chooser is not None else [])
    stop_reason, last, phase = run_rounds(comm, algo, inputs, scorer, proto, done, rounds, cbs, run, history or ())
    if not last and replayed:  # every round asked for came from the checkpoint: the figures of its last one
        last = dict(replayed)
        if "train_errors" in last:
            last["train_error"] = last.pop("train_errors") / algo.n_train(inputs.shard)
        verr = _valid_error(scorer, inputs.valid, proto)
        if verr is not None:
            last["valid_error"] = verr
    elif not last and done == 0:
        start = algo.start_train_errors()  # no round, but maybe a fitted start (round-0 members): its figures
        if start is not None:
            last = {"train_error": start / algo.n_train(inputs.shard)}
            verr = _valid_error(scorer, inputs.valid, proto)
            if verr is not None:
                last["valid_error"] = verr
    return RunOutcome(algo, proto, stop_reason, last, phase, time.perf_counter() - t_rounds, sent_before)


__all__ = ["Inputs", "RunOutcome", "run_once"]
