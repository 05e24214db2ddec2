"""The rounds: the algorithm's set-up and the loop of select, apply, score and callbacks."""
from __future__ import annotations

import time
from typing import Optional, Sequence, TYPE_CHECKING

from .. import signals, watchdog
from ..callbacks import RoundEnv, sorted_callbacks
from ..errors import InputError
from .validation import _valid_error

if TYPE_CHECKING:  # annotations only
    from ..boost.base import Algorithm, Hypothesis
    from ..callbacks import Callback
    from ..model import Scorer
    from ..protocol import Protocol
    from .inputs import Inputs
    from ..comm import Comm
    from ..protocol import Protocol


def setup(algo: Algorithm, inputs: Inputs, proto: Protocol, seed: int) -> Optional[Scorer]:
    """Collective: the algorithm's initial state; the validation scorer (None without validation data).

    The algorithm's checks of the data come first, agreed over the ranks (one
    message, a clean exit 2 on every rank).
    """
    with proto.comm.collective_guard():
        try:
            algo.check_data(inputs.shard)
        except ValueError as exc:
            raise InputError(str(exc)) from None
    algo.valid = inputs.valid
    try:
        algo.setup(inputs.shard, proto, seed)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    v = inputs.valid
    if v is None:
        return None
    scorer = algo.model.scorer(v.cols, v.X, v.domain if algo.model.takes_task else None)
    scorer.metric = inputs.valid_metric
    return scorer


# ------------------------------------------------------------------ rounds
def round_metrics(t: int, h: Hypothesis, out: dict, n_train: int, verr: Optional[float], per_primitive: dict,
                  seconds: dict) -> dict:
    """One round's metrics record (what the metrics log writes)."""
    metrics = {"round": t, **h.metrics}
    if "train_errors" in out:
        metrics["train_error"] = out.pop("train_errors") / n_train
    metrics.update(out)  # an algorithm may report its own train_error (the transfer ones: on the target)
    if verr is not None:
        metrics["valid_error"] = verr
    metrics["coef"] = h.coef
    if h.domain is not None:
        metrics["stump_domain"] = h.domain
    s = h.stump
    if hasattr(s, "n_leaves"):  # a tree: its size and its root split
        metrics["tree"] = {"leaves": s.n_leaves, "nodes": s.n_nodes, "root_feature": int(s.feature[0]),
                           "root_bin": int(s.bin[0])}
    else:
        metrics["stump"] = {"feature": s.feature, "bin": s.bin, "left": s.left, "missing_left": s.missing_left}
        if s.right is not None:
            metrics["stump"]["right"] = s.right
    metrics["bytes_sent"] = sum(v["sent"] for v in per_primitive.values())
    metrics["bytes_received"] = sum(v["received"] for v in per_primitive.values())
    # the round's collective calls: each costs at least one network latency, whatever its size
    metrics["collectives"] = sum(v.get("calls", 0) for v in per_primitive.values())
    metrics["bytes"] = per_primitive
    metrics["seconds"] = seconds
    return metrics


def run_rounds(comm: Comm, algo: Algorithm, inputs: Inputs, scorer, proto: Protocol, done: int, rounds: int,
               callbacks: Sequence[Callback], run: Optional[dict] = None,
               valid_history: Sequence[float] = ()) -> tuple[str, dict, dict]:
    """Collective: rounds ``done + 1 .. rounds``; (stop reason, last round's metrics, seconds per phase).

    Parameters
    ----------
    comm : Comm
        The ranks that train together: they agree on a caught signal after each round, and its byte counts
        go into the round's metrics.
    algo : Algorithm
        The algorithm after :func:`setup` (and the replay of a checkpoint's rounds).
    inputs : Inputs
        The training and validation rows.
    scorer : Scorer or None
        The validation scorer :func:`setup` returned (None without validation rows).
    proto : Protocol
        The protocol the algorithm runs over.
    done : int
        Rounds already in the model (those replayed from a checkpoint); 0 for a fresh run.
    rounds : int
        The last round to train.
    callbacks : sequence of Callback
        Told of the start and of every round; one may stop the rounds.
    run : dict, optional
        What the run records for its checkpoints (:func:`mpiboost.driver.record.run_record`).
    valid_history : sequence of float
        The validation errors of the replayed rounds, shown to the callbacks.

    Returns
    -------
    stop_reason : str
        ``"rounds"``, the algorithm's ``stop_message`` when its ``select`` ends training (no weak edge left,
        say), ``"stopped by a callback"`` or ``"stopped by SIGTERM"`` (or ``SIGUSR1``).
    last : dict
        The last round's metrics (:func:`round_metrics`; empty when no round ran).
    phase : dict
        Seconds per phase over the rounds: ``select``, ``apply``, ``valid``.
    """
    clock = time.perf_counter
    callbacks = sorted_callbacks(callbacks)
    env = RoundEnv(t=done, rounds=rounds, model=algo.model, is_center=comm.is_center, run=run,
                   valid_history=list(valid_history))
    stop_now = False
    for cb in callbacks:
        stop_now = bool(cb.on_train_begin(env)) or stop_now  # a resumed run that had already stopped
    stop_reason = "stopped by a callback" if stop_now else "rounds"
    phase = {"select": 0.0, "apply": 0.0, "valid": 0.0}
    last: dict = {}
    for t in range(done + 1, rounds + 1 if not stop_now else done + 1):
        t0 = clock()
        h = algo.select(t)
        t1 = clock()
        if h is None:
            stop_reason = algo.stop_message
            break
        out = algo.apply(h)
        t2 = clock()
        verr = _valid_error(scorer, inputs.valid, proto)
        t3 = clock()
        phase["select"] += t1 - t0
        phase["apply"] += t2 - t1
        phase["valid"] += t3 - t2
        seconds = {"select": t1 - t0, "apply": t2 - t1, "valid": t3 - t2}
        got = signals.agreed(comm) if signals.armed() else None  # a preemption: every rank stops after this round
        last = round_metrics(t, h, out, algo.n_train(inputs.shard), verr, comm.bytes.take_round(), seconds)
        env.t, env.metrics = t, last
        watchdog.tick()
        stop = False
        for cb in callbacks:
            stop = bool(cb.on_round_end(env)) or stop
        if got is not None and t < rounds:
            stop_reason = f"stopped by {got}"
            break
        if stop:
            stop_reason = "stopped by a callback"
            break
    return stop_reason, last, phase
