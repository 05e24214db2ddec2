"""The search over ``auto`` values: one training per candidate value, the best on the validation rows kept."""
from __future__ import annotations

import math
import time
from typing import Optional, Sequence, TYPE_CHECKING

from .. import boost, signals, watchdog
from ..callbacks import BestRound, FitEnv
from ..protocol import Protocol
from .algorithm import _with, make_algorithm
from .resume import replay
from .rounds import run_rounds, setup
from .validation import _valid_error

if TYPE_CHECKING:  # annotations only
    from ..boost.base import Algorithm
    from ..callbacks import Callback
    from ..model import Model
    from .inputs import _Inputs


def _run_once(comm, algorithm: str, params: dict, rounds: int, inputs: _Inputs, seed: int,
              callbacks: Sequence[Callback], run: Optional[dict], resume: Optional[Model],
              chooser: Optional[BestRound], info: Optional[dict] = None):
    """Collective: one training run on loaded inputs; (algorithm, stop reason, last metrics, phases, seconds)."""
    algo = make_algorithm(algorithm, params, rounds, resume)
    proto = Protocol(comm)
    scorer = setup(algo, inputs, proto, seed)
    if info:
        algo.model.info = dict(info)  # checkpoints carry what the run chose before its rounds (the search)
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
    return algo, proto, stop_reason, last, phase, time.perf_counter() - t_rounds, sent_before


def candidate(comm, algorithm: str, params: dict, rounds: int, inputs: _Inputs, seed: int,
              chooser: Optional[BestRound] = None, *, phase: str, step: int = 0, steps: int = 0,
              callbacks: Sequence[Callback] = (), label: str = "") -> Algorithm:
    """Collective: one candidate training of a selection phase; the trained algorithm (``.finish()``: its model).

    The callbacks hear of it (``on_fit_end``: the phase, ``step`` of ``steps``, ``label``, rounds, seconds).
    A candidate cut short by SIGTERM / SIGUSR1 is not the model the phase compares: it raises
    :class:`mpiboost.signals.Preempted` (on every rank alike) rather than let a choice be made from it.
    """
    t0 = time.perf_counter()
    algo, _, stop_reason, *_ = _run_once(comm, algorithm, params, rounds, inputs, seed, (), None, None, chooser)
    got = signals.stopped_by(stop_reason)
    if got is not None:
        raise signals.Preempted(got, phase, step, steps)
    env = FitEnv(what=phase, done=step or 1, total=steps or 1, is_center=comm.is_center, candidate=label,
                 rounds=int(algo.model.n_rounds), seconds=time.perf_counter() - t0)
    for cb in callbacks:
        cb.on_fit_end(env)
    return algo


def search(comm, algorithm: str, params: Optional[dict], auto: dict, rounds: int, inputs: _Inputs, seed: int,
           patience: Optional[int], callbacks: Sequence[Callback] = ()) -> dict:
    """Collective: the grid of the ``auto`` parameters tried on validation data; the choice and every result.

    Each grid point is a full run (its best round, as :class:`BestRound`
    picks it); the lowest best-round validation error wins, the earlier grid
    point of equal ones. Every rank sees the same reduced errors, so every
    rank chooses alike.
    """
    import itertools

    names = list(auto)
    tried = []
    grid = list(itertools.product(*(auto[k] for k in names)))
    for i, values in enumerate(grid):
        point = dict(zip(names, values))
        chooser = BestRound(patience)
        flags = {k: boost.get(algorithm).declared(k).flag for k in names}
        candidate(comm, algorithm, _with(params, point), rounds, inputs, seed, chooser,
                  phase="search of " + ", ".join(f"{flags[k]} auto" for k in names), step=i + 1, steps=len(grid),
                  callbacks=callbacks, label=", ".join(f"{flags[k]} {point[k]}" for k in names))
        watchdog.tick()
        tried.append({**point, "best_round": chooser.best_round, "best_error": chooser.best_error})
    # a run that trained no round (no weak edge at all) has no error: it never wins
    best = min(range(len(tried)), key=lambda i: (math.inf if tried[i]["best_error"] is None
                                                 else tried[i]["best_error"], i))
    return {"chosen": {k: tried[best][k] for k in names}, "tried": tried}
